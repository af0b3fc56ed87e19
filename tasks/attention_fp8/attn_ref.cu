/* attn_ref.cu — attention's GPU reference kernels, the GPU twin of attn_ref.c: quantizer, dequantizer, FP32
 * reference attention and the perturbed codes of timed repetitions. Compiled by NVRTC at run time (the task's GPU
 * side loads it, tasks/attention_fp8/gpu.c); needs evo_numerics.cuh only. The quantizer and dequantizer match
 * attn_ref.c bit for bit: floating-point steps written with __f*_rn intrinsics, which are never fused into FMAs.
 * Compile WITHOUT --use_fast_math, -ftz=true, -prec-div=false or -prec-sqrt=false (expf must stay the accurate one).
 *
 * Layout: tensors [B, H, S, D] contiguous; a "head" is S*D elements; heads are numbered b*H + h; fp16 values are
 * unsigned short bits. format: 0 e4m3, 1 u8sim (evo_attention_abi.h). "Any grid": a grid-stride loop.
 *
 * evo_quantize(const unsigned short *x, unsigned char *codes, float *scales, unsigned long long head_elems,
 *              int format)
 *     one block per head: grid.x = B*H, block = 256 (any multiple of 32 up to 1024). scales[head] =
 *     absmax/448 (1 for an all-zero head), codes = the 8-bit codes, as evo_ref_quantize.
 * evo_dequantize(const unsigned char *codes, const float *scales, float *out, unsigned long long n,
 *                unsigned long long head_elems, int format)
 *     out = decode(codes) * scale per element, as evo_ref_dequantize.                     any grid, any block
 * evo_reference_attention(const float *q, const float *k, const float *v, float *o, int batch, int heads,
 *                         int seq, int head_dim, int causal, float softmax_scale)
 *     plain FP32 attention, o float [B, H, S, D]; one warp per query row: block = 256 threads (exactly),
 *     grid = (ceil(seq / 8), heads, batch). 1 <= head_dim <= 128 (rows get NaN otherwise), any seq >= 1.
 * evo_perturb_codes(const unsigned char *q, const unsigned char *k, const unsigned char *v, unsigned char *q2,
 *                   unsigned char *k2, unsigned char *v2, unsigned long long n, unsigned long long seed, int format)
 *     fresh inputs for one timed repetition: each code with bits flipped by a hash of (seed, tensor, index) —
 *     e4m3: sign and the 3 mantissa bits (the exponent stays, so the per-head scale still holds; a NaN code
 *     0x7F/0xFF that would result is turned into 0x7E/0xFE), u8sim: the low 4 bits.         any grid, any block
 */

#define EVO_REF_WARPS 8
#define EVO_REF_MAX_D 128

#include "evo_numerics.cuh"

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
