/* gpu_attn_model.c — the fp8 accuracy class's GPU side against its CPU twins (attn_ref.c, numerics.c): the probes'
 * inputs and the FP8 model bit for bit, evo_compare_slices's counts and sums; then, for the record, the model's own
 * error against the exact FP32 reference per distribution and probe (the worst head), at D = 64 and 128.
 * Run: ctest --test-dir build -L gpu --output-on-failure   (or build/tests/gpu_attn_model; exits 77 without a GPU)
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

#define AN_FN static inline
#include "attn_numerics.h"

static const evo_cudrv *cu;
static CUfunction k_probe, k_model, k_slices, k_slices_reset, k_gen, k_quant, k_deq, k_ref;

static void cu_must(CUresult r, const char *what, int line)
{
    if (r == CUDA_SUCCESS) return;
    evo_err err;
    evo_cu_check(cu, r, what, &err);
    fprintf(stderr, "gpu_attn_model.c:%d: %s\n", line, err.msg);
    exit(1);
}
#define CU_MUST(call) cu_must(cu->call, #call, __LINE__)

static CUdeviceptr dalloc(size_t bytes)
{
    CUdeviceptr p;
    CU_MUST(cuMemAlloc(&p, bytes ? bytes : 1));
    return p;
}
static void launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void **args)
{
    CU_MUST(cuLaunchKernel(f, gx, gy, gz, block, 1, 1, 0, NULL, args, NULL));
    CU_MUST(cuCtxSynchronize());
}
static unsigned blocks(size_t n) { return (unsigned)((n + 255) / 256 > 4096 ? 4096 : (n + 255) / 256); }

/* Inputs of one case on both sides: fp16 (probe or distribution), codes and scales. */
typedef struct {
    int b, h, s, d;
    size_t n;
    uint16_t *x[3];
    uint8_t *codes[3];
    float *scales[3];
    CUdeviceptr dx[3], dcodes[3], dscales[3], dfloat[3];
} inputs;

static void make(inputs *in, int probe, int dist, uint64_t seed, int b, int h, int s, int d)
{
    memset(in, 0, sizeof *in);
    in->b = b, in->h = h, in->s = s, in->d = d;
    in->n = (size_t)b * h * s * d;
    const size_t head = (size_t)s * d;
    unsigned long long nn = in->n, hh = head, sd = seed;
    for (unsigned t = 0; t < 3; t++) {
        in->x[t] = evo_xmalloc(in->n * 2);
        in->codes[t] = evo_xmalloc(in->n);
        in->scales[t] = evo_xmalloc((size_t)b * h * 4);
        if (probe >= 0)
            evo_ref_gen_probe(in->x[t], in->n, probe, seed, t, s, d);
        else
            evo_ref_gen_inputs(in->x[t], in->n, head, seed, t, dist);
        evo_ref_quantize(in->x[t], (size_t)b * h, head, EVO_FORMAT_E4M3, in->codes[t], in->scales[t]);
        in->dx[t] = dalloc(in->n * 2);
        in->dcodes[t] = dalloc(in->n);
        in->dscales[t] = dalloc((size_t)b * h * 4);
        in->dfloat[t] = dalloc(in->n * 4);
        if (probe >= 0) {
            void *a[] = {&in->dx[t], &nn, &probe, &sd, &t, &s, &d};
            launch(k_probe, blocks(in->n), 1, 1, 256, a);
        } else {
            void *a[] = {&in->dx[t], &nn, &hh, &sd, &t, &dist};
            launch(k_gen, blocks(in->n), 1, 1, 256, a);
        }
        int fmt = EVO_FORMAT_E4M3;
        void *q[] = {&in->dx[t], &in->dcodes[t], &in->dscales[t], &hh, &fmt};
        launch(k_quant, (unsigned)(b * h), 1, 1, 256, q);
        void *dq[] = {&in->dcodes[t], &in->dscales[t], &in->dfloat[t], &nn, &hh, &fmt};
        launch(k_deq, blocks(in->n), 1, 1, 256, dq);
    }
}

static void release(inputs *in)
{
    for (int t = 0; t < 3; t++) {
        free(in->x[t]), free(in->codes[t]), free(in->scales[t]);
        CU_MUST(cuMemFree(in->dx[t]));
        CU_MUST(cuMemFree(in->dcodes[t]));
        CU_MUST(cuMemFree(in->dscales[t]));
        CU_MUST(cuMemFree(in->dfloat[t]));
    }
}

/* Query rows [row0, row0 + rows) of every head. */
static void gpu_model_rows(const inputs *in, int causal, float sm, int phase, CUdeviceptr o, int row0, int rows)
{
    CUdeviceptr q = in->dcodes[0], qs = in->dscales[0], k = in->dcodes[1], ks = in->dscales[1];
    CUdeviceptr v = in->dcodes[2], vs = in->dscales[2];
    int b = in->b, h = in->h, s = in->s, d = in->d;
    void *a[] = {&q, &qs, &k, &ks, &v, &vs, &o, &b, &h, &s, &d, &causal, &sm, &phase, &row0};
    launch(k_model, (unsigned)((rows + ATTN_MODEL_ROWS - 1) / ATTN_MODEL_ROWS), (unsigned)h, (unsigned)b,
           ATTN_MODEL_THREADS, a);
}
static void gpu_model(const inputs *in, int causal, float sm, int phase, CUdeviceptr o)
{
    gpu_model_rows(in, causal, sm, phase, o, 0, in->s);
}

static void gpu_slices(CUdeviceptr out, int out_f32, CUdeviceptr ref, size_t ns, size_t se, CUdeviceptr bound,
                       unsigned per, evo_slice_acc *host)
{
    CUdeviceptr acc = dalloc(ns * sizeof *host);
    unsigned long long n_ = ns, se_ = se;
    void *r[] = {&acc, &n_};
    launch(k_slices_reset, 1, 1, 1, 64, r);
    void *a[] = {&out, &out_f32, &ref, &se_, &bound, &acc};
    launch(k_slices, per, (unsigned)ns, 1, 256, a);
    CU_MUST(cuMemcpyDtoH(host, acc, ns * sizeof *host));
    CU_MUST(cuMemFree(acc));
}

/* ---- bit for bit ---- */

static void test_probes(void)
{
    const int dims[] = {64, 128}, seqs[] = {1, 77, 129};
    for (int probe = 0; probe < AN_PROBE_COUNT; probe++)
        for (int di = 0; di < 2; di++)
            for (int si = 0; si < 3; si++) {
                inputs in;
                make(&in, probe, 0, 5 + (uint64_t)probe, 2, 3, seqs[si], dims[di]);
                for (int t = 0; t < 3; t++) {
                    uint16_t *g = evo_xmalloc(in.n * 2);
                    CU_MUST(cuMemcpyDtoH(g, in.dx[t], in.n * 2));
                    size_t diff = 0, first = 0;
                    for (size_t i = 0; i < in.n; i++)
                        if (g[i] != in.x[t][i] && !diff++) first = i;
                    if (diff)
                        printf("probe %d S=%d D=%d tensor %d: %zu differ (first %zu)\n", probe, seqs[si], dims[di], t,
                               diff, first);
                    CHECK_EQ_INT(diff, 0);
                    free(g);
                }
                release(&in);
            }
}

static void test_model_bits(void)
{
    const struct {
        int probe, dist, s, d;
    } cases[] = {{-1, 0, 1, 64},
                 {-1, 0, 77, 64},
                 {-1, 0, 300, 128},
                 {-1, 2, 130, 64},
                 {-1, 4, 200, 128},
                 {-1, 3, 129, 64},
                 {AN_PROBE_INTEGERS, 0, 150, 64},
                 {AN_PROBE_NEEDLE, 0, 257, 128},
                 {AN_PROBE_MODERATE, 0, 129, 64}};
    for (size_t c = 0; c < EVO_ARRAY_LEN(cases); c++)
        for (int causal = 0; causal < 2; causal++) {
            const int phase = (int)(c + (size_t)causal) % AN_FP8_ORDERS;
            inputs in;
            make(&in, cases[c].probe, cases[c].dist, 40 + c, 1, 2, cases[c].s, cases[c].d);
            const float sm = cases[c].probe >= 0 && evo_ref_probe_softmax_scale(cases[c].probe, 2, cases[c].d) != 0
                                 ? evo_ref_probe_softmax_scale(cases[c].probe, 2, cases[c].d)
                                 : 1.0f / sqrtf((float)cases[c].d);
            CUdeviceptr o = dalloc(in.n * 4);
            gpu_model(&in, causal, sm, phase, o);
            float *g = evo_xmalloc(in.n * 4), *h = evo_xmalloc(in.n * 4);
            CU_MUST(cuMemcpyDtoH(g, o, in.n * 4));
            evo_ref_fp8_model(in.codes[0], in.scales[0], in.codes[1], in.scales[1], in.codes[2], in.scales[2], h, in.b,
                              in.h, in.s, in.d, causal, sm, phase);
            size_t diff = 0;
            for (size_t i = 0; i < in.n; i++) diff += memcmp(&g[i], &h[i], 4) != 0;
            printf("model probe %d dist %d S=%d D=%d causal %d phase %d: %zu of %zu differ from the CPU twin\n",
                   cases[c].probe, cases[c].dist, in.s, in.d, causal, phase, diff, in.n);
            CHECK_EQ_INT(diff, 0);
            /* a window of query rows (a sampled check's): those rows' bits, nothing written past its last block */
            const int row0 = in.s / 3, rows = in.s - row0 > 20 ? 20 : in.s - row0;
            const int end = row0 + (rows + ATTN_MODEL_ROWS - 1) / ATTN_MODEL_ROWS * ATTN_MODEL_ROWS;
            CU_MUST(cuMemsetD32(o, 0x7fc0ffeeu, in.n));
            gpu_model_rows(&in, causal, sm, phase, o, row0, rows);
            CU_MUST(cuMemcpyDtoH(g, o, in.n * 4));
            size_t wdiff = 0, outside = 0;
            for (size_t i = 0; i < in.n; i++) {
                const int row = (int)(i / (size_t)in.d % (size_t)in.s);
                if (row >= row0 && row < row0 + rows) wdiff += memcmp(&g[i], &h[i], 4) != 0;
                uint32_t bits;
                memcpy(&bits, &g[i], 4);
                if ((row < row0 || row >= end) && bits != 0x7fc0ffeeu) outside++;
            }
            printf("model window rows %d..%d: %zu differ, %zu written outside\n", row0, row0 + rows - 1, wdiff,
                   outside);
            CHECK_EQ_INT(wdiff, 0);
            CHECK_EQ_INT(outside, 0);
            free(g), free(h);
            CU_MUST(cuMemFree(o));
            release(&in);
        }
}

static void test_slices(void)
{
    /* 6 slices of 1000: slice 2 with an error at 2017 and a NaN at 2500, slice 5 with an error at 5003 */
    enum { NS = 6, SE = 1000 };
    float ref[NS * SE];
    uint16_t out[NS * SE];
    for (int i = 0; i < NS * SE; i++) ref[i] = (float)sin(i * 0.37), out[i] = evo_ref_float_to_half(ref[i]);
    out[2017] = evo_ref_float_to_half(ref[2017] + 0.5f);
    out[2500] = 0x7e00;
    out[5003] = evo_ref_float_to_half(ref[5003] - 0.25f);
    CUdeviceptr dref = dalloc(sizeof ref), dout = dalloc(sizeof out), dbound = dalloc(NS * 8);
    CU_MUST(cuMemcpyHtoD(dref, ref, sizeof ref));
    CU_MUST(cuMemcpyHtoD(dout, out, sizeof out));
    const double bound[NS] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.3};
    CU_MUST(cuMemcpyHtoD(dbound, bound, sizeof bound));
    evo_slice_acc cpu[NS], gpu[NS];
    evo_ref_compare_slices(out, EVO_ELEM_F16, ref, EVO_ELEM_F32, NS, SE, bound, cpu);
    const unsigned pers[] = {1, 3, 64};
    for (size_t p = 0; p < EVO_ARRAY_LEN(pers); p++) {
        gpu_slices(dout, 0, dref, NS, SE, dbound, pers[p], gpu);
        for (int s = 0; s < NS; s++) {
            CHECK_EQ_INT(gpu[s].n_over, cpu[s].n_over);
            CHECK_EQ_INT(gpu[s].n_nonfinite, cpu[s].n_nonfinite);
            CHECK(gpu[s].first_bad == cpu[s].first_bad);
            CHECK(gpu[s].max_abs == cpu[s].max_abs && gpu[s].max_ref == cpu[s].max_ref);
            CHECK_NEAR(gpu[s].sum_sq_diff, cpu[s].sum_sq_diff, 1e-12 * cpu[s].sum_sq_diff + 1e-300);
            CHECK_NEAR(gpu[s].sum_sq_ref, cpu[s].sum_sq_ref, 1e-12 * cpu[s].sum_sq_ref);
        }
    }
    CHECK_EQ_INT(cpu[2].n_over, 2);
    CHECK_EQ_INT(cpu[2].first_bad, 2017);
    CHECK_EQ_INT(cpu[5].n_over, 0); /* 0.25 is within slice 5's bound */
    CHECK_EQ_INT(cpu[0].n_over + cpu[1].n_over + cpu[3].n_over + cpu[4].n_over, 0);
    CU_MUST(cuMemFree(dref));
    CU_MUST(cuMemFree(dout));
    CU_MUST(cuMemFree(dbound));
}

/* ---- the model's own error (a record, bounded loosely) ---- */

static void model_error_table(void)
{
    static const char *const dists[] = {"normal", "uniform", "outliers", "zero_head", "large"};
    static const char *const probes[] = {"heads", "needle", "last_key", "moderate", "integers"};
    printf("\nFP8 model vs the exact FP32 reference on its dequantized inputs, (1,8,1024,D), worst head rel-L2 / "
           "max-abs / rel-L2 budget (2x + 1e-3):\n");
    for (int d = 64; d <= 128; d *= 2)
        for (int causal = 0; causal < 2; causal++)
            for (int row = 0; row < 5 + AN_PROBE_COUNT; row++) {
                const int probe = row < 5 ? -1 : row - 5;
                inputs in;
                make(&in, probe, row < 5 ? row : 0, 3, 1, 8, 1024, d);
                const float sm = probe >= 0 && evo_ref_probe_softmax_scale(probe, 1, d) != 0
                                     ? evo_ref_probe_softmax_scale(probe, 1, d)
                                     : 1.0f / sqrtf((float)d);
                CUdeviceptr o = dalloc(in.n * 4), ref = dalloc(in.n * 4);
                int b = 1, h = 8, s = 1024, dd = d;
                float smf = sm;
                int row0 = 0;
                void *a[] = {&in.dfloat[0], &in.dfloat[1], &in.dfloat[2], &ref, &b, &h, &s, &dd, &causal, &smf, &row0};
                launch(k_ref, (unsigned)((s + ATTN_REF_ROWS - 1) / ATTN_REF_ROWS), 8, 1, ATTN_REF_BLOCK, a);
                double wr = 0, wm = 0, wr0 = 0; /* the worst head, over the orders (the gate's rule) and in phase 0 */
                for (int ph = 0; ph < AN_FP8_ORDERS; ph++) {
                    evo_slice_acc acc[8];
                    gpu_model(&in, causal, sm, ph, o);
                    gpu_slices(o, 1, ref, 8, in.n / 8, 0, 64, acc);
                    for (int i = 0; i < 8; i++) {
                        wr = fmax(wr, evo_slice_rel_l2(&acc[i])), wm = fmax(wm, acc[i].max_abs);
                        if (!ph) wr0 = fmax(wr0, evo_slice_rel_l2(&acc[i]));
                    }
                }
                printf("  D=%3d causal=%d %-10s rel-L2 %.3e (phase 0 %.3e)  max-abs %.3e  budget %.3e\n", d, causal,
                       probe >= 0 ? probes[probe] : dists[row], wr, wr0, wm, AN_FP8_K * wr + AN_FP8_REL_ATOL);
                /* rounding P to 3 mantissa bits costs a few percent where the softmax is spread; on the integer
                 * probe every P and product is exact and what is left is the tensor core's 13-bit P·V accumulator */
                if (probe == AN_PROBE_INTEGERS)
                    CHECK(wr < 5e-3);
                else
                    CHECK(wr < 0.1);
                CU_MUST(cuMemFree(o));
                CU_MUST(cuMemFree(ref));
                release(&in);
            }
}

static int load(const char *file, const char *extra, const char *arch, CUmodule *mod)
{
    const char *src = NULL;
    evo_err err = {0};
    if (evo_template_get(file, &src, NULL, &err) != EVO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    support_build b;
    if (support_compile_named(src, file, extra, arch, &b) != 0) {
        fprintf(stderr, "%s does not compile for %s:\n%s\n", file, arch, b.log);
        support_build_free(&b);
        return -1;
    }
    CU_MUST(cuModuleLoadData(mod, b.image));
    support_build_free(&b);
    return 0;
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
        printf("SKIP: no CUDA device\n");
        return CHECK_SKIP;
    }
    CUdevice dev;
    CUcontext ctx;
    int major = 0, minor = 0;
    CU_MUST(cuDeviceGet(&dev, 0));
    CU_MUST(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU_MUST(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CU_MUST(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_MUST(cuCtxSetCurrent(ctx));
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    CUmodule sup, attn, aref;
    if (load("support.cu", NULL, arch, &sup) || load("attn_support.cu", "attn_numerics.h", arch, &attn) ||
        load("attn_ref.cu", NULL, arch, &aref))
        return 1;
    struct {
        CUfunction *f;
        CUmodule m;
        const char *name;
    } fns[] = {{&k_probe, attn, "evo_gen_probe"},      {&k_model, attn, "evo_fp8_model_attention"},
               {&k_slices, sup, "evo_compare_slices"}, {&k_slices_reset, sup, "evo_compare_slices_reset"},
               {&k_gen, sup, "evo_gen_inputs"},        {&k_quant, aref, "evo_quantize"},
               {&k_deq, aref, "evo_dequantize"},       {&k_ref, aref, "evo_reference_attention"}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fns); i++) CU_MUST(cuModuleGetFunction(fns[i].f, fns[i].m, fns[i].name));
    printf("device sm_%d%d\n", major, minor);
    test_probes();
    test_slices();
    test_model_bits();
    model_error_table();
    CU_MUST(cuDevicePrimaryCtxRelease(dev));
    return check_result();
}
