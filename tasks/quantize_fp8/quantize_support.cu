/* quantize_support.cu — the quantize_fp8 task's trusted GPU side, used by the gates (tasks/quantize_fp8/gpu.c):
 * fp16 -> bf16 inputs, a plain reference quantizer (one block per head, no tricks) that matches quantize_ref.c bit
 * for bit, and an exact byte comparison. Compiled by NVRTC with evo_numerics.cuh and evo_quantize_abi.h; compile
 * WITHOUT --use_fast_math or -ftz=true (the division must be IEEE).
 *
 * evo_qs_to_bf16(const unsigned short *in, unsigned short *out, u64 n)                   any grid, any block
 *     out = bf16(fp16 in), rounded to nearest even (evo_qref_float_to_bf16 of the fp16 value).
 * evo_qs_reference(const unsigned short *x, int in_bf16, int rotate, int head_dim, u64 head_elems,
 *                  unsigned char *codes, float *scales)
 *     grid.x = B*H (one block per head), block = 256: evo_qref_quantize, rows rotated when `rotate`.
 * evo_qs_compare(const unsigned char *out, const unsigned char *ref, u64 n, u64 *res)    any grid, any block
 *     res[0] += bytes that differ, res[1] = min(res[1], first such index); set res to {0, ~0ull} first.
 */
#include "evo_numerics.cuh"
#include "evo_quantize_abi.h"

__device__ __forceinline__ float bf16_to_float(unsigned short b) { return __uint_as_float((unsigned int)b << 16); }

__device__ __forceinline__ unsigned short float_to_bf16(float x)
{
    unsigned int u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(((u >> 16) & 0x8000u) | 0x7fc0u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void evo_qs_to_bf16(const unsigned short *in, unsigned short *out, u64 n)
{
    GRID_STRIDE(i, n) out[i] = float_to_bf16(half_to_float(in[i]));
}

/* One row of head_dim values, rotated in place when asked: signs, Walsh–Hadamard butterflies, 1/sqrt(D), each step
 * rounded to float in the order quantize_ref.h states. */
__device__ void load_row(const unsigned short *x, int in_bf16, int rotate, int head_dim, float *v)
{
    for (int i = 0; i < head_dim; i++) v[i] = in_bf16 ? bf16_to_float(x[i]) : half_to_float(x[i]);
    if (!rotate) return;
    for (int i = 0; i < head_dim; i++)
        if ((evo_quant_sign_word((unsigned)i / 64u) >> (i % 64)) & 1ull) v[i] = -v[i];
    for (int h = 1; h < head_dim; h <<= 1)
        for (int i = 0; i < head_dim; i++)
            if (!(i & h)) {
                const float a = v[i], b = v[i + h];
                v[i] = __fadd_rn(a, b);
                v[i + h] = __fsub_rn(a, b);
            }
    const float r = evo_quant_rsqrt_d(head_dim);
    for (int i = 0; i < head_dim; i++) v[i] = __fmul_rn(v[i], r);
}

extern "C" __global__ void __launch_bounds__(256) evo_qs_reference(const unsigned short *x, int in_bf16, int rotate,
                                                                   int head_dim, u64 head_elems,
                                                                   unsigned char *codes, float *scales)
{
    __shared__ float warp_max[32];
    float v[256];
    const u64 head = blockIdx.x, rows = head_elems / (u64)head_dim;
    const unsigned short *xh = x + head * head_elems;
    unsigned char *ch = codes + head * head_elems;
    float m = 0.0f;
    for (u64 r = threadIdx.x; r < rows; r += blockDim.x) {
        load_row(xh + r * head_dim, in_bf16, rotate, head_dim, v);
        for (int i = 0; i < head_dim; i++) m = fmaxf(m, fabsf(v[i]));
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        m = threadIdx.x < (blockDim.x >> 5) ? warp_max[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (threadIdx.x == 0) warp_max[0] = m;
    }
    __syncthreads();
    const float absmax = warp_max[0];
    const float scale = absmax == 0.0f ? 1.0f : __fdiv_rn(absmax, 448.0f);
    if (threadIdx.x == 0) scales[head] = scale;
    for (u64 r = threadIdx.x; r < rows; r += blockDim.x) {
        load_row(xh + r * head_dim, in_bf16, rotate, head_dim, v);
        for (int i = 0; i < head_dim; i++) ch[r * head_dim + i] = e4m3_encode(__fdiv_rn(v[i], scale));
    }
}

extern "C" __global__ void evo_qs_compare(const unsigned char *out, const unsigned char *ref, u64 n, u64 *res)
{
    u64 bad = 0, first = ~0ull;
    GRID_STRIDE(i, n)
    if (out[i] != ref[i]) {
        bad++;
        if (i < first) first = i;
    }
    if (bad) {
        atomicAdd(&res[0], bad);
        atomicMin(&res[1], first);
    }
}
