/* cmd_check.c — `evo check FILE.cu`: a hand-written kernel (the task's ABI header, its *_abi.h under tasks/;
 * see docs/templates.md) through the same gates as every candidate, timed against the config's baseline genome on the
 * same GPU; --retime N times it N times more in the same worker and reports how far the figures move. Without a
 * GPU the compile gate still runs and prints its log. Exit 0 when it passes every gate, 1 for any other verdict
 * (or no GPU), 2 when the file does not compile. */
#include "candidate.h"
#include "cli.h"
#include "compile.h"
#include "cudrv.h"
#include "evaluate.h"
#include "noise.h"
#include "paths.h"
#include "sanitize.h"
#include "store.h"
#include "templates.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --json: every outcome goes here, printed once at the end (check_json_print): one object for one file, an array
 * for several, and an object with "error" when the command failed for another reason than its files' verdicts. */
static cJSON *g_json;
static bool g_json_verdicts; /* the status is the files' verdicts (rejected, does not compile, no GPU), not an error */
static bool g_json_many;     /* several files: an array, even when only one got a result */

/* A file that does not compile, as JSON: the file, the verdict, why, and the compile result with its log. */
static void json_compile_failure(const char *file, const evo_compile_result *cr, const char *msg)
{
    if (!g_json) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddStringToObject(o, "verdict", evo_verdict_name(EVO_V_COMPILE_FAIL));
    cJSON_AddStringToObject(o, "error", msg);
    if (cr) cJSON_AddItemToObject(o, "compile", evo_compile_result_json(cr, true));
    cJSON_AddItemToArray(g_json, o);
}

/* The first few error lines of a compile log, for the message. */
static void log_errors(const char *log, char *out, size_t n)
{
    size_t len = 0;
    int lines = 0;
    out[0] = '\0';
    for (const char *p = log; *p && lines < 4;) {
        const char *eol = strchr(p, '\n');
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        if (memmem(p, l, "error", 5) && len + l + 2 < n) {
            len += (size_t)snprintf(out + len, n - len, "\n  %.*s", (int)l, p);
            lines++;
        }
        p += l + (eol ? 1 : 0);
    }
}

/* --sanitize: the tools, the sanitizer, and what it found for the file at hand. */
typedef struct {
    const char *tools[EVO_SANITIZE_MAX_TOOLS];
    int n_tools; /* 0: no --sanitize */
    char *sanitizer;
    evo_sanitize_result res[EVO_SANITIZE_MAX_TOOLS];
    int n_res;  /* results for the current file; 0 when it was not run under the sanitizer */
    bool found; /* some file had errors: the reports are kept */
} sanitize_ctx;

static bool sanitize_clean(const sanitize_ctx *z)
{
    for (int t = 0; t < z->n_res; t++)
        if (!z->res[t].clean) return false;
    return true;
}

/* What --retime N measured: per shape the spread of the N medians, per round the fitness, their CV. */
typedef struct {
    int rounds, n_shapes;
    char method[16];
    double med_min[EVO_MAX_SHAPES], med_max[EVO_MAX_SHAPES], med_mid[EVO_MAX_SHAPES], spread[EVO_MAX_SHAPES];
    double base_spread[EVO_MAX_SHAPES];
    double fitness[EVO_PROTO_MAX_RETIME];
    double fit_mean, fit_cv, worst_spread, cost_s;
} retime_summary;

static double half_range(const double *x, int n, double *lo, double *hi, double *mid)
{
    double a = INFINITY, b = -INFINITY, sorted[EVO_PROTO_MAX_RETIME] = {0};
    for (int i = 0; i < n; i++) a = fmin(a, x[i]), b = fmax(b, x[i]), sorted[i] = x[i];
    evo_noise_stats st;
    evo_noise_summarize(sorted, n, &st);
    if (lo) *lo = a, *hi = b, *mid = st.median;
    return a > 0 ? (b - a) / (b + a) : NAN; /* +-: every value within (mid +- this) of the range's centre */
}

static bool summarize_retime(const char *detail, evo_fitness kind, retime_summary *out)
{
    memset(out, 0, sizeof *out);
    cJSON *d = cJSON_Parse(detail ? detail : "{}");
    const cJSON *rt = cJSON_GetObjectItem(d, "retime"), *rounds = cJSON_GetObjectItem(rt, "rounds");
    const cJSON *m = cJSON_GetObjectItem(rt, "method");
    if (cJSON_IsString(m)) snprintf(out->method, sizeof out->method, "%s", m->valuestring);
    const int n = cJSON_GetArraySize(rounds);
    double med[EVO_MAX_SHAPES][EVO_PROTO_MAX_RETIME], base[EVO_MAX_SHAPES][EVO_PROTO_MAX_RETIME],
        cost[EVO_PROTO_MAX_RETIME];
    for (int k = 0; k < n && k < EVO_PROTO_MAX_RETIME; k++) {
        const cJSON *r = cJSON_GetArrayItem(rounds, k);
        const cJSON *c = cJSON_GetObjectItem(r, "median_us"), *b = cJSON_GetObjectItem(r, "baseline_us");
        const int ns = cJSON_GetArraySize(c);
        if (ns < 1 || ns > EVO_MAX_SHAPES || cJSON_GetArraySize(b) != ns) break;
        double log_sum = 0, worst = INFINITY;
        for (int i = 0; i < ns; i++) {
            med[i][k] = cJSON_GetArrayItem(c, i)->valuedouble;
            base[i][k] = cJSON_GetArrayItem(b, i)->valuedouble;
            const double sp = base[i][k] / med[i][k];
            log_sum += log(sp), worst = fmin(worst, sp);
        }
        out->fitness[k] = kind == EVO_FITNESS_WORST ? worst : exp(log_sum / ns);
        const cJSON *t = cJSON_GetObjectItem(r, "time_s");
        cost[k] = cJSON_IsNumber(t) ? t->valuedouble : 0;
        out->n_shapes = ns;
        out->rounds = k + 1;
    }
    cJSON_Delete(d);
    if (out->rounds < 1) return false;
    for (int i = 0; i < out->n_shapes; i++) {
        out->spread[i] = half_range(med[i], out->rounds, &out->med_min[i], &out->med_max[i], &out->med_mid[i]);
        out->base_spread[i] = half_range(base[i], out->rounds, NULL, NULL, NULL);
        out->worst_spread = fmax(out->worst_spread, out->spread[i]);
    }
    evo_noise_stats f, c;
    evo_noise_summarize(out->fitness, out->rounds, &f);
    evo_noise_summarize(cost, out->rounds, &c);
    out->fit_mean = f.mean;
    out->fit_cv = f.mean > 0 ? f.sd / f.mean : NAN;
    out->cost_s = c.median;
    return true;
}

static void print_retime(const evo_result *r, evo_fitness kind, const retime_summary *t)
{
    printf("  re-timed %d times in one worker (timing.method %s; the baseline re-timed in each round):\n", t->rounds,
           t->method);
    printf("  %-30s %10s %19s %10s %14s\n", "shape", "median us", "min..max us", "spread", "baseline spread");
    for (int i = 0; i < t->n_shapes && i < r->n_shapes; i++) {
        char range[40];
        snprintf(range, sizeof range, "%.2f..%.2f", t->med_min[i], t->med_max[i]);
        printf("  %-30s %10.2f %19s %8.2f %% %12.2f %%\n", r->shapes[i].shape, t->med_mid[i], range, 100 * t->spread[i],
               100 * t->base_spread[i]);
    }
    printf("  fitness (%s) per round:", evo_fitness_describe(kind));
    for (int k = 0; k < t->rounds; k++) printf(" %.4f", t->fitness[k]);
    printf("\n  fitness mean %.4f, CV %.3f %%; worst shape spread +-%.2f %%; timing cost per candidate %.3f s\n",
           t->fit_mean, 100 * t->fit_cv, 100 * t->worst_spread, t->cost_s);
}

static void print_result(const char *file, const evo_result *r, const evo_task *task, evo_fitness kind,
                         const sanitize_ctx *z, bool json)
{
    retime_summary rt;
    const bool retimed = summarize_retime(r->detail, kind, &rt);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "verdict", evo_verdict_name(r->verdict));
        if (isfinite(r->fitness)) cJSON_AddNumberToObject(o, "speedup_vs_baseline", r->fitness);
        cJSON_AddStringToObject(o, "fitness", kind == EVO_FITNESS_WORST ? "worst" : "geomean");
        cJSON_AddStringToObject(o, "gpu", r->gpu);
        if (isfinite(r->fitness_lo)) {
            cJSON_AddNumberToObject(o, "speedup_lo", r->fitness_lo);
            cJSON_AddNumberToObject(o, "speedup_hi", r->fitness_hi);
        }
        if (retimed) {
            cJSON *t = cJSON_AddObjectToObject(o, "retime_summary");
            cJSON_AddNumberToObject(t, "rounds", rt.rounds);
            cJSON_AddStringToObject(t, "method", rt.method);
            cJSON_AddNumberToObject(t, "fitness_mean", rt.fit_mean);
            cJSON_AddNumberToObject(t, "fitness_cv", rt.fit_cv);
            cJSON_AddNumberToObject(t, "worst_spread", rt.worst_spread);
            cJSON_AddNumberToObject(t, "cost_s", rt.cost_s);
            cJSON *sp = cJSON_AddArrayToObject(t, "spread"), *bs = cJSON_AddArrayToObject(t, "baseline_spread");
            for (int i = 0; i < rt.n_shapes; i++) {
                cJSON_AddItemToArray(sp, cJSON_CreateNumber(rt.spread[i]));
                cJSON_AddItemToArray(bs, cJSON_CreateNumber(rt.base_spread[i]));
            }
        }
        cJSON *d = cJSON_Parse(r->detail ? r->detail : "{}");
        cJSON_AddItemToObject(o, "detail", d ? d : cJSON_CreateObject());
        cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
        for (int i = 0; i < r->n_shapes; i++) {
            cJSON *j = evo_json_shape_result(&r->shapes[i], task);
            cJSON_AddItemToArray(shapes, j);
        }
        if (z->n_tools) {
            cJSON *san = cJSON_AddArrayToObject(o, "sanitize");
            for (int t = 0; t < z->n_res; t++) {
                const evo_sanitize_result *x = &z->res[t];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "tool", x->tool);
                cJSON_AddBoolToObject(j, "clean", x->clean);
                cJSON_AddNumberToObject(j, "errors", x->errors);
                cJSON_AddStringToObject(j, "verdict", evo_verdict_name(x->verdict));
                if (x->why[0]) cJSON_AddStringToObject(j, "why", x->why);
                cJSON_AddStringToObject(j, "report", x->report);
                cJSON_AddItemToArray(san, j);
            }
        }
        cJSON_AddItemToArray(g_json, o);
        return;
    }
    printf("%s: %s on %s", evo_show(file).s, evo_verdict_name(r->verdict), r->gpu);
    if (isfinite(r->fitness)) printf(", %.3fx the baseline genome (%s)", r->fitness, evo_fitness_describe(kind));
    if (isfinite(r->fitness_lo)) printf(" [95%% interval %.3f..%.3f]", r->fitness_lo, r->fitness_hi);
    if (r->verdict == EVO_V_REGRESSED)
        printf("\n  correct, but slower than the baseline on too many shapes for a search to keep it");
    printf("\n");
    cJSON *d = cJSON_Parse(r->detail ? r->detail : "{}");
    const cJSON *reason = cJSON_GetObjectItem(d, "reason");
    if (cJSON_IsString(reason)) {
        printf("  reason: %s\n", reason->valuestring);
        const cJSON *c = cJSON_GetObjectItem(d, "case");
        if (c) {
            char *t = cJSON_PrintUnformatted(c);
            printf("  case:   %s\n", t);
            free(t);
        }
    }
    cJSON_Delete(d);
    if (r->n_shapes && r->shapes[0].median_us > 0) {
        printf("  %-30s %10s %19s %10s %8s %8s %9s %10s %10s\n", "shape", "median us", "p10..p90 us", "baseline",
               "speedup", task->rate_unit, "rel-L2", "max-abs", "e2e rel-L2");
        for (int i = 0; i < r->n_shapes; i++) {
            const evo_shape_result *s = &r->shapes[i];
            char range[32];
            snprintf(range, sizeof range, "%.2f..%.2f", s->p10_us, s->p90_us);
            printf("  %-30s %10.2f %19s %10.2f %7.3fx %8.1f %9.2e %10.2e %10.2e\n", s->shape, s->median_us, range,
                   s->baseline_us, s->speedup, s->rate, s->rel_l2, s->max_abs, s->e2e_rel_l2);
        }
    }
    if (retimed) print_retime(r, kind, &rt);
    if (z->n_tools && z->n_res) {
        char summary[2400];
        evo_sanitize_summary(z->res, z->n_res, summary, sizeof summary);
        printf("  compute-sanitizer: %s\n", summary);
        for (int t = 0; t < z->n_res; t++)
            if (!z->res[t].clean) printf("  %s report: %s\n", z->res[t].tool, z->res[t].report);
    } else if (z->n_tools) {
        printf("  compute-sanitizer: not run (the kernel did not get to run its cases)\n");
    }
}

/* The verdicts after which a kernel is worth a sanitizer run: it launched on every case or failed one. */
static bool ran(evo_verdict v)
{
    return v == EVO_V_OK || v == EVO_V_REGRESSED || v == EVO_V_INCORRECT || v == EVO_V_CRASHED;
}

/* The compile gate: the file compiled for arch into c->cr (c->key, names set). EVO_E_CONFIG when it does not
 * compile, with the first error lines in the message; c->cr is then freed. */
static evo_status compile_file(const evo_config *cfg, const char *arch, const char *file, evo_candidate *c,
                               evo_err *err)
{
    char *source = NULL;
    size_t len = 0;
    evo_status s = evo_read_file(file, &source, &len, err);
    if (s != EVO_OK) return evo_failv_prefix(err, EVO_E_USAGE, "check");
    if (strlen(source) != len) { /* the compiler would see only the text before it */
        s = evo_fail(err, EVO_E_CONFIG, "check: %s does not compile: byte %zu is NUL (not a CUDA source file)",
                     evo_show(file).s, strlen(source));
        json_compile_failure(file, NULL, err->msg);
        free(source);
        return s;
    }
    evo_compile_header hdr[8];
    const int n_hdr = evo_task_headers(cfg->task_ops, hdr, (int)EVO_ARRAY_LEN(hdr));
    /* The file's own folder is on the include path, so a kernel may include its helpers; it is also the one folder
     * besides the toolkit's and evo's headers that the compiler may read (sandbox.h), and its working directory. */
    char inc[PATH_MAX + 8], dir[PATH_MAX], given[PATH_MAX];
    snprintf(given, sizeof given, "%s", file);
    char *slash = strrchr(given, '/');
    if (slash) slash == given ? (void)(slash[1] = '\0') : (void)(*slash = '\0');
    if (!realpath(slash ? given : ".", dir)) {
        s = evo_fail(err, EVO_E_USAGE, "check: %s: cannot resolve its folder: %s", evo_show(file).s, strerror(errno));
        free(source);
        return s;
    }
    snprintf(inc, sizeof inc, "-I%s", dir);
    const char *opts[] = {"-std=c++17", inc};
    const char *const read_dirs[] = {dir};
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    evo_compile_req req = {.source = source,
                           .program_name = base,
                           .headers = hdr,
                           .n_headers = n_hdr,
                           .arch = arch,
                           .options = opts,
                           .n_options = 2,
                           .timeout_s = cfg->compile.timeout_s,
                           .limits = evo_config_compile_limits(cfg),
                           .read_dirs = read_dirs,
                           .n_read_dirs = 1};
    memset(c, 0, sizeof *c);
    s = evo_compile(NULL, &req, &c->cr, err);
    free(source);
    if (s != EVO_OK) return s;
    snprintf(c->genome_text, sizeof c->genome_text, "file:%s", base);
    memcpy(c->key, c->cr.key, sizeof c->key);
    snprintf(c->prog.program_name, sizeof c->prog.program_name, "%s", base);
    if (c->cr.outcome != EVO_COMPILE_OK) {
        char lines[1024];
        log_errors(c->cr.log, lines, sizeof lines);
        s = evo_fail(err, EVO_E_CONFIG, "check: %s does not compile (%s)%s", evo_show(file).s,
                     evo_compile_result_why(&c->cr), lines);
        json_compile_failure(file, &c->cr, err->msg);
        evo_compile_result_free(&c->cr);
        return s;
    }
    return EVO_OK;
}

/* Without a GPU: the compile gate's result, what ptxas reported per kernel, and the log. */
static void print_compiled(const char *file, const char *arch, const evo_candidate *c, bool json)
{
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "arch", arch);
        cJSON_AddStringToObject(o, "compile", "ok");
        cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
        for (int j = 0; j < c->cr.n_kernels; j++) {
            const evo_compiled_kernel *k = &c->cr.kernels[j];
            cJSON *jk = cJSON_CreateObject();
            cJSON_AddStringToObject(jk, "name", k->lowered ? k->lowered : k->name_expr);
            cJSON_AddNumberToObject(jk, "registers", k->res.registers);
            cJSON_AddNumberToObject(jk, "smem_bytes", k->res.smem_bytes);
            cJSON_AddNumberToObject(jk, "spill_store_bytes", k->res.spill_store_bytes);
            cJSON_AddNumberToObject(jk, "spill_load_bytes", k->res.spill_load_bytes);
            cJSON_AddNumberToObject(jk, "stack_frame_bytes", k->res.stack_frame_bytes);
            cJSON_AddItemToArray(ks, jk);
        }
        cJSON_AddStringToObject(o, "log", c->cr.log);
        cJSON_AddStringToObject(o, "gpu_gates", "not run: no NVIDIA driver");
        cJSON_AddItemToArray(g_json, o);
        return;
    }
    printf("%s: compiles for %s (%s, %.1f s)\n", evo_show(file).s, arch, c->cr.cache_hit ? "cached" : "NVRTC",
           c->cr.seconds);
    for (int j = 0; j < c->cr.n_kernels; j++) {
        const evo_compiled_kernel *k = &c->cr.kernels[j];
        printf("  %-24s %3d registers, %6d bytes static smem, spill stores %d, loads %d bytes, stack %d bytes\n",
               k->lowered ? k->lowered : k->name_expr, k->res.registers, k->res.smem_bytes, k->res.spill_store_bytes,
               k->res.spill_load_bytes, k->res.stack_frame_bytes);
    }
    printf("  compile log:\n");
    for (const char *p = c->cr.log; p && *p;) {
        const char *eol = strchr(p, '\n');
        const int l = eol ? (int)(eol - p) : (int)strlen(p);
        evo_str line = {0}; /* the log quotes the source: nothing in it may steer the terminal */
        evo_escape_append(&line, p, (size_t)l, false);
        if (l > 0) printf("    %s\n", evo_str_cstr(&line));
        evo_str_free(&line);
        p += l + (eol ? 1 : 0);
    }
}

/* --genome G: a genome of the config's space, built as a search builds it, through the same gates. A genome that
 * does not parse is EVO_E_USAGE; one the build refuses (constraint, can_implement, compile, resources) comes back
 * as that verdict. */
static evo_status check_genome(const evo_config *cfg, evo_evaluator *ev, const char *text, evo_result *r, evo_err *err)
{
    evo_candidate c;
    memset(&c, 0, sizeof c);
    evo_err why = {0};
    if (evo_genome_parse(cfg->space, text, &c.genome, &why) != EVO_OK)
        return evo_fail(err, EVO_E_USAGE, "check: --genome: %s", why.msg);
    evo_build_opts bo = {
        .cfg = cfg, .task = cfg->task_ops, .lim = evo_evaluator_limits(ev), .arch = evo_evaluator_arch(ev)};
    evo_status s = evo_candidates_build(&bo, &c, 1, err);
    if (s == EVO_OK) s = evo_evaluator_run(ev, &c, 1, false, r, NULL, NULL, NULL, err);
    evo_candidate_free(&c);
    return s;
}

/* Compile one kernel file and run it through the gates. Returns EVO_E_CONFIG when it does not compile. */
static evo_status check_one(const evo_config *cfg, evo_evaluator *ev, const char *file, int accuracy, evo_store *st,
                            sanitize_ctx *z, evo_result *r, evo_err *err)
{
    evo_candidate c;
    evo_status s = compile_file(cfg, evo_evaluator_arch(ev), file, &c, err);
    if (s != EVO_OK) return s;
    /* The entry points the config's shapes need (attention: evo_attn_d64, evo_attn_d128), in the task's order. */
    evo_program want = {0};
    s = cfg->task_ops->handwritten(cfg, &want, err);
    if (s != EVO_OK) {
        evo_compile_result_free(&c.cr);
        return s;
    }
    c.verdict = EVO_V_OK;
    for (int at = 0; at < want.n_variants && c.verdict == EVO_V_OK; at++) {
        const char *name = want.variants[at].name_expr;
        int found = -1;
        for (int j = 0; j < c.cr.n_kernels; j++)
            if (c.cr.kernels[j].lowered && !strcmp(c.cr.kernels[j].lowered, name)) found = j;
        if (found < 0) {
            char label[64];
            cfg->task_ops->variant_label(&want.variants[at], label, sizeof label);
            c.verdict = EVO_V_INVALID;
            const int len = snprintf(c.why, sizeof c.why,
                                     "%s defines no extern \"C\" kernel %s (the config's shapes need variant %s)", file,
                                     name, label);
            (void)len; /* a message longer than why is cut, never lost: the file and kernel come first */
            break;
        }
        c.prog.variants[c.prog.n_variants] = want.variants[at]; /* threads 0: the worker reads the geometry */
        c.prog.variants[c.prog.n_variants++].accuracy = accuracy;
        evo_compiled_kernel t = c.cr.kernels[at]; /* kernels[] in variants order, for the request */
        c.cr.kernels[at] = c.cr.kernels[found];
        c.cr.kernels[found] = t;
    }
    evo_program_free(&want);
    c.accuracy = accuracy;
    s = evo_evaluator_run(ev, &c, 1, false, r, NULL, NULL, NULL, err);
    z->n_res = 0;
    if (s == EVO_OK && z->n_tools && c.verdict == EVO_V_OK && ran(r->verdict)) {
        if (!z->sanitizer) s = evo_sanitize_find(NULL, &z->sanitizer, err);
        char label[64];
        snprintf(label, sizeof label, "%.8s", c.key);
        if (s == EVO_OK) s = evo_evaluator_sanitize(ev, &c, z->sanitizer, z->tools, z->n_tools, label, z->res, err);
        if (s == EVO_OK) z->n_res = z->n_tools;
        z->found |= !sanitize_clean(z);
    }
    if (s == EVO_OK && st) {
        evo_candidate_rec cr = {.key = c.key,
                                .task = (char *)cfg->task,
                                .arch = (char *)evo_evaluator_arch(ev),
                                .genome = c.genome_text,
                                .template_hash = "",
                                .options = "",
                                .nvrtc_version = (char *)evo_nvrtc_version(),
                                .registers = -1,
                                .smem_bytes = -1,
                                .spill_bytes = -1,
                                .stack_bytes = -1};
        s = evo_store_put_candidate(st, &cr, err);
        char ss[65];
        evo_config_shape_set_key(cfg, ss);
        evo_eval_rec e = {.candidate_id = cr.id,
                          .generation = -1,
                          .shape_set = ss,
                          .accuracy = (char *)evo_task_accuracy_name(cfg->task_ops, accuracy),
                          .gate = evo_task_gate_version(cfg->task_ops)};
        evo_eval_rec_set_result(&e, r);
        if (s == EVO_OK) s = evo_store_put_evaluation(st, &e, err);
        free(e.created_at);
        if (s == EVO_OK && !sanitize_clean(z)) {
            char summary[1600], reason[1700];
            evo_sanitize_summary(z->res, z->n_res, summary, sizeof summary);
            snprintf(reason, sizeof reason, "compute-sanitizer: %s", summary);
            s = evo_store_demote(st, cr.id, reason, err);
        }
    }
    evo_compile_result_free(&c.cr);
    return s;
}

/* No driver: the compile gate for every file (its log printed), then why the GPU gates did not run. A file that
 * does not compile is EVO_E_CONFIG (exit 2) as on a GPU machine; otherwise EVO_E_NODRIVER. */
static evo_status compile_only(const evo_config *cfg, char **files, int n, bool json, const char *why, evo_err *err)
{
    const char *arch = strcmp(cfg->arch, "auto") == 0 ? "sm_90" : cfg->arch;
    int failed = 0;
    evo_status s = EVO_OK;
    for (int i = 0; i < n && s == EVO_OK; i++) {
        evo_candidate c;
        s = compile_file(cfg, arch, files[i], &c, err);
        if (s == EVO_OK) {
            print_compiled(files[i], arch, &c, json);
            evo_compile_result_free(&c.cr);
        } else if (s == EVO_E_CONFIG && n > 1) {
            if (!json) fprintf(stderr, "evo: %s\n", err->msg);
            failed++;
            s = EVO_OK;
        }
    }
    fflush(stdout);
    g_json_verdicts = s == EVO_OK || s == EVO_E_CONFIG; /* the files' own outcomes */
    if (s != EVO_OK) return s;
    /* a file that does not compile decides the exit status (2) whatever the others did */
    if (failed) return evo_fail(err, EVO_E_CONFIG, "check: %d of %d kernel files do not compile", failed, n);
    return evo_fail(err, EVO_E_NODRIVER,
                    "check: compiled for %s; the GPU gates (device resources, correctness, timing) need an NVIDIA "
                    "GPU: %s. %s",
                    arch, why, EVO_NO_DRIVER_HINT);
}

/* `evo check`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_check[] = {
    {"config", 'c', required_argument, true, "F", "the configuration whose cases, tolerances and baseline apply"},
    {"accuracy", 'C', required_argument, false, "CLASS",
     "the accuracy class the files' arithmetic claims, judged by that class's gate\n"
     "(default exact; attention: exact, fp8 — docs/templates.md, \"Accuracy classes\")"},
    {"genome", 'G', required_argument, false, "G",
     "a genome of the config's space instead of files, built as a search builds it"},
    {"retime", 'R', required_argument, false, "N",
     "then time the kernel and the baseline N more times in the same worker and print\n"
     "how far the figures move: per-shape spread of the medians, fitness CV, timing cost"},
    {"json", 'J', no_argument, false, NULL,
     "machine-readable output: every outcome, errors included, is JSON on stdout"},
    {"db", 'D', required_argument, false, "F", "also store each result in database F (as candidate file:NAME)"},
    {"sanitize", 'Z', optional_argument, false, "[=TOOLS]",
     "then run each kernel that ran under compute-sanitizer (TOOLS: a comma list of\n"
     "memcheck, racecheck, initcheck, synccheck; default memcheck,racecheck); errors\n"
     "reject the kernel, and with --db demote it"},
    {"sanitizer", 'Y', required_argument, false, "PATH",
     "the compute-sanitizer to use (default: on PATH, then $CUDA_HOME/bin)"},
    {0},
};

static evo_status check_files(int argc, char **argv, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("check");
    const char *config_path = NULL, *db_path = NULL, *sanitize = NULL, *sanitizer = NULL;
    const char *genome = NULL, *accuracy = NULL;
    int json = 0, retime = 0;
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_check, longopts, EVO_ARRAY_LEN(longopts));
    optind = 0;
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, ":c:", longopts, NULL)) != -1;) {
        switch (ch) {
            case 'c': config_path = optarg; break;
            case 'J': json = 1; break;
            case 'D': db_path = optarg; break;
            case 'Z': sanitize = optarg ? optarg : EVO_SANITIZE_DEFAULT_TOOLS; break;
            case 'Y': sanitizer = optarg; break;
            case 'G': genome = optarg; break;
            case 'C': accuracy = optarg; break;
            case 'R': {
                char *end;
                const long v = strtol(optarg, &end, 10);
                if (*end || end == optarg || v < 1 || v > EVO_PROTO_MAX_RETIME)
                    return evo_cli_usage_error(self, err, "--retime: '%s' is not a count from 1 to %d", optarg,
                                               EVO_PROTO_MAX_RETIME);
                retime = (int)v;
                break;
            }
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc && !genome) return evo_cli_usage_error(self, err, "give the kernel file(s) to check");
    g_json_many = argc - optind > 1;
    if (genome && optind < argc) return evo_cli_usage_error(self, err, "--genome checks a genome instead of files");
    if (genome && accuracy)
        return evo_cli_usage_error(self, err, "--accuracy is a hand-written file's claim; a genome has its own class");
    if (genome && (sanitize || db_path))
        return evo_cli_usage_error(self, err, "--genome goes without --sanitize and --db (evo run does those)");
    sanitize_ctx z = {.n_tools = 0};
    if (sanitize) {
        evo_err why = {0};
        if (evo_sanitize_parse_tools(sanitize, z.tools, &z.n_tools, &why) != EVO_OK)
            return evo_cli_usage_error(self, err, "%s", why.msg);
    }
    if (sanitizer && !sanitize) return evo_cli_usage_error(self, err, "--sanitizer goes with --sanitize");
    for (int i = optind; i < argc; i++) {
        if (!evo_file_exists(argv[i]))
            return evo_fail(err, EVO_E_USAGE, "check: %s: no such file", evo_show(argv[i]).s);
        evo_status ns = evo_path_check_not_input("check --db", db_path, "the kernel file", argv[i], false, err);
        if (ns == EVO_OK) ns = evo_path_check_not_companion("check: the kernel file", argv[i], "--db", db_path, err);
        if (ns != EVO_OK) return ns;
    }
    evo_config *cfg = NULL;
    evo_status s = evo_cli_config_load(config_path, &cfg, err);
    if (s != EVO_OK) return s;
    const int acc = accuracy ? evo_task_accuracy_find(cfg->task_ops, accuracy) : 0;
    if (acc < 0) {
        char names[128];
        evo_task_accuracy_names(cfg->task_ops, names, sizeof names);
        s = evo_cli_usage_error(self, err, "--accuracy %s: task %s has the classes %s", accuracy, cfg->task, names);
        evo_config_free(cfg);
        return s;
    }
    if (!getenv("EVO_FAKE_WORKER")) {
        const evo_cudrv *cu;
        evo_err why = {0};
        if (evo_cudrv_load(&cu, &why) != EVO_OK && genome) {
            evo_config_free(cfg);
            return evo_fail(err, EVO_E_NODRIVER,
                            "check: %s. evo check --genome runs a kernel: it needs an NVIDIA "
                            "GPU (evo compile --genome compiles one without)",
                            why.msg);
        }
        if (why.msg[0]) {
            s = compile_only(cfg, argv + optind, argc - optind, json, why.msg, err);
            evo_config_free(cfg);
            return s;
        }
    }
    /* A sanitizer that is not there is refused before anything runs. */
    if (sanitize) s = evo_sanitize_find(sanitizer, &z.sanitizer, err);
    if (s != EVO_OK) {
        evo_config_free(cfg);
        return s;
    }
    char work[256];
    snprintf(work, sizeof work, "%s/evo-check-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    evo_evaluator *ev = NULL;
    evo_evaluator_opts eo = {
        .cfg = cfg, .config_path = config_path, .work_dir = work, .full_timing = true, .retime = retime};
    /* The store first: a database evo cannot use is refused before a worker starts. */
    evo_store *st = NULL;
    if (db_path) s = evo_store_open(db_path, EVO_STORE_READWRITE, &st, err);
    if (s == EVO_OK && !json) fprintf(stderr, "starting the GPU worker (inputs and references are made once)...\n");
    if (s == EVO_OK) s = evo_evaluator_open(&eo, &ev, err);
    int rejected = 0, n_files = argc - optind;
    if (s == EVO_OK && genome) {
        evo_result r;
        memset(&r, 0, sizeof r);
        s = check_genome(cfg, ev, genome, &r, err);
        if (s == EVO_OK) {
            char label[EVO_GENOME_TEXT_MAX + 8];
            snprintf(label, sizeof label, "genome %s", genome);
            print_result(label, &r, cfg->task_ops, cfg->fitness, &z, json);
            rejected += r.verdict != EVO_V_OK && r.verdict != EVO_V_REGRESSED;
        }
        evo_result_free(&r);
        n_files = 1;
    }
    int not_compiled = 0;
    for (int i = optind; s == EVO_OK && i < argc; i++) {
        evo_result r;
        memset(&r, 0, sizeof r);
        s = check_one(cfg, ev, argv[i], acc, st, &z, &r, err);
        if (s == EVO_OK) {
            print_result(argv[i], &r, cfg->task_ops, cfg->fitness, &z, json);
            /* REGRESSED is the search's rule against slow candidates; the kernel itself passed every gate. */
            rejected += (r.verdict != EVO_V_OK && r.verdict != EVO_V_REGRESSED) || !sanitize_clean(&z);
        } else if (s == EVO_E_CONFIG && n_files > 1) {
            if (!json) fprintf(stderr, "evo: %s\n", err->msg); /* the other files are still checked */
            not_compiled++;
            s = EVO_OK;
        }
        evo_result_free(&r);
    }
    /* the files' outcomes, a failed compile first: exit 2 when one does not compile, 1 when one is rejected */
    g_json_verdicts = s == EVO_OK || (s == EVO_E_CONFIG && cJSON_GetArraySize(g_json) > 0);
    if (s == EVO_OK && not_compiled)
        s = evo_fail(err, EVO_E_CONFIG, "check: %d of %d kernel files do not compile%s", not_compiled, n_files,
                     rejected ? "; others were rejected" : "");
    else if (s == EVO_OK && rejected)
        s = evo_fail(err, EVO_E_REJECTED, "check: %d of %d kernel file%s rejected", rejected, n_files,
                     n_files == 1 ? "" : "s");
    evo_store_close(st);
    evo_evaluator_close(ev);
    evo_config_free(cfg);
    free(z.sanitizer);
    /* The worker's log is kept when the worker or the GPU failed and it says something (the message then says
     * where), the sanitizer reports when they found errors; anything else leaves nothing behind. */
    if (z.found)
        fprintf(stderr, "evo: sanitizer reports are kept in %s\n", work);
    else
        evo_work_dir_settle(work, s, err);
    return s;
}

/* The JSON of a finished check: the files' results as they are, or, when the command itself failed, an object
 * with the error, its status and exit code, and the results it had so far. */
static void check_json_print(evo_status s, const evo_err *err, bool single)
{
    cJSON *out;
    if (s == EVO_OK || g_json_verdicts) {
        out = single && cJSON_GetArraySize(g_json) == 1 ? cJSON_DetachItemFromArray(g_json, 0) : g_json;
    } else {
        out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "error", err->msg[0] ? err->msg : evo_status_name(s));
        cJSON_AddStringToObject(out, "status", evo_status_name(s));
        cJSON_AddNumberToObject(out, "exit", evo_exit_code(s));
        cJSON_AddItemReferenceToObject(out, "results", g_json);
    }
    char *t = cJSON_Print(out);
    if (t) puts(t);
    free(t);
    if (out != g_json) cJSON_Delete(out);
    fflush(stdout);
}

EVO_CMD(check)
{
    bool json = false; /* known before the options are parsed, so that a usage error is JSON too */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) json |= strcmp(argv[i], "--json") == 0;
    g_json = json ? cJSON_CreateArray() : NULL;
    g_json_verdicts = false;
    g_json_many = false;
    evo_status s = check_files(argc, argv, err);
    if (json) check_json_print(s, err, !g_json_many);
    cJSON_Delete(g_json);
    g_json = NULL;
    return s;
}
