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
 *                         int seq, int head_dim, int causal, float softmax_scale, int row0)
 *     plain FP32 attention, o float [B, H, S, D]; four query rows per warp: block = 128 threads (exactly),
 *     grid = (ceil((seq - row0) / 16), heads, batch): the query rows from row0 on (0: every row; a sampled check
 *     takes a window of a long head), each row's bits the same whatever row0. 1 <= head_dim <= 128 (rows get NaN
 *     otherwise), any seq >= 1.
 * evo_reference_attention_rowwise(same arguments)
 *     the same bits, one warp per query row: block = 256 threads (exactly), grid = (ceil(seq / 8), heads, batch);
 *     the first form, kept as the other's yardstick (tests/gpu_support.c)
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

/* The first form of the reference, one warp per query row, kept as the yardstick of evo_reference_attention
 * (below): tests/gpu_support.c asserts the two agree bit for bit. O = Σ exp(x − max x)·v / Σ exp(x − max x),
 * x = score·softmax_scale, in FP32. EVO_REF_WARPS consecutive rows per block; grid (ceil(seq / 8), heads, batch),
 * block 256. The block stages 32 keys at a time in shared memory (K rows padded by one float so that lane j reading
 * row j is conflict-free). Pass 1 finds the row max, pass 2 takes the 32 staged keys, each lane computing one
 * exponential, and broadcasts them so that every lane accumulates its own output columns. */
extern "C" __global__ void __launch_bounds__(EVO_REF_WARPS * 32)
evo_reference_attention_rowwise(const float *q, const float *k, const float *v, float *o, int batch, int heads, int seq,
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

/* O = Σ exp(x − max x)·v / Σ exp(x − max x), x = score·softmax_scale, in FP32: the exact reference of both accuracy
 * classes (the fp8 class's budget comes from the FP8 model of attn_support.cu). Every output element is computed
 * with the operations of evo_reference_attention_rowwise in the same order — each score a chain of fmaf over the
 * head dimension in index order, its exponential, the row sum added per lane over the key tiles and then reduced
 * by the same butterfly, each output column's fmaf chain over the keys in key order — so the two agree bit for bit;
 * only the work is shared differently. EVO_REF_RPW rows per warp, EVO_REF_FWARPS warps per block (ATTN_REF_ROWS
 * rows), 32 keys staged at a time: a lane owns one key's score for each of its warp's rows, reading its K row with
 * 16-byte loads (rows padded to 132 floats: conflict-free) and each row's Q from shared memory by broadcast, so
 * one K load serves EVO_REF_RPW rows; for P·V a lane owns 4 consecutive output columns, reading each staged V row
 * with one 16-byte load and the rows' P values from shared memory, 4 keys at a time. Shared memory holds zeros past
 * head_dim, so the 16-byte loads read nothing undefined; an operation past head_dim or past a row's keys is never
 * done (not even with a zero), so no sign of zero can differ from the row-wise form. */
#define EVO_REF_RPW 4
#define EVO_REF_FWARPS 4
#define EVO_REF_KS 132 /* K row stride in floats */

/* s[r] = the score of row r0 + r against the staged key k_row; QUADS: head_dim is a multiple of 4 (64, 128: no
 * guard inside a quad) */
template <bool QUADS>
__device__ __forceinline__ void ref_scores_of(const float (*q_s)[EVO_REF_MAX_D], const float *k_row, int r0,
                                              int head_dim, float (&s)[EVO_REF_RPW])
{
#pragma unroll
    for (int r = 0; r < EVO_REF_RPW; r++) s[r] = 0.0f;
#pragma unroll
    for (int t = 0; t < EVO_REF_MAX_D; t += 4) {
        if (t < head_dim) {
            const float4 kv = *reinterpret_cast<const float4 *>(k_row + t);
#pragma unroll
            for (int r = 0; r < EVO_REF_RPW; r++) {
                const float4 qv = *reinterpret_cast<const float4 *>(&q_s[r0 + r][t]);
                s[r] = fmaf(qv.x, kv.x, s[r]);
                if (QUADS || t + 1 < head_dim) s[r] = fmaf(qv.y, kv.y, s[r]);
                if (QUADS || t + 2 < head_dim) s[r] = fmaf(qv.z, kv.z, s[r]);
                if (QUADS || t + 3 < head_dim) s[r] = fmaf(qv.w, kv.w, s[r]);
            }
        }
    }
}
__device__ __forceinline__ void ref_scores(const float (*q_s)[EVO_REF_MAX_D], const float *k_row, int r0,
                                           int head_dim, float (&s)[EVO_REF_RPW])
{
    if ((head_dim & 3) == 0) ref_scores_of<true>(q_s, k_row, r0, head_dim, s);
    else ref_scores_of<false>(q_s, k_row, r0, head_dim, s);
}

extern "C" __global__ void __launch_bounds__(EVO_REF_FWARPS * 32)
evo_reference_attention(const float *q, const float *k, const float *v, float *o, int batch, int heads, int seq,
                        int head_dim, int causal, float softmax_scale, int row0)
{
    constexpr int ROWS = EVO_REF_FWARPS * EVO_REF_RPW, NT = EVO_REF_FWARPS * 32;
    __shared__ __align__(16) float q_s[ROWS][EVO_REF_MAX_D];
    __shared__ __align__(16) float k_tile[32][EVO_REF_KS];
    __shared__ __align__(16) float v_tile[32][EVO_REF_MAX_D];
    __shared__ __align__(16) float p_s[EVO_REF_FWARPS][EVO_REF_RPW][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int i0 = row0 + blockIdx.x * ROWS, r0 = warp * EVO_REF_RPW;
    const int h = blockIdx.y, b = blockIdx.z;
    if (row0 < 0 || i0 >= seq || h >= heads || b >= batch) return; /* whole block: no barrier is skipped by some
                                                                      warps only */
    const u64 base = ((u64)b * heads + h) * (u64)seq * (u64)head_dim;
    if (head_dim < 1 || head_dim > EVO_REF_MAX_D) {
        for (int x = threadIdx.x; x < ROWS * head_dim; x += NT) {
            const int i = i0 + x / head_dim;
            if (i < seq) o[base + (u64)i * head_dim + x % head_dim] = __uint_as_float(0x7fc00000u);
        }
        return;
    }
    const float *kh = k + base, *vh = v + base;
    for (int x = threadIdx.x; x < ROWS * EVO_REF_MAX_D; x += NT) { /* Q rows, zeros past head_dim and seq */
        const int r = x / EVO_REF_MAX_D, t = x % EVO_REF_MAX_D;
        q_s[r][t] = i0 + r < seq && t < head_dim ? q[base + (u64)(i0 + r) * head_dim + t] : 0.0f;
    }
    int n_keys[EVO_REF_RPW];
#pragma unroll
    for (int r = 0; r < EVO_REF_RPW; r++) {
        const int i = i0 + r0 + r;
        n_keys[r] = i < seq ? (causal ? i + 1 : seq) : 0;
    }
    const int last = min(seq, causal ? i0 + ROWS : seq); /* keys any row of the block needs */

    float mx[EVO_REF_RPW];
#pragma unroll
    for (int r = 0; r < EVO_REF_RPW; r++) mx[r] = -__int_as_float(0x7f800000);
    for (int c0 = 0; c0 < last; c0 += 32) {
        __syncthreads();
        for (int x = threadIdx.x; x < 32 * EVO_REF_MAX_D; x += NT) {
            const int r = x / EVO_REF_MAX_D, t = x % EVO_REF_MAX_D;
            k_tile[r][t] = c0 + r < seq && t < head_dim ? kh[(u64)(c0 + r) * head_dim + t] : 0.0f;
        }
        __syncthreads();
        const int j = c0 + lane;
        float s[EVO_REF_RPW];
        ref_scores(q_s, k_tile[lane], r0, head_dim, s);
#pragma unroll
        for (int r = 0; r < EVO_REF_RPW; r++)
            if (j < n_keys[r]) mx[r] = fmaxf(mx[r], __fmul_rn(s[r], softmax_scale));
    }
#pragma unroll
    for (int r = 0; r < EVO_REF_RPW; r++)
        for (int off = 16; off > 0; off >>= 1) mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], off));

    float acc[EVO_REF_RPW][4], l[EVO_REF_RPW];
#pragma unroll
    for (int r = 0; r < EVO_REF_RPW; r++) {
        l[r] = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) acc[r][e] = 0.0f;
    }
    for (int c0 = 0; c0 < last; c0 += 32) {
        __syncthreads();
        for (int x = threadIdx.x; x < 32 * EVO_REF_MAX_D; x += NT) {
            const int r = x / EVO_REF_MAX_D, t = x % EVO_REF_MAX_D;
            const bool in = c0 + r < seq && t < head_dim;
            k_tile[r][t] = in ? kh[(u64)(c0 + r) * head_dim + t] : 0.0f;
            v_tile[r][t] = in ? vh[(u64)(c0 + r) * head_dim + t] : 0.0f;
        }
        __syncthreads();
        const int j = c0 + lane;
        float s[EVO_REF_RPW];
        ref_scores(q_s, k_tile[lane], r0, head_dim, s); /* the same arithmetic as pass 1: the largest gives 1 */
        int count[EVO_REF_RPW], most = 0;
#pragma unroll
        for (int r = 0; r < EVO_REF_RPW; r++) {
            const float p = j < n_keys[r] ? expf(__fmul_rn(s[r], softmax_scale) - mx[r]) : 0.0f;
            l[r] += p;
            p_s[warp][r][lane] = p;
            count[r] = max(0, min(32, n_keys[r] - c0));
            most = max(most, count[r]);
        }
        __syncwarp();
        const float4 *vrow = reinterpret_cast<const float4 *>(&v_tile[0][4 * lane]);
        for (int jj = 0; jj < most; jj += 4) {
            float4 pr[EVO_REF_RPW];
#pragma unroll
            for (int r = 0; r < EVO_REF_RPW; r++) pr[r] = *reinterpret_cast<const float4 *>(&p_s[warp][r][jj]);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                if (jj + u >= most) break;
                const float4 vv = vrow[(jj + u) * (EVO_REF_MAX_D / 4)];
#pragma unroll
                for (int r = 0; r < EVO_REF_RPW; r++) {
                    if (jj + u >= count[r]) continue;
                    const float pj = u == 0 ? pr[r].x : u == 1 ? pr[r].y : u == 2 ? pr[r].z : pr[r].w;
                    acc[r][0] = fmaf(pj, vv.x, acc[r][0]);
                    acc[r][1] = fmaf(pj, vv.y, acc[r][1]);
                    acc[r][2] = fmaf(pj, vv.z, acc[r][2]);
                    acc[r][3] = fmaf(pj, vv.w, acc[r][3]);
                }
            }
        }
        __syncwarp(); /* p_s is written again by the next tile */
    }
#pragma unroll
    for (int r = 0; r < EVO_REF_RPW; r++) {
        for (int off = 16; off > 0; off >>= 1) l[r] += __shfl_xor_sync(0xffffffffu, l[r], off);
        const int i = i0 + r0 + r;
        if (i >= seq) continue;
        float *o_row = o + base + (u64)i * head_dim;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int d = 4 * lane + e;
            if (d < head_dim) o_row[d] = acc[r][e] / l[r];
        }
    }
}
