/* test_store.c — the SQLite store: round trips, durability, groups, refusal of foreign / corrupt / newer files,
 * migration, elites, locking, read-only opens. Run: build/tests/test_store (ctest runs it).
 * Also the fixture maker of tests/cli_store.sh: `test_store --fixture populated|running|empty|newer|foreign FILE` and
 * `test_store --hold-lock FILE READY` (holds an exclusive lock, touches READY, sleeps until killed).
 */
#include "check.h"
#include "aliases.h"
#include "config.h"
#include "lease.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char buf[8][256];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 256, "%s/%s", tmpdir, name);
    return p;
}

static void file_sha(const char *path, char out[65])
{
    char *data = NULL;
    size_t len = 0;
    if (evo_read_file(path, &data, &len, NULL) != EVO_OK) {
        snprintf(out, 65, "(unreadable)");
        return;
    }
    evo_sha256_hex(data, len, out);
    free(data);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fwrite(data, 1, n, f);
    fclose(f);
}

/* Raw SQLite on a file, for setting up states evo itself never writes. */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "raw_exec %s: %s: %s\n", path, sql, sqlite3_errmsg(db));
        exit(1);
    }
    sqlite3_close(db);
}

static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK) {
        if (sqlite3_step(q) == SQLITE_ROW) v = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    return v;
}

static evo_store *open_ok(const char *path, int mode)
{
    evo_store *st = NULL;
    evo_err err = {0};
    evo_status s = evo_store_open(path, mode, &st, &err);
    if (s != EVO_OK) {
        fprintf(stderr, "open %s: %s\n", path, err.msg);
        exit(1);
    }
    return st;
}

/* ---- the population used by several tests and by the CLI fixture ---- */

#define TASK "attention_fp8"
#define ARCH "sm_90"

static void key_of(const char *genome, const char *arch, char key[65])
{
    char text[512];
    snprintf(text, sizeof text, "%s|%s|%s", TASK, arch, genome);
    evo_sha256_hex(text, strlen(text), key);
}

static void shape_set_key(char out[65])
{
    const char *d = "mission(1,8,512,64);long(2,8,2048,64)";
    evo_sha256_hex(d, strlen(d), out);
}

static int64_t add_candidate(evo_store *st, const char *genome, const char *arch, int regs, int smem)
{
    char key[65];
    key_of(genome, arch, key);
    evo_candidate_rec c = {.key = key,
                           .task = TASK,
                           .arch = (char *)arch,
                           .genome = (char *)genome,
                           .template_hash = "9f2c",
                           .options = "-std=c++17 -arch=sm_90",
                           .nvrtc_version = "13.0",
                           .registers = regs,
                           .smem_bytes = smem,
                           .spill_bytes = 0,
                           .stack_bytes = 0};
    evo_err err = {0};
    if (evo_store_put_candidate(st, &c, &err) != EVO_OK) {
        fprintf(stderr, "put_candidate: %s\n", err.msg);
        exit(1);
    }
    return c.id;
}

/* Two shapes; speedups f*1.05 and f/1.05 so that their geometric mean is f. */
/* Two shapes with speedups f*skew (mission) and f/skew (long): the geometric mean is f. */
static void fill_shapes(evo_shape_result sh[2], double f, double skew)
{
    memset(sh, 0, 2 * sizeof *sh);
    snprintf(sh[0].shape, sizeof sh[0].shape, "mission(1,8,512,64)");
    snprintf(sh[0].fields, sizeof sh[0].fields,
             "{\"batch\":1,\"heads\":8,\"seq\":512,\"head_dim\":64,\"causal\":false}");
    snprintf(sh[1].shape, sizeof sh[1].shape, "long(2,8,2048,64)");
    snprintf(sh[1].fields, sizeof sh[1].fields,
             "{\"batch\":2,\"heads\":8,\"seq\":2048,\"head_dim\":64,\"causal\":false}");
    const double base[2] = {40.0, 640.0}, bhs[2] = {1 * 8 * 512, 2 * 8 * 2048}, seq[2] = {512, 2048};
    for (int i = 0; i < 2; i++) {
        double flops = 4.0 * bhs[i] * seq[i] * 64;
        sh[i].baseline_us = base[i];
        sh[i].speedup = isnan(f) ? NAN : (i == 0 ? f * skew : f / skew);
        sh[i].median_us = isnan(f) ? 0 : base[i] / sh[i].speedup;
        sh[i].p10_us = sh[i].median_us * 0.98;
        sh[i].p90_us = sh[i].median_us * 1.03;
        sh[i].rate = isnan(f) ? 0 : flops / (sh[i].median_us * 1e-6) / 1e12;
        sh[i].max_abs = 0.0125 * (i + 1);
        sh[i].rel_l2 = 0.002 + 0.001 * i;
        sh[i].e2e_rel_l2 = 0.03;
        sh[i].e2e_rmse = 0.004;
    }
}

static int64_t add_evaluation_skewed(evo_store *st, int64_t cand, int64_t run, int gen, const char *shape_set,
                                     evo_verdict v, double fitness, double skew)
{
    evo_shape_result sh[2];
    fill_shapes(sh, v == EVO_V_OK ? fitness : NAN, skew);
    evo_eval_rec e = {.candidate_id = cand,
                      .run_id = run,
                      .generation = gen,
                      .shape_set = (char *)shape_set,
                      .verdict = v,
                      .fitness = fitness,
                      .detail = v == EVO_V_OK ? NULL : "{\"case\":\"normal seed 0\"}",
                      .gpu = "NVIDIA H100 80GB HBM3",
                      .compile_s = 1.5,
                      .check_s = 0.75,
                      .time_s = 2.25,
                      .created_at = "2026-11-21T10:01:00Z",
                      .shapes = sh,
                      .n_shapes = v == EVO_V_OK ? 2 : 0};
    evo_err err = {0};
    if (evo_store_put_evaluation(st, &e, &err) != EVO_OK) {
        fprintf(stderr, "put_evaluation: %s\n", err.msg);
        exit(1);
    }
    return e.id;
}

static int64_t add_evaluation(evo_store *st, int64_t cand, int64_t run, int gen, const char *shape_set, evo_verdict v,
                              double fitness)
{
    return add_evaluation_skewed(st, cand, run, gen, shape_set, v, fitness, 1.05);
}

static const char *const pop_genomes[] = {
    "TILE_M=64,TILE_N=64,WARPS=4,STAGES=1",   /* baseline, 1.00 */
    "TILE_M=128,TILE_N=64,WARPS=8,STAGES=2",  /* 1.84 */
    "TILE_M=64,TILE_N=128,WARPS=4,STAGES=2",  /* 1.52 */
    "TILE_M=128,TILE_N=128,WARPS=8,STAGES=3", /* INCORRECT */
    "TILE_M=32,TILE_N=64,WARPS=2,STAGES=2",   /* 1.31: the best on long (2.145x), the worst on mission (0.8x) */
    "TILE_M=256,TILE_N=128,WARPS=8,STAGES=3", /* COMPILE_FAIL */
};

/* One finished run of two generations; see tests/cli_store.sh for what evo elite / history must print of it. */
static void make_population(evo_store *st)
{
    char ss[65];
    shape_set_key(ss);
    evo_run_rec run = {.started_at = "2026-11-21T10:00:00Z",
                       .finished_at = "2026-11-21T10:05:00Z",
                       .state = "done",
                       .task = TASK,
                       .arch = ARCH,
                       .shape_set = ss,
                       .config_path = "configs/default.yaml",
                       .config_text = "task: attention_fp8\n",
                       .strategy = "ga",
                       .seed = 7,
                       .generations = 2,
                       .population = 6,
                       .gpu = "NVIDIA H100 80GB HBM3",
                       .driver = "580.65",
                       .nvrtc_version = "13.0",
                       .evo_version = EVO_VERSION,
                       .wall_s = 300.5,
                       .compile_s = 120.25,
                       .check_s = 80.5,
                       .time_s = 90.75};
    evo_err err = {0};
    if (evo_store_begin_run(st, &run, &err) != EVO_OK) {
        fprintf(stderr, "begin_run: %s\n", err.msg);
        exit(1);
    }
    int64_t c[6];
    for (int i = 0; i < 6; i++) c[i] = add_candidate(st, pop_genomes[i], ARCH, 96 + 16 * i, 16384 * (i + 1));
    add_evaluation(st, c[0], run.id, 0, ss, EVO_V_OK, 1.0);
    add_evaluation(st, c[1], run.id, 0, ss, EVO_V_OK, 1.84);
    add_evaluation(st, c[3], run.id, 0, ss, EVO_V_INCORRECT, NAN);
    add_evaluation(st, c[5], run.id, 0, ss, EVO_V_COMPILE_FAIL, NAN);
    add_evaluation(st, c[2], run.id, 1, ss, EVO_V_OK, 1.52);
    add_evaluation_skewed(st, c[4], run.id, 1, ss, EVO_V_OK, 1.31, 0.8 / 1.31);
    evo_store_put_lineage(st, run.id, 1, c[2], c[0], "mutate", &err);
    evo_store_put_lineage(st, run.id, 1, c[4], c[1], "crossover", &err);
    evo_store_put_lineage(st, run.id, 1, c[4], c[0], "crossover", &err);
    const char *mission = "mission(1,8,512,64)";
    evo_store_put_profile(st, c[1], mission, EVO_PROFILE_TENSOR_PIPE, 61.2, "%", &err);
    evo_store_put_profile(st, c[1], mission, EVO_PROFILE_DRAM, 45.1, "%", &err);
    evo_store_put_profile(st, c[1], mission, EVO_PROFILE_OCCUPANCY, 37.5, "%", &err);
    evo_store_put_profile(st, c[1], mission, EVO_PROFILE_BANK_CONFLICTS, 0, NULL, &err);
    evo_gen_rec g0 = {.run_id = run.id,
                      .generation = 0,
                      .best_fitness = 1.84,
                      .median_fitness = 1.42,
                      .evaluated = 4,
                      .reused = 0,
                      .wall_s = 150.25,
                      .compile_s = 60.5,
                      .check_s = 40.25,
                      .time_s = 45.5,
                      .baseline_noise = 0.012,
                      .best_genome = (char *)pop_genomes[1]};
    g0.counts[EVO_V_OK] = 2, g0.counts[EVO_V_INCORRECT] = 1, g0.counts[EVO_V_COMPILE_FAIL] = 1;
    evo_gen_rec g1 = {.run_id = run.id,
                      .generation = 1,
                      .best_fitness = 1.84,
                      .median_fitness = 1.52,
                      .evaluated = 2,
                      .reused = 1,
                      .wall_s = 150.25,
                      .compile_s = 59.75,
                      .check_s = 40.25,
                      .time_s = 45.25,
                      .baseline_noise = 0.015,
                      .best_genome = (char *)pop_genomes[1]};
    g1.counts[EVO_V_OK] = 2;
    if (evo_store_put_generation(st, &g0, &err) != EVO_OK || evo_store_put_generation(st, &g1, &err) != EVO_OK) {
        fprintf(stderr, "put_generation: %s\n", err.msg);
        exit(1);
    }
}

/* ---- tests ---- */

static void test_create_and_settings(void)
{
    const char *p = tmp_path("new.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    CHECK_EQ_INT(evo_store_schema_version(st), EVO_STORE_SCHEMA);
    CHECK_STR(evo_store_path(st), p);
    evo_store_close(st);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), EVO_STORE_SCHEMA);
    CHECK_EQ_INT(raw_int(p, "PRAGMA application_id"), EVO_STORE_APP_ID);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('runs', "
                            "'candidates', 'evaluations', 'results', 'lineage', 'generations', 'profiles')"),
                 7);
    /* WAL is recorded in the header: bytes 18 and 19 are 2. */
    char *data = NULL;
    size_t len = 0;
    CHECK(evo_read_file(p, &data, &len, NULL) == EVO_OK && len >= 100);
    if (data && len >= 100) {
        CHECK_EQ_INT((unsigned char)data[18], 2);
        CHECK_EQ_INT((unsigned char)data[19], 2);
    }
    free(data);
}

static void test_migrate_empty_file(void)
{
    const char *p = tmp_path("empty.db");
    write_bytes(p, "", 0);
    /* Read-only: an empty file is schema 0, every query empty, and the file stays 0 bytes. */
    evo_store *ro = open_ok(p, EVO_STORE_READONLY);
    CHECK_EQ_INT(evo_store_schema_version(ro), 0);
    int64_t id = 42;
    evo_err err = {0};
    CHECK_EQ_INT(evo_store_last_run(ro, &id, &err), EVO_E_NOTFOUND);
    evo_elite_rec *el = NULL;
    int n = -1;
    CHECK_EQ_INT(evo_store_elites(ro, TASK, ARCH, NULL, NULL, 3, &el, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 0);
    evo_store_close(ro);
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && sb.st_size == 0);

    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    CHECK_EQ_INT(evo_store_schema_version(st), EVO_STORE_SCHEMA);
    evo_store_close(st);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), EVO_STORE_SCHEMA);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE name = 'evaluations_ok'"), 1);
    /* Opening again migrates nothing and keeps the data. */
    st = open_ok(p, EVO_STORE_READWRITE);
    add_candidate(st, "A=1", ARCH, 10, 20);
    evo_store_close(st);
    st = open_ok(p, EVO_STORE_READWRITE);
    evo_candidate_rec c;
    char key[65];
    key_of("A=1", ARCH, key);
    CHECK_EQ_INT(evo_store_get_candidate(st, key, &c, &err), EVO_OK);
    CHECK_STR(c.genome, "A=1");
    evo_store_candidate_free(&c);
    evo_store_close(st);
}

static void test_round_trip(void)
{
    const char *p = tmp_path("roundtrip.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};

    evo_run_rec run = {.task = TASK,
                       .arch = ARCH,
                       .shape_set = "ss-1",
                       .config_path = "c.yaml",
                       .config_text = "a: 1\nb: [2, 3]\n",
                       .strategy = "ga",
                       .seed = -5,
                       .generations = 20,
                       .population = 16,
                       .gpu = "NVIDIA H200",
                       .driver = "580.65.06",
                       .nvrtc_version = "13.0",
                       .evo_version = "0.1.0",
                       .wall_s = 1.25,
                       .compile_s = 0.5,
                       .check_s = 0.25,
                       .time_s = 0.125};
    CHECK_EQ_INT(evo_store_begin_run(st, &run, &err), EVO_OK);
    CHECK_EQ_INT(run.id, 1);
    CHECK_STR(run.state, "running");
    CHECK(run.started_at && strlen(run.started_at) == 20 && run.started_at[19] == 'Z');
    char *started = evo_strdup(run.started_at);
    free(run.state);
    free(run.started_at);
    run.state = "done";
    run.finished_at = "2026-11-21T22:00:00Z";
    run.wall_s = 99.5;
    run.started_at = NULL;
    CHECK_EQ_INT(evo_store_update_run(st, &run, &err), EVO_OK);
    evo_run_rec ghost = run;
    ghost.id = 77;
    CHECK_EQ_INT(evo_store_update_run(st, &ghost, &err), EVO_E_NOTFOUND);

    char key[65];
    key_of("TILE_M=64", ARCH, key);
    evo_candidate_rec c = {.key = key,
                           .task = TASK,
                           .arch = ARCH,
                           .genome = "TILE_M=64",
                           .template_hash = "th",
                           .options = "-O3",
                           .nvrtc_version = "13.0",
                           .registers = 128,
                           .smem_bytes = 49152,
                           .spill_bytes = 8,
                           .stack_bytes = 16,
                           .compile_log = "ptxas info: 128 registers"};
    CHECK_EQ_INT(evo_store_put_candidate(st, &c, &err), EVO_OK);
    int64_t cid = c.id;
    CHECK(cid > 0);
    /* Same key again: same id; unknown figures (-1) and a NULL log keep what is stored, known ones replace. */
    evo_candidate_rec again = c;
    again.id = 0;
    again.registers = -1;
    again.smem_bytes = 32768;
    again.compile_log = NULL;
    CHECK_EQ_INT(evo_store_put_candidate(st, &again, &err), EVO_OK);
    CHECK_EQ_INT(again.id, cid);
    evo_candidate_rec bad = c;
    bad.key = "XYZ";
    CHECK_EQ_INT(evo_store_put_candidate(st, &bad, &err), EVO_E_INTERNAL);

    evo_shape_result sh[2];
    fill_shapes(sh, 1.5, 1.05);
    snprintf(sh[1].shape, sizeof sh[1].shape, "long(2,8,2048,64) causal");
    snprintf(sh[1].fields, sizeof sh[1].fields,
             "{\"batch\":2,\"heads\":8,\"seq\":2048,\"head_dim\":64,\"causal\":true}");
    sh[1].e2e_rmse = NAN;
    sh[0].rel_l2 = INFINITY;
    evo_eval_rec e = {.candidate_id = cid,
                      .run_id = run.id,
                      .generation = 3,
                      .shape_set = "ss-1",
                      .verdict = EVO_V_OK,
                      .fitness = 1.5,
                      .detail = "{\"k\":1}",
                      .gpu = "NVIDIA H200",
                      .compile_s = 0.5,
                      .check_s = 0.25,
                      .time_s = 0.75,
                      .shapes = sh,
                      .n_shapes = 2};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &e, &err), EVO_OK);
    CHECK(e.id > 0);
    CHECK(e.created_at != NULL);
    char *created = e.created_at;
    evo_eval_rec outside = {.candidate_id = cid,
                            .run_id = 0,
                            .generation = -1,
                            .shape_set = "ss-1",
                            .verdict = EVO_V_INCORRECT,
                            .fitness = NAN,
                            .detail = "{\"first_bad\":17}",
                            .created_at = "2026-11-21T23:00:00Z"};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &outside, &err), EVO_OK);
    /* a later NOT_RECORDED (a replay whose source lacked the genome) must not hide the measured evaluation */
    evo_eval_rec nr = {.candidate_id = cid,
                       .run_id = 0,
                       .generation = -1,
                       .shape_set = "ss-1",
                       .verdict = EVO_V_NOT_RECORDED,
                       .fitness = NAN,
                       .detail = "{}",
                       .created_at = "2026-11-21T23:30:00Z"};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &nr, &err), EVO_OK);

    CHECK_EQ_INT(evo_store_put_lineage(st, run.id, 3, cid, cid, "mutate", &err), EVO_OK);
    CHECK_EQ_INT(evo_store_put_lineage(st, run.id, 3, cid, cid, "mutate", &err), EVO_OK);   /* no duplicate */
    CHECK_EQ_INT(evo_store_put_lineage(st, run.id, 3, cid, 999, "mutate", &err), EVO_E_DB); /* FK */
    CHECK_CONTAINS(err.msg, "FOREIGN KEY");

    evo_gen_rec g = {.run_id = run.id,
                     .generation = 3,
                     .best_fitness = 1.5,
                     .median_fitness = NAN,
                     .evaluated = 12,
                     .reused = 4,
                     .wall_s = 10.5,
                     .compile_s = 4.25,
                     .check_s = 2.5,
                     .time_s = 3.75,
                     .baseline_noise = 0.0125,
                     .best_genome = "TILE_M=64"};
    for (int v = 0; v < EVO_V_COUNT; v++) g.counts[v] = v * 3 + 1;
    CHECK_EQ_INT(evo_store_put_generation(st, &g, &err), EVO_OK);
    g.evaluated = 13; /* upsert */
    CHECK_EQ_INT(evo_store_put_generation(st, &g, &err), EVO_OK);
    evo_gen_rec g2 = g;
    g2.generation = 4;
    g2.best_genome = NULL;
    CHECK_EQ_INT(evo_store_put_generation(st, &g2, &err), EVO_OK);

    CHECK_EQ_INT(evo_store_put_profile(st, cid, "mission", EVO_PROFILE_OCCUPANCY, 37.5, "%", &err), EVO_OK);
    CHECK_EQ_INT(evo_store_put_profile(st, cid, "mission", EVO_PROFILE_OCCUPANCY, 40.0, "%", &err), EVO_OK);
    CHECK_EQ_INT(evo_store_put_profile(st, cid, "long", EVO_PROFILE_BANK_CONFLICTS, 12, NULL, &err), EVO_OK);
    evo_store_close(st);

    /* Reopen read-only and read everything back. */
    st = open_ok(p, EVO_STORE_READONLY);
    evo_run_rec r;
    CHECK_EQ_INT(evo_store_get_run(st, 1, &r, &err), EVO_OK);
    CHECK_EQ_INT(r.id, 1);
    CHECK_STR(r.started_at, started);
    CHECK_STR(r.finished_at, "2026-11-21T22:00:00Z");
    CHECK_STR(r.state, "done");
    CHECK_STR(r.task, TASK);
    CHECK_STR(r.arch, ARCH);
    CHECK_STR(r.shape_set, "ss-1");
    CHECK_STR(r.config_path, "c.yaml");
    CHECK_STR(r.config_text, "a: 1\nb: [2, 3]\n");
    CHECK_STR(r.strategy, "ga");
    CHECK_EQ_INT(r.seed, -5);
    CHECK_EQ_INT(r.generations, 20);
    CHECK_EQ_INT(r.population, 16);
    CHECK_STR(r.gpu, "NVIDIA H200");
    CHECK_STR(r.driver, "580.65.06");
    CHECK_STR(r.nvrtc_version, "13.0");
    CHECK_STR(r.evo_version, "0.1.0");
    CHECK(r.wall_s == 99.5 && r.compile_s == 0.5 && r.check_s == 0.25 && r.time_s == 0.125);
    evo_store_run_free(&r);
    CHECK_EQ_INT(evo_store_get_run(st, 2, &r, &err), EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "no run 2");
    int64_t last = 0;
    CHECK_EQ_INT(evo_store_last_run(st, &last, &err), EVO_OK);
    CHECK_EQ_INT(last, 1);
    CHECK_EQ_INT(evo_store_last_run_matching(st, TASK, "sm_80", &last, &err), EVO_E_NOTFOUND);
    CHECK_EQ_INT(evo_store_last_run_matching(st, TASK, NULL, &last, &err), EVO_OK);

    evo_candidate_rec rc;
    CHECK_EQ_INT(evo_store_get_candidate(st, key, &rc, &err), EVO_OK);
    CHECK_EQ_INT(rc.id, cid);
    CHECK_STR(rc.key, key);
    CHECK_STR(rc.task, TASK);
    CHECK_STR(rc.arch, ARCH);
    CHECK_STR(rc.genome, "TILE_M=64");
    CHECK_STR(rc.template_hash, "th");
    CHECK_STR(rc.options, "-O3");
    CHECK_STR(rc.nvrtc_version, "13.0");
    CHECK_EQ_INT(rc.registers, 128);
    CHECK_EQ_INT(rc.smem_bytes, 32768);
    CHECK_EQ_INT(rc.spill_bytes, 8);
    CHECK_EQ_INT(rc.stack_bytes, 16);
    CHECK_STR(rc.compile_log, "ptxas info: 128 registers");
    evo_store_candidate_free(&rc);

    evo_eval_rec re;
    bool found = false;
    CHECK_EQ_INT(evo_store_find_evaluation(st, cid, "ss-1", NULL, 0, &re, &found, &err), EVO_OK);
    CHECK(found);
    CHECK_EQ_INT(re.id, outside.id); /* the most recent measured one, not the later NOT_RECORDED */
    CHECK_EQ_INT(re.run_id, 0);
    CHECK_EQ_INT(re.generation, -1);
    CHECK_EQ_INT(re.verdict, EVO_V_INCORRECT);
    CHECK(isnan(re.fitness));
    CHECK_STR(re.detail, "{\"first_bad\":17}");
    CHECK(re.gpu == NULL);
    CHECK_EQ_INT(re.n_shapes, 0);
    evo_store_eval_free(&re);
    CHECK_EQ_INT(evo_store_find_evaluation(st, cid, "other", NULL, 0, &re, &found, &err), EVO_OK);
    CHECK(!found);

    evo_elite_rec *el = NULL;
    int n = 0;
    CHECK_EQ_INT(evo_store_elites(st, TASK, ARCH, "ss-1", NULL, 5, &el, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        const evo_eval_rec *x = &el[0].eval;
        CHECK_EQ_INT(x->id, e.id);
        CHECK_EQ_INT(x->candidate_id, cid);
        CHECK_EQ_INT(x->run_id, 1);
        CHECK_EQ_INT(x->generation, 3);
        CHECK_STR(x->shape_set, "ss-1");
        CHECK_EQ_INT(x->verdict, EVO_V_OK);
        CHECK(x->fitness == 1.5);
        CHECK_STR(x->detail, "{\"k\":1}");
        CHECK_STR(x->gpu, "NVIDIA H200");
        CHECK(x->compile_s == 0.5 && x->check_s == 0.25 && x->time_s == 0.75);
        CHECK_STR(x->created_at, created);
        CHECK_EQ_INT(x->n_shapes, 2);
        for (int i = 0; i < 2 && x->n_shapes == 2; i++) {
            const evo_shape_result *a = &x->shapes[i], *b = &sh[i];
            CHECK_STR(a->shape, b->shape);
            CHECK_STR(a->fields, b->fields);
            CHECK(a->median_us == b->median_us && a->p10_us == b->p10_us && a->p90_us == b->p90_us);
            CHECK(a->baseline_us == b->baseline_us && a->speedup == b->speedup && a->rate == b->rate);
            CHECK(a->max_abs == b->max_abs && a->e2e_rel_l2 == b->e2e_rel_l2);
            CHECK(a->rel_l2 == b->rel_l2); /* INFINITY survives */
            CHECK(isnan(b->e2e_rmse) ? isnan(a->e2e_rmse) : a->e2e_rmse == b->e2e_rmse);
        }
        CHECK_STR(el[0].cand.genome, "TILE_M=64");
    }
    evo_store_elites_free(el, n);

    evo_gen_rec *gens = NULL;
    CHECK_EQ_INT(evo_store_generations(st, 1, &gens, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_INT(gens[0].run_id, 1);
        CHECK_EQ_INT(gens[0].generation, 3);
        CHECK(gens[0].best_fitness == 1.5);
        CHECK(isnan(gens[0].median_fitness));
        CHECK_EQ_INT(gens[0].evaluated, 13);
        CHECK_EQ_INT(gens[0].reused, 4);
        for (int v = 0; v < EVO_V_COUNT; v++) CHECK_EQ_INT(gens[0].counts[v], v * 3 + 1);
        CHECK(gens[0].wall_s == 10.5 && gens[0].compile_s == 4.25 && gens[0].check_s == 2.5 && gens[0].time_s == 3.75 &&
              gens[0].baseline_noise == 0.0125);
        CHECK_STR(gens[0].best_genome, "TILE_M=64");
        CHECK_EQ_INT(gens[1].generation, 4);
        CHECK(gens[1].best_genome == NULL);
    }
    for (int i = 0; i < n; i++) evo_store_gen_free(&gens[i]);
    free(gens);
    evo_store_close(st);
    free(started);
    free(created);
}

/* Callback collectors for the reader functions. */
typedef struct {
    char text[1024];
} sink;

static void lineage_cb(int64_t run, int gen, int64_t parent, const char *op, void *ctx)
{
    sink *s = ctx;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "[%lld %d %lld %s]", (long long)run, gen, (long long)parent, op);
}

static void profile_cb(const char *shape, const char *metric, double v, const char *unit, void *ctx)
{
    sink *s = ctx;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "[%s %s %g %s]", shape, metric, v, unit ? unit : "-");
}

static void verdict_cb(const char *genome, evo_verdict v, double f, void *ctx)
{
    sink *s = ctx;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "[%s %s %g]", genome, evo_verdict_name(v), f);
}

static void run_eval_cb(const evo_candidate_rec *c, const evo_eval_rec *e, void *ctx)
{
    sink *s = ctx;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "[%.4s g%d %s %d]", c->genome, e->generation,
             evo_verdict_name(e->verdict), e->n_shapes);
}

static void test_readers(void)
{
    const char *p = tmp_path("readers.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    make_population(st);
    evo_store_close(st);
    st = open_ok(p, EVO_STORE_READONLY);
    evo_err err = {0};
    char k1[65], k2[65], k4[65];
    key_of(pop_genomes[1], ARCH, k1);
    key_of(pop_genomes[2], ARCH, k2);
    key_of(pop_genomes[4], ARCH, k4);

    evo_candidate_rec c;
    CHECK_EQ_INT(evo_store_get_candidate(st, k4, &c, &err), EVO_OK);
    int64_t id4 = c.id;
    evo_store_candidate_free(&c);
    sink s = {""};
    CHECK_EQ_INT(evo_store_lineage(st, id4, lineage_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "[1 1 2 crossover][1 1 1 crossover]");

    CHECK_EQ_INT(evo_store_get_candidate(st, k1, &c, &err), EVO_OK);
    int64_t id1 = c.id;
    evo_store_candidate_free(&c);
    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_profiles(st, id1, profile_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "[mission(1,8,512,64) achieved_occupancy 37.5 %][mission(1,8,512,64) dram_throughput 45.1 %]"
                      "[mission(1,8,512,64) smem_bank_conflicts 0 -][mission(1,8,512,64) tensor_pipe_util 61.2 %]");

    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_foreach_evaluation(st, TASK, ARCH, NULL, 0, verdict_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "[TILE_M=64,TILE_N=64,WARPS=4,STAGES=1 OK 1][TILE_M=128,TILE_N=64,WARPS=8,STAGES=2 OK 1.84]"
                      "[TILE_M=128,TILE_N=128,WARPS=8,STAGES=3 INCORRECT nan]"
                      "[TILE_M=256,TILE_N=128,WARPS=8,STAGES=3 COMPILE_FAIL nan]"
                      "[TILE_M=64,TILE_N=128,WARPS=4,STAGES=2 OK 1.52][TILE_M=32,TILE_N=64,WARPS=2,STAGES=2 OK 1.31]");
    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_foreach_evaluation(st, TASK, "sm_80", NULL, 0, verdict_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "");
    /* Every evaluation of the fixture belongs to run 1: none was made before it, all before run 2. */
    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_foreach_evaluation(st, TASK, ARCH, NULL, 1, verdict_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "");
    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_foreach_evaluation(st, TASK, ARCH, NULL, 2, verdict_cb, &s, &err), EVO_OK);
    CHECK_CONTAINS(s.text, "[TILE_M=64,TILE_N=128,WARPS=4,STAGES=2 OK 1.52]");

    /* The replay lookup: by genome text, latest evaluation for the shape set. */
    char ss[65];
    shape_set_key(ss);
    evo_eval_rec byg;
    bool found = false;
    CHECK_EQ_INT(evo_store_find_evaluation_by_genome(st, TASK, "TILE_M=64,TILE_N=128,WARPS=4,STAGES=2", ss, ARCH, &byg,
                                                     &found, &err),
                 EVO_OK);
    CHECK(found);
    if (found) {
        CHECK_EQ_INT(byg.verdict, EVO_V_OK);
        CHECK_NEAR(byg.fitness, 1.52, 1e-12);
        evo_store_eval_free(&byg);
    }
    CHECK_EQ_INT(evo_store_find_evaluation_by_genome(st, TASK, "TILE_M=64,TILE_N=128,WARPS=4,STAGES=2", ss, "sm_80",
                                                     &byg, &found, &err),
                 EVO_OK);
    CHECK(!found);
    CHECK_EQ_INT(evo_store_find_evaluation_by_genome(st, TASK, "TILE_M=1", ss, NULL, &byg, &found, &err), EVO_OK);
    CHECK(!found);

    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_foreach_run_evaluation(st, 1, 1, run_eval_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "[TILE g1 OK 2][TILE g1 OK 2]");
    s.text[0] = '\0';
    CHECK_EQ_INT(evo_store_foreach_run_evaluation(st, 1, -1, run_eval_cb, &s, &err), EVO_OK);
    CHECK_STR(s.text, "[TILE g0 OK 2][TILE g0 OK 2][TILE g0 INCORRECT 0][TILE g0 COMPILE_FAIL 0][TILE g1 OK 2]"
                      "[TILE g1 OK 2]");

    /* Ids: full key, 8-hex prefix in either case, decimal id, unknown. */
    char prefix[9];
    snprintf(prefix, sizeof prefix, "%.8s", k2);
    CHECK_EQ_INT(evo_store_get_candidate(st, prefix, &c, &err), EVO_OK);
    CHECK_STR(c.genome, pop_genomes[2]);
    evo_store_candidate_free(&c);
    for (char *q = prefix; *q; q++) *q = (char)(*q >= 'a' && *q <= 'f' ? *q - 32 : *q);
    CHECK_EQ_INT(evo_store_get_candidate(st, prefix, &c, &err), EVO_OK);
    CHECK_STR(c.genome, pop_genomes[2]);
    evo_store_candidate_free(&c);
    CHECK_EQ_INT(evo_store_get_candidate(st, "2", &c, &err), EVO_OK);
    CHECK_STR(c.genome, pop_genomes[1]);
    evo_store_candidate_free(&c);
    CHECK_EQ_INT(evo_store_get_candidate(st, "nope", &c, &err), EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "no candidate 'nope'");
    evo_store_close(st);

    /* Two keys sharing a 4-digit prefix make that prefix ambiguous. */
    st = open_ok(p, EVO_STORE_READWRITE);
    char kx[65], ky[65];
    memset(kx, 'a', 64);
    kx[64] = '\0';
    memcpy(ky, kx, 65);
    ky[63] = 'b';
    evo_candidate_rec x = {.key = kx,
                           .task = TASK,
                           .arch = ARCH,
                           .genome = "X=1",
                           .template_hash = "t",
                           .options = "",
                           .nvrtc_version = "13.0",
                           .registers = -1,
                           .smem_bytes = -1,
                           .spill_bytes = -1,
                           .stack_bytes = -1};
    evo_candidate_rec y = x;
    y.key = ky;
    y.genome = "X=2";
    CHECK_EQ_INT(evo_store_put_candidate(st, &x, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_put_candidate(st, &y, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_get_candidate(st, "aaaa", &c, &err), EVO_E_USAGE);
    CHECK_CONTAINS(err.msg, "matches several candidates");
    CHECK_EQ_INT(evo_store_get_candidate(st, ky, &c, &err), EVO_OK);
    CHECK_STR(c.genome, "X=2");
    CHECK_EQ_INT(c.registers, -1);
    evo_store_candidate_free(&c);
    evo_store_close(st);
}

static void test_durability(void)
{
    const char *p = tmp_path("durable.db");
    evo_store *w = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};
    int64_t cid = add_candidate(w, "D=1", ARCH, 1, 2);
    add_evaluation(w, cid, 0, -1, "ss", EVO_V_OK, 1.25);
    /* A second connection sees both while the writer is still open: each put committed on return. */
    evo_store *r = open_ok(p, EVO_STORE_READONLY);
    evo_eval_rec e;
    bool found = false;
    CHECK_EQ_INT(evo_store_find_evaluation(r, cid, "ss", NULL, 0, &e, &found, &err), EVO_OK);
    CHECK(found && e.fitness == 1.25 && e.n_shapes == 2);
    evo_store_eval_free(&e);

    /* Inside a group nothing is visible to others until commit. */
    CHECK_EQ_INT(evo_store_begin(w, &err), EVO_OK);
    int64_t cid2 = add_candidate(w, "D=2", ARCH, 1, 2);
    add_evaluation(w, cid2, 0, -1, "ss", EVO_V_OK, 2.5);
    CHECK_EQ_INT(evo_store_find_evaluation(r, cid2, "ss", NULL, 0, &e, &found, &err), EVO_OK);
    CHECK(!found);
    CHECK_EQ_INT(evo_store_commit(w, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_find_evaluation(r, cid2, "ss", NULL, 0, &e, &found, &err), EVO_OK);
    CHECK(found && e.fitness == 2.5);
    evo_store_eval_free(&e);
    evo_store_close(r);

    /* A child process that dies without closing (like kill -9) loses nothing it had put. */
    pid_t pid = fork();
    if (pid == 0) {
        evo_store *c = open_ok(p, EVO_STORE_READWRITE);
        int64_t id = add_candidate(c, "D=3", ARCH, 1, 2);
        add_evaluation(c, id, 0, -1, "ss", EVO_V_OK, 3.75);
        _exit(0); /* no close, no checkpoint */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    evo_store_close(w);
    r = open_ok(p, EVO_STORE_READONLY);
    evo_candidate_rec c;
    char key[65];
    key_of("D=3", ARCH, key);
    CHECK_EQ_INT(evo_store_get_candidate(r, key, &c, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_find_evaluation(r, c.id, "ss", NULL, 0, &e, &found, &err), EVO_OK);
    CHECK(found && e.fitness == 3.75);
    evo_store_eval_free(&e);
    evo_store_candidate_free(&c);
    evo_store_close(r);
}

/* A trigger makes the second result row of any evaluation fail (standing in for a full disk), so a put that has
 * already written part of its rows fails half way. */
static void inject_result_failure(const char *path)
{
    raw_exec(path, "CREATE TRIGGER fail_second_result BEFORE INSERT ON results WHEN NEW.position = 1 "
                   "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
}

static void test_group_rollback(void)
{
    const char *p = tmp_path("rollback.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    add_candidate(st, "R=0", ARCH, 1, 2);
    evo_store_close(st);
    inject_result_failure(p);
    st = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};
    char k1[65], k2[65];
    key_of("R=1", ARCH, k1);
    key_of("R=2", ARCH, k2);
    evo_shape_result sh[2];
    fill_shapes(sh, 1.0, 1.05);

    /* A failing put inside a group: its error comes back, its own rows are gone at once (the same handle does
     * not see them), later puts are refused, and commit rolls the whole group back. */
    CHECK_EQ_INT(evo_store_begin(st, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_begin(st, &err), EVO_E_INTERNAL);
    int64_t cid1 = add_candidate(st, "R=1", ARCH, 1, 2);
    evo_eval_rec half = {.candidate_id = cid1,
                         .shape_set = "ss",
                         .verdict = EVO_V_OK,
                         .fitness = 1.0,
                         .generation = -1,
                         .created_at = "2026-01-01T00:00:00Z",
                         .shapes = sh,
                         .n_shapes = 2};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &half, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "injected failure");
    CHECK_EQ_INT(half.id, 0);
    evo_eval_rec e;
    bool found = true;
    CHECK_EQ_INT(evo_store_find_evaluation(st, cid1, "ss", NULL, 0, &e, &found, &err), EVO_OK);
    CHECK(!found);
    evo_candidate_rec c2 = {.key = k2,
                            .task = TASK,
                            .arch = ARCH,
                            .genome = "R=2",
                            .template_hash = "t",
                            .options = "",
                            .nvrtc_version = "13.0"};
    CHECK_EQ_INT(evo_store_put_candidate(st, &c2, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "an earlier write of this transaction failed (");
    CHECK_CONTAINS(err.msg, "injected failure");
    CHECK_EQ_INT(evo_store_commit(st, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "transaction rolled back");
    evo_candidate_rec c;
    CHECK_EQ_INT(evo_store_get_candidate(st, k1, &c, &err), EVO_E_NOTFOUND);

    /* A foreign-key violation inside a group: the same. */
    CHECK_EQ_INT(evo_store_begin(st, &err), EVO_OK);
    add_candidate(st, "R=1", ARCH, 1, 2);
    evo_eval_rec orphan = {.candidate_id = 99999,
                           .shape_set = "ss",
                           .verdict = EVO_V_OK,
                           .fitness = 1.0,
                           .generation = -1,
                           .created_at = "2026-01-01T00:00:00Z"};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &orphan, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "FOREIGN KEY constraint failed");
    CHECK_EQ_INT(evo_store_commit(st, &err), EVO_E_DB);
    CHECK_EQ_INT(evo_store_get_candidate(st, k1, &c, &err), EVO_E_NOTFOUND);

    /* An explicit rollback undoes successful puts too; the handle works afterwards. */
    CHECK_EQ_INT(evo_store_begin(st, &err), EVO_OK);
    add_candidate(st, "R=1", ARCH, 1, 2);
    evo_store_rollback(st);
    CHECK_EQ_INT(evo_store_get_candidate(st, k1, &c, &err), EVO_E_NOTFOUND);
    CHECK_EQ_INT(evo_store_commit(st, &err), EVO_E_INTERNAL);
    add_candidate(st, "R=2", ARCH, 1, 2);
    CHECK_EQ_INT(evo_store_get_candidate(st, k2, &c, &err), EVO_OK);
    evo_store_candidate_free(&c);

    /* Outside a group a failing put leaves nothing half-written either: no evaluation row without its results. */
    int64_t cid3 = add_candidate(st, "R=3", ARCH, 1, 2);
    half.candidate_id = cid3;
    CHECK_EQ_INT(evo_store_put_evaluation(st, &half, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "injected failure");
    half.n_shapes = 1; /* one result row passes the trigger */
    CHECK_EQ_INT(evo_store_put_evaluation(st, &half, &err), EVO_OK);
    evo_store_close(st);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM evaluations"), 1);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM results"), 1);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM candidates"), 3);
}

static void test_refuse_foreign_and_corrupt(void)
{
    evo_err err = {0};
    evo_store *st = NULL;
    char before[65], after[65];

    /* Random bytes. */
    const char *p = tmp_path("random.db");
    evo_rng rng;
    evo_rng_seed(&rng, 1);
    unsigned char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)evo_rng_next(&rng);
    write_bytes(p, junk, sizeof junk);
    file_sha(p, before);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_INT(evo_store_open(p, mode, &st, &err), EVO_E_DB);
        CHECK(st == NULL);
        char want[512];
        snprintf(want, sizeof want, "%s: not an evo database (file is not a database)", p);
        CHECK_STR(err.msg, want);
    }
    file_sha(p, after);
    CHECK_STR(after, before);
    CHECK(!evo_file_exists(tmp_path("random.db-wal")) && !evo_file_exists(tmp_path("random.db-shm")));

    /* A valid SQLite header followed by garbage. */
    const char *real = tmp_path("real.db");
    st = open_ok(real, EVO_STORE_READWRITE);
    for (int i = 0; i < 200; i++) {
        char g[64];
        snprintf(g, sizeof g, "K=%d", i);
        int64_t id = add_candidate(st, g, ARCH, i, i);
        add_evaluation(st, id, 0, -1, "ss", EVO_V_OK, 1.0 + i / 100.0);
    }
    evo_store_close(st);
    char *data = NULL;
    size_t len = 0;
    CHECK(evo_read_file(real, &data, &len, NULL) == EVO_OK && len > 16384);
    const char *hg = tmp_path("headgarbage.db");
    memcpy(junk, data, 100);
    write_bytes(hg, junk, sizeof junk);
    file_sha(hg, before);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_INT(evo_store_open(hg, mode, &st, &err), EVO_E_DB);
        CHECK_CONTAINS(err.msg, hg);
    }
    file_sha(hg, after);
    CHECK_STR(after, before);

    /* A truncated real database. */
    const char *tr = tmp_path("truncated.db");
    write_bytes(tr, data, len / 2);
    file_sha(tr, before);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_INT(evo_store_open(tr, mode, &st, &err), EVO_E_DB);
        CHECK_CONTAINS(err.msg, "corrupt database");
        CHECK_CONTAINS(err.msg, tr);
    }
    file_sha(tr, after);
    CHECK_STR(after, before);

    /* The last page overwritten: the header and schema read fine, only PRAGMA quick_check sees the damage. */
    const char *tl = tmp_path("lastpage.db");
    memset(data + len - 4096, 0xff, 4096);
    write_bytes(tl, data, len);
    file_sha(tl, before);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_INT(evo_store_open(tl, mode, &st, &err), EVO_E_DB);
        CHECK_CONTAINS(err.msg, "corrupt database (quick_check: ");
    }
    file_sha(tl, after);
    CHECK_STR(after, before);
    free(data);

    /* Another program's SQLite file, user_version 0. */
    const char *fo = tmp_path("foreign.db");
    raw_exec(fo, "CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT); INSERT INTO photos VALUES (1, 'a.jpg')");
    file_sha(fo, before);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_INT(evo_store_open(fo, mode, &st, &err), EVO_E_DB);
        CHECK_CONTAINS(err.msg, "not an evo database");
        CHECK_CONTAINS(err.msg, "another program");
    }
    file_sha(fo, after);
    CHECK_STR(after, before);
    CHECK_EQ_INT(raw_int(fo, "SELECT count(*) FROM sqlite_master"), 1);

    /* Another program's application id. */
    const char *fa = tmp_path("foreign-app.db");
    raw_exec(fa, "PRAGMA application_id = 1234");
    file_sha(fa, before);
    CHECK_EQ_INT(evo_store_open(fa, EVO_STORE_READWRITE, &st, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "application id 0x000004d2");
    file_sha(fa, after);
    CHECK_STR(after, before);

    /* A directory. */
    CHECK_EQ_INT(evo_store_open(tmpdir, EVO_STORE_READONLY, &st, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "not a regular file");
}

static void test_newer_schema(void)
{
    const char *p = tmp_path("newer.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    add_candidate(st, "N=1", ARCH, 1, 2);
    evo_store_close(st);
    raw_exec(p, "PRAGMA user_version = 99");
    char before[65], after[65], want[512];
    file_sha(p, before);
    evo_err err = {0};
    snprintf(want, sizeof want, "%s: schema version 99 is newer than this evo understands (%d); upgrade evo", p,
             EVO_STORE_SCHEMA);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_INT(evo_store_open(p, mode, &st, &err), EVO_E_DB_SCHEMA);
        CHECK_STR(err.msg, want);
    }
    file_sha(p, after);
    CHECK_STR(after, before);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), 99);
}

static void test_readonly(void)
{
    evo_err err = {0};
    evo_store *st = NULL;
    const char *missing = tmp_path("missing.db");
    CHECK_EQ_INT(evo_store_open(missing, EVO_STORE_READONLY, &st, &err), EVO_E_NOTFOUND);
    char want[512];
    snprintf(want, sizeof want, "no database at %s — run `evo run` first", missing);
    CHECK_STR(err.msg, want);
    CHECK(!evo_file_exists(missing));
    CHECK(!evo_file_exists(tmp_path("missing.db-wal")));

    const char *p = tmp_path("ro.db");
    st = open_ok(p, EVO_STORE_READWRITE);
    make_population(st);
    evo_store_close(st);
    char before[65], after[65];
    file_sha(p, before);
    st = open_ok(p, EVO_STORE_READONLY);
    CHECK_EQ_INT(evo_store_begin(st, &err), EVO_E_INTERNAL);
    evo_gen_rec g = {.run_id = 1, .generation = 9};
    CHECK_EQ_INT(evo_store_put_generation(st, &g, &err), EVO_E_INTERNAL);
    CHECK_CONTAINS(err.msg, "read-only");
    evo_elite_rec *el;
    int n;
    CHECK_EQ_INT(evo_store_elites(st, TASK, ARCH, NULL, NULL, 10, &el, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 4);
    evo_store_elites_free(el, n);
    evo_store_close(st);
    file_sha(p, after);
    CHECK_STR(after, before);
}

/* The same read in a directory this process cannot write: as root, in a child that drops to nobody. */
static void test_readonly_directory(void)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/rodir", tmpdir);
    CHECK(mkdir(dir, 0755) == 0);
    char p[400];
    snprintf(p, sizeof p, "%s/pop.db", dir);
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    make_population(st);
    evo_store_close(st);
    chmod(tmpdir, 0755);
    chmod(p, 0644);
    chmod(dir, 0555);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
        evo_store *ro = NULL;
        evo_err err = {0};
        if (evo_store_open(p, EVO_STORE_READONLY, &ro, &err) != EVO_OK) {
            fprintf(stderr, "read-only directory: %s\n", err.msg);
            _exit(1);
        }
        evo_elite_rec *el;
        int n = 0;
        evo_status s = evo_store_elites(ro, TASK, ARCH, NULL, NULL, 3, &el, &n, &err);
        int ok = s == EVO_OK && n == 3 && el[0].eval.fitness == 1.84;
        evo_store_elites_free(el, n);
        evo_store_close(ro);
        _exit(ok ? 0 : 2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    char wal[420];
    snprintf(wal, sizeof wal, "%s-wal", p);
    CHECK(!evo_file_exists(wal));
    chmod(dir, 0755);
}

static void test_elites(void)
{
    const char *p = tmp_path("elites.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};
    int64_t a = add_candidate(st, "E=A", ARCH, 1, 1);
    int64_t b = add_candidate(st, "E=B", ARCH, 1, 1);
    int64_t c = add_candidate(st, "E=C", ARCH, 1, 1);
    int64_t d = add_candidate(st, "E=D", ARCH, 1, 1);
    int64_t e = add_candidate(st, "E=E", ARCH, 1, 1);
    int64_t f = add_candidate(st, "E=F", ARCH, 1, 1);
    int64_t g = add_candidate(st, "E=G", "sm_100", 1, 1);
    add_evaluation(st, a, 0, -1, "s1", EVO_V_OK, 1.5);
    int64_t b_best = add_evaluation(st, b, 0, -1, "s1", EVO_V_OK, 2.0);
    add_evaluation(st, b, 0, -1, "s1", EVO_V_OK, 1.2); /* B again, worse: B still ranks by its best */
    add_evaluation(st, c, 0, -1, "s1", EVO_V_OK, 1.5); /* ties A; A was evaluated first */
    add_evaluation(st, d, 0, -1, "s1", EVO_V_INCORRECT, NAN);
    add_evaluation(st, e, 0, -1, "s1", EVO_V_REGRESSED, 3.0); /* has a fitness, but is not OK */
    add_evaluation(st, f, 0, -1, "s2", EVO_V_OK, 1.8);
    add_evaluation(st, g, 0, -1, "s1", EVO_V_OK, 2.5);
    evo_store_close(st);
    st = open_ok(p, EVO_STORE_READONLY);

    struct {
        const char *arch, *set;
        int k;
        const char *want;
    } cases[] = {
        {ARCH, "s1", 3, "E=B 2 E=A 1.5 E=C 1.5 "},
        {ARCH, "s1", 10, "E=B 2 E=A 1.5 E=C 1.5 "},
        {ARCH, "s1", 2, "E=B 2 E=A 1.5 "},
        {ARCH, "s1", 1, "E=B 2 "},
        {ARCH, "s1", 0, ""},
        {ARCH, NULL, 10, "E=B 2 E=F 1.8 E=A 1.5 E=C 1.5 "},
        {NULL, "s1", 10, "E=G 2.5 E=B 2 E=A 1.5 E=C 1.5 "},
        {"sm_80", "s1", 10, ""},
    };
    for (size_t i = 0; i < EVO_ARRAY_LEN(cases); i++) {
        evo_elite_rec *el = NULL;
        int n = -1;
        CHECK_EQ_INT(evo_store_elites(st, TASK, cases[i].arch, cases[i].set, NULL, cases[i].k, &el, &n, &err), EVO_OK);
        char got[256] = "";
        for (int j = 0; j < n; j++) {
            size_t len = strlen(got);
            snprintf(got + len, sizeof got - len, "%s %g ", el[j].cand.genome, el[j].eval.fitness);
        }
        CHECK_STR(got, cases[i].want);
        if (i == 0 && n > 0) CHECK_EQ_INT(el[0].eval.id, b_best);
        evo_store_elites_free(el, n);
    }
    evo_store_close(st);
}

/* The write lock held by another connection: a put waits the busy timeout and gives up with EVO_E_DB. */
static void test_locked(void)
{
    const char *p = tmp_path("locked.db");
    evo_store *a = open_ok(p, EVO_STORE_READWRITE);
    setenv("EVO_STORE_BUSY_MS", "200", 1);
    evo_store *b = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};
    CHECK_EQ_INT(evo_store_begin(a, &err), EVO_OK);
    add_candidate(a, "L=1", ARCH, 1, 1);
    char key[65];
    key_of("L=2", ARCH, key);
    evo_candidate_rec c = {.key = key,
                           .task = TASK,
                           .arch = ARCH,
                           .genome = "L=2",
                           .template_hash = "t",
                           .options = "",
                           .nvrtc_version = "13.0"};
    double t0 = evo_now();
    CHECK_EQ_INT(evo_store_put_candidate(b, &c, &err), EVO_E_DB);
    double waited = evo_now() - t0;
    char want[512];
    snprintf(want, sizeof want, "%s: database is locked by another process (gave up after 200 ms", p);
    CHECK_CONTAINS(err.msg, want);
    CHECK(waited >= 0.15 && waited < 3.0);
    CHECK_EQ_INT(evo_store_begin(b, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "locked");
    CHECK_EQ_INT(evo_store_commit(a, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_put_candidate(b, &c, &err), EVO_OK);
    evo_store_close(b);
    evo_store_close(a);

    /* An exclusive lock (locking_mode EXCLUSIVE) keeps even readers out: opening read-only fails the same way. */
    sqlite3 *x;
    CHECK(sqlite3_open(p, &x) == SQLITE_OK);
    CHECK(sqlite3_exec(x, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK);
    evo_store *r = NULL;
    char before[65], after[65];
    file_sha(p, before);
    CHECK_EQ_INT(evo_store_open(p, EVO_STORE_READONLY, &r, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "database is locked");
    CHECK_EQ_INT(evo_store_open(p, EVO_STORE_READWRITE, &r, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "database is locked");
    file_sha(p, after);
    CHECK_STR(after, before);
    sqlite3_exec(x, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(x);
    unsetenv("EVO_STORE_BUSY_MS");
}

/* ---- fixture mode for tests/cli_store.sh ---- */

static int fixture(const char *kind, const char *path)
{
    if (strcmp(kind, "foreign") == 0) {
        raw_exec(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)");
        return 0;
    }
    evo_store *st = open_ok(path, EVO_STORE_READWRITE);
    if (strcmp(kind, "populated") == 0 || strcmp(kind, "newer") == 0 || strcmp(kind, "running") == 0)
        make_population(st);
    if (strcmp(kind, "running") == 0) {
        /* A second run of the same search that has not finished a generation yet. */
        evo_run_rec r2 = {0};
        evo_err err = {0};
        if (evo_store_get_run(st, 1, &r2, &err) != EVO_OK) return 1;
        free(r2.finished_at);
        free(r2.state);
        free(r2.started_at);
        r2.finished_at = r2.state = NULL;
        r2.started_at = evo_strdup("2026-11-21T11:00:00Z");
        r2.seed = 8;
        r2.wall_s = 3.5;
        if (evo_store_begin_run(st, &r2, &err) != EVO_OK) return 1;
        evo_store_run_free(&r2);
    } else if (strcmp(kind, "populated") != 0 && strcmp(kind, "newer") != 0 && strcmp(kind, "empty") != 0) {
        fprintf(stderr, "test_store: unknown fixture '%s' (populated, running, empty, newer, foreign)\n", kind);
        evo_store_close(st);
        return 2;
    }
    evo_store_close(st);
    if (strcmp(kind, "newer") == 0) raw_exec(path, "PRAGMA user_version = 7");
    return 0;
}

static int hold_lock(const char *path, const char *ready)
{
    sqlite3 *x;
    if (sqlite3_open(path, &x) != SQLITE_OK ||
        sqlite3_exec(x, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "test_store: cannot lock %s: %s\n", path, sqlite3_errmsg(x));
        return 1;
    }
    write_bytes(ready, "", 0);
    sleep(60);
    return 0;
}

/* A version-1 file (tests/data/replay-v1.db was recorded by the first schema): read as it is, then migrated to version
 * 2 on a writing open with every row kept; a demoted candidate leaves the elites. */
static void test_migrate_v1_and_demote(void)
{
    char cmd[600];
    const char *p = tmp_path("v1.db");
    snprintf(cmd, sizeof cmd, "cp '%s/tests/data/replay-v1.db' '%s'", EVO_SOURCE_DIR, p);
    CHECK(system(cmd) == 0);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), 1);
    const int evals = raw_int(p, "SELECT count(*) FROM evaluations"),
              results = raw_int(p, "SELECT count(*) FROM results");
    CHECK_EQ_INT(evals, 216);
    CHECK_EQ_INT(results, 810);
    evo_err err = {0};
    evo_elite_rec *el = NULL;
    int n = 0;
    evo_store *ro = open_ok(p, EVO_STORE_READONLY);
    CHECK_EQ_INT(evo_store_elites(ro, TASK, NULL, NULL, NULL, 1000, &el, &n, &err), EVO_OK);
    CHECK(n >= 3);
    const int64_t best = n ? el[0].cand.id : -1, second = n > 1 ? el[1].cand.id : -1;
    /* schema 1-2 results carry attention's columns; they read as the fields object of schema 3 */
    CHECK_STR(el[0].eval.shapes[0].fields, "{\"batch\":1,\"heads\":8,\"seq\":512,\"head_dim\":64,\"causal\":false}");
    evo_store_close(ro);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), 1); /* reading migrates nothing */

    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    CHECK_EQ_INT(evo_store_schema_version(st), EVO_STORE_SCHEMA);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM evaluations"), evals);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM results WHERE fields LIKE '{\"batch\":%'"), results);
    /* every per-shape result reads the same after the migration as before it */
    evo_elite_rec *el2 = NULL;
    int n2 = 0;
    CHECK_EQ_INT(evo_store_elites(st, TASK, NULL, NULL, NULL, 1000, &el2, &n2, &err), EVO_OK);
    CHECK_EQ_INT(n2, n);
    int same = n2 == n;
    for (int i = 0; same && i < n; i++) {
        same &= el[i].eval.id == el2[i].eval.id && el[i].eval.n_shapes == el2[i].eval.n_shapes;
        for (int k = 0; same && k < el[i].eval.n_shapes; k++)
            same &= memcmp(&el[i].eval.shapes[k], &el2[i].eval.shapes[k], sizeof el[i].eval.shapes[k]) == 0;
    }
    CHECK(same);
    evo_store_elites_free(el, n);
    evo_store_elites_free(el2, n2);
    CHECK_EQ_INT(evo_store_demote(st, best, "compute-sanitizer memcheck: 3 errors", &err), EVO_OK);
    CHECK_EQ_INT(evo_store_demote(st, 999999, "x", &err), EVO_E_NOTFOUND);
    CHECK_EQ_INT(evo_store_elites(st, TASK, NULL, NULL, NULL, 3, &el, &n, &err), EVO_OK);
    CHECK(n >= 1 && el[0].cand.id == second); /* the demoted one is gone; the next one leads */
    for (int i = 0; i < n; i++) CHECK(el[i].cand.id != best);
    evo_store_elites_free(el, n);
    evo_store_close(st);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), EVO_STORE_SCHEMA);
}

/* Schema 3: intervals travel through an evaluation, re-timings are kept apart and found again; an older file reads
 * the same before and after its migration (the new columns unknown). */
static void retime_cb(const evo_retime_rec *r, void *ctx)
{
    int *n = ctx;
    CHECK_STR(r->why, *n == 0 ? "baseline drift" : "end of run");
    ++*n;
}

static void test_intervals_and_retimes(void)
{
    const char *p = tmp_path("v3.db");
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    char ss[65];
    shape_set_key(ss);
    const int64_t cand = add_candidate(st, pop_genomes[1], "sm_90", 96, 49152);
    evo_shape_result sh[2];
    fill_shapes(sh, 1.25, 1.05);
    sh[0].ci_lo_us = 0.99 * sh[0].median_us, sh[0].ci_hi_us = 1.01 * sh[0].median_us;
    sh[0].baseline_ci_lo_us = 39.5, sh[0].baseline_ci_hi_us = 40.5; /* shape 1: no interval (0) */
    evo_eval_rec e = {.candidate_id = cand,
                      .generation = -1,
                      .shape_set = ss,
                      .verdict = EVO_V_OK,
                      .fitness = 1.25,
                      .fitness_lo = 1.24,
                      .fitness_hi = NAN,
                      .gpu = "g",
                      .shapes = sh,
                      .n_shapes = 2};
    evo_err err = {0};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &e, &err), EVO_OK);
    free(e.created_at);
    evo_eval_rec got;
    bool found = false;
    CHECK_EQ_INT(evo_store_find_evaluation(st, cand, ss, NULL, 0, &got, &found, &err), EVO_OK);
    CHECK(found);
    CHECK_NEAR(got.fitness_lo, 1.24, 0);
    CHECK(isnan(got.fitness_hi));
    CHECK_EQ_INT(got.n_shapes, 2);
    if (got.n_shapes == 2) {
        CHECK_NEAR(got.shapes[0].ci_lo_us, sh[0].ci_lo_us, 0);
        CHECK_NEAR(got.shapes[0].ci_hi_us, sh[0].ci_hi_us, 0);
        CHECK_NEAR(got.shapes[0].baseline_ci_hi_us, 40.5, 0);
        CHECK_NEAR(got.shapes[1].ci_lo_us, 0, 0);
        CHECK_NEAR(got.shapes[1].baseline_ci_lo_us, 0, 0);
    }
    evo_store_eval_free(&got);

    evo_retime_rec r = {.candidate_id = cand,
                        .run_id = 0,
                        .generation = 3,
                        .shape_set = ss,
                        .fitness = 1.2,
                        .fitness_lo = 1.19,
                        .fitness_hi = 1.21,
                        .why = "baseline drift",
                        .gpu = "g"};
    CHECK_EQ_INT(evo_store_put_retime(st, &r, &err), EVO_OK);
    free(r.created_at);
    r.created_at = NULL;
    r.why = "end of run", r.fitness = 1.22, r.generation = -1;
    CHECK_EQ_INT(evo_store_put_retime(st, &r, &err), EVO_OK);
    free(r.created_at);
    evo_retime_rec last;
    CHECK_EQ_INT(evo_store_last_retime(st, cand, ss, &last, &found, &err), EVO_OK);
    CHECK(found);
    CHECK_NEAR(last.fitness, 1.22, 0);
    CHECK_NEAR(last.fitness_hi, 1.21, 0);
    CHECK_STR(last.why, "end of run");
    CHECK_EQ_INT(last.generation, -1);
    evo_store_retime_free(&last);
    CHECK_EQ_INT(evo_store_last_retime(st, cand + 1, ss, &last, &found, &err), EVO_OK);
    CHECK(!found);
    evo_store_close(st);

    /* The replay fixture (schema 1): its elites read the same read-only and after the migration. */
    char cmd[600];
    const char *q = tmp_path("v1-again.db");
    snprintf(cmd, sizeof cmd, "cp '%s/tests/data/replay-v1.db' '%s'", EVO_SOURCE_DIR, q);
    CHECK(system(cmd) == 0);
    double before[5], after[5];
    int nb = 0, na = 0;
    for (int pass = 0; pass < 2; pass++) {
        evo_store *x = open_ok(q, pass ? EVO_STORE_READWRITE : EVO_STORE_READONLY);
        evo_elite_rec *el = NULL;
        int n = 0;
        CHECK_EQ_INT(evo_store_elites(x, TASK, NULL, NULL, NULL, 5, &el, &n, &err), EVO_OK);
        for (int i = 0; i < n && i < 5; i++) {
            (pass ? after : before)[i] = el[i].eval.fitness;
            CHECK(isnan(el[i].eval.fitness_lo));
            CHECK(el[i].eval.n_shapes > 0 && el[i].eval.shapes[0].ci_lo_us == 0 && el[i].eval.shapes[0].median_us > 0);
        }
        *(pass ? &na : &nb) = n;
        int count = 0;
        CHECK_EQ_INT(evo_store_foreach_retime(x, 1, -1, retime_cb, &count, &err), EVO_OK);
        CHECK_EQ_INT(count, 0);
        evo_store_elites_free(el, n);
        evo_store_close(x);
    }
    CHECK_EQ_INT(nb, 5);
    CHECK_EQ_INT(na, nb);
    for (int i = 0; i < nb && i < na; i++) CHECK(before[i] == after[i]);
    CHECK_EQ_INT(raw_int(q, "PRAGMA user_version"), EVO_STORE_SCHEMA);
}

/* Version 2 to 3 (the verdict NOT_RECORDED): a version-2 file is read as it is (no NOT_RECORDED count: 0), then the
 * writing open rebuilds evaluations with every row, id and per-shape result kept, and NOT_RECORDED can be stored. */
static void test_migrate_v2_to_v3(void)
{
    char cmd[600];
    const char *p = tmp_path("v2.db");
    snprintf(cmd, sizeof cmd, "cp '%s/tests/data/replay-v1.db' '%s'", EVO_SOURCE_DIR, p);
    CHECK(system(cmd) == 0);
    raw_exec(p, "ALTER TABLE candidates ADD COLUMN demoted TEXT; PRAGMA user_version = 2"); /* what 1 to 2 does */
    const int64_t evals = raw_int(p, "SELECT count(*) FROM evaluations"),
                  results = raw_int(p, "SELECT count(*) FROM results");
    const int64_t id_sum = raw_int(p, "SELECT sum(id * 7 + candidate_id) FROM evaluations");
    CHECK(evals > 0 && results > 0);
    evo_err err = {0};
    evo_store *ro = open_ok(p, EVO_STORE_READONLY);
    int64_t run = 0;
    CHECK_EQ_INT(evo_store_last_run(ro, &run, &err), EVO_OK);
    evo_gen_rec *g = NULL;
    int ng = 0;
    CHECK_EQ_INT(evo_store_generations(ro, run, &g, &ng, &err), EVO_OK);
    CHECK(ng > 0);
    for (int i = 0; i < ng; i++) {
        CHECK_EQ_INT(g[i].counts[EVO_V_NOT_RECORDED], 0);
        evo_store_gen_free(&g[i]);
    }
    free(g);
    evo_store_close(ro);
    CHECK_EQ_INT(raw_int(p, "PRAGMA user_version"), 2);

    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    CHECK_EQ_INT(evo_store_schema_version(st), EVO_STORE_SCHEMA); /* 2 to 3, then on to the newest */
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM evaluations"), evals);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM results"), results);
    CHECK_EQ_INT(raw_int(p, "SELECT sum(id * 7 + candidate_id) FROM evaluations"), id_sum);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'evaluations'"), 3);
    const int64_t cid = raw_int(p, "SELECT min(id) FROM candidates");
    evo_eval_rec e = {.candidate_id = cid,
                      .run_id = run,
                      .generation = 0,
                      .shape_set = "ss-nr",
                      .verdict = EVO_V_NOT_RECORDED,
                      .fitness = NAN,
                      .detail = "{}",
                      .created_at = "2026-11-23T00:00:00Z"};
    CHECK_EQ_INT(evo_store_put_evaluation(st, &e, &err), EVO_OK);
    evo_gen_rec gr = {.run_id = run, .generation = 99, .best_fitness = NAN, .median_fitness = NAN, .evaluated = 5};
    gr.counts[EVO_V_NOT_RECORDED] = 5;
    CHECK_EQ_INT(evo_store_put_generation(st, &gr, &err), EVO_OK);
    g = NULL, ng = 0;
    CHECK_EQ_INT(evo_store_generations(st, run, &g, &ng, &err), EVO_OK);
    CHECK(ng > 0 && g[ng - 1].generation == 99 && g[ng - 1].counts[EVO_V_NOT_RECORDED] == 5);
    for (int i = 0; i < ng; i++) evo_store_gen_free(&g[i]);
    free(g);
    evo_store_close(st);
    CHECK_EQ_INT(raw_int(p, "SELECT count(*) FROM evaluations WHERE verdict = 'NOT_RECORDED'"), 1);
    CHECK_EQ_INT(raw_int(p, "PRAGMA foreign_keys"), 0); /* a raw connection's default: the file keeps no setting */
}

/* --id: a decimal text that is one candidate's row id and another's key prefix names both: refused; --row and --key
 * read it one way each, and say which reading was taken. */
static void test_candidate_refs(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/refs.db", tmpdir);
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};
    CHECK_EQ_INT(evo_store_begin(st, &err), EVO_OK);
    char key[65], genome[32];
    for (int i = 1; i <= 1240; i++) { /* ids 1..1240; none of their keys starts with "1234" */
        snprintf(genome, sizeof genome, "X=%d", i);
        key_of(genome, ARCH, key);
        if (strncmp(key, "1234", 4) == 0) key[0] = 'f';
        evo_candidate_rec c = {.key = key,
                               .task = TASK,
                               .arch = ARCH,
                               .genome = genome,
                               .template_hash = "t",
                               .options = "",
                               .nvrtc_version = "13.0",
                               .registers = -1,
                               .smem_bytes = -1,
                               .spill_bytes = -1,
                               .stack_bytes = -1};
        CHECK_EQ_INT(evo_store_put_candidate(st, &c, &err), EVO_OK);
        CHECK_EQ_INT(c.id, i);
    }
    memset(key, 'b', 64);
    memcpy(key, "1234", 4); /* candidate 1241: key 1234bbbb... */
    evo_candidate_rec k = {.key = key,
                           .task = TASK,
                           .arch = ARCH,
                           .genome = "X=0",
                           .template_hash = "t",
                           .options = "",
                           .nvrtc_version = "13.0",
                           .registers = -1,
                           .smem_bytes = -1,
                           .spill_bytes = -1,
                           .stack_bytes = -1};
    CHECK_EQ_INT(evo_store_put_candidate(st, &k, &err), EVO_OK);
    CHECK_EQ_INT(k.id, 1241);
    CHECK_EQ_INT(evo_store_commit(st, &err), EVO_OK);

    evo_candidate_rec c;
    const char *taken = NULL;
    CHECK_EQ_INT(evo_store_find_candidate(st, "1234", EVO_CAND_ID_OR_KEY, &c, &taken, &err), EVO_E_USAGE);
    char want[300];
    key_of("X=1234", ARCH, key);
    snprintf(want, sizeof want,
             "'1234' names two candidates: candidate 1234 by its row id (key %.8s) and candidate 1241 "
             "by its key prefix (key 1234bbbb); give --row 1234 or --key 1234",
             key);
    CHECK_STR(err.msg, want);
    CHECK_EQ_INT(evo_store_get_candidate(st, "1234", &c, &err), EVO_E_USAGE); /* the old entry point too */
    CHECK_EQ_INT(evo_store_find_candidate(st, "1234", EVO_CAND_ROW, &c, &taken, &err), EVO_OK);
    CHECK_EQ_INT(c.id, 1234);
    CHECK_STR(taken, "row id");
    evo_store_candidate_free(&c);
    CHECK_EQ_INT(evo_store_find_candidate(st, "1234", EVO_CAND_KEY, &c, &taken, &err), EVO_OK);
    CHECK_EQ_INT(c.id, 1241);
    CHECK_STR(taken, "key prefix");
    evo_store_candidate_free(&c);
    /* one reading only: no refusal, and the reading is said */
    CHECK_EQ_INT(evo_store_find_candidate(st, "1235", EVO_CAND_ID_OR_KEY, &c, &taken, &err), EVO_OK);
    CHECK_EQ_INT(c.id, 1235);
    CHECK_STR(taken, "row id");
    evo_store_candidate_free(&c);
    CHECK_EQ_INT(evo_store_find_candidate(st, "1234bb", EVO_CAND_ID_OR_KEY, &c, &taken, &err), EVO_OK);
    CHECK_EQ_INT(c.id, 1241);
    CHECK_STR(taken, "key prefix");
    evo_store_candidate_free(&c);
    CHECK_EQ_INT(evo_store_find_candidate(st, key, EVO_CAND_ID_OR_KEY, &c, &taken, &err), EVO_OK);
    CHECK_EQ_INT(c.id, 1234);
    CHECK_STR(taken, "full key");
    evo_store_candidate_free(&c);
    CHECK_EQ_INT(evo_store_find_candidate(st, "12a4", EVO_CAND_ROW, &c, &taken, &err), EVO_E_USAGE);
    CHECK_STR(err.msg, "'12a4' is not a candidate's row id (a decimal number)");
    CHECK_EQ_INT(evo_store_find_candidate(st, "12", EVO_CAND_KEY, &c, &taken, &err), EVO_E_USAGE);
    CHECK_STR(err.msg, "'12' is not a key or key prefix (4 to 64 hex digits)");
    CHECK_EQ_INT(evo_store_find_candidate(st, "99999", EVO_CAND_ID_OR_KEY, &c, &taken, &err), EVO_E_NOTFOUND);
    evo_store_close(st);
}

/* The lease of a run in progress (schema 6): granted new, kept by its holder, refused to another while live, taken
 * over once expired or once its holder (a process of this boot of this host) is gone; renewal and checks fail for
 * the one that lost it; a release leaves no row. */
static void test_leases(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/leases.db", tmpdir);
    evo_store *st = open_ok(p, EVO_STORE_READWRITE);
    evo_err err = {0};
    evo_run_rec run = {
        .task = TASK, .arch = ARCH, .shape_set = "s", .strategy = "ga", .seed = 1, .generations = 2, .population = 4};
    CHECK_EQ_INT(evo_store_begin_run(st, &run, &err), EVO_OK);
    evo_lease_holder a = {.host = "alpha", .boot_id = "boot-a", .pid = 1, .pid_start = 1, .token = "aaaa"};
    evo_lease_holder b = {.host = "beta", .boot_id = "boot-b", .pid = 2, .pid_start = 2, .token = "bbbb"};
    evo_lease_rec prev;
    const char *why = NULL;
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &a, 60, &prev, &why, &err), EVO_OK);
    CHECK_STR(why, "new");
    CHECK(prev.expires_at == 0);
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &a, 60, &prev, &why, &err), EVO_OK);
    CHECK_STR(why, "mine");
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &b, 60, &prev, &why, &err), EVO_E_USAGE);
    CHECK_CONTAINS(err.msg, "run 1 is in progress elsewhere: its lease is held by host alpha, pid 1 (since ");
    CHECK_EQ_INT(evo_store_lease_check(st, run.id, &a, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_lease_check(st, run.id, &b, &err), EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "run 1 was taken over: its lease is held by host alpha, pid 1");
    evo_lease_rec l;
    CHECK_EQ_INT(evo_store_lease_get(st, run.id, &l, &err), EVO_OK);
    const double first = l.expires_at;
    CHECK_EQ_INT(evo_store_lease_renew(st, run.id, &a, 120, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_lease_get(st, run.id, &l, &err), EVO_OK);
    CHECK(l.expires_at > first + 30);
    /* expired: taken over, and the old holder learns it at its next renewal or check */
    CHECK_EQ_INT(evo_store_lease_renew(st, run.id, &a, -1, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &b, 60, &prev, &why, &err), EVO_OK);
    CHECK_STR(why, "expired");
    CHECK_STR(prev.holder.host, "alpha");
    CHECK_EQ_INT(evo_store_lease_renew(st, run.id, &a, 60, &err), EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "run 1 was taken over: its lease is held by host beta, pid 2");
    CHECK_EQ_INT(evo_store_lease_release(st, run.id, &a, &err), EVO_OK); /* not a's: nothing happens */
    CHECK_EQ_INT(evo_store_lease_get(st, run.id, &l, &err), EVO_OK);
    CHECK_STR(l.holder.host, "beta");
    /* a holder of this boot of this host whose process has ended: taken over at once, live lease or not */
    evo_lease_holder me, gone;
    evo_lease_holder_self(&me);
    gone = me;
    snprintf(gone.token, sizeof gone.token, "gone");
    gone.pid_start = me.pid_start + 1; /* this pid, another start: a reused pid is not the holder */
    CHECK_EQ_INT(evo_store_lease_release(st, run.id, &b, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &gone, 600, &prev, &why, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &me, 60, &prev, &why, &err), EVO_OK);
    CHECK_STR(why, "holder gone");
    /* ... but this very process, alive, keeps it */
    evo_lease_holder twin = me;
    snprintf(twin.token, sizeof twin.token, "twin");
    CHECK_EQ_INT(evo_store_lease_take(st, run.id, &twin, 60, &prev, &why, &err), EVO_E_USAGE);
    CHECK_EQ_INT(evo_store_lease_release(st, run.id, &me, &err), EVO_OK);
    CHECK_EQ_INT(evo_store_lease_get(st, run.id, &l, &err), EVO_OK);
    CHECK(l.expires_at == 0);
    free(run.started_at); /* the two strings begin_run filled in; the rest are borrowed */
    free(run.state);
    evo_store_close(st);
}

/* Genome texts stored before knobs had conditions (tests/data/families.db lists all 27 knobs in every text), read in
 * the conditional space of tests/data/families-space.yaml: 216 texts, 156 genomes (144 of family 0, each one text;
 * 12 of family 1, six texts each, differing in inactive family-0 knobs); a lookup by the canonical text finds the
 * latest evaluation among a genome's texts, which the text alone does not. */
typedef struct {
    const evo_space *space;
    int n;
    char canon[256][EVO_GENOME_TEXT_MAX];
    int n_canon;
} canon_ctx;

static void add_canonical(const char *text, void *ctx)
{
    canon_ctx *c = ctx;
    evo_genome g;
    evo_err err = {0};
    c->n++;
    CHECK_EQ_INT(evo_genome_parse(c->space, text, &g, &err), EVO_OK);
    char t[EVO_GENOME_TEXT_MAX];
    evo_genome_format(c->space, &g, t, sizeof t);
    CHECK(strcmp(t, text) != 0); /* every stored text lists an inactive knob */
    for (int i = 0; i < c->n_canon; i++)
        if (strcmp(c->canon[i], t) == 0) return;
    if (c->n_canon < 256) snprintf(c->canon[c->n_canon++], EVO_GENOME_TEXT_MAX, "%s", t);
}

static void test_old_genome_texts(void)
{
    evo_err err = {0};
    evo_store *st = NULL;
    evo_config *cfg = NULL, *plain = NULL;
    CHECK_EQ_INT(evo_store_open(EVO_SOURCE_DIR "/tests/data/families.db", EVO_STORE_IMMUTABLE, &st, &err), EVO_OK);
    CHECK_EQ_INT(evo_config_load(EVO_SOURCE_DIR "/tests/data/families-space.yaml", &cfg, &err), EVO_OK);
    CHECK_EQ_INT(evo_config_load(EVO_SOURCE_DIR "/tests/data/replay-space.yaml", &plain, &err), EVO_OK);
    if (!st || !cfg || !plain) return;
    static canon_ctx c;
    memset(&c, 0, sizeof c);
    c.space = cfg->space;
    CHECK_EQ_INT(evo_store_foreach_genome(st, "attention_fp8", add_canonical, &c, &err), EVO_OK);
    CHECK_EQ_INT(c.n, 216);
    CHECK_EQ_INT(c.n_canon, 156);
    int fam1 = 0;
    for (int i = 0; i < c.n_canon; i++) fam1 += strncmp(c.canon[i], "FAMILY=1,", 9) == 0;
    CHECK_EQ_INT(fam1, 12);

    evo_aliases *a = NULL;
    CHECK_EQ_INT(evo_aliases_build(st, cfg, &a, &err), EVO_OK);
    CHECK_EQ_INT(evo_aliases_count(a), 216);
    static const char g1[] =
        "FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=64,H_STAGES=2,H_PIPE=2,H_QK_MODE=2,H_V_PATH=1,"
        "H_OVERLAP=1,H_PINGPONG=0,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0";
    const char *set = "cc7fe78e52ac489f307b3a095a399f2c12d79b820332858389c50d5f8f0dec93";
    evo_eval_rec e;
    bool found = true;
    CHECK_EQ_INT(evo_store_find_evaluation_by_genome(st, "attention_fp8", g1, set, NULL, &e, &found, &err), EVO_OK);
    CHECK(!found); /* stored only under its older texts */
    CHECK_EQ_INT(evo_aliases_find_evaluation(st, a, "attention_fp8", g1, set, NULL, &e, &found, &err), EVO_OK);
    CHECK(found);
    CHECK_EQ_INT(e.id, 183); /* the latest of its six texts' evaluations (3, 39, 75, 111, 147, 183) */
    CHECK_EQ_INT(e.verdict, EVO_V_REGRESSED);
    CHECK_NEAR(e.fitness, 0.9576467717238888, 1e-12);
    evo_store_eval_free(&e);
    static const char g0[] =
        "TILE_M=64,TILE_N=128,WARPS_M=2,WARPS_N=1,STAGES=3,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,"
        "MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64,FAMILY=0";
    CHECK_EQ_INT(evo_aliases_find_evaluation(st, a, "attention_fp8", g0, set, NULL, &e, &found, &err), EVO_OK);
    CHECK(found);
    CHECK_EQ_INT(e.candidate_id, 1);
    evo_store_eval_free(&e);
    evo_aliases_free(a);
    /* a space without conditions reads nothing: no aliases, lookups by the text alone */
    CHECK_EQ_INT(evo_aliases_build(st, plain, &a, &err), EVO_OK);
    CHECK_EQ_INT(evo_aliases_count(a), 0);
    evo_aliases_free(a);
    evo_config_free(cfg);
    evo_config_free(plain);
    evo_store_close(st);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--fixture") == 0) return fixture(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "--hold-lock") == 0) return hold_lock(argv[2], argv[3]);
    test_old_genome_texts();

    snprintf(tmpdir, sizeof tmpdir, "/tmp/evo-test-store-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    unsetenv("EVO_STORE_BUSY_MS");
    test_create_and_settings();
    test_migrate_empty_file();
    test_migrate_v1_and_demote();
    test_migrate_v2_to_v3();
    test_round_trip();
    test_readers();
    test_durability();
    test_group_rollback();
    test_refuse_foreign_and_corrupt();
    test_newer_schema();
    test_intervals_and_retimes();
    test_readonly();
    test_readonly_directory();
    test_elites();
    test_locked();
    test_candidate_refs();
    test_leases();
    int rc = check_result();
    if (rc == 0) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        fprintf(stderr, "files kept in %s\n", tmpdir);
    }
    return rc;
}
