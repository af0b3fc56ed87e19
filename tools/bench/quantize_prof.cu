/* quantize_prof.cu — a profiler's driver for an exported quantizer: three calls of its launcher on
 * (4,16,4096,128) fp16 (inputs all 0x3c3c), so that `ncu --launch-skip 2 --launch-count 1` sees a warm third call.
 *
 *   nvcc -arch=sm_90 -O3 -DQFILE='"quantize_fp8-sm_90-ID.cu"' -I DIR_OF_THE_FILE tools/bench/quantize_prof.cu -o prof
 *   ncu -k regex:evo_quant --launch-skip 2 --launch-count 1 --set full ./prof
 */
#include QFILE
#include <cstdio>

int main()
{
    const int b = 4, h = 16, s = 4096, d = 128;
    const size_t n = (size_t)b * h * s * d;
    void *x = nullptr, *c = nullptr, *sc = nullptr, *scr = nullptr;
    if (cudaMalloc(&x, n * 2) != cudaSuccess || cudaMalloc(&c, n) != cudaSuccess ||
        cudaMalloc(&sc, (size_t)b * h * 4) != cudaSuccess) {
        printf("prof: cudaMalloc failed\n");
        return 2;
    }
    cudaMemset(x, 0x3c, n * 2);
    const unsigned long long need = evo_quantize_scratch_bytes(0, 0, b, h, s, d);
    if (need == ~0ull) {
        printf("prof: this quantizer has no fp16 variant for head dim %d\n", d);
        return 2;
    }
    if (need && (cudaMalloc(&scr, need) != cudaSuccess || cudaMemset(scr, 0, need) != cudaSuccess)) return 2;
    for (int i = 0; i < 3; i++) {
        const int e = evo_quantize_forward(x, 0, 0, c, (float *)sc, b, h, s, d, scr, need, 0);
        if (e) {
            printf("prof: evo_quantize_forward returned %d\n", e);
            return 1;
        }
    }
    const cudaError_t e = cudaDeviceSynchronize();
    printf("prof: three calls done (%s)\n", cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
