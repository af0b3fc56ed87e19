/* fp8_model_lib.cu — evo's gate kernels as a shared library for the calibration scripts (tools/bench/
 * fp8_calibrate.py): the input generator of support.cu, the quantizer and dequantizer of attn_ref.cu and the FP8
 * model of attn_support.cu, the same code a worker runs, behind plain extern "C" launchers on a stream.
 * Build: nvcc -arch=sm_90 -O3 -shared -Xcompiler -fPIC -Itemplates -Itasks/attention_fp8 \
 *          tools/bench/fp8_model_lib.cu -o libevo_fp8_model.so */
#include "support.cu"
#include "attn_ref.cu"
#include "attn_support.cu"

extern "C" int evo_lib_gen(unsigned short *out, unsigned long long n, unsigned long long head_elems,
                           unsigned long long seed, unsigned tensor, int dist, void *stream)
{
    evo_gen_inputs<<<4096, 256, 0, (cudaStream_t)stream>>>(out, n, head_elems, seed, tensor, dist);
    return (int)cudaGetLastError();
}

extern "C" int evo_lib_probe(unsigned short *out, unsigned long long n, int probe, unsigned long long seed,
                             unsigned tensor, int seq, int head_dim, void *stream)
{
    evo_gen_probe<<<4096, 256, 0, (cudaStream_t)stream>>>(out, n, probe, seed, tensor, seq, head_dim);
    return (int)cudaGetLastError();
}

/* per-head e4m3 codes and scales of fp16 x ([n_heads, head_elems]) by evo's rules */
extern "C" int evo_lib_quantize(const unsigned short *x, unsigned char *codes, float *scales, int n_heads,
                                unsigned long long head_elems, void *stream)
{
    evo_quantize<<<n_heads, 256, 0, (cudaStream_t)stream>>>(x, codes, scales, head_elems, 0);
    return (int)cudaGetLastError();
}

extern "C" int evo_lib_dequantize(const unsigned char *codes, const float *scales, float *out, unsigned long long n,
                                  unsigned long long head_elems, void *stream)
{
    evo_dequantize<<<4096, 256, 0, (cudaStream_t)stream>>>(codes, scales, out, n, head_elems, 0);
    return (int)cudaGetLastError();
}

extern "C" int evo_lib_fp8_model(const unsigned char *q, const float *qs, const unsigned char *k, const float *ks,
                                 const unsigned char *v, const float *vs, float *o, int batch, int heads, int seq,
                                 int head_dim, int causal, float softmax_scale, int phase, void *stream)
{
    const dim3 grid((unsigned)((seq + MODEL_ROWS - 1) / MODEL_ROWS), (unsigned)heads, (unsigned)batch);
    evo_fp8_model_attention<<<grid, MODEL_THREADS, 0, (cudaStream_t)stream>>>(q, qs, k, ks, v, vs, o, batch, heads, seq,
                                                                           head_dim, causal, softmax_scale, phase, 0);
    return (int)cudaGetLastError();
}
