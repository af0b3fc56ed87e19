/* eval_gpu.c — the GPU side of an evaluation, run only inside a worker process (`evo worker`): device set-up,
 * test inputs made once per (shape, causal, seed, distribution) on the GPU, FP32 references, and the gates —
 * resources (limits read from the device), correctness (NaN-poisoned outputs between canary guard bands, every
 * configured case), timing (CUDA events, L2 flushed, warm-up, median with p10/p90, early abort, re-checked output).
 * Implements evo_gpu_serve (worker.h). A fault or a hung kernel ends this process after its reply: the parent
 * restarts it. */
#include "attn_ref.h"
#include "compile.h"
#include "config.h"
#include "cudrv.h"
#include "evo_attention_abi.h"
#include "protocol.h"
#include "sanitize.h"
#include "task.h"
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

/* One set of inputs with its references, made on first use and kept for the life of the worker. */
typedef struct {
    int shape;       /* index into the worker's shape list (timed shapes first) */
    bool causal;
    uint64_t seed;
    evo_dist dist;
    bool timing;     /* the timing inputs of timed shape `shape` */
    bool ready;
    size_t n;        /* elements of Q (and of O) */
    CUdeviceptr codes[3], scales[3];
    CUdeviceptr ref;   /* FP32 reference on the dequantized inputs */
    CUdeviceptr ref16; /* FP32 reference on the unquantized FP16 inputs: the end-to-end error */
    double ref_rms;
} gcase;

typedef struct {
    CUfunction fn;
    int head_dim, threads, rows, smem, min_waves;
} kvariant;

typedef struct {
    const evo_cudrv *cu;
    CUdevice dev;
    CUcontext ctx;
    CUstream st;
    CUmodule support;
    CUfunction f_gen, f_quant, f_deq, f_h2f, f_ref, f_cmp_reset, f_cmp, f_canary;
    evo_hello_reply info;
    int gpu;
    bool sanitize;           /* under compute-sanitizer: few cases, long kernel time limits, no timing */
    double kernel_timeout_s; /* per launch */
    evo_config *cfg;
    evo_shape shapes[2 * EVO_MAX_SHAPES]; /* timed shapes, then the extra correctness shapes */
    int n_shapes;
    gcase *cases;
    int n_cases;
    size_t max_n;
    CUdeviceptr outbuf, out; /* out = outbuf + guard */
    CUdeviceptr scratch16[3], scratchf[3];
    CUdeviceptr acc, canary_res, flush;
    size_t flush_bytes;
    CUevent ev[2 * MAX_REPS + 2];
    double baseline_us[EVO_MAX_SHAPES]; /* the baseline genome's last times on this GPU */
    double baseline_noise[EVO_MAX_SHAPES];
} gpu_state;

#define CU(g, call, err) EVO_CU((g)->cu, call, err)

static double softmax_scale(const gpu_state *g, int d)
{
    return g->cfg->softmax_scale > 0 ? g->cfg->softmax_scale : 1.0 / sqrt((double)d);
}

static unsigned grid_for(size_t n)
{
    size_t b = (n + EVO_SUPPORT_BLOCK - 1) / EVO_SUPPORT_BLOCK;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* ---- set-up ---- */

static evo_status load_support(gpu_state *g, evo_err *err)
{
    const char *src;
    evo_status s = evo_template_get("support.cu", &src, NULL, err);
    if (s != EVO_OK) return s;
    static const char *const opts[] = {"-std=c++17"};
    evo_compile_req req = {.source = src, .program_name = "support.cu", .arch = g->info.arch,
                           .options = opts, .n_options = 1, .timeout_s = 300};
    evo_compile_result r;
    s = evo_compile(NULL, &req, &r, err);
    if (s != EVO_OK) return s;
    if (r.outcome != EVO_COMPILE_OK) {
        s = evo_fail(err, EVO_E_INTERNAL, "support.cu does not compile for %s: %.400s", g->info.arch, r.log);
        evo_compile_result_free(&r);
        return s;
    }
    CUresult cr = g->cu->cuModuleLoadData(&g->support, r.cubin);
    evo_compile_result_free(&r);
    s = evo_cu_check(g->cu, cr, "loading support.cu", err);
    if (s != EVO_OK) return s;
    struct {
        CUfunction *f;
        const char *name;
    } fns[] = {{&g->f_gen, "evo_gen_inputs"},     {&g->f_quant, "evo_quantize"},
               {&g->f_deq, "evo_dequantize"},     {&g->f_h2f, "evo_half_to_float"},
               {&g->f_ref, "evo_reference_attention"}, {&g->f_cmp_reset, "evo_compare_reset"},
               {&g->f_cmp, "evo_compare"},        {&g->f_canary, "evo_canary_check"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fns); i++) {
        s = evo_cu_check(g->cu, g->cu->cuModuleGetFunction(fns[i].f, g->support, fns[i].name), fns[i].name, err);
        if (s != EVO_OK) return s;
    }
    return EVO_OK;
}

static void add_case(gpu_state *g, int shape, bool causal, uint64_t seed, evo_dist dist, bool timing)
{
    g->cases = evo_xrealloc(g->cases, (size_t)(g->n_cases + 1) * sizeof *g->cases);
    gcase *c = &g->cases[g->n_cases++];
    memset(c, 0, sizeof *c);
    c->shape = shape, c->causal = causal, c->seed = seed, c->dist = dist, c->timing = timing;
    const evo_shape *sh = &g->shapes[shape];
    c->n = (size_t)sh->batch * sh->heads * sh->seq * sh->head_dim;
    if (c->n > g->max_n) g->max_n = c->n;
}

static void build_cases(gpu_state *g)
{
    const evo_config *cfg = g->cfg;
    for (int i = 0; i < cfg->n_shapes; i++) g->shapes[g->n_shapes++] = cfg->shapes[i];
    for (int i = 0; i < cfg->correctness.n_shapes; i++) g->shapes[g->n_shapes++] = cfg->correctness.shapes[i];
    /* Every shape with every causal setting and distribution; the timed shapes (the large ones) with the first
     * correctness.timed_seeds seeds, the extra shapes with all of them. Under a sanitizer, the first seed and
     * distribution only: what it finds depends on the shape, not on the values. */
    for (int sh = 0; sh < g->n_shapes; sh++) {
        const int n_seeds = g->sanitize ? 1 : sh < cfg->n_shapes ? cfg->correctness.timed_seeds : cfg->correctness.n_seeds;
        const int n_dists = g->sanitize ? 1 : cfg->correctness.n_dists;
        for (int c = 0; c < cfg->correctness.n_causal; c++)
            for (int s = 0; s < n_seeds; s++)
                for (int d = 0; d < n_dists; d++)
                    add_case(g, sh, cfg->correctness.causal[c], cfg->correctness.seeds[s], cfg->correctness.dists[d],
                             false);
    }
    if (!g->sanitize)
        for (int i = 0; i < cfg->n_shapes; i++)
            add_case(g, i, cfg->shapes[i].causal, TIMING_SEED + (uint64_t)i, EVO_DIST_NORMAL, true);
}

static evo_status prepare_case(gpu_state *g, gcase *c, evo_err *err);

static evo_status gpu_open(gpu_state *g, int gpu, const char *config_path, bool sanitize, evo_err *err)
{
    memset(g, 0, sizeof *g);
    g->gpu = gpu;
    g->sanitize = sanitize;
    evo_status s = evo_config_load_default(config_path, &g->cfg, NULL, err);
    if (s != EVO_OK) return s;
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

    build_cases(g);
    const size_t n = g->max_n;
    CU(g, cuMemAlloc(&g->outbuf, n * 2 + 2 * GUARD_WORDS * 4), err);
    g->out = g->outbuf + GUARD_WORDS * 4;
    for (int t = 0; t < 3; t++) {
        CU(g, cuMemAlloc(&g->scratch16[t], n * 2), err);
        CU(g, cuMemAlloc(&g->scratchf[t], n * 4), err);
    }
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

/* ---- inputs and references ---- */

static evo_status launch_support(gpu_state *g, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block,
                                 void **args, const char *what, evo_err *err)
{
    return evo_cu_check(g->cu, g->cu->cuLaunchKernel(f, gx, gy, gz, block, 1, 1, 0, g->st, args, NULL), what, err);
}

static evo_status reference(gpu_state *g, const evo_shape *sh, bool causal, CUdeviceptr q, CUdeviceptr k,
                            CUdeviceptr v, CUdeviceptr o, evo_err *err)
{
    int b = sh->batch, h = sh->heads, s = sh->seq, d = sh->head_dim, c = causal;
    float scale = (float)softmax_scale(g, d);
    void *args[] = {&q, &k, &v, &o, &b, &h, &s, &d, &c, &scale};
    return launch_support(g, g->f_ref, (unsigned)((s + EVO_SUPPORT_REF_ROWS - 1) / EVO_SUPPORT_REF_ROWS),
                          (unsigned)h, (unsigned)b, EVO_SUPPORT_REF_BLOCK, args, "reference attention", err);
}

static evo_status compare(gpu_state *g, CUdeviceptr out, CUdeviceptr ref, size_t n, double atol, double rtol,
                          evo_compare_acc *acc, evo_err *err)
{
    void *a0[] = {&g->acc};
    evo_status s = launch_support(g, g->f_cmp_reset, 1, 1, 1, 1, a0, "compare reset", err);
    if (s != EVO_OK) return s;
    unsigned long long nn = n;
    void *a1[] = {&out, &ref, &nn, &atol, &rtol, &g->acc};
    s = launch_support(g, g->f_cmp, grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, a1, "compare", err);
    if (s != EVO_OK) return s;
    CU(g, cuStreamSynchronize(g->st), err);
    CU(g, cuMemcpyDtoH(acc, g->acc, sizeof *acc), err);
    return EVO_OK;
}

static evo_status prepare_case(gpu_state *g, gcase *c, evo_err *err)
{
    if (c->ready) return EVO_OK;
    const evo_cudrv *cu = g->cu;
    const evo_shape *sh = &g->shapes[c->shape];
    const size_t n = c->n;
    unsigned long long nn = n, head = (unsigned long long)sh->seq * sh->head_dim, seed = c->seed;
    int dist = (int)c->dist, fmt = (int)g->cfg->format;
    const int bh = sh->batch * sh->heads;
    evo_status s;
    for (unsigned t = 0; t < 3; t++) {
        CU(g, cuMemAlloc(&c->codes[t], n), err);
        CU(g, cuMemAlloc(&c->scales[t], (size_t)bh * 4), err);
        void *ga[] = {&g->scratch16[t], &nn, &head, &seed, &t, &dist};
        if ((s = launch_support(g, g->f_gen, grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, ga, "generate", err))) return s;
        void *qa[] = {&g->scratch16[t], &c->codes[t], &c->scales[t], &head, &fmt};
        if ((s = launch_support(g, g->f_quant, (unsigned)bh, 1, 1, EVO_SUPPORT_BLOCK, qa, "quantize", err))) return s;
        void *da[] = {&c->codes[t], &c->scales[t], &g->scratchf[t], &nn, &head, &fmt};
        if ((s = launch_support(g, g->f_deq, grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, da, "dequantize", err))) return s;
    }
    CU(g, cuMemAlloc(&c->ref, n * 4), err);
    if ((s = reference(g, sh, c->causal, g->scratchf[0], g->scratchf[1], g->scratchf[2], c->ref, err))) return s;
    /* End-to-end errors (vs the unquantized inputs) are reported per timed shape, on normal and outlier inputs. */
    if (c->shape < g->cfg->n_shapes && (c->timing || c->dist == EVO_DIST_NORMAL || c->dist == EVO_DIST_OUTLIERS)) {
        CU(g, cuMemAlloc(&c->ref16, n * 4), err);
        for (int t = 0; t < 3; t++) {
            void *ha[] = {&g->scratch16[t], &g->scratchf[t], &nn};
            if ((s = launch_support(g, g->f_h2f, grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, ha, "half to float", err)))
                return s;
        }
        if ((s = reference(g, sh, c->causal, g->scratchf[0], g->scratchf[1], g->scratchf[2], c->ref16, err)))
            return s;
    }
    /* ||ref|| from a comparison against zeros: the element tolerance is in units of the reference's RMS. */
    CU(g, cuMemsetD8Async(g->out, 0, n * 2, g->st), err);
    evo_compare_acc acc;
    if ((s = compare(g, g->out, c->ref, n, 0, 0, &acc, err))) return s;
    c->ref_rms = sqrt(acc.sum_sq_ref / (double)n);
    c->ready = true;
    (void)cu;
    return EVO_OK;
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
        cJSON_AddBoolToObject(k, "causal", c->causal);
        cJSON_AddNumberToObject(k, "seed", (double)c->seed);
        cJSON_AddStringToObject(k, "dist", evo_dist_name(c->dist));
        cJSON_AddBoolToObject(k, "timing_inputs", c->timing);
    }
}

static CUresult launch_candidate(gpu_state *g, const kvariant *v, const gcase *c)
{
    const evo_shape *sh = &g->shapes[c->shape];
    evo_attn_params p = {
        .q = c->codes[0], .k = c->codes[1], .v = c->codes[2],
        .q_scale = c->scales[0], .k_scale = c->scales[1], .v_scale = c->scales[2],
        .o = g->out, .batch = sh->batch, .heads = sh->heads, .seq = sh->seq, .head_dim = sh->head_dim,
        .causal = c->causal, .softmax_scale = (float)softmax_scale(g, sh->head_dim),
    };
    void *args[] = {&p};
    const unsigned gx = (unsigned)((sh->seq + v->rows - 1) / v->rows);
    return g->cu->cuLaunchKernel(v->fn, gx, (unsigned)sh->heads, (unsigned)sh->batch, (unsigned)v->threads, 1, 1,
                                 (unsigned)v->smem, g->st, args, NULL);
}

/* Launch once into a poisoned output between canaries and wait. EVO_OK with o->verdict untouched when it ran. */
static evo_status run_once(gpu_state *g, const kvariant *v, const gcase *c, outcome *o, evo_err *err)
{
    CU(g, cuMemsetD32Async(g->outbuf, CANARY, GUARD_WORDS, g->st), err);
    CU(g, cuMemsetD32Async(g->out + c->n * 2, CANARY, GUARD_WORDS, g->st), err);
    CU(g, cuMemsetD8Async(g->out, 0xff, c->n * 2, g->st), err); /* NaN in every element */
    CUresult r = launch_candidate(g, v, c);
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

/* Canaries intact, every element written and finite, errors within tolerance. Fills metrics. */
static evo_status check_output(gpu_state *g, const gcase *c, outcome *o, evo_metrics *m, evo_metrics *e2e,
                               evo_err *err)
{
    unsigned long long res_init[2] = {0, ~0ull}, res[2];
    CU(g, cuMemcpyHtoD(g->canary_res, res_init, sizeof res_init), err);
    unsigned long long words = GUARD_WORDS;
    unsigned pattern = CANARY;
    CUdeviceptr hi = g->out + c->n * 2;
    void *a0[] = {&g->outbuf, &words, &pattern, &g->canary_res};
    void *a1[] = {&hi, &words, &pattern, &g->canary_res};
    evo_status s = launch_support(g, g->f_canary, 4, 1, 1, EVO_SUPPORT_BLOCK, a0, "canary check", err);
    if (s == EVO_OK) s = launch_support(g, g->f_canary, 4, 1, 1, EVO_SUPPORT_BLOCK, a1, "canary check", err);
    if (s != EVO_OK) return s;
    CU(g, cuStreamSynchronize(g->st), err);
    CU(g, cuMemcpyDtoH(res, g->canary_res, sizeof res), err);
    const evo_tolerance *tol = &g->cfg->correctness.tol;
    evo_compare_acc acc;
    s = compare(g, g->out, c->ref, c->n, tol->atol * c->ref_rms, tol->rtol, &acc, err);
    if (s != EVO_OK) return s;
    evo_ref_metrics_from_acc(&acc, c->n, m);
    memset(e2e, 0, sizeof *e2e);
    if (c->ref16) {
        s = compare(g, g->out, c->ref16, c->n, 0, 0, &acc, err);
        if (s != EVO_OK) return s;
        evo_ref_metrics_from_acc(&acc, c->n, e2e);
    }
    char why[256] = "";
    if (res[0] > 0)
        snprintf(why, sizeof why, "wrote %llu words outside its output (canary guard band)", res[0]);
    else if (m->n_nonfinite > 0)
        snprintf(why, sizeof why, "%zu output elements not written or not finite (first at %lld)", m->n_nonfinite,
                 m->first_bad);
    else if (m->rel_l2 > tol->rel_l2)
        snprintf(why, sizeof why, "rel-L2 %.3g > %.3g", m->rel_l2, tol->rel_l2);
    else if (m->frac_over > tol->max_frac_over)
        snprintf(why, sizeof why, "%zu elements over atol %.3g x rms + rtol %.3g x |ref| (first at %lld)", m->n_over,
                 tol->atol, tol->rtol, m->first_bad);
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

/* The variant a shape runs with (evo_variant_pick's rule): by head dim, the large-problem one when its grid
 * fills at least min_waves waves of the GPU's SMs. */
static const kvariant *variant_for(const gpu_state *g, const kvariant *vs, int n, const evo_shape *sh, bool causal)
{
    evo_variant v[EVO_MAX_VARIANTS];
    for (int i = 0; i < n; i++)
        v[i] = (evo_variant){.head_dim = vs[i].head_dim, .rows_per_block = vs[i].rows, .min_waves = vs[i].min_waves};
    const int i = evo_variant_pick(v, n, sh->head_dim, sh->batch, sh->heads, sh->seq, causal, g->info.sm_count);
    return i < 0 ? NULL : &vs[i];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Resource gate: the kernel as loaded against this device's limits. */
static evo_status load_variants(gpu_state *g, CUmodule mod, const evo_eval_request *req, kvariant *vs, outcome *o,
                                evo_err *err)
{
    const evo_cudrv *cu = g->cu;
    for (int i = 0; i < req->n_variants && o->verdict == EVO_V_OK; i++) {
        const evo_eval_variant *rv = &req->variants[i];
        kvariant *v = &vs[i];
        v->head_dim = rv->head_dim, v->threads = rv->threads, v->rows = rv->rows_per_block, v->smem = rv->smem_bytes;
        v->min_waves = rv->min_waves;
        char msg[2 * EVO_PROTO_SYMBOL_MAX + 200]; /* two symbols and the words around them */
        CUresult r = cu->cuModuleGetFunction(&v->fn, mod, rv->symbol);
        if (r != CUDA_SUCCESS) {
            snprintf(msg, sizeof msg, "no kernel '%s' in the module (%s)", rv->symbol, cu_name(g, r));
            fail_case(o, EVO_V_INVALID, msg, g, NULL);
            break;
        }
        if (v->threads == 0) { /* a hand-written kernel declares its geometry next to itself */
            char sym[EVO_PROTO_SYMBOL_MAX + 16];
            snprintf(sym, sizeof sym, "%s_launch", rv->symbol);
            CUdeviceptr p;
            size_t bytes;
            evo_attn_launch li;
            r = cu->cuModuleGetGlobal(&p, &bytes, mod, sym);
            if (r != CUDA_SUCCESS || bytes != sizeof li) {
                snprintf(msg, sizeof msg, "no '%s' (an evo_attn_launch) next to kernel '%s'", sym, rv->symbol);
                fail_case(o, EVO_V_INVALID, msg, g, NULL);
                break;
            }
            CU(g, cuMemcpyDtoH(&li, p, sizeof li), err);
            v->threads = li.threads, v->rows = li.rows_per_block, v->smem = li.smem_bytes;
            if (li.format != (int)g->cfg->format) {
                snprintf(msg, sizeof msg, "'%s' takes format %d but the config's format is %s", sym, li.format,
                         evo_format_name(g->cfg->format));
                fail_case(o, EVO_V_INVALID, msg, g, NULL);
                break;
            }
            if (v->threads < 32 || v->threads % 32 || v->rows < 1 || v->smem < 0) {
                snprintf(msg, sizeof msg, "'%s' declares an impossible geometry (%d threads, %d rows, %d bytes)", sym,
                         v->threads, v->rows, v->smem);
                fail_case(o, EVO_V_INVALID, msg, g, NULL);
                break;
            }
        }
        int regs = 0, local = 0, static_smem = 0;
        CU(g, cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, v->fn), err);
        CU(g, cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, v->fn), err);
        CU(g, cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, v->fn), err);
        msg[0] = '\0';
        if (v->threads > g->info.max_threads_per_block)
            snprintf(msg, sizeof msg, "%d threads > %d per block", v->threads, g->info.max_threads_per_block);
        else if (regs * v->threads > g->info.regs_per_block)
            snprintf(msg, sizeof msg, "%d registers x %d threads > %d per block", regs, v->threads,
                     g->info.regs_per_block);
        else if (v->smem + static_smem > g->info.smem_optin)
            snprintf(msg, sizeof msg, "%d bytes of shared memory > %d", v->smem + static_smem, g->info.smem_optin);
        else if (local > 0 && !g->cfg->compile.allow_spills)
            snprintf(msg, sizeof msg, "uses %d bytes of local memory per thread (spills or stack arrays)", local);
        else if (cu->cuFuncSetAttribute(v->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v->smem) !=
                 CUDA_SUCCESS)
            snprintf(msg, sizeof msg, "the driver refuses %d bytes of dynamic shared memory", v->smem);
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
        evo_shape_format(sh, r->shape, sizeof r->shape);
        r->batch = sh->batch, r->heads = sh->heads, r->seq = sh->seq, r->head_dim = sh->head_dim, r->causal = sh->causal;
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

    /* ---- correctness ---- */
    const double t_check = evo_now();
    double worst_rel = 0;
    int n_checked = 0;
    for (int i = 0; s == EVO_OK && req->check && o->verdict == EVO_V_OK && i < g->n_cases; i++) {
        gcase *c = &g->cases[i];
        if (c->timing) continue;
        /* Every variant of the case's head dim runs every case, whichever one the shape would be timed with. */
        const int d = g->shapes[c->shape].head_dim;
        int ran = 0;
        for (int k = 0; s == EVO_OK && o->verdict == EVO_V_OK && k < req->n_variants; k++) {
            const kvariant *v = &vs[k];
            if (v->head_dim != d) continue;
            ran++;
            if ((s = prepare_case(g, c, err)) != EVO_OK) break;
            if ((s = run_once(g, v, c, o, err)) != EVO_OK || o->verdict != EVO_V_OK) break;
            evo_metrics m, e2e;
            if ((s = check_output(g, c, o, &m, &e2e, err)) != EVO_OK) break;
            if (o->verdict != EVO_V_OK && req->n_variants > 1) cJSON_AddNumberToObject(o->detail, "variant", k);
            n_checked++;
            if (m.rel_l2 > worst_rel) worst_rel = m.rel_l2;
            if (c->shape < cfg->n_shapes) {
                evo_shape_result *sr = &rep->shapes[c->shape];
                if (m.max_abs > sr->max_abs) sr->max_abs = m.max_abs;
                if (m.rel_l2 > sr->rel_l2) sr->rel_l2 = m.rel_l2;
                if (e2e.rel_l2 > sr->e2e_rel_l2) sr->e2e_rel_l2 = e2e.rel_l2;
                if (e2e.rmse > sr->e2e_rmse) sr->e2e_rmse = e2e.rmse;
            }
        }
        if (s == EVO_OK && o->verdict == EVO_V_OK && !ran) {
            char msg[128];
            snprintf(msg, sizeof msg, "no kernel for head dim %d", d);
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
            if (g->cases[k].timing && g->cases[k].shape == i) c = &g->cases[k];
        const kvariant *v = variant_for(g, vs, req->n_variants, &cfg->shapes[i], cfg->shapes[i].causal);
        if (!c || !v) {
            fail_case(o, EVO_V_INVALID, "no kernel for a timed shape's head dim", g, c);
            break;
        }
        if ((s = prepare_case(g, c, err)) != EVO_OK) break;
        for (int w = 0; w < cfg->timing.warmup && o->verdict == EVO_V_OK; w++)
            if ((s = run_once(g, v, c, o, err)) != EVO_OK) break;
        if (s != EVO_OK || o->verdict != EVO_V_OK) break;
        /* Each repetition: flush L2, poison the output, time the launch. All queued before waiting, so no host
         * gap falls inside a measurement; the first three are judged for an early abort. */
        int done = 0;
        const int first = reps < 3 ? reps : 3;
        for (int batch_end = first; done < reps; batch_end = reps) {
            for (int k = done; k < batch_end; k++) {
                if (cfg->timing.flush_l2) CU(g, cuMemsetD8Async(g->flush, (unsigned char)k, g->flush_bytes, g->st), err);
                CU(g, cuMemsetD8Async(g->out, 0xff, c->n * 2, g->st), err);
                CU(g, cuEventRecord(g->ev[2 * k], g->st), err);
                r = launch_candidate(g, v, c);
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
        evo_metrics m, e2e;
        if ((s = check_output(g, c, o, &m, &e2e, err)) != EVO_OK || o->verdict != EVO_V_OK) {
            if (o->verdict != EVO_V_OK) cJSON_AddStringToObject(o->detail, "stage", "output of a timed launch");
            break;
        }
        qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
        evo_shape_result *sr = &rep->shapes[i];
        sr->median_us = ts[reps / 2];
        sr->p10_us = ts[(reps - 1) / 10];
        sr->p90_us = ts[(reps - 1) * 9 / 10];
        const evo_task *task = evo_task_find(cfg->task);
        sr->tflops = task ? task->flops(&cfg->shapes[i]) / (sr->median_us * 1e-6) / 1e12 : 0;
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
