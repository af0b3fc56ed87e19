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
    int stages;    /* modes resident, streamed and piped: plan.stages (chunks in each shared-memory ring); mode
                      local: 1 when a chunk's rotated floats wait in shared memory (keep 1), else 0; 0 otherwise */
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
    int keep;      /* 0, 1, 2, 4, 8, 16: vectors per thread held in registers between the passes (mode cluster);
                      mode local: 1 keeps a chunk's rotated floats in shared memory from its absmax to its encoding
                      (rotated shapes with fused_rot; one read and one rotation an element), 0 re-reads and
                      re-rotates */
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
    unsigned smem;      /* dynamic shared memory bytes (modes resident, staged, streamed, piped, local with keep 1 on
                           rotated shapes; 0 otherwise): above 48 KiB the kernel needs
                           MaxDynamicSharedMemorySize set to it */
    int cooperative;    /* 1: every block must be resident at once: a cooperative launch (launch attribute), which
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

/* A call's size class, by which an exported quantizer holding several genomes picks one (with its rotation; evo's
 * dispatch buckets, docs/usage.md): k for n_elems in 2^(k-1)+1 .. 2^k, n_elems = every element of the call (all of
 * its inputs), and EVO_QUANT_SIZE_CLASS_MIN for every smaller call. */
#define EVO_QUANT_SIZE_CLASS_MIN 20
EVO_QUANT_HD static inline int evo_quant_size_class(unsigned long long n_elems)
{
    int k = EVO_QUANT_SIZE_CLASS_MIN;
    while (k < 62 && (1ull << k) < n_elems) k++;
    return k;
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

/* Mode local with bps blocks per SM: the grid (at most one block per chunk; a multiple of the chunks per head cph
 * when that keeps 7/8 of the blocks) and the lag (the rounds a head spans after its first, at least slack). */
static inline void evo_quant_local_grid(unsigned long long chunks, unsigned long long cph, int num_sms,
                                        unsigned long long bps, int slack, unsigned long long *grid,
                                        unsigned long long *lag)
{
    unsigned long long g = (unsigned long long)num_sms * bps;
    if (g > chunks) g = chunks;
    const unsigned long long whole = g - g % cph;
    if (whole * 8ull >= g * 7ull) g = whole;
    unsigned long long l = (cph - 1ull + g - 1ull) / g;
    if (l < (unsigned long long)slack) l = (unsigned long long)slack;
    *grid = g, *lag = l;
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
        (k->cluster != 1 || (k->keep != 0 && !(k->mode == EVO_QUANT_MODE_LOCAL && k->keep == 1))))
        EVO_QUANT_REJECT("cluster applies to modes 2, 5 and 8, keep to modes 2 and 7 (mode 7: 0 or 1; 1 and 0 "
                         "otherwise)");
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
        const unsigned long long bps0 = (unsigned long long)k->warps >= wps ? 1ull : wps / k->warps;
        unsigned long long grid, lag;
        evo_quant_local_grid(chunks, p.chunks_per_head, num_sms, bps0, k->slack, &grid, &lag);
        unsigned long long kept = 0; /* keep 1, rotated: lag + 1 chunks of floats a block (Cfg::LOCAL_KEEP) */
        if (k->keep == 1 && rotate && k->fused_rot) {
            /* the most blocks per SM whose slots fit, the grid (and with it the lag) shrinking with them; where
             * none fits (a head spanning many rounds), the kernel re-reads and re-rotates as with keep 0 */
            for (unsigned long long bps = bps0; bps >= 1; bps--) {
                unsigned long long g, lg;
                evo_quant_local_grid(chunks, p.chunks_per_head, num_sms, bps, k->slack, &g, &lg);
                const unsigned long long bytes = (lg + 1ull) * p.chunk_elems * 4ull;
                if (bytes <= evo_quant_smem_budget(arch) && bps * (bytes + 2048ull) <= evo_quant_smem_per_sm(arch)) {
                    grid = g, lag = lg, kept = bytes;
                    break;
                }
            }
            p.stages = kept ? 1 : 0;
        }
        p.chain_lag = (int)lag;
        p.scratch_bytes = rot + 16ull + 4ull * chunks;
        p.zero_scratch_once = 1;
        /* plain: a waiting thread computes what it waits for; with the rotation fused into the kernel it cannot
         * (Cfg::LOCAL_HELP) and the grid must be resident at once: a cooperative launch */
        evo_quant_launch *l = evo_quant_add_launch(&p, EVO_QUANT_K_MAIN, grid, threads);
        l->cooperative = rotate && k->fused_rot;
        l->smem = (unsigned)kept;
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
