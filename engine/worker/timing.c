/* timing.c — the cold-L2 timer of the GPU worker: events, graph or CUPTI activity records around each launch,
 * fresh inputs per repetition through the caller's callbacks, warm-up-sized repetition counts (see timing.h). */
#include "timing.h"

#include "util.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef EVO_HAVE_CUPTI
#include <cupti_activity.h>
#include <cupti_version.h>
#endif

typedef evo_kernel_record krec;

struct evo_timer {
    const evo_cudrv *cu;
    bool have_graph; /* the driver has the optional graph entries (and graphs did not fail once) */
    CUevent *ev;     /* 2 per (repetition, subject): start, end */
    int n_ev;
    CUevent warm[2], done;
    double *buf[2 * EVO_TIMING_MAX_SUBJECTS];
    int cap;
    /* CUPTI */
    bool cupti;
    char cupti_why[256];
    void *cupti_lib;
    int (*act_enable)(int);
    int (*act_disable)(int);
    int (*act_flush)(uint32_t);
    int (*act_next)(uint8_t *, size_t, void **);
    int (*act_register)(void *, void *);
    int (*result_string)(int, const char **);
    int (*timestamp)(uint64_t *);
    pthread_mutex_t lock;
    bool collecting;
    uint64_t floor_ns; /* records of kernels that started before the run began are another run's, late */
    krec *recs;
    int n_recs, cap_recs;
    long dropped;
};

/* CUPTI's buffer callbacks carry no user pointer: the one timer of the process. */
static evo_timer *g_timer;

#define TCU(t, call, err) EVO_CU((t)->cu, call, err)

/* ---- CUPTI ---- */

#ifdef EVO_HAVE_CUPTI
#define CUPTI_BUFFER_BYTES (4u << 20)

static void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, CUPTI_BUFFER_BYTES);
    *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    evo_timer *t = g_timer;
    if (t && valid > 0) {
        pthread_mutex_lock(&t->lock);
        CUpti_Activity *rec = NULL;
        while (t->act_next(buffer, valid, (void **)&rec) == CUPTI_SUCCESS) {
            if (!t->collecting) continue;
            if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
            /* The fields read here (kind, start, end, grid, block, correlationId) sit at the same offsets in every
             * kernel record version since CUDA 9. Names are not used: after a module is unloaded, a record can
             * carry the name of an earlier function (seen on CUDA 13.0 with a search's many modules). */
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            if (k->start < t->floor_ns) continue;
            if (t->n_recs == t->cap_recs) {
                t->cap_recs = t->cap_recs ? 2 * t->cap_recs : 1024;
                t->recs = evo_xrealloc(t->recs, (size_t)t->cap_recs * sizeof *t->recs);
            }
            t->recs[t->n_recs++] =
                (krec){k->correlationId, k->start, k->end, {k->gridX, k->gridY, k->gridZ}, k->blockX};
        }
        pthread_mutex_unlock(&t->lock);
    }
    free(buffer);
}

static void cupti_open(evo_timer *t)
{
    const char *env = getenv("EVO_LIBCUPTI"), *home = getenv("CUDA_HOME");
    char paths[8][600];
    int n = 0;
    if (env && *env) snprintf(paths[n++], sizeof paths[0], "%s", env);
    snprintf(paths[n++], sizeof paths[0], "libcupti.so");
    snprintf(paths[n++], sizeof paths[0], "libcupti.so.13");
    snprintf(paths[n++], sizeof paths[0], "libcupti.so.12");
    snprintf(paths[n++], sizeof paths[0], "%s/../extras/CUPTI/lib64/libcupti.so", EVO_CUDA_INCLUDE_DIR);
    snprintf(paths[n++], sizeof paths[0], "%s/../lib64/libcupti.so", EVO_CUDA_INCLUDE_DIR);
    if (home && *home) snprintf(paths[n++], sizeof paths[0], "%s/extras/CUPTI/lib64/libcupti.so", home);
    snprintf(paths[n++], sizeof paths[0], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
    for (int i = 0; i < n && !t->cupti_lib; i++) t->cupti_lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (!t->cupti_lib) {
        snprintf(t->cupti_why, sizeof t->cupti_why, "libcupti not found (set EVO_LIBCUPTI to its path)");
        return;
    }
    int (*get_version)(uint32_t *) = (int (*)(uint32_t *))dlsym(t->cupti_lib, "cuptiGetVersion");
    struct {
        void **fn;
        const char *sym;
    } syms[] = {{(void **)&t->act_enable, "cuptiActivityEnable"},
                {(void **)&t->act_disable, "cuptiActivityDisable"},
                {(void **)&t->act_flush, "cuptiActivityFlushAll"},
                {(void **)&t->act_next, "cuptiActivityGetNextRecord"},
                {(void **)&t->act_register, "cuptiActivityRegisterCallbacks"},
                {(void **)&t->result_string, "cuptiGetResultString"},
                {(void **)&t->timestamp, "cuptiGetTimestamp"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(syms); i++)
        if (!(*syms[i].fn = dlsym(t->cupti_lib, syms[i].sym))) {
            snprintf(t->cupti_why, sizeof t->cupti_why, "libcupti lacks %s", syms[i].sym);
            return;
        }
    uint32_t version = 0;
    if (!get_version || get_version(&version) != CUPTI_SUCCESS || version < 18) {
        snprintf(t->cupti_why, sizeof t->cupti_why, "libcupti API version %u is older than CUDA 12's", version);
        return;
    }
    g_timer = t;
    int r = t->act_register((void *)on_buffer_requested, (void *)on_buffer_completed);
    if (r != CUPTI_SUCCESS) {
        const char *msg = "?";
        t->result_string(r, &msg);
        snprintf(t->cupti_why, sizeof t->cupti_why, "cuptiActivityRegisterCallbacks: %s", msg);
        g_timer = NULL;
        return;
    }
    t->cupti = true;
}

static evo_status cupti_start(evo_timer *t, char *note, size_t nn)
{
    uint64_t now = 0;
    t->timestamp(&now);
    pthread_mutex_lock(&t->lock);
    t->n_recs = 0;
    t->floor_ns = now;
    t->collecting = true;
    pthread_mutex_unlock(&t->lock);
    int r = t->act_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
        const char *msg = "?";
        t->result_string(r, &msg);
        snprintf(note, nn, "CUPTI refused kernel records (%s): timed with events", msg);
        snprintf(t->cupti_why, sizeof t->cupti_why, "cuptiActivityEnable: %s", msg);
        t->cupti = false;
        return EVO_E_CUDA;
    }
    return EVO_OK;
}

/* Disables kernel records and flushes until every launch of the n subjects' reps repetitions is among the records
 * (other kernels of the window, such as the input perturbations, have records too; a forced flush hands over every
 * buffer, the retries cover a delivery still on CUPTI's thread), then stops collecting. n = 0: no wait. */
static void cupti_stop(evo_timer *t, const evo_timing_subject *s, int n, int reps, double **us)
{
    t->act_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    for (int attempt = 0; attempt < 20; attempt++) {
        t->act_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        pthread_mutex_lock(&t->lock);
        const bool all = n == 0 || evo_timing_match(t->recs, t->n_recs, s, n, reps, us) == n * reps;
        pthread_mutex_unlock(&t->lock);
        if (all) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&t->lock);
    t->collecting = false;
    pthread_mutex_unlock(&t->lock);
}

static bool cupti_times(evo_timer *t, const evo_timing_subject *s, int n, int reps, double **us, char *note, size_t nn)
{
    pthread_mutex_lock(&t->lock);
    const int q = evo_timing_match(t->recs, t->n_recs, s, n, reps, us);
    const bool ok = q == n * reps;
    if (!ok)
        snprintf(note, nn, "CUPTI matched %d of %d launches among %d kernel records: timed with events", q, n * reps,
                 t->n_recs);
    pthread_mutex_unlock(&t->lock);
    return ok;
}
#endif

static int cmp_corr(const void *a, const void *b)
{
    uint32_t x = ((const krec *)a)->corr, y = ((const krec *)b)->corr;
    return x < y ? -1 : x > y;
}

int evo_timing_match(evo_kernel_record *recs, int n_recs, const evo_timing_subject *s, int n, int reps, double **us)
{
    qsort(recs, (size_t)n_recs, sizeof *recs, cmp_corr);
    int q = 0, k = 0; /* launch q, its kernel k */
    uint64_t start = 0;
    for (int i = 0; i < n_recs && q < n * reps; i++) {
        const evo_kernel_record *r = &recs[i];
        const evo_timing_subject *w = &s[q % n];
        const unsigned *grid = k == 0 ? w->grid : w->more_grid[k - 1];
        const unsigned block = k == 0 ? w->block : w->more_block[k - 1];
        if (r->grid[0] != (int)grid[0] || r->grid[1] != (int)grid[1] || r->grid[2] != (int)grid[2] ||
            r->block != (int)block)
            continue;
        if (r->end <= r->start) break;
        if (k == 0) start = r->start;
        if (k < w->n_more) {
            k++;
            continue;
        }
        if (r->end <= start) break;
        us[q % n][q / n] = (double)(r->end - start) * 1e-3;
        q++;
        k = 0;
    }
    return q;
}

/* ---- set-up ---- */

evo_status evo_timer_open(const evo_cudrv *cu, bool try_cupti, evo_timer **out, evo_err *err)
{
    evo_timer *t = evo_xcalloc(1, sizeof *t);
    t->cu = cu;
    pthread_mutex_init(&t->lock, NULL);
    t->have_graph = cu->cuStreamBeginCapture && cu->cuStreamEndCapture && cu->cuGraphInstantiateWithFlags &&
                    cu->cuGraphLaunch && cu->cuGraphExecDestroy && cu->cuGraphDestroy && cu->cuEventRecordWithFlags;
    evo_status s = EVO_OK;
    for (int i = 0; i < 2 && s == EVO_OK; i++) s = evo_cu_check(cu, cu->cuEventCreate(&t->warm[i], 0), "event", err);
    if (s == EVO_OK) s = evo_cu_check(cu, cu->cuEventCreate(&t->done, 0), "event", err);
    if (s != EVO_OK) {
        evo_timer_close(t);
        return s;
    }
#ifdef EVO_HAVE_CUPTI
    if (try_cupti)
        cupti_open(t);
    else
        snprintf(t->cupti_why, sizeof t->cupti_why, "not tried (sanitizer or profiler run)");
#else
    (void)try_cupti;
    snprintf(t->cupti_why, sizeof t->cupti_why, "evo was built without the CUPTI headers");
#endif
    *out = t;
    return EVO_OK;
}

void evo_timer_close(evo_timer *t)
{
    if (!t) return;
    if (g_timer == t) g_timer = NULL; /* CUPTI stays registered; its callbacks then do nothing */
    for (int i = 0; i < t->n_ev; i++) t->cu->cuEventDestroy(t->ev[i]);
    for (int i = 0; i < 2; i++)
        if (t->warm[i]) t->cu->cuEventDestroy(t->warm[i]);
    if (t->done) t->cu->cuEventDestroy(t->done);
    for (size_t i = 0; i < EVO_ARRAY_LEN(t->buf); i++) free(t->buf[i]);
    free(t->ev);
    free(t->recs);
    free(t);
}

bool evo_timer_cupti(const evo_timer *t, char *why, size_t n)
{
    if (why && n) snprintf(why, n, "%s", t->cupti ? "" : t->cupti_why);
    return t->cupti;
}

evo_timing_method evo_timer_resolve(const evo_timer *t, evo_timing_method m)
{
    if (m == EVO_TIMING_AUTO) return t->cupti ? EVO_TIMING_CUPTI : EVO_TIMING_EVENTS;
    if ((m == EVO_TIMING_CUPTI && !t->cupti) || (m == EVO_TIMING_GRAPH && !t->have_graph)) return EVO_TIMING_EVENTS;
    return m;
}

static evo_status reserve(evo_timer *t, int reps, int n, evo_err *err)
{
    const int need = 2 * reps * n;
    if (need > t->n_ev) {
        t->ev = evo_xrealloc(t->ev, (size_t)need * sizeof *t->ev);
        for (; t->n_ev < need; t->n_ev++) TCU(t, cuEventCreate(&t->ev[t->n_ev], 0), err);
    }
    if (reps > t->cap) {
        for (size_t i = 0; i < EVO_ARRAY_LEN(t->buf); i++)
            t->buf[i] = evo_xrealloc(t->buf[i], (size_t)reps * sizeof(double));
        t->cap = reps;
    }
    return EVO_OK;
}

/* ---- waiting ---- */

/* ---- one batch: repetitions [a, b) of every subject ---- */

static CUresult record(evo_timer *t, CUevent e, CUstream st, bool captured)
{
    return captured ? t->cu->cuEventRecordWithFlags(e, st, CU_EVENT_RECORD_EXTERNAL) : t->cu->cuEventRecord(e, st);
}

/* Queues the batch. *refused >= 0: that subject's launch was refused (r->error set). */
static evo_status queue_batch(evo_timer *t, const evo_timing_opts *o, const evo_timing_subject *s, int n, int a, int b,
                              int reps, bool captured, evo_timing_result *r, evo_err *err)
{
    const evo_cudrv *cu = t->cu;
    for (int k = a; k < b; k++)
        for (int j = 0; j < n; j++) {
            evo_status st = s[j].prepare(s[j].ctx, k, err);
            if (st != EVO_OK) return st;
            if (o->flush && o->flush_bytes)
                TCU(t, cuMemsetD8Async(o->flush, (unsigned char)k, o->flush_bytes, o->stream), err);
            CUevent *e = &t->ev[2 * (k * n + j)];
            if (evo_cu_check(cu, record(t, e[0], o->stream, captured), "event record", err) != EVO_OK)
                return EVO_E_CUDA;
            CUresult lr = s[j].launch(s[j].ctx);
            if (lr != CUDA_SUCCESS) {
                r->outcome = EVO_TIMED_REFUSED;
                r->subject = j;
                r->error = lr;
                return EVO_OK;
            }
            if (evo_cu_check(cu, record(t, e[1], o->stream, captured), "event record", err) != EVO_OK)
                return EVO_E_CUDA;
            if (s[j].after && (st = s[j].after(s[j].ctx, k, reps, err)) != EVO_OK) return st;
        }
    return EVO_OK;
}

/* Queues, runs and waits for one batch; fills the event times of its repetitions. */
static evo_status run_batch(evo_timer *t, const evo_timing_opts *o, const evo_timing_subject *s, int n, int a, int b,
                            int reps, evo_timing_method *method, evo_timing_result *r, evo_err *err)
{
    const evo_cudrv *cu = t->cu;
    evo_status st = EVO_OK;
    CUgraphExec exec = NULL;
    if (*method == EVO_TIMING_GRAPH) {
        CUgraph graph = NULL;
        CUresult cr = t->cu->cuStreamBeginCapture(o->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
        if (cr == CUDA_SUCCESS) {
            st = queue_batch(t, o, s, n, a, b, reps, true, r, err);
            CUresult er = t->cu->cuStreamEndCapture(o->stream, &graph);
            if (st == EVO_OK && r->outcome == EVO_TIMED_OK && er == CUDA_SUCCESS)
                cr = t->cu->cuGraphInstantiateWithFlags(&exec, graph, 0);
            else if (st == EVO_OK && r->outcome == EVO_TIMED_OK)
                cr = er;
            if (graph) t->cu->cuGraphDestroy(graph);
        }
        if (st != EVO_OK || r->outcome != EVO_TIMED_OK) return st;
        if (cr != CUDA_SUCCESS) { /* the graph could not be made: this run is timed with events */
            const char *name = "?";
            cu->cuGetErrorName(cr, &name);
            snprintf(r->note, sizeof r->note, "graph capture failed (%s): timed with events", name);
            *method = EVO_TIMING_EVENTS;
            t->have_graph = false;
        } else {
            cr = t->cu->cuGraphLaunch(exec, o->stream);
            if (cr != CUDA_SUCCESS) {
                t->cu->cuGraphExecDestroy(exec);
                r->outcome = EVO_TIMED_REFUSED;
                r->subject = -1;
                r->error = cr;
                return EVO_OK;
            }
        }
    }
    if (*method != EVO_TIMING_GRAPH) {
        st = queue_batch(t, o, s, n, a, b, reps, false, r, err);
        if (st != EVO_OK || r->outcome != EVO_TIMED_OK) return st;
    }
    TCU(t, cuEventRecord(t->done, o->stream), err);
    CUresult fault = CUDA_SUCCESS;
    const evo_cu_wait w = evo_cu_wait_event(t->cu, t->done, o->kernel_timeout_s * (b - a) * n + 1.0, &fault);
    if (exec && w == EVO_CU_WAIT_OK) t->cu->cuGraphExecDestroy(exec);
    if (w != EVO_CU_WAIT_OK) {
        r->outcome = w == EVO_CU_WAIT_TIMEOUT ? EVO_TIMED_TIMEOUT : EVO_TIMED_FAULT;
        r->subject = -1;
        r->error = fault;
        return EVO_OK;
    }
    for (int k = a; k < b; k++)
        for (int j = 0; j < n; j++) {
            float ms = 0;
            TCU(t, cuEventElapsedTime(&ms, t->ev[2 * (k * n + j)], t->ev[2 * (k * n + j) + 1]), err);
            r->event_us[j][k] = 1000.0 * ms;
        }
    return EVO_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the run ---- */

static evo_status warm_up(evo_timer *t, const evo_timing_opts *o, const evo_timing_subject *s, int n,
                          evo_timing_result *r, evo_err *err)
{
    const int w = o->warmup > 0 ? o->warmup : 1;
    for (int k = 0; k < w; k++)
        for (int j = 0; j < n; j++) {
            evo_status st = s[j].prepare(s[j].ctx, -1 - k, err);
            if (st != EVO_OK) return st;
            const bool clocked = k == w - 1 && j == 0;
            if (clocked && o->flush && o->flush_bytes)
                TCU(t, cuMemsetD8Async(o->flush, 0x5a, o->flush_bytes, o->stream), err);
            if (clocked) TCU(t, cuEventRecord(t->warm[0], o->stream), err);
            CUresult lr = s[j].launch(s[j].ctx);
            if (lr != CUDA_SUCCESS) {
                r->outcome = EVO_TIMED_REFUSED;
                r->subject = j;
                r->error = lr;
                return EVO_OK;
            }
            if (clocked) TCU(t, cuEventRecord(t->warm[1], o->stream), err);
        }
    TCU(t, cuEventRecord(t->done, o->stream), err);
    CUresult fault = CUDA_SUCCESS;
    const evo_cu_wait wr = evo_cu_wait_event(t->cu, t->done, o->kernel_timeout_s * w * n + 1.0, &fault);
    if (wr != EVO_CU_WAIT_OK) {
        r->outcome = wr == EVO_CU_WAIT_TIMEOUT ? EVO_TIMED_TIMEOUT : EVO_TIMED_FAULT;
        r->subject = -1;
        r->error = fault;
        return EVO_OK;
    }
    float ms = 0;
    TCU(t, cuEventElapsedTime(&ms, t->warm[0], t->warm[1]), err);
    r->warmup_us = 1000.0 * ms;
    return EVO_OK;
}

evo_status evo_timer_run(evo_timer *t, const evo_timing_opts *o, const evo_timing_subject *s, int n,
                         evo_timing_result *r, evo_err *err)
{
    memset(r, 0, sizeof *r);
    r->subject = -1;
    if (n < 1 || n > EVO_TIMING_MAX_SUBJECTS || o->min_reps < 1 || o->max_reps < o->min_reps ||
        o->max_reps > EVO_TIMING_MAX_REPS)
        return evo_fail(err, EVO_E_INTERNAL, "evo_timer_run: %d subjects, repetitions %d..%d", n, o->min_reps,
                        o->max_reps);
    evo_timing_method method = evo_timer_resolve(t, o->method);
    if (o->method == EVO_TIMING_CUPTI && method != EVO_TIMING_CUPTI)
        snprintf(r->note, sizeof r->note, "CUPTI unavailable (%.200s): timed with events", t->cupti_why);
    if (o->method == EVO_TIMING_GRAPH && method != EVO_TIMING_GRAPH)
        snprintf(r->note, sizeof r->note, "CUDA graphs unavailable: timed with events");
    evo_status st = warm_up(t, o, s, n, r, err);
    if (st != EVO_OK || r->outcome != EVO_TIMED_OK) goto out;
    int reps = o->min_reps;
    if (o->target_us > 0 && r->warmup_us > 0) {
        const double want = ceil(o->target_us / r->warmup_us);
        reps = want > o->max_reps ? o->max_reps : want < o->min_reps ? o->min_reps : (int)want;
    }
    if ((st = reserve(t, reps, n, err)) != EVO_OK) goto out;
    for (int j = 0; j < n; j++) {
        r->event_us[j] = t->buf[2 * j];
        r->us[j] = t->buf[2 * j + 1];
    }
    r->reps = reps;
#ifdef EVO_HAVE_CUPTI
    if (method == EVO_TIMING_CUPTI && cupti_start(t, r->note, sizeof r->note) != EVO_OK) method = EVO_TIMING_EVENTS;
#endif
    const int first = o->judge_first > 0 && o->judge_first < reps ? o->judge_first : reps;
    st = run_batch(t, o, s, n, 0, first, reps, &method, r, err);
    if (st == EVO_OK && r->outcome == EVO_TIMED_OK && o->judge && first < reps) {
        double head[64];
        const int m = first < 64 ? first : 64;
        memcpy(head, r->event_us[0], (size_t)m * sizeof *head);
        qsort(head, (size_t)m, sizeof *head, cmp_double);
        r->first_median_us = head[m / 2];
        if (o->judge(o->judge_ctx, r->first_median_us)) r->outcome = EVO_TIMED_ABORTED;
    }
    if (st == EVO_OK && r->outcome == EVO_TIMED_OK && first < reps)
        st = run_batch(t, o, s, n, first, reps, reps, &method, r, err);
#ifdef EVO_HAVE_CUPTI
    if (method == EVO_TIMING_CUPTI) {
        if (r->outcome != EVO_TIMED_TIMEOUT && r->outcome != EVO_TIMED_FAULT)
            cupti_stop(t, s, r->outcome == EVO_TIMED_OK ? n : 0, reps, r->us);
        if (st == EVO_OK && r->outcome == EVO_TIMED_OK && !cupti_times(t, s, n, reps, r->us, r->note, sizeof r->note))
            method = EVO_TIMING_EVENTS;
    }
#endif
    if (method != EVO_TIMING_CUPTI)
        for (int j = 0; j < n; j++) memcpy(r->us[j], r->event_us[j], (size_t)reps * sizeof(double));
out:
    r->method = method;
    return st;
}
