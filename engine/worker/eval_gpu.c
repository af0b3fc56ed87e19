/* eval_gpu.c — the GPU side of an evaluation, run only inside a worker process (`evo worker`): device set-up, the
 * correctness cases (cases.h; inputs and references made once per worker through the task: task_gpu.h), and the
 * gates — resources (limits read from the device), correctness (0xff-poisoned outputs between canary guard bands,
 * every configured case), timing (timing.h: CUPTI, graph or events, L2 flushed, fresh inputs per repetition,
 * sampled outputs checked, median with its interval, early abort). Names no task: inputs, references, launches and
 * comparisons are the task's. Implements evo_gpu_serve (worker.h). A fault or a hung kernel ends this process after
 * its reply: the parent restarts it. */
#include "cases.h"
#include "compile.h"
#include "config.h"
#include "cudrv.h"
#include "noise.h"
#include "protocol.h"
#include "sanitize.h"
#include "task.h"
#include "task_gpu.h"
#include "templates.h"
#include "timing.h"
#include "util.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUARD_WORDS 4096u /* canary words before and after the output */
#define CANARY 0xC0DEC0DEu
#define MAX_SAMPLES 8 /* timing.check_samples <= 8 (config.c) */

/* One set of inputs with its references (the task's, in gc.data), made once and kept for the life of the worker. */
typedef struct {
    int shape; /* index into timed shapes followed by correctness.shapes (cases.h) */
    size_t out_bytes;
    evo_gpu_case gc;
} gcase;

typedef evo_gpu_kernel kvariant;

/* The loaded kernels of one program. */
typedef struct {
    const kvariant *kv;
    int n;
} kset;

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
    gcase *cases;
    int n_cases;
    size_t max_out, max_timed_out;
    CUdeviceptr outbuf, out; /* out = outbuf + guard */
    CUdeviceptr acc, canary_res, flush;
    size_t flush_bytes;
    CUevent done;                       /* recorded after a correctness launch, waited for with a deadline */
    double baseline_us[EVO_MAX_SHAPES]; /* the baseline genome's last times on this GPU */
    double baseline_noise[EVO_MAX_SHAPES];
    /* timing */
    evo_timer *timer;
    uint64_t nonce;                      /* where the fresh inputs of a timed shape come from */
    CUdeviceptr sample_out[MAX_SAMPLES]; /* sampled outputs of timed repetitions */
    /* the baseline genome's module, kept after its evaluation: interleaved timing and re-timing */
    CUmodule base_mod;
    kvariant base_kv[EVO_MAX_VARIANTS];
    int base_nv;
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

evo_status evo_gpu_launch(evo_gpu *g, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args,
                          const char *what, evo_err *err)
{
    const unsigned grid[3] = {gx, gy, gz};
    return evo_cu_check(g->cu, evo_gpu_launch_attrs(g, f, grid, block, 0, NULL, 0, args), what, err);
}

CUresult evo_gpu_launch_attrs(const evo_gpu *g, CUfunction f, const unsigned grid[3], unsigned block, unsigned smem,
                              CUlaunchAttribute *attrs, unsigned n_attrs, void **args)
{
    if (n_attrs == 0) return g->cu->cuLaunchKernel(f, grid[0], grid[1], grid[2], block, 1, 1, smem, g->st, args, NULL);
    if (!g->cu->cuLaunchKernelEx) return CUDA_ERROR_NOT_SUPPORTED;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
    cfg.blockDimX = block, cfg.blockDimY = 1, cfg.blockDimZ = 1;
    cfg.sharedMemBytes = smem;
    cfg.hStream = g->st;
    cfg.attrs = attrs;
    cfg.numAttrs = n_attrs;
    return g->cu->cuLaunchKernelEx(&cfg, f, args, NULL);
}

evo_status evo_gpu_alloc(evo_gpu *g, size_t bytes, CUdeviceptr *out, evo_err *err)
{
    return evo_cu_check(g->cu, g->cu->cuMemAlloc(out, bytes ? bytes : 1), "cuMemAlloc", err);
}

evo_status evo_gpu_reset_count(evo_gpu *g, CUdeviceptr res, evo_err *err)
{
    CU(g, cuMemsetD32Async(res, 0, 2, g->st), err);
    CU(g, cuMemsetD32Async(res + 8, 0xffffffffu, 2, g->st), err);
    return EVO_OK;
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
    evo_compile_req req = {.source = src,
                           .program_name = template_file,
                           .headers = hdr,
                           .n_headers = n_hdr,
                           .arch = g->info.arch,
                           .options = opts,
                           .n_options = 1,
                           .timeout_s = 300};
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

/* The cases of cases.h (the same list the fake worker reports), each with its output size. */
static void build_cases(gpu_state *g)
{
    const evo_config *cfg = g->cfg;
    evo_gate_case *list = NULL;
    g->n_cases = evo_gate_cases(cfg, g->sanitize, &list);
    g->cases = evo_xcalloc((size_t)(g->n_cases ? g->n_cases : 1), sizeof *g->cases);
    for (int i = 0; i < g->n_cases; i++) {
        gcase *c = &g->cases[i];
        c->shape = list[i].shape;
        c->gc.shape = list[i].s;
        c->gc.seed = list[i].seed, c->gc.dist = list[i].dist, c->gc.timing = list[i].timing;
        c->gc.probe = list[i].probe;
        c->gc.timed_shape = list[i].shape < cfg->n_shapes;
        c->out_bytes = g->task->gpu->output_bytes(g->task_state, &c->gc.shape);
        if (c->out_bytes > g->max_out) g->max_out = c->out_bytes;
        if (c->gc.timing && c->out_bytes > g->max_timed_out) g->max_timed_out = c->out_bytes;
    }
    free(list);
}

static evo_status gpu_open(gpu_state *g, int gpu, const char *config_path, bool sanitize, evo_err *err)
{
    memset(g, 0, sizeof *g);
    g->gpu = gpu;
    g->sanitize = sanitize;
    evo_status s = evo_config_load_default(config_path, &g->cfg, NULL, err);
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
        return evo_fail(err, EVO_E_NODRIVER, "GPU %d does not exist (%d GPU%s found)", gpu, count,
                        count == 1 ? "" : "s");
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
    CU(g, cuEventCreate(&g->done, CU_EVENT_DEFAULT), err);
    s = evo_timer_open(g->cu, !sanitize, &g->timer, err);
    if (s != EVO_OK) return s;
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g->nonce = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 48);
    }
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
    for (int k = 0; !sanitize && k < g->cfg->timing.check_samples; k++)
        CU(g, cuMemAlloc(&g->sample_out[k], g->max_timed_out ? g->max_timed_out : 1), err);
    /* Every case now, before the hello reply: an evaluation's watchdog then covers the candidate alone. */
    const double t0 = evo_now();
    for (int i = 0; i < g->n_cases; i++) {
        s = g->task->gpu->prepare(g->task_state, &g->cases[i].gc, err);
        if (s != EVO_OK) return s;
    }
    CU(g, cuStreamSynchronize(g->st), err);
    h->cases = g->n_cases;
    h->prepare_s = evo_now() - t0;
    char why[256];
    const bool cupti = evo_timer_cupti(g->timer, why, sizeof why);
    fprintf(stderr, "evo worker gpu %d: %s, %d cases prepared in %.1f s; timing.method %s -> %s%s%s\n", gpu, h->device,
            g->n_cases, h->prepare_s, evo_timing_method_name(g->cfg->timing.method),
            evo_timing_method_name(evo_timer_resolve(g->timer, g->cfg->timing.method)),
            cupti ? "" : "; CUPTI: ", cupti ? "" : why);
    return EVO_OK;
}

/* ---- waiting with a deadline ---- */

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

/* Case c's shape as the config wrote it (without the case's axis values). */
static const evo_shape *case_shape(const gpu_state *g, const gcase *c)
{
    return evo_gate_case_shape(g->cfg, &(evo_gate_case){.shape = c->shape});
}

static void fail_case(outcome *o, evo_verdict v, const char *what, const gpu_state *g, const gcase *c)
{
    o->verdict = v;
    cJSON_AddStringToObject(o->detail, "reason", what);
    if (c) {
        cJSON *k = cJSON_AddObjectToObject(o->detail, "case");
        char shape[128];
        evo_shape_format(case_shape(g, c), shape, sizeof shape);
        cJSON_AddStringToObject(k, "shape", shape);
        for (int a = 0; a < g->cfg->correctness.n_axes; a++) {
            const int fi = g->cfg->correctness.axes[a].field;
            const evo_field *f = &g->task->shape_fields[fi];
            if (f->type == EVO_FIELD_BOOL)
                cJSON_AddBoolToObject(k, f->name, c->gc.shape.v[fi] != 0);
            else
                cJSON_AddNumberToObject(k, f->name, evo_field_load(f, c->gc.shape.v[fi]));
        }
        cJSON_AddNumberToObject(k, "seed", (double)c->gc.seed);
        if (c->gc.probe >= 0)
            cJSON_AddStringToObject(k, "probe", g->task->probes[c->gc.probe].name);
        else
            cJSON_AddStringToObject(k, "dist", evo_dist_name(c->gc.dist));
        cJSON_AddBoolToObject(k, "timing_inputs", c->gc.timing);
    }
}

static CUresult launch_candidate(gpu_state *g, const kset *ks, const kvariant *v, const gcase *c, bool fresh)
{
    return g->task->gpu->launch(g->task_state, &c->gc, ks->kv, ks->n, (int)(v - ks->kv), g->out, fresh);
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
    CUresult r = launch_candidate(g, ks, v, c, false);
    if (r != CUDA_SUCCESS) {
        char msg[256];
        snprintf(msg, sizeof msg, "launch refused: %s", cu_name(g, r));
        fail_case(o, r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? EVO_V_RESOURCE_FAIL : EVO_V_LAUNCH_FAIL, msg, g, c);
        return EVO_OK;
    }
    CU(g, cuEventRecord(g->done, g->st), err);
    CUresult fault = CUDA_SUCCESS;
    evo_cu_wait w = evo_cu_wait_event(g->cu, g->done, g->kernel_timeout_s, &fault);
    if (w == EVO_CU_WAIT_TIMEOUT) {
        char msg[128];
        snprintf(msg, sizeof msg, "did not finish within %.1f s", g->kernel_timeout_s);
        fail_case(o, EVO_V_TIMEOUT, msg, g, c);
        o->exit_after = true;
    } else if (w == EVO_CU_WAIT_FAULT) {
        char msg[256];
        snprintf(msg, sizeof msg, "faulted: %s", cu_name(g, fault));
        fail_case(o, EVO_V_CRASHED, msg, g, c);
        o->exit_after = true;
    }
    return EVO_OK;
}

/* Words of the guard bands around the output (of case c's size) that are not the canary any more. */
static evo_status canary_words(gpu_state *g, const gcase *c, unsigned long long *bad, evo_err *err)
{
    unsigned long long res[2];
    evo_status s = evo_gpu_reset_count(g, g->canary_res, err);
    if (s != EVO_OK) return s;
    unsigned long long words = GUARD_WORDS;
    unsigned pattern = CANARY;
    CUdeviceptr hi = g->out + ((c->out_bytes + 3) & ~(size_t)3);
    void *a0[] = {&g->outbuf, &words, &pattern, &g->canary_res};
    void *a1[] = {&hi, &words, &pattern, &g->canary_res};
    s = evo_gpu_launch(g, g->f_canary, 4, 1, 1, EVO_SUPPORT_BLOCK, a0, "canary check", err);
    if (s == EVO_OK) s = evo_gpu_launch(g, g->f_canary, 4, 1, 1, EVO_SUPPORT_BLOCK, a1, "canary check", err);
    if (s != EVO_OK) return s;
    CU(g, cuStreamSynchronize(g->st), err);
    CU(g, cuMemcpyDtoH(res, g->canary_res, sizeof res), err);
    *bad = res[0];
    return EVO_OK;
}

/* The verdict on an output: INCORRECT with the evidence when the canaries moved or the task's comparison failed. */
static void judge_output(const gpu_state *g, const gcase *c, outcome *o, const evo_gpu_check *chk,
                         unsigned long long canary_bad)
{
    const evo_metrics *m = &chk->m;
    char why[300] = "";
    if (canary_bad > 0)
        snprintf(why, sizeof why, "wrote %llu words outside its output (canary guard band)", canary_bad);
    else
        snprintf(why, sizeof why, "%s", chk->why);
    if (!why[0]) return;
    fail_case(o, EVO_V_INCORRECT, why, g, c);
    cJSON_AddNumberToObject(o->detail, "max_abs", m->max_abs);
    cJSON_AddNumberToObject(o->detail, "rel_l2", m->rel_l2);
    cJSON_AddNumberToObject(o->detail, "frac_over", m->frac_over);
    cJSON_AddNumberToObject(o->detail, "nonfinite", (double)m->n_nonfinite);
    cJSON_AddNumberToObject(o->detail, "first_bad_index", (double)m->first_bad);
    cJSON_AddNumberToObject(o->detail, "canary_words", (double)canary_bad);
}

/* Canaries intact, then the task's comparison (every element written and finite, errors within tolerance). */
static evo_status check_output(gpu_state *g, const gcase *c, const kvariant *v, outcome *o, evo_gpu_check *chk,
                               evo_err *err)
{
    unsigned long long bad = 0;
    evo_status s = canary_words(g, c, &bad, err);
    if (s != EVO_OK) return s;
    memset(chk, 0, sizeof *chk);
    s = g->task->gpu->check(g->task_state, &c->gc, &v->v, g->out, chk, err);
    if (s == EVO_OK) judge_output(g, c, o, chk, bad);
    return s;
}

/* The variant a shape is timed with: the task's pick. */
static const kvariant *variant_for(const gpu_state *g, const kvariant *vs, int n, const evo_shape *sh)
{
    evo_variant v[EVO_MAX_VARIANTS];
    for (int i = 0; i < n; i++) v[i] = vs[i].v;
    const int i = g->task->pick(v, n, sh, g->info.sm_count);
    return i < 0 ? NULL : &vs[i];
}

/* Resource gate: the kernel as loaded against this device's limits. */
static evo_status load_variants(gpu_state *g, CUmodule mod, const evo_eval_request *req, kvariant *vs, outcome *o,
                                evo_err *err)
{
    const evo_cudrv *cu = g->cu;
    for (int i = 0; i < req->n_variants && o->verdict == EVO_V_OK; i++) {
        kvariant *v = &vs[i];
        v->v = req->variants[i];
        const char *symbol = v->v.name_expr;      /* the lowered name */
        char msg[2 * EVO_PROTO_SYMBOL_MAX + 200]; /* two symbols and the words around them */
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

/* ---- timing: engine/worker/timing.h clocks; the task brings fresh inputs and checks sampled outputs ---- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One kernel timed on one shape: its program's kernels and which one, the shape's timing case, where its fresh
 * inputs come from. */
typedef struct {
    gpu_state *g;
    kset ks;
    const kvariant *v;
    gcase *c;
    uint64_t nonce;              /* repetition r runs on the case's inputs perturbed with rep_seed(r) */
    bool sampled;                /* copy sampled outputs (the candidate; the baseline passed its gates already) */
    int sample_rep[MAX_SAMPLES]; /* -1: not taken */
} tsubject;

static uint64_t rep_seed(const tsubject *t, int rep)
{
    return mix64(t->nonce + (uint64_t)(int64_t)rep * 0x9e3779b97f4a7c15ull);
}

static bool fresh_inputs(const gpu_state *g) { return g->cfg->timing.fresh_inputs && g->task->gpu->perturb; }

static evo_status ts_prepare(void *ctx, int rep, evo_err *err)
{
    tsubject *t = ctx;
    gpu_state *g = t->g;
    if (fresh_inputs(g)) {
        evo_status s = g->task->gpu->perturb(g->task_state, &t->c->gc, rep_seed(t, rep), err);
        if (s != EVO_OK) return s;
    }
    CU(g, cuMemsetD8Async(g->out, 0xff, t->c->out_bytes, g->st), err); /* NaN: a skipped element shows */
    return EVO_OK;
}

static CUresult ts_launch(void *ctx)
{
    tsubject *t = ctx;
    return launch_candidate(t->g, &t->ks, t->v, t->c, fresh_inputs(t->g));
}

/* Sample k of reps repetitions: the last one for k = 0 (a kernel that skips work when called again fails there),
 * the others drawn from the nonce, so a kernel cannot know which outputs are read. */
static int sample_at(const tsubject *t, int k, int reps)
{
    if (k == 0 || reps < 2) return reps - 1;
    return (int)(mix64(t->nonce ^ (uint64_t)k) % (uint64_t)(reps - 1));
}

static evo_status ts_after(void *ctx, int rep, int reps, evo_err *err)
{
    tsubject *t = ctx;
    gpu_state *g = t->g;
    for (int k = 0; t->sampled && k < g->cfg->timing.check_samples; k++) {
        if (sample_at(t, k, reps) != rep) continue;
        CUresult r = g->cu->cuMemcpyDtoDAsync
                         ? g->cu->cuMemcpyDtoDAsync(g->sample_out[k], g->out, t->c->out_bytes, g->st)
                         : CUDA_ERROR_NOT_SUPPORTED;
        if (r != CUDA_SUCCESS) return evo_cu_check(g->cu, r, "copying a timed output", err);
        t->sample_rep[k] = rep;
    }
    return EVO_OK;
}

/* The sampled outputs against a reference on the inputs their repetitions saw (the task's check_fresh), or with
 * fresh inputs off against the case's reference; canaries once. */
static evo_status check_samples(gpu_state *g, tsubject *t, outcome *o, evo_err *err)
{
    gcase *c = t->c;
    unsigned long long bad = 0;
    evo_status s = canary_words(g, c, &bad, err);
    for (int k = 0; s == EVO_OK && o->verdict == EVO_V_OK && k < g->cfg->timing.check_samples; k++) {
        if (t->sample_rep[k] < 0) continue;
        evo_gpu_check chk;
        memset(&chk, 0, sizeof chk);
        if (fresh_inputs(g))
            s = g->task->gpu->check_fresh(g->task_state, &c->gc, &t->v->v, rep_seed(t, t->sample_rep[k]),
                                          g->sample_out[k], &chk, err);
        else
            s = g->task->gpu->check(g->task_state, &c->gc, &t->v->v, g->sample_out[k], &chk, err);
        if (s != EVO_OK) break;
        judge_output(g, c, o, &chk, bad);
        if (o->verdict != EVO_V_OK) {
            cJSON_AddStringToObject(o->detail, "stage", "output of a timed launch");
            cJSON_AddNumberToObject(o->detail, "repetition", t->sample_rep[k]);
        }
        t->sample_rep[k] = -1;
    }
    return s;
}

typedef struct {
    double best_us, factor;
} abort_rule;

static bool too_slow(void *ctx, double first_median_us)
{
    const abort_rule *a = ctx;
    return a->best_us > 0 && first_median_us > a->factor * a->best_us;
}

/* What time_shape measured: per subject, the stats of the method's times and the events' median. */
typedef struct {
    evo_noise_stats st[EVO_TIMING_MAX_SUBJECTS];
    double events_median[EVO_TIMING_MAX_SUBJECTS];
    evo_timing_method method;
    int reps;
    double seconds;
    char note[256];
} shape_timing;

/* A new nonce for a timing run of the candidate and the baseline (the same for both: interleaved, they see the
 * same fresh inputs), no samples taken yet. */
static void reseed(gpu_state *g, tsubject ts[2])
{
    const uint64_t nonce = mix64(++g->nonce);
    for (int k = 0; k < 2; k++) {
        ts[k].nonce = nonce;
        for (int j = 0; j < MAX_SAMPLES; j++) ts[k].sample_rep[j] = -1;
    }
}

/* Times timed shape i: v of ks (checked through its sampled outputs when `check`), with bv of bks interleaved when
 * given. Failures set o->verdict (LAUNCH_FAIL, TIMEOUT, CRASHED, SLOW, INCORRECT). */
static evo_status time_shape(gpu_state *g, int i, const kset *ks, const kvariant *v, const kset *bks,
                             const kvariant *bv, bool check, double best_us, outcome *o, shape_timing *out,
                             evo_err *err)
{
    const evo_config *cfg = g->cfg;
    memset(out, 0, sizeof *out);
    gcase *c = NULL;
    for (int k = 0; k < g->n_cases; k++)
        if (g->cases[k].gc.timing && g->cases[k].shape == i) c = &g->cases[k];
    if (!c) return evo_fail(err, EVO_E_INTERNAL, "no timing inputs for shape %d", i);
    /* Guard bands around this shape's output, for the canary check of the sampled repetitions. */
    CU(g, cuMemsetD32Async(g->outbuf, CANARY, GUARD_WORDS, g->st), err);
    CU(g, cuMemsetD32Async(g->out + ((c->out_bytes + 3) & ~(size_t)3), CANARY, GUARD_WORDS, g->st), err);
    tsubject ts[2];
    for (int k = 0; k < 2; k++)
        ts[k] =
            (tsubject){.g = g, .ks = k ? (bks ? *bks : *ks) : *ks, .v = k ? bv : v, .c = c, .sampled = check && k == 0};
    reseed(g, ts);
    evo_timing_subject subj[2];
    for (int k = 0; k < 2; k++) {
        const kvariant *kv = ts[k].v;
        subj[k] = (evo_timing_subject){.prepare = ts_prepare, .launch = ts_launch, .after = ts_after, .ctx = &ts[k]};
        if (kv) { /* what CUPTI tells the kernels' records apart by */
            unsigned grid[EVO_TIMING_MAX_KERNELS][3], block[EVO_TIMING_MAX_KERNELS];
            const int nk = g->task->gpu->geometry_of(g->task_state, &c->gc, ts[k].ks.kv, ts[k].ks.n,
                                                     (int)(kv - ts[k].ks.kv), grid, block, EVO_TIMING_MAX_KERNELS);
            if (nk < 1) continue; /* no geometry: CUPTI matches nothing and the run says it timed with events */
            memcpy(subj[k].grid, grid[0], sizeof grid[0]);
            subj[k].block = block[0];
            subj[k].n_more = nk - 1;
            for (int j = 1; j < nk; j++) {
                memcpy(subj[k].more_grid[j - 1], grid[j], sizeof grid[j]);
                subj[k].more_block[j - 1] = block[j];
            }
        }
    }
    abort_rule rule = {best_us, cfg->timing.abort_factor};
    evo_timing_opts opts = {
        .method = cfg->timing.method,
        .stream = g->st,
        .flush = cfg->timing.flush_l2 ? g->flush : 0,
        .flush_bytes = cfg->timing.flush_l2 ? g->flush_bytes : 0,
        .warmup = cfg->timing.warmup,
        .min_reps = cfg->timing.repetitions,
        .max_reps = cfg->timing.max_repetitions,
        .target_us = cfg->timing.target_us,
        .judge_first = best_us > 0 ? 3 : 0,
        .judge = too_slow,
        .judge_ctx = &rule,
        .kernel_timeout_s = cfg->timing.kernel_timeout_s,
    };
    evo_timing_result r;
    const double t0 = evo_now();
    const int n_subj = bv ? 2 : 1;
    double *us[2] = {NULL, NULL}, *eus[2] = {NULL, NULL};
    int total = 0;
    /* A first pass sized by target_us; when the median's interval is still wider than target_ci (a kernel whose
     * launches vary, like a causal one with a long tail), one more pass on inputs of its own, up to max_repetitions
     * in all. */
    const evo_timing_method want = evo_timer_resolve(g->timer, cfg->timing.method);
    evo_status s = EVO_OK;
    for (int pass = 0; pass < 2; pass++) {
        s = evo_timer_run(g->timer, &opts, subj, n_subj, &r, err);
        /* CUPTI's records did not match the launches (a rare late delivery): once more, so that one shape's
         * figures are never events where the others are CUPTI's */
        if (s == EVO_OK && r.outcome == EVO_TIMED_OK && r.method != want) {
            fprintf(stderr, "evo worker: shape %d: %s; timing it again\n", i, r.note);
            reseed(g, ts);
            s = evo_timer_run(g->timer, &opts, subj, n_subj, &r, err);
        }
        if (s != EVO_OK || r.outcome != EVO_TIMED_OK) break;
        for (int k = 0; k < n_subj; k++) {
            us[k] = evo_xrealloc(us[k], (size_t)(total + r.reps) * sizeof(double));
            eus[k] = evo_xrealloc(eus[k], (size_t)(total + r.reps) * sizeof(double));
            memcpy(us[k] + total, r.us[k], (size_t)r.reps * sizeof(double));
            memcpy(eus[k] + total, r.event_us[k], (size_t)r.reps * sizeof(double));
        }
        total += r.reps;
        if (check && (s = check_samples(g, &ts[0], o, err)) != EVO_OK) break;
        if (o->verdict != EVO_V_OK) break;
        double hw = 0;
        for (int k = 0; k < n_subj; k++) {
            evo_noise_stats st;
            evo_noise_summarize(us[k], total, &st);
            if (st.median > 0) hw = fmax(hw, (st.ci_hi - st.ci_lo) / (2 * st.median));
        }
        const int room = cfg->timing.max_repetitions - total;
        if (pass > 0 || cfg->timing.target_ci <= 0 || hw <= cfg->timing.target_ci || room <= 0) break;
        const double more_f = ceil(total * (hw / cfg->timing.target_ci) * (hw / cfg->timing.target_ci)) - total;
        const int more = more_f > room                      ? room
                         : more_f < cfg->timing.repetitions ? cfg->timing.repetitions
                                                            : (int)more_f;
        opts.min_reps = opts.max_reps = more < room ? more : room;
        opts.target_us = 0;
        opts.judge_first = 0;
        reseed(g, ts); /* inputs no earlier repetition saw */
    }
    if (s != EVO_OK || r.outcome != EVO_TIMED_OK || o->verdict != EVO_V_OK)
        for (int k = 0; k < 2; k++) free(us[k]), free(eus[k]);
    if (s != EVO_OK || (r.outcome == EVO_TIMED_OK && o->verdict != EVO_V_OK)) return s;
    char msg[256];
    switch (r.outcome) {
        case EVO_TIMED_OK: break;
        case EVO_TIMED_REFUSED:
            snprintf(msg, sizeof msg, "launch refused while timing%s: %s", r.subject == 1 ? " (the baseline)" : "",
                     cu_name(g, r.error));
            fail_case(o, EVO_V_LAUNCH_FAIL, msg, g, c);
            return EVO_OK;
        case EVO_TIMED_TIMEOUT:
            fail_case(o, EVO_V_TIMEOUT, "did not finish while timing", g, c);
            o->exit_after = true;
            return EVO_OK;
        case EVO_TIMED_FAULT:
            snprintf(msg, sizeof msg, "faulted while timing: %s", cu_name(g, r.error));
            fail_case(o, EVO_V_CRASHED, msg, g, c);
            o->exit_after = true;
            return EVO_OK;
        case EVO_TIMED_ABORTED:
            snprintf(msg, sizeof msg, "%.1f us after %d runs > %.1f x the best %.1f us", r.first_median_us,
                     opts.judge_first, cfg->timing.abort_factor, best_us);
            fail_case(o, EVO_V_SLOW, msg, g, c);
            out->st[0].median = r.first_median_us;
            return EVO_OK;
    }
    for (int k = 0; k < n_subj; k++) {
        evo_noise_summarize(us[k], total, &out->st[k]);
        evo_noise_stats e;
        evo_noise_summarize(eus[k], total, &e);
        out->events_median[k] = e.median;
        free(us[k]);
        free(eus[k]);
    }
    out->method = r.method;
    out->reps = total;
    out->seconds = evo_now() - t0;
    snprintf(out->note, sizeof out->note, "%s", r.note);
    return EVO_OK;
}

static void fill_timed(const gpu_state *g, int i, const evo_noise_stats *st, evo_shape_result *sr)
{
    sr->median_us = st->median;
    sr->p10_us = st->p10;
    sr->p90_us = st->p90;
    sr->ci_lo_us = st->ci_lo;
    sr->ci_hi_us = st->ci_hi;
    sr->rate = st->median > 0 ? g->task->work(&g->cfg->shapes[i]) / (st->median * 1e-6) / g->task->rate_scale : 0;
}

/* The timing gate: every timed shape, the candidate's sampled outputs checked; with timing.interleave the
 * baseline's launches alternate with the candidate's and the speedups come from the same run (rep->paired). */
static evo_status timing_gate(gpu_state *g, const evo_eval_request *req, const kset *ks, evo_eval_reply *rep,
                              outcome *o, evo_err *err)
{
    const evo_config *cfg = g->cfg;
    const bool paired = cfg->timing.interleave && !req->is_baseline && g->base_mod;
    const kset bks = {g->base_kv, g->base_nv};
    cJSON *tj = cJSON_CreateObject();
    cJSON *reps = cJSON_AddArrayToObject(tj, "reps"), *ev = cJSON_AddArrayToObject(tj, "events_median_us");
    cJSON *wall = cJSON_AddArrayToObject(tj, "wall_ms"); /* each shape's timing, warm-up and sample checks included */
    const char *note = "";
    evo_timing_method method = evo_timer_resolve(g->timer, cfg->timing.method);
    evo_status s = EVO_OK;
    shape_timing st;
    for (int i = 0; s == EVO_OK && o->verdict == EVO_V_OK && i < cfg->n_shapes; i++) {
        const kvariant *v = variant_for(g, ks->kv, ks->n, &cfg->shapes[i]);
        const kvariant *bv = paired ? variant_for(g, bks.kv, bks.n, &cfg->shapes[i]) : NULL;
        if (!v || (paired && !bv)) {
            fail_case(o, EVO_V_INVALID, "no kernel serves a timed shape", g, NULL);
            break;
        }
        const double best = !req->is_baseline && i < req->n_best ? req->best_us[i] : 0;
        s = time_shape(g, i, ks, v, paired ? &bks : NULL, bv, true, best, o, &st, err);
        evo_shape_result *sr = &rep->r.shapes[i];
        if (s == EVO_OK && o->verdict == EVO_V_SLOW) sr->median_us = st.st[0].median;
        if (s != EVO_OK || o->verdict != EVO_V_OK) break;
        fill_timed(g, i, &st.st[0], sr);
        method = st.method;
        if (st.note[0]) note = st.note; /* the last fallback note (they repeat) */
        cJSON_AddItemToArray(reps, cJSON_CreateNumber(st.reps));
        cJSON_AddItemToArray(ev, cJSON_CreateNumber(st.events_median[0]));
        cJSON_AddItemToArray(wall, cJSON_CreateNumber(round(st.seconds * 1e4) / 10));
        if (req->is_baseline) {
            g->baseline_us[i] = sr->median_us;
            g->baseline_noise[i] = (sr->p90_us - sr->p10_us) / sr->median_us;
        }
        if (paired) {
            sr->baseline_us = st.st[1].median;
            sr->baseline_ci_lo_us = st.st[1].ci_lo;
            sr->baseline_ci_hi_us = st.st[1].ci_hi;
        } else {
            sr->baseline_us = g->baseline_us[i];
        }
        sr->speedup = sr->baseline_us > 0 ? sr->baseline_us / sr->median_us : 0;
    }
    cJSON_AddStringToObject(tj, "method", evo_timing_method_name(method));
    if (note[0]) cJSON_AddStringToObject(tj, "note", note);
    if (paired) cJSON_AddBoolToObject(tj, "interleaved", true);
    cJSON_AddItemToObject(o->detail, "timing", tj);
    rep->paired = paired;
    return s;
}

/* evo check --retime N: N rounds, each timing the baseline and the candidate on every shape (interleaved or one
 * after the other), into detail.retime.rounds[k] = {median_us, ci_lo_us, ci_hi_us, baseline_us,
 * baseline_ci_lo_us, baseline_ci_hi_us, reps: per shape; time_s: the candidate's timing seconds}. */
static evo_status retime(gpu_state *g, const evo_eval_request *req, const kset *ks, outcome *o, evo_err *err)
{
    const evo_config *cfg = g->cfg;
    if (!g->base_mod) return evo_fail(err, EVO_E_INTERNAL, "retime: the baseline was not evaluated in this worker");
    const kset bks = {g->base_kv, g->base_nv};
    cJSON *rt = cJSON_AddObjectToObject(o->detail, "retime");
    cJSON_AddStringToObject(rt, "method", evo_timing_method_name(evo_timer_resolve(g->timer, cfg->timing.method)));
    cJSON_AddBoolToObject(rt, "interleaved", cfg->timing.interleave);
    cJSON *rounds = cJSON_AddArrayToObject(rt, "rounds");
    evo_status s = EVO_OK;
    for (int k = 0; s == EVO_OK && o->verdict == EVO_V_OK && k < req->retime; k++) {
        static const char *const keys[] = {"median_us",
                                           "ci_lo_us",
                                           "ci_hi_us",
                                           "baseline_us",
                                           "baseline_ci_lo_us",
                                           "baseline_ci_hi_us",
                                           "events_median_us",
                                           "baseline_events_median_us",
                                           "reps"};
        cJSON *round = cJSON_CreateObject(), *a[EVO_ARRAY_LEN(keys)];
        for (size_t j = 0; j < EVO_ARRAY_LEN(keys); j++) a[j] = cJSON_AddArrayToObject(round, keys[j]);
        cJSON_AddItemToArray(rounds, round);
        double seconds = 0;
        for (int i = 0; s == EVO_OK && o->verdict == EVO_V_OK && i < cfg->n_shapes; i++) {
            const evo_shape *sh = &cfg->shapes[i];
            const kvariant *v = variant_for(g, ks->kv, ks->n, sh);
            const kvariant *bv = variant_for(g, bks.kv, bks.n, sh);
            if (!v || !bv) {
                fail_case(o, EVO_V_INVALID, "no kernel serves a timed shape", g, NULL);
                break;
            }
            shape_timing c, b;
            if (cfg->timing.interleave) {
                s = time_shape(g, i, ks, v, &bks, bv, true, 0, o, &c, err);
                b = c;
                b.st[0] = c.st[1];
                b.events_median[0] = c.events_median[1];
            } else {
                s = time_shape(g, i, &bks, bv, NULL, NULL, false, 0, o, &b, err);
                if (s == EVO_OK && o->verdict == EVO_V_OK) s = time_shape(g, i, ks, v, NULL, NULL, true, 0, o, &c, err);
            }
            if (s != EVO_OK || o->verdict != EVO_V_OK) break;
            seconds += c.seconds;
            const double vals[] = {c.st[0].median,     c.st[0].ci_lo,      c.st[0].ci_hi,
                                   b.st[0].median,     b.st[0].ci_lo,      b.st[0].ci_hi,
                                   c.events_median[0], b.events_median[0], c.reps};
            for (size_t j = 0; j < EVO_ARRAY_LEN(keys); j++) cJSON_AddItemToArray(a[j], cJSON_CreateNumber(vals[j]));
        }
        cJSON_AddNumberToObject(round, "time_s", seconds);
    }
    return s;
}

static evo_status evaluate(gpu_state *g, const evo_eval_request *req, evo_eval_reply *rep, outcome *o, evo_err *err)
{
    const evo_config *cfg = g->cfg;
    memset(rep, 0, sizeof *rep);
    rep->id = req->id;
    snprintf(rep->r.gpu, sizeof rep->r.gpu, "%s", g->info.device);
    o->verdict = EVO_V_OK;
    for (int i = 0; i < cfg->n_shapes; i++) {
        evo_shape_result *r = &rep->r.shapes[i];
        const evo_shape *sh = &cfg->shapes[i];
        evo_shape_result_set_shape(r, sh);
    }
    rep->r.n_shapes = cfg->n_shapes;

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
            if ((s = run_once(g, &ks, v, c, o, err)) != EVO_OK || o->verdict != EVO_V_OK) break;
            evo_gpu_check chk;
            if ((s = check_output(g, c, v, o, &chk, err)) != EVO_OK) break;
            if (o->verdict != EVO_V_OK && req->n_variants > 1) cJSON_AddNumberToObject(o->detail, "variant", k);
            n_checked++;
            if (chk.m.rel_l2 > worst_rel) worst_rel = chk.m.rel_l2;
            if (c->shape < cfg->n_shapes) {
                evo_shape_result *sr = &rep->r.shapes[c->shape];
                if (chk.m.max_abs > sr->max_abs) sr->max_abs = chk.m.max_abs;
                if (chk.m.rel_l2 > sr->rel_l2) sr->rel_l2 = chk.m.rel_l2;
                if (chk.e2e.rel_l2 > sr->e2e_rel_l2) sr->e2e_rel_l2 = chk.e2e.rel_l2;
                if (chk.e2e.rmse > sr->e2e_rmse) sr->e2e_rmse = chk.e2e.rmse;
            }
        }
        if (s == EVO_OK && o->verdict == EVO_V_OK && !ran) {
            char msg[160], shape[96];
            evo_shape_format(case_shape(g, c), shape, sizeof shape);
            snprintf(msg, sizeof msg, "no kernel serves shape %s", shape);
            fail_case(o, EVO_V_INVALID, msg, g, c);
        }
    }
    rep->r.check_s = evo_now() - t_check;
    cJSON_AddNumberToObject(o->detail, "cases_checked", n_checked);
    cJSON_AddNumberToObject(o->detail, "worst_rel_l2", worst_rel);

    /* ---- timing ---- */
    const double t_time = evo_now();
    if (s == EVO_OK && req->time && !g->sanitize && o->verdict == EVO_V_OK) s = timing_gate(g, req, &ks, rep, o, err);
    rep->r.time_s = evo_now() - t_time;
    if (req->time) {
        double noise = 0;
        for (int i = 0; i < cfg->n_shapes; i++) noise = fmax(noise, g->baseline_noise[i]);
        cJSON_AddNumberToObject(o->detail, "baseline_noise", noise);
    }
    if (s == EVO_OK && req->retime > 0 && !g->sanitize && o->verdict == EVO_V_OK) s = retime(g, req, &ks, o, err);
    /* The baseline's module stays loaded: it is timed beside candidates (interleave) and in re-timings. */
    if (s == EVO_OK && req->is_baseline && o->verdict == EVO_V_OK && !o->exit_after) {
        if (g->base_mod) g->cu->cuModuleUnload(g->base_mod);
        g->base_mod = mod;
        memcpy(g->base_kv, vs, sizeof g->base_kv);
        g->base_nv = req->n_variants;
        return s;
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
        rep->r.verdict = o.verdict;
        rep->r.detail = cJSON_PrintUnformatted(o.detail);
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
    failed_open f = {EVO_OK, {{0}, false}};
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
