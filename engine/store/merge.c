/* merge.c — whole store files: a consistent copy (SQLite's online backup) and merging one store into another (see
 * store.h, evo_store_merge). The input is attached as `src` to the output's connection; ids are mapped through
 * temporary tables, and every column list is built from the two files' own tables, so a column a later schema
 * adds travels without this file knowing it.
 */
#include "store.h"

#include "paths.h"
#include "util.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SQL(call, where) \
    do { \
        int rc_ = (call); \
        if (rc_ != SQLITE_OK && rc_ != SQLITE_ROW && rc_ != SQLITE_DONE) \
            return evo_store_sql_fail(st, rc_, err, (where)); \
    } while (0)
#define TRY(call) \
    do { \
        evo_status s_ = (call); \
        if (s_ != EVO_OK) return s_; \
    } while (0)

/* ---- copy ---- */

evo_status evo_store_copy(evo_store *st, const char *path, evo_err *err)
{
    if (evo_file_exists(path)) return evo_fail(err, EVO_E_IO, "%s: exists; a copy goes to a new name", path);
    sqlite3 *dst = NULL;
    int rc = sqlite3_open_v2(path, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        evo_status s = evo_fail(err, EVO_E_IO, "%s: cannot create (%s)", path, dst ? sqlite3_errmsg(dst) : "");
        sqlite3_close(dst);
        return s;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", evo_store_db(st), "main");
    if (!b) {
        evo_status s =
            evo_fail(err, EVO_E_DB, "%s: cannot copy to %s (%s)", evo_store_path(st), path, sqlite3_errmsg(dst));
        sqlite3_close(dst);
        unlink(path);
        return s;
    }
    /* all at once: one snapshot of the source, whatever another connection writes meanwhile */
    do rc = sqlite3_backup_step(b, -1);
    while (rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? (sqlite3_sleep(10), true) : false);
    const int fin = sqlite3_backup_finish(b);
    evo_status s = EVO_OK;
    if (rc != SQLITE_DONE || fin != SQLITE_OK)
        s = evo_fail(err, EVO_E_DB, "%s: copy to %s failed (%s)", evo_store_path(st), path,
                     sqlite3_errstr(rc != SQLITE_DONE ? rc : fin));
    if (sqlite3_close(dst) != SQLITE_OK && s == EVO_OK) s = evo_fail(err, EVO_E_IO, "%s: close failed", path);
    if (s != EVO_OK) unlink(path);
    return s;
}

/* ---- helpers over the output's connection ---- */

static evo_status exec(evo_store *st, const char *sql, evo_err *err)
{
    SQL(sqlite3_exec(evo_store_db(st), sql, NULL, NULL, NULL), sql);
    return EVO_OK;
}

static int64_t scalar(evo_store *st, const char *sql)
{
    sqlite3_stmt *q = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(evo_store_db(st), sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* The columns of table in schema db, in order, as a NULL-terminated malloc'd list. */
static char **columns(evo_store *st, const char *db, const char *table)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s', '%s') ORDER BY cid", table, db);
    sqlite3_stmt *q = NULL;
    char **cols = evo_xcalloc(1, sizeof *cols);
    int n = 0;
    if (sqlite3_prepare_v2(evo_store_db(st), sql, -1, &q, NULL) == SQLITE_OK)
        while (sqlite3_step(q) == SQLITE_ROW) {
            cols = evo_xrealloc(cols, (size_t)(n + 2) * sizeof *cols);
            cols[n++] = evo_strdup((const char *)sqlite3_column_text(q, 0));
            cols[n] = NULL;
        }
    sqlite3_finalize(q);
    return cols;
}

static void free_list(char **l)
{
    for (char **p = l; p && *p; p++) free(*p);
    free(l);
}

static bool in_list(char **l, const char *name)
{
    for (char **p = l; p && *p; p++)
        if (!strcmp(*p, name)) return true;
    return false;
}

/* A column that refers to another table's id is read through its map: {column, expression}. */
typedef struct {
    const char *col, *expr;
} mapped;

/* "INSERT [OR IGNORE] INTO main.T (a, b, ...) SELECT x.a, <map>, ... FROM src.T x <joins> <tail>": every column the
 * two tables share, but `skip` (the id), with mapped ones replaced by their expression. */
static char *copy_sql(evo_store *st, const char *verb, const char *table, const char *skip, const mapped *maps,
                      int n_maps, const char *joins, const char *tail)
{
    char **out = columns(st, "main", table), **in = columns(st, "src", table);
    evo_str cols = {0}, sel = {0};
    for (char **c = out; *c; c++) {
        if ((skip && !strcmp(*c, skip)) || !in_list(in, *c)) continue;
        const char *expr = NULL;
        for (int m = 0; m < n_maps; m++)
            if (!strcmp(maps[m].col, *c)) expr = maps[m].expr;
        evo_str_appendf(&cols, "%s\"%s\"", cols.len ? ", " : "", *c);
        if (expr)
            evo_str_appendf(&sel, "%s%s", sel.len ? ", " : "", expr);
        else
            evo_str_appendf(&sel, "%sx.\"%s\"", sel.len ? ", " : "", *c);
    }
    evo_str sql = {0};
    evo_str_appendf(&sql, "%s INTO main.%s (%s) SELECT %s FROM src.%s x %s %s", verb, table, evo_str_cstr(&cols),
                    evo_str_cstr(&sel), table, joins ? joins : "", tail ? tail : "");
    evo_str_free(&cols);
    evo_str_free(&sel);
    free_list(out);
    free_list(in);
    return evo_str_take(&sql);
}

static evo_status run_sql(evo_store *st, char *sql, int64_t *changes, evo_err *err)
{
    const int rc = sqlite3_exec(evo_store_db(st), sql, NULL, NULL, NULL);
    free(sql);
    SQL(rc, "merge");
    if (changes) *changes += sqlite3_changes(evo_store_db(st));
    return EVO_OK;
}

/* ---- tasks ---- */

evo_status evo_store_tasks(evo_store *st, char **tasks, evo_err *err)
{
    *tasks = evo_strdup("");
    if (evo_store_schema_version(st) == 0) return EVO_OK;
    sqlite3_stmt *q = NULL;
    SQL(sqlite3_prepare_v2(evo_store_db(st),
                           "SELECT group_concat(task, ',') FROM (SELECT task FROM runs UNION SELECT task FROM "
                           "candidates ORDER BY 1)",
                           -1, &q, NULL),
        "tasks");
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_text(q, 0)) {
        free(*tasks);
        *tasks = evo_strdup((const char *)sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
    SQL(rc, "tasks");
    return EVO_OK;
}

/* ---- merging src into main ---- */

/* Runs, one by one (there are few): the same run found by what it began with, else a new row. */
static evo_status merge_runs(evo_store *st, evo_merge_counts *added, evo_merge_counts *known, evo_err *err)
{
    TRY(exec(st, "CREATE TEMP TABLE m_run (src INTEGER PRIMARY KEY, dst INTEGER NOT NULL)", err));
    sqlite3 *db = evo_store_db(st);
    const bool island = scalar(st, "SELECT count(*) FROM pragma_table_info('runs', 'main') WHERE name = 'island'") > 0;
    char find[1024];
    snprintf(find, sizeof find,
             "SELECT d.id, coalesce(d.wall_s, 0) < coalesce(s.wall_s, 0) FROM src.runs s JOIN main.runs d ON "
             "d.started_at IS s.started_at AND d.task IS s.task AND d.arch IS s.arch AND d.shape_set IS s.shape_set "
             "AND d.seed IS s.seed AND d.strategy IS s.strategy AND d.population IS s.population AND d.config_text "
             "IS s.config_text AND d.gpu IS s.gpu%s WHERE s.id = ?1 ORDER BY d.id LIMIT 1",
             island ? " AND d.island IS s.island" : "");
    char *insert = copy_sql(st, "INSERT", "runs", "id", NULL, 0, NULL, "WHERE x.id = ?1");
    sqlite3_stmt *ids = NULL, *q_find = NULL, *q_ins = NULL, *q_map = NULL, *q_upd = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT id FROM src.runs ORDER BY id", -1, &ids, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, find, -1, &q_find, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, insert, -1, &q_ins, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "INSERT INTO m_run VALUES (?1, ?2)", -1, &q_map, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "UPDATE main.runs SET (finished_at, state, generations, wall_s, compile_s, check_s, "
                                "time_s) = (SELECT finished_at, state, generations, wall_s, compile_s, check_s, "
                                "time_s FROM src.runs WHERE id = ?1) WHERE id = ?2",
                                -1, &q_upd, NULL);
    free(insert);
    while (rc == SQLITE_OK && (rc = sqlite3_step(ids)) == SQLITE_ROW) {
        const int64_t src = sqlite3_column_int64(ids, 0);
        int64_t dst = 0;
        bool further = false;
        sqlite3_reset(q_find);
        sqlite3_bind_int64(q_find, 1, src);
        if ((rc = sqlite3_step(q_find)) == SQLITE_ROW) {
            dst = sqlite3_column_int64(q_find, 0);
            further = sqlite3_column_int(q_find, 1) != 0;
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
        }
        if (rc == SQLITE_OK && !dst) {
            sqlite3_reset(q_ins);
            sqlite3_bind_int64(q_ins, 1, src);
            rc = sqlite3_step(q_ins) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
            dst = sqlite3_last_insert_rowid(db);
            if (added) added->runs++;
        } else if (rc == SQLITE_OK) {
            if (known) known->runs++;
            if (further) {
                sqlite3_reset(q_upd);
                sqlite3_bind_int64(q_upd, 1, src);
                sqlite3_bind_int64(q_upd, 2, dst);
                rc = sqlite3_step(q_upd) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
            }
        }
        if (rc == SQLITE_OK) {
            sqlite3_reset(q_map);
            sqlite3_bind_int64(q_map, 1, src);
            sqlite3_bind_int64(q_map, 2, dst);
            rc = sqlite3_step(q_map) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        }
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    sqlite3_finalize(ids);
    sqlite3_finalize(q_find);
    sqlite3_finalize(q_ins);
    sqlite3_finalize(q_map);
    sqlite3_finalize(q_upd);
    SQL(rc, "merging runs");
    return EVO_OK;
}

static evo_status merge_candidates(evo_store *st, evo_merge_counts *added, evo_err *err)
{
    TRY(run_sql(st,
                copy_sql(st, "INSERT", "candidates", "id", NULL, 0, NULL,
                         "WHERE NOT EXISTS (SELECT 1 FROM main.candidates d WHERE d.key = x.key) ORDER BY x.id"),
                added ? &added->candidates : NULL, err));
    /* what one copy knows and the other does not: resources of a candidate that was not compiled there, its
     * compile log, its demotion */
    static const char *const fill[] = {"registers", "smem_bytes", "spill_bytes", "stack_bytes"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(fill); i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "UPDATE main.candidates SET %1$s = (SELECT s.%1$s FROM src.candidates s WHERE s.key = "
                 "candidates.key) WHERE %1$s < 0 AND EXISTS (SELECT 1 FROM src.candidates s WHERE s.key = "
                 "candidates.key AND s.%1$s >= 0)",
                 fill[i]);
        TRY(exec(st, sql, err));
    }
    static const char *const text[] = {"compile_log", "demoted"};
    for (size_t i = 0; i < EVO_ARRAY_LEN(text); i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "UPDATE main.candidates SET %1$s = (SELECT s.%1$s FROM src.candidates s WHERE s.key = "
                 "candidates.key) WHERE %1$s IS NULL AND EXISTS (SELECT 1 FROM src.candidates s WHERE s.key = "
                 "candidates.key AND s.%1$s IS NOT NULL)",
                 text[i]);
        TRY(exec(st, sql, err));
    }
    return exec(st,
                "CREATE TEMP TABLE m_cand (src INTEGER PRIMARY KEY, dst INTEGER NOT NULL);"
                "INSERT INTO m_cand SELECT s.id, d.id FROM src.candidates s JOIN main.candidates d ON d.key = s.key;",
                err);
}

/* Evaluations one by one, in the input's order, each with its per-shape results: an evaluation main has already
 * (the same in every column that says what it was) is mapped to, not copied. */
static evo_status merge_evaluations(evo_store *st, evo_merge_counts *added, evo_merge_counts *known, evo_err *err)
{
    sqlite3 *db = evo_store_db(st);
    const mapped maps[] = {{"candidate_id", "?2"}, {"run_id", "?3"}};
    char *ins = copy_sql(st, "INSERT", "evaluations", "id", maps, 2, NULL, "WHERE x.id = ?1");
    const mapped rmaps[] = {{"evaluation_id", "?2"}};
    char *res = copy_sql(st, "INSERT", "results", NULL, rmaps, 1, NULL, "WHERE x.evaluation_id = ?1");
    sqlite3_stmt *rows = NULL, *find = NULL, *q_ins = NULL, *q_res = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT s.id, mc.dst, mr.dst FROM src.evaluations s JOIN m_cand mc ON mc.src = "
                                "s.candidate_id LEFT JOIN m_run mr ON mr.src = s.run_id ORDER BY s.id",
                                -1, &rows, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "SELECT d.id FROM src.evaluations s, main.evaluations d WHERE s.id = ?1 AND "
                                "d.candidate_id = ?2 AND d.shape_set = s.shape_set AND d.run_id IS ?3 AND "
                                "d.generation IS s.generation AND d.verdict = s.verdict AND d.created_at = "
                                "s.created_at AND d.gpu IS s.gpu AND d.fitness IS s.fitness AND d.detail IS s.detail "
                                "AND d.accuracy IS s.accuracy AND d.gate IS s.gate LIMIT 1",
                                -1, &find, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, ins, -1, &q_ins, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, res, -1, &q_res, NULL);
    free(ins);
    free(res);
    while (rc == SQLITE_OK && (rc = sqlite3_step(rows)) == SQLITE_ROW) {
        const int64_t src = sqlite3_column_int64(rows, 0), cand = sqlite3_column_int64(rows, 1);
        const bool has_run = sqlite3_column_type(rows, 2) != SQLITE_NULL;
        const int64_t run = sqlite3_column_int64(rows, 2);
        sqlite3_reset(find);
        sqlite3_bind_int64(find, 1, src);
        sqlite3_bind_int64(find, 2, cand);
        if (has_run)
            sqlite3_bind_int64(find, 3, run);
        else
            sqlite3_bind_null(find, 3);
        rc = sqlite3_step(find);
        if (rc == SQLITE_ROW) {
            if (known) known->evaluations++;
            rc = SQLITE_OK;
            continue;
        }
        if (rc != SQLITE_DONE) break;
        sqlite3_reset(q_ins);
        sqlite3_bind_int64(q_ins, 1, src);
        sqlite3_bind_int64(q_ins, 2, cand);
        if (has_run)
            sqlite3_bind_int64(q_ins, 3, run);
        else
            sqlite3_bind_null(q_ins, 3);
        if ((rc = sqlite3_step(q_ins)) != SQLITE_DONE) break;
        const int64_t dst = sqlite3_last_insert_rowid(db);
        if (added) added->evaluations++;
        sqlite3_reset(q_res);
        sqlite3_bind_int64(q_res, 1, src);
        sqlite3_bind_int64(q_res, 2, dst);
        if ((rc = sqlite3_step(q_res)) != SQLITE_DONE) break;
        if (added) added->results += sqlite3_changes(db);
        rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    if (rc != SQLITE_OK) rc = sqlite3_errcode(db);
    sqlite3_finalize(rows);
    sqlite3_finalize(find);
    sqlite3_finalize(q_ins);
    sqlite3_finalize(q_res);
    SQL(rc, "merging evaluations");
    return EVO_OK;
}

static evo_status merge_rest(evo_store *st, evo_merge_counts *added, evo_err *err)
{
    const mapped lmaps[] = {{"run_id", "mr.dst"}, {"child_id", "mc.dst"}, {"parent_id", "mp.dst"}};
    TRY(run_sql(st,
                copy_sql(st, "INSERT OR IGNORE", "lineage", NULL, lmaps, 3,
                         "JOIN m_run mr ON mr.src = x.run_id JOIN m_cand mc ON mc.src = x.child_id JOIN m_cand mp "
                         "ON mp.src = x.parent_id",
                         "ORDER BY x.rowid"),
                added ? &added->lineage : NULL, err));
    const mapped gmaps[] = {{"run_id", "mr.dst"}};
    TRY(run_sql(
        st, copy_sql(st, "INSERT OR IGNORE", "generations", NULL, gmaps, 1, "JOIN m_run mr ON mr.src = x.run_id", NULL),
        added ? &added->generations : NULL, err));
    const mapped rmaps[] = {{"candidate_id", "mc.dst"}, {"run_id", "mr.dst"}};
    TRY(run_sql(st,
                copy_sql(st, "INSERT", "retimes", "id", rmaps, 2,
                         "JOIN m_cand mc ON mc.src = x.candidate_id LEFT JOIN m_run mr ON mr.src = x.run_id",
                         "WHERE NOT EXISTS (SELECT 1 FROM main.retimes d WHERE d.candidate_id = mc.dst AND d.run_id "
                         "IS mr.dst AND d.generation IS x.generation AND d.shape_set = x.shape_set AND d.why = x.why "
                         "AND d.created_at = x.created_at AND d.gpu IS x.gpu AND d.fitness IS x.fitness) "
                         "ORDER BY x.id"),
                added ? &added->retimes : NULL, err));
    const mapped pmaps[] = {{"candidate_id", "mc.dst"}};
    return run_sql(st,
                   copy_sql(st, "INSERT", "profiles", NULL, pmaps, 1, "JOIN m_cand mc ON mc.src = x.candidate_id",
                            "WHERE true ON CONFLICT (candidate_id, shape, metric) DO UPDATE SET value = "
                            "excluded.value, unit = excluded.unit, measured_at = excluded.measured_at WHERE "
                            "excluded.measured_at > profiles.measured_at"),
                   added ? &added->profiles : NULL, err);
}

/* A private copy of `in` at the schema of this evo: copied as it is, then opened read-write (migrated). */
static evo_status private_copy(const char *in, char **path, evo_err *err)
{
    *path = NULL;
    evo_store *src = NULL;
    TRY(evo_store_open(in, EVO_STORE_IMMUTABLE, &src, err)); /* nothing is created beside an input */
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    evo_str p = {0};
    evo_str_appendf(&p, "%s/evo-merge-XXXXXX", tmpdir);
    char *tmpl = evo_str_take(&p);
    evo_status s = EVO_OK;
    if (!mkdtemp(tmpl))
        s = evo_fail(err, EVO_E_IO, "%s: cannot create a directory for a copy (%s)", tmpdir, strerror(errno));
    char *copy = NULL;
    if (s == EVO_OK) {
        evo_str c = {0};
        evo_str_appendf(&c, "%s/copy.db", tmpl);
        copy = evo_str_take(&c);
        s = evo_store_copy(src, copy, err);
    }
    evo_store_close(src);
    if (s == EVO_OK) {
        evo_store *mig = NULL;
        s = evo_store_open(copy, EVO_STORE_READWRITE, &mig, err);
        if (s == EVO_OK && evo_store_schema_version(mig) == 0)
            s = evo_fail(err, EVO_E_DB, "%s: an empty file, nothing to merge", in);
        evo_store_close(mig);
        if (s != EVO_OK) s = evo_failv_prefix(err, s, "merge: reading %s", in);
    }
    if (s != EVO_OK && copy) {
        char side[4096];
        unlink(copy);
        snprintf(side, sizeof side, "%s-wal", copy), unlink(side);
        snprintf(side, sizeof side, "%s-shm", copy), unlink(side);
    }
    if (s != EVO_OK) {
        rmdir(tmpl);
        free(copy);
        copy = NULL;
    }
    free(tmpl);
    *path = copy;
    return s;
}

static void remove_copy(const char *copy)
{
    char side[4096];
    unlink(copy);
    snprintf(side, sizeof side, "%s-wal", copy), unlink(side);
    snprintf(side, sizeof side, "%s-shm", copy), unlink(side);
    snprintf(side, sizeof side, "%s", copy);
    char *slash = strrchr(side, '/');
    if (slash) *slash = '\0', rmdir(side);
}

evo_status evo_store_merge(evo_store *st, const char *in, evo_merge_counts *added, evo_merge_counts *known,
                           evo_err *err)
{
    if (added) memset(added, 0, sizeof *added);
    if (known) memset(known, 0, sizeof *known);
    if (evo_path_same_file(in, evo_store_path(st)))
        return evo_fail(err, EVO_E_USAGE, "merge: %s is the output itself", in);
    char *copy = NULL;
    TRY(private_copy(in, &copy, err));
    evo_merge_counts total = {0};
    sqlite3 *db = evo_store_db(st);
    sqlite3_stmt *att = NULL;
    int rc = sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS src", -1, &att, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(att, 1, copy, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(att);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
    sqlite3_finalize(att);
    evo_status s = rc == SQLITE_OK ? EVO_OK : evo_store_sql_fail(st, rc, err, "attach");
    if (s == EVO_OK) {
        s = exec(st, "BEGIN IMMEDIATE", err);
        if (s == EVO_OK) s = merge_runs(st, added, known, err);
        if (s == EVO_OK) s = merge_candidates(st, added, err);
        if (s == EVO_OK) s = merge_evaluations(st, added, known, err);
        if (s == EVO_OK) s = merge_rest(st, added, err);
        if (s == EVO_OK && scalar(st, "SELECT count(*) FROM pragma_foreign_key_check") > 0)
            s = evo_fail(err, EVO_E_DB, "merge %s: rows would lose their references; nothing merged", in);
        if (s == EVO_OK) {
            total.runs = scalar(st, "SELECT count(*) FROM src.runs");
            total.candidates = scalar(st, "SELECT count(*) FROM src.candidates");
            total.lineage = scalar(st, "SELECT count(*) FROM src.lineage");
            total.generations = scalar(st, "SELECT count(*) FROM src.generations");
            total.retimes = scalar(st, "SELECT count(*) FROM src.retimes");
            total.profiles = scalar(st, "SELECT count(*) FROM src.profiles");
            total.results = scalar(st, "SELECT count(*) FROM src.results");
            s = exec(st, "DROP TABLE temp.m_run; DROP TABLE temp.m_cand; COMMIT", err);
        }
        if (s != EVO_OK && !sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_exec(db, "DROP TABLE IF EXISTS temp.m_run; DROP TABLE IF EXISTS temp.m_cand", NULL, NULL, NULL);
        sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL);
    }
    remove_copy(copy);
    free(copy);
    if (s == EVO_OK && known && added) {
        known->candidates = total.candidates - added->candidates;
        known->lineage = total.lineage - added->lineage;
        known->generations = total.generations - added->generations;
        known->retimes = total.retimes - added->retimes;
        known->profiles = total.profiles - added->profiles;
        known->results = total.results - added->results;
    }
    return s;
}
