/* quantize_ref.h — the trusted CPU side of the quantize_fp8 task: bf16, the fixed rotation (incoherent
 * processing) and the per-head e4m3 quantizer of fp16/bf16 tensors. quantize_fp8.cu is its GPU twin, bit for bit.
 *
 * Contract: pure functions of their arguments, no allocation, no global state, thread-safe. Tensors are
 * [B, H, S, D] contiguous; a head is S*D elements, heads numbered b*H + h; fp16 and bf16 values travel as uint16_t
 * bits, dtypes are EVO_QUANT_IN_F16 / EVO_QUANT_IN_BF16 (evo_quantize_abi.h). The e4m3 encoder and fp16 decoder
 * are engine/core/numerics.h's, so the rule is the attention gate's.
 *
 * Rotation of one row x[0..D) (D a power of two, 16..256), in this order, every step rounded to float:
 *   1. v_i = -x_i where s_i = -1 (an exact sign flip; s from evo_quant_sign_word, evo_quantize_abi.h)
 *   2. for h = 1, 2, 4, .., D/2: for every i with (i & h) == 0: (v_i, v_{i+h}) = (v_i + v_{i+h}, v_i - v_{i+h})
 *   3. y_i = v_i * evo_quant_rsqrt_d(D) (1/sqrt(D) rounded to float)
 * so y = H·(s∘x)/sqrt(D); the inverse is x = s∘(H·y)/sqrt(D) (H symmetric, H·H = D·I).
 */
#ifndef EVO_QUANTIZE_REF_H
#define EVO_QUANTIZE_REF_H

#include "evo_quantize_abi.h"

#include <stddef.h>
#include <stdint.h>

/* ---- bf16 ---- */
float evo_qref_bf16_to_float(uint16_t b); /* exact */
uint16_t evo_qref_float_to_bf16(float x); /* round to nearest even; overflow -> inf; NaN -> 0x7fc0 | sign */
float evo_qref_in_to_float(uint16_t bits, int in_dtype); /* fp16 or bf16 bits -> float, exact */

/* ---- rotation ---- */
int evo_qref_sign(int i);                         /* s_i: +1 or -1 (any i < 256) */
void evo_qref_rotate_row(float *v, int head_dim); /* in place, the three steps above; head_dim 16..256, pow2 */

/* ---- scale and quotient ---- */
/* absmax / 448 in float, 1 when absmax is 0 (absmax >= 0, not NaN). */
float evo_qref_scale(float absmax);
/* 1 when the kernels take the fast quotient for this scale: 2^-60 <= scale <= 2^60. */
int evo_qref_scale_fast(float scale);
/* The kernels' fast quotient: inv = RN(1/scale), q = RN(a*inv), then twice q = RN(q - RN(scale*q - a)*inv) with
 * fused multiply-adds (fmaf). When evo_qref_scale_fast(scale): equals RN(a/scale) bit for bit if |a| and |a/scale|
 * are at least 2^-100 (Markstein: exact remainders, no subnormal quotient), and gives the same e4m3 code always
 * (below that both are zeros of a's sign). The tests check it against a division over fp16 and bf16 pairs; the
 * reference itself divides. */
float evo_qref_quot_fast(float a, float scale, float inv);
/* The same with one correction: q = RN(a*inv), then q = RN(q - RN(scale*q - a)*inv). Equals RN(a/scale) bit for bit
 * when a is an fp16 or bf16 value, scale = evo_qref_scale(m) for an absmax m of the same type with |a| <= m, and
 * evo_qref_scale_fast(scale) (every such pair: the tests check them all with EVO_QUANT_EXHAUSTIVE set, a sample
 * otherwise). The kernels take it for unrotated inputs, the two-correction form for floats after the rotation. */
float evo_qref_quot_fast1(float a, float scale, float inv);

/* ---- quantization ---- */
/* scales[h] and codes of n_heads heads of seq*head_dim elements each: absmax over the head's values (rotated rows
 * when rotate), NaN ignored; scale = evo_qref_scale(absmax); code = evo_ref_e4m3_encode(value / scale), the
 * quotient rounded in float. rotate needs head_dim a power of two 16..256. */
void evo_qref_quantize(const uint16_t *x, int in_dtype, int rotate, size_t n_heads, size_t seq, int head_dim,
                       uint8_t *codes, float *scales);

#endif
