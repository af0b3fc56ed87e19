/* cmd_elite.c — `evo elite --show`: the top-K candidates of one (task, arch, shape set), as a table or JSON, by
 * fitness or (--shape NAME) by their speedup on one shape of the set. Opens the store read-only; by default shows
 * the task, arch and shape set of the latest run.
 */
#include "cli.h"
#include "config.h"
#include "space.h"
#include "store.h"
#include "task.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *shape, *metric, *unit;
    double value;
} metric_row;

typedef struct {
    metric_row *rows;
    int n, cap;
} metric_list;

static void collect_metric(const char *shape, const char *metric, double value, const char *unit, void *ctx)
{
    metric_list *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->rows = evo_xrealloc(l->rows, (size_t)l->cap * sizeof *l->rows);
    }
    l->rows[l->n++] = (metric_row){evo_strdup(shape ? shape : ""), evo_strdup(metric ? metric : ""),
                                   unit ? evo_strdup(unit) : NULL, value};
}

static void metric_list_free(metric_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->rows[i].shape);
        free(l->rows[i].metric);
        free(l->rows[i].unit);
    }
    free(l->rows);
    memset(l, 0, sizeof *l);
}

/* The metrics `evo elite` names, in display order, with their labels; any other stored metric follows by name. */
static const struct {
    const char *name, *label;
} known_metrics[] = {
    {EVO_PROFILE_TENSOR_PIPE, "tensor pipe"},      {EVO_PROFILE_DRAM, "DRAM throughput"},
    {EVO_PROFILE_OCCUPANCY, "achieved occupancy"}, {EVO_PROFILE_BANK_CONFLICTS, "bank conflicts"},
    {EVO_PROFILE_ISSUE_SLOTS, "issue slots"},      {EVO_PROFILE_DURATION, "duration"},
};

static int metric_order(const char *name)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(known_metrics); i++)
        if (strcmp(known_metrics[i].name, name) == 0) return (int)i;
    return (int)EVO_ARRAY_LEN(known_metrics);
}

static const char *metric_label(const char *name)
{
    int i = metric_order(name);
    return i < (int)EVO_ARRAY_LEN(known_metrics) ? known_metrics[i].label : name;
}

static int metric_cmp(const void *a, const void *b)
{
    const metric_row *x = a, *y = b;
    int c = strcmp(x->shape, y->shape);
    if (c) return c;
    int ox = metric_order(x->metric), oy = metric_order(y->metric);
    if (ox != oy) return ox - oy;
    return strcmp(x->metric, y->metric);
}

/* ---- figures derived from one elite ---- */

static double geomean_rate(const evo_eval_rec *e)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < e->n_shapes; i++) {
        double t = e->shapes[i].rate;
        if (isfinite(t) && t > 0) {
            sum += log(t);
            n++;
        }
    }
    return n ? exp(sum / n) : NAN;
}

/* Worst (largest) value of a per-shape error; NaN anywhere is the worst of all. */
static double worst(const evo_eval_rec *e, size_t offset)
{
    double w = NAN;
    for (int i = 0; i < e->n_shapes; i++) {
        double v = *(const double *)((const char *)&e->shapes[i] + offset);
        if (isnan(v)) return NAN;
        if (isnan(w) || v > w) w = v;
    }
    return w;
}

static void short_id(const char *key, char out[9]) { snprintf(out, 9, "%.8s", key ? key : ""); }

/* ---- text ---- */

static void fmt_num(char *buf, size_t n, const char *fmt, double v)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt, v);
}

static void fmt_int(char *buf, size_t n, int v)
{
    if (v < 0)
        snprintf(buf, n, "?");
    else
        snprintf(buf, n, "%d", v);
}

static void fmt_metric_value(char *buf, size_t n, double v, const char *unit)
{
    const char *fmt = (v == floor(v) && fabs(v) < 1e15) || fabs(v) >= 100 ? "%.0f" : "%.1f";
    int k = isnan(v) ? snprintf(buf, n, "-") : snprintf(buf, n, fmt, v);
    if (unit && *unit && k >= 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, " %s", unit);
}

static void print_profile(const metric_list *l)
{
    const char *shape = NULL;
    for (int i = 0; i < l->n; i++) {
        const metric_row *m = &l->rows[i];
        if (!shape || strcmp(shape, m->shape) != 0) {
            printf("%s  ncu %s: ", shape ? "\n" : "", m->shape);
            shape = m->shape;
        } else {
            printf(", ");
        }
        char v[64];
        fmt_metric_value(v, sizeof v, m->value, m->unit);
        printf("%s %s", metric_label(m->metric), v);
    }
    if (shape) printf("\n");
}

/* "±0.42%": the half-width of the fitness interval relative to the fitness; "-" when unknown. */
static void fmt_pm(char *buf, size_t n, double f, double lo, double hi)
{
    if (!(lo > 0) || !(hi > 0) || !(f > 0))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "±%.2f%%", 100 * (hi - lo) / 2 / f);
}

static void fmt_interval(char *buf, size_t n, const char *fmt, double lo, double hi)
{
    char a[32], b[32];
    if (!(lo > 0) || !(hi > 0)) {
        snprintf(buf, n, "-");
        return;
    }
    snprintf(a, sizeof a, fmt, lo);
    snprintf(b, sizeof b, fmt, hi);
    snprintf(buf, n, "%s..%s", a, b);
}

static void print_table(const evo_elite_rec *el, int n, metric_list *profiles, const evo_retime_rec *rt)
{
    const char *unit = evo_cli_task_of(n > 0 ? el[0].cand.task : NULL)->rate_unit;
    printf("rank  id        speedup    ±95%%  %7s  regs  smem KiB  spills B  worst rel-L2  genome\n", unit);
    for (int i = 0; i < n; i++) {
        const evo_candidate_rec *c = &el[i].cand;
        const evo_eval_rec *e = &el[i].eval;
        char id[9], tf[32], regs[16], smem[32], spill[16], rel[32];
        short_id(c->key, id);
        fmt_num(tf, sizeof tf, "%.1f", geomean_rate(e));
        fmt_int(regs, sizeof regs, c->registers);
        if (c->smem_bytes < 0)
            snprintf(smem, sizeof smem, "?");
        else
            snprintf(smem, sizeof smem, "%.1f", c->smem_bytes / 1024.0);
        fmt_int(spill, sizeof spill, c->spill_bytes);
        fmt_num(rel, sizeof rel, "%.2e", worst(e, offsetof(evo_shape_result, rel_l2)));
        char pm[32];
        fmt_pm(pm, sizeof pm, e->fitness, e->fitness_lo, e->fitness_hi);
        /* ± is two bytes: its column gets one more byte of width to line up. */
        printf("%4d  %-8s  %6.3fx  %8s  %7s  %4s  %8s  %8s  %-12s  %s\n", i + 1, id, e->fitness, pm, tf, regs, smem,
               spill, rel, c->genome ? c->genome : "");
    }
    for (int i = 0; i < n; i++) {
        const evo_candidate_rec *c = &el[i].cand;
        const evo_eval_rec *e = &el[i].eval;
        char id[9];
        short_id(c->key, id);
        char fi[80];
        fmt_interval(fi, sizeof fi, "%.3f", e->fitness_lo, e->fitness_hi);
        printf("\n#%d %s  %.3fx", i + 1, id, e->fitness);
        if (e->fitness_lo > 0) printf(" [95%% interval %s]", fi);
        printf("  candidate %lld", (long long)c->id);
        if (e->run_id > 0) printf(", run %lld generation %d", (long long)e->run_id, e->generation);
        if (e->gpu) printf(", %s", e->gpu);
        if (rt[i].created_at) {
            fmt_interval(fi, sizeof fi, "%.3f", rt[i].fitness_lo, rt[i].fitness_hi);
            printf("\n  re-timed (%s", rt[i].why ? rt[i].why : "");
            if (rt[i].run_id > 0) printf(", run %lld generation %d", (long long)rt[i].run_id, rt[i].generation);
            printf("): %.3fx [%s]", rt[i].fitness, fi);
        }
        /* µ is two bytes: its columns get one more byte of width to line up. */
        printf("\n  %-28s %11s %20s %20s %8s %8s %9s %9s %11s\n", "shape", "median µs", "p10..p90 µs",
               "95% interval µs", "speedup", unit, "rel-L2", "max-abs", "e2e rel-L2");
        for (int s = 0; s < e->n_shapes; s++) {
            const evo_shape_result *r = &e->shapes[s];
            char med[32], p10[32], p90[32], spread[72], sp[32], tf[32], rel[32], mx[32], e2e[32], ci[80];
            fmt_interval(ci, sizeof ci, "%.2f", r->ci_lo_us, r->ci_hi_us);
            fmt_num(med, sizeof med, "%.2f", r->median_us);
            fmt_num(p10, sizeof p10, "%.2f", r->p10_us);
            fmt_num(p90, sizeof p90, "%.2f", r->p90_us);
            snprintf(spread, sizeof spread, "%s..%s", p10, p90);
            fmt_num(sp, sizeof sp, "%.3fx", r->speedup);
            fmt_num(tf, sizeof tf, "%.1f", r->rate);
            fmt_num(rel, sizeof rel, "%.2e", r->rel_l2);
            fmt_num(mx, sizeof mx, "%.2e", r->max_abs);
            fmt_num(e2e, sizeof e2e, "%.2e", r->e2e_rel_l2);
            printf("  %-28s %10s %19s %19s %8s %8s %9s %9s %11s\n", r->shape, med, spread, ci, sp, tf, rel, mx, e2e);
        }
        print_profile(&profiles[i]);
    }
}

/* ---- JSON ---- */

static cJSON *elite_json(int rank, const evo_elite_rec *el, const metric_list *prof, const evo_retime_rec *rt)
{
    const evo_candidate_rec *c = &el->cand;
    const evo_eval_rec *e = &el->eval;
    char id[9];
    short_id(c->key, id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", rank);
    evo_json_str(o, "id", id);
    evo_json_str(o, "key", c->key);
    cJSON_AddNumberToObject(o, "candidate_id", (double)c->id);
    evo_json_str(o, "task", c->task);
    evo_json_str(o, "arch", c->arch);
    evo_json_str(o, "shape_set", e->shape_set);
    evo_json_str(o, "genome", c->genome);
    evo_json_str(o, "accuracy", e->accuracy);
    evo_json_num(o, "fitness", e->fitness);
    evo_json_num(o, "fitness_lo", e->fitness_lo > 0 ? e->fitness_lo : NAN);
    evo_json_num(o, "fitness_hi", e->fitness_hi > 0 ? e->fitness_hi : NAN);
    if (rt->created_at) {
        cJSON *r = cJSON_AddObjectToObject(o, "retimed");
        evo_json_str(r, "why", rt->why);
        evo_json_num(r, "fitness", rt->fitness);
        evo_json_num(r, "fitness_lo", rt->fitness_lo);
        evo_json_num(r, "fitness_hi", rt->fitness_hi);
        evo_json_str(r, "at", rt->created_at);
    }
    char key[48];
    snprintf(key, sizeof key, "%s_geomean", evo_cli_task_of(c->task)->rate_key);
    evo_json_num(o, key, geomean_rate(e));
    cJSON_AddNumberToObject(o, "registers", c->registers);
    cJSON_AddNumberToObject(o, "smem_bytes", c->smem_bytes);
    cJSON_AddNumberToObject(o, "spill_bytes", c->spill_bytes);
    cJSON_AddNumberToObject(o, "stack_bytes", c->stack_bytes);
    evo_json_num(o, "worst_rel_l2", worst(e, offsetof(evo_shape_result, rel_l2)));
    evo_json_num(o, "worst_max_abs", worst(e, offsetof(evo_shape_result, max_abs)));
    cJSON_AddNumberToObject(o, "evaluation_id", (double)e->id);
    evo_json_num(o, "run_id", e->run_id > 0 ? (double)e->run_id : NAN); /* null: not of a run */
    evo_json_num(o, "generation", e->generation >= 0 ? e->generation : NAN);
    evo_json_str(o, "gpu", e->gpu);
    evo_json_str(o, "evaluated_at", e->created_at);
    cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
    for (int i = 0; i < e->n_shapes; i++) {
        cJSON *s = evo_json_shape_result(&e->shapes[i], evo_cli_task_of(c->task));
        cJSON_AddItemToArray(shapes, s);
    }
    cJSON *profile = cJSON_AddArrayToObject(o, "profile");
    for (int i = 0; i < prof->n; i++) {
        cJSON *m = cJSON_CreateObject();
        evo_json_str(m, "shape", prof->rows[i].shape);
        evo_json_str(m, "metric", prof->rows[i].metric);
        evo_json_num(m, "value", prof->rows[i].value);
        evo_json_str(m, "unit", prof->rows[i].unit);
        cJSON_AddItemToArray(profile, m);
    }
    return o;
}

/* ---- the command ---- */

typedef struct {
    const char *db, *task, *arch, *shape, *accuracy, *config;
    int top;
    int json;
    int per_shape;
} elite_opts;

/* `evo elite`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_elite[] = {
    {"show", 'S', no_argument, false, NULL, "print the table (the default action)"},
    {"top", 'k', required_argument, true, "K", "how many (default 3)"},
    {"shape", 'H', required_argument, false, "NAME",
     "rank by the speedup on the shape called NAME (a name of the config's shapes),\n"
     "e.g. to pick the kernel for one problem size: evo export --id ID"},
    {"per-shape", 'P', no_argument, false, NULL,
     "per timed shape (every shape set of the task and arch), the top K of each class by\n"
     "that shape's median time, with the shape's dispatch bucket (with --shape: that shape)"},
    {"accuracy", 'C', required_argument, false, "CLASS", "only this accuracy class"},
    {"json", 'J', no_argument, false, NULL,
     "machine-readable output (a JSON array, best first within each class; every entry\n"
     "names its \"accuracy\")"},
    {"db", 'D', required_argument, false, "F", "database (default population.db)"},
    {"task", 'T', required_argument, false, "T", "rank candidates of task T (default: the latest run's)"},
    {"arch", 'A', required_argument, false, "sm_XX",
     "rank candidates compiled for this arch (default: the latest run's)"},
    {"config", 'c', required_argument, false, "F",
     "show genomes as F's space writes them (default: the config stored with the run):\n"
     "a text stored listing knobs inactive under F's conditions is shown without them"},
    {0},
};

static evo_status parse_opts(int argc, char **argv, elite_opts *o, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("elite");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_elite, longopts, EVO_ARRAY_LEN(longopts));
    *o = (elite_opts){.db = EVO_DEFAULT_DB, .top = 3};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":k:", longopts, NULL)) != -1) {
        switch (c) {
            case 'S': break;
            case 'J': o->json = 1; break;
            case 'P': o->per_shape = 1; break;
            case 'D': o->db = optarg; break;
            case 'T': o->task = optarg; break;
            case 'A': o->arch = optarg; break;
            case 'H': o->shape = optarg; break;
            case 'C': o->accuracy = optarg; break;
            case 'c': o->config = optarg; break;
            case 'k': {
                char *end;
                long k = strtol(optarg, &end, 10);
                if (*optarg == '\0' || *end || k < 1 || k > 1000000)
                    return evo_cli_usage_error(self, err, "--top wants a positive integer, got '%s'", optarg);
                o->top = (int)k;
                break;
            }
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    if (o->shape && !*o->shape) return evo_cli_usage_error(self, err, "--shape wants a shape name");
    evo_device_limits lim;
    char arch[16];
    snprintf(arch, sizeof arch, "%.15s", o->arch ? o->arch : "");
    if (arch[0] && arch[strlen(arch) - 1] == 'a') arch[strlen(arch) - 1] = '\0'; /* sm_90a: sm_90's */
    if (o->arch && evo_device_limits_for_arch(arch, &lim, NULL) != EVO_OK)
        return evo_cli_usage_error(self, err, "--arch takes sm_80, sm_86, sm_89 or sm_90, not '%s'", o->arch);
    if (o->task && !evo_task_find(o->task)) {
        char known[256] = "";
        for (int i = 0; evo_tasks[i]; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", evo_tasks[i]->name);
        return evo_cli_usage_error(self, err, "--task takes one of %s, not '%s'", known, o->task);
    }
    return EVO_OK;
}

/* ---- ranking by one shape ---- */

/* The index of the shape called `name` (the text before its dimensions: "big" of "big(4,16,4096,128)") in e, or -1. */
static int shape_index(const evo_eval_rec *e, const char *name)
{
    const size_t len = strlen(name);
    for (int i = 0; i < e->n_shapes; i++) {
        const char *s = e->shapes[i].shape;
        if (strncmp(s, name, len) == 0 && (s[len] == '(' || s[len] == '\0' || s[len] == ' ')) return i;
    }
    return -1;
}

static double shape_speedup(const evo_elite_rec *el, const char *name)
{
    const int i = shape_index(&el->eval, name);
    return i < 0 || !(el->eval.shapes[i].speedup > 0) ? -1.0 : el->eval.shapes[i].speedup;
}

typedef struct {
    double speedup, fitness;
    int64_t eval_id;
    int index;
} shape_key;

static int shape_key_cmp(const void *a, const void *b)
{
    const shape_key *x = a, *y = b;
    if (x->speedup != y->speedup) return x->speedup > y->speedup ? -1 : 1;
    if (x->fitness != y->fitness) return x->fitness > y->fitness ? -1 : 1;
    return x->eval_id < y->eval_id ? -1 : x->eval_id > y->eval_id;
}

/* Orders every elite by its speedup on shape `name` (then by fitness) and sets *shown to the number of those that
 * measured it, at most top. A name that no elite's shape set has is a usage error that lists the names it has. */
static evo_status rank_by_shape(evo_elite_rec *el, int n, const char *name, int top, int *shown, evo_err *err)
{
    int with = 0;
    for (int i = 0; i < n; i++) with += shape_speedup(&el[i], name) > 0;
    if (with == 0) {
        char names[512] = "";
        const evo_eval_rec *e = &el[0].eval;
        for (int i = 0; i < e->n_shapes; i++) {
            const size_t len = strlen(names), cut = strcspn(e->shapes[i].shape, "( ");
            snprintf(names + len, sizeof names - len, "%s%.*s", i ? ", " : "", (int)cut, e->shapes[i].shape);
        }
        return evo_fail(err, EVO_E_USAGE,
                        "elite --shape %s: no elite was measured on a shape of that name (shapes: %s)", name, names);
    }
    shape_key *k = evo_xcalloc((size_t)n, sizeof *k);
    for (int i = 0; i < n; i++) k[i] = (shape_key){shape_speedup(&el[i], name), el[i].eval.fitness, el[i].eval.id, i};
    qsort(k, (size_t)n, sizeof *k, shape_key_cmp);
    evo_elite_rec *sorted = evo_xcalloc((size_t)n, sizeof *sorted);
    for (int i = 0; i < n; i++) sorted[i] = el[k[i].index];
    memcpy(el, sorted, (size_t)n * sizeof *el);
    free(sorted);
    free(k);
    *shown = with < top ? with : top;
    return EVO_OK;
}

/* Which (task, arch, shape set) to rank: what was asked, completed from the latest run that matches it. When no
 * run matches (say, --arch of a GPU never searched on), the task still defaults to the latest run's and the shape
 * set is left open. */
static evo_status resolve_scope(evo_store *st, const elite_opts *o, evo_run_rec *run, evo_err *err)
{
    int64_t id;
    evo_status s = evo_store_last_run_matching(st, o->task, o->arch, &id, err);
    if (s == EVO_OK) return evo_store_get_run(st, id, run, err);
    if (s != EVO_E_NOTFOUND) return s;
    s = evo_store_last_run_matching(st, o->task, NULL, &id, err);
    if (s == EVO_E_NOTFOUND) return EVO_OK;
    if (s == EVO_OK) s = evo_store_get_run(st, id, run, err);
    if (s == EVO_OK) {
        free(run->arch);
        free(run->shape_set);
        run->arch = NULL;
        run->shape_set = NULL;
    }
    return s;
}

/* What the fitness of the run's shape set is, from the configuration stored with the run. */
static const char *fitness_words(const evo_run_rec *run)
{
    evo_config *cfg = NULL;
    evo_fitness kind = EVO_FITNESS_GEOMEAN;
    evo_err ignored;
    if (run->config_text &&
        evo_config_parse("(stored config)", run->config_text, strlen(run->config_text), &cfg, &ignored) == EVO_OK)
        kind = cfg->fitness;
    evo_config_free(cfg);
    return evo_fitness_describe(kind);
}

/* Each elite's genome text as the space of the config (--config, else the run's stored one) writes it: texts stored
 * before knobs had conditions list inactive knobs too (space.h). The store is not changed; a text the config's space
 * does not read is shown as stored. */
static evo_status canonical_genomes(const elite_opts *o, const evo_run_rec *run, evo_elite_rec *el, int n, evo_err *err)
{
    evo_config *cfg = NULL;
    if (o->config) {
        evo_status s = evo_config_load(o->config, &cfg, err);
        if (s != EVO_OK) return s;
    } else {
        evo_err ignored;
        if (!run->config_text ||
            evo_config_parse("(stored config)", run->config_text, strlen(run->config_text), &cfg, &ignored) != EVO_OK)
            return EVO_OK;
    }
    for (int i = 0; i < n && evo_space_has_conditions(cfg->space); i++) {
        evo_genome g;
        char text[EVO_GENOME_TEXT_MAX];
        if (!el[i].cand.genome || evo_genome_parse(cfg->space, el[i].cand.genome, &g, NULL) != EVO_OK) continue;
        evo_genome_format(cfg->space, &g, text, sizeof text);
        free(el[i].cand.genome);
        el[i].cand.genome = evo_strdup(text);
    }
    evo_config_free(cfg);
    return EVO_OK;
}

/* One accuracy class's elites (on one GPU model, when the store holds several), ranked on their own, with what is
 * shown of each. */
typedef struct {
    const char *accuracy; /* NULL: any (a task unknown here) */
    const char *model;    /* NULL: any GPU; else the evaluations made on this GPU model */
    evo_elite_rec *el;
    int n, n_all; /* shown, and read (freed) */
    metric_list *profiles;
    evo_retime_rec *rt;
} section;

static evo_status read_section(evo_store *st, const elite_opts *o, const char *task, const char *arch,
                               const char *shape_set, section *sec, evo_err *err)
{
    /* with --shape every elite is read and ranked by that shape; n_all of them are freed, n shown */
    evo_status s = evo_store_elites_on(st, task, arch, shape_set, sec->accuracy, sec->model,
                                       o->shape ? INT_MAX : o->top, &sec->el, &sec->n, err);
    sec->n_all = sec->n;
    if (s != EVO_OK || sec->n == 0) return s;
    if (o->shape) s = rank_by_shape(sec->el, sec->n, o->shape, o->top, &sec->n, err);
    if (s != EVO_OK) return s;
    sec->profiles = evo_xcalloc((size_t)sec->n, sizeof *sec->profiles);
    for (int i = 0; i < sec->n && s == EVO_OK; i++) {
        s = evo_store_profiles(st, sec->el[i].cand.id, collect_metric, &sec->profiles[i], err);
        if (sec->profiles[i].n)
            qsort(sec->profiles[i].rows, (size_t)sec->profiles[i].n, sizeof *sec->profiles[i].rows, metric_cmp);
    }
    sec->rt = evo_xcalloc((size_t)sec->n, sizeof *sec->rt);
    for (int i = 0; i < sec->n && s == EVO_OK; i++) {
        bool found = false;
        s = evo_store_last_retime(st, sec->el[i].cand.id, sec->el[i].eval.shape_set, &sec->rt[i], &found, err);
    }
    return s;
}

static void section_free(section *sec)
{
    for (int i = 0; sec->profiles && i < sec->n; i++) metric_list_free(&sec->profiles[i]);
    free(sec->profiles);
    for (int i = 0; sec->rt && i < sec->n; i++) evo_store_retime_free(&sec->rt[i]);
    free(sec->rt);
    evo_store_elites_free(sec->el, sec->n_all);
}

/* ---- --per-shape ---- */

/* One shape of one class (on one GPU model): its rows (ranked) and its bucket. */
typedef struct {
    const evo_shape_elite_rec *rows;
    int n;
    const char *model;
    evo_bucket bucket;
    bool has_bucket;
} shape_group;

static int group_cmp(const void *a, const void *b)
{
    const shape_group *x = a, *y = b;
    int c = strcmp(x->rows[0].accuracy, y->rows[0].accuracy);
    if (c) return c;
    if (x->has_bucket != y->has_bucket) return x->has_bucket ? -1 : 1;
    for (int k = 0; x->has_bucket && k < EVO_BUCKET_KEYS; k++)
        if (x->bucket.key[k] != y->bucket.key[k]) return x->bucket.key[k] < y->bucket.key[k] ? -1 : 1;
    c = strcmp(x->rows[0].result.shape, y->rows[0].result.shape);
    return c ? c : strcmp(x->rows[0].result.fields, y->rows[0].result.fields);
}

/* The rows of one class's model section, cut into shapes (consecutive rows of equal fields), with their buckets. */
static int group_rows(const evo_task *t, const evo_shape_elite_rec *r, int n, const char *model, const char *only,
                      shape_group *g, int n_g)
{
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && strcmp(r[j].accuracy, r[i].accuracy) == 0 &&
               strcmp(r[j].result.fields, r[i].result.fields) == 0)
            j++;
        const size_t len = only ? strlen(only) : 0;
        const char *name = r[i].result.shape;
        if (!only || (strncmp(name, only, len) == 0 && (name[len] == '(' || name[len] == '\0' || name[len] == ' '))) {
            shape_group *x = &g[n_g++];
            *x = (shape_group){.rows = &r[i], .n = j - i, .model = model};
            evo_shape sh;
            if (t && t->bucket && evo_shape_from_fields_json(t, name, r[i].result.fields, &sh, NULL) == EVO_OK)
                x->has_bucket = t->bucket(&sh, &x->bucket);
        }
        i = j;
    }
    return n_g;
}

static cJSON *shape_group_json(const shape_group *g, const evo_task *t)
{
    cJSON *o = cJSON_CreateObject();
    evo_json_str(o, "accuracy", g->rows[0].accuracy);
    evo_json_str(o, "shape", g->rows[0].result.shape);
    cJSON *f = cJSON_Parse(g->rows[0].result.fields);
    cJSON_AddItemToObject(o, "fields", f ? f : cJSON_CreateObject());
    if (g->has_bucket) {
        cJSON *b = cJSON_AddObjectToObject(o, "bucket");
        evo_json_str(b, "label", g->bucket.label);
        cJSON *k = cJSON_AddArrayToObject(b, "key");
        for (int i = 0; i < EVO_BUCKET_KEYS; i++) cJSON_AddItemToArray(k, cJSON_CreateNumber((double)g->bucket.key[i]));
    } else {
        cJSON_AddNullToObject(o, "bucket");
    }
    if (g->model) evo_json_str(o, "gpu_model", g->model);
    cJSON *arr = cJSON_AddArrayToObject(o, "elites");
    for (int i = 0; i < g->n; i++) {
        const evo_shape_elite_rec *r = &g->rows[i];
        cJSON *e = cJSON_CreateObject();
        char id[9];
        short_id(r->key, id);
        cJSON_AddNumberToObject(e, "rank", r->rank);
        evo_json_str(e, "id", id);
        evo_json_str(e, "key", r->key);
        cJSON_AddNumberToObject(e, "candidate_id", (double)r->cand.id);
        evo_json_str(e, "genome", r->cand.genome);
        evo_json_num(e, "median_us", r->result.median_us);
        evo_json_num(e, "ci_lo_us", r->result.ci_lo_us > 0 ? r->result.ci_lo_us : NAN);
        evo_json_num(e, "ci_hi_us", r->result.ci_hi_us > 0 ? r->result.ci_hi_us : NAN);
        evo_json_num(e, "p10_us", r->result.p10_us);
        evo_json_num(e, "p90_us", r->result.p90_us);
        evo_json_num(e, t ? t->rate_key : "rate", r->result.rate);
        evo_json_num(e, "speedup", r->result.speedup);
        cJSON_AddNumberToObject(e, "evaluation_id", (double)r->eval_id);
        evo_json_num(e, "run_id", r->run_id > 0 ? (double)r->run_id : NAN); /* null: not of a run */
        evo_json_num(e, "generation", r->generation >= 0 ? r->generation : NAN);
        evo_json_str(e, "gpu", r->gpu);
        evo_json_str(e, "shape_set", r->shape_set);
        cJSON_AddItemToArray(arr, e);
    }
    return o;
}

static void shape_group_print(const shape_group *g, const evo_task *t)
{
    printf("\n%s", g->rows[0].result.shape);
    if (g->has_bucket) printf("  bucket %s", g->bucket.label);
    printf("\n  %4s  %-8s  %11s  %20s  %8s  %8s  %9s  %-9s  %-24s  %s\n", "rank", "id", "median µs", "95% interval µs",
           t ? t->rate_unit : "rate", "speedup", "candidate", "run/gen", "gpu", "genome");
    for (int i = 0; i < g->n; i++) {
        const evo_shape_elite_rec *r = &g->rows[i];
        char id[9], med[32], ci[80], rate[32], sp[32], rg[32];
        short_id(r->key, id);
        fmt_num(med, sizeof med, "%.2f", r->result.median_us);
        fmt_interval(ci, sizeof ci, "%.2f", r->result.ci_lo_us, r->result.ci_hi_us);
        fmt_num(rate, sizeof rate, "%.1f", r->result.rate);
        fmt_num(sp, sizeof sp, "%.3fx", r->result.speedup);
        if (r->run_id > 0)
            snprintf(rg, sizeof rg, "%lld/%d", (long long)r->run_id, r->generation);
        else
            snprintf(rg, sizeof rg, "-");
        printf("  %4d  %-8s  %10s  %18s  %8s  %8s  %9lld  %-9s  %-24s  %s\n", r->rank, id, med, ci, rate, sp,
               (long long)r->cand.id, rg, r->gpu ? r->gpu : "-", r->cand.genome ? r->cand.genome : "");
    }
}

/* `evo elite --per-shape`: each shape's fastest candidates per class (and GPU model, when several measured). */
static evo_status per_shape(evo_store *st, const elite_opts *o, evo_err *err)
{
    evo_run_rec run = {0};
    evo_status s = resolve_scope(st, o, &run, err);
    const char *task = o->task ? o->task : run.task;
    const char *arch = o->arch ? o->arch : run.arch;
    const evo_task *t = task ? evo_task_find(task) : NULL;
    if (s == EVO_OK && o->accuracy && t && evo_task_accuracy_find(t, o->accuracy) < 0) {
        char names[128];
        evo_task_accuracy_names(t, names, sizeof names);
        s = evo_cli_usage_error(evo_cli_find("elite"), err, "--accuracy %s: task %s has the classes %s", o->accuracy,
                                task, names);
    }
    char **models = NULL;
    int n_models = 0;
    if (s == EVO_OK) s = evo_store_gpu_models(st, task, arch, NULL, &models, &n_models, err);
    const int per_model = n_models > 1 ? n_models : 1;
    evo_shape_elite_rec **rows = evo_xcalloc((size_t)per_model, sizeof *rows);
    int *n_rows = evo_xcalloc((size_t)per_model, sizeof *n_rows), total = 0;
    for (int m = 0; m < per_model && s == EVO_OK; m++) {
        s = evo_store_shape_elites(st, task, arch, o->accuracy, n_models > 1 ? models[m] : NULL, NULL, o->top, &rows[m],
                                   &n_rows[m], err);
        total += n_rows[m];
    }
    shape_group *g = evo_xcalloc((size_t)(total ? total : 1), sizeof *g);
    int n_g = 0;
    for (int m = 0; m < per_model && s == EVO_OK; m++) {
        const int first = n_g;
        n_g = group_rows(t, rows[m], n_rows[m], n_models > 1 ? models[m] : NULL, o->shape, g, n_g);
        qsort(g + first, (size_t)(n_g - first), sizeof *g, group_cmp);
    }
    if (s == EVO_OK && n_g == 0 && o->shape && total > 0)
        s = evo_fail(err, EVO_E_USAGE,
                     "elite --per-shape --shape %s: no shape of that name has a correct, timed result", o->shape);
    else if (s == EVO_OK && n_g == 0)
        s = evo_fail(err, EVO_E_NOTFOUND,
                     "%s: no elites yet%s%s%s%s%s%s — no candidate has passed every gate; run `evo run`", o->db,
                     task ? " for " : "", task ? task : "", arch ? " on " : "", arch ? arch : "",
                     o->accuracy ? " in accuracy class " : "", o->accuracy ? o->accuracy : "");
    if (s == EVO_OK && o->json) {
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; i < n_g; i++) cJSON_AddItemToArray(arr, shape_group_json(&g[i], t));
        char *text = cJSON_Print(arr);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(arr);
    } else if (s == EVO_OK) {
        for (int i = 0; i < n_g; i++) {
            const bool head =
                i == 0 || g[i].model != g[i - 1].model || strcmp(g[i].rows[0].accuracy, g[i - 1].rows[0].accuracy) != 0;
            if (!head) {
                shape_group_print(&g[i], t);
                continue;
            }
            if (i) printf("\n");
            if (g[i].model && (i == 0 || g[i].model != g[i - 1].model))
                printf("== %s (times measured on this GPU model)\n", g[i].model);
            printf("%s: per-shape elites of %s on %s, accuracy class %s: the top %d on each shape by its median time\n"
                   "(every shape set; a candidate counts once per shape, with its fastest correct result there)\n",
                   o->db, g[i].rows[0].cand.task ? g[i].rows[0].cand.task : "?",
                   g[i].rows[0].cand.arch ? g[i].rows[0].cand.arch : "?", g[i].rows[0].accuracy, o->top);
            shape_group_print(&g[i], t);
        }
    }
    free(g);
    for (int m = 0; m < per_model; m++) evo_store_shape_elites_free(rows[m], n_rows[m]);
    free(rows);
    free(n_rows);
    for (int m = 0; m < n_models; m++) free(models[m]);
    free(models);
    evo_store_run_free(&run);
    return s;
}

EVO_CMD(elite)
{
    elite_opts o;
    evo_status s = parse_opts(argc, argv, &o, err);
    if (s != EVO_OK) return s;
    evo_store *st;
    s = evo_store_open(o.db, EVO_STORE_READONLY, &st, err);
    if (s != EVO_OK) return s;
    if (o.per_shape) {
        s = per_shape(st, &o, err);
        evo_store_close(st);
        return s;
    }

    evo_run_rec run = {0};
    int n_secs = 0, shown = 0;
    s = resolve_scope(st, &o, &run, err);
    const char *task = o.task ? o.task : run.task;
    const char *arch = o.arch ? o.arch : run.arch;
    /* A store several GPU models wrote into (evo merge, islands) is ranked per model too: a speedup is relative to
     * the baseline timed on the GPU that measured it. One model (the usual case): no model sections. */
    char **models = NULL;
    int n_models = 0;
    if (s == EVO_OK) s = evo_store_gpu_models(st, task, arch, run.shape_set, &models, &n_models, err);
    const int per_model = n_models > 1 ? n_models : 1;
    section *secs = evo_xcalloc((size_t)(EVO_ACCURACY_MAX * per_model), sizeof *secs);
    /* each accuracy class of the task ranked on its own (--accuracy: that one) */
    const evo_task *t = task ? evo_task_find(task) : NULL;
    if (s == EVO_OK && o.accuracy && t && evo_task_accuracy_find(t, o.accuracy) < 0) {
        char names[128];
        evo_task_accuracy_names(t, names, sizeof names);
        s = evo_cli_usage_error(evo_cli_find("elite"), err, "--accuracy %s: task %s has the classes %s", o.accuracy,
                                task, names);
    }
    for (int m = 0; m < per_model; m++) {
        const char *model = n_models > 1 ? models[m] : NULL;
        if (o.accuracy)
            secs[n_secs++] = (section){.accuracy = o.accuracy, .model = model};
        else if (t)
            for (int i = 0; i < evo_task_accuracy_count(t) && i < EVO_ACCURACY_MAX; i++)
                secs[n_secs++] = (section){.accuracy = evo_task_accuracy_name(t, i), .model = model};
        else
            secs[n_secs++] = (section){.model = model};
    }
    evo_err shape_err = {0};
    for (int i = 0; i < n_secs && s == EVO_OK; i++) {
        s = read_section(st, &o, task, arch, run.shape_set, &secs[i], err);
        /* --shape names a shape none of a class's elites has: fine while another class has it */
        if (s == EVO_E_USAGE && o.shape && n_secs > 1) {
            if (!shape_err.msg[0]) shape_err = *err;
            secs[i].n = 0;
            s = EVO_OK;
        }
        shown += secs[i].n;
    }
    for (int i = 0; i < n_secs && s == EVO_OK; i++) s = canonical_genomes(&o, &run, secs[i].el, secs[i].n, err);
    if (s == EVO_OK && shown == 0 && shape_err.msg[0]) {
        *err = shape_err;
        s = EVO_E_USAGE;
    } else if (s == EVO_OK && shown == 0) {
        s = evo_fail(err, EVO_E_NOTFOUND,
                     "%s: no elites yet%s%s%s%s%s%s — no candidate has passed every gate; run "
                     "`evo run`",
                     o.db, task ? " for " : "", task ? task : "", arch ? " on " : "", arch ? arch : "",
                     o.accuracy ? " in accuracy class " : "", o.accuracy ? o.accuracy : "");
    }
    if (s == EVO_OK && o.json) {
        cJSON *arr = cJSON_CreateArray();
        for (int k = 0; k < n_secs; k++)
            for (int i = 0; i < secs[k].n; i++) {
                cJSON *e = elite_json(i + 1, &secs[k].el[i], &secs[k].profiles[i], &secs[k].rt[i]);
                if (secs[k].model) cJSON_AddStringToObject(e, "gpu_model", secs[k].model);
                cJSON_AddItemToArray(arr, e);
            }
        char *text = cJSON_Print(arr);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(arr);
    } else if (s == EVO_OK) {
        const char *model_said = NULL;
        for (int k = 0; k < n_secs; k++) {
            const section *c = &secs[k];
            if (!c->n) continue;
            if (c->model && c->model != model_said)
                printf("%s== %s (speedups against the baseline timed on this GPU model)\n", k ? "\n" : "", c->model);
            printf("%s%s: top %d of %s on %s", k && shown && c->model == model_said ? "\n" : "", o.db, c->n,
                   c->el[0].cand.task, c->el[0].cand.arch);
            model_said = c->model;
            if (c->accuracy) printf(", accuracy class %s", c->accuracy);
            if (run.shape_set) printf(", shape set %.8s (as in run %lld)", run.shape_set, (long long)run.id);
            printf("\nspeedup: %s of baseline time / candidate time\n", fitness_words(&run));
            if (o.shape) {
                const int i = shape_index(&c->el[0].eval, o.shape);
                printf("ranked by the speedup on %s: ", c->el[0].eval.shapes[i].shape);
                for (int j = 0; j < c->n; j++) printf("%s%.3fx", j ? ", " : "", shape_speedup(&c->el[j], o.shape));
                printf("\n");
            }
            printf("\n");
            print_table(c->el, c->n, c->profiles, c->rt);
        }
    }
    for (int k = 0; k < n_secs; k++) section_free(&secs[k]);
    free(secs);
    for (int m = 0; m < n_models; m++) free(models[m]);
    free(models);
    evo_store_run_free(&run);
    evo_store_close(st);
    return s;
}
