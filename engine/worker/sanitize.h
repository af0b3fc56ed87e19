/* sanitize.h — compute-sanitizer over compiled candidates: `evo run --sanitize` (the elites, after the search)
 * and `evo check --sanitize` (the checked kernels).
 *
 * How. One candidate, one tool: a GPU worker of its own is started as
 *   compute-sanitizer --tool T --log-file REPORT --print-limit 20 --report-api-errors no
 *                     --kernel-name kns=PREFIX (the task's kernel_prefix, evo_attn for attention)  EVO worker --gpu N --config C --sanitize
 * (its stdin and stdout are the worker's protocol pipes; the sanitizer writes only to REPORT). Only the candidate's
 * kernels are instrumented (every attention kernel's name holds evo_attn: the templates' evo_attn_fwd, the ABI's
 * evo_attn_d64/d128); the worker's own kernels (inputs, references, comparisons) run at full speed, and API errors
 * are the worker's business (a refused launch is a verdict). `--sanitize` makes
 * the worker prepare a reduced set of cases, every shape (timed and extra) with every causal setting but one seed
 * and one distribution, since memory errors and races depend on the shape and not on the values, and gives each
 * launch EVO_SANITIZE_SLOWDOWN times the configured kernel time limit. The candidate goes through the correctness
 * gate only (no timing: instrumented times mean nothing); then the worker is shut down, the sanitizer writes its
 * summary, and REPORT is read. One process per candidate and tool is what ties a report to its kernel.
 *
 * Verdict. Clean when the worker's verdict is OK and the report's summary counts no error. A report without a
 * summary (the sanitizer died, or was killed at the time limit) is not clean.
 *
 * Ownership: results are plain values. Thread-safety: none needed; each call starts and reaps its own processes.
 */
#ifndef EVO_SANITIZE_H
#define EVO_SANITIZE_H

#include "evo.h"
#include "protocol.h"

#include <signal.h>
#include <stdbool.h>

#define EVO_SANITIZE_SLOWDOWN 100     /* instrumented launches get this many times the kernel time limit */
#define EVO_SANITIZE_TIMEOUT_S 1800.0 /* one candidate under one tool, worker start-up included */
#define EVO_SANITIZE_MAX_TOOLS 4
#define EVO_SANITIZE_DEFAULT_TOOLS "memcheck,racecheck"

/* The tools compute-sanitizer has, NULL-terminated: memcheck, racecheck, initcheck, synccheck. */
extern const char *const evo_sanitize_tool_names[];

/* "memcheck,racecheck" -> tools (pointers into evo_sanitize_tool_names), no duplicates. An empty list, an unknown
 * name or more than EVO_SANITIZE_MAX_TOOLS is EVO_E_USAGE naming the offending entry and the tools there are. */
evo_status evo_sanitize_parse_tools(const char *list, const char **tools, int *n, evo_err *err);

/* What a report says: the error count of its summary ("ERROR SUMMARY: 64 errors", not the "44 errors were not
 * printed" line that follows it past the print limit; for racecheck also the errors of "RACECHECK SUMMARY: 2
 * hazards displayed (2 errors, 0 warnings)", whichever is larger), or -1 when it holds no summary. first (may be NULL) gets the first error line without the "========= " prefix, "" when none. */
int evo_sanitize_count_errors(const char *report, char *first, size_t first_len);

typedef struct {
    const char *sanitizer;            /* path of compute-sanitizer (evo_path_find_tool) */
    const char *tool;                 /* one of evo_sanitize_tool_names */
    int gpu;                          /* ordinal */
    const char *config_path;          /* handed to the worker */
    const char *dir;                  /* the report and the worker's log go here (exists) */
    const char *label;                /* names the files: <dir>/sanitize-<label>-<tool>.{txt,log} */
    const char *kernel_prefix;        /* only kernels whose name starts with this are instrumented (the task's) */
    const char *fake;                 /* NULL, or a fake worker mode (worker.h) for tests without a GPU */
    double timeout_s;                 /* 0 = EVO_SANITIZE_TIMEOUT_S */
    volatile sig_atomic_t *interrupt; /* may be NULL; when set, the worker is stopped and EVO_E_INTERRUPTED returned */
} evo_sanitize_job;

typedef struct {
    const char *tool;
    bool clean;
    int errors;          /* the report's count; -1 when it had no summary */
    evo_verdict verdict; /* the worker's verdict under the sanitizer; CRASHED or TIMEOUT when it died */
    char why[512];       /* one line: "2 errors: Invalid __global__ read of size 1 bytes", "no summary: ..." */
    char report[4096];   /* path of the sanitizer's report (kept) */
} evo_sanitize_result;

/* Runs req (a prepared eval request: cubin and variants; check/time are overridden) under job's tool. The
 * sanitizer finding errors is a result, not a failure: EVO_OK with clean false. EVO_E_WORKER/EVO_E_NODRIVER when
 * the sanitized worker could not start at all (the message quotes its log); EVO_E_INTERRUPTED. */
evo_status evo_sanitize_request(const evo_sanitize_job *job, const evo_eval_request *req, evo_sanitize_result *out,
                                evo_err *err);

/* The compute-sanitizer to run: given (must be executable), else on PATH, else $CUDA_HOME/bin. EVO_E_NOTFOUND
 * with what to install otherwise. *path is malloc'd. */
evo_status evo_sanitize_find(const char *given, char **path, evo_err *err);

/* "memcheck clean; racecheck: 2 errors: Race reported between ..." for n results, into buf. */
void evo_sanitize_summary(const evo_sanitize_result *r, int n, char *buf, size_t len);

#endif
