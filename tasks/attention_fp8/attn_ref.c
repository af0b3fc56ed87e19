/* attn_ref.c — the attention task's CPU references: the per-head quantizer and an FP64 reference attention (see
 * attn_ref.h). The quantizer is written with the same float operations in the same order as templates/support.cu's
 * evo_quantize, one rounding each (no fused multiply-add: the pragmas below), so the two agree bit for bit.
 */
#include "attn_ref.h"

#include "evo.h"

#include <math.h>
#include <stddef.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

_Static_assert(EVO_FORMAT_E4M3 == 0 && EVO_FORMAT_U8SIM == 1, "formats are numbered as in support.cu");

static inline float f_mul(float a, float b) { return a * b; }
static inline float f_div(float a, float b) { return a / b; }

/* ---- quantizer ---- */

float evo_ref_head_scale(const uint16_t *x, size_t head_elems)
{
    float absmax = 0.0f;
    for (size_t i = 0; i < head_elems; i++) absmax = fmaxf(absmax, fabsf(evo_ref_half_to_float(x[i])));
    return absmax == 0.0f ? 1.0f : f_div(absmax, EVO_E4M3_MAX);
}

void evo_ref_quantize(const uint16_t *x, size_t n_heads, size_t head_elems, int format, uint8_t *codes,
                      float *scales)
{
    EVO_ASSERT(format == EVO_FORMAT_E4M3 || format == EVO_FORMAT_U8SIM);
    for (size_t h = 0; h < n_heads; h++) {
        const uint16_t *xh = x + h * head_elems;
        uint8_t *ch = codes + h * head_elems;
        float scale = evo_ref_head_scale(xh, head_elems);
        scales[h] = scale;
        for (size_t i = 0; i < head_elems; i++) {
            float v = evo_ref_half_to_float(xh[i]);
            ch[i] = format == EVO_FORMAT_E4M3 ? evo_ref_e4m3_encode(f_div(v, scale)) : evo_ref_u8sim_encode(v, scale);
        }
    }
}

void evo_ref_dequantize(const uint8_t *codes, const float *scales, size_t n_heads, size_t head_elems, int format,
                        float *out)
{
    EVO_ASSERT(format == EVO_FORMAT_E4M3 || format == EVO_FORMAT_U8SIM);
    for (size_t h = 0; h < n_heads; h++) {
        for (size_t i = h * head_elems; i < (h + 1) * head_elems; i++)
            out[i] = format == EVO_FORMAT_E4M3 ? f_mul(evo_ref_e4m3_decode(codes[i]), scales[h])
                                               : evo_ref_u8sim_decode(codes[i], scales[h]);
    }
}

/* ---- reference attention ---- */

static double row_score(const float *qi, const float *kj, int d, double softmax_scale)
{
    double s = 0.0;
    for (int t = 0; t < d; t++) s += (double)qi[t] * (double)kj[t];
    return s * softmax_scale;
}

void evo_ref_attention(const float *q, const float *k, const float *v, double *o, int batch, int heads, int seq,
                       int head_dim, int causal, double softmax_scale)
{
    EVO_ASSERT(batch >= 1 && heads >= 1 && seq >= 1 && head_dim >= 1);
    size_t head = (size_t)seq * (size_t)head_dim;
    for (size_t bh = 0; bh < (size_t)batch * (size_t)heads; bh++) {
        const float *qh = q + bh * head, *kh = k + bh * head, *vh = v + bh * head;
        double *oh = o + bh * head;
        for (int i = 0; i < seq; i++) {
            const float *qi = qh + (size_t)i * head_dim;
            double *oi = oh + (size_t)i * head_dim;
            int n_keys = causal ? i + 1 : seq;
            EVO_ASSERT(n_keys >= 1); /* key 0 is always visible, so no row is fully masked */
            double mx = -INFINITY;
            for (int j = 0; j < n_keys; j++) mx = fmax(mx, row_score(qi, kh + (size_t)j * head_dim, head_dim,
                                                                    softmax_scale));
            for (int t = 0; t < head_dim; t++) oi[t] = 0.0;
            double l = 0.0;
            for (int j = 0; j < n_keys; j++) {
                double p = exp(row_score(qi, kh + (size_t)j * head_dim, head_dim, softmax_scale) - mx);
                const float *vj = vh + (size_t)j * head_dim;
                l += p;
                for (int t = 0; t < head_dim; t++) oi[t] += p * (double)vj[t];
            }
            for (int t = 0; t < head_dim; t++) oi[t] /= l;
        }
    }
}
