/* test_space.c — the search space: counts of a small space worked out by hand, constraint evaluation, genome text
 * round trip and its errors, hash stability, random genomes. Run: ctest -R test_space (or build/tests/test_space).
 */
#include "check.h"
#include "space.h"

#include <stdlib.h>
#include <string.h>

/* A in {1,2,3,4}, B in {2,4,8}, C in {fma, mma}, D in {0,1}: 48 genomes.
 * "B % A == 0" keeps the (A,B) pairs 1:2,4,8  2:2,4,8  4:4,8 (A=3 divides none) = 8 pairs;
 * "C == mma || D == 0" keeps (C,D) = (fma,0), (mma,0), (mma,1) = 3; together 8 * 3 = 24 genomes;
 * "A * B <= 16" also drops the pair (4,8): 7 * 3 = 21. */
static evo_space *small_space(int n_constraints)
{
    evo_space *s;
    evo_err err = {0};
    CHECK_EQ_INT(evo_space_new(&s), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "A", (const int[]){1, 2, 3, 4}, 4, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "B", (const int[]){2, 4, 8}, 3, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_enum_knob(s, "C", (const char *const[]){"fma", "mma"}, 2, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "D", (const int[]){0, 1}, 2, &err), EVO_OK);
    const char *cons[] = {"B % A == 0", "C == mma || D == 0", "A * B <= 16"};
    for (int i = 0; i < n_constraints; i++) CHECK_EQ_INT(evo_space_add_constraint(s, cons[i], &err), EVO_OK);
    return s;
}

static void genome(const evo_space *s, const char *text, evo_genome *g)
{
    evo_err err = {0};
    evo_status st = evo_genome_parse(s, text, g, &err);
    if (st != EVO_OK) fprintf(stderr, "parse '%s': %s\n", text, err.msg);
    CHECK_EQ_INT(st, EVO_OK);
}

static void test_knobs(void)
{
    evo_space *s = small_space(0);
    CHECK_EQ_INT(evo_space_n_knobs(s), 4);
    CHECK_STR(evo_space_knob_name(s, 2), "C");
    CHECK(evo_space_knob_is_enum(s, 2));
    CHECK(!evo_space_knob_is_enum(s, 1));
    CHECK_EQ_INT(evo_space_domain_size(s, 1), 3);
    CHECK_EQ_INT(evo_space_find_knob(s, "D"), 3);
    CHECK_EQ_INT(evo_space_find_knob(s, "E"), -1);
    CHECK_EQ_INT(evo_space_value(s, 1, 2), 8);
    CHECK_EQ_INT(evo_space_value(s, 2, 1), 1);
    CHECK_STR(evo_space_value_text(s, 1, 2), "8");
    CHECK_STR(evo_space_value_text(s, 2, 1), "mma");

    evo_err err = {0};
    CHECK_EQ_INT(evo_space_add_int_knob(s, "A", (const int[]){1}, 1, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'A' declared twice");
    CHECK_EQ_INT(evo_space_add_int_knob(s, "E", (const int[]){1, 2, 1}, 3, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'E': value 1 appears twice");
    CHECK_EQ_INT(evo_space_add_int_knob(s, "E", NULL, 0, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'E': empty domain");
    CHECK_EQ_INT(evo_space_add_int_knob(s, "2E", (const int[]){1}, 1, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob name '2E' is not an identifier");
    CHECK_EQ_INT(evo_space_add_enum_knob(s, "E", (const char *const[]){"x", "x"}, 2, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'E': value 'x' appears twice");
    CHECK_EQ_INT(evo_space_add_enum_knob(s, "E", (const char *const[]){"x", "a-b"}, 2, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'E': value 'a-b' is not an identifier");
    CHECK_EQ_INT(evo_space_n_knobs(s), 4); /* failed additions leave the space as it was */
    evo_space_free(s);
}

static void test_counts(void)
{
    static const uint64_t want[] = {48, 32, 24, 21}; /* by constraint count; see small_space() */
    for (int n = 0; n <= 3; n++) {
        evo_space *s = small_space(n);
        uint64_t total = 0, valid = 0;
        bool exact = false;
        CHECK_EQ_INT(evo_space_count(s, 1000000, &total, &valid, &exact, NULL), EVO_OK);
        CHECK_EQ_INT(total, 48);
        CHECK_EQ_INT(valid, want[n]);
        CHECK(exact);
        evo_space_free(s);
    }
}

typedef struct {
    int n;
    char first[64], last[64];
    const evo_space *s;
    int stop_after;
} visit_ctx;

static int visit(const evo_genome *g, void *ctx)
{
    visit_ctx *v = ctx;
    CHECK(evo_space_valid(v->s, g, NULL));
    evo_genome_format(v->s, g, v->n == 0 ? v->first : v->last, 64);
    if (v->n == 0) strcpy(v->last, v->first);
    v->n++;
    return v->stop_after && v->n == v->stop_after;
}

static void test_foreach(void)
{
    evo_space *s = small_space(3);
    visit_ctx v = {.s = s};
    evo_space_foreach_valid(s, visit, &v);
    CHECK_EQ_INT(v.n, 21);
    CHECK_STR(v.first, "A=1,B=2,C=fma,D=0");
    CHECK_STR(v.last, "A=4,B=4,C=mma,D=1");
    visit_ctx w = {.s = s, .stop_after = 5};
    evo_space_foreach_valid(s, visit, &w);
    CHECK_EQ_INT(w.n, 5);
    CHECK_STR(w.last, "A=1,B=4,C=mma,D=0"); /* 1,2,{fma0,mma0,mma1} then 1,4,{fma0,mma0} */
    evo_space_free(s);
}

static void test_valid(void)
{
    evo_space *s = small_space(3);
    evo_genome g;
    const char *why = NULL;
    genome(s, "A=2,B=8,C=mma,D=1", &g);
    CHECK(evo_space_valid(s, &g, &why));
    genome(s, "A=3,B=8,C=mma,D=1", &g);
    CHECK(!evo_space_valid(s, &g, &why));
    CHECK_STR(why, "B % A == 0");
    genome(s, "A=2,B=8,C=fma,D=1", &g);
    CHECK(!evo_space_valid(s, &g, &why));
    CHECK_STR(why, "C == mma || D == 0");
    genome(s, "A=4,B=8,C=fma,D=0", &g);
    CHECK(!evo_space_valid(s, &g, &why));
    CHECK_STR(why, "A * B <= 16");
    CHECK_EQ_INT(evo_genome_get(s, &g, "B", -1), 8);
    CHECK_EQ_INT(evo_genome_get(s, &g, "C", -1), 0);
    CHECK_EQ_INT(evo_genome_get(s, &g, "nope", -1), -1);
    evo_space_free(s);

    /* A division by zero makes the constraint false, not the program crash. */
    evo_err err = {0};
    evo_space *z;
    evo_space_new(&z);
    evo_space_add_int_knob(z, "X", (const int[]){0, 1, 2, 3}, 4, &err);
    evo_space_add_int_knob(z, "Y", (const int[]){6, 7}, 2, &err);
    CHECK_EQ_INT(evo_space_add_constraint(z, "Y % X == 0", &err), EVO_OK);
    uint64_t total, valid;
    bool exact;
    CHECK_EQ_INT(evo_space_count(z, 1000, &total, &valid, &exact, &err), EVO_OK);
    CHECK_EQ_INT(total, 8);
    CHECK_EQ_INT(valid, 4); /* X=1: 6,7; X=2: 6; X=3: 6; X=0 never */
    genome(z, "X=0,Y=6", &g);
    CHECK(!evo_space_valid(z, &g, &why));
    evo_space_free(z);
}

static void test_constraint_errors(void)
{
    evo_space *s = small_space(1);
    evo_err err = {0};
    CHECK_EQ_INT(evo_space_add_constraint(s, "A + Q > 1", &err), EVO_E_CONFIG);
    CHECK_STR(err.msg, "constraint 2, column 5: unknown knob 'Q'");
    int col = 0;
    CHECK_EQ_INT(evo_space_add_constraint_ex(s, "A >> 1", &col, &err), EVO_E_CONFIG);
    CHECK_EQ_INT(col, 4);
    CHECK_STR(err.msg, "expected a number, a knob or '(', found '>'");
    CHECK_EQ_INT(evo_space_n_constraints(s), 1);
    CHECK_STR(evo_space_constraint_text(s, 0), "B % A == 0");

    /* An enum value name that two knobs give different indices cannot be resolved. */
    CHECK_EQ_INT(evo_space_add_enum_knob(s, "E", (const char *const[]){"mma", "x"}, 2, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_constraint(s, "C == mma", &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "'mma' is a value of more than one enumerated knob");
    CHECK_EQ_INT(evo_space_add_constraint(s, "E == x", &err), EVO_OK);
    evo_space_free(s);
}

static void test_text(void)
{
    evo_space *s = small_space(3);
    evo_genome g, h;
    genome(s, " D = 1 , C=mma,B=8 ,A=4", &g);
    char buf[64];
    CHECK_EQ_INT(evo_genome_format(s, &g, buf, sizeof buf), 17);
    CHECK_STR(buf, "A=4,B=8,C=mma,D=1");
    genome(s, buf, &h);
    CHECK(evo_genome_equal(s, &g, &h));
    CHECK_EQ_INT(g.idx[0], 3);
    CHECK_EQ_INT(g.idx[1], 2);
    CHECK_EQ_INT(g.idx[2], 1);
    CHECK_EQ_INT(g.idx[3], 1);
    char tiny[6];
    CHECK_EQ_INT(evo_genome_format(s, &g, tiny, sizeof tiny), 17); /* like snprintf */
    CHECK_STR(tiny, "A=4,B");

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"A=4,B=8,C=mma,Q=1", "unknown knob 'Q'"},
        {"A=5,B=8,C=mma,D=1", "knob 'A': value '5' is not in its domain (1, 2, 3, 4)"},
        {"A=4,B=8,C=tma,D=1", "knob 'C': value 'tma' is not in its domain (fma, mma)"},
        {"A=4,B=x8,C=mma,D=1", "knob 'B': value 'x8' is not an integer"},
        {"A=4,B=8,C=mma", "knob 'D' is missing"},
        {"A=4,B=8,A=1,C=mma,D=1", "knob 'A' given twice"},
        {"A=4,B,C=mma,D=1", "entry 'B' is not KNOB=VALUE"},
        {"A=4,B=,C=mma,D=1", "knob 'B' has no value"},
        {"A=4,,B=8,C=mma,D=1", "entry 2 is empty"},
        {"A=4,B=8,C=mma,D=1,", "entry 5 is empty"},
        {"", "genome is empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        evo_err err = {0};
        CHECK_EQ_INT(evo_genome_parse(s, bad[i].text, &h, &err), EVO_E_CONFIG);
        CHECK_CONTAINS(err.msg, bad[i].msg);
    }
    /* Parsing does not judge constraints: that is evo_space_valid's job (INVALID is a verdict, not an error). */
    genome(s, "A=3,B=2,C=fma,D=1", &h);
    evo_space_free(s);
}

static void test_hash(void)
{
    evo_space *s = small_space(3);
    evo_genome g;
    genome(s, "D=0,C=fma,B=2,A=1", &g);
    char hex[65];
    evo_genome_hash(s, &g, hex);
    /* SHA-256 of "A=1,B=2,C=fma,D=0" */
    CHECK_STR(hex, "1cc81455fdabb229f613a5cc76cc65130a13ac85d505a3258dced132e18d9201");
    evo_space_free(s);
}

static void test_random(void)
{
    evo_space *s = small_space(3);
    evo_rng r1, r2;
    evo_rng_seed(&r1, 7);
    evo_rng_seed(&r2, 7);
    int hits[4][3][2][2];
    memset(hits, 0, sizeof hits);
    for (int i = 0; i < 21000; i++) {
        evo_genome a, b;
        CHECK_EQ_INT(evo_space_random(s, &r1, &a, NULL), EVO_OK);
        CHECK_EQ_INT(evo_space_random(s, &r2, &b, NULL), EVO_OK);
        if (!evo_genome_equal(s, &a, &b)) CHECK(!"same seed, same genomes");
        if (!evo_space_valid(s, &a, NULL)) CHECK(!"random genome is valid");
        hits[a.idx[0]][a.idx[1]][a.idx[2]][a.idx[3]]++;
    }
    /* Uniform over the 21 valid genomes: about 1000 each (binomial sd ~31). */
    int seen = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 2; d++)
                    if (hits[a][b][c][d]) {
                        seen++;
                        CHECK(hits[a][b][c][d] > 850 && hits[a][b][c][d] < 1150);
                    }
    CHECK_EQ_INT(seen, 21);

    /* Another seed gives another sequence. */
    evo_rng_seed(&r1, 7);
    evo_rng_seed(&r2, 8);
    int differ = 0;
    for (int i = 0; i < 20; i++) {
        evo_genome a, b;
        evo_space_random(s, &r1, &a, NULL);
        evo_space_random(s, &r2, &b, NULL);
        differ += !evo_genome_equal(s, &a, &b);
    }
    CHECK(differ >= 10);
    evo_space_free(s);
}

/* 4 knobs of 64 values: 16.7M genomes of which 2 are valid; rejection sampling gives up, enumeration finds them. */
static void test_sparse(void)
{
    evo_space *s;
    evo_space_new(&s);
    int v[64];
    for (int i = 0; i < 64; i++) v[i] = i;
    const char *names[] = {"P", "Q", "R", "T"};
    for (int k = 0; k < 4; k++) evo_space_add_int_knob(s, names[k], v, 64, NULL);
    CHECK_EQ_INT(evo_space_add_constraint(s, "P == 17 && Q == 3 && R == 60 && T in [5, 6]", NULL), EVO_OK);
    uint64_t total, valid;
    bool exact;
    CHECK_EQ_INT(evo_space_count(s, 1000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 16777216);
    CHECK_EQ_INT(valid, 0); /* an estimate from 1000 samples, none of which hit */
    CHECK(!exact);          /* the only constraint reads the last knob: nothing prunes, 1000 genomes are not enough */
    CHECK_EQ_INT(evo_space_count(s, 20000000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(valid, 2);
    CHECK(exact);
    evo_rng r;
    evo_rng_seed(&r, 3);
    int t5 = 0, t6 = 0;
    for (int i = 0; i < 8; i++) {
        evo_genome g;
        CHECK_EQ_INT(evo_space_random(s, &r, &g, NULL), EVO_OK);
        CHECK_EQ_INT(evo_genome_get(s, &g, "P", -1), 17);
        CHECK_EQ_INT(evo_genome_get(s, &g, "Q", -1), 3);
        CHECK_EQ_INT(evo_genome_get(s, &g, "R", -1), 60);
        t5 += evo_genome_get(s, &g, "T", -1) == 5;
        t6 += evo_genome_get(s, &g, "T", -1) == 6;
    }
    CHECK_EQ_INT(t5 + t6, 8);
    CHECK(t5 >= 1 && t6 >= 1); /* both valid genomes come up (each draw is a fair coin) */
    evo_space_free(s);

    /* No valid genome at all. */
    evo_space_new(&s);
    evo_space_add_int_knob(s, "P", v, 64, NULL);
    evo_space_add_int_knob(s, "Q", v, 64, NULL);
    evo_space_add_constraint(s, "P + Q > 200", NULL);
    evo_genome g;
    evo_err err = {0};
    evo_rng_seed(&r, 3);
    CHECK_EQ_INT(evo_space_random(s, &r, &g, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "no genome satisfies the constraints");
    CHECK_EQ_INT(evo_space_count(s, 100000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(valid, 0);
    CHECK(exact);
    evo_space_free(s);
}

/* Pruning keeps counts exact far beyond the limit; past it, the count is an estimate. */
static void test_large(void)
{
    evo_space *s;
    evo_space_new(&s);
    int v[64];
    for (int i = 0; i < 64; i++) v[i] = i;
    const char *names[] = {"K0", "K1", "K2", "K3", "K4", "K5", "K6", "K7"};
    for (int k = 0; k < 8; k++) evo_space_add_int_knob(s, names[k], v, 64, NULL);
    uint64_t total, valid;
    bool exact;
    CHECK_EQ_INT(evo_space_count(s, 1000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 1ULL << 48);
    CHECK_EQ_INT(valid, 1ULL << 48);
    CHECK(exact);
    evo_space_add_constraint(s, "K0 == 0 && K1 < 2", NULL);
    CHECK_EQ_INT(evo_space_count(s, 1000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(valid, 2ULL << 36);
    CHECK(exact);
    evo_space_free(s);

    /* A constraint on the last knob prunes nothing: 2^48 leaves are far past the limit, so the count is sampled. */
    evo_space_new(&s);
    for (int k = 0; k < 8; k++) evo_space_add_int_knob(s, names[k], v, 64, NULL);
    evo_space_add_constraint(s, "K7 < 16", NULL);
    CHECK_EQ_INT(evo_space_count(s, 1000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK(!exact);
    CHECK_EQ_INT(total, 1ULL << 48);
    CHECK(valid > (uint64_t)(0.20 * (1ULL << 48)) && valid < (uint64_t)(0.30 * (1ULL << 48))); /* a quarter */
    evo_space_free(s);

    /* A constant constraint that fails empties the space. */
    evo_space_new(&s);
    evo_space_add_int_knob(s, "K0", v, 4, NULL);
    evo_space_add_constraint(s, "1 == 0", NULL);
    CHECK_EQ_INT(evo_space_count(s, 1000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 4);
    CHECK_EQ_INT(valid, 0);
    evo_space_free(s);
}

/* A conditional space: A {1,2,3} and B {4,8} when FAMILY == 0 (declared before FAMILY), H {10,20,30} when
 * FAMILY == 1, G {1,2} when FAMILY == 1 && H > 10 (a condition reading a conditional knob).
 * Distinct genomes: family 0: 3 * 2 = 6; family 1: H=10 (G inactive) 1 + H=20: 2 + H=30: 2 = 5; 11 in all.
 * "A * B <= 16" drops (3,8): 5 of family 0 valid; "H != 30 || G == 1" drops (30,2): 4 of family 1; 9 valid. */
static evo_space *family_space(void)
{
    evo_space *s;
    evo_err err = {0};
    CHECK_EQ_INT(evo_space_new(&s), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "A", (const int[]){1, 2, 3}, 3, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "B", (const int[]){4, 8}, 2, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "FAMILY", (const int[]){0, 1}, 2, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "H", (const int[]){10, 20, 30}, 3, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_int_knob(s, "G", (const int[]){1, 2}, 2, &err), EVO_OK);
    int col = -1;
    CHECK_EQ_INT(evo_space_set_condition(s, 0, "FAMILY == 0", &col, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_set_condition(s, 1, "FAMILY == 0", &col, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_set_condition(s, 3, "FAMILY == 1", &col, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_set_condition(s, 4, "FAMILY == 1 && H > 10", &col, &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_constraint(s, "A * B <= 16", &err), EVO_OK);
    CHECK_EQ_INT(evo_space_add_constraint(s, "H != 30 || G == 1", &err), EVO_OK);
    return s;
}

static int count_canonical(const evo_genome *g, void *ctx)
{
    int *n = ctx;
    (*n)++;
    return 0;
    (void)g;
}

static void test_conditions(void)
{
    evo_space *s = family_space();
    evo_err err = {0};
    CHECK(evo_space_has_conditions(s));
    CHECK_STR(evo_space_knob_condition(s, 4), "FAMILY == 1 && H > 10");
    CHECK(evo_space_knob_condition(s, 2) == NULL);
    /* walk order: FAMILY, then A, B (they read it), then H, G */
    static const int walk[] = {2, 0, 1, 3, 4};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(evo_space_walk_knob(s, i), walk[i]);
    uint64_t total = 0, valid = 0;
    bool exact = false;
    CHECK_EQ_INT(evo_space_count(s, 1000000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 11);
    CHECK_EQ_INT(valid, 9);
    CHECK(exact);
    int n = 0;
    evo_space_foreach_valid(s, count_canonical, &n);
    CHECK_EQ_INT(n, 9);

    /* active knobs per family, text forms, old texts */
    evo_genome g, h;
    genome(s, "FAMILY=1,H=20,G=2", &g);
    CHECK_EQ_INT(evo_space_active(s, &g), 1u << 2 | 1u << 3 | 1u << 4);
    genome(s, "A=3,B=8,FAMILY=1,H=20,G=2", &h); /* the form listing every knob: A, B dropped */
    CHECK(evo_genome_equal(s, &g, &h));
    char a[EVO_GENOME_TEXT_MAX], b[EVO_GENOME_TEXT_MAX], ha[65], hb[65];
    evo_genome_format(s, &h, a, sizeof a);
    CHECK_STR(a, "FAMILY=1,H=20,G=2");
    genome(s, "A=1,B=4,FAMILY=1,H=20,G=2", &h); /* differs from the one above in inactive knobs only */
    evo_genome_hash(s, &g, ha);
    evo_genome_hash(s, &h, hb);
    CHECK_STR(ha, hb);
    genome(s, "A=2,B=8,FAMILY=0,H=30,G=2", &g);
    CHECK_EQ_INT(evo_space_active(s, &g), 1u << 0 | 1u << 1 | 1u << 2);
    CHECK_EQ_INT(g.idx[3], 0);
    CHECK_EQ_INT(g.idx[4], 0);
    evo_genome_format(s, &g, b, sizeof b);
    CHECK_STR(b, "A=2,B=8,FAMILY=0");
    genome(s, "FAMILY=1,H=10", &g); /* G inactive: H is 10 */
    evo_genome_format(s, &g, a, sizeof a);
    CHECK_STR(a, "FAMILY=1,H=10");
    genome(s, "A=1,B=4,FAMILY=0,H=99", &g); /* an inactive knob's value its domain lacks: dropped */
    evo_genome_format(s, &g, a, sizeof a);
    CHECK_STR(a, "A=1,B=4,FAMILY=0");
    CHECK_EQ_INT(evo_genome_parse(s, "FAMILY=1,H=99", &g, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'H': value '99' is not in its domain (10, 20, 30)");
    CHECK_EQ_INT(evo_genome_parse(s, "FAMILY=1,G=2", &g, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'H' is missing");
    CHECK_EQ_INT(evo_genome_parse(s, "FAMILY=0,A=1", &g, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'B' is missing");

    /* constraints reading an inactive knob hold */
    genome(s, "FAMILY=1,H=30,G=1", &g);
    CHECK(evo_space_valid(s, &g, NULL));
    genome(s, "FAMILY=1,H=30,G=2", &g);
    const char *violated = NULL;
    CHECK(!evo_space_valid(s, &g, &violated));
    CHECK_STR(violated, "H != 30 || G == 1");
    genome(s, "A=3,B=8,FAMILY=0", &g);
    CHECK(!evo_space_valid(s, &g, NULL));

    /* canonicalising and settling after a move */
    genome(s, "A=3,B=8,FAMILY=0", &g);
    evo_genome m = g;
    m.idx[2] = 1; /* FAMILY 0 -> 1: A and B turn off, H on (first value: 10, so G stays off) */
    evo_genome_settle(s, &m, evo_space_active(s, &g), NULL);
    CHECK(evo_genome_is_canonical(s, &m));
    evo_genome_format(s, &m, a, sizeof a);
    CHECK_STR(a, "FAMILY=1,H=10");
    evo_rng rng;
    evo_rng_seed(&rng, 3);
    int seen_h[3] = {0};
    for (int i = 0; i < 300; i++) { /* random values for the knobs a move turns on */
        m = g;
        m.idx[2] = 1;
        evo_genome_settle(s, &m, evo_space_active(s, &g), &rng);
        CHECK(evo_genome_is_canonical(s, &m));
        CHECK_EQ_INT(m.idx[0] + m.idx[1], 0);
        seen_h[m.idx[3]]++;
    }
    CHECK(seen_h[0] > 0 && seen_h[1] > 0 && seen_h[2] > 0);
    /* random genomes: canonical, valid, both families */
    int fam[2] = {0};
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ_INT(evo_space_random(s, &rng, &g, &err), EVO_OK);
        CHECK(evo_genome_is_canonical(s, &g));
        CHECK(evo_space_valid(s, &g, NULL));
        fam[g.idx[2]]++;
    }
    CHECK(fam[0] > 400 && fam[1] > 400); /* each case of FAMILY drawn about half the time */

    /* bad conditions: its own knob, a cycle, a second one; the space unchanged */
    CHECK_EQ_INT(evo_space_set_condition(s, 2, "FAMILY == 1", NULL, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "the condition of knob 'FAMILY' reads 'FAMILY' itself");
    CHECK_EQ_INT(evo_space_set_condition(s, 2, "G == 1", NULL, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "the conditions of knobs form a cycle (FAMILY -> G -> FAMILY");
    CHECK(evo_space_knob_condition(s, 2) == NULL);
    CHECK_EQ_INT(evo_space_set_condition(s, 3, "FAMILY == 0", NULL, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "knob 'H' has a condition already");
    int col = 0;
    CHECK_EQ_INT(evo_space_set_condition(s, 2, "Q == 1", &col, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "unknown knob 'Q'");
    CHECK_EQ_INT(col, 1);
    CHECK_EQ_INT(evo_space_count(s, 1000000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(valid, 9);
    evo_space_free(s);
}

/* The filter: A = 2 refused (the small space's 21 valid genomes keep 21 - 9 = 12: A=2 pairs with B = 2, 4, 8, each
 * with 3 (C,D)); it counts its calls so the walk is seen to ask it only about genomes the constraints allow. */
typedef struct {
    const evo_space *s;
    int calls;
} no_a2;

static bool refuse_a2(const evo_genome *g, void *ctx)
{
    no_a2 *f = ctx;
    f->calls++;
    return evo_genome_get(f->s, g, "A", 0) != 2;
}

static void test_filter(void)
{
    evo_space *s = small_space(3);
    no_a2 f = {.s = s};
    evo_space_set_filter(s, refuse_a2, &f, "no A=2 here");
    evo_genome g;
    const char *why = NULL;
    genome(s, "A=2,B=8,C=mma,D=1", &g); /* valid by the constraints, refused by the filter */
    CHECK(!evo_space_valid(s, &g, &why));
    CHECK_STR(why, "no A=2 here");
    CHECK(evo_space_constraints_hold(s, &g, &why)); /* the constraints alone take it */
    genome(s, "A=3,B=8,C=mma,D=1", &g);             /* a constraint fails first: it is named, the filter is not asked */
    const int before = f.calls;
    CHECK(!evo_space_valid(s, &g, &why));
    CHECK_STR(why, "B % A == 0");
    CHECK_EQ_INT(f.calls, before);
    f.calls = 0;
    CHECK_EQ_INT(evo_space_count_filtered(s), 12);
    CHECK_EQ_INT(f.calls, 21); /* asked once per genome the constraints allow, and about no other */
    visit_ctx v = {.s = s};    /* every genome visited is valid, filter included */
    evo_space_foreach_valid(s, visit, &v);
    CHECK_EQ_INT(v.n, 12);
    CHECK_STR(v.first, "A=1,B=2,C=fma,D=0");
    CHECK_STR(v.last, "A=4,B=4,C=mma,D=1");
    uint64_t total, valid;
    bool exact;
    evo_err err = {0};
    CHECK_EQ_INT(evo_space_count(s, 1000, &total, &valid, &exact, &err), EVO_OK);
    CHECK_EQ_INT(valid, 21); /* the count is the constraints' */
    evo_rng rng;
    evo_rng_seed(&rng, 7);
    for (int i = 0; i < 200; i++) {
        CHECK_EQ_INT(evo_space_random(s, &rng, &g, &err), EVO_OK);
        CHECK(evo_genome_get(s, &g, "A", 0) != 2);
    }
    evo_space_set_filter(s, NULL, NULL, NULL);
    genome(s, "A=2,B=8,C=mma,D=1", &g);
    CHECK(evo_space_valid(s, &g, &why));
    evo_space_free(s);
}

int main(void)
{
    test_filter();
    test_conditions();
    test_knobs();
    test_counts();
    test_foreach();
    test_valid();
    test_constraint_errors();
    test_text();
    test_hash();
    test_random();
    test_sparse();
    test_large();
    return check_result();
}
