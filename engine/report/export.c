/* export.c — a stored candidate → a standalone .cu: which candidate (pick), its genome rendered with the config of
 * the run that measured it, checked against the stored template hash and compile key, and written out as one
 * file with a provenance header, the ABI and template text, the variant table and the launcher/self-test harness.
 */
#include "export.h"

#include "candidate.h"
#include "compile.h"
#include "config.h"
#include "task.h"
#include "templates.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALL_ELITES (1 << 30)
#define BEST_LOOKAHEAD 1000 /* hand-written files ranked above the best searched kernel that --best passes over */

/* ---- picking the candidate ---- */

static bool is_file_candidate(const evo_candidate_rec *c) { return c->genome && strncmp(c->genome, "file:", 5) == 0; }

/* Moves elite e into out; e is left zeroed (evo_store_elites_free accepts that). */
static void take_elite(evo_elite_rec *e, evo_export_src *out)
{
    out->cand = e->cand;
    out->eval = e->eval;
    memset(&e->cand, 0, sizeof e->cand);
    memset(&e->eval, 0, sizeof e->eval);
}

static evo_status take_run(evo_store *st, evo_export_src *out, evo_err *err)
{
    if (out->eval.run_id <= 0)
        return evo_fail(err, EVO_E_USAGE,
                        "%s: candidate %lld (%.8s) was evaluated outside a run; export renders the genome with the "
                        "config of the run that measured it",
                        evo_store_path(st), (long long)out->cand.id, out->cand.key);
    return evo_store_get_run(st, out->eval.run_id, &out->run, err);
}

static evo_status pick_best(evo_store *st, const char *accuracy, evo_export_src *out, evo_err *err)
{
    const char *db = evo_store_path(st);
    int64_t rid = 0;
    evo_status s = evo_store_last_run(st, &rid, err);
    if (s == EVO_E_NOTFOUND)
        return evo_fail(err, EVO_E_NOTFOUND, "%s: no elites yet — no candidate has passed every gate; run `evo run`",
                        db);
    if (s != EVO_OK) return s;
    evo_run_rec scope = {0};
    evo_elite_rec *el = NULL;
    int n = 0, pick = -1;
    s = evo_store_get_run(st, rid, &scope, err);
    if (s == EVO_OK)
        s = evo_store_elites(st, scope.task, scope.arch, scope.shape_set, accuracy, BEST_LOOKAHEAD, &el, &n, err);
    for (int i = 0; s == EVO_OK && i < n && pick < 0; i++)
        if (!is_file_candidate(&el[i].cand) && el[i].eval.run_id > 0) pick = i;
    if (s == EVO_OK && n == 0) {
        /* say which classes do have elites */
        evo_elite_rec *any = NULL;
        int n_any = 0;
        char others[160] = "";
        s = evo_store_elites(st, scope.task, scope.arch, scope.shape_set, NULL, BEST_LOOKAHEAD, &any, &n_any, err);
        for (int i = 0; s == EVO_OK && i < n_any; i++) {
            const char *a = any[i].eval.accuracy ? any[i].eval.accuracy : EVO_ACCURACY_EXACT;
            if (!strstr(others, a)) {
                const size_t l = strlen(others);
                snprintf(others + l, sizeof others - l, "%s--accuracy %s", l ? ", " : "", a);
            }
        }
        evo_store_elites_free(any, n_any);
        if (s == EVO_OK && others[0])
            s = evo_fail(err, EVO_E_NOTFOUND,
                         "%s: no elites of accuracy class %s for %s on %s; the latest run has elites in another "
                         "class (%s)",
                         db, accuracy, scope.task, scope.arch, others);
        else if (s == EVO_OK)
            s = evo_fail(err, EVO_E_NOTFOUND,
                         "%s: no elites yet for %s on %s — no candidate has passed every gate; run `evo run`", db,
                         scope.task, scope.arch);
    } else if (s == EVO_OK && pick < 0) {
        s = evo_fail(err, EVO_E_NOTFOUND,
                     "%s: every elite of %s on %s is a hand-written file checked with `evo check` (standalone "
                     "already); no searched kernel to export",
                     db, scope.task, scope.arch);
    } else if (s == EVO_OK) {
        if (pick > 0)
            snprintf(out->note, sizeof out->note,
                     "passed over %d better-ranked elite%s checked outside a run with `evo check` (the first: %s, "
                     "%.3fx); exported the best searched kernel",
                     pick, pick > 1 ? "s" : "",
                     is_file_candidate(&el[0].cand) ? el[0].cand.genome + 5 : el[0].cand.genome, el[0].eval.fitness);
        take_elite(&el[pick], out);
        s = take_run(st, out, err);
    }
    evo_store_elites_free(el, n);
    evo_store_run_free(&scope);
    return s;
}

/* The candidate's best OK evaluation: in the shape set of the latest run of its task and arch when it has one
 * there, else in any shape set. *found false when it has none. */
static evo_status best_evaluation(evo_store *st, const char *shape_set, evo_export_src *out, bool *found, evo_err *err)
{
    *found = false;
    for (int pass = shape_set ? 0 : 1; pass < 2 && !*found; pass++) {
        evo_elite_rec *el = NULL;
        int n = 0;
        evo_status s = evo_store_elites(st, out->cand.task, out->cand.arch, pass == 0 ? shape_set : NULL, NULL,
                                        ALL_ELITES, &el, &n, err);
        for (int i = 0; s == EVO_OK && i < n && !*found; i++) {
            if (el[i].cand.id != out->cand.id) continue;
            evo_store_eval_free(&out->eval);
            out->eval = el[i].eval;
            memset(&el[i].eval, 0, sizeof el[i].eval);
            *found = true;
        }
        evo_store_elites_free(el, n);
        if (s != EVO_OK) return s;
    }
    return EVO_OK;
}

static evo_status pick_by_id(evo_store *st, const char *id, evo_cand_ref how, evo_export_src *out, evo_err *err)
{
    const char *db = evo_store_path(st);
    evo_status s = evo_store_find_candidate(st, id, how, &out->cand, &out->taken, err);
    if (s != EVO_OK) return s;
    const evo_candidate_rec *c = &out->cand;
    if (is_file_candidate(c))
        return evo_fail(err, EVO_E_USAGE,
                        "%s: candidate %lld (%.8s) is %s, a hand-written kernel checked with `evo check`: that file "
                        "is standalone already; export writes searched genomes",
                        db, (long long)c->id, c->key, c->genome + 5);
    evo_run_rec scope = {0};
    int64_t rid = 0;
    s = evo_store_last_run_matching(st, c->task, c->arch, &rid, err);
    if (s == EVO_OK)
        s = evo_store_get_run(st, rid, &scope, err);
    else if (s == EVO_E_NOTFOUND)
        s = EVO_OK;
    bool found = false;
    if (s == EVO_OK) s = best_evaluation(st, scope.shape_set, out, &found, err);
    if (s == EVO_OK && !found) {
        char latest[160] = "";
        evo_eval_rec last = {0};
        bool any = false;
        if (scope.shape_set) s = evo_store_find_evaluation(st, c->id, scope.shape_set, NULL, 0, &last, &any, err);
        if (s == EVO_OK && any && last.run_id > 0)
            snprintf(latest, sizeof latest, " (latest: %s in run %lld generation %d)", evo_verdict_name(last.verdict),
                     (long long)last.run_id, last.generation);
        else if (s == EVO_OK && any)
            snprintf(latest, sizeof latest, " (latest: %s)", evo_verdict_name(last.verdict));
        evo_store_eval_free(&last);
        if (s == EVO_OK)
            s = evo_fail(err, EVO_E_NOTFOUND,
                         "%s: candidate %lld (%.8s) has no evaluation that passed every gate%s; only correct, timed "
                         "kernels are exported",
                         db, (long long)c->id, c->key, latest);
    }
    evo_store_run_free(&scope);
    return s == EVO_OK ? take_run(st, out, err) : s;
}

evo_status evo_export_pick(evo_store *st, const char *id, evo_cand_ref how, const char *accuracy, evo_export_src *out,
                           evo_err *err)
{
    memset(out, 0, sizeof *out);
    evo_status s =
        id ? pick_by_id(st, id, how, out, err) : pick_best(st, accuracy ? accuracy : EVO_ACCURACY_EXACT, out, err);
    if (s != EVO_OK) evo_export_src_free(out);
    return s;
}

void evo_export_src_free(evo_export_src *s)
{
    if (!s) return;
    evo_store_candidate_free(&s->cand);
    evo_store_eval_free(&s->eval);
    evo_store_run_free(&s->run);
    memset(s, 0, sizeof *s);
}

void evo_export_default_name(const evo_export_src *src, char *buf, size_t n)
{
    snprintf(buf, n, "%s-%s-%.8s.cu", src->cand.task ? src->cand.task : "kernel",
             src->cand.arch ? src->cand.arch : "sm", src->cand.key ? src->cand.key : "");
}

/* ---- helpers for a task's export body (export.h) ---- */

void evo_export_append_template(evo_str *o, const char *text, const char *header)
{
    char inc[160];
    const int inc_len = snprintf(inc, sizeof inc, "#include \"%s\"", header);
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        const size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len == (size_t)inc_len && strncmp(p, inc, len) == 0)
            evo_str_appendf(o, "/* #include \"%s\": inlined above */", header);
        else
            evo_str_appendn(o, p, len);
        if (eol) evo_str_append(o, "\n");
        p += len + (eol ? 1 : 0);
    }
    if (o->len && o->p[o->len - 1] != '\n') evo_str_append(o, "\n");
}

bool evo_export_define(const char *text, const char *name, char *out, size_t n)
{
    const size_t nlen = strlen(name);
    for (const char *l = text; *l;) {
        if (strncmp(l, "#define ", 8) == 0 && strncmp(l + 8, name, nlen) == 0 && strncmp(l + 8 + nlen, " \"", 2) == 0) {
            const char *v = l + 8 + nlen + 2, *q = v;
            while (*q && *q != '"' && *q != '\n') q++;
            if (*q != '"' || (size_t)(q - v) >= n) return false;
            memcpy(out, v, (size_t)(q - v));
            out[q - v] = '\0';
            return true;
        }
        const char *nl = strchr(l, '\n');
        l = nl ? nl + 1 : l + strlen(l);
    }
    return false;
}

void evo_export_nvcc_arch(const char *arch, char *buf, size_t n)
{
    const size_t len = strlen(arch);
    if (len > 3 && (arch[len - 1] == 'a' || arch[len - 1] == 'f') && strncmp(arch, "sm_", 3) == 0)
        snprintf(buf, n, "-gencode=arch=compute_%s,code=%s", arch + 3, arch);
    else
        snprintf(buf, n, "-arch=%s", arch);
}

/* text, each line `#include "NAME"` of an embedded file (templates.h) replaced by that file's text: the harness may
 * share code with evo (attention's self-test runs the gate's FP8 model) and the file stays standalone. */
void evo_export_append_inlined(evo_str *o, const char *text)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        char name[128];
        const char *inc = NULL;
        if (sscanf(line, "#include \"%127[^\"]\"", name) == 1 && evo_template_get(name, &inc, NULL, NULL) == EVO_OK) {
            evo_str_appendf(o, "/* ==== %s, inlined ==== */\n", name);
            evo_str_append(o, inc);
            evo_str_appendf(o, "/* ==== end of %s ==== */\n", name);
        } else {
            evo_str_appendn(o, line, len);
        }
        line += len;
    }
}

evo_status evo_export_assemble(const evo_export_ctx *x, const char *abi, const char *harness, const char *what,
                               void (*header)(evo_str *o, const evo_export_ctx *x),
                               void (*genome)(evo_str *o, const evo_export_ctx *x), evo_str *o, evo_err *err)
{
    const char *abi_text = NULL, *harness_text = NULL;
    evo_status s = evo_template_get(abi, &abi_text, NULL, err);
    if (s == EVO_OK) s = evo_template_get(harness, &harness_text, NULL, err);
    if (s != EVO_OK) return s;
    header(o, x);
    evo_str_appendf(o, "\n#include <cuda_runtime.h>\n\n/* ==== %s, verbatim ==== */\n", abi);
    evo_str_append(o, abi_text);
    evo_str_appendf(o, "\n/* ==== %s, verbatim but for its #include of the header above ==== */\n",
                    x->prog->program_name[0] ? x->prog->program_name : x->cfg->task_ops->template_file);
    evo_export_append_template(o, x->prog->source, abi);
    genome(o, x);
    evo_str_appendf(o, "\n/* ==== launcher and self-test, the same in every exported %s (%s) ==== */\n", what, harness);
    evo_export_append_inlined(o, harness_text);
    return EVO_OK;
}

void evo_export_append_cstring(evo_str *o, const char *s)
{
    evo_str_append(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            evo_str_appendf(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            evo_str_appendf(o, "\\%03o", (unsigned char)*s);
        else
            evo_str_appendn(o, s, 1);
    }
    evo_str_append(o, "\"");
}

static void fmt_num(char *buf, size_t n, const char *fmt, double v)
{
    if (!isfinite(v) || v <= 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt, v);
}

const evo_shape_result *evo_export_result_for(const evo_eval_rec *e, const evo_shape *sh)
{
    char name[64];
    evo_shape_format(sh, name, sizeof name);
    for (int i = 0; i < e->n_shapes; i++)
        if (strcmp(e->shapes[i].shape, name) == 0) return &e->shapes[i];
    return NULL;
}

void evo_export_provenance_begin(evo_str *o, const evo_export_ctx *x)
{
    const evo_candidate_rec *c = &x->src->cand;
    evo_str_appendf(o, " *   genome        %s\n", c->genome);
    evo_str_appendf(o, " *   key           %s (candidate %lld)\n", c->key, (long long)c->id);
}

/* Stored text (a config's path, a GPU's name) as it may stand inside the provenance comment: control characters
 * escaped and no "*" "/" pair that would end the comment early. */
static evo_shown in_comment(const char *text)
{
    evo_shown r = evo_show(text);
    for (char *p = strstr(r.s, "*/"); p; p = strstr(p, "*/")) *p = '+';
    return r;
}

void evo_export_provenance_end(evo_str *o, const evo_export_ctx *x, const char *errors_are)
{
    const evo_candidate_rec *c = &x->src->cand;
    const evo_eval_rec *e = &x->src->eval;
    const evo_run_rec *r = &x->src->run;
    const evo_config *cfg = x->cfg;
    evo_str_appendf(o, " *   template      %s, SHA-256 %s\n", x->prog->program_name, c->template_hash);
    evo_str_appendf(
        o, " *   compiled by   NVRTC %s with %s (nvcc needs none of these%s)\n", c->nvrtc_version, x->options,
        cfg->compile.extra_options && *cfg->compile.extra_options ? "; pass the config's extra options to it yourself"
                                                                  : "");
    evo_str_appendf(o, " *   key check     %s\n", x->key_check);
    evo_str_appendf(o, " *   measured on   %s, driver %s, %s, run %lld generation %d, by evo %s\n",
                    in_comment(e->gpu ? e->gpu : (r->gpu ? r->gpu : "?")).s, r->driver ? r->driver : "?",
                    e->created_at ? e->created_at : "?", (long long)r->id, e->generation,
                    r->evo_version ? r->evo_version : "?");
    evo_str_appendf(o, " *   config        %s, as stored with run %lld\n",
                    in_comment(r->config_path ? r->config_path : "?").s, (long long)r->id);
    evo_str_appendf(o, " *   exported      %s by evo %s\n", x->exported_at, EVO_VERSION);
    evo_str_appendf(o, " *   accuracy      class %s (gate version %d)\n",
                    e->accuracy ? e->accuracy : EVO_ACCURACY_EXACT, e->gate > 0 ? e->gate : 1);
    evo_str_appendf(o, " *   fitness       %.3fx: %s of baseline time / this kernel's time\n", e->fitness,
                    evo_fitness_describe(cfg->fitness));
    evo_str_appendf(o, " *\n *   %-28s %10s %16s %8s %8s %9s %9s %10s\n", "shape", "median µs", "p10..p90 µs",
                    cfg->task_ops->rate_unit, "speedup", "rel-L2", "max-abs", "e2e rel-L2");
    double worst_rel = 0, worst_abs = 0;
    for (int i = 0; i < e->n_shapes; i++) {
        const evo_shape_result *s = &e->shapes[i];
        char med[32], p10[32], p90[32], spread[72], tf[32], sp[32];
        fmt_num(med, sizeof med, "%.2f", s->median_us);
        fmt_num(p10, sizeof p10, "%.2f", s->p10_us);
        fmt_num(p90, sizeof p90, "%.2f", s->p90_us);
        snprintf(spread, sizeof spread, "%s..%s", p10, p90);
        fmt_num(tf, sizeof tf, "%.1f", s->rate);
        fmt_num(sp, sizeof sp, "%.3fx", s->speedup);
        evo_str_appendf(o, " *   %-28s %9s %15s %8s %8s %9.2e %9.2e %10.2e\n", s->shape, med, spread, tf, sp, s->rel_l2,
                        s->max_abs, s->e2e_rel_l2);
        if (s->rel_l2 > worst_rel) worst_rel = s->rel_l2;
        if (s->max_abs > worst_abs) worst_abs = s->max_abs;
    }
    evo_str_appendf(o,
                    " *   errors: %s;\n"
                    " *   worst over the timed shapes: rel-L2 %.2e, max-abs %.2e",
                    errors_are, worst_rel, worst_abs);
    cJSON *d = e->detail ? cJSON_Parse(e->detail) : NULL;
    const cJSON *wr = d ? cJSON_GetObjectItemCaseSensitive(d, "worst_rel_l2") : NULL;
    const cJSON *nc = d ? cJSON_GetObjectItemCaseSensitive(d, "cases_checked") : NULL;
    if (cJSON_IsNumber(wr) && cJSON_IsNumber(nc))
        evo_str_appendf(o, "; over all %d correctness cases: rel-L2 %.2e", (int)nc->valuedouble, wr->valuedouble);
    cJSON_Delete(d);
    const evo_tolerance *t = &cfg->correctness.tol;
    if (e->accuracy && strcmp(e->accuracy, EVO_ACCURACY_EXACT) != 0) {
        evo_str_appendf(o, "\n *   tolerances: the gate of accuracy class %s, fixed by the task (docs/templates.md)\n",
                        e->accuracy);
        return;
    }
    evo_str_appendf(
        o,
        "\n *   tolerances: rel-L2 <= %g; an element passes when |out - ref| <= %g x RMS(ref) + %g x |ref|;\n"
        " *   fraction of elements allowed to fail that: %g\n",
        t->rel_l2, t->atol, t->rtol, t->max_frac_over);
}

/* Renders the genome and checks it is what was measured: the same template text, and (when this machine's NVRTC
 * build is the one that compiled it) the same compile key. */
static evo_status render_checked(const evo_export_src *src, const evo_config *cfg, const evo_task *task,
                                 evo_program *prog, char *options, size_t options_len, char *key_check,
                                 size_t key_check_len, evo_export_out *out, evo_err *err)
{
    const evo_candidate_rec *c = &src->cand;
    evo_genome g;
    evo_status s = evo_genome_parse(cfg->space, c->genome, &g, err);
    if (s != EVO_OK)
        return evo_failv_prefix(err, EVO_E_DB, "candidate %lld's genome does not fit the config of run %lld",
                                (long long)c->id, (long long)src->run.id);
    evo_device_limits lim;
    if (evo_device_limits_for_arch(strncmp(c->arch, "sm_90", 5) == 0 ? "sm_90" : c->arch, &lim, NULL) != EVO_OK)
        evo_device_limits_for_arch("sm_90", &lim, NULL);
    snprintf(lim.arch, sizeof lim.arch, "%s", c->arch);
    s = task->render(cfg, &g, &lim, prog, err);
    const int accuracy = s == EVO_OK && task->genome_accuracy ? task->genome_accuracy(cfg, &g) : 0;
    for (int v = 0; s == EVO_OK && v < prog->n_variants; v++) prog->variants[v].accuracy = accuracy;
    if (s != EVO_OK) return s;
    char hash[65];
    evo_sha256_hex(prog->source, strlen(prog->source), hash);
    if (!c->template_hash || strcmp(hash, c->template_hash) != 0)
        return evo_fail(err, EVO_E_NOTFOUND,
                        "candidate %lld (%.8s) was measured with another version of %s (SHA-256 %.12s..., "
                        "this evo has %.12s...): export it with the evo that measured it",
                        (long long)c->id, c->key, task->template_file, c->template_hash ? c->template_hash : "?", hash);
    const char *opts[32], *exprs[EVO_MAX_VARIANTS];
    char opt_buf[1024];
    const int n_opts = evo_candidate_options(cfg, opt_buf, sizeof opt_buf, opts, (int)EVO_ARRAY_LEN(opts));
    size_t used = 0;
    options[0] = '\0';
    for (int i = 0; i < n_opts && used < options_len; i++)
        used += (size_t)snprintf(options + used, options_len - used, "%s%s", i ? " " : "", opts[i]);
    for (int v = 0; v < prog->n_variants; v++) exprs[v] = prog->variants[v].name_expr;
    evo_compile_header hdr[8];
    const int n_hdr = evo_task_headers(task, hdr, (int)EVO_ARRAY_LEN(hdr));
    const evo_compile_req req = {
        .source = prog->source,
        .program_name = prog->program_name,
        .name_exprs = exprs,
        .n_name_exprs = prog->n_variants,
        .headers = hdr,
        .n_headers = n_hdr,
        .arch = prog->arch[0] ? prog->arch : c->arch,
        .options = opts,
        .n_options = n_opts,
        .timeout_s = cfg->compile.timeout_s,
    };
    char compile_key[65], key[65];
    s = evo_compile_key(&req, compile_key, err);
    if (s != EVO_OK) return s;
    evo_candidate_key(task, cfg->space, &g, compile_key, key);
    if (strcmp(key, c->key) == 0) {
        snprintf(key_check, key_check_len, "the compile key recomputed at export equals the stored one");
    } else {
        snprintf(key_check, key_check_len,
                 "the compile key recomputed at export differs (NVRTC build or ABI header of the exporting evo)");
        snprintf(out->warning, sizeof out->warning,
                 "the compile key recomputed here (%.8s) differs from the stored one (%.8s): this machine's NVRTC "
                 "build (NVRTC %s here, %s when measured) or evo's ABI header is not the one that compiled it; the "
                 "template text and genome are the measured ones",
                 key, c->key, evo_nvrtc_version(), c->nvrtc_version ? c->nvrtc_version : "?");
    }
    return EVO_OK;
}

evo_status evo_export_entry_render(evo_export_entry *e, char *warning, size_t warning_len, evo_err *err)
{
    const evo_candidate_rec *c = &e->src.cand;
    const evo_run_rec *run = &e->src.run;
    if (!run->config_text || !*run->config_text)
        return evo_fail(err, EVO_E_DB, "run %lld stored no config text; candidate %lld cannot be rendered without it",
                        (long long)run->id, (long long)c->id);
    char name[96];
    snprintf(name, sizeof name, "%s", run->config_path ? run->config_path : "stored config");
    evo_status s = evo_config_parse(name, run->config_text, strlen(run->config_text), &e->cfg, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "the config stored with run %lld", (long long)run->id);
    if (!c->task || strcmp(c->task, e->cfg->task) != 0)
        return evo_fail(err, EVO_E_DB, "candidate %lld is of task '%s' but run %lld searched '%s'", (long long)c->id,
                        c->task ? c->task : "?", (long long)run->id, e->cfg->task);
    evo_export_out tmp = {0};
    s = render_checked(&e->src, e->cfg, e->cfg->task_ops, &e->prog, e->options, sizeof e->options, e->key_check,
                       sizeof e->key_check, &tmp, err);
    if (s == EVO_OK && warning && tmp.warning[0]) snprintf(warning, warning_len, "%s", tmp.warning);
    return s;
}

evo_status evo_export_render(const evo_export_src *src, const char *exported_at, evo_export_out *out, evo_err *err)
{
    memset(out, 0, sizeof *out);
    const evo_candidate_rec *c = &src->cand;
    const evo_run_rec *run = &src->run;
    if (!run->config_text || !*run->config_text)
        return evo_fail(err, EVO_E_DB, "run %lld stored no config text; candidate %lld cannot be rendered without it",
                        (long long)run->id, (long long)c->id);
    evo_config *cfg = NULL;
    char name[96];
    snprintf(name, sizeof name, "%s", run->config_path ? run->config_path : "stored config");
    evo_status s = evo_config_parse(name, run->config_text, strlen(run->config_text), &cfg, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "the config stored with run %lld", (long long)run->id);
    /* The genome as the run's space writes it: a text stored before knobs had conditions lists inactive knobs too
     * (space.h); the file names the genome without them. */
    evo_export_src view = *src;
    char canonical[EVO_GENOME_TEXT_MAX];
    evo_genome g;
    if (evo_space_has_conditions(cfg->space) && c->genome &&
        evo_genome_parse(cfg->space, c->genome, &g, NULL) == EVO_OK) {
        evo_genome_format(cfg->space, &g, canonical, sizeof canonical);
        view.cand.genome = canonical;
        src = &view;
        c = &src->cand;
    }
    const evo_task *task = cfg->task_ops;
    evo_program prog = {0};
    char options[1024], key_check[160], file_name[160], now[32];
    if (!task->export_body) {
        s = evo_fail(err, EVO_E_USAGE, "task '%s' has no standalone export; run %lld searched it", task->name,
                     (long long)run->id);
    } else if (!c->task || strcmp(c->task, cfg->task) != 0) {
        s = evo_fail(err, EVO_E_DB, "candidate %lld is of task '%s' but run %lld searched '%s'", (long long)c->id,
                     c->task ? c->task : "?", (long long)run->id, cfg->task);
    }
    if (s == EVO_OK)
        s = render_checked(src, cfg, task, &prog, options, sizeof options, key_check, sizeof key_check, out, err);
    if (s == EVO_OK) {
        if (!exported_at) {
            evo_utc_iso8601(now);
            exported_at = now;
        }
        evo_export_default_name(src, file_name, sizeof file_name);
        snprintf(out->genome, sizeof out->genome, "%s", src->cand.genome ? src->cand.genome : "");
        const evo_export_ctx x = {src, cfg, &prog, options, key_check, exported_at, file_name};
        evo_str o = {0};
        s = task->export_body(&x, &o, err);
        if (s == EVO_OK) out->text = evo_str_take(&o);
        EVO_ASSERT(s != EVO_OK || (out->text && out->text[0])); /* a task's body is never empty */
        evo_export_nvcc_arch(prog.arch[0] ? prog.arch : src->cand.arch, out->nvcc_arch, sizeof out->nvcc_arch);
        evo_str_free(&o);
    }
    evo_program_free(&prog);
    evo_config_free(cfg);
    if (s != EVO_OK) evo_export_out_free(out);
    return s;
}

void evo_export_out_free(evo_export_out *o)
{
    if (!o) return;
    free(o->text);
    o->text = NULL;
}
