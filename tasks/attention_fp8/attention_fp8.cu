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
#include "evo_attention_abi.h"

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
