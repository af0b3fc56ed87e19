/* attn_support.cu — the attention task's own GPU kernels around its gates, compiled by NVRTC in each worker: the
 * structural probes' inputs and the FP8 model (the fp8 accuracy class's budget), both bit for bit the CPU twins in
 * attn_ref.c through the formulas of attn_numerics.h. Compile WITHOUT --use_fast_math or -ftz=true.
 *
 * evo_gen_probe(unsigned short *out, u64 n, int probe, u64 seed, unsigned tensor, int seq, int head_dim)
 *     out[i] = fp16 of an_probe_value(probe, seed, tensor, seq, head_dim, i).               any grid, any block
 * evo_fp8_model_attention(const unsigned char *q, const float *q_scale, const unsigned char *k,
 *                         const float *k_scale, const unsigned char *v, const float *v_scale, float *o,
 *                         int batch, int heads, int seq, int head_dim, int causal, float softmax_scale, int order)
 *     the FP8 model (attn_numerics.h), its scores' k-steps in order 0..3, on e4m3 codes, o float [B, H, S, D]: one
 *     thread per query row (its codes, accumulator and a k-step's P̃ in shared memory), keys in tiles of 32 codes in
 *     shared memory (one P·V k-step). block = 32 threads (exactly), grid = (ceil(seq / 32), heads, batch);
 *     2 <= head_dim <= 128.
 */
#include "evo_numerics.cuh"

#define AN_DEVICE
#define AN_FN __device__ __forceinline__
#define AN_E4M3_ROUND(x) e4m3_decode(e4m3_encode(x))
#define AN_NORMAL(seed, t, i) half_to_float(gen_value(seed, t, 0, 0, i))
#define AN_WORD(seed, t, i) gen_word(seed, t, 0, i)
#include "attn_numerics.h"

#define MODEL_ROWS 32
#define MODEL_TILE AN_FP8_KSTEP /* keys per staged tile: one P·V k-step */
#define MODEL_MAX_D 128

extern "C" __global__ void evo_gen_probe(unsigned short *out, u64 n, int probe, u64 seed, unsigned tensor, int seq,
                                         int head_dim)
{
    GRID_STRIDE(i, n) out[i] = double_to_half((double)an_probe_value(probe, seed, tensor, seq, head_dim, i));
}

/* q code t of this thread's row: codes packed 4 to a word, word w of every row together (qw = &qs[0][thread]). */
#define QCODE(qw, t) ((qw[((t) >> 2) * MODEL_ROWS] >> (8 * ((t) & 3))) & 0xffu)

/* The score of this thread's row with key row kr (codes), in log2 units: an_logit2's arithmetic, k-step for k-step
 * (the largest magnitude first, then the cut sum). */
__device__ __forceinline__ float model_logit2(const unsigned int *qw, const unsigned char *kr, int d, float qk_scale,
                                              float sm_log2e, int order)
{
    float acc = 0.0f;
    for (int c0 = 0; c0 < d; c0 += AN_FP8_KSTEP) { /* the products twice (max, then the cut sum): no array */
        const int n = min(AN_FP8_KSTEP, d - c0);
        float mx = fabsf(acc);
        for (int i = 0; i < n; i++) {
            const int t = an_order_index(order, c0 + i, d);
            mx = fmaxf(mx, fabsf(__fmul_rn(e4m3_decode(QCODE(qw, t)), e4m3_decode(kr[t]))));
        }
        float u, inv;
        an_unit(mx, &u, &inv);
        float sum = an_cut(acc, u, inv);
        for (int i = 0; i < n; i++) {
            const int t = an_order_index(order, c0 + i, d);
            sum = __fadd_rn(sum, an_cut(__fmul_rn(e4m3_decode(QCODE(qw, t)), e4m3_decode(kr[t])), u, inv));
        }
        acc = an_trunc_accf(sum);
    }
    return __fmul_rn(__fmul_rn(acc, qk_scale), sm_log2e);
}

extern "C" __global__ void __launch_bounds__(MODEL_ROWS)
evo_fp8_model_attention(const unsigned char *q, const float *q_scale, const unsigned char *k, const float *k_scale,
                        const unsigned char *v, const float *v_scale, float *o, int batch, int heads, int seq,
                        int head_dim, int causal, float softmax_scale, int order)
{
    /* 32 KiB: each row's accumulator, codes and P̃ of a k-step by column (conflict-free), a k-step of K and V codes */
    __shared__ float acc_s[MODEL_MAX_D][MODEL_ROWS], pt_s[MODEL_TILE][MODEL_ROWS];
    __shared__ unsigned int qs[MODEL_MAX_D / 4][MODEL_ROWS];
    __shared__ unsigned char kt[MODEL_TILE][MODEL_MAX_D], vt[MODEL_TILE][MODEL_MAX_D];
    const int i0 = blockIdx.x * MODEL_ROWS, i = i0 + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
    if (i0 >= seq || h >= heads || b >= batch || head_dim < 2 || head_dim > MODEL_MAX_D) return; /* whole block */
    const bool active = i < seq;
    const int bh = b * heads + h, d = head_dim;
    const u64 base = (u64)bh * (u64)seq * (u64)d;
    for (int w = 0; w < (d + 3) / 4; w++) {
        unsigned int x = 0;
        for (int c = 0; c < 4; c++)
            if (active && 4 * w + c < d) x |= (unsigned int)q[base + (u64)i * d + 4 * w + c] << (8 * c);
        qs[w][threadIdx.x] = x;
    }
    const unsigned int *qc = &qs[0][threadIdx.x];
    float *acc = &acc_s[0][threadIdx.x]; /* acc[t * MODEL_ROWS]: column t of this row */
    const float qk = __fmul_rn(q_scale[bh], k_scale[bh]), sm_log2e = __fmul_rn(softmax_scale, 1.4426950408889634f);
    const int n_keys = active ? (causal ? i + 1 : seq) : 0;
    const int last = min(seq, causal ? i0 + MODEL_ROWS : seq);
    float *pt = &pt_s[0][threadIdx.x]; /* pt[jj * MODEL_ROWS]: P̃ of key jj of the tile */
    for (int t = 0; t < d; t++) acc[t * MODEL_ROWS] = 0.0f;
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
                kt[r][c] = t0 + r < seq ? k[base + (u64)(t0 + r) * d + c] : 0;
            }
            __syncthreads();
            for (int j = t0; j < min(b1, t0 + MODEL_TILE) && j < n_keys; j++) {
                const float x2 = model_logit2(qc, kt[j - t0], d, qk, sm_log2e, order);
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
                    for (int t = 0; t < d; t++) acc[t * MODEL_ROWS] = __fmul_rn(acc[t * MODEL_ROWS], r);
                }
                m = mc;
                started = true;
            }
        }
        for (int t0 = b0; t0 < b1; t0 += MODEL_TILE) { /* pass 2: P, the row sum, P̃·V one k-step per tile */
            __syncthreads();
            for (int x = threadIdx.x; x < MODEL_TILE * d; x += MODEL_ROWS) {
                const int r = x / d, c = x % d;
                const bool in = t0 + r < seq;
                kt[r][c] = in ? k[base + (u64)(t0 + r) * d + c] : 0;
                vt[r][c] = in ? v[base + (u64)(t0 + r) * d + c] : 0;
            }
            __syncthreads();
            const int n = min(b1, t0 + MODEL_TILE) - t0, mine = max(0, min(n, n_keys - t0));
            for (int jj = 0; jj < MODEL_TILE; jj++) { /* P̃ is 0 past the row's keys: those terms are 0 */
                float p = 0.0f, q = 0.0f;
                if (jj < mine) {
                    an_p(model_logit2(qc, kt[jj], d, qk, sm_log2e, order), m, &p, &q);
                    l = __fadd_rn(l, p);
                }
                pt[jj * MODEL_ROWS] = q;
            }
            if (mine == 0) continue;
            for (int t = 0; t < d; t++) { /* the products twice (max, then the cut sum): no array */
                float mx = fabsf(acc[t * MODEL_ROWS]);
                for (int jj = 0; jj < MODEL_TILE; jj++)
                    mx = fmaxf(mx, fabsf(__fmul_rn(pt[jj * MODEL_ROWS], e4m3_decode(vt[jj][t]))));
                float u, inv;
                an_unit(mx, &u, &inv);
                float sum = an_cut(acc[t * MODEL_ROWS], u, inv);
                for (int jj = 0; jj < MODEL_TILE; jj++)
                    sum = __fadd_rn(sum, an_cut(__fmul_rn(pt[jj * MODEL_ROWS], e4m3_decode(vt[jj][t])), u, inv));
                acc[t * MODEL_ROWS] = an_trunc_accf(sum);
            }
        }
    }
    if (!active) return;
    const float vs = v_scale[bh];
    for (int t = 0; t < d; t++) o[base + (u64)i * d + t] = __fdiv_rn(__fmul_rn(acc[t * MODEL_ROWS], vs), l);
}
