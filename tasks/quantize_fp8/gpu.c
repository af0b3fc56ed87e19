/* gpu.c — the quantize_fp8 task inside a worker (task_gpu.h): fp16 inputs from evo's generator (bf16 by rounding
 * them), the reference codes and scales from quantize_support.cu's plain quantizer (bit-identical to
 * quantize_ref.c), the launch of a genome's plan (evo_quant_plan_make: up to three kernels, scratch, thread-block
 * clusters), and an exact comparison: every code and every scale must equal the reference's bits. */
#include "quantize.h"

#include "numerics.h"
#include "task_gpu.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHAPES 128

typedef struct {
    evo_gpu *g;
    CUmodule mod;
    CUfunction f_gen, f_bf16, f_ref, f_cmp, f_perturb;
    CUdeviceptr res; /* two u64: mismatches, first index */
    CUdeviceptr scratch;
    unsigned long long scratch_bytes;
    unsigned long long ctl_zone;  /* plans with rotated rows start past the control words of the plans without */
    evo_shape shapes[MAX_SHAPES]; /* every case's shape, for sizing the scratch of a genome's plans */
    int n_shapes;
    int arch;
    size_t timed_n;   /* elements the timing buffers hold (the largest timing case) */
    CUdeviceptr tx;   /* a timed repetition's perturbed input */
    CUdeviceptr tref; /* reference codes and scales on it */
} qz_gpu;

typedef struct {
    size_t n; /* elements */
    size_t n_heads;
    size_t scales_at; /* byte offset of the scales in the output (and in ref) */
    CUdeviceptr x;    /* the input, fp16 or bf16 */
    CUdeviceptr ref;  /* reference codes, then scales at scales_at */
} qz_case;

#define CU(call, err) EVO_CU(evo_gpu_cu(q->g), call, err)

static size_t elems(const evo_shape *s)
{
    return (size_t)s->v[QZ_BATCH] * s->v[QZ_HEADS] * s->v[QZ_SEQ] * s->v[QZ_DIM];
}

static size_t scales_offset(size_t n) { return (n + 15) & ~(size_t)15; }

static evo_status qz_open(evo_gpu *g, void **state, evo_err *err)
{
    qz_gpu *q = evo_xcalloc(1, sizeof *q);
    q->g = g;
    static const char *const headers[] = {"evo_quantize_abi.h", NULL};
    evo_status s = evo_gpu_load_module(g, "quantize_support.cu", headers, &q->mod, err);
    struct {
        CUfunction *f;
        const char *name;
    } fns[] = {{&q->f_bf16, "evo_qs_to_bf16"},
               {&q->f_ref, "evo_qs_reference"},
               {&q->f_cmp, "evo_qs_compare"},
               {&q->f_perturb, "evo_qs_perturb"}};
    for (size_t i = 0; s == EVO_OK && i < EVO_ARRAY_LEN(fns); i++)
        s = evo_cu_check(evo_gpu_cu(g), evo_gpu_cu(g)->cuModuleGetFunction(fns[i].f, q->mod, fns[i].name), fns[i].name,
                         err);
    if (s == EVO_OK && !(q->f_gen = evo_gpu_support(g, "evo_gen_inputs")))
        s = evo_fail(err, EVO_E_INTERNAL, "support.cu has no kernel evo_gen_inputs");
    if (s == EVO_OK) s = evo_gpu_alloc(g, 16, &q->res, err);
    q->arch = evo_gpu_arch(g);
    if (s != EVO_OK) {
        free(q);
        return s;
    }
    *state = q;
    return EVO_OK;
}

static size_t qz_output_bytes(void *state, const evo_shape *s)
{
    (void)state;
    const size_t n = elems(s);
    return scales_offset(n) + 4 * (size_t)(s->v[QZ_BATCH] * s->v[QZ_HEADS]);
}

static evo_status qz_prepare(void *state, evo_gpu_case *gc, evo_err *err)
{
    qz_gpu *q = state;
    const evo_shape *sh = &gc->shape;
    if (q->n_shapes < MAX_SHAPES) q->shapes[q->n_shapes++] = *sh;
    qz_case *c = evo_xcalloc(1, sizeof *c);
    gc->data = c;
    c->n = elems(sh);
    c->n_heads = (size_t)(sh->v[QZ_BATCH] * sh->v[QZ_HEADS]);
    c->scales_at = scales_offset(c->n);
    unsigned long long nn = c->n, head = (unsigned long long)sh->v[QZ_SEQ] * sh->v[QZ_DIM], seed = gc->seed;
    unsigned tensor = 0;
    int dist = (int)gc->dist, bf16 = (int)sh->v[QZ_DTYPE], rotate = (int)sh->v[QZ_ROTATE], d = (int)sh->v[QZ_DIM];
    const unsigned grid = evo_gpu_grid_for(c->n);
    evo_status s = evo_gpu_alloc(q->g, c->n * 2, &c->x, err);
    if (s == EVO_OK) s = evo_gpu_alloc(q->g, c->scales_at + 4 * c->n_heads, &c->ref, err);
    if (s == EVO_OK && gc->timing && c->n > q->timed_n) { /* the fresh inputs of timed repetitions (perturb) */
        s = evo_gpu_alloc(q->g, c->n * 2, &q->tx, err);
        if (s == EVO_OK) s = evo_gpu_alloc(q->g, c->scales_at + 4 * c->n_heads, &q->tref, err);
        if (s == EVO_OK) q->timed_n = c->n;
    }
    if (s != EVO_OK) return s;
    void *ga[] = {&c->x, &nn, &head, &seed, &tensor, &dist};
    if ((s = evo_gpu_launch(q->g, q->f_gen, grid, 1, 1, EVO_SUPPORT_BLOCK, ga, "generate", err))) return s;
    if (bf16) { /* round the fp16 values to bf16 in place */
        void *ba[] = {&c->x, &c->x, &nn};
        if ((s = evo_gpu_launch(q->g, q->f_bf16, grid, 1, 1, EVO_SUPPORT_BLOCK, ba, "to bf16", err))) return s;
    }
    CUdeviceptr scales = c->ref + c->scales_at;
    void *ra[] = {&c->x, &bf16, &rotate, &d, &head, &c->ref, &scales};
    return evo_gpu_launch(q->g, q->f_ref, (unsigned)c->n_heads, 1, 1, 256, ra, "reference quantizer", err);
}

/* The kernel of role `role` serving the same problem class as k[pick]; NULL when the program has none. */
static const evo_gpu_kernel *find_role(const evo_gpu_kernel *k, int n, int pick, int role)
{
    for (int i = 0; i < n; i++)
        if (k[i].v.attr[QZ_V_ROLE] == role && k[i].v.attr[QZ_V_DIM] == k[pick].v.attr[QZ_V_DIM] &&
            k[i].v.attr[QZ_V_DTYPE] == k[pick].v.attr[QZ_V_DTYPE] &&
            k[i].v.attr[QZ_V_ROTATE] == k[pick].v.attr[QZ_V_ROTATE])
            return &k[i];
    return NULL;
}

static int plan_for(const qz_gpu *q, const evo_variant *main, const evo_shape *s, evo_quant_plan *plan)
{
    const evo_quant_knobs kn = evo_qz_knobs_of(main);
    char why[160];
    return evo_quant_plan_make(&kn, (int)s->v[QZ_BATCH], (int)s->v[QZ_HEADS], (int)s->v[QZ_SEQ], (int)s->v[QZ_DIM],
                               (int)s->v[QZ_ROTATE], q->arch, evo_gpu_sm_count(q->g), plan, why, sizeof why);
}

/* A plan whose first launch writes rotated rows at the start of its scratch (rotate, fused_rot = 0). */
static bool has_rows(const evo_quant_plan *p) { return p->n_launches > 0 && p->launch[0].kernel == EVO_QUANT_K_ROTATE; }

/* The scratch every plan of this program needs on the worker's shapes, zero-filled (modes chained, ordered and
 * resident rely on it and leave it so); clusters of 16 need the non-portable size allowed on their kernel. Layout:
 * the plans without rotated rows use the scratch from its start (their control words are zero between launches);
 * plans with rows start at ctl_zone, past all of those, and get their own control words zeroed before each launch
 * (behind rows whose size varies with the shape, other launches overwrite them). */
static evo_status qz_begin(void *state, const evo_gpu_kernel *k, int n, evo_err *err)
{
    qz_gpu *q = state;
    const evo_cudrv *cu = evo_gpu_cu(q->g);
    unsigned long long zone = 256, rows_need = 0;
    for (int i = 0; i < n; i++) {
        if (k[i].v.attr[QZ_V_ROLE] != EVO_QUANT_K_MAIN) continue;
        if (k[i].v.attr[QZ_V_KNOBS + 3] > 8)
            cu->cuFuncSetAttribute(k[i].fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        for (int j = 0; j < q->n_shapes; j++) {
            evo_quant_plan p;
            if (!evo_qz_serves(&k[i].v, &q->shapes[j]) || plan_for(q, &k[i].v, &q->shapes[j], &p) != 0) continue;
            if (has_rows(&p) && p.scratch_bytes > rows_need) rows_need = p.scratch_bytes;
            if (!has_rows(&p) && p.scratch_bytes > zone) zone = p.scratch_bytes;
        }
    }
    zone = (zone + 255ull) & ~255ull;
    q->ctl_zone = zone;
    const unsigned long long need = zone + rows_need;
    if (need > q->scratch_bytes) {
        if (q->scratch_bytes) {
            CU(cuStreamSynchronize(evo_gpu_stream(q->g)), err);
            cu->cuMemFree(q->scratch);
        }
        q->scratch_bytes = 0;
        evo_status s = evo_gpu_alloc(q->g, need, &q->scratch, err);
        if (s != EVO_OK) return s;
        q->scratch_bytes = need;
    }
    CU(cuMemsetD8Async(q->scratch, 0, q->scratch_bytes, evo_gpu_stream(q->g)), err);
    return EVO_OK;
}

static CUresult launch_one(qz_gpu *q, const evo_gpu_kernel *kern, const evo_quant_launch *l, evo_quant_params *p)
{
    void *args[] = {p};
    CUlaunchAttribute attr[2];
    memset(attr, 0, sizeof attr);
    unsigned n_attr = 0;
    if (l->cluster_x > 1) {
        attr[n_attr].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr[n_attr].value.clusterDim.x = l->cluster_x;
        attr[n_attr].value.clusterDim.y = 1;
        attr[n_attr].value.clusterDim.z = 1;
        n_attr++;
    }
    if (l->cooperative) { /* all blocks resident at once, or the launch fails (never a deadlock) */
        attr[n_attr].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attr[n_attr].value.cooperative = 1;
        n_attr++;
    }
    const unsigned grid[3] = {l->grid_x, l->grid_y, 1};
    return evo_gpu_launch_attrs(q->g, kern->fn, grid, l->block, l->smem, attr, n_attr, args);
}

/* The plan's launches in order on the worker's stream: codes at out, scales after them (16-byte aligned). */
static CUresult qz_launch(void *state, const evo_gpu_case *gc, const evo_gpu_kernel *k, int n, int pick,
                          CUdeviceptr out, bool fresh)
{
    qz_gpu *q = state;
    const qz_case *c = gc->data;
    const evo_shape *sh = &gc->shape;
    evo_quant_plan plan;
    if (plan_for(q, &k[pick].v, sh, &plan) != 0) return CUDA_ERROR_INVALID_VALUE;
    evo_quant_params p;
    memset(&p, 0, sizeof p);
    p.x = fresh ? q->tx : c->x;
    p.codes = out;
    p.scales = out + c->scales_at;
    const unsigned long long at = has_rows(&plan) ? q->ctl_zone : 0ull;
    if (plan.scratch_bytes && at + plan.scratch_bytes > q->scratch_bytes) return CUDA_ERROR_INVALID_VALUE;
    p.scratch = plan.scratch_bytes ? q->scratch + at : 0;
    p.scratch_bytes = plan.scratch_bytes;
    if (has_rows(&plan) && plan.zero_scratch_once) { /* its control words, behind the rows */
        const evo_cudrv *cu = evo_gpu_cu(q->g);
        const unsigned long long rows = evo_quant_rot_bytes(elems(sh));
        const CUresult r =
            cu->cuMemsetD8Async(p.scratch + rows, 0, (size_t)(plan.scratch_bytes - rows), evo_gpu_stream(q->g));
        if (r != CUDA_SUCCESS) return r;
    }
    p.batch = (int)sh->v[QZ_BATCH], p.heads = (int)sh->v[QZ_HEADS], p.seq = (int)sh->v[QZ_SEQ];
    p.head_dim = (int)sh->v[QZ_DIM];
    p.in_dtype = (int)sh->v[QZ_DTYPE];
    p.rotate = (int)sh->v[QZ_ROTATE];
    p.chain_lag = plan.chain_lag;
    p.stages = plan.stages;
    p.parts = plan.parts;
    for (int i = 0; i < plan.n_launches; i++) {
        const evo_gpu_kernel *kern = find_role(k, n, pick, plan.launch[i].kernel);
        if (!kern) return CUDA_ERROR_NOT_FOUND;
        const CUresult r = launch_one(q, kern, &plan.launch[i], &p);
        if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
}

static evo_status mismatches(qz_gpu *q, CUdeviceptr a, CUdeviceptr b, size_t n, unsigned long long res[2], evo_err *err)
{
    evo_status s = evo_gpu_reset_count(q->g, q->res, err);
    if (s != EVO_OK) return s;
    unsigned long long nn = n;
    void *args[] = {&a, &b, &nn, &q->res};
    s = evo_gpu_launch(q->g, q->f_cmp, evo_gpu_grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, args, "compare", err);
    if (s != EVO_OK) return s;
    CU(cuStreamSynchronize(evo_gpu_stream(q->g)), err);
    CU(cuMemcpyDtoH(res, q->res, 2 * sizeof res[0]), err);
    return EVO_OK;
}

/* Bit-exact: every code and every scale equals the reference's. The metrics say how many differ: rel_l2 holds the
 * fraction of codes that differ (0 for a correct kernel), first_bad the first one. */
static evo_status qz_check(void *state, const evo_gpu_case *gc, const evo_variant *v, CUdeviceptr out, evo_gpu_check *r,
                           evo_err *err)
{
    (void)v;
    qz_gpu *q = state;
    const qz_case *c = gc->data;
    unsigned long long codes[2], scales[2];
    evo_status s = mismatches(q, out, c->ref, c->n, codes, err);
    if (s == EVO_OK) s = mismatches(q, out + c->scales_at, c->ref + c->scales_at, 4 * c->n_heads, scales, err);
    if (s != EVO_OK) return s;
    evo_metrics *m = &r->m;
    memset(m, 0, sizeof *m);
    m->n = c->n;
    m->n_over = (size_t)codes[0];
    m->frac_over = (double)codes[0] / (double)c->n;
    m->rel_l2 = m->frac_over;
    m->first_bad = codes[0] ? (long long)codes[1] : -1;
    if (codes[0]) {
        unsigned char got = 0, want = 0;
        CU(cuMemcpyDtoH(&got, out + codes[1], 1), err);
        CU(cuMemcpyDtoH(&want, c->ref + codes[1], 1), err);
        snprintf(r->why, sizeof r->why,
                 "%llu of %zu codes differ from the reference (first at %llu: 0x%02x%s, want "
                 "0x%02x)",
                 codes[0], c->n, codes[1], got, got == 0xff ? " = not written" : "", want);
    } else if (scales[0]) {
        snprintf(r->why, sizeof r->why, "the scale of head %llu differs from the reference (of %zu heads)",
                 scales[1] / 4, c->n_heads);
        m->first_bad = (long long)(c->scales_at + scales[1]);
    }
    return EVO_OK;
}

static int qz_geometry_of(void *state, const evo_gpu_case *gc, const evo_gpu_kernel *k, int n, int pick,
                          unsigned grid[][3], unsigned *block, int max)
{
    (void)k, (void)n;
    evo_quant_plan plan;
    if (plan_for(state, &k[pick].v, &gc->shape, &plan) != 0) return 0;
    int m = 0;
    for (; m < plan.n_launches && m < max; m++) {
        grid[m][0] = plan.launch[m].grid_x, grid[m][1] = plan.launch[m].grid_y, grid[m][2] = 1;
        block[m] = plan.launch[m].block;
    }
    return m;
}

/* Fresh inputs: the case's input with its signs and lowest mantissa bits flipped by a hash of the seed. */
static evo_status qz_perturb(void *state, const evo_gpu_case *gc, uint64_t seed, evo_err *err)
{
    qz_gpu *q = state;
    const qz_case *c = gc->data;
    unsigned long long n = c->n, sd = seed;
    void *args[] = {(void *)&c->x, &q->tx, &n, &sd};
    return evo_gpu_launch(q->g, q->f_perturb, evo_gpu_grid_for(c->n), 1, 1, EVO_SUPPORT_BLOCK, args,
                          "perturb timing inputs", err);
}

/* A timed repetition's output: the reference quantizer on the same perturbed input, every code and scale. */
static evo_status qz_check_fresh(void *state, const evo_gpu_case *gc, const evo_variant *v, uint64_t seed,
                                 CUdeviceptr out, evo_gpu_check *r, evo_err *err)
{
    qz_gpu *q = state;
    const evo_shape *sh = &gc->shape;
    qz_case fresh = *(const qz_case *)gc->data;
    evo_status s = qz_perturb(state, gc, seed, err);
    if (s != EVO_OK) return s;
    fresh.x = q->tx;
    fresh.ref = q->tref;
    unsigned long long head = (unsigned long long)sh->v[QZ_SEQ] * sh->v[QZ_DIM];
    int bf16 = (int)sh->v[QZ_DTYPE], rotate = (int)sh->v[QZ_ROTATE], d = (int)sh->v[QZ_DIM];
    CUdeviceptr scales = q->tref + fresh.scales_at;
    void *ra[] = {&q->tx, &bf16, &rotate, &d, &head, &q->tref, &scales};
    s = evo_gpu_launch(q->g, q->f_ref, (unsigned)fresh.n_heads, 1, 1, 256, ra, "reference quantizer", err);
    if (s != EVO_OK) return s;
    evo_gpu_case copy = *gc;
    copy.data = &fresh;
    return qz_check(state, &copy, v, out, r, err);
}

const evo_task_gpu evo_qz_gpu = {
    .open = qz_open,
    .output_bytes = qz_output_bytes,
    .prepare = qz_prepare,
    .geometry = NULL,
    .begin = qz_begin,
    .launch = qz_launch,
    .geometry_of = qz_geometry_of,
    .check = qz_check,
    .perturb = qz_perturb,
    .check_fresh = qz_check_fresh,
};
