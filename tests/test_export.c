/* test_export.c — `evo export`'s engine: which candidate is picked (best, by id, refusals), and the text of the
 * exported file (provenance, verbatim ABI and template, instantiations, variant table, harness) on a store made
 * with real genomes of configs/family0.yaml. Run: build/tests/test_export (ctest runs it).
 * Also the fixture maker of tests/cli_export*.sh: `test_export --fixture e4m3|u8sim|empty FILE` prints
 * "NAME KEY ID" for each candidate it stored; `test_export --fixture genome FILE CONFIG GENOME` stores one finished
 * run of CONFIG (any task) on sm_90 with its baseline (1.0x) and GENOME (1.5x, the best), and prints GENOME's key
 * (tests/cli_quantize_export.sh exports quantizers of chosen genomes so); `--fixture dispatch FILE` a store whose
 * per-shape winners differ, both families among them (tests/cli_export_dispatch.sh).
 */
#include "candidate.h"
#include "check.h"
#include "config.h"
#include "attention.h"
#include "attn_dispatch_host.h"
#include "evo_attention_abi.h"
#include "export.h"
#include "protocol.h"
#include "store.h"
#include "task.h"
#include "templates.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GENOME_A \
    "TILE_M=128,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=1,F16_SMEM=1,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
#define GENOME_BASE \
    "TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
#define GENOME_BAD \
    "TILE_M=64,TILE_N=128,WARPS_M=2,WARPS_N=2,STAGES=3,SWIZZLE=0,PV_MMA=1,QK_8BIT=0,F16_SMEM=2,MIN_BLOCKS=2,FAST_EXP=0,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
#define GENOME_STALE \
    "TILE_M=64,TILE_N=64,WARPS_M=4,WARPS_N=1,STAGES=3,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"
#define GENOME_REKEYED \
    "TILE_M=32,TILE_N=64,WARPS_M=2,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=0,F16_SMEM=0,MIN_BLOCKS=2,FAST_EXP=1,CAUSAL_PAIR=0,BIG_TILE_M=0,BIG_TILE_N=64"

enum { C_A, C_BASE, C_BAD, C_STALE, C_REKEYED, C_FILE, N_CANDS };
static const char *const cand_names[N_CANDS] = {"A", "BASE", "BAD", "STALE", "REKEYED", "FILE"};

typedef struct {
    char key[N_CANDS][65];
    int64_t id[N_CANDS];
} fixture;

static void die(const char *what, const evo_err *err)
{
    fprintf(stderr, "test_export: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static char *config_text(int fmt)
{
    char *text = NULL;
    evo_err err = {0};
    if (evo_read_file(EVO_SOURCE_DIR "/configs/family0.yaml", &text, NULL, &err) != EVO_OK) die("config", &err);
    if (fmt == EVO_FORMAT_U8SIM) {
        char *at = strstr(text, "format: e4m3");
        if (!at) die("configs/family0.yaml has no 'format: e4m3' line", NULL);
        if (at[12] != ' ') die("configs/family0.yaml: 'format: e4m3' is not followed by a space", NULL);
        memcpy(at, "format: u8sim", 13); /* one character longer: it takes the place of that space */
    }
    return text;
}

/* Per-shape results with speedup f on every shape. */
static evo_shape_result *make_results(const evo_config *cfg, double f)
{
    evo_shape_result *r = evo_xcalloc((size_t)cfg->n_shapes, sizeof *r);
    const evo_task *task = evo_task_find(cfg->task);
    for (int i = 0; i < cfg->n_shapes; i++) {
        const evo_shape *sh = &cfg->shapes[i];
        evo_shape_result_set_shape(&r[i], sh);
        r[i].baseline_us = 20.0 * (i + 1);
        r[i].speedup = f;
        r[i].median_us = r[i].baseline_us / f;
        r[i].p10_us = r[i].median_us * 0.98;
        r[i].p90_us = r[i].median_us * 1.03;
        r[i].rate = task->work(sh) / (r[i].median_us * 1e-6) / task->rate_scale;
        r[i].max_abs = 0.001 * (i + 1);
        r[i].rel_l2 = 0.0002 * (i + 1);
        r[i].e2e_rel_l2 = 0.03;
        r[i].e2e_rmse = 0.004;
    }
    return r;
}

static void put_eval(evo_store *st, const evo_config *cfg, const char *ss, int64_t cand, int64_t run, int gen,
                     evo_verdict v, double fitness)
{
    evo_shape_result *r = v == EVO_V_OK ? make_results(cfg, fitness) : NULL;
    evo_eval_rec e = {.candidate_id = cand,
                      .run_id = run,
                      .generation = gen,
                      .shape_set = (char *)ss,
                      .verdict = v,
                      .fitness = fitness,
                      .detail = v == EVO_V_OK ? "{\"cases_checked\":300,\"worst_rel_l2\":0.0017}"
                                              : "{\"reason\":\"rel-L2 0.4 > 0.002\"}",
                      .gpu = "NVIDIA H100 80GB HBM3",
                      .created_at = "2026-11-21T10:01:00Z",
                      .shapes = r,
                      .n_shapes = r ? cfg->n_shapes : 0};
    evo_err err = {0};
    if (evo_store_put_evaluation(st, &e, &err) != EVO_OK) die("put_evaluation", &err);
    free(r);
}

/* One finished run of configs/family0.yaml (format fmt) on sm_90: A (1.84x, the D=128 rule applies), the baseline
 * (1.0x), an INCORRECT genome, one measured with another template (1.2x, its key shares A's first 4 hex digits),
 * one whose stored key is not what its genome renders to (1.1x), and an `evo check` file outside the run (2.5x). */
static void make_fixture(const char *path, int fmt, fixture *fx)
{
    evo_err err = {0};
    char *text = config_text(fmt);
    evo_config *cfg = NULL;
    if (evo_config_parse("configs/family0.yaml", text, strlen(text), &cfg, &err) != EVO_OK) die("parse", &err);
    evo_store *st = NULL;
    if (evo_store_open(path, EVO_STORE_READWRITE, &st, &err) != EVO_OK) die("open", &err);
    char ss[65];
    evo_config_shape_set_key(cfg, ss);
    evo_run_rec run = {.started_at = "2026-11-21T10:00:00Z",
                       .finished_at = "2026-11-21T10:30:00Z",
                       .state = "done",
                       .task = "attention_fp8",
                       .arch = "sm_90",
                       .shape_set = ss,
                       .config_path = "configs/family0.yaml",
                       .config_text = text,
                       .strategy = "ga",
                       .seed = 1,
                       .generations = 2,
                       .population = 32,
                       .gpu = "NVIDIA H100 80GB HBM3",
                       .driver = "13000",
                       .nvrtc_version = (char *)evo_nvrtc_version(),
                       .evo_version = EVO_VERSION};
    if (evo_store_begin_run(st, &run, &err) != EVO_OK) die("begin_run", &err);

    evo_device_limits lim;
    if (evo_device_limits_for_arch("sm_90", &lim, &err) != EVO_OK) die("limits", &err);
    const evo_build_opts bo = {.cfg = cfg, .task = evo_task_find(cfg->task), .lim = &lim, .arch = "sm_90", .jobs = 1};
    static const char *const genomes[] = {GENOME_A, GENOME_BASE, GENOME_BAD, GENOME_STALE, GENOME_REKEYED};
    evo_candidate c[5];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 5; i++)
        if (evo_genome_parse(cfg->space, genomes[i], &c[i].genome, &err) != EVO_OK) die(genomes[i], &err);
    if (evo_candidates_prepare(&bo, c, 5, &err) != EVO_OK) die("prepare", &err);
    for (int i = 0; i < 5; i++) {
        if (c[i].verdict != EVO_V_OK) die(c[i].why, NULL);
        snprintf(fx->key[i], 65, "%s", c[i].key);
    }
    char stale_hash[65];
    memset(stale_hash, '0', 64);
    stale_hash[64] = '\0';
    memcpy(fx->key[C_STALE], fx->key[C_A], 4);
    memset(fx->key[C_STALE] + 4, '0', 60);
    memset(fx->key[C_REKEYED], 'e', 64);
    evo_sha256_hex("file:my_attn.cu", 15, fx->key[C_FILE]);
    for (int i = 0; i < N_CANDS; i++) {
        const bool file = i == C_FILE;
        evo_candidate_rec r = {.key = fx->key[i],
                               .task = "attention_fp8",
                               .arch = "sm_90",
                               .genome = file ? "file:my_attn.cu" : c[i].genome_text,
                               .template_hash = file           ? ""
                                                : i == C_STALE ? stale_hash
                                                               : c[i].template_hash,
                               .options = "",
                               .nvrtc_version = (char *)evo_nvrtc_version(),
                               .registers = file ? -1 : 128,
                               .smem_bytes = file ? -1 : 32768,
                               .spill_bytes = file ? -1 : 0,
                               .stack_bytes = file ? -1 : 0};
        if (evo_store_put_candidate(st, &r, &err) != EVO_OK) die("put_candidate", &err);
        fx->id[i] = r.id;
    }
    put_eval(st, cfg, ss, fx->id[C_BASE], run.id, 0, EVO_V_OK, 1.0);
    put_eval(st, cfg, ss, fx->id[C_BAD], run.id, 0, EVO_V_INCORRECT, NAN);
    put_eval(st, cfg, ss, fx->id[C_A], run.id, 1, EVO_V_OK, 1.84);
    put_eval(st, cfg, ss, fx->id[C_STALE], run.id, 1, EVO_V_OK, 1.2);
    put_eval(st, cfg, ss, fx->id[C_REKEYED], run.id, 1, EVO_V_OK, 1.1);
    put_eval(st, cfg, ss, fx->id[C_FILE], 0, -1, EVO_V_OK, 2.5);
    for (int i = 0; i < 5; i++) evo_candidate_free(&c[i]);
    evo_store_close(st);
    evo_config_free(cfg);
    free(text);
}

/* One finished run of configs/hopper.yaml on sm_90: its baseline (family 0, 1.0x) and a family-1 genome (1.5x, the
 * best), so that the export is of the sm_90a family: FP16 scores and FP16 P·V (the gate holds it on every
 * distribution), or with p8 FP16 scores and e4m3 P (its self-test compares against the P-rounding reference).
 * Prints the family-1 key. */
#define GENOME_SM90 \
    "FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=64,H_STAGES=3,H_PIPE=2,H_QK_MODE=2,H_V_PATH=1,H_OVERLAP=1,H_PINGPONG=0,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0"
#define GENOME_SM90_P8 \
    "FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=128,H_STAGES=2,H_PIPE=2,H_QK_MODE=2,H_V_PATH=0,H_OVERLAP=1,H_PINGPONG=1,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=0"
/* A store with one finished run of configs/hopper.yaml on sm_90 (the two hopper fixtures below). */
typedef struct {
    char *text;
    evo_config *cfg;
    evo_store *st;
    char ss[65];
    evo_run_rec run;
    evo_device_limits lim;
    evo_build_opts bo;
    const char *base; /* the config's baseline genome, inside text (up to its closing quote) */
    int cut;          /* the length of its family-0 part (before ",FAMILY=") */
} hopper_store;

static void hopper_open(hopper_store *h, const char *path, char *started, char *finished, char *gpu)
{
    evo_err err = {0};
    memset(h, 0, sizeof *h);
    if (evo_read_file(EVO_SOURCE_DIR "/configs/hopper.yaml", &h->text, NULL, &err) != EVO_OK) die("config", &err);
    if (evo_config_parse("configs/hopper.yaml", h->text, strlen(h->text), &h->cfg, &err) != EVO_OK) die("parse", &err);
    if (evo_store_open(path, EVO_STORE_READWRITE, &h->st, &err) != EVO_OK) die("open", &err);
    evo_config_shape_set_key(h->cfg, h->ss);
    h->run = (evo_run_rec){.started_at = started,
                           .finished_at = finished,
                           .state = "done",
                           .task = "attention_fp8",
                           .arch = "sm_90",
                           .shape_set = h->ss,
                           .config_path = "configs/hopper.yaml",
                           .config_text = h->text,
                           .strategy = "ga",
                           .seed = 1,
                           .generations = 1,
                           .population = 32,
                           .gpu = gpu,
                           .driver = "13000",
                           .nvrtc_version = (char *)evo_nvrtc_version(),
                           .evo_version = EVO_VERSION};
    if (evo_store_begin_run(h->st, &h->run, &err) != EVO_OK) die("begin_run", &err);
    if (evo_device_limits_for_arch("sm_90", &h->lim, &err) != EVO_OK) die("limits", &err);
    h->bo = (evo_build_opts){
        .cfg = h->cfg, .task = evo_task_find(h->cfg->task), .lim = &h->lim, .arch = "sm_90", .jobs = 1};
    h->base = strstr(h->text, "baseline: \"") + 11;
    h->cut = (int)(strstr(h->base, ",FAMILY=") - h->base);
}

/* Prepares the n candidates (every one must pass the host-side checks) and stores each, ids into r[i].id. */
static void hopper_put_candidates(hopper_store *h, evo_candidate *c, int n, evo_candidate_rec *r)
{
    evo_err err = {0};
    if (evo_candidates_prepare(&h->bo, c, n, &err) != EVO_OK) die("prepare", &err);
    for (int i = 0; i < n; i++) {
        if (c[i].verdict != EVO_V_OK) die(c[i].why, NULL);
        r[i] = (evo_candidate_rec){.key = c[i].key,
                                   .task = "attention_fp8",
                                   .arch = "sm_90",
                                   .genome = c[i].genome_text,
                                   .template_hash = c[i].template_hash,
                                   .options = "",
                                   .nvrtc_version = (char *)evo_nvrtc_version(),
                                   .registers = 168,
                                   .smem_bytes = 65536,
                                   .spill_bytes = 0,
                                   .stack_bytes = 0};
        if (evo_store_put_candidate(h->st, &r[i], &err) != EVO_OK) die("put_candidate", &err);
    }
}

static void hopper_close(hopper_store *h, evo_candidate *c, int n)
{
    for (int i = 0; i < n; i++) evo_candidate_free(&c[i]);
    evo_store_close(h->st);
    evo_config_free(h->cfg);
    free(h->text);
}

static void make_hopper_fixture(const char *path, bool p8)
{
    evo_err err = {0};
    hopper_store h;
    hopper_open(&h, path, "2026-11-26T08:00:00Z", "2026-11-26T08:05:00Z", "NVIDIA H100 80GB HBM3");
    char sm90[2048];
    snprintf(sm90, sizeof sm90, "%.*s,%s", h.cut, h.base, p8 ? GENOME_SM90_P8 : GENOME_SM90);
    evo_candidate c[2];
    memset(c, 0, sizeof c);
    c[0].genome = h.cfg->baseline;
    if (evo_genome_parse(h.cfg->space, sm90, &c[1].genome, &err) != EVO_OK) die(sm90, &err);
    evo_candidate_rec r[2];
    hopper_put_candidates(&h, c, 2, r);
    for (int i = 0; i < 2; i++) put_eval(h.st, h.cfg, h.ss, r[i].id, h.run.id, 0, EVO_V_OK, i ? 1.5 : 1.0);
    printf("SM90 %s\n", c[1].key);
    hopper_close(&h, c, 2);
}

/* A store whose per-shape winners differ (`--fixture dispatch`): one run of configs/hopper.yaml with the baseline
 * (1.0x on every shape), F0 (the baseline with STAGES=3, family 0) and F1 (the sm_90a genome GENOME_SM90), each
 * with its own speedup per shape (mission, small, long, wide, stress): F0 wins mission and small, F1 long, wide
 * and stress. Prints "NAME KEY ID" for each. */
static void make_dispatch_fixture(const char *path)
{
    evo_err err = {0};
    hopper_store h;
    hopper_open(&h, path, "2026-11-27T08:00:00Z", "2026-11-27T08:05:00Z", "NVIDIA H200");
    const evo_config *cfg = h.cfg;
    char g[3][2048];
    snprintf(g[0], sizeof g[0], "%.*s", (int)(strchr(h.base, '"') - h.base), h.base);
    snprintf(g[1], sizeof g[1], "%s", g[0]);
    char *stages = strstr(g[1], "STAGES=2");
    if (!stages) die("the hopper baseline has no STAGES=2", NULL);
    stages[7] = '3';
    snprintf(g[2], sizeof g[2], "%.*s,%s", h.cut, h.base, GENOME_SM90);
    static const char *const names[3] = {"BASE", "F0", "F1"};
    static const double speed[3][5] = {{1, 1, 1, 1, 1}, {1.30, 1.25, 1.05, 1.10, 1.00}, {0.90, 1.10, 1.60, 1.20, 1.70}};
    evo_candidate c[3];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 3; i++)
        if (evo_genome_parse(cfg->space, g[i], &c[i].genome, &err) != EVO_OK) die(g[i], &err);
    if (cfg->n_shapes != 5) die("configs/hopper.yaml no longer has 5 shapes", NULL);
    evo_candidate_rec r[3];
    hopper_put_candidates(&h, c, 3, r);
    for (int i = 0; i < 3; i++) {
        evo_shape_result *res = make_results(cfg, 1.0);
        double logsum = 0;
        for (int k = 0; k < 5; k++) {
            res[k].speedup = speed[i][k];
            res[k].median_us = res[k].baseline_us / speed[i][k];
            res[k].p10_us = res[k].median_us * 0.98;
            res[k].p90_us = res[k].median_us * 1.03;
            res[k].ci_lo_us = res[k].median_us * 0.995;
            res[k].ci_hi_us = res[k].median_us * 1.005;
            res[k].rate = evo_task_find(cfg->task)->work(&cfg->shapes[k]) / (res[k].median_us * 1e-6) / 1e12;
            logsum += log(speed[i][k]);
        }
        evo_eval_rec e = {.candidate_id = r[i].id,
                          .run_id = h.run.id,
                          .generation = 0,
                          .shape_set = h.ss,
                          .verdict = EVO_V_OK,
                          .fitness = exp(logsum / 5),
                          .detail = "{\"cases_checked\":300,\"worst_rel_l2\":0.0017}",
                          .gpu = "NVIDIA H200 (GPU 0)",
                          .created_at = "2026-11-27T08:01:00Z",
                          .shapes = res,
                          .n_shapes = 5};
        if (evo_store_put_evaluation(h.st, &e, &err) != EVO_OK) die("put_evaluation", &err);
        free(res);
        printf("%s %s %lld\n", names[i], c[i].key, (long long)r[i].id);
    }
    hopper_close(&h, c, 3);
}

/* One finished run of the config at config_path (its task, whatever it is) on sm_90: the baseline (1.0x) and the n
 * genomes, genome i with speedup speeds[i][k] on timed shape k (speeds NULL: 1.5x on every shape). Prints "GENOME key"
 * for one genome, "G<i> key" for several. Returns 2 when a genome does not parse or does not pass the host-side
 * checks. */
static int make_genomes_fixture(const char *path, const char *config_path, int n, char *const *genomes,
                                char *const *speeds)
{
    evo_err err = {0};
    char *text = NULL;
    if (evo_read_file(config_path, &text, NULL, &err) != EVO_OK) die("config", &err);
    evo_config *cfg = NULL;
    if (evo_config_parse(config_path, text, strlen(text), &cfg, &err) != EVO_OK) die("parse", &err);
    evo_candidate c[9];
    memset(c, 0, sizeof c);
    if (n < 1 || n > 8) die("make_genomes_fixture: 1 to 8 genomes", NULL);
    c[0].genome = cfg->baseline;
    for (int i = 1; i <= n; i++)
        if (evo_genome_parse(cfg->space, genomes[i - 1], &c[i].genome, &err) != EVO_OK) {
            fprintf(stderr, "test_export: %s\n", err.msg);
            evo_config_free(cfg);
            free(text);
            return 2;
        }
    evo_device_limits lim;
    if (evo_device_limits_for_arch("sm_90", &lim, &err) != EVO_OK) die("limits", &err);
    const evo_build_opts bo = {.cfg = cfg, .task = evo_task_find(cfg->task), .lim = &lim, .arch = "sm_90", .jobs = 1};
    if (evo_candidates_prepare(&bo, c, n + 1, &err) != EVO_OK) die("prepare", &err);
    for (int i = 1; i <= n; i++)
        if (c[i].verdict != EVO_V_OK) {
            fprintf(stderr, "test_export: %s: %s\n", genomes[i - 1], c[i].why);
            for (int j = 0; j <= n; j++) evo_candidate_free(&c[j]);
            evo_config_free(cfg);
            free(text);
            return 2;
        }
    evo_store *st = NULL;
    if (evo_store_open(path, EVO_STORE_READWRITE, &st, &err) != EVO_OK) die("open", &err);
    char ss[65];
    evo_config_shape_set_key(cfg, ss);
    evo_run_rec run = {.started_at = "2026-11-28T08:00:00Z",
                       .finished_at = "2026-11-28T08:05:00Z",
                       .state = "done",
                       .task = cfg->task,
                       .arch = "sm_90",
                       .shape_set = ss,
                       .config_path = (char *)config_path,
                       .config_text = text,
                       .strategy = "ga",
                       .seed = 1,
                       .generations = 1,
                       .population = n + 1,
                       .gpu = "NVIDIA H100 80GB HBM3",
                       .driver = "13000",
                       .nvrtc_version = (char *)evo_nvrtc_version(),
                       .evo_version = EVO_VERSION};
    if (evo_store_begin_run(st, &run, &err) != EVO_OK) die("begin_run", &err);
    for (int i = 0; i <= n; i++) {
        evo_candidate_rec r = {.key = c[i].key,
                               .task = cfg->task,
                               .arch = "sm_90",
                               .genome = c[i].genome_text,
                               .template_hash = c[i].template_hash,
                               .options = "",
                               .nvrtc_version = (char *)evo_nvrtc_version(),
                               .registers = 32,
                               .smem_bytes = 0,
                               .spill_bytes = 0,
                               .stack_bytes = 0};
        if (evo_store_put_candidate(st, &r, &err) != EVO_OK) die("put_candidate", &err);
        if (i == 0 || !speeds) {
            put_eval(st, cfg, ss, r.id, run.id, 0, EVO_V_OK, i ? 1.5 : 1.0);
            continue;
        }
        evo_shape_result *res = make_results(cfg, 1.0);
        const char *sp = speeds[i - 1];
        double logsum = 0;
        for (int k = 0; k < cfg->n_shapes; k++) {
            char *endp;
            const double f = strtod(sp, &endp);
            if (endp == sp || f <= 0) die("make_genomes_fixture: a speed per timed shape, colon-separated", NULL);
            sp = *endp == ':' ? endp + 1 : endp;
            res[k].speedup = f;
            res[k].median_us = res[k].baseline_us / f;
            res[k].p10_us = res[k].median_us * 0.98;
            res[k].p90_us = res[k].median_us * 1.03;
            res[k].ci_lo_us = res[k].median_us * 0.995;
            res[k].ci_hi_us = res[k].median_us * 1.005;
            res[k].rate = evo_task_find(cfg->task)->work(&cfg->shapes[k]) / (res[k].median_us * 1e-6) /
                          evo_task_find(cfg->task)->rate_scale;
            logsum += log(f);
        }
        evo_eval_rec e = {.candidate_id = r.id,
                          .run_id = run.id,
                          .generation = 0,
                          .shape_set = ss,
                          .verdict = EVO_V_OK,
                          .fitness = exp(logsum / cfg->n_shapes),
                          .detail = "{\"cases_checked\":300,\"worst_rel_l2\":0}",
                          .gpu = "NVIDIA H100 80GB HBM3",
                          .created_at = "2026-11-28T08:01:00Z",
                          .shapes = res,
                          .n_shapes = cfg->n_shapes};
        if (evo_store_put_evaluation(st, &e, &err) != EVO_OK) die("put_evaluation", &err);
        free(res);
    }
    if (n == 1)
        printf("GENOME %s\n", c[1].key);
    else
        for (int i = 1; i <= n; i++) printf("G%d %s\n", i, c[i].key);
    for (int i = 0; i <= n; i++) evo_candidate_free(&c[i]);
    evo_store_close(st);
    evo_config_free(cfg);
    free(text);
    return 0;
}

static int fixture_main(const char *kind, const char *path)
{
    if (strcmp(kind, "hopper") == 0 || strcmp(kind, "hopper-p8") == 0) {
        make_hopper_fixture(path, strcmp(kind, "hopper-p8") == 0);
        return 0;
    }
    if (strcmp(kind, "dispatch") == 0) {
        make_dispatch_fixture(path);
        return 0;
    }
    if (strcmp(kind, "empty") == 0) {
        evo_store *st = NULL;
        evo_err err = {0};
        if (evo_store_open(path, EVO_STORE_READWRITE, &st, &err) != EVO_OK) die("open", &err);
        evo_store_close(st);
        return 0;
    }
    if (strcmp(kind, "e4m3") != 0 && strcmp(kind, "u8sim") != 0) {
        fprintf(stderr, "test_export: unknown fixture '%s' (e4m3, u8sim, hopper, hopper-p8, dispatch, empty)\n", kind);
        return 2;
    }
    fixture fx;
    make_fixture(path, strcmp(kind, "u8sim") == 0 ? EVO_FORMAT_U8SIM : EVO_FORMAT_E4M3, &fx);
    for (int i = 0; i < N_CANDS; i++) printf("%s %s %lld\n", cand_names[i], fx.key[i], (long long)fx.id[i]);
    return 0;
}

/* ---- tests ---- */

static char tmpdir[64];

static evo_store *open_ro(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    evo_store *st = NULL;
    evo_err err = {0};
    if (evo_store_open(path, EVO_STORE_READONLY, &st, &err) != EVO_OK) die("open", &err);
    return st;
}

/* Export candidate id (NULL: best) of store st; returns the status, fills text (malloc'd or NULL). */
static evo_status export_one(evo_store *st, const char *id, evo_export_src *src, evo_export_out *out, evo_err *err)
{
    evo_status s = evo_export_pick(st, id, EVO_CAND_ID_OR_KEY, NULL, src, err);
    if (s == EVO_OK) s = evo_export_render(src, "2026-11-22T08:00:00Z", out, err);
    return s;
}

static int count_lines_equal(const char *text, const char *line)
{
    int n = 0;
    const size_t len = strlen(line);
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        const size_t l = eol ? (size_t)(eol - p) : strlen(p);
        n += l == len && strncmp(p, line, len) == 0;
        p = eol ? eol + 1 : NULL;
    }
    return n;
}

static void test_best(const fixture *fx)
{
    evo_store *st = open_ro("e4m3.db");
    evo_export_src src;
    evo_export_out out = {0};
    evo_err err = {0};
    CHECK_EQ_INT(export_one(st, NULL, &src, &out, &err), EVO_OK);
    CHECK_STR(src.cand.genome, GENOME_A);
    CHECK_EQ_INT(src.cand.id, fx->id[C_A]);
    CHECK_EQ_INT(src.run.id, 1);
    CHECK_NEAR(src.eval.fitness, 1.84, 1e-12);
    CHECK_CONTAINS(src.note, "passed over 1 better-ranked elite checked outside a run with `evo check` (the first: "
                             "my_attn.cu, 2.500x)");
    CHECK_STR(out.warning, "");
    char name[160], want[160];
    evo_export_default_name(&src, name, sizeof name);
    snprintf(want, sizeof want, "attention_fp8-sm_90-%.8s.cu", fx->key[C_A]);
    CHECK_STR(name, want);

    const char *t = out.text;
    /* provenance */
    CHECK_CONTAINS(t, "/* attention_fp8-sm_90-");
    CHECK_CONTAINS(t, " *   genome        " GENOME_A "\n");
    char line[400];
    snprintf(line, sizeof line, " *   key           %s (candidate %lld)\n", fx->key[C_A], (long long)fx->id[C_A]);
    CHECK_CONTAINS(t, line);
    CHECK_CONTAINS(t, " *   task          attention_fp8, format e4m3, arch sm_90, head dims 64 128\n");
    snprintf(line, sizeof line, " *   template      attention_fp8.cu, SHA-256 %s\n", src.cand.template_hash);
    CHECK_CONTAINS(t, line);
    const char *tpl = NULL;
    CHECK_EQ_INT(evo_template_get("attention_fp8.cu", &tpl, NULL, NULL), EVO_OK);
    char hash[65];
    evo_sha256_hex(tpl, strlen(tpl), hash);
    CHECK_STR(src.cand.template_hash, hash);
    snprintf(line, sizeof line, " *   compiled by   NVRTC %s with -std=c++17 -DNDEBUG (nvcc needs none of these)\n",
             evo_nvrtc_version());
    CHECK_CONTAINS(t, line);
    CHECK_CONTAINS(t, " *   key check     the compile key recomputed at export equals the stored one\n");
    CHECK_CONTAINS(t,
                   " *   measured on   NVIDIA H100 80GB HBM3, driver 13000, 2026-11-21T10:01:00Z, run 1 generation 1, "
                   "by evo " EVO_VERSION "\n");
    CHECK_CONTAINS(t, " *   exported      2026-11-22T08:00:00Z by evo " EVO_VERSION "\n");
    CHECK_CONTAINS(t, " *   fitness       1.840x: geometric mean");
    /* mission: baseline 20 µs / 1.84 = 10.87 µs; 4*1*8*512*512*64 FLOP / 10.87 µs = 49.4 TFLOP/s */
    CHECK_CONTAINS(t,
                   " *   mission(1,8,512,64)              10.87    10.65..11.20     49.4   1.840x  2.00e-04  1.00e-03"
                   "   3.00e-02\n");
    CHECK_CONTAINS(t,
                   " *   stress(4,8,2048,64)              54.35    53.26..55.98    632.2   1.840x  1.00e-03  5.00e-03");
    CHECK_CONTAINS(t, "worst over the timed shapes: rel-L2 1.00e-03, max-abs 5.00e-03; over all 300 correctness "
                      "cases: rel-L2 1.70e-03\n");
    CHECK_CONTAINS(t,
                   " *   tolerances: rel-L2 <= 0.002; an element passes when |out - ref| <= 0.02 x RMS(ref) + 0.02 x "
                   "|ref|;\n");
    /* D = 64 takes TILE_M = 128; D = 128 takes TILE_M / 2 = 64 (a warp owning 32 rows at D = 128 spills). Shared
     * memory: Q tile + 2 stages of K and V + one FP16 V tile = 128*64 + 2*2*64*64 + 64*64*2 = 32768 at D = 64,
     * 64*128 + 2*2*64*128 + 64*128*2 = 57344 at D = 128. */
    CHECK_CONTAINS(t, " *   head dim  64: evo_attn_fwd<64,0,128,64,4,1,2,1,1,1,1,1,1,0>\n"
                      " *                 128 threads, 128 rows per block, 32768 bytes of dynamic shared memory\n");
    CHECK_CONTAINS(t, " *   head dim 128: evo_attn_fwd<128,0,64,64,4,1,2,1,1,1,1,1,1,0>\n"
                      " *                 128 threads, 64 rows per block, 57344 bytes of dynamic shared memory\n");
    /* the inlined texts: the ABI header verbatim, the template verbatim but for its one #include */
    const char *abi = NULL, *harness = NULL;
    CHECK_EQ_INT(evo_template_get("evo_attention_abi.h", &abi, NULL, NULL), EVO_OK);
    CHECK_EQ_INT(evo_template_get("export_harness.cu", &harness, NULL, NULL), EVO_OK);
    CHECK_CONTAINS(t, abi);
    /* the harness verbatim but for its #includes of embedded files (attn_numerics.h: the FP8 model its fp8-class
     * self-test runs; export_selftest.cuh: what every task's self-test shares), which are inlined: the file needs
     * nothing of evo's */
    static const char *const inlined[] = {"export_selftest.cuh", "attn_numerics.h"}; /* in the order they come */
    const char *rest = harness;
    for (size_t k = 0; k < EVO_ARRAY_LEN(inlined) && rest; k++) {
        char inc[64], mark[96];
        snprintf(inc, sizeof inc, "#include \"%s\"\n", inlined[k]);
        snprintf(mark, sizeof mark, "/* ==== %s, inlined ==== */\n", inlined[k]);
        const char *text = NULL, *hinc = strstr(rest, inc);
        CHECK_EQ_INT(evo_template_get(inlined[k], &text, NULL, NULL), EVO_OK);
        CHECK(hinc != NULL);
        if (!hinc || !text) break;
        char *seg = evo_strdup(rest);
        seg[hinc - rest] = '\0';
        CHECK_CONTAINS(t, seg);
        CHECK_CONTAINS(t, mark);
        CHECK_CONTAINS(t, text);
        inc[strlen(inc) - 1] = '\0';
        CHECK(strstr(t, inc) == NULL);
        free(seg);
        rest = hinc + strlen(inc) + 1;
    }
    if (rest) CHECK_CONTAINS(t, rest);
    const char *inc = strstr(tpl, "#include \"evo_attention_abi.h\"\n");
    CHECK(inc != NULL);
    if (inc) {
        char *before = evo_strdup(tpl);
        before[inc - tpl] = '\0';
        CHECK_CONTAINS(t, before);
        CHECK_CONTAINS(t, inc + strlen("#include \"evo_attention_abi.h\"\n"));
        free(before);
    }
    CHECK_EQ_INT(count_lines_equal(t, "#include \"evo_attention_abi.h\""), 0);
    CHECK_EQ_INT(count_lines_equal(t, "/* #include \"evo_attention_abi.h\": inlined above */"), 1);
    CHECK_EQ_INT(count_lines_equal(t, "#include <cuda_runtime.h>"), 1);
    /* the genome's section */
    CHECK_CONTAINS(t, "#define EVO_EXPORT_GENOME \"" GENOME_A "\"\n");
    snprintf(line, sizeof line, "#define EVO_EXPORT_KEY \"%s\"\n", fx->key[C_A]);
    CHECK_CONTAINS(t, line);
    CHECK_CONTAINS(
        t, "#define EVO_EXPORT_ARCH \"sm_90\"\n#define EVO_EXPORT_FORMAT EVO_FORMAT_E4M3\n#define EVO_EXPORT_SM90 0\n");
    CHECK_CONTAINS(t,
                   "template __global__ void evo_attn_fwd<64,0,128,64,4,1,2,1,1,1,1,1,1,0>(const evo_attn_params);\n"
                   "template __global__ void evo_attn_fwd<128,0,64,64,4,1,2,1,1,1,1,1,1,0>(const evo_attn_params);\n");
    CHECK_CONTAINS(
        t, "    {64, (const void *)evo_attn_fwd<64,0,128,64,4,1,2,1,1,1,1,1,1,0>, 128, 128, 32768, 0, 0, 0, 0, 0, 0, "
           "nullptr, nullptr, 0},\n"
           "    {128, (const void *)evo_attn_fwd<128,0,64,64,4,1,2,1,1,1,1,1,1,0>, 128, 64, 57344, 0, 0, 0, 0, 0, "
           "0, nullptr, nullptr, 0},\n};\n");
    CHECK(strstr(t, "attn_sm90_fill_tmaps(evo_attn_tmaps") == NULL); /* family 0: no sm_90a host code inlined */
    CHECK_CONTAINS(t, "    {\"mission\", 1, 8, 512, 64, 0, 10.87},\n");
    CHECK_CONTAINS(t, "    {\"wide\", 2, 8, 512, 128, 0, 43.48},\n");
    CHECK_CONTAINS(
        t, "static const double tol_rel_l2 = 0.002, tol_atol = 0.02, tol_rtol = 0.02, tol_max_frac_over = 0;\n");
    CHECK_CONTAINS(t, "static const double cfg_softmax_scale = 0; /* 0: 1/sqrt(head_dim) */\n");
    CHECK_CONTAINS(t, "static const int timing_warmup = 3, timing_repetitions = 20, timing_flush_l2 = 1;\n");
    /* the launcher comes from the harness, after the table it uses */
    const char *table = strstr(t, "static const variant variants[]"),
               *launcher = strstr(t, "extern \"C\" int evo_attention_forward(");
    CHECK(table && launcher && table < launcher);
    evo_export_out_free(&out);
    evo_export_src_free(&src);

    /* --id by full key, by prefix and by number give the same file (apart from nothing) */
    char prefix[9];
    snprintf(prefix, sizeof prefix, "%.8s", fx->key[C_A]);
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)fx->id[C_A]);
    const char *ids[] = {fx->key[C_A], prefix, num};
    char *first = NULL;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(export_one(st, ids[i], &src, &out, &err), EVO_OK);
        CHECK_STR(src.note, "");
        if (i == 0)
            first = evo_strdup(out.text ? out.text : "");
        else
            CHECK_STR(out.text, first);
        evo_export_out_free(&out);
        evo_export_src_free(&src);
    }
    free(first);

    /* the baseline is an elite too */
    CHECK_EQ_INT(export_one(st, fx->key[C_BASE], &src, &out, &err), EVO_OK);
    CHECK_CONTAINS(
        out.text,
        "    {64, (const void *)evo_attn_fwd<64,0,64,64,4,1,2,1,1,0,0,1,1,0>, 128, 64, 20480, 0, 0, 0, 0, 0, 0, "
        "nullptr, nullptr, 0},\n");
    CHECK_CONTAINS(out.text, " *   fitness       1.000x");
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);
}

static void test_refusals(const fixture *fx)
{
    evo_store *st = open_ro("e4m3.db");
    evo_export_src src;
    evo_export_out out = {0};
    evo_err err = {0};
    char want[600], id[80];

    /* a hand-written file */
    snprintf(id, sizeof id, "%lld", (long long)fx->id[C_FILE]);
    CHECK_EQ_INT(export_one(st, id, &src, &out, &err), EVO_E_USAGE);
    snprintf(want, sizeof want, "candidate %lld (%.8s) is my_attn.cu, a hand-written kernel checked with `evo check`",
             (long long)fx->id[C_FILE], fx->key[C_FILE]);
    CHECK_CONTAINS(err.msg, want);
    CHECK(src.cand.key == NULL && out.text == NULL);

    /* INCORRECT: no passing evaluation, and the message says what the latest was */
    snprintf(id, sizeof id, "%.8s", fx->key[C_BAD]);
    CHECK_EQ_INT(export_one(st, id, &src, &out, &err), EVO_E_NOTFOUND);
    snprintf(
        want, sizeof want,
        "candidate %lld (%.8s) has no evaluation that passed every gate (latest: INCORRECT in run 1 generation 0); "
        "only correct, timed kernels are exported",
        (long long)fx->id[C_BAD], fx->key[C_BAD]);
    CHECK_CONTAINS(err.msg, want);

    /* measured with another template */
    snprintf(id, sizeof id, "%.8s", fx->key[C_STALE]);
    CHECK_EQ_INT(export_one(st, id, &src, &out, &err), EVO_E_NOTFOUND);
    snprintf(want, sizeof want,
             "candidate %lld (%.8s) was measured with another version of attention_fp8.cu (SHA-256 "
             "000000000000..., this evo has ",
             (long long)fx->id[C_STALE], fx->key[C_STALE]);
    CHECK_CONTAINS(err.msg, want);
    CHECK(out.text == NULL);
    evo_export_src_free(&src);

    /* a prefix that A and STALE share, an unknown prefix, an unknown number */
    snprintf(id, sizeof id, "%.4s", fx->key[C_A]);
    CHECK_EQ_INT(export_one(st, id, &src, &out, &err), EVO_E_USAGE);
    CHECK_CONTAINS(err.msg, "matches several candidates; give more digits");
    CHECK_EQ_INT(export_one(st, strncmp(fx->key[C_A], "dead", 4) ? "deadbeef" : "beefdead", &src, &out, &err),
                 EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "no candidate '");
    CHECK_EQ_INT(export_one(st, "999", &src, &out, &err), EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "no candidate '999'");

    /* a stored key the genome no longer renders to: exported, with a warning */
    CHECK_EQ_INT(export_one(st, "eeeeeeee", &src, &out, &err), EVO_OK);
    CHECK_CONTAINS(out.warning, "the compile key recomputed here (");
    CHECK_CONTAINS(out.warning, ") differs from the stored one (eeeeeeee)");
    CHECK_CONTAINS(out.text, " *   key check     the compile key recomputed at export differs");
    CHECK_CONTAINS(out.text, "#define EVO_EXPORT_GENOME \"" GENOME_REKEYED "\"\n");
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);

    /* an empty store */
    st = open_ro("empty.db");
    CHECK_EQ_INT(export_one(st, NULL, &src, &out, &err), EVO_E_NOTFOUND);
    CHECK_CONTAINS(err.msg, "empty.db: no elites yet — no candidate has passed every gate; run `evo run`");
    CHECK_EQ_INT(export_one(st, "1", &src, &out, &err), EVO_E_NOTFOUND);
    evo_store_close(st);
}

static void test_u8sim(void)
{
    evo_store *st = open_ro("u8sim.db");
    evo_export_src src;
    evo_export_out out = {0};
    evo_err err = {0};
    CHECK_EQ_INT(export_one(st, NULL, &src, &out, &err), EVO_OK);
    CHECK_STR(out.warning, "");
    CHECK_CONTAINS(out.text, " *   task          attention_fp8, format u8sim, arch sm_90, head dims 64 128\n");
    CHECK_CONTAINS(out.text, "#define EVO_EXPORT_FORMAT EVO_FORMAT_U8SIM\n");
    CHECK_CONTAINS(out.text,
                   "template __global__ void evo_attn_fwd<64,1,128,64,4,1,2,1,1,1,1,1,1,0>(const evo_attn_params);\n");
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);
}

/* A kernel of the sm_90a family (configs/hopper.yaml): its template, the host code that makes its tensor maps, its
 * instantiations with both __grid_constant__, the variant table's family-1 fields, and the -gencode target. */
static void test_sm90(void)
{
    evo_store *st = open_ro("hopper-p8.db");
    evo_export_src src;
    evo_export_out out = {0};
    evo_err err = {0};
    CHECK_EQ_INT(export_one(st, NULL, &src, &out, &err), EVO_OK);
    const char *t = out.text ? out.text : "";
    CHECK_STR(out.nvcc_arch, "-gencode=arch=compute_90a,code=sm_90a");
    CHECK_CONTAINS(t, " *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -c ");
    CHECK_CONTAINS(t, "/* ==== attention_fp8_sm90.cu, verbatim but for its #include of the header above ==== */\n");
    CHECK_CONTAINS(
        t,
        "#define EVO_EXPORT_ARCH \"sm_90a\"\n#define EVO_EXPORT_FORMAT EVO_FORMAT_E4M3\n#define EVO_EXPORT_SM90 1\n");
    CHECK_CONTAINS(t,
                   "int attn_sm90_fill_tmaps(evo_attn_tmaps *t, const evo_attn_params *p, const evo_sm90_genome *g,");
    CHECK_EQ_INT(count_lines_equal(t, "#include \"attn_sm90_host.h\""), 0);
    CHECK_CONTAINS(t, "template __global__ void evo_attn_sm90<64,64,2,128,2,2,2,0,1,1,0,56,0>(const __grid_constant__ "
                      "evo_attn_params, const __grid_constant__ evo_attn_tmaps);\n");
    CHECK_CONTAINS(t,
                   "    {64, (const void *)evo_attn_sm90<64,64,2,128,2,2,2,0,1,1,0,56,0>, 384, 128, 126088, 0, 1, 64, "
                   "128, 0, 1, nullptr, nullptr, 0},\n"); /* e4m3 P·V: no FP16 twin; 18432 bytes of output rows */
    CHECK(strstr(t, "evo_attn_tmaps); /* its FP16-V twin */") == NULL);
    CHECK(strstr(t, "evo_attn_tmaps); /* its FP16-K-and-V twin */") == NULL);
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);
    st = open_ro("hopper.db"); /* FP16 P·V: the plain reference */
    CHECK_EQ_INT(export_one(st, NULL, &src, &out, &err), EVO_OK);
    CHECK_CONTAINS(out.text ? out.text : "",
                   "    {64, (const void *)evo_attn_sm90<64,64,2,64,3,2,2,1,1,0,0,56,0>, 384, 128, ");
    /* FP16 Q·Kᵀ and P·V with a producer: the FP16-V twin (V_PATH 2) and the FP16-K-and-V twin (V_PATH 3)
     * instantiated and in the table */
    CHECK_CONTAINS(out.text ? out.text : "",
                   ", 0, 1, 64, 64, 0, 0, (const void *)evo_attn_sm90<64,64,2,64,3,2,2,2,1,0,0,56,0>, "
                   "(const void *)evo_attn_sm90<64,64,2,64,3,2,2,3,1,0,0,56,0>, 0},\n");
    CHECK_CONTAINS(out.text ? out.text : "",
                   "template __global__ void evo_attn_sm90<64,64,2,64,3,2,2,2,1,0,0,56,0>(const __grid_constant__ "
                   "evo_attn_params, const __grid_constant__ evo_attn_tmaps); /* its FP16-V twin */\n");
    CHECK_CONTAINS(out.text ? out.text : "",
                   "template __global__ void evo_attn_sm90<64,64,2,64,3,2,2,3,1,0,0,56,0>(const __grid_constant__ "
                   "evo_attn_params, const __grid_constant__ evo_attn_tmaps); /* its FP16-K-and-V twin */\n");
    evo_export_out_free(&out);
    evo_export_src_free(&src);
    evo_store_close(st);
}

/* A run whose stored config text is gone cannot be rendered; neither can a genome the config does not know. */
static void test_render_errors(const fixture *fx)
{
    evo_store *st = open_ro("e4m3.db");
    evo_export_src src;
    evo_export_out out = {0};
    evo_err err = {0};
    CHECK_EQ_INT(evo_export_pick(st, fx->key[C_A], EVO_CAND_ID_OR_KEY, NULL, &src, &err), EVO_OK);
    char *saved = src.run.config_text;
    src.run.config_text = NULL;
    CHECK_EQ_INT(evo_export_render(&src, NULL, &out, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "run 1 stored no config text");
    src.run.config_text = evo_strdup("task: attention_fp8\nformat: e4m4\n");
    CHECK_EQ_INT(evo_export_render(&src, NULL, &out, &err), EVO_E_CONFIG);
    CHECK_CONTAINS(err.msg, "the config stored with run 1: configs/family0.yaml:2:");
    free(src.run.config_text);
    src.run.config_text = saved;
    char *genome = src.cand.genome;
    src.cand.genome = evo_strdup("TILE_M=48");
    CHECK_EQ_INT(evo_export_render(&src, NULL, &out, &err), EVO_E_DB);
    CHECK_CONTAINS(err.msg, "genome does not fit the config of run 1");
    free(src.cand.genome);
    src.cand.genome = genome;
    CHECK(out.text == NULL);
    evo_export_src_free(&src);
    evo_store_close(st);
}

/* Launch-only knobs enter the candidate's key (quantize_fp8's SLACK): genomes that differ only there are separate
 * candidates; a task without launch knobs keeps the compile key as is. */
static void test_launch_knob_keys(void)
{
    evo_err err = {0};
    char *text = NULL;
    if (evo_read_file(EVO_SOURCE_DIR "/configs/quantize.yaml", &text, NULL, &err) != EVO_OK) die("quantize.yaml", &err);
    evo_config *cfg = NULL;
    if (evo_config_parse("configs/quantize.yaml", text, strlen(text), &cfg, &err) != EVO_OK) die("parse", &err);
    evo_device_limits lim;
    if (evo_device_limits_for_arch("sm_90", &lim, &err) != EVO_OK) die("limits", &err);
    const evo_task *task = evo_task_find(cfg->task);
    const evo_build_opts bo = {.cfg = cfg, .task = task, .lim = &lim, .arch = "sm_90", .jobs = 1};
    static const char *const genomes[] = {
        "VEC=32,WARPS=8,MODE=4,CLUSTER=1,KEEP=0,UNROLL=1,ITERS=4,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=1",
        "VEC=32,WARPS=8,MODE=4,CLUSTER=1,KEEP=0,UNROLL=1,ITERS=4,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=2",
        "VEC=32,WARPS=8,MODE=4,CLUSTER=1,KEEP=0,UNROLL=1,ITERS=4,CVT=1,CACHE=1,FUSED_ROT=1,SLACK=1"};
    evo_candidate c[3];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 3; i++)
        if (evo_genome_parse(cfg->space, genomes[i], &c[i].genome, &err) != EVO_OK) die(genomes[i], &err);
    if (evo_candidates_prepare(&bo, c, 3, &err) != EVO_OK) die("prepare", &err);
    CHECK_EQ_INT(c[0].verdict, EVO_V_OK);
    CHECK(strcmp(c[0].key, c[1].key) != 0);
    CHECK_STR(c[0].key, c[2].key);
    CHECK_STR(c[0].template_hash, c[1].template_hash);
    /* mode resident's variants ask for the deepest ring: 7 chunks of 32 KiB on sm_90 */
    CHECK_EQ_INT(c[0].prog.variants[0].smem_bytes, 7 * 32768);
    for (int i = 0; i < 3; i++) evo_candidate_free(&c[i]);
    evo_config_free(cfg);
    free(text);

    const evo_task *att = evo_task_find("attention_fp8");
    CHECK(att->launch_knobs == NULL);
    char *atext = config_text(EVO_FORMAT_E4M3);
    if (evo_config_parse("configs/family0.yaml", atext, strlen(atext), &cfg, &err) != EVO_OK) die("parse", &err);
    evo_genome g;
    if (evo_genome_parse(cfg->space, GENOME_A, &g, &err) != EVO_OK) die("genome", &err);
    char key[65];
    const char *ck = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    evo_candidate_key(att, cfg->space, &g, ck, key);
    CHECK_STR(key, ck);
    evo_config_free(cfg);
    free(atext);
}

/* A V_PATH 5 genome renders its attention kernels (role VT) and the transpose (role TRANSPOSE), which serves no
 * shape; the worker finds the transpose by its role, as it sees lowered symbols and never the name expression. */
static void test_vpath5_roles(void)
{
    size_t n = 0;
    char *text = NULL;
    evo_err err = {0};
    evo_config *cfg = NULL;
    if (evo_read_file(EVO_SOURCE_DIR "/configs/hopper-large.yaml", &text, &n, &err) != EVO_OK) die("read", &err);
    if (evo_config_parse("configs/hopper-large.yaml", text, n, &cfg, &err) != EVO_OK) die("parse", &err);
    evo_genome g;
    if (evo_genome_parse(cfg->space,
                         "FAMILY=1,H_WG_ROWS=64,H_CONSUMERS=2,H_TILE_N=128,H_STAGES=2,H_PIPE=2,H_QK_MODE=0,"
                         "H_V_PATH=5,H_OVERLAP=1,H_PINGPONG=1,H_O_ACC=0,H_PRODUCER_REGS=56,H_PERSIST=2",
                         &g, &err) != EVO_OK)
        die("genome", &err);
    const evo_task *att = evo_task_find("attention_fp8");
    evo_program prog;
    const evo_device_limits lim = {0};
    CHECK_EQ_INT(att->render(cfg, &g, &lim, &prog, &err), EVO_OK);
    CHECK_EQ_INT(prog.n_variants, 3); /* head dims 128 and 64, then the transpose */
    int attn = 0, pre = 0;
    for (int i = 0; i < prog.n_variants; i++) {
        const evo_variant *v = &prog.variants[i];
        char label[64];
        att->variant_label(v, label, sizeof label);
        if (v->attr[ATTN_V_ROLE] == ATTN_ROLE_VT) {
            attn++;
            CHECK(att->serves(v, &cfg->shapes[0]) == (v->attr[ATTN_V_DIM] == cfg->shapes[0].v[ATTN_DIM]));
        } else {
            pre++;
            CHECK_EQ_INT((int)v->attr[ATTN_V_ROLE], ATTN_ROLE_TRANSPOSE);
            CHECK_STR(v->name_expr, ATTN_TRANSPOSE_NAME);
            CHECK_STR(label, "vt");
            for (int s = 0; s < cfg->n_shapes; s++) CHECK(!att->serves(v, &cfg->shapes[s]));
        }
    }
    CHECK_EQ_INT(attn, 2);
    CHECK_EQ_INT(pre, 1);
    evo_program_free(&prog);
    evo_config_free(cfg);
    free(text);
}

/* attn_dispatch_host.h's rule on a table of its own: exact buckets, the nearest (causal first, then class steps, then
 * seq steps, then table order), head dims without a bucket. */
static void test_dispatch_rule(void)
{
    static const attn_dispatch_bucket t[] = {
        {64, 0, 9, 3, 0}, {64, 0, 9, 4, 1}, {64, 0, 11, 4, 2}, {64, 1, 12, 6, 3}, {128, 0, 9, 4, 4},
    };
    const int n = (int)EVO_ARRAY_LEN(t);
    CHECK_EQ_INT(attn_dispatch_class(1, ATTN_SEQ_CLASS_MIN), 8);
    CHECK_EQ_INT(attn_dispatch_class(256, ATTN_SEQ_CLASS_MIN), 8);
    CHECK_EQ_INT(attn_dispatch_class(257, ATTN_SEQ_CLASS_MIN), 9);
    CHECK_EQ_INT(attn_dispatch_class(4097, ATTN_SEQ_CLASS_MIN), 13);
    CHECK_EQ_INT(attn_dispatch_class(8, ATTN_BH_CLASS_MIN), 3);
    CHECK_EQ_INT(attn_dispatch_class(9, ATTN_BH_CLASS_MIN), 4);
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 1, 8, 512, 64, 0), 0);    /* its own bucket */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 2, 8, 300, 64, 0), 1);    /* seq 257..512, bh 9..16 */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 2, 8, 2000, 64, 0), 2);   /* seq 1025..2048, bh 9..16 */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 2, 8, 1024, 64, 0), 1);   /* one step from rows 1 and 2: the first */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 1, 1, 1, 64, 0), 0);      /* below every class: the smallest */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 64, 64, 4096, 64, 0), 2); /* non-causal before the causal row 3 */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 1, 8, 512, 64, 1), 3);    /* causal: the only causal row, far as it is */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 1, 1, 1, 128, 1), 4);     /* the only D=128 row */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 1, 8, 512, 96, 0), -1);   /* no bucket of that head dim */
    CHECK_EQ_INT(attn_dispatch_pick(t, 0, 1, 8, 512, 64, 0), -1);   /* an empty table */
    CHECK_EQ_INT(attn_dispatch_pick(t, n, 65535, 65535, 1 << 20, 64, 0), 2); /* no overflow at the limits */
}

/* The engine's side of --dispatch on the dispatch fixture: buckets in key order, each one's winner, two entries of
 * two families, the rendered file; a class without winners. */
static void test_dispatch(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/dispatch.db", tmpdir);
    fflush(stdout);
    const int saved = dup(1);
    if (!freopen("/dev/null", "w", stdout)) die("freopen", NULL);
    make_dispatch_fixture(path);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    evo_store *st = NULL;
    evo_err err = {0};
    CHECK(evo_store_open(path, EVO_STORE_READONLY, &st, &err) == EVO_OK);
    evo_export_dispatch_ctx d;
    CHECK(evo_export_dispatch_pick(st, NULL, &d, &err) == EVO_OK);
    CHECK_EQ_INT(d.n_buckets, 5);
    CHECK_EQ_INT(d.n_entries, 2);
    CHECK_EQ_INT(d.n_timed, 5);
    static const int entry[5] = {0, 0, 1, 1, 1};
    static const char *const label[5] = {"d64 non-causal seq 257..512 bh 1..8", "d64 non-causal seq 257..512 bh 9..16",
                                         "d64 non-causal seq 1025..2048 bh 9..16",
                                         "d64 non-causal seq 1025..2048 bh 17..32",
                                         "d128 non-causal seq 257..512 bh 9..16"};
    static const double speedup[5] = {1.30, 1.25, 1.60, 1.70, 1.20};
    for (int b = 0; b < 5 && b < d.n_buckets; b++) {
        CHECK_EQ_INT(d.buckets[b].entry, entry[b]);
        CHECK_STR(d.buckets[b].bucket.label, label[b]);
        CHECK_NEAR(d.buckets[b].speedup, speedup[b], 1e-9);
    }
    if (d.n_entries == 2) {
        CHECK_EQ_INT((int)d.entries[0].src.cand.id, 2);
        CHECK_EQ_INT((int)d.entries[1].src.cand.id, 3);
        CHECK_EQ_INT((int)d.entries[0].src.run.id, 1);
    }
    evo_export_out out = {0};
    CHECK(evo_export_dispatch_render(&d, "2026-11-28T00:00:00Z", &out, &err) == EVO_OK);
    if (out.text) {
        CHECK_CONTAINS(out.text, "#define EVO_EXPORT_DISPATCH 1");
        CHECK_CONTAINS(out.text, "#define EVO_EXPORT_SM90 1");
        CHECK_CONTAINS(out.text, "    {64, 0, 9, 3, 0}, /* d64 non-causal seq 257..512 bh 1..8 */");
        CHECK_CONTAINS(out.text, "    {128, 0, 9, 4, 1}, /* d128 non-causal seq 257..512 bh 9..16 */");
        CHECK_CONTAINS(out.text, "Exported 2026-11-28T00:00:00Z by evo");
    }
    CHECK_STR(out.nvcc_arch, "-gencode=arch=compute_90a,code=sm_90a");
    evo_export_out_free(&out);
    evo_export_dispatch_free(&d);
    /* the fp8 class admits the exact class's kernels: the same winners, the file named for its class */
    CHECK(evo_export_dispatch_pick(st, "fp8", &d, &err) == EVO_OK);
    CHECK_EQ_INT(d.n_buckets, 5);
    CHECK_EQ_INT(d.n_entries, 2);
    for (int b = 0; b < 5 && b < d.n_buckets; b++) CHECK_EQ_INT(d.buckets[b].entry, entry[b]);
    char name[200];
    evo_export_dispatch_default_name(&d, name, sizeof name);
    CHECK_STR(name, "attention_fp8-sm_90-dispatch-fp8.cu");
    evo_export_dispatch_free(&d);
    CHECK(evo_export_dispatch_pick(st, NULL, &d, &err) == EVO_OK);
    evo_export_dispatch_default_name(&d, name, sizeof name);
    CHECK_STR(name, "attention_fp8-sm_90-dispatch.cu");
    evo_export_dispatch_free(&d);
    evo_store_close(st);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--fixture") == 0) return fixture_main(argv[2], argv[3]);
    if (argc == 6 && strcmp(argv[1], "--fixture") == 0 && strcmp(argv[2], "genome") == 0)
        return make_genomes_fixture(argv[3], argv[4], 1, &argv[5], NULL);
    /* --fixture genomes DB CONFIG G1 S1 [G2 S2 ...]: Si the speedups of Gi on the timed shapes, colon-separated */
    if (argc >= 7 && argc % 2 == 1 && strcmp(argv[1], "--fixture") == 0 && strcmp(argv[2], "genomes") == 0) {
        char *g[8], *sp[8];
        const int n = (argc - 5) / 2;
        if (n > 8) die("--fixture genomes: at most 8 genomes", NULL);
        for (int i = 0; i < n; i++) g[i] = argv[5 + 2 * i], sp[i] = argv[6 + 2 * i];
        return make_genomes_fixture(argv[3], argv[4], n, g, sp);
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/evo-test-export-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[256];
    fixture fx, fu;
    snprintf(path, sizeof path, "%s/e4m3.db", tmpdir);
    make_fixture(path, EVO_FORMAT_E4M3, &fx);
    snprintf(path, sizeof path, "%s/u8sim.db", tmpdir);
    make_fixture(path, EVO_FORMAT_U8SIM, &fu);
    snprintf(path, sizeof path, "%s/empty.db", tmpdir);
    fixture_main("empty", path);
    snprintf(path, sizeof path, "%s/hopper.db", tmpdir);
    make_hopper_fixture(path, false);
    snprintf(path, sizeof path, "%s/hopper-p8.db", tmpdir);
    make_hopper_fixture(path, true);

    test_best(&fx);
    test_refusals(&fx);
    test_u8sim();
    test_sm90();
    test_render_errors(&fx);
    test_launch_knob_keys();
    test_vpath5_roles();
    test_dispatch_rule();
    test_dispatch();

    evo_remove_tree(tmpdir);
    return check_result();
}
