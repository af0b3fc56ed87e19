/* store.h — the SQLite store: runs, candidates, evaluations with per-shape results, lineage, generations,
 * profiles. population.db in the working directory by default.
 *
 * Schema is versioned with PRAGMA user_version (EVO_STORE_SCHEMA); opening an older file migrates it inside one
 * transaction, opening a newer one fails with EVO_E_DB_SCHEMA and touches nothing. Journal mode WAL, foreign
 * keys on, busy timeout EVO_STORE_BUSY_MS (then EVO_E_DB "database is locked by another evo").
 *
 * Durability: every evo_store_put_* call outside an explicit transaction commits on return, so a finished
 * evaluation survives kill -9 of the driver. evo_store_begin/commit/rollback group calls; a failure inside a
 * group leaves the database as it was before evo_store_begin.
 *
 * Read-only opens (EVO_STORE_READONLY, used by elite/history/export) never create, migrate or write the file;
 * a missing file is EVO_E_NOTFOUND, a file that is not an evo database (or corrupt) is EVO_E_DB and is left
 * untouched.
 *
 * Ownership: strings inside records returned by the store are malloc'd; free records with the matching
 * evo_store_*_free. A handle is used by one thread at a time.
 */
#ifndef EVO_STORE_H
#define EVO_STORE_H

#include "evo.h"

#include <stdbool.h>
#include <stdint.h>

#define EVO_STORE_SCHEMA 1
#define EVO_STORE_BUSY_MS 5000

typedef struct evo_store evo_store;

enum { EVO_STORE_READONLY = 0, EVO_STORE_READWRITE = 1 };

evo_status evo_store_open(const char *path, int mode, evo_store **out, evo_err *err);
void evo_store_close(evo_store *st);
int evo_store_schema_version(evo_store *st);

evo_status evo_store_begin(evo_store *st, evo_err *err);
evo_status evo_store_commit(evo_store *st, evo_err *err);
void evo_store_rollback(evo_store *st);

/* ---- runs ---- */
typedef struct {
    int64_t id;            /* set by begin_run */
    char *started_at;      /* ISO 8601 UTC; set by begin_run when NULL */
    char *finished_at;     /* NULL while running */
    char *state;           /* "running", "done", "interrupted", "failed" */
    char *task, *arch, *shape_set;
    char *config_path, *config_text;
    char *strategy;
    int64_t seed;
    int generations, population;
    char *gpu, *driver, *nvrtc_version, *evo_version;
    double wall_s, compile_s, check_s, time_s; /* wall-time split, updated as the run goes */
} evo_run_rec;

evo_status evo_store_begin_run(evo_store *st, evo_run_rec *run, evo_err *err);
evo_status evo_store_update_run(evo_store *st, const evo_run_rec *run, evo_err *err); /* by run->id */
evo_status evo_store_get_run(evo_store *st, int64_t id, evo_run_rec *out, evo_err *err); /* EVO_E_NOTFOUND */
evo_status evo_store_last_run(evo_store *st, int64_t *id, evo_err *err); /* EVO_E_NOTFOUND when none */
void evo_store_run_free(evo_run_rec *r);

/* ---- candidates: one compiled kernel, keyed by SHA-256(template source, genome, options, NVRTC, arch) ---- */
typedef struct {
    int64_t id;
    char *key;           /* 64 hex */
    char *task, *arch;
    char *genome;        /* canonical text */
    char *template_hash, *options, *nvrtc_version;
    int registers, smem_bytes, spill_bytes, stack_bytes; /* -1 when unknown (not compiled) */
    char *compile_log;   /* may be NULL */
} evo_candidate_rec;

/* Insert, or when the key exists update the resource figures and return the existing id in c->id. */
evo_status evo_store_put_candidate(evo_store *st, evo_candidate_rec *c, evo_err *err);
/* By full key, or by a unique id prefix / decimal id (`evo export --id`). EVO_E_NOTFOUND when none. */
evo_status evo_store_get_candidate(evo_store *st, const char *key_or_id, evo_candidate_rec *out, evo_err *err);
void evo_store_candidate_free(evo_candidate_rec *c);

/* ---- evaluations: one verdict on one candidate for one shape set, with per-shape results ---- */
typedef struct {
    char shape[64];    /* evo_shape_format text */
    int batch, heads, seq, head_dim, causal;
    double median_us, p10_us, p90_us; /* 0 when not timed */
    double baseline_us;               /* baseline re-timed in the same worker; 0 when unknown */
    double speedup, tflops;
    double max_abs, rel_l2;           /* worst over the correctness cases of this shape, vs dequantized ref */
    double e2e_rel_l2, e2e_rmse;      /* vs the unquantized fp16 inputs */
} evo_shape_result;

typedef struct {
    int64_t id;
    int64_t candidate_id;
    int64_t run_id;      /* 0 for `evo check` outside a run */
    int generation;      /* -1 outside a run */
    char *shape_set;
    evo_verdict verdict;
    double fitness;      /* geomean speedup; NAN unless verdict is OK (or REGRESSED, kept for insight) */
    char *detail;        /* JSON evidence: failing case, metrics, first bad index, log excerpt ... */
    char *gpu;
    double compile_s, check_s, time_s;
    char *created_at;
    evo_shape_result *shapes;
    int n_shapes;
} evo_eval_rec;

evo_status evo_store_put_evaluation(evo_store *st, evo_eval_rec *e, evo_err *err); /* sets e->id */
/* The most recent evaluation of this candidate for this shape set; *found = false when none. */
evo_status evo_store_find_evaluation(evo_store *st, int64_t candidate_id, const char *shape_set, evo_eval_rec *out,
                                     bool *found, evo_err *err);
void evo_store_eval_free(evo_eval_rec *e);

/* ---- lineage and generations ---- */
evo_status evo_store_put_lineage(evo_store *st, int64_t run_id, int generation, int64_t child, int64_t parent,
                                 const char *op, evo_err *err);

typedef struct {
    int64_t run_id;
    int generation;
    double best_fitness, median_fitness; /* NAN when nothing was OK */
    int evaluated;                       /* new evaluations this generation (reused results excluded) */
    int reused;
    int counts[EVO_V_COUNT];
    double wall_s, compile_s, check_s, time_s;
    double baseline_noise; /* (p90 - p10) / median of the baseline, worst shape */
    char *best_genome;
} evo_gen_rec;

evo_status evo_store_put_generation(evo_store *st, const evo_gen_rec *g, evo_err *err); /* upsert */
/* All generations of a run in order; *out is malloc'd (free each with evo_store_gen_free, then the array). */
evo_status evo_store_generations(evo_store *st, int64_t run_id, evo_gen_rec **out, int *n, evo_err *err);
void evo_store_gen_free(evo_gen_rec *g);

/* ---- elites: best OK evaluations per candidate for (task, arch, shape_set), by fitness ---- */
typedef struct {
    evo_candidate_rec cand;
    evo_eval_rec eval;
} evo_elite_rec;

/* arch or shape_set NULL = any. Returns at most k, best first; *out malloc'd, free with evo_store_elites_free. */
evo_status evo_store_elites(evo_store *st, const char *task, const char *arch, const char *shape_set, int k,
                            evo_elite_rec **out, int *n, evo_err *err);
void evo_store_elites_free(evo_elite_rec *e, int n);

/* ---- profiles (ncu metrics) ---- */
evo_status evo_store_put_profile(evo_store *st, int64_t candidate_id, const char *shape, const char *metric,
                                 double value, const char *unit, evo_err *err);
/* Calls fn for each stored metric of the candidate. */
evo_status evo_store_profiles(evo_store *st, int64_t candidate_id,
                              void (*fn)(const char *shape, const char *metric, double value, const char *unit,
                                         void *ctx),
                              void *ctx, evo_err *err);

/* ---- per-knob-value statistics for insight-guided mutation ---- */
/* For every evaluation of (task, arch, shape_set), calls fn with the genome text, verdict and fitness. */
evo_status evo_store_foreach_evaluation(evo_store *st, const char *task, const char *arch, const char *shape_set,
                                        void (*fn)(const char *genome, evo_verdict v, double fitness, void *ctx),
                                        void *ctx, evo_err *err);

#endif
