/* test_noise.c — the measurement statistics (noise.h: order-statistic intervals of the median, speedup and fitness
 * intervals, better-beyond-noise), the list of gate cases (cases.h) for the shipped configs, and how CUPTI's kernel
 * records are matched to the timed launches (timing.h). CPU only.
 * Run: build/tests/test_noise */
#include "cases.h"
#include "check.h"

#define AN_PROBES 5 /* heads, needle, last_key, moderate, integers: configs/family0.yaml's correctness.probes */
#include "config.h"
#include "noise.h"
#include "timing.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>

/* Ranks against the binomial tables every statistics text prints for the 95 % interval of a median. */
static void test_ranks(void)
{
    static const struct {
        int n, lo, hi; /* 0-based */
    } want[] = {{5, 0, 4}, {6, 0, 5}, {9, 1, 7}, {10, 1, 8}, {20, 5, 14}, {50, 17, 32}, {100, 39, 60}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(want); i++) {
        int lo = -1, hi = -1;
        evo_noise_median_ranks(want[i].n, &lo, &hi);
        CHECK_EQ_INT(lo, want[i].lo);
        CHECK_EQ_INT(hi, want[i].hi);
    }
    int lo, hi;
    evo_noise_median_ranks(1, &lo, &hi);
    CHECK(lo == 0 && hi == 0);
    /* large n: close to the normal approximation n/2 -+ 0.98 sqrt(n), never past it by more than a rank */
    evo_noise_median_ranks(10000, &lo, &hi);
    CHECK(lo >= 4901 - 2 && lo <= 4901 + 1);
    CHECK_EQ_INT(hi, 9999 - lo);
}

/* Coverage: over many samples of a skewed law (exponential), the interval holds the true median >= 95 % of the
 * time, and not much more than the binomial law's exact coverage (it is not simply min..max). */
static void test_coverage(void)
{
    evo_rng rng;
    evo_rng_seed(&rng, 7);
    const int trials = 4000, n = 40;
    const double true_median = log(2.0);
    int covered = 0;
    double x[40];
    for (int t = 0; t < trials; t++) {
        for (int i = 0; i < n; i++) x[i] = -log(1.0 - evo_rng_uniform(&rng));
        evo_noise_stats st;
        evo_noise_summarize(x, n, &st);
        covered += st.ci_lo <= true_median && true_median <= st.ci_hi;
    }
    const double cov = (double)covered / trials;
    CHECK(cov >= 0.94 && cov <= 0.99); /* exact coverage for n = 40 is 0.9615 */
}

static void test_summary(void)
{
    const double x[] = {10, 12, 11, 13, 9, 100, 11.5, 10.5, 12.5, 11}; /* one outlier */
    evo_noise_stats st;
    evo_noise_summarize(x, 10, &st);
    CHECK_EQ_INT(st.n, 10);
    CHECK_NEAR(st.median, 11.25, 1e-12); /* (11 + 11.5) / 2 */
    CHECK_NEAR(st.p10, 9, 0);            /* sorted[0] */
    CHECK_NEAR(st.p90, 13, 0);           /* sorted[8] */
    CHECK_NEAR(st.ci_lo, 10, 0);         /* ranks 1 and 8 */
    CHECK_NEAR(st.ci_hi, 13, 0);
    CHECK_NEAR(st.mean, 20.05, 1e-12);
    evo_noise_summarize(x, 0, &st);
    CHECK_EQ_INT(st.n, 0);
    CHECK_NEAR(st.median, 0, 0);
}

static void test_intervals(void)
{
    CHECK_NEAR(evo_noise_log_halfwidth(99, 101), 0.5 * log(101.0 / 99), 1e-15);
    CHECK(isnan(evo_noise_log_halfwidth(0, 101)));
    CHECK(isnan(evo_noise_log_halfwidth(NAN, 1)));
    CHECK(isnan(evo_noise_log_halfwidth(2, 1)));
    const double h = evo_noise_ratio_halfwidth(99, 101, 49.5, 50.5);
    CHECK_NEAR(h, sqrt(2) * 0.5 * log(101.0 / 99), 1e-12);
    CHECK(isnan(evo_noise_ratio_halfwidth(99, 101, 0, 0)));

    /* geometric mean of 1.1 and 0.9 with h 0.01 each: centre sqrt(0.99), half sqrt(2) * 0.01 / 2 */
    const double sp[] = {1.1, 0.9}, hs[] = {0.01, 0.01};
    double lo, hi;
    evo_noise_fitness_interval(sp, hs, 2, false, &lo, &hi);
    CHECK_NEAR(lo, sqrt(0.99) * exp(-0.01 / sqrt(2)), 1e-12);
    CHECK_NEAR(hi, sqrt(0.99) * exp(0.01 / sqrt(2)), 1e-12);
    const double hs2[] = {0.01, 0.03};
    evo_noise_fitness_interval(sp, hs2, 2, true, &lo, &hi); /* worst: 0.9 with its own 0.03 */
    CHECK_NEAR(lo, 0.9 * exp(-0.03), 1e-12);
    CHECK_NEAR(hi, 0.9 * exp(0.03), 1e-12);
    const double unknown[] = {0.01, NAN};
    evo_noise_fitness_interval(sp, unknown, 2, false, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi));
}

static void test_better(void)
{
    /* 1.05 [1.04, 1.06] against 1.00 [0.99, 1.01]: ln 1.05 = 0.0488 > sqrt(h1^2 + h2^2) ~ 0.0135 */
    CHECK(evo_noise_better(1.05, 1.04, 1.06, 1.00, 0.99, 1.01));
    /* 1.01 against 1.00 with the same widths: 0.00995 < 0.0135, within the noise */
    CHECK(!evo_noise_better(1.01, 1.00, 1.02, 1.00, 0.99, 1.01));
    CHECK(!evo_noise_better(1.00, 0.99, 1.01, 1.05, 1.04, 1.06));
    /* unknown intervals: the plain comparison, as before intervals existed */
    CHECK(evo_noise_better(1.01, 0, 0, 1.00, 0.99, 1.01));
    CHECK(evo_noise_better(1.01, NAN, NAN, 1.00, NAN, NAN));
    CHECK(!evo_noise_better(0.99, NAN, NAN, 1.00, NAN, NAN));
}

/* The gate cases of the shipped configs: every shape x causal x seed x distribution at the timed scale (timed
 * shapes with timed_seeds seeds), each further scale on every shape and causal setting once, the structural probes
 * on every shape and causal setting (moderate at three scales), a timing case per timed shape; the S = 4097 shapes
 * and the scale 0.07 among them. */
static void test_cases(void)
{
    evo_config *cfg = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_config_load(EVO_SOURCE_DIR "/configs/family0.yaml", &cfg, &err), EVO_OK);
    if (!cfg) return;
    evo_gate_case *c = NULL;
    const int n = evo_gate_cases(cfg, false, &c);
    /* timed: 5 x 2 x 3 x 5 + 5 x 2; extra: 12 x 2 x 3 x 5 + 12 x 2; probes: 17 x 2 x 7; timing: 5 */
    CHECK_EQ_INT(n, 160 + 384 + 238 + 5);
    int scaled = 0, long_seq = 0, timing = 0, probes[AN_PROBES] = {0};
    const int f_scale = evo_task_shape_field(cfg->task_ops, "softmax_scale");
    const evo_field *sf = &cfg->task_ops->shape_fields[f_scale];
    for (int i = 0; i < n; i++) {
        const double scale = evo_field_load(sf, c[i].s.v[f_scale]);
        scaled += scale == 0.07;
        long_seq += evo_shape_get(&c[i].s, "seq", 0) == 4097 && !c[i].timing;
        timing += c[i].timing;
        if (c[i].timing) CHECK(c[i].shape < cfg->n_shapes && scale == 0);
        if (c[i].probe >= 0 && c[i].probe < AN_PROBES) probes[c[i].probe]++;
        if (c[i].probe == 4) CHECK(fabs(scale - 0.6931471805599453) < 1e-7); /* integers: ln 2 */
        if (c[i].probe == 3 && evo_shape_get(&c[i].s, "head_dim", 0) == 64)
            CHECK(scale == 0.0625f || scale == 0.125f || scale == 0.25f); /* moderate: 0.5, 1, 2 / sqrt(64) */
    }
    CHECK_EQ_INT(scaled, 34);       /* 17 shapes x 2 causal settings */
    CHECK_EQ_INT(long_seq, 2 * 46); /* 2 shapes x (30 + 2 + 14) */
    CHECK_EQ_INT(timing, 5);
    for (int p = 0; p < AN_PROBES; p++) CHECK_EQ_INT(probes[p], p == 3 ? 3 * 34 : 34);
    free(c);
    /* under a sanitizer: one seed, distribution and scale; no timing, no probes */
    const int m = evo_gate_cases(cfg, true, &c);
    CHECK_EQ_INT(m, 17 * 2);
    free(c);
    evo_config_free(cfg);
}

/* configs/default.yaml times seven shapes and their causal twins; with the causal axis applied each pair gives the
 * same problems, checked once: on the timed shapes 2 causal settings x 5 distributions, the 0.07 scale x 2 and the
 * probes' 7 cases x 2 for each of 7 problems, 7 x (10 + 2 + 14) instead of 14 x 26, and a timing case per timed
 * shape; no two cases alike. */
static void test_cases_repeats(void)
{
    evo_config *cfg = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_config_load(EVO_SOURCE_DIR "/configs/default.yaml", &cfg, &err), EVO_OK);
    if (!cfg) return;
    evo_gate_case *c = NULL;
    const int n = evo_gate_cases(cfg, false, &c);
    int timed = 0, timing = 0, dup = 0;
    for (int i = 0; i < n; i++) {
        timed += c[i].shape < cfg->n_shapes && !c[i].timing;
        timing += c[i].timing;
        for (int j = 0; j < i; j++) {
            bool same = c[i].seed == c[j].seed && c[i].dist == c[j].dist && c[i].probe == c[j].probe &&
                        c[i].timing == c[j].timing;
            for (int f = 0; same && f < cfg->task_ops->n_shape_fields; f++) same = c[i].s.v[f] == c[j].s.v[f];
            dup += same;
        }
    }
    CHECK_EQ_INT(dup, 0);
    CHECK_EQ_INT(timing, 14);
    CHECK_EQ_INT(timed, 7 * (10 + 2 + 14));
    CHECK_EQ_INT(n, 748);
    free(c);
    evo_config_free(cfg);
}

/* Records out of order, an input kernel (grid-stride, 256 threads) before each launch, A and B with the same
 * geometry (the order tells them apart), then a second geometry for B; a missing record stops the match short. */
static void test_record_match(void)
{
    evo_timing_subject s[2] = {{.grid = {8, 8, 1}, .block = 128}, {.grid = {8, 8, 1}, .block = 128}};
    evo_kernel_record r[16];
    int n = 0;
    uint32_t corr = 100;
    for (int rep = 0; rep < 3; rep++)
        for (int j = 0; j < 2; j++) {
            r[n++] = (evo_kernel_record){corr++, 0, 5000, {1024, 1, 1}, 256}; /* fresh inputs */
            const uint64_t t0 = 1000000 * (uint64_t)(rep * 2 + j + 1);
            r[n++] = (evo_kernel_record){corr++, t0, t0 + 7000 + 1000 * j + 10 * rep, {8, 8, 1}, 128};
        }
    for (int i = 0; i < n / 2; i++) { /* delivered in another order */
        evo_kernel_record x = r[i];
        r[i] = r[n - 1 - i];
        r[n - 1 - i] = x;
    }
    double a[3], b[3], *us[2] = {a, b};
    CHECK_EQ_INT(evo_timing_match(r, n, s, 2, 3, us), 6);
    CHECK_NEAR(a[0], 7.0, 1e-12);
    CHECK_NEAR(b[0], 8.0, 1e-12);
    CHECK_NEAR(a[2], 7.02, 1e-12);
    CHECK_NEAR(b[2], 8.02, 1e-12);
    s[1].block = 256, s[1].grid[0] = 16;                  /* B of another geometry: only A's records match it... */
    CHECK_EQ_INT(evo_timing_match(r, n, s, 2, 3, us), 1); /* ...so the match stops after A's first */
    s[1] = s[0];
    CHECK_EQ_INT(evo_timing_match(r, n - 1, s, 2, 3, us), 5); /* the last launch's record is missing */
}

int main(void)
{
    test_ranks();
    test_coverage();
    test_summary();
    test_intervals();
    test_better();
    test_cases();
    test_cases_repeats();
    test_record_match();
    return check_result();
}
