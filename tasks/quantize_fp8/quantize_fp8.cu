/* quantize_fp8.cu — FP8 quantizer: the template family evo searches (task quantize_fp8).
 *
 * fp16/bf16 X [B, H, S, D] -> e4m3 codes + one float scale per (batch, head), optionally after the fixed rotation
 * y = H·(s∘x)/sqrt(D) of every row (ABI and rule: evo_quantize_abi.h; CPU twin: quantize_ref.c, bit for bit).
 * Memory-bound: the fewest bytes are 2 read + 1 written per element. The per-head absmax must be known before the
 * first code of the head is written, so every kernel reads each head twice (once for absmax, once to encode) and
 * the modes differ in where the second read comes from: L2 (split, chained, cluster with keep = 0) or registers
 * (cluster with keep > 0, when the CTA's share of the head fits).
 *
 * Parameters (template order), legal values and what they trade:
 *   D         32, 64, 128, 256   head dimension (not a knob: one instantiation per head dim of the shapes)
 *   IN_BF16   0 fp16, 1 bf16     input dtype (not a knob)
 *   ROTATE    0, 1               incoherent processing (not a knob: the task's setting)
 *   VEC       8, 16, 32          input bytes per thread access (32 = two adjacent 16-byte loads, so the 16 codes
 *                                leave as one 16-byte store); wider: fewer instructions, more registers
 *   WARPS     2, 4, 8, 16, 32    warps per block: more threads per block, fewer blocks
 *   MODE      0 split            two kernels: evo_quant_absmax writes one partial max per chunk to scratch, evo_quant
 *                                reduces its head's partials and encodes (second read from L2 when it fits)
 *             1 chained          one kernel, blocks take tickets (one atomic each); block t loads chunk t and chunk
 *                                t - lag at once, publishes chunk t's absmax in its slot, waits for the slots of chunk
 *                                t - lag's head and encodes it: the re-read is lag chunks old (L2), reads, re-reads and
 *                                writes overlap all the time, no cluster, no phases; scratch zeroed once
 *             3 ordered          mode 1 with blockIdx.x as the ticket (no atomic before the loads): relies on blocks
 *                                starting in index order, as single-pass scans do
 *             2 cluster          one kernel, a cluster of CLUSTER CTAs per head; absmax reduced through distributed
 *                                shared memory; each thread keeps KEEP vectors in registers, the rest is re-read
 *             4 resident         (see evo_quantize_abi.h) a cooperative grid streaming chunks through shared-memory
 *                                rings, slots like mode 3 (sm_90)
 *             5 staged           mode 2 with each CTA's share of the head staged in shared memory by bulk copies
 *                                (DRAM read once, no data registers: several CTAs per SM overlap); sm_90
 *             6 streamed         a resident grid in which every warp streams its own chunks (32*UNROLL*ITERS
 *                                vectors) through its own ring of shared memory by bulk copies: DRAM read once, each
 *                                chunk's absmax goes into its head's max and count words, the chunk of SLACK rounds
 *                                back is encoded from shared memory once its head's count is complete; no
 *                                block-wide barrier anywhere (sm_90)
 *             7 local            mode 3's flow (two chunks loaded at once: one for its absmax, one lag rounds old
 *                                to encode) in a resident grid where chunk c is always block c % grid's, so the
 *                                second read is of a chunk the same SM read lag rounds before: an L1 hit while the
 *                                SM's blocks' lag + 1 chunks fit there; 24 warps per SM, a plain launch (a thread
 *                                that waits too long computes the missing absmax itself: head_slots_max;
 *                                cooperative with a fused rotation); a step's two chunks are loaded before the
 *                                previous step finishes when four chunks fit in registers (LOCAL_PREFETCH)
 *             8 piped            a resident grid over parts of heads (at least CLUSTER parts per head, whole rows):
 *                                a producer warp streams each block's parts through a shared-memory ring by bulk
 *                                copies (DRAM read once), WARPS consumer warps take a part's absmax from the ring,
 *                                thread 0 publishes it in its head's max and count words and waits for the rest of
 *                                the head, then the part is encoded from the ring while the next parts load (sm_90)
 *   CLUSTER   1, 2, 4, 8, 16     modes 2, 5: CTAs per head (>1 needs sm_90; 16 is non-portable); mode 8: the fewest
 *                                parts per head (fewer parts: fewer blocks wait on each other, more of the ring held).
 *                                Other modes: 1
 *   KEEP      0, 1, 2, 4, 8, 16  mode 2: vectors per thread held in registers between the passes (read from DRAM
 *                                once); KEEP*VEC/4 <= 64 registers. Mode 7: 0 or 1, where 1 keeps a chunk's rotated
 *                                floats in shared memory from its absmax to its encoding (rotated shapes with
 *                                FUSED_ROT 1: every element read and rotated once; unrotated shapes as 0). Other
 *                                modes: 0
 *   UNROLL    1, 2, 4, 8         vectors per thread loaded before the first is used: memory-level parallelism
 *   ITERS     1, 2, 4, 8         modes 0/1/3/4: load groups per chunk; chunk = 32*WARPS*UNROLL*ITERS vectors (mode 6:
 *                                a warp's chunk, 32*UNROLL*ITERS). Bigger
 *                                chunks: fewer blocks, atomics and partials; smaller: finer balance. Modes 1/3 load
 *                                both chunks whole: 2*UNROLL*ITERS*VEC/4 <= 64 registers
 *   CVT       0, 1               0: e4m3 encoded with integer code (any arch); 1: cvt.rn.satfinite.e4m3x2.f32
 *                                (sm_89+), a few instructions instead of ~20 per pair
 *   CACHE     0, 1               1: first read with L2 evict_last, last read with evict_first, streaming stores
 *                                (keeps the head in L2 for the re-read); 0: plain accesses
 *   FUSED_ROT 0, 1               ROTATE only: 1 rotates inside every pass (shuffles, computed twice when the head
 *                                is re-read); 0 runs evo_quant_rotate first, which writes rotated float rows to
 *                                scratch (4 bytes per element written and read twice more)
 * and one launch-only knob, SLACK (0, 1, 2, 4, 8; modes 1/3): lag = max(chunks per head - 1, min(SLACK * SMs,
 * chunks)); modes 4/6/7: rounds between a chunk's absmax and its encoding, at least the rounds a head spans.
 * Canonical genomes: modes 0/1/3/4/6/7 take CLUSTER 1, KEEP 0; mode 8 KEEP 0, SLACK 1; mode 2 takes ITERS 1 (unused); ROTATE 0 takes
 * FUSED_ROT 1.
 *
 * Host launch rules (evo_quant_plan_make in evo_quantize_abi.h computes them; the kernels trap when broken):
 *   every kernel takes one by-value evo_quant_params; block = 32*WARPS threads; dynamic shared memory 0; all
 *   launches of a plan go in order on one stream. THREADS = 32*WARPS, EPV = VEC/2 (VEC/4 for the main kernels
 *   after a separate rotation), n = B*H*S*D, n_heads = B*H, chunk = THREADS*UNROLL*ITERS*EPV elements,
 *   cph = ceil(S*D / chunk).
 *   - ROTATE and FUSED_ROT = 0: first evo_quant_rotate<args>, grid = ceil(n / (VEC/2) / THREADS); scratch starts
 *     with the rotated rows, evo_quant_rot_bytes(n) = 4n rounded up to 256 bytes; the mode's scratch follows.
 *   - MODE 0: evo_quant_absmax<args> then evo_quant<args>, both grid = (cph, n_heads); scratch += 4*n_heads*cph
 *     (rounded up to 256). No zeroing.
 *   - MODE 1 and 3: evo_quant<args>, grid = n_heads*cph + lag, p.chain_lag = lag; scratch += 16 + 4*n_heads*cph
 *     bytes, zero-filled once after allocation; every launch leaves it zeroed (the last block to finish resets it).
 *   - MODE 7: evo_quant, grid = min(chunks, SMs * max(1, 768 / THREADS)), rounded down to a multiple of cph when
 *     that keeps at least 7/8 of it, a plain launch (no co-residency needed; cooperative when ROTATE and
 *     FUSED_ROT), p.chain_lag = lag (rounds a head spans after its first, at least SLACK); scratch += 16 + 4*n_heads*cph bytes, zero-filled
 *     once after allocation; every launch leaves it zeroed (as modes 1 and 3). KEEP 1 on a rotated shape (FUSED_ROT
 *     1): dynamic shared memory (lag + 1) * chunk * 4 bytes and p.stages = 1, the grid as many blocks per SM as
 *     such slots fit (the plan lowers them, and with them the grid, until they do); where none fits, p.stages = 0
 *     and the kernel runs as with KEEP 0.
 *   - MODE 8: evo_quant, block = 32*WARPS + 32 threads (the producer warp), grid = min(parts of all heads, SMs *
 *     blocks per SM) as a cooperative launch, p.parts parts per head and p.stages chunks in each block's ring, dynamic
 *     shared memory p.stages * chunk bytes (evo_quant_piped: a part and one chunk more fit, parts <= grid);
 *     scratch += 12 * n_heads bytes (rounded up to 256), zero-filled once after allocation, left zeroed by every
 *     launch (the last reader of a head resets its words). sm_90.
 *   - MODE 6: evo_quant, grid = SMs * blocks per SM (all resident: cooperative launch), dynamic shared memory
 *     WARPS * p.stages * (warp chunk bytes + 8); scratch += 12 * n_heads bytes (rounded up to 256),
 *     zero-filled once after allocation, left zeroed by every launch (the last encoder of a head resets its
 *     words). sm_90.
 *   - MODE 5: as mode 2, with dynamic shared memory EVO_QUANT_STAGED_SLICE(head bytes, CLUSTER) (set
 *     MaxDynamicSharedMemorySize above 48 KiB). sm_90. No scratch.
 *   - MODE 2: evo_quant<args>, grid = CLUSTER*n_heads, cluster dims (CLUSTER, 1, 1) as a launch attribute
 *     (cuLaunchKernelEx / cudaLaunchKernelEx; CLUSTER 16 also needs NonPortableClusterSizeAllowed = 1 on the
 *     function); CLUSTER = 1 launches plainly and runs on sm_80. No scratch.
 *   Requirements: sm_80+ (CVT = 1: sm_89+; CLUSTER > 1: sm_90), 16-byte aligned x and codes, n_heads <= 65535,
 *   S*D < 2^31. Compile without --use_fast_math, -ftz=true, -prec-div=false: the slow path divides with __fdiv_rn.
 *
 * Exactness: conversions fp16/bf16 -> float are exact; the rotation uses __fadd_rn/__fsub_rn/__fmul_rn and an FMA
 * by +-1 (an exact product, so it equals the add or subtract); absmax is fmaxf (NaN ignored, as on the CPU), or on
 * unrotated fp16/bf16 input a max.f16x2/bf16x2 of the values with their sign bits cleared (the same maximum, NaN
 * likewise ignored). The quotient x/scale uses inv = RN(1/scale) and two Markstein corrections, q <- q + (x -
 * scale*q)*inv with exact FMA remainders, when 2^-60 <= scale <= 2^60 (always for fp16 inputs), otherwise
 * __fdiv_rn. It gives RN(x/scale) whenever |x| and |x/scale| are at least 2^-100, and below that a zero of x's sign,
 * as e4m3(RN(x/scale)) does. Unrotated fp16/bf16 values need one correction only (evo_qref_quot_fast1: exact for
 * every value and absmax of those types, checked over all pairs).
 * The remainder is formed as scale*q - x so that -0 keeps its sign. quantize_ref.c models the same and the tests
 * compare it with a plain division over every fp16 pair.
 */
#include "evo_quantize_abi.h"

#define EVO_DEV __device__ __forceinline__

#if defined(__CUDA_ARCH__)
#define EVO_QUANT_ARCH __CUDA_ARCH__
#else
#define EVO_QUANT_ARCH 1000 /* nvcc's host pass: the device passes check the architecture */
#endif

namespace evoq {

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

__host__ __device__ constexpr int pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }



template <int D, int IN_BF16, int ROTATE, int VEC, int WARPS, int MODE, int CLUSTER, int KEEP, int UNROLL,
          int ITERS, int CVT, int CACHE, int FUSED_ROT>
struct Cfg {
    static constexpr int THREADS = 32 * WARPS;
    static constexpr int IN = (ROTATE && !FUSED_ROT) ? EVO_QUANT_IN_F32 : IN_BF16; /* what the main kernels read */
    static constexpr bool ROT = ROTATE && FUSED_ROT;                                /* they rotate themselves */
    static constexpr int EB = IN == EVO_QUANT_IN_F32 ? 4 : 2;
    static constexpr int EPV = VEC / EB;
    static constexpr int IN_EPV = VEC / 2; /* of the fp16/bf16 input (the rotation pass) */
    static constexpr int CHUNK_V = THREADS * UNROLL * ITERS;
    static constexpr int WCHUNK_V = 32 * UNROLL * ITERS; /* mode 6: one warp's chunk */
    static constexpr bool KEEP_F32 = ROT && KEEP > 0 && KEEP * EPV <= 64; /* keep rotated floats, else raw input re-rotated */
    /* Markstein corrections of the fast quotient: one suffices for fp16/bf16 values as read (quot) */
    static constexpr int QUOT_STEPS = IN == EVO_QUANT_IN_F32 || ROT ? 2 : 1;
    /* absmax of fp16/bf16 values as read by packed maxima (absmax_pairs), not per float */
    static constexpr bool PACKED_MAX = IN != EVO_QUANT_IN_F32 && !ROT;
    /* mode 7 issues a step's loads before the previous step finishes when four chunks fit in 64 registers without
     * spilling (two vectors a chunk, the packed absmax and the hardware conversion; else one step at a time) */
    static constexpr bool LOCAL_PREFETCH = PACKED_MAX && CVT == 1 && UNROLL * ITERS <= 2;
    /* mode 7's waiting threads compute a missing chunk's absmax themselves (head_slots_max), except with the
     * rotation fused in (no lanes to rotate with): those plans launch cooperatively */
    static constexpr bool LOCAL_HELP = MODE == EVO_QUANT_MODE_LOCAL && !ROT;
    /* mode 7 with the rotation fused in and KEEP 1: a chunk's rotated floats wait in shared memory from its absmax to
     * its encoding, so every element is read and rotated once (local_kept); unrotated shapes run mode 7 as usual */
    static constexpr bool LOCAL_KEEP = MODE == EVO_QUANT_MODE_LOCAL && ROT && KEEP == 1; /* when p.stages is 1 */
    static constexpr int D_ = D, VEC_ = VEC, WARPS_ = WARPS, MODE_ = MODE, CLUSTER_ = CLUSTER, KEEP_ = KEEP,
                         UNROLL_ = UNROLL, ITERS_ = ITERS, CVT_ = CVT, CACHE_ = CACHE, IN_BF16_ = IN_BF16,
                         ROTATE_ = ROTATE;
    /* a read that will be repeated: L2 evict_last (mode 7: and L1's); the last read of these bytes: evict_first */
    static constexpr int HINT_FIRST = CACHE ? (MODE == EVO_QUANT_MODE_LOCAL ? 3 : 1) : 0;
    static constexpr int HINT_LAST = CACHE ? (MODE == EVO_QUANT_MODE_LOCAL ? 4 : 2) : 0;

    static_assert(pow2(D) && D >= 32 && D <= 256, "D must be 32, 64, 128 or 256");
    static_assert(IN_BF16 == 0 || IN_BF16 == 1, "IN_BF16 is 0 or 1");
    static_assert(ROTATE == 0 || ROTATE == 1, "ROTATE is 0 or 1");
    static_assert(VEC == 8 || VEC == 16 || VEC == 32, "VEC must be 8, 16 or 32 bytes");
    static_assert(pow2(WARPS) && WARPS >= 2 && WARPS <= 32, "WARPS must be 2..32, a power of two");
    static_assert(MODE >= 0 && MODE <= 8, "MODE is 0 split, 1 chained, 2 cluster, 3 ordered, 4 resident, 5 staged, "
                                          "6 streamed, 7 local or 8 piped");
    static_assert(pow2(CLUSTER) && CLUSTER <= 16, "CLUSTER must be 1, 2, 4, 8 or 16");
    static_assert(MODE == 2 || MODE == 5 || MODE == 8 || (CLUSTER == 1 && (KEEP == 0 || (MODE == 7 && KEEP == 1))),
                  "CLUSTER is a knob of modes 2, 5 and 8, KEEP of modes 2 and 7 (mode 7: 0 or 1; 1 and 0 otherwise)");
    static_assert(MODE != 8 || (KEEP == 0 && WARPS <= 16), "mode 8: KEEP 0, at most 16 consumer warps");
    static_assert(MODE != 5 || KEEP == 0, "mode 5 keeps the head in shared memory: KEEP 0");
    static_assert(KEEP == 0 || (pow2(KEEP) && KEEP <= 16), "KEEP must be 0, 1, 2, 4, 8 or 16");
    static_assert(KEEP * VEC / 4 <= 64, "KEEP*VEC/4 registers must be at most 64");
    static_assert((MODE != 1 && MODE != 3) || 2 * UNROLL * ITERS * VEC / 4 <= 64,
                  "chained: two chunks of UNROLL*ITERS*VEC/4 registers must fit in 64");
    static_assert(pow2(UNROLL) && UNROLL <= 8, "UNROLL must be 1, 2, 4 or 8");
    static_assert(pow2(ITERS) && ITERS <= 8, "ITERS must be 1, 2, 4 or 8");
    static_assert(CVT == 0 || CVT == 1, "CVT is 0 or 1");
    static_assert(CACHE == 0 || CACHE == 1, "CACHE is 0 or 1");
    static_assert(FUSED_ROT == 0 || FUSED_ROT == 1, "FUSED_ROT is 0 or 1");
    static_assert(!ROTATE || D / IN_EPV <= 32, "rotation: a row must span at most 32 lanes (D / (VEC/2) <= 32)");
    static_assert(CVT == 0 || EVO_QUANT_ARCH >= 890, "CVT = 1 needs sm_89 or newer");
    static_assert(CLUSTER == 1 || EVO_QUANT_ARCH >= 900, "CLUSTER > 1 needs sm_90");
    static_assert(MODE != 4 || EVO_QUANT_ARCH >= 900, "MODE 4 (resident) needs sm_90");
    static_assert(MODE != 5 || EVO_QUANT_ARCH >= 900, "MODE 5 (staged) needs sm_90");
    static_assert(MODE != 6 || EVO_QUANT_ARCH >= 900, "MODE 6 (streamed) needs sm_90");
    static_assert(MODE != 8 || EVO_QUANT_ARCH >= 900, "MODE 8 (piped) needs sm_90");
};

/* ---- memory access ---- */

template <int VEC> struct Raw {
    u32 w[VEC / 4];
};

/* Load hints: 0 none; 1 L2 evict_last; 2 L2 evict_first; 3 and 4 as 1 and 2 with the same L1 priority (mode 7,
 * whose second read comes from L1). */
template <int HINT> EVO_DEV u64 make_policy()
{
    u64 pol = 0;
    if (HINT == 1 || HINT == 3) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    if (HINT == 2 || HINT == 4) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}

template <int HINT> EVO_DEV void ld16(u32 *w, const unsigned char *p, u64 pol)
{
    if (HINT == 0)
        asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(p));
    else if (HINT == 3)
        asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
            : "l"(p), "l"(pol));
    else if (HINT == 4)
        asm("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
            : "l"(p), "l"(pol));
    else
        asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
            : "l"(p), "l"(pol));
}

template <int HINT> EVO_DEV void ld8(u32 *w, const unsigned char *p, u64 pol)
{
    if (HINT == 0)
        asm("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
    else if (HINT == 3)
        asm("ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
            : "=r"(w[0]), "=r"(w[1])
            : "l"(p), "l"(pol));
    else if (HINT == 4)
        asm("ld.global.L1::evict_first.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
            : "=r"(w[0]), "=r"(w[1])
            : "l"(p), "l"(pol));
    else
        asm("ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(pol));
}

template <int VEC, int HINT> EVO_DEV void load_raw(Raw<VEC> &r, const unsigned char *p, u64 pol)
{
    if (VEC == 8) ld8<HINT>(r.w, p, pol);
#pragma unroll
    for (int i = 0; i < VEC / 16; i++) ld16<HINT>(r.w + 4 * i, p + 16 * i, pol);
}

template <int VEC> EVO_DEV void zero_raw(Raw<VEC> &r)
{
#pragma unroll
    for (int i = 0; i < VEC / 4; i++) r.w[i] = 0u;
}

/* NB code bytes from o[] (NB = 2, 4, 8 or 16). */
template <int NB, int CACHE> EVO_DEV void store_codes(unsigned char *p, const u32 *o)
{
    if (NB == 2) {
        unsigned short v = (unsigned short)o[0];
        if (CACHE) asm volatile("st.global.cs.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
        else asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
    } else if (NB == 4) {
        if (CACHE) asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(p), "r"(o[0]) : "memory");
        else asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(o[0]) : "memory");
    } else if (NB == 8) {
        if (CACHE) asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(o[0]), "r"(o[1]) : "memory");
        else asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(o[0]), "r"(o[1]) : "memory");
    } else {
        if (CACHE)
            asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(o[0]), "r"(o[1]), "r"(o[2]),
                         "r"(o[3])
                         : "memory");
        else
            asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(o[0]), "r"(o[1]), "r"(o[2]),
                         "r"(o[3])
                         : "memory");
    }
}

/* ---- number formats ---- */

EVO_DEV void h2_to_f2(u32 w, float &lo, float &hi)
{
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
        : "=f"(lo), "=f"(hi)
        : "r"(w));
}

template <int IN, int VEC, int EPV> EVO_DEV void to_float(const Raw<VEC> &r, float (&f)[EPV])
{
#pragma unroll
    for (int i = 0; i < VEC / 4; i++) {
        if (IN == EVO_QUANT_IN_F16) {
            h2_to_f2(r.w[i], f[2 * i], f[2 * i + 1]);
        } else if (IN == EVO_QUANT_IN_BF16) {
            f[2 * i] = __uint_as_float(r.w[i] << 16);
            f[2 * i + 1] = __uint_as_float(r.w[i] & 0xffff0000u);
        } else {
            f[i] = __uint_as_float(r.w[i]);
        }
    }
}

/* OCP e4m3fn, round to nearest even, saturating to +-448, NaN -> 0x7f: evo_ref_e4m3_encode's integer code. */
EVO_DEV u32 e4m3_sw(float x)
{
    u32 b = __float_as_uint(x);
    u32 sign = (b >> 24) & 0x80u;
    u32 a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7fu;
    int be = (int)(a >> 23);
    if (be == 0) return sign;
    int e = be - 127;
    u32 mant = (a & 0x7fffffu) | 0x800000u;
    u32 q;
    if (e > 8) {
        q = 0x7eu;
    } else if (e >= -6) {
        q = ((u32)(e + 7) << 3) | ((mant >> 20) & 7u);
        u32 rem = mant & 0xfffffu, half = 0x80000u;
        if (rem > half || (rem == half && (q & 1u))) q++;
        if (q > 0x7eu) q = 0x7eu;
    } else {
        int sh = 14 - e;
        if (sh > 24) return sign;
        q = mant >> sh;
        u32 rem = mant & ((1u << sh) - 1u), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
    }
    return sign | q;
}

/* Two codes: lo in bits 0-7, hi in bits 8-15. */
template <int CVT> EVO_DEV u32 enc2(float lo, float hi)
{
#if EVO_QUANT_ARCH >= 890
    if (CVT) {
        unsigned short r;
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
        return (u32)r;
    }
#endif
    return e4m3_sw(lo) | (e4m3_sw(hi) << 8);
}

EVO_DEV float scale_of(float absmax) { return absmax == 0.0f ? 1.0f : __fdiv_rn(absmax, 448.0f); }
EVO_DEV bool scale_fast(float s) { return s >= 0x1p-60f && s <= 0x1p60f; }

/* RN(a / s). STEPS 0: a division. STEPS 1 or 2: inv = RN(1/s), q = RN(a*inv) and STEPS Markstein corrections
 * (for 2^-60 <= s <= 2^60): two are exact for any float a; one is exact when a is an fp16 or bf16 value and s the
 * scale of an absmax of the same type that bounds |a| (evo_qref_quot_fast1: every such pair, checked exhaustively). */
template <int STEPS> EVO_DEV float quot(float a, float s, float inv)
{
    if (STEPS == 0) return __fdiv_rn(a, s);
    float q = __fmul_rn(a, inv);
#pragma unroll
    for (int i = 0; i < STEPS; i++) {
        float r = __fmaf_rn(s, q, -a);
        q = __fmaf_rn(-r, inv, q);
    }
    return q;
}

template <int EPV> struct Codes {
    u32 w[EPV >= 4 ? EPV / 4 : 1];
};

template <int EPV, int CVT, int STEPS> EVO_DEV void encode_vec(const float (&f)[EPV], float s, float inv, Codes<EPV> &o)
{
#pragma unroll
    for (int i = 0; i < EPV; i += 2) {
        u32 e = enc2<CVT>(quot<STEPS>(f[i], s, inv), quot<STEPS>(f[i + 1], s, inv));
        if ((i & 3) == 0) o.w[i / 4] = e;
        else o.w[i / 4] |= e << 16;
    }
}

/* ---- rotation ---- */

/* Sign bits of the EPV columns starting at column c0 (a multiple of EPV): bit i set means s_{c0+i} = -1. */
template <int EPV> EVO_DEV u32 sign_bits(u32 c0)
{
    u64 w = evo_quant_sign_word(c0 >> 6);
    return (u32)(w >> (c0 & 63u)) & (u32)((1ull << EPV) - 1ull);
}

/* Sign bits (sign_bits' form, at most 16) regrouped by pairs: bit 2i in bit i, bit 2i + 1 in bit 16 + i, so that
 * (P << (15 - i)) & 0x80008000 is the sign mask of 16-bit word i of a vector (its elements 2i and 2i + 1). */
EVO_DEV u32 pair_signs(u32 smask)
{
    u32 e = smask & 0x5555u, o = (smask >> 1) & 0x5555u;
    e = (e | (e >> 1)) & 0x3333u, o = (o | (o >> 1)) & 0x3333u;
    e = (e | (e >> 2)) & 0x0f0fu, o = (o | (o >> 2)) & 0x0f0fu;
    e = (e | (e >> 4)) & 0x00ffu, o = (o | (o >> 4)) & 0x00ffu;
    return e | (o << 16);
}

/* The sign flips s of a vector of fp16/bf16 pairs (psigns: pair_signs), one XOR a word: exact, and the same values
 * as flipping the floats after the exact conversion (NaN stays NaN). */
template <int VEC> EVO_DEV void flip_pairs(Raw<VEC> &r, u32 psigns)
{
#pragma unroll
    for (int i = 0; i < VEC / 4; i++) r.w[i] ^= (psigns << (15 - i)) & 0x80008000u;
}

/* The butterflies and the multiply of the rotation below, on values whose signs are already flipped. */
template <int D, int EPV> EVO_DEV void rotate_flipped(float (&v)[EPV], u32 lane);

/* The row's D elements lie in D/EPV consecutive lanes, EPV each. y = H·(s∘x)·(1/sqrt(D)): sign flips, butterfly
 * stages h = 1, 2, .., D/2 ((a, b) -> (a + b, a - b) for the pair (i, i + h)), then one multiply. */
template <int D, int EPV> EVO_DEV void rotate(float (&v)[EPV], u32 smask, u32 lane)
{
#pragma unroll
    for (int i = 0; i < EPV; i++) v[i] = __uint_as_float(__float_as_uint(v[i]) ^ (((smask >> i) & 1u) << 31));
    rotate_flipped<D>(v, lane);
}

template <int D, int EPV> EVO_DEV void rotate_flipped(float (&v)[EPV], u32 lane)
{
#pragma unroll
    for (int h = 1; h < EPV; h <<= 1) {
#pragma unroll
        for (int i = 0; i < EPV; i++) {
            if (i & h) continue;
            float a = v[i], b = v[i + h];
            v[i] = __fadd_rn(a, b);
            v[i + h] = __fsub_rn(a, b);
        }
    }
#pragma unroll
    for (int h = EPV; h < D; h <<= 1) {
        const int m = h / EPV;
        const float sg = (lane & (u32)m) ? -1.0f : 1.0f; /* the upper lane of the pair holds b: a - b = -b + a */
#pragma unroll
        for (int i = 0; i < EPV; i++) {
            float o = __shfl_xor_sync(0xffffffffu, v[i], m);
            v[i] = __fmaf_rn(sg, v[i], o);
        }
    }
    const float c = evo_quant_rsqrt_d(D);
#pragma unroll
    for (int i = 0; i < EPV; i++) v[i] = __fmul_rn(v[i], c);
}

/* ---- one vector: its part of the absmax, or its codes ---- */

/* The EPV elements of raw vector r as floats, rotated with a fused rotation (every lane of the warp calls it: the
 * rotation shuffles; psigns: thread_signs, the signs by pairs, flipped on the fp16/bf16 words before converting). */
template <class C> EVO_DEV void vec_floats(const Raw<C::VEC_> &r, u32 psigns, u32 lane, float (&f)[C::EPV])
{
    if constexpr (C::ROT) {
        static_assert(C::IN != EVO_QUANT_IN_F32, "a fused rotation reads fp16/bf16 pairs");
        Raw<C::VEC_> x = r;
        flip_pairs(x, psigns);
        to_float<C::IN>(x, f);
        rotate_flipped<C::D_>(f, lane);
    } else {
        to_float<C::IN>(r, f);
    }
}

/* |x| max over one vector of raw input, folded into m: fp16/bf16 pairs by one AND and one max.f16x2 / max.bf16x2 per
 * word (a NaN operand yields the other, and m never holds a NaN: NaN ignored, as fmaxf does); the result's halves
 * are converted to float by absmax_fold. */
template <int IN, int VEC> EVO_DEV void absmax_pairs(const Raw<VEC> &r, u32 &m)
{
#pragma unroll
    for (int i = 0; i < VEC / 4; i++) {
        const u32 a = r.w[i] & 0x7fff7fffu;
        if (IN == EVO_QUANT_IN_F16) asm("max.f16x2 %0, %0, %1;" : "+r"(m) : "r"(a));
        else asm("max.bf16x2 %0, %0, %1;" : "+r"(m) : "r"(a));
    }
}
template <int IN> EVO_DEV float absmax_fold(u32 m)
{
    float lo, hi;
    if (IN == EVO_QUANT_IN_F16) h2_to_f2(m, lo, hi);
    else lo = __uint_as_float(m << 16), hi = __uint_as_float(m & 0xffff0000u);
    return fmaxf(lo, hi);
}

/* m folded with |x| over the elements of r. */
template <class C> EVO_DEV float vec_absmax(const Raw<C::VEC_> &r, float m, u32 smask, u32 lane)
{
    if constexpr (C::PACKED_MAX) {
        u32 pm = 0u;
        absmax_pairs<C::IN>(r, pm);
        return fmaxf(m, absmax_fold<C::IN>(pm));
    } else {
        float f[C::EPV];
        vec_floats<C>(r, smask, lane, f);
#pragma unroll
        for (int e = 0; e < C::EPV; e++) m = fmaxf(m, fabsf(f[e]));
        return m;
    }
}

/* m folded with |x| over the N vectors of r (one fold at the end when the maxima are packed). */
template <class C, int N> EVO_DEV float regs_absmax(const Raw<C::VEC_> (&r)[N], float m, u32 smask, u32 lane)
{
    if constexpr (C::PACKED_MAX) {
        u32 pm = 0u;
#pragma unroll
        for (int i = 0; i < N; i++) absmax_pairs<C::IN>(r[i], pm);
        return fmaxf(m, absmax_fold<C::IN>(pm));
    } else {
#pragma unroll
        for (int i = 0; i < N; i++) m = vec_absmax<C>(r[i], m, smask, lane);
        return m;
    }
}

/* The EPV codes of r at scale s (inv = RN(1/s)), stored at dst when `in`; FAST 1 or 0 as quot, 2: chosen by `fast`
 * at run time (one conversion and rotation either way). */
template <class C, int FAST>
EVO_DEV void vec_encode(const Raw<C::VEC_> &r, u32 smask, u32 lane, float s, float inv, unsigned char *dst, bool in,
                        bool fast = true)
{
    float f[C::EPV];
    vec_floats<C>(r, smask, lane, f);
    Codes<C::EPV> o;
    if (FAST == 1 || (FAST == 2 && fast)) encode_vec<C::EPV, C::CVT_, C::QUOT_STEPS>(f, s, inv, o);
    else encode_vec<C::EPV, C::CVT_, 0>(f, s, inv, o);
    if (in) store_codes<C::EPV, C::CACHE_>(dst, o.w);
}

/* ---- reductions and synchronization ---- */

EVO_DEV float warp_max(float m)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    return m;
}

/* Block-wide max; red holds WARPS floats, which the next call may rewrite before every thread has read them: call
 * it once per kernel, or alternate arrays with another reduction's barrier between two uses of one (mode 7), or
 * call block_max_again. */
template <int WARPS> EVO_DEV float block_max(float m, float *red)
{
    m = warp_max(m);
    if ((threadIdx.x & 31u) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
#pragma unroll
    for (int w = 1; w < WARPS; w++) m = fmaxf(m, red[w]);
    return m;
}

/* Block-wide max that may be called repeatedly: red is rewritten only after every thread has read it. */
template <int WARPS> EVO_DEV float block_max_again(float m, float *red)
{
    m = block_max<WARPS>(m, red);
    __syncthreads();
    return m;
}

EVO_DEV u32 ld_acquire(const u32 *p)
{
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

EVO_DEV u32 smem_addr(const void *p)
{
    u32 r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

#if EVO_QUANT_ARCH >= 900
EVO_DEV u32 cluster_rank()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
EVO_DEV u32 cluster_size()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
EVO_DEV void cluster_sync_all()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
EVO_DEV void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
EVO_DEV void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }
EVO_DEV float ld_cluster(const float *local, u32 rank)
{
    u32 remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}
#else
EVO_DEV u32 cluster_rank() { return 0u; }
EVO_DEV u32 cluster_size() { return 1u; }
EVO_DEV void cluster_sync_all() {}
EVO_DEV void cluster_arrive_relaxed() {}
EVO_DEV void cluster_wait() {}
EVO_DEV float ld_cluster(const float *local, u32) { return *local; }
#endif

EVO_DEV void require(bool ok)
{
    if (!ok) __trap();
}

/* ---- shape and scratch ---- */

template <class C> struct Shape {
    u32 n_heads, head_elems, nv; /* nv: vectors per head */
    u64 n;
    const unsigned char *src;    /* what the main kernels read: x, or the rotated rows in scratch */
    const unsigned char *src1, *src2; /* the second and third inputs (p.x_heads > 0: heads from x_heads on) */
    u32 x_heads;                      /* heads per input; 0: one input (or the rotated rows, which are one array) */
    unsigned char *mode_scratch; /* after the rotated rows */
    u32 cph;                     /* chunks per head (mode 6: warp chunks) */

    EVO_DEV explicit Shape(const evo_quant_params &p)
    {
        n_heads = (u32)p.batch * (u32)p.heads;
        head_elems = (u32)p.seq * (u32)C::D_;
        nv = head_elems / (u32)C::EPV;
        n = (u64)n_heads * head_elems;
        u64 rot = C::IN == EVO_QUANT_IN_F32 ? evo_quant_rot_bytes(n) : 0ull;
        src = C::IN == EVO_QUANT_IN_F32 ? (const unsigned char *)p.scratch : (const unsigned char *)p.x;
        src1 = (const unsigned char *)p.x1, src2 = (const unsigned char *)p.x2;
        x_heads = C::IN == EVO_QUANT_IN_F32 ? 0u : (u32)p.x_heads;
        mode_scratch = (unsigned char *)p.scratch + rot;
        const u32 chunk_v = C::MODE_ == EVO_QUANT_MODE_STREAMED ? (u32)C::WCHUNK_V : (u32)C::CHUNK_V;
        cph = (nv + chunk_v - 1u) / chunk_v;
        u64 need = rot;
        if (C::MODE_ == EVO_QUANT_MODE_SPLIT) need += ((u64)n_heads * cph * 4ull + 255ull) & ~255ull;
        if (C::MODE_ == EVO_QUANT_MODE_CHAINED || C::MODE_ == EVO_QUANT_MODE_ORDERED ||
            C::MODE_ == EVO_QUANT_MODE_RESIDENT || C::MODE_ == EVO_QUANT_MODE_LOCAL)
            need += 16ull + 4ull * n_heads * cph;
        if (C::MODE_ == EVO_QUANT_MODE_STREAMED || C::MODE_ == EVO_QUANT_MODE_PIPED) need += 12ull * n_heads;
        require(p.head_dim == C::D_ && p.in_dtype == C::IN_BF16_ && p.rotate == C::ROTATE_ && p.batch >= 1 &&
                p.heads >= 1 && p.seq >= 1 && p.scratch_bytes >= need && (need == 0 || p.scratch != 0) &&
                (p.x_heads == 0 || (n_heads % (u32)p.x_heads == 0 && n_heads / (u32)p.x_heads <= 3u && p.x1 &&
                                    (n_heads / (u32)p.x_heads < 3u || p.x2))));
    }
    EVO_DEV const unsigned char *head_src(u32 h) const
    {
        const unsigned char *base = src;
        if (x_heads && h >= x_heads) { /* a head of the second or third input */
            h -= x_heads;
            base = src1;
            if (h >= x_heads) h -= x_heads, base = src2;
        }
        return base + (u64)h * head_elems * (u32)C::EB;
    }
};

/* ---- chunk passes (modes 0 and 1): vectors v0 + (it*UNROLL + u)*THREADS + tid of one head ---- */

template <class C, int HINT>
EVO_DEV float chunk_absmax(const unsigned char *xh, u32 v0, u32 nv, u32 smask)
{
    const u64 pol = make_policy<HINT>();
    const u32 tid = threadIdx.x, lane = tid & 31u;
    float m = 0.0f;
#pragma unroll
    for (int it = 0; it < C::ITERS_; it++) {
        Raw<C::VEC_> r[C::UNROLL_];
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            u32 j = v0 + (u32)((it * C::UNROLL_ + u) * C::THREADS) + tid;
            if (j < nv) load_raw<C::VEC_, HINT>(r[u], xh + (u64)j * C::VEC_, pol);
            else zero_raw(r[u]);
        }
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            m = vec_absmax<C>(r[u], m, smask, lane);
        }
    }
    return m;
}

template <class C, bool FAST, int HINT>
EVO_DEV void chunk_encode(const unsigned char *xh, unsigned char *ch, u32 v0, u32 nv, u32 smask, float s, float inv)
{
    const u64 pol = make_policy<HINT>();
    const u32 tid = threadIdx.x, lane = tid & 31u;
#pragma unroll
    for (int it = 0; it < C::ITERS_; it++) {
        Raw<C::VEC_> r[C::UNROLL_];
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            u32 j = v0 + (u32)((it * C::UNROLL_ + u) * C::THREADS) + tid;
            if (j < nv) load_raw<C::VEC_, HINT>(r[u], xh + (u64)j * C::VEC_, pol);
            else zero_raw(r[u]);
        }
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            u32 j = v0 + (u32)((it * C::UNROLL_ + u) * C::THREADS) + tid;
            vec_encode<C, FAST>(r[u], smask, lane, s, inv, ch + (u64)j * C::EPV, j < nv);
        }
    }
}

/* This thread's signs for vec_floats (pair_signs of its columns' sign bits; 0 without a fused rotation). */
template <class C> EVO_DEV u32 thread_signs()
{
    if (!C::ROT) return 0u;
    constexpr u32 TPR = (u32)(C::D_ / C::EPV);
    return pair_signs(sign_bits<C::EPV>((threadIdx.x % TPR) * (u32)C::EPV));
}

/* ---- mode 0: split ---- */

template <class C> EVO_DEV void split_absmax(const evo_quant_params &p)
{
    __shared__ float red[C::WARPS_];
    Shape<C> sh(p);
    require(gridDim.x == sh.cph && gridDim.y == sh.n_heads);
    const u32 h = blockIdx.y, c = blockIdx.x;
    float m = chunk_absmax<C, C::HINT_FIRST>(sh.head_src(h), c * (u32)C::CHUNK_V, sh.nv, thread_signs<C>());
    m = block_max<C::WARPS_>(m, red);
    if (threadIdx.x == 0) ((float *)sh.mode_scratch)[(u64)h * sh.cph + c] = m;
}

template <class C> EVO_DEV void split_encode(const evo_quant_params &p)
{
    __shared__ float red[C::WARPS_];
    Shape<C> sh(p);
    require(gridDim.x == sh.cph && gridDim.y == sh.n_heads);
    /* the reverse of the absmax pass's order: the chunks it read last, still in L2, come first */
    const u32 h = sh.n_heads - 1u - blockIdx.y, c = sh.cph - 1u - blockIdx.x;
    const float *part = (const float *)sh.mode_scratch + (u64)h * sh.cph;
    float m = 0.0f;
    for (u32 i = threadIdx.x; i < sh.cph; i += (u32)C::THREADS) m = fmaxf(m, part[i]);
    const float s = scale_of(block_max<C::WARPS_>(m, red));
    if (c == 0 && threadIdx.x == 0) p.scales[h] = s;
    const float inv = __frcp_rn(s);
    const unsigned char *xh = sh.head_src(h);
    unsigned char *ch = p.codes + (u64)h * sh.head_elems;
    if (scale_fast(s)) chunk_encode<C, true, C::HINT_LAST>(xh, ch, c * (u32)C::CHUNK_V, sh.nv, thread_signs<C>(), s, inv);
    else chunk_encode<C, false, C::HINT_LAST>(xh, ch, c * (u32)C::CHUNK_V, sh.nv, thread_signs<C>(), s, inv);
}

/* ---- modes 1 and 3: chained ---- */

/* All UNROLL*ITERS vectors of a chunk (vectors v0 + i*THREADS + tid, i < UNROLL*ITERS) into registers. */
template <class C, int HINT, class RA> EVO_DEV void chunk_load(RA &r, const unsigned char *xh, u32 v0, u32 nv, bool any)
{
    const u64 pol = make_policy<HINT>();
#pragma unroll
    for (int i = 0; i < C::UNROLL_ * C::ITERS_; i++) {
        u32 j = v0 + (u32)(i * C::THREADS) + threadIdx.x;
        if (any && j < nv) load_raw<C::VEC_, HINT>(r[i], xh + (u64)j * C::VEC_, pol);
        else zero_raw(r[i]);
    }
}

/* Encodes the chunk held in r (chunk_load's layout) and stores the codes of the vectors inside the head. */
template <class C, bool FAST, class RA>
EVO_DEV void chunk_encode_regs(const RA &r, unsigned char *ch, u32 v0, u32 nv, u32 smask, float s, float inv)
{
#pragma unroll
    for (int i = 0; i < C::UNROLL_ * C::ITERS_; i++) {
        u32 j = v0 + (u32)(i * C::THREADS) + threadIdx.x;
        vec_encode<C, FAST>(r[i], smask, threadIdx.x & 31u, s, inv, ch + (u64)j * C::EPV, j < nv);
    }
}

EVO_DEV u32 ld_relaxed(const u32 *p)
{
    u32 v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
EVO_DEV void st_relaxed(u32 *p, u32 v) { asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
EVO_DEV u32 atom_add_acq_rel(u32 *p, u32 v)
{
    u32 old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}

/* Polls of an empty slot (each a 32 ns sleep and an L2 round trip) before a waiting thread of mode 7 computes the
 * chunk's absmax itself (head_slots_max). */
#define EVO_QUANT_HELP_POLLS 256

/* The absmax of chunk v0 (CHUNK_V vectors from vector v0) of head xh, computed by one thread a word at a time (a
 * cold path: a few registers, slow): packed maxima of fp16/bf16 pairs, or floats of separately rotated rows, as
 * vec_absmax takes them (the same maximum). Not for a fused rotation (no lanes to shuffle with). */
template <class C> EVO_DEV float thread_chunk_absmax(const unsigned char *xh, u32 v0, u32 nv)
{
    static_assert(!C::ROT, "a fused rotation needs the row's lanes");
    constexpr u32 WPV = (u32)C::VEC_ / 4u; /* words a vector; word indices stay below 2^31 (S*D < 2^31) */
    const u32 end = (v0 + (u32)C::CHUNK_V < nv ? v0 + (u32)C::CHUNK_V : nv) * WPV;
    const u32 *w = (const u32 *)xh;
    u32 pm = 0u;
    float m = 0.0f;
#pragma unroll 1
    for (u32 i = v0 * WPV; i < end; i++) {
        const u32 x = w[i];
        if constexpr (C::PACKED_MAX) absmax_pairs<C::IN, 4>(Raw<4>{{x}}, pm);
        else m = fmaxf(m, fabsf(__uint_as_float(x)));
    }
    if constexpr (C::PACKED_MAX) m = absmax_fold<C::IN>(pm);
    return m;
}

/* The largest absmax published in the slots of head h (every thread: slots tid, tid + THREADS, ...; early: slot
 * tid, read before), after waiting for any slot still empty. Modes 1 and 3 wait only for blocks that started
 * before (tickets, or blocks starting in index order). Mode 7 (HELP) waits for any block of its round: there a
 * thread that has polled an empty slot EVO_QUANT_HELP_POLLS times computes that chunk's absmax itself and publishes
 * it (the same bits its own block publishes: a maximum does not depend on who takes it), so a block never waits
 * for one that has not started and the grid needs no co-residency guarantee (a plain launch). */
template <class C, bool HELP> EVO_DEV float head_slots_max(const Shape<C> &sh, u32 *slot, u32 h, u32 early)
{
    u32 *hslot = slot + (u64)h * sh.cph;
    float m = 0.0f;
    for (u32 i = threadIdx.x; i < sh.cph; i += (u32)C::THREADS) {
        u32 v = i == threadIdx.x ? early : ld_relaxed(&hslot[i]);
        for (u32 polls = 0; v == 0u; polls++) {
            if constexpr (HELP) {
                if (polls >= EVO_QUANT_HELP_POLLS) {
                    v = 0x80000000u | __float_as_uint(thread_chunk_absmax<C>(sh.head_src(h), i * (u32)C::CHUNK_V, sh.nv));
                    st_relaxed(&hslot[i], v);
                    break;
                }
            }
            asm volatile("nanosleep.u32 32;");
            v = ld_relaxed(&hslot[i]);
        }
        m = fmaxf(m, __uint_as_float(v & 0x7fffffffu));
    }
    return m;
}

/* Modes 1, 3 and 7, one block's step: chunk c1 (when first: its absmax, published in slot c1) and chunk c2 (when
 * second: encoded once all slots of its head are published), both loaded into registers, and the slots of c2's
 * head. Chunk c is chunk k = c % cph of head h = c / cph; the caller passes (h, k) of both. load() issues the
 * chunks' loads, read_slots() this thread's first slot read, finish() the rest; a caller may
 * issue the next step's loads before finishing this one (mode 7). The waiting block has published c1 already,
 * which keeps the lowest waiting block's slots filled (the callers' lag rules; waiting first and publishing after,
 * with one barrier for both reductions, measured 4-50 % slower: every wait then delays the slots others wait for).
 * The reductions go through red1 and red2 (block_max): a caller that runs more steps alternates two pairs of arrays
 * between consecutive steps, so that an array is rewritten only after the next step's reduction barrier. */
template <class C> struct ChainStep {
    static constexpr int NV = C::UNROLL_ * C::ITERS_;
    u32 h1, k1, h2, k2, early;
    bool first, second;
    Raw<C::VEC_> a[NV], b[NV];

    EVO_DEV void load(const Shape<C> &sh, u32 h1_, u32 k1_, bool first_, u32 h2_, u32 k2_, bool second_)
    {
        h1 = h1_, k1 = k1_, first = first_, h2 = h2_, k2 = k2_, second = second_;
        chunk_load<C, C::HINT_FIRST>(a, sh.head_src(h1), k1 * (u32)C::CHUNK_V, sh.nv, first);
        chunk_load<C, C::HINT_LAST>(b, sh.head_src(h2), k2 * (u32)C::CHUNK_V, sh.nv, second);
    }
    EVO_DEV void read_slots(const Shape<C> &sh, const u32 *slot)
    {
        const u32 tid = threadIdx.x;
        early = second && tid < sh.cph ? ld_relaxed(&slot[(u64)h2 * sh.cph + tid]) : 0u;
    }
    /* The largest absmax published in c2's head, after waiting for any slot still empty (head_slots_max). */
    EVO_DEV float slots_max(const Shape<C> &sh, u32 *slot) const
    {
        return head_slots_max<C, C::LOCAL_HELP>(sh, slot, h2, early);
    }
    EVO_DEV void publish(const Shape<C> &sh, u32 *slot, float m) const
    {
        if (threadIdx.x == 0) st_relaxed(&slot[(u64)h1 * sh.cph + k1], 0x80000000u | __float_as_uint(m));
    }
    /* c2's codes at the scale of its head's absmax hmax (every thread) */
    EVO_DEV void encode(const evo_quant_params &p, const Shape<C> &sh, u32 smask, float hmax) const
    {
        const float s = scale_of(hmax);
        if (k2 == 0 && threadIdx.x == 0) p.scales[h2] = s;
        const float inv = __frcp_rn(s);
        unsigned char *ch = p.codes + (u64)h2 * sh.head_elems;
        if (scale_fast(s)) chunk_encode_regs<C, true>(b, ch, k2 * (u32)C::CHUNK_V, sh.nv, smask, s, inv);
        else chunk_encode_regs<C, false>(b, ch, k2 * (u32)C::CHUNK_V, sh.nv, smask, s, inv);
    }
    /* Publishes c1's absmax, then waits for c2's head: two reductions (red1, red2) */
    EVO_DEV void finish(const evo_quant_params &p, const Shape<C> &sh, u32 *slot, u32 smask, float *red1, float *red2)
    {
        if (first) publish(sh, slot, block_max<C::WARPS_>(regs_absmax<C>(a, 0.0f, smask, threadIdx.x & 31u), red1));
        /* the reduction's barrier ends every slot read */
        if (second) encode(p, sh, smask, block_max<C::WARPS_>(slots_max(sh, slot), red2));
    }
};

/* Scratch: u32 ticket, u32 done, 2 u32 unused, then one u32 slot per chunk: 0 until the chunk's absmax is known,
 * then 0x80000000 | its bits (a single word, so a relaxed store publishes it; absmax >= 0 leaves bit 31 free).
 * Block t (its ticket in mode 1, blockIdx.x in mode 3) loads chunk t and chunk t - lag at once and reads the slots
 * of chunk t - lag's head, publishes the absmax of chunk t, then waits for any of those slots still empty (all
 * belong to tickets <= t since lag >= chunks per head - 1, and a block publishes before it waits, so the lowest
 * waiting block always finds its slots filled) and encodes chunk t - lag. Every block counts itself done with a
 * relaxed add once its slot reads are over; the block with the last ticket, which starts after all others, waits
 * for the count and zeroes the scratch for the next launch. */
template <class C> EVO_DEV void chained(const evo_quant_params &p)
{
    __shared__ float red1[C::WARPS_], red2[C::WARPS_];
    __shared__ u32 s_ticket;
    Shape<C> sh(p);
    u32 *ctl = (u32 *)sh.mode_scratch, *slot = ctl + 4;
    const u32 lag = (u32)p.chain_lag, chunks = sh.n_heads * sh.cph, tid = threadIdx.x;
    require(p.chain_lag >= 0 && lag + 1u >= sh.cph && gridDim.x == chunks + lag && gridDim.y == 1);
    const u32 smask = thread_signs<C>();

    u32 t = blockIdx.x;
    if (C::MODE_ == EVO_QUANT_MODE_CHAINED) {
        if (tid == 0) s_ticket = atomicAdd(&ctl[0], 1u);
        __syncthreads();
        t = s_ticket;
    }
    ChainStep<C> st;
    const u32 t2 = t - lag;
    st.load(sh, t / sh.cph, t % sh.cph, t < chunks, t2 / sh.cph, t2 % sh.cph, t >= lag && t2 < chunks);
    st.read_slots(sh, slot); /* in flight with the loads */
    st.finish(p, sh, slot, smask, red1, red2);
    if (t != gridDim.x - 1u) {
        if (tid == 0) asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(&ctl[1]) : "memory");
        return;
    }
    /* the last ticket: every other block has started; wait until all have counted themselves, then reset */
    if (tid == 0)
        while (ld_acquire(&ctl[1]) != gridDim.x - 1u) asm volatile("nanosleep.u32 128;");
    __syncthreads();
    for (u32 i = tid; i < chunks; i += (u32)C::THREADS) slot[i] = 0u;
    if (tid == 0) {
        ctl[0] = 0u;
        ctl[1] = 0u;
    }
}

/* ---- mode 2: cluster ---- */

/* Modes 2 and 5: the head's absmax from each thread's m, over the block and then (CLUSTER > 1) over the cluster's
 * CTAs through distributed shared memory. Each CTA arrives on the cluster barrier a second time without waiting: the
 * caller waits (cluster_wait) before it exits, so no CTA leaves while another may still read its partial. */
template <class C> EVO_DEV float head_absmax(float m, float *red)
{
    __shared__ float s_block, s_absmax;
    m = block_max<C::WARPS_>(m, red);
    if (C::CLUSTER_ == 1) return m;
    const u32 tid = threadIdx.x;
    if (tid == 0) s_block = m;
    cluster_sync_all(); /* every CTA's s_block is written and visible */
    if (tid < 32) {
        float v = tid < (u32)C::CLUSTER_ ? ld_cluster(&s_block, tid) : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (tid == 0) s_absmax = v;
    }
    cluster_arrive_relaxed(); /* done reading the others' shared memory; the wait is at the end */
    __syncthreads();
    return s_absmax;
}

/* Pass 2 of mode 2: the kept vectors from registers (KR: Raw[KEEP] or a dummy), kept rotated floats (KF), the rest
 * re-read. */
template <class C, bool FAST, class KR, class KF>
EVO_DEV void cluster_encode(const unsigned char *xh, unsigned char *ch, u32 nv, u32 rank, u32 rounds, u32 smask,
                            float s, float inv, const KR &kr, const KF &kf)
{
    const u32 tid = threadIdx.x, lane = tid & 31u;
#pragma unroll
    for (int k = 0; k < C::KEEP_; k++) {
        u32 j = ((u32)k * C::CLUSTER_ + rank) * (u32)C::THREADS + tid;
        float f[C::EPV];
        if (C::KEEP_F32) {
#pragma unroll
            for (int e = 0; e < C::EPV; e++) f[e] = kf[C::KEEP_F32 ? k : 0][C::KEEP_F32 ? e : 0];
        } else {
            vec_floats<C>(kr[k], smask, lane, f);
        }
        Codes<C::EPV> o;
        encode_vec<C::EPV, C::CVT_, FAST ? C::QUOT_STEPS : 0>(f, s, inv, o);
        if (j < nv) store_codes<C::EPV, C::CACHE_>(ch + (u64)j * C::EPV, o.w);
    }
    const u64 pol = make_policy<C::HINT_LAST>();
    for (u32 k = C::KEEP_; k < rounds; k += C::UNROLL_) {
        Raw<C::VEC_> r[C::UNROLL_];
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            u32 j = ((k + u) * C::CLUSTER_ + rank) * (u32)C::THREADS + tid;
            if (j < nv) load_raw<C::VEC_, C::HINT_LAST>(r[u], xh + (u64)j * C::VEC_, pol);
            else zero_raw(r[u]);
        }
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            u32 j = ((k + u) * C::CLUSTER_ + rank) * (u32)C::THREADS + tid;
            vec_encode<C, FAST>(r[u], smask, lane, s, inv, ch + (u64)j * C::EPV, j < nv);
        }
    }
}

/* Vector (k*CLUSTER + rank)*THREADS + tid of the head is this thread's k-th; k < KEEP stay in registers. */
template <class C> EVO_DEV void cluster_head(const evo_quant_params &p)
{
    __shared__ float red[C::WARPS_];
    Shape<C> sh(p);
    require(gridDim.x == sh.n_heads * (u32)C::CLUSTER_ && gridDim.y == 1 && cluster_size() == (u32)C::CLUSTER_);
    const u32 tid = threadIdx.x, lane = tid & 31u, smask = thread_signs<C>();
    const u32 h = blockIdx.x / (u32)C::CLUSTER_, rank = C::CLUSTER_ > 1 ? cluster_rank() : 0u;
    const u32 per_round = (u32)(C::CLUSTER_ * C::THREADS), rounds = (sh.nv + per_round - 1u) / per_round;
    const unsigned char *xh = sh.head_src(h);

    Raw<C::VEC_> kr[C::KEEP_ ? C::KEEP_ : 1];
    float kf[C::KEEP_F32 ? C::KEEP_ : 1][C::KEEP_F32 ? C::EPV : 1];
    float m = 0.0f;
    {
        const u64 pol = make_policy<C::HINT_LAST>();
#pragma unroll
        for (int k = 0; k < C::KEEP_; k++) {
            u32 j = ((u32)k * C::CLUSTER_ + rank) * (u32)C::THREADS + tid;
            if (j < sh.nv) load_raw<C::VEC_, C::HINT_LAST>(kr[k], xh + (u64)j * C::VEC_, pol);
            else zero_raw(kr[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < C::KEEP_; k++) {
        float f[C::EPV];
        vec_floats<C>(kr[k], smask, lane, f);
#pragma unroll
        for (int e = 0; e < C::EPV; e++) {
            m = fmaxf(m, fabsf(f[e]));
            if (C::KEEP_F32) kf[C::KEEP_F32 ? k : 0][C::KEEP_F32 ? e : 0] = f[e];
        }
    }
    {
        const u64 pol = make_policy<C::HINT_FIRST>();
        for (u32 k = C::KEEP_; k < rounds; k += C::UNROLL_) {
            Raw<C::VEC_> r[C::UNROLL_];
#pragma unroll
            for (int u = 0; u < C::UNROLL_; u++) {
                u32 j = ((k + u) * C::CLUSTER_ + rank) * (u32)C::THREADS + tid;
                if (j < sh.nv) load_raw<C::VEC_, C::HINT_FIRST>(r[u], xh + (u64)j * C::VEC_, pol);
                else zero_raw(r[u]);
            }
#pragma unroll
            for (int u = 0; u < C::UNROLL_; u++) {
                m = vec_absmax<C>(r[u], m, smask, lane);
            }
        }
    }
    const float absmax = head_absmax<C>(m, red);
    const float s = scale_of(absmax);
    if (rank == 0 && tid == 0) p.scales[h] = s;
    const float inv = __frcp_rn(s);
    unsigned char *ch = p.codes + (u64)h * sh.head_elems;
    if (scale_fast(s)) cluster_encode<C, true>(xh, ch, sh.nv, rank, rounds, smask, s, inv, kr, kf);
    else cluster_encode<C, false>(xh, ch, sh.nv, rank, rounds, smask, s, inv, kr, kf);
    if (C::CLUSTER_ > 1) cluster_wait(); /* no CTA leaves while another may still read its s_block */
}


/* ---- mode 4: resident ---- */

#if EVO_QUANT_ARCH >= 900
EVO_DEV void mbar_init(u64 *bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
EVO_DEV void mbar_expect_tx(u64 *bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
EVO_DEV bool mbar_done(u64 *bar, u32 parity)
{
    u32 ok;
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(ok)
                 : "r"(smem_addr(bar)), "r"(parity)
                 : "memory");
    return ok != 0u;
}
/* bytes (a multiple of 16) from global src to shared dst by the bulk-copy unit; completion counted on bar. */
template <int HINT> EVO_DEV void bulk_load(void *dst, const void *src, u32 bytes, u64 *bar, u64 pol)
{
    if (HINT == 0)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar))
                     : "memory");
    else
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], "
                     "%2, [%3], %4;" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(pol)
                     : "memory");
}
EVO_DEV void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
EVO_DEV void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#else
EVO_DEV void mbar_init(u64 *, u32) {}
EVO_DEV void mbar_expect_tx(u64 *, u32) {}
EVO_DEV bool mbar_done(u64 *, u32) { return true; }
template <int HINT> EVO_DEV void bulk_load(void *, const void *, u32, u64 *, u64) {}
EVO_DEV void fence_barrier_init() {}
EVO_DEV void fence_proxy_async() {}
#endif

template <int VEC> EVO_DEV void load_smem(Raw<VEC> &r, const unsigned char *p)
{
    if (VEC == 8) {
        uint2 v = *(const uint2 *)p;
        r.w[0] = v.x, r.w[1] = v.y;
    }
#pragma unroll
    for (int i = 0; i < VEC / 16; i++) {
        uint4 v = *(const uint4 *)(p + 16 * i);
        r.w[4 * i] = v.x, r.w[4 * i + 1] = v.y, r.w[4 * i + 2] = v.z, r.w[4 * i + 3] = v.w;
    }
}

/* Modes 4 and 8: the nvc vectors of one chunk in shared memory at buf, vector i*THREADS + tid (i < UNROLL*ITERS) by
 * thread tid, UNROLL loaded before the first is used. smem_group loads group i / UNROLL into r. */
template <class C> EVO_DEV void smem_group(Raw<C::VEC_> (&r)[C::UNROLL_], const unsigned char *buf, u32 nvc, int i)
{
#pragma unroll
    for (int u = 0; u < C::UNROLL_; u++) {
        const u32 j = (u32)(i + u) * (u32)C::THREADS + threadIdx.x;
        if (j < nvc) load_smem<C::VEC_>(r[u], buf + (u64)j * C::VEC_);
        else zero_raw(r[u]);
    }
}

/* m folded with the chunk's |x|. */
template <class C> EVO_DEV float smem_chunk_absmax(const unsigned char *buf, u32 nvc, u32 smask, float m)
{
#pragma unroll 1
    for (int i = 0; i < C::UNROLL_ * C::ITERS_; i += C::UNROLL_) {
        Raw<C::VEC_> r[C::UNROLL_];
        smem_group<C>(r, buf, nvc, i);
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) m = vec_absmax<C>(r[u], m, smask, threadIdx.x & 31u);
    }
    return m;
}

/* The chunk's codes at scale s (inv = RN(1/s)) to dst. The slow quotient (fast false) calls a division routine: one
 * vector at a time there, so that nothing is live across the call. */
template <class C>
EVO_DEV void smem_chunk_encode(const unsigned char *buf, u32 nvc, u32 smask, float s, float inv, unsigned char *dst,
                               bool fast)
{
    const u32 tid = threadIdx.x, lane = tid & 31u;
    if (!fast) {
#pragma unroll 1
        for (int i = 0; i < C::UNROLL_ * C::ITERS_; i++) {
            const u32 j = (u32)i * (u32)C::THREADS + tid;
            Raw<C::VEC_> r;
            if (j < nvc) load_smem<C::VEC_>(r, buf + (u64)j * C::VEC_);
            else zero_raw(r);
            vec_encode<C, 0>(r, smask, lane, s, inv, dst + (u64)j * C::EPV, j < nvc);
        }
        return;
    }
#pragma unroll 1
    for (int i = 0; i < C::UNROLL_ * C::ITERS_; i += C::UNROLL_) {
        Raw<C::VEC_> r[C::UNROLL_];
        smem_group<C>(r, buf, nvc, i);
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            const u32 j = (u32)(i + u) * (u32)C::THREADS + tid;
            vec_encode<C, 1>(r[u], smask, lane, s, inv, dst + (u64)j * C::EPV, j < nvc);
        }
    }
}

/* Modes 4 and 6: the bulk copy of chunk c (cb bytes of its head, fewer at the head's end) into buf, counted on bar. */
template <class C>
EVO_DEV void ring_load(u64 *bar, unsigned char *buf, const Shape<C> &sh, u32 c, u32 cb, u64 head_bytes, u64 pol)
{
    const u64 off = (u64)(c % sh.cph) * cb;
    const u32 bytes = (u32)(head_bytes - off < (u64)cb ? head_bytes - off : (u64)cb);
    mbar_expect_tx(bar, bytes);
    bulk_load<C::HINT_LAST>(buf, sh.head_src(c / sh.cph) + off, bytes, bar, pol);
}

/* Modes 4 and 6, by the thread that issues a ring's loads: its stages mbarriers, then the loads of the first rounds. */
template <class F> EVO_DEV void ring_start(u64 *bar, u32 stages, u32 rounds, F issue)
{
    for (u32 i = 0; i < stages; i++) mbar_init(&bar[i], 1u);
    fence_barrier_init();
    for (u32 r = 0; r < rounds && r < stages; r++) issue(r);
}

/* ---- mode 5: staged cluster ---- */

/* A cluster of CLUSTER CTAs per head, as mode 2, but each CTA stages its share of the head (EVO_QUANT_STAGED_SLICE
 * bytes, whole rows) in shared memory with bulk copies: DRAM is read once, no register is held for the data, so
 * several CTAs share a multiprocessor and one's encoding overlaps another's loads. Then: absmax from shared memory,
 * the cluster's max through distributed shared memory, codes from shared memory. */
template <class C> EVO_DEV void staged_head(const evo_quant_params &p)
{
    extern __shared__ __align__(128) unsigned char stage[];
    __shared__ u64 bar;
    __shared__ float red[C::WARPS_];
    Shape<C> sh(p);
    const u64 head_bytes = (u64)sh.nv * (u32)C::VEC_;
    const u64 slice = EVO_QUANT_STAGED_SLICE(head_bytes, (u64)C::CLUSTER_);
    u32 dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    require(gridDim.x == sh.n_heads * (u32)C::CLUSTER_ && gridDim.y == 1 && cluster_size() == (u32)C::CLUSTER_ &&
            slice <= (u64)dyn);
    const u32 tid = threadIdx.x, lane = tid & 31u, smask = thread_signs<C>();
    const u32 h = blockIdx.x / (u32)C::CLUSTER_, rank = C::CLUSTER_ > 1 ? cluster_rank() : 0u;
    const u64 beg = (u64)rank * slice < head_bytes ? (u64)rank * slice : head_bytes;
    const u32 bytes = (u32)(head_bytes - beg < slice ? head_bytes - beg : slice);
    const u32 nvl = bytes / (u32)C::VEC_, rounds = (nvl + (u32)C::THREADS - 1u) / (u32)C::THREADS;
    if (tid == 0) {
        mbar_init(&bar, 1u);
        fence_barrier_init();
        mbar_expect_tx(&bar, bytes); /* 0 bytes (a CTA past the head's end): the phase completes at once */
        const u64 pol = make_policy<C::HINT_LAST>();
        for (u32 o = 0; o < bytes; o += 16384u)
            bulk_load<C::HINT_LAST>(stage + o, sh.head_src(h) + beg + o, bytes - o < 16384u ? bytes - o : 16384u, &bar,
                                    pol);
    }
    __syncthreads(); /* the barrier is initialized before anyone waits on it */
    while (!mbar_done(&bar, 0u)) {
    }
    float m = 0.0f;
    for (u32 k = 0; k < rounds; k += (u32)C::UNROLL_) {
        Raw<C::VEC_> r[C::UNROLL_];
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            const u32 j = (k + (u32)u) * (u32)C::THREADS + tid;
            if (j < nvl) load_smem<C::VEC_>(r[u], stage + (u64)j * C::VEC_);
            else zero_raw(r[u]);
        }
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            m = vec_absmax<C>(r[u], m, smask, lane);
        }
    }
    const float absmax = head_absmax<C>(m, red);
    const float s = scale_of(absmax);
    if (rank == 0 && tid == 0) p.scales[h] = s;
    const float inv = __frcp_rn(s);
    const bool fast = scale_fast(s);
    unsigned char *ch = p.codes + (u64)h * sh.head_elems + beg / (u32)C::EB;
    for (u32 k = 0; k < rounds; k += (u32)C::UNROLL_) {
        Raw<C::VEC_> r[C::UNROLL_];
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            const u32 j = (k + (u32)u) * (u32)C::THREADS + tid;
            if (j < nvl) load_smem<C::VEC_>(r[u], stage + (u64)j * C::VEC_);
            else zero_raw(r[u]);
        }
#pragma unroll
        for (int u = 0; u < C::UNROLL_; u++) {
            const u32 j = (k + (u32)u) * (u32)C::THREADS + tid;
            vec_encode<C, 2>(r[u], smask, lane, s, inv, ch + (u64)j * C::EPV, j < nvl, fast);
        }
    }
    if (C::CLUSTER_ > 1) cluster_wait(); /* no CTA leaves while another may still read its s_block */
}


/* gridDim.x blocks (one or more per SM), all resident (cooperative launch), one chunk of CHUNK_V vectors per block
 * and round: chunk c belongs to block c % grid, round c / grid. The block's chunks enter a ring of p.stages buffers
 * of shared memory by bulk copies issued as soon as a buffer is free. Round r: wait for the chunk of round r, take
 * its absmax from shared memory and publish it in its slot (mode 3's slots); then the chunk of round r - lag: wait
 * for its head's slots (read at the start of the round), encode it from shared memory, free its buffer and start
 * the load that reuses it. DRAM is read once and nothing waits on a block that has not started. The last block to
 * finish zeroes the slots for the next launch. */
template <class C> EVO_DEV void resident(const evo_quant_params &p)
{
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ u64 bar[EVO_QUANT_MAX_STAGES];
    __shared__ float red[C::WARPS_];
    __shared__ u32 s_last;
    Shape<C> sh(p);
    u32 *ctl = (u32 *)sh.mode_scratch, *slot = ctl + 4;
    const u32 lag = (u32)p.chain_lag, stages = (u32)p.stages, grid = gridDim.x, b = blockIdx.x, tid = threadIdx.x;
    const u32 chunks = sh.n_heads * sh.cph, cb = (u32)C::CHUNK_V * (u32)C::VEC_;
    const u64 head_bytes = (u64)sh.nv * (u32)C::VEC_;
    u32 dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    require(p.chain_lag >= 1 && stages >= lag + 2u && stages <= EVO_QUANT_MAX_STAGES && (u64)stages * cb <= dyn &&
            gridDim.y == 1 && grid <= chunks && (u64)lag * grid + 1u >= sh.cph);
    const u32 rounds = b < chunks ? (chunks - b + grid - 1u) / grid : 0u;
    const u32 smask = thread_signs<C>();
    const u64 pol = make_policy<C::HINT_LAST>();

    auto issue = [&](u32 r) { /* thread 0: the load of round r into buffer r % stages */
        const u32 st = r % stages;
        ring_load<C>(&bar[st], ring + (u64)st * cb, sh, r * grid + b, cb, head_bytes, pol);
    };
    if (tid == 0) ring_start(bar, stages, rounds, issue);
    __syncthreads();

    for (u32 r = 0; r < rounds + lag; r++) {
        /* the slots of the head encoded below, read while this round's absmax is taken (in flight meanwhile) */
        const bool enc = r >= lag && r - lag < rounds;
        const u32 ec = (r - lag) * grid + b, eh = ec / sh.cph;
        const u32 early = enc && tid < sh.cph ? ld_relaxed(&slot[(u64)eh * sh.cph + tid]) : 0u;
        if (r < rounds) {
            const u32 c = r * grid + b, k = c % sh.cph, st = r % stages;
            const u32 nvc = min((u32)C::CHUNK_V, sh.nv - k * (u32)C::CHUNK_V); /* vectors in this chunk */
            while (!mbar_done(&bar[st], (r / stages) & 1u)) {
            }
            const float m = block_max_again<C::WARPS_>(smem_chunk_absmax<C>(ring + (u64)st * cb, nvc, smask, 0.0f), red);
            if (tid == 0) st_relaxed(&slot[c], 0x80000000u | __float_as_uint(m));
        }
        if (enc) {
            const u32 u = r - lag, c = ec, h = eh, k = c % sh.cph, st = u % stages;
            const u32 nvc = min((u32)C::CHUNK_V, sh.nv - k * (u32)C::CHUNK_V);
            const u32 *hslot = slot + (u64)h * sh.cph;
            float m = 0.0f;
            for (u32 i = tid; i < sh.cph; i += (u32)C::THREADS) {
                u32 v = i == tid ? early : ld_relaxed(&hslot[i]);
                while (v == 0u) {
                    asm volatile("nanosleep.u32 32;");
                    v = ld_relaxed(&hslot[i]);
                }
                m = fmaxf(m, __uint_as_float(v & 0x7fffffffu));
            }
            const float s = scale_of(block_max_again<C::WARPS_>(m, red));
            if (k == 0 && tid == 0) p.scales[h] = s;
            const float inv = __frcp_rn(s);
            unsigned char *ch = p.codes + (u64)h * sh.head_elems + (u64)k * (u32)C::CHUNK_V * (u32)C::EPV;
            smem_chunk_encode<C>(ring + (u64)st * cb, nvc, smask, s, inv, ch, scale_fast(s));
            __syncthreads(); /* every read of the buffer is done */
            if (tid == 0 && u + stages < rounds) {
                fence_proxy_async();
                issue(u + stages);
            }
        }
    }
    /* the last block to finish (every other has read its slots) zeroes them for the next launch */
    __syncthreads();
    if (tid == 0) s_last = atom_add_acq_rel(&ctl[1], 1u) == grid - 1u;
    __syncthreads();
    if (!s_last) return;
    for (u32 i = tid; i < chunks; i += (u32)C::THREADS) slot[i] = 0u;
    if (tid == 0) ctl[1] = 0u;
}

/* ---- mode 6: streamed ---- */

EVO_DEV void red_add_release(u32 *p, u32 v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* Modes 6 and 8: heads completed through three words each at the start of the mode's scratch (max, count and done,
 * n_heads of each; zero-filled once, left zeroed by every launch). A piece of a head publishes its absmax (atomic max
 * on the float's bits: every value is |x| >= 0 and never NaN, so the bits order as the floats; then a release add to
 * the count); a reader waits for the count with its own polls (acquire) and reads the max; the last of a head's
 * readers zeroes its words for the next launch. */
struct HeadWords {
    u32 *max, *count, *done;
    EVO_DEV HeadWords(unsigned char *scratch, u32 n_heads)
        : max((u32 *)scratch), count(max + n_heads), done(count + n_heads)
    {
    }
    EVO_DEV void publish(u32 h, float m) const
    {
        atomicMax(&max[h], __float_as_uint(m));
        red_add_release(&count[h], 1u);
    }
    /* after reading the max of head h, which `readers` pieces read in all. ACQ_REL false: a relaxed count, for a
     * reader whose stores in flight an acq_rel would wait for (mode 6: 9 % slower, measured) */
    template <bool ACQ_REL = true> EVO_DEV void read_done(u32 h, u32 readers) const
    {
        const u32 before = ACQ_REL ? atom_add_acq_rel(&done[h], 1u) : atomicAdd(&done[h], 1u);
        if (before == readers - 1u) max[h] = 0u, count[h] = 0u, done[h] = 0u;
    }
};

/* gridDim.x blocks, all resident (cooperative launch); W = gridDim.x * WARPS warps, numbered warp * gridDim.x +
 * blockIdx.x so that a round's chunks spread over every block. Chunk c (WCHUNK_V vectors of one head) belongs to
 * warp c % W in round c / W. Each warp owns p.stages buffers of shared memory and an mbarrier per buffer, refilled
 * by bulk copies its lane 0 issues as soon as a buffer is encoded. Round r: wait for the chunk of round r, take its
 * absmax, fold it into its head's max word (atomic max on the float's bits, all non-negative) and count it (release
 * add); then the chunk of round r - lag: wait until its head's count is complete (acquire), encode it from shared
 * memory, count it as encoded; the head's last encoder zeroes the head's three words for the next launch. A head
 * spans at most lag rounds after its first, so the warp furthest behind always finds its heads complete (it has
 * published its own round, and every other warp is at that round or past it): no deadlock, and no barrier wider
 * than a warp. Measured slower than modes 3 and 4 (docs/perf-notes.md, "Mode 6"): every chunk's atomics and
 * polls meet on its head's words. */
template <class C> EVO_DEV void streamed(const evo_quant_params &p)
{
    extern __shared__ __align__(128) unsigned char ring[];
    Shape<C> sh(p);
    const HeadWords hw(sh.mode_scratch, sh.n_heads);
    const u32 lag = (u32)p.chain_lag, stages = (u32)p.stages, grid = gridDim.x, lane = threadIdx.x & 31u;
    const u32 warp = threadIdx.x >> 5, nw = grid * (u32)C::WARPS_, g = warp * grid + blockIdx.x;
    const u32 chunks = sh.n_heads * sh.cph, cb = (u32)C::WCHUNK_V * (u32)C::VEC_;
    const u64 head_bytes = (u64)sh.nv * (u32)C::VEC_;
    u32 dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    require(stages >= lag + 2u && stages <= EVO_QUANT_MAX_STAGES && (u64)C::WARPS_ * stages * (cb + 8u) <= dyn &&
            gridDim.y == 1 && (u64)lag * nw + 1u >= sh.cph);
    const u32 rounds = g < chunks ? (chunks - g + nw - 1u) / nw : 0u;
    u64 *wbar = (u64 *)(ring + (u64)C::WARPS_ * stages * cb) + warp * stages; /* the mbarriers follow the rings */
    unsigned char *wring = ring + (u64)warp * stages * cb;
    const u32 smask = thread_signs<C>();
    const u64 pol = make_policy<C::HINT_LAST>();
    /* a lane's NV vectors of a chunk, G loaded from shared memory before the first is used (one at a time with a
     * fused rotation, whose shuffles and temporaries would not fit in 64 registers beside more) */
    constexpr int NV = C::UNROLL_ * C::ITERS_, G = C::ROT ? 1 : C::UNROLL_;

    auto issue = [&](u32 r) { /* lane 0: the load of round r into buffer r % stages */
        const u32 st = r % stages;
        ring_load<C>(&wbar[st], wring + (u64)st * cb, sh, r * nw + g, cb, head_bytes, pol);
    };
    if (lane == 0) ring_start(wbar, stages, rounds, issue);
    __syncwarp();

    for (u32 r = 0; r < rounds + lag; r++) {
        if (r < rounds) {
            const u32 c = r * nw + g, h = c / sh.cph, k = c % sh.cph, st = r % stages;
            const u32 nvc = min((u32)C::WCHUNK_V, sh.nv - k * (u32)C::WCHUNK_V);
            while (!mbar_done(&wbar[st], (r / stages) & 1u)) {
            }
            const unsigned char *buf = wring + (u64)st * cb;
            float m = 0.0f;
            u32 m2 = 0u;
#pragma unroll 1
            for (int it = 0; it < NV / G; it++) {
                Raw<C::VEC_> raw[G];
#pragma unroll
                for (int u = 0; u < G; u++) {
                    const u32 j = (u32)(it * G + u) * 32u + lane;
                    if (j < nvc) load_smem<C::VEC_>(raw[u], buf + (u64)j * C::VEC_);
                    else zero_raw(raw[u]);
                }
#pragma unroll
                for (int u = 0; u < G; u++) {
                    if (C::PACKED_MAX) {
                        absmax_pairs<C::IN>(raw[u], m2);
                    } else {
                        m = vec_absmax<C>(raw[u], m, smask, lane);
                    }
                }
            }
            if (C::PACKED_MAX) m = absmax_fold<C::IN>(m2);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            if (lane == 0) {
                hw.publish(h, m);
            }
        }
        if (r >= lag && r - lag < rounds) {
            const u32 u = r - lag, c = u * nw + g, h = c / sh.cph, k = c % sh.cph, st = u % stages;
            const u32 nvc = min((u32)C::WCHUNK_V, sh.nv - k * (u32)C::WCHUNK_V);
            u32 mb = 0u;
            if (lane == 0) { /* usually complete at the first look; else back off (the polls share one L2 line) */
                for (u32 ns = 128u; ld_acquire(&hw.count[h]) != sh.cph; ns = ns < 2048u ? 2u * ns : ns) __nanosleep(ns);
                mb = ld_relaxed(&hw.max[h]);
            }
            const float s = scale_of(__uint_as_float(__shfl_sync(0xffffffffu, mb, 0)));
            if (k == 0 && lane == 0) p.scales[h] = s;
            const float inv = __frcp_rn(s);
            const bool fast = scale_fast(s);
            const unsigned char *buf = wring + (u64)st * cb;
            unsigned char *ch = p.codes + (u64)h * sh.head_elems + (u64)k * (u32)C::WCHUNK_V * (u32)C::EPV;
#pragma unroll 1
            for (int it = 0; it < NV / G; it++) {
                Raw<C::VEC_> raw[G];
#pragma unroll
                for (int v = 0; v < G; v++) {
                    const u32 j = (u32)(it * G + v) * 32u + lane;
                    if (j < nvc) load_smem<C::VEC_>(raw[v], buf + (u64)j * C::VEC_);
                    else zero_raw(raw[v]);
                }
#pragma unroll
                for (int v = 0; v < G; v++) {
                    const u32 j = (u32)(it * G + v) * 32u + lane;
                    vec_encode<C, 2>(raw[v], smask, lane, s, inv, ch + (u64)j * C::EPV, j < nvc, fast);
                }
            }
            __syncwarp(); /* every lane's reads of the buffer are done */
            if (lane == 0) { /* the refill first: the count below is a round trip */
                if (u + stages < rounds) {
                    fence_proxy_async();
                    issue(u + stages);
                }
                hw.read_done<false>(h, sh.cph); /* the chunk's encoder read its head's max; its codes are in flight */
            }
        }
    }
}

/* ---- mode 7: local ---- */

/* gridDim.x blocks, as many as can be resident at once (a plain launch: a thread that waits too long for a slot
 * computes the chunk's absmax itself, head_slots_max, so no block waits for one that has not started; with the
 * rotation fused in, a cooperative launch, all resident); chunk c belongs to block c % grid in round c / grid, so a
 * block reads again only chunks it read itself. Round r: the chunk of round r and the chunk of round r - lag are
 * loaded at once (plain loads, cached in L1: the second is the block's own chunk of lag rounds before, found in the
 * SM's L1 when the SM's blocks' lag + 1 chunks fit there), the first one's absmax is published in its slot (as in
 * mode 3), and the second is encoded once its head's slots are full. A head spans at most lag rounds after its
 * first, so the block furthest behind always finds its heads complete. Mode 3's flow (two chunks in flight per
 * block, the re-read lag chunks old) with the re-read served by L1 instead of L2. The last block to finish zeroes the
 * slots for the next launch. */
template <class C> EVO_DEV void local(const evo_quant_params &p)
{
    __shared__ float red[2][2][C::WARPS_];
    __shared__ u32 s_last;
    Shape<C> sh(p);
    u32 *ctl = (u32 *)sh.mode_scratch, *slot = ctl + 4;
    const u32 lag = (u32)p.chain_lag, grid = gridDim.x, b = blockIdx.x, tid = threadIdx.x;
    const u32 chunks = sh.n_heads * sh.cph;
    require(lag >= 1u && gridDim.y == 1 && grid <= chunks && (u64)lag * grid + 1u >= sh.cph);
    const u32 rounds = b < chunks ? (chunks - b + grid - 1u) / grid : 0u, smask = thread_signs<C>();
    /* step r: chunk r*grid + b's absmax, chunk (r - lag)*grid + b encoded; with LOCAL_PREFETCH step r + 1's loads
     * are issued before step r finishes (two steps in registers, st0 and st1 by parity). Consecutive steps alternate
     * pairs of reduction arrays. The chunks' (head, index) pairs advance by grid chunks a step: (dh, dk) = (grid /
     * cph, grid % cph). */
    const u32 steps = rounds + lag, dh = grid / sh.cph, dk = grid % sh.cph;
    u32 h1 = b / sh.cph, k1 = b % sh.cph, h2 = h1, k2 = k1;
    auto advance = [&](u32 &h, u32 &k) {
        h += dh, k += dk;
        if (k >= sh.cph) h++, k -= sh.cph;
    };
    auto load = [&](ChainStep<C> &st, u32 r) { /* r = 0, 1, 2, ... in turn */
        const bool first = r < rounds, second = r >= lag && r - lag < rounds;
        st.load(sh, h1, k1, first, h2, k2, second);
        advance(h1, k1);
        if (r >= lag) advance(h2, k2);
    };
    ChainStep<C> st0;
    if constexpr (!C::LOCAL_PREFETCH) {
        for (u32 r = 0; r < steps; r++) {
            load(st0, r);
            st0.read_slots(sh, slot);
            st0.finish(p, sh, slot, smask, red[r & 1u][0], red[r & 1u][1]);
        }
    } else {
        ChainStep<C> st1;
        load(st0, 0u);
        for (u32 r = 0; r < steps; r += 2u) {
            load(st1, r + 1u); /* past the last step: loads nothing */
            st0.read_slots(sh, slot); /* not a step ahead: then most were not yet published (measured 30 % slower) */
            st0.finish(p, sh, slot, smask, red[0][0], red[0][1]);
            if (r + 1u >= steps) break;
            load(st0, r + 2u);
            st1.read_slots(sh, slot);
            st1.finish(p, sh, slot, smask, red[1][0], red[1][1]);
        }
    }
    /* the last block to finish (every other has read its slots) zeroes them for the next launch */
    __syncthreads();
    if (tid == 0) s_last = atom_add_acq_rel(&ctl[1], 1u) == gridDim.x - 1u;
    __syncthreads();
    if (!s_last) return;
    for (u32 i = tid; i < chunks; i += (u32)C::THREADS) slot[i] = 0u;
    if (tid == 0) ctl[1] = 0u;
}

/* Mode 7 with the rotation fused in and KEEP 1 (Cfg::LOCAL_KEEP): local()'s rounds, lag and slots, but a chunk is
 * read and rotated once. Step r loads the chunk of round r into registers, rotates it, takes its absmax and leaves
 * its floats in slot r % (lag + 1) of the block's dynamic shared memory ((lag + 1) chunks of CHUNK_V*EPV floats,
 * float4 i of a thread's chunk at i*THREADS + tid: a warp's accesses are consecutive 16-byte words); it publishes
 * the absmax, issues the next step's loads, waits for the head of round r - lag and encodes that chunk from its
 * slot. Each thread reads back only what it wrote, so the slots need no barrier. Cooperative launch (all blocks
 * resident: no helping thread can rotate). */
template <class C> EVO_DEV void local_kept(const evo_quant_params &p)
{
    extern __shared__ __align__(16) unsigned char kept_smem[];
    __shared__ float red[2][2][C::WARPS_];
    __shared__ u32 s_last;
    constexpr int NV = C::UNROLL_ * C::ITERS_, F4 = C::EPV / 4;
    constexpr u32 SLOT = (u32)C::CHUNK_V * (u32)F4; /* float4 words a slot */
    static_assert(C::EPV % 4 == 0, "kept floats go in 16-byte words");
    float4 *kept = (float4 *)kept_smem;
    Shape<C> sh(p);
    u32 *ctl = (u32 *)sh.mode_scratch, *slot = ctl + 4;
    const u32 lag = (u32)p.chain_lag, grid = gridDim.x, b = blockIdx.x, tid = threadIdx.x, lane = tid & 31u;
    const u32 chunks = sh.n_heads * sh.cph;
    u32 dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    require(p.stages == 1 && lag >= 1u && gridDim.y == 1 && grid <= chunks && (u64)lag * grid + 1u >= sh.cph &&
            (u64)(lag + 1u) * SLOT * 16ull <= dyn);
    const u32 rounds = b < chunks ? (chunks - b + grid - 1u) / grid : 0u, smask = thread_signs<C>();
    const u32 steps = rounds + lag, dh = grid / sh.cph, dk = grid % sh.cph;
    u32 h1 = b / sh.cph, k1 = b % sh.cph, h2 = h1, k2 = k1;
    auto advance = [&](u32 &h, u32 &k) {
        h += dh, k += dk;
        if (k >= sh.cph) h++, k -= sh.cph;
    };
    Raw<C::VEC_> a0[NV], a1[NV];
    /* the chunk of round r (r < rounds) into regs; (h1, k1) is its head and index */
    auto load = [&](Raw<C::VEC_>(&regs)[NV], u32 r) {
        chunk_load<C, C::HINT_LAST>(regs, sh.head_src(h1), k1 * (u32)C::CHUNK_V, sh.nv, r < rounds);
    };
    auto step = [&](Raw<C::VEC_>(&regs)[NV], Raw<C::VEC_>(&next)[NV], u32 r) {
        const bool first = r < rounds, second = r >= lag && r - lag < rounds;
        const u32 early = second && tid < sh.cph ? ld_relaxed(&slot[(u64)h2 * sh.cph + tid]) : 0u;
        if (first) {
            float4 *mine = kept + (r % (lag + 1u)) * SLOT + tid;
            float m = 0.0f;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                float f[C::EPV];
                vec_floats<C>(regs[i], smask, lane, f);
#pragma unroll
                for (int e = 0; e < C::EPV; e++) m = fmaxf(m, fabsf(f[e]));
#pragma unroll
                for (int q = 0; q < F4; q++)
                    mine[(u32)(i * F4 + q) * (u32)C::THREADS] =
                        make_float4(f[4 * q], f[4 * q + 1], f[4 * q + 2], f[4 * q + 3]);
            }
            m = block_max<C::WARPS_>(m, red[r & 1u][0]);
            if (tid == 0) st_relaxed(&slot[(u64)h1 * sh.cph + k1], 0x80000000u | __float_as_uint(m));
            advance(h1, k1);
        }
        load(next, r + 1u); /* in flight while this step waits and encodes */
        if (second) {
            const float s = scale_of(block_max<C::WARPS_>(head_slots_max<C, false>(sh, slot, h2, early), red[r & 1u][1]));
            if (k2 == 0 && tid == 0) p.scales[h2] = s;
            const float inv = __frcp_rn(s);
            const bool fast = scale_fast(s);
            const float4 *old = kept + ((r - lag) % (lag + 1u)) * SLOT + tid;
            unsigned char *ch = p.codes + (u64)h2 * sh.head_elems;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                float f[C::EPV];
#pragma unroll
                for (int q = 0; q < F4; q++) {
                    const float4 v = old[(u32)(i * F4 + q) * (u32)C::THREADS];
                    f[4 * q] = v.x, f[4 * q + 1] = v.y, f[4 * q + 2] = v.z, f[4 * q + 3] = v.w;
                }
                Codes<C::EPV> o;
                if (fast) encode_vec<C::EPV, C::CVT_, C::QUOT_STEPS>(f, s, inv, o);
                else encode_vec<C::EPV, C::CVT_, 0>(f, s, inv, o);
                const u32 j = k2 * (u32)C::CHUNK_V + (u32)(i * C::THREADS) + tid;
                if (j < sh.nv) store_codes<C::EPV, C::CACHE_>(ch + (u64)j * C::EPV, o.w);
            }
            advance(h2, k2);
        }
    };
    load(a0, 0u);
    for (u32 r = 0; r < steps; r += 2u) {
        step(a0, a1, r);
        if (r + 1u >= steps) break;
        step(a1, a0, r + 1u);
    }
    /* the last block to finish (every other has read its slots) zeroes them for the next launch */
    __syncthreads();
    if (tid == 0) s_last = atom_add_acq_rel(&ctl[1], 1u) == gridDim.x - 1u;
    __syncthreads();
    if (!s_last) return;
    for (u32 i = tid; i < chunks; i += (u32)C::THREADS) slot[i] = 0u;
    if (tid == 0) ctl[1] = 0u;
}

/* ---- mode 8: piped ---- */

#if EVO_QUANT_ARCH >= 900
EVO_DEV void mbar_arrive(u64 *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
#else
EVO_DEV void mbar_arrive(u64 *) {}
#endif
/* The consumer warps' own barrier (the producer warp never joins). */
EVO_DEV void consumers_sync(u32 threads) { asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory"); }

/* Mode piped: part u of the heads: head u / parts, bytes [beg, beg + bytes) of it (share u % parts of
 * EVO_QUANT_STAGED_SLICE(head bytes, parts) bytes, whole rows), in nsub chunks of CB bytes. */
template <class C> struct Part {
    static constexpr u32 CB = (u32)C::CHUNK_V * (u32)C::VEC_;
    u32 h, nsub, bytes;
    u64 beg;
    EVO_DEV Part(u32 u, u32 parts, u64 head_bytes, u64 slice)
    {
        h = u / parts;
        const u64 b0 = (u64)(u % parts) * slice;
        beg = b0 < head_bytes ? b0 : head_bytes;
        bytes = (u32)(head_bytes - beg < slice ? head_bytes - beg : slice);
        nsub = (bytes + CB - 1u) / CB;
    }
    EVO_DEV u32 len(u32 k) const { return bytes - k * CB < CB ? bytes - k * CB : CB; } /* of chunk k */
};

/* gridDim.x blocks, all resident (cooperative launch), of WARPS consumer warps and a producer warp. Every head is
 * cut into p.parts parts (Part) and part u is block u % grid's, in turn u / grid. One lane of the producer warp
 * streams the block's parts, chunk by chunk (CHUNK_V vectors), through a ring of p.stages buffers by bulk copies,
 * refilling each buffer as soon as the consumers release it. The consumers take a part's absmax from the ring (its
 * chunks stay there); thread 0 publishes it in its head's max word (atomic max) and count (release add) and waits
 * for the count to reach p.parts; then the consumers encode the part from the ring, releasing each buffer once
 * encoded. A part fits the ring with a chunk to spare, so the next part loads while a head completes and its codes
 * are written: DRAM is read once and keeps streaming. The parts of a head are neighbours in the same or the next
 * turn of the grid and parts <= grid: a block waits only for parts of its turn or the next, whose blocks have
 * finished their earlier turns, so the lowest unpublished part can always be published. The last of a head's parts
 * to read its max resets the head's words for the next launch. */
template <class C> EVO_DEV void piped(const evo_quant_params &p)
{
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ u64 full[EVO_QUANT_PIPED_MAX_STAGES], empty[EVO_QUANT_PIPED_MAX_STAGES];
    __shared__ float red[2][C::WARPS_], s_scale[2], s_inv[2];
    Shape<C> sh(p);
    const HeadWords hw(sh.mode_scratch, sh.n_heads);
    const u32 tid = threadIdx.x, stages = (u32)p.stages, parts = (u32)p.parts, grid = gridDim.x, b = blockIdx.x;
    const u32 cb = (u32)C::CHUNK_V * (u32)C::VEC_, units = sh.n_heads * parts;
    const u64 head_bytes = (u64)sh.nv * (u32)C::VEC_, slice = EVO_QUANT_STAGED_SLICE(head_bytes, (u64)parts);
    u32 dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    require(parts >= 1u && parts <= (u32)EVO_QUANT_PIPED_MAX_PARTS && (parts & (parts - 1u)) == 0 && gridDim.y == 1 &&
            grid <= units && grid >= parts && blockDim.x == (u32)C::THREADS + 32u &&
            stages <= EVO_QUANT_PIPED_MAX_STAGES && (u64)stages * cb <= dyn && (slice + cb - 1u) / cb < stages);
    const u32 turns = b < units ? (units - b + grid - 1u) / grid : 0u;
    if (tid == 0) {
        for (u32 i = 0; i < stages; i++) mbar_init(&full[i], 1u), mbar_init(&empty[i], (u32)C::WARPS_);
        fence_barrier_init();
    }
    __syncthreads(); /* the barriers are initialized before anyone waits on them */

    if (tid >= (u32)C::THREADS) { /* the producer warp */
        if (tid != (u32)C::THREADS) return;
        const u64 pol = make_policy<C::HINT_LAST>();
        u32 q = 0;
        for (u32 t = 0; t < turns; t++) {
            const Part<C> pt(b + t * grid, parts, head_bytes, slice);
            const unsigned char *src = sh.head_src(pt.h) + pt.beg;
            for (u32 k = 0; k < pt.nsub; k++, q++) {
                const u32 st = q % stages, len = pt.len(k);
                if (q >= stages) {
                    while (!mbar_done(&empty[st], (q / stages - 1u) & 1u)) {
                    }
                    fence_proxy_async();
                }
                mbar_expect_tx(&full[st], len);
                bulk_load<C::HINT_LAST>(ring + (u64)st * cb, src + (u64)k * cb, len, &full[st], pol);
            }
        }
        return;
    }
    const u32 smask = thread_signs<C>(), warp = tid >> 5, lane = tid & 31u;
    u32 q = 0;
    for (u32 t = 0; t < turns; t++) {
        const Part<C> pt(b + t * grid, parts, head_bytes, slice);
        const u32 par = t & 1u;
        float m = 0.0f;
        for (u32 k = 0; k < pt.nsub; k++) {
            const u32 st = (q + k) % stages;
            while (!mbar_done(&full[st], ((q + k) / stages) & 1u)) {
            }
            m = smem_chunk_absmax<C>(ring + (u64)st * cb, pt.len(k) / (u32)C::VEC_, smask, m);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) red[par][warp] = m;
        consumers_sync((u32)C::THREADS);
        if (tid == 0) { /* publish, then wait for the head's other parts */
            m = red[par][0];
#pragma unroll
            for (int w = 1; w < C::WARPS_; w++) m = fmaxf(m, red[par][w]);
            hw.publish(pt.h, m);
            while (ld_acquire(&hw.count[pt.h]) < parts) __nanosleep(64u);
            const float sc = scale_of(__uint_as_float(ld_relaxed(&hw.max[pt.h])));
            hw.read_done(pt.h, parts);
            if (pt.beg == 0) p.scales[pt.h] = sc;
            s_scale[par] = sc, s_inv[par] = __frcp_rn(sc); /* the divisions once, by one thread */
        }
        consumers_sync((u32)C::THREADS);
        const float s = s_scale[par], inv = s_inv[par];
        const bool fast = scale_fast(s);
        unsigned char *ch = p.codes + (u64)pt.h * sh.head_elems + pt.beg / (u32)C::EB;
        for (u32 k = 0; k < pt.nsub; k++, q++) {
            const u32 st = q % stages;
            smem_chunk_encode<C>(ring + (u64)st * cb, pt.len(k) / (u32)C::VEC_, smask, s, inv,
                                 ch + (u64)k * (u32)C::CHUNK_V * (u32)C::EPV, fast);
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[st]);
        }
    }
}

} // namespace evoq

#define EVO_QUANT_TPARAMS                                                                                        \
    int D, int IN_BF16, int ROTATE, int VEC, int WARPS, int MODE, int CLUSTER, int KEEP, int UNROLL, int ITERS,   \
        int CVT, int CACHE, int FUSED_ROT
#define EVO_QUANT_TARGS D, IN_BF16, ROTATE, VEC, WARPS, MODE, CLUSTER, KEEP, UNROLL, ITERS, CVT, CACHE, FUSED_ROT

/* The main kernel of every plan: mode 0's encode pass, or the one kernel of modes 1 to 8. Modes 6 and 7 are
 * compiled for EVO_QUANT_STREAM_WARPS_PER_SM and EVO_QUANT_LOCAL_WARPS_PER_SM warps per multiprocessor, the
 * residency their plans count on; the other modes have no minimum (0: the compiler's own choice). */
template <EVO_QUANT_TPARAMS>
__global__ void __launch_bounds__(32 * WARPS + (MODE == EVO_QUANT_MODE_PIPED ? 32 : 0),
                                  MODE == EVO_QUANT_MODE_STREAMED && WARPS < EVO_QUANT_STREAM_WARPS_PER_SM
                                                  ? EVO_QUANT_STREAM_WARPS_PER_SM / WARPS
                                              : MODE == EVO_QUANT_MODE_LOCAL && WARPS < EVO_QUANT_LOCAL_WARPS_PER_SM
                                                  ? EVO_QUANT_LOCAL_WARPS_PER_SM / WARPS
                                                  : 0)
    evo_quant(const evo_quant_params p)
{
    typedef evoq::Cfg<EVO_QUANT_TARGS> C;
    if constexpr (MODE == EVO_QUANT_MODE_SPLIT) evoq::split_encode<C>(p);
    else if constexpr (MODE == EVO_QUANT_MODE_CHAINED || MODE == EVO_QUANT_MODE_ORDERED) evoq::chained<C>(p);
    else if constexpr (MODE == EVO_QUANT_MODE_RESIDENT) evoq::resident<C>(p);
    else if constexpr (MODE == EVO_QUANT_MODE_STAGED) evoq::staged_head<C>(p);
    else if constexpr (MODE == EVO_QUANT_MODE_STREAMED) evoq::streamed<C>(p);
    else if constexpr (C::LOCAL_KEEP) {
        if (p.stages) evoq::local_kept<C>(p); /* the plan found room for the kept floats */
        else evoq::local<C>(p);
    } else if constexpr (MODE == EVO_QUANT_MODE_LOCAL) evoq::local<C>(p);
    else if constexpr (MODE == EVO_QUANT_MODE_PIPED) evoq::piped<C>(p);
    else evoq::cluster_head<C>(p);
}

/* Mode 0's first pass: one partial absmax per (chunk, head) into scratch. */
template <EVO_QUANT_TPARAMS>
__global__ void __launch_bounds__(32 * WARPS) evo_quant_absmax(const evo_quant_params p)
{
    typedef evoq::Cfg<EVO_QUANT_TARGS> C;
    static_assert(MODE == EVO_QUANT_MODE_SPLIT, "evo_quant_absmax belongs to mode 0");
    evoq::split_absmax<C>(p);
}

/* ROTATE with FUSED_ROT = 0: rotated rows as floats into the start of scratch; one thread per VEC input bytes. */
template <EVO_QUANT_TPARAMS>
__global__ void __launch_bounds__(32 * WARPS) evo_quant_rotate(const evo_quant_params p)
{
    using namespace evoq;
    typedef Cfg<EVO_QUANT_TARGS> C;
    static_assert(ROTATE == 1 && FUSED_ROT == 0, "evo_quant_rotate belongs to ROTATE = 1, FUSED_ROT = 0");
    constexpr int EPV = C::IN_EPV;
    const u32 n_heads = (u32)p.batch * (u32)p.heads;
    const u64 n = (u64)n_heads * (u32)p.seq * (u32)D, nv = n / EPV;
    require(p.head_dim == D && p.in_dtype == IN_BF16 && p.rotate == 1 && p.scratch != 0 &&
            p.scratch_bytes >= evo_quant_rot_bytes(n) && (u64)gridDim.x == (nv + C::THREADS - 1) / C::THREADS);
    const u64 j = (u64)blockIdx.x * C::THREADS + threadIdx.x;
    const u64 pol = make_policy<C::HINT_LAST>();
    Raw<VEC> r;
    const unsigned char *xb = (const unsigned char *)p.x; /* the input holding vector j, and j within it */
    u64 jx = j;
    if (p.x_heads > 0) {
        const u64 per = (u64)(u32)p.x_heads * (u32)p.seq * (u32)D / EPV;
        if (jx >= per) jx -= per, xb = (const unsigned char *)p.x1;
        if (jx >= per) jx -= per, xb = (const unsigned char *)p.x2;
    }
    if (j < nv) load_raw<VEC, C::HINT_LAST>(r, xb + jx * VEC, pol);
    else zero_raw(r);
    float f[EPV];
    to_float<IN_BF16>(r, f);
    rotate<D>(f, sign_bits<EPV>((threadIdx.x % (u32)(D / EPV)) * (u32)EPV), threadIdx.x & 31u);
    if (j < nv) {
        float4 *out = (float4 *)p.scratch + j * (EPV / 4);
#pragma unroll
        for (int i = 0; i < EPV / 4; i++) out[i] = make_float4(f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]);
    }
}
