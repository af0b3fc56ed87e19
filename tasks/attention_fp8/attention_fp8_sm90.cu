/* attention_fp8_sm90.cu — FP8 attention forward for Hopper (sm_90a only): the wgmma + TMA template family.
 *
 * Same ABI as templates/attention_fp8.cu (evo_attention_abi.h): e4m3 codes [B, H, S, D], one float scale per (batch,
 * head) for each of Q, K, V, FP16 output [B, H, S, D], O = softmax(Q·Kᵀ·softmax_scale [causal]) · V on the
 * dequantized values. e4m3 only (u8sim is no wgmma type). softmax_scale must be > 0 (the row max is taken on raw
 * scores, as in the first family).
 *
 * A block owns CONSUMERS × WG_ROWS query rows of one (batch, head). Each consumer warpgroup owns WG_ROWS rows (one or
 * two m64 tiles) and runs, per key tile of TILE_N keys: S = Q·Kᵀ with wgmma m64nTILE_Nk32 e4m3 (K from shared memory,
 * K-major, swizzled as TMA writes it; Q from shared memory or registers), online softmax in registers (exp2, every
 * scale in one multiplier), then O += P·V with P taken from the accumulator registers:
 *   V_PATH 0: P in e4m3 (scaled into (0, 256] by an integer row offset, so rescaling is exact), V transposed to
 *             K-major e4m3 in shared memory; the transpose applies the key permutation that makes the S accumulator
 *             registers the wgmma A fragment without shuffles (keys 8s+2a+t of each 16 sit at position 4a+2s+t).
 *             P̃ = e4m3(2^(x − ⌈max x⌉ + 8)), x = score·log2(e), and l = Σ P̃, except that a key whose P̃ rounded
 *             to 0 adds its unrounded p (the rounding of P cancels between O and l, while the mass of keys too small
 *             for e4m3 stays in l as in the FP8 model: less end-to-end error than the model's unrounded sum, and the
 *             model's exact result where every P is a power of two; tools/bench/fp8_p_grid.c).
 *   V_PATH 1: P in FP16, V converted to FP16 in shared memory and read N-major by an f16 wgmma (half the P·V rate,
 *             no rounding of P beyond FP16: compares against the plain reference). The GEMM is D + 8 wide: its last
 *             8 columns read a block of ones after each V stage, so it sums P too (the softmax adds nothing up, and
 *             the row sum is rescaled with O); a V stage takes TILE_N·(D + 64)·2 bytes.
 *   V_PATH 2: (not a search knob: the FP16-V entry of an exported file, evo_attention_forward_v16) V_PATH 1's
 *             arithmetic with V given in FP16 instead of as codes: p.v points to FP16 [B, H, S, D] (v_scale still
 *             multiplies O), and the TMA thread loads each tile's D/64 column blocks straight into the layout the
 *             transform warps write for V_PATH 1 (rows of 128 bytes, 128-byte swizzle), so no warp converts V. With
 *             p.v = the FP16 values of the codes it equals V_PATH 1 bit for bit. PIPE 2 only.
 *   V_PATH 3: V_PATH 2 with K given in FP16 too, for the FP16 Q·Kᵀ (QK_MODE 2 only): p.k points to FP16
 *             [B, H, S, D] (k_scale NULL means 1) and the TMA thread loads each key tile's D/64 column blocks straight
 *             into the FP16 K ring (the layout the transform warps write for QK_MODE 2), so the transform warps
 *             convert Q alone; no raw K or V ring. With p.k, p.v = the FP16 values of the codes it equals QK_MODE 2 +
 *             V_PATH 1 bit for bit. A search value (its genome's launch converts the codes first with
 *             evo_kv16_convert, below, timed with it) and the FP16-K-and-V entry of exported files
 *             (evo_attention_forward_kv16).
 *   V_PATH 4: V_PATH 0 whose P·V GEMM also sums P̃: every Vᵀ column block has 8 more rows of e4m3 ones (vt_rows),
 *             which a second wgmma (N = 8) multiplies by P̃ from zero each tile; the tile's sums go into the
 *             accumulator's column D (rescaled with O) in FP32; the softmax adds up only the keys whose P̃ is 0
 *             (p ≤ 2^-10, in FP16 pairs). PIPE 2 only.
 *   V_PATH 5: V_PATH 4's arithmetic with Vᵀ given (a search value: its genome's launch transposes V first with
 *             evo_vt_transpose, below, timed with it): p.v points to the codes of Vᵀ, [B·H, D, S16] (S16 = S rounded up to 16, keys S..S16-1 zero),
 *             each 16 keys in the P fragment's order (position 4a + 2s + t holds key 8s + 2a + t; evo_vt_transpose,
 *             below, writes it from V), and the TMA thread loads each tile's column blocks of VB keys straight into
 *             the Vᵀ stage, so no warp transposes V (the transform's shared-memory instructions share the MIO queue
 *             with the softmax's exponentials: docs/perf-notes.md, "Where the fp8 class's time goes"). With p.v =
 *             the transpose of the codes it equals V_PATH 4 bit for bit. PIPE 2 only.
 * The FP8 wgmma keeps ~14 bits of the aligned products: scores carry ~1e-4 relative error, which defeats the 2e-3 gate
 * on logits in the thousands and flips e4m3 roundings of P; QK_MODE 2 + V_PATH 1 is the configuration that passes
 * every distribution (docs/perf-notes.md, "Precision").
 *
 * Knobs (template parameters after D), legal values and what each trades:
 *   WG_ROWS        64, 128   query rows per consumer warpgroup (one or two m64 wgmma tiles): 128 reuses every K/V
 *                            tile twice per warpgroup at twice the accumulator registers (fits small tiles only)
 *   CONSUMERS      1, 2, 3   consumer warpgroups per block: more rows per K/V tile loaded (less traffic per FLOP) and
 *                            latency hidden by the other warpgroups, at fewer registers each (232 for 2, 152 for 3
 *                            at PRODUCER_REGS 40)
 *   TILE_N         64, 128, 192, 256   keys per pipeline stage: longer tiles amortize barriers and the softmax
 *                            bookkeeping, cost TILE_N/2 accumulator registers and ~3·TILE_N·D bytes of smem a stage
 *   STAGES         2, 3, 4   depth of the K/V rings in shared memory: hides load latency, costs shared memory
 *   PIPE           0, 1, 2   0: cp.async by all threads, no producer (step 1); 1: TMA into an mbarrier ring issued by
 *                            one consumer thread (step 2); 2: a producer warpgroup (warp 0: one thread issues the
 *                            TMA of Q, K and V; warps 1-3: V transpose or FP16 conversions) and setmaxnreg (step 3)
 *   QK_MODE        0, 1, 2   Q·Kᵀ: 0 e4m3, Q from shared memory; 1 e4m3, Q held in registers for the whole work item
 *                            (16 KB less smem traffic a tile, D/8 registers); 2 FP16, Q and K converted to FP16 in
 *                            shared memory (exact FP32 scores, the accurate path; ~2x slower)
 *   V_PATH         0, 1, 3, 4   see above: e4m3 P·V (full FP8 rate, P rounded to e4m3), FP16 P·V (accurate, slower),
 *                            FP16 P·V with K and V converted once per call (QK_MODE 2, PIPE 2), or V_PATH 0 with the
 *                            row sum of P̃ from the GEMM (PIPE 2)
 *   OVERLAP        0, 1      PIPE 2 only: issue S(j+1) = Q·Kᵀ before P·V(j), so the tensor cores work during the
 *                            softmax of tile j+1
 *   PINGPONG       0, 1      PIPE 2, OVERLAP 1, CONSUMERS 2 only: the two consumer warpgroups take turns issuing
 *                            their GEMMs (named barriers 2 and 3), so one's softmax runs under the other's GEMMs
 *   O_ACC          0, 1      1: P·V of each key tile goes to a fresh accumulator added to O in FP32 (the FP8 wgmma
 *                            accumulator keeps ~14 bits: long sequences drift); 0: accumulate in place (D/2 fewer
 *                            registers)
 *   PRODUCER_REGS  24, 32, 40, 56   PIPE 2 with CONSUMERS ≥ 2: setmaxnreg of the producer warpgroup; consumers get
 *                            ⌊((CONSUMERS+1)·R0 − PRODUCER_REGS)/CONSUMERS⌋₈ with R0 = ⌊65536/threads⌋₈. The
 *                            transforms spill below 40 (below 56 with PERSIST): attn_sm90_check rejects those
 *   PERSIST        0, 1, 2   1, 2: a persistent grid of min(work items, SMs) blocks walks the (query tile, head)
 *                            items, 1 tile by tile over all heads, 2 head by head when not causal (Sched); heaviest
 *                            first (causal: the longest rows first, every second wave backwards); 0: one block
 *                            per item
 *   PROBE          (not a knob, default 0; measurement only, results are wrong) leaves stages out to time the
 *                            rest: 1 the K/V transforms, 2 the softmax, 4 P·V, 8 Q·Kᵀ, 16 the row maxima (every
 *                            offset 0), 32 V_PATH 4 and 5's row-sum GEMMs, 64 P·V with its A operand (P̃) from
 *                            shared memory instead of registers (V_PATH 5, TILE_N 128, OVERLAP: each warpgroup
 *                            stores its P̃ words, unswizzled, into WG_ROWS·128 bytes past the barriers, which the
 *                            launch must add to the shared memory; no row-sum GEMMs) (bits combine)
 *
 * LAUNCH RULES (what a launcher must do; attn_sm90_host.h computes each of these):
 *   kernel      evo_attn_sm90<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, PIPE, QK_MODE, V_PATH, OVERLAP, PINGPONG, O_ACC,
 *               PRODUCER_REGS, PERSIST>(const __grid_constant__ evo_attn_params p,
 *                                       const __grid_constant__ evo_attn_tmaps t)
 *               (an explicit instantiation repeats both __grid_constant__)
 *   block       (CONSUMERS + (PIPE == 2)) × 128 threads, 1-D
 *   rows        rows per block BM = CONSUMERS × WG_ROWS; query tiles nq = ceil(S / BM)
 *   grid        PERSIST 0: (nq, H, B); PERSIST 1, 2: (min(nq·H·B, SM count), 1, 1)
 *   smem        dynamic shared memory = Sm90Cfg<...>::SMEM bytes = attn_sm90_smem_bytes() (the kernel traps with
 *               less); set cudaFuncAttributeMaxDynamicSharedMemorySize (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
 *   tensor maps t.q, t.k, t.v (PIPE ≥ 1; PIPE 0 ignores them, zeros are fine): 3-D UINT8 maps of the [B·H, S, D]
 *               tensors, dims {D, S, B·H}, strides {D, S·D} bytes, box {D, WG_ROWS, 1} for Q and {D, TILE_N, 1}
 *               for K and V, swizzle 128B (D = 128) or 64B (D = 64), no interleave, OOB fill zero;
 *               attn_sm90_fill_tmaps() builds them from the params and cuTensorMapEncodeTiled
 *   no clusters; sm_90a cubins only (NVRTC --gpu-architecture=sm_90a, nvcc -gencode arch=compute_90a,code=sm_90a)
 */
#include "evo_attention_abi.h"

#ifndef EVO_ATTN_TMAPS_DEFINED
#define EVO_ATTN_TMAPS_DEFINED
/* A CUtensorMap: 128 opaque bytes, 64-byte aligned. */
typedef struct {
    alignas(64) unsigned long long w[16];
} evo_tmap;
typedef struct {
    evo_tmap q, k, v;
} evo_attn_tmaps;
#endif

#define EVO_DEV __device__ __forceinline__

namespace evo_sm90 {

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;
typedef unsigned char u8;

__host__ __device__ constexpr int align1024(int x) { return (x + 1023) / 1024 * 1024; }

/* One stage of the P·V operand: e4m3 Vᵀ; or (V_PATH 1) FP16 V in 64-dim column blocks and one more block of ones,
 * which the P·V GEMM reads as columns D..D+7, so that every row's sum of P comes out beside O (in the accumulator
 * column D, which the running rescale of O rescales too). acc_cols: the P·V accumulator's columns. */
template <int D, int TILE_N, int V_PATH> __host__ __device__ constexpr int vt_bytes()
{
    return V_PATH == 4 || V_PATH == 5 ? align1024(TILE_N * (D + 8)) : V_PATH ? TILE_N * (D + 64) * 2 : TILE_N * D;
}
/* V_PATH 2, 3: V is given in FP16 and loaded by TMA into the FP16 V ring (no raw V ring, nothing transforms it). */
__host__ __device__ constexpr bool v_given_f16(int v_path) { return v_path == 2 || v_path == 3; }
/* The V stage written by the TMA thread (V_PATH 2, 3: FP16 V; 5: e4m3 Vᵀ): no raw V ring, no transform of V. */
__host__ __device__ constexpr bool v_by_tma(int v_path) { return v_given_f16(v_path) || v_path == 5; }
/* e4m3 P̃ whose row sums come from the P·V GEMM (8 rows of ones in every Vᵀ column block): V_PATH 4, 5. */
__host__ __device__ constexpr bool gemm_sums(int v_path) { return v_path == 4 || v_path == 5; }
/* e4m3 Vᵀ (V_PATH 0, 4): rows (dims) per column block of the stage; V_PATH 4 adds 8 rows of ones, the B operand's
 * columns D..D+7, so that the e4m3 P·V GEMM sums P̃ into the accumulator's column D. */
template <int D, int V_PATH> __host__ __device__ constexpr int vt_rows() { return gemm_sums(V_PATH) ? D + 8 : D; }
template <int D, int V_PATH> __host__ __device__ constexpr int acc_cols() { return V_PATH ? D + 8 : D; }

/* The shared memory of a plan with qb Q buffers (and FP16 copies) and os bytes of output staging rows: the Q buffers,
 * the rings, the copies, the staging rows, the barriers (three more for the second buffer) and 1 KiB to align the
 * base; attn_sm90_smem_bytes() computes the same */
__host__ __device__ constexpr int sm90_smem_plan(int q_bytes, int rings, int q16_bytes, int stages, int qb, int os)
{
    return align1024(qb * q_bytes) + rings + qb * q16_bytes + os + (3 + 7 * stages + (qb == 2 ? 3 : 0)) * 8 + 1024;
}
/* The output staging rows of a block: 16 rows of D halves + 16 bytes (conflict-free 4-byte stores) for each of its
 * consumer warps; attn_sm90_smem_bytes() computes the same */
template <int D> __host__ __device__ constexpr int o_stage_pitch() { return D * 2 + 16; }
template <int D> __host__ __device__ constexpr int o_stage_warp_bytes() { return 16 * o_stage_pitch<D>(); }
/* EVO_SM90_O_SMEM: -1 (default) the plan's choice below; 0 no staging rows (each thread stores its accumulators'
 * values, 4 bytes at a time); 1 staged rows stored 16 bytes a lane; 2 staged rows stored by bulk copies. A
 * measurement override for tools/bench builds (the host side reads the same macro). */
#ifndef EVO_SM90_O_SMEM
#define EVO_SM90_O_SMEM (-1)
#endif
#define EVO_SM90_CFG_PERSIST 1 /* Sm90Cfg takes PERSIST (tools/bench/sm90_bench.cu builds templates with and without) */
/* Shared-memory plan and thread counts of one genome; the host mirrors SMEM in attn_sm90_smem_bytes().
 * QB: Q buffers and their FP16 copies. Two where a block walks several work items (PERSIST 1, 2) with the producer
 * (PIPE 2) and Q·Kᵀ in FP16 (QK_MODE 2), if they fit: the producer loads the next item's Q, and the transform warps
 * convert it, while the consumers still read this item's (one buffer: each item's Q, and the K tiles behind it, were
 * loaded and converted only once the consumers had released the previous item's Q). Measured (H200, 2026-11-29,
 * docs/perf-notes.md "A second Q buffer"): 1-3 % faster with FP16 Q at head dim 64; with e4m3 Q (QK_MODE 0), which
 * nothing converts, ±4 % and slower for the V_PATH 5 genomes, so those keep one. */
template <int D, int WG_ROWS, int CONSUMERS, int TILE_N, int STAGES, int PIPE, int QK_MODE, int V_PATH, int PERSIST = 0>
struct Sm90Cfg {
    static constexpr int MT = WG_ROWS / 64;                           /* m64 tiles per consumer warpgroup */
    static constexpr int BM = CONSUMERS * WG_ROWS;                    /* query rows per block */
    static constexpr int PRODUCER = PIPE == 2 ? 1 : 0;
    static constexpr int THREADS = (CONSUMERS + PRODUCER) * 128;
    static constexpr int VB = TILE_N % 128 == 0 ? 128 : 64;          /* e4m3 Vᵀ: bytes per swizzle column block */
    static constexpr int Q_BYTES = BM * D;
    static constexpr int KV_BYTES = TILE_N * D;                       /* one stage of K or of raw V */
    static constexpr int KR_BYTES = V_PATH == 3 ? 0 : KV_BYTES;       /* the raw K ring's stage (V_PATH 3: none) */
    static constexpr int VR_BYTES = v_by_tma(V_PATH) ? 0 : KV_BYTES;  /* the raw V ring (2, 3, 5: none) */
    static constexpr int VT_BYTES = vt_bytes<D, TILE_N, V_PATH>();
    static constexpr int NX = PIPE == 2 ? STAGES : 1;                 /* converted tiles: a ring with a producer */
    static constexpr int Q16_BYTES = QK_MODE == 2 ? BM * D * 2 : 0;
    static constexpr int K16_BYTES = QK_MODE == 2 ? TILE_N * D * 2 : 0;
    static constexpr int RINGS = STAGES * (KR_BYTES + VR_BYTES) + NX * (VT_BYTES + K16_BYTES);
    static constexpr int QB = PIPE == 2 && QK_MODE == 2 && PERSIST != 0 &&
                                      sm90_smem_plan(Q_BYTES, RINGS, Q16_BYTES, STAGES, 2, 0) <= 227 * 1024
                                  ? 2
                                  : 1;
    /* Output staging rows (OS bytes) with the producer (PIPE 2), if they fit beside QB's plan: each consumer warp
     * writes its 16 rows there and stores whole rows (O_STORE 1: 16 bytes a lane; 2: a bulk copy a row, which the
     * warp does not wait for), instead of 4 bytes a lane in 8 rows an instruction. Measured (H200, 2026-11-29,
     * docs/perf-notes.md "Whole output rows, the next item ahead, and a call's kernels overlapped"): 16-byte stores
     * 2-9 % faster, except 2 % slower at (1,16,16384,64) with FP16 Q·Kᵀ, where bulk copies are level; so FP16 Q·Kᵀ
     * stores by bulk copy, e4m3 by 16-byte stores. */
    static constexpr int OS_WANT = PIPE == 2 && EVO_SM90_O_SMEM != 0 ? CONSUMERS * 4 * o_stage_warp_bytes<D>() : 0;
    static constexpr int OS =
        sm90_smem_plan(Q_BYTES, RINGS, Q16_BYTES, STAGES, QB, OS_WANT) <= 227 * 1024 ? OS_WANT : 0;
    static constexpr int O_STORE = !OS ? 0 : EVO_SM90_O_SMEM > 0 ? EVO_SM90_O_SMEM : QK_MODE == 2 ? 2 : 1;
    static constexpr int OFF_K = align1024(QB * Q_BYTES);
    static constexpr int OFF_V = OFF_K + STAGES * KR_BYTES;
    static constexpr int OFF_VT = OFF_V + STAGES * VR_BYTES;
    static constexpr int OFF_Q16 = OFF_VT + NX * VT_BYTES;
    static constexpr int OFF_K16 = OFF_Q16 + QB * Q16_BYTES;
    static constexpr int OFF_OS = OFF_K16 + NX * K16_BYTES;
    static constexpr int OFF_BAR = OFF_OS + OS;
    static constexpr int N_BARS = 3 + 7 * STAGES + (QB == 2 ? 3 : 0); /* Bars: the second Q buffer's three last */
    static constexpr int SMEM = OFF_BAR + N_BARS * 8 + 1024;          /* + slack to align the base to 1024 */

    static_assert(D == 64 || D == 128, "head dim 64 or 128");
    static_assert(WG_ROWS == 64 || WG_ROWS == 128, "a consumer warpgroup owns 64 or 128 rows");
    static_assert(CONSUMERS >= 1 && CONSUMERS <= 3, "1 to 3 consumer warpgroups");
    static_assert(TILE_N == 64 || TILE_N == 128 || TILE_N == 192 || TILE_N == 256, "key tile 64/128/192/256");
    static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
    static_assert(PIPE >= 0 && PIPE <= 2, "PIPE 0, 1 or 2");
    static_assert(QK_MODE >= 0 && QK_MODE <= 2, "QK_MODE 0 (e4m3, Q in smem), 1 (e4m3, Q in registers) or 2 (FP16)");
    static_assert(KV_BYTES % 1024 == 0 && VT_BYTES % 1024 == 0, "tiles keep 1024-byte alignment");
    static_assert(Q_BYTES % 1024 == 0 && Q16_BYTES % 1024 == 0, "Q buffers keep 1024-byte alignment");
    static_assert(SMEM == sm90_smem_plan(Q_BYTES, RINGS, Q16_BYTES, STAGES, QB, OS), "the offsets add up to the plan");
    static_assert(OS % 16 == 0, "staging rows keep 16-byte alignment");
    static_assert(SMEM <= 227 * 1024, "shared memory over the 227 KB an sm_90 block can have");
};

/* Barriers (8 bytes each) after the buffers. */
enum { BAR_QFULL = 0, BAR_QEMPTY = 1, BAR_Q16FULL = 2 };
template <int STAGES> struct Bars {
    static constexpr __host__ __device__ int kfull(int s) { return 3 + s; }
    static constexpr __host__ __device__ int vfull(int s) { return 3 + STAGES + s; }
    static constexpr __host__ __device__ int vtfull(int s) { return 3 + 2 * STAGES + s; }
    static constexpr __host__ __device__ int kempty(int s) { return 3 + 3 * STAGES + s; }
    static constexpr __host__ __device__ int vempty(int s) { return 3 + 4 * STAGES + s; }
    static constexpr __host__ __device__ int k16full(int s) { return 3 + 5 * STAGES + s; }
    static constexpr __host__ __device__ int vrawempty(int s) { return 3 + 6 * STAGES + s; }
    /* Q buffer b (Sm90Cfg::QB): full (the TMA's bytes), empty (the consumers' reads done), FP16 copy full */
    static constexpr __host__ __device__ int qfull(int b) { return b ? 3 + 7 * STAGES : BAR_QFULL; }
    static constexpr __host__ __device__ int qempty(int b) { return b ? 4 + 7 * STAGES : BAR_QEMPTY; }
    static constexpr __host__ __device__ int q16full(int b) { return b ? 5 + 7 * STAGES : BAR_Q16FULL; }
};

/* Shared-memory addresses of one block (1024-aligned base). */
struct Smem {
    u32 q, k, v, vt, q16, k16, os, bar;
    EVO_DEV u32 b(int i) const { return bar + 8u * (u32)i; }
};
constexpr int TRANSFORM_WARPS = 3; /* producer warps 1-3: Q/K to FP16, V transpose or FP16 (warp 0: the TMA thread) */

EVO_DEV u32 smem_u32(const void *p) { return (u32)__cvta_generic_to_shared(p); }
EVO_DEV float neg_inf() { return __int_as_float(0xff800000u); }

/* ---- mbarrier, TMA, proxies, named barriers ---- */
EVO_DEV void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* Wait until the phase of this parity completed. (A suspend-time hint for the transform warps' waits measured level:
 * docs/perf-notes.md, "P·V and its row sums in one instruction, and three switches".) */
EVO_DEV void mbar_wait(u32 bar, u32 parity)
{
    asm volatile("{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* The non-blocking form of mbar_wait: has the phase of this parity completed? */
EVO_DEV bool mbar_test(u32 bar, u32 parity)
{
    u32 ok;
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return ok != 0u;
}
EVO_DEV void mbar_arrive(u32 bar) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory"); }
EVO_DEV void mbar_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/* EVO_SM90_KV_HINT (not a knob; default 0; tools/bench builds only, measurement): 1 gives the TMA loads an L2 cache
 * policy, evict_last for K and V (read again by every query tile of the head) and evict_first for Q (read once). */
#ifndef EVO_SM90_KV_HINT
#define EVO_SM90_KV_HINT 0
#endif
enum { L2_ANY = 0, L2_KEEP = 1, L2_ONCE = 2 }; /* what a load's bytes are to the L2 (EVO_SM90_KV_HINT) */
EVO_DEV void tma_load_3d(u32 dst, const evo_tmap *map, int c0, int c1, int c2, u32 bar, int l2 = L2_ANY)
{
    if (EVO_SM90_KV_HINT && l2 != L2_ANY) {
        u64 pol;
        if (l2 == L2_KEEP) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
        else asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
                     "[%1, {%2, %3, %4}], [%5], %6;" ::"r"(dst),
                     "l"((u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(pol)
                     : "memory");
        return;
    }
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
                 "[%5];" ::"r"(dst),
                 "l"((u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}
EVO_DEV void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* O_STORE 2: bytes (a multiple of 16, both addresses 16-aligned) from shared to global memory by the async
 * proxy, one bulk group; and the wait until this thread's groups have read their shared memory */
EVO_DEV void bulk_store_row(void *g, u32 s, int bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                 "cp.async.bulk.commit_group;" ::"l"(g), "r"(s), "r"(bytes) : "memory");
}
EVO_DEV void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
EVO_DEV void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
EVO_DEV void named_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
EVO_DEV void named_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }

/* ---- cp.async (PIPE 0) ---- */
EVO_DEV void cp_async16(u32 dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
EVO_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> EVO_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

/* ---- wgmma ---- */
EVO_DEV void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
EVO_DEV void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> EVO_DEV void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
/* Keeps the compiler from moving reads or writes of an accumulator across a wgmma wait. */
template <int N> EVO_DEV void fence_regs(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}

/* Shared-memory matrix descriptor: start address, leading and stride byte offsets, swizzle span (128/64/32 B). */
EVO_DEV u64 make_desc(u32 addr, u32 lbo, u32 sbo, int span)
{
    const u64 mode = span == 128 ? 1 : span == 64 ? 2 : 3;
    return (u64)((addr & 0x3FFFFu) >> 4) | ((u64)((lbo >> 4) & 0x3FFFu) << 16) | ((u64)((sbo >> 4) & 0x3FFFu) << 32) |
           (mode << 62);
}

/* The descriptor of d's matrix moved by `off` bytes: make_desc(addr + off, ...) for d = make_desc(addr, ...), as one
 * add to the low word. Exact while addr + off stays in shared memory (below 2^18 bytes: the 14-bit address field
 * neither wraps nor carries), so a GEMM's k-steps cost one uniform add each instead of rebuilding the descriptor
 * (mask, shift, or: a chain of dependent uniform instructions before every wgmma). */
EVO_DEV u64 desc_at(u64 d, u32 off) { return (d & 0xFFFFFFFF00000000ull) | (u32)((u32)d + (off >> 4)); }

/* Byte offset of logical offset `off` inside a tile stored with SPAN-byte swizzling (the TMA and wgmma pattern):
 * the 16-byte chunk index within each SPAN-byte row is XORed with the row's index modulo SPAN/16. Tiles start on
 * 1024-byte boundaries, so the pattern is a function of the offset alone. */
template <int SPAN> EVO_DEV int swz(int off) { return off ^ (((off >> 7) & (SPAN / 16 - 1)) << 4); }

EVO_DEV u32 prmt(u32 a, u32 b, u32 sel)
{
    u32 r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}
EVO_DEV float ex2(float x)
{
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

/* 2^x on the FMA pipe (measurement only, EVO_SM90_EXP_EMU, below): x rounded to the nearest integer j by the
 * 1.5·2^23 trick, 2^(x − j) by a degree-3 polynomial on [−0.5, 0.5] (relative error ≤ 1.02e-4; exact at integers),
 * j added to the exponent; x clamped to −125 (−inf gives 2^−125, which rounds to 0 in e4m3 and FP16). Seven FMA-pipe
 * instructions and no MUFU: the MUFU.EX2 share the MIO queue with shared-memory instructions. */
EVO_DEV float ex2_fma(float x)
{
    x = fmaxf(x, -125.f);
    const float t = x + 12582912.f, f = x - (t - 12582912.f);
    const float p = fmaf(fmaf(fmaf(0x1.c2a216p-5f, f, 0x1.f00c4ep-3f), f, 0x1.62f5fap-1f), f, 1.f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}
/* EVO_SM90_EXP_EMU (not a knob; default 0; tools/bench builds only): 1 computes the exponentials of every fourth key
 * pair with ex2_fma, 2 every second, 3 three of four; the rest with MUFU.EX2. */
#ifndef EVO_SM90_EXP_EMU
#define EVO_SM90_EXP_EMU 0
#endif
EVO_DEV float ex2_mix(int i, float x) /* i: the key pair, a constant once its loop is unrolled */
{
    const bool fma = EVO_SM90_EXP_EMU == 1   ? i % 4 == 3
                     : EVO_SM90_EXP_EMU == 2 ? i % 2 == 1
                     : EVO_SM90_EXP_EMU == 3 ? i % 4 != 0
                                             : false;
    return fma ? ex2_fma(x) : ex2(x);
}
/* EVO_SM90_NO_TINY (not a knob; default 0; tools/bench builds only): 1 leaves out of V_PATH 4 and 5's row sum the mass
 * of the keys whose P̃ is 0 (the FP16 bookkeeping of Softmax::step), so l is the GEMM's sum of P̃ alone and the
 * output is renormalized over the keys P̃ keeps. Not the FP8 model's arithmetic: it measures what that term costs
 * (docs/perf-notes.md, "Where the softmax's issue slots go"). */
#ifndef EVO_SM90_NO_TINY
#define EVO_SM90_NO_TINY 0
#endif
/* EVO_SM90_SPEC (not a knob; default -1; 0 and 1 in tools/bench builds to measure): with FP16 P (V_PATH 1 and 3) every
 * key tile after an item's first computes P against the rows' offsets as they stand, straight into P's fragment, while
 * the row maxima are taken beside it (Softmax::step_kept); only a warp where some row's maximum passed its offset by
 * more than LAZY_RESCALE computes the tile again the usual way. The same bits: the exponentials no longer wait for the
 * maxima's trees and shuffles. -1: for one consumer warpgroup (measured 2-9 % faster at 2048 keys and more, H200,
 * 2026-11-29, docs/perf-notes.md "The softmax's own chain, and the tensor cores beside it"); with two taking turns it
 * is level (the other warpgroup's softmax already fills the chain's gaps), so they keep the plain step. 1: every
 * FP16-P genome; 0: none. */
#ifndef EVO_SM90_SPEC
#define EVO_SM90_SPEC (-1)
#endif
/* EVO_SM90_PDL (not a knob; default 1; 0 in tools/bench builds to measure without): a V_PATH 3 or 5 attention kernel
 * may start while its call's first kernel (evo_kv16_convert, evo_vt_transpose) still runs (programmatic dependent
 * launch: the first kernel lets its dependents launch at once, the launcher launches the attention kernel with
 * programmatic stream serialization, and its TMA thread waits for the first kernel's results, griddepcontrol.wait,
 * before it loads the first K or V tile; Q and everything before need none of them); the same bits. Launched without
 * the attribute, both instructions do nothing. Measured (H200, 2026-11-29, docs/perf-notes.md "Whole output
 * rows, the next item ahead, and a call's kernels overlapped"): 12-15 % faster at the 512-key presets, 4-8 % at
 * (2|4,8,2048,64), 1 % at (4,16,4096,128) causal. */
#ifndef EVO_SM90_PDL
#define EVO_SM90_PDL 1
#endif
/* EVO_SM90_TRACE (not a knob; default 0; tools/bench builds only): 1 makes thread 0 of each consumer warpgroup of the
 * first EVO_SM90_TRACE_CTAS blocks record the SM clock at its steps of every key tile of its work items, in order,
 * until EVO_SM90_TRACE_TILES rows are full (OVERLAP's loop, the TRACE_* events: before and after its turn, after
 * issuing, after Q·Kᵀ, after P·V(j-1), after the softmax and packing; a step a tile does not have reads 0; row = the
 * block's key tiles so far + its items so far: an item's tiles, then a row for its last P·V) into evo_sm90_trace, which
 * tools/bench/sm90_bench.cu --trace and --trace-items print: which warpgroup waits on what, and what an item's start
 * and end cost. */
#ifndef EVO_SM90_TRACE
#define EVO_SM90_TRACE 0
#endif
#define EVO_SM90_TRACE_CTAS 4
#define EVO_SM90_TRACE_TILES 64
/* an item's first row also holds the previous item's end (its O stored) and this item's parameters ready (before
 * its Q is waited for) */
enum { TRACE_START, TRACE_TURN, TRACE_ISSUED, TRACE_QK, TRACE_PV, TRACE_SOFTMAX, TRACE_PREV_STORED, TRACE_SETUP,
       EVO_SM90_TRACE_EVENTS };
#if EVO_SM90_TRACE
__device__ unsigned long long evo_sm90_trace[EVO_SM90_TRACE_CTAS][2][EVO_SM90_TRACE_TILES][EVO_SM90_TRACE_EVENTS];
#endif
/* A tile's stamps are read into registers and stored once the tile is done. A clock read keeps its place among the
 * waits and barriers but not among plain arithmetic, so the stamp after the softmax depends on its last result
 * (stamp_after: the read is predicated on that value). The trace build waits for P·V(j-1) before the softmax, where
 * ptxas puts that wait in the shipped kernels anyway (docs/perf-notes.md, "The softmax waited for P·V"): any stamp
 * between the softmax and the wait would keep ptxas from moving it and time another schedule. */
/* The SM clock once dep is computed and the stores before it are issued (0 without EVO_SM90_TRACE): a clock read
 * keeps its place among waits and barriers but not among plain arithmetic, so it is predicated on a value */
EVO_DEV unsigned long long trace_clock_after(u32 dep)
{
#if EVO_SM90_TRACE
    unsigned long long t;
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0x7f7f7f7f;\n\tsetp.ne.or.u32 p, %1, 0x7f7f7f7e, p;\n\t"
                 "@p mov.u64 %0, %%clock64;\n\t@!p mov.u64 %0, 0;\n\t}"
                 : "=l"(t)
                 : "r"(dep)
                 : "memory");
    return t;
#else
    (void)dep;
    return 0ull;
#endif
}
struct TraceTile {
    unsigned long long t[EVO_SM90_TRACE_EVENTS];
    EVO_DEV void clear()
    {
#if EVO_SM90_TRACE
        for (int e = 0; e < EVO_SM90_TRACE_EVENTS; e++) t[e] = 0;
#endif
    }
    EVO_DEV void stamp(int e)
    {
#if EVO_SM90_TRACE
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(t[e]));
#else
        (void)e;
#endif
    }
    EVO_DEV void stamp_after(int e, u32 dep)
    {
#if EVO_SM90_TRACE
        t[e] = trace_clock_after(dep);
#else
        (void)e, (void)dep;
#endif
    }
    EVO_DEV void set(int e, unsigned long long v)
    {
#if EVO_SM90_TRACE
        t[e] = v;
#else
        (void)e, (void)v;
#endif
    }
    EVO_DEV void store(bool on, int cw, int j) /* and cleared for the next tile */
    {
#if EVO_SM90_TRACE
        if (on && cw < 2 && j < EVO_SM90_TRACE_TILES)
            for (int e = 0; e < EVO_SM90_TRACE_EVENTS; e++) evo_sm90_trace[blockIdx.x][cw][j][e] = t[e];
        clear();
#else
        (void)on, (void)cw, (void)j;
#endif
    }
};
/* Four floats → four e4m3 bytes (a in byte 0), round to nearest even, saturating. */
EVO_DEV u32 pack_e4m3x4(float a, float b, float c, float d)
{
    u32 r;
    asm("{\n.reg .b16 lo, hi;\ncvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\ncvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
        "mov.b32 %0, {lo, hi};\n}\n"
        : "=r"(r)
        : "f"(a), "f"(b), "f"(c), "f"(d));
    return r;
}
/* a and b rounded to e4m3 (nearest even, saturating) and back: the values P·V takes. */
EVO_DEV void e4m3_round2(float a, float b, float &ra, float &rb)
{
    asm("{\n.reg .b16 c, lo, hi;\n.reg .b32 h2;\ncvt.rn.satfinite.e4m3x2.f32 c, %3, %2;\ncvt.rn.f16x2.e4m3x2 h2, c;\n"
        "mov.b32 {lo, hi}, h2;\ncvt.f32.f16 %0, lo;\ncvt.f32.f16 %1, hi;\n}\n"
        : "=f"(ra), "=f"(rb)
        : "f"(a), "f"(b));
}
EVO_DEV u32 pack_f16x2(float lo, float hi)
{
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
/* acc + (x <= t ? x : 0) per f16 half: set.le gives 1.0 or 0.0, and the FMA by it is exact but for acc's rounding. */
EVO_DEV u32 add_le_f16x2(u32 acc, u32 x, u32 t)
{
    u32 r;
    asm("{\n.reg .b32 m;\nset.le.f16x2.f16x2 m, %1, %2;\nfma.rn.f16x2 %0, m, %1, %3;\n}\n"
        : "=r"(r)
        : "r"(x), "r"(t), "r"(acc));
    return r;
}
EVO_DEV float sum_f16x2(u32 x)
{
    float a, b;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %2;\ncvt.f32.f16 %0, lo;\ncvt.f32.f16 %1, hi;\n}\n"
        : "=f"(a), "=f"(b)
        : "r"(x));
    return a + b;
}
/* Bytes 0-1 (lo) or 2-3 (hi) of x, two e4m3 codes → f16x2 (the lower byte in the lower half). */
EVO_DEV u32 e4m3x2_lo(u32 x)
{
    u32 r;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}\n" : "=r"(r) : "r"(x));
    return r;
}
EVO_DEV u32 e4m3x2_hi(u32 x)
{
    u32 r;
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, hi;\n}\n" : "=r"(r) : "r"(x));
    return r;
}
EVO_DEV u32 lds32(u32 a)
{
    u32 r;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r) : "r"(a));
    return r;
}
EVO_DEV void sts32(u32 a, u32 v) { asm volatile("st.shared.b32 [%0], %1;" ::"r"(a), "r"(v)); }
EVO_DEV uint2 lds64(u32 a)
{
    uint2 r;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "r"(a));
    return r;
}
EVO_DEV void sts128(u32 a, u32 x, u32 y, u32 z, u32 w)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(x), "r"(y), "r"(z), "r"(w));
}
EVO_DEV uint4 lds128(u32 a)
{
    uint4 r;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(a));
    return r;
}
EVO_DEV void ldsm_x4_trans(u32 a, u32 &r0, u32 &r1, u32 &r2, u32 &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a));
}
EVO_DEV void stsm_x4(u32 a, u32 r0, u32 r1, u32 r2, u32 r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(r0), "r"(r1), "r"(r2),
                 "r"(r3)
                 : "memory");
}

/* GENERATED by tools/gen_sm90_wgmma.py: do not edit by hand. */
template <int N> struct WgQK;   /* S += Q·Kᵀ, e4m3, A and B from shared memory (K-major) */
template <int N> struct WgPV8;  /* D += A·B, e4m3, A from registers (P, or Q with Q_REG), B K-major */
template <int N> struct WgPV16; /* O += P·V, f16, A (P) from registers, B = V N-major (trans-b) */
template <int N> struct WgQK16; /* S += Q·Kᵀ, f16, A and B from shared memory (K-major) */
template <> struct WgQK<64> {
    static EVO_DEV void mma(float (&d)[32], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK<128> {
    static EVO_DEV void mma(float (&d)[64], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK<192> {
    static EVO_DEV void mma(float (&d)[96], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK<256> {
    static EVO_DEV void mma(float (&d)[128], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK16<64> {
    static EVO_DEV void mma(float (&d)[32], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK16<128> {
    static EVO_DEV void mma(float (&d)[64], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK16<192> {
    static EVO_DEV void mma(float (&d)[96], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgQK16<256> {
    static EVO_DEV void mma(float (&d)[128], u64 da, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                     : "l"(da), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<8> {
    static EVO_DEV void mma(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<64> {
    static EVO_DEV void mma(float (&d)[32], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<72> {
    static EVO_DEV void mma(float (&d)[36], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %41, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n72k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35}, {%36, %37, %38, %39}, %40, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<128> {
    static EVO_DEV void mma(float (&d)[64], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<136> {
    static EVO_DEV void mma(float (&d)[68], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %73, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n136k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67}, {%68, %69, %70, %71}, %72, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<192> {
    static EVO_DEV void mma(float (&d)[96], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV8<256> {
    static EVO_DEV void mma(float (&d)[128], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV16<72> {
    static EVO_DEV void mma(float (&d)[36], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %41, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n72k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35}, {%36, %37, %38, %39}, %40, p, 1, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
template <> struct WgPV16<136> {
    static EVO_DEV void mma(float (&d)[68], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %73, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n136k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67}, {%68, %69, %70, %71}, %72, p, 1, 1, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(scale_d));
    }
};
/* END GENERATED */

/* ---- tile transforms: raw e4m3 [rows][D] (swizzled like TMA writes it) → the operands the wgmma wants ---- */

/* e4m3 Vᵀ: [D rows][TILE_N keys] in column blocks of VB keys (VB-byte swizzle), with the key permutation of the P
 * fragment: physical key 16j + 8s + 2a + t sits at logical position 16j + 4a + 2s + t. One warp step moves 32 keys ×
 * 16 dims: ldmatrix.x4.trans reads keys 32jp + 0-7, 8-15, 16-23, 24-31 of dim chunk c (lane (g, q) gets keys 2q, 2q+1
 * of dims 2g, 2g+1 of each), two byte permutes per key group make the words of one dim and 4 logical keys, and
 * stmatrix.x4 writes them as four 8-row matrices whose rows are dims 16c + {0,2,4,6,9,11,13,15} ("E") and
 * {1,3,5,7,8,10,12,14} ("O"): eight different rows modulo 8, so neither side has bank conflicts. */
/* Warp W's steps: it = W, W + NW, .. of the NCH·NJP (column chunk c = it % NCH, key group jp = it / NCH), all known
 * when it compiles, so each address is a lane's base, an immediate and one XOR: the source swizzle's chunk bits are
 * c ^ sx (sx from the lane's key: jp moves whole swizzle periods), the destination's key bits 32·(jp % (VB/32)) ^ dx
 * (dx from the lane's dim and matrix half; 16·c moves whole swizzle rows). */
template <int D, int TILE_N, int NW, int VR, int W>
EVO_DEV void transpose_v_steps(u32 src, u32 dst, u32 sx16, u32 dx, u32 sel_e, u32 sel_o)
{
    constexpr int VB = TILE_N % 128 == 0 ? 128 : 64, NCH = D / 16, NJP = TILE_N / 32;
#pragma unroll
    for (int it = W; it < NCH * NJP; it += NW) {
        const int c = it % NCH, jp = it / NCH;
        u32 r0, r1, r2, r3;
        ldsm_x4_trans(src + (u32)(32 * jp * D) + ((u32)(16 * c) ^ sx16), r0, r1, r2, r3);
        const u32 e0 = prmt(r0, r1, sel_e), o0 = prmt(r0, r1, sel_o);
        const u32 e1 = prmt(r2, r3, sel_e), o1 = prmt(r2, r3, sel_o);
        stsm_x4(dst + (u32)((jp / (VB / 32)) * VR * VB + 16 * c * VB) + ((u32)(32 * (jp % (VB / 32))) ^ dx), e0, o0,
                e1, o1); /* VR rows a block */
    }
}
/* warp `worker` (of NW, warp-uniform) runs its own steps */
template <int D, int TILE_N, int NW, int VR, int W = 0>
EVO_DEV void transpose_v_pick(int worker, u32 src, u32 dst, u32 sx16, u32 dx, u32 sel_e, u32 sel_o)
{
    if constexpr (W < NW) {
        if (worker == W) transpose_v_steps<D, TILE_N, NW, VR, W>(src, dst, sx16, dx, sel_e, sel_o);
        else transpose_v_pick<D, TILE_N, NW, VR, W + 1>(worker, src, dst, sx16, dx, sel_e, sel_o);
    }
}
template <int D, int TILE_N, int NW, int VR = D> EVO_DEV void transpose_v(u32 src, u32 dst, int worker, int lane)
{
    constexpr int VB = TILE_N % 128 == 0 ? 128 : 64;
    const int m = lane >> 3, x = lane & 7, hi = x >= 4 ? 1 : 0;
    const int key_l = 16 * (m >> 1) + 8 * (m & 1) + x;                 /* ldmatrix: row x of matrix m */
    const int dim_l = 2 * x + ((m & 1) ? 1 - hi : hi);                  /* stmatrix: row x of matrix m */
    const u32 sel_e = (lane >> 2) < 4 ? 0x6420u : 0x7531u, sel_o = sel_e ^ (0x6420u ^ 0x7531u);
    /* swz<D>((32·jp + key_l)·D + 16·c) = 32·jp·D + key_l·D + (16·c ^ sx16) */
    const u32 sx16 = (u32)(D == 64 ? (key_l >> 1) & 3 : key_l & 7) << 4;
    /* (kl / VB)·VR·VB + swz<VB>(dim·VB + kl % VB), kl = 32·jp + 16·(m >> 1), dim = 16·c + dim_l: the key bits within
     * the row are 32·(jp % (VB/32)) ^ 16·((m >> 1) ^ sy) */
    const int sy = VB == 128 ? dim_l & 7 : (dim_l >> 1) & 3;
    const u32 dx = (u32)(16 * ((m >> 1) ^ sy));
    src += (u32)(key_l * D), dst += (u32)(dim_l * VB);
    transpose_v_pick<D, TILE_N, NW, VR>(worker, src, dst, sx16, dx, sel_e, sel_o);
}

/* FP16 copy of a raw e4m3 tile [ROWS][D]: rows of D fp16 in column blocks of 64 dims (128 bytes, 128B swizzle).
 * Read K-major it is the Q·Kᵀ operand (QK_MODE 2); read N-major (trans-b) it is the P·V operand (V_PATH 1). A unit is
 * 16 dims of one row: one 16-byte load, 8 conversions, two 16-byte stores. Thread t keeps one column chunk
 * c = t % CH and walks rows t / CH, + RS, + 2·RS, ..: the addresses are a base per step parity plus an immediate, not
 * a division and a swizzle per unit (which tripled the loop's instructions). UNR units are loaded before the first
 * is converted: 8 when the producer has 56 registers (1.1x the FP16 path at D = 128), 4 when it has 40 (8 spill). */
template <int D, int ROWS, int NW, int UNR = 4> EVO_DEV void convert16(u32 src, u32 dst, int worker, int lane)
{
    constexpr int CH = D / 16, RS = NW * 32 / CH, STEPS = (ROWS + RS - 1) / RS;
    static_assert(NW * 32 % CH == 0, "the transform threads must cover whole rows");
    static_assert(2 * RS % 8 == 0, "both swizzles repeat every two steps");
    const u32 t = (u32)(worker * 32 + lane), c = t % CH, r0 = t / CH;
    /* the swizzles depend on the row's low three bits, which repeat every two steps: one source and one destination
     * address per parity, then only immediate offsets */
    u32 sa[2], da[2], db[2];
#pragma unroll
    for (int q = 0; q < 2; q++) {
        const u32 r = r0 + (u32)(q * RS), off = r * 128 + (c % 4) * 32, blk = dst + (c / 4) * ROWS * 128;
        sa[q] = src + (u32)swz<D>((int)(r * D + 16 * c));
        da[q] = blk + (off ^ ((r & 7u) << 4)); /* swz<128> */
        db[q] = blk + ((off + 16) ^ ((r & 7u) << 4));
    }
#pragma unroll UNR
    for (int k = 0; k < STEPS; k++) {
        if (ROWS % RS != 0 && r0 + (u32)(k * RS) >= (u32)ROWS) break;
        const u32 step = (u32)(k / 2 * 2 * RS);
        const uint4 x = lds128(sa[k & 1] + step * D);
        sts128(da[k & 1] + step * 128, e4m3x2_lo(x.x), e4m3x2_hi(x.x), e4m3x2_lo(x.y), e4m3x2_hi(x.y));
        sts128(db[k & 1] + step * 128, e4m3x2_lo(x.z), e4m3x2_hi(x.z), e4m3x2_lo(x.w), e4m3x2_hi(x.w));
    }
}

/* PIPE 0: this thread's share of a ROWS × D tile, rows row0.. of one head, by 16-byte cp.async; rows past the
 * sequence are zero-filled. */
template <int ROWS, int D> EVO_DEV void copy_tile(u32 dst, const u8 *head, int row0, int seq, int tid, int nt)
{
    constexpr int CH = D / 16;
    for (int u = tid; u < ROWS * CH; u += nt) {
        const int r = u / CH, c = u % CH;
        const bool ok = row0 + r < seq;
        cp_async16(dst + swz<D>(r * D + c * 16), ok ? head + (long long)(row0 + r) * D + c * 16 : head, ok ? 16 : 0);
    }
}

/* Work items: (query tile, batch·head). PERSIST walks items w = blockIdx.x, +gridDim.x, ...: 1, query tile by query
 * tile over every head at once, the heaviest tiles first (it streams the K and V of every head together: 64 MB at
 * (4,16,4096,128), more than the L2); 2, head by head when not causal (the blocks in flight share the K and V of a
 * few heads), and 1's order when causal: a block striding through one head's tiles heaviest first gets a share that
 * depends on its index (max/mean work 1.12 at (4,16,4096,128), 1.56 at (1,16,16384,64) on 132 SMs). Causal, every
 * second wave of gridDim.x items is walked backwards (a snake): a wave spans several query-tile levels, and striding
 * forwards in every wave gave the low block indices the heavier level each time (max/mean work, each item its key
 * tiles and one tile of overhead, 132 SMs: 1.41 → 1.03 at (2,8,2048,64), 1.19 → 1.03 at (4,8,2048,64), 1.06 → 1.005
 * at (4,16,4096,128) and (1,16,16384,64); tools/bench/causal_balance.py, docs/perf-notes.md). A wave holds the same
 * items as before, so the blocks in flight read the same heads. Otherwise a block has the one item its grid position
 * names (causal: longest rows first). */
template <int PERSIST> struct Sched {
    int w, n;
    EVO_DEV Sched(const evo_attn_params &p, int nq)
    {
        w = PERSIST ? (int)blockIdx.x : 0;
        n = PERSIST ? nq * p.heads * p.batch : 1;
    }
    EVO_DEV bool valid() const { return w < n; }
    EVO_DEV bool last() const { return w + (PERSIST ? (int)gridDim.x : 1) >= n; }
    EVO_DEV void next() { w += PERSIST ? (int)gridDim.x : 1; }
    EVO_DEV void item(const evo_attn_params &p, int nq, int &bh, int &qt) const
    {
        if (PERSIST == 2 && !p.causal) {
            bh = w / nq;
            qt = w - bh * nq;
        } else if (PERSIST) {
            int v = w; /* causal: odd waves backwards; the last wave may be short, and is reversed over its length */
            if (p.causal) {
                const int G = (int)gridDim.x, k = w / G;
                if (k & 1) v = k * G + (min(G, n - k * G) - 1 - (w - k * G));
            }
            const int nbh = p.heads * p.batch, r = v / nbh;
            bh = v - r * nbh;
            qt = p.causal ? nq - 1 - r : r;
        } else {
            bh = (int)blockIdx.z * p.heads + (int)blockIdx.y;
            qt = p.causal ? nq - 1 - (int)blockIdx.x : (int)blockIdx.x;
        }
    }
};

template <int TILE_N> EVO_DEV int kv_tiles(const evo_attn_params &p, int m0, int bm)
{
    const int kv_len = p.causal ? min(p.seq, m0 + bm) : p.seq;
    return (kv_len + TILE_N - 1) / TILE_N;
}
/* ring slot of the it-th tile (it >= 0): its stage, and the parity of its pass over the ring (as unsigned numbers
 * they measured the same: docs/perf-notes.md, "P·V and its row sums in one instruction, and three switches") */
template <int STAGES> EVO_DEV int stage_of(int it) { return it % STAGES; }
template <int STAGES> EVO_DEV u32 phase_of(int it) { return (u32)(it / STAGES) & 1u; }

/* ---- the consumer's math on one key tile ---- */

/* Q of this warpgroup as wgmma A fragments (QK_MODE 1), loaded once per work item: chunk kk (32 dims), register
 * (row h, half v2) holds dims 32kk + 16v2 + 4q .. +3 of row 16·warp + g + 8h (the m16n8k32 A layout). */
template <int D, int MT> struct QFrag {
    u32 r[MT][D / 32][4];
    EVO_DEV void load(u32 q_wg, int wi, int g, int q)
    {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int kk = 0; kk < D / 32; kk++)
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const int row = mt * 64 + wi * 16 + g + 8 * (k & 1), byte = 32 * kk + 16 * (k >> 1) + 4 * q;
                    r[mt][kk][k] = lds32(q_wg + swz<D>(row * D + byte));
                }
    }
};

/* S[mt] = Q[mt]·K(stage)ᵀ for every m64 tile of this warpgroup; issued and committed, not waited for.
 * QK_MODE 0: q_addr/k_addr are the raw tiles (rows of D bytes). 1: Q comes from qf, k_addr is the raw K tile.
 * 2: the FP16 copies, 64-dim column blocks of BM or TILE_N rows; q_addr points at this warpgroup's first row. */
template <int D, int TILE_N, int MT, int QK_MODE, int BM, class QF>
EVO_DEV void issue_qk(float (&s)[MT][TILE_N / 2], u32 q_addr, u32 k_addr, const QF &qf)
{
    wg_fence();
    /* every k-step's descriptors are these moved by a constant (desc_at) */
    const u64 kd = QK_MODE == 2 ? make_desc(k_addr, 16, 1024, 128) : make_desc(k_addr, 16, 8 * D, D);
    const u64 qd = QK_MODE == 2 ? make_desc(q_addr, 16, 1024, 128) : make_desc(q_addr, 16, 8 * D, D);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        if constexpr (QK_MODE == 1) {
#pragma unroll
            for (int kk = 0; kk < D / 32; kk++)
                WgPV8<TILE_N>::mma(s[mt], qf.r[mt][kk][0], qf.r[mt][kk][1], qf.r[mt][kk][2], qf.r[mt][kk][3],
                                   desc_at(kd, kk * 32), kk > 0);
        } else if constexpr (QK_MODE == 2) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                WgQK16<TILE_N>::mma(s[mt], desc_at(qd, (kk / 4) * BM * 128 + mt * 64 * 128 + (kk % 4) * 32),
                                    desc_at(kd, (kk / 4) * TILE_N * 128 + (kk % 4) * 32), kk > 0);
        } else {
#pragma unroll
            for (int kk = 0; kk < D / 32; kk++)
                WgQK<TILE_N>::mma(s[mt], desc_at(qd, mt * 64 * D + kk * 32), desc_at(kd, kk * 32), kk > 0);
        }
    }
    wg_commit();
}

/* P fragments from the score registers. e4m3: chunk c (32 keys), registers (row h, half v2) take scores
 * 4(4c+2v2)+2h+{0,1} and 4(4c+2v2+1)+2h+{0,1}. f16: chunk c (16 keys) is the m16n8k16 A layout of score tiles 2c, 2c+1. */
template <int TILE_N, int MT, bool P8> struct PFrag {
    static constexpr int NCH = P8 ? TILE_N / 32 : TILE_N / 16;
    u32 r[MT][NCH][4];
    EVO_DEV u32 last() const { return r[MT - 1][NCH - 1][3]; } /* the last word pack writes */
    EVO_DEV void pack(const float (&s)[MT][TILE_N / 2])
    {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int c = 0; c < NCH; c++)
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const int h = k & 1, v2 = k >> 1;
                    if constexpr (P8) {
                        const int i0 = 4 * c + 2 * v2;
                        r[mt][c][k] = pack_e4m3x4(s[mt][4 * i0 + 2 * h], s[mt][4 * i0 + 2 * h + 1],
                                                  s[mt][4 * (i0 + 1) + 2 * h], s[mt][4 * (i0 + 1) + 2 * h + 1]);
                    } else {
                        const int i = 2 * c + v2;
                        r[mt][c][k] = pack_f16x2(s[mt][4 * i + 2 * h], s[mt][4 * i + 2 * h + 1]);
                    }
                }
    }
};

/* O[mt] (+)= P[mt]·V(stage); issued and committed, not waited for. zero_first: the first chunk overwrites O.
 * DA: the accumulator's columns, D of them from this GEMM. The e4m3 Vᵀ stage (P8) holds ROWS rows (dims) per
 * column block of VB keys; with V_PATH 4 (GSUM) its rows D..D+7 are ones, and a second GEMM (N = 8) sums P̃ into lg,
 * from zero each tile: the FP8 accumulator cuts every k-step's products to 13 bits below the running sum (docs/
 * perf-notes.md, "The FP8 accumulator"), so a row sum carried along the whole row in it drops late tiles' small keys
 * (measured: rel-L2 2.5x the FP8 model's at S = 4096); within one tile the sum stays small. take_rowsum adds lg into
 * the accumulator's columns D..D+7 once the GEMMs are done. */
template <int D, int DA, int TILE_N, int MT, bool P8, bool GSUM = false, bool SUMS = true, bool FUSED = false>
EVO_DEV void issue_pv(float (&o)[MT][DA / 2], float (&lg)[MT][4], const PFrag<TILE_N, MT, P8> &pf, u32 vt_addr,
                      bool zero_first)
{
    constexpr int VB = TILE_N % 128 == 0 ? 128 : 64, ROWS = GSUM ? D + 8 : D;
    static_assert(!FUSED || (P8 && GSUM && SUMS && DA == D + 8), "FUSED: V_PATH 4 and 5, O's 8 sum columns");
    wg_fence();
    const u64 vd = P8 ? make_desc(vt_addr, 16, 8 * VB, VB) : make_desc(vt_addr, TILE_N * 128, 1024, 128);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float(&od)[D / 2] = *reinterpret_cast<float(*)[D / 2]>(&o[mt][0]);
#pragma unroll
        for (int c = 0; c < PFrag<TILE_N, MT, P8>::NCH; c++) {
            const int sd = zero_first && c == 0 ? 0 : 1;
            if constexpr (P8) {
                const int kl = 32 * c;
                const u64 db = desc_at(vd, (kl / VB) * ROWS * VB + kl % VB);
                if constexpr (FUSED) /* the ones are the D rows' next swizzle atom: N = D + 8 spans both */
                    WgPV8<D + 8>::mma(o[mt], pf.r[mt][c][0], pf.r[mt][c][1], pf.r[mt][c][2], pf.r[mt][c][3], db, sd);
                else
                    WgPV8<D>::mma(od, pf.r[mt][c][0], pf.r[mt][c][1], pf.r[mt][c][2], pf.r[mt][c][3], db, sd);
                if constexpr (GSUM && SUMS && !FUSED) /* the ones: D rows (a whole number of 8-row swizzle atoms) further */
                    WgPV8<8>::mma(lg[mt], pf.r[mt][c][0], pf.r[mt][c][1], pf.r[mt][c][2], pf.r[mt][c][3],
                                  desc_at(db, D * VB), c ? 1 : 0);
            } else {
                const u64 db = desc_at(vd, c * 16 * 128);
                WgPV16<DA>::mma(o[mt], pf.r[mt][c][0], pf.r[mt][c][1], pf.r[mt][c][2], pf.r[mt][c][3], db, sd);
            }
        }
    }
    wg_commit();
}

/* PROBE 64 (timing only, wrong results): O[mt] (+)= P̃·Vᵀ with P̃ read from shared memory by the tensor cores, as an
 * SS wgmma: each thread stores its fragment words (16 bytes per 32-key chunk) at pbuf, the warpgroup syncs on
 * barrier bar after the proxy fence, then the GEMM reads them as a 128-byte-swizzled K-major tile (the words land in
 * other places than the fragment's, so the product is not P̃·V: the probe times where the A operand comes from). */
template <int D, int TILE_N, int MT>
EVO_DEV void issue_pv_smem(float (&o)[MT][(D + 8) / 2], const PFrag<TILE_N, MT, true> &pf, u32 vt_addr, u32 pbuf,
                           int bar, int ct, bool zero_first)
{
    static_assert(TILE_N == 128, "PROBE 64: 128-key tiles (one 128-byte row of P̃ per query row)");
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int c = 0; c < TILE_N / 32; c++)
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(pbuf + (u32)(mt * 8192 + c * 2048 + ct * 16)),
                         "r"(pf.r[mt][c][0]), "r"(pf.r[mt][c][1]), "r"(pf.r[mt][c][2]), "r"(pf.r[mt][c][3])
                         : "memory");
    fence_proxy_async();
    named_sync(bar, 128);
    wg_fence();
    /* the Vᵀ stage as issue_pv reads it: 128-key column blocks, so chunk c starts 32·c bytes into the first */
    const u64 vd = make_desc(vt_addr, 16, 8 * 128, 128), pd = make_desc(pbuf, 16, 8 * 128, 128);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float(&od)[D / 2] = *reinterpret_cast<float(*)[D / 2]>(&o[mt][0]);
#pragma unroll
        for (int c = 0; c < TILE_N / 32; c++)
            WgQK<D>::mma(od, desc_at(pd, mt * 64 * 128 + c * 32), desc_at(vd, c * 32), zero_first && c == 0 ? 0 : 1);
    }
    wg_commit();
}

/* V_PATH 4, after the GEMMs: the tile's row sums (lg, in O's scale of this tile) into the accumulator's columns
 * D..D+7; fresh: the accumulator itself is this tile's (O_ACC), else the sums add to the running ones. */
template <int D, int DA, int MT> EVO_DEV void take_rowsum(float (&o)[MT][DA / 2], float (&lg)[MT][4], bool fresh)
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++) fence_regs(lg[mt]);
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < 4; i++) o[mt][D / 2 + i] = fresh ? lg[mt][i] : o[mt][D / 2 + i] + lg[mt][i];
}

/* Online softmax of one tile, in place: scores → P values (scaled as the V path wants), row state m (raw score
 * max), M (the exponent offset in log2 units), l (row sum of this thread's P values; e4m3 P only: FP16 P is summed
 * by the P·V GEMM) and alpha (O's factor).
 * Element 4i+2h+e of s[mt] is row rowbase[mt] + g + 8h, key key0 + 8i + 2q + e. */
/* The maximum of row half h of a thread's scores in [LO, HI) of its key groups, as a balanced tree: depth log2 of the
 * count instead of a chain of one dependent FMNMX per group (ncu: fixed-latency waits are the consumers' largest
 * stall). A maximum is exact in any order, so the bits are the chain's. */
template <int LO, int HI, int N> EVO_DEV float row_max(const float (&s)[N], int h)
{
    if constexpr (HI - LO == 1)
        return fmaxf(s[4 * LO + 2 * h], s[4 * LO + 2 * h + 1]);
    else
        return fmaxf(row_max<LO, (LO + HI) / 2>(s, h), row_max<(LO + HI) / 2, HI>(s, h));
}

/* FP16 P: how far (log2 units) a row's maximum may pass its offset before O and the row sum are rescaled. */
constexpr float LAZY_RESCALE = 8.f;

/* NO_MAX (PROBE 16, wrong results): no row maxima (no FMNMX trees, no shuffles), every offset 0 */
template <int TILE_N, int MT, bool P8, bool GSUM = false, bool NO_MAX = false> struct Softmax {
    float m[MT][2], M[MT][2], l[MT][2], alpha[MT][2];
    EVO_DEV void init()
    {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) m[mt][h] = neg_inf(), M[mt][h] = neg_inf(), l[mt][h] = 0.f, alpha[mt][h] = 0.f;
    }
    /* keys past a row's end (the sequence's, or the causal diagonal) to -inf */
    static EVO_DEV void mask(float (&s)[MT][TILE_N / 2], int key0, const int (&rowbase)[MT], int seq, int causal, int g,
                             int q)
    {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = rowbase[mt] + g + 8 * h;
                const int lim = (causal ? min(row, seq - 1) : seq - 1) - key0 - 2 * q;
#pragma unroll
                for (int i = 0; i < TILE_N / 8; i++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        if (8 * i + e > lim) s[mt][4 * i + 2 * h + e] = neg_inf();
            }
    }
    /* each row half's running maximum with this tile's: trees, then the quad's shuffles side by side */
    EVO_DEV void maxima(const float (&s)[MT][TILE_N / 2], float (&rmx)[MT][2]) const
    {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                rmx[mt][h] = NO_MAX ? 0.f : fmaxf(m[mt][h], row_max<0, TILE_N / 8>(s[mt], h));
        if constexpr (!NO_MAX)
#pragma unroll
            for (int sh = 1; sh <= 2; sh *= 2)
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        rmx[mt][h] = fmaxf(rmx[mt][h], __shfl_xor_sync(0xffffffffu, rmx[mt][h], sh));
    }
    /* row half (mt, h)'s new maximum mx: its offset M and rescale factor alpha; returns the exponent's bias.
     * P8: an integer offset keeps P within (0, 256] and makes every rescale a power of two, so P̃ does not depend on
     * the tiling: they are the FP8 model's (attn_numerics.h), whose per-element error the fp8 gate holds a kernel to.
     * P = 448·2^(x − max) measured 1.5-3.8 % less end-to-end error but is the model's on no row it rescales, and
     * fails that bound on short causal rows (docs/results.md, "The fp8 accuracy class").
     * FP16 P: the offset stays until the maximum passes it by more than LAZY_RESCALE (P ≤ 2^8 then, in FP16 at the
     * same relative precision, summed with O in FP32), so after the first tiles scale_o almost never runs; a row's
     * first visible keys set it (prev = -inf: nothing seen yet). */
    EVO_DEV float new_offset(int mt, int h, float mx, float qk_mul)
    {
        const float prev = m[mt][h], x = mx * qk_mul;
        m[mt][h] = mx;
        const float Mn = mx == neg_inf()                                          ? 0.f
                         : P8                                                     ? ceilf(x)
                         : prev == neg_inf() || x > M[mt][h] + LAZY_RESCALE ? x
                                                                                  : M[mt][h];
        alpha[mt][h] = ex2(M[mt][h] - Mn);
        M[mt][h] = Mn;
        return (P8 ? 8.f : 0.f) - Mn;
    }
    EVO_DEV void step(float (&s)[MT][TILE_N / 2], float qk_mul, bool need_mask, int key0, const int (&rowbase)[MT],
                      int seq, int causal, int g, int q)
    {
        if (need_mask) mask(s, key0, rowbase, seq, causal, g, q);
        /* every row half's maximum first, then the exponentials */
        float rmx[MT][2];
        maxima(s, rmx);
        if constexpr (GSUM) {
            /* V_PATH 4 and 5: the key pairs of both row halves in turn (one row half after the other gives the same
             * bits and measured 0-2.5 % slower: docs/perf-notes.md, "The vendor kernel beside ours"). PFrag rounds p
             * to P̃ (the same codes) and the P·V GEMM sums P̃ (vt_rows); here only the mass of the keys whose P̃ is 0
             * (p ≤ 2^-10), in FP16 (1.5 instructions a score instead of 3 in FP32): at most 2^-10 a key against a row
             * sum of at least 2^7, so its FP16 rounding (and p within 2^-11 of the threshold going either way, p below
             * 2^-24 lost) moves l by less than 2^-17 of itself */
            float bias[MT][2];
            u32 tiny[MT][2];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++) bias[mt][h] = new_offset(mt, h, rmx[mt][h], qk_mul), tiny[mt][h] = 0u;
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int i = 0; i < TILE_N / 8; i++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        float *pr = &s[mt][4 * i + 2 * h];
                        const float p0 = ex2_mix(i, fmaf(pr[0], qk_mul, bias[mt][h]));
                        const float p1 = ex2_mix(i, fmaf(pr[1], qk_mul, bias[mt][h]));
                        pr[0] = p0, pr[1] = p1;
                        if constexpr (!EVO_SM90_NO_TINY) /* one chain a row half: four independent accumulators
                                                                 measured up to 13 % slower (docs/perf-notes.md) */
                            tiny[mt][h] = add_le_f16x2(tiny[mt][h], pack_f16x2(p0, p1), 0x14001400u /* 2^-10 */);
                    }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    l[mt][h] = l[mt][h] * alpha[mt][h] + (EVO_SM90_NO_TINY ? 0.f : sum_f16x2(tiny[mt][h]));
        } else {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float bias = new_offset(mt, h, rmx[mt][h], qk_mul);
                    float sum = 0.f;
#pragma unroll
                    for (int i = 0; i < TILE_N / 8; i++) {
                        float* pr = &s[mt][4 * i + 2 * h];
                        const float p0 = ex2_mix(i, fmaf(pr[0], qk_mul, bias));
                        const float p1 = ex2_mix(i, fmaf(pr[1], qk_mul, bias));
                        if constexpr (P8) { /* P̃ (exact in e4m3, so PFrag packs the same codes) and the row sum: P̃,
                                               or p where P̃ rounded to 0 (those keys' mass stays in l, as in the
                                               model). P̃ is 0 or ≥ 2^-9, and 0 exactly when p ≤ 2^-10, so
                                               max(P̃, min(p, 2^-10)) is that: two FMNMX, where a compare and select
                                               kept p live longer and spilled at 3 consumers, D 64
                                               (tests/test_sm90_family.c) */
                            e4m3_round2(p0, p1, pr[0], pr[1]);
                            sum += fmaxf(pr[0], fminf(p0, 0x1p-10f));
                            sum += fmaxf(pr[1], fminf(p1, 0x1p-10f));
                        } else { /* FP16 P: the P·V GEMM sums P (vt_bytes) */
                            pr[0] = p0, pr[1] = p1;
                        }
                    }
                    if (P8) l[mt][h] = l[mt][h] * alpha[mt][h] + sum;
                }
        }
    }
    /* EVO_SM90_SPEC, FP16 P: P against the offsets as they stand, packed into pf as pack() would, beside the row
     * maxima. True when every row of the warp keeps its offset (it had one, and its maximum did not pass it by more
     * than LAZY_RESCALE): then m and alpha (1) are what step() sets and pf what step() and pack() write. False: the
     * caller runs step() and pack() (s is as it came, masked). */
    template <class PF>
    EVO_DEV bool step_kept(float (&s)[MT][TILE_N / 2], PF &pf, float qk_mul, bool need_mask, int key0,
                           const int (&rowbase)[MT], int seq, int causal, int g, int q)
    {
        static_assert(!P8 && !NO_MAX, "step_kept: FP16 P, with the row maxima");
        if (need_mask) mask(s, key0, rowbase, seq, causal, g, q);
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int c = 0; c < TILE_N / 16; c++)
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const int h = k & 1, i = 2 * c + (k >> 1);
                    const float bias = 0.f - M[mt][h];
                    pf.r[mt][c][k] = pack_f16x2(ex2_mix(i, fmaf(s[mt][4 * i + 2 * h], qk_mul, bias)),
                                                ex2_mix(i, fmaf(s[mt][4 * i + 2 * h + 1], qk_mul, bias)));
                }
        float rmx[MT][2];
        maxima(s, rmx);
        bool keep = true;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                keep = keep && m[mt][h] != neg_inf() && !(rmx[mt][h] * qk_mul > M[mt][h] + LAZY_RESCALE);
        if (!__all_sync(0xffffffffu, keep)) return false;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) m[mt][h] = rmx[mt][h], alpha[mt][h] = 1.f;
        return true;
    }
};

/* O·alpha, skipped when no row of the warp changed its offset (alpha = 1 everywhere): after the first tiles a row's
 * offset rarely moves (FP16 P: only past LAZY_RESCALE; the e4m3 path's integer offsets: at each new integer). */
template <int D, int MT> EVO_DEV void scale_o(float (&o)[MT][D / 2], const float (&alpha)[MT][2])
{
    bool any = false;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) any |= alpha[mt][0] != 1.f || alpha[mt][1] != 1.f;
    if (!__any_sync(0xffffffffu, any)) return;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[mt][i] *= alpha[mt][(i >> 1) & 1];
}
template <int D, int MT>
EVO_DEV void add_scaled(float (&o)[MT][D / 2], const float (&ot)[MT][D / 2], const float (&alpha)[MT][2])
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[mt][i] = fmaf(o[mt][i], alpha[mt][(i >> 1) & 1], ot[mt][i]);
}

/* O / l · v_scale → FP16 rows of the output; rows past the sequence are not written. DA > D: O carries the row sums
 * in its column D (every thread of the row holds it); DA = D: l holds this thread's part of them. */
template <int D, int DA, int MT, bool L_TOO>
EVO_DEV float row_total(const float (&o)[MT][DA / 2], const float (&l)[MT][2], int mt, int h)
{
    float lt = 0.f;
    if constexpr (DA == D || L_TOO) { /* this thread's part of l, summed over the row's quad */
        lt = l[mt][h];
        lt += __shfl_xor_sync(0xffffffffu, lt, 1);
        lt += __shfl_xor_sync(0xffffffffu, lt, 2);
    }
    if constexpr (DA > D) lt += o[mt][D / 2 + 2 * h]; /* the GEMM's row sum (every thread of the row) */
    return lt;
}
template <int D, int DA, int MT, bool L_TOO = false>
EVO_DEV void store_o(const evo_attn_params &p, long long head_off, const float (&o)[MT][DA / 2], float (&l)[MT][2],
                     const int (&rowbase)[MT], float v_mul, int g, int q)
{
    u16 *og = p.o + head_off;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float lt = row_total<D, DA, MT, L_TOO>(o, l, mt, h);
            const int row = rowbase[mt] + g + 8 * h;
            if (row >= p.seq) continue;
            const float f = v_mul / lt;
            u16 *orow = og + (long long)row * D;
#pragma unroll
            for (int i = 0; i < D / 8; i++)
                *(u32 *)(orow + 8 * i + 2 * q) = pack_f16x2(o[mt][4 * i + 2 * h] * f, o[mt][4 * i + 2 * h + 1] * f);
        }
}

/* store_o's values through the warp's staging rows at stage (16 rows of o_stage_pitch bytes: conflict-free 4-byte
 * stores), then whole rows to global memory: MODE 1 16 bytes a lane; 2 a bulk copy a row by lanes 0-15, waited for
 * (their reads of the rows) only before the rows are written again. Rows past the sequence are not written. */
template <int D, int DA, int MT, int MODE, bool L_TOO = false>
EVO_DEV void store_o_staged(const evo_attn_params &p, long long head_off, const float (&o)[MT][DA / 2],
                            float (&l)[MT][2], const int (&rowbase)[MT], float v_mul, int g, int q, int lane, u32 stage)
{
    constexpr int PITCH = o_stage_pitch<D>(), CHUNKS = D / 8; /* 16-byte chunks a row */
    u16 *og = p.o + head_off;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        if constexpr (MODE == 2) { /* the last bulk copies have read the rows */
            bulk_wait_read();
            __syncwarp();
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float f = v_mul / row_total<D, DA, MT, L_TOO>(o, l, mt, h);
            const u32 srow = stage + (u32)((g + 8 * h) * PITCH + 4 * q);
#pragma unroll
            for (int i = 0; i < D / 8; i++)
                sts32(srow + 16 * i, pack_f16x2(o[mt][4 * i + 2 * h] * f, o[mt][4 * i + 2 * h + 1] * f));
        }
        if constexpr (MODE == 2) { /* a bulk copy a row, lanes 0..15, read by the async proxy */
            fence_proxy_async();
            __syncwarp();
            if (lane < 16 && rowbase[mt] + lane < p.seq)
                bulk_store_row(og + (long long)(rowbase[mt] + lane) * D, stage + (u32)(lane * PITCH), D * 2);
        } else {
            __syncwarp();
#pragma unroll
            for (int k = 0; k < 16 * CHUNKS / 32; k++) {
                const int idx = k * 32 + lane, r = idx / CHUNKS, c = idx % CHUNKS, row = rowbase[mt] + r;
                const uint4 v = lds128(stage + (u32)(r * PITCH + 16 * c));
                if (row < p.seq) *(uint4 *)(og + (long long)row * D + 8 * c) = v;
            }
            __syncwarp(); /* the rows are read before the next tile (or item) writes them */
        }
    }
}

template <int A, int N> EVO_DEV void fence_regs(float (&r)[A][N])
{
#pragma unroll
    for (int a = 0; a < A; a++) fence_regs(r[a]);
}

/* ---- roles ---- */

/* PIPE 2, warp 0 lane 0, the one TMA thread: Q once per work item and K of every key tile into the K ring after the
 * consumers released the stage; raw V of every key tile after the transform warps released the raw stage (the raw
 * ring runs ahead of the transformed one). Two cursors over the same work items, each advanced when its barrier has
 * completed (test_wait: a K that waits for its stage never holds up a V that could go, nor the reverse), K first.
 * Q boxes wholly past the sequence are skipped (their rows are never stored). */
template <int D, int WG_ROWS, int CONSUMERS, int TILE_N, int STAGES, int PERSIST, int V_PATH, int QK_MODE>
EVO_DEV void producer_tma(const evo_attn_params &p, const evo_attn_tmaps &t, const Smem &sm, int nq)
{
    typedef Bars<STAGES> B;
    constexpr int BM = CONSUMERS * WG_ROWS, KV = TILE_N * D;
    struct Cursor {
        Sched<PERSIST> sc;
        int item, j, n, bh, m0, it; /* j = -1: the item's Q is next (the K cursor, with_q) */
        bool with_q, done;
        EVO_DEV Cursor(const evo_attn_params &p, int nq, bool q) : sc(p, nq), item(0), it(0), with_q(q)
        {
            start(p, nq);
        }
        EVO_DEV void start(const evo_attn_params &p, int nq)
        {
            done = !sc.valid();
            if (done) return;
            int qt;
            sc.item(p, nq, bh, qt);
            m0 = qt * BM;
            n = kv_tiles<TILE_N>(p, m0, BM);
            j = with_q ? -1 : 0;
        }
        EVO_DEV void advance(const evo_attn_params &p, int nq) /* after tile j */
        {
            it++;
            if (++j < n) return;
            sc.next();
            item++;
            start(p, nq);
        }
    };
    typedef Sm90Cfg<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, 2, QK_MODE, V_PATH, PERSIST> C;
    constexpr int QB = C::QB;
    Cursor kc(p, nq, QB == 1), vc(p, nq, false);
    /* QB 2: a third cursor, over the items alone: item qi's Q into buffer qi & 1 once the consumers released it
     * (item qi - 2); the K cursor no longer stops for Q */
    /* the Q of the item at query row m0 of head bh into buffer b, its boxes wholly past the sequence skipped */
    auto load_q = [&](int b, int m0, int bh) {
        const int boxes = min(CONSUMERS, (p.seq - m0 + WG_ROWS - 1) / WG_ROWS);
        mbar_expect_tx(sm.b(B::qfull(b)), boxes * WG_ROWS * D);
        for (int w = 0; w < boxes; w++)
            tma_load_3d(sm.q + b * C::Q_BYTES + w * WG_ROWS * D, &t.q, 0, m0 + w * WG_ROWS, bh, sm.b(B::qfull(b)),
                        L2_ONCE);
    };
    Sched<PERSIST> qs(p, nq);
    int qi = 0;
    auto issue_q = [&]() {
        const int b = qi & 1;
        if (qi >= 2 && !mbar_test(sm.b(B::qempty(b)), (u32)((qi >> 1) - 1) & 1u)) return false;
        int bh, qt;
        qs.item(p, nq, bh, qt);
        load_q(b, qt * BM, bh);
        qs.next();
        qi++;
        return true;
    };
    /* EVO_SM90_PDL: K and V (V_PATH 3) or Vᵀ (5) are the call's first kernel's output: each cursor that loads them
     * waits for that kernel before its first tile (it: the cursor's tiles so far; no flag, no register more) */
    constexpr bool PDL_DEP = EVO_SM90_PDL && (V_PATH == 3 || V_PATH == 5);
    auto dep_wait = [](const Cursor &c) {
        if (c.it == 0) asm volatile("griddepcontrol.wait;" ::: "memory");
    };
    /* c's tile j into its stage (buffer base + stage * KV) once the stage is free: false while it must wait */
    auto issue_tile = [&](Cursor &c, u32 base, const evo_tmap *map, int (*empty)(int), int (*full)(int)) {
        const int s = stage_of<STAGES>(c.it);
        if (c.it >= STAGES && !mbar_test(sm.b(empty(s)), phase_of<STAGES>(c.it) ^ 1u)) return false;
        mbar_expect_tx(sm.b(full(s)), KV);
        tma_load_3d(base + s * KV, map, 0, c.j * TILE_N, c.bh, sm.b(full(s)), L2_KEEP);
        c.advance(p, nq);
        return true;
    };
    /* V_PATH 2, 3: FP16 V (and, V_PATH 3, FP16 K) of tile j straight into its stage of the FP16 layout the transform
     * warps write for V_PATH 1 (and QK_MODE 2), once the consumers are done with the tile STAGES back: D/64 boxes of
     * 64 dims x TILE_N rows, 128-byte swizzle, on the stage's full barrier */
    auto issue_f16 = [&](Cursor &c, u32 base, int stage_bytes, const evo_tmap *map, int (*empty)(int),
                         int (*full)(int)) {
        const int s = stage_of<STAGES>(c.it);
        if (c.it >= STAGES && !mbar_test(sm.b(empty(s)), phase_of<STAGES>(c.it) ^ 1u)) return false;
        if constexpr (PDL_DEP) dep_wait(c);
        mbar_expect_tx(sm.b(full(s)), TILE_N * D * 2);
#pragma unroll
        for (int cb = 0; cb < D / 64; cb++)
            tma_load_3d(base + s * stage_bytes + cb * TILE_N * 128, map, cb * 64, c.j * TILE_N, c.bh, sm.b(full(s)),
                        L2_KEEP);
        c.advance(p, nq);
        return true;
    };
    /* V_PATH 5: Vᵀ of tile j (TILE_N / VB boxes of VB keys x D dims, VB-byte swizzle) into the rows 0..D-1 of its
     * stage's column blocks (the ones rows stay), once the consumers are done with the tile STAGES back */
    auto issue_vt = [&](Cursor &c) {
        constexpr int VB = TILE_N % 128 == 0 ? 128 : 64, VT = vt_bytes<D, TILE_N, V_PATH>();
        const int s = stage_of<STAGES>(c.it);
        if (c.it >= STAGES && !mbar_test(sm.b(B::vempty(s)), phase_of<STAGES>(c.it) ^ 1u)) return false;
        if constexpr (PDL_DEP) dep_wait(c);
        mbar_expect_tx(sm.b(B::vtfull(s)), TILE_N * D);
#pragma unroll
        for (int b = 0; b < TILE_N / VB; b++)
            tma_load_3d(sm.vt + s * VT + b * (D + 8) * VB, &t.v, c.j * TILE_N + b * VB, 0, c.bh, sm.b(B::vtfull(s)),
                        L2_KEEP);
        c.advance(p, nq);
        return true;
    };
    u32 idle_ns = 0u; /* back off while neither can go: a spinning thread takes issue slots from a consumer warp */
    while (!kc.done || !vc.done || (QB == 2 && qs.valid())) {
        bool moved = false;
        if (QB == 2 && qs.valid()) moved |= issue_q();
        if (!kc.done) {
            if (QB == 1 && kc.j < 0) {
                if (kc.item == 0 || mbar_test(sm.b(BAR_QEMPTY), (u32)(kc.item - 1) & 1u)) {
                    load_q(0, kc.m0, kc.bh);
                    kc.j = 0;
                    moved = true;
                }
            } else if constexpr (V_PATH == 3) {
                moved |= issue_f16(kc, sm.k16, 2 * KV, &t.k, B::kempty, B::k16full);
            } else {
                moved |= issue_tile(kc, sm.k, &t.k, B::kempty, B::kfull);
            }
        }
        if (!vc.done) {
            if constexpr (v_given_f16(V_PATH))
                moved |= issue_f16(vc, sm.vt, vt_bytes<D, TILE_N, V_PATH>(), &t.v, B::vempty, B::vtfull);
            else if constexpr (V_PATH == 5)
                moved |= issue_vt(vc);
            else moved |= issue_tile(vc, sm.v, &t.v, B::vrawempty, B::vfull);
        }
        if (moved) {
            idle_ns = 0u;
        } else {
            idle_ns = idle_ns ? min(2u * idle_ns, 256u) : 32u;
            __nanosleep(idle_ns);
        }
    }
}

/* PIPE 2, warps 1-3: Q and K to FP16 (QK_MODE 2), each raw V tile to the Vᵀ (or FP16 V) ring; a proxy fence makes the
 * generic stores visible to the tensor cores, then the 96 threads arrive. The K16 ring slot of tile it is free: its
 * raw K arrived after the consumers released tile it-STAGES. A Q16 copy is free: the raw Q of an item is loaded
 * into a buffer only after the consumers released that buffer's Q16 copy (Sm90Cfg::QB). */
template <int D, int WG_ROWS, int CONSUMERS, int TILE_N, int STAGES, int QK_MODE, int V_PATH, int PERSIST, int PROBE,
          int PRODUCER_REGS>
EVO_DEV void producer_transform(const evo_attn_params &p, const Smem &sm, int nq, int worker, int lane)
{
    typedef Bars<STAGES> B;
    typedef Sm90Cfg<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, 2, QK_MODE, V_PATH, PERSIST> C;
    constexpr int UNR = PRODUCER_REGS >= 56 ? 8 : 4; /* convert16's loads in flight: 8 spill at 40 registers */
    constexpr int BM = CONSUMERS * WG_ROWS, KV = TILE_N * D, VT = vt_bytes<D, TILE_N, V_PATH>(), K16 = 2 * KV;
    if constexpr (v_by_tma(V_PATH) && QK_MODE != 2) return; /* nothing to convert: V arrives by TMA */
    int it = 0, item = 0;
    for (Sched<PERSIST> sc(p, nq); sc.valid(); sc.next(), item++) {
        int bh, qt;
        sc.item(p, nq, bh, qt);
        const int n = kv_tiles<TILE_N>(p, qt * BM, BM);
        if constexpr (QK_MODE == 2) { /* QB 2: buffer item & 1 of each (free: see producer_tma) */
            const int qb = C::QB == 2 ? item & 1 : 0;
            mbar_wait(sm.b(B::qfull(qb)), (u32)(item / C::QB) & 1u);
            convert16<D, BM, TRANSFORM_WARPS, UNR>(sm.q + qb * C::Q_BYTES, sm.q16 + qb * C::Q16_BYTES, worker, lane);
            fence_proxy_async();
            mbar_arrive(sm.b(B::q16full(qb)));
        }
        for (int j = 0; j < n; j++, it++) {
            const int s = stage_of<STAGES>(it);
            const u32 ph = phase_of<STAGES>(it);
            if constexpr (QK_MODE == 2 && V_PATH != 3) { /* V_PATH 3: K arrives in FP16 by TMA */
                mbar_wait(sm.b(B::kfull(s)), ph);
                if constexpr (!(PROBE & 1))
                    convert16<D, TILE_N, TRANSFORM_WARPS, UNR>(sm.k + s * KV, sm.k16 + s * K16, worker, lane);
                fence_proxy_async();
                mbar_arrive(sm.b(B::k16full(s)));
            }
            if constexpr (v_by_tma(V_PATH)) continue; /* V (FP16) or Vᵀ arrives by TMA: nothing to transform */
            mbar_wait(sm.b(B::vfull(s)), ph);
            if (it >= STAGES) mbar_wait(sm.b(B::vempty(s)), ph ^ 1u); /* consumers are done with Vᵀ of tile it-STAGES */
            if constexpr (PROBE & 1) {
            } else if constexpr (V_PATH == 1) {
                convert16<D, TILE_N, TRANSFORM_WARPS, UNR>(sm.v + s * KV, sm.vt + s * VT, worker, lane);
            } else {
                transpose_v<D, TILE_N, TRANSFORM_WARPS, vt_rows<D, V_PATH>()>(sm.v + s * KV, sm.vt + s * VT, worker,
                                                                              lane);
            }
            mbar_arrive(sm.b(B::vrawempty(s))); /* the raw stage may be refilled (the arrive orders the reads) */
            fence_proxy_async();
            mbar_arrive(sm.b(B::vtfull(s)));
        }
    }
}

/* PIPE 2 consumer warpgroup cw (thread ct of 128): waits for the ring, computes, releases stages, stores its rows. */
template <int D, int WG_ROWS, int CONSUMERS, int TILE_N, int STAGES, int QK_MODE, int V_PATH, int OVERLAP, int PINGPONG,
          int O_ACC, int PERSIST, int PROBE>
EVO_DEV void consumer_ws(const evo_attn_params &p, const Smem &sm, int nq, int cw, int ct)
{
    typedef Bars<STAGES> B;
    constexpr int MT = WG_ROWS / 64, BM = CONSUMERS * WG_ROWS, KV = TILE_N * D, VT = vt_bytes<D, TILE_N, V_PATH>();
    constexpr bool P8 = V_PATH == 0 || gemm_sums(V_PATH), GSUM = gemm_sums(V_PATH); /* GSUM: the GEMM sums P̃ */
    constexpr float LOG2E = 1.4426950408889634f;
    typedef Sm90Cfg<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, 2, QK_MODE, V_PATH, PERSIST> C;
    /* Q·Kᵀ operands: the raw e4m3 tiles, or their FP16 copies (made by the transform warps); Q of buffer qb */
    auto q_at = [&](int qb) {
        return QK_MODE == 2 ? sm.q16 + (u32)(qb * C::Q16_BYTES + cw * WG_ROWS * 128)
                            : sm.q + (u32)(qb * C::Q_BYTES + cw * WG_ROWS * D);
    };
    const u32 k_base = QK_MODE == 2 ? sm.k16 : sm.k;
    constexpr int KS = QK_MODE == 2 ? 2 * KV : KV;
    auto kready = [&](int s) { return sm.b(QK_MODE == 2 ? B::k16full(s) : B::kfull(s)); };
    const int lane = ct & 31, wi = ct >> 5, g = lane >> 2, q = lane & 3;
    const int my_turn = 2 + cw, other_turn = 2 + (cw ^ 1);
    if (PINGPONG && cw == 1) named_arrive(2, 256); /* warpgroup 0 issues first */

    constexpr int DA = acc_cols<D, V_PATH>();
    float s[MT][TILE_N / 2], o[MT][DA / 2], ot[MT][DA / 2], lg[MT][4]; /* lg: V_PATH 4's row sums of a tile */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int i = 0; i < TILE_N / 2; i++) s[mt][i] = 0.f;
#pragma unroll
        for (int i = 0; i < DA / 2; i++) ot[mt][i] = 0.f;
#pragma unroll
        for (int i = 0; i < 4; i++) lg[mt][i] = 0.f;
    }
    float(&pvt)[MT][DA / 2] = O_ACC ? ot : o; /* O_ACC: each tile's P·V lands in ot, then o = o·alpha + ot */
    PFrag<TILE_N, MT, P8> pf;
    QFrag<D, QK_MODE == 1 ? MT : 1> qf;
    Softmax<TILE_N, MT, P8, GSUM, (PROBE & 16) != 0> sx;
    constexpr bool SUMS = !(PROBE & 32); /* V_PATH 4 and 5's row-sum GEMMs (PROBE 32 leaves them out) */
    constexpr bool PSMEM = (PROBE & 64) != 0; /* PROBE 64: P̃ from shared memory (issue_pv_smem) */
    /* O_ACC with V_PATH 4 and 5: each tile's P·V (from zero) and its row sums come out of one m64n(D+8)k32 a 32-key
     * chunk into the tile accumulator's D + 8 columns, instead of an m64nDk32 and an m64n8k32 (issue_pv). The FP8
     * accumulator adds each output column on its own: the same bits, 1-2 % faster at 2048 keys and more (docs/
     * perf-notes.md, "P·V and its row sums in one instruction"). Without O_ACC the sum columns would have to be reset
     * between the tiles of one accumulator, and ptxas 13.0 then serializes the kernel's wgmma (C7511: by a move, a
     * multiply or an N = 8 wgmma alike). */
    constexpr bool FUSED = P8 && GSUM && SUMS && O_ACC && !(PROBE & 4) && !PSMEM;
    constexpr bool SPEC = (EVO_SM90_SPEC > 0 || (EVO_SM90_SPEC < 0 && CONSUMERS == 1)) && !P8 && !PROBE &&
                          !EVO_SM90_TRACE; /* Softmax::step_kept */
    static_assert(!PSMEM || (V_PATH == 5 && OVERLAP && TILE_N == 128), "PROBE 64: V_PATH 5, OVERLAP, TILE_N 128");
    const u32 past_bars = (sm.bar + C::N_BARS * 8u + 1023u) & ~1023u; /* PROBE 64's P̃ */
    const u32 pbuf = PSMEM ? past_bars + (u32)(cw * WG_ROWS * 128) : 0u;
    const u32 ostage = sm.os + (u32)((cw * 4 + wi) * o_stage_warp_bytes<D>()); /* this warp's staging rows */
    int it = 0, item = 0;
    unsigned long long tr_stored = 0, tr_setup = 0; /* EVO_SM90_TRACE: the previous item's O stored, this item's setup */
    /* V_PATH 2, 3 (V, and K, given in FP16): no v_scale (k_scale) means 1 */
    auto k_scale_of = [&](int bh) { return V_PATH == 3 && !p.k_scale ? 1.f : p.k_scale[bh]; };
    auto v_scale_of = [&](int bh) { return v_given_f16(V_PATH) && !p.v_scale ? 1.f : p.v_scale[bh]; };
    for (Sched<PERSIST> sc(p, nq); sc.valid(); sc.next(), item++) {
        int bh, qt;
        sc.item(p, nq, bh, qt);
        const int m0 = qt * BM, n = kv_tiles<TILE_N>(p, m0, BM), wg_row0 = m0 + cw * WG_ROWS;
        const long long head_off = (long long)bh * p.seq * D;
        const float qk_mul = p.q_scale[bh] * k_scale_of(bh) * p.softmax_scale * LOG2E, v_mul = v_scale_of(bh);
        int rowbase[MT];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) rowbase[mt] = wg_row0 + mt * 64 + wi * 16;
        auto need_mask = [&](int j) {
            const int key_end = (j + 1) * TILE_N;
            return key_end > p.seq || (p.causal && key_end - 1 > wg_row0);
        };
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int i = 0; i < DA / 2; i++) o[mt][i] = 0.f;
        sx.init();
        const int qb = C::QB == 2 ? item & 1 : 0;
        const u32 q_addr = q_at(qb), q_empty = sm.b(B::qempty(qb));
        tr_setup = trace_clock_after(__float_as_uint(qk_mul) ^ __float_as_uint(v_mul));
        mbar_wait(sm.b(QK_MODE == 2 ? B::q16full(qb) : B::qfull(qb)), (u32)(item / C::QB) & 1u);
        if constexpr (QK_MODE == 1) { /* Q into registers; its smem is free at once (the arrive releases the loads) */
            qf.load(q_addr, wi, g, q);
            mbar_arrive(q_empty);
        }
        if constexpr (!OVERLAP) {
            for (int j = 0; j < n; j++, it++) {
                const int st = stage_of<STAGES>(it);
                const u32 ph = phase_of<STAGES>(it);
                mbar_wait(kready(st), ph);
                if constexpr (!(PROBE & 8)) issue_qk<D, TILE_N, MT, QK_MODE, BM>(s, q_addr, k_base + st * KS, qf);
                wg_wait<0>();
                fence_regs(s);
                mbar_arrive(sm.b(B::kempty(st)));
                if (QK_MODE != 1 && j == n - 1) mbar_arrive(q_empty);
                if constexpr (!(PROBE & 2)) sx.step(s, qk_mul, need_mask(j), j * TILE_N, rowbase, p.seq, p.causal, g, q);
                if constexpr (!O_ACC) scale_o<DA, MT>(o, sx.alpha);
                pf.pack(s);
                mbar_wait(sm.b(B::vtfull(st)), ph);
                if constexpr (!(PROBE & 4)) issue_pv<D, DA, TILE_N, MT, P8, GSUM, SUMS, FUSED>(pvt, lg, pf, sm.vt + st * VT, O_ACC != 0);
                wg_wait<0>();
                fence_regs(pvt);
                if constexpr (GSUM && !(PROBE & 4) && !FUSED) take_rowsum<D, DA, MT>(pvt, lg, O_ACC != 0);
                mbar_arrive(sm.b(B::vempty(st)));
                if constexpr (O_ACC) add_scaled<DA, MT>(o, ot, sx.alpha);
            }
        } else {
            /* Tile j's Q·Kᵀ is issued before tile j-1's P·V; the softmax of j runs while P·V(j-1) is on the tensor
             * cores. alpha_prev is the factor that belongs to P·V(j-1). */
            float alpha_prev[MT][2];
            int pst = stage_of<STAGES>(it);
            u32 pph = phase_of<STAGES>(it);
            const bool tr = EVO_SM90_TRACE && ct == 0 && blockIdx.x < EVO_SM90_TRACE_CTAS &&
                            blockIdx.y == 0 && blockIdx.z == 0;
            TraceTile tt;
            tt.clear();
            tt.stamp(TRACE_START);
            tt.set(TRACE_PREV_STORED, tr_stored);
            tt.set(TRACE_SETUP, tr_setup);
            if (PINGPONG) named_sync(my_turn, 256);
            tt.stamp(TRACE_TURN);
            mbar_wait(kready(pst), pph);
            if constexpr (!(PROBE & 8)) issue_qk<D, TILE_N, MT, QK_MODE, BM>(s, q_addr, k_base + pst * KS, qf);
            if (PINGPONG) named_arrive(other_turn, 256);
            tt.stamp(TRACE_ISSUED);
            wg_wait<0>();
            fence_regs(s);
            tt.stamp(TRACE_QK);
            mbar_arrive(sm.b(B::kempty(pst)));
            if (QK_MODE != 1 && n == 1) mbar_arrive(q_empty);
            if constexpr (!(PROBE & 2)) sx.step(s, qk_mul, need_mask(0), 0, rowbase, p.seq, p.causal, g, q);
            pf.pack(s);
            tt.stamp_after(TRACE_SOFTMAX, pf.last());
            tt.store(tr, cw, it + item);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) alpha_prev[mt][0] = sx.alpha[mt][0], alpha_prev[mt][1] = sx.alpha[mt][1];
            it++;
            for (int j = 1; j < n; j++, it++) {
                const int st = stage_of<STAGES>(it);
                const u32 ph = phase_of<STAGES>(it);
                tt.stamp(TRACE_START);
                if (PINGPONG) named_sync(my_turn, 256);
                tt.stamp(TRACE_TURN);
                mbar_wait(kready(st), ph);
                if constexpr (!(PROBE & 8)) issue_qk<D, TILE_N, MT, QK_MODE, BM>(s, q_addr, k_base + st * KS, qf);
                if constexpr (!O_ACC) scale_o<DA, MT>(o, alpha_prev);
                mbar_wait(sm.b(B::vtfull(pst)), pph);
                if constexpr (PSMEM) issue_pv_smem<D, TILE_N, MT>(pvt, pf, sm.vt + pst * VT, pbuf, 4 + cw, ct, O_ACC != 0);
                else if constexpr (!(PROBE & 4)) issue_pv<D, DA, TILE_N, MT, P8, GSUM, SUMS, FUSED>(pvt, lg, pf, sm.vt + pst * VT, O_ACC != 0);
                if (PINGPONG) named_arrive(other_turn, 256);
                tt.stamp(TRACE_ISSUED);
                wg_wait<1>();
                fence_regs(s);
                tt.stamp(TRACE_QK);
                mbar_arrive(sm.b(B::kempty(st)));
                if (QK_MODE != 1 && j == n - 1) mbar_arrive(q_empty);
                if constexpr (EVO_SM90_TRACE) { /* see TraceTile */
                    wg_wait<0>();
                    fence_regs(pvt);
                    tt.stamp(TRACE_PV);
                }
                /* SPEC: the softmax after P·V(j-1) is done, since it writes P's fragment, that GEMM's operand */
                if constexpr (!SPEC && !(PROBE & 2))
                    sx.step(s, qk_mul, need_mask(j), j * TILE_N, rowbase, p.seq, p.causal, g, q);
                if constexpr (!EVO_SM90_TRACE) {
                    wg_wait<0>();
                    fence_regs(pvt);
                }
                if constexpr (GSUM && !(PROBE & 4) && !FUSED) take_rowsum<D, DA, MT>(pvt, lg, O_ACC != 0);
                mbar_arrive(sm.b(B::vempty(pst)));
                if constexpr (O_ACC) add_scaled<DA, MT>(o, ot, alpha_prev);
                if constexpr (SPEC) {
                    if (!sx.step_kept(s, pf, qk_mul, need_mask(j), j * TILE_N, rowbase, p.seq, p.causal, g, q)) {
                        sx.step(s, qk_mul, need_mask(j), j * TILE_N, rowbase, p.seq, p.causal, g, q);
                        pf.pack(s);
                    }
                } else {
                    pf.pack(s);
                }
                tt.stamp_after(TRACE_SOFTMAX, pf.last());
                tt.store(tr, cw, it + item);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) alpha_prev[mt][0] = sx.alpha[mt][0], alpha_prev[mt][1] = sx.alpha[mt][1];
                pst = st;
                pph = ph;
            }
            tt.stamp(TRACE_START);
            if (PINGPONG) named_sync(my_turn, 256);
            tt.stamp(TRACE_TURN);
            if constexpr (!O_ACC) scale_o<DA, MT>(o, alpha_prev);
            mbar_wait(sm.b(B::vtfull(pst)), pph);
            if constexpr (PSMEM) issue_pv_smem<D, TILE_N, MT>(pvt, pf, sm.vt + pst * VT, pbuf, 4 + cw, ct, O_ACC != 0);
            else if constexpr (!(PROBE & 4)) issue_pv<D, DA, TILE_N, MT, P8, GSUM, SUMS, FUSED>(pvt, lg, pf, sm.vt + pst * VT, O_ACC != 0);
            /* the last turn of warpgroup 1 has no one left to hand over to */
            if (PINGPONG && !(cw == 1 && sc.last())) named_arrive(other_turn, 256);
            tt.stamp(TRACE_ISSUED);
            wg_wait<0>();
            fence_regs(pvt);
            tt.stamp(TRACE_PV);
            tt.store(tr, cw, it + item);
            if constexpr (GSUM && !(PROBE & 4) && !FUSED) take_rowsum<D, DA, MT>(pvt, lg, O_ACC != 0);
            mbar_arrive(sm.b(B::vempty(pst)));
            if constexpr (O_ACC) add_scaled<DA, MT>(o, ot, alpha_prev);
        }
        if constexpr (C::O_STORE)
            store_o_staged<D, DA, MT, C::O_STORE, GSUM>(p, head_off, o, sx.l, rowbase, v_mul, g, q, lane, ostage);
        else store_o<D, DA, MT, GSUM>(p, head_off, o, sx.l, rowbase, v_mul, g, q);
        tr_stored = trace_clock_after(__float_as_uint(o[0][0]));
    }
    if constexpr (C::O_STORE == 2) bulk_wait_read(); /* the rows read before the block's memory goes */
}

/* PIPE 0 and 1: no producer. Every consumer thread loads (PIPE 0, cp.async) or thread 0 issues TMA (PIPE 1), all
 * transform V (and Q, K with QK_MODE 2) into one buffer each, then compute; named barrier 1 separates the phases. */
template <int D, int WG_ROWS, int CONSUMERS, int TILE_N, int STAGES, int PIPE, int QK_MODE, int V_PATH, int O_ACC,
          int PERSIST, int PROBE>
EVO_DEV void consumer_simple(const evo_attn_params &p, const evo_attn_tmaps &t, const Smem &sm, int nq, int tid)
{
    typedef Bars<STAGES> B;
    constexpr int MT = WG_ROWS / 64, BM = CONSUMERS * WG_ROWS, KV = TILE_N * D, NCT = CONSUMERS * 128;
    constexpr int NW = CONSUMERS * 4;
    constexpr bool P8 = V_PATH == 0;
    constexpr float LOG2E = 1.4426950408889634f;
    const int cw = tid >> 7, ct = tid & 127, lane = ct & 31, wi = ct >> 5, g = lane >> 2, q = lane & 3;
    const u32 q_addr = QK_MODE == 2 ? sm.q16 + (u32)(cw * WG_ROWS * 128) : sm.q + (u32)(cw * WG_ROWS * D);

    constexpr int DA = acc_cols<D, V_PATH>();
    float s[MT][TILE_N / 2], o[MT][DA / 2], ot[MT][DA / 2], lg[MT][4]; /* lg: unused (V_PATH 4 is PIPE 2's) */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int i = 0; i < TILE_N / 2; i++) s[mt][i] = 0.f;
#pragma unroll
        for (int i = 0; i < DA / 2; i++) ot[mt][i] = 0.f;
    }
    PFrag<TILE_N, MT, P8> pf;
    QFrag<D, QK_MODE == 1 ? MT : 1> qf;
    Softmax<TILE_N, MT, P8> sx;
    int it = 0, item = 0;
    for (Sched<PERSIST> sc(p, nq); sc.valid(); sc.next(), item++) {
        int bh, qt;
        sc.item(p, nq, bh, qt);
        const int m0 = qt * BM, n = kv_tiles<TILE_N>(p, m0, BM), wg_row0 = m0 + cw * WG_ROWS;
        const long long head_off = (long long)bh * p.seq * D;
        const u8 *Qg = p.q + head_off, *Kg = p.k + head_off, *Vg = p.v + head_off;
        const float qk_mul = p.q_scale[bh] * p.k_scale[bh] * p.softmax_scale * LOG2E, v_mul = p.v_scale[bh];
        int rowbase[MT];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) rowbase[mt] = wg_row0 + mt * 64 + wi * 16;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int i = 0; i < DA / 2; i++) o[mt][i] = 0.f;
        sx.init();

        named_sync(1, NCT); /* the previous item is done with Q and every stage */
        auto load_kv = [&](int j, int st) {
            if constexpr (PIPE == 0) {
                copy_tile<TILE_N, D>(sm.k + st * KV, Kg, j * TILE_N, p.seq, tid, NCT);
                copy_tile<TILE_N, D>(sm.v + st * KV, Vg, j * TILE_N, p.seq, tid, NCT);
            } else {
                mbar_expect_tx(sm.b(B::kfull(st)), 2 * KV);
                tma_load_3d(sm.k + st * KV, &t.k, 0, j * TILE_N, bh, sm.b(B::kfull(st)));
                tma_load_3d(sm.v + st * KV, &t.v, 0, j * TILE_N, bh, sm.b(B::kfull(st)));
            }
        };
        if constexpr (PIPE == 0) {
            copy_tile<BM, D>(sm.q, Qg, m0, p.seq, tid, NCT);
            for (int jj = 0; jj < STAGES - 1; jj++) {
                if (jj < n) load_kv(jj, stage_of<STAGES>(it + jj));
                cp_async_commit();
            }
        } else if (tid == 0) {
            const int boxes = min(CONSUMERS, (p.seq - m0 + WG_ROWS - 1) / WG_ROWS);
            mbar_expect_tx(sm.b(BAR_QFULL), boxes * WG_ROWS * D);
            for (int w = 0; w < boxes; w++)
                tma_load_3d(sm.q + w * WG_ROWS * D, &t.q, 0, m0 + w * WG_ROWS, bh, sm.b(BAR_QFULL));
            for (int jj = 0; jj < STAGES - 1 && jj < n; jj++) load_kv(jj, stage_of<STAGES>(it + jj));
        }
        for (int j = 0; j < n; j++, it++) {
            const int st = stage_of<STAGES>(it);
            if constexpr (PIPE == 0) {
                cp_async_wait<STAGES - 2>();
                fence_proxy_async();
            } else {
                if (j == 0) mbar_wait(sm.b(BAR_QFULL), (u32)item & 1u);
                mbar_wait(sm.b(B::kfull(st)), phase_of<STAGES>(it));
            }
            named_sync(1, NCT); /* tile j is in; everyone is done with tile j-1 and the transformed buffers */
            const int jn = j + STAGES - 1;
            if constexpr (PIPE == 0) {
                if (jn < n) load_kv(jn, stage_of<STAGES>(it + STAGES - 1));
                cp_async_commit();
            } else {
                if (tid == 0 && jn < n) load_kv(jn, stage_of<STAGES>(it + STAGES - 1));
            }
            if constexpr (QK_MODE == 1) {
                if (j == 0) qf.load(q_addr, wi, g, q);
            } else if constexpr (QK_MODE == 2) {
                if (j == 0) convert16<D, BM, NW>(sm.q, sm.q16, tid >> 5, lane);
                if constexpr (!(PROBE & 1)) convert16<D, TILE_N, NW>(sm.k + st * KV, sm.k16, tid >> 5, lane);
            }
            if constexpr (PROBE & 1) {
            } else if constexpr (V_PATH) {
                convert16<D, TILE_N, NW>(sm.v + st * KV, sm.vt, tid >> 5, lane);
            } else {
                transpose_v<D, TILE_N, NW>(sm.v + st * KV, sm.vt, tid >> 5, lane);
            }
            fence_proxy_async();
            named_sync(1, NCT);
            if constexpr (!(PROBE & 8))
                issue_qk<D, TILE_N, MT, QK_MODE, BM>(s, q_addr, QK_MODE == 2 ? sm.k16 : sm.k + st * KV, qf);
            wg_wait<0>();
            fence_regs(s);
            const int key_end = (j + 1) * TILE_N;
            const bool need_mask = key_end > p.seq || (p.causal && key_end - 1 > wg_row0);
            if constexpr (!(PROBE & 2)) sx.step(s, qk_mul, need_mask, j * TILE_N, rowbase, p.seq, p.causal, g, q);
            if constexpr (!O_ACC) scale_o<DA, MT>(o, sx.alpha);
            pf.pack(s);
            if constexpr (O_ACC) {
                if constexpr (!(PROBE & 4)) issue_pv<D, DA, TILE_N, MT, P8>(ot, lg, pf, sm.vt, true);
                wg_wait<0>();
                fence_regs(ot);
                add_scaled<DA, MT>(o, ot, sx.alpha);
            } else {
                if constexpr (!(PROBE & 4)) issue_pv<D, DA, TILE_N, MT, P8>(o, lg, pf, sm.vt, false);
                wg_wait<0>();
                fence_regs(o);
            }
        }
        if constexpr (PIPE == 0) cp_async_wait<0>();
        store_o<D, DA, MT>(p, head_off, o, sx.l, rowbase, v_mul, g, q);
    }
}

/* setmaxnreg counts: the block's registers at entry, R0 per thread, are redistributed so that the producer keeps
 * PRODUCER_REGS and each consumer warpgroup gets an equal share (a multiple of 8). */
template <int CONSUMERS, int PRODUCER_REGS> struct RegSplit {
    static constexpr int THREADS = (CONSUMERS + 1) * 128;
    static constexpr int R0 = (65536 / THREADS) / 8 * 8 > 255 ? 248 : (65536 / THREADS) / 8 * 8;
    static constexpr int RC0 = ((CONSUMERS + 1) * R0 - PRODUCER_REGS) / CONSUMERS / 8 * 8;
    static constexpr int RC = RC0 > 256 ? 256 : RC0;
};

} // namespace evo_sm90

/* K and V codes (e4m3 [B, H, S, D], n elements each) to FP16 [B, H, S, D] of the same values (exact: every e4m3
 * value is an FP16 value), both tensors in one launch; what a genome with V_PATH 3 runs before its attention kernel
 * every call, so that no block converts a key tile (the scales stay apart: k_scale and v_scale multiply as before).
 * VEC codes per thread and step (one 16-byte load, two 16-byte stores); n a multiple of VEC, the codes, k16 and v16
 * 16-byte aligned. Grid-stride: any grid of 256-thread blocks covers it; the launchers take
 * ceil(2n / VEC / 256) blocks. The codes are read once (streaming loads); the FP16 tensors are stored plainly, for the
 * attention kernel to find in L2 what fits there. */
template <int VEC>
__global__ void __launch_bounds__(256)
    evo_kv16_convert(const unsigned char *__restrict__ k, const unsigned char *__restrict__ v,
                          unsigned short *__restrict__ k16, unsigned short *__restrict__ v16, unsigned long long n)
{
    static_assert(VEC == 16, "16 codes a step");
    using namespace evo_sm90;
#if EVO_SM90_PDL
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    if (n % VEC) __trap();
    const unsigned long long nv = n / VEC, stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < 2 * nv; i += stride) {
        const bool is_v = i >= nv;
        const unsigned long long j = is_v ? i - nv : i;
        const uint4 c = __ldcs(reinterpret_cast<const uint4 *>(is_v ? v : k) + j);
        const uint4 lo = make_uint4(e4m3x2_lo(c.x), e4m3x2_hi(c.x), e4m3x2_lo(c.y), e4m3x2_hi(c.y));
        const uint4 hi = make_uint4(e4m3x2_lo(c.z), e4m3x2_hi(c.z), e4m3x2_lo(c.w), e4m3x2_hi(c.w));
        uint4 *out = reinterpret_cast<uint4 *>(is_v ? v16 : k16) + 2 * j;
        out[0] = lo;
        out[1] = hi;
    }
}

/* V codes (e4m3 [B·H, S, D], D = head_dim: 64 or 128) to the Vᵀ a V_PATH 5 kernel loads: [B·H, D, S16], S16 = S
 * rounded up to 16 (attn_sm90_vt_seq), row d of head bh holding V[., d] with each 16 keys in the P fragment's order
 * (position 4a + 2s + t holds key 8s + 2a + t, transpose_v's permutation) and keys S..S16-1 zero; what a genome with
 * V_PATH 5 runs before its attention kernel every call. Grid (ceil(S16 / KC), B·H), 256 threads: block (x, bh) moves
 * keys KC·x .. KC·x + KC - 1 of head bh, their rows by 16-byte streaming loads into shared memory (rows padded by 4
 * bytes: the column reads below fall on 4 banks, not 1), then each thread builds 16-byte pieces of Vᵀ rows (16 keys
 * of one dim) and stores them whole. */
namespace evo_sm90 {
template <int D, int KC>
__device__ __forceinline__ void vt_transpose_block(const unsigned char *__restrict__ v, unsigned char *__restrict__ vt,
                                                   int seq, int s16, unsigned char *tile)
{
    constexpr int RS = D + 4;
    const int bh = (int)blockIdx.y, k0 = (int)blockIdx.x * KC, tid = (int)threadIdx.x;
    const unsigned char *src = v + ((unsigned long long)bh * (unsigned)seq + (unsigned)k0) * D;
    for (int u = tid; u < KC * D / 16; u += 256) {
        const int r = u / (D / 16), c = u % (D / 16);
        uint4 x = make_uint4(0u, 0u, 0u, 0u);
        if (k0 + r < seq) x = __ldcs(reinterpret_cast<const uint4 *>(src + (unsigned long long)r * D) + c);
        unsigned *t4 = reinterpret_cast<unsigned *>(tile + r * RS + 16 * c);
        t4[0] = x.x, t4[1] = x.y, t4[2] = x.z, t4[3] = x.w;
    }
    __syncthreads();
    for (int u = tid; u < D * (KC / 16); u += 256) {
        const int d = u / (KC / 16), j = u % (KC / 16), key = k0 + 16 * j;
        if (key >= s16) continue;
        unsigned w[4];
#pragma unroll
        for (int a = 0; a < 4; a++) {
            unsigned x = 0u;
#pragma unroll
            for (int b = 0; b < 4; b++) /* position 4a + b, b = 2s + t: key 8s + 2a + t of the 16 */
                x |= (unsigned)tile[(16 * j + 8 * (b >> 1) + 2 * a + (b & 1)) * RS + d] << (8 * b);
            w[a] = x;
        }
        *reinterpret_cast<uint4 *>(vt + ((unsigned long long)bh * D + (unsigned)d) * (unsigned)s16 + key) =
            make_uint4(w[0], w[1], w[2], w[3]);
    }
}
} // namespace evo_sm90

template <int KC>
__global__ void __launch_bounds__(256)
    evo_vt_transpose(const unsigned char *__restrict__ v, unsigned char *__restrict__ vt, int seq, int s16, int head_dim)
{
    static_assert(KC == 128, "128 keys a block");
#if EVO_SM90_PDL
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    __shared__ __align__(16) unsigned char tile[KC * (128 + 4)];
    if (head_dim == 128) evo_sm90::vt_transpose_block<128, KC>(v, vt, seq, s16, tile);
    else if (head_dim == 64) evo_sm90::vt_transpose_block<64, KC>(v, vt, seq, s16, tile);
    else __trap();
}

template <int D, int WG_ROWS, int CONSUMERS, int TILE_N, int STAGES, int PIPE, int QK_MODE, int V_PATH, int OVERLAP,
          int PINGPONG, int O_ACC, int PRODUCER_REGS, int PERSIST, int PROBE = 0>
__global__ void __launch_bounds__((CONSUMERS + (PIPE == 2 ? 1 : 0)) * 128, 1)
    evo_attn_sm90(const __grid_constant__ evo_attn_params p, const __grid_constant__ evo_attn_tmaps t)
{
    using namespace evo_sm90;
    typedef Sm90Cfg<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, PIPE, QK_MODE, V_PATH, PERSIST> C;
    typedef Bars<STAGES> B;
    static_assert(V_PATH >= 0 && V_PATH <= 5, "V_PATH 0 (e4m3 Vᵀ), 1 (FP16 V), 2 (V given in FP16), 3 (K and V given "
                                              "in FP16), 4 (e4m3 Vᵀ, the row sum from the GEMM) or 5 (4, Vᵀ given)");
    static_assert(!gemm_sums(V_PATH) || PIPE == 2, "V_PATH 4, 5: the producer writes (loads) Vᵀ beside its ones (PIPE 2)");
    static_assert(!v_given_f16(V_PATH) || PIPE == 2,
                  "V_PATH 2 and 3 load V (and K) by the producer's TMA thread (PIPE 2)");
    static_assert(V_PATH != 3 || QK_MODE == 2, "V_PATH 3 gives K in FP16 to the FP16 Q·Kᵀ (QK_MODE 2)");
    static_assert(!OVERLAP || PIPE == 2, "OVERLAP needs the producer warpgroup (PIPE 2)");
    static_assert(!PINGPONG || (OVERLAP && CONSUMERS == 2), "PINGPONG needs OVERLAP and two consumer warpgroups");
    static_assert(O_ACC == 0 || O_ACC == 1, "O_ACC 0 or 1");
    static_assert(PRODUCER_REGS == 24 || PRODUCER_REGS == 32 || PRODUCER_REGS == 40 || PRODUCER_REGS == 56,
                  "PRODUCER_REGS 24, 32, 40 or 56");
    static_assert(PERSIST >= 0 && PERSIST <= 2, "PERSIST 0, 1 or 2");

    extern __shared__ __align__(1024) u8 smem_raw[];
    {
        u32 dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if (dyn < (u32)C::SMEM || p.head_dim != D || !(p.softmax_scale > 0.f)) __trap();
    }
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const Smem sm = {base, base + C::OFF_K, base + C::OFF_V, base + C::OFF_VT, base + C::OFF_Q16, base + C::OFF_K16,
                     base + C::OFF_OS, base + C::OFF_BAR};
    const int tid = (int)threadIdx.x, nq = (p.seq + C::BM - 1) / C::BM;
    constexpr int NCT = CONSUMERS * 128, NXT = TRANSFORM_WARPS * 32;

    if constexpr (gemm_sums(V_PATH)) { /* e4m3 ones (0x38) in rows D..D+7 of every Vᵀ column block (vt_rows) */
        constexpr int VB = TILE_N % 128 == 0 ? 128 : 64, VT = vt_bytes<D, TILE_N, V_PATH>(), NB = TILE_N / VB;
        for (int i = tid * 16; i < C::NX * NB * 8 * VB; i += C::THREADS * 16) {
            const int st = i / (NB * 8 * VB), b = i / (8 * VB) % NB, off = i % (8 * VB);
            sts128(sm.vt + st * VT + b * (D + 8) * VB + D * VB + off, 0x38383838u, 0x38383838u, 0x38383838u,
                   0x38383838u);
        }
        fence_proxy_async(); /* read by the tensor cores */
    }
    if constexpr (V_PATH >= 1 && V_PATH <= 3) { /* the block of ones after each FP16 V stage (vt_bytes) */
        constexpr int VT = vt_bytes<D, TILE_N, V_PATH>(), ONES = TILE_N * 128;
        for (int s = 0; s < C::NX; s++)
            for (int i = tid * 16; i < ONES; i += C::THREADS * 16)
                sts128(sm.vt + s * VT + D * TILE_N * 2 + i, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u);
        fence_proxy_async(); /* read by the tensor cores */
    }
    if (tid == 0) {
        mbar_init(sm.b(BAR_QFULL), 1);
        mbar_init(sm.b(BAR_QEMPTY), NCT);
        mbar_init(sm.b(BAR_Q16FULL), NXT);
        if constexpr (C::QB == 2) {
            mbar_init(sm.b(B::qfull(1)), 1);
            mbar_init(sm.b(B::qempty(1)), NCT);
            mbar_init(sm.b(B::q16full(1)), NXT);
        }
        for (int s = 0; s < STAGES; s++) {
            mbar_init(sm.b(B::kfull(s)), 1);
            mbar_init(sm.b(B::vfull(s)), 1);
            mbar_init(sm.b(B::vtfull(s)), v_by_tma(V_PATH) ? 1 : NXT); /* 2, 3, 5: the TMA's expect_tx */
            mbar_init(sm.b(B::kempty(s)), NCT);
            mbar_init(sm.b(B::vempty(s)), NCT);
            mbar_init(sm.b(B::k16full(s)), V_PATH == 3 ? 1 : NXT); /* V_PATH 3: the TMA thread's expect_tx */
            mbar_init(sm.b(B::vrawempty(s)), NXT);
        }
        fence_barrier_init();
    }
    __syncthreads();

    if constexpr (PIPE == 2) {
        typedef RegSplit<CONSUMERS, PRODUCER_REGS> R;
        const int wg = tid >> 7;
        if (wg == 0) {
            if constexpr (CONSUMERS >= 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
            const int warp = tid >> 5, lane = tid & 31;
            if (warp == 0) {
                if (lane == 0) producer_tma<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, PERSIST, V_PATH, QK_MODE>(p, t, sm, nq);
            } else {
                producer_transform<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, QK_MODE, V_PATH, PERSIST, PROBE,
                                   PRODUCER_REGS>(p, sm, nq, warp - 1, lane);
            }
        } else {
            if constexpr (CONSUMERS >= 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R::RC));
            consumer_ws<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, QK_MODE, V_PATH, OVERLAP, PINGPONG, O_ACC, PERSIST, PROBE>(
                p, sm, nq, wg - 1, tid & 127);
        }
    } else {
        consumer_simple<D, WG_ROWS, CONSUMERS, TILE_N, STAGES, PIPE, QK_MODE, V_PATH, O_ACC, PERSIST, PROBE>(p, t, sm, nq,
                                                                                                           tid);
    }
}
