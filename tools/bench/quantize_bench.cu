/* quantize_bench.cu — standalone harness for the quantize_fp8 templates (tasks/quantize_fp8/quantize_fp8.cu): a
 * fixed list of genomes, each bit-exact against the CPU reference (quantize_ref.c) on every shape, dtype, rotation
 * and input kind, then timed against a device-to-device copy of the same bytes (CUDA events, L2 flushed before
 * every repetition, median). Also builds as a shared library (-DQB_LIB) that tools/bench/compare_quantize.py loads.
 * Build: tools/bench/quantize_build.sh [OUTDIR]     Run: OUTDIR/quantize_bench [--reps N] [--quick] [--out DIR]
 * GPU work runs in forked children: a kernel that traps costs its genome only; the parent restarts after it.
 * QB_SMS_SCALE=N plans every grid for N times the SMs (mode 7 must then finish bit-exact without co-residency).
 */
#include "quantize_fp8.cu"

extern "C" {
#include "numerics.h"
#include "quantize_ref.h"
}

#include <cuda_runtime.h>

#include "quantize_probes.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef QB_LIB
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#define QB_SILENT_S 20
#endif


/* ---- the genomes ---- */

typedef void (*qb_kernel)(const evo_quant_params);

struct Variant {
    std::string name; /* genome name + /D/dtype/rot */
    std::string genome;
    evo_quant_knobs k;
    int d, bf16, rot;
    qb_kernel kern[3];
};

static std::vector<Variant> g_variants;

template <int D, int BF, int ROT, int VEC, int WARPS, int MODE, int CL, int KEEP, int UN, int IT, int CVT, int CACHE,
          int FR>
static void add_variant(const char *genome, int slack)
{
    Variant v;
    v.genome = genome;
    v.d = D;
    v.bf16 = BF;
    v.rot = ROT;
    v.k.vec = VEC;
    v.k.warps = WARPS;
    v.k.mode = MODE;
    v.k.cluster = CL;
    v.k.keep = KEEP;
    v.k.unroll = UN;
    v.k.iters = IT;
    v.k.cvt = CVT;
    v.k.cache = CACHE;
    v.k.fused_rot = FR;
    v.k.slack = slack;
    char buf[128];
    snprintf(buf, sizeof buf, "%s/d%d/%s/%s", genome, D, BF ? "bf16" : "fp16", ROT ? "rot" : "plain");
    v.name = buf;
    v.kern[EVO_QUANT_K_ROTATE] = nullptr;
    v.kern[EVO_QUANT_K_ABSMAX] = nullptr;
    v.kern[EVO_QUANT_K_MAIN] = evo_quant<D, BF, ROT, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>;
    if constexpr (MODE == EVO_QUANT_MODE_SPLIT)
        v.kern[EVO_QUANT_K_ABSMAX] = evo_quant_absmax<D, BF, ROT, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>;
    if constexpr (ROT == 1 && FR == 0)
        v.kern[EVO_QUANT_K_ROTATE] = evo_quant_rotate<D, BF, ROT, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>;
    g_variants.push_back(v);
}

template <int VEC, int WARPS, int MODE, int CL, int KEEP, int UN, int IT, int CVT, int CACHE, int FR>
static void add_genome(const char *name, int slack)
{
    add_variant<128, 0, 0, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<128, 1, 0, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<128, 0, 1, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<128, 1, 1, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<64, 0, 0, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<64, 1, 0, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<64, 0, 1, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
    add_variant<64, 1, 1, VEC, WARPS, MODE, CL, KEEP, UN, IT, CVT, CACHE, FR>(name, slack);
}

/* Genome names: mode letter (S split, C chained, O ordered, K cluster, L local) and number (a k: KEEP 1); qb_genomes
 * prints the knobs. */
static void build_variants()
{
    if (!g_variants.empty()) return;
    /*          VEC WARPS MODE CL KEEP UN IT CVT CACHE FR            slack */
    add_genome<16, 8, 0, 1, 0, 4, 2, 1, 1, 1>("S1", 0);
    add_genome<32, 4, 0, 1, 0, 2, 4, 1, 0, 1>("S2", 0);
    add_genome<32, 8, 1, 1, 0, 2, 2, 1, 1, 1>("C3", 2);
    add_genome<32, 8, 1, 1, 0, 4, 1, 1, 1, 1>("C4", 4);
    add_genome<16, 4, 1, 1, 0, 8, 1, 1, 1, 1>("C5", 4);
    add_genome<16, 8, 1, 1, 0, 4, 1, 1, 1, 0>("C8", 2);
    add_genome<16, 8, 3, 1, 0, 4, 1, 1, 1, 1>("O1", 2);
    add_genome<32, 8, 3, 1, 0, 2, 2, 1, 1, 1>("O2", 2);
    add_genome<32, 8, 3, 1, 0, 4, 1, 1, 1, 1>("O3", 4);
    add_genome<16, 8, 3, 1, 0, 2, 1, 1, 1, 1>("O4", 4);
    add_genome<32, 16, 3, 1, 0, 2, 1, 1, 1, 1>("O7", 8);
    add_genome<32, 4, 3, 1, 0, 2, 1, 1, 1, 1>("O8", 8);
    add_genome<16, 8, 3, 1, 0, 4, 1, 1, 0, 1>("O9", 8);
    add_genome<16, 16, 2, 16, 8, 2, 1, 1, 1, 1>("K2", 0);
    add_genome<16, 8, 2, 8, 0, 4, 1, 1, 1, 1>("K4", 0);
    add_genome<32, 4, 7, 1, 0, 2, 1, 1, 1, 1>("L1", 2);
    add_genome<32, 8, 7, 1, 0, 2, 1, 1, 1, 1>("L2", 2);
    /* mode 7 keeping the rotated floats in shared memory (KEEP 1; unrotated shapes run as KEEP 0) */
    add_genome<32, 8, 7, 1, 1, 1, 1, 1, 1, 1>("L3k", 1);
    add_genome<32, 8, 7, 1, 1, 2, 1, 1, 1, 1>("L4k", 1);
    add_genome<16, 8, 7, 1, 1, 2, 1, 1, 1, 1>("L5k", 1);
    add_genome<32, 4, 7, 1, 1, 2, 1, 1, 1, 1>("L6k", 1);
    add_genome<32, 16, 7, 1, 1, 1, 1, 1, 1, 1>("L7k", 1);
    add_genome<32, 8, 7, 1, 1, 4, 1, 1, 1, 1>("L8k", 1);
    add_genome<32, 8, 7, 1, 1, 2, 1, 1, 1, 1>("L9k", 2);
    add_genome<32, 4, 7, 1, 1, 2, 1, 1, 1, 1>("L10k", 2);
}

static std::string knobs_text(const evo_quant_knobs &k)
{
    char b[200];
    snprintf(b, sizeof b, "vec=%d warps=%d mode=%d cluster=%d keep=%d unroll=%d iters=%d cvt=%d cache=%d fused_rot=%d "
             "slack=%d", k.vec, k.warps, k.mode, k.cluster, k.keep, k.unroll, k.iters, k.cvt, k.cache, k.fused_rot,
             k.slack);
    return b;
}

/* ---- launching a plan ---- */

/* QB_SMS_SCALE=N plans for N times the SMs: grids of resident-size modes then hold more blocks than can be resident
 * at once (mode 7 must still finish, bit-exact: its waiting threads compute what they wait for; the cooperative
 * launches, modes 4, 6 and 8 and mode 7 with a fused rotation, are refused by the driver). */
static int plan_for(const Variant &v, int b, int h, int s, int num_sms, evo_quant_plan *plan, char *why, size_t n)
{
    const char *scale = getenv("QB_SMS_SCALE");
    if (scale && atoi(scale) > 1) num_sms *= atoi(scale);
    return evo_quant_plan_make(&v.k, b, h, s, v.d, v.rot, 90, num_sms, plan, why, n);
}

static cudaError_t launch_plan(const Variant &v, const evo_quant_plan &plan, const evo_quant_params &p,
                               cudaStream_t st)
{
    for (int i = 0; i < plan.n_launches; i++) {
        const evo_quant_launch &l = plan.launch[i];
        qb_kernel fn = v.kern[l.kernel];
        if (!fn) return cudaErrorInvalidDeviceFunction;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(l.grid_x, l.grid_y, 1);
        cfg.blockDim = dim3(l.block, 1, 1);
        cfg.dynamicSmemBytes = l.smem;
        cfg.stream = st;
        if (l.smem > 0u) { /* with the kernel's static shared memory even 48 KiB may need it */
            cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)l.smem);
            if (e != cudaSuccess) return e;
        }
        cudaLaunchAttribute attr[2];
        cfg.attrs = attr;
        cfg.numAttrs = 0;
        if (l.cluster_x > 1) {
            if (l.nonportable) {
                cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
                if (e != cudaSuccess) return e;
            }
            attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
            attr[cfg.numAttrs].val.clusterDim.x = l.cluster_x;
            attr[cfg.numAttrs].val.clusterDim.y = 1;
            attr[cfg.numAttrs].val.clusterDim.z = 1;
            cfg.numAttrs++;
        }
        if (l.cooperative) {
            attr[cfg.numAttrs].id = cudaLaunchAttributeCooperative;
            attr[cfg.numAttrs].val.cooperative = 1;
            cfg.numAttrs++;
        }
        cudaError_t e = cudaLaunchKernelEx(&cfg, fn, p);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* The CPU reference over heads in parallel threads. */
static void reference_mt(const uint16_t *x, int dtype, int rot, size_t n_heads, size_t seq, int d, uint8_t *codes,
                         float *scales)
{
    unsigned nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    if ((size_t)nt > n_heads) nt = (unsigned)n_heads;
    std::vector<std::thread> th;
    size_t he = seq * (size_t)d;
    for (unsigned t = 0; t < nt; t++) {
        size_t h0 = n_heads * t / nt, h1 = n_heads * (t + 1) / nt;
        th.emplace_back([=] {
            if (h1 > h0) evo_qref_quantize(x + h0 * he, dtype, rot, h1 - h0, seq, d, codes + h0 * he, scales + h0);
        });
    }
    for (auto &t : th) t.join();
}

/* ---- library interface (tools/bench/compare_quantize.py) ---- */

extern "C" {
int qb_num_variants(void)
{
    build_variants();
    return (int)g_variants.size();
}
const char *qb_variant_name(int i)
{
    build_variants();
    return i >= 0 && i < (int)g_variants.size() ? g_variants[i].name.c_str() : "";
}
const char *qb_variant_genome(int i)
{
    build_variants();
    static std::string s;
    if (i < 0 || i >= (int)g_variants.size()) return "";
    s = g_variants[i].genome + " " + knobs_text(g_variants[i].k);
    return s.c_str();
}
/* D, bf16, rot of variant i; -1 when out of range. */
int qb_variant_dims(int i, int *d, int *bf16, int *rot)
{
    build_variants();
    if (i < 0 || i >= (int)g_variants.size()) return -1;
    *d = g_variants[i].d;
    *bf16 = g_variants[i].bf16;
    *rot = g_variants[i].rot;
    return 0;
}
/* Scratch bytes (and whether it must be zeroed once) for variant i on (b, h, s); -1 when the plan fails. */
long long qb_scratch_bytes(int i, int b, int h, int s, int num_sms, int *zero_once)
{
    build_variants();
    if (i < 0 || i >= (int)g_variants.size()) return -1;
    evo_quant_plan plan;
    char why[200];
    if (plan_for(g_variants[i], b, h, s, num_sms, &plan, why, sizeof why) != 0) return -1;
    *zero_once = plan.zero_scratch_once;
    return (long long)plan.scratch_bytes;
}
/* Launches variant i's plan on stream (a cudaStream_t); 0 or a cudaError_t. */
int qb_run(int i, const void *x, void *codes, float *scales, void *scratch, long long scratch_bytes, int b, int h,
           int s, int num_sms, void *stream)
{
    build_variants();
    if (i < 0 || i >= (int)g_variants.size()) return -1;
    const Variant &v = g_variants[i];
    evo_quant_plan plan;
    char why[200];
    if (plan_for(v, b, h, s, num_sms, &plan, why, sizeof why) != 0) return -2;
    evo_quant_params p = {};
    p.x = x;
    p.codes = (unsigned char *)codes;
    p.scales = scales;
    p.scratch = scratch;
    p.scratch_bytes = (unsigned long long)scratch_bytes;
    p.batch = b;
    p.heads = h;
    p.seq = s;
    p.head_dim = v.d;
    p.in_dtype = v.bf16;
    p.rotate = v.rot;
    p.chain_lag = plan.chain_lag;
    p.stages = plan.stages;
    p.parts = plan.parts;
    return (int)launch_plan(v, plan, p, (cudaStream_t)stream);
}
/* The CPU reference (threads over heads). */
void qb_reference(const uint16_t *x, int dtype, int rot, long long n_heads, long long seq, int d, uint8_t *codes,
                  float *scales)
{
    reference_mt(x, dtype, rot, (size_t)n_heads, (size_t)seq, d, codes, scales);
}
}

#ifndef QB_LIB

/* ---- inputs ---- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unif(uint64_t key, uint64_t i) { return ((mix64(key + (i + 1) * 0x9e3779b97f4a7c15ull) >> 11) + 0.5) * 0x1p-53; }
static double normal(uint64_t key, uint64_t i)
{
    return std::sqrt(-2.0 * std::log(unif(key, 2 * i))) * std::cos(6.283185307179586 * unif(key, 2 * i + 1));
}

enum { KIND_MIX = 0, KIND_NONFINITE = 1, KIND_TIMING = 2 };

static uint16_t to_bits(double v, int bf16)
{
    return bf16 ? evo_qref_float_to_bf16((float)v) : evo_ref_double_to_half(v);
}

/* Head h's kind cycles: normal, outliers N(0,1)+N(0,100)·B(0.001), uniform, zero, large, tiny (subnormal range),
 * exact e4m3 values and ties. KIND_NONFINITE also plants NaN and inf in the first heads. */
static void gen_input(uint16_t *x, size_t n_heads, size_t he, int bf16, int kind, uint64_t seed)
{
    unsigned nt = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (unsigned t = 0; t < nt; t++) {
        th.emplace_back([=] {
            for (size_t h = t; h < n_heads; h += nt) {
                uint64_t key = mix64(seed * 1000003 + h);
                uint16_t *xh = x + h * he;
                int hk = kind == KIND_TIMING ? 1 : (int)(h % 7);
                for (size_t i = 0; i < he; i++) {
                    double v;
                    switch (hk) {
                    case 0: v = normal(key, i); break;
                    case 1: v = normal(key, i) + (unif(key ^ 1, i) < 0.001 ? 10.0 * normal(key ^ 2, i) : 0.0); break;
                    case 2: v = 2.0 * unif(key, i) - 1.0; break;
                    case 3: v = 0.0; break;
                    case 4: v = normal(key, i) * (bf16 ? 1e30 : 3000.0); break;
                    case 5: v = normal(key, i) * (bf16 ? 1e-38 : 1e-6); break;
                    default: { /* absmax 448 (scale 1): e4m3 values and midpoints, both signs, down to subnormals */
                        uint64_t r = mix64(key + i);
                        double m = 1.0 + (double)(r & 15) / 16.0, e = std::ldexp(1.0, (int)((r >> 4) % 20) - 12);
                        v = i == 0 ? 448.0 : ((r >> 9) & 1 ? -m : m) * e;
                    }
                    }
                    xh[i] = to_bits(v, bf16);
                }
                if (kind == KIND_NONFINITE && h < 3 && he > 3) {
                    uint16_t nan = bf16 ? 0x7fc0 : 0x7e00, inf = bf16 ? 0x7f80 : 0x7c00;
                    if (h == 0) xh[he / 2] = nan;
                    if (h == 1) xh[he / 3] = inf;
                    if (h == 2) {
                        xh[1] = (uint16_t)(inf | 0x8000);
                        xh[2] = (uint16_t)(nan | 0x8000);
                    }
                }
            }
        });
    }
    for (auto &t : th) t.join();
}

/* ---- cases ---- */

struct Shape {
    int b, h, s, d;
    bool timed;
};
static const Shape k_shapes[] = {
    {4, 16, 4096, 128, true}, {1, 16, 16384, 64, true}, {1, 8, 512, 64, true},  {2, 8, 512, 64, true},
    {2, 8, 2048, 64, true},   {2, 8, 512, 128, true},   {4, 8, 2048, 64, true}, {2, 3, 1, 64, false},
    {2, 3, 77, 64, false},    {1, 5, 1000, 64, false},  {2, 3, 1, 128, false},  {2, 3, 77, 128, false},
    {1, 5, 1000, 128, false},
};

struct Case {
    int shape, bf16, rot, kind;
    size_t n, n_heads;
    std::vector<uint16_t> *x; /* shared between rot = 0 and 1 */
    std::vector<uint8_t> codes;
    std::vector<float> scales;
};

struct Opts {
    int reps = 30;
    bool quick = false;
    bool check = true;
    bool main_only = false; /* (4,16,4096,128) fp16 timing inputs only, no self-tests (for a profiler) */
    int main_rot = 0;       /* with main_only: 1 times the rotated shape instead (--main-rot) */
    std::string out = ".";
    std::string genomes; /* comma-separated genome names; empty: all */
    std::vector<int> flushes = {0, 1}; /* 0: read the flush buffer (L2 left clean), 1: write it (left dirty) */
};

static double median_of(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}
static double pct_of(std::vector<float> v, double p)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[std::min(v.size() - 1, (size_t)(p * (double)(v.size() - 1) + 0.5))];
}

/* ---- GPU self-tests ---- */

__device__ float half_bits_to_float(unsigned b)
{
    float lo, hi;
    evoq::h2_to_f2(b, lo, hi);
    return lo;
}

/* One atomic per warp: res[slot] += the warp's sum of v. */
__device__ void warp_add(unsigned long long *res, int slot, unsigned v)
{
    v = __reduce_add_sync(0xffffffffu, v);
    if ((threadIdx.x & 31u) == 0 && v) atomicAdd(&res[slot], (unsigned long long)v);
}

__global__ void encoder_sweep(unsigned long long *res)
{
    /* every float bit pattern as lo, a scrambled one as hi: cvt.rn.satfinite.e4m3x2 against the integer code;
     * res[0] non-NaN mismatches, res[1] NaN mismatches, res[2] the smallest non-NaN mismatching pattern */
    unsigned bad = 0, bad_nan = 0, first = 0xffffffffu;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < (1ull << 32); i += stride) {
        float lo = __uint_as_float((unsigned)i), hi = __uint_as_float((unsigned)i * 2654435761u + 12345u);
        unsigned hw = evoq::enc2<1>(lo, hi), sw = evoq::enc2<0>(lo, hi);
        if (hw != sw) {
            if (isnan(lo) || isnan(hi)) bad_nan++;
            else {
                bad++;
                first = min(first, (unsigned)i);
            }
        }
    }
    warp_add(res, 0, bad);
    warp_add(res, 1, bad_nan);
    first = __reduce_min_sync(0xffffffffu, first);
    if ((threadIdx.x & 31u) == 0 && first != 0xffffffffu) atomicMin(&res[2], (unsigned long long)first);
}

__global__ void quotient_sweep(unsigned long long *res)
{
    /* every fp16 absmax (finite, > 0) x every fp16 value with |a| <= absmax: the fast quotient with one correction
     * (the kernels' on unrotated input) and with two, each against __fdiv_rn; res[0] mismatches, res[1] pairs */
    unsigned mb = blockIdx.x + 1, bad = 0, pairs = 0;
    float m = half_bits_to_float(mb);
    float s = evoq::scale_of(m), inv = __frcp_rn(s);
    for (unsigned ab = threadIdx.x; ab < 0x10000u; ab += blockDim.x) {
        float a = half_bits_to_float(ab);
        if ((ab & 0x7c00u) == 0x7c00u || fabsf(a) > m) continue;
        float q1 = evoq::quot<1>(a, s, inv), q2 = evoq::quot<2>(a, s, inv), d = __fdiv_rn(a, s);
        bool exact = fabsf(a) >= 0x1p-100f && fabsf(d) >= 0x1p-100f;
        for (float q : {q1, q2})
            bad += exact ? __float_as_uint(q) != __float_as_uint(d) : evoq::e4m3_sw(q) != evoq::e4m3_sw(d);
        pairs++;
    }
    warp_add(res, 0, bad);
    warp_add(res, 1, pairs);
}


/* Probe: read only, one max per block (the absmax pass alone). */
__global__ void probe_absmax(const uint4 *x, size_t n16, float *out)
{
    float m = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = x[i];
        unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float f0, f1;
            evoq::h2_to_f2(w[k], f0, f1);
            m = fmaxf(m, fmaxf(fabsf(f0), fabsf(f1)));
        }
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31u) == 0) atomicMax((unsigned *)out, __float_as_uint(m));
}

__global__ void copy_kernel(const uint4 *src, uint4 *dst, size_t n16)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

/* ---- the child: all GPU work from variant `start` on; prints "BEGIN i" before each variant ---- */

struct Gpu {
    int sms = 0;
    size_t l2 = 0;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    void *flush = nullptr;
    size_t flush_bytes = 0;
    int flush_mode = 0; /* Opts::flushes */
    unsigned *sink = nullptr;
};

static void flush_l2(Gpu &g)
{
    if (g.flush_mode == 1) {
        QB_CHECK(cudaMemsetAsync(g.flush, (int)(rand() & 0xff), g.flush_bytes, g.st));
    } else {
        read_kernel<<<g.sms * 8, 512, 0, g.st>>>((const uint4 *)g.flush, g.flush_bytes / 16, g.sink);
        QB_CHECK(cudaGetLastError());
    }
}
static const char *flush_name(int m) { return m == 1 ? "write" : "read"; }

/* Times fn (which enqueues on g.st) reps times after 3 warm-ups; milliseconds per repetition. */
template <class F> static std::vector<float> time_reps(Gpu &g, int reps, F fn)
{
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev) QB_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < 3; i++) {
        flush_l2(g);
        fn();
    }
    for (int r = 0; r < reps; r++) {
        flush_l2(g);
        QB_CHECK(cudaEventRecord(ev[2 * r], g.st));
        fn();
        QB_CHECK(cudaEventRecord(ev[2 * r + 1], g.st));
    }
    QB_CHECK(cudaStreamSynchronize(g.st));
    QB_CHECK(cudaGetLastError());
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; r++) QB_CHECK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
    for (auto &e : ev) cudaEventDestroy(e);
    return ms;
}

static void child_main(std::vector<Case> &cases, int start, bool selftest, const Opts &o, FILE *jl)
{
    Gpu g;
    QB_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    QB_CHECK(cudaGetDeviceProperties(&prop, 0));
    g.sms = prop.multiProcessorCount;
    g.l2 = (size_t)prop.l2CacheSize;
    QB_CHECK(cudaStreamCreateWithFlags(&g.st, cudaStreamNonBlocking));
    g.flush_bytes = std::max<size_t>(4 * g.l2, 256u << 20);
    QB_CHECK(cudaMalloc(&g.flush, g.flush_bytes));
    QB_CHECK(cudaMemset(g.flush, 1, g.flush_bytes));
    QB_CHECK(cudaMalloc(&g.sink, 64));

    size_t max_n = 0, max_heads = 0;
    for (auto &c : cases) {
        max_n = std::max(max_n, c.n);
        max_heads = std::max(max_heads, c.n_heads);
    }
    /* inputs on the device, one buffer per distinct host input */
    std::vector<std::vector<uint16_t> *> hosts;
    std::vector<void *> devs;
    auto dev_input = [&](std::vector<uint16_t> *h) -> void * {
        for (size_t i = 0; i < hosts.size(); i++)
            if (hosts[i] == h) return devs[i];
        void *d;
        QB_CHECK(cudaMalloc(&d, h->size() * 2));
        QB_CHECK(cudaMemcpy(d, h->data(), h->size() * 2, cudaMemcpyHostToDevice));
        /* from pageable memory the copy may return before its DMA lands, and the kernels run on a non-blocking
         * stream: wait for it (without this, the first kernel on a small input read a partly copied tail) */
        QB_CHECK(cudaDeviceSynchronize());
        hosts.push_back(h);
        devs.push_back(d);
        return d;
    };
    unsigned char *codes;
    float *scales;
    QB_CHECK(cudaMalloc(&codes, max_n + 64));
    QB_CHECK(cudaMalloc(&scales, max_heads * 4 + 64));
    size_t scratch_bytes = 4 * max_n + (64u << 20);
    void *scratch;
    QB_CHECK(cudaMalloc(&scratch, scratch_bytes));
    std::vector<uint8_t> hc(max_n);
    std::vector<float> hs(max_heads);

    if (selftest && o.main_only) {
        for (int fm : o.flushes) { /* the probes alone, for a profiler */
            g.flush_mode = fm;
            const Shape &sh = k_shapes[0];
            size_t n = (size_t)sh.b * sh.h * sh.s * sh.d;
            void *a, *b;
            QB_CHECK(cudaMalloc(&a, 2 * n));
            QB_CHECK(cudaMalloc(&b, 2 * n));
            QB_CHECK(cudaMemset(a, 0x3c, 2 * n));
            size_t n32 = n / 16;
            int pgrid = (int)std::min<size_t>((n32 + 255) / 256, (size_t)g.sms * 16);
            time_reps(g, o.reps, [&] { probe_encode<<<pgrid, 256, 0, g.st>>>((const uint4 *)a, (uint4 *)b, n32, 0.5f); });
            time_reps(g, o.reps, [&] { copy_kernel<<<pgrid, 256, 0, g.st>>>((const uint4 *)a, (uint4 *)b, 3 * n / 32); });
            cudaFree(a);
            cudaFree(b);
        }
    }
    if (selftest && !o.main_only) {
        printf("device: %s, %d SMs, L2 %zu MB, compute %d.%d\n", prop.name, g.sms, g.l2 >> 20, prop.major, prop.minor);
        fprintf(jl, "{\"device\": \"%s\", \"sms\": %d, \"l2_mb\": %zu}\n", prop.name, g.sms, g.l2 >> 20);
        unsigned long long *res;
        QB_CHECK(cudaMalloc(&res, 64));
        unsigned long long init[4] = {0, 0, ~0ull, 0};
        QB_CHECK(cudaMemcpy(res, init, 32, cudaMemcpyHostToDevice));
        encoder_sweep<<<4 * g.sms, 512>>>(res);
        QB_CHECK(cudaDeviceSynchronize());
        unsigned long long r[4];
        QB_CHECK(cudaMemcpy(r, res, 32, cudaMemcpyDeviceToHost));
        printf("selftest encoder (2^32 pairs, hw cvt vs integer code): %llu mismatches on non-NaN pairs, %llu on NaN "
               "pairs, first non-NaN 0x%llx\n", r[0], r[1], r[2] == ~0ull ? 0ull : r[2]);
        fprintf(jl, "{\"selftest\": \"encoder\", \"bad\": %llu, \"bad_nan\": %llu}\n", r[0], r[1]);
        QB_CHECK(cudaMemset(res, 0, 32));
        quotient_sweep<<<0x7bff, 512>>>(res); /* absmax bits 1 .. 0x7bff */
        QB_CHECK(cudaDeviceSynchronize());
        QB_CHECK(cudaMemcpy(r, res, 16, cudaMemcpyDeviceToHost));
        printf("selftest quotient (every fp16 pair |a| <= absmax, one and two corrections): %llu mismatches of %llu "
               "pairs\n", r[0], r[1]);
        fprintf(jl, "{\"selftest\": \"quotient\", \"bad\": %llu, \"pairs\": %llu}\n", r[0], r[1]);
        cudaFree(res);

        /* copies of the same bytes (3 per element: 1.5n read + 1.5n written) and the probes, for every timed
         * shape, under each flush */
        for (int fm : o.flushes) {
            g.flush_mode = fm;
            for (auto &sh : k_shapes) {
                if (!sh.timed) continue;
                size_t n = (size_t)sh.b * sh.h * sh.s * sh.d, bytes = n * 3 / 2;
                void *a, *b;
                QB_CHECK(cudaMalloc(&a, 2 * n)); /* the copies use 1.5n bytes of it, the probes read 2n */
                QB_CHECK(cudaMalloc(&b, bytes));
                QB_CHECK(cudaMemset(a, 0x3c, 2 * n));
                auto t1 = time_reps(g, o.reps, [&] { QB_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g.st)); });
                size_t n16 = bytes / 16;
                int grid = (int)std::min<size_t>((n16 + 255) / 256, (size_t)g.sms * 16);
                auto t2 = time_reps(g, o.reps, [&] { copy_kernel<<<grid, 256, 0, g.st>>>((const uint4 *)a, (uint4 *)b, n16); });
                /* probes on n fp16 values (2n bytes from a, n bytes into b) */
                size_t n32 = n / 16;
                int pgrid = (int)std::min<size_t>((n32 + 255) / 256, (size_t)g.sms * 16);
                auto t3 = time_reps(g, o.reps, [&] { probe_encode<<<pgrid, 256, 0, g.st>>>((const uint4 *)a, (uint4 *)b, n32, 0.5f); });
                auto t4 = time_reps(g, o.reps, [&] { probe_absmax<<<pgrid, 256, 0, g.st>>>((const uint4 *)a, n / 8, (float *)b); });
                double m1 = median_of(t1), m2 = median_of(t2), m3 = median_of(t3), m4 = median_of(t4);
                printf("copy %d,%d,%d,%d flush=%s: %zu bytes moved: memcpy %.2f us (%.0f GB/s, p10 %.2f p90 %.2f), "
                       "copy kernel %.2f us; probes: encode at a known scale %.2f us (%.0f GB/s), absmax only %.2f us "
                       "(%.0f GB/s read)\n", sh.b, sh.h, sh.s, sh.d, flush_name(fm), 2 * bytes, m1 * 1e3,
                       2 * bytes / m1 / 1e6, pct_of(t1, 0.1) * 1e3, pct_of(t1, 0.9) * 1e3, m2 * 1e3, m3 * 1e3,
                       3.0 * n / m3 / 1e6, m4 * 1e3, 2.0 * n / m4 / 1e6);
                fprintf(jl, "{\"copy\": [%d,%d,%d,%d], \"flush\": \"%s\", \"bytes_moved\": %zu, \"memcpy_us\": %.3f, "
                            "\"memcpy_p10\": %.3f, \"memcpy_p90\": %.3f, \"kernel_us\": %.3f, \"probe_encode_us\": %.3f, "
                            "\"probe_absmax_us\": %.3f}\n", sh.b, sh.h, sh.s, sh.d, flush_name(fm), 2 * bytes, m1 * 1e3,
                        pct_of(t1, 0.1) * 1e3, pct_of(t1, 0.9) * 1e3, m2 * 1e3, m3 * 1e3, m4 * 1e3);
                cudaFree(a);
                cudaFree(b);
            }
        }
        fflush(stdout);
        fflush(jl);
    }

    for (int vi = start; vi < (int)g_variants.size(); vi++) {
        const Variant &v = g_variants[vi];
        printf("BEGIN %d\n", vi);
        fflush(stdout);
        if (!o.genomes.empty() && ("," + o.genomes + ",").find("," + v.genome + ",") == std::string::npos) continue;
        int n_cases = 0, n_bad = 0;
        for (auto &c : cases) {
            if (!o.check) break;
            const Shape &sh = k_shapes[c.shape];
            if (sh.d != v.d || c.bf16 != v.bf16 || c.rot != v.rot) continue;
            evo_quant_plan plan;
            char why[200];
            if (plan_for(v, sh.b, sh.h, sh.s, g.sms, &plan, why, sizeof why) != 0) {
                printf("  %s: no plan: %s\n", v.name.c_str(), why);
                continue;
            }
            if (plan.scratch_bytes > scratch_bytes) {
                printf("  %s: scratch %llu too large\n", v.name.c_str(), plan.scratch_bytes);
                continue;
            }
            evo_quant_params p = {};
            p.x = dev_input(c.x);
            p.codes = codes;
            p.scales = scales;
            p.scratch = scratch;
            p.scratch_bytes = plan.scratch_bytes;
            p.batch = sh.b;
            p.heads = sh.h;
            p.seq = sh.s;
            p.head_dim = sh.d;
            p.in_dtype = c.bf16;
            p.rotate = c.rot;
            p.chain_lag = plan.chain_lag;
            p.stages = plan.stages;
            p.parts = plan.parts;
            QB_CHECK(cudaMemsetAsync(scratch, 0, plan.scratch_bytes, g.st));
            /* twice with different poison: unwritten codes cannot match both; the second launch also checks that a
             * plan leaves its scratch ready for the next */
            long long bad_codes = 0, bad_scales = 0, first = -1;
            for (int rep = 0; rep < 2; rep++) {
                QB_CHECK(cudaMemsetAsync(codes, rep ? 0x5a : 0xa5, c.n, g.st));
                QB_CHECK(cudaMemsetAsync(scales, 0xff, c.n_heads * 4, g.st));
                QB_CHECK(launch_plan(v, plan, p, g.st));
                QB_CHECK(cudaStreamSynchronize(g.st));
                QB_CHECK(cudaGetLastError());
                QB_CHECK(cudaMemcpy(hc.data(), codes, c.n, cudaMemcpyDeviceToHost));
                QB_CHECK(cudaMemcpy(hs.data(), scales, c.n_heads * 4, cudaMemcpyDeviceToHost));
                if (memcmp(hc.data(), c.codes.data(), c.n) != 0)
                for (size_t i = 0; i < c.n; i++) {
                    if (hc[i] != c.codes[i]) {
                        if (first < 0) first = (long long)i;
                        bad_codes++;
                    }
                }
                for (size_t i = 0; i < c.n_heads; i++) bad_scales += memcmp(&hs[i], &c.scales[i], 4) != 0;
            }
            n_cases++;
            bool ok = bad_codes == 0 && bad_scales == 0;
            n_bad += !ok;
            if (!ok)
                printf("  FAIL %s shape %d,%d,%d,%d kind %d: %lld codes (first %lld: got 0x%02x want 0x%02x), %lld "
                       "scales\n", v.name.c_str(), sh.b, sh.h, sh.s, sh.d, c.kind, bad_codes, first,
                       first >= 0 ? hc[first] : 0, first >= 0 ? c.codes[first] : 0, bad_scales);
            fprintf(jl, "{\"check\": \"%s\", \"shape\": [%d,%d,%d,%d], \"kind\": %d, \"bad_codes\": %lld, "
                        "\"bad_scales\": %lld}\n", v.name.c_str(), sh.b, sh.h, sh.s, sh.d, c.kind, bad_codes,
                    bad_scales);
        }
        if (o.check) printf("CHECKED %d %s: %d cases, %d failed\n", vi, v.name.c_str(), n_cases, n_bad);
        fflush(stdout);
        /* timing: the normal+outlier inputs of the timed shapes */
        for (auto &c : cases) {
            const Shape &sh = k_shapes[c.shape];
            if (!sh.timed || c.kind != KIND_TIMING || sh.d != v.d || c.bf16 != v.bf16 || c.rot != v.rot) continue;
            evo_quant_plan plan;
            char why[200];
            if (plan_for(v, sh.b, sh.h, sh.s, g.sms, &plan, why, sizeof why) != 0) continue;
            evo_quant_params p = {};
            p.x = dev_input(c.x);
            p.codes = codes;
            p.scales = scales;
            p.scratch = scratch;
            p.scratch_bytes = plan.scratch_bytes;
            p.batch = sh.b;
            p.heads = sh.h;
            p.seq = sh.s;
            p.head_dim = sh.d;
            p.in_dtype = c.bf16;
            p.rotate = c.rot;
            p.chain_lag = plan.chain_lag;
            p.stages = plan.stages;
            p.parts = plan.parts;
            QB_CHECK(cudaMemsetAsync(scratch, 0, plan.scratch_bytes, g.st));
            for (int fm : o.flushes) {
                g.flush_mode = fm;
                auto t = time_reps(g, o.reps, [&] { QB_CHECK(launch_plan(v, plan, p, g.st)); });
                double med = median_of(t), bytes = 3.0 * (double)c.n + 4.0 * (double)c.n_heads;
                printf("  TIME %-28s %2d,%2d,%5d,%3d %-5s %8.2f us  p10 %8.2f  p90 %8.2f  %7.0f GB/s\n",
                       v.name.c_str(), sh.b, sh.h, sh.s, sh.d, flush_name(fm), med * 1e3, pct_of(t, 0.1) * 1e3,
                       pct_of(t, 0.9) * 1e3, bytes / med / 1e6);
                fprintf(jl, "{\"time\": \"%s\", \"genome\": \"%s\", \"shape\": [%d,%d,%d,%d], \"bf16\": %d, "
                            "\"rot\": %d, \"flush\": \"%s\", \"us\": %.3f, \"p10\": %.3f, \"p90\": %.3f, "
                            "\"gbps\": %.1f}\n", v.name.c_str(), v.genome.c_str(), sh.b, sh.h, sh.s, sh.d, c.bf16, c.rot,
                        flush_name(fm), med * 1e3, pct_of(t, 0.1) * 1e3, pct_of(t, 0.9) * 1e3, bytes / med / 1e6);
            }
        }
        fflush(stdout);
        fflush(jl);
    }
    printf("ALLDONE\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    Opts o;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) o.reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) o.quick = true;
        else if (!strcmp(argv[i], "--no-check")) o.check = false;
        else if (!strcmp(argv[i], "--main-only")) o.main_only = true;
        else if (!strcmp(argv[i], "--main-rot")) o.main_only = true, o.main_rot = 1;
        else if (!strcmp(argv[i], "--genomes") && i + 1 < argc) o.genomes = argv[++i];
        else if (!strcmp(argv[i], "--flush") && i + 1 < argc) {
            std::string f = argv[++i];
            if (f == "read") o.flushes = {0};
            else if (f == "write") o.flushes = {1};
            else if (f == "both") o.flushes = {0, 1};
            else {
                fprintf(stderr, "quantize_bench: --flush read|write|both\n");
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) o.out = argv[++i];
        else if (!strcmp(argv[i], "--list")) {
            build_variants();
            for (size_t v = 0; v < g_variants.size(); v += 8)
                printf("%s: %s\n", g_variants[v].genome.c_str(), knobs_text(g_variants[v].k).c_str());
            return 0;
        } else {
            fprintf(stderr, "usage: quantize_bench [--reps N] [--quick] [--no-check] [--main-only|--main-rot] [--genomes A,B] [--flush read|write|both] "
                            "[--out DIR] [--list]\n");
            return 2;
        }
    }
    if (o.reps < 3) o.reps = 3;
    build_variants();

    /* inputs and CPU references (before any CUDA call: the children fork from here) */
    std::vector<Case> cases;
    std::vector<std::vector<uint16_t> *> inputs;
    for (int si = 0; si < (int)(sizeof k_shapes / sizeof k_shapes[0]); si++) {
        const Shape &sh = k_shapes[si];
        if (o.quick && sh.b * sh.h * sh.s > 65536) continue;
        if (o.main_only && si != 0) continue;
        for (int bf = 0; bf < (o.main_only ? 1 : 2); bf++) {
            for (int kind = 0; kind < 3; kind++) {
                if (o.main_only && kind != KIND_TIMING) continue;
                if (kind == KIND_NONFINITE && sh.b * sh.h * sh.s > 65536) continue;
                if (kind == KIND_TIMING && !sh.timed) continue;
                size_t nh = (size_t)sh.b * sh.h, n = nh * sh.s * sh.d;
                auto *x = new std::vector<uint16_t>(n);
                gen_input(x->data(), nh, (size_t)sh.s * sh.d, bf, kind, 1000 + si * 10 + bf * 2 + kind);
                inputs.push_back(x);
                for (int rot = o.main_only ? o.main_rot : 0; rot < (o.main_only ? o.main_rot + 1 : 2); rot++) {
                    Case c;
                    c.shape = si;
                    c.bf16 = bf;
                    c.rot = rot;
                    c.kind = kind;
                    c.n = n;
                    c.n_heads = nh;
                    c.x = x;
                    c.codes.resize(n);
                    c.scales.resize(nh);
                    reference_mt(x->data(), bf, rot, nh, (size_t)sh.s, sh.d, c.codes.data(), c.scales.data());
                    cases.push_back(std::move(c));
                }
            }
        }
    }
    printf("%zu cases, %zu variants, %d repetitions\n", cases.size(), g_variants.size(), o.reps);
    fflush(stdout);

    std::string jpath = o.out + "/quantize_bench.jsonl";
    FILE *jl = fopen(jpath.c_str(), "w");
    if (!jl) {
        fprintf(stderr, "quantize_bench: cannot write %s\n", jpath.c_str());
        return 2;
    }
    int start = 0, crashed = 0;
    bool selftest = true;
    while (start < (int)g_variants.size()) {
        int fds[2];
        if (pipe(fds) != 0) return 3;
        fflush(stdout);
        fflush(jl);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            dup2(fds[1], 1);
            setvbuf(stdout, nullptr, _IOLBF, 0);
            child_main(cases, start, selftest, o, jl);
            fflush(jl);
            _exit(0);
        }
        close(fds[1]);
        /* lines from the child; a child silent for QB_SILENT_S seconds (a kernel that hangs) is killed */
        std::string buf;
        char chunk[4096];
        int current = start, done = 0, began = 0, hung = 0;
        for (;;) {
            struct pollfd pfd = {fds[0], POLLIN, 0};
            int pr = poll(&pfd, 1, QB_SILENT_S * 1000);
            if (pr == 0) {
                kill(pid, SIGKILL);
                hung = 1;
                break;
            }
            if (pr < 0) continue;
            ssize_t got = read(fds[0], chunk, sizeof chunk);
            if (got <= 0) break;
            buf.append(chunk, (size_t)got);
            size_t nl;
            while ((nl = buf.find('\n')) != std::string::npos) {
                std::string line = buf.substr(0, nl + 1);
                buf.erase(0, nl + 1);
                if (!strncmp(line.c_str(), "BEGIN ", 6)) {
                    current = atoi(line.c_str() + 6);
                    began = 1;
                } else if (!strncmp(line.c_str(), "ALLDONE", 7)) {
                    done = 1;
                } else {
                    fputs(line.c_str(), stdout);
                }
            }
            fflush(stdout);
        }
        close(fds[0]);
        if (hung) printf("HUNG: no output for %d s, child killed\n", QB_SILENT_S);
        int status = 0;
        waitpid(pid, &status, 0);
        if (done) break;
        if (!began) { /* died before its first variant: in the self-tests or the copies (once), else give up */
            printf("CRASH before variant %d (exit status 0x%x)\n", start, status);
            if (!selftest) return 3;
            selftest = false;
            continue;
        }
        selftest = false;
        printf("CRASH %d %s (exit status 0x%x); continuing after it\n", current, g_variants[current].name.c_str(),
               status);
        fprintf(jl, "{\"crash\": \"%s\"}\n", g_variants[current].name.c_str());
        fflush(jl);
        crashed++;
        start = current + 1;
    }
    fclose(jl);
    printf("done: %d variants crashed\n", crashed);
    return 0;
}

#endif
