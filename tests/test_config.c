/* test_config.c — the YAML configuration: configs/family0.yaml parses to the documented values, defaults fill
 * what a minimal config leaves out, and every bad fixture in tests/data/config/ fails with EVO_E_CONFIG and a
 * message naming file:line:column and the key. Run: ctest -R test_config (or build/tests/test_config). */
#include "check.h"
#include "config.h"
#include "evaluate.h"
#include "strategy.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DATA EVO_SOURCE_DIR "/tests/data/config/"

static evo_config *load(const char *path)
{
    evo_config *c = NULL;
    evo_err err = {0};
    evo_status s = evo_config_load(path, &c, &err);
    if (s != EVO_OK) fprintf(stderr, "%s: %s\n", path, err.msg);
    CHECK_EQ_INT(s, EVO_OK);
    return c;
}

static void check_shape(const evo_shape *s, const char *name, int b, int h, int n, int d, bool causal)
{
    CHECK_STR(s->name, name);
    CHECK_EQ_INT(evo_shape_get(s, "batch", -1), b);
    CHECK_EQ_INT(evo_shape_get(s, "heads", -1), h);
    CHECK_EQ_INT(evo_shape_get(s, "seq", -1), n);
    CHECK_EQ_INT(evo_shape_get(s, "head_dim", -1), d);
    CHECK_EQ_INT(evo_shape_get(s, "causal", -1), causal);
}

static void test_default(void)
{
    evo_config *c = load(EVO_SOURCE_DIR "/configs/family0.yaml");
    if (!c) return;
    CHECK_STR(c->task, "attention_fp8");
    CHECK_EQ_INT(evo_config_option(c, "format", -1), 0); /* e4m3 */
    CHECK_STR(c->arch, "auto");
    CHECK_NEAR(evo_config_option(c, "softmax_scale", -1), 0.0, 0);
    CHECK_NEAR(evo_config_option(c, "no_such_option", -7), -7.0, 0);
    CHECK(c->text && strstr(c->text, "task: attention_fp8"));
    CHECK_CONTAINS(c->path, "configs/family0.yaml");

    const evo_space *s = c->space;
    static const char *const knobs[] = {"TILE_M",   "TILE_N",      "WARPS_M",    "WARPS_N",   "STAGES",
                                        "SWIZZLE",  "PV_MMA",      "QK_8BIT",    "F16_SMEM",  "MIN_BLOCKS",
                                        "FAST_EXP", "CAUSAL_PAIR", "BIG_TILE_M", "BIG_TILE_N"};
    static const int sizes[] = {5, 4, 4, 3, 3, 2, 2, 2, 3, 4, 2, 1, 3, 2};
    CHECK_EQ_INT(evo_space_n_knobs(s), 14);
    for (int k = 0; k < 14; k++) {
        CHECK_STR(evo_space_knob_name(s, k), knobs[k]);
        CHECK_EQ_INT(evo_space_domain_size(s, k), sizes[k]);
        CHECK(!evo_space_knob_is_enum(s, k));
    }
    CHECK_EQ_INT(evo_space_value(s, 0, 4), 256);
    CHECK_EQ_INT(evo_space_value(s, 1, 0), 32);
    CHECK_EQ_INT(evo_space_value(s, 2, 3), 8);
    CHECK_EQ_INT(evo_space_value(s, 9, 1), 2);
    CHECK_EQ_INT(evo_space_n_constraints(s), 7);
    CHECK_STR(evo_space_constraint_text(s, 1), "TILE_N % (16 * WARPS_N) == 0");
    uint64_t total, valid;
    bool exact;
    CHECK_EQ_INT(evo_space_count(s, 10000000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 829440);
    /* (TILE_M, WARPS_M) pairs: 8; per WARPS_M the (WARPS_N, TILE_N) choices: 11, 11, 8, 4 -> 68 tile shapes, 32
     * of them with WARPS_N = 1. (PV_MMA, QK_8BIT, F16_SMEM): 5 with PV_MMA = 1, 2 more with PV_MMA = 0 when
     * WARPS_N = 1. Times STAGES 3 x SWIZZLE 2 x MIN_BLOCKS 4 x FAST_EXP 2 = 48: 48 x (68 x 5 + 32 x 2) = 19392,
     * less the MIN_BLOCKS 3 and 4 of the 8-warp shapes (WARPS_M * WARPS_N * MIN_BLOCKS <= 16): 16368, as a
     * direct enumeration in another language also gives. The large-problem variant adds 5 choices (none, or
     * BIG_TILE_M 128 / 256 x BIG_TILE_N 32 / 64): 81840. */
    CHECK_EQ_INT(valid, 81840);
    CHECK(exact);

    char g[EVO_GENOME_TEXT_MAX];
    evo_genome_format(s, &c->baseline, g, sizeof g);
    CHECK_STR(g, "TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,"
                 "MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64");
    CHECK(evo_space_valid(s, &c->baseline, NULL));
    char hex[65];
    evo_genome_hash(s, &c->baseline, hex); /* SHA-256 of the text above: store keys depend on it */
    CHECK_STR(hex, "bafe558b8c8c64369c74af94866a9994d0804f4f00b5808de3d117cac96e8392");
    CHECK_EQ_INT(c->n_seeds, 4);

    CHECK_EQ_INT(c->correctness.timed_seeds, 3);
    CHECK_EQ_INT(c->n_shapes, 5);
    check_shape(&c->shapes[0], "mission", 1, 8, 512, 64, false);
    check_shape(&c->shapes[1], "small", 2, 8, 512, 64, false);
    check_shape(&c->shapes[2], "long", 2, 8, 2048, 64, false);
    check_shape(&c->shapes[3], "wide", 2, 8, 512, 128, false);
    check_shape(&c->shapes[4], "stress", 4, 8, 2048, 64, false);

    CHECK_EQ_INT(c->correctness.n_seeds, 3);
    CHECK_EQ_INT(c->correctness.seeds[2], 2);
    CHECK_EQ_INT(c->correctness.n_dists, 5);
    CHECK_EQ_INT(c->correctness.dists[0], EVO_DIST_NORMAL);
    CHECK_EQ_INT(c->correctness.dists[3], EVO_DIST_ZERO_HEAD);
    CHECK_EQ_INT(c->correctness.dists[4], EVO_DIST_LARGE);
    CHECK_EQ_INT(c->correctness.n_axes, 2); /* causal, softmax_scale */
    CHECK_EQ_INT(c->correctness.axes[0].field, evo_task_shape_field(c->task_ops, "causal"));
    CHECK_EQ_INT(c->correctness.axes[0].n, 2);
    CHECK(c->correctness.axes[0].values[0] == 0 && c->correctness.axes[0].values[1] == 1);
    CHECK_EQ_INT(c->correctness.n_shapes, 12);
    check_shape(&c->correctness.shapes[0], "s1", 1, 2, 1, 64, false);
    check_shape(&c->correctness.shapes[1], "s77", 3, 5, 77, 64, false);
    check_shape(&c->correctness.shapes[2], "s500", 1, 3, 500, 128, false);
    check_shape(&c->correctness.shapes[3], "s1000", 2, 2, 1000, 64, false);
    check_shape(&c->correctness.shapes[4], "s77w", 3, 5, 77, 128, false);
    /* beyond the longest timed sequence (2048): an exported kernel accepts any S */
    check_shape(&c->correctness.shapes[5], "s4097", 1, 1, 4097, 64, false);
    check_shape(&c->correctness.shapes[6], "s4097w", 1, 1, 4097, 128, false);
    check_shape(&c->correctness.shapes[7], "s127", 1, 16, 127, 64, false); /* 16 heads: faults in one head */
    check_shape(&c->correctness.shapes[11], "s4095", 1, 1, 4095, 128, false);
    CHECK_EQ_INT(c->accuracy, 3u);            /* accuracy: [exact, fp8] */
    CHECK_EQ_INT(c->correctness.probes, 31u); /* the five probes */
    CHECK_EQ_INT(c->correctness.axes[1].field, evo_task_shape_field(c->task_ops, "softmax_scale"));
    CHECK_EQ_INT(c->correctness.axes[1].n, 2);
    if (c->correctness.axes[1].n == 2) {
        const evo_field *sf = &c->task_ops->shape_fields[c->correctness.axes[1].field];
        CHECK_NEAR(evo_field_load(sf, c->correctness.axes[1].values[0]), 0, 0);
        CHECK_NEAR(evo_field_load(sf, c->correctness.axes[1].values[1]), 0.07, 1e-15);
    }
    CHECK_NEAR(c->correctness.tol.rel_l2, 2.0e-3, 1e-15);
    CHECK_NEAR(c->correctness.tol.atol, 2.0e-2, 1e-15);
    CHECK_NEAR(c->correctness.tol.rtol, 2.0e-2, 1e-15);
    CHECK_NEAR(c->correctness.tol.max_frac_over, 0.0, 0);

    CHECK_EQ_INT(c->timing.warmup, 3);
    CHECK_EQ_INT(c->timing.repetitions, 20);
    CHECK(c->timing.flush_l2);
    CHECK_NEAR(c->timing.abort_factor, 3.0, 0);
    CHECK_NEAR(c->timing.kernel_timeout_s, 5.0, 0);
    CHECK_EQ_INT(c->timing.method, EVO_TIMING_AUTO);
    CHECK_EQ_INT(c->timing.max_repetitions, 200);
    CHECK_NEAR(c->timing.target_us, 1000, 0);
    CHECK_NEAR(c->timing.target_ci, 0.005, 0);
    CHECK(c->timing.fresh_inputs);
    CHECK_EQ_INT(c->timing.check_samples, 2);
    CHECK(!c->timing.interleave);

    CHECK_STR(c->evolution.strategy, "ga");
    CHECK_EQ_INT(c->evolution.population, 32);
    CHECK_EQ_INT(c->evolution.generations, 20);
    CHECK_EQ_INT(c->evolution.elites, 3);
    CHECK_EQ_INT(c->evolution.tournament, 3);
    CHECK_NEAR(c->evolution.crossover_rate, 0.7, 1e-15);
    CHECK_NEAR(c->evolution.mutation_rate, 0.2, 1e-15);
    CHECK_NEAR(c->evolution.immigrant_rate, 0.1, 1e-15);
    CHECK_NEAR(c->evolution.local_rate, 0.5, 1e-15);
    CHECK_EQ_INT(c->evolution.seed, 1);
    CHECK_EQ_INT(c->evolution.stall_generations, 12);
    CHECK_NEAR(c->evolution.time_budget_s, 0, 0);
    CHECK(c->evolution.insights);

    CHECK_NEAR(c->regression.slowdown, 1.10, 1e-15);
    CHECK_EQ_INT(c->regression.min_shapes, 2);
    CHECK_NEAR(c->compile.timeout_s, 120, 0);
    CHECK_EQ_INT(c->compile.max_registers, 255);
    CHECK(!c->compile.allow_spills);
    CHECK(c->compile.extra_options == NULL);

    /* sorted "B,H,S,D,causal\n" lines of the five timed shapes */
    char key[65];
    evo_config_shape_set_key(c, key);
    CHECK_STR(key, "cc7fe78e52ac489f307b3a095a399f2c12d79b820332858389c50d5f8f0dec93");
    char buf[64];
    CHECK_EQ_INT(evo_shape_format(&c->shapes[2], buf, sizeof buf), 17);
    CHECK_STR(buf, "long(2,8,2048,64)");
    evo_config_free(c);
}

static void test_smoke(void)
{
    evo_config *c = load(EVO_SOURCE_DIR "/configs/smoke.yaml");
    if (!c) return;
    uint64_t total, valid;
    bool exact;
    CHECK_EQ_INT(evo_space_count(c->space, 1000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 8);
    CHECK_EQ_INT(valid, 8);
    CHECK_EQ_INT(c->n_shapes, 2);
    CHECK_EQ_INT(c->correctness.n_seeds, 1);
    CHECK_EQ_INT(c->correctness.n_dists, 2);
    CHECK_EQ_INT(c->correctness.dists[1], EVO_DIST_OUTLIERS);
    CHECK_EQ_INT(c->evolution.population, 4);
    CHECK_EQ_INT(c->evolution.elites, 1);
    CHECK_EQ_INT(c->timing.repetitions, 5);
    CHECK_EQ_INT(c->timing.warmup, 1);
    CHECK_NEAR(c->timing.abort_factor, 3.0, 0); /* not given: the default */
    evo_config_free(c);
}

/* From memory, the minimum a config must say; everything else is a default. Knobs listed out of order still
 * give genomes in the template's order. */
#define MINIMAL_SPACE \
    "task: attention_fp8\n" \
    "space:\n" \
    "  knobs: {FAST_EXP: [0, 1], CAUSAL_PAIR: [0], TILE_N: [64], TILE_M: [64], WARPS_M: [4], WARPS_N: [1], STAGES: [2],\n" \
    "          SWIZZLE: [1], PV_MMA: [1], QK_8BIT: [0], F16_SMEM: [0], MIN_BLOCKS: [1]}\n"
#define MINIMAL_REST \
    "baseline: FAST_EXP=1, TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0," \
    "F16_SMEM=0,MIN_BLOCKS=1,CAUSAL_PAIR=0\n" \
    "shapes: [{name: one, batch: 1, heads: 1, seq: 128, head_dim: 128, causal: true}]\n" \
    "evolution: {population: 2}\n"
static const char minimal[] = MINIMAL_SPACE MINIMAL_REST;

static void test_minimal_and_defaults(void)
{
    evo_config *c = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_config_parse("mem.yaml", minimal, strlen(minimal), &c, &err), EVO_OK);
    if (!c) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    CHECK_STR(c->path, "mem.yaml");
    CHECK_STR(evo_space_knob_name(c->space, 0), "TILE_M");
    CHECK_STR(evo_space_knob_name(c->space, 10), "FAST_EXP");
    char g[EVO_GENOME_TEXT_MAX];
    evo_genome_format(c->space, &c->baseline, g, sizeof g);
    /* BIG_TILE_M and BIG_TILE_N are left out: their defaults, one value each, which genomes may leave out too */
    CHECK_STR(g, "TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,"
                 "MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64");
    CHECK_EQ_INT(evo_space_domain_size(c->space, 12), 1);
    CHECK_EQ_INT(evo_space_value(c->space, 13, 0), 64);
    CHECK_EQ_INT(evo_space_n_constraints(c->space), 0);
    check_shape(&c->shapes[0], "one", 1, 1, 128, 128, true);
    CHECK_EQ_INT(evo_config_option(c, "format", -1), 0);
    CHECK_STR(c->arch, "auto");
    CHECK_EQ_INT(c->correctness.n_seeds, 3);
    CHECK_EQ_INT(c->correctness.n_dists, 5);
    CHECK_EQ_INT(c->correctness.axes[0].n, 2);
    CHECK_EQ_INT(c->correctness.n_shapes, 0);
    CHECK_NEAR(c->correctness.tol.rel_l2, 2.0e-3, 1e-15);
    CHECK_EQ_INT(c->timing.warmup, 3);
    CHECK_EQ_INT(c->timing.repetitions, 20);
    CHECK_EQ_INT(c->timing.method, EVO_TIMING_AUTO);
    CHECK_EQ_INT(c->timing.max_repetitions, 200);
    CHECK_NEAR(c->timing.target_us, 1000, 0);
    CHECK_NEAR(c->timing.target_ci, 0.005, 0);
    CHECK(c->timing.fresh_inputs);
    CHECK_EQ_INT(c->timing.check_samples, 2);
    CHECK(!c->timing.interleave);
    CHECK_EQ_INT(c->correctness.axes[1].n, 1); /* the timed scale alone (0: the config's softmax_scale) */
    CHECK_EQ_INT(c->correctness.axes[1].values[0], 0);
    CHECK_EQ_INT(c->evolution.population, 2);
    CHECK_EQ_INT(c->evolution.elites, 1);     /* 3, capped at population - 1 */
    CHECK_EQ_INT(c->evolution.tournament, 2); /* 3, capped at population */
    CHECK_EQ_INT(c->evolution.generations, 20);
    CHECK_EQ_INT(c->regression.min_shapes, 1); /* 2, capped at the number of timed shapes */
    CHECK_NEAR(c->regression.slowdown, 1.10, 1e-15);
    CHECK_EQ_INT(c->compile.max_registers, 255);
    CHECK(c->text && strlen(c->text) == strlen(minimal));
    evo_config_free(c);

    /* fitness: the default is the geometric mean; `worst` changes the shape-set key (evaluations scored one way
     * are neither reused nor ranked with the other's) but not the measured key (replay looks those up). */
    c = NULL;
    CHECK_EQ_INT(evo_config_parse("mem.yaml", minimal, strlen(minimal), &c, &err), EVO_OK);
    if (!c) return;
    CHECK_EQ_INT(c->fitness, EVO_FITNESS_GEOMEAN);
    char key_geo[65], measured_geo[65], key_worst[65], measured_worst[65];
    evo_config_shape_set_key(c, key_geo);
    evo_config_measured_key(c, measured_geo);
    CHECK_STR(key_geo, measured_geo);
    evo_config_free(c);
    static const char with_worst[] = "fitness: worst\n" MINIMAL_SPACE MINIMAL_REST;
    c = NULL;
    CHECK_EQ_INT(evo_config_parse("mem.yaml", with_worst, strlen(with_worst), &c, &err), EVO_OK);
    if (!c) return;
    CHECK_EQ_INT(c->fitness, EVO_FITNESS_WORST);
    evo_config_shape_set_key(c, key_worst);
    evo_config_measured_key(c, measured_worst);
    CHECK(strcmp(key_worst, key_geo) != 0);
    CHECK_STR(measured_worst, measured_geo);
    CHECK_STR(evo_fitness_describe(c->fitness), "smallest over the shapes");
    CHECK_STR(evo_fitness_describe(EVO_FITNESS_GEOMEAN), "geometric mean over the shapes");
    evo_config_free(c);

    /* Text in memory need not be NUL-terminated: only len bytes are read. */
    char *copy = malloc(sizeof minimal);
    memcpy(copy, minimal, sizeof minimal - 1);
    copy[sizeof minimal - 1] = '@';
    CHECK_EQ_INT(evo_config_parse("mem.yaml", copy, sizeof minimal - 1, &c, &err), EVO_OK);
    evo_config_free(c);
    free(copy);
}

/* Each bad fixture: where and on which key the message must point, and what it must say. */
static const struct {
    const char *file, *where, *what;
} bad[] = {
    {"malformed.yaml", "malformed.yaml:6:12: malformed YAML", "did not find expected ',' or ']'"},
    {"unknown_accuracy.yaml", "unknown_accuracy.yaml:2:19: accuracy[1]",
     "unknown accuracy class 'fp9' (known: exact, fp8)"},
    {"accuracy_twice.yaml", "accuracy_twice.yaml:2:17: accuracy[1]", "accuracy class 'fp8' given twice"},
    {"unknown_probe.yaml", "unknown_probe.yaml:24:20: correctness.probes[1]",
     "unknown probe 'tail' (known: heads, needle, last_key, moderate, integers)"},
    {"malformed_indent.yaml", "malformed_indent.yaml:32:11: malformed YAML", "mapping values are not allowed"},
    {"wrong_type.yaml", "wrong_type.yaml:22:40: shapes[1].seq", "expected an integer, found 'long'"},
    {"quoted_number.yaml", "quoted_number.yaml:31:15: evolution.population", "found the quoted string '4'"},
    {"wrong_type_list.yaml", "wrong_type_list.yaml:29:18: timing.warmup", "expected an integer, found a list"},
    {"negative.yaml", "negative.yaml:22:22: shapes[1].batch", "-1 is out of range: must be 1 to 65535"},
    {"population_small.yaml", "population_small.yaml:31:15: evolution.population", "must be 2 to 100000"},
    {"population_large.yaml", "population_large.yaml:31:15: evolution.population", "must be 2 to 100000"},
    {"repetitions_zero.yaml", "repetitions_zero.yaml:29:34: timing.repetitions", "must be 1 to 10000"},
    {"tolerance_zero.yaml", "tolerance_zero.yaml:28:37: correctness.tolerance.atol", "must be greater than 0"},
    {"timed_seeds.yaml", "timed_seeds.yaml:10:16: correctness.timed_seeds", "3 is out of range: must be 1 to 2"},
    {"tolerance_negative.yaml", "tolerance_negative.yaml:28:23: correctness.tolerance.rel_l2",
     "must be greater than 0"},
    {"seq_zero.yaml", "seq_zero.yaml:21:40: shapes[0].seq", "0 is out of range"},
    {"head_dim.yaml", "head_dim.yaml:22:55: shapes[1].head_dim", "head_dim 96 is not supported (64 or 128)"},
    {"shape_too_large.yaml", "shape_too_large.yaml:22:5: shapes[1]", "more than 2^31-1"},
    {"unknown_key.yaml", "unknown_key.yaml:31:3: evolution.populaton", "unknown key (did you mean 'population'?)"},
    {"unknown_key_nested.yaml", "unknown_key_nested.yaml:28:45: correctness.tolerance.rtoll", "did you mean 'rtol'?"},
    {"unknown_key_top.yaml", "unknown_key_top.yaml:20:1: verbose", "unknown key (known here: task,"},
    {"duplicate_key.yaml", "duplicate_key.yaml:33:3: evolution.population", "key given twice (first at line 31)"},
    {"missing_baseline.yaml", "missing_baseline.yaml:1:1: baseline", "required key is missing"},
    {"missing_shape_key.yaml", "missing_shape_key.yaml:21:5: shapes[0].head_dim", "required key is missing"},
    {"missing_shapes.yaml", "missing_shapes.yaml:1:1: shapes", "required key is missing"},
    {"unknown_knob.yaml", "unknown_knob.yaml:16:5: space.knobs.TILE_Q", "unknown knob (task attention_fp8 takes"},
    {"missing_knob.yaml", "missing_knob.yaml:4:5: space.knobs", "knob 'FAST_EXP' is missing"},
    {"empty_domain.yaml", "empty_domain.yaml:8:13: space.knobs.STAGES", "empty domain"},
    {"duplicate_value.yaml", "duplicate_value.yaml:4:23: space.knobs.TILE_M[2]", "value 64 appears twice"},
    {"mixed_domain.yaml", "mixed_domain.yaml:10:17: space.knobs.PV_MMA[1]", "expected an integer, found 'mma'"},
    {"illegal_stages.yaml", "illegal_stages.yaml:8:17: space.knobs.STAGES[1]", "9 is not a legal value; legal: 1..4"},
    {"illegal_warps_n.yaml", "illegal_warps_n.yaml:7:18: space.knobs.WARPS_N[1]",
     "-2 is not a legal value; legal: 1, 2, 4"},
    {"illegal_tile_n.yaml", "illegal_tile_n.yaml:5:14: space.knobs.TILE_N[0]",
     "0 is not a legal value; legal: 16..256 in steps of 16"},
    {"tagged_number.yaml", "tagged_number.yaml:31:15: evolution.population",
     "expected an integer, found '!!str 216' (a value tagged !!str is not an integer; write it plain)"},
    {"extra_options.yaml", "extra_options.yaml:34:61: compile.extra_options",
     "NVRTC refuses these options: nvrtc: error: unrecognized option --bogus-flag"},
    {"illegal_enum.yaml", "illegal_enum.yaml:9:15: space.knobs.SWIZZLE[0]", "expected an integer (legal: 0, 1)"},
    {"bad_constraint.yaml", "bad_constraint.yaml:17:17: space.constraints[0]", "unknown knob 'WARPS_Q'"},
    {"bad_constraint_syntax.yaml", "bad_constraint_syntax.yaml:17:28: space.constraints[0]",
     "expected a number, a knob or '(', found end of expression"},
    {"bad_constraint_folded.yaml", "bad_constraint_folded.yaml:17:7: space.constraints[0]",
     "unexpected '&' (logical and is '&&') (column 26 of the expression)"},
    {"bad_when_self.yaml", "bad_when_self.yaml:8:36: space.knobs.STAGES.when",
     "the condition of knob 'STAGES' reads 'STAGES' itself"},
    {"bad_when_cycle.yaml", "bad_when_cycle.yaml:10:36: space.knobs.PV_MMA.when",
     "the conditions of knobs form a cycle (PV_MMA -> STAGES -> PV_MMA: each reads the next)"},
    {"bad_when_unknown.yaml", "bad_when_unknown.yaml:4:56: space.knobs.TILE_M.when", "unknown knob 'FAMILY'"},
    {"unsatisfiable.yaml", "unsatisfiable.yaml:17:7: space.constraints[0]", "no genome satisfies this constraint"},
    {"unsatisfiable_pair.yaml", "unsatisfiable_pair.yaml:19:7: space.constraints[2]",
     "no genome satisfies this constraint together with the ones before it"},
    {"baseline_unknown_knob.yaml", "baseline_unknown_knob.yaml:18:11: baseline", "unknown knob 'TILE_Q'"},
    {"baseline_not_in_domain.yaml", "baseline_not_in_domain.yaml:18:11: baseline",
     "knob 'TILE_M': value '32' is not in its domain (64, 128)"},
    {"baseline_violates.yaml", "baseline_violates.yaml:18:11: baseline",
     "violates the constraint 'STAGES == 1 || PV_MMA == 0'"},
    {"seed_bad.yaml", "seed_bad.yaml:20:5: seeds[0]", "knob 'STAGES' is missing"},
    {"seed_duplicate.yaml", "seed_duplicate.yaml:21:5: seeds[1]", "same genome as seeds[0]"},
    {"unknown_distribution.yaml", "unknown_distribution.yaml:25:27: correctness.distributions[1]",
     "unknown distribution 'gauss' (known: normal, uniform, outliers, zero_head, large)"},
    {"unknown_format.yaml", "unknown_format.yaml:2:9: format", "unknown format 'e5m2' (known: e4m3, u8sim)"},
    {"unknown_task.yaml", "unknown_task.yaml:1:7: task", "unknown task 'attention_fp16'"},
    {"unknown_fitness.yaml", "unknown_fitness.yaml:2:10: fitness", "unknown fitness 'best' (known: geomean, worst)"},
    {"unknown_arch.yaml", "unknown_arch.yaml:2:7: arch", "unknown architecture 'sm_75'"},
    {"unknown_strategy.yaml", "unknown_strategy.yaml:32:13: evolution.strategy", "unknown strategy 'annealing'"},
    {"elites_too_many.yaml", "elites_too_many.yaml:32:11: evolution.elites", "must be less than evolution.population"},
    {"correctness_causal.yaml", "correctness_causal.yaml:27:7: correctness.shapes[0].causal",
     "checked with every setting of correctness.causal"},
    {"duplicate_shape_name.yaml", "duplicate_shape_name.yaml:27:7: correctness.shapes[0].name",
     "shape name 'a' is already used by shapes[0]"},
    {"null_value.yaml", "null_value.yaml:19:7: seeds", "no value given (expected a list"},
    {"bad_bool.yaml", "bad_bool.yaml:29:47: timing.flush_l2", "expected true or false, found 'yes'"},
    {"unknown_timing_method.yaml", "unknown_timing_method.yaml:29:61: timing.method",
     "unknown timing method 'nvtx' (known: auto, events, graph, cupti)"},
    {"max_repetitions.yaml", "max_repetitions.yaml:29:70: timing.max_repetitions", "4 is below timing.repetitions (5)"},
    {"check_samples.yaml", "check_samples.yaml:29:68: timing.check_samples", "9 is out of range: must be 0 to 8"},
    {"softmax_scales_duplicate.yaml", "softmax_scales_duplicate.yaml:26:28: correctness.softmax_scale[2]",
     "0.07 given twice"},
    {"min_shapes.yaml", "min_shapes.yaml:33:42: regression.min_shapes", "more than the 2 timed shapes"},
    {"two_documents.yaml", "two_documents.yaml:36:1: top level", "a second YAML document"},
    {"empty.yaml", "empty.yaml:1:1: top level", "the configuration is empty"},
    {"not_a_mapping.yaml", "not_a_mapping.yaml:1:1: top level", "expected a mapping of keys, found a list"},
};

static void test_bad_fixtures(void)
{
    evo_config *good = load(DATA "good.yaml"); /* every bad fixture is this file with one thing wrong */
    evo_config_free(good);
    for (size_t i = 0; i < EVO_ARRAY_LEN(bad); i++) {
        char path[512];
        snprintf(path, sizeof path, DATA "%s", bad[i].file);
        evo_config *c = (evo_config *)1;
        evo_err err = {0};
        evo_status s = evo_config_load(path, &c, &err);
        if (s != EVO_E_CONFIG) fprintf(stderr, "  %s\n", bad[i].file);
        CHECK_EQ_INT(s, EVO_E_CONFIG);
        CHECK(c == NULL);
        CHECK(strncmp(err.msg, EVO_SOURCE_DIR, strlen(EVO_SOURCE_DIR)) == 0); /* the path as given */
        CHECK_CONTAINS(err.msg, bad[i].where);
        CHECK_CONTAINS(err.msg, bad[i].what);
    }
}

/* Text in memory, as a fuzzer will hand it: odd bytes and odd YAML fail cleanly with a position. */
static void test_memory_errors(void)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"", "mem.yaml:1:1: top level: the configuration is empty"},
        {"task: a: b\n", "mem.yaml:1:8: malformed YAML: mapping values are not allowed in this context"},
        {"task: \"a\\0b\"\n", "mem.yaml:1:7: task: contains a NUL character"},
        {"task: attention_fp8\n\xff\xfe: 1\n", "mem.yaml:2:1: malformed YAML: invalid leading UTF-8 octet"},
        {"? [a, b]\n: 1\n", "mem.yaml:1:3: top level: expected a key name, found a list"},
        {"task: &a attention_fp8\nformat: *a\n", "mem.yaml:1:7: format: unknown format 'attention_fp8'"},
        {"task: attention_fp8\nsoftmax_scale: .nan\n", "mem.yaml:2:16: softmax_scale: expected a number"},
        {"task: attention_fp8\nsoftmax_scale: 1e999\n", "softmax_scale: 1e999 is not a finite number"},
        {"task: attention_fp8\nsoftmax_scale: -0.5\n", "mem.yaml:2:16: softmax_scale: -0.5 is out of range"},
        {"task: attention_fp8\nsoftmax_scale: !!str 1\n",
         "mem.yaml:2:16: softmax_scale: expected a number, found '!!str 1'"},
        {"task: attention_fp8\nsoftmax_scale: &s !!str 1\n",
         "mem.yaml:2:16: softmax_scale: expected a number, found '!!str 1'"},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        evo_config *c = NULL;
        evo_err err = {0};
        CHECK_EQ_INT(evo_config_parse("mem.yaml", cases[i].text, strlen(cases[i].text), &c, &err), EVO_E_CONFIG);
        CHECK(c == NULL);
        CHECK_CONTAINS(err.msg, cases[i].msg);
    }
    /* Tagged as what it is, a number is still a number; NVRTC takes real options; too many nodes are refused before
     * the document is built, too many bytes before anything is parsed. */
    {
        static const char ok[] =
            MINIMAL_SPACE MINIMAL_REST "softmax_scale: !!float 0.125\n"
                                       "compile: {extra_options: '-maxrregcount=128 -DEVO_UNUSED=1'}\n";
        evo_config *c = NULL;
        evo_err err = {0};
        CHECK_EQ_INT(evo_config_parse("mem.yaml", ok, strlen(ok), &c, &err), EVO_OK);
        CHECK(c && evo_config_option(c, "softmax_scale", -1) == 0.125);
        evo_config_free(c);
        evo_str big = {0};
        evo_str_append(&big, "task: attention_fp8\nx: [");
        for (int i = 0; i < EVO_CONFIG_MAX_NODES; i++) evo_str_append(&big, "1,");
        evo_str_append(&big, "1]\n");
        CHECK_EQ_INT(evo_config_parse("mem.yaml", big.p, big.len, &c, &err), EVO_E_CONFIG);
        CHECK_CONTAINS(err.msg, "top level: more than 100000 YAML nodes");
        evo_str_free(&big);
        char *huge = malloc(EVO_CONFIG_MAX_BYTES + 1);
        memset(huge, ' ', EVO_CONFIG_MAX_BYTES + 1);
        CHECK_EQ_INT(evo_config_parse("mem.yaml", huge, EVO_CONFIG_MAX_BYTES + 1, &c, &err), EVO_E_CONFIG);
        CHECK_STR(err.msg, "mem.yaml: 1048577 bytes; a configuration is at most 1048576 bytes (1 MiB)");
        free(huge);
    }
    /* A constraint error in a config read from memory points into the text too. */
    static const char text[] = MINIMAL_SPACE "  constraints: ['TILE_M >= 2 *']\n" MINIMAL_REST;
    evo_config *c = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_config_parse("mem.yaml", text, strlen(text), &c, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "mem.yaml:5:31: space.constraints[0]: expected a number, a knob or '(', found end");

    CHECK_EQ_INT(evo_config_load(DATA "does_not_exist.yaml", &c, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "does_not_exist.yaml: No such file or directory");
}

static void test_names(void)
{
    evo_dist d;
    CHECK_EQ_INT(evo_dist_parse("zero_head", &d), 0);
    CHECK_EQ_INT(d, EVO_DIST_ZERO_HEAD);
    CHECK_EQ_INT(evo_dist_parse("gauss", &d), -1);
    CHECK_STR(evo_dist_name(EVO_DIST_OUTLIERS), "outliers");
    evo_shape s = {.task = evo_task_find("attention_fp8"), .name = "x", .v = {1, 2, 3, 64, 1}};
    char buf[64];
    evo_shape_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "x(1,2,3,64) causal");
    s.v[4] = 0;
    evo_shape_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "x(1,2,3,64)");
    evo_str j = {0};
    evo_shape_fields_json(&s, &j);
    CHECK_STR(evo_str_cstr(&j),
              "{\"batch\":1,\"heads\":2,\"seq\":3,\"head_dim\":64,\"causal\":false,\"softmax_scale\":0}");
    evo_str_free(&j);
    char why[128] = "";
    CHECK(!evo_field_check(&s.task->shape_fields[3], 96, why, sizeof why));
    CHECK_STR(why, "head_dim 96 is not supported (64 or 128)");
    CHECK(evo_field_check(&s.task->shape_fields[3], 128, why, sizeof why));
}

/* Fitness from per-shape speedups: speedups 2, 0.5 and 1 (baseline 10 µs each) have geometric mean 1 and worst
 * 0.5; with regression {slowdown 1.10, min_shapes 2} one slow shape is not enough to be REGRESSED, two are. */
static void test_fitness_score(void)
{
    evo_config *c = NULL;
    evo_err err = {0};
    CHECK_EQ_INT(evo_config_parse("mem.yaml", minimal, strlen(minimal), &c, &err), EVO_OK);
    if (!c) return;
    c->regression.slowdown = 1.10;
    c->regression.min_shapes = 2;
    const double us[3] = {5, 20, 10};
    evo_result r;
    memset(&r, 0, sizeof r);
    r.n_shapes = 3;
    for (int i = 0; i < 3; i++)
        r.shapes[i] = (evo_shape_result){.median_us = us[i], .baseline_us = 10, .speedup = 10 / us[i]};
    r.verdict = EVO_V_OK;
    evo_result_score(c, &r);
    CHECK_EQ_INT(r.verdict, EVO_V_OK);
    CHECK_NEAR(r.fitness, 1.0, 1e-12);
    c->fitness = EVO_FITNESS_WORST;
    evo_result_score(c, &r);
    CHECK_EQ_INT(r.verdict, EVO_V_OK);
    CHECK_NEAR(r.fitness, 0.5, 1e-12);
    r.shapes[2] = (evo_shape_result){.median_us = 12, .baseline_us = 10, .speedup = 10.0 / 12};
    evo_result_score(c, &r);
    CHECK_EQ_INT(r.verdict, EVO_V_REGRESSED); /* 20 and 12 µs are both over 1.10 x 10 */
    CHECK_NEAR(r.fitness, 0.5, 1e-12);        /* kept for REGRESSED */
    r.verdict = EVO_V_OK;
    c->fitness = EVO_FITNESS_GEOMEAN;
    evo_result_score(c, &r);
    CHECK_NEAR(r.fitness, cbrt(2 * 0.5 * 10.0 / 12), 1e-12);
    r.shapes[1].speedup = 0; /* a shape without a time: no fitness either way */
    r.verdict = EVO_V_OK;
    evo_result_score(c, &r);
    CHECK(isnan(r.fitness));
    r.verdict = EVO_V_INCORRECT;
    evo_result_score(c, &r);
    CHECK(isnan(r.fitness));
    evo_config_free(c);
}

/* The config layer knows no strategy and no NVRTC: what the layers above register is what it checks. */
static void test_checks(void)
{
#define HOOKS_REST(strategy) \
    "baseline: FAST_EXP=1, TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0," \
    "F16_SMEM=0,MIN_BLOCKS=1,CAUSAL_PAIR=0\n" \
    "shapes: [{name: one, batch: 1, heads: 1, seq: 128, head_dim: 128, causal: true}]\n" \
    "evolution: {population: 2, strategy: " strategy "}\ncompile: {extra_options: '--no-such-option'}\n"
    static const char text[] = MINIMAL_SPACE HOOKS_REST("annealing");
    static const char ga[] = MINIMAL_SPACE HOOKS_REST("ga");
    evo_config *c = NULL;
    evo_err err = {0};
    evo_config_set_checks(NULL);
    CHECK_EQ_INT(evo_config_parse("hooks.yaml", text, strlen(text), &c, &err), EVO_OK);
    CHECK(c && strcmp(c->evolution.strategy, "annealing") == 0);
    evo_config_free(c);
    c = NULL;
    evo_strategy_register_config_checks();
    CHECK_EQ_INT(evo_config_parse("hooks.yaml", text, strlen(text), &c, &err), EVO_E_CONFIG);
    CHECK(c == NULL);
    CHECK_CONTAINS(err.msg, "evolution.strategy: unknown strategy 'annealing'");
    CHECK_EQ_INT(evo_config_parse("hooks.yaml", ga, strlen(ga), &c, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "compile.extra_options: NVRTC refuses these options");
}

/* configs/hopper.yaml in the conditional form: family 0's 14 knobs when FAMILY is 0, the 12 H_ knobs when it is 1. */
static void test_conditional_hopper(void)
{
    evo_config *c = load(EVO_SOURCE_DIR "/configs/hopper.yaml");
    if (!c) return;
    const evo_space *s = c->space;
    CHECK_EQ_INT(evo_space_n_knobs(s), 27);
    CHECK(evo_space_has_conditions(s));
    const int tile_m = evo_space_find_knob(s, "TILE_M"), family = evo_space_find_knob(s, "FAMILY"),
              h_pipe = evo_space_find_knob(s, "H_PIPE");
    CHECK_STR(evo_space_knob_condition(s, tile_m), "FAMILY == 0");
    CHECK_STR(evo_space_knob_condition(s, h_pipe), "FAMILY == 1");
    CHECK(evo_space_knob_condition(s, family) == NULL);
    CHECK_EQ_INT(evo_space_walk_knob(s, 0), family); /* decided first: every other knob's condition reads it */
    uint64_t total = 0, valid = 0;
    bool exact = false;
    CHECK_EQ_INT(evo_space_count(s, 10000000, &total, &valid, &exact, NULL), EVO_OK);
    CHECK_EQ_INT(total, 829440 + 155520); /* the family-0 domains' product + the H_ domains' product */
    CHECK_EQ_INT(valid, 81840 + 24384);   /* configs/family0.yaml's valid count + family 1's */
    CHECK(exact);
    /* the baseline (family 0): 15 active knobs; the fifth seed (family 1): 13 */
    const uint32_t b = evo_space_active(s, &c->baseline), f1 = evo_space_active(s, &c->seeds[4]);
    CHECK_EQ_INT(__builtin_popcount(b), 15);
    CHECK_EQ_INT(__builtin_popcount(f1), 13);
    CHECK(b >> tile_m & 1u);
    CHECK(!(b >> h_pipe & 1u));
    CHECK(f1 >> h_pipe & 1u);
    CHECK(!(f1 >> tile_m & 1u));
    CHECK_EQ_INT(c->seeds[4].idx[tile_m], 0); /* inactive: canonical */
    char text[EVO_GENOME_TEXT_MAX];
    evo_genome_format(s, &c->seeds[4], text, sizeof text);
    CHECK_STR(text, "FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=3,H_TILE_N=64,H_STAGES=2,H_PIPE=2,H_QK_MODE=2,H_V_PATH=1,"
                    "H_OVERLAP=1,H_PINGPONG=0,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0");
    /* the same seed as the old form wrote it, every knob listed: the same genome */
    evo_genome old;
    evo_err err = {0};
    CHECK_EQ_INT(
        evo_genome_parse(s,
                         "TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,"
                         "F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64,FAMILY=1,"
                         "H_WG_ROWS=64,H_CONSUMERS=3,H_TILE_N=64,H_STAGES=2,H_PIPE=2,H_QK_MODE=2,H_V_PATH=1,"
                         "H_OVERLAP=1,H_PINGPONG=0,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0",
                         &old, &err),
        EVO_OK);
    CHECK(evo_genome_equal(s, &old, &c->seeds[4]));
    evo_config_free(c);
}

int main(void)
{
    test_checks();
    test_conditional_hopper();
    test_default();
    test_smoke();
    test_minimal_and_defaults();
    test_bad_fixtures();
    test_memory_errors();
    test_names();
    test_fitness_score();
    return check_result();
}
