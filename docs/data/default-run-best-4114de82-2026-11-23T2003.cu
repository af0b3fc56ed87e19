/* attention_fp8-sm_90-4114de82.cu — an FP8 attention forward kernel found by evo, specialised to one genome.
 * Standalone: plain nvcc builds it, without evo, its templates folder or -I.
 *
 *   nvcc -arch=sm_90 -O3 -c attention_fp8-sm_90-4114de82.cu                                  the launcher, to link
 *   nvcc -arch=sm_90 -O3 -shared -Xcompiler -fPIC attention_fp8-sm_90-4114de82.cu -o libevo_attn.so    for ctypes
 *   nvcc -arch=sm_90 -O3 -DEVO_SELFTEST attention_fp8-sm_90-4114de82.cu -o selftest && ./selftest    check and time
 *   (selftest [--check-only] [--shape NAME] [--reps N]; exit 0 only when every check passed)
 *
 * Launcher (extern "C"; device pointers; layout [B, H, S, D] contiguous; scales: one float per
 * (batch, head), index b*H + h; returns the launch's cudaError_t as int, cudaErrorInvalidValue
 * for a head dim without a variant; asynchronous on `stream`):
 *   int evo_attention_forward(const void *q, const void *k, const void *v, const float *q_scale,
 *                             const float *k_scale, const float *v_scale, void *o, int batch,
 *                             int heads, int seq, int head_dim, int causal, float softmax_scale,
 *                             cudaStream_t stream);
 *   const char *evo_attention_genome(void);   int evo_attention_format(void);  (0 e4m3, 1 u8sim)
 * q, k, v hold 8-bit codes (format below, rules in evo_attention_abi.h); o is fp16. causal: key j
 * is masked for query i when j > i.
 *
 * Provenance
 *   genome        TILE_M=32,TILE_N=128,WARPS_M=2,WARPS_N=2,STAGES=3,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=2,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=128,BIG_TILE_N=64
 *   key           4114de828c5fb8e71b1d5423573dacfe090d9e9cff194ee455c84e455d67ab67 (candidate 373)
 *   task          attention_fp8, format e4m3, arch sm_90, head dims 64 128 64
 *   template      attention_fp8.cu, SHA-256 4fadd3282a3c73739c696132502cbe74e7194796298a1ead1a3cd215a98e60d4
 *   compiled by   NVRTC 13.0 with -std=c++17 -DNDEBUG (nvcc needs none of these)
 *   key check     the compile key recomputed at export equals the stored one
 *   measured on   NVIDIA H200, driver 13000, 2026-11-23T20:02:32Z, run 1 generation 12, by evo 0.1.0
 *   config        configs/default.yaml, as stored with run 1
 *   exported      2026-11-23T20:03:31Z by evo 0.1.0
 *   fitness       1.127x: geometric mean over the shapes of baseline time / this kernel's time
 *
 *   shape                        median µs     p10..p90 µs  TFLOP/s  speedup    rel-L2   max-abs e2e rel-L2
 *   mission(1,8,512,64)               5.67      5.57..5.89     94.8   1.322x  2.93e-04  4.55e-02   9.40e-02
 *   small(2,8,512,64)                 7.52      7.46..7.65    142.8   1.047x  2.92e-04  5.09e-02   8.61e-02
 *   long(2,8,2048,64)                57.73    57.47..57.92    297.6   1.181x  2.92e-04  1.76e-01   1.09e-01
 *   wide(2,8,512,128)                11.49    11.42..11.68    186.9   0.975x  2.93e-04  5.85e-02   7.97e-02
 *   stress(4,8,2048,64)             111.38  111.14..111.91    308.5   1.141x  2.91e-04  1.76e-01   1.08e-01
 *   errors: against the FP32 reference on the dequantized inputs (e2e: on the fp16 inputs);
 *   worst over the timed shapes: rel-L2 2.93e-04, max-abs 1.76e-01; over all 640 correctness cases: rel-L2 2.97e-04
 *   tolerances: rel-L2 <= 0.002; an element passes when |out - ref| <= 0.02 x RMS(ref) + 0.02 x |ref|;
 *   fraction of elements allowed to fail that: 0
 *
 * Variants (grid: ceil(S / rows) x H x B):
 *   head dim  64: evo_attn_fwd<64,0,32,128,2,2,3,1,1,0,0,2,1,0>
 *                 128 threads, 32 rows per block, 51200 bytes of dynamic shared memory
 *   head dim 128: evo_attn_fwd<128,0,32,128,2,2,3,1,1,0,0,2,1,0>
 *                 128 threads, 32 rows per block, 102400 bytes of dynamic shared memory
 *   head dim  64: evo_attn_fwd<64,0,128,64,4,1,3,1,1,0,0,1,1,0>
 *                 128 threads, 128 rows per block, 32768 bytes of dynamic shared memory
 */

#include <cuda_runtime.h>

/* ==== evo_attention_abi.h, verbatim ==== */
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
    EVO_DPTR(unsigned short) o;    /* fp16 bits, [B, H, S, D] */
    int batch, heads, seq, head_dim;
    int causal;                    /* 1: key j is masked for query i when j > i */
    float softmax_scale;           /* usually 1/sqrt(D) */
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

/* ==== attention_fp8.cu, verbatim but for its #include of the header above ==== */
/* attention_fp8.cu — FP8 attention forward: the template family evo searches (task attention_fp8).
 *
 * O = softmax(Q·Kᵀ·softmax_scale [causal]) · V on 8-bit Q, K, V with one scale per head (ABI: evo_attention_abi.h).
 * One block computes TILE_M query rows of one (batch, head); it streams K/V tiles of TILE_N keys through a cp.async
 * pipeline, computes scores on tensor cores (mma.sync, FP32 accumulate), keeps scores and the online-softmax state in
 * registers (exp2 with log2(e) and every scale folded into one multiplier), and multiplies P·V on tensor cores with P
 * in FP16. 8-bit operands are fed to ldmatrix as raw bytes; conversions to FP16 happen in registers (hardware cvt on
 * sm_89+, bit tricks on sm_80).
 *
 * Parameters (the knobs of configs/default.yaml), legal values and what they trade:
 *   D           64, 128      head dimension (not a knob: one variant per head dim of the shapes)
 *   FMT         0 e4m3, 1 u8sim                                   (not a knob: the config's format)
 *   TILE_M      16..256      query rows per block: more rows reuse each K/V tile more, fewer rows make more blocks
 *   TILE_N      32..256      keys per pipeline stage: longer tiles amortize barriers, cost registers and smem
 *   WARPS_M     1..8         warps splitting the rows; each owns TILE_M/WARPS_M = 16 or 32 rows (32 reuses each
 *                            K/V fragment twice, at twice the accumulator registers)
 *   WARPS_N     1, 2, 4      warps splitting each key tile; their softmax states merge through smem at the end
 *                            (more warps per block without more rows: helps short sequences fill the GPU)
 *   STAGES      1, 2, 3      cp.async pipeline depth (1 = load, wait, compute)
 *   SWIZZLE     0, 1         XOR-swizzle 16-byte chunks of each smem row so ldmatrix is bank-conflict free
 *   PV_MMA      0, 1         P·V on tensor cores (1) or with FMA from P staged in smem (0, the slow reference path)
 *   QK_8BIT     0, 1         Q·Kᵀ as 8-bit mma m16n8k32 (e4m3 on sm_89+, s8 for u8sim) instead of FP16 m16n8k16:
 *                            half the mma count and no conversion of Q or K, exact products either way. sm_90
 *                            only emulates e4m3 mma.sync (slower than FP16), so there e4m3 takes the FP16 path
 *   F16_SMEM    0, 1, 2      convert 8-bit tiles to FP16 in smem once per block instead of in registers by every
 *                            warp: 0 none, 1 V, 2 K and V (K only when QK_8BIT=0); costs smem and a barrier per tile
 *   MIN_BLOCKS  1, 2         __launch_bounds__ minimum blocks per SM: caps registers to raise occupancy
 *   FAST_EXP    0, 1         exp2 (ex2.approx) with log2(e) folded into the scale (1) or expf (0)
 *   CAUSAL_PAIR 0, 1         causal only, grids of at least two blocks per SM: block x computes query tiles nq-1-x
 *                            and x, balancing the triangle's work over half as many blocks (1), or one tile per
 *                            block, longest first (0)
 * static_asserts below state what must hold; the host-side check (engine/task_attention.c) rejects a genome whose
 * shared memory or threads do not fit the device before compiling, using the same smem formula as AttnCfg::SMEM.
 */
/* #include "evo_attention_abi.h": inlined above */

#define EVO_DEV __device__ __forceinline__

namespace evo_attn {

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

template <int A, int B> struct cmax { static constexpr int value = A > B ? A : B; };

EVO_DEV float neg_inf() { return __int_as_float(0xff800000u); }

EVO_DEV u32 smem_addr(const void *p)
{
    u32 r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

/* 16-byte global→shared copy; the zfill form with src_bytes = 0 fills the destination with zeros and reads nothing. */
EVO_DEV void cp_async16(u32 dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
EVO_DEV void cp_async16_zfill(u32 dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
EVO_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> EVO_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

EVO_DEV void ldsm_x4(u32 addr, u32 &r0, u32 &r1, u32 &r2, u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}
EVO_DEV void ldsm_x4_trans(u32 addr, u32 &r0, u32 &r1, u32 &r2, u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

EVO_DEV u32 prmt(u32 a, u32 b, u32 sel)
{
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}

/* D += A·B, m16n8k16, FP16 in, FP32 accumulate. */
EVO_DEV void mma_f16(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* D += A·B, m16n8k32 with 8-bit operands: e4m3 (FP32 accumulate, sm_89+) or s8 (S32 accumulate). */
template <int FMT> struct Mma8;
template <> struct Mma8<EVO_FORMAT_E4M3> {
    typedef float acc_t;
    static EVO_DEV void run(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1)
    {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
        asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
        (void)d, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
        __trap(); /* unreachable: the static_assert in the kernel rejects this instantiation below sm_89 */
#endif
    }
};
template <> struct Mma8<EVO_FORMAT_U8SIM> {
    typedef int acc_t;
    static EVO_DEV void run(int (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1)
    {
        asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
};

/* Two 8-bit codes (bytes 0 and 1 of x) → f16x2 (byte 0 in the low half). u8sim yields code - 128 exactly; the
 * constant factors of both formats live in the per-head multipliers. */
template <int FMT> EVO_DEV u32 cvt2(u32 x);
template <> EVO_DEV u32 cvt2<EVO_FORMAT_E4M3>(u32 x)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    u32 r;
    u16 h = (u16)(x & 0xffffu);
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(h));
    return r;
#else
    /* e4m3 s.eeee.mmm placed as fp16 s.0eeee.mmm0000000 is the value × 2^-8 (normals and subnormals alike). */
    u32 t = prmt(x, 0u, 0x1404u);
    u32 h = (t & 0x80008000u) | ((t >> 1) & 0x3f803f80u), r;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(h), "r"(0x5c005c00u)); /* × 256 */
    return r;
#endif
}
template <> EVO_DEV u32 cvt2<EVO_FORMAT_U8SIM>(u32 x)
{
    u32 t = prmt(x, 0x6464u, 0x4140u), r; /* halves 1024 + code */
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(t), "r"(0x64806480u)); /* - 1152 */
    return r;
}

/* The same for bytes 2 and 3 of x: the converter reads the upper half in place (no shift). */
template <int FMT> EVO_DEV u32 cvt2h(u32 x);
template <> EVO_DEV u32 cvt2h<EVO_FORMAT_E4M3>(u32 x)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    u32 r;
    asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.rn.f16x2.e4m3x2 %0, hi; }" : "=r"(r) : "r"(x));
    return r;
#else
    return cvt2<EVO_FORMAT_E4M3>(x >> 16);
#endif
}
template <> EVO_DEV u32 cvt2h<EVO_FORMAT_U8SIM>(u32 x)
{
    u32 t = prmt(x, 0x6464u, 0x4342u), r; /* halves 1024 + code */
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(t), "r"(0x64806480u)); /* - 1152 */
    return r;
}

/* Packs two floats as f16x2, lo in the low half. */
EVO_DEV u32 pack_f16x2(float lo, float hi)
{
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* exp2 of x (FAST_EXP: x is in log2 units, one MUFU op) or exp of x (natural units, accurate expf). */
template <int FAST_EXP> EVO_DEV float softmax_exp(float x)
{
    if constexpr (FAST_EXP) {
        float r;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
        return r;
    } else {
        return expf(x);
    }
}

template <int D, int FMT, int TILE_M, int TILE_N, int WARPS_M, int WARPS_N, int STAGES, int SWIZZLE, int PV_MMA,
          int QK_8BIT, int F16_SMEM>
struct AttnCfg {
    static constexpr int NW = WARPS_M * WARPS_N, NT = NW * 32;
    static constexpr int RPW = TILE_M / WARPS_M, MT = RPW / 16; /* rows and m16 tiles per warp   */
    static constexpr int KW = TILE_N / WARPS_N, NTL = KW / 8;   /* keys and n8 score tiles per warp */
    static constexpr int C8 = D / 16;                           /* 16-byte chunks in an 8-bit row  */
    static constexpr int OT = D / 8;                            /* n8 output tiles                 */
    static constexpr int Q_BYTES = TILE_M * D;
    static constexpr int KV_BYTES = TILE_N * D; /* one stage of K, or of V */
    static constexpr bool V16 = F16_SMEM >= 1, K16 = F16_SMEM >= 2 && !QK_8BIT;
    static constexpr int V16_BYTES = V16 ? TILE_N * D * 2 : 0;
    static constexpr int K16_BYTES = K16 ? TILE_N * D * 2 : 0;
    static constexpr int P_BYTES = PV_MMA ? 0 : NW * (RPW * KW + RPW) * 4;
    static constexpr int PIPE_BYTES = Q_BYTES + 2 * STAGES * KV_BYTES + V16_BYTES + K16_BYTES + P_BYTES;
    static constexpr int MERGE_BYTES = (WARPS_N - 1) * WARPS_M * 32 * (MT * OT * 4 + 4 * MT) * 4;
    static constexpr int SMEM = cmax<PIPE_BYTES, MERGE_BYTES>::value;

    static_assert(D == 64 || D == 128, "head dim must be 64 or 128");
    static_assert(FMT == EVO_FORMAT_E4M3 || FMT == EVO_FORMAT_U8SIM, "unknown 8-bit format");
    static_assert(TILE_M % WARPS_M == 0 && (RPW == 16 || RPW == 32), "each warp owns 16 or 32 query rows");
    static_assert(TILE_N % (16 * WARPS_N) == 0, "each warp's key slice must be a multiple of 16");
    static_assert(NT <= 1024, "too many threads");
    static_assert(STAGES >= 1 && STAGES <= 4, "pipeline depth 1..4");
    static_assert(PV_MMA || (WARPS_N == 1 && !F16_SMEM), "the FMA P·V path uses one warp per key tile");
    static_assert(F16_SMEM >= 0 && F16_SMEM <= 2, "F16_SMEM is 0, 1 or 2");
    static_assert(SMEM <= 227 * 1024, "shared memory over the largest opt-in size of any GPU");
};

/* Byte offset of 16-byte chunk c of row r in a tile whose rows hold CH chunks. The XOR swizzle spreads the 8 rows
 * an ldmatrix reads over 8 distinct bank groups: rows that share a 128-byte line get different XOR values. */
template <int CH, int SWIZZLE> EVO_DEV int chunk_off(int r, int c)
{
    constexpr int ROWS_PER_LINE = CH >= 8 ? 1 : 8 / CH;
    constexpr int XMASK = (CH >= 8 ? 8 : CH) - 1;
    const int pc = SWIZZLE ? (c ^ ((r / ROWS_PER_LINE) & XMASK)) : c;
    return r * CH * 16 + pc * 16;
}

/* ldmatrix x4 addresses of one lane in a tile of CH-chunk rows: chunk c0 + ld_chunk (c0 even, compile-time) of row
 * R + ld_row (R a multiple of 8, compile-time) lies at R·CH·16 + off[(c0 & XM) / 2] + (c0 & ~XM)·16, because the
 * swizzle XOR depends on the row only modulo 8 and never touches chunk bits above XM. The offsets are computed once,
 * so a fragment's address is a register plus a constant. row0 (a multiple of 8) is added to every offset. */
template <int CH, int SWIZZLE> struct LdsmLane {
    static constexpr int XM = (CH >= 8 ? 8 : CH) - 1, N = (XM + 1) / 2;
    u32 off[N];
    EVO_DEV LdsmLane(int row0, int ld_row, int ld_chunk)
    {
#pragma unroll
        for (int v = 0; v < N; v++) off[v] = chunk_off<CH, SWIZZLE>(row0 + ld_row, 2 * v + ld_chunk);
    }
    EVO_DEV u32 at(int r, int c0) const { return r * CH * 16 + off[(c0 & XM) >> 1] + (c0 & ~XM) * 16; }
};

/* This thread's copies of a ROWS x D-byte tile (rows row0.. of a head) to smem at base. Chunk i = tid + k·NT of the
 * tile is row i / C8, chunk i % C8; NT is a multiple of C8, so a thread keeps one chunk column (cp_c) and steps
 * NT / C8 rows from cp_r. Its k-th copy adds compile-time constants to the offsets computed once (cp_soff) when the
 * step keeps the swizzle phase (a multiple of 8 rows). Rows past the sequence are zero-filled so no uninitialised
 * byte (a NaN code) ever reaches an mma; only a tile that crosses the end of the sequence compares rows. */
template <int ROWS, int D, int NT, int SWIZZLE>
EVO_DEV void copy_tile(u32 base, const u8 *head, int row0, int seq, int cp_r, int cp_c, u32 cp_soff)
{
    constexpr int C8 = D / 16, RSTEP = NT / C8, ITERS = (ROWS + RSTEP - 1) / RSTEP;
    static_assert(NT % C8 == 0 && RSTEP % 4 == 0, "a thread keeps its chunk column; it steps 4 or 8k rows");
    /* A step of 4 rows (one warp, D = 128) alternates two swizzle phases; two steps keep it. */
    const u32 soff1 = RSTEP % 8 == 0 ? cp_soff + RSTEP * C8 * 16 : chunk_off<C8, SWIZZLE>(cp_r + RSTEP, cp_c);
    auto soff = [&](int k) { return (k & 1 ? soff1 : cp_soff) + (k >> 1) * 2 * RSTEP * C8 * 16; };
    const u8 *src = head + (long long)row0 * D + cp_r * D + cp_c * 16;
    const int valid = seq - row0; /* rows of this tile inside the sequence */
    /* unroll 4: one-warp blocks copy 8-16 chunks per tensor; unrolled fully they keep too many addresses live. */
    if (valid >= ROWS) {
#pragma unroll 4
        for (int k = 0; k < ITERS; k++)
            if (ROWS % RSTEP == 0 || cp_r + k * RSTEP < ROWS) cp_async16(base + soff(k), src + k * RSTEP * D);
    } else {
#pragma unroll 4
        for (int k = 0; k < ITERS; k++) {
            const int r = cp_r + k * RSTEP;
            if (ROWS % RSTEP == 0 || r < ROWS) {
                const bool ok = r < valid;
                cp_async16_zfill(base + soff(k), ok ? src + k * RSTEP * D : head, ok ? 16 : 0);
            }
        }
    }
}

} // namespace evo_attn

template <int D, int FMT, int TILE_M, int TILE_N, int WARPS_M, int WARPS_N, int STAGES, int SWIZZLE, int PV_MMA,
          int QK_8BIT, int F16_SMEM, int MIN_BLOCKS, int FAST_EXP, int CAUSAL_PAIR>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32, MIN_BLOCKS) evo_attn_fwd(const evo_attn_params p)
{
    using namespace evo_attn;
    typedef AttnCfg<D, FMT, TILE_M, TILE_N, WARPS_M, WARPS_N, STAGES, SWIZZLE, PV_MMA, QK_8BIT, F16_SMEM> C;
    constexpr int MT = C::MT, NTL = C::NTL, OT = C::OT, C8 = C::C8, RPW = C::RPW, KW = C::KW, NT = C::NT;
#if defined(__CUDA_ARCH__)
    static_assert(!(QK_8BIT && FMT == EVO_FORMAT_E4M3) || __CUDA_ARCH__ >= 890, "e4m3 mma needs sm_89 or newer");
#endif
    /* sm_90 has no native e4m3 mma.sync: the compiler emulates it with conversions of both operands on every mma
     * and an FP32 add per accumulator, about twice the instructions of the FP16 path. There QK_8BIT=1 takes the
     * FP16 path (same products, FP32 sums); shared memory keeps the layout of the genome (AttnCfg). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
    constexpr bool Q8 = QK_8BIT && FMT == EVO_FORMAT_U8SIM;
#else
    constexpr bool Q8 = QK_8BIT;
#endif
    constexpr bool INT_SCORES = Q8 && FMT == EVO_FORMAT_U8SIM;
    /* u8sim codes enter the mma as (code - 128); the rest of the decode is a constant folded into the scales. */
    constexpr float FMT_MUL = FMT == EVO_FORMAT_U8SIM ? 448.0f / 127.0f : 1.0f;
    constexpr float LOG2E = 1.4426950408889634f;

    extern __shared__ __align__(128) u8 smem[];
    {
        u32 dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if (dyn < (u32)C::SMEM || p.head_dim != D) __trap(); /* launched with the wrong geometry: a bug, not data */
    }
    u8 *sQ = smem;
    u8 *sK = sQ + C::Q_BYTES;
    u8 *sV = sK + STAGES * C::KV_BYTES;
    u8 *sV16 = sV + STAGES * C::KV_BYTES;
    u8 *sK16 = sV16 + C::V16_BYTES;
    float *sP = (float *)(sK16 + C::K16_BYTES);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int g = lane >> 2, q = lane & 3;
    const int S = p.seq;
    /* Query tiles of this block. Causal tiles near the end of the sequence do the most work: they start first.
     * CAUSAL_PAIR, when the grid has at least two blocks per SM: block x takes tiles nq-1-x and x, so every block
     * does about the same work (nq+1 key tiles); blocks past the middle have none. */
    const int nq = (int)gridDim.x, bx = (int)blockIdx.x;
    /* first tile, then (paired) bx; no array: a run-time index would put it on the stack */
    const int first_qt = p.causal ? nq - 1 - bx : bx;
    int n_items = 1;
    unsigned n_sm;
    asm("mov.u32 %0, %%nsmid;" : "=r"(n_sm));
    /* pairing halves the blocks: worth it only while at least a wave remains */
    if (CAUSAL_PAIR && p.causal && nq > 1 && (long long)nq * gridDim.y * gridDim.z >= 2ll * n_sm) {
        n_items = bx >= (nq + 1) / 2 ? 0 : bx == nq - 1 - bx ? 1 : 2;
    }
    for (int item = 0; item < n_items; item++) {
        if (item > 0) __syncthreads(); /* shared memory of the previous tile is reused */
        const int qt = item == 0 ? first_qt : bx;
        const int m0 = qt * TILE_M;
        const int bh = blockIdx.z * p.heads + blockIdx.y;
        const long long head_off = (long long)bh * S * D;
        const u8 *Qg = p.q + head_off, *Kg = p.k + head_off, *Vg = p.v + head_off;

        const int kv_len = p.causal ? min(S, m0 + TILE_M) : S;
        const int n_tiles = (kv_len + TILE_N - 1) / TILE_N;

        const float sq = p.q_scale[bh], sk = p.k_scale[bh], sv = p.v_scale[bh];
        /* score·qk_mul is in log2 units (FAST_EXP) or natural units; v_mul turns P·V accumulators into outputs. */
        const float qk_mul = sq * sk * p.softmax_scale * FMT_MUL * FMT_MUL * (FAST_EXP ? LOG2E : 1.0f);
        const float v_mul = sv * FMT_MUL;

        /* Per-thread part of the tile copies (copy_tile): a fixed chunk column, a first row, its smem offset. */
        const int cp_r = tid / C8, cp_c = tid % C8;
        const u32 cp_soff = chunk_off<C8, SWIZZLE>(cp_r, cp_c);
        const u32 cp_hoff0 = chunk_off<2 * C8, SWIZZLE>(cp_r, 2 * cp_c), cp_hoff1 = chunk_off<2 * C8, SWIZZLE>(cp_r, 2 * cp_c + 1);
        const u32 sK_addr = smem_addr(sK), sV_addr = smem_addr(sV);
        auto load_kv = [&](int tile, u32 stage_off) {
            copy_tile<TILE_N, D, NT, SWIZZLE>(sK_addr + stage_off, Kg, tile * TILE_N, S, cp_r, cp_c, cp_soff);
            copy_tile<TILE_N, D, NT, SWIZZLE>(sV_addr + stage_off, Vg, tile * TILE_N, S, cp_r, cp_c, cp_soff);
        };

        copy_tile<TILE_M, D, NT, SWIZZLE>(smem_addr(sQ), Qg, m0, S, cp_r, cp_c, cp_soff);
        if constexpr (STAGES == 1) {
            cp_async_commit();
        } else {
    #pragma unroll
            for (int s = 0; s < STAGES - 1; s++) {
                if (s < n_tiles) load_kv(s, s * C::KV_BYTES);
                cp_async_commit();
            }
        }

        /* ldmatrix x4 lane addressing shared by Q, K and V: matrix i = lane/8 covers rows (i&1)*8 + lane%8 and
         * chunk (i>>1) relative to the base — registers r0..r3 = (rows 0-7, c), (rows 8-15, c), (0-7, c+1), (8-15, c+1). */
        const int ld_row = ((lane >> 3) & 1) * 8 + (lane & 7);
        const int ld_chunk = lane >> 4;

        /* Q fragments stay in registers for the whole key loop. 8-bit: m16n8k32 A operands straight from the bytes.
         * FP16: a byte quad (4 consecutive dims) becomes two f16x2 registers; Q and K use the same dim permutation
         * (mma column 2q+e <-> dim 4q+e, column 2q+8+e <-> dim 4q+2+e), which leaves Q·Kᵀ unchanged. */
        u32 qa[MT][D / 16][Q8 ? 2 : 4];

        float o[MT][OT][4];
        float m_run[MT][2], l_run[MT][2];
    #pragma unroll
        for (int mt = 0; mt < MT; mt++) {
    #pragma unroll
            for (int h = 0; h < 2; h++) {
                m_run[mt][h] = neg_inf();
                l_run[mt][h] = 0.f;
            }
    #pragma unroll
            for (int t = 0; t < OT; t++)
    #pragma unroll
                for (int e = 0; e < 4; e++) o[mt][t][e] = 0.f;
        }
        /* The FMA path keeps O as RPW rows x D/32 dims per lane (dims lane + 32j). */
        constexpr int OS_ROWS = PV_MMA ? 1 : RPW, OS_COLS = PV_MMA ? 1 : D / 32;
        float os[OS_ROWS][OS_COLS];
    #pragma unroll
        for (int r = 0; r < OS_ROWS; r++)
    #pragma unroll
            for (int j = 0; j < OS_COLS; j++) os[r][j] = 0.f;
        float *wP = sP + warp * (RPW * KW + RPW); /* this warp's P rows, then its per-row factors */

        /* Per-lane ldmatrix offsets of this warp's key slice. K as the B operand of an 8-bit or FP16-smem mma wants
         * keys 0-7 of two chunks in adjacent registers, so K tiles (and the 8-bit V tile, to share the offsets) use
         * key-major lanes: matrix i = lane/8 covers rows (i>>1)*8 + lane%8 and chunk (i&1), r0..r3 = (keys 0-7, c),
         * (0-7, c+1), (8-15, c), (8-15, c+1). FP16 V wants keys 0-7 and 8-15 of one chunk adjacent: the Q order. */
        const int ldk_row = (lane >> 4) * 8 + (lane & 7), ldk_chunk = (lane >> 3) & 1;
        const LdsmLane<C8, SWIZZLE> ld8(wn * KW, ldk_row, ldk_chunk);
        const LdsmLane<2 * C8, SWIZZLE> ld16k(wn * KW, ldk_row, ldk_chunk);
        const LdsmLane<2 * C8, SWIZZLE> ld16(wn * KW, ld_row, ld_chunk);
        u32 rd_off = 0;                                                  /* stage of tile j    */
        u32 wr_off = (u32)(STAGES == 1 ? 0 : (STAGES - 1) * C::KV_BYTES); /* stage of tile j + STAGES - 1 */
        for (int j = 0; j < n_tiles; j++) {
            if constexpr (STAGES == 1) {
                if (j > 0) __syncthreads();
                load_kv(j, 0u);
                cp_async_commit();
                cp_async_wait<0>();
                __syncthreads();
            } else {
                cp_async_wait<(STAGES >= 2 ? STAGES - 2 : 0)>();
                __syncthreads();
                const int jn = j + STAGES - 1;
                if (jn < n_tiles) load_kv(jn, wr_off);
                cp_async_commit();
                wr_off = rd_off; /* tile j's stage is refilled next */
            }
            if (j == 0) { /* Q arrived with the first stage. Loading it before the loop saves ~3 instructions a tile
                           * but keeps more registers live through the pipeline prologue: some genomes then spill. */
    #pragma unroll
                for (int mt = 0; mt < MT; mt++) {
    #pragma unroll
                    for (int cp = 0; cp < D / 32; cp++) {
                        u32 r0, r1, r2, r3;
                        const int row = wm * RPW + mt * 16 + ld_row;
                        ldsm_x4(smem_addr(sQ) + chunk_off<C8, SWIZZLE>(row, 2 * cp + ld_chunk), r0, r1, r2, r3);
                        if constexpr (Q8) {
                            qa[mt][2 * cp][0] = r0;
                            qa[mt][2 * cp][1] = r1;
                            qa[mt][2 * cp + 1][0] = r2;
                            qa[mt][2 * cp + 1][1] = r3;
                        } else {
                            qa[mt][2 * cp][0] = cvt2<FMT>(r0);
                            qa[mt][2 * cp][1] = cvt2<FMT>(r1);
                            qa[mt][2 * cp][2] = cvt2h<FMT>(r0);
                            qa[mt][2 * cp][3] = cvt2h<FMT>(r1);
                            qa[mt][2 * cp + 1][0] = cvt2<FMT>(r2);
                            qa[mt][2 * cp + 1][1] = cvt2<FMT>(r3);
                            qa[mt][2 * cp + 1][2] = cvt2h<FMT>(r2);
                            qa[mt][2 * cp + 1][3] = cvt2h<FMT>(r3);
                        }
                    }
                }
            }
            const u32 stage_off = rd_off;
            if constexpr (STAGES > 1) rd_off = rd_off + C::KV_BYTES == (u32)(STAGES * C::KV_BYTES) ? 0u : rd_off + C::KV_BYTES;
            const u8 *tK = sK + stage_off;
            const u8 *tV = sV + stage_off;
            if constexpr (C::V16 || C::K16) {
                /* One FP16 copy of the tiles for all warps. V keeps the natural dim order; K takes the order the Q
                 * fragments use (byte pairs 0,1 4,5 8,9 12,13 of each 16-dim group first, then 2,3 6,7 10,11 14,15). */
                constexpr int RSTEP = NT / C8; /* the copy's chunk assignment: no div/mod, offsets known per thread */
    #pragma unroll
                for (int k = 0; k < (TILE_N + RSTEP - 1) / RSTEP; k++) {
                    const int r = cp_r + k * RSTEP, c = cp_c;
                    if (TILE_N % RSTEP != 0 && r >= TILE_N) break;
                    const bool lin = RSTEP % 8 == 0; /* the k-th chunk keeps the swizzle phase of the first */
                    const u32 src = lin ? cp_soff + k * RSTEP * C8 * 16 : chunk_off<C8, SWIZZLE>(r, c);
                    const u32 dst0 = lin ? cp_hoff0 + k * RSTEP * C8 * 32 : chunk_off<2 * C8, SWIZZLE>(r, 2 * c);
                    const u32 dst1 = lin ? cp_hoff1 + k * RSTEP * C8 * 32 : chunk_off<2 * C8, SWIZZLE>(r, 2 * c + 1);
                    if constexpr (C::V16) {
                        const uint4 b = *(const uint4 *)(tV + src);
                        uint4 lo, hi;
                        lo.x = cvt2<FMT>(b.x), lo.y = cvt2h<FMT>(b.x), lo.z = cvt2<FMT>(b.y), lo.w = cvt2h<FMT>(b.y);
                        hi.x = cvt2<FMT>(b.z), hi.y = cvt2h<FMT>(b.z), hi.z = cvt2<FMT>(b.w), hi.w = cvt2h<FMT>(b.w);
                        *(uint4 *)(sV16 + dst0) = lo;
                        *(uint4 *)(sV16 + dst1) = hi;
                    }
                    if constexpr (C::K16) {
                        const uint4 b = *(const uint4 *)(tK + src);
                        uint4 lo, hi;
                        lo.x = cvt2<FMT>(b.x), lo.y = cvt2<FMT>(b.y), lo.z = cvt2<FMT>(b.z), lo.w = cvt2<FMT>(b.w);
                        hi.x = cvt2h<FMT>(b.x), hi.y = cvt2h<FMT>(b.y), hi.z = cvt2h<FMT>(b.z);
                        hi.w = cvt2h<FMT>(b.w);
                        *(uint4 *)(sK16 + dst0) = lo;
                        *(uint4 *)(sK16 + dst1) = hi;
                    }
                }
                __syncthreads();
            }

            /* ---- S = Q·Kᵀ for this warp's KW keys ---- */
            const int key0 = j * TILE_N + wn * KW; /* sequence index of this warp's first key */
            float s[MT][NTL][4];
            {
                int si[INT_SCORES ? MT : 1][INT_SCORES ? NTL : 1][4]; /* s8 scores, exact */
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int t = 0; t < NTL; t++)
    #pragma unroll
                        for (int e = 0; e < 4; e++) {
                            s[mt][t][e] = 0.f;
                            if constexpr (INT_SCORES) si[mt][t][e] = 0;
                        }
                if constexpr (C::K16) {
                    /* FP16 K from smem, already in the Q fragments' dim order; key-major lanes: r0..r3 = keys 0-7 of
                     * chunks 2ks, 2ks+1, then keys 8-15 of both, so each B operand is an adjacent register pair. */
                    const u32 kbase = smem_addr(sK16);
    #pragma unroll
                    for (int np = 0; np < NTL / 2; np++) {
    #pragma unroll
                        for (int ks = 0; ks < D / 16; ks++) {
                            u32 r0, r1, r2, r3;
                            ldsm_x4(kbase + ld16k.at(np * 16, 2 * ks), r0, r1, r2, r3);
    #pragma unroll
                            for (int mt = 0; mt < MT; mt++) {
                                const u32 *a = qa[mt][ks];
                                mma_f16(s[mt][2 * np], a[0], a[1], a[2], a[3], r0, r1);
                                mma_f16(s[mt][2 * np + 1], a[0], a[1], a[2], a[3], r2, r3);
                            }
                        }
                    }
                } else {
                    /* Key-major lanes: 8-bit mma B operands are {r0, r1} for keys 0-7 and {r2, r3} for keys 8-15; the
                     * FP16 mma makes each register a B operand of its own (chunk 2cp: r0, r2; chunk 2cp+1: r1, r3). */
                    const u32 kbase = sK_addr + stage_off;
    #pragma unroll
                    for (int np = 0; np < NTL / 2; np++) {
    #pragma unroll
                        for (int cp = 0; cp < D / 32; cp++) {
                            u32 r0, r1, r2, r3;
                            ldsm_x4(kbase + ld8.at(np * 16, 2 * cp), r0, r1, r2, r3);
    #pragma unroll
                            for (int mt = 0; mt < MT; mt++) {
                                if constexpr (Q8) {
                                    const u32 *a0 = qa[mt][2 * cp], *a1 = qa[mt][2 * cp + 1];
                                    if constexpr (INT_SCORES) {
                                        /* s8 operands: code ^ 0x80 is (code - 128) in two's complement. */
                                        const u32 f = 0x80808080u;
                                        Mma8<EVO_FORMAT_U8SIM>::run(si[mt][2 * np], a0[0] ^ f, a0[1] ^ f, a1[0] ^ f, a1[1] ^ f,
                                                                    r0 ^ f, r1 ^ f);
                                        Mma8<EVO_FORMAT_U8SIM>::run(si[mt][2 * np + 1], a0[0] ^ f, a0[1] ^ f, a1[0] ^ f,
                                                                    a1[1] ^ f, r2 ^ f, r3 ^ f);
                                    } else {
                                        Mma8<EVO_FORMAT_E4M3>::run(s[mt][2 * np], a0[0], a0[1], a1[0], a1[1], r0, r1);
                                        Mma8<EVO_FORMAT_E4M3>::run(s[mt][2 * np + 1], a0[0], a0[1], a1[0], a1[1], r2, r3);
                                    }
                                } else {
                                    const u32 *a0 = qa[mt][2 * cp], *a1 = qa[mt][2 * cp + 1];
                                    mma_f16(s[mt][2 * np], a0[0], a0[1], a0[2], a0[3], cvt2<FMT>(r0), cvt2h<FMT>(r0));
                                    mma_f16(s[mt][2 * np + 1], a0[0], a0[1], a0[2], a0[3], cvt2<FMT>(r2),
                                            cvt2h<FMT>(r2));
                                    mma_f16(s[mt][2 * np], a1[0], a1[1], a1[2], a1[3], cvt2<FMT>(r1), cvt2h<FMT>(r1));
                                    mma_f16(s[mt][2 * np + 1], a1[0], a1[1], a1[2], a1[3], cvt2<FMT>(r3),
                                            cvt2h<FMT>(r3));
                                }
                            }
                        }
                    }
                }
                if constexpr (INT_SCORES) {
    #pragma unroll
                    for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                        for (int t = 0; t < NTL; t++)
    #pragma unroll
                            for (int e = 0; e < 4; e++)
                                s[mt][t][e] = (float)si[mt][t][e];
                }
            }

            /* ---- mask: keys past the sequence, and keys after the query when causal ---- */
            const bool need_mask = (j + 1) * TILE_N > S || (p.causal && (j + 1) * TILE_N - 1 > m0);
            if (need_mask) {
                /* Element (t, e) of a row holds key key0 + 2q + t·8 + (e & 1): it is kept while that offset is at most
                 * the row's last visible key minus key0 + 2q, one compare with a constant per element. */
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int row = m0 + wm * RPW + mt * 16 + g + 8 * h;
                        const int lim = (p.causal ? min(row, S - 1) : S - 1) - key0 - 2 * q;
    #pragma unroll
                        for (int t = 0; t < NTL; t++)
    #pragma unroll
                            for (int e = 0; e < 2; e++)
                                if (t * 8 + e > lim) s[mt][t][2 * h + e] = neg_inf();
                    }
            }

            /* ---- online softmax, rows g and g+8 of each m16 tile; a row's 4 owners are the lanes of a quad ---- */
            float alpha[MT][2];
    #pragma unroll
            for (int mt = 0; mt < MT; mt++) {
    #pragma unroll
                for (int h = 0; h < 2; h++) {
                    float mx = m_run[mt][h];
    #pragma unroll
                    for (int t = 0; t < NTL; t++) mx = fmaxf(mx, fmaxf(s[mt][t][2 * h], s[mt][t][2 * h + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    /* A row that has seen only masked keys keeps m = -inf; subtracting 0 then gives exp(-inf) = 0. */
                    const float m_use = mx == neg_inf() ? 0.f : mx;
                    const float ms = m_use * qk_mul;
                    const float a = softmax_exp<FAST_EXP>(m_run[mt][h] * qk_mul - ms);
                    alpha[mt][h] = a;
                    m_run[mt][h] = mx;
                    float sum;
    #pragma unroll
                    for (int t = 0; t < NTL; t++)
    #pragma unroll
                        for (int e = 0; e < 2; e++) {
                            const float x = fmaf(s[mt][t][2 * h + e], qk_mul, -ms);
                            const float pv = softmax_exp<FAST_EXP>(x);
                            s[mt][t][2 * h + e] = pv;
                            sum = t == 0 && e == 0 ? pv : sum + pv; /* not 0 + pv: that add is not foldable */
                        }
                    l_run[mt][h] = l_run[mt][h] * a + sum;
                }
            }

            /* ---- O = O·alpha + P·V ---- */
            if constexpr (PV_MMA) {
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int t = 0; t < OT; t++)
    #pragma unroll
                        for (int e = 0; e < 4; e++) o[mt][t][e] *= alpha[mt][e >> 1];
    #pragma unroll
                for (int kk = 0; kk < KW / 16; kk++) {
                    u32 pa[MT][4];
    #pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        pa[mt][0] = pack_f16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                        pa[mt][1] = pack_f16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                        pa[mt][2] = pack_f16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                        pa[mt][3] = pack_f16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
                    }
                    if constexpr (F16_SMEM) {
                        /* FP16 V: ldmatrix.trans gives B fragments in natural order; output tile t = dims 8t..8t+7. */
                        const u32 vbase = smem_addr(sV16);
    #pragma unroll
                        for (int tp = 0; tp < OT / 2; tp++) {
                            u32 r0, r1, r2, r3;
                            ldsm_x4_trans(vbase + ld16.at(kk * 16, 2 * tp), r0, r1, r2, r3);
    #pragma unroll
                            for (int mt = 0; mt < MT; mt++) {
                                mma_f16(o[mt][2 * tp], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], r0, r1);
                                mma_f16(o[mt][2 * tp + 1], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], r2, r3);
                            }
                        }
                    } else {
                        /* 8-bit V: ldmatrix.trans on byte pairs gives each lane V[2q][2g..2g+1] and V[2q+1][2g..2g+1];
                         * bytes {0,2} feed the even-dim tile, {1,3} the odd-dim tile. Output tile 2c holds dims
                         * 16c + 2n, tile 2c+1 dims 16c + 2n + 1. Key-major lanes (ld8): keys 0-7 / 8-15 of chunk 2cp
                         * are r0 / r2, of chunk 2cp+1 r1 / r3. One permute gathers those bytes of both key halves (keys
                         * 0-7 in the low half, 8-15 in the high half), then each half converts in place. */
                        const u32 vbase = sV_addr + stage_off;
    #pragma unroll
                        for (int cp = 0; cp < D / 32; cp++) {
                            u32 r0, r1, r2, r3;
                            ldsm_x4_trans(vbase + ld8.at(kk * 16, 2 * cp), r0, r1, r2, r3);
                            const u32 ev01 = prmt(r0, r2, 0x6420u), od01 = prmt(r0, r2, 0x7531u);
                            const u32 ev23 = prmt(r1, r3, 0x6420u), od23 = prmt(r1, r3, 0x7531u);
                            const u32 e0 = cvt2<FMT>(ev01), e1 = cvt2h<FMT>(ev01), d0 = cvt2<FMT>(od01), d1 = cvt2h<FMT>(od01);
                            const u32 e2 = cvt2<FMT>(ev23), e3 = cvt2h<FMT>(ev23), d2 = cvt2<FMT>(od23), d3 = cvt2h<FMT>(od23);
    #pragma unroll
                            for (int mt = 0; mt < MT; mt++) {
                                mma_f16(o[mt][4 * cp + 0], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], e0, e1);
                                mma_f16(o[mt][4 * cp + 1], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], d0, d1);
                                mma_f16(o[mt][4 * cp + 2], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], e2, e3);
                                mma_f16(o[mt][4 * cp + 3], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], d2, d3);
                            }
                        }
                    }
                }
            } else {
                /* FMA path: stage P and the row factors in this warp's smem, then each lane owns dims lane + 32c. */
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int t = 0; t < NTL; t++)
    #pragma unroll
                        for (int e = 0; e < 4; e++)
                            wP[(mt * 16 + g + 8 * (e >> 1)) * KW + t * 8 + 2 * q + (e & 1)] = s[mt][t][e];
                if (q == 0) {
    #pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        wP[RPW * KW + mt * 16 + g] = alpha[mt][0];
                        wP[RPW * KW + mt * 16 + g + 8] = alpha[mt][1];
                    }
                }
                __syncwarp();
    #pragma unroll
                for (int r = 0; r < OS_ROWS; r++) {
                    const float a = wP[RPW * KW + r];
    #pragma unroll
                    for (int c = 0; c < OS_COLS; c++) os[r][c] *= a;
                }
    #pragma unroll 2
                for (int k = 0; k < KW; k++) {
                    const int vr = wn * KW + k;
                    float vf[OS_COLS];
    #pragma unroll
                    for (int c = 0; c < OS_COLS; c++) {
                        const int d = lane + 32 * c;
                        const u32 code = tV[chunk_off<C8, SWIZZLE>(vr, d / 16) + d % 16];
                        const u32 h2 = cvt2<FMT>(code);
                        unsigned short hb = (unsigned short)(h2 & 0xffffu);
                        float f;
                        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(hb));
                        vf[c] = f;
                    }
    #pragma unroll
                    for (int r = 0; r < OS_ROWS; r++) {
                        const float pr = wP[r * KW + k];
    #pragma unroll
                        for (int c = 0; c < OS_COLS; c++) os[r][c] = fmaf(pr, vf[c], os[r][c]);
                    }
                }
                __syncwarp();
            }
        }

        /* ---- finish: row sums over the quad, merge the WARPS_N key slices, normalise, store FP16 ---- */
    #pragma unroll
        for (int mt = 0; mt < MT; mt++)
    #pragma unroll
            for (int h = 0; h < 2; h++) {
                float l = l_run[mt][h];
                l += __shfl_xor_sync(0xffffffffu, l, 1);
                l += __shfl_xor_sync(0xffffffffu, l, 2);
                l_run[mt][h] = l;
            }

        if constexpr (WARPS_N > 1) {
            /* Every warp with the same wm has the same fragment layout, so the merge is element-wise by register. */
            cp_async_wait<0>();
            __syncthreads(); /* the pipeline buffers are reused */
            float *mb = (float *)smem;
            constexpr int PER_LANE = MT * OT * 4 + 4 * MT;
            if (wn > 0) {
                float *dst = mb + ((wn - 1) * WARPS_M + wm) * 32 * PER_LANE;
                int k = 0;
    #pragma unroll
                for (int mt = 0; mt < MT; mt++) {
    #pragma unroll
                    for (int t = 0; t < OT; t++)
    #pragma unroll
                        for (int e = 0; e < 4; e++) dst[(k++) * 32 + lane] = o[mt][t][e];
    #pragma unroll
                    for (int h = 0; h < 2; h++) {
                        dst[(k++) * 32 + lane] = m_run[mt][h];
                        dst[(k++) * 32 + lane] = l_run[mt][h];
                    }
                }
            }
            __syncthreads();
            if (wn > 0) continue; /* its rows are stored by the warp with wn = 0 */
    #pragma unroll
            for (int w = 1; w < WARPS_N; w++) {
                const float *src = mb + ((w - 1) * WARPS_M + wm) * 32 * PER_LANE;
                float mo[MT][2], lo[MT][2];
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int k = mt * (OT * 4 + 4) + OT * 4 + 2 * h;
                        mo[mt][h] = src[k * 32 + lane];
                        lo[mt][h] = src[(k + 1) * 32 + lane];
                    }
                float fa[MT][2], fb[MT][2];
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const float mm = fmaxf(m_run[mt][h], mo[mt][h]);
                        const float mu = mm == neg_inf() ? 0.f : mm;
                        fa[mt][h] = softmax_exp<FAST_EXP>((m_run[mt][h] - mu) * qk_mul);
                        fb[mt][h] = softmax_exp<FAST_EXP>((mo[mt][h] - mu) * qk_mul);
                        m_run[mt][h] = mm;
                        l_run[mt][h] = l_run[mt][h] * fa[mt][h] + lo[mt][h] * fb[mt][h];
                    }
    #pragma unroll
                for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                    for (int t = 0; t < OT; t++)
    #pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int k = mt * (OT * 4 + 4) + t * 4 + e;
                            o[mt][t][e] = o[mt][t][e] * fa[mt][e >> 1] + src[k * 32 + lane] * fb[mt][e >> 1];
                        }
            }
        }

        u16 *Og = p.o + head_off;
        if constexpr (PV_MMA) {
    #pragma unroll
            for (int mt = 0; mt < MT; mt++)
    #pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = m0 + wm * RPW + mt * 16 + g + 8 * h;
                    if (row >= S) continue;
                    const float f = v_mul / l_run[mt][h];
                    u16 *orow = Og + (long long)row * D;
                    if constexpr (F16_SMEM) {
    #pragma unroll
                        for (int t = 0; t < OT; t++)
                            *(u32 *)(orow + 8 * t + 2 * q) = pack_f16x2(o[mt][t][2 * h] * f, o[mt][t][2 * h + 1] * f);
                    } else {
    #pragma unroll
                        for (int c = 0; c < D / 16; c++) {
                            uint2 v;
                            v.x = pack_f16x2(o[mt][2 * c][2 * h] * f, o[mt][2 * c + 1][2 * h] * f);
                            v.y = pack_f16x2(o[mt][2 * c][2 * h + 1] * f, o[mt][2 * c + 1][2 * h + 1] * f);
                            *(uint2 *)(orow + 16 * c + 4 * q) = v;
                        }
                    }
                }
        } else {
            if (q == 0) {
    #pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    wP[RPW * KW + mt * 16 + g] = l_run[mt][0];
                    wP[RPW * KW + mt * 16 + g + 8] = l_run[mt][1];
                }
            }
            __syncwarp();
    #pragma unroll
            for (int r = 0; r < OS_ROWS; r++) {
                const int row = m0 + wm * RPW + r;
                if (row >= S) continue;
                const float f = v_mul / wP[RPW * KW + r];
    #pragma unroll
                for (int c = 0; c < OS_COLS; c++) {
                    const u32 h2 = pack_f16x2(os[r][c] * f, 0.f);
                    Og[(long long)row * D + lane + 32 * c] = (u16)(h2 & 0xffffu);
                }
            }
        }
    }
}

/* ==== this genome (written by evo export) ==== */
#define EVO_EXPORT_GENOME "TILE_M=32,TILE_N=128,WARPS_M=2,WARPS_N=2,STAGES=3,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=2,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=128,BIG_TILE_N=64"
#define EVO_EXPORT_KEY "4114de828c5fb8e71b1d5423573dacfe090d9e9cff194ee455c84e455d67ab67"
#define EVO_EXPORT_ARCH "sm_90"
#define EVO_EXPORT_FORMAT EVO_FORMAT_E4M3

template __global__ void evo_attn_fwd<64,0,32,128,2,2,3,1,1,0,0,2,1,0>(const evo_attn_params);
template __global__ void evo_attn_fwd<128,0,32,128,2,2,3,1,1,0,0,2,1,0>(const evo_attn_params);
template __global__ void evo_attn_fwd<64,0,128,64,4,1,3,1,1,0,0,1,1,0>(const evo_attn_params);

namespace evo_export {

struct variant {
    int head_dim;
    void (*kernel)(const evo_attn_params);
    int threads, rows_per_block, smem_bytes; /* grid: ceil(S / rows_per_block) x H x B */
    int min_waves; /* > 0: the large-problem variant, for grids of min_waves x SMs blocks or more */
};
static const variant variants[] = {
    {64, evo_attn_fwd<64,0,32,128,2,2,3,1,1,0,0,2,1,0>, 128, 32, 51200, 0},
    {128, evo_attn_fwd<128,0,32,128,2,2,3,1,1,0,0,2,1,0>, 128, 32, 102400, 0},
    {64, evo_attn_fwd<64,0,128,64,4,1,3,1,1,0,0,1,1,0>, 128, 128, 32768, 1},
};

#ifdef EVO_SELFTEST
/* The timed shapes of run 1's config, with the median evo measured (µs). */
struct shape {
    const char *name;
    int batch, heads, seq, head_dim, causal;
    double evo_median_us;
};
static const shape timed_shapes[] = {
    {"mission", 1, 8, 512, 64, 0, 5.67},
    {"small", 2, 8, 512, 64, 0, 7.52},
    {"long", 2, 8, 2048, 64, 0, 57.73},
    {"wide", 2, 8, 512, 128, 0, 11.49},
    {"stress", 4, 8, 2048, 64, 0, 111.38},
};

/* Correctness tolerances and timing settings of that config. */
static const double tol_rel_l2 = 0.002, tol_atol = 0.02, tol_rtol = 0.02, tol_max_frac_over = 0;
static const double cfg_softmax_scale = 0; /* 0: 1/sqrt(head_dim) */
static const int timing_warmup = 3, timing_repetitions = 20, timing_flush_l2 = 1;
#endif

} // namespace evo_export

/* ==== launcher and self-test, the same in every exported kernel (export_harness.cu) ==== */
/* export_harness.cu — the host launcher and the self-test of every kernel `evo export` writes. evo appends this
 * text, unchanged, after the genome's own section (namespace evo_export: variants, timed shapes, tolerances), so it
 * is the same in every exported file. It is not a kernel template: evo never compiles it alone; tests/cli_export_nvcc.sh
 * and tests/cli_variants.sh build exported files with nvcc, with and without -DEVO_SELFTEST.
 */
#include <atomic>

namespace evo_export {

static const int n_variants = (int)(sizeof variants / sizeof variants[0]);

/* Per variant, one bit per device on which its dynamic shared memory limit has been raised. */
static std::atomic<unsigned long long> smem_raised[sizeof variants / sizeof variants[0]];

/* The self-test sets this to run every variant on its checks; -1: pick by the problem. */
static int forced_variant = -1;

/* By head dim; among those, the large-problem variant when its grid fills min_waves waves of the device's SMs,
 * a causal grid counting half (the rule evo measured the kernel with: evo_variant_pick). */
static int find_variant(int head_dim, int batch, int heads, int seq, int causal)
{
    if (forced_variant >= 0) return variants[forced_variant].head_dim == head_dim ? forced_variant : -1;
    int sms = 0, dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
                                                  cudaSuccess)
        sms = 1 << 30; /* no device answer: the default variant */
    int best = -1;
    for (int i = 0; i < n_variants; i++) {
        if (variants[i].head_dim != head_dim) continue;
        long long blocks =
            (long long)((seq + variants[i].rows_per_block - 1) / variants[i].rows_per_block) * heads * batch;
        if (causal) blocks /= 2; /* half the work */
        if (blocks < (long long)variants[i].min_waves * sms) continue;
        if (best < 0 || variants[i].min_waves > variants[best].min_waves) best = i;
    }
    return best;
}

/* The limit is a property of the function on the current device: raised once per device (devices past 63 every
 * time, which is merely slower). */
static cudaError_t raise_smem_limit(int i)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
    if (bit && (smem_raised[i].load(std::memory_order_acquire) & bit)) return cudaSuccess;
    e = cudaFuncSetAttribute(variants[i].kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, variants[i].smem_bytes);
    if (e == cudaSuccess && bit) smem_raised[i].fetch_or(bit, std::memory_order_acq_rel);
    return e;
}

} // namespace evo_export

extern "C" const char *evo_attention_genome(void) { return EVO_EXPORT_GENOME; }

extern "C" int evo_attention_format(void) { return EVO_EXPORT_FORMAT; }

/* O = softmax(Q·Kᵀ·softmax_scale [causal]) · V. q, k, v: 8-bit codes [B, H, S, D]; *_scale: one float per
 * (batch, head), index b*H + h; o: fp16 [B, H, S, D]; all device pointers. Returns the launch's cudaError_t;
 * cudaErrorInvalidValue for a head dim this file has no variant for, a null pointer or a size out of range.
 * Asynchronous on `stream`; thread-safe. */
extern "C" int evo_attention_forward(const void *q, const void *k, const void *v, const float *q_scale,
                                     const float *k_scale, const float *v_scale, void *o, int batch, int heads,
                                     int seq, int head_dim, int causal, float softmax_scale, cudaStream_t stream)
{
    using namespace evo_export;
    const int i = seq < 1 || batch < 1 || heads < 1 ? -1 : find_variant(head_dim, batch, heads, seq, causal);
    if (i < 0 || !q || !k || !v || !q_scale || !k_scale || !v_scale || !o || batch < 1 || heads < 1 || seq < 1 ||
        batch > 65535 || heads > 65535)
        return (int)cudaErrorInvalidValue;
    cudaError_t e = raise_smem_limit(i);
    if (e != cudaSuccess) return (int)e;
    evo_attn_params p;
    p.q = (const unsigned char *)q;
    p.k = (const unsigned char *)k;
    p.v = (const unsigned char *)v;
    p.q_scale = q_scale;
    p.k_scale = k_scale;
    p.v_scale = v_scale;
    p.o = (unsigned short *)o;
    p.batch = batch;
    p.heads = heads;
    p.seq = seq;
    p.head_dim = head_dim;
    p.causal = causal != 0;
    p.softmax_scale = softmax_scale;
    void *args[] = {&p};
    const int rows = variants[i].rows_per_block;
    const dim3 grid((unsigned)((seq + rows - 1) / rows), (unsigned)heads, (unsigned)batch);
    return (int)cudaLaunchKernel(variants[i].kernel, grid, dim3((unsigned)variants[i].threads), args,
                                 (size_t)variants[i].smem_bytes, stream);
}

#ifdef EVO_SELFTEST
/* ---- self-test: checks against an FP64 CPU reference, then times the config's shapes ----
 * ./selftest [--check-only] [--shape NAME] [--reps N]; exit 0: every check passed, 1: a check failed,
 * 2: it could not run (no GPU, bad arguments). */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace evo_selftest {

/* ---- number formats: evo's rules (engine/attn_ref.c), as plain C++ ---- */

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return bits_float(sign);
        uint32_t sh = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            sh++;
        }
        return bits_float(sign | ((113u - sh) << 23) | ((m & 0x3ffu) << 13));
    }
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/* Round to nearest even, once, with integers only. */
static uint16_t double_to_half(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    const uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    const uint64_t a = b & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) return sign | 0x7e00u;
    const int be = (int)(a >> 52);
    if (be == 0) return sign;
    const int e = be - 1023;
    const uint64_t mant = (a & 0xfffffffffffffull) | (1ull << 52);
    if (e >= 16) return sign | 0x7c00u;
    if (e >= -14) {
        uint32_t q = ((uint32_t)(e + 15) << 10) | (uint32_t)((mant >> 42) & 0x3ffu);
        const uint64_t rem = mant & ((1ull << 42) - 1), half = 1ull << 41;
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    const int sh = 28 - e;
    if (sh > 53) return sign;
    uint64_t q = mant >> sh;
    const uint64_t rem = mant & ((1ull << sh) - 1), half = 1ull << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

/* OCP e4m3fn, round to nearest even, saturating at +-448; NaN -> 0x7f. */
static uint8_t e4m3_encode(float x)
{
    const uint32_t b = float_bits(x);
    const uint8_t sign = (uint8_t)((b >> 24) & 0x80u);
    const uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7f;
    const int be = (int)(a >> 23);
    if (be == 0) return sign;
    const int e = be - 127;
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t q;
    if (e > 8) {
        q = 0x7e;
    } else if (e >= -6) {
        q = ((uint32_t)(e + 7) << 3) | ((mant >> 20) & 7u);
        const uint32_t rem = mant & 0xfffffu, half = 0x80000u;
        if (rem > half || (rem == half && (q & 1u))) q++;
        if (q > 0x7e) q = 0x7e;
    } else {
        const int sh = 14 - e;
        if (sh > 24) return sign;
        q = mant >> sh;
        const uint32_t rem = mant & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
    }
    return (uint8_t)(sign | q);
}

static float e4m3_decode(uint8_t code)
{
    if ((code & 0x7f) == 0x7f) return bits_float(0x7fc00000u);
    const uint32_t sign = (uint32_t)(code & 0x80u) << 24;
    const uint32_t e = (code >> 3) & 0xfu, m = code & 7u;
    if (e == 0) return bits_float(sign | float_bits((float)m * 0x1p-9f));
    return bits_float(sign | ((e + 120u) << 23) | (m << 20));
}

/* Each operation rounded in float, in this order; roundf rounds halves away from zero. */
static uint8_t u8sim_encode(float x, float scale)
{
    volatile float d = scale * 448.0f; /* volatile: no fused multiply-add may merge two roundings */
    volatile float t = x / d;
    volatile float m = t * 127.0f;
    const float y = m + 128.0f;
    if (std::isnan(y)) return 128;
    const float r = roundf(y);
    if (r < 0.0f) return 0;
    if (r > 255.0f) return 255;
    return (uint8_t)r;
}

static float u8sim_decode(uint8_t code, float scale)
{
    volatile float a = (float)((int)code - 128) / 127.0f;
    volatile float b = a * 448.0f;
    return b * scale;
}

/* One head: scale = absmax / 448 (1 for an all-zero head), codes, and the dequantized values the reference uses. */
static void quantize_head(const uint16_t *x, size_t n, int format, uint8_t *codes, float *scale, float *deq)
{
    float absmax = 0.0f;
    for (size_t i = 0; i < n; i++) absmax = fmaxf(absmax, fabsf(half_to_float(x[i])));
    const float s = absmax == 0.0f ? 1.0f : absmax / 448.0f;
    *scale = s;
    for (size_t i = 0; i < n; i++) {
        const float v = half_to_float(x[i]);
        if (format == EVO_FORMAT_E4M3) {
            codes[i] = e4m3_encode(v / s);
            deq[i] = e4m3_decode(codes[i]) * s;
        } else {
            codes[i] = u8sim_encode(v, s);
            deq[i] = u8sim_decode(codes[i], s);
        }
    }
}

/* ---- inputs ---- */

enum { DIST_NORMAL, DIST_UNIFORM, DIST_OUTLIERS, DIST_ZERO_HEAD, DIST_LARGE, N_DISTS };
static const char *const dist_names[N_DISTS] = {"normal", "uniform", "outliers", "zero_head", "large"};

struct rng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return (double)(next() >> 11) * 0x1p-53; } /* [0, 1) */
    double normal()
    {
        const double u1 = 1.0 - uniform(), u2 = uniform();
        return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    }
};

/* fp16 values: N(0,1), U(-1,1), N(0,1) + N(0,100)·Bernoulli(0.001), N(0,1) with the first head all zero, or
 * 30·N(0,1) (huge logits). */
static void make_input(std::vector<uint16_t> &x, size_t head_elems, int dist, uint64_t seed)
{
    rng r{seed * 0x2545f4914f6cdd1dull + 1};
    for (size_t i = 0; i < x.size(); i++) {
        double v;
        switch (dist) {
        case DIST_UNIFORM: v = 2.0 * r.uniform() - 1.0; break;
        case DIST_OUTLIERS:
            v = r.normal();
            if (r.uniform() < 0.001) v += 10.0 * r.normal();
            break;
        case DIST_ZERO_HEAD: v = i < head_elems ? 0.0 : r.normal(); break;
        case DIST_LARGE: v = 30.0 * r.normal(); break;
        default: v = r.normal(); break;
        }
        x[i] = double_to_half(v);
    }
}

/* ---- one problem: inputs on the host and the device, output between guard bands ---- */

static const size_t GUARD_BYTES = 16384;
static const unsigned char GUARD = 0xa5;

struct problem {
    int batch = 0, heads = 0, seq = 0, head_dim = 0, causal = 0;
    double scale = 0;
    size_t n = 0; /* elements per tensor */
    std::vector<float> deq[3];
    unsigned char *d_codes[3] = {nullptr, nullptr, nullptr};
    float *d_scales[3] = {nullptr, nullptr, nullptr};
    unsigned char *d_out_alloc = nullptr; /* GUARD_BYTES, then the output, then GUARD_BYTES */
    void *d_out = nullptr;
};

static bool cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return true;
    fprintf(stderr, "selftest: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

static double softmax_scale_for(int head_dim)
{
    return evo_export::cfg_softmax_scale > 0 ? evo_export::cfg_softmax_scale : 1.0 / sqrt((double)head_dim);
}

static bool problem_make(problem &p, int batch, int heads, int seq, int head_dim, int causal, int dist,
                         uint64_t seed)
{
    p.batch = batch, p.heads = heads, p.seq = seq, p.head_dim = head_dim, p.causal = causal;
    p.scale = softmax_scale_for(head_dim);
    const size_t head_elems = (size_t)seq * head_dim, n_heads = (size_t)batch * heads;
    p.n = head_elems * n_heads;
    std::vector<uint16_t> x(p.n);
    std::vector<uint8_t> codes(p.n);
    std::vector<float> scales(n_heads);
    for (int t = 0; t < 3; t++) {
        make_input(x, head_elems, dist, seed * 3 + (uint64_t)t);
        p.deq[t].resize(p.n);
        for (size_t h = 0; h < n_heads; h++)
            quantize_head(&x[h * head_elems], head_elems, EVO_EXPORT_FORMAT, &codes[h * head_elems], &scales[h],
                          &p.deq[t][h * head_elems]);
        if (!cuda_ok(cudaMalloc(&p.d_codes[t], p.n), "cudaMalloc") ||
            !cuda_ok(cudaMalloc(&p.d_scales[t], n_heads * sizeof(float)), "cudaMalloc") ||
            !cuda_ok(cudaMemcpy(p.d_codes[t], codes.data(), p.n, cudaMemcpyHostToDevice), "cudaMemcpy") ||
            !cuda_ok(cudaMemcpy(p.d_scales[t], scales.data(), n_heads * sizeof(float), cudaMemcpyHostToDevice),
                     "cudaMemcpy"))
            return false;
    }
    if (!cuda_ok(cudaMalloc(&p.d_out_alloc, p.n * 2 + 2 * GUARD_BYTES), "cudaMalloc")) return false;
    p.d_out = p.d_out_alloc + GUARD_BYTES;
    return cuda_ok(cudaMemset(p.d_out_alloc, GUARD, p.n * 2 + 2 * GUARD_BYTES), "cudaMemset");
}

static void problem_free(problem &p)
{
    for (int t = 0; t < 3; t++) {
        cudaFree(p.d_codes[t]);
        cudaFree(p.d_scales[t]);
    }
    cudaFree(p.d_out_alloc);
}

static cudaError_t problem_launch(const problem &p, cudaStream_t stream)
{
    return (cudaError_t)evo_attention_forward(p.d_codes[0], p.d_codes[1], p.d_codes[2], p.d_scales[0], p.d_scales[1],
                                              p.d_scales[2], p.d_out, p.batch, p.heads, p.seq, p.head_dim, p.causal,
                                              (float)p.scale, stream);
}

/* Output row i of head bh in FP64 on the dequantized inputs. */
static void reference_row(const problem &p, size_t bh, int i, double *out)
{
    const int D = p.head_dim, S = p.seq;
    const size_t head = (size_t)S * D;
    const float *q = &p.deq[0][bh * head + (size_t)i * D], *k = &p.deq[1][bh * head], *v = &p.deq[2][bh * head];
    const int n_keys = p.causal ? i + 1 : S;
    std::vector<double> s((size_t)n_keys);
    double mx = -INFINITY;
    for (int j = 0; j < n_keys; j++) {
        double dot = 0.0;
        for (int t = 0; t < D; t++) dot += (double)q[t] * (double)k[(size_t)j * D + t];
        s[(size_t)j] = dot * p.scale;
        mx = std::max(mx, s[(size_t)j]);
    }
    for (int t = 0; t < D; t++) out[t] = 0.0;
    double l = 0.0;
    for (int j = 0; j < n_keys; j++) {
        const double w = exp(s[(size_t)j] - mx);
        l += w;
        for (int t = 0; t < D; t++) out[t] += w * (double)v[(size_t)j * D + t];
    }
    for (int t = 0; t < D; t++) out[t] /= l;
}

struct verdict {
    double rel_l2 = 0, max_abs = 0;
    size_t n = 0, n_over = 0, n_nonfinite = 0, guard_bytes = 0;
    bool pass = false;
    char why[160] = "";
};

/* Copies the output back and compares the given rows of every head (all rows when rows is empty) with the
 * FP64 reference: every element written and finite, |out - ref| <= atol·RMS(ref) + rtol·|ref| for all but
 * max_frac_over of them, rel-L2 within its tolerance, and the guard bands untouched. */
static bool problem_check(const problem &p, const std::vector<int> &rows, verdict &vd)
{
    std::vector<unsigned char> host(p.n * 2 + 2 * GUARD_BYTES);
    if (!cuda_ok(cudaMemcpy(host.data(), p.d_out_alloc, host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy"))
        return false;
    for (size_t i = 0; i < GUARD_BYTES; i++) {
        vd.guard_bytes += host[i] != GUARD;
        vd.guard_bytes += host[GUARD_BYTES + p.n * 2 + i] != GUARD;
    }
    const uint16_t *out = (const uint16_t *)(host.data() + GUARD_BYTES);
    const int D = p.head_dim;
    std::vector<int> all;
    if (rows.empty())
        for (int i = 0; i < p.seq; i++) all.push_back(i);
    const std::vector<int> &use = rows.empty() ? all : rows;
    std::vector<double> ref, got;
    std::vector<double> row((size_t)D);
    for (size_t bh = 0; bh < (size_t)p.batch * p.heads; bh++)
        for (int i : use) {
            reference_row(p, bh, i, row.data());
            for (int t = 0; t < D; t++) {
                ref.push_back(row[(size_t)t]);
                got.push_back(half_to_float(out[(bh * p.seq + (size_t)i) * D + t]));
            }
        }
    double sum_ref = 0, sum_diff = 0;
    for (size_t i = 0; i < ref.size(); i++) sum_ref += ref[i] * ref[i];
    const double rms = ref.empty() ? 0.0 : sqrt(sum_ref / (double)ref.size());
    const double atol = evo_export::tol_atol * rms, rtol = evo_export::tol_rtol;
    vd.n = ref.size();
    for (size_t i = 0; i < ref.size(); i++) {
        const bool finite = std::isfinite(got[i]) && std::isfinite(ref[i]);
        if (!std::isfinite(got[i])) vd.n_nonfinite++;
        const double diff = fabs(got[i] - ref[i]);
        if (!finite || !(diff <= atol + rtol * fabs(ref[i]))) vd.n_over++;
        if (finite) {
            vd.max_abs = std::max(vd.max_abs, diff);
            sum_diff += diff * diff;
        }
    }
    vd.rel_l2 = sum_ref > 0 ? sqrt(sum_diff / sum_ref) : sqrt(sum_diff);
    const double frac_over = vd.n ? (double)vd.n_over / (double)vd.n : 0.0;
    if (vd.guard_bytes)
        snprintf(vd.why, sizeof vd.why, "wrote %zu bytes outside its output", vd.guard_bytes);
    else if (vd.n_nonfinite)
        snprintf(vd.why, sizeof vd.why, "%zu of %zu elements not written or not finite", vd.n_nonfinite, vd.n);
    else if (vd.rel_l2 > evo_export::tol_rel_l2)
        snprintf(vd.why, sizeof vd.why, "rel-L2 %.3g > %.3g", vd.rel_l2, evo_export::tol_rel_l2);
    else if (frac_over > evo_export::tol_max_frac_over)
        snprintf(vd.why, sizeof vd.why, "%zu of %zu elements over %.3g x RMS(ref) + %.3g x |ref|", vd.n_over, vd.n,
                 evo_export::tol_atol, evo_export::tol_rtol);
    vd.pass = vd.why[0] == '\0';
    return true;
}

static double flops(int batch, int heads, int seq, int head_dim, int causal)
{
    const double n = seq, pairs = causal ? n * (n + 1) / 2.0 : n * n;
    return 4.0 * batch * heads * pairs * head_dim;
}

/* ---- the two parts ---- */

/* Small odd shapes, every variant, causal off and on, every distribution. Returns false when CUDA failed (the
 * context may be lost); *failed counts the cases that did not pass. */
static bool run_checks(int *n_cases, int *failed)
{
    static const int seqs[] = {1, 77, 200};
    for (int vi = 0; vi < evo_export::n_variants; vi++)
        for (int si = 0; si < 3; si++)
            for (int causal = 0; causal < 2; causal++) {
                const int D = evo_export::variants[vi].head_dim, S = seqs[si];
                double worst_rel = 0, worst_abs = 0;
                int bad = 0;
                for (int dist = 0; dist < N_DISTS; dist++) {
                    problem p;
                    const uint64_t seed = (uint64_t)(((vi * 3 + si) * 2 + causal) * N_DISTS + dist) + 1;
                    evo_export::forced_variant = vi; /* every variant, the large-problem one too */
                    bool ok = problem_make(p, 2, 3, S, D, causal, dist, seed) &&
                              cuda_ok(cudaMemset(p.d_out, 0xff, p.n * 2), "poison") &&
                              cuda_ok(problem_launch(p, 0), "launch") &&
                              cuda_ok(cudaDeviceSynchronize(), "kernel");
                    evo_export::forced_variant = -1;
                    verdict vd;
                    ok = ok && problem_check(p, std::vector<int>(), vd);
                    problem_free(p);
                    if (!ok) return false;
                    ++*n_cases;
                    worst_rel = std::max(worst_rel, vd.rel_l2);
                    worst_abs = std::max(worst_abs, vd.max_abs);
                    if (!vd.pass) {
                        bad++;
                        printf("  FAIL  D=%d S=%d causal=%d %s: %s (rel-L2 %.2e, max-abs %.2e)\n", D, S, causal,
                               dist_names[dist], vd.why, vd.rel_l2, vd.max_abs);
                    }
                }
                *failed += bad;
                printf("check  D=%-3d S=%-4d causal=%d  %d distributions  worst rel-L2 %.2e  max-abs %.2e  %s%s\n", D, S,
                       causal, N_DISTS, worst_rel, worst_abs, bad ? "FAIL" : "ok",
                       evo_export::variants[vi].min_waves ? "  (large-problem variant)" : "");
            }
    /* The launcher's own contract: a head dim without a variant is refused, nothing launched. */
    const int rc = evo_attention_forward((void *)1, (void *)1, (void *)1, (const float *)1, (const float *)1,
                                         (const float *)1, (void *)1, 1, 1, 16, 96, 0, 1.0f, 0);
    ++*n_cases;
    if (rc != (int)cudaErrorInvalidValue) {
        ++*failed;
        printf("  FAIL  head_dim 96 returned %d, want cudaErrorInvalidValue (%d)\n", rc, (int)cudaErrorInvalidValue);
    }
    return true;
}

static double percentile(const std::vector<double> &sorted, int num, int den)
{
    return sorted[(size_t)((sorted.size() - 1) * num / den)];
}

/* The config's timed shapes with CUDA events: warm-up, then each repetition flushes L2 (writes a buffer of twice
 * its size), poisons the output and times one launch; all queued before waiting, so no host gap falls inside a
 * measurement. The last launch's output is checked on sampled rows. */
static bool run_timing(const char *only, int reps, int *n_timed, int *failed)
{
    int dev = 0;
    cudaDeviceProp prop;
    if (!cuda_ok(cudaGetDevice(&dev), "cudaGetDevice") || !cuda_ok(cudaGetDeviceProperties(&prop, dev), "props"))
        return false;
    size_t flush_bytes = (size_t)prop.l2CacheSize * 2;
    if (flush_bytes < (64u << 20)) flush_bytes = 64u << 20;
    void *flush = nullptr;
    if (!cuda_ok(cudaMalloc(&flush, flush_bytes), "cudaMalloc")) return false;
    std::vector<cudaEvent_t> ev(2 * (size_t)reps);
    for (auto &e : ev)
        if (!cuda_ok(cudaEventCreate(&e), "cudaEventCreate")) return false;
    printf("\n%-28s %10s %18s %9s %14s  %s\n", "shape", "median us", "p10..p90 us", "TFLOP/s", "evo median us",
           "output");
    const int n_shapes = (int)(sizeof evo_export::timed_shapes / sizeof evo_export::timed_shapes[0]);
    bool ok = true;
    for (int si = 0; si < n_shapes && ok; si++) {
        const evo_export::shape &sh = evo_export::timed_shapes[si];
        if (only && strcmp(only, sh.name) != 0) continue;
        problem p;
        ok = problem_make(p, sh.batch, sh.heads, sh.seq, sh.head_dim, sh.causal, DIST_NORMAL, 1000 + (uint64_t)si);
        for (int w = 0; ok && w < evo_export::timing_warmup; w++) ok = cuda_ok(problem_launch(p, 0), "launch");
        ok = ok && cuda_ok(cudaDeviceSynchronize(), "warm-up");
        for (int r = 0; ok && r < reps; r++) {
            if (evo_export::timing_flush_l2) ok = cuda_ok(cudaMemsetAsync(flush, r & 0xff, flush_bytes, 0), "flush");
            ok = ok && cuda_ok(cudaMemsetAsync(p.d_out, 0xff, p.n * 2, 0), "poison") &&
                 cuda_ok(cudaEventRecord(ev[2 * (size_t)r], 0), "event") && cuda_ok(problem_launch(p, 0), "launch") &&
                 cuda_ok(cudaEventRecord(ev[2 * (size_t)r + 1], 0), "event");
        }
        ok = ok && cuda_ok(cudaDeviceSynchronize(), "kernel");
        std::vector<double> ts((size_t)reps);
        for (int r = 0; ok && r < reps; r++) {
            float ms = 0;
            ok = cuda_ok(cudaEventElapsedTime(&ms, ev[2 * (size_t)r], ev[2 * (size_t)r + 1]), "elapsed");
            ts[(size_t)r] = 1000.0 * ms;
        }
        verdict vd;
        if (ok) {
            std::vector<int> rows;
            const int S = sh.seq, cand[] = {0, 1, S / 3, S / 2, 2 * S / 3, S - 2, S - 1};
            for (int c : cand)
                if (c >= 0 && c < S && std::find(rows.begin(), rows.end(), c) == rows.end()) rows.push_back(c);
            ok = problem_check(p, rows, vd);
        }
        problem_free(p);
        if (!ok) break;
        std::sort(ts.begin(), ts.end());
        const double med = ts[(size_t)reps / 2];
        char name[96], spread[48], evo_us[32];
        snprintf(name, sizeof name, "%s(%d,%d,%d,%d)%s", sh.name, sh.batch, sh.heads, sh.seq, sh.head_dim,
                 sh.causal ? " causal" : "");
        snprintf(spread, sizeof spread, "%.2f..%.2f", percentile(ts, 1, 10), percentile(ts, 9, 10));
        if (sh.evo_median_us > 0) snprintf(evo_us, sizeof evo_us, "%.2f", sh.evo_median_us);
        else snprintf(evo_us, sizeof evo_us, "-");
        printf("%-28s %10.2f %18s %9.1f %14s  %s\n", name, med, spread,
               flops(sh.batch, sh.heads, sh.seq, sh.head_dim, sh.causal) / (med * 1e-6) / 1e12, evo_us,
               vd.pass ? "ok" : vd.why);
        ++*n_timed;
        if (!vd.pass) ++*failed;
    }
    for (auto &e : ev) cudaEventDestroy(e);
    cudaFree(flush);
    return ok;
}

} // namespace evo_selftest

int main(int argc, char **argv)
{
    using namespace evo_selftest;
    bool check_only = false;
    const char *only = nullptr;
    int reps = evo_export::timing_repetitions;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check-only")) {
            check_only = true;
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            reps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--check-only] [--shape NAME] [--reps N]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    int n_dev = 0, driver = 0, runtime = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        fprintf(stderr, "selftest: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 2;
    }
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    printf("genome  %s\nformat  %s, key %s\ndevice  %s (sm_%d%d), driver %d, runtime %d\n\n", EVO_EXPORT_GENOME,
           EVO_EXPORT_FORMAT == EVO_FORMAT_E4M3 ? "e4m3" : "u8sim", EVO_EXPORT_KEY, prop.name, prop.major, prop.minor,
           driver, runtime);
    int n_cases = 0, n_timed = 0, failed = 0;
    if (!run_checks(&n_cases, &failed)) return 1;
    if (!check_only && !run_timing(only, reps, &n_timed, &failed)) return 1;
    if (only && n_timed == 0 && !check_only) {
        fprintf(stderr, "selftest: no timed shape is called '%s'\n", only);
        return 2;
    }
    if (failed) {
        printf("\nself-test FAILED: %d of %d checks\n", failed, n_cases + n_timed);
        return 1;
    }
    printf("\nself-test passed: %d correctness checks, %d shapes timed\n", n_cases, n_timed);
    return 0;
}
#endif /* EVO_SELFTEST */
