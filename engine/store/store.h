/* store.h — the SQLite store: runs, candidates, evaluations with per-shape results, lineage, generations,
 * profiles. population.db in the working directory by default; docs/usage.md ("The store") lists every column.
 *
 * Opening. evo_store_open(READWRITE) creates a missing file, and migrates an older schema one version at a time
 * (each step in one transaction; PRAGMA user_version counts the steps, EVO_STORE_SCHEMA is the newest). Before it
 * writes anything it inspects the file through a read-only connection, so a file that is not an evo database
 * (not SQLite, corrupt, truncated, or SQLite with another program's tables) is refused with EVO_E_DB and left
 * byte-for-byte as it was, and one of a newer schema is refused with EVO_E_DB_SCHEMA, also untouched.
 * evo_store_open(READONLY) (elite, history, export) never creates, migrates or writes the file: a missing file is
 * EVO_E_NOTFOUND ("no database at F — run `evo run` first"); an empty file opens as schema 0 and every query on it
 * finds nothing. Like any SQLite reader of a WAL database it may leave empty F-wal / F-shm files beside F; in a
 * read-only directory it reads the file as immutable instead. evo_store_open(IMMUTABLE) (a replay source) is
 * READONLY that creates nothing beside F: SQLite's immutable mode, which takes no locks and sees what was
 * checkpointed into F (a database no evo is writing; when a non-empty F-wal lies beside F it reads as READONLY).
 *
 * Connection: WAL, foreign keys on, synchronous FULL, busy timeout EVO_STORE_BUSY_MS (the environment variable of
 * the same name overrides it); a lock held longer than that is EVO_E_DB "F: database is locked by another process".
 * EVO_STORE_FAIL_AT=N (tests) makes the N-th group commit of a handle fail as a full disk would.
 *
 * Durability: every evo_store_put_* / begin_run / update_run outside a group commits before it returns, so a
 * finished evaluation survives kill -9 of the driver. evo_store_begin/commit/rollback group calls into one
 * transaction; when a call inside a group fails, its own writes are undone at once and evo_store_commit then
 * refuses (EVO_E_DB) and rolls the whole group back, so a group is all or nothing. Groups do not nest.
 *
 * Leases (schema 6): a run in progress belongs to one process. evo_store_lease_take grants it in one write
 * transaction, a heartbeat renews it (search/lease.h), every result the run stores checks it inside its own
 * transaction (evo_store_lease_check), and a lease not renewed for lease_s seconds expires, so a process that died
 * or lost its host gives the run up without anyone having to see its pid. Times are the hosts' wall clocks.
 *
 * Ownership: records filled by the store hold malloc'd strings (NULL where the column is NULL); free them with the
 * matching evo_store_*_free, which also accepts zeroed records. Records passed to put functions are borrowed.
 * Callbacks get borrowed values valid during the call only and must not call back into the same handle.
 * Thread-safety: a handle is used by one thread at a time; separate handles (and processes) may share a file.
 */
#ifndef EVO_STORE_H
#define EVO_STORE_H

#include "evo.h"
#include "result.h"

#include <stdbool.h>
#include <stdint.h>

#define EVO_STORE_SCHEMA 6
#define EVO_STORE_BUSY_MS 5000
#define EVO_STORE_APP_ID 0x45564f31 /* PRAGMA application_id of every evo database: "EVO1" */

typedef struct evo_store evo_store;

enum { EVO_STORE_READONLY = 0, EVO_STORE_READWRITE = 1, EVO_STORE_IMMUTABLE = 2 };

evo_status evo_store_open(const char *path, int mode, evo_store **out, evo_err *err);
void evo_store_close(evo_store *st); /* NULL is fine; an open group is rolled back */
/* A second read-write connection to the file of st (opened read-write), for another thread of this process: none of
 * evo_store_open's looks at the file, which st has passed (a raw open and close of the file would drop the locks
 * SQLite holds on it in this process: POSIX locks belong to the process, not to a descriptor). */
evo_status evo_store_reopen(const evo_store *st, evo_store **out, evo_err *err);
int evo_store_schema_version(evo_store *st); /* EVO_STORE_SCHEMA, or 0 for an empty file opened read-only */
const char *evo_store_path(const evo_store *st);

evo_status evo_store_begin(evo_store *st, evo_err *err); /* takes the write lock (waits up to the busy timeout) */
evo_status evo_store_commit(evo_store *st, evo_err *err);
void evo_store_rollback(evo_store *st); /* no-op outside a group */

/* ---- runs ---- */
typedef struct {
    int64_t id;        /* set by begin_run */
    char *started_at;  /* ISO 8601 UTC; set by begin_run when NULL */
    char *finished_at; /* NULL while running */
    char *state;       /* "running" (begin_run's default), "done", "interrupted", "failed" */
    char *task, *arch, *shape_set;
    char *config_path, *config_text;
    char *strategy;
    int64_t seed;
    int generations, population;
    char *gpu, *driver, *nvrtc_version, *evo_version;
    double wall_s, compile_s, check_s, time_s; /* wall-time split, updated as the run goes */
    char *island; /* one island of an --islands job (schema 5): JSON {"rank", "islands", "migrate_every",
                              "migrants", "seed"} (islands.h); NULL for a plain run */
} evo_run_rec;

/* Inserts the run; sets run->id, and run->started_at / run->state (malloc'd, owned by run) when they were NULL. */
evo_status evo_store_begin_run(evo_store *st, evo_run_rec *run, evo_err *err);
/* The same under the given id (> 0; EVO_E_DB when it is taken): an --islands job gives every island's run one id. */
evo_status evo_store_begin_run_id(evo_store *st, evo_run_rec *run, int64_t id, evo_err *err);
/* Rewrites every field but id and started_at, by run->id (EVO_E_NOTFOUND when no such run). */
evo_status evo_store_update_run(evo_store *st, const evo_run_rec *run, evo_err *err);
evo_status evo_store_get_run(evo_store *st, int64_t id, evo_run_rec *out, evo_err *err); /* EVO_E_NOTFOUND */
evo_status evo_store_last_run(evo_store *st, int64_t *id, evo_err *err); /* highest id; EVO_E_NOTFOUND when none */
/* The latest run of task on arch (either NULL = any); EVO_E_NOTFOUND when none. */
evo_status evo_store_last_run_matching(evo_store *st, const char *task, const char *arch, int64_t *id, evo_err *err);
void evo_store_run_free(evo_run_rec *r);

/* ---- candidates: one compiled kernel, keyed by SHA-256(template source, genome, options, NVRTC, arch) ---- */
typedef struct {
    int64_t id;
    char *key; /* 64 lowercase hex */
    char *task, *arch;
    char *genome; /* canonical text */
    char *template_hash, *options, *nvrtc_version;
    int registers, smem_bytes, spill_bytes, stack_bytes; /* -1 when unknown (not compiled) */
    char *compile_log;                                   /* may be NULL */
} evo_candidate_rec;

/* Insert, or when the key exists keep the row and fill in the resource figures / compile log this record knows
 * (>= 0 / non-NULL); either way c->id is set to the row's id. */
evo_status evo_store_put_candidate(evo_store *st, evo_candidate_rec *c, evo_err *err);
/* By full key; by a key prefix of >= 4 hex digits (EVO_E_USAGE when it matches several); else by decimal id.
 * EVO_E_NOTFOUND when none. A decimal text that is both a row id and a key prefix of another candidate is refused
 * (EVO_E_USAGE), as evo_store_find_candidate with EVO_CAND_ID_OR_KEY does. */
evo_status evo_store_get_candidate(evo_store *st, const char *key_or_id, evo_candidate_rec *out, evo_err *err);

/* How the command line names a candidate (evo export, evo profile). */
typedef enum {
    EVO_CAND_ID_OR_KEY = 0, /* --id X: a row id or a key prefix; a decimal X that is the row id of one candidate and
                               a key prefix of another is refused, naming both                                   */
    EVO_CAND_ROW,           /* --row N: the row id only (decimal)                                              */
    EVO_CAND_KEY,           /* --key X: a full key or a key prefix of >= 4 hex digits only                     */
} evo_cand_ref;

/* The candidate spec names, read as `how` says; *taken (may be NULL) is set to how it was read: "row id", "key
 * prefix", "full key". EVO_E_NOTFOUND, or EVO_E_USAGE for an ambiguous or malformed spec. */
evo_status evo_store_find_candidate(evo_store *st, const char *spec, evo_cand_ref how, evo_candidate_rec *out,
                                    const char **taken, evo_err *err);
void evo_store_candidate_free(evo_candidate_rec *c);

/* ---- evaluations: one verdict on one candidate for one shape set, with per-shape results ---- */

typedef struct {
    int64_t id;
    int64_t candidate_id;
    int64_t run_id; /* 0 for `evo check` outside a run */
    int generation; /* -1 outside a run */
    char *shape_set;
    evo_verdict verdict;
    double fitness;                /* geomean speedup; NAN unless verdict is OK (or REGRESSED, kept for insight) */
    double fitness_lo, fitness_hi; /* its 95 % interval (noise.h); NAN when unknown (schema < 3, or not timed) */
    char *detail;                  /* JSON evidence: failing case, metrics, first bad index, log excerpt ... */
    char *gpu;
    double compile_s, check_s, time_s;
    char *created_at; /* set by put_evaluation when NULL (malloc'd, owned by the record) */
    evo_shape_result *shapes;
    int n_shapes;
    char *accuracy; /* the accuracy class it was judged in (task.h); NULL writes EVO_ACCURACY_EXACT, and
                            evaluations from before classes (schema < 4) read as it */
    int gate;       /* the task's gate version it was judged by (evo_task_gate_version); <= 0 writes 1 */
} evo_eval_rec;

/* The result's part of an evaluation (verdict, fitness and interval, evidence, GPU, gate seconds, per-shape results),
 * pointing into r (which must outlive e's use); ids, shape set, compile seconds, class and gate are the caller's. */
void evo_eval_rec_set_result(evo_eval_rec *e, const evo_result *r);
/* Writes the evaluation and its per-shape rows in one transaction; sets e->id. */
evo_status evo_store_put_evaluation(evo_store *st, evo_eval_rec *e, evo_err *err);
/* The most recent evaluation of this candidate for this shape set, a measured one before any NOT_RECORDED (which
 * says only that a replay source lacked the genome), judged in accuracy class `accuracy` by gate version `gate`
 * (accuracy NULL: any); *found = false when none. */
evo_status evo_store_find_evaluation(evo_store *st, int64_t candidate_id, const char *shape_set, const char *accuracy,
                                     int gate, evo_eval_rec *out, bool *found, evo_err *err);
void evo_store_eval_free(evo_eval_rec *e);
/* Every evaluation of a run in generation gen (-1 = all generations), in the order written — what --resume
 * rebuilds a population from. */
evo_status evo_store_foreach_run_evaluation(evo_store *st, int64_t run_id, int gen,
                                            void (*fn)(const evo_candidate_rec *c, const evo_eval_rec *e, void *ctx),
                                            void *ctx, evo_err *err);

/* ---- lineage and generations ---- */
/* child came from parent by operator op ("mutate", "crossover", "immigrant", "seed", ...) in that generation of
 * that run; writing the same edge again is a no-op (so a resumed generation may repeat it). */
evo_status evo_store_put_lineage(evo_store *st, int64_t run_id, int generation, int64_t child, int64_t parent,
                                 const char *op, evo_err *err);
/* The parents of child, oldest edge first. */
evo_status evo_store_lineage(evo_store *st, int64_t child,
                             void (*fn)(int64_t run_id, int generation, int64_t parent, const char *op, void *ctx),
                             void *ctx, evo_err *err);

typedef struct {
    int64_t run_id;
    int generation;
    double best_fitness, median_fitness; /* NAN when nothing was OK */
    int evaluated;                       /* new evaluations this generation (reused results excluded) */
    int reused;
    int counts[EVO_V_COUNT];
    double wall_s, compile_s, check_s, time_s;
    double baseline_noise; /* (p90 - p10) / median of the baseline, worst shape; NAN when unknown */
    char *best_genome;
} evo_gen_rec;

evo_status evo_store_put_generation(evo_store *st, const evo_gen_rec *g, evo_err *err); /* upsert */
/* All generations of a run in order; *out is malloc'd (free each with evo_store_gen_free, then the array). */
evo_status evo_store_generations(evo_store *st, int64_t run_id, evo_gen_rec **out, int *n, evo_err *err);
void evo_store_gen_free(evo_gen_rec *g);

/* ---- elites: best OK evaluations per candidate for (task, arch, shape_set), by fitness ---- */
typedef struct {
    evo_candidate_rec cand;
    evo_eval_rec eval; /* the candidate's best OK evaluation for the shape set */
} evo_elite_rec;

/* task, arch, shape_set or accuracy (an accuracy class) NULL = any. Returns at most k, by fitness descending; equal
 * fitness: earlier evaluation first. Each candidate appears once per shape set. *out malloc'd (NULL when *n is 0);
 * free with evo_store_elites_free. */
evo_status evo_store_elites(evo_store *st, const char *task, const char *arch, const char *shape_set,
                            const char *accuracy, int k, evo_elite_rec **out, int *n, evo_err *err);
/* The same, of evaluations made on one GPU model only (model NULL: any): an evaluation's gpu without the " (GPU N)"
 * the pool appends ("NVIDIA H200"). A speedup is relative to the baseline timed on the GPU that measured it, so a
 * store that several GPU models wrote into (evo merge) is ranked per model. */
evo_status evo_store_elites_on(evo_store *st, const char *task, const char *arch, const char *shape_set,
                               const char *accuracy, const char *model, int k, evo_elite_rec **out, int *n,
                               evo_err *err);
/* The GPU models of the OK evaluations of (task, arch, shape_set) (NULL = any), sorted; *models and its strings are
 * malloc'd (free each, then the array); none for a version-1 file. */
evo_status evo_store_gpu_models(evo_store *st, const char *task, const char *arch, const char *shape_set,
                                char ***models, int *n, evo_err *err);
void evo_store_elites_free(evo_elite_rec *e, int n);

/* ---- per-shape elites (per_shape.c): the fastest candidates on each shape, by that shape's median time ---- */
typedef struct {
    evo_candidate_rec cand;
    char *key;       /* cand.key */
    char *accuracy;  /* the class it was judged in */
    int rank;        /* 1 = fastest on the shape in its class */
    int64_t eval_id; /* the evaluation the result is of */
    int64_t run_id;  /* 0 outside a run */
    int generation;  /* -1 outside a run */
    char *gpu, *shape_set, *created_at;
    evo_shape_result result; /* its result on the shape: shape text, fields, median, interval, rate, speedup, errors */
} evo_shape_elite_rec;

/* For each shape (by its fields: one problem measured in several shape sets is one shape) and accuracy class of the
 * OK results of task on arch, the top k candidates by the shape's median time. A candidate counts once per shape and
 * class, with its fastest result there; ties: the lower median, then the smaller key, then the earlier evaluation.
 * task, arch, accuracy, model (an evaluation's GPU without " (GPU N)") and shape_set NULL = any; demoted candidates
 * are left out. Rows by class, then shape text, then rank. *out malloc'd (NULL when *n is 0); free with
 * evo_store_shape_elites_free. */
evo_status evo_store_shape_elites(evo_store *st, const char *task, const char *arch, const char *accuracy,
                                  const char *model, const char *shape_set, int k, evo_shape_elite_rec **out, int *n,
                                  evo_err *err);
void evo_store_shape_elites_free(evo_shape_elite_rec *e, int n);

/* Demote a candidate (compute-sanitizer reported errors in it): its results stay, it is no elite any more; reason
 * is kept in candidates.demoted (schema 2). EVO_E_NOTFOUND for an unknown id. */
evo_status evo_store_demote(evo_store *st, int64_t candidate_id, const char *reason, evo_err *err);

/* ---- re-timings (schema 3): an elite timed again, apart from its evaluation (which stays what the search saw) ---- */
typedef struct {
    int64_t id;
    int64_t candidate_id;
    int64_t run_id; /* 0 outside a run */
    int generation; /* the generation after which it was re-timed; -1 outside a run */
    char *shape_set;
    double fitness, fitness_lo, fitness_hi; /* NAN when unknown */
    char *why;                              /* "baseline drift" (during a run), "end of run" */
    char *gpu;
    char *created_at; /* set by put_retime when NULL (malloc'd, owned by the record) */
} evo_retime_rec;

evo_status evo_store_put_retime(evo_store *st, evo_retime_rec *r, evo_err *err); /* sets r->id */
/* The latest re-timing of a candidate for a shape set; *found = false when none (or schema < 3). */
evo_status evo_store_last_retime(evo_store *st, int64_t candidate_id, const char *shape_set, evo_retime_rec *out,
                                 bool *found, evo_err *err);
/* Every re-timing of a run after generation gen (-1 = all), oldest first: what --resume replays. */
evo_status evo_store_foreach_retime(evo_store *st, int64_t run_id, int gen,
                                    void (*fn)(const evo_retime_rec *r, void *ctx), void *ctx, evo_err *err);
void evo_store_retime_free(evo_retime_rec *r);

/* ---- profiles (ncu metrics), one value per (candidate, shape, metric); `evo elite` names these four ---- */
#define EVO_PROFILE_TENSOR_PIPE "tensor_pipe_util"       /* tensor-pipe utilisation, % of peak */
#define EVO_PROFILE_DRAM "dram_throughput"               /* DRAM throughput, % of peak or GB/s (unit says) */
#define EVO_PROFILE_OCCUPANCY "achieved_occupancy"       /* achieved occupancy, % */
#define EVO_PROFILE_BANK_CONFLICTS "smem_bank_conflicts" /* shared-memory bank conflicts, count */
#define EVO_PROFILE_ISSUE_SLOTS "issue_slot_util"        /* issue slots busy, % (written by `evo profile` too) */
#define EVO_PROFILE_DURATION "duration"                  /* the profiled launch's duration, us */

/* Upsert; unit may be NULL. */
evo_status evo_store_put_profile(evo_store *st, int64_t candidate_id, const char *shape, const char *metric,
                                 double value, const char *unit, evo_err *err);
/* Calls fn for each stored metric of the candidate, by shape then metric name. */
evo_status evo_store_profiles(evo_store *st, int64_t candidate_id,
                              void (*fn)(const char *shape, const char *metric, double value, const char *unit,
                                         void *ctx),
                              void *ctx, evo_err *err);

/* ---- run leases (schema 6) ---- */
typedef struct {
    char host[256];         /* gethostname                                                              */
    char boot_id[64];       /* /proc/sys/kernel/random/boot_id: one boot of one host                   */
    int64_t pid, pid_start; /* the process, and its start (clock ticks after boot): a reused pid is not it */
    char token[33];         /* random per claim: what the store compares                               */
} evo_lease_holder;

typedef struct {
    evo_lease_holder holder;
    char taken_at[32], renewed_at[32]; /* ISO 8601 UTC */
    double expires_at;                 /* seconds since the epoch; 0: no lease                            */
} evo_lease_rec;

/* Takes run_id's lease for me until now + lease_s, in one write transaction. Granted when the run has none, when it
 * is me's, when it has expired, or when its holder was a process of this boot of this host that no longer runs;
 * *prev (may be NULL) is then the lease replaced (expires_at 0: there was none) and *why (may be NULL) says why it
 * could be ("new", "mine", "expired", "holder gone"). Refused with EVO_E_USAGE while another holder's lease is live:
 * the message names the holder (host, pid) and until when it holds it. */
evo_status evo_store_lease_take(evo_store *st, int64_t run_id, const evo_lease_holder *me, double lease_s,
                                evo_lease_rec *prev, const char **why, evo_err *err);
/* Extends me's lease to now + lease_s; EVO_E_NOTFOUND (naming the holder) when it is no longer me's. */
evo_status evo_store_lease_renew(evo_store *st, int64_t run_id, const evo_lease_holder *me, double lease_s,
                                 evo_err *err);
/* EVO_OK while me holds run_id's lease (expired or not: nobody took it); EVO_E_NOTFOUND naming the holder otherwise.
 * Inside a group, the check and the group's writes are one transaction: nothing is stored for a run taken over. */
evo_status evo_store_lease_check(evo_store *st, int64_t run_id, const evo_lease_holder *me, evo_err *err);
/* Gives me's lease of run_id up (nothing when it is another's). */
evo_status evo_store_lease_release(evo_store *st, int64_t run_id, const evo_lease_holder *me, evo_err *err);
/* The lease of run_id; out->expires_at 0 when there is none. */
evo_status evo_store_lease_get(evo_store *st, int64_t run_id, evo_lease_rec *out, evo_err *err);
/* The path the store was opened with, as given (evo_store_path is the one messages show). */
const char *evo_store_file(const evo_store *st);

/* ---- per-knob-value statistics for insight-guided mutation ---- */
/* For every evaluation of (task, arch, shape_set) (NULL = any), oldest first, calls fn with the genome text,
 * verdict and fitness. */
/* before_run > 0 keeps only evaluations made outside runs or by runs with a smaller id (what a resumed run's
 * insights were fed the first time). */
evo_status evo_store_foreach_evaluation(evo_store *st, const char *task, const char *arch, const char *shape_set,
                                        int64_t before_run,
                                        void (*fn)(const char *genome, evo_verdict v, double fitness, void *ctx),
                                        void *ctx, evo_err *err);
/* The latest evaluation of the genome (canonical text) of task for shape_set, on arch (NULL = any), a measured
 * one before any NOT_RECORDED; the replay evaluator's lookup. *found = false when none. */
evo_status evo_store_find_evaluation_by_genome(evo_store *st, const char *task, const char *genome,
                                               const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                               evo_err *err);
/* The same over every text in genomes (n of them): the texts one genome was stored under (the store never rewrites a
 * genome's text; a config whose knobs have conditions reads older texts listing inactive knobs as the same genome,
 * eval/aliases.h). */
evo_status evo_store_find_evaluation_by_genomes(evo_store *st, const char *task, const char *const *genomes, int n,
                                                const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                                evo_err *err);
/* Every distinct genome text of the candidates of task (NULL: any), in the order of their first candidate. */
evo_status evo_store_foreach_genome(evo_store *st, const char *task, void (*fn)(const char *genome, void *ctx),
                                    void *ctx, evo_err *err);

/* ---- whole files (merge.c): a consistent copy, and merging one store into another ---- */
/* A copy of the store's file as it is now, at path (a new name: refused when it exists), through SQLite's online
 * backup: one consistent snapshot, schema version and application id included, whatever writes go on meanwhile. */
evo_status evo_store_copy(evo_store *st, const char *path, evo_err *err);

/* Rows by table, what a merge added (and what it found there already). */
typedef struct {
    int64_t runs, candidates, evaluations, results, lineage, generations, retimes, profiles;
} evo_merge_counts;

/* The tasks a store holds (of its runs and candidates), sorted, comma-separated, malloc'd; "" when it has none. */
evo_status evo_store_tasks(evo_store *st, char **tasks, evo_err *err);

/* Merges the store file `in` into st (opened READWRITE), losslessly and idempotently, in one transaction:
 * - in is read only: opened read-only (so a file that is no evo store, is damaged or of a newer schema is refused
 *   with the store's own message and left as it was), copied (evo_store_copy) into $TMPDIR, and the copy opened
 *   read-write, which migrates an older schema the way every writing command does; the copy is then removed;
 * - candidates are one row per key: a key st has keeps its row (resource figures, compile log and a demotion it
 *   lacks are filled in from in's); every other row gets a new id, and every reference (evaluations, results,
 *   lineage, generations, re-timings, profiles) follows it;
 * - a run is the same run in both files when it began at the same second with the same task, arch, shape set,
 *   seed, strategy, population, config text, GPU and island; st keeps one row, with the figures of whichever copy
 *   got further (more wall time);
 * - an evaluation (or re-timing) already in st (same candidate, run, generation, shape set, verdict, time, GPU,
 *   fitness and detail; an evaluation's accuracy class and gate too) is not added again; lineage and generation rows by their keys; a profile figure by
 *   (candidate, shape, metric), the later measurement kept.
 * Merging the same file twice changes nothing the second time. `added` and `known` may be NULL. Not a group call:
 * st must have no open evo_store_begin. */
evo_status evo_store_merge(evo_store *st, const char *in, evo_merge_counts *added, evo_merge_counts *known,
                           evo_err *err);

/* ---- for the store's own files (merge.c) only: the connection, and SQLite codes as evo's messages ---- */
struct sqlite3;
struct sqlite3 *evo_store_db(evo_store *st);
evo_status evo_store_sql_fail(evo_store *st, int rc, evo_err *err, const char *where);

#endif
