/* test_plot.c — the SVG charts of `evo plot`: tick choice, element counts for known data, gaps for NaN, notes for
 * empty charts, escaping, label layout with many shapes. Run: build/tests/test_plot (ctest runs it).
 * Also the fixture maker of tests/cli_plot.sh: `test_plot --fixture FILE` writes three runs (see make_fixture),
 * and `test_plot --render DIR` writes the charts of the edge cases for a person to look at.
 */
#include "check.h"
#include "plot.h"
#include "store.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* ---- ticks ---- */

static void test_ticks(void)
{
    double t[64], lo, hi;
    int dec;
    int n = evo_plot_ticks(0.8, 1.9, 6, 0, t, 64, &lo, &hi, &dec);
    CHECK_EQ_INT(n, 7); /* 0.8 1.0 ... 2.0: step 0.2 */
    CHECK_NEAR(t[0], 0.8, 1e-12);
    CHECK_NEAR(t[6], 2.0, 1e-12);
    CHECK_NEAR(lo, 0.8, 1e-12);
    CHECK_NEAR(hi, 2.0, 1e-12);
    CHECK_EQ_INT(dec, 1);

    n = evo_plot_ticks(0, 2.2, 6, 0, t, 64, &lo, &hi, &dec); /* raw 0.367 -> 0.5 */
    CHECK_EQ_INT(n, 6);
    CHECK_NEAR(t[5], 2.5, 1e-12);
    CHECK_EQ_INT(dec, 1);

    n = evo_plot_ticks(0, 1.4, 6, 0, t, 64, &lo, &hi, &dec); /* raw 0.233 -> 0.25, two decimals */
    CHECK_EQ_INT(n, 7);
    CHECK_NEAR(t[1], 0.25, 1e-12);
    CHECK_NEAR(hi, 1.5, 1e-12);
    CHECK_EQ_INT(dec, 2);

    n = evo_plot_ticks(0, 37, 8, 1, t, 64, &lo, &hi, &dec); /* generations 0..37: step 5 */
    CHECK_EQ_INT(n, 9);
    CHECK_NEAR(t[8], 40, 0);
    CHECK_EQ_INT(dec, 0);

    n = evo_plot_ticks(0, 3, 8, 1, t, 64, &lo, &hi, &dec); /* whole numbers only: never 0.5 */
    CHECK_EQ_INT(n, 4);
    CHECK_NEAR(t[1], 1, 0);

    n = evo_plot_ticks(0, 0, 8, 1, t, 64, &lo, &hi, &dec); /* one generation */
    CHECK_EQ_INT(n, 1);
    CHECK_NEAR(t[0], 0, 0);
    CHECK_NEAR(lo, -0.5, 0);
    CHECK_NEAR(hi, 0.5, 0);

    n = evo_plot_ticks(1.5, 1.5, 6, 0, t, 64, &lo, &hi, &dec); /* one value: a range around it */
    CHECK(n >= 3);
    CHECK(lo < 1.5 && hi > 1.5);

    n = evo_plot_ticks(-0.3, 0.3, 6, 0, t, 64, &lo, &hi, &dec); /* zero is printed as 0, not -0 */
    CHECK_EQ_INT(n, 7);
    CHECK_NEAR(t[3], 0, 0);
    CHECK(!signbit(t[3]));

    n = evo_plot_ticks(NAN, INFINITY, 6, 0, t, 64, &lo, &hi, &dec);
    CHECK(n >= 2 && lo == 0 && hi >= 1);
}

static void test_text_width(void)
{
    CHECK_NEAR(evo_plot_text_width("", 10), 0, 0);
    CHECK_NEAR(evo_plot_text_width("0", 10), 6.4, 1e-9);
    CHECK_NEAR(evo_plot_text_width("1.84", 10), 3 * 6.4 + 3.6, 1e-9);
    CHECK_NEAR(evo_plot_text_width("µ", 10), 6.4, 1e-9); /* one character, two bytes */
    CHECK(evo_plot_text_width("WWWW", 12) > evo_plot_text_width("iiii", 12) * 2);
}

/* ---- x/y charts ---- */

static void test_xy_counts(void)
{
    double x[5] = {0, 1, 2, 3, 4};
    double best[5] = {1.0, 1.2, NAN, 1.5, 1.6}; /* a gap at generation 2 */
    double med[5] = {0.9, 1.0, 1.1, 1.2, 1.3};
    evo_plot_series s[2] = {
        {.name = "best", .x = x, .y = best, .n = 5, .line = 1, .marker = EVO_PLOT_CIRCLE},
        {.name = "median", .x = x, .y = med, .n = 5, .line = 1, .marker = EVO_PLOT_SQUARE},
    };
    evo_plot_xy c = {.title = "Run 7: best & median <fitness>",
                     .subtitle = "sub",
                     .x_label = "generation",
                     .y_label = "fitness",
                     .series = s,
                     .n_series = 2,
                     .integer_x = 1,
                     .y_ref = 1.0,
                     .y_ref_label = "baseline"};
    evo_str o = {0};
    evo_err err = {0};
    CHECK_EQ_INT(evo_plot_xy_svg(&c, &o, &err), EVO_OK);
    const char *t = evo_str_cstr(&o);
    CHECK(strncmp(t, "<?xml", 5) == 0);
    CHECK_CONTAINS(t, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"880\" height=\"500\"");
    CHECK_EQ_INT(count(t, "<polyline"), 3);     /* best 0-1, best 3-4, median 0-4 */
    CHECK_EQ_INT(count(t, "<circle"), 4 + 1);   /* four finite bests and the legend's */
    CHECK_EQ_INT(count(t, "<rect"), 1 + 5 + 1); /* background, five medians, legend */
    CHECK_EQ_INT(count(t, "<title>"), 9);
    CHECK_CONTAINS(t, "best, generation 3: 1.500");
    CHECK_CONTAINS(t, "Run 7: best &amp; median &lt;fitness&gt;");
    CHECK_EQ_INT(count(t, "stroke-dasharray"), 1); /* the baseline */
    CHECK_CONTAINS(t, ">baseline</text>");
    /* x ticks 0..4 at whole numbers */
    CHECK_CONTAINS(t, ">4</text>");
    CHECK(!strstr(t, ">0.5</text>"));
    CHECK(!strstr(t, "no data"));
    CHECK(!strstr(t, "nan") && !strstr(t, "inf"));
    evo_str_free(&o);
}

static void test_xy_empty_and_single(void)
{
    double x[1] = {0}, y[1] = {NAN};
    evo_plot_series s[1] = {{.name = "best", .x = x, .y = y, .n = 1, .line = 1, .marker = EVO_PLOT_CIRCLE}};
    evo_plot_xy c = {.title = "t",
                     .series = s,
                     .n_series = 1,
                     .integer_x = 1,
                     .y_ref = 1.0,
                     .note = "no candidate passed every gate in this run"};
    evo_str o = {0};
    CHECK_EQ_INT(evo_plot_xy_svg(&c, &o, NULL), EVO_OK);
    const char *t = evo_str_cstr(&o);
    CHECK_CONTAINS(t, ">no candidate passed every gate in this run</text>");
    CHECK_EQ_INT(count(t, "<polyline"), 0);
    CHECK_EQ_INT(count(t, "<circle"), 1); /* the legend's */
    CHECK(!strstr(t, "nan"));
    evo_str_free(&o);

    y[0] = 1.25; /* one generation, one point: a marker, no line */
    CHECK_EQ_INT(evo_plot_xy_svg(&c, &o, NULL), EVO_OK);
    t = evo_str_cstr(&o);
    CHECK_EQ_INT(count(t, "<polyline"), 0);
    CHECK_EQ_INT(count(t, "<circle"), 2);
    CHECK(!strstr(t, "no candidate passed"));
    CHECK_CONTAINS(t, ">0</text>");
    evo_str_free(&o);

    evo_plot_xy none = {.title = "nothing"};
    CHECK_EQ_INT(evo_plot_xy_svg(&none, &o, NULL), EVO_OK);
    CHECK_CONTAINS(evo_str_cstr(&o), ">no data</text>");
    evo_str_free(&o);

    evo_plot_series bad = {.n = 3};
    evo_plot_xy broken = {.series = &bad, .n_series = 1};
    evo_err err = {0};
    CHECK_EQ_INT(evo_plot_xy_svg(&broken, &o, &err), EVO_E_INTERNAL);
    CHECK_STR(err.msg, "plot: series 0 has 3 points and no arrays");
    evo_str_free(&o);
}

/* Dense lines lose their markers; a scatter of many points keeps them but drops per-point tooltips. */
static void test_xy_dense(void)
{
    enum { N = 400 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = i / 2, y[i] = 1 + 0.001 * i;
    evo_plot_series line = {.name = "best", .x = x, .y = y, .n = N, .line = 1, .marker = EVO_PLOT_CIRCLE};
    evo_plot_xy c = {.series = &line, .n_series = 1, .integer_x = 1, .y_ref = NAN};
    evo_str o = {0};
    CHECK_EQ_INT(evo_plot_xy_svg(&c, &o, NULL), EVO_OK);
    CHECK_EQ_INT(count(evo_str_cstr(&o), "<circle"), 1);
    CHECK_EQ_INT(count(evo_str_cstr(&o), "<polyline"), 1);
    CHECK_EQ_INT(count(evo_str_cstr(&o), "stroke-dasharray"), 0);
    evo_str_free(&o);

    evo_plot_series sc = {.name = "OK", .x = x, .y = y, .n = N, .marker = EVO_PLOT_CIRCLE, .jitter = 0.25};
    c.series = &sc;
    CHECK_EQ_INT(evo_plot_xy_svg(&c, &o, NULL), EVO_OK);
    CHECK_EQ_INT(count(evo_str_cstr(&o), "<circle"), N + 1);
    CHECK_EQ_INT(count(evo_str_cstr(&o), "<title>"), 0);
    CHECK(o.len < 60 * N); /* small: no per-point attributes beyond the position */
    evo_str_free(&o);
}

/* Two points of equal x spread to x -+ jitter/2; a lone point stays put. */
static void test_jitter(void)
{
    double x[3] = {0, 0, 1}, y[3] = {1, 2, 3};
    evo_plot_series s = {.x = x, .y = y, .n = 3, .marker = EVO_PLOT_CIRCLE, .jitter = 0.2};
    evo_plot_xy c = {.series = &s, .n_series = 1, .integer_x = 1, .y_ref = NAN, .width = 880};
    evo_str o = {0};
    CHECK_EQ_INT(evo_plot_xy_svg(&c, &o, NULL), EVO_OK);
    /* Parse the three cx values in order. */
    double cx[3];
    const char *p = evo_str_cstr(&o);
    for (int i = 0; i < 3; i++) {
        p = strstr(p, "<circle cx=\"");
        CHECK(p != NULL);
        if (!p) break;
        p += strlen("<circle cx=\"");
        cx[i] = atof(p);
    }
    if (p) {
        CHECK(cx[0] < cx[1]);
        CHECK_NEAR(cx[1] - cx[0], (cx[2] - (cx[0] + cx[1]) / 2) * 0.2, 0.15); /* 0.2 units apart, 1 unit to x=1 */
    }
    evo_str_free(&o);
}

/* ---- bars ---- */

static void test_bars_counts(void)
{
    const char *groups[3] = {"mission(1,8,512,64)", "mission(1,8,512,64) causal", "long(2,8,2048,64)"};
    const char *bars[2] = {"#1 ba11dba8 (1.84x)", "#2 f2e61753 (1.52x)"};
    double v[6] = {1.93, 1.60, 1.80, NAN, 1.75, 0.95};
    evo_plot_bars c = {.title = "Run 1: speedup",
                       .y_label = "speedup",
                       .groups = groups,
                       .n_groups = 3,
                       .bars = bars,
                       .n_bars = 2,
                       .values = v,
                       .y_ref = 1.0,
                       .y_ref_label = "baseline"};
    evo_str o = {0};
    CHECK_EQ_INT(evo_plot_bars_svg(&c, &o, NULL), EVO_OK);
    const char *t = evo_str_cstr(&o);
    CHECK_EQ_INT(count(t, "</title></rect>"), 5);
    CHECK_EQ_INT(count(t, "<rect"), 1 + 2 + 5); /* background, legend swatches, bars */
    CHECK_EQ_INT(count(t, ">n/a</text>"), 1);
    CHECK_CONTAINS(t, ">1.93</text>");
    CHECK_CONTAINS(t, ">0.95</text>");
    CHECK_CONTAINS(t, "#2 f2e61753 (1.52x), long(2,8,2048,64): 0.950");
    /* Labels fit their groups: stacked lines, not rotated. */
    CHECK_CONTAINS(t, ">(1,8,512,64)</text>");
    CHECK_CONTAINS(t, ">causal</text>");
    CHECK_EQ_INT(count(t, "rotate(-40"), 0);
    CHECK_EQ_INT(count(t, "stroke-dasharray"), 1);
    CHECK_CONTAINS(t, "viewBox=\"0 0 880 ");
    evo_str_free(&o);
}

static void test_bars_many_shapes(void)
{
    enum { G = 24, B = 5 };
    char names[G][64];
    const char *groups[G];
    for (int g = 0; g < G; g++) {
        snprintf(names[g], 64, "preset%d(2,16,%d,128)%s", g, 512 * (g + 1), g % 2 ? " causal" : "");
        groups[g] = names[g];
    }
    const char *bars[B] = {"#1 a", "#2 b", "#3 c", "#4 d", "#5 e"};
    double v[G * B];
    for (int i = 0; i < G * B; i++) v[i] = 0.8 + 0.01 * i;
    evo_plot_bars c = {.groups = groups, .n_groups = G, .bars = bars, .n_bars = B, .values = v, .y_ref = 1.0};
    evo_str o = {0};
    CHECK_EQ_INT(evo_plot_bars_svg(&c, &o, NULL), EVO_OK);
    const char *t = evo_str_cstr(&o);
    CHECK_EQ_INT(count(t, "</title></rect>"), G * B);
    /* 120 bars of at least 9 px: the canvas grew past its default width, and each label is one line */
    int w = atoi(strstr(t, "width=\"") + 7);
    CHECK(w >= 24 * 5 * 9);
    CHECK_CONTAINS(t, ">preset0(2,16,512,128)</text>");
    CHECK_EQ_INT(count(t, ">(2,16,512,128)</text>"), 0);
    evo_str_free(&o);

    evo_plot_bars empty = {.title = "no elites", .note = "no candidate has passed every gate yet", .y_ref = 1.0};
    CHECK_EQ_INT(evo_plot_bars_svg(&empty, &o, NULL), EVO_OK);
    CHECK_CONTAINS(evo_str_cstr(&o), ">no candidate has passed every gate yet</text>");
    CHECK_EQ_INT(count(evo_str_cstr(&o), "<rect"), 1);
    evo_str_free(&o);
}

/* ---- fixture for tests/cli_plot.sh ---- */

#define TASK "attention_fp8"
#define ARCH "sm_90"
#define GPU "NVIDIA H100 80GB HBM3"

static void die(const char *what, const evo_err *err)
{
    fprintf(stderr, "test_plot fixture: %s: %s\n", what, err->msg);
    exit(1);
}

static int64_t begin_run(evo_store *st, const char *shape_set, int gens, int pop, int seed)
{
    evo_run_rec r = {.started_at = "2026-11-21T10:00:00Z",
                     .finished_at = "2026-11-21T11:00:00Z",
                     .state = "done",
                     .task = TASK,
                     .arch = ARCH,
                     .shape_set = (char *)shape_set,
                     .strategy = "ga",
                     .seed = seed,
                     .generations = gens,
                     .population = pop,
                     .gpu = GPU,
                     .evo_version = EVO_VERSION};
    evo_err err = {0};
    if (evo_store_begin_run(st, &r, &err) != EVO_OK) die("begin_run", &err);
    return r.id;
}

/* One evaluation of a fresh candidate. speedups: n_shapes values (NaN allowed), or NULL for none. */
static void add_eval(evo_store *st, int64_t run, int gen, const char *shape_set, evo_verdict v, double fitness,
                     const char *const *shapes, const double *speedups, int n_shapes)
{
    static int serial;
    char genome[64], key[65];
    snprintf(genome, sizeof genome, "TILE_M=64,SERIAL=%d", serial++);
    evo_sha256_hex(genome, strlen(genome), key);
    evo_candidate_rec c = {.key = key,
                           .task = TASK,
                           .arch = ARCH,
                           .genome = genome,
                           .template_hash = "t",
                           .options = "o",
                           .nvrtc_version = "13.0",
                           .registers = 128,
                           .smem_bytes = 32768,
                           .spill_bytes = 0,
                           .stack_bytes = 0};
    evo_err err = {0};
    if (evo_store_put_candidate(st, &c, &err) != EVO_OK) die("put_candidate", &err);
    evo_shape_result sh[16];
    memset(sh, 0, sizeof sh);
    for (int i = 0; i < n_shapes; i++) {
        snprintf(sh[i].shape, sizeof sh[i].shape, "%s", shapes[i]);
        sh[i].speedup = speedups[i];
        sh[i].median_us = 100 / speedups[i];
        sh[i].baseline_us = 100;
    }
    evo_eval_rec e = {.candidate_id = c.id,
                      .run_id = run,
                      .generation = gen,
                      .shape_set = (char *)shape_set,
                      .verdict = v,
                      .fitness = fitness,
                      .gpu = GPU,
                      .created_at = "2026-11-21T10:30:00Z",
                      .shapes = sh,
                      .n_shapes = n_shapes};
    if (evo_store_put_evaluation(st, &e, &err) != EVO_OK) die("put_evaluation", &err);
}

static void put_gen(evo_store *st, int64_t run, int g, double best, double median, int ok, int failed)
{
    evo_gen_rec r = {.run_id = run,
                     .generation = g,
                     .best_fitness = best,
                     .median_fitness = median,
                     .evaluated = ok + failed,
                     .baseline_noise = 0.01};
    r.counts[EVO_V_OK] = ok;
    r.counts[EVO_V_INCORRECT] = failed;
    evo_err err = {0};
    if (evo_store_put_generation(st, &r, &err) != EVO_OK) die("put_generation", &err);
}

/* Run 1: 12 generations of 8 (generation 0 has nothing correct), 3 shapes; per later generation g: a
 * COMPILE_FAIL, an INCORRECT, a REGRESSED (0.8) and five OK with fitness 1 + 0.05 g + 0.02 k, k = 0..4.
 * Run 2: one generation, nothing correct, a shape set of its own.
 * Run 3: one generation, 6 OK candidates over 12 shapes; the 2nd best lacks a speedup for one shape. */
static int make_fixture(const char *path)
{
    evo_store *st;
    evo_err err = {0};
    if (evo_store_open(path, EVO_STORE_READWRITE, &st, &err) != EVO_OK) die("open", &err);

    const char *s1[3] = {"mission(1,8,512,64)", "mission(1,8,512,64) causal", "long(2,8,2048,64)"};
    int64_t r1 = begin_run(st, "set-a", 12, 8, 7);
    for (int g = 0; g < 12; g++) {
        if (g == 0) {
            for (int i = 0; i < 8; i++)
                add_eval(st, r1, 0, "set-a", i % 2 ? EVO_V_COMPILE_FAIL : EVO_V_INCORRECT, NAN, NULL, NULL, 0);
            put_gen(st, r1, 0, NAN, NAN, 0, 8);
            continue;
        }
        add_eval(st, r1, g, "set-a", EVO_V_COMPILE_FAIL, NAN, NULL, NULL, 0);
        add_eval(st, r1, g, "set-a", EVO_V_INCORRECT, NAN, NULL, NULL, 0);
        double reg[3] = {0.85, 0.8, 0.75};
        add_eval(st, r1, g, "set-a", EVO_V_REGRESSED, 0.8, s1, reg, 3);
        for (int k = 0; k < 5; k++) {
            double f = 1 + 0.05 * g + 0.02 * k;
            double sp[3] = {f * 1.1, f, f / 1.1};
            add_eval(st, r1, g, "set-a", EVO_V_OK, f, s1, sp, 3);
        }
        put_gen(st, r1, g, 1 + 0.05 * g + 0.08, 1 + 0.05 * g + 0.04, 5, 3);
    }

    int64_t r2 = begin_run(st, "set-b", 1, 4, 8);
    for (int i = 0; i < 4; i++) add_eval(st, r2, 0, "set-b", EVO_V_INCORRECT, NAN, NULL, NULL, 0);
    put_gen(st, r2, 0, NAN, NAN, 0, 4);

    const char *s3[12] = {"mission(1,8,512,64)",      "mission(1,8,512,64) causal", "small(2,8,512,64)",
                          "long(2,8,2048,64)",        "long(2,8,2048,64) causal",   "wide(2,8,512,128)",
                          "wide(2,8,512,128) causal", "stress(4,8,2048,64)",        "odd(1,4,77,64)",
                          "odd(1,4,77,64) causal",    "s1000(2,4,1000,128)",        "s1000(2,4,1000,128) causal"};
    int64_t r3 = begin_run(st, "set-c", 1, 6, 9);
    for (int k = 0; k < 6; k++) {
        double sp[12], f = 1.6 - 0.1 * k;
        for (int i = 0; i < 12; i++) sp[i] = f * (0.9 + 0.02 * i);
        if (k == 1) sp[5] = NAN;
        add_eval(st, r3, 0, "set-c", EVO_V_OK, f, s3, sp, 12);
    }
    put_gen(st, r3, 0, 1.6, 1.35, 6, 0);
    evo_store_close(st);
    return 0;
}

/* The edge cases as files, for looking at: `test_plot --render DIR`. */
static int render(const char *dir)
{
    evo_err err = {0};
    if (evo_mkdir_p(dir, &err) != EVO_OK) die("mkdir", &err);
    enum { N = 200 };
    double x[N], best[N], med[N];
    for (int i = 0; i < N; i++) x[i] = i, best[i] = 1 + log1p(i) * 0.3, med[i] = 1 + log1p(i) * 0.2;
    evo_plot_series s[2] = {{.name = "best", .x = x, .y = best, .n = N, .line = 1, .marker = EVO_PLOT_CIRCLE},
                            {.name = "median", .x = x, .y = med, .n = N, .line = 1, .marker = EVO_PLOT_SQUARE}};
    evo_plot_xy c = {.title = "200 generations",
                     .x_label = "generation",
                     .y_label = "fitness",
                     .series = s,
                     .n_series = 2,
                     .integer_x = 1,
                     .y_ref = 1.0,
                     .y_ref_label = "baseline"};
    evo_str o = {0};
    char path[512];
    evo_plot_xy_svg(&c, &o, NULL);
    snprintf(path, sizeof path, "%s/dense.svg", dir);
    evo_write_file_atomic(path, o.p, o.len, NULL);
    evo_str_free(&o);

    enum { G = 24, B = 5 };
    char names[G][64];
    const char *groups[G];
    for (int g = 0; g < G; g++) {
        snprintf(names[g], 64, "preset%d(2,16,%d,128)%s", g, 512 * (g + 1), g % 2 ? " causal" : "");
        groups[g] = names[g];
    }
    const char *bars[B] = {"#1 3f2a9c1d (1.84x)", "#2 a1b2c3d4 (1.52x)", "#3 00ff00ff (1.31x)", "#4 deadbeef (1.20x)",
                           "#5 12345678 (1.01x)"};
    double v[G * B];
    for (int i = 0; i < G * B; i++) v[i] = 0.8 + 0.01 * i;
    evo_plot_bars b = {.title = "24 shapes",
                       .y_label = "speedup",
                       .groups = groups,
                       .n_groups = G,
                       .bars = bars,
                       .n_bars = B,
                       .values = v,
                       .y_ref = 1.0,
                       .y_ref_label = "baseline"};
    evo_plot_bars_svg(&b, &o, NULL);
    snprintf(path, sizeof path, "%s/many-shapes.svg", dir);
    evo_write_file_atomic(path, o.p, o.len, NULL);
    evo_str_free(&o);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--fixture") == 0) return make_fixture(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--render") == 0) return render(argv[2]);
    test_ticks();
    test_text_width();
    test_xy_counts();
    test_xy_empty_and_single();
    test_xy_dense();
    test_jitter();
    test_bars_counts();
    test_bars_many_shapes();
    return check_result();
}
