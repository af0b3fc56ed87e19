/* evaluate.c — the "gpu" and "replay" evaluators (see evaluate.h). */
#include "evaluate.h"

#include "aliases.h"
#include "noise.h"
#include "paths.h"
#include "pool.h"
#include "protocol.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVAL_WATCHDOG_S 300.0 /* per candidate; the worker's own per-kernel limit fires long before */

struct evo_evaluator {
    const char *name;
    const evo_config *cfg;
    char arch[16];
    evo_device_limits lim;
    char gpu[128];
    int driver;
    /* gpu */
    evo_pool *pool;
    char *work_dir;
    char *config_path;
    volatile sig_atomic_t *interrupt;
    bool stopped; /* evo_evaluator_stop: nothing more is evaluated */
    evo_candidate baseline;
    char baseline_cubin[4096];
    bool have_baseline_times;
    double baseline_us[EVO_POOL_MAX_WORKERS][EVO_MAX_SHAPES];    /* per worker: speedups use the same GPU's time */
    double baseline_ci[EVO_POOL_MAX_WORKERS][EVO_MAX_SHAPES][2]; /* ... and its interval */
    double best_us[EVO_MAX_SHAPES];
    bool full_timing;
    int retime;
    /* replay */
    evo_store *replay;
    evo_aliases *replay_aliases; /* older texts of the recording's genomes, read in this config's space */
    int replay_delay_ms; /* EVO_REPLAY_DELAY_MS: each lookup takes this long (fault tests kill a replay mid-run) */
    char shape_set[65];
};

int evo_gpu_count(void)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis && *vis) {
        int n = 1;
        for (const char *p = vis; *p; p++) n += *p == ',';
        return n;
    }
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    int n = 0;
    if (d) {
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.') n++;
        closedir(d);
    }
    return n > 0 ? n : 1;
}

void evo_result_score(const evo_config *cfg, evo_result *r)
{
    r->fitness_lo = r->fitness_hi = NAN;
    if (r->verdict != EVO_V_OK) {
        r->fitness = NAN;
        return;
    }
    double log_sum = 0, worst = INFINITY, sp[EVO_MAX_SHAPES], h[EVO_MAX_SHAPES];
    int n = 0, regressed = 0;
    for (int i = 0; i < r->n_shapes; i++) {
        const evo_shape_result *s = &r->shapes[i];
        if (!(s->speedup > 0)) continue;
        log_sum += log(s->speedup);
        worst = fmin(worst, s->speedup);
        sp[n] = s->speedup;
        h[n] = evo_noise_ratio_halfwidth(s->ci_lo_us, s->ci_hi_us, s->baseline_ci_lo_us, s->baseline_ci_hi_us);
        n++;
        if (s->median_us > cfg->regression.slowdown * s->baseline_us) regressed++;
    }
    r->fitness = !n ? NAN : cfg->fitness == EVO_FITNESS_WORST ? worst : exp(log_sum / n);
    if (n < r->n_shapes) r->fitness = NAN; /* a shape without a time has no fitness */
    if (isfinite(r->fitness))
        evo_noise_fitness_interval(sp, h, n, cfg->fitness == EVO_FITNESS_WORST, &r->fitness_lo, &r->fitness_hi);
    if (regressed >= cfg->regression.min_shapes) r->verdict = EVO_V_REGRESSED;
}

void evo_result_from_eval(const evo_eval_rec *e, evo_result *r)
{
    memset(r, 0, sizeof *r);
    r->verdict = e->verdict;
    r->fitness = e->fitness;
    r->fitness_lo = e->fitness_lo;
    r->fitness_hi = e->fitness_hi;
    r->detail = evo_strdup(e->detail ? e->detail : "{}");
    r->n_shapes = e->n_shapes < EVO_MAX_SHAPES ? e->n_shapes : EVO_MAX_SHAPES;
    if (r->n_shapes > 0) memcpy(r->shapes, e->shapes, (size_t)r->n_shapes * sizeof *r->shapes); /* shapes: NULL at 0 */
    r->check_s = e->check_s;
    r->time_s = e->time_s;
    snprintf(r->gpu, sizeof r->gpu, "%s", e->gpu ? e->gpu : "");
}

static void set_detail(evo_result *r, const char *reason, const char *log)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "reason", reason);
    if (log && *log) {
        size_t n = strlen(log);
        cJSON_AddStringToObject(d, "log_tail", n > 2000 ? log + n - 2000 : log);
    }
    free(r->detail);
    r->detail = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
}

/* ---- gpu ---- */

static evo_status write_cubin(evo_evaluator *e, const evo_candidate *c, char *path, size_t n, evo_err *err)
{
    snprintf(path, n, "%s/%s.cubin", e->work_dir, c->key);
    if (evo_file_exists(path)) return EVO_OK;
    return evo_write_file_atomic(path, c->cr.cubin, c->cr.cubin_len, err);
}

static void fill_request(const evo_evaluator *e, const evo_candidate *c, const char *cubin, evo_eval_request *rq)
{
    memset(rq, 0, sizeof *rq);
    snprintf(rq->cubin_path, sizeof rq->cubin_path, "%s", cubin);
    snprintf(rq->program, sizeof rq->program, "%s", c->prog.program_name);
    rq->n_variants = c->prog.n_variants;
    for (int k = 0; k < c->prog.n_variants; k++) {
        const evo_variant *v = &c->prog.variants[k];
        evo_variant *rv = &rq->variants[k];
        *rv = *v;
        const char *sym = k < c->cr.n_kernels && c->cr.kernels[k].lowered ? c->cr.kernels[k].lowered : v->name_expr;
        snprintf(rv->name_expr, sizeof rv->name_expr, "%s", sym);
    }
    rq->check = rq->time = true;
    rq->n_best = e->full_timing ? 0 : e->cfg->n_shapes;
    rq->retime = c == &e->baseline ? 0 : e->retime;
    for (int i = 0; i < e->cfg->n_shapes; i++) rq->best_us[i] = e->best_us[i];
}

typedef struct {
    evo_evaluator *e;
    evo_result *out;      /* per job */
    int *job_cand;        /* job -> candidate index, -1 for baseline jobs */
    evo_result *baseline; /* may be NULL */
    void (*progress)(void *, int, const evo_result *);
    void *ctx;
} run_ctx;

/* The worker's result as it came (the same type), with its own copy of the evidence. */
static void copy_reply(const evo_pool *pool, const evo_pool_done *d, evo_result *r)
{
    const evo_result *w = &d->reply->r;
    *r = *w;
    r->detail = evo_strdup(w->detail ? w->detail : "{}");
    /* With several GPUs each result says which one timed it (its speedups are against that GPU's baseline). */
    if (evo_pool_size(pool) > 1)
        snprintf(r->gpu, sizeof r->gpu, "%.100s (GPU %d)", w->gpu, evo_pool_hello(pool, d->worker)->gpu);
}

static void on_done(void *p, const evo_pool_job *job, const evo_pool_done *d)
{
    run_ctx *rc = p;
    evo_evaluator *e = rc->e;
    (void)job;
    evo_result *r = &rc->out[d->job];
    copy_reply(e->pool, d, r);
    const int w = d->worker;
    if (rc->job_cand[d->job] < 0 && r->verdict == EVO_V_OK) {
        for (int i = 0; i < r->n_shapes; i++) {
            e->baseline_us[w][i] = r->shapes[i].median_us;
            e->baseline_ci[w][i][0] = r->shapes[i].ci_lo_us;
            e->baseline_ci[w][i][1] = r->shapes[i].ci_hi_us;
        }
        e->have_baseline_times = true;
    }
    /* Speedups against this GPU's baseline (a worker restarted since still runs on the same GPU), or against the
     * baseline timed interleaved with the candidate when the worker did that (paired). */
    for (int i = 0; i < r->n_shapes; i++) {
        evo_shape_result *s = &r->shapes[i];
        if (!d->reply->paired || !(s->baseline_us > 0)) {
            s->baseline_us = e->baseline_us[w][i];
            s->baseline_ci_lo_us = e->baseline_ci[w][i][0];
            s->baseline_ci_hi_us = e->baseline_ci[w][i][1];
        }
        s->speedup = s->baseline_us > 0 && s->median_us > 0 ? s->baseline_us / s->median_us : 0;
    }
    evo_result_score(e->cfg, r);
    if (r->verdict == EVO_V_OK)
        for (int i = 0; i < r->n_shapes; i++)
            if (r->shapes[i].median_us > 0 && (e->best_us[i] == 0 || r->shapes[i].median_us < e->best_us[i]))
                e->best_us[i] = r->shapes[i].median_us;
    const int ci = rc->job_cand[d->job];
    if (ci < 0) {
        if (rc->baseline && !rc->baseline->detail) {
            *rc->baseline = *r;
            rc->baseline->detail = evo_strdup(r->detail);
        }
    } else if (rc->progress && !e->stopped) {
        rc->progress(rc->ctx, ci, r);
    }
}

static evo_status gpu_open(evo_evaluator *e, const evo_evaluator_opts *o, evo_err *err)
{
    e->work_dir = evo_strdup(o->work_dir);
    e->interrupt = o->interrupt;
    evo_status s = evo_mkdir_p(e->work_dir, err);
    if (s != EVO_OK) return s;
    if (o->config_path && *o->config_path) {
        e->config_path = evo_strdup(o->config_path);
    } else { /* the workers read the config's own text (built-in, or stored with a resumed run) from here */
        evo_str p = {0};
        evo_str_appendf(&p, "%s/config.yaml", e->work_dir);
        e->config_path = evo_str_take(&p);
        s = evo_write_file_atomic(e->config_path, o->cfg->text, strlen(o->cfg->text), err);
        if (s != EVO_OK) return s;
    }
    int all[EVO_POOL_MAX_WORKERS];
    const int *gpus = o->gpus;
    int n = o->n_gpus;
    if (!gpus) {
        n = evo_gpu_count();
        if (n > EVO_POOL_MAX_WORKERS) n = EVO_POOL_MAX_WORKERS;
        for (int i = 0; i < n; i++) all[i] = i;
        gpus = all;
    }
    /* EVO_FAKE_WORKER=MODE runs `evo worker --fake MODE` (worker.h): the loop, the store and the fault paths
     * can then be tested where there is no GPU. */
    const char *fake = getenv("EVO_FAKE_WORKER");
    const char *args[] = {"--config", e->config_path, fake ? "--fake" : NULL, fake, NULL};
    evo_pool_opts po = {.gpus = gpus, .n_gpus = n, .args = args, .log_dir = e->work_dir, .hello_timeout_s = 900};
    s = evo_pool_start(&po, &e->pool, err);
    if (s != EVO_OK) return s;
    const evo_hello_reply *h = evo_pool_hello(e->pool, 0);
    evo_hello_to_limits(h, &e->lim);
    snprintf(e->arch, sizeof e->arch, "%s", h->arch);
    e->driver = h->driver_version;
    if (evo_pool_size(e->pool) == 1) {
        snprintf(e->gpu, sizeof e->gpu, "%s", h->device);
    } else { /* "NVIDIA H200 x2 (GPUs 0,1)" */
        int k = snprintf(e->gpu, sizeof e->gpu, "%.80s x%d (GPUs ", h->device, evo_pool_size(e->pool));
        for (int i = 0; i < evo_pool_size(e->pool) && k < (int)sizeof e->gpu - 8; i++)
            k += snprintf(e->gpu + k, sizeof e->gpu - (size_t)k, "%s%d", i ? "," : "", evo_pool_hello(e->pool, i)->gpu);
        snprintf(e->gpu + k, sizeof e->gpu - (size_t)k, ")");
    }
    for (int i = 1; i < evo_pool_size(e->pool); i++)
        if (strcmp(evo_pool_hello(e->pool, i)->arch, e->arch) != 0)
            return evo_fail(err, EVO_E_USAGE, "GPUs %d and %d differ (%s, %s): name GPUs of one kind with --gpus",
                            gpus[0], gpus[i], e->arch, evo_pool_hello(e->pool, i)->arch);
    const evo_task *task = evo_task_find(e->cfg->task);
    e->baseline.genome = e->cfg->baseline;
    evo_build_opts bo = {
        .cfg = e->cfg, .task = task, .lim = &e->lim, .arch = e->arch, .jobs = o->jobs, .interrupt = o->interrupt};
    s = evo_candidates_build(&bo, &e->baseline, 1, err);
    if (s != EVO_OK) return s;
    if (e->baseline.verdict != EVO_V_OK)
        return evo_fail(err, EVO_E_CONFIG, "%s: the baseline genome cannot run on %s: %s: %s", evo_show(o->cfg->path).s,
                        e->gpu, evo_verdict_name(e->baseline.verdict), e->baseline.why);
    return write_cubin(e, &e->baseline, e->baseline_cubin, sizeof e->baseline_cubin, err);
}

static evo_status gpu_run(evo_evaluator *e, const evo_candidate *c, int n, bool retime, bool check, evo_result *out,
                          evo_result *baseline, void (*progress)(void *, int, const evo_result *), void *ctx,
                          evo_err *err)
{
    const int nw = evo_pool_size(e->pool);
    const int nb = retime || !e->have_baseline_times ? nw : 0;
    evo_eval_request *reqs = evo_xcalloc((size_t)(n + nb), sizeof *reqs);
    evo_pool_job *jobs = evo_xcalloc((size_t)(n + nb), sizeof *jobs);
    int *job_cand = evo_xcalloc((size_t)(n + nb), sizeof *job_cand);
    evo_result *res = evo_xcalloc((size_t)(n + nb), sizeof *res);
    int nj = 0;
    evo_status s = EVO_OK;
    /* The pool hands jobs out in order to free workers: the first nw jobs reach every worker once. */
    for (int k = 0; k < nb; k++, nj++) {
        fill_request(e, &e->baseline, e->baseline_cubin, &reqs[nj]);
        reqs[nj].is_baseline = true;
        reqs[nj].check = !e->have_baseline_times;
        job_cand[nj] = -1;
    }
    int *cand_job = evo_xcalloc((size_t)(n ? n : 1), sizeof *cand_job);
    for (int i = 0; i < n && s == EVO_OK; i++) {
        cand_job[i] = -1;
        memset(&out[i], 0, sizeof out[i]);
        if (c[i].verdict != EVO_V_OK) {
            out[i].verdict = c[i].verdict;
            out[i].fitness = NAN;
            set_detail(&out[i], c[i].why, c[i].verdict == EVO_V_COMPILE_FAIL ? c[i].cr.log : NULL);
            if (progress && !e->stopped) progress(ctx, i, &out[i]);
            continue;
        }
        char path[4096];
        s = write_cubin(e, &c[i], path, sizeof path, err);
        if (s != EVO_OK) break;
        fill_request(e, &c[i], path, &reqs[nj]);
        reqs[nj].check = check;
        if (!check) reqs[nj].n_best = 0; /* a re-timing is never cut short */
        job_cand[nj] = i;
        cand_job[i] = nj++;
    }
    for (int j = 0; j < nj; j++) {
        reqs[j].id = j + 1;
        jobs[j] = (evo_pool_job){.req = &reqs[j], .timeout_s = EVAL_WATCHDOG_S};
    }
    run_ctx rc = {e, res, job_cand, baseline, NULL, NULL};
    /* Progress is reported per candidate once its result is final, in on_done order. */
    rc.progress = progress;
    rc.ctx = ctx;
    if (s == EVO_OK && nj > 0 && !e->stopped) s = evo_pool_run(e->pool, jobs, nj, on_done, &rc, err);
    for (int i = 0; i < n; i++) {
        if (cand_job[i] < 0) continue;
        out[i] = res[cand_job[i]];
        res[cand_job[i]].detail = NULL;
        if (!out[i].detail) { /* never ran (interrupted) */
            out[i].verdict = EVO_V_CRASHED;
            out[i].fitness = NAN;
            set_detail(&out[i], "not evaluated: the run was interrupted", NULL);
        }
    }
    for (int j = 0; j < nj; j++) evo_result_free(&res[j]);
    free(cand_job);
    free(res);
    free(job_cand);
    free(jobs);
    free(reqs);
    return s;
}

evo_status evo_evaluator_sanitize(evo_evaluator *e, const evo_candidate *c, const char *sanitizer,
                                  const char *const *tools, int n_tools, const char *label, evo_sanitize_result *out,
                                  evo_err *err)
{
    if (!e->pool) return evo_fail(err, EVO_E_USAGE, "--sanitize needs a GPU: a replay evaluates nothing");
    if (c->verdict != EVO_V_OK)
        return evo_fail(err, EVO_E_INTERNAL, "sanitize: candidate %s is %s, not ready to run", c->genome_text,
                        evo_verdict_name(c->verdict));
    char path[4096];
    evo_status s = write_cubin(e, c, path, sizeof path, err);
    if (s != EVO_OK) return s;
    evo_eval_request rq;
    fill_request(e, c, path, &rq);
    evo_sanitize_job job = {.sanitizer = sanitizer,
                            .gpu = evo_pool_hello(e->pool, 0)->gpu,
                            .config_path = e->config_path,
                            .dir = e->work_dir,
                            .label = label,
                            .kernel_prefix = e->cfg->task_ops->kernel_prefix,
                            .fake = getenv("EVO_FAKE_WORKER"),
                            .interrupt = e->interrupt};
    for (int t = 0; t < n_tools && s == EVO_OK; t++) {
        job.tool = tools[t];
        s = evo_sanitize_request(&job, &rq, &out[t], err);
    }
    return s;
}

const char *evo_evaluator_work_dir(const evo_evaluator *e) { return e->pool ? e->work_dir : NULL; }

bool evo_work_dir_settle(const char *dir, evo_status s, evo_err *err)
{
    const bool worker =
        s == EVO_E_WORKER || s == EVO_E_CUDA || s == EVO_E_NODRIVER || s == EVO_E_TIMEOUT || s == EVO_E_INTERNAL;
    const bool named = err && strstr(err->msg, dir);
    if (s == EVO_OK || s == EVO_E_INTERRUPTED || !(worker || named) || !evo_dir_has_nonempty(dir, ".log")) {
        evo_remove_tree(dir);
        return false;
    }
    if (err && !named) {
        const size_t n = strnlen(err->msg, sizeof err->msg - 1);
        snprintf(err->msg + n, sizeof err->msg - n, " (worker logs: %s)", dir);
    }
    return true;
}

/* ---- replay ---- */

/* The replayed database is input: opened immutable (nothing is created beside it, nothing written), and anything
 * wrong with it (missing, unreadable, not evo's, no run of the task) is a usage error. */
static evo_status replay_open(evo_evaluator *e, const evo_evaluator_opts *o, evo_err *err)
{
    const char *delay = getenv("EVO_REPLAY_DELAY_MS");
    e->replay_delay_ms = delay ? atoi(delay) : 0;
    if (e->replay_delay_ms < 0 || e->replay_delay_ms > 60000) e->replay_delay_ms = 0;
    evo_status s = evo_store_open(o->replay_db, EVO_STORE_IMMUTABLE, &e->replay, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s == EVO_E_NOMEM ? s : EVO_E_USAGE, "--replay");
    evo_config_measured_key(e->cfg, e->shape_set); /* recorded under any fitness kind; scored again below */
    int64_t run;
    s = evo_store_last_run_matching(e->replay, e->cfg->task, NULL, &run, err);
    if (s == EVO_OK) {
        evo_run_rec rr;
        s = evo_store_get_run(e->replay, run, &rr, err);
        if (s == EVO_OK) {
            snprintf(e->arch, sizeof e->arch, "%s", rr.arch ? rr.arch : "sm_90");
            snprintf(e->gpu, sizeof e->gpu, "replay of %s (%s)", o->replay_db, rr.gpu ? rr.gpu : "?");
            evo_store_run_free(&rr);
        }
    } else if (s == EVO_E_NOTFOUND) {
        return evo_fail(err, EVO_E_USAGE, "--replay %s: no run of task %s is recorded there", o->replay_db,
                        e->cfg->task);
    }
    if (s != EVO_OK) return s;
    s = evo_aliases_build(e->replay, e->cfg, &e->replay_aliases, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s == EVO_E_NOMEM ? s : EVO_E_USAGE, "--replay");
    return evo_device_limits_for_arch(strcmp(e->arch, "sm_90a") == 0 ? "sm_90" : e->arch, &e->lim, err);
}

static evo_status replay_run(evo_evaluator *e, const evo_candidate *c, int n, evo_result *out,
                             void (*progress)(void *, int, const evo_result *), void *ctx, evo_err *err)
{
    for (int i = 0; i < n; i++) {
        evo_result *r = &out[i];
        memset(r, 0, sizeof *r);
        if (e->stopped) { /* a result could not be stored: look nothing more up */
            r->verdict = EVO_V_CRASHED;
            r->fitness = NAN;
            continue;
        }
        snprintf(r->gpu, sizeof r->gpu, "%s", e->gpu);
        if (e->replay_delay_ms > 0) usleep((useconds_t)e->replay_delay_ms * 1000u);
        evo_eval_rec rec;
        bool found = false;
        evo_status s = evo_aliases_find_evaluation(e->replay, e->replay_aliases, e->cfg->task, c[i].genome_text,
                                                   e->shape_set, NULL, &rec, &found, err);
        if (s != EVO_OK) return s;
        if (!found) {
            r->verdict = c[i].verdict != EVO_V_OK ? c[i].verdict : EVO_V_NOT_RECORDED;
            r->fitness = NAN;
            set_detail(r, c[i].verdict != EVO_V_OK ? c[i].why : "not recorded in the replay database", NULL);
        } else {
            evo_result_from_eval(&rec, r);
            snprintf(r->gpu, sizeof r->gpu, "%s", e->gpu);
            evo_store_eval_free(&rec);
            /* Recorded measurements are scored as this config says (fitness kind, regression rule). */
            if (r->verdict == EVO_V_OK || r->verdict == EVO_V_REGRESSED) {
                r->verdict = EVO_V_OK;
                evo_result_score(e->cfg, r);
            }
        }
        if (progress && !e->stopped) progress(ctx, i, r);
    }
    return EVO_OK;
}

/* ---- the table ---- */

evo_status evo_evaluator_open(const evo_evaluator_opts *o, evo_evaluator **out, evo_err *err)
{
    evo_evaluator *e = evo_xcalloc(1, sizeof *e);
    e->cfg = o->cfg;
    e->full_timing = o->full_timing;
    e->retime = o->retime;
    e->name = o->replay_db ? "replay" : "gpu";
    evo_status s = o->replay_db ? replay_open(e, o, err) : gpu_open(e, o, err);
    if (s != EVO_OK) {
        evo_evaluator_close(e);
        return s;
    }
    *out = e;
    return EVO_OK;
}

void evo_evaluator_close(evo_evaluator *e)
{
    if (!e) return;
    evo_pool_stop(e->pool);
    evo_aliases_free(e->replay_aliases);
    evo_store_close(e->replay);
    evo_candidate_free(&e->baseline);
    free(e->work_dir);
    free(e->config_path);
    free(e);
}

const char *evo_evaluator_name(const evo_evaluator *e) { return e->name; }
bool evo_evaluator_needs_compile(const evo_evaluator *e) { return e->pool != NULL; }
const char *evo_evaluator_arch(const evo_evaluator *e) { return e->arch; }
const evo_device_limits *evo_evaluator_limits(const evo_evaluator *e) { return &e->lim; }
const char *evo_evaluator_gpu(const evo_evaluator *e) { return e->gpu; }

int evo_evaluator_prepared(const evo_evaluator *e, double *seconds)
{
    int cases = 0;
    *seconds = 0;
    for (int i = 0; e->pool && i < evo_pool_size(e->pool); i++) {
        const evo_hello_reply *h = evo_pool_hello(e->pool, i);
        if (h->cases > cases) cases = h->cases;
        if (h->prepare_s > *seconds) *seconds = h->prepare_s;
    }
    return cases;
}
int evo_evaluator_driver(const evo_evaluator *e) { return e->driver; }
int evo_evaluator_restarts(const evo_evaluator *e) { return e->pool ? evo_pool_restarts(e->pool) : 0; }

void evo_evaluator_interrupt(evo_evaluator *e)
{
    if (e->pool) evo_pool_interrupt(e->pool);
}

void evo_evaluator_stop(evo_evaluator *e)
{
    e->stopped = true;
    if (e->pool) { /* the second interrupt abandons the running jobs too */
        evo_pool_interrupt(e->pool);
        evo_pool_interrupt(e->pool);
    }
}

evo_status evo_evaluator_run(evo_evaluator *e, const evo_candidate *c, int n, bool retime_baseline, evo_result *out,
                             evo_result *baseline, void (*progress)(void *ctx, int i, const evo_result *r), void *ctx,
                             evo_err *err)
{
    if (baseline) memset(baseline, 0, sizeof *baseline);
    const evo_status s = e->pool ? gpu_run(e, c, n, retime_baseline, true, out, baseline, progress, ctx, err)
                                 : replay_run(e, c, n, out, progress, ctx, err);
    /* every result the search and the store take has a verdict and at most the config's shapes */
    for (int i = 0; s == EVO_OK && i < n; i++)
        EVO_ASSERT((unsigned)out[i].verdict < EVO_V_COUNT && out[i].n_shapes >= 0 && out[i].n_shapes <= EVO_MAX_SHAPES);
    return s;
}

evo_status evo_evaluator_retime(evo_evaluator *e, const evo_candidate *c, int n, evo_result *out, evo_err *err)
{
    if (e->pool) return gpu_run(e, c, n, true, false, out, NULL, NULL, NULL, err);
    return replay_run(e, c, n, out, NULL, NULL, err);
}
