/* gpu.c — the attention_fp8 task inside a worker (task_gpu.h): inputs (a distribution or a structural probe)
 * generated, quantized and dequantized on the GPU once per case (bit-identical to attn_ref.c), the FP32 reference
 * attention on the dequantized inputs and, for the timed shapes, on the unquantized fp16 inputs (the end-to-end
 * error), the launch through evo_attn_params, and the verdict of the variant's accuracy class (attn_gate.h): the
 * exact class against the config's tolerance (each head on its own on a probe), the fp8 class per head against
 * twice the FP8 model's error (the model runs on the GPU once per case, with the references where the fp8 class can
 * run, else when a variant of the class first needs it). */
#include "attention.h"

#include "attn_gate.h"
#include "attn_ref.h"
#include "attn_sm90_host.h"
#include "task_gpu.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AN_FN static inline
#include "attn_numerics.h" /* AN_FP8_ORDERS */

typedef struct {
    evo_gpu *g;
    const evo_config *cfg;
    CUfunction f_gen, f_quant, f_deq, f_h2f, f_ref, f_perturb, f_slices, f_slices_reset;
    CUmodule mod;     /* attn_support.cu: the probes' inputs, the FP8 model */
    CUmodule ref_mod; /* attn_ref.cu: quantizer, dequantizer, FP32 reference, perturbation */
    CUfunction f_probe, f_model;
    size_t slices_cap; /* per-slice accumulators the device buffer holds */
    CUdeviceptr slice_acc;
    CUdeviceptr bound1; /* one slice's element bound (check_fresh) */
    size_t model_n;     /* floats modelf holds */
    CUdeviceptr modelf; /* the FP8 model's output */
    size_t scratch_n;   /* elements the scratch buffers hold */
    CUdeviceptr scratch16[3], scratchf[3];
    size_t timed_n;        /* elements the timing buffers hold (the largest timing case) */
    size_t tref_n;         /* elements tref holds (the longest head of any timing case: not that case's head) */
    CUdeviceptr tcodes[3]; /* a timed repetition's perturbed Q, K, V codes */
    CUdeviceptr tref;      /* FP32 reference of one head on them */
    /* Family 1 (sm_90a): the tensor maps of the last launch and what they were made for. */
    evo_attn_tmaps tmaps;
    CUdeviceptr tmap_ptr[3];
    long long tmap_key[6];
    /* V_PATH 3 genomes: K and V in FP16, written by the genome's conversion kernel before each launch */
    size_t kv16_n; /* elements each holds (the largest case) */
    CUdeviceptr kv16[2];
    /* V_PATH 5 genomes: Vᵀ, written by the genome's transpose kernel before each launch */
    size_t vt_need; /* bytes the largest prepared case's Vᵀ takes (B·H·D·S16) */
    size_t vt_n;    /* bytes vt holds */
    CUdeviceptr vt;
} attn_gpu;

/* One case's inputs: 8-bit codes and scales of Q, K, V, the reference, and the end-to-end reference. */
typedef struct {
    size_t n; /* elements of Q (and of O) */
    CUdeviceptr codes[3], scales[3];
    CUdeviceptr ref;   /* FP32 reference on the dequantized inputs */
    CUdeviceptr ref16; /* FP32 reference on the unquantized FP16 inputs: the end-to-end error (0: none) */
    double ref_rms;
    /* the fp8 class's budget, made when a variant of the class first checks this case */
    evo_slice_acc *model; /* the FP8 model against the reference, per (batch, head) */
    double *rel_bound, *abs_bound;
    CUdeviceptr abs_bound_dev;
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
    } fns[] = {{&a->f_gen, "evo_gen_inputs"},
               {&a->f_h2f, "evo_half_to_float"},
               {&a->f_slices, "evo_compare_slices"},
               {&a->f_slices_reset, "evo_compare_slices_reset"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fns); i++)
        if (!(*fns[i].f = evo_gpu_support(g, fns[i].name))) {
            free(a);
            return evo_fail(err, EVO_E_INTERNAL, "support.cu has no kernel %s", fns[i].name);
        }
    static const char *const headers[] = {"attn_numerics.h", NULL};
    evo_status s = evo_gpu_load_module(g, "attn_support.cu", headers, &a->mod, err);
    /* attn_ref.cu: the quantizer, dequantizer, FP32 reference and timing perturbation (attn_ref.c's twins) */
    if (s == EVO_OK) s = evo_gpu_load_module(g, "attn_ref.cu", NULL, &a->ref_mod, err);
    const struct {
        CUfunction *f;
        CUmodule *m;
        const char *name;
    } own[] = {{&a->f_probe, &a->mod, "evo_gen_probe"},
               {&a->f_model, &a->mod, "evo_fp8_model_attention"},
               {&a->f_quant, &a->ref_mod, "evo_quantize"},
               {&a->f_deq, &a->ref_mod, "evo_dequantize"},
               {&a->f_ref, &a->ref_mod, "evo_reference_attention"},
               {&a->f_perturb, &a->ref_mod, "evo_perturb_codes"}};
    for (size_t i = 0; s == EVO_OK && i < EVO_ARRAY_LEN(own); i++)
        s = evo_cu_check(evo_gpu_cu(g), evo_gpu_cu(g)->cuModuleGetFunction(own[i].f, *own[i].m, own[i].name),
                         own[i].name, err);
    if (s == EVO_OK) s = evo_gpu_alloc(g, sizeof(double), &a->bound1, err);
    if (s != EVO_OK) {
        free(a);
        return s;
    }
    *state = a;
    return EVO_OK;
}

static size_t attn_output_bytes(void *state, const evo_shape *s)
{
    (void)state;
    return elems(s) * 2; /* fp16 */
}

/* The exact FP32 reference (attn_ref.cu) on dequantized inputs. */
/* The FP32 reference of shape sh into o: query rows [row0, row0 + rows) of every head (0, S: all of them). */
static evo_status reference_rows(attn_gpu *a, const evo_shape *sh, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v,
                                 CUdeviceptr o, int row0, int rows, evo_err *err)
{
    int b = (int)sh->v[ATTN_BATCH], h = (int)sh->v[ATTN_HEADS], s = (int)sh->v[ATTN_SEQ], d = (int)sh->v[ATTN_DIM];
    int c = (int)sh->v[ATTN_CAUSAL];
    float scale = (float)evo_attn_softmax_scale(a->cfg, sh);
    void *args[] = {&q, &k, &v, &o, &b, &h, &s, &d, &c, &scale, &row0};
    return evo_gpu_launch(a->g, a->f_ref, (unsigned)((rows + ATTN_REF_ROWS - 1) / ATTN_REF_ROWS), (unsigned)h,
                          (unsigned)b, ATTN_REF_BLOCK, args, "reference attention", err);
}

static evo_status reference(attn_gpu *a, const evo_shape *sh, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v,
                            CUdeviceptr o, evo_err *err)
{
    return reference_rows(a, sh, q, k, v, o, 0, (int)sh->v[ATTN_SEQ], err);
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

static evo_status fp8_budget(attn_gpu *a, const evo_gpu_case *gc, attn_case *c, evo_err *err);

/* The fp8 class judges case gc by the saturated rule (huge logits: the `large` inputs), which needs no model. */
static bool fp8_saturated(const evo_gpu_case *gc) { return gc->probe < 0 && gc->dist == EVO_DIST_LARGE; }

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
    const size_t vt_bytes = (size_t)sh->v[ATTN_BATCH] * (size_t)sh->v[ATTN_HEADS] * (size_t)sh->v[ATTN_DIM] *
                            (size_t)attn_sm90_vt_seq((int)sh->v[ATTN_SEQ]);
    if (vt_bytes > a->vt_need) a->vt_need = vt_bytes;
    if (gc->timing && head_n > a->tref_n) { /* one head's reference (check_fresh): the largest head, wherever it is */
        if ((s = evo_gpu_alloc(a->g, head_n * 4, &a->tref, err)) != EVO_OK) return s;
        CU(cuMemsetD32Async(a->tref, 0, head_n, evo_gpu_stream(a->g)), err); /* a window's check reads all of it */
        a->tref_n = head_n;
    }
    unsigned long long nn = n, head = head_n, seed = gc->seed;
    int dist = (int)gc->dist, fmt = evo_attn_format(a->cfg);
    const int bh = (int)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]);
    const unsigned grid = evo_gpu_grid_for(n);
    for (unsigned t = 0; t < 3; t++) {
        if ((s = evo_gpu_alloc(a->g, n, &c->codes[t], err))) return s;
        if ((s = evo_gpu_alloc(a->g, (size_t)bh * 4, &c->scales[t], err))) return s;
        if (gc->probe >= 0) {
            int probe = gc->probe, seq = (int)sh->v[ATTN_SEQ], d = (int)sh->v[ATTN_DIM];
            void *pa[] = {&a->scratch16[t], &nn, &probe, &seed, &t, &seq, &d};
            if ((s = evo_gpu_launch(a->g, a->f_probe, grid, 1, 1, EVO_SUPPORT_BLOCK, pa, "probe inputs", err)))
                return s;
        } else {
            void *ga[] = {&a->scratch16[t], &nn, &head, &seed, &t, &dist};
            if ((s = evo_gpu_launch(a->g, a->f_gen, grid, 1, 1, EVO_SUPPORT_BLOCK, ga, "generate", err))) return s;
        }
        void *qa[] = {&a->scratch16[t], &c->codes[t], &c->scales[t], &head, &fmt};
        if ((s = evo_gpu_launch(a->g, a->f_quant, (unsigned)bh, 1, 1, EVO_SUPPORT_BLOCK, qa, "quantize", err)))
            return s;
    }
    if ((s = dequantize3(a, c->codes, c->scales, n, head_n, err))) return s;
    if ((s = evo_gpu_alloc(a->g, n * 4, &c->ref, err))) return s;
    if ((s = reference(a, sh, a->scratchf[0], a->scratchf[1], a->scratchf[2], c->ref, err))) return s;
    /* End-to-end errors (vs the unquantized inputs) are reported per timed shape, on normal and outlier inputs. */
    if (gc->timed_shape && gc->probe < 0 &&
        (gc->timing || gc->dist == EVO_DIST_NORMAL || gc->dist == EVO_DIST_OUTLIERS)) {
        if ((s = evo_gpu_alloc(a->g, n * 4, &c->ref16, err))) return s;
        for (int t = 0; t < 3; t++) {
            void *ha[] = {&a->scratch16[t], &a->scratchf[t], &nn};
            if ((s = evo_gpu_launch(a->g, a->f_h2f, grid, 1, 1, EVO_SUPPORT_BLOCK, ha, "half to float", err))) return s;
        }
        if ((s = reference(a, sh, a->scratchf[0], a->scratchf[1], a->scratchf[2], c->ref16, err))) return s;
    }
    if ((s = ref_rms(a, c->ref, n, &c->ref_rms, err))) return s;
    /* The fp8 class's budget is made here, with the references, where that class can run (e4m3 inputs on sm_89 and
     * later, the config admitting it): a worker pays for it once at its start, under the start's time limit, never
     * inside a candidate's evaluation (whose watchdog would kill it, and the next worker would start over). The
     * saturated judge (`large` inputs) needs no model. */
    if ((a->cfg->accuracy & (1u << ATTN_ACC_FP8)) && fmt == EVO_FORMAT_E4M3 && evo_gpu_arch(a->g) >= 89 &&
        !fp8_saturated(gc))
        s = fp8_budget(a, gc, c, err);
    return s;
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
        snprintf(why, why_len, "'%s' declares an impossible geometry (%d threads, %d rows, %d bytes)", sym, li.threads,
                 li.rows_per_block, li.smem_bytes);
    }
    return EVO_OK;
}

/* Family 1's launch geometry: rows per block, consumers and PERSIST from the variant (attn_sm90_host.h). */
static void sm90_grid(const evo_gpu *g, const evo_variant *v, const evo_shape *sh, unsigned grid[3])
{
    const int wg = (int)v->attr[ATTN_V_WG_ROWS];
    const evo_sm90_genome h = {.wg_rows = wg,
                               .consumers = wg > 0 ? (int)v->attr[ATTN_V_ROWS] / wg : 1,
                               .persist = (int)v->attr[ATTN_V_PERSIST]};
    attn_sm90_grid(&h, (int)sh->v[ATTN_BATCH], (int)sh->v[ATTN_HEADS], (int)sh->v[ATTN_SEQ], evo_gpu_sm_count(g), grid);
}

/* Family 1: the kernel takes (params, tensor maps); the maps are remade when the tensors or the boxes change. The
 * driver's cuTensorMapEncodeTiled has the signature of evo_tmap_encode_fn with its typedef'd integer types. after_pre:
 * the call's first kernel (K, V to FP16; Vᵀ) was launched just before, so the attention kernel is launched with
 * programmatic stream serialization: it may start while that kernel runs, and its TMA thread waits for that
 * kernel's results before the first K/V load (the template's EVO_SM90_PDL); nothing else it reads comes from it. */
static CUresult sm90_launch(attn_gpu *a, const evo_variant *v, CUfunction f, const evo_shape *sh, evo_attn_params *p,
                            int after_pre)
{
    const evo_cudrv *cu = evo_gpu_cu(a->g);
    if (!cu->cuTensorMapEncodeTiled) return CUDA_ERROR_NOT_SUPPORTED;
    /* the maps of K and V: FP16 (V_PATH 3), Vᵀ (V_PATH 5) or codes */
    const int v_path = v->attr[ATTN_V_ROLE] == ATTN_ROLE_KV16 ? 3 : v->attr[ATTN_V_ROLE] == ATTN_ROLE_VT ? 5 : 0;
    const long long key[6] = {(long long)p->batch * p->heads, p->seq, p->head_dim, v->attr[ATTN_V_WG_ROWS],
                              v->attr[ATTN_V_TILE_N],         v_path};
    const CUdeviceptr ptr[3] = {p->q, p->k, p->v};
    if (memcmp(key, a->tmap_key, sizeof key) != 0 || memcmp(ptr, a->tmap_ptr, sizeof ptr) != 0) {
        const evo_sm90_genome h = {
            .wg_rows = (int)v->attr[ATTN_V_WG_ROWS], .tile_n = (int)v->attr[ATTN_V_TILE_N], .v_path = v_path};
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
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    /* without cuLaunchKernelEx, a plain launch: the kernel's dependency instructions then do nothing */
    return evo_gpu_launch_attrs(a->g, f, grid, (unsigned)v->threads, (unsigned)v->smem_bytes, &attr,
                                after_pre && cu->cuLaunchKernelEx ? 1u : 0u, args);
}

/* The conversion kernel among a program's kernels (a V_PATH 3 genome's; a V_PATH 5 genome's transpose), or -1. */
static int convert_kernel(const evo_gpu_kernel *k, int n)
{
    for (int i = 0; i < n; i++)
        if (attn_role_is_pre(k[i].v.attr[ATTN_V_ROLE])) return i;
    return -1;
}

static unsigned convert_blocks(size_t n)
{
    return (unsigned)((2 * (n / 16) + ATTN_CONVERT_THREADS - 1) / ATTN_CONVERT_THREADS);
}

/* Blocks of the V_PATH 5 transpose for a shape: (ceil(S16 / 128), B·H). */
static void transpose_grid(const evo_shape *sh, unsigned grid[3])
{
    grid[0] = (unsigned)((attn_sm90_vt_seq((int)sh->v[ATTN_SEQ]) + ATTN_TRANSPOSE_KEYS - 1) / ATTN_TRANSPOSE_KEYS);
    grid[1] = (unsigned)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]);
    grid[2] = 1;
}

/* A V_PATH 5 genome: the Vᵀ buffer, sized for the largest case prepared. */
static evo_status vt_buffer(attn_gpu *a, evo_err *err)
{
    if (a->vt_need <= a->vt_n) return EVO_OK;
    if (a->vt_n) evo_gpu_cu(a->g)->cuMemFree(a->vt);
    a->vt_n = 0;
    evo_status s = evo_gpu_alloc(a->g, a->vt_need, &a->vt, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "the Vᵀ of a V_PATH 5 genome");
    a->vt_n = a->vt_need;
    return EVO_OK;
}

/* A V_PATH 3 genome: the FP16 K and V buffers, sized for the largest case prepared (every case is prepared before
 * the first evaluation); a V_PATH 5 genome: the Vᵀ buffer. */
static evo_status attn_begin(void *state, const evo_gpu_kernel *k, int n, evo_err *err)
{
    attn_gpu *a = state;
    const size_t need = a->scratch_n > a->timed_n ? a->scratch_n : a->timed_n;
    const int ci = convert_kernel(k, n);
    /* by role: the name the worker holds is the lowered symbol, never the name expression */
    if (ci >= 0 && k[ci].v.attr[ATTN_V_ROLE] == ATTN_ROLE_TRANSPOSE) return vt_buffer(a, err);
    if (ci < 0 || need <= a->kv16_n) return EVO_OK;
    const evo_cudrv *cu = evo_gpu_cu(a->g);
    for (int t = 0; t < 2; t++)
        if (a->kv16_n) cu->cuMemFree(a->kv16[t]);
    a->kv16_n = 0;
    for (int t = 0; t < 2; t++) {
        evo_status s = evo_gpu_alloc(a->g, need * 2, &a->kv16[t], err);
        if (s != EVO_OK) {
            if (t) cu->cuMemFree(a->kv16[0]);
            return evo_failv_prefix(err, s, "the FP16 K and V of a V_PATH 3 genome");
        }
    }
    a->kv16_n = need;
    return EVO_OK;
}

/* Family 0: grid (ceil(S / rows), H, B), block = threads, dynamic shared memory = smem_bytes (evo_attention_abi.h);
 * family 1: sm90_launch; a V_PATH 3 kernel after its genome's conversion of K and V into kv16, a V_PATH 5 kernel
 * after its genome's transpose of V into vt. */
static CUresult attn_launch(void *state, const evo_gpu_case *gc, const evo_gpu_kernel *k, int n, int pick,
                            CUdeviceptr out, bool fresh)
{
    const evo_variant *v = &k[pick].v;
    const CUfunction f = k[pick].fn;
    attn_gpu *a = state;
    const attn_case *c = gc->data;
    const evo_shape *sh = &gc->shape;
    const CUdeviceptr *codes = fresh ? a->tcodes : c->codes;
    evo_attn_params p = {
        .q = codes[0],
        .k = codes[1],
        .v = codes[2],
        .q_scale = c->scales[0],
        .k_scale = c->scales[1],
        .v_scale = c->scales[2],
        .o = out,
        .batch = (int)sh->v[ATTN_BATCH],
        .heads = (int)sh->v[ATTN_HEADS],
        .seq = (int)sh->v[ATTN_SEQ],
        .head_dim = (int)sh->v[ATTN_DIM],
        .causal = (int)sh->v[ATTN_CAUSAL],
        .softmax_scale = (float)evo_attn_softmax_scale(a->cfg, sh),
    };
    if (v->attr[ATTN_V_ROLE] == ATTN_ROLE_KV16) {
        const int ci = convert_kernel(k, n);
        if (ci < 0 || a->kv16_n < c->n) return CUDA_ERROR_INVALID_VALUE;
        unsigned long long nn = c->n;
        void *ca[] = {&p.k, &p.v, &a->kv16[0], &a->kv16[1], &nn};
        const CUresult r = evo_gpu_cu(a->g)->cuLaunchKernel(k[ci].fn, convert_blocks(c->n), 1, 1, ATTN_CONVERT_THREADS,
                                                            1, 1, 0, evo_gpu_stream(a->g), ca, NULL);
        if (r != CUDA_SUCCESS) return r;
        p.k = a->kv16[0];
        p.v = a->kv16[1];
    } else if (v->attr[ATTN_V_ROLE] == ATTN_ROLE_VT) { /* V to Vᵀ, then the attention on it */
        const int ci = convert_kernel(k, n);
        int seq = p.seq, s16 = attn_sm90_vt_seq(p.seq), d = p.head_dim;
        if (ci < 0 || a->vt_n < (size_t)p.batch * p.heads * d * s16) return CUDA_ERROR_INVALID_VALUE;
        unsigned tg[3];
        transpose_grid(sh, tg);
        void *ta[] = {&p.v, &a->vt, &seq, &s16, &d};
        const CUresult r = evo_gpu_cu(a->g)->cuLaunchKernel(k[ci].fn, tg[0], tg[1], tg[2], ATTN_CONVERT_THREADS, 1, 1,
                                                            0, evo_gpu_stream(a->g), ta, NULL);
        if (r != CUDA_SUCCESS) return r;
        p.v = a->vt;
    }
    if (v->attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90) /* after the conversion or transpose above: PDL */
        return sm90_launch(a, v, f, sh, &p,
                           v->attr[ATTN_V_ROLE] == ATTN_ROLE_KV16 || v->attr[ATTN_V_ROLE] == ATTN_ROLE_VT);
    void *args[] = {&p};
    const long long rows = v->attr[ATTN_V_ROWS];
    const unsigned gx = (unsigned)((sh->v[ATTN_SEQ] + rows - 1) / rows);
    return evo_gpu_cu(a->g)->cuLaunchKernel(f, gx, (unsigned)sh->v[ATTN_HEADS], (unsigned)sh->v[ATTN_BATCH],
                                            (unsigned)v->threads, 1, 1, (unsigned)v->smem_bytes, evo_gpu_stream(a->g),
                                            args, NULL);
}

static int attn_geometry_of(void *state, const evo_gpu_case *gc, const evo_gpu_kernel *k, int n, int pick,
                            unsigned grid[][3], unsigned *block, int max)
{
    (void)n;
    const evo_shape *sh = &gc->shape;
    if (k[pick].v.attr[ATTN_V_FAMILY] == ATTN_FAMILY_SM90) {
        int m = 0;
        if (k[pick].v.attr[ATTN_V_ROLE] == ATTN_ROLE_KV16 && max >= 2) { /* the conversion, then the attention */
            grid[0][0] = convert_blocks(elems(sh));
            grid[0][1] = grid[0][2] = 1;
            block[0] = ATTN_CONVERT_THREADS;
            m = 1;
        } else if (k[pick].v.attr[ATTN_V_ROLE] == ATTN_ROLE_VT && max >= 2) { /* the transpose, then the attention */
            transpose_grid(sh, grid[0]);
            block[0] = ATTN_CONVERT_THREADS;
            m = 1;
        }
        sm90_grid(((attn_gpu *)state)->g, &k[pick].v, sh, grid[m]);
        block[m] = (unsigned)k[pick].v.threads;
        return m + 1;
    }
    const long long rows = k[pick].v.attr[ATTN_V_ROWS];
    grid[0][0] = (unsigned)((sh->v[ATTN_SEQ] + rows - 1) / rows);
    grid[0][1] = (unsigned)sh->v[ATTN_HEADS];
    grid[0][2] = (unsigned)sh->v[ATTN_BATCH];
    block[0] = (unsigned)k[pick].v.threads;
    return 1;
}

/* Fresh inputs: every code of Q, K, V with bits flipped by a hash of (seed, tensor, index) that keep its exponent
 * (attn_ref.cu's evo_perturb_codes), so the per-head scales still hold. */
static evo_status attn_perturb(void *state, const evo_gpu_case *gc, uint64_t seed, evo_err *err)
{
    attn_gpu *a = state;
    attn_case *c = gc->data;
    unsigned long long n = c->n, sd = seed;
    int fmt = evo_attn_format(a->cfg);
    void *args[] = {&c->codes[0],  &c->codes[1], &c->codes[2], &a->tcodes[0], &a->tcodes[1],
                    &a->tcodes[2], &n,           &sd,          &fmt};
    return evo_gpu_launch(a->g, a->f_perturb, evo_gpu_grid_for(c->n), 1, 1, EVO_SUPPORT_BLOCK, args,
                          "perturb timing inputs", err);
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- per-slice statistics and the fp8 class's budget ---- */

/* Statistics of n_slices slices of out (fp16, or float with out_f32) against ref into host[], each element bounded
 * by bound_dev[slice] when bound_dev is not 0 (support.cu's evo_compare_slices); synchronizes the stream. */
static evo_status slices(attn_gpu *a, CUdeviceptr out, int out_f32, CUdeviceptr ref, size_t n_slices,
                         size_t slice_elems, CUdeviceptr bound_dev, evo_slice_acc *host, evo_err *err)
{
    const evo_cudrv *cu = evo_gpu_cu(a->g);
    evo_status s = EVO_OK;
    if (n_slices > a->slices_cap) {
        if (a->slices_cap) {
            CU(cuStreamSynchronize(evo_gpu_stream(a->g)), err);
            cu->cuMemFree(a->slice_acc);
            a->slices_cap = 0;
        }
        if ((s = evo_gpu_alloc(a->g, n_slices * sizeof *host, &a->slice_acc, err)) != EVO_OK) return s;
        a->slices_cap = n_slices;
    }
    unsigned long long ns = n_slices, se = slice_elems;
    void *ra[] = {&a->slice_acc, &ns};
    s = evo_gpu_launch(a->g, a->f_slices_reset, evo_gpu_grid_for(n_slices), 1, 1, EVO_SUPPORT_BLOCK, ra,
                       "reset slice statistics", err);
    void *ca[] = {&out, &out_f32, &ref, &se, &bound_dev, &a->slice_acc};
    const unsigned per = (unsigned)((slice_elems + EVO_SUPPORT_BLOCK - 1) / EVO_SUPPORT_BLOCK);
    if (s == EVO_OK)
        s = evo_gpu_launch(a->g, a->f_slices, per < EVO_SUPPORT_SLICE_BLOCKS ? per : EVO_SUPPORT_SLICE_BLOCKS,
                           (unsigned)n_slices, 1, EVO_SUPPORT_BLOCK, ca, "compare per head", err);
    if (s != EVO_OK) return s;
    CU(cuStreamSynchronize(evo_gpu_stream(a->g)), err);
    CU(cuMemcpyDtoH(host, a->slice_acc, n_slices * sizeof *host), err);
    return EVO_OK;
}

/* The FP8 model (attn_support.cu) in phase `phase` on codes/scales of shape sh into a->modelf: query rows
 * [row0, row0 + rows) of every head (0, S: all of them). */
static evo_status model(attn_gpu *a, const evo_shape *sh, const CUdeviceptr codes[3], const CUdeviceptr scales[3],
                        int phase, int row0, int rows, evo_err *err)
{
    const size_t n = elems(sh);
    evo_status s = EVO_OK;
    if (n > a->model_n) {
        if (a->model_n) {
            CU(cuStreamSynchronize(evo_gpu_stream(a->g)), err);
            evo_gpu_cu(a->g)->cuMemFree(a->modelf);
            a->model_n = 0;
        }
        if ((s = evo_gpu_alloc(a->g, n * 4, &a->modelf, err)) != EVO_OK) return s;
        a->model_n = n;
    }
    int b = (int)sh->v[ATTN_BATCH], h = (int)sh->v[ATTN_HEADS], sq = (int)sh->v[ATTN_SEQ], d = (int)sh->v[ATTN_DIM];
    int c = (int)sh->v[ATTN_CAUSAL];
    float scale = (float)evo_attn_softmax_scale(a->cfg, sh);
    CUdeviceptr q = codes[0], qs = scales[0], k = codes[1], ks = scales[1], v = codes[2], vs = scales[2];
    void *args[] = {&q, &qs, &k, &ks, &v, &vs, &a->modelf, &b, &h, &sq, &d, &c, &scale, &phase, &row0};
    return evo_gpu_launch(a->g, a->f_model, (unsigned)((rows + ATTN_MODEL_ROWS - 1) / ATTN_MODEL_ROWS), (unsigned)h,
                          (unsigned)b, ATTN_MODEL_THREADS, args, "FP8 model", err);
}

/* The model's error on each of ns slices against ref, the largest over its orders (attn_numerics.h): the sums of
 * the phase with the largest rel-L2, the largest max-abs of any. Query rows [row0, row0 + rows) of each head (0, S:
 * every row; a window only with one slice, se = rows x head_dim elements from row row0 of modelf and ref). */
static evo_status model_stats(attn_gpu *a, const evo_shape *sh, const CUdeviceptr codes[3], const CUdeviceptr scales[3],
                              CUdeviceptr ref, size_t ns, size_t se, int row0, int rows, evo_slice_acc *m, evo_err *err)
{
    if (rows < sh->v[ATTN_SEQ] && ns != 1)
        return evo_fail(err, EVO_E_INTERNAL, "model_stats: a window of %zu heads", ns);
    evo_slice_acc *ph = evo_xcalloc(ns, sizeof *ph);
    const CUdeviceptr off = (CUdeviceptr)row0 * (CUdeviceptr)sh->v[ATTN_DIM] * 4;
    evo_status s = EVO_OK;
    for (int phase = 0; phase < AN_FP8_ORDERS && s == EVO_OK; phase++) {
        s = model(a, sh, codes, scales, phase, row0, rows, err);
        if (s == EVO_OK) s = slices(a, a->modelf + off, 1, ref + off, ns, se, 0, phase ? ph : m, err);
        for (size_t i = 0; s == EVO_OK && phase && i < ns; i++) {
            const double max_abs = fmax(m[i].max_abs, ph[i].max_abs);
            if (evo_slice_rel_l2(&ph[i]) > evo_slice_rel_l2(&m[i])) m[i] = ph[i];
            m[i].max_abs = max_abs;
        }
    }
    free(ph);
    return s;
}

/* The fp8 budget of case c: the model against the exact reference, per (batch, head). */
static evo_status fp8_budget(attn_gpu *a, const evo_gpu_case *gc, attn_case *c, evo_err *err)
{
    if (c->model) return EVO_OK;
    const evo_shape *sh = &gc->shape;
    const size_t ns = (size_t)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]), se = c->n / ns;
    evo_slice_acc *m = evo_xcalloc(ns, sizeof *m);
    double *rb = evo_xcalloc(ns, sizeof *rb), *ab = evo_xcalloc(ns, sizeof *ab);
    CUdeviceptr dev = 0;
    evo_status s = model_stats(a, sh, c->codes, c->scales, c->ref, ns, se, 0, (int)sh->v[ATTN_SEQ], m, err);
    if (s == EVO_OK) attn_fp8_bounds(m, ns, rb, ab);
    if (s == EVO_OK) s = evo_gpu_alloc(a->g, ns * sizeof *ab, &dev, err);
    if (s == EVO_OK) /* the stream is idle (slices synchronized it): a plain copy is ordered before what follows */
        s = evo_cu_check(evo_gpu_cu(a->g), evo_gpu_cu(a->g)->cuMemcpyHtoD(dev, ab, ns * sizeof *ab), "fp8 budget", err);
    if (s != EVO_OK) {
        free(m), free(rb), free(ab);
        return s;
    }
    c->model = m, c->rel_bound = rb, c->abs_bound = ab, c->abs_bound_dev = dev;
    return EVO_OK;
}

/* The fp8 class on out against ref, n_slices heads of slice_elems, with their model statistics and bounds. */
static evo_status fp8_judge(attn_gpu *a, CUdeviceptr out, CUdeviceptr ref, const evo_shape *sh, size_t n_slices,
                            size_t slice_elems, const evo_slice_acc *m, const double *rb, const double *ab,
                            CUdeviceptr ab_dev, evo_gpu_check *r, evo_err *err)
{
    evo_slice_acc *k = evo_xcalloc(n_slices, sizeof *k);
    evo_status s = slices(a, out, 0, ref, n_slices, slice_elems, ab_dev, k, err);
    if (s == EVO_OK) {
        evo_slice_metrics(k, n_slices, slice_elems, &r->m);
        attn_fp8_judge(k, m, rb, ab, n_slices, slice_elems, (int)sh->v[ATTN_DIM], r->why, sizeof r->why);
    }
    free(k);
    return s;
}

/* Why an output fails the exact class: not written, rel-L2, the element test; "" when it passes. */
static void judge(const evo_metrics *m, const evo_tolerance *tol, char *why, size_t n)
{
    why[0] = '\0';
    if (m->n_nonfinite > 0)
        snprintf(why, n, "%zu output elements not written or not finite (first at %lld)", m->n_nonfinite, m->first_bad);
    else if (m->rel_l2 > tol->rel_l2)
        snprintf(why, n, "rel-L2 %.3g > %.3g", m->rel_l2, tol->rel_l2);
    else if (m->frac_over > tol->max_frac_over)
        snprintf(why, n, "%zu elements over atol %.3g x rms + rtol %.3g x |ref| (first at %lld)", m->n_over, tol->atol,
                 tol->rtol, m->first_bad);
}

#define SAMPLE_HEADS 2   /* heads of a sampled output checked (each head is an attention of its own) */
#define SAMPLE_ROWS 4096 /* query rows of a sampled head judged against the reference (and the model) */

/* A timed repetition's output on the inputs perturb(seed) made: SAMPLE_HEADS heads drawn from the seed, each
 * against a reference of that head alone (the reference of a whole stress shape costs milliseconds), judged in the
 * variant's class (fp8: with the model of that head). A head longer than SAMPLE_ROWS is judged on a window of that
 * many query rows at an offset drawn from the seed (each row against all its keys; the FP8 model of a whole
 * 16384-row head took ~45 ms, four of them in every fp8-class timing of (1,16,16384,64)), and every element of the
 * head must still be written and finite. */
/* Every element of a head's output oh (hn elements) written and finite: the comparison counts the output's non-finite
 * elements whatever the reference it is given holds (tref, one head's worth). */
static evo_status head_written(attn_gpu *a, CUdeviceptr oh, size_t hn, evo_gpu_check *r, evo_err *err)
{
    evo_metrics all;
    evo_status s = evo_gpu_compare_f16(a->g, oh, a->tref, hn, 0, 0, &all, err);
    if (s == EVO_OK && all.n_nonfinite) {
        r->m.n_nonfinite = all.n_nonfinite;
        snprintf(r->why, sizeof r->why, "%llu output elements not written or not finite",
                 (unsigned long long)all.n_nonfinite);
    }
    return s;
}

/* Query rows [row0, row0 + rows) of one head (shape one, dequantized into scratchf; its codes and scales) against
 * their reference, in the variant's class: exact, the config's tolerance; fp8, twice the FP8 model's error there. */
static evo_status judge_rows(attn_gpu *a, const evo_variant *v, const evo_shape *one, const CUdeviceptr codes[3],
                             const CUdeviceptr scales[3], CUdeviceptr oh, int row0, int rows, evo_gpu_check *r,
                             evo_err *err)
{
    const evo_tolerance *tol = &a->cfg->correctness.tol;
    const size_t wn = (size_t)rows * (size_t)one->v[ATTN_DIM], off = (size_t)row0 * (size_t)one->v[ATTN_DIM];
    const CUdeviceptr ow = oh + off * 2, ref = a->tref + off * 4;
    evo_status s = reference_rows(a, one, a->scratchf[0], a->scratchf[1], a->scratchf[2], a->tref, row0, rows, err);
    if (s != EVO_OK) return s;
    if (v->accuracy == ATTN_ACC_FP8) {
        evo_slice_acc m;
        double rb, ab;
        if ((s = model_stats(a, one, codes, scales, a->tref, 1, wn, row0, rows, &m, err)) != EVO_OK) return s;
        attn_fp8_bounds(&m, 1, &rb, &ab);
        CU(cuMemcpyHtoD(a->bound1, &ab, sizeof ab), err); /* the stream is idle: slices synchronized it */
        return fp8_judge(a, ow, ref, one, 1, wn, &m, &rb, &ab, a->bound1, r, err);
    }
    double rms = 0;
    s = ref_rms(a, ref, wn, &rms, err);
    if (s == EVO_OK) s = evo_gpu_compare_f16(a->g, ow, ref, wn, tol->atol * rms, tol->rtol, &r->m, err);
    if (s == EVO_OK) judge(&r->m, tol, r->why, sizeof r->why);
    return s;
}

static evo_status attn_check_fresh(void *state, const evo_gpu_case *gc, const evo_variant *v, uint64_t seed,
                                   CUdeviceptr out, evo_gpu_check *r, evo_err *err)
{
    attn_gpu *a = state;
    attn_case *c = gc->data;
    const evo_shape *sh = &gc->shape;
    const int bh_count = (int)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]), seq = (int)sh->v[ATTN_SEQ];
    const int rows = seq > SAMPLE_ROWS ? SAMPLE_ROWS : seq;
    const size_t hn = (size_t)seq * sh->v[ATTN_DIM];
    evo_shape one = *sh;
    one.v[ATTN_BATCH] = one.v[ATTN_HEADS] = 1;
    evo_status s = attn_perturb(state, gc, seed, err);
    for (int j = 0; s == EVO_OK && j < (bh_count < SAMPLE_HEADS ? bh_count : SAMPLE_HEADS) && !r->why[0]; j++) {
        const int bh =
            (int)((mix64(seed ^ (uint64_t)j ^ 0x5eadull) % (uint64_t)bh_count + (uint64_t)j) % (uint64_t)bh_count);
        const CUdeviceptr codes[3] = {a->tcodes[0] + (CUdeviceptr)bh * hn, a->tcodes[1] + (CUdeviceptr)bh * hn,
                                      a->tcodes[2] + (CUdeviceptr)bh * hn};
        const CUdeviceptr scales[3] = {c->scales[0] + (CUdeviceptr)bh * 4, c->scales[1] + (CUdeviceptr)bh * 4,
                                       c->scales[2] + (CUdeviceptr)bh * 4};
        const CUdeviceptr oh = out + (CUdeviceptr)bh * hn * 2;
        const int row0 = rows < seq ? (int)(mix64(seed ^ (uint64_t)j ^ 0x70a5ull) % (uint64_t)(seq - rows + 1)) : 0;
        s = dequantize3(a, codes, scales, hn, hn, err);
        if (s == EVO_OK && rows < seq) s = head_written(a, oh, hn, r, err);
        const bool whole = r->why[0] != 0; /* the head's verdict, not the window's */
        if (s == EVO_OK && !whole) s = judge_rows(a, v, &one, codes, scales, oh, row0, rows, r, err);
        if (s == EVO_OK && r->why[0]) {
            const size_t l = strlen(r->why);
            if (rows < seq && !whole)
                snprintf(r->why + l, sizeof r->why - l,
                         " (head %d of a timed repetition's fresh inputs, its query rows %d..%d, counted from %d)", bh,
                         row0, row0 + rows - 1, row0);
            else
                snprintf(r->why + l, sizeof r->why - l, " (head %d of a timed repetition's fresh inputs)", bh);
        }
    }
    return s;
}

/* Every element written and finite, then the verdict of the variant's accuracy class: exact, the config's
 * tolerance on the whole tensor (and each head's rel-L2 on its own on a probe); fp8, each head against twice the
 * FP8 model's error on it (attn_gate.h). */
static evo_status attn_check(void *state, const evo_gpu_case *gc, const evo_variant *v, CUdeviceptr out,
                             evo_gpu_check *r, evo_err *err)
{
    attn_gpu *a = state;
    attn_case *c = gc->data;
    const evo_shape *sh = &gc->shape;
    const evo_tolerance *tol = &a->cfg->correctness.tol;
    const size_t ns = (size_t)(sh->v[ATTN_BATCH] * sh->v[ATTN_HEADS]), se = c->n / ns;
    evo_status s = EVO_OK;
    if (v->accuracy == ATTN_ACC_FP8 && evo_attn_format(a->cfg) != EVO_FORMAT_E4M3) {
        snprintf(r->why, sizeof r->why, "accuracy class fp8 is defined on e4m3 inputs; the config's format is %s",
                 evo_attn_format_name(evo_attn_format(a->cfg)));
        return EVO_OK;
    }
    if (v->accuracy == ATTN_ACC_FP8 && fp8_saturated(gc)) {
        evo_slice_acc *k = evo_xcalloc(ns, sizeof *k);
        s = slices(a, out, 0, c->ref, ns, se, 0, k, err);
        if (s == EVO_OK) {
            evo_slice_metrics(k, ns, se, &r->m);
            attn_fp8_judge_saturated(k, ns, r->why, sizeof r->why);
        }
        free(k);
    } else if (v->accuracy == ATTN_ACC_FP8) {
        if ((s = fp8_budget(a, gc, c, err)) != EVO_OK) return s;
        s = fp8_judge(a, out, c->ref, sh, ns, se, c->model, c->rel_bound, c->abs_bound, c->abs_bound_dev, r, err);
    } else {
        s = evo_gpu_compare_f16(a->g, out, c->ref, c->n, tol->atol * c->ref_rms, tol->rtol, &r->m, err);
        if (s == EVO_OK) judge(&r->m, tol, r->why, sizeof r->why);
        if (s == EVO_OK && !r->why[0] && gc->probe >= 0) {
            evo_slice_acc *k = evo_xcalloc(ns, sizeof *k);
            s = slices(a, out, 0, c->ref, ns, se, 0, k, err);
            if (s == EVO_OK) attn_exact_slices_judge(k, ns, tol->rel_l2, r->why, sizeof r->why);
            free(k);
        }
    }
    if (s == EVO_OK && c->ref16) s = evo_gpu_compare_f16(a->g, out, c->ref16, c->n, 0, 0, &r->e2e, err);
    return s;
}

const evo_task_gpu evo_attn_gpu = {
    .open = attn_open,
    .output_bytes = attn_output_bytes,
    .prepare = attn_prepare,
    .geometry = attn_geometry,
    .begin = attn_begin,
    .launch = attn_launch,
    .geometry_of = attn_geometry_of,
    .check = attn_check,
    .perturb = attn_perturb,
    .check_fresh = attn_check_fresh,
};
