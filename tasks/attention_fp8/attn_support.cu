/* attn_support.cu — the attention task's own GPU kernels around its gates, compiled by NVRTC in each worker: the
 * structural probes' inputs and the FP8 model (the fp8 accuracy class's budget), both bit for bit the CPU twins in
 * attn_ref.c through the formulas of attn_numerics.h. Compile WITHOUT --use_fast_math or -ftz=true.
 *
 * evo_gen_probe(unsigned short *out, u64 n, int probe, u64 seed, unsigned tensor, int seq, int head_dim)
 *     out[i] = fp16 of an_probe_value(probe, seed, tensor, seq, head_dim, i).               any grid, any block
 * evo_fp8_model_attention(const unsigned char *q, const float *q_scale, const unsigned char *k,
 *                         const float *k_scale, const unsigned char *v, const float *v_scale, float *o,
 *                         int batch, int heads, int seq, int head_dim, int causal, float softmax_scale, int order,
 *                         int row0)
 *     the FP8 model (attn_numerics.h), its scores' k-steps in order 0..3, on e4m3 codes, o float [B, H, S, D]: 8
 *     query rows a block, 16 threads a row (a sampled head's check launches one head: 32 rows a block left most of
 *     the GPU idle, each block running the whole sequence). Each score is computed once (a 128-key block's scores in
 *     shared memory, the 16 threads of a row splitting the keys); each thread holds every 16th column of its row's
 *     accumulator and computes a P·V k-step's products twice (the largest, then the cut sum: no 32-wide unrolled
 *     array, which took NVRTC 5 s per arch); keys staged decoded, 32 at a time (one P·V k-step); the row sums added
 *     by one thread in key order.
 *     block = 128 threads (exactly), grid = (ceil((seq - row0) / 8), heads, batch): the query rows from row0 on (0:
 *     every row; a sampled check takes a window of a long head); 2 <= head_dim <= 128. Every thread's arithmetic is
 *     per row or per column in key order, so neither row0, nor rows a block, nor threads a row change a bit.
 */
#include "evo_numerics.cuh"

#define AN_DEVICE
#define AN_FN __device__ __forceinline__
#define AN_E4M3_ROUND(x) e4m3_decode(e4m3_encode(x))
#define AN_NORMAL(seed, t, i) half_to_float(gen_value(seed, t, 0, 0, i))
#define AN_WORD(seed, t, i) gen_word(seed, t, 0, i)
#include "attn_numerics.h"

#define MODEL_ROWS 8      /* query rows per block (attention.h's ATTN_MODEL_ROWS)                    */
#define MODEL_LANES 16    /* threads per row: 128 threads a block (ATTN_MODEL_THREADS)               */
#define MODEL_THREADS (MODEL_ROWS * MODEL_LANES)
#define MODEL_TILE AN_FP8_KSTEP /* keys per staged tile: one P·V k-step                                 */
#define MODEL_MAX_D 128
#define MODEL_ACC (MODEL_MAX_D / MODEL_LANES) /* accumulator columns a thread owns                           */

extern "C" __global__ void evo_gen_probe(unsigned short *out, u64 n, int probe, u64 seed, unsigned tensor, int seq,
                                         int head_dim)
{
    GRID_STRIDE(i, n) out[i] = double_to_half((double)an_probe_value(probe, seed, tensor, seq, head_dim, i));
}

/* The score of query row qr (e4m3 codes) with key row kr (decoded), in log2 units: an_logit2's arithmetic, k-step
 * for k-step (the step's products once, then the largest magnitude, then the cut sum). */
__device__ __forceinline__ float model_logit2(const unsigned char *qr, const float *kr, int d, float qk_scale,
                                              float sm_log2e, int order)
{
    float acc = 0.0f;
    for (int c0 = 0; c0 < d; c0 += AN_FP8_KSTEP) {
        const int n = min(AN_FP8_KSTEP, d - c0);
        float x[AN_FP8_KSTEP], mx = fabsf(acc);
#pragma unroll
        for (int i = 0; i < AN_FP8_KSTEP; i++) {
            const int t = order ? an_order_index(order, c0 + i, d) : c0 + i;
            x[i] = i < n ? __fmul_rn(e4m3_decode(qr[t]), kr[t]) : 0.0f; /* a zero term changes nothing */
            mx = fmaxf(mx, fabsf(x[i]));
        }
        float u, inv;
        an_unit(mx, &u, &inv);
        float sum = an_cut(acc, u, inv);
#pragma unroll
        for (int i = 0; i < AN_FP8_KSTEP; i++)
            if (i < n) sum = __fadd_rn(sum, an_cut(x[i], u, inv)); /* the step's n terms, as the host adds them */
        acc = an_trunc_accf(sum);
    }
    return __fmul_rn(__fmul_rn(acc, qk_scale), sm_log2e);
}

/* A tile of 32 key rows (t0 ...) of k or v, decoded, into kv (zero past the sequence). */
__device__ __forceinline__ void model_stage(float (*kv)[MODEL_MAX_D + 1], const unsigned char *src, u64 base, int t0,
                                            int seq, int d)
{
    for (int x = threadIdx.x; x < MODEL_TILE * d; x += MODEL_THREADS) {
        const int r = x / d, c = x - r * d;
        kv[r][c] = t0 + r < seq ? e4m3_decode(src[base + (u64)(t0 + r) * d + c]) : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(MODEL_THREADS)
evo_fp8_model_attention(const unsigned char *q, const float *q_scale, const unsigned char *k, const float *k_scale,
                        const unsigned char *v, const float *v_scale, float *o, int batch, int heads, int seq,
                        int head_dim, int causal, float softmax_scale, int order, int row0)
{
    /* 45 KiB: the rows' Q codes, a decoded tile of K or V, the rows' scores of one 128-key block, a tile's P and P̃ */
    __shared__ unsigned char qc[MODEL_ROWS][MODEL_MAX_D + 4];
    __shared__ float kv[MODEL_TILE][MODEL_MAX_D + 1];
    __shared__ float x2s[MODEL_ROWS][AN_FP8_BLOCK];
    __shared__ float ps[MODEL_ROWS][MODEL_TILE + 1], pts[MODEL_ROWS][MODEL_TILE + 1];
    __shared__ float m_s[MODEL_ROWS], l_s[MODEL_ROWS], r_s[MODEL_ROWS];
    const int i0 = row0 + blockIdx.x * MODEL_ROWS, h = blockIdx.y, b = blockIdx.z;
    if (row0 < 0 || i0 >= seq || h >= heads || b >= batch || head_dim < 2 || head_dim > MODEL_MAX_D) return;
    const int row = threadIdx.x / MODEL_LANES, lane = threadIdx.x % MODEL_LANES, i = i0 + row;
    const bool active = i < seq;
    const int bh = b * heads + h, d = head_dim;
    const u64 base = (u64)bh * (u64)seq * (u64)d;
    for (int x = threadIdx.x; x < MODEL_ROWS * d; x += MODEL_THREADS) {
        const int r = x / d, c = x - r * d;
        qc[r][c] = i0 + r < seq ? q[base + (u64)(i0 + r) * d + c] : 0;
    }
    if (threadIdx.x < MODEL_ROWS) {
        m_s[threadIdx.x] = 0.0f;
        l_s[threadIdx.x] = 0.0f;
    }
    const float qk = __fmul_rn(q_scale[bh], k_scale[bh]), sm_log2e = __fmul_rn(softmax_scale, 1.4426950408889634f);
    const int n_keys = active ? (causal ? i + 1 : seq) : 0;
    const int last = min(seq, causal ? i0 + MODEL_ROWS : seq);
    float acc[MODEL_ACC]; /* columns lane, lane + 4, ... of this row */
#pragma unroll
    for (int j = 0; j < MODEL_ACC; j++) acc[j] = 0.0f;
    bool started = false; /* the row's, kept alike by its 4 threads */
    for (int b0 = 0; b0 < last; b0 += AN_FP8_BLOCK) {
        const int b1 = min(last, b0 + AN_FP8_BLOCK);
        for (int t0 = b0; t0 < b1; t0 += MODEL_TILE) { /* the block's scores, each once */
            __syncthreads();
            model_stage(kv, k, base, t0, seq, d);
            __syncthreads();
            for (int jj = lane; jj < MODEL_TILE; jj += MODEL_LANES)
                if (t0 + jj < b1 && t0 + jj < n_keys)
                    x2s[row][t0 - b0 + jj] = model_logit2(qc[row], kv[jj], d, qk, sm_log2e, order);
        }
        __syncthreads();
        const int mine_b = max(0, min(b1, n_keys) - b0); /* the row's keys in this block */
        if (lane == 0 && mine_b > 0) {                  /* the block's max, then the row's offset and rescale */
            float mb = 0.0f;
            for (int j = 0; j < mine_b; j++) mb = j == 0 || x2s[row][j] > mb ? x2s[row][j] : mb;
            const float mc = ceilf(mb);
            float r = 1.0f;
            if (!started || mc > m_s[row]) {
                if (started) {
                    r = an_rescale(m_s[row], mc);
                    l_s[row] = __fmul_rn(l_s[row], r);
                }
                m_s[row] = mc;
            }
            r_s[row] = r;
        }
        __syncthreads();
        if (mine_b > 0) {
            if (started && r_s[row] != 1.0f) {
                const float r = r_s[row];
#pragma unroll
                for (int j = 0; j < MODEL_ACC; j++) acc[j] = __fmul_rn(acc[j], r);
            }
            started = true;
        }
        const float m = m_s[row];
        for (int t0 = b0; t0 < b1; t0 += MODEL_TILE) { /* P, the row sum, P̃·V one k-step per tile */
            __syncthreads();
            model_stage(kv, v, base, t0, seq, d);
            const int mine = max(0, min(min(b1, n_keys) - t0, MODEL_TILE));
            for (int jj = lane; jj < MODEL_TILE; jj += MODEL_LANES) { /* P̃ is 0 past the row's keys */
                float p = 0.0f, pt = 0.0f;
                if (jj < mine) an_p(x2s[row][t0 - b0 + jj], m, &p, &pt);
                ps[row][jj] = p;
                pts[row][jj] = pt;
            }
            __syncthreads();
            if (mine == 0) continue;
            if (lane == 0) { /* the row sum in key order */
                float l = l_s[row];
                for (int jj = 0; jj < mine; jj++) l = __fadd_rn(l, ps[row][jj]);
                l_s[row] = l;
            }
#pragma unroll
            for (int j = 0; j < MODEL_ACC; j++) { /* the products twice (max, then the cut sum): no array to unroll */
                const int t = lane + MODEL_LANES * j;
                if (t >= d) break;
                float mx = fabsf(acc[j]);
#pragma unroll 4
                for (int jj = 0; jj < MODEL_TILE; jj++) mx = fmaxf(mx, fabsf(__fmul_rn(pts[row][jj], kv[jj][t])));
                float u, inv;
                an_unit(mx, &u, &inv);
                float sum = an_cut(acc[j], u, inv);
#pragma unroll 4
                for (int jj = 0; jj < MODEL_TILE; jj++) sum = __fadd_rn(sum, an_cut(__fmul_rn(pts[row][jj], kv[jj][t]), u, inv));
                acc[j] = an_trunc_accf(sum);
            }
        }
    }
    __syncthreads();
    if (!active) return;
    const float vs = v_scale[bh], l = l_s[row];
#pragma unroll
    for (int j = 0; j < MODEL_ACC; j++) {
        const int t = lane + MODEL_LANES * j;
        if (t < d) o[base + (u64)i * d + t] = __fdiv_rn(__fmul_rn(acc[j], vs), l);
    }
}
