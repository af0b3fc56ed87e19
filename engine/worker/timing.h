/* timing.h — timing kernel launches on a cold L2 inside a GPU worker, by one of three methods, with fresh inputs
 * for every repetition. The caller brings what is timed as "subjects": callbacks that queue one launch of a
 * kernel, queue fresh inputs for repetition r (outside the timed interval) and queue what follows a repetition
 * (copying a sampled output); the timer owns the order, the L2 flush, the clocks and the waiting.
 *
 * One repetition of one subject, in stream order:  prepare(r) → flush L2 → [start] launch [end] → after(r).
 * With several subjects (candidate and baseline: A/B), repetition r runs each subject in turn before r+1, so a
 * slow drift of the clocks reaches both alike. Warm-up launches come first (untimed); the last one's time decides
 * how many repetitions follow: enough for target_us of kernel time, between min_reps and max_reps.
 *
 * Methods (evo_timing_method):
 *   events  CUDA events recorded around each launch on the stream. Includes the launch's own latency on the GPU
 *           (~1-2 us after a flush) and the events' ~0.5 us resolution: up to 20 % of a 6 us kernel.
 *   graph   the same work captured into a CUDA graph per batch (flush, inputs and event-record nodes inside) and
 *           replayed once: shorter gaps between nodes, the same event clock.
 *   cupti   CUPTI activity records: the GPU's own start and end timestamps of each kernel (ns), nothing around it;
 *           the flush is a memset, so only kernels have records, and the subjects' ones are found in launch order
 *           by their geometry (grid, block), which the input kernels do not share. Names are not used: after a
 *           module is unloaded a record may carry an earlier function's name. libcupti is loaded with dlopen
 *           ($EVO_LIBCUPTI, then the loader's path, then the toolkit's extras/CUPTI/lib64 and lib64); where it is
 *           missing, or its records do not match the launches, the timing falls back to events and says so in the
 *           result's note.
 * Every method also records the events, so a result always has the event times beside the method's own.
 *
 * Failures of a subject are outcomes, not errors: a refused launch, a launch that did not finish within
 * kernel_timeout_s (the stream is then still busy: the worker must exit), a fault (the context is lost).
 * evo_status errors are failures of the timer itself (a CUDA call outside the subjects failing).
 *
 * Thread-safety: one timer per worker thread; CUPTI delivers its buffers on a thread of its own, which only
 * appends to the timer's record list under a lock.
 */
#ifndef EVO_TIMING_H
#define EVO_TIMING_H

#include "config.h"
#include "cudrv.h"
#include "evo.h"

#include <stdbool.h>

#define EVO_TIMING_MAX_SUBJECTS 2
#define EVO_TIMING_MAX_REPS 10000

#define EVO_TIMING_MAX_KERNELS 4

typedef struct {
    unsigned grid[3], block; /* its launch geometry: how CUPTI's records are told apart from the input kernels' */
    /* A launch of several kernels in a row (a task's plan): n_more more after the first, their geometries; the
     * launch's time runs from the first kernel's start to the last one's end. */
    int n_more;
    unsigned more_grid[EVO_TIMING_MAX_KERNELS - 1][3], more_block[EVO_TIMING_MAX_KERNELS - 1];
    /* Queue fresh inputs for repetition rep (rep < 0: warm-up) and poison the output. Outside the interval. */
    evo_status (*prepare)(void *ctx, int rep, evo_err *err);
    /* Queue one launch; anything but CUDA_SUCCESS is a refused launch. */
    CUresult (*launch)(void *ctx);
    /* Queue what follows repetition rep of reps (outside the interval); NULL for nothing. */
    evo_status (*after)(void *ctx, int rep, int reps, evo_err *err);
    void *ctx;
} evo_timing_subject;

typedef struct {
    evo_timing_method method; /* AUTO resolves as evo_timer_resolve says */
    CUstream stream;
    CUdeviceptr flush; /* written before every timed launch; 0 or flush_bytes 0: no flush */
    size_t flush_bytes;
    int warmup;             /* untimed launches per subject first (at least 1 is made, to size the run) */
    int min_reps, max_reps; /* timed repetitions per subject: min_reps <= n <= max_reps */
    double target_us;       /* n = target_us / the last warm-up's time, clamped; 0: n = min_reps */
    int judge_first;        /* time this many first and ask judge before the rest; 0: no early judgement */
    /* Called with the median of the first repetitions of subject 0 (events); true stops the timing (ABORTED). */
    bool (*judge)(void *ctx, double first_median_us);
    void *judge_ctx;
    double kernel_timeout_s; /* per launch */
} evo_timing_opts;

typedef enum {
    EVO_TIMED_OK = 0,
    EVO_TIMED_REFUSED, /* a subject's launch was refused (result.error) */
    EVO_TIMED_TIMEOUT, /* the launches did not finish in time: a kernel still runs */
    EVO_TIMED_FAULT,   /* a launch faulted (result.error); the context is unusable */
    EVO_TIMED_ABORTED, /* judge said stop */
} evo_timed_outcome;

typedef struct {
    evo_timed_outcome outcome;
    int subject; /* the subject a refusal came from; -1 when not known */
    CUresult error;
    evo_timing_method method; /* what the times below are: the method asked for, or events after a fallback */
    int reps;                 /* timed repetitions per subject (those queued, when not OK) */
    double first_median_us;   /* the judged median of the first repetitions (events), 0 when none */
    double warmup_us;         /* the last warm-up launch of subject 0 (events) */
    double *us[EVO_TIMING_MAX_SUBJECTS];       /* per subject, reps times in us by `method` */
    double *event_us[EVO_TIMING_MAX_SUBJECTS]; /* the same launches by CUDA events */
    char note[256];                            /* why a fallback happened; "" when none */
} evo_timing_result;

/* A kernel record as CUPTI gives it: the correlation id of its launch (they grow with the API calls), the GPU's
 * start and end timestamps (ns), its geometry. */
typedef struct {
    uint32_t corr;
    uint64_t start, end;
    int grid[3], block;
} evo_kernel_record;

/* The subjects' launches among a timing window's kernel records: sorted by correlation id (recs is sorted in
 * place), launches rep-major and subject-minor, each the next record with its subject's geometry; us[subject][rep]
 * gets its duration in us. Returns how many launches were matched (n * reps when all). Pure: for tests. */
int evo_timing_match(evo_kernel_record *recs, int n_recs, const evo_timing_subject *s, int n, int reps, double **us);

typedef struct evo_timer evo_timer;

/* Creates the timer on the current context. try_cupti: load libcupti and register for kernel records (never under
 * a sanitizer or profiler, which own CUPTI); its absence is not an error (evo_timer_cupti says why). */
evo_status evo_timer_open(const evo_cudrv *cu, bool try_cupti, evo_timer **out, evo_err *err);
void evo_timer_close(evo_timer *t); /* NULL is fine */
/* Whether CUPTI records can be had; why not in `why` (may be NULL). */
bool evo_timer_cupti(const evo_timer *t, char *why, size_t n);
/* The method a run with method m uses on this timer: AUTO stands for CUPTI where it loaded, else events; CUPTI or
 * graph where unavailable fall back to events (evo_timer_run says so in its note). */
evo_timing_method evo_timer_resolve(const evo_timer *t, evo_timing_method m);

/* Times n (1..EVO_TIMING_MAX_SUBJECTS) subjects as described above. The arrays in *r belong to the timer and stay
 * valid until the next run or close. */
evo_status evo_timer_run(evo_timer *t, const evo_timing_opts *o, const evo_timing_subject *s, int n,
                         evo_timing_result *r, evo_err *err);

#endif
