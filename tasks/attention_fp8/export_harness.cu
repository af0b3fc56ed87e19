/* export_harness.cu — the host launcher and the self-test of every kernel `evo export` writes. evo appends this
 * text, unchanged, after the genome's own section (namespace evo_export: variants, timed shapes, tolerances), so it
 * is the same in every exported file. It is not a kernel template: evo never compiles it alone; tests/cli_export_nvcc.sh
 * and tests/cli_variants.sh build exported files with nvcc, with and without -DEVO_SELFTEST.
 */
#include <atomic>

namespace evo_export {

static const int n_variants = (int)(sizeof variants / sizeof variants[0]);
#ifdef EVO_EXPORT_DISPATCH
static const int n_entries = (int)(sizeof entries / sizeof entries[0]);
#endif

/* Per variant (and per FP16 twin), one bit per device on which its dynamic shared memory limit has been raised. */
static std::atomic<unsigned long long> smem_raised[4][sizeof variants / sizeof variants[0]];

/* What a launch is given: 8-bit codes for q, k, v (CODES), V in FP16 (V16: the FP16-V twin), or K and V in FP16
 * (KV16: the FP16-K-and-V twin); q is codes in every case. */
/* What p.k and p.v hold: the codes; V in FP16 (V16); K and V in FP16 (KV16); Vᵀ of the codes (VT: a V_PATH 5
 * kernel, after its transpose). */
enum operands { CODES = 0, V16 = 1, KV16 = 2, VT = 3 };
static const void *kernel_of(int i, operands m)
{
    return m == KV16  ? variants[i].kv16_kernel
           : m == V16 ? variants[i].v16_kernel
           : m == VT  ? (variants[i].convert == 2 ? variants[i].kernel : nullptr)
                      : variants[i].kernel;
}

/* The self-test sets this to run every variant on its checks; -1: pick by the problem. */
static int forced_variant = -1;

#ifdef EVO_EXPORT_DISPATCH
/* A dispatching file: the entry (genome) that serves the problem, by the table and rule of attn_dispatch_host.h
 * above (its bucket's winner; else the nearest bucket of its head dim); -1 when no entry has the head dim. */
static int dispatch_entry(int batch, int heads, int seq, int head_dim, int causal)
{
    const int b = attn_dispatch_pick(evo_dispatch_buckets, evo_dispatch_n_buckets, batch, heads, seq, head_dim, causal);
    return b < 0 ? -1 : evo_dispatch_buckets[b].entry;
}
#endif

/* By head dim (in a dispatching file: among the variants of the entry dispatch_entry picks); among those, the
 * large-problem variant when its grid fills min_waves waves of the device's SMs, a causal grid counting half (the
 * rule evo measured the kernel with: evo_variant_pick). */
static int find_variant(int head_dim, int batch, int heads, int seq, int causal)
{
    if (forced_variant >= 0) return variants[forced_variant].head_dim == head_dim ? forced_variant : -1;
#ifdef EVO_EXPORT_DISPATCH
    const int entry = dispatch_entry(batch, heads, seq, head_dim, causal);
    if (entry < 0) return -1;
#endif
    int sms = 0, dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
                                                  cudaSuccess)
        sms = 1 << 30; /* no device answer: the default variant */
    int best = -1;
    for (int i = 0; i < n_variants; i++) {
        if (variants[i].head_dim != head_dim) continue;
#ifdef EVO_EXPORT_DISPATCH
        if (variants[i].entry != entry) continue;
#endif
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
static cudaError_t raise_smem_limit(int i, operands m)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    std::atomic<unsigned long long> &raised = smem_raised[m][i];
    const unsigned long long bit = dev < 64 ? 1ull << dev : 0ull;
    if (bit && (raised.load(std::memory_order_acquire) & bit)) return cudaSuccess;
    e = cudaFuncSetAttribute(kernel_of(i, m), cudaFuncAttributeMaxDynamicSharedMemorySize, variants[i].smem_bytes);
    if (e == cudaSuccess && bit) raised.fetch_or(bit, std::memory_order_acq_rel);
    return e;
}

#if EVO_EXPORT_SM90
/* The driver's cuTensorMapEncodeTiled, looked up once through the runtime (no -lcuda needed). */
static evo_tmap_encode_fn tmap_encoder(void)
{
    static std::atomic<void *> fn{nullptr};
    void *f = fn.load(std::memory_order_acquire);
    if (!f) {
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !f)
            return nullptr;
        fn.store(f, std::memory_order_release);
    }
    return (evo_tmap_encode_fn)f;
}

/* The sm_90a family (attn_sm90_host.h's launch rules): tensor maps for these tensors, then the grid. V16, KV16: the
 * variant's FP16 twin, p.v (and p.k) pointing to FP16. after_pre: this call's conversion (K, V to FP16) or transpose
 * (Vᵀ) was launched just before, so the kernel is launched with programmatic stream serialization: it may start while
 * that kernel runs, and its TMA thread waits for that kernel's results before its first K/V load (griddepcontrol.wait;
 * nothing else it reads comes from that kernel, which began after all earlier work on the stream). */
static cudaError_t launch_sm90(int i, evo_attn_params &p, operands m, cudaStream_t stream, bool after_pre)
{
    const evo_tmap_encode_fn encode = tmap_encoder();
    if (!encode) return cudaErrorNotSupported;
    evo_sm90_genome g;
    memset(&g, 0, sizeof g);
    g.wg_rows = variants[i].wg_rows;
    g.consumers = variants[i].rows_per_block / variants[i].wg_rows;
    g.tile_n = variants[i].tile_n;
    g.persist = variants[i].persist;
    /* the tensor maps of K and V: FP16 for the twins, Vᵀ for a V_PATH 5 kernel (the other fields only size boxes
     * and grid) */
    g.v_path = m == KV16 ? 3 : m == V16 ? 2 : m == VT ? 5 : 0;
    evo_attn_tmaps t;
    if (attn_sm90_fill_tmaps(&t, &p, &g, encode) != 0) return cudaErrorInvalidValue;
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
    unsigned grid[3];
    attn_sm90_grid(&g, p.batch, p.heads, p.seq, sms, grid);
    void *args[] = {&p, &t};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid[0], grid[1], grid[2]);
    cfg.blockDim = dim3((unsigned)variants[i].threads);
    cfg.dynamicSmemBytes = (size_t)variants[i].smem_bytes;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = after_pre ? 1 : 0;
    return cudaLaunchKernelExC(&cfg, kernel_of(i, m), args);
}
#endif

/* The variant that serves the problem, -1 for none (a size below 1 or a head dim without a variant). */
static int variant_for(int batch, int heads, int seq, int head_dim, int causal)
{
    return seq < 1 || batch < 1 || heads < 1 ? -1 : find_variant(head_dim, batch, heads, seq, causal);
}

/* Bytes of workspace variant i needs for a problem: the FP16 K and V of a V_PATH 3 kernel (convert 1), Vᵀ of a
 * V_PATH 5 kernel (convert 2: B·H·D·S16), else 0. */
static size_t workspace_for(int i, int batch, int heads, int seq, int head_dim)
{
    if (i < 0 || !variants[i].convert) return 0;
    const size_t bhd = (size_t)batch * heads * head_dim;
    return variants[i].convert == 1 ? 4 * bhd * seq : bhd * (((size_t)seq + 15) / 16 * 16); /* attn_sm90_vt_seq */
}

/* Every launcher: the variant for the problem, the params, the launch. V16, KV16: V (and K) is FP16 and the variant
 * must have that FP16 twin (cudaErrorNotSupported when the kernel that serves the problem has none); the scale of an
 * FP16 operand may be NULL (1). On the codes (CODES), a V_PATH 3 kernel's K and V are converted to FP16 first, a
 * V_PATH 5 kernel's V transposed (then VT), into ws (ws_bytes) or into memory allocated and freed on the stream. */
static int forward(const void *q, const void *k, const void *v, const float *q_scale, const float *k_scale,
                   const float *v_scale, void *o, int batch, int heads, int seq, int head_dim, int causal,
                   float softmax_scale, cudaStream_t stream, operands m, void *ws = nullptr, size_t ws_bytes = 0,
                   bool after_pre = false)
{
    const int i = variant_for(batch, heads, seq, head_dim, causal);
    if (i < 0 || !q || !k || !v || !q_scale || (!k_scale && m != KV16) || (!v_scale && (m == CODES || m == VT)) ||
        !o || batch > 65535 || heads > 65535)
        return (int)cudaErrorInvalidValue;
    if (m != CODES && !kernel_of(i, m)) return (int)cudaErrorNotSupported;
#if EVO_EXPORT_SM90
    if (m == CODES && variants[i].convert) { /* into the workspace first: V_PATH 3 K and V in FP16, 5 Vᵀ */
        const size_t need = workspace_for(i, batch, heads, seq, head_dim);
        if (ws && ws_bytes < need) return (int)cudaErrorInvalidValue;
        void *own = nullptr;
        cudaError_t e = ws ? cudaSuccess : cudaMallocAsync(&own, need, stream);
        if (e != cudaSuccess) return (int)e;
        unsigned char *w = (unsigned char *)(ws ? ws : own);
        if (variants[i].convert == 1) {
            const unsigned long long n = (unsigned long long)batch * heads * seq * head_dim;
            evo_kv16_convert<16><<<(unsigned)((2 * (n / 16) + 255) / 256), 256, 0, stream>>>(
                (const unsigned char *)k, (const unsigned char *)v, (unsigned short *)w,
                (unsigned short *)(w + need / 2), n);
        } else {
            const int s16 = attn_sm90_vt_seq(seq);
            evo_vt_transpose<128><<<dim3((unsigned)((s16 + 127) / 128), (unsigned)(batch * heads)), 256, 0, stream>>>(
                (const unsigned char *)v, w, seq, s16, head_dim);
        }
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = (cudaError_t)(variants[i].convert == 1
                                  ? forward(q, w, w + need / 2, q_scale, k_scale, v_scale, o, batch, heads, seq,
                                            head_dim, causal, softmax_scale, stream, KV16, nullptr, 0, true)
                                  : forward(q, k, w, q_scale, k_scale, v_scale, o, batch, heads, seq, head_dim, causal,
                                            softmax_scale, stream, VT, nullptr, 0, true));
        if (own) {
            const cudaError_t f = cudaFreeAsync(own, stream);
            if (e == cudaSuccess) e = f;
        }
        return (int)e;
    }
#else
    (void)ws, (void)ws_bytes;
#endif
    cudaError_t e = raise_smem_limit(i, m);
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
#if EVO_EXPORT_SM90
    if (variants[i].family == 1) return (int)launch_sm90(i, p, m, stream, after_pre);
#else
    (void)after_pre;
#endif
    void *args[] = {&p};
    const int rows = variants[i].rows_per_block;
    const dim3 grid((unsigned)((seq + rows - 1) / rows), (unsigned)heads, (unsigned)batch);
    return (int)cudaLaunchKernel(variants[i].kernel, grid, dim3((unsigned)variants[i].threads), args,
                                 (size_t)variants[i].smem_bytes, stream);
}

/* 1 when the kernel that serves the problem has the twin that takes operands m, 0 otherwise. */
static int twin_serves(int batch, int heads, int seq, int head_dim, int causal, operands m)
{
    const int i = variant_for(batch, heads, seq, head_dim, causal);
    return i >= 0 && kernel_of(i, m) != nullptr;
}

} // namespace evo_export

extern "C" const char *evo_attention_genome(void) { return EVO_EXPORT_GENOME; }

#ifdef EVO_EXPORT_DISPATCH
/* The entry (0..evo_attention_entries()-1) the launcher runs for a problem; -1: none has its head dim. */
extern "C" int evo_attention_dispatch(int batch, int heads, int seq, int head_dim, int causal)
{
    return batch < 1 || heads < 1 || seq < 1 ? -1 : evo_export::dispatch_entry(batch, heads, seq, head_dim, causal);
}
extern "C" int evo_attention_entries(void) { return evo_export::n_entries; }
extern "C" const char *evo_attention_entry_genome(int i)
{
    return i >= 0 && i < evo_export::n_entries ? evo_export::entries[i].genome : nullptr;
}
#endif

extern "C" int evo_attention_format(void) { return EVO_EXPORT_FORMAT; }

/* O = softmax(Q·Kᵀ·softmax_scale [causal]) · V. q, k, v: 8-bit codes [B, H, S, D]; *_scale: one float per
 * (batch, head), index b*H + h; o: fp16 [B, H, S, D]; all device pointers. Returns the launch's cudaError_t;
 * cudaErrorInvalidValue for a head dim this file has no variant for, a null pointer or a size out of range.
 * Asynchronous on `stream`; thread-safe. */
extern "C" int evo_attention_forward(const void *q, const void *k, const void *v, const float *q_scale,
                                     const float *k_scale, const float *v_scale, void *o, int batch, int heads,
                                     int seq, int head_dim, int causal, float softmax_scale, cudaStream_t stream)
{
    return evo_export::forward(q, k, v, q_scale, k_scale, v_scale, o, batch, heads, seq, head_dim, causal,
                               softmax_scale, stream, evo_export::CODES);
}

/* As evo_attention_forward, with V given in FP16 [B, H, S, D] (v16; v_scale, when not NULL, still multiplies it per
 * (batch, head); NULL: V as given) and q, k as codes: where the kernel that serves the problem multiplies P·V in
 * FP16 (an sm_90a kernel with V_PATH 1), its FP16-V twin loads V as given and converts nothing; for v16 = the codes'
 * e4m3 values it returns exactly what evo_attention_forward returns on the codes. cudaErrorNotSupported when the
 * problem's kernel has no twin (evo_attention_v16_supported says beforehand). */
extern "C" int evo_attention_forward_v16(const void *q, const void *k, const void *v16, const float *q_scale,
                                         const float *k_scale, const float *v_scale, void *o, int batch, int heads,
                                         int seq, int head_dim, int causal, float softmax_scale, cudaStream_t stream)
{
    return evo_export::forward(q, k, v16, q_scale, k_scale, v_scale, o, batch, heads, seq, head_dim, causal,
                               softmax_scale, stream, evo_export::V16);
}

/* 1 when evo_attention_forward_v16 serves this problem (its kernel has an FP16-V twin), 0 otherwise. */
extern "C" int evo_attention_v16_supported(int batch, int heads, int seq, int head_dim, int causal)
{
    return evo_export::twin_serves(batch, heads, seq, head_dim, causal, evo_export::V16);
}

/* As evo_attention_forward_v16, with K given in FP16 [B, H, S, D] too (k_scale, when not NULL, still multiplies it;
 * NULL: K as given) and q as codes: where the kernel that serves the problem multiplies both Q·Kᵀ and P·V in FP16 (an
 * sm_90a kernel with QK_MODE 2 and V_PATH 1), its FP16-K-and-V twin loads K and V as given and converts Q alone; for
 * k16, v16 = the codes' e4m3 values it returns exactly what evo_attention_forward returns on the codes.
 * cudaErrorNotSupported when the problem's kernel has no such twin (evo_attention_kv16_supported says beforehand). */
extern "C" int evo_attention_forward_kv16(const void *q, const void *k16, const void *v16, const float *q_scale,
                                          const float *k_scale, const float *v_scale, void *o, int batch, int heads,
                                          int seq, int head_dim, int causal, float softmax_scale, cudaStream_t stream)
{
    return evo_export::forward(q, k16, v16, q_scale, k_scale, v_scale, o, batch, heads, seq, head_dim, causal,
                               softmax_scale, stream, evo_export::KV16);
}

/* 1 when evo_attention_forward_kv16 serves this problem (its kernel has an FP16-K-and-V twin), 0 otherwise. */
extern "C" int evo_attention_kv16_supported(int batch, int heads, int seq, int head_dim, int causal)
{
    return evo_export::twin_serves(batch, heads, seq, head_dim, causal, evo_export::KV16);
}

/* Bytes of workspace evo_attention_forward_ws needs for this problem: 4·B·H·S·D (K and V in FP16) where the kernel
 * that serves it takes them converted (V_PATH 3), B·H·D·S16 (Vᵀ, S16 = S rounded up to 16) where it takes V
 * transposed (V_PATH 5), 0 otherwise (and for a problem no kernel serves). */
extern "C" size_t evo_attention_workspace_bytes(int batch, int heads, int seq, int head_dim, int causal)
{
    return evo_export::workspace_for(evo_export::variant_for(batch, heads, seq, head_dim, causal), batch, heads, seq,
                                     head_dim);
}

/* As evo_attention_forward, with the caller's workspace (device memory, 16-byte aligned, at least
 * evo_attention_workspace_bytes; may be NULL where that is 0; cudaErrorInvalidValue when too small): a V_PATH 3
 * kernel's FP16 K and V (a V_PATH 5 kernel's Vᵀ) go there instead of into memory the call allocates and frees on
 * the stream. */
extern "C" int evo_attention_forward_ws(const void *q, const void *k, const void *v, const float *q_scale,
                                        const float *k_scale, const float *v_scale, void *o, int batch, int heads,
                                        int seq, int head_dim, int causal, float softmax_scale, void *workspace,
                                        size_t workspace_bytes, cudaStream_t stream)
{
    return evo_export::forward(q, k, v, q_scale, k_scale, v_scale, o, batch, heads, seq, head_dim, causal,
                               softmax_scale, stream, evo_export::CODES, workspace, workspace_bytes);
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

#include "export_selftest.cuh"

namespace evo_selftest {
using namespace evo_selftest_fmt; /* float_bits, half_to_float, double_to_half, e4m3_encode, cuda_ok, ... */

/* ---- number formats: evo's rules (tasks/attention_fp8/attn_ref.c), as plain C++ ---- */

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
    int batch = 0, heads = 0, seq = 0, head_dim = 0, causal = 0, dist = 0;
    double scale = 0;
    size_t n = 0; /* elements per tensor */
    std::vector<float> deq[3];
    std::vector<uint8_t> codes[3];  /* the 8-bit codes the kernel reads, and one scale per head */
    std::vector<float> scales[3];
    unsigned char *d_codes[3] = {nullptr, nullptr, nullptr};
    float *d_scales[3] = {nullptr, nullptr, nullptr};
    unsigned char *d_out_alloc = nullptr; /* GUARD_BYTES, then the output, then GUARD_BYTES */
    void *d_out = nullptr;
    void *d_ws = nullptr; /* the FP16 K and V of a V_PATH 3 kernel (evo_attention_forward_ws), when a variant has one */
    size_t ws_bytes = 0;
};

static double softmax_scale_for(int head_dim)
{
    return evo_export::cfg_softmax_scale > 0 ? evo_export::cfg_softmax_scale : 1.0 / sqrt((double)head_dim);
}

static bool problem_make(problem &p, int batch, int heads, int seq, int head_dim, int causal, int dist,
                         uint64_t seed)
{
    p.batch = batch, p.heads = heads, p.seq = seq, p.head_dim = head_dim, p.causal = causal, p.dist = dist;
    p.scale = softmax_scale_for(head_dim);
    const size_t head_elems = (size_t)seq * head_dim, n_heads = (size_t)batch * heads;
    p.n = head_elems * n_heads;
    std::vector<uint16_t> x(p.n);
    for (int t = 0; t < 3; t++) {
        std::vector<uint8_t> &codes = p.codes[t];
        std::vector<float> &scales = p.scales[t];
        codes.resize(p.n);
        scales.resize(n_heads);
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
    /* the workspace the problem's variant asks for (the forced one in a variant's own checks): any variant's most */
    p.ws_bytes = 0;
    for (int i = 0; i < evo_export::n_variants; i++)
        p.ws_bytes = std::max(p.ws_bytes, evo_export::workspace_for(i, p.batch, p.heads, p.seq, p.head_dim));
    if (p.ws_bytes && !cuda_ok(cudaMalloc(&p.d_ws, p.ws_bytes), "cudaMalloc")) return false;
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
    cudaFree(p.d_ws);
}

/* The launcher on p's codes, with p's workspace (a V_PATH 3 kernel converts K and V into it); own_ws: without it,
 * the launcher allocating its own on the stream (evo_attention_forward). */
static cudaError_t problem_launch(const problem &p, cudaStream_t stream, bool own_ws = false)
{
    if (own_ws)
        return (cudaError_t)evo_attention_forward(p.d_codes[0], p.d_codes[1], p.d_codes[2], p.d_scales[0],
                                                  p.d_scales[1], p.d_scales[2], p.d_out, p.batch, p.heads, p.seq,
                                                  p.head_dim, p.causal, (float)p.scale, stream);
    return (cudaError_t)evo_attention_forward_ws(p.d_codes[0], p.d_codes[1], p.d_codes[2], p.d_scales[0],
                                                 p.d_scales[1], p.d_scales[2], p.d_out, p.batch, p.heads, p.seq,
                                                 p.head_dim, p.causal, (float)p.scale, p.d_ws, p.ws_bytes, stream);
}

/* Output row i of head bh in FP64 on the dequantized inputs: the exact reference both accuracy classes are judged
 * against. */
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

/* ---- the fp8 accuracy class: the FP8 model (attn_numerics.h, the same code evo's gate runs) ---- */
static inline float round_e4m3(float x) { return e4m3_decode(e4m3_encode(x)); }
#define AN_FN static inline
#define AN_E4M3_ROUND(x) round_e4m3(x)
#include "attn_numerics.h"

/* Row i of head bh of the FP8 model, its scores added in order `phase`, on the problem's codes. */
static void model_row(const problem &p, size_t bh, int i, int phase, double *out)
{
    const int D = p.head_dim, S = p.seq;
    const size_t head = (size_t)S * D;
    const int n_keys = p.causal ? i + 1 : S;
    std::vector<float> q((size_t)D), k((size_t)n_keys * D), v((size_t)n_keys * D), acc((size_t)D), o((size_t)D);
    for (int t = 0; t < D; t++) q[(size_t)t] = e4m3_decode(p.codes[0][bh * head + (size_t)i * D + t]);
    for (size_t j = 0; j < (size_t)n_keys * D; j++) {
        k[j] = e4m3_decode(p.codes[1][bh * head + j]);
        v[j] = e4m3_decode(p.codes[2][bh * head + j]);
    }
    const float qk = p.scales[0][bh] * p.scales[1][bh], sm = (float)p.scale * 1.4426950408889634f;
    an_model_row(q.data(), k.data(), v.data(), n_keys, D, qk, sm, p.scales[2][bh], phase, acc.data(), o.data());
    for (int t = 0; t < D; t++) out[t] = o[(size_t)t];
}

struct verdict {
    double rel_l2 = 0, max_abs = 0;
    size_t n = 0, n_over = 0, n_nonfinite = 0, guard_bytes = 0;
    bool pass = false;
    char why[160] = "";
};

/* Copies the output back and compares the given rows of every head (all rows when rows is empty) with the
 * FP64 reference, by the accuracy class of variant vi, the one that ran (a dispatching file can hold both): every
 * element written and finite, |out - ref| <= atol·RMS(ref) + rtol·|ref| for all but max_frac_over of them, rel-L2
 * within its tolerance, and the guard bands untouched. */
static bool problem_check(const problem &p, const std::vector<int> &rows, int vi, verdict &vd)
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
    const bool fp8 = vi >= 0 && evo_export::variants[vi].accuracy == 1;
    const size_t n_heads = (size_t)p.batch * p.heads;
    std::vector<double> ref, got, mod[AN_FP8_ORDERS];
    std::vector<double> row((size_t)D);
    for (size_t bh = 0; bh < n_heads; bh++)
        for (int i : use) {
            reference_row(p, bh, i, row.data());
            for (int t = 0; t < D; t++) {
                ref.push_back(row[(size_t)t]);
                got.push_back(half_to_float(out[(bh * p.seq + (size_t)i) * D + t]));
            }
            for (int ph = 0; fp8 && ph < AN_FP8_ORDERS; ph++) {
                model_row(p, bh, i, ph, row.data());
                for (int t = 0; t < D; t++) mod[ph].push_back(row[(size_t)t]);
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
        if (!fp8 && (!finite || !(diff <= atol + rtol * fabs(ref[i])))) vd.n_over++;
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
    else if (fp8) { /* each head against twice the FP8 model's error on it (evo's fp8 gate, attn_gate.h) */
        const size_t per = vd.n / n_heads;
        for (size_t h = 0; h < n_heads && !vd.why[0]; h++) {
            double sr = 0, sk = 0, sm = 0, mk = 0, mm = 0, mr = 0;
            for (size_t i = h * per; i < (h + 1) * per; i++) {
                sr += ref[i] * ref[i];
                sk += (got[i] - ref[i]) * (got[i] - ref[i]);
                mr = std::max(mr, fabs(ref[i]));
            }
            for (int ph = 0; ph < AN_FP8_ORDERS; ph++) { /* the model's error: the largest over its orders */
                double s2 = 0;
                for (size_t i = h * per; i < (h + 1) * per; i++) {
                    s2 += (mod[ph][i] - ref[i]) * (mod[ph][i] - ref[i]);
                    mm = std::max(mm, fabs(mod[ph][i] - ref[i]));
                }
                sm = std::max(sm, s2);
            }
            double rel_bound, abs_bound;
            an_fp8_budget(sr > 0 ? sqrt(sm / sr) : sqrt(sm), mm, mr, &rel_bound, &abs_bound);
            if (p.dist == DIST_LARGE) /* huge logits: the rel-L2 of the head within AN_FP8_SATURATED_REL (attn_gate.h) */
                rel_bound = AN_FP8_SATURATED_REL, abs_bound = INFINITY;
            const double rel = sr > 0 ? sqrt(sk / sr) : sqrt(sk);
            for (size_t i = h * per; i < (h + 1) * per; i++) {
                const bool over = !(fabs(got[i] - ref[i]) <= abs_bound);
                vd.n_over += over;
                mk = std::max(mk, fabs(got[i] - ref[i]));
            }
            if (!(rel <= rel_bound))
                snprintf(vd.why, sizeof vd.why, "head %zu: rel-L2 %.3g > %.3g (2 x the FP8 model's + 1e-3)", h, rel,
                         rel_bound);
            else if (vd.n_over)
                snprintf(vd.why, sizeof vd.why, "head %zu: max |out - ref| %.3g > %.3g (2 x the FP8 model's max + "
                         "2^-10 max|ref|)", h, mk, abs_bound);
        }
    } else if (vd.rel_l2 > evo_export::tol_rel_l2)
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

/* The FP16 twins on variant vi against evo_attention_forward on the codes: m = V16, evo_attention_forward_v16 with V
 * given as the codes' e4m3 values in FP16; m = KV16, evo_attention_forward_kv16 with K and V so. Every variant with
 * that twin gives the same bits on 8 problems; every variant without one is refused (cudaErrorNotSupported, nothing
 * launched). A V_PATH 3 kernel is its own KV16 entry: there the codes' call converts K and V on the GPU (into the
 * problem's workspace, and into one evo_attention_forward allocates: both checked), against the values converted
 * here. Returns false when CUDA failed; *failed counts the cases that did not pass. */
static bool run_fp16_checks(evo_export::operands m, int *n_cases, int *failed)
{
    static const int seqs[] = {77, 200}, dists[] = {DIST_NORMAL, DIST_LARGE};
    const char *what = m == evo_export::KV16 ? "FP16 K and V" : "FP16 V",
               *fn = m == evo_export::KV16 ? "evo_attention_forward_kv16" : "evo_attention_forward_v16";
    auto supported = m == evo_export::KV16 ? evo_attention_kv16_supported : evo_attention_v16_supported;
    auto forward = m == evo_export::KV16 ? evo_attention_forward_kv16 : evo_attention_forward_v16;
    for (int vi = 0; vi < evo_export::n_variants; vi++) {
        const int D = evo_export::variants[vi].head_dim;
        const bool twin = evo_export::kernel_of(vi, m) != nullptr;
        evo_export::forced_variant = vi;
        const int says = supported(2, 3, 77, D, 0);
        /* without a twin: refused before anything is launched (the pointers are never used) */
        const int rc = twin ? 0
                            : forward((void *)1, (void *)1, (void *)1, (const float *)1, (const float *)1, nullptr,
                                      (void *)1, 2, 3, 77, D, 0, 1.0f, 0);
        evo_export::forced_variant = -1;
        ++*n_cases;
        if (says != (int)twin || (!twin && rc != (int)cudaErrorNotSupported)) {
            ++*failed;
            printf("  FAIL  variant %d: %s: the supported query says %d%s\n", vi, what, says,
                   twin || rc == (int)cudaErrorNotSupported ? "" : ", the launcher does not refuse it");
        }
        if (!twin) continue;
        for (int si = 0; si < 2; si++)
            for (int causal = 0; causal < 2; causal++)
                for (int dist : dists) {
                    problem p;
                    const int S = seqs[si];
                    bool ok = problem_make(p, 2, 3, S, D, causal, dist, 7000 + (uint64_t)((vi * 2 + si) * 2 + causal));
                    /* the codes' values in FP16: [0] K, [1] V */
                    std::vector<uint16_t> h16[2] = {std::vector<uint16_t>(p.n), std::vector<uint16_t>(p.n)};
                    for (int t = 0; t < 2; t++)
                        for (size_t j = 0; j < p.n; j++)
                            h16[t][j] = double_to_half((double)e4m3_decode(p.codes[1 + t][j]));
                    void *d16[2] = {nullptr, nullptr};
                    std::vector<unsigned char> a(p.n * 2), b(p.n * 2), c;
                    evo_export::forced_variant = vi;
                    for (int t = 0; t < 2; t++)
                        ok = ok && cuda_ok(cudaMalloc(&d16[t], p.n * 2), "cudaMalloc") &&
                             cuda_ok(cudaMemcpy(d16[t], h16[t].data(), p.n * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
                    const void *k = m == evo_export::KV16 ? d16[0] : p.d_codes[1];
                    ok = ok && cuda_ok(cudaMemset(p.d_out, 0xff, p.n * 2), "poison") &&
                         cuda_ok(problem_launch(p, 0), "launch") &&
                         cuda_ok(cudaMemcpy(a.data(), p.d_out, p.n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
                         cuda_ok(cudaMemset(p.d_out, 0xff, p.n * 2), "poison") &&
                         cuda_ok((cudaError_t)forward(p.d_codes[0], k, d16[1], p.d_scales[0], p.d_scales[1],
                                                      p.d_scales[2], p.d_out, p.batch, p.heads, p.seq, p.head_dim,
                                                      p.causal, (float)p.scale, 0),
                                 what) &&
                         cuda_ok(cudaDeviceSynchronize(), "kernel") &&
                         cuda_ok(cudaMemcpy(b.data(), p.d_out, p.n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
                    if (ok && evo_export::variants[vi].convert) { /* the launcher's own workspace */
                        c.resize(p.n * 2);
                        ok = cuda_ok(cudaMemset(p.d_out, 0xff, p.n * 2), "poison") &&
                             cuda_ok(problem_launch(p, 0, true), "launch") &&
                             cuda_ok(cudaDeviceSynchronize(), "kernel") &&
                             cuda_ok(cudaMemcpy(c.data(), p.d_out, p.n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
                    }
                    evo_export::forced_variant = -1;
                    cudaFree(d16[0]);
                    cudaFree(d16[1]);
                    problem_free(p);
                    if (!ok) return false;
                    ++*n_cases;
                    if (a != b || (!c.empty() && c != a)) {
                        ++*failed;
                        if (a == b) std::swap(b, c); /* the allocating call is the one that differs */
                        size_t diff = 0;
                        for (size_t j = 0; j < p.n * 2; j += 2) diff += memcmp(&a[j], &b[j], 2) != 0;
                        printf("  FAIL  %s, variant %d D=%d S=%d causal=%d %s: %zu of %zu elements differ\n", what, vi,
                               D, S, causal, dist_names[dist], diff, p.n);
                    }
                }
        printf("check  D=%-3d %s (%s), variant %d: the same bits as the codes on 8 problems\n", D, what, fn, vi);
    }
    return true;
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
                    ok = ok && problem_check(p, std::vector<int>(), vi, vd);
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
#ifdef EVO_EXPORT_DISPATCH
    /* The launcher's choice: each timed shape runs the winner of its bucket. */
    const int n_shapes = (int)(sizeof evo_export::timed_shapes / sizeof evo_export::timed_shapes[0]);
    for (int si = 0; si < n_shapes; si++) {
        const evo_export::shape &sh = evo_export::timed_shapes[si];
        const int got = evo_attention_dispatch(sh.batch, sh.heads, sh.seq, sh.head_dim, sh.causal);
        ++*n_cases;
        if (got != sh.entry) {
            ++*failed;
            printf("  FAIL  %s dispatches to entry %d, its bucket's winner is entry %d\n", sh.name, got, sh.entry);
        }
    }
#endif
    /* The launcher's own contract: a head dim without a variant is refused, nothing launched. */
    const int rc = evo_attention_forward((void *)1, (void *)1, (void *)1, (const float *)1, (const float *)1,
                                         (const float *)1, (void *)1, 1, 1, 16, 96, 0, 1.0f, 0);
    ++*n_cases;
    if (rc != (int)cudaErrorInvalidValue) {
        ++*failed;
        printf("  FAIL  head_dim 96 returned %d, want cudaErrorInvalidValue (%d)\n", rc, (int)cudaErrorInvalidValue);
    }
    /* The workspace: 4·B·H·S·D bytes for a V_PATH 3 kernel, B·H·D·S16 for a V_PATH 5 kernel (S = 77: S16 = 80), 0
     * for every other; one byte short is refused, nothing launched. */
    for (int vi = 0; vi < evo_export::n_variants; vi++) {
        const int D = evo_export::variants[vi].head_dim, cv = evo_export::variants[vi].convert;
        const size_t want = cv == 1 ? (size_t)4 * 2 * 3 * 77 * D : cv == 2 ? (size_t)2 * 3 * 80 * D : 0;
        evo_export::forced_variant = vi;
        const size_t got = evo_attention_workspace_bytes(2, 3, 77, D, 0);
        const int short_rc = want ? evo_attention_forward_ws((void *)1, (void *)1, (void *)1, (const float *)1,
                                                             (const float *)1, (const float *)1, (void *)1, 2, 3, 77,
                                                             D, 0, 1.0f, (void *)16, want - 1, 0)
                                  : (int)cudaErrorInvalidValue;
        evo_export::forced_variant = -1;
        ++*n_cases;
        if (got != want || short_rc != (int)cudaErrorInvalidValue) {
            ++*failed;
            printf("  FAIL  variant %d: workspace %zu bytes, want %zu; one byte short returned %d\n", vi, got, want,
                   short_rc);
        }
        if (cv != 2) continue;
        /* V_PATH 5: the transpose into the caller's workspace and into one the launcher allocates, the same bits */
        for (int causal = 0; causal < 2; causal++) {
            problem p;
            std::vector<unsigned char> a(2 * 2 * 3 * 77 * (size_t)D), b(a.size());
            evo_export::forced_variant = vi;
            bool ok = problem_make(p, 2, 3, 77, D, causal, DIST_NORMAL, 9100 + (uint64_t)(2 * vi + causal)) &&
                      cuda_ok(cudaMemset(p.d_out, 0xff, p.n * 2), "poison") && cuda_ok(problem_launch(p, 0), "launch") &&
                      cuda_ok(cudaDeviceSynchronize(), "kernel") && cuda_ok(cudaMemcpy(a.data(), p.d_out, p.n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy") &&
                      cuda_ok(cudaMemset(p.d_out, 0xff, p.n * 2), "poison") &&
                      cuda_ok(problem_launch(p, 0, true), "launch") && cuda_ok(cudaDeviceSynchronize(), "kernel") &&
                      cuda_ok(cudaMemcpy(b.data(), p.d_out, p.n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
            evo_export::forced_variant = -1;
            problem_free(p);
            if (!ok) return false;
            ++*n_cases;
            if (a != b) {
                ++*failed;
                printf("  FAIL  variant %d (V_PATH 5) causal=%d: the launcher's own workspace gives other bits\n", vi,
                       causal);
            }
        }
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
            ok = problem_check(p, rows, evo_export::find_variant(sh.head_dim, sh.batch, sh.heads, sh.seq, sh.causal),
                               vd);
        }
        problem_free(p);
        if (!ok) break;
        std::sort(ts.begin(), ts.end());
        const double med = ts[(size_t)reps / 2];
        char name[96], spread[48], evo_us[32];
        snprintf(name, sizeof name, "%s(%d,%d,%d,%d)%s", sh.name, sh.batch, sh.heads, sh.seq, sh.head_dim,
                 sh.causal ? " causal" : "");
#ifdef EVO_EXPORT_DISPATCH
        snprintf(name + strlen(name), sizeof name - strlen(name), " e%d", sh.entry);
#endif
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
    evo_selftest_main::start_info s;
    if (!evo_selftest_main::start(argc, argv, evo_export::timing_repetitions, s)) return 2;
    printf("genome  %s\nformat  %s, key %s\ndevice  %s (sm_%d%d), s.driver %d, s.runtime %d\n\n", EVO_EXPORT_GENOME,
           EVO_EXPORT_FORMAT == EVO_FORMAT_E4M3 ? "e4m3" : "u8sim", EVO_EXPORT_KEY, s.prop.name, s.prop.major, s.prop.minor,
           s.driver, s.runtime);
#ifdef EVO_EXPORT_DISPATCH
    for (int i = 0; i < evo_export::n_entries; i++)
        printf("entry %d  %s  (%s, key %.8s)\n", i, evo_export::entries[i].genome,
               evo_export::entries[i].accuracy ? "fp8" : "exact", evo_export::entries[i].key);
    printf("\n");
#endif
    int n_cases = 0, n_timed = 0, failed = 0;
    if (!run_checks(&n_cases, &failed) || !run_fp16_checks(evo_export::V16, &n_cases, &failed) ||
        !run_fp16_checks(evo_export::KV16, &n_cases, &failed))
        return 1;
    if (!s.a.check_only && !run_timing(s.a.only, s.a.reps, &n_timed, &failed)) return 1;
    return evo_selftest_main::finish(s.a, n_cases, n_timed, failed, "correctness checks");
}
#endif /* EVO_SELFTEST */
