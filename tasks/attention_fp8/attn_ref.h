/* attn_ref.h — the attention task's trusted CPU side: the per-head quantizer and an FP64 reference attention, on
 * top of the shared number formats and generator of numerics.h. templates/support.cu is its GPU twin (same
 * quantizer, bit for bit); the tests hold the two together.
 *
 * Contract: pure functions of their arguments, no allocation, no global state, thread-safe. Tensors are
 * [B, H, S, D] contiguous; a "head" is the S*D elements of one (batch, head) pair, heads are numbered b*H + h.
 * Formats are EVO_FORMAT_E4M3 / EVO_FORMAT_U8SIM of evo_attention_abi.h.
 */
#ifndef EVO_ATTN_REF_H
#define EVO_ATTN_REF_H

#include "evo_attention_abi.h"
#include "numerics.h"

#include <stddef.h>
#include <stdint.h>

/* Tensor ids of the attention inputs; a different seed, not a different id, gives the timing inputs. */
enum { EVO_TENSOR_Q = 0, EVO_TENSOR_K = 1, EVO_TENSOR_V = 2 };

/* ---- per-head quantization ---- */
/* absmax(|x|) / 448 in float (NaN elements ignored), 1.0 when the head is all zeros. */
float evo_ref_head_scale(const uint16_t *x, size_t head_elems);
/* Quantizes n_heads heads of head_elems fp16 values: scales[h] = evo_ref_head_scale(head h); codes[i] =
 * encode(x[i] / scale) for e4m3 (the quotient rounded in float), evo_ref_u8sim_encode(x[i], scale) for u8sim. */
void evo_ref_quantize(const uint16_t *x, size_t n_heads, size_t head_elems, int format, uint8_t *codes, float *scales);
/* out[i] = decode(codes[i]) * scale (e4m3, one float multiply) or evo_ref_u8sim_decode (u8sim). */
void evo_ref_dequantize(const uint8_t *codes, const float *scales, size_t n_heads, size_t head_elems, int format,
                        float *out);

/* ---- launch geometry of attn_ref.cu, the GPU twin (its top comment gives each kernel's arguments) ---- */
#define ATTN_REF_BLOCK 128         /* evo_reference_attention: 4 warps, four query rows each */
#define ATTN_REF_ROWS 16           /* grid = (ceil(S / 16), H, B) */
#define ATTN_REF_ROWWISE_BLOCK 256 /* evo_reference_attention_rowwise, its yardstick: 8 warps, one row each ... */
#define ATTN_REF_ROWWISE_ROWS 8    /* ... grid = (ceil(S / 8), H, B) */
#define ATTN_REF_MAX_D 128
#define ATTN_MODEL_ROWS 8      /* attn_support.cu's evo_fp8_model_attention: query rows per block ... */
#define ATTN_MODEL_THREADS 128 /* ... and threads per block (16 a row): grid = (ceil(rows / 8), H, B) */

/* ---- reference attention ---- */
/* o = softmax(q·kᵀ · softmax_scale, key j masked for query i when causal and j > i) · v, in double on float
 * inputs (the dequantized tensors), output double [B, H, S, D]. Exact up to FP64 rounding. */
void evo_ref_attention(const float *q, const float *k, const float *v, double *o, int batch, int heads, int seq,
                       int head_dim, int causal, double softmax_scale);

/* ---- the fp8 accuracy class (attn_numerics.h holds the arithmetic, shared with the GPU and the export) ---- */
/* The FP8 model, its scores added in order 0..AN_FP8_ORDERS-1, on e4m3 codes with one scale per head: o float
 * [B, H, S, D]. Bit for bit the GPU's evo_fp8_model_attention (attn_support.cu). */
void evo_ref_fp8_model(const uint8_t *q, const float *q_scale, const uint8_t *k, const float *k_scale, const uint8_t *v,
                       const float *v_scale, float *o, int batch, int heads, int seq, int head_dim, int causal,
                       float softmax_scale, int order);

/* ---- structural probes (AN_PROBE_* of attn_numerics.h) ---- */
/* n elements of tensor (0 Q, 1 K, 2 V) of a probe's inputs, as fp16 bits; bit for bit the GPU's evo_gen_probe. */
void evo_ref_gen_probe(uint16_t *out, size_t n, int probe, uint64_t seed, uint32_t tensor, int seq, int head_dim);
/* The softmax scale sub-case `sub` of a probe checks with (0: the shape's own). */
float evo_ref_probe_softmax_scale(int probe, int sub, int head_dim);

#endif
