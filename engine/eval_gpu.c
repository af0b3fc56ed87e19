/* eval_gpu.c — the GPU side of an evaluation, run only inside a worker process (`evo worker`): device set-up, the
 * correctness cases (made once per worker through the task: task_gpu.h), and the gates — resources (limits read
 * from the device), correctness (0xff-poisoned outputs between canary guard bands, every configured case),
 * timing (CUDA events, L2 flushed, warm-up, median with p10/p90, early abort, re-checked output). Names no task:
 * inputs, references, launches and comparisons are the task's. Implements evo_gpu_serve (worker.h). A fault or a
 * hung kernel ends this process after its reply: the parent restarts it. */
#include "compile.h"
#include "config.h"
#include "cudrv.h"
#include "protocol.h"
#include "sanitize.h"
#include "task.h"
#include "task_gpu.h"
#include "templates.h"
#include "util.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUARD_WORDS 4096u     /* canary words before and after the output */
#define CANARY 0xC0DEC0DEu
#define MAX_REPS 1000
#define TIMING_SEED 0x7157ull /* timing inputs differ from every checked one (config seeds are small) */

/* One set of inputs with its references (the task's, in gc.data), made once and kept for the life of the worker. */
typedef struct {
    int shape;       /* index into the worker's shape list (timed shapes first) */
    bool ready;
    size_t out_bytes;
    evo_gpu_case gc;
} gcase;

typedef evo_gpu_kernel kvariant;

struct evo_gpu {
    const evo_cudrv *cu;
    CUdevice dev;
    CUcontext ctx;
    CUstream st;
    CUmodule support;
    CUfunction f_cmp_reset, f_cmp, f_canary;
    evo_hello_reply info;
    int gpu;
    bool sanitize;           /* under compute-sanitizer: few cases, long kernel time limits, no timing */
    double kernel_timeout_s; /* per launch */
    evo_config *cfg;
    const evo_task *task;
    void *task_state;
    evo_shape shapes[2 * EVO_MAX_SHAPES]; /* timed shapes, then the extra correctness shapes */
    int n_shapes;
    gcase *cases;
    int n_cases;
    size_t max_out;
    CUdeviceptr outbuf, out; /* out = outbuf + guard */
    CUdeviceptr acc, canary_res, flush;
    size_t flush_bytes;
    CUevent ev[2 * MAX_REPS + 2];
    double baseline_us[EVO_MAX_SHAPES]; /* the baseline genome's last times on this GPU */
    double baseline_noise[EVO_MAX_SHAPES];
};

typedef evo_gpu gpu_state;

#define CU(g, call, err) EVO_CU((g)->cu, call, err)

unsigned evo_gpu_grid_for(size_t n)
{
    size_t b = (n + EVO_SUPPORT_BLOCK - 1) / EVO_SUPPORT_BLOCK;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* ---- services for the task (task_gpu.h) ---- */

const evo_cudrv *evo_gpu_cu(const evo_gpu *g) { return g->cu; }
CUstream evo_gpu_stream(const evo_gpu *g) { return g->st; }
const evo_config *evo_gpu_config(const evo_gpu *g) { return g->cfg; }
int evo_gpu_sm_count(const evo_gpu *g) { return g->info.sm_count; }
int evo_gpu_arch(const evo_gpu *g) { return g->info.cc_major * 10 + g->info.cc_minor; }

CUfunction evo_gpu_support(const evo_gpu *g, const char *name)
{
    CUfunction f = NULL;
    return g->cu->cuModuleGetFunction(&f, g->support, name) == CUDA_SUCCESS ? f : NULL;
}

evo_status evo_gpu_launch(evo_gpu *g, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block,
                          void **args, const char *what, evo_err *err)
{
    return evo_cu_check(g->cu, g->cu->cuLaunchKernel(f, gx, gy, gz, block, 1, 1, 0, g->st, args, NULL), what, err);
}

evo_status evo_gpu_alloc(evo_gpu *g, size_t bytes, CUdeviceptr *out, evo_err *err)
{
    return evo_cu_check(g->cu, g->cu->cuMemAlloc(out, bytes ? bytes : 1), "cuMemAlloc", err);
}

evo_status evo_gpu_compare_f16(evo_gpu *g, CUdeviceptr out, CUdeviceptr ref, size_t n, double atol, double rtol,
                               evo_metrics *m, evo_err *err)
{
    void *a0[] = {&g->acc};
    evo_status s = evo_gpu_launch(g, g->f_cmp_reset, 1, 1, 1, 1, a0, "compare reset", err);
    if (s != EVO_OK) return s;
    unsigned long long nn = n;
    void *a1[] = {&out, &ref, &nn, &atol, &rtol, &g->acc};
    s = evo_gpu_launch(g, g->f_cmp, evo_gpu_grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, a1, "compare", err);
    if (s != EVO_OK) return s;
    evo_compare_acc acc;
    CU(g, cuStreamSynchronize(g->st), err);
    CU(g, cuMemcpyDtoH(&acc, g->acc, sizeof acc), err);
    evo_ref_metrics_from_acc(&acc, n, m);
    return EVO_OK;
}

evo_status evo_gpu_load_module(evo_gpu *g, const char *template_file, const char *const *headers, CUmodule *out,
                               evo_err *err)
{
    const char *src;
    evo_status s = evo_template_get(template_file, &src, NULL, err);
    if (s != EVO_OK) return s;
    evo_compile_header hdr[8];
    int n_hdr = 0;
    hdr[n_hdr].name = "evo_numerics.cuh";
    if ((s = evo_template_get(hdr[n_hdr].name, &hdr[n_hdr].text, NULL, err)) != EVO_OK) return s;
    n_hdr++;
    for (int i = 0; headers && headers[i] && n_hdr < (int)EVO_ARRAY_LEN(hdr); i++, n_hdr++) {
        hdr[n_hdr].name = headers[i];
        if ((s = evo_template_get(headers[i], &hdr[n_hdr].text, NULL, err)) != EVO_OK) return s;
    }
    static const char *const opts[] = {"-std=c++17"};
    evo_compile_req req = {.source = src, .program_name = template_file, .headers = hdr, .n_headers = n_hdr,
                           .arch = g->info.arch, .options = opts, .n_options = 1, .timeout_s = 300};
    evo_compile_result r;
    s = evo_compile(NULL, &req, &r, err);
    if (s != EVO_OK) return s;
    if (r.outcome != EVO_COMPILE_OK) {
        s = evo_fail(err, EVO_E_INTERNAL, "%s does not compile for %s: %.400s", template_file, g->info.arch, r.log);
        evo_compile_result_free(&r);
        return s;
    }
    CUresult cr = g->cu->cuModuleLoadData(out, r.cubin);
    evo_compile_result_free(&r);
    char what[128];
    snprintf(what, sizeof what, "loading %s", template_file);
    return evo_cu_check(g->cu, cr, what, err);
}

/* ---- set-up ---- */

static evo_status load_support(gpu_state *g, evo_err *err)
{
    evo_status s = evo_gpu_load_module(g, "support.cu", NULL, &g->support, err);
    if (s != EVO_OK) return s;
    struct {
        CUfunction *f;
        const char *name;
    } fns[] = {{&g->f_cmp_reset, "evo_compare_reset"}, {&g->f_cmp, "evo_compare"}, {&g->f_canary, "evo_canary_check"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fns); i++) {
        s = evo_cu_check(g->cu, g->cu->cuModuleGetFunction(fns[i].f, g->support, fns[i].name), fns[i].name, err);
        if (s != EVO_OK) return s;
    }
    return EVO_OK;
}

/* A case of shape `shape` with the axis fields set to axis[] (one value per config axis; NULL: the shape's own). */
static void add_case(gpu_state *g, int shape, const long long *axis, uint64_t seed, evo_dist dist, bool timing)
{
    g->cases = evo_xrealloc(g->cases, (size_t)(g->n_cases + 1) * sizeof *g->cases);
    gcase *c = &g->cases[g->n_cases++];
    memset(c, 0, sizeof *c);
    c->shape = shape;
    c->gc.shape = g->shapes[shape];
    for (int a = 0; axis && a < g->cfg->correctness.n_axes; a++) c->gc.shape.v[g->cfg->correctness.axes[a].field] = axis[a];
    c->gc.seed = seed, c->gc.dist = dist, c->gc.timing = timing;
    c->gc.timed_shape = shape < g->cfg->n_shapes;
    c->out_bytes = g->task->gpu->output_bytes(g->task_state, &c->gc.shape);
    if (c->out_bytes > g->max_out) g->max_out = c->out_bytes;
}

/* The n-th combination of the axis values (e.g. causal false, then true), the last axis varying fastest; false
 * past the last one. */
static bool axis_combination(const evo_config *cfg, int n, long long *axis)
{
    for (int a = cfg->correctness.n_axes - 1; a >= 0; a--) {
        axis[a] = cfg->correctness.axes[a].values[n % cfg->correctness.axes[a].n];
        n /= cfg->correctness.axes[a].n;
    }
    return n == 0;
}

static void build_cases(gpu_state *g)
{
    const evo_config *cfg = g->cfg;
    for (int i = 0; i < cfg->n_shapes; i++) g->shapes[g->n_shapes++] = cfg->shapes[i];
    for (int i = 0; i < cfg->correctness.n_shapes; i++) g->shapes[g->n_shapes++] = cfg->correctness.shapes[i];
    /* Every shape with every combination of axis values (causal settings) and distribution; the timed shapes (the
     * large ones) with the first correctness.timed_seeds seeds, the extra shapes with all of them. Under a
     * sanitizer, the first seed and distribution only: what it finds depends on the shape, not on the values. */
    for (int sh = 0; sh < g->n_shapes; sh++) {
        const int n_seeds = g->sanitize ? 1 : sh < cfg->n_shapes ? cfg->correctness.timed_seeds : cfg->correctness.n_seeds;
        const int n_dists = g->sanitize ? 1 : cfg->correctness.n_dists;
        long long axis[EVO_FIELDS_MAX];
        for (int k = 0; axis_combination(cfg, k, axis); k++)
            for (int s = 0; s < n_seeds; s++)
                for (int d = 0; d < n_dists; d++)
                    add_case(g, sh, axis, cfg->correctness.seeds[s], cfg->correctness.dists[d], false);
    }
    if (!g->sanitize)
        for (int i = 0; i < cfg->n_shapes; i++) add_case(g, i, NULL, TIMING_SEED + (uint64_t)i, EVO_DIST_NORMAL, true);
}

static evo_status prepare_case(gpu_state *g, gcase *c, evo_err *err)
{
    if (c->ready) return EVO_OK;
    evo_status s = g->task->gpu->prepare(g->task_state, &c->gc, err);
    if (s == EVO_OK) c->ready = true;
    return s;
}

static evo_status gpu_open(gpu_state *g, int gpu, const char *config_path, bool sanitize, evo_err *err)
{
    memset(g, 0, sizeof *g);
    g->gpu = gpu;
    g->sanitize = sanitize;
    evo_status s = evo_config_load(config_path ? config_path : "configs/default.yaml", &g->cfg, err);
    if (s != EVO_OK) return s;
    g->task = g->cfg->task_ops;
    if (!g->task->gpu) return evo_fail(err, EVO_E_INTERNAL, "task %s has no GPU side", g->task->name);
    g->kernel_timeout_s = g->cfg->timing.kernel_timeout_s * (sanitize ? EVO_SANITIZE_SLOWDOWN : 1);
    s = evo_cudrv_load(&g->cu, err);
    if (s != EVO_OK) return s;
    CU(g, cuInit(0), err);
    int count = 0;
    CU(g, cuDeviceGetCount(&count), err);
    if (gpu < 0 || gpu >= count)
        return evo_fail(err, EVO_E_NODRIVER, "GPU %d does not exist (%d GPU%s found)", gpu, count, count == 1 ? "" : "s");
    CU(g, cuDeviceGet(&g->dev, gpu), err);
    evo_hello_reply *h = &g->info;
    h->protocol = EVO_PROTOCOL_VERSION;
    h->gpu = gpu;
    h->pid = (int)getpid();
    CU(g, cuDeviceGetName(h->device, sizeof h->device, g->dev), err);
    struct {
        int *v;
        CUdevice_attribute a;
    } attrs[] = {
        {&h->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
        {&h->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
        {&h->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
        {&h->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
        {&h->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
        {&h->regs_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
        {&h->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(attrs); i++) CU(g, cuDeviceGetAttribute(attrs[i].v, attrs[i].a, g->dev), err);
    h->regs_per_thread = 255;
    CU(g, cuDriverGetVersion(&h->driver_version), err);
    snprintf(h->arch, sizeof h->arch, "sm_%d%d", h->cc_major, h->cc_minor);

    /* NVRTC runs in a forked child; fork before this process owns a CUDA context. */
    CU(g, cuDevicePrimaryCtxRetain(&g->ctx, g->dev), err);
    CU(g, cuCtxSetCurrent(g->ctx), err);
    s = load_support(g, err);
    if (s != EVO_OK) return s;
    CU(g, cuStreamCreate(&g->st, CU_STREAM_NON_BLOCKING), err);
    for (size_t i = 0; i < EVO_ARRAY_LEN(g->ev); i++) CU(g, cuEventCreate(&g->ev[i], CU_EVENT_DEFAULT), err);
    s = g->task->gpu->open(g, &g->task_state, err);
    if (s != EVO_OK) return s;

    build_cases(g);
    CU(g, cuMemAlloc(&g->outbuf, g->max_out + 2 * GUARD_WORDS * 4), err);
    g->out = g->outbuf + GUARD_WORDS * 4;
    CU(g, cuMemAlloc(&g->acc, sizeof(evo_compare_acc)), err);
    CU(g, cuMemAlloc(&g->canary_res, 16), err);
    g->flush_bytes = (size_t)h->l2_bytes * 2;
    if (g->flush_bytes < (64u << 20)) g->flush_bytes = 64u << 20;
    CU(g, cuMemAlloc(&g->flush, g->flush_bytes), err);
    /* Every case now, before the hello reply: an evaluation's watchdog then covers the candidate alone. */
    const double t0 = evo_now();
    for (int i = 0; i < g->n_cases; i++) {
        s = prepare_case(g, &g->cases[i], err);
        if (s != EVO_OK) return s;
    }
    CU(g, cuStreamSynchronize(g->st), err);
    fprintf(stderr, "evo worker gpu %d: %s, %d cases prepared in %.1f s\n", gpu, h->device, g->n_cases,
            evo_now() - t0);
    return EVO_OK;
}

/* ---- waiting with a deadline ---- */

typedef enum { WAIT_OK, WAIT_TIMEOUT, WAIT_FAULT } wait_result;

static wait_result wait_event(gpu_state *g, CUevent e, double timeout_s, CUresult *fault)
{
    const double end = evo_now() + timeout_s;
    for (unsigned spins = 0;; spins++) {
        CUresult r = g->cu->cuEventQuery(e);
        if (r == CUDA_SUCCESS) return WAIT_OK;
        if (r != CUDA_ERROR_NOT_READY) {
            *fault = r;
            return WAIT_FAULT;
        }
        if (evo_now() > end) return WAIT_TIMEOUT;
        if (spins > 1000) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

static const char *cu_name(const gpu_state *g, CUresult r)
{
    const char *name = "CUDA_ERROR_UNKNOWN";
    g->cu->cuGetErrorName(r, &name);
    return name;
}

/* ---- one candidate ---- */

typedef struct {
    evo_verdict verdict;
    cJSON *detail;
    bool exit_after; /* the context is unusable (fault) or a kernel still runs (timeout) */
} outcome;

static void fail_case(outcome *o, evo_verdict v, const char *what, const gpu_state *g, const gcase *c)
{
    o->verdict = v;
    cJSON_AddStringToObject(o->detail, "reason", what);
    if (c) {
        cJSON *k = cJSON_AddObjectToObject(o->detail, "case");
        char shape[128];
        evo_shape_format(&g->shapes[c->shape], shape, sizeof shape);
        cJSON_AddStringToObject(k, "shape", shape);
        for (int a = 0; a < g->cfg->correctness.n_axes; a++) {
            const int fi = g->cfg->correctness.axes[a].field;
            const evo_field *f = &g->task->shape_fields[fi];
            if (f->type == EVO_FIELD_BOOL) cJSON_AddBoolToObject(k, f->name, c->gc.shape.v[fi] != 0);
            else cJSON_AddNumberToObject(k, f->name, (double)c->gc.shape.v[fi]);
        }
        cJSON_AddNumberToObject(k, "seed", (double)c->gc.seed);
        cJSON_AddStringToObject(k, "dist", evo_dist_name(c->gc.dist));
        cJSON_AddBoolToObject(k, "timing_inputs", c->gc.timing);
    }
}

/* The program's kernels, loaded, for the launch of one of them (kv[pick]). */
typedef struct {
    const kvariant *kv;
    int n;
} kset;

static CUresult launch_candidate(gpu_state *g, const kset *ks, const kvariant *v, const gcase *c)
{
    return g->task->gpu->launch(g->task_state, &c->gc, ks->kv, ks->n, (int)(v - ks->kv), g->out);
}

/* Poison the output (0xff bytes: NaN in fp16, fp32 and e4m3) between canaries. */
static evo_status poison(gpu_state *g, const gcase *c, evo_err *err)
{
    const size_t guard_end = (c->out_bytes + 3) & ~(size_t)3;
    CU(g, cuMemsetD32Async(g->outbuf, CANARY, GUARD_WORDS, g->st), err);
    CU(g, cuMemsetD32Async(g->out + guard_end, CANARY, GUARD_WORDS, g->st), err);
    CU(g, cuMemsetD8Async(g->out, 0xff, guard_end, g->st), err);
    return EVO_OK;
}

/* Launch once into a poisoned output between canaries and wait. EVO_OK with o->verdict untouched when it ran. */
static evo_status run_once(gpu_state *g, const kset *ks, const kvariant *v, const gcase *c, outcome *o, evo_err *err)
{
    evo_status s = poison(g, c, err);
    if (s != EVO_OK) return s;
    CUresult r = launch_candidate(g, ks, v, c);
    if (r != CUDA_SUCCESS) {
        char msg[256];
        snprintf(msg, sizeof msg, "launch refused: %s", cu_name(g, r));
        fail_case(o, r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? EVO_V_RESOURCE_FAIL : EVO_V_LAUNCH_FAIL, msg, g, c);
        return EVO_OK;
    }
    CU(g, cuEventRecord(g->ev[0], g->st), err);
    CUresult fault = CUDA_SUCCESS;
    wait_result w = wait_event(g, g->ev[0], g->kernel_timeout_s, &fault);
    if (w == WAIT_TIMEOUT) {
        char msg[128];
        snprintf(msg, sizeof msg, "did not finish within %.1f s", g->kernel_timeout_s);
        fail_case(o, EVO_V_TIMEOUT, msg, g, c);
        o->exit_after = true;
    } else if (w == WAIT_FAULT) {
        char msg[256];
        snprintf(msg, sizeof msg, "faulted: %s", cu_name(g, fault));
        fail_case(o, EVO_V_CRASHED, msg, g, c);
        o->exit_after = true;
    }
    return EVO_OK;
}

/* Canaries intact, then the task's comparison (every element written and finite, errors within tolerance). */
static evo_status check_output(gpu_state *g, const gcase *c, outcome *o, evo_gpu_check *chk, evo_err *err)
{
    unsigned long long res_init[2] = {0, ~0ull}, res[2];
    CU(g, cuMemcpyHtoD(g->canary_res, res_init, sizeof res_init), err);
    unsigned long long words = GUARD_WORDS;
    unsigned pattern = CANARY;
    CUdeviceptr hi = g->out + ((c->out_bytes + 3) & ~(size_t)3);
    void *a0[] = {&g->outbuf, &words, &pattern, &g->canary_res};
    void *a1[] = {&hi, &words, &pattern, &g->canary_res};
    evo_status s = evo_gpu_launch(g, g->f_canary, 4, 1, 1, EVO_SUPPORT_BLOCK, a0, "canary check", err);
    if (s == EVO_OK) s = evo_gpu_launch(g, g->f_canary, 4, 1, 1, EVO_SUPPORT_BLOCK, a1, "canary check", err);
    if (s != EVO_OK) return s;
    CU(g, cuStreamSynchronize(g->st), err);
    CU(g, cuMemcpyDtoH(res, g->canary_res, sizeof res), err);
    memset(chk, 0, sizeof *chk);
    s = g->task->gpu->check(g->task_state, &c->gc, g->out, chk, err);
    if (s != EVO_OK) return s;
    const evo_metrics *m = &chk->m;
    char why[300] = "";
    if (res[0] > 0) snprintf(why, sizeof why, "wrote %llu words outside its output (canary guard band)", res[0]);
    else snprintf(why, sizeof why, "%s", chk->why);
    if (why[0]) {
        fail_case(o, EVO_V_INCORRECT, why, g, c);
        cJSON_AddNumberToObject(o->detail, "max_abs", m->max_abs);
        cJSON_AddNumberToObject(o->detail, "rel_l2", m->rel_l2);
        cJSON_AddNumberToObject(o->detail, "frac_over", m->frac_over);
        cJSON_AddNumberToObject(o->detail, "nonfinite", (double)m->n_nonfinite);
        cJSON_AddNumberToObject(o->detail, "first_bad_index", (double)m->first_bad);
        cJSON_AddNumberToObject(o->detail, "canary_words", (double)res[0]);
    }
    return EVO_OK;
}

/* The variant a shape is timed with: the task's pick. */
static const kvariant *variant_for(const gpu_state *g, const kvariant *vs, int n, const evo_shape *sh)
{
    evo_variant v[EVO_MAX_VARIANTS];
    for (int i = 0; i < n; i++) v[i] = vs[i].v;
    const int i = g->task->pick(v, n, sh, g->info.sm_count);
    return i < 0 ? NULL : &vs[i];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Resource gate: the kernel as loaded against this device's limits. */
/* Resource gate: the kernel as loaded against this device's limits. */
static evo_status load_variants(gpu_state *g, CUmodule mod, const evo_eval_request *req, kvariant *vs, outcome *o,
                                evo_err *err)
{
    const evo_cudrv *cu = g->cu;
    for (int i = 0; i < req->n_variants && o->verdict == EVO_V_OK; i++) {
        kvariant *v = &vs[i];
        v->v = req->variants[i];
        const char *symbol = v->v.name_expr; /* the lowered name */
        char msg[700];
        CUresult r = cu->cuModuleGetFunction(&v->fn, mod, symbol);
        if (r != CUDA_SUCCESS) {
            snprintf(msg, sizeof msg, "no kernel '%s' in the module (%s)", symbol, cu_name(g, r));
            fail_case(o, EVO_V_INVALID, msg, g, NULL);
            break;
        }
        if (v->v.threads == 0 && g->task->gpu->geometry) { /* a hand-written kernel declares its geometry */
            msg[0] = '\0';
            evo_status s = g->task->gpu->geometry(g->task_state, mod, &v->v, msg, sizeof msg, err);
            if (s != EVO_OK) return s;
            if (msg[0]) {
                fail_case(o, EVO_V_INVALID, msg, g, NULL);
                break;
            }
        }
        int regs = 0, local = 0, static_smem = 0;
        CU(g, cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, v->fn), err);
        CU(g, cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, v->fn), err);
        CU(g, cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, v->fn), err);
        const int threads = v->v.threads, smem = v->v.smem_bytes;
        msg[0] = '\0';
        if (threads > g->info.max_threads_per_block)
            snprintf(msg, sizeof msg, "%d threads > %d per block", threads, g->info.max_threads_per_block);
        else if (regs * threads > g->info.regs_per_block)
            snprintf(msg, sizeof msg, "%d registers x %d threads > %d per block", regs, threads,
                     g->info.regs_per_block);
        else if (smem + static_smem > g->info.smem_optin)
            snprintf(msg, sizeof msg, "%d bytes of shared memory > %d", smem + static_smem, g->info.smem_optin);
        else if (local > 0 && !g->cfg->compile.allow_spills)
            snprintf(msg, sizeof msg, "uses %d bytes of local memory per thread (spills or stack arrays)", local);
        else if (cu->cuFuncSetAttribute(v->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem) != CUDA_SUCCESS)
            snprintf(msg, sizeof msg, "the driver refuses %d bytes of dynamic shared memory", smem);
        if (msg[0]) fail_case(o, EVO_V_RESOURCE_FAIL, msg, g, NULL);
    }
    return EVO_OK;
}

static evo_status evaluate(gpu_state *g, const evo_eval_request *req, evo_eval_reply *rep, outcome *o, evo_err *err)
{
    const evo_config *cfg = g->cfg;
    memset(rep, 0, sizeof *rep);
    rep->id = req->id;
    snprintf(rep->device, sizeof rep->device, "%s", g->info.device);
    o->verdict = EVO_V_OK;
    for (int i = 0; i < cfg->n_shapes; i++) {
        evo_shape_result *r = &rep->shapes[i];
        const evo_shape *sh = &cfg->shapes[i];
        evo_shape_result_set_shape(r, sh);
    }
    rep->n_shapes = cfg->n_shapes;

    char *cubin;
    size_t cubin_len;
    evo_status s = evo_read_file(req->cubin_path, &cubin, &cubin_len, err);
    if (s != EVO_OK) return s;
    CUmodule mod = NULL;
    CUresult r = g->cu->cuModuleLoadData(&mod, cubin);
    free(cubin);
    if (r != CUDA_SUCCESS) {
        char msg[256];
        snprintf(msg, sizeof msg, "the driver cannot load the module: %s", cu_name(g, r));
        fail_case(o, EVO_V_LAUNCH_FAIL, msg, g, NULL);
        return EVO_OK;
    }
    kvariant vs[EVO_MAX_VARIANTS];
    memset(vs, 0, sizeof vs);
    s = load_variants(g, mod, req, vs, o, err);
    const kset ks = {vs, req->n_variants};
    if (s == EVO_OK && o->verdict == EVO_V_OK && g->task->gpu->begin)
        s = g->task->gpu->begin(g->task_state, vs, req->n_variants, err);

    /* ---- correctness ---- */
    const double t_check = evo_now();
    double worst_rel = 0;
    int n_checked = 0;
    for (int i = 0; s == EVO_OK && req->check && o->verdict == EVO_V_OK && i < g->n_cases; i++) {
        gcase *c = &g->cases[i];
        if (c->gc.timing) continue;
        /* Every variant that serves the case's shape runs the case, whichever one the shape would be timed with. */
        int ran = 0;
        for (int k = 0; s == EVO_OK && o->verdict == EVO_V_OK && k < req->n_variants; k++) {
            const kvariant *v = &vs[k];
            if (!g->task->serves(&v->v, &c->gc.shape)) continue;
            ran++;
            if ((s = prepare_case(g, c, err)) != EVO_OK) break;
            if ((s = run_once(g, &ks, v, c, o, err)) != EVO_OK || o->verdict != EVO_V_OK) break;
            evo_gpu_check chk;
            if ((s = check_output(g, c, o, &chk, err)) != EVO_OK) break;
            if (o->verdict != EVO_V_OK && req->n_variants > 1) cJSON_AddNumberToObject(o->detail, "variant", k);
            n_checked++;
            if (chk.m.rel_l2 > worst_rel) worst_rel = chk.m.rel_l2;
            if (c->shape < cfg->n_shapes) {
                evo_shape_result *sr = &rep->shapes[c->shape];
                if (chk.m.max_abs > sr->max_abs) sr->max_abs = chk.m.max_abs;
                if (chk.m.rel_l2 > sr->rel_l2) sr->rel_l2 = chk.m.rel_l2;
                if (chk.e2e.rel_l2 > sr->e2e_rel_l2) sr->e2e_rel_l2 = chk.e2e.rel_l2;
                if (chk.e2e.rmse > sr->e2e_rmse) sr->e2e_rmse = chk.e2e.rmse;
            }
        }
        if (s == EVO_OK && o->verdict == EVO_V_OK && !ran) {
            char msg[160], shape[96];
            evo_shape_format(&g->shapes[c->shape], shape, sizeof shape);
            snprintf(msg, sizeof msg, "no kernel serves shape %s", shape);
            fail_case(o, EVO_V_INVALID, msg, g, c);
        }
    }
    rep->check_s = evo_now() - t_check;
    cJSON_AddNumberToObject(o->detail, "cases_checked", n_checked);
    cJSON_AddNumberToObject(o->detail, "worst_rel_l2", worst_rel);

    /* ---- timing ---- */
    const double t_time = evo_now();
    const int reps = cfg->timing.repetitions < MAX_REPS ? cfg->timing.repetitions : MAX_REPS;
    double *ts = evo_xcalloc((size_t)reps, sizeof *ts);
    for (int i = 0; s == EVO_OK && req->time && !g->sanitize && o->verdict == EVO_V_OK && i < cfg->n_shapes; i++) {
        gcase *c = NULL;
        for (int k = 0; k < g->n_cases; k++)
            if (g->cases[k].gc.timing && g->cases[k].shape == i) c = &g->cases[k];
        const kvariant *v = variant_for(g, vs, req->n_variants, &cfg->shapes[i]);
        if (!c || !v) {
            fail_case(o, EVO_V_INVALID, "no kernel serves a timed shape", g, c);
            break;
        }
        if ((s = prepare_case(g, c, err)) != EVO_OK) break;
        for (int w = 0; w < cfg->timing.warmup && o->verdict == EVO_V_OK; w++)
            if ((s = run_once(g, &ks, v, c, o, err)) != EVO_OK) break;
        if (s != EVO_OK || o->verdict != EVO_V_OK) break;
        /* Each repetition: flush L2, poison the output, time the launch. All queued before waiting, so no host
         * gap falls inside a measurement; the first three are judged for an early abort. */
        int done = 0;
        const int first = reps < 3 ? reps : 3;
        for (int batch_end = first; done < reps; batch_end = reps) {
            for (int k = done; k < batch_end; k++) {
                if (cfg->timing.flush_l2) CU(g, cuMemsetD8Async(g->flush, (unsigned char)k, g->flush_bytes, g->st), err);
                CU(g, cuMemsetD8Async(g->out, 0xff, c->out_bytes, g->st), err);
                CU(g, cuEventRecord(g->ev[2 * k], g->st), err);
                r = launch_candidate(g, &ks, v, c);
                if (r != CUDA_SUCCESS) {
                    fail_case(o, EVO_V_LAUNCH_FAIL, "launch refused while timing", g, c);
                    break;
                }
                CU(g, cuEventRecord(g->ev[2 * k + 1], g->st), err);
            }
            if (o->verdict != EVO_V_OK) break;
            CUresult fault = CUDA_SUCCESS;
            wait_result wr = wait_event(g, g->ev[2 * batch_end - 1],
                                        cfg->timing.kernel_timeout_s * (batch_end - done) + 1.0, &fault);
            if (wr != WAIT_OK) {
                fail_case(o, wr == WAIT_TIMEOUT ? EVO_V_TIMEOUT : EVO_V_CRASHED,
                          wr == WAIT_TIMEOUT ? "did not finish while timing" : cu_name(g, fault), g, c);
                o->exit_after = true;
                break;
            }
            for (int k = done; k < batch_end; k++) {
                float ms = 0;
                CU(g, cuEventElapsedTime(&ms, g->ev[2 * k], g->ev[2 * k + 1]), err);
                ts[k] = 1000.0 * ms;
            }
            done = batch_end;
            if (done == first && done < reps && !req->is_baseline && i < req->n_best && req->best_us[i] > 0) {
                double head[3];
                memcpy(head, ts, (size_t)first * sizeof *ts);
                qsort(head, (size_t)first, sizeof *head, cmp_double);
                if (head[first / 2] > cfg->timing.abort_factor * req->best_us[i]) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "%.1f us after %d runs > %.1f x the best %.1f us", head[first / 2],
                             first, cfg->timing.abort_factor, req->best_us[i]);
                    fail_case(o, EVO_V_SLOW, msg, g, c);
                    rep->shapes[i].median_us = head[first / 2];
                    break;
                }
            }
        }
        if (s != EVO_OK || o->verdict != EVO_V_OK) break;
        /* The last timed launch must have written a correct output too (a kernel that skips work when called
         * again with the same pointers fails here). */
        evo_gpu_check chk;
        if ((s = check_output(g, c, o, &chk, err)) != EVO_OK || o->verdict != EVO_V_OK) {
            if (o->verdict != EVO_V_OK) cJSON_AddStringToObject(o->detail, "stage", "output of a timed launch");
            break;
        }
        qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
        evo_shape_result *sr = &rep->shapes[i];
        sr->median_us = ts[reps / 2];
        sr->p10_us = ts[(reps - 1) / 10];
        sr->p90_us = ts[(reps - 1) * 9 / 10];
        sr->rate = g->task->work(&cfg->shapes[i]) / (sr->median_us * 1e-6) / g->task->rate_scale;
        if (req->is_baseline) {
            g->baseline_us[i] = sr->median_us;
            g->baseline_noise[i] = (sr->p90_us - sr->p10_us) / sr->median_us;
        }
        sr->baseline_us = g->baseline_us[i];
        sr->speedup = sr->baseline_us > 0 ? sr->baseline_us / sr->median_us : 0;
    }
    free(ts);
    rep->time_s = evo_now() - t_time;
    if (req->time) {
        double noise = 0;
        for (int i = 0; i < cfg->n_shapes; i++) noise = fmax(noise, g->baseline_noise[i]);
        cJSON_AddNumberToObject(o->detail, "baseline_noise", noise);
    }
    if (!o->exit_after) g->cu->cuModuleUnload(mod);
    return s;
}

/* ---- the request loop ---- */

static evo_status on_hello(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    gpu_state *g = ctx;
    (void)exit_after;
    int64_t id;
    evo_status s = evo_proto_decode_hello_request(line, &id, err);
    if (s != EVO_OK) return s;
    g->info.id = id;
    *reply = evo_proto_encode_hello_reply(&g->info);
    return EVO_OK;
}

static evo_status on_eval(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    gpu_state *g = ctx;
    evo_eval_request *req = evo_xcalloc(1, sizeof *req);
    evo_eval_reply *rep = evo_xcalloc(1, sizeof *rep);
    evo_status s = evo_proto_decode_eval_request(line, req, err);
    outcome o = {EVO_V_OK, cJSON_CreateObject(), false};
    if (s == EVO_OK) s = evaluate(g, req, rep, &o, err);
    if (s == EVO_OK) {
        rep->verdict = o.verdict;
        rep->detail = cJSON_PrintUnformatted(o.detail);
        s = evo_proto_encode_eval_reply(rep, reply, err);
        *exit_after = o.exit_after;
    }
    cJSON_Delete(o.detail);
    evo_eval_reply_free(rep);
    free(rep);
    free(req);
    return s;
}

/* A worker whose set-up failed still answers, so the parent can say why (no driver, no such GPU...). */
typedef struct {
    evo_status status;
    evo_err why;
} failed_open;

static evo_status on_any_failed(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err)
{
    const failed_open *f = ctx;
    (void)line, (void)reply;
    *exit_after = true;
    return evo_fail(err, f->status, "%s", f->why.msg);
}

evo_status evo_gpu_serve(int gpu, const char *config_path, bool sanitize, int in_fd, int out_fd, evo_err *err)
{
    gpu_state *g = evo_xcalloc(1, sizeof *g);
    failed_open f = {EVO_OK, {{0}}};
    f.status = gpu_open(g, gpu, config_path, sanitize, &f.why);
    evo_status s;
    if (f.status == EVO_OK) {
        const evo_worker_handler handlers[] = {{"hello", on_hello}, {"eval", on_eval}};
        s = evo_worker_serve(in_fd, out_fd, handlers, (int)EVO_ARRAY_LEN(handlers), g, err);
    } else {
        const evo_worker_handler handlers[] = {{"hello", on_any_failed}, {"eval", on_any_failed}};
        s = evo_worker_serve(in_fd, out_fd, handlers, (int)EVO_ARRAY_LEN(handlers), &f, err);
    }
    /* The process ends next; the driver frees device memory with the context. */
    evo_config_free(g->cfg);
    free(g->cases);
    free(g);
    return s;
}
