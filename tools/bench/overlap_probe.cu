/* overlap_probe.cu — does tensor-core work slow a softmax running beside it on the same SM?
 *
 *   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Itemplates -Itasks/attention_fp8 \
 *        tools/bench/overlap_probe.cu -o overlap_probe && ./overlap_probe [--iters N]
 *
 * One block of 256 threads on every SM (two warpgroups, as the sm_90a kernels' two consumers). Warpgroup 0 runs N
 * iterations of a softmax-shaped loop over 64 scores a thread, the instruction mix of one key tile of the kernels'
 * softmax (an FMNMX tree, two shuffles, FFMA and MUFU.EX2 per score, F2FP packs); warpgroup 1 runs a partner:
 *   idle      nothing
 *   softmax   the same loop (two softmaxes side by side, as two consumer warpgroups' overlap)
 *   qk128     wgmma m64n128k32 e4m3, A and B from shared memory, two k-steps a group, each group waited (Q·Kᵀ of a
 *             128-key tile at head dim 64)
 *   qk256     the same with m64n256k32 (twice the accumulator)
 *   pv64rs    wgmma m64n64k32 e4m3 with A from registers (P̃·V at head dim 64), four k-steps a group
 *   qk128d128 wgmma m64n128k32 e4m3 on 128-byte rows with the 128-byte swizzle, four k-steps a group (Q·Kᵀ of a
 *             128-key tile at head dim 128, the large problems' layout; not yet run on a GPU)
 * The partner's work is sized from a run of it alone so that it outlasts warpgroup 0's loop. Printed per mode
 * (median over the blocks): warpgroup 0's clocks per iteration, its slowdown against idle, and the partner's
 * clocks per group or iteration, beside the softmax against alone.
 * Caveat (H200, 2026-11-29): the GEMM partners of head dim 64's layout ran faster than the documented dense FP8 rate
 * allows (two m64n128k32 in 84 clocks, also with four copies of the operands taken in turn), so they do not load the
 * SM as a real tile's GEMMs do, for a reason not found; their slowdown of the softmax is a lower bound
 * (docs/perf-notes.md, "The softmax's own chain, and the tensor cores beside it"). The softmax-beside-softmax mode has
 * no such doubt; qk128d128, the large problems' layout, is the next measurement.
 */
#include "attention_fp8_sm90.cu"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace evo_sm90;

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

enum { P_IDLE, P_SOFTMAX, P_QK128, P_QK256, P_PV64RS, P_QK128D128, P_MODES };
static const char *mode_name[P_MODES] = {"idle", "softmax", "qk128", "qk256", "pv64rs", "qk128d128"};

/* the GEMM partners' operands: COPIES copies of A (64 x 64 bytes) and of B (256 x 64 bytes), one per group in turn */
constexpr u32 COPIES = 4, A_BYTES = 64 * 64, B_BYTES = 256 * 64, OPERAND_BYTES = COPIES * (A_BYTES + B_BYTES);
/* qk128d128's operands after those: COPIES x (A 64 x 128 bytes, B 128 x 128 bytes) */
constexpr u32 A128_BYTES = 64 * 128, B128_BYTES = 128 * 128, OPERAND128_BYTES = COPIES * (A128_BYTES + B128_BYTES);
constexpr u32 SMEM_BYTES = OPERAND_BYTES + OPERAND128_BYTES + 1024;

struct ProbeOut {
    unsigned long long t0[2], t1[2]; /* per warpgroup: first and last clock of its work */
    unsigned long long work[2];      /* iterations (softmax) or GEMM groups done */
    float sink;
};

/* one key tile's softmax for 64 scores a thread; returns a value that depends on all of it */
EVO_DEV float softmax_iters(int iters, float seed)
{
    float v[64];
#pragma unroll
    for (int i = 0; i < 64; i++) v[i] = seed + 0.01f * (float)i;
    u32 acc = 0u;
    for (int it = 0; it < iters; it++) {
        float m = row_max<0, 16>(v, 0);
        m = fmaxf(m, row_max<0, 16>(v, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        const float bias = -m * 1.4426950408889634f;
#pragma unroll
        for (int i = 0; i < 64; i += 2) {
            const float p0 = ex2(fmaf(v[i], 1.4426950408889634f, bias));
            const float p1 = ex2(fmaf(v[i + 1], 1.4426950408889634f, bias));
            acc ^= pack_f16x2(p0, p1);
            v[i] = fmaf(p0, 0.5f, v[i]); /* the next iteration's scores depend on this one's */
            v[i + 1] = fmaf(p1, 0.5f, v[i + 1]);
        }
    }
    return __uint_as_float(acc & 0x3fffffffu) + v[63];
}

template <int N> EVO_DEV float gemm_ss(u32 a_addr, u32 b_addr, long long groups)
{
    float d[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; i++) d[i] = 0.f;
    const u64 ad = make_desc(a_addr, 16, 8 * 64, 64), bd = make_desc(b_addr, 16, 8 * 64, 64);
    for (long long g = 0; g < groups; g++) {
        const u32 c = (u32)(g & (COPIES - 1)); /* another copy of the operands every group */
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 2; kk++)
            WgQK<N>::mma(d, desc_at(ad, c * A_BYTES + kk * 32), desc_at(bd, c * B_BYTES + kk * 32), kk > 0);
        wg_commit();
        wg_wait<0>();
    }
    fence_regs(d);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; i++) s += d[i];
    return s;
}

/* Q·Kᵀ at head dim 128: four k-steps of m64n128k32 on 128-byte rows, 128-byte swizzle (the kernels' D = 128 layout) */
EVO_DEV float gemm_ss_d128(u32 a_addr, u32 b_addr, long long groups)
{
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] = 0.f;
    const u64 ad = make_desc(a_addr, 16, 8 * 128, 128), bd = make_desc(b_addr, 16, 8 * 128, 128);
    for (long long g = 0; g < groups; g++) {
        const u32 c = (u32)(g & (COPIES - 1));
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            WgQK<128>::mma(d, desc_at(ad, c * A128_BYTES + kk * 32), desc_at(bd, c * B128_BYTES + kk * 32), kk > 0);
        wg_commit();
        wg_wait<0>();
    }
    fence_regs(d);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; i++) s += d[i];
    return s;
}

EVO_DEV float gemm_rs64(u32 b_addr, long long groups)
{
    float d[32];
#pragma unroll
    for (int i = 0; i < 32; i++) d[i] = 0.f;
    u32 a[4][4];
#pragma unroll
    for (int c = 0; c < 4; c++)
#pragma unroll
        for (int k = 0; k < 4; k++) a[c][k] = 0x38383838u ^ (u32)(threadIdx.x * 7 + c * 4 + k); /* e4m3 near 1 */
    const u64 bd = make_desc(b_addr, 16, 8 * 64, 64);
    for (long long g = 0; g < groups; g++) {
        const u32 cp = (u32)(g & (COPIES - 1)) * B_BYTES;
        wg_fence();
#pragma unroll
        for (int c = 0; c < 4; c++)
            WgPV8<64>::mma(d, a[c][0], a[c][1], a[c][2], a[c][3], desc_at(bd, cp + (c & 1) * 32), c > 0);
        wg_commit();
        wg_wait<0>();
    }
    fence_regs(d);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 32; i++) s += d[i];
    return s;
}

template <int MODE>
__global__ void __launch_bounds__(256, 1) probe(int soft_iters, long long partner_work, ProbeOut *out)
{
    constexpr int mode = MODE;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = ((u32)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
    /* operands: COPIES x (A, B), e4m3 values between 1/4 and 2 that differ word to word (no infinities: every group
     * starts its accumulator from zero) */
    for (int i = threadIdx.x; i < (int)((OPERAND_BYTES + OPERAND128_BYTES) / 4); i += blockDim.x) {
        const u32 h = (u32)i * 2654435761u;
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(base + 4u * (u32)i), "r"(0x30303030u | (h & 0x0f0f0f0fu)));
    }
    fence_proxy_async();
    __syncthreads();
    const int wg = threadIdx.x >> 7;
    unsigned long long t0 = clock64();
    float sink = 0.f;
    long long done = 0;
    if (wg == 0) {
        sink = softmax_iters(soft_iters, (float)(threadIdx.x & 31) * 0.1f);
        done = soft_iters;
    } else {
        const u32 a_addr = base, b_addr = base + COPIES * A_BYTES;
        if constexpr (MODE == P_SOFTMAX) sink = softmax_iters((int)partner_work, 0.3f);
        else if constexpr (MODE == P_QK128) sink = gemm_ss<128>(a_addr, b_addr, partner_work);
        else if constexpr (MODE == P_QK256) sink = gemm_ss<256>(a_addr, b_addr, partner_work);
        else if constexpr (MODE == P_PV64RS) sink = gemm_rs64(b_addr, partner_work);
        else if constexpr (MODE == P_QK128D128)
            sink = gemm_ss_d128(base + OPERAND_BYTES, base + OPERAND_BYTES + COPIES * A128_BYTES, partner_work);
        done = mode == P_IDLE ? 0 : partner_work;
    }
    unsigned long long t1 = clock64();
    if ((threadIdx.x & 127) == 0) {
        ProbeOut &o = out[blockIdx.x];
        o.t0[wg] = t0;
        o.t1[wg] = t1;
        o.work[wg] = (unsigned long long)done;
    }
    if (sink == 1234.5f) out[blockIdx.x].sink = sink; /* keeps the work */
}

struct Result {
    double wg0_per_iter, wg1_per_unit, overlap_frac;
};

typedef void (*ProbeFn)(int, long long, ProbeOut *);
static const ProbeFn probes[P_MODES] = {probe<P_IDLE>,  probe<P_SOFTMAX>, probe<P_QK128>,
                                        probe<P_QK256>, probe<P_PV64RS>,  probe<P_QK128D128>};

static Result run(int mode, int soft_iters, long long partner_work, int sms)
{
    ProbeOut *d;
    CK(cudaMalloc(&d, sizeof(ProbeOut) * sms));
    CK(cudaMemset(d, 0, sizeof(ProbeOut) * sms));
    const int smem = (int)SMEM_BYTES;
    for (int rep = 0; rep < 2; rep++) { /* the first launch warms up */
        probes[mode]<<<sms, 256, smem>>>(soft_iters, partner_work, d);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    }
    std::vector<ProbeOut> h(sms);
    CK(cudaMemcpy(h.data(), d, sizeof(ProbeOut) * sms, cudaMemcpyDeviceToHost));
    CK(cudaFree(d));
    std::vector<double> a, b, f;
    for (const ProbeOut &o : h) {
        const double w0 = (double)(o.t1[0] - o.t0[0]), w1 = (double)(o.t1[1] - o.t0[1]);
        if (soft_iters) a.push_back(w0 / soft_iters);
        if (o.work[1]) b.push_back(w1 / (double)o.work[1]);
        if (soft_iters && o.work[1]) { /* how much of warpgroup 0's loop the partner covered */
            const double lo = (double)std::max(o.t0[0], o.t0[1]), hi = (double)std::min(o.t1[0], o.t1[1]);
            f.push_back(std::max(0.0, hi - lo) / w0);
        }
    }
    auto med = [](std::vector<double> &v) {
        if (v.empty()) return 0.0;
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    return Result{med(a), med(b), med(f)};
}

int main(int argc, char **argv)
{
    int iters = 2000;
    for (int i = 1; i < argc; i++) {
        char *end = nullptr;
        const long v = !strcmp(argv[i], "--iters") && i + 1 < argc ? strtol(argv[++i], &end, 10) : 0;
        if (!end || *end || v < 1 || v > 1000000) {
            fprintf(stderr, "usage: %s [--iters N]   (N: softmax iterations, 1 to 1000000; got '%s')\n", argv[0],
                    argv[i]);
            return 2;
        }
        iters = (int)v;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    for (ProbeFn f : probes)
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    const int sms = prop.multiProcessorCount;
    printf("device %s (%d SMs); warpgroup 0: %d softmax iterations of 64 scores a thread; medians over the blocks\n",
           prop.name, sms, iters);
    const Result alone = run(P_IDLE, iters, 0, sms);
    printf("%-8s  wg0 %8.1f clocks/iter\n", mode_name[P_IDLE], alone.wg0_per_iter);
    for (int m = P_SOFTMAX; m < P_MODES; m++) {
        /* the partner alone, then sized to last 1.5x warpgroup 0's loop */
        const long long probe_units = m == P_SOFTMAX ? 200 : 2000;
        const Result p = run(m, 0, probe_units, sms);
        const long long units = (long long)(1.5 * alone.wg0_per_iter * iters / p.wg1_per_unit) + 1;
        const Result r = run(m, iters, units, sms);
        printf("%-8s  wg0 %8.1f clocks/iter (%.3fx idle)   partner alone %8.1f, beside %8.1f clocks/%s (%.3fx); "
               "overlap %.2f\n",
               mode_name[m], r.wg0_per_iter, r.wg0_per_iter / alone.wg0_per_iter, p.wg1_per_unit, r.wg1_per_unit,
               m == P_SOFTMAX ? "iter" : "group", r.wg1_per_unit / p.wg1_per_unit, r.overlap_frac);
    }
    return 0;
}
