/* task.h — a task is everything problem-specific, as one table of functions: adding a task is one folder under
 * tasks/ and one line in evo_tasks (tasks/tasks.c, the tasks' layer, linked into every evo binary). The engine (search,
 * compile, pool, worker, store, CLI) names no task; it reaches the problem only through this table.
 *
 * What a task brings:
 *   - its problem description: the fields of a shape (named, typed, with legal values), the top-level config keys
 *     it owns (options, e.g. attention's `format`), the attributes of a kernel variant;
 *   - host side (no GPU): its knobs and their legal values, which genomes cannot work on a device, how a genome
 *     becomes a program (source + one NVRTC name expression per kernel variant), which variant serves a shape, the
 *     work of a shape (FLOPs or bytes) and the unit its rate is shown in, a hand-written kernel's entry points, the
 *     standalone export and the kernel-name prefix the profilers filter on;
 *   - GPU side (worker processes only): inputs, references, launch and comparison (`gpu`, see task_gpu.h).
 *
 * Shapes carry their task, so a shape formats and serializes itself. All functions are pure with respect to their
 * arguments and thread-safe; the tables are constant.
 */
#ifndef EVO_TASK_H
#define EVO_TASK_H

#include "evo.h"
#include "space.h"
#include "util.h"

#include <limits.h>
#include <stdbool.h>

struct evo_config;
struct evo_task_gpu;
struct evo_export_ctx;
struct evo_export_dispatch_ctx;

#define EVO_NAME_MAX 32
#define EVO_FIELDS_MAX 8
#define EVO_VARIANT_ATTRS_MAX 16
#define EVO_FIELD_REQUIRED LLONG_MIN

/* ---- named, typed fields: a shape's, a variant's, a task option's ---- */

typedef enum {
    EVO_FIELD_INT,  /* an integer in [min, max], one of `allowed` when given                     */
    EVO_FIELD_BOOL, /* false / true, stored 0 / 1                                               */
    EVO_FIELD_ENUM, /* one of `names`, stored as its index                                      */
    EVO_FIELD_REAL, /* a number in [rmin, rmax]; in a shape it counts in the shape-set key only when not dflt */
} evo_field_type;

typedef struct {
    const char *name; /* YAML key and JSON name: "seq"                                             */
    evo_field_type type;
    long long min, max;       /* INT: the range                                                           */
    const long long *allowed; /* INT: the legal values when not every integer in range is one (n_allowed) */
    int n_allowed;
    const char *const *names;  /* ENUM: the value names, NULL-terminated                                    */
    double rmin, rmax;         /* REAL: the range (closed)                                                  */
    double dflt;               /* a config that leaves it out gets this; EVO_FIELD_REQUIRED: must be written */
    bool axis;                 /* shapes only: correctness checks every shape with each value listed under
                                  correctness.<name> (default: axis_default); correctness shapes leave it out  */
    bool axis_cheap;           /* ... the values after the first with the first seed and distribution only      */
    long long axis_default[4]; /* stored values (evo_field_store)                                                */
    int n_axis_default;
    const char *doc; /* one line for messages and `evo space`                                      */
} evo_field;

/* A shape's and an axis's values are stored as long long: integers, booleans and enum indices as they are, a REAL
 * field's number as the bits of its double. */
long long evo_field_store(const evo_field *f, double v);
double evo_field_load(const evo_field *f, long long stored);

/* "64", "true", "bf16": a field value as text. */
int evo_field_value_text(const evo_field *f, double v, char *buf, size_t n);
/* Legal value? When not, *why says what is ("head_dim 96 is not supported (64 or 128)"). */
bool evo_field_check(const evo_field *f, double v, char *why, size_t why_len);

/* ---- shapes ---- */

typedef struct {
    const struct evo_task *task; /* whose fields v holds                                */
    char name[EVO_NAME_MAX];
    long long v[EVO_FIELDS_MAX]; /* in the order of task->shape_fields                  */
} evo_shape;

/* Display text: "long(2,8,2048,64) causal": the INT fields in parentheses, then each true BOOL field's name, each
 * ENUM field's value name when it is not the first, and each REAL field as name=value when it is not its default. */
int evo_shape_format(const evo_shape *s, char *buf, size_t n);
/* The fields as a JSON object text {"batch":2,"heads":8,...} (booleans as true/false, enums by name). */
void evo_shape_fields_json(const evo_shape *s, evo_str *out);
/* The shape of a stored result: its task's fields read from their JSON object (evo_shape_fields_json's text; a field
 * it lacks takes its default), name copied up to its "(". EVO_E_DB when the text is no such object. */
evo_status evo_shape_from_fields_json(const struct evo_task *t, const char *shape_text, const char *fields,
                                      evo_shape *out, evo_err *err);
/* A shape's field by name; def when the task has no such field. */
long long evo_shape_get(const evo_shape *s, const char *field, long long def);
/* Index of a field of the task's shapes, -1 when none. */
int evo_task_shape_field(const struct evo_task *t, const char *name);

/* ---- device limits ---- */

/* Limits of the target device; from the driver in the worker, or a table per arch for `evo compile`. */
typedef struct {
    char arch[16]; /* "sm_90" */
    int sm_major, sm_minor;
    int max_threads_per_block;
    int max_smem_per_block_optin; /* bytes, after cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) */
    int max_regs_per_thread;
    int max_regs_per_block;
    int sm_count;
    int l2_bytes;
} evo_device_limits;

/* Known limits of an architecture when no device is present ("sm_80", "sm_89", "sm_90"). */
evo_status evo_device_limits_for_arch(const char *arch, evo_device_limits *out, evo_err *err);

/* ---- programs and their kernel variants ---- */

/* One kernel of a rendered program. Which shapes it serves and how it is launched is the task's business: attr
 * holds the task's variant attributes (task->variant_attrs, e.g. head dim and rows per block). */
typedef struct {
    char name_expr[512]; /* NVRTC name expression, or the extern "C" name of a hand-written kernel */
    int threads;         /* block size; 0: a hand-written kernel declares its geometry (task_gpu.h geometry) */
    int smem_bytes;      /* dynamic shared memory */
    int accuracy;        /* the accuracy class of its arithmetic: an index of the task's accuracy_classes; every
                            variant of a program has the same */
    long long attr[EVO_VARIANT_ATTRS_MAX];
} evo_variant;

#define EVO_MAX_VARIANTS 24

/* ---- dispatch buckets: the problems one exported kernel is chosen for (task->bucket) ---- */
#define EVO_BUCKET_KEYS 6
typedef struct {
    long long key[EVO_BUCKET_KEYS]; /* equal keys: the same bucket; buckets sort by key, in order */
    char label[160];                /* "d64 causal seq 257..512 bh 9..16"                          */
} evo_bucket;

/* ---- accuracy classes ---- */
/* Every task's first class is "exact" (EVO_ACCURACY_EXACT, what a task without accuracy_classes has alone); stored
 * results from before classes existed count as it. */
#define EVO_ACCURACY_MAX 8

/* ---- structural probes: inputs built so that a structural fault shows (task->probes) ---- */
typedef struct {
    const char *name; /* config key value: "needle"                   */
    const char *doc;  /* one line for `evo space` and messages         */
} evo_probe;

/* The files of a PyTorch module (task->torch_module): texts, the names they get beside the module, and the paths
 * they came from (for messages). */
typedef struct evo_torch_files {
    const char *kernel_text, *kernel_name, *kernel_path;
    const char *companion_text, *companion_name, *companion_path;
} evo_torch_files;

typedef struct {
    char *source; /* complete program text (owned) */
    char program_name[64];
    char arch[16]; /* "" = the evaluator's arch; else what this program must be compiled for ("sm_90a") */
    evo_variant variants[EVO_MAX_VARIANTS];
    int n_variants;
} evo_program;

void evo_program_free(evo_program *p);

/* ---- the table ---- */

#define EVO_KNOB_REQUIRED (-2147483647 - 1)

/* The values a knob can take in its template (its parameter block and static_asserts): lo..hi in steps of step, or,
 * when set is not NULL, exactly the n_set values of set. Config loading refuses any other value with file:line and
 * key, so a genome the template cannot instantiate never enters a space. */
typedef struct {
    int lo, hi, step;
    const int *set;
    int n_set;
} evo_knob_legal;

bool evo_knob_legal_has(const evo_knob_legal *l, int v);
/* "1..4", "16..256 in steps of 16", "0, 128, 256" (NUL-terminated, cut to n). */
void evo_knob_legal_format(const evo_knob_legal *l, char *buf, size_t n);

typedef struct evo_task {
    const char *name;           /* its folder under tasks/; what a config's `task:` names                    */
    const char *summary;        /* one line for `evo help` and exported files                                */
    const char *template_file;  /* the template in the embedded tree (templates.h), for messages              */
    const char *const *headers; /* in-memory headers every program of the task includes, NULL-terminated      */

    /* Knobs: names the template takes (a config declares these, in any order, and no others), the value a
     * config that leaves one out gets (or EVO_KNOB_REQUIRED), and the values the template can take for each. */
    const char *const *knobs;
    const int *knob_defaults;
    const evo_knob_legal *knob_legal; /* per knob (NULL: any integer) */
    /* Knobs (of knobs) that are no template argument: they change how the same code is launched, so they enter
     * the candidate's key beside the compile key (evo_candidate_key). NULL-terminated; NULL: none. */
    const char *const *launch_knobs;
    /* Knobs (of knobs) that a config leaving them out does not put into its space at all: its genomes then have
     * no such knob and the task reads the default (evo_genome_get). For knobs added after databases exist, so
     * that their genomes keep their text. NULL-terminated; NULL: none (a left-out knob is a one-value knob). */
    const char *const *optional_knobs;

    /* Problem description. */
    const evo_field *shape_fields; /* a shape's fields; n_shape_fields of them                           */
    int n_shape_fields;
    const evo_field *options; /* top-level config keys the task owns (values in evo_config.options) */
    int n_options;
    const evo_field *variant_attrs; /* evo_variant.attr's names and types (for the worker protocol)       */
    int n_variant_attrs;
    /* Cross-field rules of a shape (sizes that overflow an index type, ...): false with *why. */
    bool (*shape_check)(const evo_shape *s, char *why, size_t why_len);

    /* Before compiling: EVO_V_OK, EVO_V_INVALID (the template cannot be instantiated so), or EVO_V_RESOURCE_FAIL
     * (threads or shared memory over lim); *why says which rule or limit. */
    evo_verdict (*can_implement)(const struct evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                                 char *why, size_t why_len);
    /* Optional: what of the config's space cannot run on arch ("sm_80") as one constraint over its knobs (a static
     * string), which a search on that GPU adds so that it never proposes those genomes; NULL when all of it can.
     * *why says what the rule leaves out. can_implement stays the judge; this only keeps slots from going to
     * genomes it would call INVALID on every such GPU. */
    const char *(*arch_rule)(const struct evo_config *cfg, const char *arch, char *why, size_t why_len);
    /* Render the program for genome g: the variants the config's shapes need. */
    evo_status (*render)(const struct evo_config *cfg, const evo_genome *g, const evo_device_limits *lim,
                         evo_program *out, evo_err *err);
    /* A hand-written file (`evo check`): the entry points it must define, as variants with threads = 0. */
    evo_status (*handwritten)(const struct evo_config *cfg, evo_program *out, evo_err *err);

    /* Which variants run a shape. serves: every variant that serves the shape is checked on its correctness
     * cases; pick: the one it is timed (and exported) with, -1 when none serves it. */
    bool (*serves)(const evo_variant *v, const evo_shape *s);
    int (*pick)(const evo_variant *v, int n, const evo_shape *s, int sm_count);
    /* A variant's short name in reports ("d64", "d64big"). */
    void (*variant_label)(const evo_variant *v, char *buf, size_t n);

    /* Work of one run on shape s, and the rate it is shown in: rate = work / seconds / rate_scale. */
    double (*work)(const evo_shape *s);
    const char *rate_unit; /* "TFLOP/s", "GB/s": column headers                                  */
    const char *rate_key;  /* "tflops", "gbps": its JSON key                                     */
    double rate_scale;     /* 1e12, 1e9                                                          */

    /* What a standalone export writes after the provenance block (export.h). */
    evo_status (*export_body)(const struct evo_export_ctx *x, evo_str *out, evo_err *err);
    /* Dispatch buckets (`evo elite --per-shape`, `evo export --dispatch`): the bucket of shape s (false: s is in none).
     * NULL: no buckets (every shape is its own, and there is no dispatching export). */
    bool (*bucket)(const evo_shape *s, evo_bucket *out);
    /* A dispatching export: one file holding the winner of every bucket and a launcher that picks among them by the
     * problem (export.h, evo_export_dispatch_ctx). NULL: the task has none. */
    evo_status (*export_dispatch_body)(const struct evo_export_dispatch_ctx *x, evo_str *out, evo_err *err);
    const char *kernel_prefix; /* the candidate's kernels' names start with this (sanitizer, profiler) */
    /* `evo export --torch`: the text of a Python module that registers PyTorch ops for an exported kernel and a
     * companion file (another task's export, e.g. the quantizer in front of attention), both to lie beside it
     * under their names (evo_torch_files); EVO_E_CONFIG when a file is not what it must be. NULL: no PyTorch op.
     * torch_companion: where the companion is looked for when none is given, a glob with one %s for the arch
     * (relative to the working directory). The task registers in `evo export`'s option table the option that
     * names the companion (torch_option: its name without "--", also the noun messages call the file by, e.g.
     * "quantizer"; torch_option_help: its help, lines after the first start at the help column) and gives the
     * module's default name (torch_module_name). */
    evo_status (*torch_module)(const struct evo_torch_files *f, const char *module, char **py, evo_err *err);
    const char *torch_companion;
    const char *torch_option, *torch_option_help;
    const char *torch_module_name;

    /* Accuracy classes: the arithmetic a genome's kernels do, each judged by its own gate (the worker side knows
     * the rules; the engine stores the class with every result and ranks each class on its own). NULL-terminated
     * names, the first "exact"; NULL: one class, "exact". genome_accuracy: a genome's class (NULL: 0). A config's
     * `accuracy` says which classes a search admits; a genome of another class is INVALID before compiling. */
    const char *const *accuracy_classes;
    int (*genome_accuracy)(const struct evo_config *cfg, const evo_genome *g);
    /* The gates' version: raised whenever the cases or rules change, so a stored result judged by an older gate is
     * evaluated again instead of reused (0 counts as 1, what results from before versions were judged by). */
    int gate_version;

    /* Structural probes (may be none): each is checked on every shape and each combination of the non-cheap axis
     * values, first seed; probe_cases writes the shapes a probe checks shape s with (e.g. with its own softmax
     * scales) into out[0..max) and returns how many. */
    const evo_probe *probes;
    int n_probes;
    int (*probe_cases)(const struct evo_config *cfg, const evo_shape *s, int probe, evo_shape *out, int max);

    const struct evo_task_gpu *gpu; /* worker side (task_gpu.h)                                          */
} evo_task;

/* The task's accuracy classes: how many (>= 1), the name of class i ("exact" for 0), and a name's index (-1). */
int evo_task_accuracy_count(const evo_task *t);
const char *evo_task_accuracy_name(const evo_task *t, int i);
int evo_task_accuracy_find(const evo_task *t, const char *name);
/* "exact, fp8" */
void evo_task_accuracy_names(const evo_task *t, char *buf, size_t n);
/* The gate version results are stored and reused under (>= 1). */
int evo_task_gate_version(const evo_task *t);

/* NULL when unknown. */
const evo_task *evo_task_find(const char *name);
extern const evo_task *const evo_tasks[]; /* NULL-terminated; defined by tasks/tasks.c */
/* the names of evo_tasks, comma-separated */
void evo_task_names(char *buf, size_t n);

#endif
