/* gpu.c — the attention_fp8 task inside a worker (task_gpu.h): inputs generated, quantized and dequantized on the
 * GPU once per case (bit-identical to engine/attn_ref.c), the FP32 reference attention on the dequantized inputs
 * and, for the timed shapes, on the unquantized fp16 inputs (the end-to-end error), the launch through
 * evo_attn_params, and the comparison of the fp16 output with the reference. */
#include "attention.h"

#include "attn_ref.h"
#include "attn_sm90_host.h"
#include "task_gpu.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    evo_gpu *g;
    const evo_config *cfg;
    CUfunction f_gen, f_quant, f_deq, f_h2f, f_ref, f_perturb;
    size_t scratch_n; /* elements the scratch buffers hold */
    CUdeviceptr scratch16[3], scratchf[3];
    size_t timed_n;     /* elements the timing buffers hold (the largest timing case) */
    size_t tref_n;      /* elements tref holds (the longest head of any timing case: not that case's head) */
    CUdeviceptr tcodes[3]; /* a timed repetition's perturbed Q, K, V codes */
    CUdeviceptr tref;      /* FP32 reference of one head on them */
    /* Family 1 (sm_90a): the tensor maps of the last launch and what they were made for. */
    evo_attn_tmaps tmaps;
    CUdeviceptr tmap_ptr[3];
    long long tmap_key[5];
} attn_gpu;

/* One case's inputs: 8-bit codes and scales of Q, K, V, the reference, and the end-to-end reference. */
typedef struct {
    size_t n; /* elements of Q (and of O) */
    CUdeviceptr codes[3], scales[3];
    CUdeviceptr ref;   /* FP32 reference on the dequantized inputs */
    CUdeviceptr ref16; /* FP32 reference on the unquantized FP16 inputs: the end-to-end error (0: none) */
    double ref_rms;
    CUdeviceptr ref_p8; /* the reference that rounds P to e4m3 (variants with attr P8), made when first needed */
    double ref_p8_rms;
} attn_case;

#define CU(call, err) EVO_CU(evo_gpu_cu(a->g), call, err)

static size_t elems(const evo_shape *s)
{
    return (size_t)s->v[ATTN_BATCH] * s->v[ATTN_HEADS] * s->v[ATTN_SEQ] * s->v[ATTN_DIM];
}

static evo_status attn_open(evo_gpu *g, void **state, evo_err *err)
{
    attn_gpu *a = evo_xcalloc(1, sizeof *a);
    a->g = g;
    a->cfg = evo_gpu_config(g);
    struct {
        CUfunction *f;
        const char *name;
    } fns[] = {{&a->f_gen, "evo_gen_inputs"},   {&a->f_quant, "evo_quantize"},
               {&a->f_deq, "evo_dequantize"},   {&a->f_h2f, "evo_half_to_float"},
               {&a->f_ref, "evo_reference_attention"}, {&a->f_perturb, "evo_perturb_codes"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fns); i++)
        if (!(*fns[i].f = evo_gpu_support(g, fns[i].name))) {
            free(a);
            return evo_fail(err, EVO_E_INTERNAL, "support.cu has no kernel %s", fns[i].name);
        }
    *state = a;
    return EVO_OK;
}

static size_t attn_output_bytes(void *state, const evo_shape *s)
{
    (void)state;
    return elems(s) * 2; /* fp16 */
}

/* p_e4m3: the reference variant that rounds P to e4m3 (support.cu). */
static evo_status reference(attn_gpu *a, const evo_shape *sh, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v,
                            CUdeviceptr o, int p_e4m3, evo_err *err)
{
    int b = (int)sh->v[ATTN_BATCH], h = (int)sh->v[ATTN_HEADS], s = (int)sh->v[ATTN_SEQ], d = (int)sh->v[ATTN_DIM];
    int c = (int)sh->v[ATTN_CAUSAL];
    float scale = (float)evo_attn_softmax_scale(a->cfg, sh);
    void *args[] = {&q, &k, &v, &o, &b, &h, &s, &d, &c, &scale, &p_e4m3};
    return evo_gpu_launch(a->g, a->f_ref, (unsigned)((s + EVO_SUPPORT_REF_ROWS - 1) / EVO_SUPPORT_REF_ROWS),
                          (unsigned)h, (unsigned)b, EVO_SUPPORT_REF_BLOCK, args, "reference attention", err);
}

/* The scratch tensors (fp16 inputs and their float copies) grow to the largest case. */
static evo_status scratch(attn_gpu *a, size_t n, evo_err *err)
{
    if (n <= a->scratch_n) return EVO_OK;
    const evo_cudrv *cu = evo_gpu_cu(a->g);
    for (int t = 0; t < 3; t++) {
        if (a->scratch_n) {
            CU(cuStreamSynchronize(evo_gpu_stream(a->g)), err);
            cu->cuMemFree(a->scratch16[t]);
            cu->cuMemFree(a->scratchf[t]);
        }
        evo_status s = evo_gpu_alloc(a->g, n * 2, &a->scratch16[t], err);
        if (s == EVO_OK) s = evo_gpu_alloc(a->g, n * 4, &a->scratchf[t], err);
        if (s != EVO_OK) return s;
    }
    a->scratch_n = n;
    return EVO_OK;
}

/* Q, K, V codes back to floats in the scratch tensors: n elements each, one scale per head of `head` elements. */
static evo_status dequantize3(attn_gpu *a, const CUdeviceptr codes[3], const CUdeviceptr scales[3], size_t n,
                              size_t head, evo_err *err)
{
    unsigned long long nn = n, hh = head;
    int fmt = evo_attn_format(a->cfg);
    evo_status s = EVO_OK;
    for (int t = 0; t < 3 && s == EVO_OK; t++) {
        CUdeviceptr cd = codes[t], sc = scales[t];
        void *da[] = {&cd, &sc, &a->scratchf[t], &nn, &hh, &fmt};
        s = evo_gpu_launch(a->g, a->f_deq, evo_gpu_grid_for(n), 1, 1, EVO_SUPPORT_BLOCK, da, "dequantize", err);
    }
    return s;
}

/* The RMS of n reference floats, from a comparison against zeros (the fp16 scratch tensor of Q, cleared): the
 * element tolerance is in units of it. */
static evo_status ref_rms(attn_gpu *a, CUdeviceptr ref, size_t n, double *rms, evo_err *err)
{
    CU(cuMemsetD8Async(a->scratch16[0], 0, n * 2, evo_gpu_stream(a->g)), err);
    evo_metrics m;
    evo_status s = evo_gpu_compare_f16(a->g, a->scratch16[0], ref, n, 0, 0, &m, err);
    if (s == EVO_OK) *rms = sqrt(m.sum_sq_ref / (double)n);
    return s;
}

static evo_status attn_prepare(void *state, evo_gpu_case *gc, evo_err *err)
{
    attn_gpu *a = state;
    const evo_shape *sh = &gc->shape;
    attn_case *c = evo_xcalloc(1, sizeof *c);
    gc->data = c;
    const size_t n = c->n = elems(sh);
    evo_status s = scratch(a, n, err);
    if (s != EVO_OK) return s;
    if (gc->timing && n > a->timed_n) { /* the fresh inputs of timed repetitions (perturb) */
        for (int t = 0; t < 3 && s == EVO_OK; t++) s = evo_gpu_alloc(a->g, n, &a->tcodes[t], err);
        if (s != EVO_OK) return s;
        a->timed_n = n;
    }
    const size_t head_n = (size_t)sh->v[ATTN_SEQ] * sh->v[ATTN_DIM];
    if (gc->timing && head_n > a->tref_n) { /* one head's reference (check_fresh): the largest head, wherever it is */
        if ((s = evo_gpu_alloc(a->g, head_n * 4, &a->tref, err)) != EVO_OK) return s;
        a->tref_n = head_n;
    }
    unsigned long long nn = n, head = head_n, seed = gc->seed;
    int dist = (int)gc->dist, fmt = evo_attn_format(a->cfg);
    const int bh = (int)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]);
    const unsigned grid = evo_gpu_grid_for(n);
    for (unsigned t = 0; t < 3; t++) {
        if ((s = evo_gpu_alloc(a->g, n, &c->codes[t], err))) return s;
        if ((s = evo_gpu_alloc(a->g, (size_t)bh * 4, &c->scales[t], err))) return s;
        void *ga[] = {&a->scratch16[t], &nn, &head, &seed, &t, &dist};
        if ((s = evo_gpu_launch(a->g, a->f_gen, grid, 1, 1, EVO_SUPPORT_BLOCK, ga, "generate", err))) return s;
        void *qa[] = {&a->scratch16[t], &c->codes[t], &c->scales[t], &head, &fmt};
        if ((s = evo_gpu_launch(a->g, a->f_quant, (unsigned)bh, 1, 1, EVO_SUPPORT_BLOCK, qa, "quantize", err))) return s;
    }
    if ((s = dequantize3(a, c->codes, c->scales, n, head_n, err))) return s;
    if ((s = evo_gpu_alloc(a->g, n * 4, &c->ref, err))) return s;
    if ((s = reference(a, sh, a->scratchf[0], a->scratchf[1], a->scratchf[2], c->ref, 0, err))) return s;
    /* End-to-end errors (vs the unquantized inputs) are reported per timed shape, on normal and outlier inputs. */
    if (gc->timed_shape && (gc->timing || gc->dist == EVO_DIST_NORMAL || gc->dist == EVO_DIST_OUTLIERS)) {
        if ((s = evo_gpu_alloc(a->g, n * 4, &c->ref16, err))) return s;
        for (int t = 0; t < 3; t++) {
            void *ha[] = {&a->scratch16[t], &a->scratchf[t], &nn};
            if ((s = evo_gpu_launch(a->g, a->f_h2f, grid, 1, 1, EVO_SUPPORT_BLOCK, ha, "half to float", err)))
                return s;
        }
        if ((s = reference(a, sh, a->scratchf[0], a->scratchf[1], a->scratchf[2], c->ref16, 0, err))) return s;
    }
    return ref_rms(a, c->ref, n, &c->ref_rms, err);
}

/* A hand-written kernel declares, next to each entry point evo_attn_dD, an evo_attn_launch evo_attn_dD_launch. */
static evo_status attn_geometry(void *state, CUmodule mod, evo_variant *v, char *why, size_t why_len, evo_err *err)
{
    attn_gpu *a = state;
    const evo_cudrv *cu = evo_gpu_cu(a->g);
    char sym[sizeof v->name_expr + 16];
    snprintf(sym, sizeof sym, "%s_launch", v->name_expr);
    CUdeviceptr p;
    size_t bytes;
    evo_attn_launch li;
    CUresult r = cu->cuModuleGetGlobal(&p, &bytes, mod, sym);
    if (r != CUDA_SUCCESS || bytes != sizeof li) {
        snprintf(why, why_len, "no '%s' (an evo_attn_launch) next to kernel '%s'", sym, v->name_expr);
        return EVO_OK;
    }
    CU(cuMemcpyDtoH(&li, p, sizeof li), err);
    v->threads = li.threads, v->attr[ATTN_V_ROWS] = li.rows_per_block, v->smem_bytes = li.smem_bytes;
    if (li.format != evo_attn_format(a->cfg)) {
        snprintf(why, why_len, "'%s' takes format %d but the config's format is %s", sym, li.format,
                 evo_attn_format_name(evo_attn_format(a->cfg)));
    } else if (li.threads < 32 || li.threads % 32 || li.rows_per_block < 1 || li.smem_bytes < 0) {
        snprintf(why, why_len, "'%s' declares an impossible geometry (%d threads, %d rows, %d bytes)", sym,
                 li.threads, li.rows_per_block, li.smem_bytes);
    }
    return EVO_OK;
}

/* Family 1's launch geometry: rows per block, consumers and PERSIST from the variant (attn_sm90_host.h). */
static void sm90_grid(const evo_gpu *g, const evo_variant *v, const evo_shape *sh, unsigned grid[3])
{
    const int wg = (int)v->attr[ATTN_V_WG_ROWS];
    const evo_sm90_genome h = {.wg_rows = wg, .consumers = wg > 0 ? (int)v->attr[ATTN_V_ROWS] / wg : 1,
                               .persist = (int)v->attr[ATTN_V_PERSIST]};
    attn_sm90_grid(&h, (int)sh->v[ATTN_BATCH], (int)sh->v[ATTN_HEADS], (int)sh->v[ATTN_SEQ], evo_gpu_sm_count(g),
                   grid);
}

/* Family 1: the kernel takes (params, tensor maps); the maps are remade when the tensors or the boxes change. The
 * driver's cuTensorMapEncodeTiled has the signature of evo_tmap_encode_fn with its typedef'd integer types. */
static CUresult sm90_launch(attn_gpu *a, const evo_variant *v, CUfunction f, const evo_shape *sh, evo_attn_params *p)
{
    const evo_cudrv *cu = evo_gpu_cu(a->g);
    if (!cu->cuTensorMapEncodeTiled) return CUDA_ERROR_NOT_SUPPORTED;
    const long long key[5] = {(long long)p->batch * p->heads, p->seq, p->head_dim, v->attr[ATTN_V_WG_ROWS],
                              v->attr[ATTN_V_TILE_N]};
    const CUdeviceptr ptr[3] = {p->q, p->k, p->v};
    if (memcmp(key, a->tmap_key, sizeof key) != 0 || memcmp(ptr, a->tmap_ptr, sizeof ptr) != 0) {
        const evo_sm90_genome h = {.wg_rows = (int)v->attr[ATTN_V_WG_ROWS], .tile_n = (int)v->attr[ATTN_V_TILE_N]};
        const evo_tmap_encode_fn encode = (evo_tmap_encode_fn)(void (*)(void))cu->cuTensorMapEncodeTiled;
        memset(a->tmap_key, 0, sizeof a->tmap_key);
        const int r = attn_sm90_fill_tmaps(&a->tmaps, p, &h, encode);
        if (r != 0) return (CUresult)r;
        memcpy(a->tmap_key, key, sizeof key);
        memcpy(a->tmap_ptr, ptr, sizeof ptr);
    }
    unsigned grid[3];
    sm90_grid(a->g, v, sh, grid);
    void *args[] = {p, &a->tmaps};
    return cu->cuLaunchKernel(f, grid[0], grid[1], grid[2], (unsigned)v->threads, 1, 1, (unsigned)v->smem_bytes,
                              evo_gpu_stream(a->g), args, NULL);
}

/* Family 0: grid (ceil(S / rows), H, B), block = threads, dynamic shared memory = smem_bytes (evo_attention_abi.h);
 * family 1: sm90_launch. */
static CUresult attn_launch(void *state, const evo_gpu_case *gc, const evo_gpu_kernel *k, int n, int pick,
                            CUdeviceptr out, bool fresh)
{
    (void)n;
    const evo_variant *v = &k[pick].v;
    const CUfunction f = k[pick].fn;
    attn_gpu *a = state;
    const attn_case *c = gc->data;
    const evo_shape *sh = &gc->shape;
    const CUdeviceptr *codes = fresh ? a->tcodes : c->codes;
    evo_attn_params p = {
        .q = codes[0], .k = codes[1], .v = codes[2],
        .q_scale = c->scales[0], .k_scale = c->scales[1], .v_scale = c->scales[2],
        .o = out, .batch = (int)sh->v[ATTN_BATCH], .heads = (int)sh->v[ATTN_HEADS], .seq = (int)sh->v[ATTN_SEQ],
        .head_dim = (int)sh->v[ATTN_DIM], .causal = (int)sh->v[ATTN_CAUSAL],
        .softmax_scale = (float)evo_attn_softmax_scale(a->cfg, sh),
    };
    if (v->attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90) return sm90_launch(a, v, f, sh, &p);
    void *args[] = {&p};
    const long long rows = v->attr[ATTN_V_ROWS];
    const unsigned gx = (unsigned)((sh->v[ATTN_SEQ] + rows - 1) / rows);
    return evo_gpu_cu(a->g)->cuLaunchKernel(f, gx, (unsigned)sh->v[ATTN_HEADS], (unsigned)sh->v[ATTN_BATCH],
                                            (unsigned)v->threads, 1, 1, (unsigned)v->smem_bytes,
                                            evo_gpu_stream(a->g), args, NULL);
}

static int attn_geometry_of(void *state, const evo_gpu_case *gc, const evo_gpu_kernel *k, int n, int pick,
                            unsigned grid[][3], unsigned *block, int max)
{
    (void)n, (void)max;
    const evo_shape *sh = &gc->shape;
    if (k[pick].v.attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90) {
        sm90_grid(((attn_gpu *)state)->g, &k[pick].v, sh, grid[0]);
        block[0] = (unsigned)k[pick].v.threads;
        return 1;
    }
    const long long rows = k[pick].v.attr[ATTN_V_ROWS];
    grid[0][0] = (unsigned)((sh->v[ATTN_SEQ] + rows - 1) / rows);
    grid[0][1] = (unsigned)sh->v[ATTN_HEADS];
    grid[0][2] = (unsigned)sh->v[ATTN_BATCH];
    block[0] = (unsigned)k[pick].v.threads;
    return 1;
}

/* Fresh inputs: every code of Q, K, V with bits flipped by a hash of (seed, tensor, index) that keep its exponent
 * (support.cu's evo_perturb_codes), so the per-head scales still hold. */
static evo_status attn_perturb(void *state, const evo_gpu_case *gc, uint64_t seed, evo_err *err)
{
    attn_gpu *a = state;
    attn_case *c = gc->data;
    unsigned long long n = c->n, sd = seed;
    int fmt = evo_attn_format(a->cfg);
    void *args[] = {&c->codes[0], &c->codes[1], &c->codes[2], &a->tcodes[0], &a->tcodes[1], &a->tcodes[2], &n, &sd,
                    &fmt};
    return evo_gpu_launch(a->g, a->f_perturb, evo_gpu_grid_for(c->n), 1, 1, EVO_SUPPORT_BLOCK, args,
                          "perturb timing inputs", err);
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Why an output fails: not written, rel-L2, the element test; "" when it passes. */
static void judge(const evo_metrics *m, const evo_tolerance *tol, char *why, size_t n)
{
    why[0] = '\0';
    if (m->n_nonfinite > 0)
        snprintf(why, n, "%zu output elements not written or not finite (first at %lld)", m->n_nonfinite,
                 m->first_bad);
    else if (m->rel_l2 > tol->rel_l2)
        snprintf(why, n, "rel-L2 %.3g > %.3g", m->rel_l2, tol->rel_l2);
    else if (m->frac_over > tol->max_frac_over)
        snprintf(why, n, "%zu elements over atol %.3g x rms + rtol %.3g x |ref| (first at %lld)", m->n_over, tol->atol,
                 tol->rtol, m->first_bad);
}

#define SAMPLE_HEADS 2 /* heads of a sampled output checked (each head is an attention of its own) */

/* A timed repetition's output on the inputs perturb(seed) made: SAMPLE_HEADS heads drawn from the seed, each
 * against a reference of that head alone (the reference of a whole stress shape costs milliseconds). */
static evo_status attn_check_fresh(void *state, const evo_gpu_case *gc, const evo_variant *v, uint64_t seed,
                                   CUdeviceptr out, evo_gpu_check *r, evo_err *err)
{
    attn_gpu *a = state;
    attn_case *c = gc->data;
    const evo_shape *sh = &gc->shape;
    const evo_tolerance *tol = &a->cfg->correctness.tol;
    const int bh_count = (int)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]);
    const size_t hn = (size_t)sh->v[ATTN_SEQ] * sh->v[ATTN_DIM];
    evo_shape one = *sh;
    one.v[ATTN_BATCH] = one.v[ATTN_HEADS] = 1;
    evo_status s = attn_perturb(state, gc, seed, err);
    for (int j = 0; s == EVO_OK && j < (bh_count < SAMPLE_HEADS ? bh_count : SAMPLE_HEADS) && !r->why[0]; j++) {
        const int bh = (int)((mix64(seed ^ (uint64_t)j ^ 0x5eadull) % (uint64_t)bh_count + (uint64_t)j) %
                             (uint64_t)bh_count);
        const CUdeviceptr codes[3] = {a->tcodes[0] + (CUdeviceptr)bh * hn, a->tcodes[1] + (CUdeviceptr)bh * hn,
                                      a->tcodes[2] + (CUdeviceptr)bh * hn};
        const CUdeviceptr scales[3] = {c->scales[0] + (CUdeviceptr)bh * 4, c->scales[1] + (CUdeviceptr)bh * 4,
                                       c->scales[2] + (CUdeviceptr)bh * 4};
        double rms = 0;
        s = dequantize3(a, codes, scales, hn, hn, err);
        if (s == EVO_OK)
            s = reference(a, &one, a->scratchf[0], a->scratchf[1], a->scratchf[2], a->tref, (int)v->attr[ATTN_V_P8],
                          err);
        if (s == EVO_OK) s = ref_rms(a, a->tref, hn, &rms, err);
        if (s != EVO_OK) break;
        s = evo_gpu_compare_f16(a->g, out + (CUdeviceptr)bh * hn * 2, a->tref, hn, tol->atol * rms, tol->rtol, &r->m,
                                err);
        if (s != EVO_OK) break;
        judge(&r->m, tol, r->why, sizeof r->why);
        if (r->why[0]) {
            const size_t l = strlen(r->why);
            snprintf(r->why + l, sizeof r->why - l, " (head %d of a timed repetition's fresh inputs)", bh);
        }
    }
    return s;
}

/* The reference that rounds P to e4m3, for case c: its inputs dequantized again (the scratch tensors hold the last
 * prepared case's), then the reference with p_e4m3 = 1 and its RMS. */
static evo_status make_ref_p8(attn_gpu *a, const evo_gpu_case *gc, attn_case *c, evo_err *err)
{
    const evo_shape *sh = &gc->shape;
    CUdeviceptr ref = 0;
    evo_status s = dequantize3(a, c->codes, c->scales, c->n, (size_t)sh->v[ATTN_SEQ] * sh->v[ATTN_DIM], err);
    if (s == EVO_OK) s = evo_gpu_alloc(a->g, c->n * 4, &ref, err);
    if (s == EVO_OK) s = reference(a, sh, a->scratchf[0], a->scratchf[1], a->scratchf[2], ref, 1, err);
    if (s == EVO_OK) s = ref_rms(a, ref, c->n, &c->ref_p8_rms, err);
    if (s == EVO_OK) c->ref_p8 = ref;
    return s;
}

/* Every element written and finite, rel-L2 and the element test within the config's tolerance, against the
 * reference of the variant's arithmetic (P rounded to e4m3 or not). */
static evo_status attn_check(void *state, const evo_gpu_case *gc, const evo_variant *v, CUdeviceptr out,
                             evo_gpu_check *r, evo_err *err)
{
    attn_gpu *a = state;
    attn_case *c = gc->data;
    const evo_tolerance *tol = &a->cfg->correctness.tol;
    evo_status s = EVO_OK;
    if (v->attr[ATTN_V_P8] && !c->ref_p8 && (s = make_ref_p8(a, gc, c, err)) != EVO_OK) return s;
    const CUdeviceptr ref = v->attr[ATTN_V_P8] ? c->ref_p8 : c->ref;
    const double rms = v->attr[ATTN_V_P8] ? c->ref_p8_rms : c->ref_rms;
    s = evo_gpu_compare_f16(a->g, out, ref, c->n, tol->atol * rms, tol->rtol, &r->m, err);
    if (s != EVO_OK) return s;
    if (c->ref16 && (s = evo_gpu_compare_f16(a->g, out, c->ref16, c->n, 0, 0, &r->e2e, err))) return s;
    judge(&r->m, tol, r->why, sizeof r->why);
    return EVO_OK;
}

const evo_task_gpu evo_attn_gpu = {
    .open = attn_open,
    .output_bytes = attn_output_bytes,
    .prepare = attn_prepare,
    .geometry = attn_geometry,
    .launch = attn_launch,
    .geometry_of = attn_geometry_of,
    .check = attn_check,
    .perturb = attn_perturb,
    .check_fresh = attn_check_fresh,
};
