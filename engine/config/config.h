/* config.h — the YAML configuration of a search (configs/default.yaml is what plain `evo run` uses).
 *
 * evo_config_load parses with libyaml, checks every key against the schema (unknown keys are errors: a typo must
 * not silently fall back to a default), builds the search space, and validates the baseline and seed genomes.
 * Every error names "file:line:column: key: what is wrong" and returns EVO_E_CONFIG (an unreadable file too).
 * Numbers and booleans are written plain (a tagged `!!str 216` is a string); compile.extra_options are shown to
 * NVRTC at load (compile.h: evo_compile_check_options), since options it refuses would fail every candidate.
 * docs/usage.md documents each key, its default and its limits; configs/default.yaml shows all of them.
 * The space's knobs are exactly the task's (evo_task_find(task)->knobs), added in the task's order whatever order
 * the YAML lists them in, so genome texts and hashes do not depend on how a config is written. The baseline and
 * every seed satisfy the constraints, so the space is never empty.
 *
 * Ownership: the returned evo_config owns everything it points to (space included); free with evo_config_free.
 * Read-only after loading; safe to share between threads.
 */
#ifndef EVO_CONFIG_H
#define EVO_CONFIG_H

#include "evo.h"
#include "result.h"
#include "space.h"
#include "task.h"

#include <stdbool.h>
#include <stdint.h>

/* What a configuration may be, checked before libyaml builds it: its size, its YAML nodes (values, lists and
 * mappings; configs/default.yaml has about 200) and how deep they nest. */
#define EVO_CONFIG_MAX_BYTES (1 << 20)
#define EVO_CONFIG_MAX_NODES 100000
#define EVO_CONFIG_MAX_DEPTH 32

typedef enum {
    EVO_DIST_NORMAL = 0, /* N(0,1)                                          */
    EVO_DIST_UNIFORM,    /* U(-1,1)                                         */
    EVO_DIST_OUTLIERS,   /* N(0,1) + N(0,100) * Bernoulli(0.001)             */
    EVO_DIST_ZERO_HEAD,  /* N(0,1) with head 0 of batch 0 all zeros in every input */
    EVO_DIST_LARGE,      /* N(0,1) * 30: huge logits                        */
    EVO_DIST_COUNT
} evo_dist;
const char *evo_dist_name(evo_dist d); /* "normal", "uniform", "outliers", "zero_head", "large" */
int evo_dist_parse(const char *name, evo_dist *d);

typedef struct {
    double rel_l2;        /* ||out - ref|| / ||ref|| must be <= this                                */
    double atol, rtol;    /* element passes when |out - ref| <= atol + rtol * |ref|                  */
    double max_frac_over; /* fraction of elements allowed to fail the element test (0 = none)         */
} evo_tolerance;

/* Fitness of a correct candidate from its per-shape speedups (t_baseline / t_candidate). */
typedef enum {
    EVO_FITNESS_GEOMEAN, /* geometric mean over the timed shapes (the default) */
    EVO_FITNESS_WORST,   /* the smallest speedup: a kernel is as good as its worst shape */
} evo_fitness;

/* "geometric mean over the shapes" / "smallest over the shapes": what a fitness figure is, for every text that
 * shows one. */
const char *evo_fitness_describe(evo_fitness f);

/* How the timing gate clocks a launch (engine/worker/timing.h says what each measures). */
typedef enum {
    EVO_TIMING_AUTO = 0, /* cupti where libcupti loads, else events */
    EVO_TIMING_EVENTS,   /* CUDA events around each launch */
    EVO_TIMING_GRAPH,    /* the same, captured into a CUDA graph per batch */
    EVO_TIMING_CUPTI,    /* the GPU's kernel start/end timestamps (CUPTI activity records) */
    EVO_TIMING_COUNT
} evo_timing_method;
const char *evo_timing_method_name(evo_timing_method m); /* "auto", "events", "graph", "cupti" */

typedef struct evo_config {
    char *path;                     /* as given */
    char *text;                     /* the whole file, stored with each run for provenance */
    char task[EVO_NAME_MAX];        /* a name of evo_tasks (task.h) */
    const evo_task *task_ops;       /* the task's table */
    char arch[16];                  /* "auto" or "sm_90" ... */
    double options[EVO_FIELDS_MAX]; /* the task's options (task->options order): top-level keys it owns */

    evo_space *space;
    evo_genome baseline;
    evo_genome *seeds; /* extra starting genomes */
    int n_seeds;

    evo_shape shapes[EVO_MAX_SHAPES]; /* timed; fitness is computed over these (see `fitness`) */
    int n_shapes;
    evo_fitness fitness; /* how per-shape speedups become one number */

    struct {
        uint64_t seeds[16];
        int n_seeds;
        int timed_seeds; /* the timed shapes (large) are checked with the first timed_seeds seeds only */
        evo_dist dists[EVO_DIST_COUNT];
        int n_dists;
        struct {
            int field;           /* a shape field with axis = true (task.h)                     */
            long long values[4]; /* every correctness case is checked with each of these values  */
            int n;
        } axes[EVO_FIELDS_MAX]; /* one per axis field of the task, in the task's field order   */
        int n_axes;
        evo_shape shapes[EVO_MAX_SHAPES]; /* checked in addition to `shapes` */
        int n_shapes;
        evo_tolerance tol;
        unsigned probes; /* bit i: the task's structural probe i is checked (default: every one) */
    } correctness;
    unsigned accuracy; /* bit i: the task's accuracy class i is admitted (`accuracy`; default: exact alone) */

    struct {
        int warmup;              /* launches before timing                                */
        int repetitions;         /* timed launches; the median is kept, with p10 and p90  */
        bool flush_l2;           /* write a buffer >= 2x L2 before each repetition        */
        double abort_factor;     /* stop timing a candidate whose first reps exceed k x best */
        double kernel_timeout_s; /* a launch running longer than this is TIMEOUT  */
        evo_timing_method method;
        int max_repetitions; /* short kernels get more repetitions, up to this     */
        double target_us;    /* ... until repetitions x time reaches this (0: exactly `repetitions`) */
        double target_ci;    /* then more, up to max_repetitions, until the median's 95 % interval is within
                                +- this fraction (0: no second pass) */
        bool fresh_inputs;   /* every repetition on inputs perturbed on the GPU    */
        int check_samples;   /* timed repetitions whose outputs are checked         */
        bool interleave;     /* baseline launches interleaved with the candidate's (A/B) */
    } timing;

    struct {
        char strategy[EVO_NAME_MAX]; /* a strategy name (checked by evo_config_checks): "ga", "random", "seeds" */
        int population, generations, elites, tournament;
        double crossover_rate, mutation_rate, immigrant_rate, local_rate;
        uint64_t seed;
        int stall_generations; /* stop after this many generations without improvement (0 = never) */
        double time_budget_s;  /* 0 = none */
        bool insights;
    } evolution;

    struct {
        double slowdown; /* a shape counts as regressed when t_candidate > slowdown * t_baseline */
        int min_shapes;  /* ... and the candidate is REGRESSED when that holds on >= min_shapes shapes */
    } regression;

    struct {
        double timeout_s;  /* NVRTC time limit per candidate */
        int max_registers; /* 0 = no cap; RESOURCE_FAIL above */
        bool allow_spills;
        char *extra_options; /* appended to the NVRTC options (space-separated), may be NULL */
        /* the compile process's limits (sandbox.h); 0: the default */
        double max_memory_mb; /* resident memory; 0: half the machine's memory over the parallel compiles */
        double max_cpu_s, max_output_mb;
        int max_open_files;
        int sandbox; /* evo_sandbox_mode: 0 auto, 1 required, 2 off */
    } compile;
} evo_config;

/* What this layer cannot know itself, asked of functions the layers above register before loading (the CLI does at
 * start, tests that load configs do too): the search's strategy names, and whether NVRTC takes compile.extra_options.
 * With none registered, any strategy name is read (the search refuses an unknown one when a run starts) and the
 * extra options are not tried. Not thread-safe: register once, before any load. */
typedef struct {
    const char *const *strategy_names; /* NULL-terminated */
    /* EVO_OK; EVO_E_CONFIG when refused (why says so); another status when it could not ask (compile.h's
     * evo_compile_check_options is one) */
    evo_status (*compile_options)(const char *arch, const char *const *options, int n, double timeout_s, char *why,
                                  size_t why_len);
} evo_config_checks;
void evo_config_set_checks(const evo_config_checks *c); /* NULL: none */

evo_status evo_config_load(const char *path, evo_config **out, evo_err *err);
/* The configuration a command uses: path when given; else configs/default.yaml of the working directory when there
 * is one; else the copy of configs/default.yaml built into evo (its name in messages and the store:
 * EVO_BUILTIN_CONFIG_NAME), and *builtin (may be NULL) says so. */
#define EVO_DEFAULT_CONFIG_PATH "configs/default.yaml"
#define EVO_BUILTIN_CONFIG_NAME "(built-in) configs/default.yaml"
#define EVO_BUILTIN_CONFIG_NOTE \
    "no configs/default.yaml here: using the default search built into evo (evo init writes it out to edit)"
evo_status evo_config_load_default(const char *path, evo_config **out, bool *builtin, evo_err *err);
/* The text of the built-in configs/default.yaml (static). */
const char *evo_config_builtin(size_t *len);
/* Same, from text already in memory; `name` is used in messages as the file name. */
evo_status evo_config_parse(const char *name, const char *text, size_t len, evo_config **out, evo_err *err);
void evo_config_free(evo_config *c);

/* A search on arch leaves out what cannot run there: the task's arch rule (evo_task.arch_rule), when it has one for
 * arch and the space lacks it, is added to c's space as a constraint. *rule (NULL: none added) and why say it. */
evo_status evo_config_keep_to_arch(evo_config *c, const char *arch, const char **rule, char *why, size_t why_len,
                                   evo_err *err);

/* A stable key for what a fitness is comparable over: the set of timed shapes (SHA-256 hex of their canonical
 * description) and, when it is not the default geometric mean, the fitness kind. Evaluations are stored and
 * reused, and elites kept, per (task, arch, shape set). */
void evo_config_shape_set_key(const evo_config *c, char hex[65]);
/* The key of the timed shapes alone, whatever the fitness kind (what was measured; replay looks results up by it). */
void evo_config_measured_key(const evo_config *c, char hex[65]);
/* The admitted accuracy classes by name: "exact, fp8". */
void evo_config_accuracy_names(const evo_config *c, char *buf, size_t n);
/* A task option's value by name (evo_task.options); def when the task has none of that name. */
double evo_config_option(const evo_config *c, const char *name, double def);

#endif
