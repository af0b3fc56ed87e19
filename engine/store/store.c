/* store.c — the SQLite store (see store.h): inspecting a file before touching it, schema migrations, the
 * connection settings, write transactions, cached prepared statements and one reader/writer per record type.
 * Every SQL text here is constant; values only ever reach SQLite as bound parameters.
 */
#include "store.h"

#include "paths.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------------------ */
/* Schema                                                                                                        */
/* ------------------------------------------------------------------------------------------------------------ */

_Static_assert(EVO_V_COUNT == 11, "a new verdict needs a migration: a count column in generations and the CHECK "
                                  "list of evaluations.verdict");

/* The evaluations table, whose CHECK list of verdicts grew with version 3, and its indexes. */
#define VERDICTS_V1 \
    "'OK', 'INVALID', 'COMPILE_FAIL', 'RESOURCE_FAIL', 'LAUNCH_FAIL', 'CRASHED', 'TIMEOUT', 'INCORRECT', " \
    "'SLOW', 'REGRESSED'"
#define EVALUATIONS_COLUMNS(verdicts) \
    "  id            INTEGER PRIMARY KEY," \
    "  candidate_id  INTEGER NOT NULL REFERENCES candidates (id)," \
    "  run_id        INTEGER REFERENCES runs (id)," \
    "  generation    INTEGER," \
    "  shape_set     TEXT NOT NULL," \
    "  verdict       TEXT NOT NULL CHECK (verdict IN (" verdicts "))," \
    "  fitness       REAL," \
    "  detail        TEXT," \
    "  gpu           TEXT," \
    "  compile_s     REAL," \
    "  check_s       REAL," \
    "  time_s        REAL," \
    "  created_at    TEXT NOT NULL"
#define EVALUATIONS_INDEXES \
    "CREATE INDEX evaluations_candidate ON evaluations (candidate_id, shape_set);" \
    "CREATE INDEX evaluations_run ON evaluations (run_id, generation);" \
    "CREATE INDEX evaluations_ok ON evaluations (shape_set, fitness DESC) WHERE verdict = 'OK';"

/* Version 1. REAL columns are nullable because SQLite stores NaN as NULL: NULL reads back as NAN. */
static const char schema_v1[] =
    "CREATE TABLE runs ("
    "  id            INTEGER PRIMARY KEY,"
    "  started_at    TEXT NOT NULL,"
    "  finished_at   TEXT,"
    "  state         TEXT NOT NULL CHECK (state IN ('running', 'done', 'interrupted', 'failed')),"
    "  task          TEXT NOT NULL,"
    "  arch          TEXT NOT NULL,"
    "  shape_set     TEXT NOT NULL,"
    "  config_path   TEXT,"
    "  config_text   TEXT,"
    "  strategy      TEXT,"
    "  seed          INTEGER NOT NULL,"
    "  generations   INTEGER NOT NULL,"
    "  population    INTEGER NOT NULL,"
    "  gpu           TEXT,"
    "  driver        TEXT,"
    "  nvrtc_version TEXT,"
    "  evo_version   TEXT,"
    "  wall_s        REAL,"
    "  compile_s     REAL,"
    "  check_s       REAL,"
    "  time_s        REAL"
    ");"
    "CREATE INDEX runs_task_arch ON runs (task, arch);"

    "CREATE TABLE candidates ("
    "  id            INTEGER PRIMARY KEY,"
    "  key           TEXT NOT NULL UNIQUE CHECK (length(key) = 64),"
    "  task          TEXT NOT NULL,"
    "  arch          TEXT NOT NULL,"
    "  genome        TEXT NOT NULL,"
    "  template_hash TEXT NOT NULL,"
    "  options       TEXT NOT NULL,"
    "  nvrtc_version TEXT NOT NULL,"
    "  registers     INTEGER NOT NULL DEFAULT -1,"
    "  smem_bytes    INTEGER NOT NULL DEFAULT -1,"
    "  spill_bytes   INTEGER NOT NULL DEFAULT -1,"
    "  stack_bytes   INTEGER NOT NULL DEFAULT -1,"
    "  compile_log   TEXT"
    ");"
    "CREATE INDEX candidates_task_arch ON candidates (task, arch);"

    "CREATE TABLE evaluations (" EVALUATIONS_COLUMNS(
        VERDICTS_V1) ");" EVALUATIONS_INDEXES

                     "CREATE TABLE results ("
                     "  evaluation_id INTEGER NOT NULL REFERENCES evaluations (id) ON DELETE CASCADE,"
                     "  position      INTEGER NOT NULL,"
                     "  shape         TEXT NOT NULL,"
                     "  batch         INTEGER NOT NULL,"
                     "  heads         INTEGER NOT NULL,"
                     "  seq           INTEGER NOT NULL,"
                     "  head_dim      INTEGER NOT NULL,"
                     "  causal        INTEGER NOT NULL CHECK (causal IN (0, 1)),"
                     "  median_us     REAL,"
                     "  p10_us        REAL,"
                     "  p90_us        REAL,"
                     "  baseline_us   REAL,"
                     "  speedup       REAL,"
                     "  tflops        REAL,"
                     "  max_abs       REAL,"
                     "  rel_l2        REAL,"
                     "  e2e_rel_l2    REAL,"
                     "  e2e_rmse      REAL,"
                     "  PRIMARY KEY (evaluation_id, position)"
                     ") WITHOUT ROWID;"

                     "CREATE TABLE lineage ("
                     "  run_id        INTEGER NOT NULL REFERENCES runs (id),"
                     "  generation    INTEGER NOT NULL,"
                     "  child_id      INTEGER NOT NULL REFERENCES candidates (id),"
                     "  parent_id     INTEGER NOT NULL REFERENCES candidates (id),"
                     "  operator      TEXT NOT NULL,"
                     "  UNIQUE (run_id, generation, child_id, parent_id, operator)"
                     ");"
                     "CREATE INDEX lineage_child ON lineage (child_id);"
                     "CREATE INDEX lineage_parent ON lineage (parent_id);"

                     "CREATE TABLE generations ("
                     "  run_id          INTEGER NOT NULL REFERENCES runs (id),"
                     "  generation      INTEGER NOT NULL,"
                     "  best_fitness    REAL,"
                     "  median_fitness  REAL,"
                     "  evaluated       INTEGER NOT NULL,"
                     "  reused          INTEGER NOT NULL,"
                     "  n_ok            INTEGER NOT NULL,"
                     "  n_invalid       INTEGER NOT NULL,"
                     "  n_compile_fail  INTEGER NOT NULL,"
                     "  n_resource_fail INTEGER NOT NULL,"
                     "  n_launch_fail   INTEGER NOT NULL,"
                     "  n_crashed       INTEGER NOT NULL,"
                     "  n_timeout       INTEGER NOT NULL,"
                     "  n_incorrect     INTEGER NOT NULL,"
                     "  n_slow          INTEGER NOT NULL,"
                     "  n_regressed     INTEGER NOT NULL,"
                     "  wall_s          REAL,"
                     "  compile_s       REAL,"
                     "  check_s         REAL,"
                     "  time_s          REAL,"
                     "  baseline_noise  REAL,"
                     "  best_genome     TEXT,"
                     "  PRIMARY KEY (run_id, generation)"
                     ") WITHOUT ROWID;"

                     "CREATE TABLE profiles ("
                     "  candidate_id  INTEGER NOT NULL REFERENCES candidates (id),"
                     "  shape         TEXT NOT NULL,"
                     "  metric        TEXT NOT NULL,"
                     "  value         REAL,"
                     "  unit          TEXT,"
                     "  measured_at   TEXT NOT NULL,"
                     "  PRIMARY KEY (candidate_id, shape, metric)"
                     ") WITHOUT ROWID;";

/* Version 3: evaluations as in version 1 but for the verdict NOT_RECORDED in its CHECK list (SQLite changes a CHECK
 * only by rebuilding the table: migrate_2_to_3), and generations with a count of it. */
static const char schema_v3[] = "CREATE TABLE evaluations_v3 (" EVALUATIONS_COLUMNS(
    VERDICTS_V1
    ", 'NOT_RECORDED'") ");"
                        "INSERT INTO evaluations_v3 SELECT id, candidate_id, run_id, generation, shape_set, verdict, fitness, detail, "
                        "gpu, compile_s, check_s, time_s, created_at FROM evaluations;"
                        "DROP TABLE evaluations;"
                        "ALTER TABLE evaluations_v3 RENAME TO evaluations;" EVALUATIONS_INDEXES
                        "ALTER TABLE generations ADD COLUMN n_not_recorded INTEGER NOT NULL DEFAULT 0;";

/* ------------------------------------------------------------------------------------------------------------ */
/* Statements: prepared once per handle, reset before each use                                                   */
/* ------------------------------------------------------------------------------------------------------------ */

#define RUN_COLS_V4 \
    "id, started_at, finished_at, state, task, arch, shape_set, config_path, config_text, strategy, seed, " \
    "generations, population, gpu, driver, nvrtc_version, evo_version, wall_s, compile_s, check_s, time_s"
#define RUN_COLS RUN_COLS_V4 ", island"
#define CAND_COLS \
    "id, key, task, arch, genome, template_hash, options, nvrtc_version, registers, smem_bytes, spill_bytes, " \
    "stack_bytes, compile_log"
#define EVAL_COLS_V2 \
    "id, candidate_id, run_id, generation, shape_set, verdict, fitness, detail, gpu, compile_s, check_s, time_s, " \
    "created_at"
#define EVAL_COLS_V3 EVAL_COLS_V2 ", fitness_lo, fitness_hi"
#define EVAL_COLS EVAL_COLS_V3 ", accuracy, gate"
#define RESULT_COLS \
    "shape, fields, median_us, p10_us, p90_us, baseline_us, speedup, rate, max_abs, rel_l2, e2e_rel_l2, e2e_rmse, " \
    "ci_lo_us, ci_hi_us, baseline_ci_lo_us, baseline_ci_hi_us"
/* Schema 1-2 kept attention's shape fields in columns of their own: read them as the fields object they are. */
#define RESULT_COLS_V2 \
    "shape, '{\"batch\":' || batch || ',\"heads\":' || heads || ',\"seq\":' || seq || ',\"head_dim\":' || " \
    "head_dim || ',\"causal\":' || CASE causal WHEN 1 THEN 'true' ELSE 'false' END || '}', median_us, p10_us, " \
    "p90_us, baseline_us, speedup, tflops, max_abs, rel_l2, e2e_rel_l2, e2e_rmse, NULL, NULL, NULL, NULL"
#define RETIME_COLS \
    "id, candidate_id, run_id, generation, shape_set, fitness, fitness_lo, fitness_hi, why, gpu, created_at"
/* The verdict counts in the order of evo_verdict; a file before version 3 reads 0 for NOT_RECORDED. */
#define GEN_COLS_(not_recorded) \
    "run_id, generation, best_fitness, median_fitness, evaluated, reused, n_ok, n_invalid, n_compile_fail, " \
    "n_resource_fail, n_launch_fail, n_crashed, n_timeout, n_incorrect, n_slow, n_regressed, " not_recorded \
    ", wall_s, compile_s, check_s, time_s, baseline_noise, best_genome"
#define GEN_COLS GEN_COLS_("n_not_recorded")

enum stmt_id {
    S_RUN_INSERT,
    S_RUN_UPDATE,
    S_RUN_GET,
    S_RUN_LAST,
    S_RUN_LAST_MATCH,
    S_CAND_UPSERT,
    S_CAND_BY_KEY,
    S_CAND_BY_ID,
    S_CAND_PREFIX,
    S_EVAL_INSERT,
    S_EVAL_BY_ID,
    S_EVAL_FIND,
    S_EVAL_OF_RUN,
    S_RESULT_INSERT,
    S_RESULTS_OF,
    S_LINEAGE_INSERT,
    S_LINEAGE_OF,
    S_GEN_UPSERT,
    S_GENS_OF,
    S_ELITES_EXACT,
    S_ELITES_ANY,
    S_PROFILE_UPSERT,
    S_PROFILES_OF,
    S_GENOME_VERDICTS,
    S_EVAL_BY_GENOME,
    S_GENOMES,
    S_CAND_DEMOTE,
    S_RETIME_INSERT,
    S_RETIME_LAST,
    S_RETIMES_OF_RUN,
    S_ELITES_MODEL,
    S_GPU_MODELS,
    S_COUNT
};

/* The elite query: each candidate's best OK evaluation per shape set, then the best k of those. The _EXACT form
 * (all filters given, the usual case) can use the partial index evaluations_ok and candidates_task_arch. */
#define ELITES_SQL_(demoted, acc, filter) \
    "SELECT id FROM (SELECT e.id AS id, e.fitness AS fitness, row_number() OVER (PARTITION BY e.candidate_id, " \
    "e.shape_set ORDER BY e.fitness DESC, e.id) AS rank FROM evaluations e JOIN candidates c ON c.id = " \
    "e.candidate_id WHERE e.verdict = 'OK' AND e.fitness IS NOT NULL AND " demoted "(?5 IS NULL OR " acc " = ?5) " \
    "AND " filter ") WHERE rank = 1 ORDER BY fitness DESC, id LIMIT ?4"
/* Demoted candidates are no elites; a version-1 file (read without migrating) has no such column. Evaluations
 * from before accuracy classes (schema < 4, or a NULL column) are of the exact class. */
#define ACC_V4 "coalesce(e.accuracy, '" EVO_ACCURACY_EXACT "')"
#define ACC_V3 "'" EVO_ACCURACY_EXACT "'"
#define ELITES_SQL(filter) ELITES_SQL_("c.demoted IS NULL AND ", ACC_V4, filter)
#define ELITES_SQL_V3(filter) ELITES_SQL_("c.demoted IS NULL AND ", ACC_V3, filter)
#define ELITES_SQL_V1(filter) ELITES_SQL_("", ACC_V3, filter)
#define ELITES_FILTER_EXACT "c.task = ?1 AND c.arch = ?2 AND e.shape_set = ?3"
#define ELITES_FILTER_ANY \
    "(?1 IS NULL OR c.task = ?1) AND (?2 IS NULL OR c.arch = ?2) AND (?3 IS NULL OR e.shape_set = ?3)"
/* The GPU model of an evaluation: its gpu without the " (GPU N)" the pool appends. */
#define GPU_MODEL_SQL \
    "CASE WHEN instr(e.gpu, ' (GPU ') > 0 THEN substr(e.gpu, 1, instr(e.gpu, ' (GPU ') - 1) ELSE " \
    "coalesce(e.gpu, '') END"
#define ELITES_FILTER_MODEL ELITES_FILTER_ANY " AND " GPU_MODEL_SQL " = ?6"

static const char *const stmt_sql[S_COUNT] = {
    [S_RUN_INSERT] = "INSERT INTO runs (id, started_at, finished_at, state, task, arch, shape_set, config_path, "
                     "config_text, strategy, seed, generations, population, gpu, driver, nvrtc_version, "
                     "evo_version, wall_s, compile_s, check_s, time_s, island) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [S_RUN_UPDATE] = "UPDATE runs SET finished_at = ?, state = ?, task = ?, arch = ?, shape_set = ?, "
                     "config_path = ?, config_text = ?, strategy = ?, seed = ?, generations = ?, population = ?, "
                     "gpu = ?, driver = ?, nvrtc_version = ?, evo_version = ?, wall_s = ?, compile_s = ?, "
                     "check_s = ?, time_s = ?, island = ? WHERE id = ?",
    [S_RUN_GET] = "SELECT " RUN_COLS " FROM runs WHERE id = ?",
    [S_RUN_LAST] = "SELECT max(id) FROM runs",
    [S_RUN_LAST_MATCH] = "SELECT max(id) FROM runs WHERE (?1 IS NULL OR task = ?1) AND (?2 IS NULL OR arch = ?2)",
    [S_CAND_UPSERT] =
        "INSERT INTO candidates (key, task, arch, genome, template_hash, options, nvrtc_version, registers, "
        "smem_bytes, spill_bytes, stack_bytes, compile_log) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET "
        "registers = CASE WHEN excluded.registers >= 0 THEN excluded.registers ELSE registers END, "
        "smem_bytes = CASE WHEN excluded.smem_bytes >= 0 THEN excluded.smem_bytes ELSE smem_bytes END, "
        "spill_bytes = CASE WHEN excluded.spill_bytes >= 0 THEN excluded.spill_bytes ELSE spill_bytes END, "
        "stack_bytes = CASE WHEN excluded.stack_bytes >= 0 THEN excluded.stack_bytes ELSE stack_bytes END, "
        "compile_log = coalesce(excluded.compile_log, compile_log)",
    [S_CAND_BY_KEY] = "SELECT " CAND_COLS " FROM candidates WHERE key = ?",
    [S_CAND_BY_ID] = "SELECT " CAND_COLS " FROM candidates WHERE id = ?",
    [S_CAND_PREFIX] = "SELECT id FROM candidates WHERE key GLOB ? ORDER BY id LIMIT 2",
    [S_EVAL_INSERT] = "INSERT INTO evaluations (candidate_id, run_id, generation, shape_set, verdict, fitness, "
                      "detail, gpu, compile_s, check_s, time_s, created_at, fitness_lo, fitness_hi, accuracy, gate) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [S_EVAL_BY_ID] = "SELECT " EVAL_COLS " FROM evaluations WHERE id = ?",
    [S_EVAL_FIND] = "SELECT " EVAL_COLS " FROM evaluations WHERE candidate_id = ?1 AND shape_set = ?2 AND (?3 IS NULL "
                    "OR (coalesce(accuracy, '" EVO_ACCURACY_EXACT "') = ?3 AND coalesce(gate, 1) = ?4)) "
                    "ORDER BY verdict = 'NOT_RECORDED', id DESC LIMIT 1",
    [S_EVAL_OF_RUN] = "SELECT " EVAL_COLS " FROM evaluations WHERE run_id = ?1 AND (?2 < 0 OR generation = ?2) "
                      "ORDER BY id",
    [S_RESULT_INSERT] = "INSERT INTO results (evaluation_id, position, " RESULT_COLS ") "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [S_RESULTS_OF] = "SELECT " RESULT_COLS " FROM results WHERE evaluation_id = ? ORDER BY position",
    [S_LINEAGE_INSERT] = "INSERT OR IGNORE INTO lineage (run_id, generation, child_id, parent_id, operator) "
                         "VALUES (?, ?, ?, ?, ?)",
    [S_LINEAGE_OF] = "SELECT run_id, generation, parent_id, operator FROM lineage WHERE child_id = ? "
                     "ORDER BY rowid",
    [S_GEN_UPSERT] = "INSERT OR REPLACE INTO generations (" GEN_COLS ") "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [S_GENS_OF] = "SELECT " GEN_COLS " FROM generations WHERE run_id = ? ORDER BY generation",
    [S_ELITES_EXACT] = ELITES_SQL(ELITES_FILTER_EXACT),
    [S_ELITES_ANY] = ELITES_SQL(ELITES_FILTER_ANY),
    [S_PROFILE_UPSERT] = "INSERT INTO profiles (candidate_id, shape, metric, value, unit, measured_at) "
                         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (candidate_id, shape, metric) DO UPDATE SET "
                         "value = excluded.value, unit = excluded.unit, measured_at = excluded.measured_at",
    [S_PROFILES_OF] = "SELECT shape, metric, value, unit FROM profiles WHERE candidate_id = ? "
                      "ORDER BY shape, metric",
    [S_GENOME_VERDICTS] = "SELECT c.genome, e.verdict, e.fitness FROM evaluations e JOIN candidates c ON "
                          "c.id = e.candidate_id WHERE (?1 IS NULL OR c.task = ?1) AND (?2 IS NULL OR c.arch = ?2) "
                          "AND (?3 IS NULL OR e.shape_set = ?3) AND (?4 <= 0 OR e.run_id IS NULL OR e.run_id < ?4) "
                          "ORDER BY e.id",
    [S_CAND_DEMOTE] = "UPDATE candidates SET demoted = ? WHERE id = ?",
    [S_GENOMES] = "SELECT genome FROM candidates WHERE (?1 IS NULL OR task = ?1) GROUP BY genome ORDER BY min(id)",
    [S_EVAL_BY_GENOME] =
        "SELECT e.id, e.verdict = 'NOT_RECORDED' FROM evaluations e JOIN candidates c ON c.id = e.candidate_id WHERE c.task = ?1 "
        "AND c.genome = ?2 AND e.shape_set = ?3 AND (?4 IS NULL OR c.arch = ?4) "
        "ORDER BY e.verdict = 'NOT_RECORDED', e.id DESC LIMIT 1",
    [S_RETIME_INSERT] = "INSERT INTO retimes (candidate_id, run_id, generation, shape_set, fitness, fitness_lo, "
                        "fitness_hi, why, gpu, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [S_RETIME_LAST] = "SELECT " RETIME_COLS " FROM retimes WHERE candidate_id = ? AND shape_set = ? ORDER BY id DESC "
                      "LIMIT 1",
    [S_RETIMES_OF_RUN] = "SELECT " RETIME_COLS " FROM retimes WHERE run_id = ?1 AND (?2 < 0 OR generation = ?2) "
                         "ORDER BY id",
    [S_ELITES_MODEL] = ELITES_SQL(ELITES_FILTER_MODEL),
    [S_GPU_MODELS] = "SELECT DISTINCT " GPU_MODEL_SQL " FROM evaluations e JOIN candidates c ON c.id = "
                     "e.candidate_id WHERE e.verdict = 'OK' AND e.fitness IS NOT NULL AND (?1 IS NULL OR c.task = ?1) "
                     "AND (?2 IS NULL OR c.arch = ?2) AND (?3 IS NULL OR e.shape_set = ?3) ORDER BY 1",
};

/* Readers of a file of an older schema (opened read-only, not migrated): the columns it lacks read as NULL, and
 * its evaluations are of the exact class and the first gate. */
#define FIND_V3 " AND (?3 IS NULL OR (?3 = '" EVO_ACCURACY_EXACT "' AND ?4 = 1))"
static const char *const stmt_sql_v2[S_COUNT] = {
    [S_EVAL_BY_ID] = "SELECT " EVAL_COLS_V2 ", NULL, NULL, NULL, NULL FROM evaluations WHERE id = ?",
    [S_EVAL_FIND] = "SELECT " EVAL_COLS_V2 ", NULL, NULL, NULL, NULL FROM evaluations WHERE candidate_id = ?1 AND "
                    "shape_set = ?2" FIND_V3 " ORDER BY id DESC LIMIT 1",
    [S_EVAL_OF_RUN] = "SELECT " EVAL_COLS_V2 ", NULL, NULL, NULL, NULL FROM evaluations WHERE run_id = ?1 AND "
                      "(?2 < 0 OR generation = ?2) ORDER BY id",
    [S_RESULTS_OF] = "SELECT " RESULT_COLS_V2 " FROM results WHERE evaluation_id = ? ORDER BY position",
};
static const char *const stmt_sql_v3[S_COUNT] = {
    [S_EVAL_BY_ID] = "SELECT " EVAL_COLS_V3 ", NULL, NULL FROM evaluations WHERE id = ?",
    [S_EVAL_FIND] =
        "SELECT " EVAL_COLS_V3 ", NULL, NULL FROM evaluations WHERE candidate_id = ?1 AND shape_set = ?2" FIND_V3
        " ORDER BY verdict = 'NOT_RECORDED', id DESC LIMIT 1",
    [S_EVAL_OF_RUN] = "SELECT " EVAL_COLS_V3 ", NULL, NULL FROM evaluations WHERE run_id = ?1 AND (?2 < 0 OR "
                      "generation = ?2) ORDER BY id",
    [S_ELITES_EXACT] = ELITES_SQL_V3(ELITES_FILTER_EXACT),
    [S_ELITES_ANY] = ELITES_SQL_V3(ELITES_FILTER_ANY),
    [S_ELITES_MODEL] = ELITES_SQL_V3(ELITES_FILTER_MODEL),
};

struct evo_store {
    sqlite3 *db;
    char *path; /* as messages show it (control characters escaped: util.h evo_show) */
    char *file; /* as given: what is opened */
    int mode;
    int version;
    int busy_ms;
    bool in_group;
    bool group_failed;
    char group_error[sizeof(((evo_err *)0)->msg)];
    sqlite3_stmt *stmt[S_COUNT];
    int fail_at, groups; /* EVO_STORE_FAIL_AT=N: the N-th group's commit fails as on a full disk (tests) */
};

/* ------------------------------------------------------------------------------------------------------------ */
/* Errors                                                                                                        */
/* ------------------------------------------------------------------------------------------------------------ */

/* Turn a SQLite result code into an evo_status with a message naming the file and SQLite's own words. */
static evo_status sql_fail(const evo_store *st, int rc, evo_err *err, const char *where)
{
    const char *msg = st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return evo_fail(err, EVO_E_DB,
                            "%s: database is locked by another process (gave up after %d ms; is another evo writing "
                            "to it?)",
                            st->path, st->busy_ms);
        case SQLITE_NOTADB: return evo_fail(err, EVO_E_DB, "%s: not an evo database (%s)", st->path, msg);
        case SQLITE_CORRUPT: return evo_fail(err, EVO_E_DB, "%s: corrupt database (%s); left untouched", st->path, msg);
        case SQLITE_NOMEM: return evo_fail(err, EVO_E_NOMEM, "%s: out of memory in SQLite", st->path);
        case SQLITE_FULL:
            return evo_fail(err, EVO_E_DB, "%s: disk full (%s); the failed write was rolled back", st->path, msg);
        case SQLITE_IOERR: {
            /* A file size limit (EFBIG), a short write, EIO; ENOSPC is SQLITE_FULL. The OS error, when SQLite kept one,
         * says which. */
            const int e = st->db ? sqlite3_system_errno(st->db) : 0;
            const bool read = rc == SQLITE_IOERR_READ || rc == SQLITE_IOERR_SHORT_READ;
            return evo_fail(err, EVO_E_DB, "%s: %s failed (%s%s%s); %s", st->path, read ? "read" : "write", msg,
                            e ? ": " : "", e ? strerror(e) : "",
                            read ? "the file may be damaged" : "is the disk full? The failed write was rolled back");
        }
        case SQLITE_READONLY:
            return evo_fail(err, EVO_E_DB,
                            "%s: cannot write (%s); writing needs write access to the file and to its directory (for "
                            "its -wal and -shm files)",
                            st->path, msg);
        case SQLITE_CANTOPEN: return evo_fail(err, EVO_E_DB, "%s: cannot open (%s)", st->path, msg);
        default: return evo_fail(err, EVO_E_DB, "%s: %s (in %s)", st->path, msg, where);
    }
}

static bool sql_error(int rc) { return rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE; }

sqlite3 *evo_store_db(evo_store *st) { return st->db; }
evo_status evo_store_sql_fail(evo_store *st, int rc, evo_err *err, const char *where)
{
    return sql_fail(st, rc, err, where);
}

/* The one checking macro for sqlite3 calls: on an error code, return it as an evo_status. */
#define SQL(st, err, call) \
    do { \
        int rc_ = (call); \
        if (sql_error(rc_)) return sql_fail((st), rc_, (err), __func__); \
    } while (0)

#define TRY(call) \
    do { \
        evo_status s_ = (call); \
        if (s_ != EVO_OK) return s_; \
    } while (0)

/* ------------------------------------------------------------------------------------------------------------ */
/* Binding and reading columns in order                                                                          */
/* ------------------------------------------------------------------------------------------------------------ */

typedef struct {
    sqlite3_stmt *q;
    int i;
    int rc; /* first failure */
} binder;

static void b_text(binder *b, const char *s)
{
    if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_text(b->q, ++b->i, s, -1, SQLITE_TRANSIENT); /* NULL -> NULL */
}
static void b_int(binder *b, int64_t v)
{
    if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_int64(b->q, ++b->i, v);
}
static void b_null(binder *b)
{
    if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_null(b->q, ++b->i);
}
static void b_real(binder *b, double v)
{
    if (isnan(v))
        b_null(b);
    else if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_double(b->q, ++b->i, v);
}

typedef struct {
    sqlite3_stmt *q;
    int i;
} reader;

static bool r_isnull(reader *r) { return sqlite3_column_type(r->q, r->i) == SQLITE_NULL; }
static char *r_text(reader *r)
{
    const unsigned char *t = sqlite3_column_text(r->q, r->i++);
    return t ? evo_strdup((const char *)t) : NULL;
}
static int64_t r_int(reader *r) { return sqlite3_column_int64(r->q, r->i++); }
static int r_int32(reader *r) { return sqlite3_column_int(r->q, r->i++); }
static double r_real(reader *r)
{
    double v = r_isnull(r) ? NAN : sqlite3_column_double(r->q, r->i);
    r->i++;
    return v;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Statement cache and transactions                                                                              */
/* ------------------------------------------------------------------------------------------------------------ */

static const char *const elites_sql_v1[2] = {ELITES_SQL_V1(ELITES_FILTER_EXACT), ELITES_SQL_V1(ELITES_FILTER_ANY)};

static const char gens_of_v2[] = "SELECT " GEN_COLS_("0") " FROM generations WHERE run_id = ? ORDER BY generation";
static const char run_get_v4[] = "SELECT " RUN_COLS_V4 ", NULL FROM runs WHERE id = ?"; /* no island before 5 */

static evo_status prep(evo_store *st, enum stmt_id id, sqlite3_stmt **q, evo_err *err)
{
    if (!st->stmt[id]) {
        const char *sql = stmt_sql[id];
        if (st->version < 4 && stmt_sql_v3[id]) sql = stmt_sql_v3[id];
        if (st->version < 3 && stmt_sql_v2[id]) sql = stmt_sql_v2[id];
        if (st->version < 2 && (id == S_ELITES_EXACT || id == S_ELITES_ANY)) sql = elites_sql_v1[id == S_ELITES_ANY];
        if (st->version < 3 && id == S_GENS_OF) sql = gens_of_v2;
        if (st->version < 5 && id == S_RUN_GET) sql = run_get_v4;
        SQL(st, err, sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[id], NULL));
    } else {
        sqlite3_reset(st->stmt[id]);
        sqlite3_clear_bindings(st->stmt[id]);
    }
    *q = st->stmt[id];
    return EVO_OK;
}

/* A statement left mid-iteration keeps its read snapshot open; every public call ends by resetting them all. */
static void reset_all(evo_store *st)
{
    for (int i = 0; i < S_COUNT; i++)
        if (st->stmt[i]) sqlite3_reset(st->stmt[i]);
}

static evo_status read_end(evo_store *st, evo_status s)
{
    reset_all(st);
    return s;
}

/* For constant statements without parameters (transaction control, pragmas, the schema). */
static evo_status exec_sql(evo_store *st, const char *sql, evo_err *err)
{
    SQL(st, err, sqlite3_exec(st->db, sql, NULL, NULL, NULL));
    return EVO_OK;
}

static void exec_quiet(evo_store *st, const char *sql) { (void)sqlite3_exec(st->db, sql, NULL, NULL, NULL); }

static evo_status need_write(const evo_store *st, const char *what, evo_err *err)
{
    if (st->mode != EVO_STORE_READWRITE)
        return evo_fail(err, EVO_E_INTERNAL, "%s: %s on a store opened read-only", st->path, what);
    return EVO_OK;
}

/* Every writer runs between write_begin and write_end: its own transaction outside a group (committed on return),
 * a savepoint inside one (undone on failure, and the group marked failed). */
static evo_status write_begin(evo_store *st, const char *what, evo_err *err)
{
    TRY(need_write(st, what, err));
    if (!st->in_group) return exec_sql(st, "BEGIN IMMEDIATE", err);
    if (st->group_failed)
        return evo_fail(err, EVO_E_DB, "%s: %s refused: an earlier write of this transaction failed (%s)", st->path,
                        what, st->group_error);
    return exec_sql(st, "SAVEPOINT evo_put", err);
}

static evo_status write_end(evo_store *st, evo_status s, evo_err *err)
{
    reset_all(st);
    if (!st->in_group) {
        if (s == EVO_OK) s = exec_sql(st, "COMMIT", err);
        if (s != EVO_OK && !sqlite3_get_autocommit(st->db)) exec_quiet(st, "ROLLBACK");
        return s;
    }
    if (s == EVO_OK) s = exec_sql(st, "RELEASE evo_put", err);
    if (s != EVO_OK) {
        exec_quiet(st, "ROLLBACK TO evo_put");
        exec_quiet(st, "RELEASE evo_put");
        st->group_failed = true;
        snprintf(st->group_error, sizeof st->group_error, "%s", err ? err->msg : evo_status_name(s));
    }
    return s;
}

evo_status evo_store_begin(evo_store *st, evo_err *err)
{
    TRY(need_write(st, "begin", err));
    if (st->in_group) return evo_fail(err, EVO_E_INTERNAL, "%s: evo_store_begin inside a transaction", st->path);
    TRY(exec_sql(st, "BEGIN IMMEDIATE", err));
    st->in_group = true;
    st->group_failed = false;
    st->group_error[0] = '\0';
    return EVO_OK;
}

evo_status evo_store_commit(evo_store *st, evo_err *err)
{
    if (!st->in_group) return evo_fail(err, EVO_E_INTERNAL, "%s: evo_store_commit without evo_store_begin", st->path);
    reset_all(st);
    st->in_group = false;
    if (st->fail_at > 0 && ++st->groups == st->fail_at) {
        exec_quiet(st, "ROLLBACK");
        return evo_fail(err, EVO_E_DB,
                        "%s: disk full (EVO_STORE_FAIL_AT=%d: write %d made to fail); the failed write "
                        "was rolled back",
                        st->path, st->fail_at, st->fail_at);
    }
    if (st->group_failed) {
        exec_quiet(st, "ROLLBACK");
        return evo_fail(err, EVO_E_DB, "%s: transaction rolled back: %s", st->path, st->group_error);
    }
    evo_status s = exec_sql(st, "COMMIT", err);
    if (s != EVO_OK && !sqlite3_get_autocommit(st->db)) exec_quiet(st, "ROLLBACK");
    return s;
}

void evo_store_rollback(evo_store *st)
{
    if (!st || !st->in_group) return;
    reset_all(st);
    exec_quiet(st, "ROLLBACK");
    st->in_group = false;
    st->group_failed = false;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Opening: look before touching, then migrate                                                                   */
/* ------------------------------------------------------------------------------------------------------------ */

static int busy_ms_from_env(void)
{
    const char *v = getenv("EVO_STORE_BUSY_MS");
    if (!v || !*v) return EVO_STORE_BUSY_MS;
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    if (errno || *end || ms < 0 || ms > INT_MAX) return EVO_STORE_BUSY_MS;
    return (int)ms;
}

/* One integer from a constant query; returns the SQLite code so the caller can tell "cannot open" apart. */
static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(q, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *out = 0;
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(q);
    return rc;
}

/* Reads the first 100 bytes without SQLite: a file that is not SQLite at all is refused before any library code
 * could decide to treat it as something to initialise. *empty is true for a 0-byte file. */
static evo_status check_header(const char *path, bool *empty, evo_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT)
            return evo_fail(err, EVO_E_NOTFOUND, "no database at %s — run `evo run` first", evo_show(path).s);
        return evo_fail(err, EVO_E_IO, "%s: %s", evo_show(path).s, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return evo_fail(err, EVO_E_DB, "%s: not an evo database (not a regular file)", evo_show(path).s);
    *empty = sb.st_size == 0;
    if (*empty) return EVO_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return evo_fail(err, EVO_E_DB, "%s: cannot open (%s)", evo_show(path).s, strerror(errno));
    unsigned char h[100];
    ssize_t n = read(fd, h, sizeof h);
    close(fd);
    if (n != (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
        return evo_fail(err, EVO_E_DB, "%s: not an evo database (file is not a database)", evo_show(path).s);
    return EVO_OK;
}

static char *readonly_uri(const char *path, bool immutable)
{
    evo_str u = {0};
    evo_str_append(&u, path[0] == '/' ? "file://" : "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (isalnum(*p) || strchr("/-._~", *p))
            evo_str_appendn(&u, (const char *)p, 1);
        else
            evo_str_appendf(&u, "%%%02X", *p);
    }
    evo_str_append(&u, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
    return evo_str_take(&u);
}

static void connection_settings(evo_store *st)
{
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, st->busy_ms);
}

/* Whether F-wal holds pages not yet checkpointed into F (an immutable reader would not see them). */
static bool wal_has_content(const char *path)
{
    evo_str w = {0};
    evo_str_appendf(&w, "%s-wal", path);
    struct stat sb;
    const bool has = stat(evo_str_cstr(&w), &sb) == 0 && sb.st_size > 0;
    evo_str_free(&w);
    return has;
}

/* Opens st->db read-only. Reading a WAL file needs its -shm index; where that cannot be created (read-only
 * directory) the file is read as immutable, which sees what was checkpointed into it. EVO_STORE_IMMUTABLE starts
 * there, unless a -wal file beside F holds pages that only a WAL reader sees. */
static evo_status connect_readonly(evo_store *st, evo_err *err)
{
    const int first = st->mode == EVO_STORE_IMMUTABLE && !wal_has_content(st->file);
    for (int immutable = first; immutable < 2; immutable++) {
        char *uri = readonly_uri(st->file, immutable);
        int rc = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        free(uri);
        if (rc == SQLITE_OK) {
            connection_settings(st);
            int64_t ignored;
            rc = query_int(st->db, "PRAGMA application_id", &ignored); /* the first read opens the file */
        }
        if (rc == SQLITE_OK) return exec_sql(st, "PRAGMA query_only = ON", err);
        bool retry = !immutable && ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY);
        evo_status s = retry ? EVO_OK : sql_fail(st, rc, err, "open");
        sqlite3_close(st->db);
        st->db = NULL;
        if (!retry) return s;
    }
    return evo_fail(err, EVO_E_INTERNAL, "%s: unreachable", st->path);
}

/* Is this evo's file, of a schema this evo can use, and sound? Sets st->version. */
static evo_status inspect_snapshot(evo_store *st, bool quick_check, evo_err *err)
{
    int64_t app = 0, ver = 0, nobj = 0;
    SQL(st, err, query_int(st->db, "PRAGMA application_id", &app));
    SQL(st, err, query_int(st->db, "PRAGMA user_version", &ver));
    SQL(st, err, query_int(st->db, "SELECT count(*) FROM sqlite_master", &nobj));
    if (app != EVO_STORE_APP_ID) {
        if (app == 0 && ver == 0 && nobj == 0) {
            st->version = 0;
            return EVO_OK;
        }
        if (app != 0)
            return evo_fail(err, EVO_E_DB, "%s: not an evo database (application id 0x%08llx is another program's)",
                            st->path, (unsigned long long)(uint32_t)app);
        return evo_fail(err, EVO_E_DB,
                        "%s: not an evo database (a SQLite file with %lld schema objects of another program, "
                        "user_version %lld); left untouched",
                        st->path, (long long)nobj, (long long)ver);
    }
    if (ver > EVO_STORE_SCHEMA)
        return evo_fail(err, EVO_E_DB_SCHEMA,
                        "%s: schema version %lld is newer than this evo understands (%d); upgrade evo", st->path,
                        (long long)ver, EVO_STORE_SCHEMA);
    if (quick_check) {
        sqlite3_stmt *q = NULL;
        SQL(st, err, sqlite3_prepare_v2(st->db, "PRAGMA quick_check(1)", -1, &q, NULL));
        int rc = sqlite3_step(q);
        char verdict[512] = "";
        if (rc == SQLITE_ROW && sqlite3_column_text(q, 0))
            snprintf(verdict, sizeof verdict, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        SQL(st, err, rc);
        for (char *c = verdict; *c; c++) /* SQLite's report spans lines; evo's messages are one line */
            if (*c == '\n') *c = ' ';
        if (strcmp(verdict, "ok") != 0)
            return evo_fail(err, EVO_E_DB, "%s: corrupt database (quick_check: %s); left untouched", st->path, verdict);
    }
    st->version = (int)ver;
    return EVO_OK;
}

/* The numbers inspect reads must come from one snapshot: read one by one, they can straddle another evo's commit of
 * a new schema (tables there, application id not yet) and a sound file looks like another program's. */
static evo_status inspect(evo_store *st, bool quick_check, evo_err *err)
{
    const bool own = sqlite3_get_autocommit(st->db); /* migrate_step calls this inside its write transaction */
    if (own) TRY(exec_sql(st, "BEGIN", err));
    evo_status s = inspect_snapshot(st, quick_check, err);
    if (own) exec_quiet(st, "ROLLBACK"); /* ends the read transaction; it wrote nothing */
    return s;
}

static evo_status migrate_0_to_1(evo_store *st, evo_err *err) { return exec_sql(st, schema_v1, err); }

/* Version 2: a candidate can be demoted (compute-sanitizer found errors in it): it keeps its results but is no
 * longer an elite. */
static evo_status migrate_1_to_2(evo_store *st, evo_err *err)
{
    return exec_sql(st, "ALTER TABLE candidates ADD COLUMN demoted TEXT;", err);
}

/* migrations[v] takes a file from schema v to v + 1. Append only: files in the field have run the old ones. */
typedef evo_status (*migration_fn)(evo_store *st, evo_err *err);
/* Version 3: the verdict NOT_RECORDED (the evaluations table is rebuilt with foreign keys off: migrate turns them off
 * around every step; results, which reference evaluations, keep their rows; checked before the commit); a result's
 * shape is the task's fields as one JSON object (any task), not attention's five columns, and its rate column holds
 * work / time in the task's unit (TFLOP/s for attention, as before); results carry the 95 % intervals of their
 * medians, evaluations the interval of their fitness, and re-timings of elites have a table. */
static evo_status migrate_2_to_3(evo_store *st, evo_err *err)
{
    TRY(exec_sql(st, schema_v3, err));
    TRY(exec_sql(st,
                 "CREATE TABLE results_v3 ("
                 "  evaluation_id INTEGER NOT NULL REFERENCES evaluations (id) ON DELETE CASCADE,"
                 "  position      INTEGER NOT NULL,"
                 "  shape         TEXT NOT NULL,"
                 "  fields        TEXT NOT NULL,"
                 "  median_us     REAL,"
                 "  p10_us        REAL,"
                 "  p90_us        REAL,"
                 "  baseline_us   REAL,"
                 "  speedup       REAL,"
                 "  rate          REAL,"
                 "  max_abs       REAL,"
                 "  rel_l2        REAL,"
                 "  e2e_rel_l2    REAL,"
                 "  e2e_rmse      REAL,"
                 "  ci_lo_us      REAL,"
                 "  ci_hi_us      REAL,"
                 "  baseline_ci_lo_us REAL,"
                 "  baseline_ci_hi_us REAL,"
                 "  PRIMARY KEY (evaluation_id, position)"
                 ") WITHOUT ROWID;"
                 "INSERT INTO results_v3 SELECT evaluation_id, position, " RESULT_COLS_V2 " FROM results;"
                 "DROP TABLE results;"
                 "ALTER TABLE results_v3 RENAME TO results;"
                 "ALTER TABLE evaluations ADD COLUMN fitness_lo REAL;"
                 "ALTER TABLE evaluations ADD COLUMN fitness_hi REAL;"
                 "CREATE TABLE retimes ("
                 "  id            INTEGER PRIMARY KEY,"
                 "  candidate_id  INTEGER NOT NULL REFERENCES candidates (id),"
                 "  run_id        INTEGER REFERENCES runs (id),"
                 "  generation    INTEGER,"
                 "  shape_set     TEXT NOT NULL,"
                 "  fitness       REAL,"
                 "  fitness_lo    REAL,"
                 "  fitness_hi    REAL,"
                 "  why           TEXT NOT NULL,"
                 "  gpu           TEXT,"
                 "  created_at    TEXT NOT NULL"
                 ");"
                 "CREATE INDEX retimes_candidate ON retimes (candidate_id, shape_set);"
                 "CREATE INDEX retimes_run ON retimes (run_id, generation);",
                 err));
    int64_t bad = 0;
    SQL(st, err, query_int(st->db, "SELECT count(*) FROM pragma_foreign_key_check", &bad));
    if (bad)
        return evo_fail(err, EVO_E_DB, "%s: %lld rows lost their references while rebuilding evaluations", st->path,
                        (long long)bad);
    return EVO_OK;
}

/* Version 4: the accuracy class an evaluation was judged in and the version of the gates (NULL: exact, 1). */
static evo_status migrate_3_to_4(evo_store *st, evo_err *err)
{
    return exec_sql(st,
                    "ALTER TABLE evaluations ADD COLUMN accuracy TEXT;"
                    "ALTER TABLE evaluations ADD COLUMN gate INTEGER;",
                    err);
}

/* Version 5: a run that is one island of an --islands job says so (runs.island, JSON: rank, islands, migration
 * interval, migrants, the job's seed), so that --resume can hold the job to what it was. */
static evo_status migrate_4_to_5(evo_store *st, evo_err *err)
{
    return exec_sql(st, "ALTER TABLE runs ADD COLUMN island TEXT;", err);
}

/* Version 6: a run in progress has a lease (store.h): who holds it, on which boot of which host, until when. */
static evo_status migrate_5_to_6(evo_store *st, evo_err *err)
{
    return exec_sql(st,
                    "CREATE TABLE leases ("
                    "  run_id      INTEGER PRIMARY KEY REFERENCES runs (id),"
                    "  host        TEXT NOT NULL,"
                    "  boot_id     TEXT NOT NULL,"
                    "  pid         INTEGER NOT NULL,"
                    "  pid_start   INTEGER NOT NULL,"
                    "  token       TEXT NOT NULL,"
                    "  taken_at    TEXT NOT NULL,"
                    "  renewed_at  TEXT NOT NULL,"
                    "  expires_at  REAL NOT NULL"
                    ");",
                    err);
}

static const migration_fn migrations[] = {migrate_0_to_1, migrate_1_to_2, migrate_2_to_3,
                                          migrate_3_to_4, migrate_4_to_5, migrate_5_to_6};
_Static_assert(sizeof migrations / sizeof migrations[0] == EVO_STORE_SCHEMA,
               "one migration per schema version: EVO_STORE_SCHEMA and migrations[] disagree");

static evo_status migrate_step(evo_store *st, evo_err *err)
{
    /* Another evo may have migrated while this one waited for the lock: look again inside the transaction. */
    TRY(inspect(st, false, err));
    if (st->version >= EVO_STORE_SCHEMA) return EVO_OK;
    int from = st->version;
    TRY(migrations[from](st, err));
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d", EVO_STORE_APP_ID, from + 1);
    TRY(exec_sql(st, sql, err));
    st->version = from + 1;
    return EVO_OK;
}

/* One step, in one transaction. */
static evo_status migrate_once(evo_store *st, evo_err *err)
{
    TRY(exec_sql(st, "BEGIN IMMEDIATE", err));
    int before = st->version;
    evo_status s = migrate_step(st, err);
    if (s == EVO_OK) s = exec_sql(st, "COMMIT", err);
    if (s != EVO_OK) {
        if (!sqlite3_get_autocommit(st->db)) exec_quiet(st, "ROLLBACK");
        st->version = before;
        return evo_failv_prefix(err, s, "migrating the schema from version %d", before);
    }
    return EVO_OK;
}

static evo_status migrate(evo_store *st, evo_err *err)
{
    if (st->version >= EVO_STORE_SCHEMA) return EVO_OK;
    /* Rebuilding a table must not cascade into the tables that reference it; the pragma is outside transactions. */
    TRY(exec_sql(st, "PRAGMA foreign_keys = OFF", err));
    evo_status s = EVO_OK;
    while (s == EVO_OK && st->version < EVO_STORE_SCHEMA) s = migrate_once(st, err);
    evo_status on = exec_sql(st, "PRAGMA foreign_keys = ON", s == EVO_OK ? err : NULL);
    return s != EVO_OK ? s : on;
}

static evo_status open_readwrite(evo_store *st, evo_err *err)
{
    bool empty = true;
    evo_status s = check_header(st->file, &empty, err);
    if (s != EVO_OK && s != EVO_E_NOTFOUND) return s;
    if (s == EVO_E_NOTFOUND) {
        /* A missing file is created: its name must be new in a directory evo may write, said with the directory and
         * the reason (SQLite would say "unable to open database file"); a dangling link is refused, not followed. */
        if (err) err->msg[0] = '\0';
        TRY(evo_path_check_output(NULL, st->file, true, err));
    }
    if (s == EVO_OK && !empty) {
        /* Judge an existing file through a read-only connection first, so a refused file is never written. */
        evo_store probe = {.path = st->path, .file = st->file, .mode = EVO_STORE_READONLY, .busy_ms = st->busy_ms};
        s = connect_readonly(&probe, err);
        if (s == EVO_OK) s = inspect(&probe, true, err);
        if (probe.db) sqlite3_close(probe.db);
        TRY(s);
    }
    int rc = sqlite3_open_v2(st->file, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) return sql_fail(st, rc, err, "open");
    /* SQLite opens a file it may not write read-only without a word; the first write would fail much later. */
    if (sqlite3_db_readonly(st->db, "main") == 1)
        return evo_fail(err, EVO_E_DB,
                        "%s: cannot write (the file is read-only); writing needs write access to the file and to "
                        "its directory (for its -wal and -shm files)",
                        st->path);
    connection_settings(st);
    TRY(exec_sql(st, "PRAGMA foreign_keys = ON", err));
    TRY(inspect(st, false, err));
    /* Switching a new file to WAL takes an exclusive lock, and SQLite reports SQLITE_BUSY at once, without the busy
     * handler, while another evo is creating the same file: wait for it here, up to the busy timeout. */
    bool wal = false;
    for (const double give_up = evo_now() + st->busy_ms / 1000.0;;) {
        sqlite3_stmt *q = NULL;
        rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &q, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_step(q);
        wal = rc == SQLITE_ROW && sqlite3_column_text(q, 0) &&
              strcmp((const char *)sqlite3_column_text(q, 0), "wal") == 0;
        sqlite3_finalize(q);
        if ((rc & 0xff) != SQLITE_BUSY || evo_now() >= give_up) break;
        sqlite3_sleep(10);
    }
    SQL(st, err, rc);
    if (!wal)
        return evo_fail(err, EVO_E_DB, "%s: cannot switch to WAL journal mode (is it on a network file system?)",
                        st->path);
    TRY(exec_sql(st, "PRAGMA synchronous = FULL", err));
    return migrate(st, err);
}

static evo_status open_readonly(evo_store *st, evo_err *err)
{
    bool empty = false;
    TRY(check_header(st->file, &empty, err));
    TRY(connect_readonly(st, err));
    /* An older schema is read as it is (the readers know every version's columns); a writing open migrates it. */
    return inspect(st, true, err);
}

/* SQLite opens a database by its full path (working directory prepended, links resolved), and refuses one within 8
 * bytes of its VFS's path limit (512 on Unix) with a bare "unable to open database file": say so up front. */
static evo_status check_path_length(const char *path, evo_err *err)
{
    const sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
    const int max = vfs ? vfs->mxPathname - 8 : 504;
    char full[PATH_MAX * 2], dir[PATH_MAX];
    if (!realpath(path, full)) { /* not there yet: its folder's full path and its name */
        const char *slash = strrchr(path, '/');
        evo_str d = {0};
        if (slash)
            evo_str_appendn(&d, path, slash == path ? 1 : (size_t)(slash - path));
        else
            evo_str_append(&d, ".");
        const bool ok = realpath(evo_str_cstr(&d), dir) != NULL;
        evo_str_free(&d);
        if (!ok) return EVO_OK; /* a missing folder is reported where the file is opened */
        snprintf(full, sizeof full, "%s/%s", strcmp(dir, "/") ? dir : "", slash ? slash + 1 : path);
    }
    const size_t n = strlen(full);
    if ((long)n <= max) return EVO_OK;
    return evo_fail(err, EVO_E_USAGE,
                    "%s: its full path is %zu bytes, longer than SQLite opens (%d bytes at most: its "
                    "limit of %d, less room for the -journal name); use a folder with a shorter path, or a shorter "
                    "--db",
                    evo_show(path).s, n, max, max + 8);
}

evo_status evo_store_open(const char *path, int mode, evo_store **out, evo_err *err)
{
    *out = NULL;
    if (!path || !*path) return evo_fail(err, EVO_E_USAGE, "no database path given");
    if (strcmp(path, "-") == 0)
        return evo_fail(err, EVO_E_USAGE, "-: a database is a file; '-' (standard input or output) cannot be one");
    evo_status ps = check_path_length(path, err);
    if (ps != EVO_OK) return ps;
    if (mode != EVO_STORE_READONLY && mode != EVO_STORE_READWRITE && mode != EVO_STORE_IMMUTABLE)
        return evo_fail(err, EVO_E_INTERNAL, "%s: bad open mode %d", path, mode);
    evo_store *st = evo_xcalloc(1, sizeof *st);
    st->path = evo_strdup(evo_show(path).s);
    st->file = evo_strdup(path);
    st->mode = mode;
    st->busy_ms = busy_ms_from_env();
    const char *fail_at = getenv("EVO_STORE_FAIL_AT");
    st->fail_at = fail_at && mode == EVO_STORE_READWRITE ? atoi(fail_at) : 0;
    evo_status s = mode == EVO_STORE_READWRITE ? open_readwrite(st, err) : open_readonly(st, err);
    if (s != EVO_OK) {
        evo_store_close(st);
        return s;
    }
    *out = st;
    return EVO_OK;
}

evo_status evo_store_reopen(const evo_store *st, evo_store **out, evo_err *err)
{
    *out = NULL;
    if (st->mode != EVO_STORE_READWRITE)
        return evo_fail(err, EVO_E_INTERNAL, "%s: reopen of a read-only store", st->path);
    evo_store *n = evo_xcalloc(1, sizeof *n);
    n->path = evo_strdup(st->path);
    n->file = evo_strdup(st->file);
    n->mode = st->mode;
    n->busy_ms = st->busy_ms;
    n->version = st->version;
    int rc = sqlite3_open_v2(st->file, &n->db, SQLITE_OPEN_READWRITE, NULL);
    evo_status s = rc == SQLITE_OK ? EVO_OK : sql_fail(n, rc, err, "reopen");
    if (s == EVO_OK) {
        connection_settings(n);
        s = exec_sql(n, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL", err);
    }
    if (s != EVO_OK) {
        evo_store_close(n);
        return s;
    }
    *out = n;
    return EVO_OK;
}

void evo_store_close(evo_store *st)
{
    if (!st) return;
    if (st->db) {
        evo_store_rollback(st);
        for (int i = 0; i < S_COUNT; i++) sqlite3_finalize(st->stmt[i]);
        sqlite3_close(st->db);
    }
    free(st->path);
    free(st->file);
    free(st);
}

int evo_store_schema_version(evo_store *st) { return st->version; }
const char *evo_store_path(const evo_store *st) { return st->path; }
const char *evo_store_file(const evo_store *st) { return st->file; }

/* An empty file opened read-only has no tables: every query finds nothing. */
static bool no_tables(const evo_store *st) { return st->version == 0; }

/* ------------------------------------------------------------------------------------------------------------ */
/* Runs                                                                                                          */
/* ------------------------------------------------------------------------------------------------------------ */

/* Binds every column of a run but id and started_at, in the order of S_RUN_UPDATE. */
static void bind_run_body(binder *b, const evo_run_rec *r)
{
    b_text(b, r->finished_at);
    b_text(b, r->state);
    b_text(b, r->task);
    b_text(b, r->arch);
    b_text(b, r->shape_set);
    b_text(b, r->config_path);
    b_text(b, r->config_text);
    b_text(b, r->strategy);
    b_int(b, r->seed);
    b_int(b, r->generations);
    b_int(b, r->population);
    b_text(b, r->gpu);
    b_text(b, r->driver);
    b_text(b, r->nvrtc_version);
    b_text(b, r->evo_version);
    b_real(b, r->wall_s);
    b_real(b, r->compile_s);
    b_real(b, r->check_s);
    b_real(b, r->time_s);
    b_text(b, r->island);
}

static evo_status run_insert(evo_store *st, evo_run_rec *r, int64_t id, evo_err *err)
{
    if (!r->started_at) {
        char now[32];
        evo_utc_iso8601(now);
        r->started_at = evo_strdup(now);
    }
    if (!r->state) r->state = evo_strdup("running");
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_RUN_INSERT, &q, err));
    binder b = {q, 0, SQLITE_OK};
    if (id > 0)
        b_int(&b, id);
    else
        b_null(&b);
    b_text(&b, r->started_at);
    bind_run_body(&b, r);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    r->id = sqlite3_last_insert_rowid(st->db);
    return EVO_OK;
}

evo_status evo_store_begin_run(evo_store *st, evo_run_rec *run, evo_err *err)
{
    TRY(write_begin(st, "begin_run", err));
    return write_end(st, run_insert(st, run, 0, err), err);
}

evo_status evo_store_begin_run_id(evo_store *st, evo_run_rec *run, int64_t id, evo_err *err)
{
    TRY(write_begin(st, "begin_run", err));
    return write_end(st, run_insert(st, run, id, err), err);
}

static evo_status run_update(evo_store *st, const evo_run_rec *r, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_RUN_UPDATE, &q, err));
    binder b = {q, 0, SQLITE_OK};
    bind_run_body(&b, r);
    b_int(&b, r->id);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    if (sqlite3_changes(st->db) == 0)
        return evo_fail(err, EVO_E_NOTFOUND, "%s: no run %lld", st->path, (long long)r->id);
    return EVO_OK;
}

static evo_status update_run_once(evo_store *st, const evo_run_rec *run, evo_err *err)
{
    TRY(write_begin(st, "update_run", err));
    return write_end(st, run_update(st, run, err), err);
}

evo_status evo_store_update_run(evo_store *st, const evo_run_rec *run, evo_err *err)
{
    evo_status s = update_run_once(st, run, err);
    if (s != EVO_E_DB) return s;
    /* A run's last update (its state "failed") often follows a write that failed for want of room. Moving the WAL
     * into the main file and truncating it can free what this small update needs; try once more after that. */
    if (st->in_group) return s;
    exec_quiet(st, "PRAGMA wal_checkpoint(TRUNCATE)");
    return update_run_once(st, run, err);
}

static evo_status run_get(evo_store *st, int64_t id, evo_run_rec *out, evo_err *err)
{
    memset(out, 0, sizeof *out);
    if (no_tables(st)) return evo_fail(err, EVO_E_NOTFOUND, "%s: no run %lld", st->path, (long long)id);
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_RUN_GET, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, id));
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) return evo_fail(err, EVO_E_NOTFOUND, "%s: no run %lld", st->path, (long long)id);
    SQL(st, err, rc);
    reader r = {q, 0};
    out->id = r_int(&r);
    out->started_at = r_text(&r);
    out->finished_at = r_text(&r);
    out->state = r_text(&r);
    out->task = r_text(&r);
    out->arch = r_text(&r);
    out->shape_set = r_text(&r);
    out->config_path = r_text(&r);
    out->config_text = r_text(&r);
    out->strategy = r_text(&r);
    out->seed = r_int(&r);
    out->generations = r_int32(&r);
    out->population = r_int32(&r);
    out->gpu = r_text(&r);
    out->driver = r_text(&r);
    out->nvrtc_version = r_text(&r);
    out->evo_version = r_text(&r);
    out->wall_s = r_real(&r);
    out->compile_s = r_real(&r);
    out->check_s = r_real(&r);
    out->time_s = r_real(&r);
    out->island = r_text(&r);
    return EVO_OK;
}

evo_status evo_store_get_run(evo_store *st, int64_t id, evo_run_rec *out, evo_err *err)
{
    return read_end(st, run_get(st, id, out, err));
}

static evo_status run_last(evo_store *st, const char *task, const char *arch, bool match, int64_t *id, evo_err *err)
{
    *id = 0;
    if (no_tables(st)) return evo_fail(err, EVO_E_NOTFOUND, "%s: no runs yet — run `evo run` first", st->path);
    sqlite3_stmt *q = NULL;
    TRY(prep(st, match ? S_RUN_LAST_MATCH : S_RUN_LAST, &q, err));
    if (match) {
        binder b = {q, 0, SQLITE_OK};
        b_text(&b, task);
        b_text(&b, arch);
        SQL(st, err, b.rc);
    }
    int rc = sqlite3_step(q);
    SQL(st, err, rc);
    if (rc != SQLITE_ROW || sqlite3_column_type(q, 0) == SQLITE_NULL) {
        if (match && (task || arch))
            return evo_fail(err, EVO_E_NOTFOUND, "%s: no run of task %s on arch %s", st->path, task ? task : "(any)",
                            arch ? arch : "(any)");
        return evo_fail(err, EVO_E_NOTFOUND, "%s: no runs yet — run `evo run` first", st->path);
    }
    *id = sqlite3_column_int64(q, 0);
    return EVO_OK;
}

evo_status evo_store_last_run(evo_store *st, int64_t *id, evo_err *err)
{
    return read_end(st, run_last(st, NULL, NULL, false, id, err));
}

evo_status evo_store_last_run_matching(evo_store *st, const char *task, const char *arch, int64_t *id, evo_err *err)
{
    return read_end(st, run_last(st, task, arch, true, id, err));
}

void evo_store_run_free(evo_run_rec *r)
{
    if (!r) return;
    char **strs[] = {&r->started_at, &r->finished_at,   &r->state,       &r->task,     &r->arch,
                     &r->shape_set,  &r->config_path,   &r->config_text, &r->strategy, &r->gpu,
                     &r->driver,     &r->nvrtc_version, &r->evo_version, &r->island};
    for (size_t i = 0; i < EVO_ARRAY_LEN(strs); i++) {
        free(*strs[i]);
        *strs[i] = NULL;
    }
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Candidates                                                                                                    */
/* ------------------------------------------------------------------------------------------------------------ */

static bool is_hex(const char *s, size_t n, bool lower_only)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isdigit(c) || (c >= 'a' && c <= 'f') || (!lower_only && c >= 'A' && c <= 'F'))) return false;
    }
    return n > 0;
}

static void read_candidate(sqlite3_stmt *q, evo_candidate_rec *c)
{
    reader r = {q, 0};
    c->id = r_int(&r);
    c->key = r_text(&r);
    c->task = r_text(&r);
    c->arch = r_text(&r);
    c->genome = r_text(&r);
    c->template_hash = r_text(&r);
    c->options = r_text(&r);
    c->nvrtc_version = r_text(&r);
    c->registers = r_int32(&r);
    c->smem_bytes = r_int32(&r);
    c->spill_bytes = r_int32(&r);
    c->stack_bytes = r_int32(&r);
    c->compile_log = r_text(&r);
}

static evo_status candidate_put(evo_store *st, evo_candidate_rec *c, evo_err *err)
{
    if (!c->key || strlen(c->key) != 64 || !is_hex(c->key, 64, true))
        return evo_fail(err, EVO_E_INTERNAL, "%s: candidate key '%s' is not 64 lowercase hex digits", st->path,
                        c->key ? c->key : "(null)");
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_CAND_UPSERT, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_text(&b, c->key);
    b_text(&b, c->task);
    b_text(&b, c->arch);
    b_text(&b, c->genome);
    b_text(&b, c->template_hash);
    b_text(&b, c->options);
    b_text(&b, c->nvrtc_version);
    b_int(&b, c->registers);
    b_int(&b, c->smem_bytes);
    b_int(&b, c->spill_bytes);
    b_int(&b, c->stack_bytes);
    b_text(&b, c->compile_log);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    /* last_insert_rowid is not updated by the DO UPDATE branch: look the id up by key. */
    TRY(prep(st, S_CAND_BY_KEY, &q, err));
    SQL(st, err, sqlite3_bind_text(q, 1, c->key, -1, SQLITE_TRANSIENT));
    int rc = sqlite3_step(q);
    SQL(st, err, rc);
    if (rc != SQLITE_ROW)
        return evo_fail(err, EVO_E_INTERNAL, "%s: candidate %s vanished after upsert", st->path, c->key);
    c->id = sqlite3_column_int64(q, 0);
    return EVO_OK;
}

evo_status evo_store_put_candidate(evo_store *st, evo_candidate_rec *c, evo_err *err)
{
    TRY(write_begin(st, "put_candidate", err));
    return write_end(st, candidate_put(st, c, err), err);
}

/* Reads the candidate statement id with text or integer parameter; *found false when no row. */
static evo_status candidate_fetch(evo_store *st, enum stmt_id id, const char *key, int64_t rowid,
                                  evo_candidate_rec *out, bool *found, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    TRY(prep(st, id, &q, err));
    if (key)
        SQL(st, err, sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT));
    else
        SQL(st, err, sqlite3_bind_int64(q, 1, rowid));
    int rc = sqlite3_step(q);
    SQL(st, err, rc);
    *found = rc == SQLITE_ROW;
    if (*found) read_candidate(q, out);
    return EVO_OK;
}

/* The candidate whose key starts with the hex text p (n digits, 4..64); *found false when none. */
static evo_status candidate_by_key(evo_store *st, const char *p, size_t n, evo_candidate_rec *out, bool *found,
                                   evo_err *err)
{
    char lower[66];
    for (size_t i = 0; i < n; i++) lower[i] = (char)tolower((unsigned char)p[i]);
    lower[n] = '\0';
    if (n == 64) return candidate_fetch(st, S_CAND_BY_KEY, lower, 0, out, found, err);
    lower[n] = '*';
    lower[n + 1] = '\0';
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_CAND_PREFIX, &q, err));
    SQL(st, err, sqlite3_bind_text(q, 1, lower, -1, SQLITE_TRANSIENT));
    int64_t ids[2];
    int hits = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) ids[hits++] = sqlite3_column_int64(q, 0);
    SQL(st, err, rc);
    if (hits > 1)
        return evo_fail(err, EVO_E_USAGE, "%s: key prefix '%.*s' matches several candidates; give more digits",
                        st->path, (int)n, p);
    if (hits == 1) return candidate_fetch(st, S_CAND_BY_ID, NULL, ids[0], out, found, err);
    return EVO_OK;
}

static evo_status candidate_find(evo_store *st, const char *spec, evo_cand_ref how, evo_candidate_rec *out,
                                 const char **taken, evo_err *err)
{
    memset(out, 0, sizeof *out);
    const evo_shown shown = evo_show(spec);
    const size_t n = strlen(spec);
    const bool decimal = n > 0 && n < 19 && strspn(spec, "0123456789") == n;
    const bool hex = n >= 4 && n <= 64 && is_hex(spec, n, false);
    if (how == EVO_CAND_ROW && !decimal)
        return evo_fail(err, EVO_E_USAGE, "'%s' is not a candidate's row id (a decimal number)", shown.s);
    if (how == EVO_CAND_KEY && !hex)
        return evo_fail(err, EVO_E_USAGE, "'%s' is not a key or key prefix (4 to 64 hex digits)", shown.s);
    if (no_tables(st)) return evo_fail(err, EVO_E_NOTFOUND, "%s: no candidate '%s'", st->path, shown.s);
    evo_candidate_rec by_row = {0}, by_key = {0};
    bool row = false, key = false;
    if (decimal && how != EVO_CAND_KEY)
        TRY(candidate_fetch(st, S_CAND_BY_ID, NULL, strtoll(spec, NULL, 10), &by_row, &row, err));
    evo_status s = hex && how != EVO_CAND_ROW ? candidate_by_key(st, spec, n, &by_key, &key, err) : EVO_OK;
    if (s != EVO_OK && !(row && s == EVO_E_USAGE)) { /* an ambiguous prefix that is also a row id: the row */
        evo_store_candidate_free(&by_row);
        return s;
    }
    if (row && key && by_row.id != by_key.id) {
        s = evo_fail(err, EVO_E_USAGE,
                     "'%s' names two candidates: candidate %s by its row id (key %.8s) and candidate "
                     "%lld by its key prefix (key %.8s); give --row %s or --key %s",
                     shown.s, shown.s, by_row.key, (long long)by_key.id, by_key.key, shown.s, shown.s);
        evo_store_candidate_free(&by_row);
        evo_store_candidate_free(&by_key);
        return s;
    }
    if (row) {
        *out = by_row;
        evo_store_candidate_free(&by_key);
        if (taken) *taken = key ? "row id and key prefix" : "row id";
        return EVO_OK;
    }
    if (key) {
        *out = by_key;
        if (taken) *taken = n == 64 ? "full key" : "key prefix";
        return EVO_OK;
    }
    return evo_fail(err, EVO_E_NOTFOUND, "%s: no candidate '%s'", st->path, shown.s);
}

static evo_status candidate_get(evo_store *st, const char *key_or_id, evo_candidate_rec *out, evo_err *err)
{
    return candidate_find(st, key_or_id, EVO_CAND_ID_OR_KEY, out, NULL, err);
}

evo_status evo_store_get_candidate(evo_store *st, const char *key_or_id, evo_candidate_rec *out, evo_err *err)
{
    return read_end(st, candidate_get(st, key_or_id, out, err));
}

evo_status evo_store_find_candidate(evo_store *st, const char *spec, evo_cand_ref how, evo_candidate_rec *out,
                                    const char **taken, evo_err *err)
{
    return read_end(st, candidate_find(st, spec, how, out, taken, err));
}

void evo_store_candidate_free(evo_candidate_rec *c)
{
    if (!c) return;
    char **strs[] = {&c->key,           &c->task,    &c->arch,          &c->genome,
                     &c->template_hash, &c->options, &c->nvrtc_version, &c->compile_log};
    for (size_t i = 0; i < EVO_ARRAY_LEN(strs); i++) {
        free(*strs[i]);
        *strs[i] = NULL;
    }
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Evaluations and per-shape results                                                                             */
/* ------------------------------------------------------------------------------------------------------------ */

void evo_eval_rec_set_result(evo_eval_rec *e, const evo_result *r)
{
    e->verdict = r->verdict;
    e->fitness = r->fitness;
    e->fitness_lo = r->fitness_lo;
    e->fitness_hi = r->fitness_hi;
    e->detail = r->detail;
    e->gpu = (char *)r->gpu;
    e->check_s = r->check_s;
    e->time_s = r->time_s;
    e->shapes = (evo_shape_result *)r->shapes;
    e->n_shapes = r->n_shapes;
}

static evo_status evaluation_put(evo_store *st, evo_eval_rec *e, evo_err *err)
{
    if ((unsigned)e->verdict >= EVO_V_COUNT)
        return evo_fail(err, EVO_E_INTERNAL, "%s: evaluation with verdict %d", st->path, (int)e->verdict);
    if (e->n_shapes < 0 || (e->n_shapes > 0 && !e->shapes))
        return evo_fail(err, EVO_E_INTERNAL, "%s: evaluation with %d shapes and no array", st->path, e->n_shapes);
    if (!e->created_at) {
        char now[32];
        evo_utc_iso8601(now);
        e->created_at = evo_strdup(now);
    }
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_EVAL_INSERT, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_int(&b, e->candidate_id);
    if (e->run_id > 0)
        b_int(&b, e->run_id);
    else
        b_null(&b);
    if (e->generation >= 0)
        b_int(&b, e->generation);
    else
        b_null(&b);
    b_text(&b, e->shape_set);
    b_text(&b, evo_verdict_name(e->verdict));
    b_real(&b, e->fitness);
    b_text(&b, e->detail);
    b_text(&b, e->gpu);
    b_real(&b, e->compile_s);
    b_real(&b, e->check_s);
    b_real(&b, e->time_s);
    b_text(&b, e->created_at);
    b_real(&b, e->fitness_lo);
    b_real(&b, e->fitness_hi);
    b_text(&b, e->accuracy ? e->accuracy : EVO_ACCURACY_EXACT);
    b_int(&b, e->gate > 0 ? e->gate : 1);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    EVO_ASSERT(sqlite3_changes(st->db) == 1); /* one evaluation row */
    int64_t id = sqlite3_last_insert_rowid(st->db);

    TRY(prep(st, S_RESULT_INSERT, &q, err));
    for (int i = 0; i < e->n_shapes; i++) {
        const evo_shape_result *r = &e->shapes[i];
        sqlite3_reset(q);
        binder rb = {q, 0, SQLITE_OK};
        b_int(&rb, id);
        b_int(&rb, i);
        b_text(&rb, r->shape);
        b_text(&rb, r->fields[0] ? r->fields : "{}");
        b_real(&rb, r->median_us);
        b_real(&rb, r->p10_us);
        b_real(&rb, r->p90_us);
        b_real(&rb, r->baseline_us);
        b_real(&rb, r->speedup);
        b_real(&rb, r->rate);
        b_real(&rb, r->max_abs);
        b_real(&rb, r->rel_l2);
        b_real(&rb, r->e2e_rel_l2);
        b_real(&rb, r->e2e_rmse);
        b_real(&rb, r->ci_lo_us > 0 ? r->ci_lo_us : NAN);
        b_real(&rb, r->ci_hi_us > 0 ? r->ci_hi_us : NAN);
        b_real(&rb, r->baseline_ci_lo_us > 0 ? r->baseline_ci_lo_us : NAN);
        b_real(&rb, r->baseline_ci_hi_us > 0 ? r->baseline_ci_hi_us : NAN);
        SQL(st, err, rb.rc);
        SQL(st, err, sqlite3_step(q));
        EVO_ASSERT(sqlite3_changes(st->db) == 1); /* one result row per shape */
    }
    e->id = id;
    return EVO_OK;
}

evo_status evo_store_put_evaluation(evo_store *st, evo_eval_rec *e, evo_err *err)
{
    TRY(write_begin(st, "put_evaluation", err));
    int64_t before = e->id;
    evo_status s = write_end(st, evaluation_put(st, e, err), err);
    if (s != EVO_OK) e->id = before;
    return s;
}

/* Reads the evaluation at the current row of q (EVAL_COLS), then its per-shape results. */
static evo_status read_evaluation(evo_store *st, sqlite3_stmt *q, evo_eval_rec *e, evo_err *err)
{
    memset(e, 0, sizeof *e);
    reader r = {q, 0};
    e->id = r_int(&r);
    e->candidate_id = r_int(&r);
    e->run_id = r_isnull(&r) ? (r.i++, 0) : r_int(&r);
    e->generation = r_isnull(&r) ? (r.i++, -1) : r_int32(&r);
    e->shape_set = r_text(&r);
    char *verdict = r_text(&r);
    int bad = !verdict || evo_verdict_parse(verdict, &e->verdict) != 0;
    free(verdict);
    e->fitness = r_real(&r);
    e->detail = r_text(&r);
    e->gpu = r_text(&r);
    e->compile_s = r_real(&r);
    e->check_s = r_real(&r);
    e->time_s = r_real(&r);
    e->created_at = r_text(&r);
    e->fitness_lo = r_real(&r);
    e->fitness_hi = r_real(&r);
    e->accuracy = r_text(&r);
    if (!e->accuracy) e->accuracy = evo_strdup(EVO_ACCURACY_EXACT);
    e->gate = r_isnull(&r) ? (r.i++, 1) : r_int32(&r);
    if (bad) return evo_fail(err, EVO_E_DB, "%s: evaluation %lld has an unknown verdict", st->path, (long long)e->id);

    sqlite3_stmt *rq = NULL;
    TRY(prep(st, S_RESULTS_OF, &rq, err));
    SQL(st, err, sqlite3_bind_int64(rq, 1, e->id));
    int rc, cap = 0;
    while ((rc = sqlite3_step(rq)) == SQLITE_ROW) {
        if (e->n_shapes == cap) {
            cap = cap ? 2 * cap : 8;
            e->shapes = evo_xrealloc(e->shapes, (size_t)cap * sizeof *e->shapes);
        }
        evo_shape_result *s = &e->shapes[e->n_shapes++];
        memset(s, 0, sizeof *s);
        reader c = {rq, 0};
        const unsigned char *name = sqlite3_column_text(rq, c.i++);
        snprintf(s->shape, sizeof s->shape, "%s", name ? (const char *)name : "");
        const unsigned char *fields = sqlite3_column_text(rq, c.i++);
        snprintf(s->fields, sizeof s->fields, "%s", fields ? (const char *)fields : "{}");
        s->median_us = r_real(&c);
        s->p10_us = r_real(&c);
        s->p90_us = r_real(&c);
        s->baseline_us = r_real(&c);
        s->speedup = r_real(&c);
        s->rate = r_real(&c);
        s->max_abs = r_real(&c);
        s->rel_l2 = r_real(&c);
        s->e2e_rel_l2 = r_real(&c);
        s->e2e_rmse = r_real(&c);
        /* unknown intervals read as 0, as a worker that measured none sends them */
        double ci[4];
        for (int k = 0; k < 4; k++) ci[k] = r_real(&c);
        s->ci_lo_us = isnan(ci[0]) ? 0 : ci[0];
        s->ci_hi_us = isnan(ci[1]) ? 0 : ci[1];
        s->baseline_ci_lo_us = isnan(ci[2]) ? 0 : ci[2];
        s->baseline_ci_hi_us = isnan(ci[3]) ? 0 : ci[3];
    }
    SQL(st, err, rc);
    return EVO_OK;
}

static evo_status evaluation_by_id(evo_store *st, int64_t id, evo_eval_rec *out, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_EVAL_BY_ID, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, id));
    int rc = sqlite3_step(q);
    SQL(st, err, rc);
    if (rc != SQLITE_ROW) return evo_fail(err, EVO_E_NOTFOUND, "%s: no evaluation %lld", st->path, (long long)id);
    return read_evaluation(st, q, out, err);
}

static evo_status evaluation_find(evo_store *st, int64_t candidate_id, const char *shape_set, const char *accuracy,
                                  int gate, evo_eval_rec *out, bool *found, evo_err *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_EVAL_FIND, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_int(&b, candidate_id);
    b_text(&b, shape_set);
    b_text(&b, accuracy);
    b_int(&b, gate > 0 ? gate : 1);
    SQL(st, err, b.rc);
    int rc = sqlite3_step(q);
    SQL(st, err, rc);
    if (rc != SQLITE_ROW) return EVO_OK;
    *found = true;
    return read_evaluation(st, q, out, err);
}

evo_status evo_store_find_evaluation(evo_store *st, int64_t candidate_id, const char *shape_set, const char *accuracy,
                                     int gate, evo_eval_rec *out, bool *found, evo_err *err)
{
    return read_end(st, evaluation_find(st, candidate_id, shape_set, accuracy, gate, out, found, err));
}

void evo_store_eval_free(evo_eval_rec *e)
{
    if (!e) return;
    free(e->shape_set);
    free(e->detail);
    free(e->gpu);
    free(e->created_at);
    free(e->shapes);
    free(e->accuracy);
    e->shape_set = e->detail = e->gpu = e->created_at = e->accuracy = NULL;
    e->shapes = NULL;
    e->n_shapes = 0;
}

static evo_status run_evaluations(evo_store *st, int64_t run_id, int gen,
                                  void (*fn)(const evo_candidate_rec *, const evo_eval_rec *, void *), void *ctx,
                                  evo_err *err)
{
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_EVAL_OF_RUN, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, run_id));
    SQL(st, err, sqlite3_bind_int(q, 2, gen));
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        evo_eval_rec e;
        evo_candidate_rec c = {0};
        bool found = false;
        evo_status s = read_evaluation(st, q, &e, err);
        if (s == EVO_OK) s = candidate_fetch(st, S_CAND_BY_ID, NULL, e.candidate_id, &c, &found, err);
        if (s == EVO_OK && !found)
            s = evo_fail(err, EVO_E_DB, "%s: evaluation %lld names missing candidate %lld", st->path, (long long)e.id,
                         (long long)e.candidate_id);
        if (s == EVO_OK) fn(&c, &e, ctx);
        evo_store_eval_free(&e);
        evo_store_candidate_free(&c);
        TRY(s);
    }
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_foreach_run_evaluation(evo_store *st, int64_t run_id, int gen,
                                            void (*fn)(const evo_candidate_rec *c, const evo_eval_rec *e, void *ctx),
                                            void *ctx, evo_err *err)
{
    return read_end(st, run_evaluations(st, run_id, gen, fn, ctx, err));
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Lineage and generations                                                                                       */
/* ------------------------------------------------------------------------------------------------------------ */

static evo_status lineage_put(evo_store *st, int64_t run_id, int generation, int64_t child, int64_t parent,
                              const char *op, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_LINEAGE_INSERT, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_int(&b, run_id);
    b_int(&b, generation);
    b_int(&b, child);
    b_int(&b, parent);
    b_text(&b, op);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    return EVO_OK;
}

evo_status evo_store_put_lineage(evo_store *st, int64_t run_id, int generation, int64_t child, int64_t parent,
                                 const char *op, evo_err *err)
{
    TRY(write_begin(st, "put_lineage", err));
    return write_end(st, lineage_put(st, run_id, generation, child, parent, op, err), err);
}

static evo_status lineage_of(evo_store *st, int64_t child, void (*fn)(int64_t, int, int64_t, const char *, void *),
                             void *ctx, evo_err *err)
{
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_LINEAGE_OF, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, child));
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        fn(sqlite3_column_int64(q, 0), sqlite3_column_int(q, 1), sqlite3_column_int64(q, 2),
           (const char *)sqlite3_column_text(q, 3), ctx);
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_lineage(evo_store *st, int64_t child,
                             void (*fn)(int64_t run_id, int generation, int64_t parent, const char *op, void *ctx),
                             void *ctx, evo_err *err)
{
    return read_end(st, lineage_of(st, child, fn, ctx, err));
}

static evo_status generation_put(evo_store *st, const evo_gen_rec *g, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_GEN_UPSERT, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_int(&b, g->run_id);
    b_int(&b, g->generation);
    b_real(&b, g->best_fitness);
    b_real(&b, g->median_fitness);
    b_int(&b, g->evaluated);
    b_int(&b, g->reused);
    for (int v = 0; v < EVO_V_COUNT; v++) b_int(&b, g->counts[v]);
    b_real(&b, g->wall_s);
    b_real(&b, g->compile_s);
    b_real(&b, g->check_s);
    b_real(&b, g->time_s);
    b_real(&b, g->baseline_noise);
    b_text(&b, g->best_genome);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    return EVO_OK;
}

evo_status evo_store_put_generation(evo_store *st, const evo_gen_rec *g, evo_err *err)
{
    TRY(write_begin(st, "put_generation", err));
    return write_end(st, generation_put(st, g, err), err);
}

static evo_status generations_of(evo_store *st, int64_t run_id, evo_gen_rec **out, int *n, evo_err *err)
{
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_GENS_OF, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, run_id));
    int rc, cap = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            *out = evo_xrealloc(*out, (size_t)cap * sizeof **out);
        }
        evo_gen_rec *g = &(*out)[(*n)++];
        memset(g, 0, sizeof *g);
        reader r = {q, 0};
        g->run_id = r_int(&r);
        g->generation = r_int32(&r);
        g->best_fitness = r_real(&r);
        g->median_fitness = r_real(&r);
        g->evaluated = r_int32(&r);
        g->reused = r_int32(&r);
        for (int v = 0; v < EVO_V_COUNT; v++) g->counts[v] = r_int32(&r);
        g->wall_s = r_real(&r);
        g->compile_s = r_real(&r);
        g->check_s = r_real(&r);
        g->time_s = r_real(&r);
        g->baseline_noise = r_real(&r);
        g->best_genome = r_text(&r);
    }
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_generations(evo_store *st, int64_t run_id, evo_gen_rec **out, int *n, evo_err *err)
{
    *out = NULL;
    *n = 0;
    evo_status s = read_end(st, generations_of(st, run_id, out, n, err));
    if (s != EVO_OK) {
        for (int i = 0; i < *n; i++) evo_store_gen_free(&(*out)[i]);
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return s;
}

void evo_store_gen_free(evo_gen_rec *g)
{
    if (!g) return;
    free(g->best_genome);
    g->best_genome = NULL;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Elites                                                                                                        */
/* ------------------------------------------------------------------------------------------------------------ */

static evo_status elites(evo_store *st, const char *task, const char *arch, const char *shape_set, const char *accuracy,
                         const char *model, int k, evo_elite_rec **out, int *n, evo_err *err)
{
    if (no_tables(st) || k <= 0) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, model ? S_ELITES_MODEL : task && arch && shape_set ? S_ELITES_EXACT : S_ELITES_ANY, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_text(&b, task);
    b_text(&b, arch);
    b_text(&b, shape_set);
    b_int(&b, k);
    b_text(&b, accuracy);
    if (model) b_text(&b, model);
    SQL(st, err, b.rc);
    int64_t *ids = NULL;
    int count = 0, cap = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? 2 * cap : 8;
            ids = evo_xrealloc(ids, (size_t)cap * sizeof *ids);
        }
        ids[count++] = sqlite3_column_int64(q, 0);
    }
    sqlite3_reset(q);
    if (sql_error(rc)) {
        free(ids);
        return sql_fail(st, rc, err, __func__);
    }
    *out = count ? evo_xcalloc((size_t)count, sizeof **out) : NULL;
    evo_status s = EVO_OK;
    for (int i = 0; i < count && s == EVO_OK; i++) {
        evo_elite_rec *e = &(*out)[i];
        bool found = false;
        *n = i + 1;
        s = evaluation_by_id(st, ids[i], &e->eval, err);
        if (s == EVO_OK) s = candidate_fetch(st, S_CAND_BY_ID, NULL, e->eval.candidate_id, &e->cand, &found, err);
        if (s == EVO_OK && !found)
            s = evo_fail(err, EVO_E_DB, "%s: evaluation %lld names missing candidate %lld", st->path, (long long)ids[i],
                         (long long)e->eval.candidate_id);
    }
    free(ids);
    return s;
}

evo_status evo_store_elites(evo_store *st, const char *task, const char *arch, const char *shape_set,
                            const char *accuracy, int k, evo_elite_rec **out, int *n, evo_err *err)
{
    return evo_store_elites_on(st, task, arch, shape_set, accuracy, NULL, k, out, n, err);
}

evo_status evo_store_elites_on(evo_store *st, const char *task, const char *arch, const char *shape_set,
                               const char *accuracy, const char *model, int k, evo_elite_rec **out, int *n,
                               evo_err *err)
{
    *out = NULL;
    *n = 0;
    evo_status s = read_end(st, elites(st, task, arch, shape_set, accuracy, model, k, out, n, err));
    if (s != EVO_OK) {
        evo_store_elites_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return s;
}

static evo_status gpu_models(evo_store *st, const char *task, const char *arch, const char *shape_set, char ***models,
                             int *n, evo_err *err)
{
    if (no_tables(st) || st->version < 2) return EVO_OK; /* a version-1 file reads as one model */
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_GPU_MODELS, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_text(&b, task);
    b_text(&b, arch);
    b_text(&b, shape_set);
    SQL(st, err, b.rc);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        *models = evo_xrealloc(*models, (size_t)(*n + 1) * sizeof **models);
        (*models)[(*n)++] = evo_strdup((const char *)sqlite3_column_text(q, 0));
    }
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_gpu_models(evo_store *st, const char *task, const char *arch, const char *shape_set,
                                char ***models, int *n, evo_err *err)
{
    *models = NULL;
    *n = 0;
    return read_end(st, gpu_models(st, task, arch, shape_set, models, n, err));
}

void evo_store_elites_free(evo_elite_rec *e, int n)
{
    if (!e) return;
    for (int i = 0; i < n; i++) {
        evo_store_candidate_free(&e[i].cand);
        evo_store_eval_free(&e[i].eval);
    }
    free(e);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Profiles and per-genome statistics                                                                            */
/* ------------------------------------------------------------------------------------------------------------ */

static evo_status profile_put(evo_store *st, int64_t candidate_id, const char *shape, const char *metric, double value,
                              const char *unit, evo_err *err)
{
    char now[32];
    evo_utc_iso8601(now);
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_PROFILE_UPSERT, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_int(&b, candidate_id);
    b_text(&b, shape);
    b_text(&b, metric);
    b_real(&b, value);
    b_text(&b, unit);
    b_text(&b, now);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    return EVO_OK;
}

evo_status evo_store_put_profile(evo_store *st, int64_t candidate_id, const char *shape, const char *metric,
                                 double value, const char *unit, evo_err *err)
{
    TRY(write_begin(st, "put_profile", err));
    return write_end(st, profile_put(st, candidate_id, shape, metric, value, unit, err), err);
}

static evo_status profiles_of(evo_store *st, int64_t candidate_id,
                              void (*fn)(const char *, const char *, double, const char *, void *), void *ctx,
                              evo_err *err)
{
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_PROFILES_OF, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, candidate_id));
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        reader r = {q, 2};
        double value = r_real(&r);
        fn((const char *)sqlite3_column_text(q, 0), (const char *)sqlite3_column_text(q, 1), value,
           (const char *)sqlite3_column_text(q, 3), ctx);
    }
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_profiles(evo_store *st, int64_t candidate_id,
                              void (*fn)(const char *shape, const char *metric, double value, const char *unit,
                                         void *ctx),
                              void *ctx, evo_err *err)
{
    return read_end(st, profiles_of(st, candidate_id, fn, ctx, err));
}

static evo_status genome_verdicts(evo_store *st, const char *task, const char *arch, const char *shape_set,
                                  int64_t before_run, void (*fn)(const char *, evo_verdict, double, void *), void *ctx,
                                  evo_err *err)
{
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_GENOME_VERDICTS, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_text(&b, task);
    b_text(&b, arch);
    b_text(&b, shape_set);
    b_int(&b, before_run);
    SQL(st, err, b.rc);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        evo_verdict v;
        const char *name = (const char *)sqlite3_column_text(q, 1);
        if (!name || evo_verdict_parse(name, &v) != 0)
            return evo_fail(err, EVO_E_DB, "%s: unknown verdict '%s'", st->path, name ? name : "(null)");
        reader r = {q, 2};
        double fitness = r_real(&r);
        fn((const char *)sqlite3_column_text(q, 0), v, fitness, ctx);
    }
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_foreach_evaluation(evo_store *st, const char *task, const char *arch, const char *shape_set,
                                        int64_t before_run,
                                        void (*fn)(const char *genome, evo_verdict v, double fitness, void *ctx),
                                        void *ctx, evo_err *err)
{
    return read_end(st, genome_verdicts(st, task, arch, shape_set, before_run, fn, ctx, err));
}

/* The evaluation evaluation_by_genome picks among those of every text in genomes: measured before NOT_RECORDED,
 * then the latest. */
static evo_status evaluation_by_genomes(evo_store *st, const char *task, const char *const *genomes, int n,
                                        const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                        evo_err *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    if (no_tables(st)) return EVO_OK;
    int64_t best = 0;
    int best_nr = 2;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *q = NULL;
        TRY(prep(st, S_EVAL_BY_GENOME, &q, err));
        binder b = {q, 0, SQLITE_OK};
        b_text(&b, task);
        b_text(&b, genomes[i]);
        b_text(&b, shape_set);
        b_text(&b, arch);
        SQL(st, err, b.rc);
        int rc = sqlite3_step(q);
        SQL(st, err, rc);
        if (rc != SQLITE_ROW) continue;
        const int64_t id = sqlite3_column_int64(q, 0);
        const int nr = sqlite3_column_int(q, 1);
        sqlite3_reset(q);
        if (nr < best_nr || (nr == best_nr && id > best)) best = id, best_nr = nr;
    }
    if (best_nr == 2) return EVO_OK;
    *found = true;
    return evaluation_by_id(st, best, out, err);
}

evo_status evo_store_find_evaluation_by_genome(evo_store *st, const char *task, const char *genome,
                                               const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                               evo_err *err)
{
    return read_end(st, evaluation_by_genomes(st, task, &genome, 1, shape_set, arch, out, found, err));
}

evo_status evo_store_find_evaluation_by_genomes(evo_store *st, const char *task, const char *const *genomes, int n,
                                                const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                                evo_err *err)
{
    return read_end(st, evaluation_by_genomes(st, task, genomes, n, shape_set, arch, out, found, err));
}

static evo_status genomes_of(evo_store *st, const char *task, void (*fn)(const char *genome, void *ctx), void *ctx,
                             evo_err *err)
{
    if (no_tables(st)) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_GENOMES, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_text(&b, task);
    SQL(st, err, b.rc);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) fn((const char *)sqlite3_column_text(q, 0), ctx);
    SQL(st, err, rc);
    return EVO_OK;
}

evo_status evo_store_foreach_genome(evo_store *st, const char *task, void (*fn)(const char *genome, void *ctx),
                                    void *ctx, evo_err *err)
{
    return read_end(st, genomes_of(st, task, fn, ctx, err));
}

evo_status evo_store_demote(evo_store *st, int64_t candidate_id, const char *reason, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_CAND_DEMOTE, &q, err));
    binder b = {q, 0, SQLITE_OK};
    b_text(&b, reason);
    b_int(&b, candidate_id);
    SQL(st, err, b.rc);
    SQL(st, err, sqlite3_step(q));
    if (sqlite3_changes(st->db) != 1)
        return evo_fail(err, EVO_E_NOTFOUND, "%s: no candidate %lld", st->path, (long long)candidate_id);
    return EVO_OK;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Re-timings (schema 3)                                                                                         */
/* ------------------------------------------------------------------------------------------------------------ */

evo_status evo_store_put_retime(evo_store *st, evo_retime_rec *r, evo_err *err)
{
    TRY(write_begin(st, "put_retime", err));
    if (!r->created_at) {
        char now[32];
        evo_utc_iso8601(now);
        r->created_at = evo_strdup(now);
    }
    sqlite3_stmt *q = NULL;
    evo_status s = prep(st, S_RETIME_INSERT, &q, err);
    if (s == EVO_OK) {
        binder b = {q, 0, SQLITE_OK};
        b_int(&b, r->candidate_id);
        if (r->run_id > 0)
            b_int(&b, r->run_id);
        else
            b_null(&b);
        if (r->generation >= 0)
            b_int(&b, r->generation);
        else
            b_null(&b);
        b_text(&b, r->shape_set);
        b_real(&b, r->fitness);
        b_real(&b, r->fitness_lo);
        b_real(&b, r->fitness_hi);
        b_text(&b, r->why ? r->why : "");
        b_text(&b, r->gpu);
        b_text(&b, r->created_at);
        int rc = b.rc == SQLITE_OK ? sqlite3_step(q) : b.rc;
        if (sql_error(rc))
            s = sql_fail(st, rc, err, __func__);
        else
            r->id = sqlite3_last_insert_rowid(st->db);
    }
    return write_end(st, s, err);
}

static void read_retime(sqlite3_stmt *q, evo_retime_rec *r)
{
    memset(r, 0, sizeof *r);
    reader c = {q, 0};
    r->id = r_int(&c);
    r->candidate_id = r_int(&c);
    r->run_id = r_isnull(&c) ? (c.i++, 0) : r_int(&c);
    r->generation = r_isnull(&c) ? (c.i++, -1) : r_int32(&c);
    r->shape_set = r_text(&c);
    r->fitness = r_real(&c);
    r->fitness_lo = r_real(&c);
    r->fitness_hi = r_real(&c);
    r->why = r_text(&c);
    r->gpu = r_text(&c);
    r->created_at = r_text(&c);
}

evo_status evo_store_last_retime(evo_store *st, int64_t candidate_id, const char *shape_set, evo_retime_rec *out,
                                 bool *found, evo_err *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    if (st->version < 3) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_RETIME_LAST, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, candidate_id));
    SQL(st, err, sqlite3_bind_text(q, 2, shape_set, -1, SQLITE_TRANSIENT));
    int rc = sqlite3_step(q);
    if (sql_error(rc)) return read_end(st, sql_fail(st, rc, err, __func__));
    if (rc == SQLITE_ROW) {
        read_retime(q, out);
        *found = true;
    }
    return read_end(st, EVO_OK);
}

evo_status evo_store_foreach_retime(evo_store *st, int64_t run_id, int gen,
                                    void (*fn)(const evo_retime_rec *r, void *ctx), void *ctx, evo_err *err)
{
    if (st->version < 3) return EVO_OK;
    sqlite3_stmt *q = NULL;
    TRY(prep(st, S_RETIMES_OF_RUN, &q, err));
    SQL(st, err, sqlite3_bind_int64(q, 1, run_id));
    SQL(st, err, sqlite3_bind_int(q, 2, gen));
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        evo_retime_rec r;
        read_retime(q, &r);
        fn(&r, ctx);
        evo_store_retime_free(&r);
    }
    if (sql_error(rc)) return read_end(st, sql_fail(st, rc, err, __func__));
    return read_end(st, EVO_OK);
}

void evo_store_retime_free(evo_retime_rec *r)
{
    free(r->shape_set);
    free(r->why);
    free(r->gpu);
    free(r->created_at);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Run leases (schema 6)                                                                                         */
/* ------------------------------------------------------------------------------------------------------------ */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void iso_of(double t, char out[32])
{
    const time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The lease row of run_id (a statement of its own: leases are rare, the cache is for the hot paths). */
static evo_status lease_read(evo_store *st, int64_t run_id, evo_lease_rec *out, evo_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q = NULL;
    SQL(st, err,
        sqlite3_prepare_v2(st->db,
                           "SELECT host, boot_id, pid, pid_start, token, taken_at, renewed_at, expires_at "
                           "FROM leases WHERE run_id = ?",
                           -1, &q, NULL));
    int rc = sqlite3_bind_int64(q, 1, run_id);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        evo_lease_holder *h = &out->holder;
        snprintf(h->host, sizeof h->host, "%s", (const char *)sqlite3_column_text(q, 0));
        snprintf(h->boot_id, sizeof h->boot_id, "%s", (const char *)sqlite3_column_text(q, 1));
        h->pid = sqlite3_column_int64(q, 2);
        h->pid_start = sqlite3_column_int64(q, 3);
        snprintf(h->token, sizeof h->token, "%s", (const char *)sqlite3_column_text(q, 4));
        snprintf(out->taken_at, sizeof out->taken_at, "%s", (const char *)sqlite3_column_text(q, 5));
        snprintf(out->renewed_at, sizeof out->renewed_at, "%s", (const char *)sqlite3_column_text(q, 6));
        out->expires_at = sqlite3_column_double(q, 7);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    SQL(st, err, rc);
    return EVO_OK;
}

static evo_status lease_exec(evo_store *st, const char *sql, int64_t run_id, const evo_lease_holder *me, double now,
                             double lease_s, int *changes, evo_err *err)
{
    sqlite3_stmt *q = NULL;
    SQL(st, err, sqlite3_prepare_v2(st->db, sql, -1, &q, NULL));
    char now_iso[32];
    iso_of(now, now_iso);
    /* named parameters: each statement uses the ones it needs */
    static const char *const names[] = {":run", ":host", ":boot", ":pid", ":start", ":token", ":now", ":exp"};
    int rc = SQLITE_OK;
    for (size_t i = 0; i < EVO_ARRAY_LEN(names) && rc == SQLITE_OK; i++) {
        const int k = sqlite3_bind_parameter_index(q, names[i]);
        if (!k) continue;
        switch (i) {
            case 0: rc = sqlite3_bind_int64(q, k, run_id); break;
            case 1: rc = sqlite3_bind_text(q, k, me->host, -1, SQLITE_TRANSIENT); break;
            case 2: rc = sqlite3_bind_text(q, k, me->boot_id, -1, SQLITE_TRANSIENT); break;
            case 3: rc = sqlite3_bind_int64(q, k, me->pid); break;
            case 4: rc = sqlite3_bind_int64(q, k, me->pid_start); break;
            case 5: rc = sqlite3_bind_text(q, k, me->token, -1, SQLITE_TRANSIENT); break;
            case 6: rc = sqlite3_bind_text(q, k, now_iso, -1, SQLITE_TRANSIENT); break;
            default: rc = sqlite3_bind_double(q, k, now + lease_s); break;
        }
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    SQL(st, err, rc);
    if (changes) *changes = sqlite3_changes(st->db);
    return EVO_OK;
}

/* Whether a process of this boot of this host is the holder: its pid runs and started when the holder did. */
static bool holder_alive_here(const evo_lease_holder *h, const evo_lease_holder *me)
{
    if (strcmp(h->host, me->host) != 0 || strcmp(h->boot_id, me->boot_id) != 0) return true; /* cannot tell */
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)h->pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    long long start = -1;
    /* after the command: state, then 18 fields, then starttime (field 22 of proc(5)) */
    if (p &&
        sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld", &start) == 1)
        return start == h->pid_start && !strchr("ZX", p[2]);
    return true;
}

/* "host alpha, pid 4242 (since T), until T2" */
static void lease_describe(const evo_lease_rec *l, char *out, size_t n)
{
    char until[32];
    iso_of(l->expires_at, until);
    snprintf(out, n, "host %s, pid %lld (since %s; last renewed %s), until %s", l->holder.host,
             (long long)l->holder.pid, l->taken_at, l->renewed_at, until);
}

static evo_status lease_take(evo_store *st, int64_t run_id, const evo_lease_holder *me, double lease_s,
                             evo_lease_rec *prev, const char **why, evo_err *err)
{
    evo_lease_rec cur;
    TRY(lease_read(st, run_id, &cur, err));
    const double now = wall_now();
    const char *how = "new";
    if (cur.expires_at > 0) {
        if (strcmp(cur.holder.token, me->token) == 0)
            how = "mine";
        else if (cur.expires_at <= now)
            how = "expired";
        else if (!holder_alive_here(&cur.holder, me))
            how = "holder gone";
        else {
            char who[600];
            lease_describe(&cur, who, sizeof who);
            return evo_fail(err, EVO_E_USAGE,
                            "%s: run %lld is in progress elsewhere: its lease is held by %s; it "
                            "renews the lease while it runs, and should that stop, the lease expires and the run may "
                            "be resumed then",
                            st->path, (long long)run_id, who);
        }
    }
    if (prev) *prev = cur;
    if (why) *why = how;
    return lease_exec(st,
                      "INSERT INTO leases (run_id, host, boot_id, pid, pid_start, token, taken_at, renewed_at, "
                      "expires_at) VALUES (:run, :host, :boot, :pid, :start, :token, :now, :now, :exp) "
                      "ON CONFLICT (run_id) DO UPDATE SET host = excluded.host, boot_id = excluded.boot_id, "
                      "pid = excluded.pid, pid_start = excluded.pid_start, token = excluded.token, "
                      "taken_at = CASE WHEN token = excluded.token THEN taken_at ELSE excluded.taken_at END, "
                      "renewed_at = excluded.renewed_at, expires_at = excluded.expires_at",
                      run_id, me, now, lease_s, NULL, err);
}

evo_status evo_store_lease_take(evo_store *st, int64_t run_id, const evo_lease_holder *me, double lease_s,
                                evo_lease_rec *prev, const char **why, evo_err *err)
{
    TRY(write_begin(st, "lease_take", err));
    return write_end(st, lease_take(st, run_id, me, lease_s, prev, why, err), err);
}

/* EVO_E_NOTFOUND unless me holds the lease: the message says who does. */
static evo_status lease_mine(evo_store *st, int64_t run_id, const evo_lease_holder *me, evo_err *err)
{
    evo_lease_rec cur;
    TRY(lease_read(st, run_id, &cur, err));
    if (cur.expires_at > 0 && strcmp(cur.holder.token, me->token) == 0) return EVO_OK;
    if (cur.expires_at <= 0)
        return evo_fail(err, EVO_E_NOTFOUND, "%s: run %lld lost its lease: no process holds it now", st->path,
                        (long long)run_id);
    char who[600];
    lease_describe(&cur, who, sizeof who);
    return evo_fail(err, EVO_E_NOTFOUND, "%s: run %lld was taken over: its lease is held by %s", st->path,
                    (long long)run_id, who);
}

evo_status evo_store_lease_renew(evo_store *st, int64_t run_id, const evo_lease_holder *me, double lease_s,
                                 evo_err *err)
{
    TRY(write_begin(st, "lease_renew", err));
    evo_status s = lease_mine(st, run_id, me, err);
    if (s == EVO_OK)
        s = lease_exec(st,
                       "UPDATE leases SET renewed_at = :now, expires_at = :exp WHERE run_id = :run AND token = :token",
                       run_id, me, wall_now(), lease_s, NULL, err);
    return write_end(st, s, err);
}

evo_status evo_store_lease_check(evo_store *st, int64_t run_id, const evo_lease_holder *me, evo_err *err)
{
    TRY(write_begin(st, "lease_check", err));
    return write_end(st, lease_mine(st, run_id, me, err), err);
}

evo_status evo_store_lease_release(evo_store *st, int64_t run_id, const evo_lease_holder *me, evo_err *err)
{
    TRY(write_begin(st, "lease_release", err));
    return write_end(
        st, lease_exec(st, "DELETE FROM leases WHERE run_id = :run AND token = :token", run_id, me, 0, 0, NULL, err),
        err);
}

evo_status evo_store_lease_get(evo_store *st, int64_t run_id, evo_lease_rec *out, evo_err *err)
{
    memset(out, 0, sizeof *out);
    if (st->version < 6) return EVO_OK;
    return read_end(st, lease_read(st, run_id, out, err));
}
