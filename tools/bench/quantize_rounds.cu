/* quantize_rounds.cu — measures a candidate structure for the quantizer before it becomes a mode: a resident grid
 * in which every thread keeps the chunks of its last rounds in registers (DRAM read once, no shared-memory ring):
 * round r's loads are issued before round r-1's absmax is reduced and published and round r-1-LAG's codes are
 * written, so rounds of loads are always in flight. Heads complete through one slot word per chunk, as in mode 3.
 * fp16, no rotation. Prints, on (4,16,4096,128) and (1,16,16384,64): device-to-device copy of the same bytes, the
 * one-pass probe (scale known), and each variant (bit-exact check against the CPU reference first).
 * Measured slower than mode 3 (docs/perf-notes.md, "Register rounds"); kept to repeat the measurement.
 * Build: nvcc -O2 -std=c++17 -arch=sm_90 -Itasks/quantize_fp8 -Iengine/core tools/bench/quantize_rounds.cu
 *        build/quantize/{quantize_ref,numerics,evo}.o -o build/quantize/quantize_rounds   (tools/bench/quantize_build.sh
 *        builds the objects)
 */
#include "quantize_fp8.cu"

extern "C" {
#include "quantize_ref.h"
}

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "quantize_probes.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using evoq::u32;
using evoq::u64;

/* One thread's V 16-byte vectors of a round. */
template <int V> struct Set {
    uint4 v[V];
};

template <int V> __device__ __forceinline__ u32 set_absmax(const Set<V> &s)
{
    u32 m = 0u;
#pragma unroll
    for (int i = 0; i < V; i++) {
        const u32 w[4] = {s.v[i].x, s.v[i].y, s.v[i].z, s.v[i].w};
#pragma unroll
        for (int k = 0; k < 4; k++) asm("max.f16x2 %0, %0, %1;" : "+r"(m) : "r"(w[k] & 0x7fff7fffu));
    }
    return m;
}

template <int V> __device__ __forceinline__ void set_encode(const Set<V> &s, unsigned char *dst, float sc, float inv)
{
#pragma unroll
    for (int i = 0; i < V; i++) {
        const u32 w[4] = {s.v[i].x, s.v[i].y, s.v[i].z, s.v[i].w};
        u32 o[2];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            float f0, f1, f2, f3;
            evoq::h2_to_f2(w[2 * k], f0, f1);
            evoq::h2_to_f2(w[2 * k + 1], f2, f3);
            o[k] = evoq::enc2<1>(evoq::quot<1>(f0, sc, inv), evoq::quot<1>(f1, sc, inv)) |
                   (evoq::enc2<1>(evoq::quot<1>(f2, sc, inv), evoq::quot<1>(f3, sc, inv)) << 16);
        }
        asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(dst + i * 256), "r"(o[0]), "r"(o[1]) : "memory");
    }
}

/* Thread t of block b holds, in round r, vectors (i * 32 + lane) of its warp's 32*V-vector piece of chunk
 * c = r * grid + b (chunk = THREADS * V vectors of 8 fp16, whole inside one head: cph chunks per head, cph <= 32*SL).
 * Iteration r: issue round r+DEPTH; read the slots of round r-LAG's head (issued before the absmax waits for its
 * data); absmax of round r, one barrier, thread 0 publishes it in the chunk's slot (one word: no release needed);
 * every warp completes its slot reads itself and encodes its piece of round r-LAG. */
template <int V, int LAG, int DEPTH, int T, int MINB, int SL>
__global__ void __launch_bounds__(T, MINB)
    rounds_kernel(const uint4 *__restrict__ x, unsigned char *__restrict__ codes, float *__restrict__ scales,
                  u32 *words, u32 n_heads, u32 head_vecs, u32 cph, u32 chunks, u32 epoch)
{
    constexpr int K = LAG + 1 + DEPTH; /* register sets */
    constexpr int W = T / 32;
    __shared__ u32 red[2][W];
    u32 *slot = words + (epoch & 1u) * chunks, *other = words + ((epoch + 1u) & 1u) * chunks;
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, grid = gridDim.x, b = blockIdx.x;
    const u32 rounds = b < chunks ? (chunks - b + grid - 1u) / grid : 0u;
    const u32 chunk_vecs = (u32)T * V;
    auto vec_of = [&](u32 r, u32 &h, u32 &v0, u32 &nvc) { /* the chunk of round r: head, first vector, vectors */
                                                          const u32 c = r * grid + b;
                                                          h = c / cph;
                                                          v0 = (c % cph) * chunk_vecs;
                                                          nvc = min(chunk_vecs, head_vecs - v0);
    };
    auto issue = [&](Set<V> &s, u32 r) {
        u32 h, v0, nvc;
        vec_of(r, h, v0, nvc);
        const u32 j = warp * 32u * V + lane;
        const uint4 *p = x + (u64)h * head_vecs + v0 + j;
#pragma unroll
        for (int i = 0; i < V; i++) {
            if (j + i * 32u < nvc)
                asm volatile("ld.global.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(s.v[i].x), "=r"(s.v[i].y), "=r"(s.v[i].z), "=r"(s.v[i].w)
                             : "l"(p + i * 32));
            else
                s.v[i] = make_uint4(0, 0, 0, 0);
        }
    };
    Set<V> set[K];
#pragma unroll
    for (int d = 0; d < DEPTH; d++)
        if ((u32)d < rounds) issue(set[d], (u32)d);
    const u32 total = rounds + LAG;
    for (u32 r0 = 0; r0 < total; r0 += K) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            const u32 r = r0 + (u32)k;
            if (r >= total) break;
            if (r + DEPTH < rounds) issue(set[(k + DEPTH) % K], r + DEPTH);
            const bool enc = r >= (u32)LAG && r - (u32)LAG < rounds;
            const u32 e = r - (u32)LAG;
            u32 eh = 0, ev0 = 0, envc = 0;
            u32 sv[SL];
            if (enc) {
                vec_of(e, eh, ev0, envc);
#pragma unroll
                for (int i = 0; i < SL; i++) {
                    const u32 q = lane + 32u * i;
                    sv[i] = q < cph ? evoq::ld_relaxed(&slot[eh * cph + q]) : 0x80000000u;
                }
            }
            const bool pub = r < rounds;
            if (pub) {
                u32 m = set_absmax<V>(set[k]);
                float f = evoq::absmax_fold<EVO_QUANT_IN_F16>(m);
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) f = fmaxf(f, __shfl_xor_sync(0xffffffffu, f, o));
                if (lane == 0) red[r & 1u][warp] = __float_as_uint(f);
            }
            __syncthreads();
            if (pub && tid == 0) {
                float f = 0.0f;
#pragma unroll
                for (int w = 0; w < W; w++) f = fmaxf(f, __uint_as_float(red[r & 1u][w]));
                const u32 c = r * grid + b;
                asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(&slot[c]),
                             "r"(0x80000000u | __float_as_uint(f))
                             : "memory");
                other[c] = 0u; /* the next launch's slots */
            }
            if (enc) {
                float f = 0.0f;
#pragma unroll
                for (int i = 0; i < SL; i++) {
                    const u32 q = lane + 32u * i;
                    for (u32 ns = 32u; sv[i] == 0u; ns = ns < 512u ? 2u * ns : ns) {
                        __nanosleep(ns);
                        sv[i] = evoq::ld_relaxed(&slot[eh * cph + q]);
                    }
                    f = fmaxf(f, __uint_as_float(sv[i] & 0x7fffffffu));
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) f = fmaxf(f, __shfl_xor_sync(0xffffffffu, f, o));
                const float sc = evoq::scale_of(f), inv = __frcp_rn(sc);
                if (ev0 == 0 && tid == 0) scales[eh] = sc;
                const u32 j = warp * 32u * V + lane;
                unsigned char *dst = codes + ((u64)eh * head_vecs + ev0 + j) * 8u;
                if (j + (V - 1) * 32u < envc) set_encode<V>(set[(k + K - LAG) % K], dst, sc, inv);
            }
        }
    }
}

/* ---- baselines ---- */


static uint4 *g_flush;
static size_t g_flush_n;
static unsigned *g_sink;
static int g_sms;

template <class F> static double time_median(F f, int reps)
{
    cudaEvent_t a, b;
    QB_CHECK(cudaEventCreate(&a));
    QB_CHECK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int i = 0; i < reps + 2; i++) {
        read_kernel<<<g_sms * 8, 512>>>(g_flush, g_flush_n, g_sink);
        QB_CHECK(cudaEventRecord(a));
        f();
        QB_CHECK(cudaEventRecord(b));
        QB_CHECK(cudaEventSynchronize(b));
        float ms;
        QB_CHECK(cudaEventElapsedTime(&ms, a, b));
        if (i >= 2) t.push_back(ms * 1e3f);
    }
    QB_CHECK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    printf("(p10 %.2f p90 %.2f) ", t[t.size() / 10], t[t.size() * 9 / 10]);
    return t[t.size() / 2];
}

struct Prob {
    int b, h, s, d;
};

typedef void (*rk_t)(const uint4 *, unsigned char *, float *, u32 *, u32, u32, u32, u32, u32);

struct RV {
    const char *name;
    rk_t fn;
    int v, lag, t, sl;
};

template <int V, int LAG, int DEPTH, int T, int MINB, int SL> static RV rv(const char *name)
{
    return RV{name, rounds_kernel<V, LAG, DEPTH, T, MINB, SL>, V, LAG, T, SL};
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 30;
    cudaDeviceProp prop;
    QB_CHECK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    printf("device: %s, %d SMs, L2 %d MB\n", prop.name, g_sms, prop.l2CacheSize >> 20);
    g_flush_n = (256u << 20) / 16;
    QB_CHECK(cudaMalloc(&g_flush, g_flush_n * 16));
    QB_CHECK(cudaMemset(g_flush, 1, g_flush_n * 16));
    QB_CHECK(cudaMalloc(&g_sink, 64));
    std::vector<RV> vars = {
        rv<4, 1, 1, 256, 3, 4>("V4 L1 D1 T256x3"), rv<2, 1, 2, 256, 4, 8>("V2 L1 D2 T256x4"),
        rv<2, 1, 2, 512, 2, 4>("V2 L1 D2 T512x2"), rv<2, 1, 3, 256, 3, 8>("V2 L1 D3 T256x3"),
        rv<2, 2, 2, 256, 3, 8>("V2 L2 D2 T256x3"), rv<4, 1, 2, 256, 2, 4>("V4 L1 D2 T256x2"),
        rv<1, 1, 4, 512, 3, 8>("V1 L1 D4 T512x3"), rv<4, 1, 2, 512, 1, 2>("V4 L1 D2 T512x1"),
        rv<2, 1, 3, 512, 2, 4>("V2 L1 D3 T512x2"),
    };
    const Prob probs[] = {{4, 16, 4096, 128}, {1, 16, 16384, 64}, {4, 8, 2048, 64}};
    for (const Prob &pb : probs) {
        const size_t n = (size_t)pb.b * pb.h * pb.s * pb.d, nh = (size_t)pb.b * pb.h, he = (size_t)pb.s * pb.d;
        std::vector<uint16_t> hx(n);
        std::mt19937 rng(1234);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (size_t i = 0; i < n; i++) {
            float f = nd(rng) * (1.0f + (float)(i / he % 7));
            __half hv = __float2half_rn(f);
            memcpy(&hx[i], &hv, 2);
        }
        std::vector<uint8_t> rc(n), gc(n);
        std::vector<float> rs(nh), gs(nh);
        evo_qref_quantize(hx.data(), EVO_QUANT_IN_F16, 0, nh, pb.s, pb.d, rc.data(), rs.data());
        uint4 *dx;
        unsigned char *dc, *dbig;
        float *dsc;
        u32 *words;
        QB_CHECK(cudaMalloc(&dx, n * 2));
        QB_CHECK(cudaMalloc(&dc, n * 2));
        QB_CHECK(cudaMalloc(&dbig, n * 2));
        QB_CHECK(cudaMalloc(&dsc, nh * 4));
        QB_CHECK(cudaMalloc(&words, nh * 8 * 4096));
        QB_CHECK(cudaMemcpy(dx, hx.data(), n * 2, cudaMemcpyHostToDevice));
        const size_t bytes = n * 3 / 2;
        printf("\n(%d,%d,%d,%d) fp16, %zu bytes moved\n", pb.b, pb.h, pb.s, pb.d, 2 * bytes);
        printf("  memcpy 1.5n bytes: ");
        double tc = time_median([&] { QB_CHECK(cudaMemcpyAsync(dbig, dx, bytes, cudaMemcpyDeviceToDevice)); }, reps);
        printf("%.2f us\n", tc);
        size_t n32 = n / 16;
        int pgrid = (int)std::min<size_t>((n32 + 255) / 256, (size_t)g_sms * 16);
        printf("  probe (scale known): ");
        double tp = time_median([&] { probe_encode<<<pgrid, 256>>>(dx, (uint4 *)dc, n32, 0.5f); }, reps);
        printf("%.2f us = %.1f %% of copy\n", tp, 100 * tc / tp);
        for (const RV &v : vars) {
            int bps = 0;
            QB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, v.fn, v.t, 0));
            cudaFuncAttributes fa;
            QB_CHECK(cudaFuncGetAttributes(&fa, v.fn));
            const u32 head_vecs = (u32)(he / 8), chunk_vecs = (u32)(v.t * v.v);
            const u32 cph = (head_vecs + chunk_vecs - 1) / chunk_vecs, chunks = (u32)nh * cph;
            u32 grid = std::min<u32>(chunks, (u32)(g_sms * bps));
            if (head_vecs % chunk_vecs != 0 || cph > grid || cph > 32u * (u32)v.sl) {
                printf("  %-16s skipped (chunk %u vectors, head %u, cph %u, grid %u)\n", v.name, chunk_vecs, head_vecs,
                       cph, grid);
                continue;
            }
            QB_CHECK(cudaMemset(words, 0, nh * 8 * 4096));
            u32 epoch = 0;
            auto launch = [&] {
                epoch++;
                const uint4 *a0 = dx;
                unsigned char *a1 = dc;
                float *a2 = dsc;
                u32 *a3 = words, a4 = (u32)nh, a5 = head_vecs, a6 = cph, a7 = chunks, a8 = epoch;
                void *args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8};
                QB_CHECK(cudaLaunchCooperativeKernel((const void *)v.fn, dim3(grid), dim3(v.t), args, 0, 0));
            };
            QB_CHECK(cudaMemset(dc, 0xff, n));
            launch();
            QB_CHECK(cudaDeviceSynchronize());
            QB_CHECK(cudaMemcpy(gc.data(), dc, n, cudaMemcpyDeviceToHost));
            QB_CHECK(cudaMemcpy(gs.data(), dsc, nh * 4, cudaMemcpyDeviceToHost));
            size_t bad = 0, bads = 0;
            for (size_t i = 0; i < n; i++) bad += gc[i] != rc[i];
            for (size_t i = 0; i < nh; i++) bads += memcmp(&gs[i], &rs[i], 4) != 0;
            printf("  %-16s %3d regs, %d blocks/SM, grid %u, cph %u: %zu codes and %zu scales differ; ", v.name,
                   fa.numRegs, bps, grid, cph, bad, bads);
            double t = time_median(launch, reps);
            printf("%.2f us = %.1f %% of copy\n", t, 100 * tc / t);
        }
        cudaFree(dx);
        cudaFree(dc);
        cudaFree(dbig);
        cudaFree(dsc);
        cudaFree(words);
    }
    return 0;
}
