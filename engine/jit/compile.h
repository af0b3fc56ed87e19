/* compile.h — the compile service: an NVRTC program (source, headers, name expressions, arch, options) becomes a
 * cubin plus the resources ptxas reports for each kernel. Compiles run in forked child processes, several at once,
 * each under a wall-clock limit, behind a content-addressed disk cache.
 *
 * Contract:
 * - The cache key is SHA-256 over everything that can change the cubin: source, every header's name and text,
 *   name expressions, the full option list (arch and include directories included), NVRTC's version and library
 *   build. Nothing else names an entry, so a changed template, header or option never hits an old one.
 * - A candidate that does not compile is a result (EVO_COMPILE_ERROR, log kept; cached like a success), so is a
 *   compile cut off by its time limit (EVO_COMPILE_TIMEOUT) or by one of its resource limits (EVO_COMPILE_LIMIT:
 *   memory, CPU time, output size, open files), a compiler crash, a failure that names no error in the program, as
 *   memory exhaustion does, and a program that includes a file the sandbox denies (EVO_COMPILE_ERROR); none of these
 *   is cached, and each says what ended it in `why` (the limit and its value, the signal, the file). An evo_status
 *   error means the service failed: a malformed request, options NVRTC rejects (EVO_E_CONFIG), an unusable cache
 *   directory (EVO_E_IO), fork failure, a sandbox that is required but missing (EVO_E_CONFIG), or the interrupt
 *   flag. Then every result of the batch is freed and zeroed.
 * - Confinement (sandbox.h): each child runs under req->limits and may read only the CUDA Toolkit's include folders
 *   and req->read_dirs (its working directory is the first of these, so `#include "x.h"` finds the kernel's own
 *   helper before anything else); the parent watches its resident memory. Mode AUTO without Landlock compiles
 *   unconfined and says so once on stderr.
 * - Call order: fill evo_compile_req values (the service copies nothing it keeps; pointers need only live for the
 *   call), call evo_compile_batch (or evo_compile for one), read the results, free them with
 *   evo_compile_results_free. Results own all their memory.
 * - Processes: the parent never compiles. Each miss forks a child that runs NVRTC, writes the cache entry through a
 *   temporary file and rename(2), and exits; the parent reads the entry back. A child past its limit is killed and
 *   reaped; none outlives the call (or the parent: PR_SET_PDEATHSIG). Do not set SIGCHLD to SIG_IGN or reap
 *   with waitpid(-1) elsewhere while a batch runs.
 * - Thread-safety: everything here may be called from several threads, but no thread may be inside NVRTC while a
 *   batch forks (a child would inherit NVRTC's locks held). evo only calls NVRTC through this module.
 * - Environment: EVO_CACHE (cache directory; else $XDG_CACHE_HOME/evo, else ~/.cache/evo), EVO_NO_CACHE=1 (do
 *   not read entries; they are still written), CUDA_HOME (include directory when the build-time one is missing).
 */
#ifndef EVO_COMPILE_H
#define EVO_COMPILE_H

#include "evo.h"
#include "sandbox.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/* ---- resources, as ptxas -v reports them ---- */

/* Every field is -1 when ptxas said nothing about it (no "Used" line, no "Function properties" line). */
typedef struct {
    int registers;  /* per thread                                                  */
    int smem_bytes; /* static shared memory; the launch adds its dynamic part      */
    int spill_store_bytes;
    int spill_load_bytes;
    int stack_frame_bytes;
    int cmem_bytes; /* constant memory over all banks ptxas lists for the function */
    int barriers;   /* named barriers used (bar.sync ids)                          */
} evo_kernel_res;

typedef struct {
    char *name;    /* symbol as ptxas prints it (mangled) */
    bool is_entry; /* a __global__ function ("Compiling entry function") */
    evo_kernel_res res;
} evo_ptxas_func;

typedef struct {
    evo_ptxas_func *funcs; /* in the order ptxas first names them */
    int n;
} evo_ptxas_report;

/* Parse the ptxas -v lines of a compile log (other lines are skipped). Entry functions get registers, barriers,
 * shared and constant memory from their "Used" line; every function, device functions included, gets stack and
 * spills from its "Function properties" line. Never fails; free with evo_ptxas_report_free. */
void evo_ptxas_parse(const char *log, evo_ptxas_report *out);
const evo_ptxas_func *evo_ptxas_find(const evo_ptxas_report *r, const char *name); /* NULL when absent */
void evo_ptxas_report_free(evo_ptxas_report *r);

/* "regs 96, smem 12288 B, spills 0/0 B, stack 0 B, cmem 368 B, barriers 1" ("?" for -1); returns snprintf's n. */
int evo_kernel_res_format(const evo_kernel_res *r, char *buf, size_t n);

/* ---- requests and results ---- */

typedef struct {
    const char *name; /* as the program #includes it: "x_abi.h" */
    const char *text;
} evo_compile_header;

typedef struct {
    const char *source;            /* program text                                                        */
    const char *program_name;      /* file name the log uses (the template's); NULL: "program.cu"         */
    const char *const *name_exprs; /* kernels to report, as NVRTC name expressions ("attn<64, 0, 128>");
                                      an extern "C" kernel's plain name is one too. None (n = 0): report
                                      every entry function ptxas compiled, under its symbol name          */
    int n_name_exprs;
    const evo_compile_header *headers;
    int n_headers;
    const char *arch;           /* "sm_80", "sm_89", "sm_90", "sm_90a" (sm_NN, sm_NNN, suffix a or f)   */
    const char *const *options; /* extra NVRTC options, one per element ("-DX=1"); may be NULL         */
    int n_options;
    double timeout_s;             /* wall-clock limit of this compile; <= 0: none                        */
    evo_compile_limits limits;    /* memory, CPU, output, open files, sandbox mode; zeros: the defaults   */
    const char *const *read_dirs; /* absolute folders the program may include from besides the toolkit's  */
    int n_read_dirs;              /* (evo check: the kernel's folder); the first is the child's cwd        */
} evo_compile_req;

typedef enum {
    EVO_COMPILE_OK = 0,
    EVO_COMPILE_ERROR,   /* NVRTC or ptxas rejected the program, or the compiler crashed; see log */
    EVO_COMPILE_TIMEOUT, /* killed at the request's timeout_s                                     */
    EVO_COMPILE_LIMIT,   /* ended by a resource limit of req->limits (why names it and its value)  */
} evo_compile_outcome;

typedef struct {
    char *name_expr; /* as requested (or the symbol when none were requested)     */
    char *lowered;   /* mangled symbol, what cuModuleGetFunction takes            */
    bool found;      /* ptxas reported it as an entry function; else res is -1s   */
    evo_kernel_res res;
} evo_compiled_kernel;

typedef struct {
    evo_compile_outcome outcome;
    char *log;            /* NVRTC's log with the ptxas lines, plus evo's own "evo: ..." lines on a
                                     crash or timeout; never NULL                                          */
    unsigned char *cubin; /* ELF; NULL unless outcome is OK                                          */
    size_t cubin_len;
    evo_compiled_kernel *kernels; /* in name_exprs order; NULL unless outcome is OK                          */
    int n_kernels;
    int program_spill_bytes; /* spill stores + loads over every function ptxas reported, device
                                     functions a kernel calls included; -1 unless outcome is OK             */
    bool cache_hit;          /* read from the cache (or shared with an identical request of the batch) */
    double seconds;          /* wall time spent on this request: compile, or cache read on a hit        */
    char key[65];            /* SHA-256 hex of the request (see the contract)                           */
    char why[512];           /* one line on what ended the compile when the log alone does not say:
                                     "timeout: ...", "memory limit: ...", "killed by SIGSEGV ...", "access
                                     denied: ..."; "" otherwise                                              */
    int64_t peak_rss;        /* the child's largest resident set seen, bytes; 0 on a cache hit          */
} evo_compile_result;

typedef struct {
    const char *cache_dir;            /* NULL: evo_compile_cache_dir()                                 */
    int jobs;                         /* children at once; <= 0: online CPUs                          */
    bool no_cache_read;               /* compile even when an entry exists (EVO_NO_CACHE=1 does too)   */
    volatile sig_atomic_t *interrupt; /* may be NULL; non-zero: kill the children, EVO_E_INTERRUPTED   */
    /* May be NULL. Called in the caller's thread as each result is complete (cache hits first, then in
     * completion order); r stays valid until the results are freed. */
    void (*on_result)(void *ctx, int index, const evo_compile_result *r);
    void *ctx;
} evo_compile_opts;

/* Compile n requests, keeping up to opts->jobs children running; out[i] answers reqs[i]. opts may be NULL
 * (all defaults). Identical requests in one batch compile once. */
evo_status evo_compile_batch(const evo_compile_opts *opts, const evo_compile_req *reqs, int n, evo_compile_result *out,
                             evo_err *err);
evo_status evo_compile(const evo_compile_opts *opts, const evo_compile_req *req, evo_compile_result *out, evo_err *err);
void evo_compile_result_free(evo_compile_result *r);
void evo_compile_results_free(evo_compile_result *r, int n);

/* The kernel of r compiled for name_expr; NULL when there is none. */
const evo_compiled_kernel *evo_compile_result_kernel(const evo_compile_result *r, const char *name_expr);
const char *evo_compile_outcome_name(evo_compile_outcome o); /* "ok", "compile_error", "timeout", "limit" */
/* r->why when set, else the outcome's name: what a message about a failed compile should say. */
const char *evo_compile_result_why(const evo_compile_result *r);
/* {"key","outcome","cache_hit","seconds","cubin_bytes","program_spill_bytes","kernels":[{"name_expr",
 * "lowered","found","registers","smem_bytes","spill_store_bytes","spill_load_bytes","stack_frame_bytes",
 * "cmem_bytes","barriers"}]} plus "log" when with_log. The caller owns it (cJSON_Delete). */
struct cJSON *evo_compile_result_json(const evo_compile_result *r, bool with_log);

/* True when key is 64 lowercase hex digits: the form every cache key has (asserted where one is made and used). */
bool evo_compile_key_valid(const char *key);
/* The key evo_compile_batch would use for req (EVO_E_CONFIG for a malformed request). */
evo_status evo_compile_key(const evo_compile_req *req, char key[65], evo_err *err);
/* The cache directory in effect (malloc'd); EVO_E_CONFIG when none of EVO_CACHE, XDG_CACHE_HOME, HOME is set, or
 * when the folder it would be made in does not exist (EVO_CACHE's or XDG_CACHE_HOME's parent, HOME itself). */
evo_status evo_compile_cache_dir(char **dir, evo_err *err);
/* Whether NVRTC takes these extra options (as a config's compile.extra_options gives them), beside the ones every
 * compile gets: a trivial program is compiled with them for arch in a child process, like a candidate (confined the
 * same way, default limits), within timeout_s (<= 0: 60 s). EVO_OK; EVO_E_CONFIG when NVRTC refuses them (why:
 * the first line of its log that names an error); EVO_E_NVRTC or EVO_E_IO when NVRTC or the child itself failed. No
 * cache is read or written. */
evo_status evo_compile_check_options(const char *arch, const char *const *options, int n, double timeout_s, char *why,
                                     size_t why_len);
/* NVRTC's version, "13.0". Static string. */
const char *evo_nvrtc_version(void);

#endif
