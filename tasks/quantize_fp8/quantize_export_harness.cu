/* quantize_export_harness.cu — the host launcher and the self-test of every quantize_fp8 kernel `evo export`
 * writes. evo appends this text, unchanged, after evo_quantize_abi.h, quantize_fp8.cu and the genomes' own section
 * (the kernels' explicit instantiations, namespace evo_export: the qentry table of genomes and knobs, the qvariant
 * table, the qbucket dispatch table, timed shapes), so it is the same in every exported quantizer, of one genome or
 * a dispatching one. It is not a kernel template: evo never compiles it alone;
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

static const int n_entries = (int)(sizeof entries / sizeof entries[0]);

/* The self-test's: >= 0 runs every call on that entry instead of the dispatched one (never set by a caller). */
static int forced_entry = -1;

static int find_qvariant(int head_dim, int in_dtype, int rotate, int entry)
{
    for (int i = 0; i < n_qvariants; i++)
        if (variants[i].head_dim == head_dim && variants[i].in_dtype == in_dtype && variants[i].rotate == rotate &&
            variants[i].entry == entry)
            return i;
    return -1;
}

/* The entry a call of n_elems elements (all its inputs) with this rotation runs: the bucket of its rotation and
 * size class, else the nearest size class of its rotation (ties: the smaller), else the nearest of the other
 * rotation; entry 0 without buckets. */
static int pick_entry(int rotate, unsigned long long n_elems)
{
    if (forced_entry >= 0) return forced_entry;
    const int k = evo_quant_size_class(n_elems);
    int best = -1, best_d = 0, best_k = 0;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int b = 0; b < n_buckets; b++) {
            const bool same = (buckets[b].rotate != 0) == (rotate != 0); /* pass 0: its rotation; 1: the other */
            if (same != (pass == 0)) continue;
            const int d = buckets[b].size_class > k ? buckets[b].size_class - k : k - buckets[b].size_class;
            if (best < 0 || d < best_d || (d == best_d && buckets[b].size_class < best_k))
                best = b, best_d = d, best_k = buckets[b].size_class;
        }
    return best < 0 ? 0 : buckets[best].entry;
}

/* The plan of one call on the current device; cudaErrorInvalidValue for a combination or shape this file cannot
 * run. */
static cudaError_t resolve(int in_dtype, int rotate, int batch, int heads, int seq, int head_dim, qcall *c)
{
    if ((in_dtype != EVO_QUANT_IN_F16 && in_dtype != EVO_QUANT_IN_BF16) || (rotate != 0 && rotate != 1))
        return cudaErrorInvalidValue;
    if (batch < 1 || heads < 1 || seq < 1 || head_dim < 1) return cudaErrorInvalidValue; /* the plan says why */
    const int entry = pick_entry(rotate, (unsigned long long)batch * (unsigned long long)heads *
                                             (unsigned long long)seq * (unsigned long long)head_dim);
    c->vi = find_qvariant(head_dim, in_dtype, rotate, entry);
    if (c->vi < 0) return cudaErrorInvalidValue;
    const evo_quant_knobs &knobs = entries[entry].knobs;
    int dev = 0, major = 0, minor = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
    if (evo_quant_plan_make(&knobs, batch, heads, seq, head_dim, rotate, major * 10 + minor, sms, &c->plan, 0, 0) != 0)
        return cudaErrorInvalidValue;
    const int unfused = rotate && !knobs.fused_rot;
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

/* The genomes of the file (1 for a single export) and the one of entry i (NULL out of range). */
extern "C" int evo_quantize_entries(void) { return evo_export::n_entries; }
extern "C" const char *evo_quantize_entry_genome(int i)
{
    return i >= 0 && i < evo_export::n_entries ? evo_export::entries[i].genome : (const char *)0;
}

/* The entry a call of evo_quantize_forward with these arguments runs (for evo_quantize_forward_multi: batch times
 * the inputs); -1 when none can run it. */
extern "C" int evo_quantize_dispatch(int in_dtype, int rotate, int batch, int heads, int seq, int head_dim)
{
    evo_export::qcall c;
    return evo_export::resolve(in_dtype, rotate, batch, heads, seq, head_dim, &c) == cudaSuccess
               ? evo_export::variants[c.vi].entry
               : -1;
}

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

#include "export_selftest.cuh"

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
        evo_export::forced_entry = v.entry; /* every entry's kernels on every shape, whatever the dispatch picks */
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
            printf("check  D=%-3d %-4s rotate=%d  (%d,%d,%4d)  %d distributions x 2 calls  %s", v.head_dim,
                   v.in_dtype ? "bf16" : "fp16", v.rotate, sh.b, sh.h, sh.s, N_DISTS, bad ? "FAIL" : "bit-exact");
            if (evo_export::n_entries > 1) printf("  (entry %d)", v.entry);
            printf("\n");
        }
    }
    /* Two and three inputs in one call (what a PyTorch op does with q, k, v): the same bits as one call each, every
     * distribution mixed across the inputs, on odd and preset shapes. */
    for (int vi = 0; vi < evo_export::n_qvariants; vi++) {
        const evo_export::qvariant &v = evo_export::variants[vi];
        evo_export::forced_entry = v.entry;
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
        printf("check  D=%-3d %-4s rotate=%d  2 and 3 inputs in one call, %d shapes  %s", v.head_dim,
               v.in_dtype ? "bf16" : "fp16", v.rotate, cases / 2, bad ? "FAIL" : "bit-exact");
        if (evo_export::n_entries > 1) printf("  (entry %d)", v.entry);
        printf("\n");
    }
    evo_export::forced_entry = -1; /* from here on the dispatch picks */
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
        printf("%-34s %10.2f %16s %8.0f %10.2f %7.1f%% %9s  %s", name, med, spread, gbs, copy_med,
               100.0 * copy_med / med, evo_us, vd.pass() ? "bit-exact" : "CODES DIFFER");
        if (evo_export::n_entries > 1)
            printf("  (entry %d)", evo_quantize_dispatch(sh.in_dtype, sh.rotate, sh.batch, sh.heads, sh.seq, sh.head_dim));
        printf("\n");
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
            printf("%-34s %10.2f %16s %8.0f %10.2f %7.1f%% %9s  %s", "  q, k, v: 3 inputs, one call", m3, spread,
                   9.0 * (double)n / (m3 * 1e-6) / 1e9, c3m, 100.0 * c3m / m3, "-", bad ? "CODES DIFFER" : "bit-exact");
            if (evo_export::n_entries > 1)
                printf("  (entry %d)",
                       evo_quantize_dispatch(sh.in_dtype, sh.rotate, 3 * sh.batch, sh.heads, sh.seq, sh.head_dim));
            printf("\n");
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
    printf("genome  %s\nkey %s, arch %s\ndevice  %s (sm_%d%d, %d SMs), s.driver %d, s.runtime %d\n", EVO_EXPORT_GENOME,
           EVO_EXPORT_KEY, EVO_EXPORT_ARCH, s.prop.name, s.prop.major, s.prop.minor, s.prop.multiProcessorCount, s.driver,
           s.runtime);
    if (evo_export::n_entries > 1)
        for (int i = 0; i < evo_export::n_entries; i++)
            printf("entry %d  %s (key %.8s)\n", i, evo_export::entries[i].genome, evo_export::entries[i].key);
    printf("\n");
    int n_cases = 0, n_timed = 0, failed = 0;
    if (!run_checks(&n_cases, &failed)) return 1;
    if (!s.a.check_only && !run_timing(s.a.only, s.a.reps, &n_timed, &failed)) return 1;
    return evo_selftest_main::finish(s.a, n_cases, n_timed, failed, "bit-exact checks");
}
#endif /* EVO_SELFTEST */
