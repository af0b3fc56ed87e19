/* attn_support.cu — the attention task's own GPU kernels around its gates, compiled by NVRTC in each worker: the
 * structural probes' inputs and the FP8 model (the fp8 accuracy class's budget), both bit for bit the CPU twins in
 * attn_ref.c through the formulas of attn_numerics.h. Compile WITHOUT --use_fast_math or -ftz=true.
 *
 * evo_gen_probe(unsigned short *out, u64 n, int probe, u64 seed, unsigned tensor, int seq, int head_dim)
 *     out[i] = fp16 of an_probe_value(probe, seed, tensor, seq, head_dim, i).               any grid, any block
 * evo_fp8_model_attention(const unsigned char *q, const float *q_scale, const unsigned char *k,
 *                         const float *k_scale, const unsigned char *v, const float *v_scale, float *o,
 *                         int batch, int heads, int seq, int head_dim, int causal, float softmax_scale, int order)
 *     the FP8 model (attn_numerics.h), its scores added in order 0..3, on e4m3 codes, o float [B, H, S, D]: one thread per query row (its codes
 *     in shared memory), keys in tiles of 16 decoded into shared memory. block = 128 threads (exactly), grid = (ceil(seq / 128), heads,
 *     batch); 2 <= head_dim <= 128.
 */
#include "evo_numerics.cuh"

#define AN_DEVICE
#define AN_FN __device__ __forceinline__
#define AN_E4M3_ROUND(x) e4m3_decode(e4m3_encode(x))
#define AN_NORMAL(seed, t, i) half_to_float(gen_value(seed, t, 0, 0, i))
#define AN_WORD(seed, t, i) gen_word(seed, t, 0, i)
#include "attn_numerics.h"

#define MODEL_ROWS 128
#define MODEL_TILE 16
#define MODEL_MAX_D 128

extern "C" __global__ void evo_gen_probe(unsigned short *out, u64 n, int probe, u64 seed, unsigned tensor, int seq,
                                         int head_dim)
{
    GRID_STRIDE(i, n) out[i] = double_to_half((double)an_probe_value(probe, seed, tensor, seq, head_dim, i));
}

#define QW (MODEL_MAX_D / 4 + 1) /* words of a row's codes in shared memory, padded: rows in different banks */

/* The score of this thread's row (codes packed 4 to a word in qw, decoded through dec) with key row kr, in log2
 * units: an_logit2's arithmetic, step for step. */
__device__ __forceinline__ float model_logit2(const unsigned int *qw, const float *dec, const float *kr, int d,
                                              float qk_scale, float sm_log2e, int order)
{
    float acc = 0.0f;
    for (int i = 0; i < d; i++) {
        const int t = an_order_index(order, i, d);
        acc = an_acc_add(acc, __fmul_rn(dec[(qw[t >> 2] >> (8 * (t & 3))) & 0xffu], kr[t]));
    }
    return __fmul_rn(__fmul_rn(acc, qk_scale), sm_log2e);
}

extern "C" __global__ void __launch_bounds__(MODEL_ROWS)
evo_fp8_model_attention(const unsigned char *q, const float *q_scale, const unsigned char *k, const float *k_scale,
                        const unsigned char *v, const float *v_scale, float *o, int batch, int heads, int seq,
                        int head_dim, int causal, float softmax_scale, int order)
{
    __shared__ float kt[MODEL_TILE][MODEL_MAX_D], vt[MODEL_TILE][MODEL_MAX_D], dec[256];
    __shared__ unsigned int qs[MODEL_ROWS][QW];
    const int i0 = blockIdx.x * MODEL_ROWS, i = i0 + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
    if (i0 >= seq || h >= heads || b >= batch || head_dim < 2 || head_dim > MODEL_MAX_D) return; /* whole block */
    for (int c = threadIdx.x; c < 256; c += MODEL_ROWS) dec[c] = e4m3_decode((unsigned char)c);
    const bool active = i < seq;
    const int bh = b * heads + h, d = head_dim;
    const u64 base = (u64)bh * (u64)seq * (u64)d;
    for (int w = 0; w < (d + 3) / 4; w++) {
        unsigned int x = 0;
        for (int c = 0; c < 4; c++)
            if (active && 4 * w + c < d) x |= (unsigned int)q[base + (u64)i * d + 4 * w + c] << (8 * c);
        qs[threadIdx.x][w] = x;
    }
    const unsigned int *qc = qs[threadIdx.x];
    const float qk = __fmul_rn(q_scale[bh], k_scale[bh]), sm_log2e = __fmul_rn(softmax_scale, 1.4426950408889634f);
    const int n_keys = active ? (causal ? i + 1 : seq) : 0;
    const int last = min(seq, causal ? i0 + MODEL_ROWS : seq);
    float acc[MODEL_MAX_D];
#pragma unroll
    for (int t = 0; t < MODEL_MAX_D; t++) acc[t] = 0.0f;
    float m = 0.0f, l = 0.0f;
    bool started = false;
    for (int b0 = 0; b0 < last; b0 += AN_FP8_BLOCK) {
        const int b1 = min(last, b0 + AN_FP8_BLOCK);
        float mb = 0.0f;
        bool any = false;
        for (int t0 = b0; t0 < b1; t0 += MODEL_TILE) { /* pass 1: the block's max */
            __syncthreads();
            for (int x = threadIdx.x; x < MODEL_TILE * d; x += MODEL_ROWS) {
                const int r = x / d, c = x % d;
                kt[r][c] = t0 + r < seq ? dec[k[base + (u64)(t0 + r) * d + c]] : 0.0f;
            }
            __syncthreads();
            for (int j = t0; j < min(b1, t0 + MODEL_TILE) && j < n_keys; j++) {
                const float x2 = model_logit2(qc, dec, kt[j - t0], d, qk, sm_log2e, order);
                mb = !any || x2 > mb ? x2 : mb;
                any = true;
            }
        }
        if (any) {
            const float mc = ceilf(mb);
            if (!started || mc > m) {
                if (started) {
                    const float r = an_rescale(m, mc);
                    l = __fmul_rn(l, r);
#pragma unroll
                    for (int t = 0; t < MODEL_MAX_D; t++) acc[t] = __fmul_rn(acc[t], r);
                }
                m = mc;
                started = true;
            }
        }
        for (int t0 = b0; t0 < b1; t0 += MODEL_TILE) { /* pass 2: P, the row sum, P̃·V */
            __syncthreads();
            for (int x = threadIdx.x; x < MODEL_TILE * d; x += MODEL_ROWS) {
                const int r = x / d, c = x % d;
                const bool in = t0 + r < seq;
                kt[r][c] = in ? dec[k[base + (u64)(t0 + r) * d + c]] : 0.0f;
                vt[r][c] = in ? dec[v[base + (u64)(t0 + r) * d + c]] : 0.0f;
            }
            __syncthreads();
            for (int j = t0; j < min(b1, t0 + MODEL_TILE) && j < n_keys; j++) {
                float p, pt;
                an_p(model_logit2(qc, dec, kt[j - t0], d, qk, sm_log2e, order), m, &p, &pt);
                l = __fadd_rn(l, p);
#pragma unroll
                for (int t = 0; t < MODEL_MAX_D; t++)
                    if (t < d) acc[t] = an_acc_add(acc[t], __fmul_rn(pt, vt[j - t0][t]));
            }
        }
    }
    if (!active) return;
    const float vs = v_scale[bh];
#pragma unroll
    for (int t = 0; t < MODEL_MAX_D; t++)
        if (t < d) o[base + (u64)i * d + t] = __fdiv_rn(__fmul_rn(acc[t], vs), l);
}
