/* per_shape.c — per-shape elites (store.h, evo_store_shape_elites): for each shape of a task and arch and each
 * accuracy class, the candidates fastest on that shape by its median time, read from the per-shape results of OK
 * evaluations. One query with two windows: a candidate's fastest result on the shape, then the ranking among those.
 */
#include "store.h"

#include "util.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape's fields object; schema 1-2 kept attention's in columns of their own (store.c reads them so too). */
#define FIELDS_V3 "r.fields"
#define FIELDS_V2 \
    "'{\"batch\":' || r.batch || ',\"heads\":' || r.heads || ',\"seq\":' || r.seq || ',\"head_dim\":' || " \
    "r.head_dim || ',\"causal\":' || CASE r.causal WHEN 1 THEN 'true' ELSE 'false' END || '}'"
#define MODEL_SQL \
    "CASE WHEN instr(e.gpu, ' (GPU ') > 0 THEN substr(e.gpu, 1, instr(e.gpu, ' (GPU ') - 1) ELSE " \
    "coalesce(e.gpu, '') END"

static void build_sql(int version, char *sql, size_t n)
{
    const char *fields = version >= 3 ? FIELDS_V3 : FIELDS_V2;
    const char *acc = version >= 4 ? "coalesce(e.accuracy, '" EVO_ACCURACY_EXACT "')" : "'" EVO_ACCURACY_EXACT "'";
    const char *demoted = version >= 2 ? "c.demoted IS NULL AND " : "";
    const char *rate = version >= 3 ? "r.rate" : "r.tflops";
    snprintf(sql, n,
             "SELECT acc, fields, shape, key, eid, run_id, generation, gpu, shape_set, created_at, median_us, p10_us, "
             "p90_us, baseline_us, speedup, rate, ci_lo, ci_hi, rel_l2, max_abs, rnk FROM ("
             " SELECT *, row_number() OVER (PARTITION BY acc, fields ORDER BY median_us, key, eid) AS rnk FROM ("
             "  SELECT %s AS acc, %s AS fields, r.shape AS shape, c.key AS key, e.id AS eid, e.run_id AS run_id,"
             "   e.generation AS generation, e.gpu AS gpu, e.shape_set AS shape_set, e.created_at AS created_at,"
             "   r.median_us AS median_us, r.p10_us AS p10_us, r.p90_us AS p90_us, r.baseline_us AS baseline_us,"
             "   r.speedup AS speedup, %s AS rate, %s, r.rel_l2 AS rel_l2, r.max_abs AS max_abs,"
             "   row_number() OVER (PARTITION BY %s, %s, c.id ORDER BY r.median_us, e.id) AS crank"
             "  FROM results r JOIN evaluations e ON e.id = r.evaluation_id JOIN candidates c ON c.id = e.candidate_id"
             "  WHERE e.verdict = 'OK' AND r.median_us > 0 AND %s(?1 IS NULL OR c.task = ?1)"
             "   AND (?2 IS NULL OR c.arch = ?2) AND (?3 IS NULL OR %s = ?3) AND (?4 IS NULL OR " MODEL_SQL " = ?4)"
             "   AND (?5 IS NULL OR e.shape_set = ?5)"
             " ) WHERE crank = 1"
             ") WHERE rnk <= ?6 ORDER BY acc, shape, fields, rnk",
             acc, fields, rate,
             version >= 3 ? "r.ci_lo_us AS ci_lo, r.ci_hi_us AS ci_hi" : "NULL AS ci_lo, NULL AS ci_hi", acc, fields,
             demoted, acc);
}

static char *col_text(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? evo_strdup((const char *)t) : NULL;
}

static double col_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

evo_status evo_store_shape_elites(evo_store *st, const char *task, const char *arch, const char *accuracy,
                                  const char *model, const char *shape_set, int k, evo_shape_elite_rec **out, int *n,
                                  evo_err *err)
{
    *out = NULL;
    *n = 0;
    const int version = evo_store_schema_version(st);
    if (version == 0 || k <= 0) return EVO_OK;
    char sql[4096];
    build_sql(version, sql, sizeof sql);
    sqlite3 *db = evo_store_db(st);
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc != SQLITE_OK) return evo_store_sql_fail(st, rc, err, __func__);
    const char *texts[5] = {task, arch, accuracy, model, shape_set};
    for (int i = 0; i < 5 && rc == SQLITE_OK; i++)
        rc = texts[i] ? sqlite3_bind_text(q, i + 1, texts[i], -1, SQLITE_TRANSIENT) : sqlite3_bind_null(q, i + 1);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(q, 6, k);
    int cap = 0;
    evo_status s = EVO_OK;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(q)) != SQLITE_ROW) break;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            *out = evo_xrealloc(*out, (size_t)cap * sizeof **out);
        }
        evo_shape_elite_rec *e = &(*out)[(*n)++];
        memset(e, 0, sizeof *e);
        e->accuracy = col_text(q, 0);
        const char *fields = (const char *)sqlite3_column_text(q, 1), *shape = (const char *)sqlite3_column_text(q, 2);
        snprintf(e->result.fields, sizeof e->result.fields, "%s", fields ? fields : "{}");
        snprintf(e->result.shape, sizeof e->result.shape, "%s", shape ? shape : "");
        e->key = col_text(q, 3);
        e->eval_id = sqlite3_column_int64(q, 4);
        e->run_id = sqlite3_column_type(q, 5) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 5);
        e->generation = sqlite3_column_type(q, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 6);
        e->gpu = col_text(q, 7);
        e->shape_set = col_text(q, 8);
        e->created_at = col_text(q, 9);
        evo_shape_result *r = &e->result;
        r->median_us = col_real(q, 10);
        r->p10_us = col_real(q, 11);
        r->p90_us = col_real(q, 12);
        r->baseline_us = col_real(q, 13);
        r->speedup = col_real(q, 14);
        r->rate = col_real(q, 15);
        r->ci_lo_us = isnan(col_real(q, 16)) ? 0 : col_real(q, 16);
        r->ci_hi_us = isnan(col_real(q, 17)) ? 0 : col_real(q, 17);
        r->rel_l2 = col_real(q, 18);
        r->max_abs = col_real(q, 19);
        e->rank = sqlite3_column_int(q, 20);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) s = evo_store_sql_fail(st, rc, err, __func__);
    for (int i = 0; s == EVO_OK && i < *n; i++) s = evo_store_get_candidate(st, (*out)[i].key, &(*out)[i].cand, err);
    if (s != EVO_OK) {
        evo_store_shape_elites_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return s;
}

void evo_store_shape_elites_free(evo_shape_elite_rec *e, int n)
{
    if (!e) return;
    for (int i = 0; i < n; i++) {
        evo_store_candidate_free(&e[i].cand);
        free(e[i].key);
        free(e[i].accuracy);
        free(e[i].gpu);
        free(e[i].shape_set);
        free(e[i].created_at);
    }
    free(e);
}
