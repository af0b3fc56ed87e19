/* support.cu — the GPU kernels around every attention candidate: input generator, quantizer, dequantizer, FP32
 * reference attention, output comparison and canary check. Compiled by NVRTC at run time, needs no header.
 * The generator, quantizer and dequantizer match engine/core/numerics.c and tasks/attention_fp8/attn_ref.c bit for bit: the same integer code, and
 * floating-point steps written with __f*_rn / __d*_rn intrinsics, which are never fused into FMAs. Compile
 * WITHOUT --use_fast_math, -ftz=true, -prec-div=false or -prec-sqrt=false (expf must stay the accurate one).
 *
 * Layout: tensors [B, H, S, D] contiguous; a "head" is S*D elements; heads are numbered b*H + h; fp16 values are
 * unsigned short bits. dist: 0 normal, 1 uniform, 2 outliers, 3 zero_head, 4 large (evo_dist in config.h).
 * format: 0 e4m3, 1 u8sim (evo_attention_abi.h). "Any grid" below means a grid-stride loop: every
 * (grid, block) covers all n elements; 256 threads and min(ceil(n/256), 65535) blocks is a good choice.
 *
 * evo_gen_inputs(unsigned short *out, unsigned long long n, unsigned long long head_elems,
 *                unsigned long long seed, unsigned int tensor_id, int dist)
 *     out[i] = evo_ref_gen_value(seed, tensor_id, dist, head_elems, i) for i < n.        any grid, any block
 * evo_quantize(const unsigned short *x, unsigned char *codes, float *scales, unsigned long long head_elems,
 *              int format)
 *     one block per head: grid.x = B*H, block = 256 (any multiple of 32 up to 1024). scales[head] =
 *     absmax/448 (1 for an all-zero head), codes = the 8-bit codes, as evo_ref_quantize.
 * evo_dequantize(const unsigned char *codes, const float *scales, float *out, unsigned long long n,
 *                unsigned long long head_elems, int format)
 *     out = decode(codes) * scale per element, as evo_ref_dequantize.                     any grid, any block
 * evo_half_to_float(const unsigned short *x, float *out, unsigned long long n)           any grid, any block
 * evo_reference_attention(const float *q, const float *k, const float *v, float *o, int batch, int heads,
 *                         int seq, int head_dim, int causal, float softmax_scale)
 *     plain FP32 attention, o float [B, H, S, D]; one warp per query row: block = 256 threads (exactly),
 *     grid = (ceil(seq / 8), heads, batch). 1 <= head_dim <= 128 (rows get NaN otherwise), any seq >= 1.
 * evo_compare_reset(evo_compare_acc *acc)                                              grid 1, block 1
 * evo_compare(const unsigned short *out, const float *ref, unsigned long long n, double atol, double rtol,
 *             evo_compare_acc *acc)
 *     fp16 candidate vs float reference, accumulated into *acc (reset it first); element i is bad when
 *     either side is not finite or !(|out-ref| <= atol + rtol*|ref|).   any grid, block = 256 (any multiple of 32)
 * evo_compare_slices_reset(evo_slice_acc *acc, u64 n_slices)                        any grid, any block
 * evo_compare_slices(const void *out, int out_f32, const float *ref, u64 slice_elems, const double *bound,
 *                    evo_slice_acc *acc)
 *     per slice of slice_elems consecutive elements (numerics.h's evo_ref_compare_slices): out fp16 (out_f32 0)
 *     or float (1) vs float ref, into acc[slice] (reset it first); with bound (may be NULL) an element is bad when
 *     !(|out - ref| <= bound[slice]), and always when not finite. grid = (any, slices), block = 256.
 * evo_perturb_codes(const unsigned char *q, const unsigned char *k, const unsigned char *v, unsigned char *q2,
 *                   unsigned char *k2, unsigned char *v2, unsigned long long n, unsigned long long seed, int format)
 *     fresh inputs for one timed repetition: each code with bits flipped by a hash of (seed, tensor, index) —
 *     e4m3: sign and the 3 mantissa bits (the exponent stays, so the per-head scale still holds; a NaN code
 *     0x7F/0xFF that would result is turned into 0x7E/0xFE), u8sim: the low 4 bits.         any grid, any block
 * evo_canary_check(const unsigned int *guard, unsigned long long n_words, unsigned int pattern,
 *                  unsigned long long *result)
 *     result[0] += number of words != pattern; result[1] = min(result[1], first such index). Set result to
 *     {0, ~0ull} first.                                                                     any grid, any block
 */

#define EVO_REF_WARPS 8
#define EVO_REF_MAX_D 128

#include "evo_numerics.cuh"

/* ---- generator (evo_numerics.cuh: gen_value) ---- */

extern "C" __global__ void evo_gen_inputs(unsigned short *out, u64 n, u64 head_elems, u64 seed,
                                          unsigned int tensor_id, int dist)
{
    GRID_STRIDE(i, n) out[i] = gen_value(seed, tensor_id, dist, head_elems, i);
}

/* ---- perturbed timing inputs ---- */

__device__ __forceinline__ unsigned char perturb_code(unsigned c, u64 h, int format)
{
    if (format == 0) {
        c ^= (unsigned)(h & 0x87u);
        if ((c & 0x7Fu) == 0x7Fu) c ^= 1u;
    } else {
        c ^= (unsigned)(h & 0x0Fu);
    }
    return (unsigned char)c;
}

extern "C" __global__ void evo_perturb_codes(const unsigned char *q, const unsigned char *k, const unsigned char *v,
                                             unsigned char *q2, unsigned char *k2, unsigned char *v2, u64 n, u64 seed,
                                             int format)
{
    GRID_STRIDE(i, n)
    {
        q2[i] = perturb_code(q[i], gen_mix(seed ^ (3 * i)), format);
        k2[i] = perturb_code(k[i], gen_mix(seed ^ (3 * i + 1)), format);
        v2[i] = perturb_code(v[i], gen_mix(seed ^ (3 * i + 2)), format);
    }
}

/* ---- quantizer ---- */

extern "C" __global__ void evo_quantize(const unsigned short *x, unsigned char *codes, float *scales, u64 head_elems,
                                        int format)
{
    __shared__ float warp_max[32];
    u64 head = blockIdx.x;
    const unsigned short *xh = x + head * head_elems;
    unsigned char *ch = codes + head * head_elems;

    float m = 0.0f;
    for (u64 i = threadIdx.x; i < head_elems; i += blockDim.x) m = fmaxf(m, fabsf(half_to_float(xh[i])));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        m = threadIdx.x < (blockDim.x >> 5) ? warp_max[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (threadIdx.x == 0) warp_max[0] = m;
    }
    __syncthreads();
    float absmax = warp_max[0];
    float scale = absmax == 0.0f ? 1.0f : __fdiv_rn(absmax, 448.0f);
    if (threadIdx.x == 0) scales[head] = scale;

    for (u64 i = threadIdx.x; i < head_elems; i += blockDim.x) {
        float v = half_to_float(xh[i]);
        ch[i] = format == 0 ? e4m3_encode(__fdiv_rn(v, scale)) : u8sim_encode(v, scale);
    }
}

extern "C" __global__ void evo_dequantize(const unsigned char *codes, const float *scales, float *out, u64 n,
                                          u64 head_elems, int format)
{
    GRID_STRIDE(i, n)
    {
        float scale = scales[i / head_elems];
        out[i] = format == 0 ? __fmul_rn(e4m3_decode(codes[i]), scale) : u8sim_decode(codes[i], scale);
    }
}

extern "C" __global__ void evo_half_to_float(const unsigned short *x, float *out, u64 n)
{
    GRID_STRIDE(i, n) out[i] = half_to_float(x[i]);
}

/* ---- reference attention ---- */

/* O = Σ exp(x − max x)·v / Σ exp(x − max x), x = score·softmax_scale, in FP32 (the exact reference of both accuracy
 * classes; the fp8 class's budget comes from the FP8 model of attn_support.cu). One warp per query row, EVO_REF_WARPS consecutive rows per block. The block stages 32 keys at a time in shared
 * memory (K rows padded by one float so that lane j reading row j is conflict-free), so K and V are read from
 * memory once per block instead of once per row. Pass 1 finds the row max, pass 2 takes the 32 staged keys, each
 * lane computing one exponential, and broadcasts them so that every lane accumulates its own output columns. */
extern "C" __global__ void __launch_bounds__(EVO_REF_WARPS * 32)
evo_reference_attention(const float *q, const float *k, const float *v, float *o, int batch, int heads, int seq,
                        int head_dim, int causal, float softmax_scale)
{
    __shared__ float k_tile[32][EVO_REF_MAX_D + 1];
    __shared__ float v_tile[32][EVO_REF_MAX_D];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int i0 = blockIdx.x * EVO_REF_WARPS, i = i0 + warp;
    int h = blockIdx.y, b = blockIdx.z;
    if (i0 >= seq || h >= heads || b >= batch) return; /* whole block: no barrier is skipped by some warps only */
    const bool active = i < seq;
    u64 base = ((u64)b * heads + h) * (u64)seq * (u64)head_dim;
    float *o_row = o + base + (u64)i * head_dim;
    if (head_dim < 1 || head_dim > EVO_REF_MAX_D) {
        if (active)
            for (int t = lane; t < head_dim; t += 32) o_row[t] = __uint_as_float(0x7fc00000u);
        return;
    }
    const float *kh = k + base, *vh = v + base;
    /* q in registers (every lane holds the whole row): one shared-memory load per multiply-add, not two */
    float q_reg[EVO_REF_MAX_D];
#pragma unroll
    for (int t = 0; t < EVO_REF_MAX_D; t++) q_reg[t] = active && t < head_dim ? q[base + (u64)i * head_dim + t] : 0.0f;

    const int n_keys = active ? (causal ? i + 1 : seq) : 0;
    const int last = min(seq, causal ? i0 + EVO_REF_WARPS : seq); /* keys any row of the block needs */
    const int n_threads = EVO_REF_WARPS * 32;

    float mx = -__int_as_float(0x7f800000);
    for (int c0 = 0; c0 < last; c0 += 32) {
        __syncthreads();
        for (int x = threadIdx.x; x < 32 * head_dim; x += n_threads) {
            int r = x / head_dim, t = x % head_dim;
            k_tile[r][t] = c0 + r < seq ? kh[(u64)(c0 + r) * head_dim + t] : 0.0f;
        }
        __syncthreads();
        int j = c0 + lane;
        if (j < n_keys) {
            float s = 0.0f;
#pragma unroll
            for (int t = 0; t < EVO_REF_MAX_D; t++)
                if (t < head_dim) s = fmaf(q_reg[t], k_tile[lane][t], s);
            mx = fmaxf(mx, __fmul_rn(s, softmax_scale));
        }
    }
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));

    float acc[EVO_REF_MAX_D / 32];
#pragma unroll
    for (int t = 0; t < EVO_REF_MAX_D / 32; t++) acc[t] = 0.0f;
    float l = 0.0f;
    for (int c0 = 0; c0 < last; c0 += 32) {
        __syncthreads();
        for (int x = threadIdx.x; x < 32 * head_dim; x += n_threads) {
            int r = x / head_dim, t = x % head_dim;
            bool in = c0 + r < seq;
            k_tile[r][t] = in ? kh[(u64)(c0 + r) * head_dim + t] : 0.0f;
            v_tile[r][t] = in ? vh[(u64)(c0 + r) * head_dim + t] : 0.0f;
        }
        __syncthreads();
        int j = c0 + lane;
        float p = 0.0f;
        if (j < n_keys) {
            /* the same arithmetic as pass 1, so the largest score gives exp(0) = 1 exactly */
            float s = 0.0f;
#pragma unroll
            for (int t = 0; t < EVO_REF_MAX_D; t++)
                if (t < head_dim) s = fmaf(q_reg[t], k_tile[lane][t], s);
            p = expf(__fmul_rn(s, softmax_scale) - mx);
        }
        l += p;
        int count = min(32, n_keys - c0);
        for (int jj = 0; jj < count; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
            for (int t = 0; t < EVO_REF_MAX_D / 32; t++) {
                int d = lane + 32 * t;
                if (d < head_dim) acc[t] = fmaf(pj, v_tile[jj][d], acc[t]);
            }
        }
    }
    for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    if (!active) return;
#pragma unroll
    for (int t = 0; t < EVO_REF_MAX_D / 32; t++) {
        int d = lane + 32 * t;
        if (d < head_dim) o_row[d] = acc[t] / l;
    }
}

/* ---- comparison and guards ---- */

__device__ __forceinline__ bool is_finite_f(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }

extern "C" __global__ void evo_compare_reset(evo_compare_acc *acc)
{
    acc->max_abs = 0.0;
    acc->sum_sq_diff = 0.0;
    acc->sum_sq_ref = 0.0;
    acc->n_finite = 0;
    acc->n_over = 0;
    acc->n_nonfinite = 0;
    acc->first_bad = ~0ull;
    acc->reserved = 0;
}

extern "C" __global__ void evo_compare(const unsigned short *out, const float *ref, u64 n, double atol, double rtol,
                                       evo_compare_acc *acc)
{
    __shared__ double s_max[32], s_ssd[32], s_ssr[32];
    __shared__ u64 s_fin[32], s_over[32], s_nonf[32], s_first[32];
    double mx = 0.0, ssd = 0.0, ssr = 0.0;
    u64 fin = 0, over = 0, nonf = 0, first = ~0ull;
    GRID_STRIDE(i, n)
    {
        float of = half_to_float(out[i]), rf = ref[i];
        bool finite = is_finite_f(of) && is_finite_f(rf);
        if (!is_finite_f(of)) nonf++;
        double r = (double)rf;
        double diff = fabs(__dsub_rn((double)of, r));
        bool bad = !finite || !(diff <= __dadd_rn(atol, __dmul_rn(rtol, fabs(r))));
        if (bad) {
            over++;
            if (first == ~0ull) first = i; /* a thread's indices only grow */
        }
        if (finite) {
            fin++;
            mx = fmax(mx, diff);
            ssd += diff * diff;
            ssr += r * r;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        ssd += __shfl_xor_sync(0xffffffffu, ssd, off);
        ssr += __shfl_xor_sync(0xffffffffu, ssr, off);
        fin += __shfl_xor_sync(0xffffffffu, fin, off);
        over += __shfl_xor_sync(0xffffffffu, over, off);
        nonf += __shfl_xor_sync(0xffffffffu, nonf, off);
        u64 f = __shfl_xor_sync(0xffffffffu, first, off);
        first = f < first ? f : first;
    }
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        s_max[warp] = mx;
        s_ssd[warp] = ssd;
        s_ssr[warp] = ssr;
        s_fin[warp] = fin;
        s_over[warp] = over;
        s_nonf[warp] = nonf;
        s_first[warp] = first;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            mx = fmax(mx, s_max[w]);
            ssd += s_ssd[w];
            ssr += s_ssr[w];
            fin += s_fin[w];
            over += s_over[w];
            nonf += s_nonf[w];
            first = s_first[w] < first ? s_first[w] : first;
        }
        /* Non-negative doubles order like their bit patterns, so an integer max is a double max. */
        atomicMax((u64 *)&acc->max_abs, (u64)__double_as_longlong(mx));
        atomicAdd(&acc->sum_sq_diff, ssd);
        atomicAdd(&acc->sum_sq_ref, ssr);
        atomicAdd(&acc->n_finite, fin);
        atomicAdd(&acc->n_over, over);
        atomicAdd(&acc->n_nonfinite, nonf);
        atomicMin(&acc->first_bad, first);
    }
}

extern "C" __global__ void evo_compare_slices_reset(evo_slice_acc *acc, u64 n_slices)
{
    GRID_STRIDE(i, n_slices)
    {
        acc[i].sum_sq_diff = acc[i].sum_sq_ref = acc[i].max_abs = acc[i].max_ref = 0.0;
        acc[i].n_over = acc[i].n_nonfinite = acc[i].reserved = 0;
        acc[i].first_bad = ~0ull;
    }
}

extern "C" __global__ void __launch_bounds__(256) evo_compare_slices(const void *out, int out_f32, const float *ref,
                                                                     u64 slice_elems, const double *bound,
                                                                     evo_slice_acc *acc)
{
    __shared__ double s_d[4][8];
    __shared__ u64 s_u[3][8];
    const u64 slice = blockIdx.y, base = slice * slice_elems;
    const double lim = bound ? bound[slice] : 0.0;
    double ssd = 0.0, ssr = 0.0, mx = 0.0, mr = 0.0;
    u64 over = 0, nonf = 0, first = ~0ull;
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < slice_elems; j += (u64)gridDim.x * blockDim.x) {
        const u64 i = base + j;
        const float of = out_f32 ? ((const float *)out)[i] : half_to_float(((const unsigned short *)out)[i]);
        const float rf = ref[i];
        const bool fo = is_finite_f(of), finite = fo && is_finite_f(rf);
        if (!fo) nonf++;
        const double diff = fabs(__dsub_rn((double)of, (double)rf));
        if (!finite || (bound && !(diff <= lim))) {
            over++;
            if (first == ~0ull) first = i;
        }
        if (finite) {
            ssd += diff * diff;
            ssr += (double)rf * (double)rf;
            mx = fmax(mx, diff);
            mr = fmax(mr, fabs((double)rf));
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        ssd += __shfl_xor_sync(0xffffffffu, ssd, off);
        ssr += __shfl_xor_sync(0xffffffffu, ssr, off);
        mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        mr = fmax(mr, __shfl_xor_sync(0xffffffffu, mr, off));
        over += __shfl_xor_sync(0xffffffffu, over, off);
        nonf += __shfl_xor_sync(0xffffffffu, nonf, off);
        const u64 f = __shfl_xor_sync(0xffffffffu, first, off);
        first = f < first ? f : first;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        s_d[0][warp] = ssd, s_d[1][warp] = ssr, s_d[2][warp] = mx, s_d[3][warp] = mr;
        s_u[0][warp] = over, s_u[1][warp] = nonf, s_u[2][warp] = first;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) {
            ssd += s_d[0][w], ssr += s_d[1][w], mx = fmax(mx, s_d[2][w]), mr = fmax(mr, s_d[3][w]);
            over += s_u[0][w], nonf += s_u[1][w], first = s_u[2][w] < first ? s_u[2][w] : first;
        }
        evo_slice_acc *a = &acc[slice];
        atomicAdd(&a->sum_sq_diff, ssd);
        atomicAdd(&a->sum_sq_ref, ssr);
        atomicMax((u64 *)&a->max_abs, (u64)__double_as_longlong(mx));
        atomicMax((u64 *)&a->max_ref, (u64)__double_as_longlong(mr));
        atomicAdd(&a->n_over, over);
        atomicAdd(&a->n_nonfinite, nonf);
        atomicMin(&a->first_bad, first);
    }
}

extern "C" __global__ void evo_canary_check(const unsigned int *guard, u64 n_words, unsigned int pattern,
                                            u64 *result)
{
    GRID_STRIDE(i, n_words)
    {
        if (guard[i] != pattern) {
            atomicAdd(&result[0], 1ull);
            atomicMin(&result[1], i);
        }
    }
}
