/* attn_ref.c — the attention task's CPU references: the per-head quantizer and an FP64 reference attention (see
 * attn_ref.h). The quantizer is written with the same float operations in the same order as templates/support.cu's
 * evo_quantize, one rounding each (no fused multiply-add: the pragmas below), so the two agree bit for bit.
 */
#include "attn_ref.h"

#include "evo.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

_Static_assert(EVO_FORMAT_E4M3 == 0 && EVO_FORMAT_U8SIM == 1, "formats are numbered as in support.cu");

static inline float f_mul(float a, float b) { return a * b; }
static inline float f_div(float a, float b) { return a / b; }

static inline float e4m3_round(float x) { return evo_ref_e4m3_decode(evo_ref_e4m3_encode(x)); }
#define AN_FN static inline
#define AN_E4M3_ROUND(x) e4m3_round(x)
#define AN_NORMAL(seed, t, i) evo_ref_half_to_float(evo_ref_gen_value(seed, t, 0, 0, i))
#define AN_WORD(seed, t, i) evo_ref_gen_word(seed, t, i)
#include "attn_numerics.h"

/* ---- quantizer ---- */

float evo_ref_head_scale(const uint16_t *x, size_t head_elems)
{
    float absmax = 0.0f;
    for (size_t i = 0; i < head_elems; i++) absmax = fmaxf(absmax, fabsf(evo_ref_half_to_float(x[i])));
    return absmax == 0.0f ? 1.0f : f_div(absmax, EVO_E4M3_MAX);
}

void evo_ref_quantize(const uint16_t *x, size_t n_heads, size_t head_elems, int format, uint8_t *codes, float *scales)
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
            for (int j = 0; j < n_keys; j++)
                mx = fmax(mx, row_score(qi, kh + (size_t)j * head_dim, head_dim, softmax_scale));
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

/* ---- the FP8 model and the probes (attn_numerics.h) ---- */

void evo_ref_fp8_model(const uint8_t *q, const float *q_scale, const uint8_t *k, const float *k_scale, const uint8_t *v,
                       const float *v_scale, float *o, int batch, int heads, int seq, int head_dim, int causal,
                       float softmax_scale, int order)
{
    EVO_ASSERT(batch >= 1 && heads >= 1 && seq >= 1 && head_dim >= 1 && order >= 0 && order < AN_FP8_ORDERS);
    const size_t head = (size_t)seq * (size_t)head_dim;
    float *kf = malloc(2 * head * sizeof *kf), *qf = malloc((size_t)head_dim * 2 * sizeof *qf);
    EVO_ASSERT(kf && qf);
    float *vf = kf + head, *acc = qf + head_dim;
    const float sm_log2e = f_mul(softmax_scale, 1.4426950408889634f);
    for (size_t bh = 0; bh < (size_t)batch * (size_t)heads; bh++) {
        for (size_t i = 0; i < head; i++) {
            kf[i] = evo_ref_e4m3_decode(k[bh * head + i]);
            vf[i] = evo_ref_e4m3_decode(v[bh * head + i]);
        }
        const float qk = f_mul(q_scale[bh], k_scale[bh]);
        for (int i = 0; i < seq; i++) {
            for (int t = 0; t < head_dim; t++) qf[t] = evo_ref_e4m3_decode(q[bh * head + (size_t)i * head_dim + t]);
            an_model_row(qf, kf, vf, causal ? i + 1 : seq, head_dim, qk, sm_log2e, v_scale[bh], order, acc,
                         o + bh * head + (size_t)i * head_dim);
        }
    }
    free(kf);
    free(qf);
}

void evo_ref_gen_probe(uint16_t *out, size_t n, int probe, uint64_t seed, uint32_t tensor, int seq, int head_dim)
{
    EVO_ASSERT(probe >= 0 && probe < AN_PROBE_COUNT && tensor < 3 && seq >= 1 && head_dim >= 2);
    for (size_t i = 0; i < n; i++)
        out[i] = evo_ref_float_to_half(an_probe_value(probe, seed, tensor, seq, head_dim, i));
}

float evo_ref_probe_softmax_scale(int probe, int sub, int head_dim)
{
    if (probe == AN_PROBE_INTEGERS) return 0.693147180559945f;
    if (probe == AN_PROBE_MODERATE) return (float)((sub == 0 ? 0.5 : sub == 1 ? 1.0 : 2.0) / sqrt((double)head_dim));
    return 0.0f;
}
