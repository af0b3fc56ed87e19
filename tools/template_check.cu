/* template_check.cu — checks and times instantiations of tasks/attention_fp8/attention_fp8.cu without the engine: a
 * template author's bench. CPU FP64 reference on dequantized inputs, NaN-poisoned outputs, CUDA-event timing with
 * the L2 flushed, medians. Build and run (GPU host):
 *   nvcc -O2 -std=c++17 -arch=sm_90 -Itemplates -Xcompiler -fopenmp tools/template_check.cu -o build/template_check
 *   build/template_check [--quick] [--small] [--no-time] [--time-only] [--filter TEXT] [--json FILE]
 * The sm_80 path as PTX: add -DTC_PTX80 -gencode arch=compute_80,code=compute_80 instead of -arch=sm_90.
 */
#include "../tasks/attention_fp8/attention_fp8.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef void (*kernel_fn)(const evo_attn_params);

struct Variant {
    const char *name;
    int d, fmt, tile_m, threads, smem;
    kernel_fn fn;
};

#define VC(D, F, TM, TN, WM, WN, ST, SW, PV, Q8, V16, MB, FE, CP)                                  \
    Variant{#D "/" #F " TILE_M=" #TM ",TILE_N=" #TN ",WARPS_M=" #WM ",WARPS_N=" #WN ",STAGES=" #ST   \
            ",SWIZZLE=" #SW ",PV_MMA=" #PV ",QK_8BIT=" #Q8 ",F16_SMEM=" #V16 ",MIN_BLOCKS=" #MB        \
            ",FAST_EXP=" #FE ",CAUSAL_PAIR=" #CP,                                                    \
            D, F, TM, WM * WN * 32,                                                                \
            evo_attn::AttnCfg<D, F, TM, TN, WM, WN, ST, SW, PV, Q8, V16>::SMEM,                    \
            evo_attn_fwd<D, F, TM, TN, WM, WN, ST, SW, PV, Q8, V16, MB, FE, CP>}
#define V(D, F, TM, TN, WM, WN, ST, SW, PV, Q8, V16, MB, FE) VC(D, F, TM, TN, WM, WN, ST, SW, PV, Q8, V16, MB, FE, 0)

/* baseline, then one knob changed at a time, then a few combinations; for each head dim and format */
#define GRID(D, F)                                                                                 \
    V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 0, 1, 1), V(D, F, 16, 64, 1, 1, 2, 1, 1, 0, 0, 1, 1),          \
        V(D, F, 32, 64, 2, 1, 2, 1, 1, 0, 0, 1, 1), V(D, F, 128, 64, 4, 1, 2, 1, 1, 0, 0, 1, 1),     \
        V(D, F, 128, 64, 8, 1, 2, 1, 1, 0, 0, 1, 1), V(D, F, 256, 64, 8, 1, 2, 1, 1, 0, 0, 1, 1),    \
        V(D, F, 64, 32, 4, 1, 2, 1, 1, 0, 0, 1, 1), V(D, F, 64, 128, 4, 1, 2, 1, 1, 0, 0, 1, 1),     \
        V(D, F, 64, 256, 4, 4, 2, 1, 1, 0, 0, 1, 1), V(D, F, 64, 64, 4, 2, 2, 1, 1, 0, 0, 1, 1),     \
        V(D, F, 16, 64, 1, 4, 2, 1, 1, 0, 0, 1, 1), V(D, F, 64, 64, 4, 1, 1, 1, 1, 0, 0, 1, 1),      \
        V(D, F, 64, 64, 4, 1, 3, 1, 1, 0, 0, 1, 1), V(D, F, 64, 64, 4, 1, 2, 0, 1, 0, 0, 1, 1),      \
        V(D, F, 64, 64, 4, 1, 2, 1, 0, 0, 0, 1, 1), V(D, F, 64, 64, 4, 1, 2, 1, 1, 1, 0, 1, 1),      \
        V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 1, 1, 1), V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 0, 2, 1),      \
        V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 0, 1, 0), V(D, F, 128, 128, 8, 1, 3, 1, 1, 1, 1, 1, 1),    \
        V(D, F, 64, 128, 4, 2, 3, 1, 1, 1, 0, 1, 1), V(D, F, 32, 64, 2, 2, 2, 1, 1, 1, 1, 2, 1),     \
        V(D, F, 128, 64, 4, 1, 3, 1, 1, 1, 0, 1, 1), V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 2, 1, 1),      \
        V(D, F, 128, 64, 4, 1, 2, 1, 1, 0, 2, 1, 1), V(D, F, 128, 64, 4, 1, 3, 1, 1, 0, 2, 1, 1),    \
        V(D, F, 128, 64, 4, 1, 2, 1, 1, 0, 1, 1, 1), V(D, F, 128, 64, 8, 1, 2, 1, 1, 0, 2, 1, 1),    \
        V(D, F, 128, 128, 8, 1, 2, 1, 1, 0, 2, 1, 1), V(D, F, 64, 128, 4, 2, 2, 1, 1, 0, 2, 1, 1),   \
        V(D, F, 32, 64, 2, 2, 2, 1, 1, 0, 2, 1, 1), V(D, F, 16, 64, 1, 4, 2, 1, 1, 0, 2, 1, 1),      \
        VC(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 0, 1, 1, 1), VC(D, F, 128, 64, 4, 1, 2, 1, 1, 0, 0, 1, 1, 1), \
        VC(D, F, 64, 128, 4, 1, 2, 1, 1, 0, 0, 1, 1, 1), VC(D, F, 64, 128, 2, 2, 2, 1, 1, 0, 0, 1, 1, 1), \
        VC(D, F, 64, 64, 4, 2, 3, 1, 1, 0, 2, 1, 1, 1)

#ifdef TC_PTX80
/* Built with -DTC_PTX80 -gencode arch=compute_80,code=compute_80: the sm_80 code path (software e4m3 decode) runs
 * as PTX on a newer GPU. No e4m3 mma there; the s8 mma of u8sim is. */
#define GRID80(D, F)                                                                               \
    V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 0, 1, 1), V(D, F, 128, 64, 4, 1, 2, 1, 1, 0, 2, 1, 1),         \
        V(D, F, 64, 64, 4, 1, 2, 1, 1, 0, 1, 1, 1), V(D, F, 64, 64, 4, 1, 2, 1, 0, 0, 0, 1, 1)
static const Variant variants[] = {GRID80(64, 0), GRID80(128, 0), GRID80(64, 1), GRID80(128, 1),
                                   V(64, 1, 64, 64, 4, 1, 2, 1, 1, 1, 0, 1, 1)};
#else
static const Variant variants[] = {GRID(64, 0), GRID(128, 0), GRID(64, 1), GRID(128, 1)};
#endif

/* ---- host-side formats (must match evo_attention_abi.h) ---- */
static float e4m3_decode(unsigned c)
{
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    float v = e ? ldexpf(1.f + m / 8.f, e - 7) : ldexpf(m / 8.f, -6);
    return s ? -v : v;
}
static unsigned char e4m3_encode(float x)
{
    static float table[127];
    static bool init = false;
    if (!init) {
        for (int c = 0; c < 127; c++) table[c] = e4m3_decode(c);
        init = true;
    }
    unsigned sign = std::signbit(x) ? 0x80 : 0;
    float a = fabsf(x);
    if (a >= 448.f) return sign | 0x7e;
    int lo = 0, hi = 126;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (table[mid] <= a) lo = mid;
        else hi = mid;
    }
    float dl = a - table[lo], dh = table[hi] - a;
    int c = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
    return sign | c;
}
static float half_to_float(unsigned short h)
{
    unsigned s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf(1.f + m / 1024.f, e - 15);
    return s ? -v : v;
}
static unsigned short float_to_half(float f)
{
    /* round to nearest even through the hardware-independent path */
    unsigned x;
    memcpy(&x, &f, 4);
    unsigned s = (x >> 16) & 0x8000;
    float a = fabsf(f);
    if (std::isnan(f)) return s | 0x7e00;
    if (a >= 65520.f) return s | 0x7c00;
    if (a < ldexpf(1.f, -14)) {
        float q = a / ldexpf(1.f, -24);
        return s | (unsigned)nearbyintf(q);
    }
    int e;
    frexpf(a, &e); /* a = f * 2^e, f in [0.5,1) */
    float q = ldexpf(a, 11 - e);     /* in [1024, 2048) */
    unsigned m = (unsigned)nearbyintf(q);
    if (m == 2048) {
        m = 1024;
        e++;
    }
    return s | ((unsigned)(e - 1 + 15) << 10) | (m - 1024);
}

struct Case {
    int b, h, s, d, causal, fmt, dist;
    unsigned seed;
};

struct Inputs {
    std::vector<unsigned char> q8, k8, v8;
    std::vector<float> qs, ks, vs;
    std::vector<double> ref; /* on dequantized inputs */
};

static unsigned long long mix(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}
static double unif(unsigned long long &st) { return (mix(++st) >> 11) * 0x1.0p-53; }
static double normal(unsigned long long &st)
{
    double u1 = std::max(unif(st), 1e-300), u2 = unif(st);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static void make_tensor(const Case &c, int which, std::vector<unsigned char> &codes, std::vector<float> &scales,
                        std::vector<float> &deq)
{
    size_t per = (size_t)c.s * c.d, n = per * c.b * c.h;
    std::vector<float> x(n);
    unsigned long long st = mix(c.seed * 1000003ull + which * 7919ull + 1);
    for (size_t i = 0; i < n; i++) {
        double v;
        switch (c.dist) {
        case 1: v = 2 * unif(st) - 1; break;
        case 2: v = normal(st) + (unif(st) < 0.001 ? 100 * normal(st) : 0); break;
        case 4: v = 30 * normal(st); break;
        default: v = normal(st);
        }
        if (c.dist == 3 && i < per) v = 0;
        x[i] = half_to_float(float_to_half((float)v));
    }
    codes.resize(n);
    scales.resize(c.b * c.h);
    deq.resize(n);
    for (int bh = 0; bh < c.b * c.h; bh++) {
        float amax = 0;
        for (size_t i = 0; i < per; i++) amax = std::max(amax, fabsf(x[bh * per + i]));
        float sc = amax > 0 ? amax / 448.f : 1.f;
        scales[bh] = sc;
        for (size_t i = 0; i < per; i++) {
            float v = x[bh * per + i];
            unsigned char code;
            if (c.fmt == 0) {
                code = e4m3_encode(v / sc);
                deq[bh * per + i] = e4m3_decode(code) * sc;
            } else {
                float r = roundf(v / (sc * 448.f) * 127.f + 128.f);
                code = (unsigned char)std::min(255.f, std::max(0.f, r));
                deq[bh * per + i] = (code - 128) / 127.f * 448.f * sc;
            }
            codes[bh * per + i] = code;
        }
    }
}

static void reference(const Case &c, const std::vector<float> &q, const std::vector<float> &k,
                      const std::vector<float> &v, std::vector<double> &o)
{
    const int S = c.s, D = c.d;
    const double scale = 1.0 / sqrt((double)D);
    o.assign((size_t)c.b * c.h * S * D, 0.0);
#pragma omp parallel for schedule(dynamic)
    for (long long row = 0; row < (long long)c.b * c.h * S; row++) {
        const long long bh = row / S;
        const int i = (int)(row % S);
        const float *qi = &q[row * D];
        const float *kb = &k[bh * S * D], *vb = &v[bh * S * D];
        const int n = c.causal ? i + 1 : S;
        std::vector<double> sc(n);
        double mx = -INFINITY;
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int d = 0; d < D; d++) acc += (double)qi[d] * kb[(size_t)j * D + d];
            sc[j] = acc * scale;
            mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (int j = 0; j < n; j++) sum += (sc[j] = exp(sc[j] - mx));
        double *oi = &o[row * D];
        for (int j = 0; j < n; j++)
            for (int d = 0; d < D; d++) oi[d] += sc[j] / sum * vb[(size_t)j * D + d];
    }
}

struct Dev {
    unsigned char *q, *k, *v;
    float *qs, *ks, *vs;
    unsigned short *o;
    size_t n;
};

static Dev upload(const Case &c, const Inputs &in)
{
    Dev d;
    d.n = in.q8.size();
    CK(cudaMalloc(&d.q, d.n));
    CK(cudaMalloc(&d.k, d.n));
    CK(cudaMalloc(&d.v, d.n));
    CK(cudaMalloc(&d.qs, 4 * in.qs.size()));
    CK(cudaMalloc(&d.ks, 4 * in.qs.size()));
    CK(cudaMalloc(&d.vs, 4 * in.qs.size()));
    CK(cudaMalloc(&d.o, 2 * d.n + 4096));
    CK(cudaMemcpy(d.q, in.q8.data(), d.n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.k, in.k8.data(), d.n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.v, in.v8.data(), d.n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.qs, in.qs.data(), 4 * in.qs.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.ks, in.ks.data(), 4 * in.qs.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.vs, in.vs.data(), 4 * in.qs.size(), cudaMemcpyHostToDevice));
    (void)c;
    return d;
}
static void release(Dev &d)
{
    cudaFree(d.q), cudaFree(d.k), cudaFree(d.v), cudaFree(d.qs), cudaFree(d.ks), cudaFree(d.vs), cudaFree(d.o);
}

static cudaError_t launch(const Variant &v, const Case &c, const Dev &d, cudaStream_t st = 0)
{
    evo_attn_params p;
    p.q = d.q, p.k = d.k, p.v = d.v, p.q_scale = d.qs, p.k_scale = d.ks, p.v_scale = d.vs, p.o = d.o;
    p.batch = c.b, p.heads = c.h, p.seq = c.s, p.head_dim = c.d, p.causal = c.causal;
    p.softmax_scale = 1.f / sqrtf((float)c.d);
    cudaError_t e = cudaFuncSetAttribute((const void *)v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem);
    if (e != cudaSuccess) return e;
    dim3 grid((c.s + v.tile_m - 1) / v.tile_m, c.h, c.b);
    v.fn<<<grid, v.threads, v.smem, st>>>(p);
    return cudaGetLastError();
}

int main(int argc, char **argv)
{
    bool quick = false, time_only = false, small = false, no_time = false;
    const char *json = nullptr, *filter = nullptr;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--small")) small = quick = no_time = true; /* for compute-sanitizer */
        else if (!strcmp(argv[i], "--no-time")) no_time = true;
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--time-only")) time_only = true;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    const int nv = sizeof variants / sizeof variants[0];

    /* ---- correctness ---- */
    int failures = 0;
    std::vector<double> worst(nv, 0.0);
    std::vector<int> broken(nv, 0);
    if (!time_only) {
        std::vector<Case> cases;
        const int shapes[][4] = {{1, 2, 1, 0}, {3, 5, 77, 0}, {1, 3, 500, 0}, {2, 2, 1000, 0}, {1, 8, 512, 0}};
        for (int fmt = 0; fmt < 2; fmt++)
            for (int d : {64, 128})
                for (auto &sh : shapes)
                    for (int causal = 0; causal < 2; causal++)
                        for (int dist = 0; dist < 5; dist++) {
                            if (quick && dist != 0 && dist != 2) continue;
                            if (small && (sh[2] > 100 || dist != 2)) continue;
                            cases.push_back(Case{sh[0], sh[1], sh[2], d, causal, fmt, dist, (unsigned)(dist + 1)});
                        }
        for (const Case &c : cases) {
            Inputs in;
            std::vector<float> qd, kd, vd;
            make_tensor(c, 0, in.q8, in.qs, qd);
            make_tensor(c, 1, in.k8, in.ks, kd);
            make_tensor(c, 2, in.v8, in.vs, vd);
            reference(c, qd, kd, vd, in.ref);
            double ref2 = 0;
            for (double r : in.ref) ref2 += r * r;
            Dev dev = upload(c, in);
            std::vector<unsigned short> out(dev.n);
            for (int vi = 0; vi < nv; vi++) {
                const Variant &v = variants[vi];
                if (v.d != c.d || v.fmt != c.fmt || broken[vi]) continue;
                if (filter && !strstr(v.name, filter)) continue;
                CK(cudaMemset(dev.o, 0xff, 2 * dev.n + 4096)); /* NaN everywhere, and past the end */
                cudaError_t e = launch(v, c, dev);
                if (e == cudaSuccess) e = cudaDeviceSynchronize();
                if (e != cudaSuccess) {
                    printf("FAIL launch %s: %s\n", v.name, cudaGetErrorString(e));
                    failures++;
                    broken[vi] = 1;
                    if (e != cudaErrorInvalidValue && e != cudaErrorLaunchOutOfResources) {
                        printf("context is lost; stopping\n");
                        return 1;
                    }
                    continue;
                }
                CK(cudaMemcpy(out.data(), dev.o, 2 * dev.n, cudaMemcpyDeviceToHost));
                unsigned short tail[2048];
                CK(cudaMemcpy(tail, (char *)dev.o + 2 * dev.n, 4096, cudaMemcpyDeviceToHost));
                int tail_bad = 0;
                for (int i = 0; i < 2048; i++) tail_bad += tail[i] != 0xffff;
                /* atol is in units of the reference's RMS, so the test is scale-free (the large distribution's
                 * outputs are ~30x those of the normal one) */
                const double rms = sqrt(ref2 / (double)dev.n);
                double err2 = 0, maxabs = 0;
                long long nonfinite = 0, first_bad = -1;
                for (size_t i = 0; i < dev.n; i++) {
                    float f = half_to_float(out[i]);
                    if (!std::isfinite(f)) {
                        nonfinite++;
                        if (first_bad < 0) first_bad = (long long)i;
                        continue;
                    }
                    double dd = f - in.ref[i];
                    err2 += dd * dd;
                    if (fabs(dd) > maxabs) maxabs = fabs(dd);
                    if (fabs(dd) > 0.02 * rms + 0.02 * fabs(in.ref[i]) && first_bad < 0) first_bad = (long long)i;
                }
                double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
                worst[vi] = std::max(worst[vi], rel);
                if (nonfinite || rel > 2e-3 || tail_bad || first_bad >= 0) {
                    failures++;
                    if (failures < 60)
                        printf("FAIL %s case(b=%d h=%d s=%d d=%d causal=%d fmt=%d dist=%d): rel_l2=%.3g max_abs=%.3g "
                               "nonfinite=%lld first_bad=%lld tail=%d\n",
                               v.name, c.b, c.h, c.s, c.d, c.causal, c.fmt, c.dist, rel, maxabs, nonfinite, first_bad,
                               tail_bad);
                }
            }
            release(dev);
        }
        printf("correctness: %zu cases x variants, %d failures\n", cases.size(), failures);
        for (int vi = 0; vi < nv; vi++) printf("  worst rel_l2 %.2e  %s\n", worst[vi], variants[vi].name);
    }

    if (no_time) {
        printf("\n%s: %d correctness failures\n", failures ? "FAILED" : "PASSED", failures);
        return failures ? 1 : 0;
    }
    /* ---- timing on the presets ---- */
    const struct {
        const char *name;
        int b, h, s, d;
    } presets[] = {{"mission", 1, 8, 512, 64}, {"small", 2, 8, 512, 64}, {"long", 2, 8, 2048, 64},
                   {"wide", 2, 8, 512, 128}, {"stress", 4, 8, 2048, 64}};
    void *flush;
    const size_t flush_bytes = (size_t)prop.l2CacheSize * 4;
    CK(cudaMalloc(&flush, flush_bytes));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    FILE *jf = json ? fopen(json, "w") : nullptr;
    if (jf) fprintf(jf, "[\n");
    bool first_json = true;
    for (int causal = 0; causal < 2; causal++) {
        for (auto &pr : presets) {
            printf("\n%s (%d,%d,%d,%d)%s\n", pr.name, pr.b, pr.h, pr.s, pr.d, causal ? " causal" : "");
            for (int fmt = 0; fmt < 2; fmt++) {
                Case c{pr.b, pr.h, pr.s, pr.d, causal, fmt, 0, 7};
                Inputs in;
                std::vector<float> qd, kd, vd;
                make_tensor(c, 0, in.q8, in.qs, qd);
                make_tensor(c, 1, in.k8, in.ks, kd);
                make_tensor(c, 2, in.v8, in.vs, vd);
                Dev dev = upload(c, in);
                double flops = 4.0 * pr.b * pr.h * (double)pr.s * pr.s * pr.d * (causal ? 0.5 : 1.0);
                for (int vi = 0; vi < nv; vi++) {
                    const Variant &v = variants[vi];
                    if (v.d != pr.d || v.fmt != fmt || broken[vi]) continue;
                    if (filter && !strstr(v.name, filter)) continue;
                    if (launch(v, c, dev) != cudaSuccess) continue;
                    std::vector<float> ts;
                    for (int rep = 0; rep < 25; rep++) {
                        CK(cudaMemsetAsync(flush, rep & 0xff, flush_bytes));
                        CK(cudaEventRecord(e0));
                        launch(v, c, dev);
                        CK(cudaEventRecord(e1));
                        CK(cudaEventSynchronize(e1));
                        float ms;
                        CK(cudaEventElapsedTime(&ms, e0, e1));
                        if (rep >= 5) ts.push_back(ms * 1000.f);
                    }
                    std::sort(ts.begin(), ts.end());
                    float med = ts[ts.size() / 2], p10 = ts[ts.size() / 10], p90 = ts[ts.size() * 9 / 10];
                    printf("  %8.2f us [%7.2f,%7.2f] %6.1f TF/s  %s\n", med, p10, p90, flops / med * 1e-6, v.name);
                    if (jf) {
                        fprintf(jf, "%s{\"preset\":\"%s\",\"causal\":%d,\"variant\":\"%s\",\"median_us\":%.3f,\"p10_us\":%.3f,"
                                    "\"p90_us\":%.3f,\"tflops\":%.2f}",
                                first_json ? "" : ",\n", pr.name, causal, v.name, med, p10, p90, flops / med * 1e-6);
                        first_json = false;
                    }
                }
                release(dev);
            }
        }
    }
    if (jf) {
        fprintf(jf, "\n]\n");
        fclose(jf);
    }
    printf("\n%s: %d correctness failures\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
