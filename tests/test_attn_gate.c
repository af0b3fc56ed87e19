/* test_attn_gate.c — the fp8 accuracy class on the CPU: the FP8 model's arithmetic (attn_numerics.h), its error
 * against the FP64 reference, the probes' inputs, and the per-slice gate (attn_gate.h) on kernels emulated here —
 * the model and an FP16-exact kernel pass the fp8 gate; every planted fault fails it and the exact gate.
 * Run: ctest --test-dir build -R test_attn_gate --output-on-failure
 */
#include "attn_gate.h"
#include "attn_ref.h"
#include "check.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float e4m3_round(float x) { return evo_ref_e4m3_decode(evo_ref_e4m3_encode(x)); }
#define AN_FN static inline
#define AN_E4M3_ROUND(x) e4m3_round(x)
#include "attn_numerics.h"

/* ---- arithmetic ---- */

static void test_exp2_and_trunc(void)
{
    for (int n = -149; n <= 16; n++) CHECK(an_exp2((double)n) == ldexp(1.0, n)); /* exact powers: rescaling */
    CHECK(an_exp2(-161.0) == 0.0);
    double worst = 0;
    for (int i = 0; i <= 200000; i++) {
        const double t = -40.0 + 56.0 * i / 200000.0 + 1e-7;
        worst = fmax(worst, fabs(an_exp2(t) / exp2(t) - 1.0));
    }
    if (!(worst < 5e-16)) printf("an_exp2: worst relative error %.3g\n", worst);
    CHECK(worst < 5e-16);
    CHECK(an_trunc_accf(1.0f) == 1.0f);
    CHECK(an_trunc_accf(1.0f + 0x1p-13f) == 1.0f + 0x1p-13f); /* the 13th bit stays */
    CHECK(an_trunc_accf(1.0f + 0x1p-14f) == 1.0f);            /* the 14th goes */
    CHECK(an_trunc_accf(1.0f + 0x1.fp-14f + 0x1p-13f) == 1.0f + 0x1p-13f);
    CHECK(an_trunc_accf(-(2.0f + 0x1p-13f)) == -2.0f); /* toward zero */
    CHECK(an_trunc_accf(0.0f) == 0.0f);
    /* a k-step aligns its terms to the largest and cuts each to 13 bits below it: what an H200 does
     * (tools/bench/fp8_accum_probe.py) */
    const float six[] = {6.0f}, two_fours[] = {4.0f, 4.0f}, eight[] = {8.0f}, small_first[] = {4.0f, 4.0f, 65536.0f};
    CHECK(an_kstep(65536.0f, six, 1) == 65536.0f);       /* 0.75 ulp: cut, not rounded */
    CHECK(an_kstep(65536.0f, two_fours, 2) == 65536.0f); /* two half ulps inside one k-step: both cut */
    CHECK(an_kstep(65536.0f, eight, 1) == 65544.0f);
    CHECK(an_kstep(0.0f, small_first, 3) == 65536.0f); /* aligned to the largest, whatever comes first */
    const float neg[] = {-6.0f};
    CHECK(an_kstep(-65536.0f, neg, 1) == -65536.0f); /* toward zero */
    CHECK(an_kstep(0.0f, two_fours, 2) == 8.0f);     /* small sums stay exact */
    float q[64], k[64];
    for (int t = 0; t < 64; t++) q[t] = k[t] = 0.0f;
    q[0] = 256.0f, k[0] = 32.0f; /* step 0: 8192 (the 13-bit unit is 1) */
    q[1] = 0.5f, k[1] = 0.5f;    /* + 0.25, cut */
    q[32] = 1.0f, k[32] = 1.0f;  /* step 1: + 1, kept */
    CHECK(an_logit2(q, k, 64, 1.0f, 1.0f, 0) == 8193.0f);
    q[32] = 0.5f; /* + 0.5: cut */
    CHECK(an_logit2(q, k, 64, 1.0f, 1.0f, 0) == 8192.0f);
    /* k-steps starting at 8: indices 1 and 32 in one step, 8192 in the last: 0.25 + 0.5 = 0.75 first, then cut */
    CHECK(an_logit2(q, k, 64, 1.0f, 1.0f, 1) == 8192.0f);
    /* the partitions: each index once */
    for (int order = 0; order < AN_FP8_ORDERS; order++)
        for (int d = 63; d <= 128; d += 65) {
            int seen[128] = {0}, ok = 1;
            for (int i = 0; i < d; i++) seen[an_order_index(order, i, d)]++;
            for (int i = 0; i < d; i++) ok &= seen[i] == 1;
            CHECK(ok);
        }
}

/* ---- helpers: inputs, quantization, references ---- */

typedef struct {
    int b, h, s, d, causal;
    float sm; /* softmax scale */
    size_t n, head;
    uint8_t *codes[3];
    float *scales[3], *deq[3];
    double *ref;                    /* FP64 on the dequantized inputs */
    float *model;                   /* the FP8 model, phase 0 */
    float *model_ph[AN_FP8_ORDERS]; /* every phase (model_ph[0] == model) */
} problem;

static void problem_make(problem *p, int probe, int dist, uint64_t seed, int b, int h, int s, int d, int causal,
                         float sm)
{
    memset(p, 0, sizeof *p);
    p->b = b, p->h = h, p->s = s, p->d = d, p->causal = causal;
    p->head = (size_t)s * d, p->n = (size_t)b * h * p->head;
    p->sm = sm != 0.0f ? sm : (float)(1.0 / sqrt((double)d));
    uint16_t *x = malloc(p->n * sizeof *x);
    for (unsigned t = 0; t < 3; t++) {
        if (probe >= 0)
            evo_ref_gen_probe(x, p->n, probe, seed, t, s, d);
        else
            evo_ref_gen_inputs(x, p->n, p->head, seed, t, dist);
        p->codes[t] = malloc(p->n);
        p->scales[t] = malloc((size_t)b * h * sizeof(float));
        p->deq[t] = malloc(p->n * sizeof(float));
        evo_ref_quantize(x, (size_t)b * h, p->head, EVO_FORMAT_E4M3, p->codes[t], p->scales[t]);
        evo_ref_dequantize(p->codes[t], p->scales[t], (size_t)b * h, p->head, EVO_FORMAT_E4M3, p->deq[t]);
    }
    free(x);
    p->ref = malloc(p->n * sizeof *p->ref);
    evo_ref_attention(p->deq[0], p->deq[1], p->deq[2], p->ref, b, h, s, d, causal, p->sm);
    for (int ph = 0; ph < AN_FP8_ORDERS; ph++) {
        p->model_ph[ph] = malloc(p->n * sizeof(float));
        evo_ref_fp8_model(p->codes[0], p->scales[0], p->codes[1], p->scales[1], p->codes[2], p->scales[2],
                          p->model_ph[ph], b, h, s, d, causal, p->sm, ph);
    }
    p->model = p->model_ph[0];
}

static void problem_free(problem *p)
{
    for (int t = 0; t < 3; t++) free(p->codes[t]), free(p->scales[t]), free(p->deq[t]);
    free(p->ref);
    for (int ph = 0; ph < AN_FP8_ORDERS; ph++) free(p->model_ph[ph]);
}

/* ---- kernels emulated on the CPU, each with at most one fault ---- */

typedef struct {
    int bad_head;       /* -1: none */
    float q_mul, v_mul; /* on bad_head's scales */
    int causal_extra;   /* 1: the causal mask lets key i+1 through */
    int key_limit;      /* 0: none; else keys past this are dropped */
    bool ignore_scale;  /* 1/sqrt(D) whatever the softmax scale */
    double p_offset;    /* P = 2^(x2 - M + p_offset) before the e4m3 cast; 8 is right */
    bool p_round;       /* P enters P·V in e4m3 */
} emu;

static const emu EMU_OK = {-1, 1.0f, 1.0f, 0, 0, false, 8.0, true};

/* An online-softmax kernel in double over the dequantized inputs, rounding P to e4m3 when asked; fp16 output. */
static void emulate(const problem *p, const emu *e, uint16_t *out)
{
    double *x = malloc((size_t)p->s * sizeof *x);
    for (int bh = 0; bh < p->b * p->h; bh++) {
        const double qm = bh == e->bad_head ? e->q_mul : 1.0, vm = bh == e->bad_head ? e->v_mul : 1.0;
        const double sm = e->ignore_scale ? 1.0 / sqrt((double)p->d) : p->sm;
        const float *q = p->deq[0] + bh * p->head, *k = p->deq[1] + bh * p->head, *v = p->deq[2] + bh * p->head;
        for (int i = 0; i < p->s; i++) {
            int nk = p->causal ? i + 1 + e->causal_extra : p->s;
            if (nk > p->s) nk = p->s;
            if (e->key_limit && nk > e->key_limit) nk = e->key_limit;
            double mx = -INFINITY;
            for (int j = 0; j < nk; j++) {
                double acc = 0;
                for (int t = 0; t < p->d; t++) acc += (double)q[(size_t)i * p->d + t] * k[(size_t)j * p->d + t];
                x[j] = acc * qm * sm * 1.4426950408889634;
                mx = fmax(mx, x[j]);
            }
            const double m = ceil(mx);
            for (int t = 0; t < p->d; t++) {
                double o = 0, l = 0;
                for (int j = 0; j < nk; j++) {
                    const double w = exp2(x[j] - m + e->p_offset);
                    const double wt = e->p_round ? (double)e4m3_round((float)w) : w;
                    l += w;
                    o += wt * v[(size_t)j * p->d + t] * vm;
                }
                out[bh * p->head + (size_t)i * p->d + t] = evo_ref_double_to_half(o / l);
            }
        }
    }
    free(x);
}

/* The verdicts of both classes on an output: fp8 per slice against the model's budget; exact = the whole tensor's
 * rel-L2 <= 2e-3 and each slice's on a probe. */
static void judge(const problem *p, const void *out, evo_elem type, bool *fp8_ok, bool *exact_ok, char *why,
                  size_t why_len)
{
    const size_t ns = (size_t)p->b * p->h;
    evo_slice_acc *model = malloc(ns * sizeof *model), *k = malloc(ns * sizeof *k);
    double *rb = malloc(ns * sizeof *rb), *ab = malloc(ns * sizeof *ab);
    /* the model's error: the largest over its orders (the gate's rule, gpu.c model_stats) */
    evo_ref_compare_slices(p->model, EVO_ELEM_F32, p->ref, EVO_ELEM_F64, ns, p->head, NULL, model);
    evo_slice_acc *ph = malloc(ns * sizeof *ph);
    for (int j = 1; j < AN_FP8_ORDERS; j++) {
        evo_ref_compare_slices(p->model_ph[j], EVO_ELEM_F32, p->ref, EVO_ELEM_F64, ns, p->head, NULL, ph);
        for (size_t s = 0; s < ns; s++) {
            const double mx = fmax(model[s].max_abs, ph[s].max_abs);
            if (evo_slice_rel_l2(&ph[s]) > evo_slice_rel_l2(&model[s])) model[s] = ph[s];
            model[s].max_abs = mx;
        }
    }
    free(ph);
    attn_fp8_bounds(model, ns, rb, ab);
    evo_ref_compare_slices(out, type, p->ref, EVO_ELEM_F64, ns, p->head, ab, k);
    *fp8_ok = attn_fp8_judge(k, model, rb, ab, ns, p->head, p->d, why, why_len);
    evo_ref_compare_slices(out, type, p->ref, EVO_ELEM_F64, ns, p->head, NULL, k);
    char why2[256];
    *exact_ok = attn_exact_slices_judge(k, ns, 2e-3, why2, sizeof why2);
    free(model), free(k), free(rb), free(ab);
}

static double model_worst_rel(const problem *p)
{
    const size_t ns = (size_t)p->b * p->h;
    evo_slice_acc *a = malloc(ns * sizeof *a);
    evo_ref_compare_slices(p->model, EVO_ELEM_F32, p->ref, EVO_ELEM_F64, ns, p->head, NULL, a);
    double w = 0;
    for (size_t s = 0; s < ns; s++) w = fmax(w, evo_slice_rel_l2(&a[s]));
    free(a);
    return w;
}

/* ---- tests ---- */

static void test_model_cases(void)
{
    /* S = 1: one key, p = 2^(x2 - ceil x2 + 8) in (128, 256] and the output V0 x e4m3(p) / p: V0 up to the
     * rounding of P (the row sum is of the unrounded p, as FlashAttention-3 keeps it) */
    problem p;
    problem_make(&p, -1, 0, 3, 1, 2, 1, 64, 0, 0.0f);
    for (int bh = 0; bh < 2; bh++) {
        double lo = 2, hi = 0;
        for (int t = 0; t < 64; t++) {
            const size_t i = (size_t)bh * 64 + t;
            if (p.deq[2][i] == 0.0f) continue;
            lo = fmin(lo, p.model[i] / p.deq[2][i]), hi = fmax(hi, p.model[i] / p.deq[2][i]);
        }
        CHECK(lo >= 15.0 / 16 && hi <= 17.0 / 16 && hi - lo < 1e-6);
    }
    problem_free(&p);
    /* normal inputs: rounding P to e4m3 costs 2-3 % (measured with a float model too) */
    problem_make(&p, -1, 0, 1, 1, 4, 130, 64, 1, 0.0f);
    const double r = model_worst_rel(&p);
    printf("FP8 model vs FP64, normal (1,4,130,64) causal: worst head rel-L2 %.3g\n", r);
    CHECK(r > 5e-3 && r < 6e-2);
    problem_free(&p);
    /* the integer probe: P is a power of two and V an integer: every product is exact, every order of the scores
     * gives the same bits, and what is left is the 13-bit P·V accumulator */
    problem_make(&p, AN_PROBE_INTEGERS, 0, 1, 1, 3, 100, 64, 0, evo_ref_probe_softmax_scale(AN_PROBE_INTEGERS, 0, 64));
    for (int t = 0; t < 3; t++) CHECK(p.scales[t][0] == 0x1p-6f); /* absmax 7: every code exact */
    bool ints = true;
    for (size_t i = 0; i < p.n; i++) ints = ints && p.deq[0][i] == rintf(p.deq[0][i]) && fabsf(p.deq[2][i]) <= 7.0f;
    CHECK(ints);
    const double ri = model_worst_rel(&p);
    printf("FP8 model vs FP64, integer probe: worst head rel-L2 %.3g\n", ri);
    CHECK(ri < 2e-4); /* exact but for the tensor core's 13-bit P·V accumulator */
    problem_free(&p);
}

static void test_probe_inputs(void)
{
    uint16_t a[64 * 8], b[64 * 8];
    /* the needle: key i+1 is query i (same draws, same factor) */
    evo_ref_gen_probe(a, 64 * 8, AN_PROBE_NEEDLE, 5, 0, 8, 64);
    evo_ref_gen_probe(b, 64 * 8, AN_PROBE_NEEDLE, 5, 1, 8, 64);
    CHECK(memcmp(a, b + 64, 64 * 7 * sizeof a[0]) == 0);
    CHECK(memcmp(a, b, 64 * sizeof a[0]) != 0);
    /* distinct scales on every head */
    problem p;
    problem_make(&p, AN_PROBE_HEADS, 0, 2, 2, 8, 40, 64, 0, 0.0f);
    int distinct = 0;
    for (int bh = 1; bh < 16; bh++) distinct += p.scales[0][bh] != p.scales[0][bh - 1];
    CHECK(distinct >= 12);
    problem_free(&p);
    /* the last key's logit is the largest of every row by far */
    problem_make(&p, AN_PROBE_LAST_KEY, 0, 2, 1, 2, 60, 64, 0, 0.0f);
    int dominated = 0;
    for (int i = 0; i < 60; i++) {
        double best = -1e30, last = 0;
        for (int j = 0; j < 60; j++) {
            double s = 0;
            for (int t = 0; t < 64; t++) s += (double)p.deq[0][i * 64 + t] * p.deq[1][j * 64 + t];
            if (j == 59)
                last = s;
            else
                best = fmax(best, s);
        }
        dominated += last / 8.0 > best / 8.0 + 5.0;
    }
    CHECK(dominated >= 58);
    problem_free(&p);
}

typedef struct {
    const char *name;
    int probe, causal, s;
    float sm_mul; /* softmax scale = sm_mul / sqrt(D); 0: the probe's */
    emu e;
} fault_case;

static void test_gate_verdicts(void)
{
    const int D = 64, H = 8, S = 130;
    /* clean kernels: the model, an emulated FP8 kernel, and an FP16-exact output pass the fp8 gate on every probe */
    for (int probe = 0; probe < AN_PROBE_COUNT; probe++)
        for (int causal = 0; causal < 2; causal++) {
            problem p;
            const float sm = probe == AN_PROBE_MODERATE ? evo_ref_probe_softmax_scale(probe, 2, D)
                                                        : evo_ref_probe_softmax_scale(probe, 0, D);
            problem_make(&p, probe, 0, 7, 1, H, S, D, causal, sm);
            bool f8, ex;
            char why[512];
            judge(&p, p.model, EVO_ELEM_F32, &f8, &ex, why, sizeof why);
            CHECK(f8);
            uint16_t *o = malloc(p.n * sizeof *o);
            emulate(&p, &EMU_OK, o);
            judge(&p, o, EVO_ELEM_F16, &f8, &ex, why, sizeof why);
            if (!f8) fprintf(stderr, "probe %d causal %d: emulated FP8 kernel: %s\n", probe, causal, why);
            CHECK(f8);
            if (probe != AN_PROBE_INTEGERS) CHECK(!ex); /* P in e4m3 is outside the exact class */
            emu exact = EMU_OK;
            exact.p_round = false;
            emulate(&p, &exact, o);
            judge(&p, o, EVO_ELEM_F16, &f8, &ex, why, sizeof why);
            CHECK(f8 && ex);
            free(o);
            problem_free(&p);
        }
    /* planted faults: each INCORRECT under both classes on the probe built for it */
    const fault_case faults[] = {
        {"one head's Q scale 10 % off", AN_PROBE_HEADS, 0, S, 0, {5, 1.1f, 1.0f, 0, 0, false, 8.0, true}},
        {"one head's Q scale 10 % off, causal", AN_PROBE_MODERATE, 1, S, 2, {5, 1.1f, 1.0f, 0, 0, false, 8.0, true}},
        {"one head's V scale 10 % off", AN_PROBE_HEADS, 0, S, 0, {3, 1.0f, 1.1f, 0, 0, false, 8.0, true}},
        {"causal mask off by one", AN_PROBE_NEEDLE, 1, S, 0, {-1, 1.0f, 1.0f, 1, 0, false, 8.0, true}},
        {"keys truncated", AN_PROBE_LAST_KEY, 0, 160, 0, {-1, 1.0f, 1.0f, 0, 128, false, 8.0, true}},
        {"keys truncated, causal", AN_PROBE_LAST_KEY, 1, 160, 0, {-1, 1.0f, 1.0f, 0, 128, false, 8.0, true}},
        {"softmax scale ignored", AN_PROBE_MODERATE, 0, S, 2, {-1, 1.0f, 1.0f, 0, 0, true, 8.0, true}},
        {"softmax scale ignored (0.5)", AN_PROBE_MODERATE, 1, S, 0.5f, {-1, 1.0f, 1.0f, 0, 0, true, 8.0, true}},
        {"P's e4m3 scale applied twice", AN_PROBE_NEEDLE, 0, S, 0, {-1, 1.0f, 1.0f, 0, 0, false, 16.0, true}},
        {"P's e4m3 scale applied twice (integers)",
         AN_PROBE_INTEGERS,
         1,
         S,
         0,
         {-1, 1.0f, 1.0f, 0, 0, false, 16.0, true}},
    };
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        const fault_case *c = &faults[f];
        problem p;
        const float sm =
            c->sm_mul != 0 ? (float)(c->sm_mul / sqrt((double)D)) : evo_ref_probe_softmax_scale(c->probe, 0, D);
        problem_make(&p, c->probe, 0, 11, 1, H, c->s, D, c->causal, sm);
        uint16_t *o = malloc(p.n * sizeof *o);
        emulate(&p, &c->e, o);
        bool f8, ex;
        char why[512];
        judge(&p, o, EVO_ELEM_F16, &f8, &ex, why, sizeof why);
        printf("%-42s fp8: %s\n", c->name, f8 ? "passes (WRONG)" : why);
        CHECK(!f8);
        CHECK(!ex);
        free(o);
        problem_free(&p);
    }
}

static void test_slices(void)
{
    /* two slices of 4: slice 1 has one element 0.5 off and a NaN */
    const float ref[8] = {1, 2, 3, 4, 1, 1, 1, 1};
    const float out[8] = {1, 2, 3, 4, 1, 1.5f, NAN, 1};
    evo_slice_acc a[2];
    const double bound[2] = {0.1, 0.1};
    evo_ref_compare_slices(out, EVO_ELEM_F32, ref, EVO_ELEM_F32, 2, 4, bound, a);
    CHECK_EQ_INT(a[0].n_over, 0);
    CHECK_EQ_INT(a[1].n_over, 2);
    CHECK_EQ_INT(a[1].n_nonfinite, 1);
    CHECK_EQ_INT(a[1].first_bad, 5);
    CHECK(a[1].max_abs == 0.5 && a[1].max_ref == 1.0);
    CHECK_NEAR(evo_slice_rel_l2(&a[1]), sqrt(0.25 / 3.0), 1e-15);
    CHECK_NEAR(evo_slice_rel_l2(&a[0]), 0.0, 0);
    char why[256];
    const double rb[2] = {1, 1}, ab[2] = {0.1, 0.1};
    CHECK(!attn_fp8_judge(a, a, rb, ab, 2, 4, 2, why, sizeof why));
    CHECK_CONTAINS(why, "1 output elements not written or not finite (first at 5)");
    a[1].n_nonfinite = 0;
    CHECK(!attn_fp8_judge(a, a, rb, ab, 2, 4, 2, why, sizeof why));
    CHECK_CONTAINS(why, "head 1, row 0: 2 elements");
    CHECK(!attn_exact_slices_judge(a, 2, 0.2, why, sizeof why));
    CHECK_CONTAINS(why, "head 1: rel-L2 0.289 > 0.2");
    double r2[2], a2[2];
    attn_fp8_bounds(a, 2, r2, a2);
    CHECK_NEAR(r2[1], 2 * sqrt(0.25 / 3.0) + 1e-3, 1e-15);
    CHECK_NEAR(a2[1], 2 * 0.5 + 0x1p-10, 1e-15);
}

/* EVO_FP8_TABLE=1: the FP8 model's error against the FP64 reference per distribution and probe, worst head of
 * (1,4,512,D) (docs/results.md; the CPU twin is bit for bit the GPU's, tests/gpu_attn_model.c). */
static void model_table(void)
{
    static const char *const dists[] = {"normal", "uniform", "outliers", "zero_head", "large"};
    static const char *const probes[] = {"heads", "needle", "last_key", "moderate", "integers"};
    printf("| D | causal | inputs | worst head rel-L2 | worst head max-abs / max|ref| | rel-L2 budget (2x + 1e-3) |\n"
           "|---|---|---|---:|---:|---:|\n");
    for (int d = 64; d <= 128; d *= 2)
        for (int causal = 0; causal < 2; causal++)
            for (int row = 0; row < 10; row++) {
                const int probe = row < 5 ? -1 : row - 5;
                problem p;
                const float sm = probe >= 0 ? evo_ref_probe_softmax_scale(probe, 1, d) : 0.0f;
                problem_make(&p, probe, row < 5 ? row : 0, 3, 1, 4, 512, d, causal, sm);
                evo_slice_acc a[4];
                evo_ref_compare_slices(p.model, EVO_ELEM_F32, p.ref, EVO_ELEM_F64, 4, p.head, NULL, a);
                double wr = 0, wm = 0;
                for (int i = 0; i < 4; i++)
                    wr = fmax(wr, evo_slice_rel_l2(&a[i])),
                    wm = fmax(wm, a[i].max_ref > 0 ? a[i].max_abs / a[i].max_ref : 0);
                printf("| %d | %d | %s | %.2e | %.2e | %.2e |\n", d, causal, probe >= 0 ? probes[probe] : dists[row],
                       wr, wm, AN_FP8_K * wr + AN_FP8_REL_ATOL);
                problem_free(&p);
            }
}

int main(void)
{
    if (getenv("EVO_FP8_TABLE")) {
        model_table();
        return 0;
    }
    test_exp2_and_trunc();
    test_slices();
    test_probe_inputs();
    test_model_cases();
    test_gate_verdicts();
    return check_result();
}
