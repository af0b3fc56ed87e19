/* gpu_support.c — templates/support.cu on a real GPU against engine/core/numerics.c and tasks/attention_fp8/attn_ref.c: generator and quantizer bit for
 * bit, FP32 reference attention vs the FP64 CPU reference, evo_compare's counts, the canary check.
 * Run: ctest --test-dir build -L gpu --output-on-failure   (or build/tests/gpu_support; exits 77 without a GPU)
 * Every failing comparison prints its case and first differing index, so one run tells what is wrong.
 */
#include "attn_ref.h"
#include "check.h"
#include "cudrv.h"
#include "nvrtc_support.h"
#include "templates.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const evo_cudrv *cu;
static CUfunction k_gen, k_quant, k_deq, k_h2f, k_ref, k_ref_rowwise, k_reset, k_cmp, k_canary;

/* A driver error is not a finding about support.cu's arithmetic: stop at once and say where. */
static void cu_must(CUresult r, const char *what, int line)
{
    if (r == CUDA_SUCCESS) return;
    evo_err err;
    evo_cu_check(cu, r, what, &err);
    fprintf(stderr, "gpu_support.c:%d: %s\n", line, err.msg);
    exit(1);
}
#define CU_MUST(call) cu_must(cu->call, #call, __LINE__)

static CUdeviceptr dalloc(size_t bytes)
{
    CUdeviceptr p;
    CU_MUST(cuMemAlloc(&p, bytes ? bytes : 1));
    return p;
}
static void dfree(CUdeviceptr p) { CU_MUST(cuMemFree(p)); }
static void upload(CUdeviceptr d, const void *h, size_t bytes) { CU_MUST(cuMemcpyHtoD(d, h, bytes)); }
static void download(void *h, CUdeviceptr d, size_t bytes) { CU_MUST(cuMemcpyDtoH(h, d, bytes)); }

static void launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args)
{
    CU_MUST(cuLaunchKernel(f, gx, gy, gz, block, 1, 1, 0, NULL, args, NULL));
    CU_MUST(cuCtxSynchronize());
}
static unsigned stride_blocks(size_t n)
{
    size_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

/* ---- the kernels, one call each ---- */

static void gpu_gen(CUdeviceptr out, size_t n, uint64_t head_elems, uint64_t seed, uint32_t tensor, int dist)
{
    unsigned long long n_ = n, he = head_elems, seed_ = seed;
    unsigned int t = tensor;
    void *args[] = {&out, &n_, &he, &seed_, &t, &dist};
    launch(k_gen, stride_blocks(n), 1, 1, EVO_SUPPORT_BLOCK, args);
}
static void gpu_quantize(CUdeviceptr x, CUdeviceptr codes, CUdeviceptr scales, size_t n_heads, uint64_t head_elems,
                         int format)
{
    unsigned long long he = head_elems;
    void *args[] = {&x, &codes, &scales, &he, &format};
    launch(k_quant, (unsigned)n_heads, 1, 1, EVO_SUPPORT_BLOCK, args);
}
static void gpu_dequantize(CUdeviceptr codes, CUdeviceptr scales, CUdeviceptr out, size_t n, uint64_t head_elems,
                           int format)
{
    unsigned long long n_ = n, he = head_elems;
    void *args[] = {&codes, &scales, &out, &n_, &he, &format};
    launch(k_deq, stride_blocks(n), 1, 1, EVO_SUPPORT_BLOCK, args);
}
static void gpu_half_to_float(CUdeviceptr x, CUdeviceptr out, size_t n)
{
    unsigned long long n_ = n;
    void *args[] = {&x, &out, &n_};
    launch(k_h2f, stride_blocks(n), 1, 1, EVO_SUPPORT_BLOCK, args);
}
/* Query rows [row0, row0 + rows) of every head (0, S: all of them). */
static void gpu_reference_rows(CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr o, int B, int H, int S, int D,
                               int causal, float softmax_scale, int row0, int rows)
{
    void *args[] = {&q, &k, &v, &o, &B, &H, &S, &D, &causal, &softmax_scale, &row0};
    launch(k_ref, (unsigned)((rows + ATTN_REF_ROWS - 1) / ATTN_REF_ROWS), (unsigned)H, (unsigned)B, ATTN_REF_BLOCK,
           args);
}
static void gpu_reference(CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr o, int B, int H, int S, int D,
                          int causal, float softmax_scale)
{
    gpu_reference_rows(q, k, v, o, B, H, S, D, causal, softmax_scale, 0, S);
}

static void gpu_compare(CUdeviceptr out, CUdeviceptr ref, size_t n, double atol, double rtol, unsigned blocks,
                        evo_compare_acc *acc)
{
    CUdeviceptr d_acc = dalloc(sizeof *acc);
    void *reset_args[] = {&d_acc};
    launch(k_reset, 1, 1, 1, 1, reset_args);
    unsigned long long n_ = n;
    void *args[] = {&out, &ref, &n_, &atol, &rtol, &d_acc};
    launch(k_cmp, blocks, 1, 1, EVO_SUPPORT_BLOCK, args);
    download(acc, d_acc, sizeof *acc);
    dfree(d_acc);
}
static void gpu_canary(CUdeviceptr guard, size_t n_words, unsigned int pattern, unsigned long long result[2])
{
    CUdeviceptr d_res = dalloc(16);
    unsigned long long init[2] = {0, ~0ull};
    upload(d_res, init, sizeof init);
    unsigned long long n_ = n_words;
    void *args[] = {&guard, &n_, &pattern, &d_res};
    launch(k_canary, stride_blocks(n_words), 1, 1, EVO_SUPPORT_BLOCK, args);
    download(result, d_res, 16);
    dfree(d_res);
}

/* ---- helpers ---- */

typedef struct {
    int B, H, S, D;
} shape;

static size_t shape_n(shape s) { return (size_t)s.B * s.H * s.S * s.D; }

/* Index of the first differing element of two arrays of elem-byte elements, or -1. */
static long long first_diff(const void *a, const void *b, size_t n, size_t elem)
{
    if (memcmp(a, b, n * elem) == 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * elem, (const char *)b + i * elem, elem) != 0) return (long long)i;
    return -1;
}

/* The same for floats, where any two NaNs are equal (the GPU's arithmetic makes its own NaN bit pattern). */
static long long first_diff_f32(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], 4) != 0) return (long long)i;
    return -1;
}

static const char *dist_names[5] = {"normal", "uniform", "outliers", "zero_head", "large"};

/* ---- tests ---- */

static void test_generator(void)
{
    shape shapes[] = {{1, 1, 1, 64}, {2, 3, 77, 64}, {1, 2, 130, 128}, {2, 8, 512, 64}};
    for (size_t si = 0; si < EVO_ARRAY_LEN(shapes); si++) {
        size_t n = shape_n(shapes[si]);
        uint64_t he = (uint64_t)shapes[si].S * shapes[si].D;
        uint16_t *cpu = evo_xmalloc(n * 2), *gpu = evo_xmalloc(n * 2);
        CUdeviceptr d = dalloc(n * 2);
        for (int dist = 0; dist < 5; dist++) {
            for (uint32_t t = 0; t < 3; t++) {
                uint64_t seed = 1000 + si * 10 + (uint64_t)dist;
                gpu_gen(d, n, he, seed, t, dist);
                download(gpu, d, n * 2);
                evo_ref_gen_inputs(cpu, n, he, seed, t, dist);
                long long at = first_diff(cpu, gpu, n, 2);
                if (at >= 0)
                    fprintf(stderr, "generator differs: shape %zu %s tensor %u at %lld: cpu 0x%04x gpu 0x%04x\n", si,
                            dist_names[dist], t, at, cpu[at], gpu[at]);
                CHECK_EQ_INT(at, -1);
            }
        }
        /* the fixed values test_attn_ref.c asserts */
        gpu_gen(d, n, 4, 42, EVO_TENSOR_Q, 0);
        download(gpu, d, n * 2);
        CHECK_EQ_INT(gpu[0], 0xb976);
        if (n > 7) CHECK_EQ_INT(gpu[7], 0x38c7);
        dfree(d);
        free(cpu);
        free(gpu);
    }
}

/* All 65536 half patterns through evo_half_to_float, bit for bit (NaN payloads included). */
static void test_half_to_float(void)
{
    enum { N = 65536 };
    uint16_t *h = evo_xmalloc(N * 2);
    float *gpu = evo_xmalloc(N * 4), *cpu = evo_xmalloc(N * 4);
    for (int i = 0; i < N; i++) {
        h[i] = (uint16_t)i;
        cpu[i] = evo_ref_half_to_float((uint16_t)i);
    }
    CUdeviceptr dh = dalloc(N * 2), df = dalloc(N * 4);
    upload(dh, h, N * 2);
    gpu_half_to_float(dh, df, N);
    download(gpu, df, N * 4);
    long long at = first_diff(cpu, gpu, N, 4);
    if (at >= 0) fprintf(stderr, "half_to_float differs at 0x%04llx\n", at);
    CHECK_EQ_INT(at, -1);
    dfree(dh);
    dfree(df);
    free(h);
    free(gpu);
    free(cpu);
}

/* GPU quantizer and dequantizer == CPU, codes and scales bit for bit. */
static void check_quantize_case(const char *what, const uint16_t *x, size_t n_heads, size_t he)
{
    size_t n = n_heads * he;
    CUdeviceptr dx = dalloc(n * 2), dc = dalloc(n), ds = dalloc(n_heads * 4), dq = dalloc(n * 4);
    upload(dx, x, n * 2);
    uint8_t *cpu_c = evo_xmalloc(n), *gpu_c = evo_xmalloc(n);
    float *cpu_s = evo_xmalloc(n_heads * 4), *gpu_s = evo_xmalloc(n_heads * 4);
    float *cpu_q = evo_xmalloc(n * 4), *gpu_q = evo_xmalloc(n * 4);
    for (int fmt = 0; fmt < 2; fmt++) {
        CU_MUST(cuMemsetD8(dc, 0xaa, n));
        gpu_quantize(dx, dc, ds, n_heads, he, fmt);
        download(gpu_c, dc, n);
        download(gpu_s, ds, n_heads * 4);
        evo_ref_quantize(x, n_heads, he, fmt, cpu_c, cpu_s);
        long long at_s = first_diff(cpu_s, gpu_s, n_heads, 4);
        long long at_c = first_diff(cpu_c, gpu_c, n, 1);
        if (at_s >= 0)
            fprintf(stderr, "%s %s: scale of head %lld: cpu %.9g gpu %.9g\n", what, fmt ? "u8sim" : "e4m3", at_s,
                    cpu_s[at_s], gpu_s[at_s]);
        if (at_c >= 0)
            fprintf(stderr, "%s %s: code %lld (x = 0x%04x): cpu 0x%02x gpu 0x%02x\n", what, fmt ? "u8sim" : "e4m3",
                    at_c, x[at_c], cpu_c[at_c], gpu_c[at_c]);
        CHECK_EQ_INT(at_s, -1);
        CHECK_EQ_INT(at_c, -1);

        gpu_dequantize(dc, ds, dq, n, he, fmt);
        download(gpu_q, dq, n * 4);
        evo_ref_dequantize(cpu_c, cpu_s, n_heads, he, fmt, cpu_q);
        long long at_q = first_diff(cpu_q, gpu_q, n, 4);
        if (at_q >= 0)
            fprintf(stderr, "%s %s: dequantized %lld: cpu %.9g gpu %.9g\n", what, fmt ? "u8sim" : "e4m3", at_q,
                    cpu_q[at_q], gpu_q[at_q]);
        CHECK_EQ_INT(at_q, -1);
    }
    dfree(dx);
    dfree(dc);
    dfree(ds);
    dfree(dq);
    free(cpu_c);
    free(gpu_c);
    free(cpu_s);
    free(gpu_s);
    free(cpu_q);
    free(gpu_q);
}

static void test_quantizer(void)
{
    shape shapes[] = {{1, 1, 1, 64}, {2, 3, 77, 64}, {1, 2, 130, 128}, {2, 8, 512, 64}};
    for (size_t si = 0; si < EVO_ARRAY_LEN(shapes); si++) {
        size_t n = shape_n(shapes[si]), he = (size_t)shapes[si].S * shapes[si].D;
        uint16_t *x = evo_xmalloc(n * 2);
        for (int dist = 0; dist < 5; dist++) {
            char what[96];
            snprintf(what, sizeof what, "shape %zu %s", si, dist_names[dist]);
            evo_ref_gen_inputs(x, n, he, 77 + (uint64_t)dist, EVO_TENSOR_K, dist);
            check_quantize_case(what, x, n / he, he);
        }
        free(x);
    }

    /* crafted: head 0 every finite half (63488 = 496 x 128), head 1 the same scaled by 2^-10, head 2 zeros, head 3
     * one non-zero subnormal */
    enum { HE = 496 * 128 };
    uint16_t *x = evo_xmalloc(4 * HE * 2);
    int m = 0;
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7c00) != 0x7c00) x[m++] = (uint16_t)h;
    CHECK_EQ_INT(m, HE);
    for (int i = 0; i < HE; i++) x[HE + i] = evo_ref_float_to_half(evo_ref_half_to_float(x[i]) * 0x1p-10f);
    for (int i = 0; i < HE; i++) x[2 * HE + i] = (i % 3) ? 0x0000 : 0x8000;
    for (int i = 0; i < HE; i++) x[3 * HE + i] = i == 999 ? 0x8001 : 0x0000;
    check_quantize_case("crafted", x, 4, HE);

    /* the zero head keeps scale 1 on the GPU too */
    CUdeviceptr dx = dalloc(4 * HE * 2), dc = dalloc(4 * HE), ds = dalloc(16);
    upload(dx, x, 4 * HE * 2);
    float s[4];
    gpu_quantize(dx, dc, ds, 4, HE, EVO_FORMAT_E4M3);
    download(s, ds, 16);
    CHECK(s[0] == 65504.0f / 448.0f);
    CHECK(s[2] == 1.0f);
    CHECK(s[3] == 0x1p-24f / 448.0f);
    dfree(dx);
    dfree(dc);
    dfree(ds);
    free(x);

    /* every code through the dequantizer, two scales */
    uint8_t codes[512];
    for (int i = 0; i < 512; i++) codes[i] = (uint8_t)i;
    float scales[2] = {0.37f, 1.0f}, cpu_q[512], gpu_q[512];
    CUdeviceptr d_c = dalloc(512), d_s = dalloc(8), d_q = dalloc(512 * 4);
    upload(d_c, codes, 512);
    upload(d_s, scales, 8);
    for (int fmt = 0; fmt < 2; fmt++) {
        gpu_dequantize(d_c, d_s, d_q, 512, 256, fmt);
        download(gpu_q, d_q, sizeof gpu_q);
        evo_ref_dequantize(codes, scales, 2, 256, fmt, cpu_q);
        CHECK_EQ_INT(first_diff_f32(cpu_q, gpu_q, 512), -1);
    }
    dfree(d_c);
    dfree(d_s);
    dfree(d_q);
}

/* Inputs of one reference case: generated, quantized and dequantized on the GPU; the dequantized tensors are
 * also copied to the host for the CPU reference. */
typedef struct {
    CUdeviceptr f[3]; /* dequantized q, k, v: float [B, H, S, D] */
    float *h[3];
} ref_inputs;

static void make_inputs(shape s, int dist, int fmt, uint64_t seed, ref_inputs *in)
{
    size_t n = shape_n(s), he = (size_t)s.S * s.D, heads = (size_t)s.B * s.H;
    CUdeviceptr x = dalloc(n * 2), c = dalloc(n), sc = dalloc(heads * 4);
    for (int t = 0; t < 3; t++) {
        gpu_gen(x, n, he, seed, (uint32_t)t, dist);
        gpu_quantize(x, c, sc, heads, he, fmt);
        in->f[t] = dalloc(n * 4);
        gpu_dequantize(c, sc, in->f[t], n, he, fmt);
        in->h[t] = evo_xmalloc(n * 4);
        download(in->h[t], in->f[t], n * 4);
    }
    dfree(x);
    dfree(c);
    dfree(sc);
}

static void free_inputs(ref_inputs *in)
{
    for (int t = 0; t < 3; t++) {
        dfree(in->f[t]);
        free(in->h[t]);
    }
}

/* The FP32 GPU reference against the FP64 CPU reference on the same dequantized inputs. Tolerance: rel-L2 1e-5;
 * 1e-4 for "large", where a score of ~1e3 rounded to float already moves a softmax weight by ~3e-5 (a CPU model
 * of the kernel's float arithmetic gives up to 1.3e-5 there and below 2e-6 elsewhere). The output sits between
 * canary margins filled with a NaN pattern, so every element must be written and nothing outside it. */
static void test_reference(void)
{
    const int seqs[] = {1, 77, 130}, dims[] = {64, 128};
    const unsigned int pattern = 0x7fbadbadu; /* a NaN as float */
    enum { MARGIN = 1024 };
    double worst[5] = {0};
    for (int dist = 0; dist < 5; dist++) {
        for (size_t si = 0; si < 3; si++) {
            for (size_t di = 0; di < 2; di++) {
                shape s = {2, 3, seqs[si], dims[di]};
                size_t n = shape_n(s);
                int fmt = (int)((si + di + (size_t)dist) % 2);
                ref_inputs in;
                make_inputs(s, dist, fmt, 500 + (uint64_t)dist, &in);
                CUdeviceptr buf = dalloc((n + 2 * MARGIN) * 4), d_o = buf + MARGIN * 4;
                float *o = evo_xmalloc(n * 4);
                double *ref = evo_xmalloc(n * 8);
                for (int causal = 0; causal < 2; causal++) {
                    float ss = 1.0f / sqrtf((float)s.D);
                    CU_MUST(cuMemsetD32(buf, pattern, n + 2 * MARGIN));
                    gpu_reference(in.f[0], in.f[1], in.f[2], d_o, s.B, s.H, s.S, s.D, causal, ss);
                    unsigned long long pre[2], post[2];
                    gpu_canary(buf, MARGIN, pattern, pre);
                    gpu_canary(d_o + n * 4, MARGIN, pattern, post);
                    CHECK_EQ_INT(pre[0], 0);
                    CHECK_EQ_INT(post[0], 0);
                    download(o, d_o, n * 4);
                    evo_ref_attention(in.h[0], in.h[1], in.h[2], ref, s.B, s.H, s.S, s.D, causal, (double)ss);
                    evo_metrics m;
                    evo_ref_compare(o, EVO_ELEM_F32, ref, EVO_ELEM_F64, n, 0.0, 0.0, &m);
                    double tol = dist == 4 ? 1e-4 : 1e-5;
                    printf("reference %-9s %s S=%3d D=%3d causal=%d: rel_l2 %.3g max_abs %.3g non-finite %zu\n",
                           dist_names[dist], fmt ? "u8sim" : "e4m3 ", s.S, s.D, causal, m.rel_l2, m.max_abs,
                           m.n_nonfinite);
                    CHECK_EQ_INT(m.n_nonfinite, 0);
                    CHECK_EQ_INT(m.n_finite, n);
                    CHECK(m.rel_l2 < tol);
                    worst[dist] = fmax(worst[dist], m.rel_l2);
                    if (s.S == 1) CHECK(m.max_abs == 0.0); /* one key: the output is v itself */
                }
                dfree(buf);
                free(o);
                free(ref);
                free_inputs(&in);
            }
        }
    }
    for (int d = 0; d < 5; d++) printf("reference worst rel_l2 %-9s %.3g\n", dist_names[d], worst[d]);
}

/* The reference's two forms (attn_ref.cu): the shipped one, four rows a warp, and the first, one row a warp, agree
 * bit for bit (every float of the output, NaN patterns included) on odd and awkward shapes, a head dim that is no
 * multiple of 4, causal and not, three distributions; then both are timed (CUDA events, median of 3) at a large
 * shape, the figure a worker's start pays per large case. */
static void test_reference_forms(void)
{
    const shape shapes[] = {{2, 3, 1, 64},     {2, 3, 77, 128},  {1, 2, 130, 37}, {1, 2, 500, 64},
                            {1, 2, 1000, 128}, {1, 1, 4097, 64}, {1, 2, 33, 1}};
    const int dists[] = {0, 2, 4};
    for (size_t si = 0; si < EVO_ARRAY_LEN(shapes); si++) {
        const shape s = shapes[si];
        const size_t n = shape_n(s);
        for (size_t di = 0; di < EVO_ARRAY_LEN(dists); di++) {
            ref_inputs in;
            make_inputs(s, dists[di], (int)((si + di) % 2), 900 + (uint64_t)si * 7 + di, &in);
            CUdeviceptr o1 = dalloc(n * 4), o2 = dalloc(n * 4);
            uint32_t *h1 = evo_xmalloc(n * 4), *h2 = evo_xmalloc(n * 4);
            for (int causal = 0; causal < 2; causal++) {
                int B = s.B, H = s.H, S = s.S, D = s.D, c = causal;
                float ss = 1.0f / sqrtf((float)s.D);
                CU_MUST(cuMemsetD32(o1, 0x7fbadbadu, n));
                CU_MUST(cuMemsetD32(o2, 0x7fc0ffeeu, n));
                gpu_reference(in.f[0], in.f[1], in.f[2], o1, B, H, S, D, causal, ss);
                void *args[] = {&in.f[0], &in.f[1], &in.f[2], &o2, &B, &H, &S, &D, &c, &ss};
                launch(k_ref_rowwise, (unsigned)((S + ATTN_REF_ROWWISE_ROWS - 1) / ATTN_REF_ROWWISE_ROWS), (unsigned)H,
                       (unsigned)B, ATTN_REF_ROWWISE_BLOCK, args);
                download(h1, o1, n * 4);
                download(h2, o2, n * 4);
                size_t differ = 0, first = n;
                for (size_t i = 0; i < n; i++)
                    if (h1[i] != h2[i]) {
                        if (!differ) first = i;
                        differ++;
                    }
                printf("reference forms (%d,%d,%d,%d) %-8s causal=%d: %zu of %zu floats differ%s\n", B, H, S, D,
                       dist_names[dists[di]], causal, differ, n, differ ? " (FAIL)" : "");
                if (differ) printf("  first at %zu: %08x vs %08x\n", first, (unsigned)h1[first], (unsigned)h2[first]);
                CHECK_EQ_INT(differ, 0);
                /* a window of query rows (a sampled check's) gives those rows' bits and writes nothing else */
                const int row0 = S / 3, rows = S - row0 > 40 ? 40 : S - row0;
                CU_MUST(cuMemsetD32(o2, 0x7fc0ffeeu, n));
                gpu_reference_rows(in.f[0], in.f[1], in.f[2], o2, B, H, S, D, causal, ss, row0, rows);
                download(h2, o2, n * 4);
                size_t wdiff = 0, outside = 0;
                for (size_t i = 0; i < n; i++) {
                    const int row = (int)(i / (size_t)D % (size_t)S);
                    if (row >= row0 && row < row0 + rows) wdiff += h1[i] != h2[i];
                }
                /* rows past the window up to the end of its last 16-row block may be written too (same bits) */
                const int end = row0 + (rows + ATTN_REF_ROWS - 1) / ATTN_REF_ROWS * ATTN_REF_ROWS;
                for (size_t i = 0; i < n; i++) {
                    const int row = (int)(i / (size_t)D % (size_t)S);
                    if ((row < row0 || row >= end) && h2[i] != 0x7fc0ffeeu) outside++;
                }
                printf(
                    "reference window rows %d..%d of (%d,%d,%d,%d) %-8s causal=%d: %zu differ, %zu written outside%s\n",
                    row0, row0 + rows - 1, B, H, S, D, dist_names[dists[di]], causal, wdiff, outside,
                    wdiff || outside ? " (FAIL)" : "");
                CHECK_EQ_INT(wdiff, 0);
                CHECK_EQ_INT(outside, 0);
            }
            free(h1);
            free(h2);
            dfree(o1);
            dfree(o2);
            free_inputs(&in);
        }
    }
    /* their times at a large shape */
    const shape big = {1, 8, 4096, 128};
    const size_t n = shape_n(big);
    CUdeviceptr t[4], half = dalloc(n * 2);
    for (int i = 0; i < 4; i++) { /* normal fp16 inputs as floats (the output buffer too: it is overwritten) */
        t[i] = dalloc(n * 4);
        gpu_gen(half, n, (uint64_t)big.S * big.D, 77 + (uint64_t)i, (uint32_t)i, 0);
        gpu_half_to_float(half, t[i], n);
    }
    dfree(half);
    CUevent e0, e1;
    CU_MUST(cuEventCreate(&e0, 0));
    CU_MUST(cuEventCreate(&e1, 0));
    for (int causal = 0; causal < 2; causal++) {
        double ms[2];
        for (int form = 0; form < 2; form++) {
            float runs[3];
            for (int r = 0; r < 3; r++) {
                int B = big.B, H = big.H, S = big.S, D = big.D, c = causal;
                float ss = 1.0f / sqrtf((float)D);
                int row0 = 0; /* the shipped form's last argument; the first form has none */
                void *args[] = {&t[0], &t[1], &t[2], &t[3], &B, &H, &S, &D, &c, &ss, &row0};
                const unsigned rows = form ? ATTN_REF_ROWWISE_ROWS : ATTN_REF_ROWS;
                CU_MUST(cuEventRecord(e0, NULL));
                CU_MUST(cuLaunchKernel(form ? k_ref_rowwise : k_ref, (unsigned)(S + (int)rows - 1) / rows, (unsigned)H,
                                       (unsigned)B, form ? ATTN_REF_ROWWISE_BLOCK : ATTN_REF_BLOCK, 1, 1, 0, NULL, args,
                                       NULL));
                CU_MUST(cuEventRecord(e1, NULL));
                CU_MUST(cuEventSynchronize(e1));
                CU_MUST(cuEventElapsedTime(&runs[r], e0, e1));
            }
            const float a = runs[0], b = runs[1], c3 = runs[2]; /* median of 3 */
            ms[form] = a > b ? (b > c3 ? b : (a > c3 ? c3 : a)) : (a > c3 ? a : (b > c3 ? c3 : b));
        }
        printf("reference time (%d,%d,%d,%d) causal=%d: %.1f ms (four rows a warp) vs %.1f ms (one row a warp): "
               "%.2fx\n",
               big.B, big.H, big.S, big.D, causal, ms[0], ms[1], ms[1] / ms[0]);
    }
    CU_MUST(cuEventDestroy(e0));
    CU_MUST(cuEventDestroy(e1));
    for (int i = 0; i < 4; i++) dfree(t[i]);
}

/* evo_compare on crafted candidates: exact counts and first bad index, and the same numbers as the CPU. */
static void test_compare(void)
{
    shape s = {2, 3, 130, 64};
    size_t n = shape_n(s);
    ref_inputs in;
    make_inputs(s, 0, EVO_FORMAT_E4M3, 900, &in);
    CUdeviceptr d_ref = dalloc(n * 4), d_out = dalloc(n * 2);
    gpu_reference(in.f[0], in.f[1], in.f[2], d_ref, s.B, s.H, s.S, s.D, 0, 0.125f);
    float *ref = evo_xmalloc(n * 4);
    uint16_t *out = evo_xmalloc(n * 2);
    download(ref, d_ref, n * 4);
    for (size_t i = 0; i < n; i++) out[i] = evo_ref_float_to_half(ref[i]);

    struct {
        const char *what;
        size_t at[3];
        uint16_t val[3];
        int n_plant;
        double atol, rtol;
        long long n_over, n_nonfinite, first_bad; /* -2: take n_over from the CPU */
    } cases[] = {
        {"clean", {0}, {0}, 0, 1e-2, 1e-2, 0, 0, -1},
        {"one NaN at 1234", {1234}, {0x7e00}, 1, 1e-2, 1e-2, 1, 1, 1234},
        {"error at 77, NaN at 1234, -inf at 40000", {1234, 77, 40000}, {0x7e00, 0, 0xfc00}, 3, 1e-2, 1e-2, 3, 2, 77},
        {"exact tolerance", {0}, {0}, 0, 0.0, 0.0, -2, 0, -2},
    };
    for (size_t c = 0; c < EVO_ARRAY_LEN(cases); c++) {
        uint16_t *cand = evo_xmalloc(n * 2);
        memcpy(cand, out, n * 2);
        for (int p = 0; p < cases[c].n_plant; p++) {
            size_t at = cases[c].at[p];
            cand[at] = cases[c].val[p] ? cases[c].val[p] : evo_ref_float_to_half(ref[at] + 1.0f);
        }
        upload(d_out, cand, n * 2);
        evo_metrics cpu;
        evo_ref_compare(cand, EVO_ELEM_F16, ref, EVO_ELEM_F32, n, cases[c].atol, cases[c].rtol, &cpu);
        unsigned grids[] = {1, 7, stride_blocks(n)};
        for (size_t g = 0; g < EVO_ARRAY_LEN(grids); g++) {
            evo_compare_acc acc;
            gpu_compare(d_out, d_ref, n, cases[c].atol, cases[c].rtol, grids[g], &acc);
            evo_metrics m;
            evo_ref_metrics_from_acc(&acc, n, &m);
            printf("compare %-40s grid %4u: over %zu non-finite %zu first bad %lld max_abs %.3g rel_l2 %.3g\n",
                   cases[c].what, grids[g], m.n_over, m.n_nonfinite, m.first_bad, m.max_abs, m.rel_l2);
            if (cases[c].n_over >= 0) CHECK_EQ_INT(m.n_over, cases[c].n_over);
            if (cases[c].first_bad >= -1) CHECK_EQ_INT(m.first_bad, cases[c].first_bad);
            CHECK_EQ_INT(m.n_nonfinite, cases[c].n_nonfinite);
            CHECK_EQ_INT(m.n_over, cpu.n_over);
            CHECK_EQ_INT(m.first_bad, cpu.first_bad);
            CHECK_EQ_INT(m.n_finite, cpu.n_finite);
            CHECK(m.max_abs == cpu.max_abs);
            CHECK_NEAR(m.sum_sq_diff, cpu.sum_sq_diff, 1e-12 * cpu.sum_sq_diff + 1e-300);
            CHECK_NEAR(m.sum_sq_ref, cpu.sum_sq_ref, 1e-12 * cpu.sum_sq_ref);
        }
        if (c == 3) CHECK(cpu.n_over > 0 && cpu.n_over < n); /* fp16 rounding is exact for some, not all */
        free(cand);
    }
    dfree(d_ref);
    dfree(d_out);
    free(ref);
    free(out);
    free_inputs(&in);
}

static void test_canary(void)
{
    enum { N = 4096 };
    const unsigned int pattern = 0xa5c3e1f7u;
    CUdeviceptr g = dalloc(N * 4);
    CU_MUST(cuMemsetD32(g, pattern, N));
    unsigned long long r[2];
    gpu_canary(g, N, pattern, r);
    CHECK_EQ_INT(r[0], 0);
    CHECK(r[1] == ~0ull);
    unsigned int word = 0;
    upload(g + 17 * 4, &word, 4);
    gpu_canary(g, N, pattern, r);
    CHECK_EQ_INT(r[0], 1);
    CHECK_EQ_INT(r[1], 17);
    word = pattern ^ 0x100u; /* one flipped bit counts too */
    upload(g + 4000 * 4, &word, 4);
    gpu_canary(g, N, pattern, r);
    CHECK_EQ_INT(r[0], 2);
    CHECK_EQ_INT(r[1], 17);
    dfree(g);
}

/* How long the reference takes on the long preset (informative, not a check). */
static void time_reference(void)
{
    shape s = {2, 8, 2048, 64};
    ref_inputs in;
    make_inputs(s, 0, EVO_FORMAT_E4M3, 1, &in);
    CUdeviceptr o = dalloc(shape_n(s) * 4);
    for (int causal = 0; causal < 2; causal++) {
        double t0 = evo_now();
        gpu_reference(in.f[0], in.f[1], in.f[2], o, s.B, s.H, s.S, s.D, causal, 0.125f);
        printf("reference (2,8,2048,64) causal=%d: %.1f ms\n", causal, (evo_now() - t0) * 1e3);
    }
    dfree(o);
    free_inputs(&in);
}

int main(void)
{
    evo_err err = {0};
    if (evo_cudrv_load(&cu, &err) != EVO_OK) {
        printf("SKIP: %s\n", err.msg);
        return CHECK_SKIP;
    }
    CUresult r = cu->cuInit(0);
    int count = 0;
    if (r == CUDA_SUCCESS) r = cu->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        evo_cu_check(cu, r, "cuInit", &err);
        printf("SKIP: no CUDA device (%s)\n", r != CUDA_SUCCESS ? err.msg : "device count 0");
        return CHECK_SKIP;
    }
    CUdevice dev;
    CUcontext ctx;
    int major = 0, minor = 0;
    char name[256] = "";
    CU_MUST(cuDeviceGet(&dev, 0));
    CU_MUST(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU_MUST(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CU_MUST(cuDeviceGetName(name, sizeof name, dev));
    CU_MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_MUST(cuCtxSetCurrent(ctx));

    const char *src = NULL;
    if (evo_template_get("support.cu", &src, NULL, &err) != EVO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    support_build b;
    if (support_compile(src, arch, &b) != 0) { /* an NVRTC older than the device: let the driver JIT the PTX */
        fprintf(stderr, "NVRTC cannot build %s (%s); trying PTX\n", arch, b.log);
        support_build_free(&b);
        snprintf(arch, sizeof arch, "compute_%d%d", major, minor);
        if (support_compile(src, arch, &b) != 0) {
            fprintf(stderr, "support.cu does not compile for %s:\n%s\n", arch, b.log);
            return 1;
        }
    }
    printf("device %s (sm_%d%d), support.cu built for %s\n", name, major, minor, arch);
    /* attention's reference kernels (quantizer, dequantizer, reference) are the task's: attn_ref.cu */
    const char *ref_src = NULL;
    support_build rb;
    if (evo_template_get("attn_ref.cu", &ref_src, NULL, &err) != EVO_OK ||
        support_compile_named(ref_src, "attn_ref.cu", NULL, arch, &rb) != 0) {
        fprintf(stderr, "attn_ref.cu does not compile for %s: %s\n", arch, ref_src ? rb.log : err.msg);
        return 1;
    }
    CUmodule mod, ref_mod;
    CU_MUST(cuModuleLoadData(&mod, b.image));
    CU_MUST(cuModuleLoadData(&ref_mod, rb.image));
    const struct {
        CUfunction *f;
        CUmodule *m;
        const char *name;
    } fns[] = {{&k_gen, &mod, "evo_gen_inputs"},
               {&k_quant, &ref_mod, "evo_quantize"},
               {&k_deq, &ref_mod, "evo_dequantize"},
               {&k_h2f, &mod, "evo_half_to_float"},
               {&k_ref, &ref_mod, "evo_reference_attention"},
               {&k_ref_rowwise, &ref_mod, "evo_reference_attention_rowwise"},
               {&k_reset, &mod, "evo_compare_reset"},
               {&k_cmp, &mod, "evo_compare"},
               {&k_canary, &mod, "evo_canary_check"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fns); i++) CU_MUST(cuModuleGetFunction(fns[i].f, *fns[i].m, fns[i].name));

    test_generator();
    test_half_to_float();
    test_quantizer();
    test_reference();
    test_reference_forms();
    test_compare();
    test_canary();
    time_reference();

    CU_MUST(cuModuleUnload(mod));
    CU_MUST(cuModuleUnload(ref_mod));
    support_build_free(&rb);
    CU_MUST(cuDevicePrimaryCtxRelease(dev));
    support_build_free(&b);
    return check_result();
}
