/* quantize_fp8-sm_90-4a2ad3fb.cu — an FP8 quantizer found by evo, specialised to one genome.
 * fp16/bf16 X [B, H, S, D] -> e4m3 codes + one float scale per (batch, head), optionally rotated
 * first (incoherent processing); the rule of evo_quantize_abi.h, bit for bit. Standalone: plain nvcc
 * builds it, without evo, its templates folder or -I.
 *
 *   nvcc -arch=sm_90 -O3 -c quantize_fp8-sm_90-4a2ad3fb.cu                                   the launcher, to link
 *   nvcc -arch=sm_90 -O3 -shared -Xcompiler -fPIC quantize_fp8-sm_90-4a2ad3fb.cu -o libevo_quant.so    for ctypes
 *   nvcc -arch=sm_90 -O3 -DEVO_SELFTEST quantize_fp8-sm_90-4a2ad3fb.cu -o selftest && ./selftest     check and time
 *
 * Launcher (extern "C"; the contracts are in the launcher section below):
 *   unsigned long long evo_quantize_scratch_bytes(int in_dtype, int rotate, int batch, int heads,
 *                                                 int seq, int head_dim);
 *   int evo_quantize_forward(const void *x, int in_dtype, int rotate, void *codes, float *scales,
 *                            int batch, int heads, int seq, int head_dim, void *scratch,
 *                            unsigned long long scratch_bytes, cudaStream_t stream);
 *   const char *evo_quantize_genome(void);
 *
 * Provenance
 *   genome        VEC=32,WARPS=8,MODE=3,CLUSTER=1,KEEP=0,UNROLL=4,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=4
 *   key           4a2ad3fb4de7838596502a57920787fb92afe3699da4f5727b83627adfb8de5e (candidate 5)
 *   task          quantize_fp8, arch sm_90
 *   template      quantize_fp8.cu, SHA-256 8bb95342fd412b2416d4f468d04dadf1508fa5a1367c2a406a1f92bb9d7fb966
 *   compiled by   NVRTC 13.0 with -std=c++17 -DNDEBUG (nvcc needs none of these)
 *   key check     the compile key recomputed at export differs (NVRTC build or ABI header of the exporting evo)
 *   measured on   NVIDIA H200, driver 13000, 2026-11-28T21:22:58Z, run 1 generation 0, by evo 0.1.0
 *   config        configs/quantize.yaml, as stored with run 1
 *   exported      2026-11-28T21:24:55Z by evo 0.1.0
 *   accuracy      class exact (gate version 1)
 *   fitness       1.227x: geometric mean over the shapes of baseline time / this kernel's time
 *
 *   shape                        median µs     p10..p90 µs     GB/s  speedup    rel-L2   max-abs e2e rel-L2
 *   big(4,16,4096,128)               36.08    35.39..37.28   2790.0   1.282x  0.00e+00  0.00e+00   0.00e+00
 *   long64(1,16,16384,64)            22.27    21.79..23.42   2259.9   1.141x  0.00e+00  0.00e+00   0.00e+00
 *   stress(4,8,2048,64)               7.23      6.88..7.58   1739.9   1.396x  0.00e+00  0.00e+00   0.00e+00
 *   big_rot(4,16,4096,128) rotate     63.54    63.30..64.16   1584.4   1.096x  0.00e+00  0.00e+00   0.00e+00
 *   big_bf16(4,16,4096,128) bf16     36.22    35.52..37.25   2778.9   1.241x  0.00e+00  0.00e+00   0.00e+00
 *   errors: codes and scales against the reference quantizer, bit for bit (rel-L2: the fraction of codes that differ);
 *   worst over the timed shapes: rel-L2 0.00e+00, max-abs 0.00e+00; over all 75 correctness cases: rel-L2 0.00e+00
 *   tolerances: rel-L2 <= 1e-09; an element passes when |out - ref| <= 0.02 x RMS(ref) + 0.02 x |ref|;
 *   fraction of elements allowed to fail that: 0
 */

#include <cuda_runtime.h>

/* ==== evo_quantize_abi.h, verbatim ==== */
/* evo_quantize_abi.h — the ABI of the FP8 quantizer kernels (task quantize_fp8): parameters, knobs, the fixed
 * rotation (sign vector and 1/sqrt(D) constant) and the launch plan of every genome. Included by the CUDA side
 * (NVRTC or nvcc) and by C (the engine, the CPU reference quantize_ref.c, tools/quantize_bench.cu), so that all of
 * them agree on the layout, the rotation and the launch rules.
 *
 * X [B, H, S, D] fp16 or bf16, contiguous -> codes [B, H, S, D] OCP e4m3fn + one float scale per (batch, head),
 * heads numbered b*H + h. Per head: scale = absmax / 448 (1 for an all-zero head; NaN elements ignored), code =
 * e4m3(x / scale) with the quotient rounded to nearest even in float, saturating at +-448 (the rule of
 * evo_ref_quantize in tasks/attention_fp8/attn_ref.h). With rotate = 1 every row of D elements is first replaced by
 * y = H·(s∘x)/sqrt(D) (H the Walsh–Hadamard matrix, s the sign vector below), computed in float in a fixed order
 * (quantize_ref.h, "rotation"), and absmax and codes are taken over y. M = H·diag(s)/sqrt(D) is orthogonal and
 * the same for Q and K, so (Q·M)(K·M)ᵀ = Q·Kᵀ.
 *
 * Launch: evo_quant_plan_make() turns (knobs, shape, arch, SM count) into up to three launches, in order, on one
 * stream, plus the device scratch they need. The rules it encodes (tasks/quantize_fp8/quantize_fp8.cu has them in
 * prose at the top) are the only way the kernels may be launched; the kernels trap on a launch that breaks them.
 */
#ifndef EVO_QUANTIZE_ABI_H
#define EVO_QUANTIZE_ABI_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EVO_QDPTR(T) T *
#define EVO_QUANT_HD __host__ __device__
#else
#define EVO_QDPTR(T) unsigned long long /* a CUdeviceptr: same size and alignment as a device pointer */
#define EVO_QUANT_HD
#endif

#define EVO_QUANT_IN_F16 0
#define EVO_QUANT_IN_BF16 1
#define EVO_QUANT_IN_F32 2 /* internal: the rows written by the separate rotation pass (fused_rot = 0) */

#define EVO_QUANT_MODE_SPLIT 0   /* absmax kernel writes a partial max per chunk; the encode kernel reduces them */
#define EVO_QUANT_MODE_CHAINED 1 /* one kernel; block t takes the absmax of chunk t and encodes chunk t - lag */
#define EVO_QUANT_MODE_CLUSTER 2 /* one kernel; a cluster of CTAs per head, absmax through distributed smem */
#define EVO_QUANT_MODE_ORDERED 3 /* mode 1 with blockIdx.x as the ticket: relies on blocks starting in index order */
#define EVO_QUANT_MODE_RESIDENT \
    4 /* a grid of blocks all resident at once (cooperative launch): chunks stream through
                                     rings of shared memory by bulk copies, each read from DRAM once; a chunk is
                                     encoded from shared memory slack rounds after its absmax was published (sm_90) */
#define EVO_QUANT_MODE_STAGED \
    5 /* mode cluster with each CTA's share of the head staged in shared memory by bulk
                                     copies: DRAM read once, several CTAs per SM (sm_90) */
#define EVO_QUANT_MODE_STREAMED \
    6 /* a resident grid (cooperative launch) in which every warp streams its own chunks
                                     through its own shared-memory ring by bulk copies, DRAM read once; a chunk's
                                     absmax goes into its head's max and count words, and the chunk is encoded slack
                                     rounds later once the count is complete; no block-wide barrier (sm_90) */
#define EVO_QUANT_MODE_LOCAL \
    7 /* mode ordered's flow in a grid the size of the resident blocks (a plain launch:
                                     a thread that waits too long for a chunk's absmax computes it itself; cooperative
                                     with a fused rotation) where a block reads again only chunks it read itself, lag
                                     rounds before: from its SM's L1 */
#define EVO_QUANT_MODE_PIPED \
    8                                   /* a resident grid (cooperative launch) over parts of heads (parts per head from
                                     the plan): part u is block u % grid's; a producer warp streams the block's
                                     parts through a shared-memory ring by bulk copies (DRAM read once), the
                                     consumer warps take a part's absmax from the ring, publish it in its head's max
                                     and count words, and encode the part from the ring once the count is complete,
                                     while the next parts load behind it (sm_90) */
#define EVO_QUANT_MAX_STAGES 8          /* modes resident and streamed: most chunks in a shared-memory ring */
#define EVO_QUANT_PIPED_MAX_STAGES 32   /* mode piped: most chunks in a block's ring */
#define EVO_QUANT_PIPED_MAX_PARTS 64ull /* mode piped: most parts per head */
/* Warps per multiprocessor that modes streamed and local are compiled for (the kernel's launch bound: at least
 * this many / WARPS blocks, one block when WARPS is larger) and their plans' grids count on (all resident). */
#define EVO_QUANT_STREAM_WARPS_PER_SM 32 /* 64 registers */
#define EVO_QUANT_LOCAL_WARPS_PER_SM 24  /* 85 registers: two chunks in flight */
/* Mode staged: the bytes of a head's input each CTA of a cluster stages, an equal share rounded up to 1 KiB (whole
 * rows of any head dim, 16-byte aligned for the bulk copies). */
#define EVO_QUANT_STAGED_SLICE(head_bytes, cluster) \
    ((((head_bytes) + (cluster)-1ull) / (cluster) + 1023ull) / 1024ull * 1024ull)

/* Kernels of a plan: the template kernels of quantize_fp8.cu with the genome's template arguments. */
#define EVO_QUANT_K_ROTATE 0 /* evo_quant_rotate<D, IN_BF16, VEC, WARPS, CACHE> */
#define EVO_QUANT_K_ABSMAX 1 /* evo_quant_absmax<D, IN_BF16, ROTATE, VEC, ..., FUSED_ROT> (all 13 arguments) */
#define EVO_QUANT_K_MAIN 2   /* evo_quant<D, IN_BF16, ROTATE, VEC, ..., FUSED_ROT> */

typedef struct {
    EVO_QDPTR(const void) x;        /* [B, H, S, D] fp16 or bf16 bits */
    EVO_QDPTR(unsigned char) codes; /* [B, H, S, D] e4m3 */
    EVO_QDPTR(float) scales;        /* [B*H] */
    EVO_QDPTR(void) scratch;        /* plan.scratch_bytes of device memory (256-byte aligned); NULL when 0 */
    unsigned long long scratch_bytes;
    int batch, heads, seq, head_dim;
    int in_dtype;  /* EVO_QUANT_IN_F16 or EVO_QUANT_IN_BF16 */
    int rotate;    /* 1: incoherent processing (the rotation above) */
    int chain_lag; /* modes chained, ordered, resident, streamed and local: plan.chain_lag; 0 otherwise */
    int stages;    /* modes resident, streamed and piped: plan.stages (chunks in each shared-memory ring); 0
                      otherwise */
    int parts;     /* mode piped: plan.parts (parts per head); 0 otherwise */
    /* Several inputs in one launch (the exported evo_quantize_forward_multi): the heads above are those of up to
     * three tensors of x_heads heads each (batch counts them all: their batch times their number); head h reads x,
     * x1 or x2 as h / x_heads is 0, 1 or 2, and codes and scales are one array over all heads. x_heads 0: x alone. */
    EVO_QDPTR(const void) x1;
    EVO_QDPTR(const void) x2;
    int x_heads;
} evo_quant_params;

/* The genome. Template order of evo_quant: D, IN_BF16, ROTATE, then vec .. fused_rot as listed; slack is a
 * launch-only knob (mode chained). quantize_fp8.cu's top comment says what each trades. */
typedef struct {
    int vec;       /* 8, 16, 32: input bytes per thread access */
    int warps;     /* 2, 4, 8, 16, 32: warps per block (mode piped: consumer warps, at most 16; a producer warp
                      more) */
    int mode;      /* EVO_QUANT_MODE_* */
    int cluster;   /* 1, 2, 4, 8, 16: CTAs per head (modes cluster and staged); mode piped: the fewest parts per
                      head (the plan doubles them until a part fits a block's ring and the parts fill the grid); 1
                      otherwise */
    int keep;      /* 0, 1, 2, 4, 8, 16: vectors per thread held in registers between the passes (mode cluster) */
    int unroll;    /* 1, 2, 4, 8: vectors per thread loaded before the first is used */
    int iters;     /* 1, 2, 4, 8: load groups per chunk (modes split, chained, resident, streamed) */
    int cvt;       /* 0: e4m3 encoded in integer code; 1: cvt.rn.satfinite.e4m3x2.f32 (sm_89+) */
    int cache;     /* 0: plain loads and stores; 1: L2 evict_last on the first read, evict_first on the last,
                      streaming stores */
    int fused_rot; /* 1: rotation inside the quantizer; 0: a separate pass writes rotated float rows to scratch */
    int slack;     /* 0, 1, 2, 4, 8: modes chained and ordered: lag = max(chunks per head - 1, min(slack * SMs,
                      chunks)); modes resident, streamed and local: rounds of the grid between a chunk's absmax
                      and its encoding (1+) */
} evo_quant_knobs;

typedef struct {
    int kernel;      /* EVO_QUANT_K_* */
    unsigned grid_x; /* grid = (grid_x, grid_y, 1) */
    unsigned grid_y;
    unsigned block;     /* threads = 32 * warps */
    unsigned cluster_x; /* cluster dims (cluster_x, 1, 1) as a launch attribute; 1: launch without a cluster */
    int nonportable;    /* 1: cluster_x = 16 needs the kernel attribute NonPortableClusterSizeAllowed = 1 */
    unsigned smem;   /* dynamic shared memory bytes (modes resident, staged; 0 otherwise): above 48 KiB the kernel needs
                           MaxDynamicSharedMemorySize set to it */
    int cooperative; /* 1: every block must be resident at once: a cooperative launch (launch attribute), which
                           fails instead of deadlocking when the device cannot hold the grid */
} evo_quant_launch;

typedef struct {
    int n_launches; /* 1 to 3, launched in this order on one stream */
    evo_quant_launch launch[3];
    unsigned long long scratch_bytes; /* device scratch the launches need (0: none) */
    int zero_scratch_once;            /* 1: fill the scratch with zeros once after allocating it; every launch of the
                                   plan leaves it zeroed again (modes chained and ordered) */
    int chain_lag;                    /* evo_quant_params.chain_lag */
    int stages;                       /* evo_quant_params.stages */
    int parts;                        /* evo_quant_params.parts */
    unsigned long long chunk_elems, chunks_per_head;
} evo_quant_plan;

/* ---- the rotation's constants, shared by the CPU reference and the kernels ---- */

#define EVO_QUANT_SIGN_SEED 0x51554e5446503845ull /* "QUNTFP8E" */

/* Sign s_i (i < D) is -1 when bit (i mod 64) of word i / 64 is set: word w = splitmix64 finalizer of
 * (EVO_QUANT_SIGN_SEED + (w + 1) * 0x9e3779b97f4a7c15). */
EVO_QUANT_HD static inline unsigned long long evo_quant_sign_word(unsigned w)
{
    unsigned long long z = EVO_QUANT_SIGN_SEED + (unsigned long long)(w + 1u) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 1/sqrt(D) rounded to nearest float, D a power of two from 16 to 256 (0 otherwise). */
EVO_QUANT_HD static inline float evo_quant_rsqrt_d(int d)
{
    switch (d) {
        case 16: return 0x1p-2f;
        case 32: return 0x1.6a09e6p-3f;
        case 64: return 0x1p-3f;
        case 128: return 0x1.6a09e6p-4f;
        case 256: return 0x1p-4f;
        default: return 0.0f;
    }
}

/* 4 bytes per element of the rotated-rows buffer at the start of the scratch (fused_rot = 0 with rotate), rounded
 * up to 256. */
EVO_QUANT_HD static inline unsigned long long evo_quant_rot_bytes(unsigned long long n_elems)
{
    return (n_elems * 4ull + 255ull) & ~255ull;
}

/* ---- plan (host code: not seen by NVRTC) ---- */
#if !defined(__CUDACC_RTC__)

static inline int evo_quant_is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/* Shared memory on arch (80 for sm_80): what one block may take dynamically (the opt-in limit less 1 KiB for the
 * kernels' static shared memory) and what a multiprocessor holds for its blocks. */
static inline unsigned evo_quant_smem_budget(int arch)
{
    unsigned kib = arch >= 90 && arch < 120 ? 227u : (arch == 80 || arch == 87) ? 163u : 99u;
    return (kib - 1u) * 1024u;
}
static inline unsigned evo_quant_smem_per_sm(int arch) { return evo_quant_smem_budget(arch) + 2048u; }

/* Mode resident: bytes of one chunk (every thread loads unroll * iters vectors of vec bytes). */
static inline unsigned long long evo_quant_chunk_bytes(const evo_quant_knobs *k)
{
    return 32ull * (unsigned long long)(k->warps * k->unroll * k->iters * k->vec);
}

/* Mode resident: the chunks of each block's ring when bps blocks share a multiprocessor (2 KiB more per block for
 * static and reserved shared memory), at most EVO_QUANT_MAX_STAGES. */
static inline int evo_quant_ring(const evo_quant_knobs *k, int arch, unsigned long long bps)
{
    unsigned long long share = evo_quant_smem_per_sm(arch) / bps - 2048ull, s;
    if (share > evo_quant_smem_budget(arch)) share = evo_quant_smem_budget(arch);
    s = share / evo_quant_chunk_bytes(k);
    return s > EVO_QUANT_MAX_STAGES ? EVO_QUANT_MAX_STAGES : (int)s;
}

/* Mode resident: the most blocks per multiprocessor whose rings hold `least` chunks each, at most 1024 threads per
 * multiprocessor (registers for 64 each); 1 when not even one block's does (then its ring is short). */
static inline int evo_quant_blocks_per_sm(const evo_quant_knobs *k, int arch, int least)
{
    unsigned long long bps = 1024ull / (32ull * (unsigned long long)k->warps);
    while (bps > 1 && evo_quant_ring(k, arch, bps) < least) bps--;
    return bps < 1 ? 1 : (int)bps;
}

/* Mode streamed: bytes of one warp's chunk, and its ring's chunks (at most EVO_QUANT_MAX_STAGES) when bps blocks
 * share a multiprocessor: each chunk of each warp takes its bytes and an 8-byte mbarrier of dynamic shared memory. */
static inline unsigned long long evo_quant_warp_chunk_bytes(const evo_quant_knobs *k)
{
    return 32ull * (unsigned long long)(k->unroll * k->iters * k->vec);
}
static inline int evo_quant_warp_ring(const evo_quant_knobs *k, int arch, unsigned long long bps)
{
    unsigned long long share = evo_quant_smem_per_sm(arch) / bps - 2048ull, s;
    if (share > evo_quant_smem_budget(arch)) share = evo_quant_smem_budget(arch);
    s = share / ((unsigned long long)k->warps * (evo_quant_warp_chunk_bytes(k) + 8ull));
    return s > EVO_QUANT_MAX_STAGES ? EVO_QUANT_MAX_STAGES : (int)s;
}

/* Appends the next launch to plan p: kernel, grid (grid_x, 1, 1), block `threads`; the caller sets what else it needs
 * (the plan starts every launch with no cluster, no dynamic shared memory, not cooperative). */
static inline evo_quant_launch *evo_quant_add_launch(evo_quant_plan *p, int kernel, unsigned long long grid_x,
                                                     unsigned long long threads)
{
    evo_quant_launch *l = &p->launch[p->n_launches++];
    l->kernel = kernel;
    l->grid_x = (unsigned)grid_x;
    l->block = (unsigned)threads;
    return l;
}

/* Mode piped: the chunks of the largest part when a head of head_bytes is cut into `parts` (EVO_QUANT_STAGED_SLICE). */
static inline unsigned long long evo_quant_part_chunks(const evo_quant_knobs *k, unsigned long long head_bytes,
                                                       unsigned long long parts)
{
    return (EVO_QUANT_STAGED_SLICE(head_bytes, parts) + evo_quant_chunk_bytes(k) - 1ull) / evo_quant_chunk_bytes(k);
}

/* Mode piped, for n_heads heads of head_bytes: parts per head (k->cluster doubled, at most 64, while a part and one
 * chunk more do not fit a block's ring, then, up to 16, while the parts are fewer than the grid's blocks), the blocks
 * per SM (shared memory for a ring of twice a part's chunks, 2048 threads, registers for 96 each), the ring's stages
 * (the block's share of the SM's shared memory: the next parts load while a head completes and its codes are
 * written) and the cooperative launch, appended to p. -1 when no part fits. */
static inline int evo_quant_piped(const evo_quant_knobs *k, unsigned long long head_bytes, unsigned long long n_heads,
                                  int arch, int num_sms, evo_quant_plan *p)
{
    const unsigned long long cb = evo_quant_chunk_bytes(k), threads = 32ull * (unsigned long long)k->warps + 32ull;
    /* static and reserved shared memory of a block: up to 2 KiB, 1 KiB more than the budget's */
    const unsigned long long budget = evo_quant_smem_budget(arch) - 1024ull;
    unsigned long long most = budget / cb, parts = (unsigned long long)k->cluster, ns, stages = 0, bps = 0, grid;
    if (most > EVO_QUANT_PIPED_MAX_STAGES) most = EVO_QUANT_PIPED_MAX_STAGES;
    while (parts < EVO_QUANT_PIPED_MAX_PARTS && evo_quant_part_chunks(k, head_bytes, parts) + 1ull > most)
        parts *= 2ull;
    for (;; parts *= 2ull) {
        ns = evo_quant_part_chunks(k, head_bytes, parts);
        if (ns + 1ull > most) return -1;
        stages = 2ull * ns < most ? 2ull * ns : most;
        if (stages < ns + 1ull) stages = ns + 1ull;
        bps = evo_quant_smem_per_sm(arch) / (stages * cb + 3072ull);
        if (bps > 2048ull / threads) bps = 2048ull / threads;
        if (bps > 65536ull / (96ull * threads)) bps = 65536ull / (96ull * threads);
        if (bps < 1ull) bps = 1ull;
        if (parts >= 16ull || n_heads * parts >= (unsigned long long)num_sms * bps) break;
    }
    if (parts > (unsigned long long)num_sms * bps) return -1; /* a block would hold two parts of one head */
    {
        unsigned long long share = evo_quant_smem_per_sm(arch) / bps - 3072ull, fill;
        if (share > budget) share = budget;
        fill = share / cb;
        if (fill > EVO_QUANT_PIPED_MAX_STAGES) fill = EVO_QUANT_PIPED_MAX_STAGES;
        if (fill > stages) stages = fill;
    }
    grid = (unsigned long long)num_sms * bps;
    if (grid > n_heads * parts) grid = n_heads * parts;
    evo_quant_launch *l = evo_quant_add_launch(p, EVO_QUANT_K_MAIN, grid, threads);
    l->smem = (unsigned)(stages * cb);
    l->cooperative = 1;
    p->stages = (int)stages;
    p->parts = (int)parts;
    return 0;
}

/* Elements per vector: vec bytes of fp16/bf16, or of float for the main kernels after a separate rotation. */
static inline int evo_quant_epv(const evo_quant_knobs *k, int rotate)
{
    return (rotate && !k->fused_rot) ? k->vec / 4 : k->vec / 2;
}

/* Copies msg into why (why_size bytes, NUL-terminated, cut to fit) and returns -1: the refusals below. */
static inline int evo_quant_refuse(const char *msg, char *why, unsigned long why_size)
{
    if (why && why_size) {
        unsigned long i = 0;
        for (; msg[i] && i + 1 < why_size; i++) why[i] = msg[i];
        why[i] = 0;
    }
    return -1;
}

/* Genome checks that need no shape: 0 when the genome can be built for (head_dim, rotate, arch), -1 with the
 * reason in why (arch as 80, 89, 90). The template's static_asserts state the same. */
static inline int evo_quant_check(const evo_quant_knobs *k, int head_dim, int rotate, int arch, char *why,
                                  unsigned long why_size)
{
#define EVO_QUANT_REJECT(msg) return evo_quant_refuse((msg), why, why_size)
    if (!evo_quant_is_pow2(head_dim) || head_dim < 32 || head_dim > 256)
        EVO_QUANT_REJECT("head_dim must be 32, 64, 128 or 256");
    if (k->vec != 8 && k->vec != 16 && k->vec != 32) EVO_QUANT_REJECT("vec must be 8, 16 or 32");
    if (!evo_quant_is_pow2(k->warps) || k->warps < 2 || k->warps > 32)
        EVO_QUANT_REJECT("warps must be 2..32, a power of two");
    if (k->mode < 0 || k->mode > 8) EVO_QUANT_REJECT("mode must be 0, 1, 2, 3, 4, 5, 6, 7 or 8");
    if (!evo_quant_is_pow2(k->cluster) || k->cluster > 16) EVO_QUANT_REJECT("cluster must be 1, 2, 4, 8 or 16");
    if (k->mode != EVO_QUANT_MODE_CLUSTER && k->mode != EVO_QUANT_MODE_STAGED && k->mode != EVO_QUANT_MODE_PIPED &&
        (k->cluster != 1 || k->keep != 0))
        EVO_QUANT_REJECT("cluster applies to modes 2, 5 and 8, keep to mode 2 only (1 and 0 otherwise)");
    if (k->mode == EVO_QUANT_MODE_PIPED) {
        if (arch < 90) EVO_QUANT_REJECT("mode 8 (piped) needs sm_90 (clusters, bulk copies into shared memory)");
        if (k->keep != 0) EVO_QUANT_REJECT("mode 8 (piped): keep must be 0");
        if (k->warps > 16) EVO_QUANT_REJECT("mode 8 (piped): at most 16 consumer warps (a producer warp more)");
        if (evo_quant_chunk_bytes(k) * 2ull > evo_quant_smem_budget(arch))
            EVO_QUANT_REJECT("mode 8 (piped): two chunks (32 * warps * unroll * iters * vec bytes each) must fit in "
                             "the shared memory of a block");
    }
    if (k->mode == EVO_QUANT_MODE_STAGED && k->keep != 0) EVO_QUANT_REJECT("mode 5 (staged): keep must be 0");
    if (k->mode == EVO_QUANT_MODE_STAGED && arch < 90)
        EVO_QUANT_REJECT("mode 5 (staged) needs sm_90 (bulk copies into shared memory)");
    if (k->cluster > 1 && arch < 90) EVO_QUANT_REJECT("thread-block clusters need sm_90");
    if (k->keep != 0 && (!evo_quant_is_pow2(k->keep) || k->keep > 16))
        EVO_QUANT_REJECT("keep must be 0, 1, 2, 4, 8 or 16");
    if (k->keep * (k->vec / 4) > 64) EVO_QUANT_REJECT("keep * vec / 4 must be at most 64 registers");
    if (!evo_quant_is_pow2(k->unroll) || k->unroll > 8) EVO_QUANT_REJECT("unroll must be 1, 2, 4 or 8");
    if (!evo_quant_is_pow2(k->iters) || k->iters > 8) EVO_QUANT_REJECT("iters must be 1, 2, 4 or 8");
    if ((k->mode == EVO_QUANT_MODE_CHAINED || k->mode == EVO_QUANT_MODE_ORDERED || k->mode == EVO_QUANT_MODE_LOCAL) &&
        2 * k->unroll * k->iters * (k->vec / 4) > 64)
        EVO_QUANT_REJECT("modes 1, 3, 7 hold two chunks: 2 * unroll * iters * vec / 4 must be at most 64 registers");
    if (k->cvt != 0 && k->cvt != 1) EVO_QUANT_REJECT("cvt must be 0 or 1");
    if (k->cvt == 1 && arch < 89) EVO_QUANT_REJECT("cvt = 1 (hardware e4m3 conversion) needs sm_89");
    if (k->cache != 0 && k->cache != 1) EVO_QUANT_REJECT("cache must be 0 or 1");
    if (k->fused_rot != 0 && k->fused_rot != 1) EVO_QUANT_REJECT("fused_rot must be 0 or 1");
    if (k->slack != 0 && (!evo_quant_is_pow2(k->slack) || k->slack > 8))
        EVO_QUANT_REJECT("slack must be 0, 1, 2, 4 or 8");
    if (k->mode == EVO_QUANT_MODE_RESIDENT) {
        if (arch < 90) EVO_QUANT_REJECT("mode 4 (resident) needs sm_90 (bulk copies into shared memory)");
        if (k->slack < 1) EVO_QUANT_REJECT("mode 4 (resident): slack must be at least 1 round");
        if (evo_quant_ring(k, arch, 1) < k->slack + 2)
            EVO_QUANT_REJECT("mode 4 (resident): slack + 2 chunks (32 * warps * unroll * iters * vec bytes each) "
                             "must fit in the shared memory of a block");
    }
    if (k->mode == EVO_QUANT_MODE_LOCAL && k->slack < 1)
        EVO_QUANT_REJECT("mode 7 (local): slack must be at least 1 round");
    if (k->mode == EVO_QUANT_MODE_STREAMED) {
        if (arch < 90) EVO_QUANT_REJECT("mode 6 (streamed) needs sm_90 (bulk copies into shared memory)");
        if (k->slack < 1) EVO_QUANT_REJECT("mode 6 (streamed): slack must be at least 1 round");
        if (evo_quant_warp_ring(k, arch, 1) < k->slack + 2)
            EVO_QUANT_REJECT("mode 6 (streamed): slack + 2 warp chunks (32 * unroll * iters * vec bytes each) per "
                             "warp must fit in the shared memory of a block");
    }
    if (rotate && head_dim / (k->vec / 2) > 32)
        EVO_QUANT_REJECT("rotation: head_dim / (vec / 2) must be at most 32 lanes");
    return 0;
#undef EVO_QUANT_REJECT
}

/* The launches and scratch of genome k for one shape. 0 on success, -1 with the reason in why. num_sms: the
 * device's multiprocessor count (mode chained sizes its lag from it, mode resident its grid). */
static inline int evo_quant_plan_make(const evo_quant_knobs *k, int batch, int heads, int seq, int head_dim, int rotate,
                                      int arch, int num_sms, evo_quant_plan *plan, char *why, unsigned long why_size)
{
    if (evo_quant_check(k, head_dim, rotate, arch, why, why_size) != 0) return -1;
    unsigned long long n_heads = (unsigned long long)batch * (unsigned long long)heads;
    unsigned long long head_elems = (unsigned long long)seq * (unsigned long long)head_dim;
    if (batch < 1 || heads < 1 || seq < 1 || n_heads > 65535ull || head_elems >= (1ull << 31) || num_sms < 1) {
        return evo_quant_refuse("shape: need batch, heads, seq >= 1, batch*heads <= 65535, seq*head_dim < 2^31", why,
                                why_size);
    }
    unsigned threads = 32u * (unsigned)k->warps;
    unsigned long long n = n_heads * head_elems;
    unsigned long long rot = (rotate && !k->fused_rot) ? evo_quant_rot_bytes(n) : 0ull;
    int epv = evo_quant_epv(k, rotate);
    evo_quant_plan p;
    p.n_launches = 0;
    p.scratch_bytes = rot;
    p.zero_scratch_once = 0;
    p.chain_lag = 0;
    p.stages = 0;
    p.parts = 0;
    p.chunk_elems = (k->mode == EVO_QUANT_MODE_STREAMED ? 32ull : (unsigned long long)threads) *
                    (unsigned long long)(epv * k->unroll * k->iters);
    p.chunks_per_head = (head_elems + p.chunk_elems - 1) / p.chunk_elems;
    for (int i = 0; i < 3; i++) {
        p.launch[i].kernel = 0;
        p.launch[i].grid_x = p.launch[i].grid_y = p.launch[i].block = p.launch[i].cluster_x = 1;
        p.launch[i].nonportable = 0;
        p.launch[i].smem = 0;
        p.launch[i].cooperative = 0;
    }
    if (rot) { /* one thread per vector of vec input bytes */
        unsigned long long nv = n / (unsigned long long)(k->vec / 2);
        evo_quant_add_launch(&p, EVO_QUANT_K_ROTATE, (nv + threads - 1) / threads, threads);
    }
    if (k->mode == EVO_QUANT_MODE_SPLIT) {
        p.scratch_bytes = rot + ((n_heads * p.chunks_per_head * 4ull + 255ull) & ~255ull);
        for (int kern = EVO_QUANT_K_ABSMAX; kern <= EVO_QUANT_K_MAIN; kern++) {
            evo_quant_add_launch(&p, kern, p.chunks_per_head, threads)->grid_y = (unsigned)n_heads;
        }
    } else if (k->mode == EVO_QUANT_MODE_CHAINED || k->mode == EVO_QUANT_MODE_ORDERED) {
        unsigned long long chunks = n_heads * p.chunks_per_head;
        unsigned long long lag = (unsigned long long)k->slack * (unsigned long long)num_sms;
        if (lag > chunks) lag = chunks;
        if (lag < p.chunks_per_head - 1) lag = p.chunks_per_head - 1;
        p.chain_lag = (int)lag;
        p.scratch_bytes = rot + 16ull + 4ull * chunks;
        p.zero_scratch_once = 1;
        evo_quant_add_launch(&p, EVO_QUANT_K_MAIN, chunks + lag, threads);
    } else if (k->mode == EVO_QUANT_MODE_RESIDENT) {
        /* Chunk c goes to block c % grid in round c / grid. A block encodes the chunk of round r in round r + lag
         * and waits then only for chunks published in rounds up to r + lag, so the lowest block in progress always
         * finds its head complete when lag is at least the rounds a head spans; the ring holds lag + 2 chunks or
         * more (one being loaded ahead). */
        /* the most blocks per SM whose rings hold lag + 2 chunks, lag growing as the grid shrinks */
        const unsigned long long chunks = n_heads * p.chunks_per_head;
        unsigned long long grid = 0, lag = 0;
        for (int bps = evo_quant_blocks_per_sm(k, arch, k->slack + 2); bps >= 1; bps--) {
            grid = (unsigned long long)num_sms * (unsigned long long)bps;
            if (grid > chunks) grid = chunks;
            lag = (p.chunks_per_head + grid - 1) / grid; /* rounds a head spans, at most */
            if (lag < (unsigned long long)k->slack) lag = (unsigned long long)k->slack;
            p.stages = evo_quant_ring(k, arch, (unsigned long long)bps);
            if (lag + 2 <= (unsigned long long)p.stages) break;
        }
        if (lag + 2 > (unsigned long long)p.stages) {
            return evo_quant_refuse("mode 4 (resident): a head spans more rounds of the grid than the shared-memory "
                                    "ring can hold behind its encoding; take larger chunks",
                                    why, why_size);
        }
        p.chain_lag = (int)lag;
        p.scratch_bytes = rot + 16ull + 4ull * chunks;
        p.zero_scratch_once = 1;
        evo_quant_launch *l = evo_quant_add_launch(&p, EVO_QUANT_K_MAIN, grid, threads);
        l->smem = (unsigned)((unsigned long long)p.stages * evo_quant_chunk_bytes(k));
        l->cooperative = 1;
    } else if (k->mode == EVO_QUANT_MODE_LOCAL) {
        /* EVO_QUANT_LOCAL_WARPS_PER_SM warps per SM, as many blocks as can be resident at once; lag: the rounds a head spans after its first,
         * at least slack. A grid of whole heads (a multiple of the chunks per head, when that drops at most an
         * eighth of the blocks) keeps every head inside one round: a block then waits only for the blocks of its
         * own round, never for the next round's start of a head that straddles the two (measured 1 % faster). */
        const unsigned long long chunks = n_heads * p.chunks_per_head;
        const unsigned long long wps = EVO_QUANT_LOCAL_WARPS_PER_SM;
        unsigned long long grid =
            (unsigned long long)num_sms * ((unsigned long long)k->warps >= wps ? 1ull : wps / k->warps);
        if (grid > chunks) grid = chunks;
        const unsigned long long whole = grid - grid % p.chunks_per_head;
        if (whole * 8ull >= grid * 7ull) grid = whole;
        unsigned long long lag = (p.chunks_per_head - 1ull + grid - 1ull) / grid;
        if (lag < (unsigned long long)k->slack) lag = (unsigned long long)k->slack;
        p.chain_lag = (int)lag;
        p.scratch_bytes = rot + 16ull + 4ull * chunks;
        p.zero_scratch_once = 1;
        /* plain: a waiting thread computes what it waits for; with the rotation fused into the kernel it cannot
         * (Cfg::LOCAL_HELP) and the grid must be resident at once: a cooperative launch */
        evo_quant_add_launch(&p, EVO_QUANT_K_MAIN, grid, threads)->cooperative = rotate && k->fused_rot;
    } else if (k->mode == EVO_QUANT_MODE_STREAMED) {
        /* Warp chunk c goes to warp c % W (W = grid * warps) in round c / W. The most blocks per SM (at most
         * EVO_QUANT_STREAM_WARPS_PER_SM warps, the kernel's bound) whose warps' rings hold lag + 2 chunks: one being
         * encoded lag rounds behind, the current one and at least one loading ahead. lag: the rounds a head spans
         * after its first, at least slack. */
        const unsigned long long chunks = n_heads * p.chunks_per_head, w = (unsigned long long)k->warps;
        unsigned long long grid = 0, lag = 0;
        for (unsigned long long bps = 32ull * EVO_QUANT_STREAM_WARPS_PER_SM / threads; bps >= 1; bps--) {
            grid = (unsigned long long)num_sms * bps;
            if (grid > (chunks + w - 1) / w) grid = (chunks + w - 1) / w;
            lag = (p.chunks_per_head - 1 + grid * w - 1) / (grid * w);
            if (lag < (unsigned long long)k->slack) lag = (unsigned long long)k->slack;
            p.stages = evo_quant_warp_ring(k, arch, bps);
            if (lag + 2 <= (unsigned long long)p.stages) break;
        }
        if (lag + 2 > (unsigned long long)p.stages) {
            return evo_quant_refuse("mode 6 (streamed): a head spans more rounds of the grid than the warps' "
                                    "shared-memory rings can hold behind its encoding; take larger chunks",
                                    why, why_size);
        }
        p.chain_lag = (int)lag;
        p.scratch_bytes = rot + ((12ull * n_heads + 255ull) & ~255ull);
        p.zero_scratch_once = 1;
        evo_quant_launch *l = evo_quant_add_launch(&p, EVO_QUANT_K_MAIN, grid, threads);
        l->smem = (unsigned)((unsigned long long)p.stages * w * (evo_quant_warp_chunk_bytes(k) + 8ull));
        l->cooperative = 1;
    } else if (k->mode == EVO_QUANT_MODE_PIPED) {
        if (evo_quant_piped(k, head_elems * ((rotate && !k->fused_rot) ? 4ull : 2ull), n_heads, arch, num_sms, &p) !=
            0) {
            return evo_quant_refuse("mode 8 (piped): a part of a head (at most 64 parts, no more than the grid's "
                                    "blocks) and one chunk more do not fit in a block's shared memory; take smaller "
                                    "chunks",
                                    why, why_size);
        }
        p.scratch_bytes = rot + ((12ull * n_heads + 255ull) & ~255ull);
        p.zero_scratch_once = 1;
    } else {
        unsigned long long slice = 0; /* mode staged: a CTA's share of the head, in dynamic shared memory */
        if (k->mode == EVO_QUANT_MODE_STAGED) {
            const unsigned long long in_bytes = (rotate && !k->fused_rot) ? 4ull : 2ull;
            slice = EVO_QUANT_STAGED_SLICE(head_elems * in_bytes, (unsigned long long)k->cluster);
            if (slice > evo_quant_smem_budget(arch)) {
                return evo_quant_refuse("mode 5 (staged): a CTA's share of a head does not fit in shared memory; take "
                                        "a larger cluster",
                                        why, why_size);
            }
        }
        evo_quant_launch *l =
            evo_quant_add_launch(&p, EVO_QUANT_K_MAIN, n_heads * (unsigned long long)k->cluster, threads);
        l->smem = (unsigned)slice;
        l->cluster_x = (unsigned)k->cluster;
        l->nonportable = k->cluster > 8;
    }
    *plan = p;
    return 0;
}

#endif /* !__CUDACC_RTC__ */

#endif

/* ==== quantize_fp8.cu, verbatim but for its #include of the header above ==== */
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
 *                                once); KEEP*VEC/4 <= 64 registers. Other modes: 0
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
 *     once after allocation; every launch leaves it zeroed (as modes 1 and 3).
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
/* #include "evo_quantize_abi.h": inlined above */

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
    static_assert(MODE == 2 || MODE == 5 || MODE == 8 || (CLUSTER == 1 && KEEP == 0),
                  "CLUSTER is a knob of modes 2, 5 and 8, KEEP of mode 2 (1 and 0 otherwise)");
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

/* The row's D elements lie in D/EPV consecutive lanes, EPV each. y = H·(s∘x)·(1/sqrt(D)): sign flips, butterfly
 * stages h = 1, 2, .., D/2 ((a, b) -> (a + b, a - b) for the pair (i, i + h)), then one multiply. */
template <int D, int EPV> EVO_DEV void rotate(float (&v)[EPV], u32 smask, u32 lane)
{
#pragma unroll
    for (int i = 0; i < EPV; i++) v[i] = __uint_as_float(__float_as_uint(v[i]) ^ (((smask >> i) & 1u) << 31));
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
 * rotation shuffles). */
template <class C> EVO_DEV void vec_floats(const Raw<C::VEC_> &r, u32 smask, u32 lane, float (&f)[C::EPV])
{
    to_float<C::IN>(r, f);
    if (C::ROT) rotate<C::D_>(f, smask, lane);
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

template <class C> EVO_DEV u32 thread_signs()
{
    if (!C::ROT) return 0u;
    constexpr u32 TPR = (u32)(C::D_ / C::EPV);
    return sign_bits<C::EPV>((threadIdx.x % TPR) * (u32)C::EPV);
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
            to_float<C::IN>(kr[k], f);
            if (C::ROT) rotate<C::D_>(f, smask, lane);
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
        to_float<C::IN>(kr[k], f);
        if (C::ROT) rotate<C::D_>(f, smask, lane);
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
    else if constexpr (MODE == EVO_QUANT_MODE_LOCAL) evoq::local<C>(p);
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

/* ==== this genome (written by evo export) ==== */
#define EVO_EXPORT_GENOME "VEC=32,WARPS=8,MODE=3,CLUSTER=1,KEEP=0,UNROLL=4,ITERS=1,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=4"
#define EVO_EXPORT_KEY "4a2ad3fb4de7838596502a57920787fb92afe3699da4f5727b83627adfb8de5e"
#define EVO_EXPORT_ARCH "sm_90"

/* vec, warps, mode, cluster, keep, unroll, iters, cvt, cache, fused_rot, slack */
static const evo_quant_knobs evo_export_knobs = {32, 8, 3, 1, 0, 4, 1, 1, 1, 1, 4};

template __global__ void evo_quant<64,0,0,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<64,0,1,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<64,1,0,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<64,1,1,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<128,0,0,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<128,0,1,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<128,1,0,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);
template __global__ void evo_quant<128,1,1,32,8,3,1,0,4,1,1,1,1>(const evo_quant_params);

namespace evo_export {

struct qvariant {
    int head_dim, in_dtype, rotate;
    void (*main)(const evo_quant_params);
    void (*absmax)(const evo_quant_params);   /* mode split; NULL otherwise */
    void (*rotate_k)(const evo_quant_params); /* rotate with fused_rot = 0; NULL otherwise */
};
static const qvariant variants[] = {
    {64, 0, 0, evo_quant<64,0,0,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {64, 0, 1, evo_quant<64,0,1,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {64, 1, 0, evo_quant<64,1,0,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {64, 1, 1, evo_quant<64,1,1,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {128, 0, 0, evo_quant<128,0,0,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {128, 0, 1, evo_quant<128,0,1,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {128, 1, 0, evo_quant<128,1,0,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
    {128, 1, 1, evo_quant<128,1,1,32,8,3,1,0,4,1,1,1,1>, NULL, NULL},
};

#ifdef EVO_SELFTEST
/* The timed shapes of run 1's config, with the median evo measured (µs). */
struct qshape {
    const char *name;
    int batch, heads, seq, head_dim, in_dtype, rotate;
    double evo_median_us;
};
static const qshape timed_shapes[] = {
    {"big", 4, 16, 4096, 128, 0, 0, 36.08},
    {"long64", 1, 16, 16384, 64, 0, 0, 22.27},
    {"stress", 4, 8, 2048, 64, 0, 0, 7.23},
    {"big_rot", 4, 16, 4096, 128, 0, 1, 63.54},
    {"big_bf16", 4, 16, 4096, 128, 1, 0, 36.22},
};
static const int timing_warmup = 3, timing_repetitions = 30, timing_flush_l2 = 1;
#endif

} // namespace evo_export

/* ==== launcher and self-test, the same in every exported quantizer (quantize_export_harness.cu) ==== */
/* quantize_export_harness.cu — the host launcher and the self-test of every quantize_fp8 kernel `evo export`
 * writes. evo appends this text, unchanged, after evo_quantize_abi.h, quantize_fp8.cu and the genome's own section
 * (knobs evo_export_knobs, the kernels' explicit instantiations, namespace evo_export: qvariant table, timed
 * shapes), so it is the same in every exported quantizer. It is not a kernel template: evo never compiles it alone;
 * tests/cli_quantize_export.sh builds the files evo export writes with nvcc.
 */
#include <atomic>
#include <climits>

namespace evo_export
{

static const int n_qvariants = (int)(sizeof variants / sizeof variants[0]);

/* Per variant, one bit per device on which NonPortableClusterSizeAllowed (cluster 16), and MaxDynamicSharedMemorySize
 * (mode resident), have been set. */
static std::atomic<unsigned long long> nonportable_set[sizeof variants / sizeof variants[0]];
static std::atomic<unsigned long long> smem_set[sizeof variants / sizeof variants[0]];

/* Scratch layout. Modes chained, ordered, resident and streamed keep their control words (16 bytes + 4 per chunk;
 * streamed: 12 per head) at the start of the caller's scratch and every launch leaves them zero. With a separate
 * rotation pass (rotate, fused_rot = 0) the rotated rows come first in the template's layout, so that plan is
 * placed past chained_zone: its rows never touch the control words of calls without rotation that have up to 131068
 * chunks (about 2^28 elements in the smallest chunks; streamed: 43690 heads; a larger call without rotation after
 * a rotated one in the same scratch needs a fresh zeroed scratch), and its own control words, behind rows that vary
 * in size, are zeroed by a memset before the launch. */
static const unsigned long long chained_zone = (16ull + 8ull * 65535ull + 255ull) & ~255ull;

struct qcall {
    int vi; /* index in variants */
    evo_quant_plan plan;
    unsigned long long offset;     /* the plan's scratch starts at scratch + offset */
    unsigned long long need;       /* bytes of the caller's scratch this call uses (0: none) */
    unsigned long long zero_bytes; /* leading bytes a fresh scratch must have zeroed */
    int memset_ctl;                /* 1: zero the chained control words before launching */
};

static int find_qvariant(int head_dim, int in_dtype, int rotate)
{
    for (int i = 0; i < n_qvariants; i++)
        if (variants[i].head_dim == head_dim && variants[i].in_dtype == in_dtype && variants[i].rotate == rotate)
            return i;
    return -1;
}

/* The plan of one call on the current device; cudaErrorInvalidValue for a combination or shape this file cannot
 * run. */
static cudaError_t resolve(int in_dtype, int rotate, int batch, int heads, int seq, int head_dim, qcall *c)
{
    if ((in_dtype != EVO_QUANT_IN_F16 && in_dtype != EVO_QUANT_IN_BF16) || (rotate != 0 && rotate != 1))
        return cudaErrorInvalidValue;
    c->vi = find_qvariant(head_dim, in_dtype, rotate);
    if (c->vi < 0) return cudaErrorInvalidValue;
    int dev = 0, major = 0, minor = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
    if (evo_quant_plan_make(&evo_export_knobs, batch, heads, seq, head_dim, rotate, major * 10 + minor, sms, &c->plan,
                            0, 0) != 0)
        return cudaErrorInvalidValue;
    const int unfused = rotate && !evo_export_knobs.fused_rot;
    const int chained = c->plan.zero_scratch_once; /* modes chained and ordered: control words that start at zero */
    c->offset = chained && unfused ? chained_zone : 0ull;
    c->memset_ctl = chained && unfused;
    c->need = c->plan.scratch_bytes ? c->offset + c->plan.scratch_bytes : 0ull;
    c->zero_bytes = chained && !unfused ? c->plan.scratch_bytes : 0ull;
    return cudaSuccess;
}

/* Sets a function attribute once per device (the bit of the current device in done) to value_of(dev, &value), which
 * runs only then. */
template <class V>
static cudaError_t set_once(std::atomic<unsigned long long> &done, void (*fn)(const evo_quant_params),
                            cudaFuncAttribute attr, V value_of)
{
    int dev = 0, value = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
    if (bit && (done.load(std::memory_order_acquire) & bit)) return cudaSuccess;
    e = value_of(dev, &value);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(fn, attr, value);
    if (e == cudaSuccess && bit) done.fetch_or(bit, std::memory_order_acq_rel);
    return e;
}

static cudaError_t launch_plan(const qcall &c, const evo_quant_params &p, cudaStream_t stream)
{
    const qvariant &v = variants[c.vi];
    for (int i = 0; i < c.plan.n_launches; i++) {
        const evo_quant_launch &l = c.plan.launch[i];
        void (*fn)(const evo_quant_params) = l.kernel == EVO_QUANT_K_MAIN     ? v.main
                                             : l.kernel == EVO_QUANT_K_ABSMAX ? v.absmax
                                                                              : v.rotate_k;
        if (!fn) return cudaErrorInvalidDeviceFunction; /* the genome section lacks a kernel its plan needs */
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(l.grid_x, l.grid_y, 1);
        cfg.blockDim = dim3(l.block, 1, 1);
        cfg.dynamicSmemBytes = l.smem;
        cfg.stream = stream;
        if (l.smem > 0u) { /* once, to the most the kernel may take beside its static shared memory: the plans of
                              other shapes take other sizes, and with the static part even 48 KiB may need it */
            cudaError_t e = set_once(smem_set[c.vi], fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     [fn](int dev, int *value) {
                                         cudaFuncAttributes fa;
                                         int optin = 0;
                                         cudaError_t r = cudaFuncGetAttributes(&fa, fn);
                                         if (r == cudaSuccess)
                                             r = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
                                         *value = optin - (int)fa.sharedSizeBytes;
                                         return r;
                                     });
            if (e != cudaSuccess) return e;
        }
        cudaLaunchAttribute attr[2];
        cfg.attrs = attr;
        cfg.numAttrs = 0;
        if (l.cluster_x > 1) {
            if (l.nonportable) {
                cudaError_t e = set_once(nonportable_set[c.vi], fn, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                         [](int, int *value) {
                                             *value = 1;
                                             return cudaSuccess;
                                         });
                if (e != cudaSuccess) return e;
            }
            attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
            attr[cfg.numAttrs].val.clusterDim.x = l.cluster_x;
            attr[cfg.numAttrs].val.clusterDim.y = 1;
            attr[cfg.numAttrs].val.clusterDim.z = 1;
            cfg.numAttrs++;
        }
        if (l.cooperative) { /* every block resident at once, or the launch fails (never a deadlock) */
            attr[cfg.numAttrs].id = cudaLaunchAttributeCooperative;
            attr[cfg.numAttrs].val.cooperative = 1;
            cfg.numAttrs++;
        }
        cudaError_t e = cudaLaunchKernelEx(&cfg, fn, p);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

} // namespace evo_export

extern "C" const char *evo_quantize_genome(void) { return EVO_EXPORT_GENOME; }

/* Bytes of device scratch evo_quantize_forward needs for this call on the current device (0: none; pass NULL);
 * (unsigned long long)-1 when this file cannot run the combination or shape. */
extern "C" unsigned long long evo_quantize_scratch_bytes(int in_dtype, int rotate, int batch, int heads, int seq,
                                                         int head_dim)
{
    evo_export::qcall c;
    return evo_export::resolve(in_dtype, rotate, batch, heads, seq, head_dim, &c) == cudaSuccess ? c.need : ~0ull;
}

/* For a scratch allocated afresh for one call: how many of its leading bytes must be zero (the rest may hold
 * anything); (unsigned long long)-1 as above. */
extern "C" unsigned long long evo_quantize_scratch_zero_bytes(int in_dtype, int rotate, int batch, int heads, int seq,
                                                              int head_dim)
{
    evo_export::qcall c;
    return evo_export::resolve(in_dtype, rotate, batch, heads, seq, head_dim, &c) == cudaSuccess ? c.zero_bytes : ~0ull;
}

/* x: [B, H, S, D] fp16 (in_dtype 0) or bf16 (1) -> codes: [B, H, S, D] e4m3fn bytes, scales: one float per (batch,
 * head), index b*H + h; rotate 1: incoherent processing (evo_quantize_abi.h: each row times H·diag(s)/sqrt(D)).
 * All device pointers; x and codes 16-byte aligned, scales 4-byte. scratch: at least evo_quantize_scratch_bytes()
 * bytes, 256-byte aligned (NULL when that is 0), either zero-filled once before its first use and then left to these
 * calls, which keep it ready for the next call of any shape (what a call reads before writing it leaves zero), or
 * fresh for each call with its first evo_quantize_scratch_zero_bytes() bytes zero. Calls sharing a scratch must not
 * overlap in time (one stream, or ordered). Returns the launches' cudaError_t as int: cudaErrorInvalidValue for a
 * (head_dim, in_dtype, rotate) without a variant, a shape out of range, a null or misaligned pointer or a scratch
 * too small. Asynchronous on `stream` (capturable into a CUDA graph); thread-safe. */
namespace evo_export {

/* evo_quantize_forward and evo_quantize_forward_multi: n_x inputs of [batch, heads, seq, head_dim] in one plan. */
static int forward(const void *const *xs, int n_x, int in_dtype, int rotate, void *codes, float *scales, int batch,
                   int heads, int seq, int head_dim, void *scratch, unsigned long long scratch_bytes,
                   cudaStream_t stream)
{
    if (n_x < 1 || n_x > 3 || batch > INT_MAX / n_x) return (int)cudaErrorInvalidValue; /* the plan checks the rest */
    qcall c;
    cudaError_t e = resolve(in_dtype, rotate, n_x * batch, heads, seq, head_dim, &c);
    if (e != cudaSuccess) return (int)e;
    const unsigned long long uc = (unsigned long long)codes, us = (unsigned long long)scales,
                             ut = (unsigned long long)scratch;
    for (int i = 0; i < n_x; i++)
        if (!xs[i] || ((unsigned long long)xs[i] & 15ull)) return (int)cudaErrorInvalidValue;
    if (!codes || !scales || (uc & 15ull) || (us & 3ull)) return (int)cudaErrorInvalidValue;
    if (c.need && (!scratch || (ut & 255ull) || scratch_bytes < c.need)) return (int)cudaErrorInvalidValue;
    evo_quant_params p = {};
    p.x = xs[0];
    if (n_x > 1) p.x1 = xs[1], p.x_heads = batch * heads;
    if (n_x > 2) p.x2 = xs[2];
    p.codes = (unsigned char *)codes;
    p.scales = scales;
    p.scratch = c.need ? (void *)((unsigned char *)scratch + c.offset) : (void *)0;
    p.scratch_bytes = c.need ? c.plan.scratch_bytes : 0ull;
    p.batch = n_x * batch;
    p.heads = heads;
    p.seq = seq;
    p.head_dim = head_dim;
    p.in_dtype = in_dtype;
    p.rotate = rotate;
    p.chain_lag = c.plan.chain_lag;
    p.stages = c.plan.stages;
    p.parts = c.plan.parts;
    if (c.memset_ctl) { /* the control words and slots behind the rotated rows */
        const unsigned long long n_heads = (unsigned long long)p.batch * (unsigned long long)heads;
        const unsigned long long n = n_heads * (unsigned long long)seq * (unsigned long long)head_dim;
        e = cudaMemsetAsync((unsigned char *)p.scratch + evo_quant_rot_bytes(n), 0,
                            (size_t)(c.plan.scratch_bytes - evo_quant_rot_bytes(n)), stream);
        if (e != cudaSuccess) return (int)e;
    }
    return (int)launch_plan(c, p, stream);
}

} // namespace evo_export

/* x: [B, H, S, D] fp16 (in_dtype 0) or bf16 (1) -> codes: [B, H, S, D] e4m3fn bytes, scales: one float per (batch,
 * head), index b*H + h; rotate 1: incoherent processing (evo_quantize_abi.h: each row times H·diag(s)/sqrt(D)).
 * All device pointers; x and codes 16-byte aligned, scales 4-byte. scratch: at least evo_quantize_scratch_bytes()
 * bytes, 256-byte aligned (NULL when that is 0), either zero-filled once before its first use and then left to these
 * calls, which keep it ready for the next call of any shape (what a call reads before writing it leaves zero), or
 * fresh for each call with its first evo_quantize_scratch_zero_bytes() bytes zero. Calls sharing a scratch must not
 * overlap in time (one stream, or ordered). Returns the launches' cudaError_t as int: cudaErrorInvalidValue for a
 * (head_dim, in_dtype, rotate) without a variant, a shape out of range, a null or misaligned pointer or a scratch
 * too small. Asynchronous on `stream` (capturable into a CUDA graph); thread-safe. */
extern "C" int evo_quantize_forward(const void *x, int in_dtype, int rotate, void *codes, float *scales, int batch,
                                    int heads, int seq, int head_dim, void *scratch, unsigned long long scratch_bytes,
                                    cudaStream_t stream)
{
    return evo_export::forward(&x, 1, in_dtype, rotate, codes, scales, batch, heads, seq, head_dim, scratch,
                               scratch_bytes, stream);
}

/* n_x (1 to 3) tensors of one shape, each [B, H, S, D] as for evo_quantize_forward, quantized by one plan (one launch
 * for the genomes whose plan is one kernel): codes [n_x, B, H, S, D] and scales [n_x * B * H] as one array each, the
 * same bits as n_x calls of evo_quantize_forward. Its scratch is that of evo_quantize_scratch_bytes(in_dtype, rotate,
 * n_x * batch, heads, seq, head_dim) (and _zero_bytes likewise), and n_x * batch must be a batch that call accepts. */
extern "C" int evo_quantize_forward_multi(const void *const *xs, int n_x, int in_dtype, int rotate, void *codes,
                                          float *scales, int batch, int heads, int seq, int head_dim, void *scratch,
                                          unsigned long long scratch_bytes, cudaStream_t stream)
{
    return evo_export::forward(xs, n_x, in_dtype, rotate, codes, scales, batch, heads, seq, head_dim, scratch,
                               scratch_bytes, stream);
}

#ifdef EVO_SELFTEST
/* ---- self-test: bit-exact against a CPU reference, then the config's shapes timed against a copy ----
 * ./selftest [--check-only] [--shape NAME] [--reps N]; exit 0: every check passed, 1: a check failed,
 * 2: it could not run (no GPU, bad arguments). */
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

/* ==== export_selftest.cuh, inlined ==== */
/* export_selftest.cuh — what the self-test of every exported file shares (evo export inlines it into each task's
 * harness, under -DEVO_SELFTEST): its arguments, the device it runs on, and how it ends. Not a kernel template: evo
 * never compiles it alone. Usage: selftest [--check-only] [--shape NAME] [--reps N]; exit 0 when every check passed,
 * 1 when one failed, 2 when it could not run (no GPU, bad arguments).
 */
/* Number formats and error checks both self-tests use (their CPU references are built on them). */
namespace evo_selftest_fmt {

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

static bool cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return true;
    fprintf(stderr, "selftest: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

/* The inputs' generator: splitmix64, uniform [0, 1), normal by Box-Muller. */
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

} // namespace evo_selftest_fmt

namespace evo_selftest_main {

struct args {
    bool check_only = false;
    const char *only = nullptr; /* --shape NAME: time this shape only */
    int reps = 1;
};

/* false: bad arguments, the usage said on stderr (exit 2). */
static bool parse(int argc, char **argv, int default_reps, args &a)
{
    a.reps = default_reps;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check-only")) {
            a.check_only = true;
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            a.only = argv[++i];
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            a.reps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--check-only] [--shape NAME] [--reps N]\n", argv[0]);
            return false;
        }
    }
    if (a.reps < 1) a.reps = 1;
    return true;
}

/* Device 0's properties, the driver's and the runtime's versions; false: no CUDA device (said on stderr; exit 2). */
static bool device(cudaDeviceProp &prop, int &driver, int &runtime)
{
    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        fprintf(stderr, "selftest: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return false;
    }
    cudaGetDeviceProperties(&prop, 0);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    return true;
}

/* What every self-test does first: its arguments, then the device it runs on; false: exit 2. */
struct start_info {
    args a;
    cudaDeviceProp prop;
    int driver = 0, runtime = 0;
};
static bool start(int argc, char **argv, int default_reps, start_info &s)
{
    return parse(argc, argv, default_reps, s.a) && device(s.prop, s.driver, s.runtime);
}

/* The last lines and the exit status: checks_are names what passed ("correctness checks", "bit-exact checks"). */
static int finish(const args &a, int n_cases, int n_timed, int failed, const char *checks_are)
{
    if (a.only && n_timed == 0 && !a.check_only) {
        fprintf(stderr, "selftest: no timed shape is called '%s'\n", a.only);
        return 2;
    }
    if (failed) {
        printf("\nself-test FAILED: %d of %d checks\n", failed, n_cases + n_timed);
        return 1;
    }
    printf("\nself-test passed: %d %s, %d shapes timed\n", n_cases, checks_are, n_timed);
    return 0;
}

} // namespace evo_selftest_main
/* ==== end of export_selftest.cuh ==== */

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the self-test's reference needs float evaluated in its own precision (FLT_EVAL_METHOD 0)"
#endif

namespace evo_qselftest
{
using namespace evo_selftest_fmt; /* float_bits, half_to_float, double_to_half, e4m3_encode, cuda_ok, ... */

/* ---- number formats and the quantizer: evo's rules (tasks/quantize_fp8/quantize_ref.c), as plain C++ ---- */

static float in_to_float(uint16_t b, int in_dtype)
{
    return in_dtype == EVO_QUANT_IN_BF16 ? bits_float((uint32_t)b << 16) : half_to_float(b);
}

/* float -> bf16 bits, round to nearest even; overflow -> inf; NaN -> quiet NaN of x's sign. */
static uint16_t float_to_bf16(float x)
{
    const uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    uint32_t rest = u & 0xffffu, q = u >> 16;
    if (rest > 0x8000u || (rest == 0x8000u && (q & 1u))) q++;
    return (uint16_t)q;
}

/* y = H·(s∘x)/sqrt(D) in float, in quantize_ref.h's order: sign flips, butterflies h = 1, 2, .., D/2, one multiply.
 * No product is followed by a sum, so no contraction into a fused multiply-add can change a bit. */
static void rotate_row(float *v, int d)
{
    for (int i = 0; i < d; i++)
        if ((evo_quant_sign_word((unsigned)i >> 6) >> (i & 63)) & 1u) v[i] = -v[i];
    for (int h = 1; h < d; h <<= 1)
        for (int i = 0; i < d; i++) {
            if (i & h) continue;
            const float a = v[i], b = v[i + h];
            v[i] = a + b;
            v[i + h] = a - b;
        }
    const float c = evo_quant_rsqrt_d(d);
    for (int i = 0; i < d; i++) v[i] = v[i] * c;
}

/* One head of seq rows: absmax over the (rotated) values, NaN ignored; scale = absmax / 448 (1 for 0); codes. */
static void reference_head(const uint16_t *x, int in_dtype, int rotate, size_t seq, int d, uint8_t *codes, float *scale)
{
    std::vector<float> row((size_t)d);
    float absmax = 0.0f;
    for (int pass = 0; pass < 2; pass++) {
        const float s = absmax == 0.0f ? 1.0f : absmax / 448.0f;
        for (size_t r = 0; r < seq; r++) {
            for (int i = 0; i < d; i++) row[(size_t)i] = in_to_float(x[r * (size_t)d + (size_t)i], in_dtype);
            if (rotate) rotate_row(row.data(), d);
            for (int i = 0; i < d; i++) {
                if (pass == 0)
                    absmax = fmaxf(absmax, fabsf(row[(size_t)i]));
                else
                    codes[r * (size_t)d + (size_t)i] = e4m3_encode(row[(size_t)i] / s);
            }
        }
        if (pass == 1) *scale = s;
    }
}

/* ---- inputs ---- */

enum { DIST_NORMAL, DIST_OUTLIERS, DIST_ZERO_HEAD, DIST_UNIFORM, DIST_LARGE, DIST_TINY, DIST_NONFINITE, N_DISTS };
static const char *const dist_names[N_DISTS] = {"normal", "outliers", "zero_head", "uniform",
                                                "large",  "tiny",     "nonfinite"};

/* fp16 or bf16 values: N(0,1); N(0,1) + N(0,100)·Bernoulli(0.001); N(0,1) with the first head all zero; U(-1,1);
 * large (3000·N(0,1) for fp16, 1e30·N(0,1) for bf16: the division's slow path); tiny (down in the subnormals);
 * N(0,1) with NaN and ±inf planted in the first three heads. */
static void make_input(std::vector<uint16_t> &x, size_t head_elems, int in_dtype, int dist, uint64_t seed)
{
    rng r{seed * 0x2545f4914f6cdd1dull + 1};
    const int bf = in_dtype == EVO_QUANT_IN_BF16;
    for (size_t i = 0; i < x.size(); i++) {
        double v;
        switch (dist) {
            case DIST_OUTLIERS:
                v = r.normal();
                if (r.uniform() < 0.001) v += 10.0 * r.normal();
                break;
            case DIST_ZERO_HEAD: v = i < head_elems ? 0.0 : r.normal(); break;
            case DIST_UNIFORM: v = 2.0 * r.uniform() - 1.0; break;
            case DIST_LARGE: v = r.normal() * (bf ? 1e30 : 3000.0); break;
            case DIST_TINY: v = r.normal() * (bf ? 1e-38 : 1e-6); break;
            default: v = r.normal(); break;
        }
        x[i] = bf ? float_to_bf16((float)v) : double_to_half(v);
    }
    if (dist == DIST_NONFINITE && head_elems > 3) {
        const uint16_t nan = bf ? 0x7fc0 : 0x7e00, inf = bf ? 0x7f80 : 0x7c00;
        const size_t n_heads = x.size() / head_elems;
        x[head_elems / 2] = nan;
        if (n_heads > 1) x[head_elems + head_elems / 3] = inf;
        if (n_heads > 2) {
            x[2 * head_elems + 1] = (uint16_t)(inf | 0x8000u);
            x[2 * head_elems + 2] = (uint16_t)(nan | 0x8000u);
        }
    }
}

/* ---- device buffers with guard bands ---- */

static const size_t GUARD_BYTES = 4096;
static const unsigned char GUARD = 0xa5;

/* A region of `bytes` between two guard bands; `ptr` is 256-byte aligned. */
struct guarded {
    unsigned char *alloc = nullptr;
    unsigned char *ptr = nullptr;
    size_t bytes = 0;
    bool make(size_t n)
    {
        bytes = n;
        if (!cuda_ok(cudaMalloc(&alloc, n + 2 * GUARD_BYTES), "cudaMalloc")) return false;
        ptr = alloc + GUARD_BYTES;
        return cuda_ok(cudaMemset(alloc, GUARD, n + 2 * GUARD_BYTES), "cudaMemset");
    }
    /* bytes outside [ptr, ptr + bytes) that changed */
    size_t guard_changes()
    {
        std::vector<unsigned char> h(GUARD_BYTES);
        size_t bad = 0;
        for (int side = 0; side < 2; side++) {
            const unsigned char *src = side ? ptr + bytes : alloc;
            if (!cuda_ok(cudaMemcpy(h.data(), src, GUARD_BYTES, cudaMemcpyDeviceToHost), "cudaMemcpy"))
                return ~(size_t)0;
            for (unsigned char c : h) bad += c != GUARD;
        }
        return bad;
    }
    void release()
    {
        cudaFree(alloc);
        alloc = ptr = nullptr;
    }
};

/* The one scratch every check shares, zero-filled once: the harness must keep it ready across shapes, dtypes and
 * rotation on and off. */
struct shared_scratch {
    unsigned char *ptr = nullptr;
    unsigned long long bytes = 0;
    bool fit(unsigned long long need)
    {
        if (need <= bytes) return true;
        unsigned char *grown = nullptr;
        if (!cuda_ok(cudaMalloc(&grown, need), "cudaMalloc")) return false;
        if (ptr && !cuda_ok(cudaMemcpy(grown, ptr, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy")) return false;
        if (!cuda_ok(cudaMemset(grown + bytes, 0, need - bytes), "cudaMemset")) return false;
        cudaFree(ptr);
        ptr = grown;
        bytes = need;
        return true;
    }
};

struct verdict {
    size_t bad_codes = 0, bad_scales = 0, guard = 0;
    long long first = -1;
    int got = 0, want = 0;
    bool pass() const { return !bad_codes && !bad_scales && !guard; }
};

/* Quantizes x on the GPU (codes and scales poisoned first with `poison`) and compares the heads check_heads names
 * with the reference. n_x > 1: x holds n_x tensors of [batch, heads, seq, d], each in its own allocation, quantized
 * by one evo_quantize_forward_multi call into one array of codes and of scales. */
static bool run_case(const std::vector<uint16_t> &x, int n_x, int in_dtype, int rotate, int batch, int heads, int seq,
                     int d, shared_scratch &scr, const std::vector<size_t> &check_heads, unsigned char poison,
                     verdict &vd)
{
    const size_t n_heads = (size_t)n_x * batch * heads, head_elems = (size_t)seq * d, n = n_heads * head_elems;
    const size_t per = n / (size_t)n_x; /* elements of one input */
    const unsigned long long need = evo_quantize_scratch_bytes(in_dtype, rotate, n_x * batch, heads, seq, d);
    if (need == ~0ull) {
        fprintf(stderr, "selftest: no plan for D=%d dtype %d rotate %d (%d,%d,%d)\n", d, in_dtype, rotate,
                n_x * batch, heads, seq);
        return false;
    }
    if (!scr.fit(need)) return false;
    guarded dx[3], dc, ds;
    bool ok = dc.make(n) && ds.make(n_heads * 4) && cuda_ok(cudaMemset(dc.ptr, poison, n), "poison") &&
              cuda_ok(cudaMemset(ds.ptr, 0xff, n_heads * 4), "poison");
    const void *xs[3] = {nullptr, nullptr, nullptr};
    for (int i = 0; ok && i < n_x; i++) {
        ok = dx[i].make(per * 2) &&
             cuda_ok(cudaMemcpy(dx[i].ptr, x.data() + (size_t)i * per, per * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
        xs[i] = dx[i].ptr;
    }
    const int rc = !ok ? 0
                   : n_x == 1
                       ? evo_quantize_forward(xs[0], in_dtype, rotate, dc.ptr, (float *)ds.ptr, batch, heads, seq, d,
                                              need ? scr.ptr : nullptr, scr.bytes, 0)
                       : evo_quantize_forward_multi(xs, n_x, in_dtype, rotate, dc.ptr, (float *)ds.ptr, batch, heads,
                                                    seq, d, need ? scr.ptr : nullptr, scr.bytes, 0);
    ok = ok && cuda_ok((cudaError_t)rc, n_x == 1 ? "evo_quantize_forward" : "evo_quantize_forward_multi") &&
         cuda_ok(cudaDeviceSynchronize(), "kernel");
    std::vector<uint8_t> codes, want((size_t)head_elems);
    std::vector<float> scales(n_heads);
    if (ok) {
        codes.resize(n);
        ok = cuda_ok(cudaMemcpy(codes.data(), dc.ptr, n, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
             cuda_ok(cudaMemcpy(scales.data(), ds.ptr, n_heads * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
        vd.guard = dc.guard_changes() + ds.guard_changes();
        for (int i = 0; i < n_x; i++) vd.guard += dx[i].guard_changes();
    }
    for (size_t k = 0; ok && k < check_heads.size(); k++) {
        const size_t h = check_heads[k];
        float s = 0;
        reference_head(&x[h * head_elems], in_dtype, rotate, (size_t)seq, d, want.data(), &s);
        if (float_bits(s) != float_bits(scales[h])) vd.bad_scales++;
        for (size_t i = 0; i < head_elems; i++)
            if (codes[h * head_elems + i] != want[i]) {
                if (vd.first < 0) {
                    vd.first = (long long)(h * head_elems + i);
                    vd.got = codes[h * head_elems + i];
                    vd.want = want[i];
                }
                vd.bad_codes++;
            }
    }
    for (int i = 0; i < n_x; i++) dx[i].release();
    dc.release();
    ds.release();
    return ok;
}

static std::vector<size_t> all_heads(size_t n)
{
    std::vector<size_t> v(n);
    for (size_t i = 0; i < n; i++) v[i] = i;
    return v;
}

/* ---- the two parts ---- */

/* Every variant on odd and preset shapes, every distribution, twice with different poison; then the launcher's
 * refusals. */
static bool run_checks(int *n_cases, int *failed)
{
    struct bhs {
        int b, h, s;
    };
    static const bhs shapes[] = {{2, 3, 1}, {2, 3, 77}, {1, 5, 1000}, {2, 8, 512}, {1, 2, 4097}};
    shared_scratch scr;
    for (int vi = 0; vi < evo_export::n_qvariants; vi++) {
        const evo_export::qvariant &v = evo_export::variants[vi];
        for (const bhs &sh : shapes) {
            int bad = 0;
            for (int dist = 0; dist < N_DISTS; dist++) {
                const size_t n_heads = (size_t)sh.b * sh.h, head_elems = (size_t)sh.s * v.head_dim;
                std::vector<uint16_t> x(n_heads * head_elems);
                make_input(x, head_elems, v.in_dtype, dist, (uint64_t)(vi * 100 + dist * 10) + (uint64_t)sh.s);
                for (int rep = 0; rep < 2; rep++) {
                    verdict vd;
                    if (!run_case(x, 1, v.in_dtype, v.rotate, sh.b, sh.h, sh.s, v.head_dim, scr, all_heads(n_heads),
                                  rep ? 0x5a : 0xa5, vd))
                        return false;
                    ++*n_cases;
                    if (!vd.pass()) {
                        bad++;
                        printf("  FAIL  D=%d %s%s (%d,%d,%d) %s, call %d: %zu codes differ (first at %lld: 0x%02x, "
                               "want 0x%02x), %zu scales, %zu guard bytes\n",
                               v.head_dim, v.in_dtype ? "bf16" : "fp16", v.rotate ? " rotate" : "", sh.b, sh.h, sh.s,
                               dist_names[dist], rep + 1, vd.bad_codes, vd.first, vd.got, vd.want, vd.bad_scales,
                               vd.guard);
                    }
                }
            }
            *failed += bad;
            printf("check  D=%-3d %-4s rotate=%d  (%d,%d,%4d)  %d distributions x 2 calls  %s\n", v.head_dim,
                   v.in_dtype ? "bf16" : "fp16", v.rotate, sh.b, sh.h, sh.s, N_DISTS, bad ? "FAIL" : "bit-exact");
        }
    }
    /* Two and three inputs in one call (what a PyTorch op does with q, k, v): the same bits as one call each, every
     * distribution mixed across the inputs, on odd and preset shapes. */
    for (int vi = 0; vi < evo_export::n_qvariants; vi++) {
        const evo_export::qvariant &v = evo_export::variants[vi];
        int bad = 0, cases = 0;
        for (const bhs &sh : shapes) {
            for (int n_x = 2; n_x <= 3; n_x++) {
                const size_t n_heads = (size_t)n_x * sh.b * sh.h, head_elems = (size_t)sh.s * v.head_dim;
                const size_t per = (size_t)sh.b * sh.h * head_elems;
                std::vector<uint16_t> x(n_heads * head_elems), part(per);
                for (int i = 0; i < n_x; i++) { /* input i: distribution (shape + i) of the list */
                    make_input(part, head_elems, v.in_dtype, (int)((sh.s + i) % N_DISTS),
                               (uint64_t)(vi * 1000 + n_x * 100 + i) + (uint64_t)sh.s);
                    std::copy(part.begin(), part.end(), x.begin() + (long)((size_t)i * per));
                }
                verdict vd;
                if (!run_case(x, n_x, v.in_dtype, v.rotate, sh.b, sh.h, sh.s, v.head_dim, scr, all_heads(n_heads), 0xa5,
                              vd))
                    return false;
                ++*n_cases, ++cases;
                if (!vd.pass()) {
                    bad++;
                    printf("  FAIL  D=%d %s%s (%d,%d,%d) %d inputs in one call: %zu codes differ (first at %lld), %zu "
                           "scales, %zu guard bytes\n",
                           v.head_dim, v.in_dtype ? "bf16" : "fp16", v.rotate ? " rotate" : "", sh.b, sh.h, sh.s, n_x,
                           vd.bad_codes, vd.first, vd.bad_scales, vd.guard);
                }
            }
        }
        *failed += bad;
        printf("check  D=%-3d %-4s rotate=%d  2 and 3 inputs in one call, %d shapes  %s\n", v.head_dim,
               v.in_dtype ? "bf16" : "fp16", v.rotate, cases / 2, bad ? "FAIL" : "bit-exact");
    }
    /* The launcher's contract: refusals launch nothing. */
    const evo_export::qvariant &v0 = evo_export::variants[0];
    void *buf = nullptr;
    if (!cuda_ok(cudaMalloc(&buf, 1 << 20), "cudaMalloc")) return false;
    unsigned char *b = (unsigned char *)buf;
    const unsigned long long need = evo_quantize_scratch_bytes(v0.in_dtype, v0.rotate, 1, 1, 64, v0.head_dim);
    const void *two_null[2] = {b, nullptr}, *four[4] = {b, b, b, b};
    struct refusal {
        const char *what;
        int rc;
    } refusals[] = {
        {"a null second input", evo_quantize_forward_multi(two_null, 2, v0.in_dtype, v0.rotate, b + 65536,
                                                           (float *)(b + 131072), 1, 1, 64, v0.head_dim, scr.ptr,
                                                           scr.bytes, 0)},
        {"four inputs", evo_quantize_forward_multi(four, 4, v0.in_dtype, v0.rotate, b + 65536, (float *)(b + 131072), 1,
                                                   1, 64, v0.head_dim, scr.ptr, scr.bytes, 0)},
        {"head_dim 96", evo_quantize_forward(b, v0.in_dtype, v0.rotate, b + 65536, (float *)(b + 131072), 1, 1, 64, 96,
                                             scr.ptr, scr.bytes, 0)},
        {"in_dtype 2", evo_quantize_forward(b, 2, v0.rotate, b + 65536, (float *)(b + 131072), 1, 1, 64, v0.head_dim,
                                            scr.ptr, scr.bytes, 0)},
        {"misaligned x", evo_quantize_forward(b + 8, v0.in_dtype, v0.rotate, b + 65536, (float *)(b + 131072), 1, 1, 64,
                                              v0.head_dim, scr.ptr, scr.bytes, 0)},
        {"misaligned codes", evo_quantize_forward(b, v0.in_dtype, v0.rotate, b + 65544, (float *)(b + 131072), 1, 1, 64,
                                                  v0.head_dim, scr.ptr, scr.bytes, 0)},
        {"seq 0", evo_quantize_forward(b, v0.in_dtype, v0.rotate, b + 65536, (float *)(b + 131072), 1, 1, 0,
                                       v0.head_dim, scr.ptr, scr.bytes, 0)},
        {"scratch too small", need ? evo_quantize_forward(b, v0.in_dtype, v0.rotate, b + 65536, (float *)(b + 131072),
                                                          1, 1, 64, v0.head_dim, scr.ptr, need - 1, 0)
                                   : (int)cudaErrorInvalidValue},
    };
    int refused_wrongly = 0;
    for (const refusal &r : refusals) {
        ++*n_cases;
        if (r.rc != (int)cudaErrorInvalidValue) {
            ++refused_wrongly;
            printf("  FAIL  %s returned %d, want cudaErrorInvalidValue (%d)\n", r.what, r.rc,
                   (int)cudaErrorInvalidValue);
        }
    }
    printf("check  launcher refuses a head dim, dtype, misaligned pointers, seq 0, bad inputs of a multi call%s: %s\n",
           need ? ", a small scratch" : "", refused_wrongly ? "FAIL" : "ok");
    *failed += refused_wrongly;
    const bool ok = cuda_ok(cudaDeviceSynchronize(), "refusals");
    cudaFree(buf);
    cudaFree(scr.ptr);
    return ok;
}

static double percentile(const std::vector<double> &sorted, int num, int den)
{
    return sorted[(size_t)((sorted.size() - 1) * num / den)];
}

/* Median and p10..p90 (µs) of reps launches of fn, each after the L2 flush, timed with CUDA events, all queued
 * before waiting. */
template <class F> static bool time_reps(F fn, int reps, void *flush, size_t flush_bytes, std::vector<double> &ts)
{
    std::vector<cudaEvent_t> ev(2 * (size_t)reps);
    for (auto &e : ev)
        if (!cuda_ok(cudaEventCreate(&e), "cudaEventCreate")) return false;
    bool ok = true;
    for (int w = 0; ok && w < evo_export::timing_warmup; w++) ok = cuda_ok(fn(), "launch");
    ok = ok && cuda_ok(cudaDeviceSynchronize(), "warm-up");
    for (int r = 0; ok && r < reps; r++) {
        if (evo_export::timing_flush_l2) ok = cuda_ok(cudaMemsetAsync(flush, r & 0xff, flush_bytes, 0), "flush");
        ok = ok && cuda_ok(cudaEventRecord(ev[2 * (size_t)r], 0), "event") && cuda_ok(fn(), "launch") &&
             cuda_ok(cudaEventRecord(ev[2 * (size_t)r + 1], 0), "event");
    }
    ok = ok && cuda_ok(cudaDeviceSynchronize(), "kernel");
    ts.assign((size_t)reps, 0.0);
    for (int r = 0; ok && r < reps; r++) {
        float ms = 0;
        ok = cuda_ok(cudaEventElapsedTime(&ms, ev[2 * (size_t)r], ev[2 * (size_t)r + 1]), "elapsed");
        ts[(size_t)r] = 1000.0 * ms;
    }
    for (auto &e : ev) cudaEventDestroy(e);
    std::sort(ts.begin(), ts.end());
    return ok;
}

/* The config's timed shapes: the quantizer and a device-to-device copy of the same bytes (3 per element: 1.5 N
 * copied, so read plus written equals the quantizer's 2 N read + N written), both L2-cold; bandwidth = 3 N bytes
 * over the median. The last output is checked on sampled heads. */
static bool run_timing(const char *only, int reps, int *n_timed, int *failed)
{
    int dev = 0;
    cudaDeviceProp prop;
    if (!cuda_ok(cudaGetDevice(&dev), "cudaGetDevice") || !cuda_ok(cudaGetDeviceProperties(&prop, dev), "props"))
        return false;
    size_t flush_bytes = (size_t)prop.l2CacheSize * 4;
    if (flush_bytes < (256u << 20)) flush_bytes = 256u << 20;
    void *flush = nullptr;
    if (!cuda_ok(cudaMalloc(&flush, flush_bytes), "cudaMalloc")) return false;
    printf("\n%-34s %10s %16s %8s %10s %8s %9s  %s\n", "shape", "median us", "p10..p90 us", "GB/s", "copy us", "% copy",
           "evo us", "output");
    const int n_shapes = (int)(sizeof evo_export::timed_shapes / sizeof evo_export::timed_shapes[0]);
    bool ok = true;
    shared_scratch scr;
    for (int si = 0; si < n_shapes && ok; si++) {
        const evo_export::qshape &sh = evo_export::timed_shapes[si];
        if (only && strcmp(only, sh.name) != 0) continue;
        const size_t n_heads = (size_t)sh.batch * sh.heads, head_elems = (size_t)sh.seq * sh.head_dim,
                     n = n_heads * head_elems;
        std::vector<uint16_t> x(n);
        make_input(x, head_elems, sh.in_dtype, DIST_NORMAL, 5000 + (uint64_t)si);
        const unsigned long long need =
            evo_quantize_scratch_bytes(sh.in_dtype, sh.rotate, sh.batch, sh.heads, sh.seq, sh.head_dim);
        if (need == ~0ull) {
            printf("%-34s no variant for this shape\n", sh.name);
            ++*failed;
            continue;
        }
        void *dx = nullptr, *dc = nullptr, *ds = nullptr, *copy_dst = nullptr;
        ok = scr.fit(need) && cuda_ok(cudaMalloc(&dx, n * 2), "cudaMalloc") &&
             cuda_ok(cudaMalloc(&dc, n), "cudaMalloc") && cuda_ok(cudaMalloc(&ds, n_heads * 4), "cudaMalloc") &&
             cuda_ok(cudaMalloc(&copy_dst, n * 3 / 2 + 16), "cudaMalloc") &&
             cuda_ok(cudaMemcpy(dx, x.data(), n * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
        std::vector<double> tq, tc;
        auto quant = [&] {
            return (cudaError_t)evo_quantize_forward(dx, sh.in_dtype, sh.rotate, dc, (float *)ds, sh.batch, sh.heads,
                                                     sh.seq, sh.head_dim, need ? scr.ptr : nullptr, scr.bytes, 0);
        };
        auto copy = [&] { return cudaMemcpyAsync(copy_dst, dx, n * 3 / 2, cudaMemcpyDeviceToDevice, 0); };
        ok = ok && cuda_ok(cudaMemset(dc, 0xa5, n), "poison") && time_reps(quant, reps, flush, flush_bytes, tq) &&
             time_reps(copy, reps, flush, flush_bytes, tc);
        verdict vd;
        if (ok) { /* the timed launches' output: first, middle and last heads against the reference */
            std::vector<uint8_t> codes(n), want(head_elems);
            std::vector<float> scales(n_heads);
            ok = cuda_ok(cudaMemcpy(codes.data(), dc, n, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
                 cuda_ok(cudaMemcpy(scales.data(), ds, n_heads * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
            const size_t pick[] = {0, n_heads / 2, n_heads - 1};
            for (int k = 0; ok && k < 3; k++) {
                if (k > 0 && pick[k] == pick[k - 1]) continue;
                float s = 0;
                reference_head(&x[pick[k] * head_elems], sh.in_dtype, sh.rotate, (size_t)sh.seq, sh.head_dim,
                               want.data(), &s);
                vd.bad_scales += float_bits(s) != float_bits(scales[pick[k]]);
                for (size_t i = 0; i < head_elems; i++) vd.bad_codes += codes[pick[k] * head_elems + i] != want[i];
            }
        }
        cudaFree(dx);
        cudaFree(dc);
        cudaFree(ds);
        cudaFree(copy_dst);
        if (!ok) break;
        const double med = tq[(size_t)reps / 2], copy_med = tc[(size_t)reps / 2];
        const double gbs = 3.0 * (double)n / (med * 1e-6) / 1e9;
        char name[96], spread[48], evo_us[32];
        snprintf(name, sizeof name, "%s(%d,%d,%d,%d) %s%s", sh.name, sh.batch, sh.heads, sh.seq, sh.head_dim,
                 sh.in_dtype ? "bf16" : "fp16", sh.rotate ? " rot" : "");
        snprintf(spread, sizeof spread, "%.2f..%.2f", percentile(tq, 1, 10), percentile(tq, 9, 10));
        if (sh.evo_median_us > 0)
            snprintf(evo_us, sizeof evo_us, "%.2f", sh.evo_median_us);
        else
            snprintf(evo_us, sizeof evo_us, "-");
        printf("%-34s %10.2f %16s %8.0f %10.2f %7.1f%% %9s  %s\n", name, med, spread, gbs, copy_med,
               100.0 * copy_med / med, evo_us, vd.pass() ? "bit-exact" : "CODES DIFFER");
        ++*n_timed;
        if (!vd.pass()) ++*failed;
        if (3 * sh.batch <= 65535) { /* q, k, v as a PyTorch op has them: three inputs, one call, against a copy of
                                        three times the bytes; the output of the three checked on their last heads */
            const unsigned long long need3 =
                evo_quantize_scratch_bytes(sh.in_dtype, sh.rotate, 3 * sh.batch, sh.heads, sh.seq, sh.head_dim);
            void *dx3[3] = {nullptr, nullptr, nullptr}, *dc3 = nullptr, *ds3 = nullptr, *copy3 = nullptr;
            /* the copy moves what the call moves (3 x 2n bytes read, 3n written) as 4.5n bytes read and written:
               from one half of its own buffer to the other */
            const size_t copy3_bytes = (3 * n * 3 / 2 + 255) / 256 * 256;
            ok = need3 != ~0ull && scr.fit(need3) && cuda_ok(cudaMalloc(&dc3, 3 * n), "cudaMalloc") &&
                 cuda_ok(cudaMalloc(&ds3, 3 * n_heads * 4), "cudaMalloc") &&
                 cuda_ok(cudaMalloc(&copy3, 2 * copy3_bytes), "cudaMalloc");
            for (int i = 0; ok && i < 3; i++)
                ok = cuda_ok(cudaMalloc(&dx3[i], n * 2), "cudaMalloc") &&
                     cuda_ok(cudaMemcpy(dx3[i], x.data(), n * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
            const void *xs[3] = {dx3[0], dx3[1], dx3[2]};
            auto quant3 = [&] {
                return (cudaError_t)evo_quantize_forward_multi(xs, 3, sh.in_dtype, sh.rotate, dc3, (float *)ds3,
                                                               sh.batch, sh.heads, sh.seq, sh.head_dim,
                                                               need3 ? scr.ptr : nullptr, scr.bytes, 0);
            };
            auto copy3x = [&] {
                return cudaMemcpyAsync((unsigned char *)copy3 + copy3_bytes, copy3, 3 * n * 3 / 2,
                                       cudaMemcpyDeviceToDevice, 0);
            };
            std::vector<double> tq3, tc3;
            ok = ok && time_reps(quant3, reps, flush, flush_bytes, tq3) && time_reps(copy3x, reps, flush, flush_bytes, tc3);
            size_t bad = 0;
            if (ok) { /* each input's last head equals the single call's */
                std::vector<uint8_t> c3(3 * n);
                std::vector<float> s3(3 * n_heads);
                ok = cuda_ok(cudaMemcpy(c3.data(), dc3, 3 * n, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
                     cuda_ok(cudaMemcpy(s3.data(), ds3, 3 * n_heads * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
                std::vector<uint8_t> want(head_elems);
                float s = 0;
                reference_head(&x[(n_heads - 1) * head_elems], sh.in_dtype, sh.rotate, (size_t)sh.seq, sh.head_dim,
                               want.data(), &s);
                for (int i = 0; ok && i < 3; i++) {
                    const size_t h = (size_t)(i + 1) * n_heads - 1;
                    bad += float_bits(s) != float_bits(s3[h]);
                    for (size_t e = 0; e < head_elems; e++) bad += c3[h * head_elems + e] != want[e];
                }
            }
            for (void *pv : dx3) cudaFree(pv);
            cudaFree(dc3);
            cudaFree(ds3);
            cudaFree(copy3);
            if (!ok) break;
            const double m3 = tq3[(size_t)reps / 2], c3m = tc3[(size_t)reps / 2];
            snprintf(spread, sizeof spread, "%.2f..%.2f", percentile(tq3, 1, 10), percentile(tq3, 9, 10));
            printf("%-34s %10.2f %16s %8.0f %10.2f %7.1f%% %9s  %s\n", "  q, k, v: 3 inputs, one call", m3, spread,
                   9.0 * (double)n / (m3 * 1e-6) / 1e9, c3m, 100.0 * c3m / m3, "-", bad ? "CODES DIFFER" : "bit-exact");
            ++*n_timed;
            if (bad) ++*failed;
        }
    }
    cudaFree(scr.ptr);
    cudaFree(flush);
    return ok;
}

} // namespace evo_qselftest

int main(int argc, char **argv)
{
    using namespace evo_qselftest;
    evo_selftest_main::start_info s;
    if (!evo_selftest_main::start(argc, argv, evo_export::timing_repetitions, s)) return 2;
    printf("genome  %s\nkey %s, arch %s\ndevice  %s (sm_%d%d, %d SMs), s.driver %d, s.runtime %d\n\n", EVO_EXPORT_GENOME,
           EVO_EXPORT_KEY, EVO_EXPORT_ARCH, s.prop.name, s.prop.major, s.prop.minor, s.prop.multiProcessorCount, s.driver,
           s.runtime);
    int n_cases = 0, n_timed = 0, failed = 0;
    if (!run_checks(&n_cases, &failed)) return 1;
    if (!s.a.check_only && !run_timing(s.a.only, s.a.reps, &n_timed, &failed)) return 1;
    return evo_selftest_main::finish(s.a, n_cases, n_timed, failed, "bit-exact checks");
}
#endif /* EVO_SELFTEST */
