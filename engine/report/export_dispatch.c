/* export_dispatch.c — `evo export --dispatch` (export.h): the winner of every bucket of the task, each rendered as a
 * single export renders its genome, handed as one table to the task's export_dispatch_body. The buckets and the
 * launcher's rule are the task's; which candidate wins a bucket is decided here, from the per-shape elites.
 */
#include "export.h"

#include "config.h"
#include "store.h"
#include "task.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALL_ROWS (1 << 20)

/* One timed shape (by its fields) and the searched candidates' rows on it, fastest first. */
typedef struct {
    const evo_shape_elite_rec **rows;
    int n, cap;
    evo_shape shape;
    evo_bucket bucket;
} shape_rows;

static bool searched(const evo_shape_elite_rec *r)
{
    return r->run_id > 0 && r->cand.genome && strncmp(r->cand.genome, "file:", 5) != 0;
}

static int bucket_cmp(const evo_bucket *a, const evo_bucket *b)
{
    for (int k = 0; k < EVO_BUCKET_KEYS; k++)
        if (a->key[k] != b->key[k]) return a->key[k] < b->key[k] ? -1 : 1;
    return 0;
}

static int shape_rows_cmp(const void *a, const void *b)
{
    const shape_rows *x = a, *y = b;
    const int c = bucket_cmp(&x->bucket, &y->bucket);
    return c ? c : strcmp(x->rows[0]->result.shape, y->rows[0]->result.shape);
}

/* The row of candidate key in shape g, NULL when it was not measured there. */
static const evo_shape_elite_rec *row_of(const shape_rows *g, const char *key)
{
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->rows[i]->key, key) == 0) return g->rows[i];
    return NULL;
}

/* Copies what an entry needs of the winning row: the candidate (read again by key), the evaluation's provenance, its
 * run. */
static evo_status make_entry(evo_store *st, const evo_shape_elite_rec *r, evo_export_entry *e, evo_err *err)
{
    memset(e, 0, sizeof *e);
    evo_status s = evo_store_get_candidate(st, r->key, &e->src.cand, err);
    evo_eval_rec *v = &e->src.eval;
    v->id = r->eval_id;
    v->candidate_id = r->cand.id;
    v->run_id = r->run_id;
    v->generation = r->generation;
    v->verdict = EVO_V_OK;
    v->fitness = v->fitness_lo = v->fitness_hi = NAN;
    v->gpu = r->gpu ? evo_strdup(r->gpu) : NULL;
    v->shape_set = r->shape_set ? evo_strdup(r->shape_set) : NULL;
    v->created_at = r->created_at ? evo_strdup(r->created_at) : NULL;
    v->accuracy = evo_strdup(r->accuracy ? r->accuracy : EVO_ACCURACY_EXACT);
    if (s == EVO_OK) s = evo_store_get_run(st, r->run_id, &e->src.run, err);
    return s;
}

/* The GPU model of a run's gpu text: without the " (GPU N)" the pool appends. */
static void model_of(const char *gpu, char *buf, size_t n)
{
    const char *cut = gpu ? strstr(gpu, " (GPU ") : NULL;
    snprintf(buf, n, "%.*s", gpu ? (int)(cut ? (size_t)(cut - gpu) : strlen(gpu)) : 0, gpu ? gpu : "");
}

static evo_status pick_winners(evo_store *st, shape_rows *g, int n_g, evo_export_dispatch_ctx *d, evo_err *err)
{
    d->buckets = evo_xcalloc((size_t)n_g, sizeof *d->buckets);
    d->timed = evo_xcalloc((size_t)n_g, sizeof *d->timed);
    d->entries = evo_xcalloc((size_t)n_g, sizeof *d->entries);
    evo_status s = EVO_OK;
    for (int i = 0; i < n_g && s == EVO_OK;) {
        int j = i + 1;
        while (j < n_g && bucket_cmp(&g[j].bucket, &g[i].bucket) == 0) j++;
        /* the candidate measured on every shape of the bucket with the least total median (ties: smaller key) */
        const evo_shape_elite_rec *win = NULL;
        double best = INFINITY, best_base = 0;
        for (int c = 0; c < g[i].n; c++) {
            const char *key = g[i].rows[c]->key;
            double total = 0, base = 0;
            bool all = true;
            for (int k = i; k < j && all; k++) {
                const evo_shape_elite_rec *r = row_of(&g[k], key);
                all = r != NULL;
                if (r) total += r->result.median_us, base += r->result.baseline_us;
            }
            if (all && (total < best || (total == best && win && strcmp(key, win->key) < 0)))
                win = g[i].rows[c], best = total, best_base = base;
        }
        evo_export_bucket_row *b = &d->buckets[d->n_buckets];
        b->bucket = g[i].bucket;
        b->shape = g[i].shape;
        for (int k = i; k < j; k++) {
            const size_t len = strlen(b->shapes);
            snprintf(b->shapes + len, sizeof b->shapes - len, "%s%s", k > i ? ", " : "", g[k].rows[0]->result.shape);
        }
        if (!win) { /* no searched candidate was measured on all of them: the first shape's fastest */
            win = g[i].rows[0];
            best = win->result.median_us;
            best_base = win->result.baseline_us;
        }
        b->median_us = best;
        b->speedup = best_base > 0 && best > 0 ? best_base / best : NAN;
        snprintf(b->gpu, sizeof b->gpu, "%s", win->gpu ? win->gpu : "");
        b->entry = -1;
        for (int e = 0; e < d->n_entries; e++)
            if (strcmp(d->entries[e].src.cand.key, win->key) == 0) b->entry = e;
        if (b->entry < 0) {
            b->entry = d->n_entries++;
            s = make_entry(st, win, &d->entries[b->entry], err);
        }
        for (int k = i; k < j; k++) {
            const evo_shape_elite_rec *r = row_of(&g[k], win->key);
            d->timed[d->n_timed++] = (evo_export_timed){g[k].shape, r ? r->result.median_us : 0, d->n_buckets};
        }
        d->n_buckets++;
        i = j;
    }
    return s;
}

/* Rows of one shape: the lower median first, then the smaller key (the store's order within a class). */
static int row_by_median(const void *a, const void *b)
{
    const evo_shape_elite_rec *x = *(const evo_shape_elite_rec *const *)a, *y = *(const evo_shape_elite_rec *const *)b;
    if (x->result.median_us != y->result.median_us) return x->result.median_us < y->result.median_us ? -1 : 1;
    return strcmp(x->key, y->key);
}

evo_status evo_export_dispatch_pick(evo_store *st, const char *accuracy, evo_export_dispatch_ctx *d, evo_err *err)
{
    memset(d, 0, sizeof *d);
    const char *db = evo_store_path(st);
    snprintf(d->accuracy, sizeof d->accuracy, "%s", accuracy ? accuracy : EVO_ACCURACY_EXACT);
    int64_t rid = 0;
    evo_status s = evo_store_last_run(st, &rid, err);
    if (s == EVO_E_NOTFOUND)
        return evo_fail(err, EVO_E_NOTFOUND, "%s: no elites yet — no candidate has passed every gate; run `evo run`",
                        db);
    if (s == EVO_OK) s = evo_store_get_run(st, rid, &d->scope, err);
    if (s != EVO_OK) return s;
    const evo_task *task = evo_task_find(d->scope.task);
    if (!task || !task->bucket || !task->export_dispatch_body)
        return evo_fail(err, EVO_E_USAGE,
                        "export --dispatch: task %s has no dispatch buckets; export one kernel with --best",
                        d->scope.task);
    if (evo_task_accuracy_find(task, d->accuracy) < 0) {
        char names[128];
        evo_task_accuracy_names(task, names, sizeof names);
        return evo_fail(err, EVO_E_USAGE, "export --accuracy %s: task %s has the classes %s", d->accuracy, task->name,
                        names);
    }
    if (d->scope.config_text) {
        s = evo_config_parse(d->scope.config_path ? d->scope.config_path : "stored config", d->scope.config_text,
                             strlen(d->scope.config_text), &d->cfg, err);
        if (s != EVO_OK) return evo_failv_prefix(err, s, "the config stored with run %lld", (long long)d->scope.id);
    } else {
        return evo_fail(err, EVO_E_DB, "run %lld stored no config text", (long long)d->scope.id);
    }
    char **models = NULL;
    int n_models = 0;
    s = evo_store_gpu_models(st, task->name, d->scope.arch, NULL, &models, &n_models, err);
    if (s == EVO_OK && n_models > 1) model_of(d->scope.gpu, d->model, sizeof d->model);
    for (int m = 0; m < n_models; m++) free(models[m]);
    free(models);
    /* A task's classes run strictest first: a class admits the kernels of every stricter one, which pass its gate
     * with room to spare, so a looser class's file takes a stricter kernel in a bucket where one is fastest. */
    const int want = evo_task_accuracy_find(task, d->accuracy);
    evo_shape_elite_rec *rows = NULL;
    int n = 0;
    if (s == EVO_OK)
        s = evo_store_shape_elites(st, task->name, d->scope.arch, want == 0 ? d->accuracy : NULL,
                                   d->model[0] ? d->model : NULL, NULL, ALL_ROWS, &rows, &n, err);
    /* the shapes, by fields; each with its searched candidates' rows (already fastest first) */
    shape_rows *g = evo_xcalloc((size_t)(n ? n : 1), sizeof *g);
    int n_g = 0;
    for (int i = 0; s == EVO_OK && i < n; i++) {
        if (!searched(&rows[i])) continue;
        const int cls = evo_task_accuracy_find(task, rows[i].accuracy ? rows[i].accuracy : EVO_ACCURACY_EXACT);
        if (cls < 0 || cls > want) continue;
        int k = 0;
        while (k < n_g && strcmp(g[k].rows[0]->result.fields, rows[i].result.fields) != 0) k++;
        if (k == n_g) {
            evo_shape sh;
            evo_bucket b;
            if (evo_shape_from_fields_json(task, rows[i].result.shape, rows[i].result.fields, &sh, NULL) != EVO_OK ||
                !task->bucket(&sh, &b))
                continue;
            g[n_g++] = (shape_rows){.shape = sh, .bucket = b};
        }
        if (g[k].n == g[k].cap) {
            g[k].cap = g[k].cap ? 2 * g[k].cap : 8;
            g[k].rows = evo_xrealloc(g[k].rows, (size_t)g[k].cap * sizeof *g[k].rows);
        }
        g[k].rows[g[k].n++] = &rows[i];
    }
    for (int k = 0; k < n_g; k++) /* the admitted classes' rows merged: fastest first again */
        qsort(g[k].rows, (size_t)g[k].n, sizeof *g[k].rows, row_by_median);
    if (s == EVO_OK && n_g == 0)
        s = evo_fail(err, EVO_E_NOTFOUND,
                     "%s: no searched kernel of %s on %s in accuracy class %s%s has a correct, timed result%s%s", db,
                     task->name, d->scope.arch, d->accuracy, want > 0 ? " or a stricter one" : "",
                     d->model[0] ? " on " : "", d->model);
    if (s == EVO_OK) {
        qsort(g, (size_t)n_g, sizeof *g, shape_rows_cmp);
        s = pick_winners(st, g, n_g, d, err);
    }
    for (int k = 0; k < n_g; k++) free(g[k].rows);
    free(g);
    evo_store_shape_elites_free(rows, n);
    return s;
}

evo_status evo_export_dispatch_render(evo_export_dispatch_ctx *d, const char *exported_at, evo_export_out *out,
                                      evo_err *err)
{
    memset(out, 0, sizeof *out);
    evo_status s = EVO_OK;
    for (int i = 0; i < d->n_entries && s == EVO_OK; i++)
        if (!d->entries[i].cfg) s = evo_export_entry_render(&d->entries[i], out->warning, sizeof out->warning, err);
    if (s != EVO_OK) return s;
    char now[32], name[200];
    if (!exported_at) {
        evo_utc_iso8601(now);
        exported_at = now;
    }
    evo_export_dispatch_default_name(d, name, sizeof name);
    d->exported_at = exported_at;
    d->file_name = name;
    const char *arch = d->scope.arch ? d->scope.arch : "sm_90";
    for (int i = 0; i < d->n_entries; i++)
        if (d->entries[i].prog.arch[0]) arch = d->entries[i].prog.arch;
    evo_str o = {0};
    s = d->cfg->task_ops->export_dispatch_body(d, &o, err);
    if (s == EVO_OK) out->text = evo_str_take(&o);
    EVO_ASSERT(s != EVO_OK || (out->text && out->text[0])); /* a task's body is never empty */
    evo_str_free(&o);
    evo_export_nvcc_arch(arch, out->nvcc_arch, sizeof out->nvcc_arch);
    d->exported_at = NULL;
    d->file_name = NULL;
    return s;
}

void evo_export_dispatch_free(evo_export_dispatch_ctx *d)
{
    if (!d) return;
    for (int i = 0; i < d->n_entries; i++) {
        evo_export_src_free(&d->entries[i].src);
        evo_config_free(d->entries[i].cfg);
        evo_program_free(&d->entries[i].prog);
    }
    free(d->entries);
    free(d->buckets);
    free(d->timed);
    evo_store_run_free(&d->scope);
    evo_config_free(d->cfg);
    memset(d, 0, sizeof *d);
}

void evo_export_dispatch_buckets_intro(evo_str *o, const evo_export_dispatch_ctx *d)
{
    evo_str_appendf(o,
                    " * Buckets, from the per-shape elites of %s on %s, accuracy class %s%s%s (evo elite --show\n"
                    " * --per-shape): each bucket's winner is the candidate with the least total median time over the\n"
                    " * bucket's timed shapes.\n"
                    " *\n",
                    d->scope.task, d->scope.arch, d->accuracy, d->model[0] ? ", times of " : "", d->model);
}

void evo_export_dispatch_default_name(const evo_export_dispatch_ctx *d, char *buf, size_t n)
{
    /* the exact class keeps the plain name (the op's default); another class says itself, so that the files of
     * both classes can sit side by side in variants/ */
    const bool exact = !d->accuracy[0] || strcmp(d->accuracy, EVO_ACCURACY_EXACT) == 0;
    snprintf(buf, n, "%s-%s-dispatch%s%s.cu", d->scope.task ? d->scope.task : "kernel",
             d->scope.arch ? d->scope.arch : "sm", exact ? "" : "-", exact ? "" : d->accuracy);
}
