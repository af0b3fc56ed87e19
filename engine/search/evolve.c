/* evolve.c — the evolution loop of `evo run` (see evolve.h). */
#include "evolve.h"

#include "aliases.h"
#include "candidate.h"
#include "config.h"
#include "evaluate.h"
#include "insights.h"
#include "lease.h"
#include "islands.h"
#include "noise.h"
#include "paths.h"
#include "space.h"
#include "store.h"
#include "strategy.h"
#include "task.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_interrupted;
static evo_evaluator *volatile g_evaluator;

/* Ctrl-C: stop handing out work; what runs finishes and is stored. A second one abandons the running jobs. */
static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted++;
    if (g_evaluator) evo_evaluator_interrupt(g_evaluator);
}

/* genome text -> candidate id of this run's results, for lineage */
typedef struct {
    char (*text)[EVO_GENOME_TEXT_MAX];
    int64_t *id;
    int n, cap;
} id_map;

static void map_put(id_map *m, const char *text, int64_t id)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->text[i], text)) {
            m->id[i] = id;
            return;
        }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->text = evo_xrealloc(m->text, (size_t)m->cap * sizeof *m->text);
        m->id = evo_xrealloc(m->id, (size_t)m->cap * sizeof *m->id);
    }
    snprintf(m->text[m->n], sizeof m->text[m->n], "%s", text);
    m->id[m->n++] = id;
}

static int64_t map_get(const id_map *m, const char *text)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->text[i], text)) return m->id[i];
    return 0;
}

typedef struct {
    evo_run_opts o;
    evo_config *cfg;
    const evo_task *task;
    evo_store *st;
    evo_aliases *aliases; /* older texts of the store's genomes in this config's space (built at the first migrant) */
    evo_run_rec run;
    evo_evaluator *ev;
    evo_strategy *strat;
    evo_strategy_params sp;
    evo_insights *ins;
    evo_genome *prior;
    int n_prior;
    char shape_set[65];
    id_map ids;
    int generations, population;
    double t0, compile_s, check_s, time_s;
    double best_fitness;
    bool tty;
    char *work_dir;
    bool keep_work;      /* sanitizer reports of demoted elites are in it */
    bool finished;       /* --resume of a run that is done: nothing to do, nothing changed */
    bool builtin_config; /* no --config and no configs/default.yaml: the one built into evo */
    evo_gen_rec *gens;   /* the generations the store holds for the run (a resume) */
    int done_gens;
    struct sigaction old_int, old_term;
    evo_lease *lease;  /* this process's claim on the run (lease.h); NULL until the run is ours */
    bool write_failed; /* a result could not be stored: the run stopped there (nothing after it is kept) */
    bool out_closed;   /* the console could not be written any more: the run stops as on Ctrl-C */
    int stored_gen;    /* results of the generation in progress that are stored */
    char *sanitizer;   /* --sanitize: the compute-sanitizer found before the search */
    /* the generation in progress */
    int gen, done, total;
    int counts[EVO_V_COUNT];
    /* the last generation's baseline timing: a drift beyond its noise re-times the elites */
    evo_shape_result base_prev[EVO_MAX_SHAPES];
    int n_base_prev;
    /* the last generation's figures (what an island reports to the job) */
    int gen_evaluated, gen_reused, gen_migrants;
    double gen_best, gen_median;
    /* --islands */
    char *island_json; /* runs.island of a new run */
    uint64_t job_seed; /* the job's seed (the run's is evo_island_seed of it) */
    evo_migrant *best; /* this run's best OK results on this island, best first, at most the migrants */
    int n_best;
    evo_migrant *arrived; /* migrants to measure with the coming generation */
    int n_arrived;
    evo_genome *island_seeds; /* this island's share of the config's seeds */
    evo_genome *seeds;        /* the config's seeds, then --seed-elites' (owned) */
    int n_seeds;
    int64_t job_evaluated, job_reused, job_migrants; /* the job's totals (rank 0 reports them) */
    double job_best;
    int job_best_island;
    int peer_failed;       /* the island whose failure stopped this one, or -1 */
    int failed_gen;        /* islands: the generation in which this island or peer_failed failed, or -1 */
    bool self_interrupted; /* this island got the Ctrl-C / SIGTERM itself */
    double budget;         /* the time budget in seconds (0: none), for the islands' messages */
    evo_build_opts admit;  /* what the space's filter checks genomes with (filter_space) */
} loop;

/* ---- storing one result ---- */

static evo_status put_result(loop *L, const evo_candidate *c, const evo_proposal *p, const evo_result *r, evo_err *err)
{
    evo_candidate_rec cr = {
        .key = (char *)c->key,
        .task = L->cfg->task,
        .arch = (char *)evo_evaluator_arch(L->ev),
        .genome = (char *)c->genome_text,
        .template_hash = (char *)c->template_hash,
        .options = L->cfg->compile.extra_options ? L->cfg->compile.extra_options : "",
        .nvrtc_version = (char *)L->run.nvrtc_version,
        .registers = c->registers,
        .smem_bytes = c->smem_bytes,
        .spill_bytes = c->spill_bytes,
        .stack_bytes = c->stack_bytes,
        .compile_log = c->verdict == EVO_V_COMPILE_FAIL ? c->cr.log : NULL,
    };
    evo_status s = evo_store_put_candidate(L->st, &cr, err);
    if (s != EVO_OK) return s;
    map_put(&L->ids, c->genome_text, cr.id);
    evo_eval_rec e = {
        .candidate_id = cr.id,
        .run_id = L->run.id,
        .generation = L->gen,
        .shape_set = L->shape_set,
        .compile_s = c->cr.seconds,
        .accuracy = (char *)evo_task_accuracy_name(L->task, c->accuracy),
        .gate = evo_evaluator_needs_compile(L->ev) ? evo_task_gate_version(L->task) : 1,
    };
    evo_eval_rec_set_result(&e, r); /* the search's result is the store's, as the worker sent it */
    s = evo_store_put_evaluation(L->st, &e, err);
    free(e.created_at); /* the one string put_evaluation fills in */
    for (int k = 0; s == EVO_OK && p && k < p->n_parents; k++) {
        char text[EVO_GENOME_TEXT_MAX];
        evo_genome_format(L->cfg->space, &p->parents[k], text, sizeof text);
        const int64_t parent = map_get(&L->ids, text);
        if (parent) s = evo_store_put_lineage(L->st, L->run.id, L->gen, cr.id, parent, evo_operator_name(p->op), err);
    }
    return s;
}

/* Candidate, evaluation and lineage in one transaction: a driver killed in between leaves all or nothing, so a
 * resumed run never finds an evaluation without its lineage. */
static evo_status store_result(loop *L, const evo_candidate *c, const evo_proposal *p, const evo_result *r,
                               evo_err *err)
{
    evo_status s = evo_store_begin(L->st, err);
    if (s != EVO_OK) return s;
    /* the run is still this process's, in the same transaction as the result: a run taken over stores nothing */
    if (L->lease) s = evo_store_lease_check(L->st, L->run.id, evo_lease_me(L->lease), err);
    if (s == EVO_OK) s = put_result(L, c, p, r, err);
    if (s == EVO_OK) return evo_store_commit(L->st, err);
    evo_store_rollback(L->st);
    return s;
}

/* ---- an island's best results (what it sends when migrants are due) ---- */

/* Best first: fitness, then genome text, so that ties never depend on the order results arrived in. */
static int migrant_cmp(const void *a, const void *b)
{
    const evo_migrant *x = a, *y = b;
    if (x->fitness != y->fitness) return x->fitness > y->fitness ? -1 : 1;
    return strcmp(x->genome, y->genome);
}

static void best_offer(loop *L, const char *genome, const evo_result *r)
{
    const int cap = L->o.island ? evo_island_migrants(L->o.island) : 0;
    if (cap <= 0 || r->verdict != EVO_V_OK || !isfinite(r->fitness)) return;
    if (!L->best) L->best = evo_xcalloc((size_t)cap + 1, sizeof *L->best);
    int at = -1;
    for (int i = 0; i < L->n_best; i++)
        if (!strcmp(L->best[i].genome, genome)) at = i;
    if (at >= 0 && !(r->fitness > L->best[at].fitness)) return;
    if (at < 0) at = L->n_best++;
    evo_migrant *m = &L->best[at];
    memset(m, 0, sizeof *m);
    snprintf(m->genome, sizeof m->genome, "%s", genome);
    m->fitness = r->fitness, m->fitness_lo = r->fitness_lo, m->fitness_hi = r->fitness_hi;
    snprintf(m->gpu, sizeof m->gpu, "%s", r->gpu);
    for (int k = 0; k < r->n_shapes && k < EVO_MAX_SHAPES; k++) {
        snprintf(m->shapes[k].shape, sizeof m->shapes[k].shape, "%s", r->shapes[k].shape);
        m->shapes[k].median_us = r->shapes[k].median_us;
        m->shapes[k].speedup = r->shapes[k].speedup;
        m->n_shapes = k + 1;
    }
    qsort(L->best, (size_t)L->n_best, sizeof *L->best, migrant_cmp);
    if (L->n_best > cap) L->n_best = cap;
}

/* New figures for genomes measured before (re-timings): what the strategy is told, the best list is told too. */
static void refresh(loop *L, const evo_observation *obs, int n)
{
    evo_strategy_refresh(L->strat, obs, n);
    for (int i = 0; i < n && L->n_best > 0; i++) {
        char text[EVO_GENOME_TEXT_MAX];
        evo_genome_format(L->cfg->space, &obs[i].genome, text, sizeof text);
        for (int j = 0; j < L->n_best; j++)
            if (!strcmp(L->best[j].genome, text)) {
                if (obs[i].verdict == EVO_V_OK && isfinite(obs[i].fitness)) {
                    L->best[j].fitness = obs[i].fitness;
                    L->best[j].fitness_lo = obs[i].fitness_lo, L->best[j].fitness_hi = obs[i].fitness_hi;
                } else {
                    L->best[j] = L->best[--L->n_best];
                }
                break;
            }
    }
    if (L->n_best > 1) qsort(L->best, (size_t)L->n_best, sizeof *L->best, migrant_cmp);
}

/* ---- progress ---- */

/* Flushes the console; once it cannot be written (a reader that went away: evo run | head), the run stops as on
 * Ctrl-C and is marked interrupted, resumable, instead of dying of SIGPIPE half-way (main ignores SIGPIPE). */
static void out_flush(loop *L)
{
    fflush(L->o.out);
    if (ferror(L->o.out) && !L->out_closed) {
        L->out_closed = true;
        g_interrupted++;
        if (L->ev) evo_evaluator_interrupt(L->ev);
    }
}

static void print_progress(loop *L)
{
    if (!L->tty || L->o.quiet || L->o.island) return;
    const int width = 30, filled = L->total ? L->done * width / L->total : width;
    fprintf(L->o.out, "\r  gen %d (%d of %d) [", L->gen, L->gen + 1, L->generations);
    for (int i = 0; i < width; i++) fputc(i < filled ? '#' : '.', L->o.out);
    fprintf(L->o.out, "] %d/%d  %.0fs ", L->done, L->total, evo_now() - L->t0);
    fflush(L->o.out);
}

typedef struct {
    loop *L;
    evo_candidate *c;
    evo_proposal *p;
    int *index;          /* evaluated position -> slot */
    evo_result *results; /* per slot */
    evo_status status;
    evo_err failed; /* why the first write failed (the evaluator's own error, "interrupted", must not hide it) */
} gen_ctx;

/* One result: stored, then counted. The first one that cannot be stored (disk full, the run taken over) stops the
 * evaluator at once; it and everything after it is neither stored, counted nor observed, so what the console says
 * is what the store holds. */
static void on_result(void *ctx, int i, const evo_result *r)
{
    gen_ctx *g = ctx;
    if (g->status != EVO_OK) return;
    const int slot = g->index[i];
    g->status = store_result(g->L, &g->c[slot], &g->p[slot], r, &g->failed);
    if (g->status != EVO_OK) {
        g->L->write_failed = true;
        evo_evaluator_stop(g->L->ev);
        return;
    }
    evo_result *dst = &g->results[slot];
    *dst = *r;
    dst->detail = evo_strdup(r->detail ? r->detail : "{}");
    g->L->done++;
    g->L->stored_gen++;
    g->L->counts[r->verdict]++;
    print_progress(g->L);
}

/* ---- re-timing the elites ---- */

static evo_status retime_elites(loop *L, const char *why, bool report, evo_err *err);

/* The baseline is re-timed every generation; when a shape's median moved beyond the noise of both timings
 * (their intervals, noise.h), the clocks or the machine changed under the search: the elites are timed again, so
 * newcomers are not compared with figures from another state of the GPU. */
static evo_status check_drift(loop *L, const evo_result *base, evo_err *err)
{
    const bool have_prev = L->n_base_prev == base->n_shapes;
    int worst = -1;
    double worst_d = 0;
    for (int i = 0; have_prev && i < base->n_shapes; i++) {
        const evo_shape_result *a = &L->base_prev[i], *b = &base->shapes[i];
        const double h = evo_noise_ratio_halfwidth(a->ci_lo_us, a->ci_hi_us, b->ci_lo_us, b->ci_hi_us);
        if (!(a->median_us > 0) || !(b->median_us > 0) || !isfinite(h)) continue;
        const double d = fabs(log(b->median_us / a->median_us));
        if (d > h && d - h > worst_d) worst = i, worst_d = d - h;
    }
    if (base->n_shapes > 0) memcpy(L->base_prev, base->shapes, (size_t)base->n_shapes * sizeof *base->shapes);
    L->n_base_prev = base->n_shapes;
    if (worst < 0) return EVO_OK;
    const evo_shape_result *a = &L->base_prev[worst];
    if (!L->o.quiet)
        fprintf(L->o.out, "baseline moved beyond its noise on %s (%.2f us now): re-timing the elites\n", a->shape,
                a->median_us);
    return retime_elites(L, "baseline drift", false, err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void fmt_time(double s, char *buf, size_t n)
{
    int t = (int)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%d:%02d", t / 60, t % 60);
}

/* ---- one generation ---- */

static evo_status lookup(loop *L, evo_candidate *c, evo_result *r, bool *found, bool *own, int *gen, evo_err *err)
{
    *found = *own = false;
    *gen = -1;
    evo_candidate_rec rec;
    evo_status s = evo_store_get_candidate(L->st, c->key, &rec, err);
    if (s == EVO_E_NOTFOUND) return EVO_OK;
    if (s != EVO_OK) return s;
    evo_eval_rec e;
    bool f = false;
    /* On a GPU, only a result judged in the candidate's accuracy class by the current gates is reused; a replay
     * reuses whatever it recorded. */
    const bool gpu = evo_evaluator_needs_compile(L->ev);
    s = evo_store_find_evaluation(L->st, rec.id, L->shape_set,
                                  gpu ? evo_task_accuracy_name(L->task, c->accuracy) : NULL,
                                  evo_task_gate_version(L->task), &e, &f, err);
    /* Another run's NOT_RECORDED says only that its replay source lacked the genome: evaluate it again. */
    if (s == EVO_OK && f && e.verdict == EVO_V_NOT_RECORDED && e.run_id != L->run.id) {
        evo_store_eval_free(&e);
        f = false;
    }
    if (s == EVO_OK && f) {
        *found = true;
        *own = e.run_id == L->run.id;
        *gen = e.generation;
        evo_result_from_eval(&e, r);
        c->registers = rec.registers, c->smem_bytes = rec.smem_bytes;
        c->spill_bytes = rec.spill_bytes, c->stack_bytes = rec.stack_bytes;
        map_put(&L->ids, c->genome_text, rec.id);
        evo_store_eval_free(&e);
    }
    evo_store_candidate_free(&rec);
    return s;
}

/* Propose, then look every proposal up; evaluate (compile, run) only when `evaluate`. Fills obs. */
static evo_status generation(loop *L, bool evaluate, evo_observation *obs, int *n_obs, evo_err *err)
{
    const int elites = evo_strategy_carries_elites(L->strat) && L->gen > 0 ? L->cfg->evolution.elites : 0;
    /* Migrants that arrived (islands) take slots of the generation, so that an island evaluates as much as any
     * other; one this run evaluated in an earlier generation is nothing new and is passed over first. */
    int n_migr = 0;
    if (L->n_arrived > 0 && !L->aliases) {
        evo_status as = evo_aliases_build(L->st, L->cfg, &L->aliases, err);
        if (as != EVO_OK) {
            L->n_arrived = 0;
            *n_obs = 0;
            return as;
        }
    }
    for (int k = 0; k < L->n_arrived; k++) {
        evo_eval_rec e;
        bool found = false;
        evo_status fs = evo_aliases_find_evaluation(L->st, L->aliases, L->cfg->task, L->arrived[k].genome, L->shape_set,
                                                    evo_evaluator_arch(L->ev), &e, &found, err);
        if (fs != EVO_OK) {
            L->n_arrived = 0;
            *n_obs = 0;
            return fs;
        }
        const bool seen = found && e.run_id == L->run.id && e.generation < L->gen;
        if (found) evo_store_eval_free(&e);
        if (!seen) L->arrived[n_migr++] = L->arrived[k];
    }
    int want = L->population - elites - n_migr;
    if (want < 1) want = 1;
    evo_proposal *p = evo_xcalloc((size_t)(want + n_migr), sizeof *p);
    int n = 0;
    L->n_arrived = 0;
    L->gen_evaluated = L->gen_reused = L->gen_migrants = 0;
    L->gen_best = L->gen_median = NAN;
    evo_status s = evo_strategy_propose(L->strat, p, want, &n, err);
    if (s != EVO_OK || n == 0) {
        free(p);
        *n_obs = 0;
        return s;
    }
    /* the elites carried into this generation are members of it: its best and median count them (with their
     * latest figures: a re-timing after the baseline drifted may have lowered them, and says so in the store) */
    evo_observation *carried = evo_xcalloc((size_t)(elites > 0 ? elites : 1), sizeof *carried);
    const int n_carried = elites > 0 ? evo_strategy_elites(L->strat, carried, elites) : 0;
    const int n_prop = n;
    /* population sizes: the strategy proposes at most what it was asked, the carried elites are at most the
     * elites, best first */
    EVO_ASSERT(n_prop <= want && n_carried <= (elites > 0 ? elites : 0));
    for (int k = 1; k < n_carried; k++) EVO_ASSERT(!(carried[k].fitness > carried[k - 1].fitness));
    for (int k = 0; k < n_migr; k++) {
        evo_genome g;
        memset(&g, 0, sizeof g);
        if (evo_genome_parse(L->cfg->space, L->arrived[k].genome, &g, NULL) != EVO_OK) continue;
        bool dup = false;
        for (int i = 0; i < n && !dup; i++) dup = evo_genome_equal(L->cfg->space, &p[i].genome, &g);
        if (!dup) p[n++] = (evo_proposal){.genome = g, .op = EVO_OP_MIGRANT};
    }
    evo_candidate *c = evo_xcalloc((size_t)n, sizeof *c);
    evo_result *res = evo_xcalloc((size_t)n, sizeof *res);
    bool *have = evo_xcalloc((size_t)n, sizeof *have), *reused = evo_xcalloc((size_t)n, sizeof *reused);
    bool *drop = evo_xcalloc((size_t)n, sizeof *drop);
    int *index = evo_xcalloc((size_t)n, sizeof *index);
    for (int i = 0; i < n; i++) c[i].genome = p[i].genome;
    evo_build_opts bo = {.cfg = L->cfg,
                         .task = L->task,
                         .lim = evo_evaluator_limits(L->ev),
                         .arch = evo_evaluator_arch(L->ev),
                         .jobs = L->o.jobs,
                         .interrupt = &g_interrupted};
    s = evo_candidates_prepare(&bo, c, n, err);
    int n_reused = 0, n_eval = 0;
    L->done = 0;
    L->total = n;
    memset(L->counts, 0, sizeof L->counts);
    for (int i = 0; i < n && s == EVO_OK; i++) {
        bool own = false;
        int at = -1;
        s = lookup(L, &c[i], &res[i], &have[i], &own, &at, err);
        /* a migrant this run measured in an earlier generation is nothing new: it is not counted again */
        if (have[i] && own && i >= n_prop && at < L->gen) {
            drop[i] = true;
            continue;
        }
        if (have[i]) {
            reused[i] = !own;
            n_reused += !own;
            L->done++;
            L->counts[res[i].verdict]++;
        }
    }
    if (s == EVO_OK) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (drop[i]) {
                evo_result_free(&res[i]);
                evo_candidate_free(&c[i]);
                continue;
            }
            c[m] = c[i], res[m] = res[i], have[m] = have[i], reused[m] = reused[i], p[m] = p[i];
            m++;
        }
        n = m;
        L->total = n;
    }
    const double t_gen = evo_now();
    double gen_compile_s = 0;
    if (s == EVO_OK && evaluate) {
        double t = evo_now();
        if (evo_evaluator_needs_compile(L->ev)) s = evo_candidates_compile(&bo, c, n, have, err);
        gen_compile_s = evo_now() - t;
        L->compile_s += gen_compile_s;
        evo_candidate *todo = evo_xcalloc((size_t)n, sizeof *todo);
        for (int i = 0; i < n; i++)
            if (!have[i]) {
                index[n_eval] = i;
                todo[n_eval++] = c[i];
            }
        evo_result base;
        memset(&base, 0, sizeof base);
        gen_ctx g = {L, c, p, index, res, EVO_OK, {{0}, false}};
        print_progress(L);
        L->stored_gen = 0;
        if (s == EVO_OK && n_eval > 0) {
            evo_result *tmp = evo_xcalloc((size_t)n_eval, sizeof *tmp);
            s = evo_evaluator_run(L->ev, todo, n_eval, true, tmp, &base, on_result, &g, err);
            for (int k = 0; k < n_eval; k++) evo_result_free(&tmp[k]);
            free(tmp);
            if (g.status != EVO_OK) { /* the failed write, not the stop it caused */
                s = g.status;
                if (err) *err = g.failed;
            }
        }
        free(todo); /* shallow copies of c[] */
        if (s == EVO_OK && base.detail && base.verdict != EVO_V_OK && L->gen == 0)
            s = evo_fail(err, EVO_E_CONFIG, "the baseline genome fails on %s: %s %s", evo_evaluator_gpu(L->ev),
                         evo_verdict_name(base.verdict), base.detail);
        /* generation summary */
        double *fit = evo_xcalloc((size_t)(n + n_carried), sizeof *fit);
        int nf = 0, best_i = -1, best_e = -1;
        for (int i = 0; i < n; i++) {
            L->check_s += reused[i] ? 0 : res[i].check_s;
            L->time_s += reused[i] ? 0 : res[i].time_s;
            if (res[i].verdict == EVO_V_OK && isfinite(res[i].fitness)) {
                fit[nf++] = res[i].fitness;
                if (best_i < 0 || res[i].fitness > res[best_i].fitness) best_i = i;
            }
        }
        for (int e = 0; e < n_carried; e++) {
            if (carried[e].verdict != EVO_V_OK || !isfinite(carried[e].fitness)) continue;
            fit[nf++] = carried[e].fitness;
            if ((best_i < 0 || carried[e].fitness > res[best_i].fitness) &&
                (best_e < 0 || carried[e].fitness > carried[best_e].fitness))
                best_e = e;
        }
        char carried_best[EVO_GENOME_TEXT_MAX] = "";
        if (best_e >= 0) evo_genome_format(L->cfg->space, &carried[best_e].genome, carried_best, sizeof carried_best);
        if (nf > 1) qsort(fit, (size_t)nf, sizeof *fit, cmp_double);
        double noise = 0;
        for (int k = 0; k < base.n_shapes; k++)
            if (base.shapes[k].median_us > 0)
                noise = fmax(noise, (base.shapes[k].p90_us - base.shapes[k].p10_us) / base.shapes[k].median_us);
        evo_gen_rec gr = {.run_id = L->run.id,
                          .generation = L->gen,
                          .best_fitness = nf ? fit[nf - 1] : NAN,
                          .median_fitness = nf ? fit[nf / 2] : NAN,
                          .evaluated = n - n_reused,
                          .reused = n_reused,
                          .wall_s = evo_now() - t_gen,
                          .compile_s = gen_compile_s,
                          .baseline_noise = noise,
                          .best_genome = best_e >= 0   ? carried_best
                                         : best_i >= 0 ? c[best_i].genome_text
                                                       : NULL};
        memcpy(gr.counts, L->counts, sizeof gr.counts);
        for (int i = 0; i < n; i++)
            gr.check_s += reused[i] ? 0 : res[i].check_s, gr.time_s += reused[i] ? 0 : res[i].time_s;
        if (s == EVO_OK && !(g_interrupted && L->done < L->total)) {
            /* the generation's row is the run's too: written only while the run is this process's */
            s = L->lease ? evo_store_begin(L->st, err) : EVO_OK;
            if (s == EVO_OK && L->lease) s = evo_store_lease_check(L->st, L->run.id, evo_lease_me(L->lease), err);
            if (s == EVO_OK) s = evo_store_put_generation(L->st, &gr, err);
            if (L->lease) s = s == EVO_OK ? evo_store_commit(L->st, err) : (evo_store_rollback(L->st), s);
            L->write_failed |= s != EVO_OK;
        }
        if (nf && fit[nf - 1] > L->best_fitness) L->best_fitness = fit[nf - 1];
        if (L->write_failed && !L->o.quiet) {
            /* what the store holds of this generation, and nothing it does not */
            fprintf(L->o.out, "%sgen %2d (%d of %d)  stopped at the first write that failed: %d evaluated and stored",
                    L->tty ? "\r\033[K" : "", L->gen, L->gen + 1, L->generations, L->stored_gen);
            for (int v = 0; v < EVO_V_COUNT; v++)
                if (L->counts[v]) fprintf(L->o.out, " %s %d", evo_verdict_name((evo_verdict)v), L->counts[v]);
            fprintf(L->o.out, ", %d reused; no generation row\n", n_reused);
            out_flush(L);
        } else if (!L->o.quiet && !L->o.island) {
            char el[32], eta[32];
            const double elapsed = evo_now() - L->t0;
            fmt_time(elapsed, el, sizeof el);
            fmt_time(elapsed / (L->gen + 1) * (L->generations - L->gen - 1), eta, sizeof eta);
            char best[32] = "-", median[32] = "-"; /* no fitness: as evo history shows it */
            if (nf)
                snprintf(best, sizeof best, "%.3f", fit[nf - 1]), snprintf(median, sizeof median, "%.3f", fit[nf / 2]);
            fprintf(L->o.out, "%sgen %2d (%d of %d)  %2d evaluated (%d reused)", L->tty ? "\r\033[K" : "", L->gen,
                    L->gen + 1, L->generations, n - n_reused, n_reused);
            for (int v = 0; v < EVO_V_COUNT; v++)
                if (L->counts[v]) fprintf(L->o.out, " %s %d", evo_verdict_name((evo_verdict)v), L->counts[v]);
            fprintf(L->o.out, "  best %s median %s  noise %.1f%%  %s elapsed, ETA %s\n", best, median, 100 * noise, el,
                    eta);
            out_flush(L);
        }
        free(fit);
        if (s == EVO_OK && base.detail && base.verdict == EVO_V_OK) s = check_drift(L, &base, err);
        evo_result_free(&base);
    }
    /* what the generation did, as an island reports it; and this island's best results */
    double *fv = evo_xcalloc((size_t)n, sizeof *fv);
    int nf = 0;
    for (int i = 0; i < n; i++) {
        if (!res[i].detail) continue;
        L->gen_migrants += p[i].op == EVO_OP_MIGRANT;
        if (reused[i])
            L->gen_reused++;
        else
            L->gen_evaluated++;
        if (res[i].verdict == EVO_V_OK && isfinite(res[i].fitness)) fv[nf++] = res[i].fitness;
        best_offer(L, c[i].genome_text, &res[i]);
    }
    if (nf > 1) qsort(fv, (size_t)nf, sizeof *fv, cmp_double);
    if (nf) L->gen_best = fv[nf - 1], L->gen_median = fv[nf / 2];
    free(fv);
    for (int i = 0; i < n; i++)
        obs[i] = (evo_observation){.genome = c[i].genome,
                                   .verdict = res[i].verdict,
                                   .fitness = res[i].fitness,
                                   .fitness_lo = res[i].fitness_lo,
                                   .fitness_hi = res[i].fitness_hi,
                                   .reused = reused[i]};
    /* only what has a result is observed (an interrupted generation leaves some without) */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (res[i].detail) obs[m++] = obs[i];
    *n_obs = m;
    for (int i = 0; i < n; i++) {
        evo_result_free(&res[i]);
        evo_candidate_free(&c[i]);
    }
    free(index);
    free(have);
    free(drop);
    free(reused);
    free(res);
    free(c);
    free(p);
    free(carried);
    return s;
}

/* ---- set-up ---- */

typedef struct {
    const evo_space *space;
    evo_genome *g;
    double *fit;
    int n, cap;
} best_list;

static void collect_best(const char *genome, evo_verdict v, double fitness, void *ctx)
{
    best_list *b = ctx;
    if (v != EVO_V_OK || !isfinite(fitness)) return;
    evo_genome g;
    if (evo_genome_parse(b->space, genome, &g, NULL) != EVO_OK) return;
    for (int i = 0; i < b->n; i++)
        if (evo_genome_equal(b->space, &b->g[i], &g)) {
            if (fitness > b->fit[i]) b->fit[i] = fitness;
            return;
        }
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 32;
        b->g = evo_xrealloc(b->g, (size_t)b->cap * sizeof *b->g);
        b->fit = evo_xrealloc(b->fit, (size_t)b->cap * sizeof *b->fit);
    }
    b->g[b->n] = g;
    b->fit[b->n++] = fitness;
}

/* Elites of earlier runs (evaluations before this run), best first: the same on a resume as the first time. */
static evo_status prior_elites(loop *L, evo_err *err)
{
    best_list b = {L->cfg->space, NULL, NULL, 0, 0};
    evo_status s = evo_store_foreach_evaluation(L->st, L->cfg->task, evo_evaluator_arch(L->ev), L->shape_set, L->run.id,
                                                collect_best, &b, err);
    for (int k = 0; s == EVO_OK && k < L->cfg->evolution.elites && k < b.n; k++) {
        int best = k;
        for (int i = k + 1; i < b.n; i++)
            if (b.fit[i] > b.fit[best]) best = i;
        evo_genome tg = b.g[k];
        double tf = b.fit[k];
        b.g[k] = b.g[best], b.fit[k] = b.fit[best];
        b.g[best] = tg, b.fit[best] = tf;
    }
    L->n_prior = b.n < L->cfg->evolution.elites ? b.n : L->cfg->evolution.elites;
    L->prior = b.g;
    free(b.fit);
    return s;
}

/* --seed-elites: the config's seeds, then the store's per-shape elites of earlier runs (every stored shape of this
 * task and arch, every accuracy class: the fastest on each, then the second fastest, ... evolution.elites deep) that
 * parse in this space and hold its constraints (the arch rule's among them), each once, none that is the baseline or
 * a config seed, as many as the population has room for beside the baseline and the config's seeds. Evaluations of
 * this run and later ones take no part, so a resumed run gets the same list. */
static evo_status store_seeds(loop *L, evo_err *err)
{
    const evo_config *c = L->cfg;
    L->seeds = evo_xcalloc((size_t)c->n_seeds + 1, sizeof *L->seeds);
    for (int i = 0; i < c->n_seeds; i++) L->seeds[L->n_seeds++] = c->seeds[i];
    if (!L->o.seed_elites) return EVO_OK;
    evo_shape_elite_rec *rows = NULL;
    int n = 0;
    evo_status s =
        evo_store_shape_elites(L->st, c->task, evo_evaluator_arch(L->ev), NULL, NULL, NULL, 1 << 20, &rows, &n, err);
    if (s != EVO_OK) return s;
    /* rows come by class, then shape, then rank: depth = a row's place among its group's rows of earlier runs */
    int *depth = evo_xcalloc((size_t)(n ? n : 1), sizeof *depth);
    for (int i = 0, d = 0; i < n; i++) {
        const bool same =
            i > 0 &&
            strcmp(rows[i].accuracy ? rows[i].accuracy : "", rows[i - 1].accuracy ? rows[i - 1].accuracy : "") == 0 &&
            strcmp(rows[i].result.fields, rows[i - 1].result.fields) == 0;
        if (!same) d = 0;
        const bool earlier = rows[i].run_id > 0 && rows[i].run_id < L->run.id;
        depth[i] = earlier ? ++d : 0;
    }
    const int room = L->population - 1 - c->n_seeds;
    int added = 0, stored = 0;
    for (int k = 1; k <= c->evolution.elites && added < room; k++)
        for (int i = 0; i < n && added < room; i++) {
            if (depth[i] != k) continue;
            stored++;
            evo_genome g;
            if (evo_genome_parse(c->space, rows[i].cand.genome, &g, NULL) != EVO_OK ||
                !evo_space_valid(c->space, &g, NULL) || evo_genome_equal(c->space, &g, &c->baseline))
                continue;
            bool dup = false;
            for (int j = 0; j < L->n_seeds && !dup; j++) dup = evo_genome_equal(c->space, &g, &L->seeds[j]);
            if (dup) continue;
            L->seeds = evo_xrealloc(L->seeds, (size_t)(L->n_seeds + 1) * sizeof *L->seeds);
            L->seeds[L->n_seeds++] = g;
            added++;
        }
    free(depth);
    evo_store_shape_elites_free(rows, n);
    if (!L->o.quiet)
        fprintf(L->o.out, "seeded from the store: %d genome%s (per-shape elites of earlier runs, %d deep%s)\n", added,
                added == 1 ? "" : "s", c->evolution.elites,
                room <= 0     ? "; no room beside the config's seeds"
                : stored == 0 ? "; none stored"
                              : "");
    return EVO_OK;
}

/* --replay DB: a database that exists, and never the one this run writes (compared by device and inode, so no link
 * or other spelling of the same file gets through). Whether it can be read is found out by opening it. */
static evo_status check_replay(const char *replay, const char *db, evo_err *err)
{
    struct stat sb;
    if (stat(replay, &sb) != 0) return evo_fail(err, EVO_E_USAGE, "--replay %s: %s", replay, strerror(errno));
    if (evo_path_same_file(replay, db))
        return evo_fail(err, EVO_E_USAGE,
                        "--replay %s and --db %s are the same file: a replay reads one database and writes another",
                        replay, db);
    evo_status s = evo_path_check_not_input("--db", db, "--replay", replay, true, err);
    if (s == EVO_OK) s = evo_path_check_not_companion("--replay", replay, "--db", db, err);
    return s;
}

/* The evaluator: a replay reads its database (nothing is created); the GPU one starts workers, which read the
 * config's text (the file's, the built-in one or a resumed run's stored one) from a scratch directory that also
 * holds cubins and worker logs. */
static evo_status open_evaluator(loop *L, evo_err *err)
{
    const evo_run_opts *o = &L->o;
    if (!o->replay_db) {
        const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        L->work_dir = evo_xmalloc(strlen(tmpdir) + 32);
        sprintf(L->work_dir, "%s/evo-run-%d", tmpdir, (int)getpid());
        if (!o->quiet) fprintf(o->out, "starting GPU workers (inputs and references are made once per worker)...\n");
    }
    evo_evaluator_opts eo = {.cfg = L->cfg,
                             .config_path = NULL,
                             .gpus = o->gpus,
                             .n_gpus = o->n_gpus,
                             .replay_db = o->replay_db,
                             .work_dir = L->work_dir,
                             .jobs = o->jobs,
                             .interrupt = &g_interrupted};
    evo_status s = evo_evaluator_open(&eo, &L->ev, err);
    if (s == EVO_OK) g_evaluator = L->ev;
    double prep_s;
    const int cases = s == EVO_OK ? evo_evaluator_prepared(L->ev, &prep_s) : 0;
    if (cases && !o->quiet) fprintf(o->out, "GPU workers ready: %d cases prepared in %.1f s\n", cases, prep_s);
    return s;
}

/* A resumed run that is done has nothing left, unless --generations asks for more than it has. */
static bool run_finished(const loop *L)
{
    return L->run.state && strcmp(L->run.state, "done") == 0 && (!L->o.generations || L->o.generations <= L->done_gens);
}

/* The run's lease (lease.h): refused while another live process holds it; taken over, and said so, when its
 * holder let it expire or is a process of this host that is gone. */
static evo_status take_lease(loop *L, evo_err *err)
{
    double lease_s;
    evo_status s = evo_lease_seconds(&lease_s, err);
    evo_lease_rec prev;
    const char *took = NULL;
    if (s == EVO_OK) s = evo_lease_acquire(L->st, L->run.id, lease_s, &L->lease, &prev, &took, err);
    if (s != EVO_OK || L->o.quiet) return s;
    if (!strcmp(took, "expired")) {
        char until[32];
        const time_t t = (time_t)prev.expires_at;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(until, sizeof until, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(stderr,
                "evo: note: run %lld's lease, held by host %s pid %lld, expired at %s: this process takes the "
                "run over\n",
                (long long)L->run.id, prev.holder.host, (long long)prev.holder.pid, until);
    } else if (!strcmp(took, "holder gone")) {
        fprintf(stderr,
                "evo: note: run %lld was held by pid %lld of this host, which has ended: this process takes the "
                "run over\n",
                (long long)L->run.id, (long long)prev.holder.pid);
    }
    return EVO_OK;
}

static evo_status begin_new_run(loop *L, int64_t id, evo_err *err);

/* An island's --resume: the stored run must be this island of a job of this shape, and what the command gives again
 * (config, seed, population, strategy, migration) must be what the run began with; migration options left out are
 * taken from the run. */
static evo_status check_island_resume(loop *L, const char *db, evo_err *err)
{
    const evo_run_opts *o = &L->o;
    evo_island *is = o->island;
    const long long id = (long long)L->run.id;
    if (!L->run.island)
        return evo_fail(
            err, EVO_E_USAGE,
            "--resume %lld: run %lld of %s is not an island of an --islands job; resume it without --islands", id, id,
            db);
    int rank, n, every, migrants, pipelined;
    uint64_t seed;
    evo_status s = evo_island_parse_json(L->run.island, &rank, &n, &every, &migrants, &seed, &pipelined, err);
    if (s != EVO_OK) return evo_failv_prefix(err, s, "--resume %lld: %s", id, db);
    if (!pipelined)
        return evo_fail(err, EVO_E_USAGE,
                        "--resume %lld: %s holds an island of a job whose islands ran in lock step (written before evo "
                        "pipelined its islands); this evo would exchange migrants a generation later and search "
                        "otherwise: finish the job with the evo that began it, or start a new run",
                        id, db);
    L->job_seed = seed;
    if (n != evo_island_size(is) || rank != evo_island_rank(is))
        return evo_fail(err, EVO_E_USAGE,
                        "--resume %lld: %s holds island %d of a job of %d islands, and this is rank %d of %d: resume "
                        "with mpirun -n %d",
                        id, db, rank, n, evo_island_rank(is), evo_island_size(is), n);
    if (evo_island_migrate_every(is) < 0) evo_island_set_migration(is, every, evo_island_migrants(is));
    if (evo_island_migrants(is) < 0) evo_island_set_migration(is, evo_island_migrate_every(is), migrants);
    if (evo_island_migrate_every(is) != every || evo_island_migrants(is) != migrants)
        return evo_fail(err, EVO_E_USAGE,
                        "--resume %lld: the job migrated %d genomes every %d generations; this command says %d every "
                        "%d (give the same --migrate-every and --migrants, or leave them out)",
                        id, migrants, every, evo_island_migrants(is), evo_island_migrate_every(is));
    if (o->seed_set && o->seed != seed)
        return evo_fail(err, EVO_E_USAGE, "--resume %lld: the job's seed is %llu, not %llu", id,
                        (unsigned long long)seed, (unsigned long long)o->seed);
    if (o->population && o->population != L->run.population)
        return evo_fail(err, EVO_E_USAGE, "--resume %lld: the job's population is %d, not %d", id, L->run.population,
                        o->population);
    if (o->strategy && (!L->run.strategy || strcmp(o->strategy, L->run.strategy) != 0))
        return evo_fail(err, EVO_E_USAGE, "--resume %lld: the job's strategy is %s, not %s", id,
                        L->run.strategy ? L->run.strategy : "(none)", o->strategy);
    if (o->config_path) {
        evo_config *given = NULL;
        bool builtin = false;
        s = evo_config_load_default(o->config_path, &given, &builtin, err);
        const bool same = s == EVO_OK && L->run.config_text && !strcmp(given->text, L->run.config_text);
        evo_config_free(given);
        if (s != EVO_OK) return s;
        if (!same)
            return evo_fail(err, EVO_E_USAGE,
                            "--resume %lld: %s is not the config the job began with (its text is stored with the run; "
                            "leave --config out to use it)",
                            id, o->config_path);
    }
    return EVO_OK;
}

static evo_status filter_space(loop *L, bool say, evo_err *err);

static evo_status open_run(loop *L, evo_err *err)
{
    const evo_run_opts *o = &L->o;
    const char *db = o->db_path ? o->db_path : "population.db";
    evo_status s;
    /* Every input is checked before anything is created: a bad config, a missing or unreadable replay source, or the
     * replay source named as the output leave no database and no work directory behind. */
    if ((s = evo_path_check_not_input("--db", db, "--config", o->config_path, false, err)) != EVO_OK) return s;
    if ((s = evo_path_check_not_companion("--config", o->config_path, "--db", db, err)) != EVO_OK) return s;
    if (!o->resume_run) {
        s = evo_config_load_default(o->config_path, &L->cfg, &L->builtin_config, err);
        if (s != EVO_OK) return s;
    } else if (!evo_file_exists(db)) {
        return evo_fail(err, EVO_E_USAGE, "--resume %lld: no database at %s", (long long)o->resume_run, db);
    }
    if (o->replay_db) {
        s = check_replay(o->replay_db, db, err);
        if (s == EVO_OK && L->cfg) s = open_evaluator(L, err);
        if (s != EVO_OK) return s;
    }
    s = evo_store_open(db, EVO_STORE_READWRITE, &L->st, err);
    if (s != EVO_OK) return s;
    if (o->resume_run) {
        s = evo_store_get_run(L->st, o->resume_run, &L->run, err);
        if (s == EVO_E_NOTFOUND)
            return evo_fail(err, EVO_E_USAGE, "--resume %lld: %s has no such run", (long long)o->resume_run, db);
        if (s != EVO_OK) return s;
        s = evo_store_generations(L->st, L->run.id, &L->gens, &L->done_gens, err);
        if (s != EVO_OK) return s;
        if (o->island) {
            s = check_island_resume(L, db, err);
            if (s != EVO_OK) return s;
        }
        if (run_finished(L)) {
            L->finished = true;
            if (!o->island) return EVO_OK; /* an island opens all the same: the others may need its replay */
        }
        /* one process per run in progress: a second --resume while the first runs is refused here */
        s = take_lease(L, err);
        if (s != EVO_OK) return evo_failv_prefix(err, s, "--resume %lld", (long long)o->resume_run);
        if (!L->run.config_text)
            return evo_fail(err, EVO_E_DB, "--resume %lld: %s stores no config for the run", (long long)L->run.id, db);
        s = evo_config_parse(L->run.config_path ? L->run.config_path : "(stored config)", L->run.config_text,
                             strlen(L->run.config_text), &L->cfg, err);
        if (s != EVO_OK)
            return evo_failv_prefix(err, s, "--resume %lld: the run's stored config", (long long)L->run.id);
    }
    L->task = evo_task_find(L->cfg->task);
    if (!L->task) return evo_fail(err, EVO_E_CONFIG, "%s: unknown task '%s'", evo_show(L->cfg->path).s, L->cfg->task);
    evo_config_shape_set_key(L->cfg, L->shape_set);
    if (!L->ev) {
        s = open_evaluator(L, err);
        if (s != EVO_OK) return s;
    }

    if (!o->resume_run) {
        s = filter_space(L, false, err); /* a space with nothing this GPU can run stores no run */
        if (s != EVO_OK) return s;
        /* an island's run begins once every island is ready (evo_island_ready), under the job's run id */
        if (!o->island) return begin_new_run(L, 0, err);
        return EVO_OK;
    }
    if (o->generations) L->run.generations = o->generations;
    L->generations = L->run.generations;
    L->population = L->run.population;
    return EVO_OK;
}

/* A new run in the store, with the given id (> 0: an island's, the job's) or the next one. */
static evo_status begin_new_run(loop *L, int64_t id, evo_err *err)
{
    const evo_run_opts *o = &L->o;
    evo_status s;
    {
        char gpu[160];
        snprintf(gpu, sizeof gpu, "%s", evo_evaluator_gpu(L->ev));
        char driver[32];
        snprintf(driver, sizeof driver, "%d", evo_evaluator_driver(L->ev));
        L->job_seed = o->seed_set ? o->seed : L->cfg->evolution.seed;
        L->run = (evo_run_rec){
            .task = L->cfg->task,
            .arch = (char *)evo_evaluator_arch(L->ev),
            .shape_set = L->shape_set,
            .config_path = L->cfg->path,
            .config_text = L->cfg->text,
            .strategy = o->strategy ? (char *)o->strategy : L->cfg->evolution.strategy,
            .seed = (int64_t)(o->island ? evo_island_seed(L->job_seed, evo_island_rank(o->island)) : L->job_seed),
            .generations = o->generations ? o->generations : L->cfg->evolution.generations,
            .population = o->population ? o->population : L->cfg->evolution.population,
            .gpu = gpu,
            .driver = driver,
            .nvrtc_version = (char *)evo_nvrtc_version(),
            .evo_version = EVO_VERSION,
            .island = o->island ? (L->island_json = evo_island_json(o->island, L->job_seed)) : NULL,
        };
        /* The record points at borrowed strings but for the two begin_run allocates: keep our own copies (a
         * refused insert, e.g. on a locked database, leaves nothing that evo_store_run_free may not free). */
        evo_run_rec copy = {0};
        s = id > 0 ? evo_store_begin_run_id(L->st, &L->run, id, err) : evo_store_begin_run(L->st, &L->run, err);
        if (s == EVO_OK) s = evo_store_get_run(L->st, L->run.id, &copy, err);
        free(L->run.started_at);
        free(L->run.state);
        L->run = copy;
        if (s == EVO_OK) s = take_lease(L, err);
        if (s != EVO_OK) return s;
    }
    L->generations = L->run.generations;
    L->population = L->run.population;
    return EVO_OK;
}

/* What cannot run on this GPU is left out of the search (evo_config_keep_to_arch), and said once. */
static evo_status apply_arch_rule(loop *L, evo_err *err)
{
    char why[256] = "";
    const char *rule, *arch = evo_evaluator_arch(L->ev);
    evo_status s = evo_config_keep_to_arch(L->cfg, arch, &rule, why, sizeof why, err);
    if (s == EVO_OK && rule && !L->o.quiet) fprintf(L->o.out, "on %s the search keeps to %s: %s\n", arch, rule, why);
    return s;
}

typedef struct {
    evo_genome g;
    bool found;
} first_found;

static int first_genome(const evo_genome *g, void *ctx)
{
    first_found *f = ctx;
    f->g = *g, f->found = true;
    return 1;
}

/* The search proposes only genomes this GPU can run: one that the task's can_implement refuses at the evaluator's
 * limits, or whose accuracy class the config does not admit, would come back INVALID or RESOURCE_FAIL at no cost
 * but its population slot (on an H200 with the default config, 171 of the 380 slots of a 20 x 32 search went so). The
 * filter sits in the space, so every strategy's proposals, repairs, neighbours and random genomes keep to it;
 * candidates are still judged as before. Said (say) once, with how many genomes that leaves; a space it leaves empty
 * is a config error naming why the first genome cannot run, found before a new run is stored (open_run). */
static evo_status filter_space(loop *L, bool say, evo_err *err)
{
    evo_space *space = L->cfg->space;
    L->admit = (evo_build_opts){
        .cfg = L->cfg, .task = L->task, .lim = evo_evaluator_limits(L->ev), .arch = evo_evaluator_arch(L->ev)};
    evo_space_set_filter(space, evo_candidate_admits, &L->admit,
                         "what the task cannot run on this GPU or the config does not admit (can_implement, accuracy)");
    if (say && L->o.quiet) return EVO_OK; /* nothing to say, and open_run checked a new run's space */
    uint64_t total = 0, valid = 0, kept = 0;
    bool exact = false;
    evo_err e;
    if (evo_space_count(space, 1000000, &total, &valid, &exact, &e) != EVO_OK || !exact || valid == 0) return EVO_OK;
    first_found f;
    memset(&f, 0, sizeof f);
    if (say)
        kept = evo_space_count_filtered(space);
    else { /* the check alone: one genome the filter takes is enough (the count is said once, later) */
        evo_space_foreach_valid(space, first_genome, &f);
        kept = f.found;
    }
    if (kept == 0) { /* nothing to search: say why for the first genome the constraints allow */
        evo_space_set_filter(space, NULL, NULL, NULL);
        evo_space_foreach_valid(space, first_genome, &f);
        char text[EVO_GENOME_TEXT_MAX], why[512] = "";
        evo_genome_format(space, &f.g, text, sizeof text);
        evo_candidate_admit(&L->admit, &f.g, why, sizeof why);
        return evo_fail(err, EVO_E_CONFIG,
                        "%s: none of the %llu genomes the constraints allow can run on %s or is of an accuracy class "
                        "the config admits; the first, %s: %s",
                        evo_show(L->cfg->path).s, (unsigned long long)valid, L->admit.arch, text, why);
    }
    if (say && kept < valid) /* a quiet run returned above */
        fprintf(L->o.out,
                "on %s the search proposes what the task can run there: %llu of the %llu genomes the "
                "constraints allow\n",
                L->admit.arch, (unsigned long long)kept, (unsigned long long)valid);
    return EVO_OK;
}

static evo_status make_strategy(loop *L, evo_err *err)
{
    const evo_run_opts *o = &L->o;
    const bool insights = o->insights < 0 ? L->cfg->evolution.insights : o->insights > 0;
    evo_status s = apply_arch_rule(L, err);
    if (s == EVO_OK) s = filter_space(L, true, err);
    if (s == EVO_OK) s = prior_elites(L, err);
    if (s == EVO_OK) s = store_seeds(L, err);
    if (s != EVO_OK) return s;
    if (insights) {
        L->ins = evo_insights_new(L->cfg->space);
        s = evo_store_foreach_evaluation(L->st, L->cfg->task, evo_evaluator_arch(L->ev), L->shape_set, L->run.id,
                                         evo_insights_add_stored, L->ins, err);
        if (s != EVO_OK) return s;
    }
    L->sp = (evo_strategy_params){
        .seed = (uint64_t)L->run.seed,
        .population = L->population,
        .elites = L->cfg->evolution.elites < L->population ? L->cfg->evolution.elites : L->population - 1,
        .tournament = L->cfg->evolution.tournament,
        .crossover_rate = L->cfg->evolution.crossover_rate,
        .mutation_rate = L->cfg->evolution.mutation_rate,
        .immigrant_rate = L->cfg->evolution.immigrant_rate,
        .local_rate = L->cfg->evolution.local_rate,
        .baseline = &L->cfg->baseline,
        .seeds = L->seeds,
        .n_seeds = L->n_seeds,
        .prior_elites = L->prior,
        .n_prior_elites = L->n_prior,
        .insights = L->ins,
    };
    if (o->island) {
        /* The given genomes are dealt among the islands, so that generation 0 measures none of them twice: the
         * baseline to island 0, seed i to island i mod N (a one-island job keeps them all: the plain run). */
        const int r = evo_island_rank(o->island), n = evo_island_size(o->island);
        if (r != 0) L->sp.baseline = NULL;
        L->island_seeds = evo_xcalloc((size_t)(L->n_seeds + 1), sizeof *L->island_seeds);
        L->sp.n_seeds = 0;
        for (int i = r; i < L->n_seeds; i += n) L->island_seeds[L->sp.n_seeds++] = L->seeds[i];
        L->sp.seeds = L->island_seeds;
    }
    return evo_strategy_create(L->run.strategy, L->cfg->space, &L->sp, &L->strat, err);
}

/* ---- --sanitize: the elites under compute-sanitizer ---- */

static bool in_list(const int64_t *ids, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

/* One elite: rebuilt from its genome (a cache hit), run under each tool, demoted when any finds errors. */
static evo_status sanitize_one(loop *L, const evo_elite_rec *el, int rank, const char *sanitizer,
                               const char *const *tools, int n_tools, int *demoted, evo_err *err)
{
    FILE *out = L->o.out;
    evo_candidate c;
    memset(&c, 0, sizeof c);
    evo_status s = evo_genome_parse(L->cfg->space, el->cand.genome, &c.genome, err);
    evo_build_opts bo = {.cfg = L->cfg,
                         .task = L->task,
                         .lim = evo_evaluator_limits(L->ev),
                         .arch = evo_evaluator_arch(L->ev),
                         .jobs = L->o.jobs,
                         .interrupt = &g_interrupted};
    if (s == EVO_OK) s = evo_candidates_build(&bo, &c, 1, err);
    if (s != EVO_OK) {
        evo_candidate_free(&c);
        return evo_failv_prefix(err, s, "--sanitize: elite %lld (%s)", (long long)el->cand.id, el->cand.genome);
    }
    if (c.verdict != EVO_V_OK || strcmp(c.key, el->cand.key) != 0) {
        /* an elite of an earlier run with another template or compiler: what would run is not what was measured */
        fprintf(out, "sanitize: elite %d (%.8s) skipped: %s\n", rank, el->cand.key,
                c.verdict != EVO_V_OK ? c.why : "this evo builds it differently from the run that measured it");
        evo_candidate_free(&c);
        return EVO_OK;
    }
    char label[16];
    snprintf(label, sizeof label, "%.8s", c.key);
    fprintf(out, "sanitize: elite %d (%.8s, %.3fx) under", rank, c.key, el->eval.fitness);
    for (int t = 0; t < n_tools; t++) fprintf(out, " %s", tools[t]);
    fprintf(out, "...\n");
    fflush(out);
    evo_sanitize_result res[EVO_SANITIZE_MAX_TOOLS];
    const double t0 = evo_now();
    s = evo_evaluator_sanitize(L->ev, &c, sanitizer, tools, n_tools, label, res, err);
    evo_candidate_free(&c);
    if (s != EVO_OK) return s;
    char summary[1600];
    evo_sanitize_summary(res, n_tools, summary, sizeof summary);
    bool clean = true;
    for (int t = 0; t < n_tools; t++) clean &= res[t].clean;
    fprintf(out, "sanitize: elite %d (%.8s) %s in %.0f s: %s\n", rank, el->cand.key, clean ? "clean" : "DEMOTED",
            evo_now() - t0, summary);
    if (clean) return EVO_OK;
    char reason[1700];
    snprintf(reason, sizeof reason, "compute-sanitizer: %s", summary);
    s = evo_store_demote(L->st, el->cand.id, reason, err);
    if (s == EVO_OK) {
        ++*demoted;
        L->keep_work = true;
        for (int t = 0; t < n_tools; t++)
            if (!res[t].clean) fprintf(out, "  %s report: %s\n", res[t].tool, res[t].report);
    }
    return s;
}

/* The top-K elites, again after each demotion, until the top K are all clean or 3K have been tried. */
static evo_status sanitize_elites(loop *L, evo_err *err)
{
    const char *tools[EVO_SANITIZE_MAX_TOOLS];
    int n_tools = 0;
    evo_status s = evo_sanitize_parse_tools(L->o.sanitize, tools, &n_tools, err);
    const int k = L->cfg->evolution.elites > 0 ? L->cfg->evolution.elites : 1;
    int64_t *tried = evo_xcalloc((size_t)(3 * k), sizeof *tried);
    int n_tried = 0, demoted = 0;
    bool settled = false;
    while (s == EVO_OK && !g_interrupted && n_tried < 3 * k) {
        evo_elite_rec *el = NULL;
        int n = 0;
        s = evo_store_elites(L->st, L->cfg->task, evo_evaluator_arch(L->ev), L->shape_set, NULL, k, &el, &n, err);
        int next = -1;
        for (int i = 0; s == EVO_OK && i < n && next < 0; i++)
            if (!in_list(tried, n_tried, el[i].cand.id)) next = i;
        if (s == EVO_OK && next < 0) settled = true;
        if (s == EVO_OK && next >= 0) {
            tried[n_tried++] = el[next].cand.id;
            s = sanitize_one(L, &el[next], next + 1, L->sanitizer, tools, n_tools, &demoted, err);
        }
        evo_store_elites_free(el, n);
        if (settled) break;
    }
    if (s == EVO_OK && !L->o.quiet) {
        if (settled)
            fprintf(L->o.out, "sanitize: %d elite%s checked, %d demoted; the top %d are clean\n", n_tried,
                    n_tried == 1 ? "" : "s", demoted, k);
        else if (!g_interrupted)
            fprintf(L->o.out, "sanitize: %d elites checked, %d demoted; stopped before the top %d were all clean\n",
                    n_tried, demoted, k);
    }
    free(tried);
    return s;
}

/* The top elites of this task, arch and shape set (the store's order), timed again without the correctness gate
 * (the baseline first, on every worker); each kept as a re-timing and handed to the strategy. With `report`, the
 * table of stored and new figures and whether the rank order held beyond the noise. */
static evo_status retime_elites(loop *L, const char *why, bool report, evo_err *err)
{
    const int k = L->cfg->evolution.elites > 0 ? L->cfg->evolution.elites : 1;
    evo_elite_rec *el = NULL;
    int n = 0;
    evo_status s =
        evo_store_elites(L->st, L->cfg->task, evo_evaluator_arch(L->ev), L->shape_set, NULL, k, &el, &n, err);
    evo_candidate *c = evo_xcalloc((size_t)(n ? n : 1), sizeof *c);
    int *of = evo_xcalloc((size_t)(n ? n : 1), sizeof *of); /* elite index of c[j] */
    int m = 0;
    evo_build_opts bo = {.cfg = L->cfg,
                         .task = L->task,
                         .lim = evo_evaluator_limits(L->ev),
                         .arch = evo_evaluator_arch(L->ev),
                         .jobs = L->o.jobs,
                         .interrupt = &g_interrupted};
    for (int i = 0; s == EVO_OK && i < n; i++) {
        memset(&c[m], 0, sizeof c[m]);
        if (evo_genome_parse(L->cfg->space, el[i].cand.genome, &c[m].genome, NULL) != EVO_OK) continue;
        s = evo_candidates_build(&bo, &c[m], 1, err);
        /* an elite another evo built differently cannot be re-timed: what would run is not what was measured */
        if (s == EVO_OK && c[m].verdict == EVO_V_OK && !strcmp(c[m].key, el[i].cand.key))
            of[m++] = i;
        else
            evo_candidate_free(&c[m]);
    }
    evo_result *res = evo_xcalloc((size_t)(m ? m : 1), sizeof *res);
    if (s == EVO_OK && m > 0) s = evo_evaluator_retime(L->ev, c, m, res, err);
    evo_observation *obs = evo_xcalloc((size_t)(m ? m : 1), sizeof *obs);
    for (int j = 0; s == EVO_OK && j < m; j++) {
        evo_retime_rec rr = {.candidate_id = el[of[j]].cand.id,
                             .run_id = L->run.id,
                             .generation = L->gen,
                             .shape_set = L->shape_set,
                             .fitness = res[j].fitness,
                             .fitness_lo = res[j].fitness_lo,
                             .fitness_hi = res[j].fitness_hi,
                             .why = (char *)why,
                             .gpu = res[j].gpu};
        s = evo_store_put_retime(L->st, &rr, err);
        free(rr.created_at);
        obs[j] = (evo_observation){.genome = c[j].genome,
                                   .verdict = res[j].verdict,
                                   .fitness = res[j].fitness,
                                   .fitness_lo = res[j].fitness_lo,
                                   .fitness_hi = res[j].fitness_hi};
    }
    if (s == EVO_OK) refresh(L, obs, m);
    if (s == EVO_OK && report && !L->o.quiet && m > 0) {
        FILE *out = L->o.out;
        fprintf(out, "elites re-timed at the %s (baseline re-timed first), fitness [95%% interval]:\n", why);
        for (int j = 0; j < m; j++) {
            const evo_eval_rec *e = &el[of[j]].eval;
            fprintf(out, "  #%d %.8s  stored %.3fx [%.3f, %.3f]  now %.3fx [%.3f, %.3f]%s%s%s\n", of[j] + 1,
                    el[of[j]].cand.key, e->fitness, e->fitness_lo, e->fitness_hi, res[j].fitness, res[j].fitness_lo,
                    res[j].fitness_hi, res[j].verdict == EVO_V_OK ? "" : "  (not OK now: ",
                    res[j].verdict == EVO_V_OK ? "" : evo_verdict_name(res[j].verdict),
                    res[j].verdict == EVO_V_OK ? "" : ")");
            if (res[j].verdict != EVO_V_OK && res[j].detail) fprintf(out, "     %.300s\n", res[j].detail);
        }
        int swaps = 0, close = 0;
        for (int a = 0; a < m; a++)
            for (int b = a + 1; b < m; b++) {
                if (res[b].fitness <= res[a].fitness) continue;
                if (evo_noise_better(res[b].fitness, res[b].fitness_lo, res[b].fitness_hi, res[a].fitness,
                                     res[a].fitness_lo, res[a].fitness_hi)) {
                    fprintf(out, "  #%d now beats #%d beyond the noise\n", of[b] + 1, of[a] + 1);
                    swaps++;
                } else {
                    close++;
                }
            }
        if (!swaps)
            fprintf(out, "  rank order kept: no swap beyond the noise%s\n",
                    close ? " (some are within it of each other)" : "");
    }
    for (int j = 0; j < m; j++) {
        evo_result_free(&res[j]);
        evo_candidate_free(&c[j]);
    }
    free(obs);
    free(res);
    free(of);
    free(c);
    evo_store_elites_free(el, n);
    return s;
}

/* --resume: the re-timings made after generation gen, handed to the strategy again as the first pass did. */
typedef struct {
    loop *L;
    evo_observation *obs;
    int n, cap;
} retime_replay;

static void collect_retime(const evo_retime_rec *r, void *ctx)
{
    retime_replay *x = ctx;
    evo_candidate_rec cr;
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)r->candidate_id);
    if (evo_store_find_candidate(x->L->st, id, EVO_CAND_ROW, &cr, NULL, NULL) != EVO_OK) return;
    evo_observation o = {.verdict = isfinite(r->fitness) ? EVO_V_OK : EVO_V_CRASHED,
                         .fitness = r->fitness,
                         .fitness_lo = r->fitness_lo,
                         .fitness_hi = r->fitness_hi};
    if (evo_genome_parse(x->L->cfg->space, cr.genome, &o.genome, NULL) == EVO_OK) {
        if (x->n == x->cap) {
            x->cap = x->cap ? 2 * x->cap : 8;
            x->obs = evo_xrealloc(x->obs, (size_t)x->cap * sizeof *x->obs);
        }
        x->obs[x->n++] = o;
    }
    evo_store_candidate_free(&cr);
}

static evo_status replay_retimes(loop *L, evo_err *err)
{
    retime_replay x = {L, NULL, 0, 0};
    evo_status s = evo_store_foreach_retime(L->st, L->run.id, L->gen, collect_retime, &x, err);
    if (s == EVO_OK) refresh(L, x.obs, x.n);
    free(x.obs);
    return s;
}

static void update_run(loop *L, const char *state)
{
    free(L->run.state);
    L->run.state = evo_strdup(state);
    L->run.wall_s += evo_now() - L->t0;
    L->run.compile_s += L->compile_s, L->run.check_s += L->check_s, L->run.time_s += L->time_s;
    if (strcmp(state, "running") != 0) {
        char now[32];
        evo_utc_iso8601(now);
        free(L->run.finished_at);
        L->run.finished_at = evo_strdup(now);
    }
    /* only the lease's holder records the run: a run this process never held (a refused --resume) or lost to
     * another is left as it is (checked just before: the update keeps its own retry for a full disk) */
    if (L->lease && !evo_lease_lost(L->lease, NULL, 0) &&
        evo_store_lease_check(L->st, L->run.id, evo_lease_me(L->lease), NULL) == EVO_OK)
        evo_store_update_run(L->st, &L->run, NULL);
    L->run.wall_s -= evo_now() - L->t0; /* keep the running totals additive */
    L->run.compile_s -= L->compile_s, L->run.check_s -= L->check_s, L->run.time_s -= L->time_s;
}

/* Frees everything; the work directory goes unless it holds what explains the outcome: sanitizer reports of demoted
 * elites (said on stderr) or the worker logs of a failed run (said once, at the end of the error message). */
static evo_status finish(loop *L, evo_status s, evo_err *err)
{
    evo_lease_release(L->lease, L->st); /* before the store closes: the run is free for another process */
    L->lease = NULL;
    for (int i = 0; i < L->done_gens; i++) evo_store_gen_free(&L->gens[i]);
    free(L->gens);
    evo_strategy_destroy(L->strat);
    evo_insights_free(L->ins);
    if (L->cfg) evo_space_set_filter(L->cfg->space, NULL, NULL, NULL); /* its limits go with the evaluator */
    g_evaluator = NULL;
    evo_evaluator_close(L->ev);
    evo_store_run_free(&L->run);
    evo_aliases_free(L->aliases);
    evo_store_close(L->st);
    evo_config_free(L->cfg);
    free(L->prior);
    if (L->work_dir) {
        if (L->keep_work)
            fprintf(stderr, "evo: sanitizer reports are kept in %s\n", L->work_dir);
        else
            evo_work_dir_settle(L->work_dir, s, err);
    }
    free(L->work_dir);
    free(L->sanitizer);
    free(L->ids.text);
    free(L->ids.id);
    free(L->island_json);
    free(L->island_seeds);
    free(L->seeds);
    free(L->best);
    free(L->arrived);
    sigaction(SIGINT, &L->old_int, NULL);
    sigaction(SIGTERM, &L->old_term, NULL);
    free(L);
    return s;
}

/* ---- islands ---- */

/* Every island says whether it could open its inputs, store and GPUs, and what search it is; then the new runs
 * begin, all under one id. mine is what open_run returned. */
static evo_status island_start(loop *L, evo_status mine, bool *all_done, evo_err *err)
{
    const evo_run_opts *o = &L->o;
    char fp[512] = "", why[1024] = "";
    int64_t next = 0;
    evo_status s = mine;
    if (s == EVO_OK && !o->resume_run) {
        int64_t last = 0;
        evo_err e2 = {0};
        s = evo_store_last_run(L->st, &last, &e2);
        if (s == EVO_E_NOTFOUND) s = EVO_OK, last = 0;
        if (s != EVO_OK) snprintf(why, sizeof why, "%s", e2.msg);
        next = last + 1;
        snprintf(fp, sizeof fp, "new run of %s, shape set %.12s, population %d, %d generations, strategy %s, seed %llu",
                 L->cfg->task, L->shape_set, o->population ? o->population : L->cfg->evolution.population,
                 o->generations ? o->generations : L->cfg->evolution.generations,
                 o->strategy ? o->strategy : L->cfg->evolution.strategy,
                 (unsigned long long)(o->seed_set ? o->seed : L->cfg->evolution.seed));
    } else if (s == EVO_OK) {
        next = L->run.id;
        snprintf(fp, sizeof fp, "resume of run %lld of %s, shape set %.12s, population %d, %d generations, seed %llu",
                 (long long)L->run.id, L->cfg->task, L->shape_set, L->population, L->generations,
                 (unsigned long long)L->job_seed);
    } else if (err) {
        snprintf(why, sizeof why, "%s", err->msg);
    }
    int64_t job = 0;
    s = evo_island_ready(o->island, s, why, fp, next, L->finished, &job, all_done, err);
    if (s == EVO_OK && !o->resume_run) s = begin_new_run(L, job, err);
    return s;
}

/* The job's figures of generation g (every rank has the same all[]): rank 0's progress line, and the one decision
 * every rank takes from them. Returns true when the job stops; *stop, *failed_at and the messages say why. */
static bool job_decision(loop *L, const evo_island_gen *all, int N, int g, bool speak, int *stall, int *failed_at,
                         int *job_stop)
{
    int any = 0, live = 0, ev = 0, re = 0, mi = 0, counts[EVO_V_COUNT] = {0}, best_at = -1;
    double best = -INFINITY, gen_best = -INFINITY, lo = INFINITY;
    *failed_at = -1;
    for (int r = 0; r < N; r++) {
        any |= all[r].stop;
        live |= all[r].live;
        ev += all[r].evaluated, re += all[r].reused, mi += all[r].migrants_in;
        for (int v = 0; v < EVO_V_COUNT; v++) counts[v] += all[r].counts[v];
        if (all[r].best_so_far > best) best = all[r].best_so_far, best_at = r;
        if (isfinite(all[r].best)) {
            gen_best = fmax(gen_best, all[r].best);
            lo = fmin(lo, all[r].best);
        }
        if ((all[r].stop & EVO_ISLAND_STOP_FAILED) && *failed_at < 0) *failed_at = r;
    }
    if (*failed_at >= 0 && L->failed_gen < 0) L->failed_gen = g;
    L->job_evaluated += ev, L->job_reused += re, L->job_migrants += mi;
    const double before = L->job_best;
    if (best > L->job_best) L->job_best = best, L->job_best_island = best_at;
    *stall = L->job_best > before * 1.001 ? 0 : *stall + 1;
    if (speak && live) {
        char el[32], eta[32], b[32] = "-", range[48] = "-";
        const double elapsed = evo_now() - L->t0;
        fmt_time(elapsed, el, sizeof el);
        fmt_time(elapsed / (g + 1) * (L->generations - g - 1), eta, sizeof eta);
        if (isfinite(gen_best)) {
            snprintf(b, sizeof b, "%.3f", gen_best);
            snprintf(range, sizeof range, "%.3f..%.3f", lo, gen_best);
        }
        fprintf(L->o.out, "gen %2d (%d of %d)  %d islands  %d evaluated (%d reused, %d migrants)", g, g + 1,
                L->generations, N, ev, re, mi);
        for (int v = 0; v < EVO_V_COUNT; v++)
            if (counts[v]) fprintf(L->o.out, " %s %d", evo_verdict_name((evo_verdict)v), counts[v]);
        fprintf(L->o.out, "  best %s (islands' bests %s), job best %s  %s elapsed, ETA %s\n", b, range,
                isfinite(L->job_best) ? (snprintf(b, sizeof b, "%.3f", L->job_best), b) : "-", el, eta);
        fflush(L->o.out);
    }
    *job_stop |= any;
    if (any & (EVO_ISLAND_STOP_FAILED | EVO_ISLAND_STOP_INTERRUPTED)) return true;
    if (any & EVO_ISLAND_STOP_BUDGET) {
        if (speak) fprintf(L->o.out, "time budget of %.3g s reached\n", L->budget);
        return true;
    }
    if (any & EVO_ISLAND_STOP_EXHAUSTED) {
        if (speak) fprintf(L->o.out, "every valid genome has been evaluated on an island\n");
        return true;
    }
    if (L->cfg->evolution.stall_generations > 0 && *stall >= L->cfg->evolution.stall_generations) {
        if (speak) fprintf(L->o.out, "no improvement of the job's best for %d generations: stopping\n", *stall);
        return true;
    }
    return false;
}

/* Migrants, pipelined: an island posts its best M (of the generations before h) at the start of generation h, and
 * the next island measures them in generation h + 1, which is a multiple of K (from generation 2 on). A generation
 * never waits for its neighbour's current one, only for the one before. */
static bool posts_at(const loop *L, int h, int N, int K, int M)
{
    return M > 0 && N > 1 && h >= 1 && (h + 1) % K == 0 && h + 1 < L->generations;
}

/* The loop of an island: the plain loop's steps, with migrants every K-th generation (posted a generation ahead),
 * and after every generation the job's figures. Those of generation g are gathered while generation g + 1 runs,
 * so the islands never wait for the slowest one of a generation; the job's one decision to go on or stop (every
 * rank takes the same one) is taken from them after generation g + 1. An island that failed or was interrupted
 * evaluates nothing more but keeps the job's step until that decision. Returns the run's end state; *ps the
 * status. */
static const char *island_loop(loop *L, evo_observation *obs, double budget, evo_status *ps, evo_err *err)
{
    evo_island *is = L->o.island;
    const int N = evo_island_size(is), K = evo_island_migrate_every(is), M = evo_island_migrants(is);
    const bool speak = evo_island_rank(is) == 0 && !L->o.quiet;
    evo_island_gen *all = evo_xcalloc((size_t)N, sizeof *all);
    const char *stop = "done";
    evo_status s = EVO_OK, cs = EVO_OK;
    evo_err cerr = {0};
    int stall = 0, quit = 0, failed_at = -1, last = -1, job_stop = 0, own_fail = -1;
    bool in_flight = false, decided = false;
    L->budget = budget;
    const double t_loop = evo_now();
    double waited = 0, t_w;
    for (L->gen = 0; L->gen < L->generations && !decided; L->gen++) {
        const int g = L->gen;
        const bool replaying = g < L->done_gens;
        int why = quit, n = 0;
        const bool was_quit = quit != 0;
        free(L->arrived);
        L->arrived = NULL;
        L->n_arrived = 0;
        t_w = evo_now();
        if (posts_at(L, g - 1, N, K, M) && (cs = evo_island_take(is, g, &L->arrived, &L->n_arrived, &cerr)) != EVO_OK)
            break; /* the job's messages failed: nothing collective can follow */
        waited += evo_now() - t_w;
        if (posts_at(L, g, N, K, M) &&
            (cs = evo_island_post(is, g + 1, L->best, L->n_best < M ? L->n_best : M, &cerr)) != EVO_OK)
            break;
        if (!quit) {
            s = generation(L, !replaying, obs, &n, err);
            if (s == EVO_E_INTERRUPTED) s = EVO_OK, why |= EVO_ISLAND_STOP_INTERRUPTED;
            if (s != EVO_OK) why |= EVO_ISLAND_STOP_FAILED;
            if (s == EVO_OK && n == 0) why |= EVO_ISLAND_STOP_EXHAUSTED;
            if (s == EVO_OK && n > 0) {
                for (int i = 0; replaying && i < n; i++)
                    if (obs[i].verdict == EVO_V_OK && obs[i].fitness > L->best_fitness)
                        L->best_fitness = obs[i].fitness;
                evo_strategy_observe(L->strat, obs, n);
                if (replaying && (s = replay_retimes(L, err)) != EVO_OK) why |= EVO_ISLAND_STOP_FAILED;
            }
            if (g_interrupted) why |= EVO_ISLAND_STOP_INTERRUPTED, L->self_interrupted = true;
            if (!replaying && budget > 0 && evo_now() - L->t0 >= budget) why |= EVO_ISLAND_STOP_BUDGET;
            if (!replaying && !(why & EVO_ISLAND_STOP_FAILED)) update_run(L, "running");
        } else { /* stopped: an empty generation, to keep the job's step */
            L->gen_evaluated = L->gen_reused = L->gen_migrants = 0;
            L->gen_best = L->gen_median = NAN;
            memset(L->counts, 0, sizeof L->counts);
        }
        if ((why & EVO_ISLAND_STOP_FAILED) && !(quit & EVO_ISLAND_STOP_FAILED)) own_fail = g;
        quit |= why & (EVO_ISLAND_STOP_FAILED | EVO_ISLAND_STOP_INTERRUPTED);
        evo_island_gen mine = {.stop = why,
                               .evaluated = L->gen_evaluated,
                               .reused = L->gen_reused,
                               .migrants_in = L->gen_migrants,
                               .live = !replaying && !was_quit,
                               .best = L->gen_best,
                               .median = L->gen_median,
                               .best_so_far = L->best_fitness};
        for (int v = 0; v < EVO_V_COUNT; v++) mine.counts[v] = L->counts[v];
        /* this generation's figures go out; the previous one's decide */
        if (in_flight) {
            t_w = evo_now();
            if ((cs = evo_island_generation_finish(is, all, &cerr)) != EVO_OK) break;
            waited += evo_now() - t_w;
            in_flight = false;
            decided = job_decision(L, all, N, g - 1, speak, &stall, &failed_at, &job_stop);
        }
        if ((cs = evo_island_generation_start(is, &mine, &cerr)) != EVO_OK) break;
        in_flight = true;
        last = g;
    }
    /* the last generation's figures, and the post made for a generation that will not run */
    t_w = evo_now();
    if (cs == EVO_OK && in_flight && (cs = evo_island_generation_finish(is, all, &cerr)) == EVO_OK) {
        int f = -1;
        const bool d = job_decision(L, all, N, last, speak, &stall, &f, &job_stop);
        if (failed_at < 0 && d) failed_at = f;
    }
    if (cs == EVO_OK && last >= 0 && posts_at(L, last, N, K, M)) {
        evo_migrant *drop = NULL;
        int n_drop = 0;
        cs = evo_island_take(is, last + 1, &drop, &n_drop, &cerr);
        free(drop);
    }
    if (cs == EVO_OK) cs = evo_island_flush(is, &cerr);
    waited += evo_now() - t_w;
    if (speak && cs == EVO_OK && last >= 0)
        fprintf(L->o.out, "islands: generations 0 to %d took %.2f s on island 0, %.2f s of it waiting for the others\n",
                last, evo_now() - t_loop, waited);
    if (last >= 0) L->gen = last;         /* the generation the job ended in */
    if (own_fail >= 0) L->gen = own_fail; /* where this island's own failure happened (its message says it) */
    if (cs != EVO_OK) {
        if (s == EVO_OK) s = evo_fail(err, cs, "%s", cerr.msg);
        stop = "failed";
    } else if (s != EVO_OK) {
        stop = "failed";
    } else if (failed_at >= 0) {
        L->peer_failed = failed_at;
        stop = "interrupted";
    } else if ((quit | job_stop) & EVO_ISLAND_STOP_INTERRUPTED || L->self_interrupted) {
        stop = "interrupted";
    }
    free(all);
    *ps = s;
    return stop;
}

evo_status evo_run(const evo_run_opts *opts, evo_err *err)
{
    loop *L = evo_xcalloc(1, sizeof *L);
    L->o = *opts;
    if (!L->o.out) L->o.out = stdout;
    L->tty = isatty(fileno(L->o.out));
    L->t0 = evo_now();
    L->best_fitness = -INFINITY;
    L->job_best = -INFINITY;
    L->peer_failed = -1;
    L->failed_gen = -1;
    g_interrupted = 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, &L->old_int);
    sigaction(SIGTERM, &sa, &L->old_term);

    /* A missing compute-sanitizer is found out before the search, not after it. */
    evo_status s = L->o.sanitize ? evo_sanitize_find(L->o.sanitizer, &L->sanitizer, err) : EVO_OK;
    if (s == EVO_OK) s = open_run(L, err);
    if (L->o.island) {
        bool all_done = false;
        s = island_start(L, s, &all_done, err);
        if (s == EVO_OK && all_done) {
            if (evo_island_rank(L->o.island) == 0 && !opts->quiet)
                fprintf(L->o.out, "run %lld is finished on every island; nothing to resume\n", (long long)L->run.id);
            return finish(L, s, err);
        }
        L->finished = false; /* an island whose run is done replays it for the others */
    }
    if (s == EVO_OK && L->finished) {
        if (!L->o.quiet)
            fprintf(L->o.out, "run %lld is finished (done after %d of %d generations); nothing to resume\n",
                    (long long)L->run.id, L->done_gens, L->run.generations);
        return finish(L, s, err);
    }
    /* said once every input has passed: a bad one is the first line */
    if (s == EVO_OK && L->builtin_config && !L->o.quiet) fprintf(stderr, "evo: note: %s\n", EVO_BUILTIN_CONFIG_NOTE);
    if (s == EVO_OK) s = make_strategy(L, err);
    const int done_gens = L->done_gens;
    if (s == EVO_OK && L->o.resume_run && !L->o.quiet) {
        if (done_gens)
            fprintf(L->o.out, "resuming run %lld: generations 0 to %d of %d are stored\n", (long long)L->run.id,
                    done_gens - 1, L->generations);
        else
            fprintf(L->o.out, "resuming run %lld: no generation of %d is stored yet\n", (long long)L->run.id,
                    L->generations);
    }
    if (s == EVO_OK && !L->o.quiet)
        fprintf(L->o.out, "run %lld: %s on %s (%s), strategy %s, population %d, %d generations, seed %lld\n",
                (long long)L->run.id, L->cfg->task, evo_evaluator_gpu(L->ev), evo_evaluator_arch(L->ev),
                L->run.strategy, L->population, L->generations, (long long)L->run.seed);
    if (s == EVO_OK && L->o.island && !L->o.quiet) {
        evo_island *is = L->o.island;
        fprintf(L->o.out,
                "islands: %d on %d host%s (%s); run %lld in every island's store (%.*s.rank<R>); %d migrants every "
                "%d generations, to the next rank in a ring; seeds from %llu and the rank\n",
                evo_island_size(is), evo_island_hosts(is), evo_island_hosts(is) == 1 ? "" : "s", evo_island_library(),
                (long long)L->run.id, (int)(strlen(L->o.db_path) - strlen(".rank0")), L->o.db_path,
                evo_island_migrants(is), evo_island_migrate_every(is), (unsigned long long)L->job_seed);
    }
    evo_observation *obs = evo_xcalloc((size_t)L->population + 1 + EVO_ISLAND_MAX_MIGRANTS, sizeof *obs);
    int stall = 0;
    /* no config when opening the store or loading it failed */
    const double budget = L->o.time_budget_s >= 0 ? L->o.time_budget_s : L->cfg ? L->cfg->evolution.time_budget_s : 0;
    const char *stop = "done";
    if (s == EVO_OK && L->o.island) stop = island_loop(L, obs, budget, &s, err);
    for (L->gen = L->o.island ? L->gen : 0; s == EVO_OK && !L->o.island && L->gen < L->generations; L->gen++) {
        if (g_interrupted) {
            stop = "interrupted";
            break;
        }
        const bool replaying = L->gen < done_gens;
        /* the budget never stops a run before its first new generation (workers that took the budget to start
         * would leave the run with nothing evaluated) */
        if (!replaying && L->gen > done_gens && budget > 0 && evo_now() - L->t0 >= budget) {
            if (!L->o.quiet) fprintf(L->o.out, "time budget of %.3g s reached\n", budget);
            break;
        }
        const double before = L->best_fitness;
        int n = 0;
        s = generation(L, !replaying, obs, &n, err);
        if (s != EVO_OK) break;
        if (replaying) {
            for (int i = 0; i < n; i++)
                if (obs[i].verdict == EVO_V_OK && obs[i].fitness > L->best_fitness) L->best_fitness = obs[i].fitness;
        }
        if (n == 0) {
            if (!L->o.quiet) fprintf(L->o.out, "every valid genome has been evaluated\n");
            break;
        }
        evo_strategy_observe(L->strat, obs, n);
        char lost[1024];
        if (evo_lease_lost(L->lease, lost, sizeof lost)) { /* taken over while this generation ran */
            s = evo_fail(err, EVO_E_NOTFOUND, "%s; this process stops and leaves the run to it", lost);
            break;
        }
        if (replaying && (s = replay_retimes(L, err)) != EVO_OK) break;
        if (g_interrupted) {
            stop = "interrupted";
            break;
        }
        if (!replaying) {
            stall = L->best_fitness > before * 1.001 ? 0 : stall + 1;
            update_run(L, "running");
            if (L->cfg->evolution.stall_generations > 0 && stall >= L->cfg->evolution.stall_generations) {
                if (!L->o.quiet) fprintf(L->o.out, "no improvement for %d generations: stopping\n", stall);
                break;
            }
        }
    }
    if (s == EVO_E_INTERRUPTED) stop = "interrupted", s = EVO_OK;
    /* The end-of-run check: do the elites keep their rank order when timed again? */
    if (s == EVO_OK && !g_interrupted && strcmp(stop, "interrupted") != 0 && evo_evaluator_needs_compile(L->ev)) {
        if (L->gen >= L->generations) L->gen = L->generations - 1; /* the re-timing belongs to the last generation */
        s = retime_elites(L, "end of run", true, err);
        if (s == EVO_E_INTERRUPTED) stop = "interrupted", s = EVO_OK;
    }
    if (s == EVO_OK && L->o.sanitize && strcmp(stop, "interrupted") != 0) s = sanitize_elites(L, err);
    if (s == EVO_E_INTERRUPTED || (s == EVO_OK && g_interrupted)) stop = "interrupted", s = EVO_OK;
    /* an island that never started (another island could not) leaves its stored run as it was */
    if (L->st && L->run.id && (!L->o.island || evo_island_started(L->o.island)))
        update_run(L, s != EVO_OK ? "failed" : stop);
    if (s == EVO_OK && L->o.island && !L->o.quiet) {
        char wall[32], best[48] = "-";
        fmt_time(evo_now() - L->t0, wall, sizeof wall);
        if (isfinite(L->job_best)) snprintf(best, sizeof best, "%.3f (island %d)", L->job_best, L->job_best_island);
        fprintf(L->o.out,
                "job run %lld %s: %s wall; %d islands, %lld evaluations (%lld reused, %lld of them migrants); best "
                "fitness %s\n",
                (long long)L->run.id, stop, wall, evo_island_size(L->o.island), (long long)L->job_evaluated,
                (long long)L->job_reused, (long long)L->job_migrants, best);
    }
    if (s == EVO_OK && !L->o.quiet && !L->o.island) {
        char wall[32], best[32] = "-";
        fmt_time(evo_now() - L->t0, wall, sizeof wall);
        if (isfinite(L->best_fitness)) snprintf(best, sizeof best, "%.3f", L->best_fitness);
        fprintf(L->o.out,
                "run %lld %s: %s wall, of which compile %.1f s; summed over evaluations: correctness %.1f s, timing "
                "%.1f s; best fitness %s; worker restarts %d\n",
                (long long)L->run.id, stop, wall, L->compile_s, L->check_s, L->time_s, best,
                evo_evaluator_restarts(L->ev));
        const char *db = L->o.db_path ? " --db " : "", *path = L->o.db_path ? L->o.db_path : "";
        fprintf(L->o.out, "see: evo elite --show%s%s, evo history%s%s --run %lld\n", db, path, db, path,
                (long long)L->run.id);
    }
    if (s != EVO_OK && err && L->write_failed && L->run.id) {
        char at[200];
        snprintf(at, sizeof at, "; run %lld stopped at that write: %d evaluation%s of generation %d stored before it",
                 (long long)L->run.id, L->stored_gen, L->stored_gen == 1 ? "" : "s", L->gen);
        const size_t n = strnlen(err->msg, sizeof err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, "%s", at);
    }
    if (s == EVO_OK && !strcmp(stop, "interrupted") && L->o.island && L->peer_failed >= 0) {
        s = evo_fail(err, EVO_E_INTERRUPTED,
                     "island %d failed in generation %d (its own message is on its stderr); the job stopped after "
                     "generation %d with every island's finished evaluations stored: continue it with the same command "
                     "and --resume %lld",
                     L->peer_failed, L->failed_gen >= 0 ? L->failed_gen : L->gen, L->gen, (long long)L->run.id);
        evo_island_set_peer_stop(L->o.island);
    } else if (s == EVO_OK && !strcmp(stop, "interrupted") && L->o.island) {
        s = evo_fail(err, EVO_E_INTERRUPTED,
                     "interrupted: finished evaluations are stored in every island's store; continue the job with "
                     "the same command and --resume %lld",
                     (long long)L->run.id);
        if (!L->self_interrupted) evo_island_set_peer_stop(L->o.island);
    } else if (s == EVO_OK && !strcmp(stop, "interrupted")) {
        s = evo_fail(err, EVO_E_INTERRUPTED, "%s: finished evaluations are stored; continue with evo run --resume %lld",
                     L->out_closed ? "standard output was closed, so the run stopped" : "interrupted",
                     (long long)L->run.id);
    }
    free(obs);
    return finish(L, s, err);
}
