/* evo_attention_abi.h — the ABI of every attention kernel evo runs: the templates, exported kernels and
 * hand-written kernels checked with `evo check`. Included by the CUDA side (NVRTC or nvcc) and by the C engine,
 * so both agree on the layout (docs/templates.md explains it).
 *
 * Inputs Q, K, V are 8-bit codes, layout [B, H, S, D] contiguous; one float scale per (batch, head) for each of
 * Q, K, V; output O is FP16 [B, H, S, D]. O = softmax(Q·Kᵀ · softmax_scale [+ causal mask]) · V computed on the
 * dequantized values. Grid: x = ceil(S / rows_per_block), y = H, z = B; block = threads; dynamic shared memory
 * = smem_bytes.
 */
#ifndef EVO_ATTENTION_ABI_H
#define EVO_ATTENTION_ABI_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EVO_DPTR(T) T *
#else
#define EVO_DPTR(T) unsigned long long /* a CUdeviceptr: same size and alignment as a device pointer */
#endif

/* 8-bit formats. E4M3: OCP FP8 e4m3fn, scale = absmax/448 (1 for an all-zero head), code = e4m3(x/scale)
 * saturating; decode = e4m3_value(code) * scale.
 * U8SIM: the simulated encoding, scale = absmax/448 (1 for an all-zero head),
 * code = clamp(round(x / (scale*448) * 127 + 128), 0, 255); decode = (code - 128) / 127 * 448 * scale. */
#define EVO_FORMAT_E4M3 0
#define EVO_FORMAT_U8SIM 1

typedef struct {
    EVO_DPTR(const unsigned char) q;
    EVO_DPTR(const unsigned char) k;
    EVO_DPTR(const unsigned char) v;
    EVO_DPTR(const float) q_scale; /* [B*H] */
    EVO_DPTR(const float) k_scale;
    EVO_DPTR(const float) v_scale;
    EVO_DPTR(unsigned short) o; /* fp16 bits, [B, H, S, D] */
    int batch, heads, seq, head_dim;
    int causal;          /* 1: key j is masked for query i when j > i */
    float softmax_scale; /* usually 1/sqrt(D) */
} evo_attn_params;

/* What a hand-written kernel declares next to each entry point `evo_attn_d64` / `evo_attn_d128`:
 *   extern "C" __constant__ evo_attn_launch evo_attn_d64_launch = {threads, rows_per_block, smem_bytes, format};
 */
typedef struct {
    int threads;        /* block size */
    int rows_per_block; /* query rows per block (grid.x = ceil(S / rows_per_block)) */
    int smem_bytes;     /* dynamic shared memory */
    int format;         /* EVO_FORMAT_E4M3 or EVO_FORMAT_U8SIM */
} evo_attn_launch;

#endif
