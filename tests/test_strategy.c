/* test_strategy.c — the search strategies and insight-guided mutation, on CPU with synthetic fitness.
 * Run: ctest --test-dir build -R test_strategy --output-on-failure   (or ./build/tests/test_strategy)
 * Covers: lookup and parameter checks, determinism (same seed, order of observations, resume as replay), validity,
 * no duplicates up to exhaustion, GA vs random search on a landscape with a known optimum, insights.
 */
#include "check.h"
#include "config.h"
#include "insights.h"
#include "space.h"
#include "strategy.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- spaces ---- */

/* The landscape space: 10 x 10 x 5 x 4 x 2 x 6 = 24000 genomes, 15168 of them valid. */
static evo_space *landscape_space(void)
{
    evo_space *s;
    evo_err err = {0};
    static const int ab[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static const int c[] = {16, 32, 64, 128, 256};
    static const char *const d[] = {"x", "y", "z", "w"};
    static const int e[] = {0, 1};
    static const int f[] = {1, 2, 4, 8, 16, 32};
    CHECK(evo_space_new(&s) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "A", ab, 10, &err) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "B", ab, 10, &err) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "C", c, 5, &err) == EVO_OK);
    CHECK(evo_space_add_enum_knob(s, "D", d, 4, &err) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "E", e, 2, &err) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "F", f, 6, &err) == EVO_OK);
    CHECK(evo_space_add_constraint(s, "A + B <= 14", &err) == EVO_OK);
    CHECK(evo_space_add_constraint(s, "C * F <= 1024", &err) == EVO_OK);
    if (err.msg[0]) fprintf(stderr, "%s\n", err.msg);
    return s;
}

/* A small space: 4 x 4 x 3 = 48 genomes; P + Q <= 6 leaves 13 of the 16 (P, Q) pairs, so 39 are valid. */
static evo_space *small_space(void)
{
    evo_space *s;
    evo_err err = {0};
    static const int pq[] = {1, 2, 3, 4};
    static const int r[] = {8, 16, 32};
    CHECK(evo_space_new(&s) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "P", pq, 4, &err) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "Q", pq, 4, &err) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "R", r, 3, &err) == EVO_OK);
    CHECK(evo_space_add_constraint(s, "P + Q <= 6", &err) == EVO_OK);
    return s;
}

/* ---- the synthetic landscape ----
 * log fitness = separable quadratic bowls (A's and B's optima lie beyond A + B <= 14, so the best pair sits on
 * that boundary at A=8, B=6), per-value terms for D and E with an interaction (D=z with E=1 beats the separably
 * best D=w), and a failure region: D=w with F >= 16 is INCORRECT. Optimum: A=8,B=6,C=64,D=z,E=1,F=8. */
static evo_verdict landscape(const evo_space *s, const evo_genome *g, double *fitness)
{
    int a = evo_genome_get(s, g, "A", 0), b = evo_genome_get(s, g, "B", 0);
    int ci = g->idx[evo_space_find_knob(s, "C")], d = evo_genome_get(s, g, "D", 0);
    int e = evo_genome_get(s, g, "E", 0), fi = g->idx[evo_space_find_knob(s, "F")];
    static const double d_term[] = {0.0, 0.10, 0.05, 0.20};
    if (d == 3 && fi >= 4) {
        *fitness = NAN;
        return EVO_V_INCORRECT;
    }
    double l = -0.05 * (a - 9) * (a - 9) - 0.04 * (b - 7) * (b - 7) - 0.12 * (ci - 2) * (ci - 2) -
               0.03 * (fi - 3) * (fi - 3) + d_term[d] + 0.05 * e + (d == 2 && e == 1 ? 0.30 : 0.0);
    *fitness = exp(l);
    return EVO_V_OK;
}

static const char *const OPTIMUM = "A=8,B=6,C=64,D=z,E=1,F=8";

typedef struct {
    const evo_space *s;
    double best;
    evo_genome arg;
} opt_ctx;

static int opt_visit(const evo_genome *g, void *ctx)
{
    opt_ctx *o = ctx;
    double f;
    if (landscape(o->s, g, &f) == EVO_V_OK && f > o->best) {
        o->best = f;
        o->arg = *g;
    }
    return 0;
}

/* ---- a search loop like evo run's, with the landscape as evaluator ---- */
typedef struct {
    evo_proposal *log; /* every proposal in order */
    int n_log, cap;
    int evaluated;
    double best;
    int evals_to_opt; /* evaluations until the optimum was found; -1 when never */
    int generations;
    int invalid, duplicates, bad_provenance, exhausted_at; /* exhausted_at: generation that proposed 0, or -1 */
} search;

static void log_push(search *r, const evo_proposal *p)
{
    if (r->n_log == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->log = realloc(r->log, sizeof *r->log * (size_t)r->cap);
    }
    r->log[r->n_log++] = *p;
}

static bool provenance_ok(const evo_proposal *p)
{
    switch (p->op) {
        case EVO_OP_BASELINE:
        case EVO_OP_SEED:
        case EVO_OP_ELITE:
        case EVO_OP_RANDOM:
        case EVO_OP_IMMIGRANT: return p->n_parents == 0;
        case EVO_OP_MUTATION:
        case EVO_OP_NEIGHBOUR: return p->n_parents == 1;
        case EVO_OP_CROSSOVER:
        case EVO_OP_CROSSOVER_MUTATION: return p->n_parents == 2;
        default: return false;
    }
}

typedef evo_verdict (*evaluator)(const evo_space *s, const evo_genome *g, double *fitness);

/* Fitness on the small space: larger P, Q, R are better; all correct. */
static evo_verdict small_fitness(const evo_space *s, const evo_genome *g, double *fitness)
{
    *fitness =
        exp(0.1 * (evo_genome_get(s, g, "P", 0) + evo_genome_get(s, g, "Q", 0)) + 0.01 * evo_genome_get(s, g, "R", 0));
    return EVO_V_OK;
}

typedef struct {
    bool reverse;       /* feed each generation's results back to front */
    int stop_after_gen; /* stop after this many generations (0 = budget only) */
    evaluator eval;     /* NULL: the landscape */
} loop_opts;

static search run_search(const char *name, const evo_space *s, const evo_strategy_params *p, int budget,
                         const evo_genome *optimum, loop_opts lo)
{
    search r = {0};
    r.evals_to_opt = -1;
    r.exhausted_at = -1;
    r.best = 0;
    evo_err err = {0};
    evo_strategy *st = NULL;
    CHECK(evo_strategy_create(name, s, p, &st, &err) == EVO_OK);
    if (!st) return r;
    evo_genome_set *all = evo_genome_set_new(s);
    evo_proposal *out = calloc((size_t)p->population, sizeof *out);
    evo_observation *obs = calloc((size_t)p->population, sizeof *obs);
    while (r.evaluated < budget && (!lo.stop_after_gen || r.generations < lo.stop_after_gen)) {
        int n = 0;
        CHECK(evo_strategy_propose(st, out, p->population, &n, &err) == EVO_OK);
        if (n == 0) {
            r.exhausted_at = r.generations;
            break;
        }
        int m = 0;
        for (int i = 0; i < n && r.evaluated < budget; i++) {
            log_push(&r, &out[i]);
            r.invalid += !evo_space_valid(s, &out[i].genome, NULL);
            r.duplicates += !evo_genome_set_add(all, &out[i].genome);
            r.bad_provenance += !provenance_ok(&out[i]);
            obs[m].genome = out[i].genome;
            obs[m].verdict = (lo.eval ? lo.eval : landscape)(s, &out[i].genome, &obs[m].fitness);
            obs[m].reused = false;
            r.evaluated++;
            if (obs[m].verdict == EVO_V_OK && obs[m].fitness > r.best) r.best = obs[m].fitness;
            if (optimum && r.evals_to_opt < 0 && evo_genome_equal(s, optimum, &out[i].genome))
                r.evals_to_opt = r.evaluated;
            m++;
        }
        if (lo.reverse)
            for (int i = 0; i < m / 2; i++) {
                evo_observation t = obs[i];
                obs[i] = obs[m - 1 - i];
                obs[m - 1 - i] = t;
            }
        evo_strategy_observe(st, obs, m);
        r.generations++;
    }
    free(out);
    free(obs);
    evo_genome_set_free(all);
    evo_strategy_destroy(st);
    return r;
}

static bool same_log(const search *a, const search *b)
{
    if (a->n_log != b->n_log) return false;
    for (int i = 0; i < a->n_log; i++) {
        const evo_proposal *x = &a->log[i], *y = &b->log[i];
        if (memcmp(x->genome.idx, y->genome.idx, sizeof x->genome.idx) || x->op != y->op ||
            x->n_parents != y->n_parents)
            return false;
        for (int j = 0; j < x->n_parents; j++)
            if (memcmp(x->parents[j].idx, y->parents[j].idx, sizeof x->parents[j].idx)) return false;
    }
    return true;
}

static evo_strategy_params landscape_params(uint64_t seed, const evo_genome *baseline)
{
    evo_strategy_params p;
    evo_strategy_params_default(&p);
    p.seed = seed;
    p.population = 20;
    p.elites = 2;
    p.tournament = 3;
    p.crossover_rate = 0.7;
    p.mutation_rate = 0.2;
    p.immigrant_rate = 0.1;
    p.local_rate = 0; /* the plain GA; the tests of local children set their own */
    p.baseline = baseline;
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- tests ---- */

static void test_lookup_and_params(void)
{
    int n;
    const evo_strategy_ops *const *list = evo_strategy_list(&n);
    CHECK_EQ_INT(n, 3);
    CHECK_STR(list[0]->name, "ga");
    CHECK_STR(list[1]->name, "random");
    CHECK_STR(list[2]->name, "seeds");
    CHECK(evo_strategy_find("ga") == &evo_strategy_ga);
    CHECK(evo_strategy_find("random") == &evo_strategy_random);
    CHECK(evo_strategy_find("seeds") == &evo_strategy_seeds);
    CHECK(evo_strategy_find("anneal") == NULL);
    CHECK_STR(evo_operator_name(EVO_OP_CROSSOVER_MUTATION), "crossover+mutation");
    CHECK_STR(evo_operator_name(EVO_OP_IMMIGRANT), "immigrant");
    CHECK_STR(evo_operator_name(EVO_OP_BASELINE), "baseline");

    evo_space *s = small_space();
    evo_strategy_params p = landscape_params(1, NULL);
    evo_strategy *st = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_strategy_create("anneal", s, &p, &st, &err), EVO_E_CONFIG);
    CHECK_STR(err.msg, "evolution.strategy: unknown strategy 'anneal' (known: ga, random, seeds)");
    CHECK(st == NULL);
    p.elites = 20;
    CHECK_EQ_INT(evo_strategy_create("ga", s, &p, &st, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "evolution.elites");
    p.elites = 2;
    p.mutation_rate = 1.5;
    CHECK_EQ_INT(evo_strategy_create("ga", s, &p, &st, &err), EVO_E_CONFIG);
    CHECK_STR(err.msg, "evolution.mutation_rate: must be in [0, 1], is 1.5");
    p.mutation_rate = 0.2;
    p.local_rate = -0.1;
    CHECK_EQ_INT(evo_strategy_create("ga", s, &p, &st, &err), EVO_E_CONFIG);
    CHECK_STR(err.msg, "evolution.local_rate: must be in [0, 1], is -0.1");
    p.local_rate = 0.5;
    p.population = 0;
    CHECK_EQ_INT(evo_strategy_create("seeds", s, &p, &st, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "evolution.population");
    CHECK_EQ_INT(evo_strategy_create("random", s, &p, &st, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "evolution.population");
    p.population = 8;
    CHECK_EQ_INT(evo_strategy_create("ga", s, &p, &st, &err), EVO_OK);
    CHECK_STR(evo_strategy_name(st), "ga");
    evo_strategy_destroy(st);
    evo_strategy_destroy(NULL);
    evo_space_free(s);
}

static void test_landscape_optimum(void)
{
    evo_space *s = landscape_space();
    uint64_t total = 0, valid = 0;
    bool exact = false;
    CHECK(evo_space_count(s, 1000000, &total, &valid, &exact, NULL) == EVO_OK);
    CHECK_EQ_INT(total, 24000);
    CHECK_EQ_INT(valid, 15168);
    opt_ctx o = {s, 0, {{0}}};
    evo_space_foreach_valid(s, opt_visit, &o);
    char text[EVO_GENOME_TEXT_MAX];
    evo_genome_format(s, &o.arg, text, sizeof text);
    CHECK_STR(text, OPTIMUM);
    CHECK_NEAR(o.best, exp(-0.09 + 0.40), 1e-12);
    evo_space_free(s);
}

/* Same seed: identical proposals, parents and operators; another seed: different ones. Also for random search. */
static void test_determinism(void)
{
    evo_space *s = landscape_space();
    evo_genome base;
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    static const char *const names[] = {"ga", "random", "seeds"};
    for (int which = 0; which < 3; which++) {
        const char *name = names[which];
        evo_strategy_params p1 = landscape_params(7, &base), p2 = landscape_params(8, &base);
        p1.local_rate = p2.local_rate = 0.5;
        loop_opts lo = {false, 30, NULL};
        search a = run_search(name, s, &p1, 1 << 30, NULL, lo);
        search b = run_search(name, s, &p1, 1 << 30, NULL, lo);
        search c = run_search(name, s, &p2, 1 << 30, NULL, lo);
        CHECK_EQ_INT(a.generations, 30);
        CHECK(a.n_log > 500);
        CHECK(same_log(&a, &b));
        CHECK(!same_log(&a, &c));
        /* the first proposal is the baseline either way; after it the seeds part */
        CHECK_EQ_INT(a.log[0].op, EVO_OP_BASELINE);
        CHECK_EQ_INT(c.log[0].op, EVO_OP_BASELINE);
        CHECK(memcmp(a.log[1].genome.idx, c.log[1].genome.idx, 6) != 0);
        free(a.log);
        free(b.log);
        free(c.log);
    }
    evo_space_free(s);
}

/* The proposals of the GA (plain and with local children) and of hill climbing do not depend on the order results
 * arrive in within a generation. */
static void test_observation_order(void)
{
    evo_space *s = landscape_space();
    evo_genome base;
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    for (int which = 0; which < 3; which++) {
        const char *name = which == 2 ? "seeds" : "ga";
        evo_strategy_params p = landscape_params(3, which ? &base : NULL);
        p.local_rate = which ? 0.5 : 0;
        evo_insights *i1 = evo_insights_new(s), *i2 = evo_insights_new(s);
        p.insights = i1;
        search a = run_search(name, s, &p, 1 << 30, NULL, (loop_opts){false, 25, NULL});
        p.insights = i2;
        search b = run_search(name, s, &p, 1 << 30, NULL, (loop_opts){true, 25, NULL});
        CHECK(a.n_log > 400);
        CHECK(same_log(&a, &b));
        free(a.log);
        free(b.log);
        evo_insights_free(i1);
        evo_insights_free(i2);
    }
    evo_space_free(s);
}

/* Resume is a replay: a new strategy fed the first k generations' results proposes generation k+1 exactly as the
 * original did. The GA proposes `population - elites` (the elites are carried over), hill climbing `population`. */
static void resume_replay(const char *name, int expect_n)
{
    evo_space *s = landscape_space();
    evo_genome base;
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    evo_strategy_params p = landscape_params(11, &base);
    p.local_rate = 0.5;
    search full = run_search(name, s, &p, 1 << 30, NULL, (loop_opts){false, 12, NULL});
    evo_strategy *st = NULL;
    CHECK(evo_strategy_create(name, s, &p, &st, NULL) == EVO_OK);
    evo_proposal out[20];
    evo_observation obs[20];
    memset(obs, 0, sizeof obs); /* fitness intervals unknown, as in run_search */
    int at = 0, n = 0;
    for (int gen = 0; gen < 6; gen++) {
        CHECK(evo_strategy_propose(st, out, 20, &n, NULL) == EVO_OK);
        for (int i = 0; i < n; i++) {
            obs[i].genome = out[i].genome;
            obs[i].verdict = landscape(s, &out[i].genome, &obs[i].fitness);
            obs[i].reused = true; /* stored results: they breed all the same */
        }
        evo_strategy_observe(st, obs, n);
        at += n;
    }
    CHECK(evo_strategy_propose(st, out, 20, &n, NULL) == EVO_OK);
    CHECK_EQ_INT(n, expect_n);
    CHECK(at + n <= full.n_log);
    for (int i = 0; i < n && at + i < full.n_log; i++) {
        CHECK(memcmp(out[i].genome.idx, full.log[at + i].genome.idx, sizeof out[i].genome.idx) == 0);
        CHECK_EQ_INT(out[i].op, full.log[at + i].op);
    }
    evo_strategy_destroy(st);
    free(full.log);
    evo_space_free(s);
}

static void test_resume_replay(void)
{
    for (int which = 0; which < 2; which++) resume_replay(which ? "seeds" : "ga", which ? 20 : 18);
}

/* On a 39-genome space, 30 generations of 8 propose every valid genome exactly once, then nothing. */
static void test_no_duplicates_until_exhausted(void)
{
    evo_space *s = small_space();
    uint64_t total, valid;
    bool exact;
    CHECK(evo_space_count(s, 1000, &total, &valid, &exact, NULL) == EVO_OK);
    CHECK_EQ_INT(valid, 39);
    evo_genome base;
    CHECK(evo_genome_parse(s, "P=1,Q=1,R=8", &base, NULL) == EVO_OK);
    static const char *const names[] = {"ga", "random", "seeds", "ga"};
    /* 8 in generation 0; the GA then breeds 6 per generation (2 elites carried): 8 + 6 * 5 = 38, 1 more; random
     * search and hill climbing propose 8 per generation: 8 * 4 + 7 */
    static const int exhausted_at[] = {7, 5, 5, 7};
    for (int which = 0; which < 4; which++) {
        evo_strategy_params p = landscape_params(5, which >= 2 ? &base : NULL);
        p.population = 8;
        p.local_rate = which == 3 ? 0.5 : 0;
        search r = run_search(names[which], s, &p, 1 << 30, NULL, (loop_opts){false, 30, small_fitness});
        CHECK_EQ_INT(r.n_log, 39);
        CHECK_EQ_INT(r.duplicates, 0);
        CHECK_EQ_INT(r.invalid, 0);
        CHECK_EQ_INT(r.bad_provenance, 0);
        CHECK_EQ_INT(r.exhausted_at, exhausted_at[which]);
        free(r.log);
    }
    evo_space_free(s);
}

/* A space with a filter (what the search loop sets: the task's can_implement at the GPU's limits) that refuses R=32:
 * 13 (P, Q) pairs x 2 = 26 genomes. Every strategy proposes exactly those until they run out (mutation repairs,
 * neighbours and random genomes all keep to it), and none twice. */
static bool refuse_r32(const evo_genome *g, void *ctx) { return evo_genome_get(ctx, g, "R", 0) != 32; }

static void test_filtered_space(void)
{
    evo_space *s = small_space();
    evo_space_set_filter(s, refuse_r32, s, "R=32 does not run here");
    evo_genome base;
    CHECK(evo_genome_parse(s, "P=1,Q=1,R=8", &base, NULL) == EVO_OK);
    static const char *const names[] = {"ga", "random", "seeds", "ga"};
    for (int which = 0; which < 4; which++) {
        evo_strategy_params p = landscape_params(9, which >= 2 ? &base : NULL);
        p.population = 8;
        p.local_rate = which == 3 ? 0.5 : 0;
        search r = run_search(names[which], s, &p, 1 << 30, NULL, (loop_opts){false, 30, small_fitness});
        CHECK_EQ_INT(r.n_log, 26);
        CHECK_EQ_INT(r.duplicates, 0);
        CHECK_EQ_INT(r.invalid, 0);
        int r32 = 0;
        for (int i = 0; i < r.n_log; i++) r32 += evo_genome_get(s, &r.log[i].genome, "R", 0) == 32;
        CHECK_EQ_INT(r32, 0);
        CHECK(r.exhausted_at > 0);
        free(r.log);
    }
    evo_space_free(s);
}

/* 30 generations on the landscape: all valid, none repeated, provenance consistent, every operator used. */
static void test_ga_proposals(void)
{
    evo_space *s = landscape_space();
    evo_genome base, seeds[2], elites[2];
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=5,B=5,C=32,D=y,E=0,F=2", &seeds[0], NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &seeds[1], NULL) == EVO_OK); /* same as the baseline */
    CHECK(evo_genome_parse(s, "A=6,B=6,C=64,D=w,E=1,F=4", &elites[0], NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=10,B=10,C=64,D=w,E=1,F=4", &elites[1], NULL) == EVO_OK); /* invalid now */
    evo_strategy_params p = landscape_params(21, &base);
    p.seeds = seeds;
    p.n_seeds = 2;
    p.prior_elites = elites;
    p.n_prior_elites = 2;
    search r = run_search("ga", s, &p, 1 << 30, NULL, (loop_opts){false, 30, NULL});
    CHECK_EQ_INT(r.generations, 30);
    CHECK_EQ_INT(r.n_log, 20 + 29 * 18);
    CHECK_EQ_INT(r.duplicates, 0);
    CHECK_EQ_INT(r.invalid, 0);
    CHECK_EQ_INT(r.bad_provenance, 0);
    /* generation 0: baseline, the one new seed, the one valid elite, then 17 random */
    CHECK_EQ_INT(r.log[0].op, EVO_OP_BASELINE);
    CHECK_EQ_INT(r.log[1].op, EVO_OP_SEED);
    CHECK(memcmp(r.log[1].genome.idx, seeds[0].idx, 6) == 0);
    CHECK_EQ_INT(r.log[2].op, EVO_OP_ELITE);
    CHECK(memcmp(r.log[2].genome.idx, elites[0].idx, 6) == 0);
    int count[EVO_OP_COUNT] = {0};
    for (int i = 0; i < r.n_log; i++) count[r.log[i].op]++;
    CHECK_EQ_INT(count[EVO_OP_BASELINE], 1);
    CHECK_EQ_INT(count[EVO_OP_SEED], 1);
    CHECK_EQ_INT(count[EVO_OP_ELITE], 1);
    for (int i = 3; i < 20; i++) CHECK_EQ_INT(r.log[i].op, EVO_OP_RANDOM);
    CHECK_EQ_INT(count[EVO_OP_RANDOM], 17); /* repair always found a valid new child: no fallback to random */
    printf("operators over 30 generations:");
    for (int i = 0; i < EVO_OP_COUNT; i++) printf(" %s %d", evo_operator_name((evo_operator)i), count[i]);
    printf("\n");
    CHECK(count[EVO_OP_MUTATION] > 50);
    CHECK(count[EVO_OP_CROSSOVER] + count[EVO_OP_CROSSOVER_MUTATION] > 200);
    CHECK(count[EVO_OP_IMMIGRANT] > 20);
    free(r.log);
    evo_space_free(s);
}

/* GA against random search on the landscape, 10 seeds, 400 evaluations each. */
static void test_ga_beats_random(void)
{
    evo_space *s = landscape_space();
    evo_genome base, opt;
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, OPTIMUM, &opt, NULL) == EVO_OK);
    double best_fit;
    landscape(s, &opt, &best_fit);
    enum { SEEDS = 10, BUDGET = 400 };
    double frac_ga[SEEDS], frac_rnd[SEEDS], frac_ins[SEEDS];
    int found_ga = 0, found_rnd = 0, found_ins = 0;
    for (int seed = 0; seed < SEEDS; seed++) {
        evo_strategy_params p = landscape_params(1000 + (uint64_t)seed, &base);
        search g = run_search("ga", s, &p, BUDGET, &opt, (loop_opts){false, 0, NULL});
        search r = run_search("random", s, &p, BUDGET, &opt, (loop_opts){false, 0, NULL});
        evo_insights *ins = evo_insights_new(s);
        p.insights = ins;
        search gi = run_search("ga", s, &p, BUDGET, &opt, (loop_opts){false, 0, NULL});
        evo_insights_free(ins);
        CHECK_EQ_INT(g.evaluated, BUDGET);
        CHECK_EQ_INT(r.evaluated, BUDGET);
        frac_ga[seed] = g.best / best_fit;
        frac_rnd[seed] = r.best / best_fit;
        frac_ins[seed] = gi.best / best_fit;
        found_ga += g.evals_to_opt > 0;
        found_rnd += r.evals_to_opt > 0;
        found_ins += gi.evals_to_opt > 0;
        printf("seed %d: ga %.4f (opt at %d)  ga+insights %.4f (opt at %d)  random %.4f (opt at %d)\n", seed,
               frac_ga[seed], g.evals_to_opt, frac_ins[seed], gi.evals_to_opt, frac_rnd[seed], r.evals_to_opt);
        free(g.log);
        free(r.log);
        free(gi.log);
    }
    double mg = median(frac_ga, SEEDS), mr = median(frac_rnd, SEEDS), mi = median(frac_ins, SEEDS);
    printf("median fraction of the optimum after %d evaluations: ga %.4f, ga+insights %.4f, random %.4f; "
           "optimum found: ga %d/10, ga+insights %d/10, random %d/10\n",
           BUDGET, mg, mi, mr, found_ga, found_ins, found_rnd);
    CHECK(mg > mr);
    CHECK(mg == 1.0);
    CHECK(mi == 1.0);
    CHECK(mr < 0.95);
    CHECK(found_ga >= 7);
    CHECK(found_ins >= 7);
    CHECK(found_rnd <= 2);
    evo_space_free(s);
}

/* ---- neighbours and local search ---- */

/* Within 200 evaluations on the landscape, 10 seeds: with local children (local_rate 0.5) the GA finds the
 * optimum on every seed, in about half the evaluations the plain GA (6/10) and hill climbing from the baseline
 * ("seeds", 9/10, late) need. docs/results.md has the same comparison on 40 seeds. */
static void test_local_on_landscape(void)
{
    evo_space *s = landscape_space();
    evo_genome base, opt;
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, OPTIMUM, &opt, NULL) == EVO_OK);
    enum { SEEDS = 10, BUDGET = 200 };
    int found[3] = {0}, evals[3][SEEDS];
    static const char *const label[] = {"ga", "ga local 0.5", "seeds"};
    for (int seed = 0; seed < SEEDS; seed++)
        for (int k = 0; k < 3; k++) {
            evo_strategy_params p = landscape_params(1000 + (uint64_t)seed, &base);
            p.local_rate = k == 1 ? 0.5 : 0;
            search r = run_search(k == 2 ? "seeds" : "ga", s, &p, BUDGET, &opt, (loop_opts){false, 0, NULL});
            CHECK_EQ_INT(r.evaluated, BUDGET);
            evals[k][seed] = r.evals_to_opt;
            found[k] += r.evals_to_opt > 0;
            free(r.log);
        }
    for (int k = 0; k < 3; k++) {
        printf("%-13s optimum found %2d/10 within %d evaluations; evaluations to it:", label[k], found[k], BUDGET);
        for (int seed = 0; seed < SEEDS; seed++) printf(" %d", evals[k][seed]);
        printf("\n");
    }
    double med[3];
    for (int k = 0; k < 3; k++) {
        double v[SEEDS];
        for (int seed = 0; seed < SEEDS; seed++) v[seed] = evals[k][seed] > 0 ? evals[k][seed] : BUDGET + 1;
        med[k] = median(v, SEEDS);
    }
    printf("median evaluations to the optimum (%d: not found): ga %.1f, ga local %.1f, seeds %.1f\n", BUDGET + 1,
           med[0], med[1], med[2]);
    CHECK_EQ_INT(found[1], 10);
    CHECK(found[0] <= 7);
    CHECK(med[1] < 0.7 * med[0]);
    CHECK(med[1] < 0.7 * med[2]);
    evo_space_free(s);
}

static bool list_has(const evo_space *s, const evo_genome_list *l, int from, int to, const char *text)
{
    evo_genome g;
    CHECK(evo_genome_parse(s, text, &g, NULL) == EVO_OK);
    for (int i = from; i < to && i < l->n; i++)
        if (evo_genome_equal(s, &l->g[i], &g)) return true;
    return false;
}

static int list_index(const evo_space *s, const evo_genome_list *l, const char *text)
{
    evo_genome g;
    CHECK(evo_genome_parse(s, text, &g, NULL) == EVO_OK);
    for (int i = 0; i < l->n; i++)
        if (evo_genome_equal(s, &l->g[i], &g)) return i;
    return -1;
}

/* One knob moved, adjacent values first; a move that breaks P + Q <= 6 is repaired by moving the other knob the
 * constraint names, nearest values first. */
static void test_neighbours(void)
{
    evo_space *s = small_space();
    evo_genome g;
    evo_genome_list l = {0};
    CHECK(evo_genome_parse(s, "P=2,Q=2,R=16", &g, NULL) == EVO_OK);
    evo_strategy_neighbours(s, &g, 1, &l);
    CHECK_EQ_INT(l.n, 8);
    static const char *const adjacent[] = {"P=1,Q=2,R=16", "P=3,Q=2,R=16", "P=2,Q=1,R=16",
                                           "P=2,Q=3,R=16", "P=2,Q=2,R=8",  "P=2,Q=2,R=32"};
    for (int i = 0; i < 6; i++) CHECK(list_has(s, &l, 0, 6, adjacent[i]));
    CHECK(list_has(s, &l, 6, 8, "P=4,Q=2,R=16"));
    CHECK(list_has(s, &l, 6, 8, "P=2,Q=4,R=16"));

    /* P=3,Q=3: P -> 4 breaks the constraint, repaired to Q=2 then Q=1; likewise Q -> 4 */
    CHECK(evo_genome_parse(s, "P=3,Q=3,R=8", &g, NULL) == EVO_OK);
    evo_strategy_neighbours(s, &g, 1, &l);
    CHECK_EQ_INT(l.n, 10);
    static const char *const near[] = {"P=2,Q=3,R=8", "P=4,Q=2,R=8", "P=4,Q=1,R=8", "P=3,Q=2,R=8",
                                       "P=2,Q=4,R=8", "P=1,Q=4,R=8", "P=3,Q=3,R=16"};
    for (int i = 0; i < 7; i++) CHECK(list_has(s, &l, 0, 7, near[i]));
    static const char *const far[] = {"P=1,Q=3,R=8", "P=3,Q=1,R=8", "P=3,Q=3,R=32"};
    for (int i = 0; i < 3; i++) CHECK(list_has(s, &l, 7, 10, far[i]));
    CHECK_EQ_INT(list_index(s, &l, "P=4,Q=1,R=8"), list_index(s, &l, "P=4,Q=2,R=8") + 1);
    CHECK_EQ_INT(list_index(s, &l, "P=1,Q=4,R=8"), list_index(s, &l, "P=2,Q=4,R=8") + 1);

    /* the order is fixed by (seed, genome): the same twice, and some other seed orders it differently */
    evo_genome_list a = {0};
    evo_strategy_neighbours(s, &g, 1, &a);
    CHECK(a.n == l.n && memcmp(a.g, l.g, sizeof *a.g * (size_t)a.n) == 0);
    bool differs = false;
    for (uint64_t seed = 2; seed < 10 && !differs; seed++) {
        evo_strategy_neighbours(s, &g, seed, &a);
        differs = memcmp(a.g, l.g, sizeof *a.g * (size_t)a.n) != 0;
    }
    CHECK(differs);
    free(a.g);
    free(l.g);
    evo_space_free(s);
}

/* Fitness on the small space with no ties: P counts most, then Q, then R. Optimum P=4,Q=2,R=32. */
static evo_verdict tilted_fitness(const evo_space *s, const evo_genome *g, double *fitness)
{
    *fitness = exp(0.1 * evo_genome_get(s, g, "P", 0) + 0.0731 * evo_genome_get(s, g, "Q", 0) +
                   0.00917 * evo_genome_get(s, g, "R", 0));
    return EVO_V_OK;
}

static bool same_genome(const evo_space *s, const evo_genome *g, const char *text)
{
    evo_genome t;
    CHECK(evo_genome_parse(s, text, &t, NULL) == EVO_OK);
    return evo_genome_equal(s, g, &t);
}

/* "seeds": the baseline and seeds alone with a population that holds just them; with more room their neighbours
 * in turn; then the neighbours of the best measured genome; the optimum of the small space in 3 generations. */
static void test_seeds_strategy(void)
{
    evo_space *s = small_space();
    evo_genome base, seeds[3];
    CHECK(evo_genome_parse(s, "P=1,Q=1,R=8", &base, NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "P=2,Q=2,R=16", &seeds[0], NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "P=1,Q=1,R=8", &seeds[1], NULL) == EVO_OK); /* the baseline again */
    CHECK(evo_genome_parse(s, "P=1,Q=4,R=32", &seeds[2], NULL) == EVO_OK);
    evo_strategy_params p = landscape_params(9, &base);
    p.seeds = seeds;
    p.n_seeds = 3;

    /* seeds only: one generation of 3 is the baseline and the two new seeds */
    p.population = 3;
    search only = run_search("seeds", s, &p, 1 << 30, NULL, (loop_opts){false, 1, tilted_fitness});
    CHECK_EQ_INT(only.n_log, 3);
    CHECK_EQ_INT(only.log[0].op, EVO_OP_BASELINE);
    CHECK_EQ_INT(only.log[1].op, EVO_OP_SEED);
    CHECK_EQ_INT(only.log[2].op, EVO_OP_SEED);
    CHECK(same_genome(s, &only.log[1].genome, "P=2,Q=2,R=16"));
    CHECK(same_genome(s, &only.log[2].genome, "P=1,Q=4,R=32"));
    free(only.log);

    /* population 8: then neighbours of the seeds and of the baseline, one each in turn */
    p.population = 8;
    search r = run_search("seeds", s, &p, 1 << 30, NULL, (loop_opts){false, 3, tilted_fitness});
    CHECK_EQ_INT(r.n_log, 24);
    CHECK_EQ_INT(r.duplicates, 0);
    CHECK_EQ_INT(r.invalid, 0);
    CHECK_EQ_INT(r.bad_provenance, 0);
    static const int start_of[] = {1, 2, 0, 1, 2}; /* proposals 3..7: parents seed 0, seed 2, baseline, ... */
    const evo_genome *starts[] = {&base, &seeds[0], &seeds[2]};
    for (int i = 3; i < 8; i++) {
        CHECK_EQ_INT(r.log[i].op, EVO_OP_NEIGHBOUR);
        CHECK(evo_genome_equal(s, &r.log[i].parents[0], starts[start_of[i - 3]]));
    }
    /* generation 1: every proposal a neighbour of the best of generation 0 while it has unseen ones */
    double best = 0;
    int best_i = 0;
    for (int i = 0; i < 8; i++) {
        double f;
        tilted_fitness(s, &r.log[i].genome, &f);
        if (f > best) best = f, best_i = i;
    }
    evo_genome_list nb = {0};
    evo_strategy_neighbours(s, &r.log[best_i].genome, p.seed, &nb);
    int unseen = 0;
    for (int j = 0; j < nb.n; j++) {
        bool seen = false;
        for (int i = 0; i < 8; i++) seen |= evo_genome_equal(s, &nb.g[j], &r.log[i].genome);
        unseen += !seen;
    }
    CHECK(unseen >= 1);
    for (int i = 8; i < 8 + unseen && i < 16; i++) {
        CHECK_EQ_INT(r.log[i].op, EVO_OP_NEIGHBOUR);
        CHECK(evo_genome_equal(s, &r.log[i].parents[0], &r.log[best_i].genome));
    }
    free(nb.g);
    /* hill climbing reaches the optimum P=4,Q=2,R=32 */
    int at = -1;
    for (int i = 0; i < r.n_log && at < 0; i++)
        if (same_genome(s, &r.log[i].genome, "P=4,Q=2,R=32")) at = i;
    printf("seeds strategy: optimum of the small space at proposal %d of %d\n", at + 1, r.n_log);
    CHECK(at >= 8 && at < 16);
    free(r.log);

    /* no start genome at all: random genomes, then neighbours of the best */
    evo_strategy_params q = landscape_params(9, NULL);
    q.population = 8;
    search z = run_search("seeds", s, &q, 1 << 30, NULL, (loop_opts){false, 2, tilted_fitness});
    CHECK_EQ_INT(z.n_log, 16);
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(z.log[i].op, EVO_OP_RANDOM);
    CHECK_EQ_INT(z.log[8].op, EVO_OP_NEIGHBOUR);
    free(z.log);
    evo_space_free(s);
}

/* The GA's local children: generation 0 gives local_rate of its free slots to the seeds' and earlier elites'
 * neighbours, in turn; later about local_rate of the children are the elites' neighbours. */
static void test_ga_local(void)
{
    evo_space *s = landscape_space();
    evo_genome base, seeds[2], elites[2];
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &base, NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=5,B=5,C=32,D=y,E=0,F=2", &seeds[0], NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=1,B=1,C=16,D=x,E=0,F=1", &seeds[1], NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=6,B=6,C=64,D=w,E=1,F=4", &elites[0], NULL) == EVO_OK);
    CHECK(evo_genome_parse(s, "A=10,B=10,C=64,D=w,E=1,F=4", &elites[1], NULL) == EVO_OK); /* invalid */
    evo_strategy_params p = landscape_params(21, &base);
    p.seeds = seeds;
    p.n_seeds = 2;
    p.prior_elites = elites;
    p.n_prior_elites = 2;
    p.local_rate = 0.5;
    search r = run_search("ga", s, &p, 1 << 30, NULL, (loop_opts){false, 30, NULL});
    CHECK_EQ_INT(r.n_log, 20 + 29 * 18);
    CHECK_EQ_INT(r.duplicates, 0);
    CHECK_EQ_INT(r.invalid, 0);
    CHECK_EQ_INT(r.bad_provenance, 0);
    /* generation 0: baseline, seed, elite; 17 slots left, 9 of them (0.5 x 17, rounded) neighbours of the seed
     * and the elite in turn, then 8 random */
    CHECK_EQ_INT(r.log[0].op, EVO_OP_BASELINE);
    CHECK_EQ_INT(r.log[1].op, EVO_OP_SEED);
    CHECK_EQ_INT(r.log[2].op, EVO_OP_ELITE);
    for (int i = 3; i < 12; i++) {
        CHECK_EQ_INT(r.log[i].op, EVO_OP_NEIGHBOUR);
        CHECK(evo_genome_equal(s, &r.log[i].parents[0], i % 2 ? &seeds[0] : &elites[0]));
    }
    for (int i = 12; i < 20; i++) CHECK_EQ_INT(r.log[i].op, EVO_OP_RANDOM);
    int count[EVO_OP_COUNT] = {0};
    for (int i = 20; i < r.n_log; i++) count[r.log[i].op]++;
    printf("operators of generations 1-29 with local_rate 0.5:");
    for (int i = 0; i < EVO_OP_COUNT; i++) printf(" %s %d", evo_operator_name((evo_operator)i), count[i]);
    printf("\n");
    /* 522 children, each local with probability 0.5 while the 2 elites have unseen neighbours (about 30 each): once
     * the elites settle, their neighbourhoods run out and breeding takes over (112 with this seed) */
    int gen1 = 0;
    for (int i = 20; i < 38; i++) gen1 += r.log[i].op == EVO_OP_NEIGHBOUR;
    CHECK(gen1 >= 5 && gen1 <= 13); /* 18 children, binomial(18, 0.5): 9 expected */
    CHECK(count[EVO_OP_NEIGHBOUR] > 80 && count[EVO_OP_NEIGHBOUR] < 261);
    CHECK(count[EVO_OP_CROSSOVER] + count[EVO_OP_CROSSOVER_MUTATION] > 100);
    free(r.log);

    /* local_rate 0 is the plain GA, draw for draw */
    p.local_rate = 0;
    search a = run_search("ga", s, &p, 1 << 30, NULL, (loop_opts){false, 10, NULL});
    for (int i = 0; i < a.n_log; i++) CHECK(a.log[i].op != EVO_OP_NEIGHBOUR);
    CHECK_EQ_INT(a.log[3].op, EVO_OP_RANDOM);
    free(a.log);
    evo_space_free(s);
}

/* ---- insights ---- */

/* K: 1..5, L: 1..3, no constraints. */
static evo_space *insight_space(void)
{
    evo_space *s;
    static const int k[] = {1, 2, 3, 4, 5}, l[] = {1, 2, 3};
    CHECK(evo_space_new(&s) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "K", k, 5, NULL) == EVO_OK);
    CHECK(evo_space_add_int_knob(s, "L", l, 3, NULL) == EVO_OK);
    return s;
}

static evo_genome kl(int k, int l)
{
    evo_genome g;
    memset(&g, 0, sizeof g);
    g.idx[0] = (uint8_t)k;
    g.idx[1] = (uint8_t)l;
    return g;
}

static double draw_frequency(const evo_space *s, const evo_insights *ins, int cur, int target, int draws)
{
    evo_rng rng;
    evo_rng_seed(&rng, 99);
    int hits = 0, stayed = 0;
    for (int i = 0; i < draws; i++) {
        int v = evo_mutate_value(s, ins, 0, cur, &rng);
        stayed += v == cur;
        hits += v == target;
    }
    CHECK_EQ_INT(stayed, 0);
    return (double)hits / draws;
}

/* A re-timing that makes an elite fail or regress (ops->refresh) takes it out of the elites: with one elite slot,
 * the next OK result takes the slot and the local children are its neighbours, not the stale elite's. */
static void test_ga_refresh_drops_failed_elite(void)
{
    evo_space *s = insight_space();
    evo_strategy_params p;
    evo_strategy_params_default(&p);
    p.seed = 5;
    p.population = 3;
    p.elites = 1;
    p.local_rate = 1.0;
    p.immigrant_rate = 0;
    evo_strategy *st;
    evo_err err = {0};
    CHECK(evo_strategy_create("ga", s, &p, &st, &err) == EVO_OK);
    evo_proposal out[8];
    int n = 0;
    CHECK(evo_strategy_propose(st, out, 3, &n, &err) == EVO_OK);
    CHECK_EQ_INT(n, 3);
    /* generation 0: the first proposal is the elite (fitness 2), the others fail */
    evo_observation obs[3];
    for (int i = 0; i < n; i++)
        obs[i] = (evo_observation){.genome = out[i].genome,
                                   .verdict = i ? EVO_V_INCORRECT : EVO_V_OK,
                                   .fitness = i ? NAN : 2.0,
                                   .fitness_lo = NAN,
                                   .fitness_hi = NAN};
    const evo_genome old_elite = out[0].genome;
    evo_strategy_observe(st, obs, n);
    CHECK(evo_strategy_propose(st, out, 2, &n, &err) == EVO_OK);
    CHECK_EQ_INT(n, 2);
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(out[i].op, EVO_OP_NEIGHBOUR);
        CHECK(evo_genome_equal(s, &out[i].parents[0], &old_elite));
    }
    /* the elite's re-timing failed; generation 1's first child is OK at 1.5 */
    evo_observation re = {
        .genome = old_elite, .verdict = EVO_V_CRASHED, .fitness = NAN, .fitness_lo = NAN, .fitness_hi = NAN};
    evo_strategy_refresh(st, &re, 1);
    for (int i = 0; i < n; i++)
        obs[i] = (evo_observation){.genome = out[i].genome,
                                   .verdict = i ? EVO_V_INCORRECT : EVO_V_OK,
                                   .fitness = i ? NAN : 1.5,
                                   .fitness_lo = NAN,
                                   .fitness_hi = NAN};
    const evo_genome new_elite = out[0].genome;
    evo_strategy_observe(st, obs, n);
    CHECK(evo_strategy_propose(st, out, 2, &n, &err) == EVO_OK);
    CHECK(n >= 1);
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(out[i].op, EVO_OP_NEIGHBOUR);
        CHECK(evo_genome_equal(s, &out[i].parents[0], &new_elite));
    }
    evo_strategy_destroy(st);
    evo_space_free(s);
}

/* K=4 (index 3) always fails: mutation from K=3 to it drops from the neighbour rate 0.375 to ~0.029, not 0. */
static void test_insights_failing_value(void)
{
    evo_space *s = insight_space();
    evo_insights *ins = evo_insights_new(s);
    for (int i = 0; i < 30; i++) {
        evo_genome g = kl(i % 5, i % 3);
        bool fails = i % 5 == 3;
        evo_insights_add(ins, &g, fails ? EVO_V_INCORRECT : EVO_V_OK, fails ? NAN : 1.0);
    }
    CHECK_EQ_INT(evo_insights_total(ins), 30);
    evo_insight_stat st = evo_insights_stat(ins, 0, 3);
    CHECK_EQ_INT(st.n, 6);
    CHECK_EQ_INT(st.n_fail, 6);
    CHECK_EQ_INT(st.n_timed, 0);
    st = evo_insights_stat(ins, 1, 0); /* L=1: i = 0, 3, ..., 27; K=4 among them at i = 3, 18 */
    CHECK_EQ_INT(st.n, 10);
    CHECK_EQ_INT(st.n_fail, 2);
    CHECK_NEAR(evo_insights_weight(ins, 0, 3), EVO_INSIGHTS_FLOOR, 0);
    CHECK_NEAR(evo_insights_weight(ins, 0, 2), 1.0, 1e-12);
    CHECK_NEAR(evo_insights_weight(ins, 1, 0), 0.8, 1e-12);

    double p[EVO_MAX_DOMAIN];
    evo_mutate_probabilities(s, NULL, 0, 2, p);
    CHECK_NEAR(p[1], 0.375, 1e-12);
    CHECK_NEAR(p[3], 0.375, 1e-12);
    CHECK_NEAR(p[0], 0.125, 1e-12);
    CHECK_NEAR(p[4], 0.125, 1e-12);
    CHECK_NEAR(p[2], 0.0, 0);
    evo_mutate_probabilities(s, ins, 0, 2, p);
    double expect = 0.375 * 0.05 / (0.375 * 0.05 + 0.375 + 0.25);
    CHECK_NEAR(p[3], expect, 1e-12); /* 0.0291262 */
    CHECK_NEAR(p[1], 0.375 / (0.375 * 0.05 + 0.375 + 0.25), 1e-12);

    enum { DRAWS = 200000 };
    double off = draw_frequency(s, NULL, 2, 3, DRAWS);
    double on = draw_frequency(s, ins, 2, 3, DRAWS);
    printf("mutation K=3 -> K=4: insights off %.4f, on %.4f\n", off, on);
    CHECK_NEAR(off, 0.375, 0.005);
    CHECK(on < 0.035);
    CHECK(on > 0.023);
    /* from the edge: the one neighbour takes 0.75, the three others 0.25 / 3 each */
    CHECK_NEAR(draw_frequency(s, NULL, 0, 1, DRAWS), 0.75, 0.005);
    CHECK_NEAR(draw_frequency(s, NULL, 0, 4, DRAWS), 0.25 / 3, 0.005);
    /* a one-value knob cannot move */
    evo_space *one;
    static const int v1[] = {7};
    CHECK(evo_space_new(&one) == EVO_OK);
    CHECK(evo_space_add_int_knob(one, "Z", v1, 1, NULL) == EVO_OK);
    evo_rng rng;
    evo_rng_seed(&rng, 1);
    CHECK_EQ_INT(evo_mutate_value(one, NULL, 0, 0, &rng), 0);
    evo_space_free(one);
    evo_insights_free(ins);
    evo_space_free(s);
}

/* Mean log speedup moves weights both ways; too few observations give no opinion; verdict classes; order. */
static void test_insights_speedup(void)
{
    evo_space *s = insight_space();
    evo_insights *a = evo_insights_new(s), *b = evo_insights_new(s);
    evo_genome gs[25];
    double fs[25];
    for (int i = 0; i < 25; i++) {
        gs[i] = kl(i % 5, i % 3);
        fs[i] = (i % 5 == 4 ? 1.2 : 1.0) * (1.0 + 1e-3 * (i % 7)); /* K=5 is 20% faster */
    }
    for (int i = 0; i < 25; i++) evo_insights_add(a, &gs[i], EVO_V_OK, fs[i]);
    for (int i = 24; i >= 0; i--) evo_insights_add(b, &gs[i], EVO_V_OK, fs[i]);
    double overall = 0, fast = 0, slow = 0;
    for (int i = 0; i < 25; i++) {
        overall += log(fs[i]) / 25;
        if (i % 5 == 4) fast += log(fs[i]) / 5;
        if (i % 5 == 0) slow += log(fs[i]) / 5;
    }
    double w_fast = evo_insights_weight(a, 0, 4), w_slow = evo_insights_weight(a, 0, 0);
    printf("weights: K=5 %.4f, K=1 %.4f\n", w_fast, w_slow);
    CHECK_NEAR(w_fast, exp(EVO_INSIGHTS_BETA * (fast - overall)), 1e-6); /* ~1.79 */
    CHECK_NEAR(w_slow, exp(EVO_INSIGHTS_BETA * (slow - overall)), 1e-6); /* ~0.86 */
    CHECK(w_fast > 1.7 && w_fast < 1.9);
    CHECK(w_slow > 0.8 && w_slow < 0.9);
    for (int k = 0; k < 2; k++)
        for (int v = 0; v < evo_space_domain_size(s, k); v++) {
            CHECK(evo_insights_weight(a, k, v) == evo_insights_weight(b, k, v));
            CHECK(evo_insights_stat(a, k, v).sum_log == evo_insights_stat(b, k, v).sum_log);
        }

    evo_insights *c = evo_insights_new(s);
    evo_genome g = kl(1, 1);
    evo_insights_add(c, &g, EVO_V_CRASHED, NAN);
    evo_insights_add(c, &g, EVO_V_COMPILE_FAIL, NAN);
    CHECK_NEAR(evo_insights_weight(c, 0, 1), 1.0, 0); /* 2 < EVO_INSIGHTS_MIN_OBS: no opinion */
    evo_insights_add(c, &g, EVO_V_SLOW, NAN);
    evo_insights_add(c, &g, EVO_V_REGRESSED, 0.5);
    evo_insight_stat st = evo_insights_stat(c, 0, 1);
    CHECK_EQ_INT(st.n, 4);
    CHECK_EQ_INT(st.n_fail, 2);
    CHECK_EQ_INT(st.n_timed, 1);
    CHECK_NEAR(st.sum_log, log(0.5), 1e-9);
    CHECK_NEAR(evo_insights_weight(c, 0, 1), 0.5, 1e-12);
    CHECK_NEAR(evo_insights_weight(NULL, 0, 1), 1.0, 0);

    evo_insights_add_stored("K=3, L=2", EVO_V_OK, 1.5, c);
    evo_insights_add_stored("K=9,L=1", EVO_V_OK, 1.5, c);
    evo_insights_add_stored("M=1", EVO_V_INCORRECT, NAN, c);
    CHECK_EQ_INT(evo_insights_total(c), 5);
    CHECK_EQ_INT(evo_insights_skipped(c), 2);
    CHECK_EQ_INT(evo_insights_stat(c, 0, 2).n_timed, 1);
    evo_insights_free(a);
    evo_insights_free(b);
    evo_insights_free(c);
    evo_space_free(s);
}

static void test_insights_format(void)
{
    evo_space *s = insight_space();
    evo_insights *ins = evo_insights_new(s);
    for (int i = 0; i < 30; i++) {
        evo_genome g = kl(i % 5, i % 3);
        bool fails = i % 5 == 3;
        evo_insights_add(ins, &g, fails ? EVO_V_INCORRECT : EVO_V_OK, fails ? NAN : (i % 5 == 4 ? 2.0 : 1.0));
    }
    evo_insights_add_stored("K=6,L=1", EVO_V_OK, 1.0, ins);
    evo_str text = {0};
    evo_insights_format(ins, false, &text);
    printf("%s", evo_str_cstr(&text));
    CHECK_CONTAINS(evo_str_cstr(&text), "30 evaluations (1 more skipped: genome not in this space)");
    CHECK_CONTAINS(evo_str_cstr(&text), "knob  value       n  fail rate   timed  mean log speedup  weight\n");
    CHECK_CONTAINS(evo_str_cstr(&text), "K     4           6     100.0%       0                 -   0.050\n");
    CHECK_CONTAINS(evo_str_cstr(&text), "K     5           6       0.0%       6           +0.6931   8.000\n");
    evo_str_free(&text);

    evo_str js = {0};
    evo_insights_format(ins, true, &js);
    cJSON *root = cJSON_Parse(evo_str_cstr(&js));
    CHECK(root != NULL);
    if (root) {
        CHECK_EQ_INT(cJSON_GetObjectItem(root, "evaluations")->valueint, 30);
        CHECK_EQ_INT(cJSON_GetObjectItem(root, "skipped")->valueint, 1);
        cJSON *values = cJSON_GetObjectItem(root, "values");
        CHECK_EQ_INT(cJSON_GetArraySize(values), 8);
        cJSON *k4 = cJSON_GetArrayItem(values, 3);
        CHECK_STR(cJSON_GetObjectItem(k4, "knob")->valuestring, "K");
        CHECK_STR(cJSON_GetObjectItem(k4, "value")->valuestring, "4");
        CHECK_EQ_INT(cJSON_GetObjectItem(k4, "n")->valueint, 6);
        CHECK_NEAR(cJSON_GetObjectItem(k4, "fail_rate")->valuedouble, 1.0, 0);
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(k4, "mean_log_speedup")));
        CHECK_NEAR(cJSON_GetObjectItem(k4, "weight")->valuedouble, 0.05, 1e-12);
        cJSON *l3 = cJSON_GetArrayItem(values, 7);
        CHECK_STR(cJSON_GetObjectItem(l3, "knob")->valuestring, "L");
        CHECK_STR(cJSON_GetObjectItem(l3, "value")->valuestring, "3");
        CHECK_EQ_INT(cJSON_GetObjectItem(l3, "failed")->valueint, 2);
        cJSON_Delete(root);
    }
    evo_str_free(&js);
    evo_insights_free(ins);
    evo_space_free(s);
}

/* The genome set across growth, and random_unseen down to the last genome. */
static void test_genome_set_and_unseen(void)
{
    evo_space *s = landscape_space();
    evo_genome_set *set = evo_genome_set_new(s);
    evo_rng rng;
    evo_rng_seed(&rng, 4);
    int added = 0;
    for (int i = 0; i < 3000; i++) {
        evo_genome g;
        CHECK(evo_strategy_random_unseen(s, set, &rng, &g));
        CHECK(evo_space_valid(s, &g, NULL));
        added += evo_genome_set_add(set, &g);
    }
    CHECK_EQ_INT(added, 3000);
    CHECK_EQ_INT(evo_genome_set_count(set), 3000);
    evo_genome_set_free(set);
    evo_space_free(s);

    s = small_space();
    set = evo_genome_set_new(s);
    for (int i = 0; i < 39; i++) {
        evo_genome g;
        CHECK(evo_strategy_random_unseen(s, set, &rng, &g));
        CHECK(evo_genome_set_add(set, &g));
    }
    evo_genome g;
    CHECK(!evo_strategy_random_unseen(s, set, &rng, &g));
    evo_genome_set_free(set);
    evo_space_free(s);
}

/* configs/hopper.yaml's conditional space: 1000 mutations of a FAMILY=1 genome move only its active knobs. A child
 * still of family 1 lists no family-0 knob (its family-0 slots stay at index 0); one whose FAMILY moved to 0 has
 * family-0 knobs drawn afresh and no H_ knob. Then a GA over the space: every proposal canonical, none twice. */
static void test_conditional_mutation(void)
{
    evo_config *cfg = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_config_load(EVO_SOURCE_DIR "/configs/hopper.yaml", &cfg, &err), EVO_OK);
    if (!cfg) return;
    const evo_space *s = cfg->space;
    const int family = evo_space_find_knob(s, "FAMILY"), first_h = evo_space_find_knob(s, "H_WG_ROWS");
    evo_genome g;
    CHECK_EQ_INT(evo_genome_parse(s,
                                  "FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=128,H_STAGES=4,H_PIPE=2,H_QK_MODE=1,"
                                  "H_V_PATH=0,H_OVERLAP=1,H_PINGPONG=1,H_O_ACC=0,H_PRODUCER_REGS=40,H_PERSIST=0",
                                  &g, &err),
                 EVO_OK);
    evo_rng rng;
    evo_rng_seed(&rng, 11);
    int stayed = 0, flipped = 0, family0_in_f1 = 0, moved_h[EVO_MAX_KNOBS] = {0};
    for (int i = 0; i < 1000; i++) {
        evo_genome m = g;
        evo_genome_mutate(s, NULL, &m, 0.2, &rng);
        CHECK(evo_genome_is_canonical(s, &m));
        char text[EVO_GENOME_TEXT_MAX];
        evo_genome_format(s, &m, text, sizeof text);
        if (m.idx[family] == g.idx[family]) {
            stayed++;
            for (int k = 0; k < family; k++) family0_in_f1 += m.idx[k] != 0;
            family0_in_f1 += strstr(text, "TILE_M") != NULL;
            for (int k = first_h; k < evo_space_n_knobs(s); k++) moved_h[k] += m.idx[k] != g.idx[k];
        } else {
            flipped++;
            CHECK(strncmp(text, "TILE_M=", 7) == 0);
            CHECK(strstr(text, "H_") == NULL);
        }
    }
    CHECK_EQ_INT(family0_in_f1, 0);
    CHECK_EQ_INT(stayed + flipped, 1000);
    CHECK(flipped > 150 && flipped < 250); /* FAMILY (two values) moves with probability 0.2 */
    for (int k = first_h; k < evo_space_n_knobs(s); k++) CHECK(moved_h[k] > 0);

    evo_strategy_params p = {.population = 16,
                             .elites = 2,
                             .tournament = 3,
                             .crossover_rate = 0.7,
                             .mutation_rate = 0.2,
                             .immigrant_rate = 0.1,
                             .local_rate = 0.5,
                             .seed = 5,
                             .baseline = &cfg->baseline,
                             .seeds = cfg->seeds,
                             .n_seeds = cfg->n_seeds};
    evo_strategy *st = NULL;
    CHECK_EQ_INT(evo_strategy_create("ga", s, &p, &st, &err), EVO_OK);
    evo_genome_set *all = evo_genome_set_new(s);
    evo_proposal out[16];
    evo_observation obs[16];
    int total = 0, dup = 0, fam1 = 0;
    for (int gen = 0; st && gen < 6; gen++) {
        int n = 0;
        CHECK_EQ_INT(evo_strategy_propose(st, out, 16, &n, &err), EVO_OK);
        for (int i = 0; i < n; i++) {
            CHECK(evo_genome_is_canonical(s, &out[i].genome));
            CHECK(evo_space_valid(s, &out[i].genome, NULL));
            dup += !evo_genome_set_add(all, &out[i].genome);
            fam1 += out[i].genome.idx[family] == 1;
            /* a made-up fitness: family 1 with more consumers is better */
            obs[i] = (evo_observation){.genome = out[i].genome,
                                       .verdict = EVO_V_OK,
                                       .fitness =
                                           1.0 + 0.1 * out[i].genome.idx[family] * (1 + out[i].genome.idx[first_h + 1]),
                                       .fitness_lo = NAN,
                                       .fitness_hi = NAN};
        }
        evo_strategy_observe(st, obs, n);
        total += n;
    }
    CHECK_EQ_INT(dup, 0);
    CHECK(total >= 80);
    CHECK(fam1 > 0 && fam1 < total);
    evo_genome_set_free(all);
    evo_strategy_destroy(st);
    evo_config_free(cfg);
}

int main(void)
{
    test_filtered_space();
    test_conditional_mutation();
    test_lookup_and_params();
    test_landscape_optimum();
    test_determinism();
    test_observation_order();
    test_resume_replay();
    test_no_duplicates_until_exhausted();
    test_ga_proposals();
    test_ga_beats_random();
    test_neighbours();
    test_seeds_strategy();
    test_ga_local();
    test_ga_refresh_drops_failed_elite();
    test_local_on_landscape();
    test_insights_failing_value();
    test_insights_speedup();
    test_insights_format();
    test_genome_set_and_unseen();
    return check_result();
}
