/* profile.h — Nsight Compute (ncu) for `evo profile`: run an exported kernel's self-test under ncu for one shape,
 * read ncu's CSV, and reduce it to the figures the store keeps (store.h's EVO_PROFILE_* metrics).
 *
 * Which launch. The self-test (`evo export`, built with -DEVO_SELFTEST) is run as `selftest --shape NAME --reps R`:
 * it checks correctness on small shapes, then warms up and times shape NAME with R launches, the last launches of
 * the kernel it makes. ncu runs it twice: first recording only each launch's grid size (no replay, so quick; the
 * duration where this ncu lacks that statistic) to count the kernel's launches N, then with the metrics and --launch-skip N - R + EVO_NCU_LAUNCH_SKIP
 * --launch-count 1, so the one profiled launch is a timed one, never a correctness or warm-up launch. Both runs
 * pass --clock-control none (the GPU's own clocks, as evo timed it) and filter on kernels whose name holds the task's kernel_prefix (evo_attn).
 *
 * Call order: evo_path_find_tool for ncu and nvcc, then evo_ncu_profile once per shape. evo_ncu_parse_csv,
 * evo_ncu_summarize and evo_ncu_diagnose are the pure parts of evo_ncu_profile (tested on captured text).
 * Ownership: what comes back through out-pointers is malloc'd and the caller's. Thread-safe: nothing is shared;
 * evo_ncu_profile starts processes and waits for them.
 */
#ifndef EVO_PROFILE_H
#define EVO_PROFILE_H

#include "evo.h"

#include <stddef.h>

#define EVO_NCU_LAUNCH_SKIP 1 /* timed launches skipped before the profiled one */
#define EVO_NCU_REPS 5        /* timed launches asked of the self-test */
#define EVO_NCU_TIMEOUT_S 900 /* one ncu run; a self-test under ncu takes seconds to a few minutes */

/* The ncu metrics asked for. Tensor-pipe utilisation has no single name on every GPU: every name in
 * evo_ncu_tensor_metrics is asked for, the ones this ncu does not know are dropped, and the largest value of
 * those left is the utilisation. */
extern const char *const evo_ncu_metrics[];        /* NULL-terminated, tensor metrics excluded */
extern const char *const evo_ncu_tensor_metrics[]; /* NULL-terminated, in order of preference */

/* One row of ncu's CSV ("details" page, one metric of one profiled launch). */
typedef struct {
    long long launch; /* ncu's "ID" column */
    char *kernel;     /* "Kernel Name" */
    char *metric;     /* "Metric Name" */
    char *unit;       /* "Metric Unit", "" when none */
    double value;     /* "Metric Value" with digit grouping removed; NaN for "n/a" or text */
} evo_ncu_row;

/* Rows of every profiled launch in text (ncu's stdout: ==PROF== lines and the program's own output may be mixed
 * in; they are skipped). No header line: *n = 0 and EVO_OK (nothing was profiled). A header without the columns
 * named above: EVO_E_CONFIG naming the missing column. */
evo_status evo_ncu_parse_csv(const char *text, evo_ncu_row **rows, int *n, evo_err *err);
void evo_ncu_rows_free(evo_ncu_row *rows, int n);

typedef struct {
    double tensor_pipe;    /* % of peak, largest over evo_ncu_tensor_metrics present */
    double dram;           /* % of peak */
    double occupancy;      /* achieved, % of the maximum warps */
    double bank_conflicts; /* shared-memory bank conflicts, loads + stores */
    double issue_slots;    /* % of issue slots busy */
    double duration_us;
    const char *tensor_metric; /* which metric tensor_pipe came from (an evo_ncu_tensor_metrics entry) or NULL */
    char kernel[256];
    long long launch;
} evo_ncu_summary;

/* The figures of the first launch in rows; NaN for any ncu did not report. Durations in any time unit ncu prints
 * (ns, us, ms, s and their "nsecond" spellings) become µs. EVO_E_NOTFOUND when rows is empty. */
evo_status evo_ncu_summarize(const evo_ncu_row *rows, int n, evo_ncu_summary *out, evo_err *err);

/* What ncu's output says went wrong, if anything ncu itself recognised. */
typedef enum {
    EVO_NCU_OK = 0,
    EVO_NCU_NO_PERMISSION,   /* ERR_NVGPUCTRPERM: the driver lets only administrators read the counters */
    EVO_NCU_UNSUPPORTED,     /* the GPU or driver cannot be profiled by this ncu */
    EVO_NCU_UNKNOWN_METRICS, /* "Failed to access the following N metrics: a, b" */
    EVO_NCU_NO_KERNEL,       /* "No kernels were profiled" */
    EVO_NCU_APP_FAILED,      /* "The application returned an error code (N)" */
} evo_ncu_problem;

/* Classifies ncu's combined output. For EVO_NCU_UNKNOWN_METRICS, *unknown (when not NULL) is set to a malloc'd
 * copy of the comma-separated metric list. */
evo_ncu_problem evo_ncu_diagnose(const char *output, char **unknown);

typedef struct {
    const char *ncu;           /* from evo_path_find_tool */
    const char *exe;           /* the built self-test */
    const char *shape;         /* the self-test's name of the shape (the timed shape's config name, e.g. "mission") */
    const char *kernel_prefix; /* only kernels whose name holds this are profiled (the task's, e.g. "evo_attn") */
    int timeout_s;             /* per ncu run; 0 = EVO_NCU_TIMEOUT_S */
} evo_ncu_job;

/* Profiles one timed launch of the self-test for one shape (see the top of this file) and summarises it. Asks
 * again, once, without the metrics ncu says it does not know. Errors: EVO_E_CUDA when ncu may not read the
 * counters (the message says how to allow it) or cannot profile this GPU; EVO_E_REJECTED when the self-test failed
 * or timed fewer launches than asked (the message quotes its output); EVO_E_NOTFOUND when ncu profiled nothing;
 * EVO_E_TIMEOUT; EVO_E_IO when ncu could not be started. *output (when not NULL) receives the combined output of
 * the last ncu run, malloc'd. */
evo_status evo_ncu_profile(const evo_ncu_job *job, evo_ncu_summary *out, char **output, evo_err *err);

/* Runs argv (argv[0] a path) with extra environment entries ("NAME=value", NULL-terminated, may be NULL),
 * stdout and stderr together into *output (malloc'd), killing its process group after timeout_s. *exit_code is
 * the exit status, or 128 + signal. EVO_E_IO when it could not be started, EVO_E_TIMEOUT when killed. */
evo_status evo_profile_run_capture(char *const argv[], char *const extra_env[], int timeout_s, char **output,
                                   int *exit_code, evo_err *err);

#endif
