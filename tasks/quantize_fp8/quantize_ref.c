/* quantize_ref.c — CPU reference of the quantize_fp8 task (see quantize_ref.h): bf16, the fixed rotation, the
 * per-head quantizer and a model of the kernels' fast quotient. Every floating-point step is one IEEE operation in
 * float; contraction into FMAs is kept off, so the GPU's __f*_rn intrinsics give the same bits.
 */
#include "quantize_ref.h"

#include "numerics.h"
#include "evo.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "quantize_ref.c needs float evaluated in its own precision (FLT_EVAL_METHOD 0)"
#endif

_Static_assert(EVO_QUANT_IN_F16 == 0 && EVO_QUANT_IN_BF16 == 1, "dtypes are numbered as in quantize_fp8.cu");

static inline uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- bf16 ---- */

float evo_qref_bf16_to_float(uint16_t b) { return bits_float((uint32_t)b << 16); }

uint16_t evo_qref_float_to_bf16(float x)
{
    uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) & 0x8000u) | 0x7fc0u;
    uint32_t rest = u & 0xffffu, q = u >> 16;
    if (rest > 0x8000u || (rest == 0x8000u && (q & 1u))) q++; /* a carry into the exponent ends at inf */
    return (uint16_t)q;
}

float evo_qref_in_to_float(uint16_t bits, int in_dtype)
{
    EVO_ASSERT(in_dtype == EVO_QUANT_IN_F16 || in_dtype == EVO_QUANT_IN_BF16);
    return in_dtype == EVO_QUANT_IN_F16 ? evo_ref_half_to_float(bits) : evo_qref_bf16_to_float(bits);
}

/* ---- rotation ---- */

int evo_qref_sign(int i)
{
    EVO_ASSERT(i >= 0 && i < 256);
    return (evo_quant_sign_word((unsigned)i >> 6) >> (i & 63)) & 1u ? -1 : 1;
}

void evo_qref_rotate_row(float *v, int head_dim)
{
    EVO_ASSERT(evo_quant_rsqrt_d(head_dim) != 0.0f);
    for (int i = 0; i < head_dim; i++)
        if (evo_qref_sign(i) < 0) v[i] = -v[i];
    for (int h = 1; h < head_dim; h <<= 1) {
        for (int i = 0; i < head_dim; i++) {
            if (i & h) continue;
            float a = v[i], b = v[i + h];
            v[i] = a + b;
            v[i + h] = a - b;
        }
    }
    const float c = evo_quant_rsqrt_d(head_dim);
    for (int i = 0; i < head_dim; i++) v[i] = v[i] * c;
}

/* ---- scale and quotient ---- */

float evo_qref_scale(float absmax) { return absmax == 0.0f ? 1.0f : absmax / EVO_E4M3_MAX; }

int evo_qref_scale_fast(float scale) { return scale >= 0x1p-60f && scale <= 0x1p60f; }

/* RN(a*inv) and then `steps` Markstein corrections q = RN(q - RN(scale*q - a)*inv). */
static float quot_corrected(float a, float scale, float inv, int steps)
{
    float q = a * inv;
    for (int i = 0; i < steps; i++) q = fmaf(-fmaf(scale, q, -a), inv, q);
    return q;
}

float evo_qref_quot_fast(float a, float scale, float inv) { return quot_corrected(a, scale, inv, 2); }

float evo_qref_quot_fast1(float a, float scale, float inv) { return quot_corrected(a, scale, inv, 1); }

/* ---- quantization ---- */

/* Row r of a head as float, rotated when asked. */
static void load_row(const uint16_t *xh, int in_dtype, int rotate, size_t r, int head_dim, float *row)
{
    for (int i = 0; i < head_dim; i++) row[i] = evo_qref_in_to_float(xh[r * (size_t)head_dim + (size_t)i], in_dtype);
    if (rotate) evo_qref_rotate_row(row, head_dim);
}

void evo_qref_quantize(const uint16_t *x, int in_dtype, int rotate, size_t n_heads, size_t seq, int head_dim,
                       uint8_t *codes, float *scales)
{
    EVO_ASSERT(head_dim >= 1 && head_dim <= 256);
    EVO_ASSERT(!rotate || evo_quant_rsqrt_d(head_dim) != 0.0f);
    float row[256];
    const size_t head_elems = seq * (size_t)head_dim;
    for (size_t h = 0; h < n_heads; h++) {
        const uint16_t *xh = x + h * head_elems;
        uint8_t *ch = codes + h * head_elems;
        float absmax = 0.0f;
        for (size_t r = 0; r < seq; r++) {
            load_row(xh, in_dtype, rotate, r, head_dim, row);
            for (int i = 0; i < head_dim; i++) absmax = fmaxf(absmax, fabsf(row[i]));
        }
        const float scale = evo_qref_scale(absmax);
        scales[h] = scale;
        for (size_t r = 0; r < seq; r++) {
            load_row(xh, in_dtype, rotate, r, head_dim, row);
            for (int i = 0; i < head_dim; i++)
                ch[r * (size_t)head_dim + (size_t)i] = evo_ref_e4m3_encode(row[i] / scale);
        }
    }
}
