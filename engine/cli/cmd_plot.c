/* cmd_plot.c — `evo plot`: SVG charts of one run (default: the latest) — best and median fitness per generation,
 * speedup per shape of the top elites of the run's search, and the fitness of every evaluation. Opens the store
 * read-only; writes DIR/run<ID>-fitness.svg, -elites.svg and -evaluations.svg (DIR default plots/).
 */
#include "cli.h"
#include "paths.h"
#include "plot.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *db, *dir;
    int64_t run; /* 0 = the latest */
    int top;
} plot_opts;

/* `evo plot`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_plot[] = {
    {"run", 'R', required_argument, false, "ID", "the run to plot (default: the latest)"},
    {"output", 'o', required_argument, true, "DIR", "where to write (created when missing; default plots)"},
    {"db", 'D', required_argument, false, "F", "database (default population.db)"},
    {"top", 'k', required_argument, true, "K", "elites in the speedup chart, 1 to 10 (default 5)"},
    {0},
};

static evo_status parse_opts(int argc, char **argv, plot_opts *o, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("plot");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_plot, longopts, EVO_ARRAY_LEN(longopts));
    *o = (plot_opts){.db = EVO_DEFAULT_DB, .dir = "plots", .top = 5};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:k:", longopts, NULL)) != -1) {
        switch (c) {
            case 'D': o->db = optarg; break;
            case 'o':
                if (!*optarg) return evo_cli_usage_error(self, err, "-o wants a directory");
                o->dir = optarg;
                break;
            case 'R': {
                char *end;
                errno = 0;
                long long id = strtoll(optarg, &end, 10);
                if (*optarg == '\0' || *end || errno || id < 1)
                    return evo_cli_usage_error(self, err, "--run wants a run id (a positive integer), got '%s'",
                                               optarg);
                o->run = id;
                break;
            }
            case 'k': {
                char *end;
                long k = strtol(optarg, &end, 10);
                if (*optarg == '\0' || *end || k < 1 || k > 10) /* one colour each */
                    return evo_cli_usage_error(self, err, "--top wants an integer from 1 to 10, got '%s'", optarg);
                o->top = (int)k;
                break;
            }
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    return EVO_OK;
}

/* "<task> on sm_90 · NVIDIA H100 80GB HBM3 · seed 7, population 6, strategy ga" */
static void run_subtitle(const evo_run_rec *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s on %s%s%s · seed %lld, population %d, strategy %s · %s", r->task ? r->task : "?",
             r->arch ? r->arch : "?", r->gpu ? " · " : "", r->gpu ? r->gpu : "", (long long)r->seed, r->population,
             r->strategy ? r->strategy : "?", r->state ? r->state : "?");
}

static const char *const chart_names[] = {"fitness", "elites", "evaluations"};

static void svg_path(const char *dir, int64_t run, const char *what, char *path, size_t n)
{
    snprintf(path, n, "%s/run%lld-%s.svg", dir, (long long)run, what);
}

/* Before anything is written: DIR is a directory (or is created), each chart a regular file or a new name. */
static evo_status check_outputs(const char *dir, int64_t run, const char *db, evo_err *err)
{
    struct stat sb;
    if (evo_path_is_stdio(dir))
        return evo_fail(err, EVO_E_USAGE,
                        "plot -o -: evo plot writes three files into a folder, not to standard output");
    if (lstat(dir, &sb) != 0) return EVO_OK; /* created, with its parents */
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return evo_fail(err, EVO_E_USAGE, "plot -o %s: not a directory (evo plot writes its charts into one)",
                        evo_show(dir).s);
    for (size_t i = 0; i < EVO_ARRAY_LEN(chart_names); i++) {
        char path[4096];
        svg_path(dir, run, chart_names[i], path, sizeof path);
        evo_status s = evo_path_check_output("plot", path, false, err);
        if (s == EVO_OK) s = evo_path_check_not_input("plot", path, "--db", db, true, err);
        if (s != EVO_OK) return s;
    }
    return EVO_OK;
}

static evo_status write_svg(const char *dir, int64_t run, const char *what, evo_str *svg, evo_err *err)
{
    char path[4096];
    svg_path(dir, run, what, path, sizeof path);
    evo_status s = evo_write_file_atomic(path, evo_str_cstr(svg), svg->len, err);
    if (s == EVO_OK) printf("%s\n", evo_show(path).s);
    return s;
}

/* ---- (a) best and median fitness per generation ---- */

static evo_status plot_fitness(const plot_opts *o, const evo_run_rec *run, const evo_gen_rec *g, int n, evo_err *err)
{
    double *x = evo_xcalloc((size_t)(n ? n : 1), sizeof *x), *best = evo_xcalloc((size_t)(n ? n : 1), sizeof *best),
           *med = evo_xcalloc((size_t)(n ? n : 1), sizeof *med);
    for (int i = 0; i < n; i++) x[i] = g[i].generation, best[i] = g[i].best_fitness, med[i] = g[i].median_fitness;
    evo_plot_series series[2] = {
        {.name = "best", .x = x, .y = best, .n = n, .line = 1, .marker = EVO_PLOT_CIRCLE},
        {.name = "median", .x = x, .y = med, .n = n, .line = 1, .marker = EVO_PLOT_SQUARE},
    };
    char title[128], sub[512];
    snprintf(title, sizeof title, "Run %lld: best and median fitness per generation", (long long)run->id);
    run_subtitle(run, sub, sizeof sub);
    evo_plot_xy chart = {
        .title = title,
        .subtitle = sub,
        .x_label = "generation",
        .y_label = "fitness (speedup over the baseline)",
        .series = series,
        .n_series = 2,
        .integer_x = 1,
        .y_ref = 1.0,
        .y_ref_label = "baseline",
        .note = n ? "no candidate passed every gate in this run" : "no generation of this run has finished yet",
    };
    evo_str svg = {0};
    evo_status s = evo_plot_xy_svg(&chart, &svg, err);
    if (s == EVO_OK) s = write_svg(o->dir, run->id, "fitness", &svg, err);
    evo_str_free(&svg);
    free(x);
    free(best);
    free(med);
    return s;
}

/* ---- (b) speedup per shape of the top elites ---- */

static evo_status plot_elites(const plot_opts *o, evo_store *st, const evo_run_rec *run, evo_err *err)
{
    evo_elite_rec *el = NULL;
    int n = 0;
    evo_status s = evo_store_elites(st, run->task, run->arch, run->shape_set, NULL, o->top, &el, &n, err);
    if (s != EVO_OK) return s;

    /* The groups: every shape of any elite, in the order the first elite lists them. */
    const char **shapes = NULL;
    int ns = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < el[i].eval.n_shapes; k++) {
            const char *name = el[i].eval.shapes[k].shape;
            int seen = 0;
            for (int j = 0; j < ns && !seen; j++) seen = strcmp(shapes[j], name) == 0;
            if (seen) continue;
            shapes = evo_xrealloc(shapes, (size_t)(ns + 1) * sizeof *shapes);
            shapes[ns++] = name;
        }
    double *values = evo_xmalloc((size_t)(ns * n > 0 ? ns * n : 1) * sizeof *values);
    for (int g = 0; g < ns; g++)
        for (int b = 0; b < n; b++) {
            values[g * n + b] = NAN;
            for (int k = 0; k < el[b].eval.n_shapes; k++)
                if (strcmp(el[b].eval.shapes[k].shape, shapes[g]) == 0)
                    values[g * n + b] = el[b].eval.shapes[k].speedup;
        }
    char **legend = evo_xcalloc((size_t)(n ? n : 1), sizeof *legend);
    for (int b = 0; b < n; b++) {
        char t[64];
        snprintf(t, sizeof t, "#%d %.8s (%.2fx)", b + 1, el[b].cand.key ? el[b].cand.key : "?", el[b].eval.fitness);
        legend[b] = evo_strdup(t);
    }

    char title[128], sub[512];
    if (n)
        snprintf(title, sizeof title, "Run %lld: speedup per shape of the top %d elite%s", (long long)run->id, n,
                 n == 1 ? "" : "s");
    else
        snprintf(title, sizeof title, "Run %lld: speedup per shape of the elites", (long long)run->id);
    snprintf(sub, sizeof sub, "%s on %s%s%s · shape set %.8s · speedup = baseline time / candidate time",
             run->task ? run->task : "?", run->arch ? run->arch : "?", run->gpu ? " · " : "", run->gpu ? run->gpu : "",
             run->shape_set ? run->shape_set : "?");
    evo_plot_bars chart = {
        .title = title,
        .subtitle = sub,
        .y_label = "speedup over the baseline",
        .groups = shapes,
        .n_groups = ns,
        .bars = (const char *const *)legend,
        .n_bars = n,
        .values = values,
        .y_ref = 1.0,
        .y_ref_label = "baseline",
        .note = "no candidate has passed every gate yet",
    };
    evo_str svg = {0};
    s = evo_plot_bars_svg(&chart, &svg, err);
    if (s == EVO_OK) s = write_svg(o->dir, run->id, "elites", &svg, err);
    evo_str_free(&svg);
    for (int b = 0; b < n; b++) free(legend[b]);
    free(legend);
    free(values);
    free(shapes);
    evo_store_elites_free(el, n);
    return s;
}

/* ---- (c) the fitness of every evaluation ---- */

typedef struct {
    double *x[2], *y[2]; /* [0] OK, [1] REGRESSED */
    int n[2], cap[2];
    int failed[EVO_V_COUNT];
} eval_points;

static void collect_eval(const evo_candidate_rec *c, const evo_eval_rec *e, void *ctx)
{
    (void)c;
    eval_points *p = ctx;
    int k = e->verdict == EVO_V_OK ? 0 : e->verdict == EVO_V_REGRESSED ? 1 : -1;
    if (k < 0 || !isfinite(e->fitness)) {
        if ((unsigned)e->verdict < EVO_V_COUNT) p->failed[e->verdict]++;
        return;
    }
    if (p->n[k] == p->cap[k]) {
        p->cap[k] = p->cap[k] ? 2 * p->cap[k] : 64;
        p->x[k] = evo_xrealloc(p->x[k], (size_t)p->cap[k] * sizeof *p->x[k]);
        p->y[k] = evo_xrealloc(p->y[k], (size_t)p->cap[k] * sizeof *p->y[k]);
    }
    p->x[k][p->n[k]] = e->generation;
    p->y[k][p->n[k]] = e->fitness;
    p->n[k]++;
}

static evo_status plot_evaluations(const plot_opts *o, evo_store *st, const evo_run_rec *run, evo_err *err)
{
    eval_points pts = {0};
    evo_status s = evo_store_foreach_run_evaluation(st, run->id, -1, collect_eval, &pts, err);
    if (s != EVO_OK) return s;
    evo_plot_series series[2] = {
        {.name = "OK",
         .x = pts.x[0],
         .y = pts.y[0],
         .n = pts.n[0],
         .marker = EVO_PLOT_CIRCLE,
         .marker_r = 3,
         .opacity = 0.6,
         .jitter = 0.25},
        {.name = "REGRESSED",
         .x = pts.x[1],
         .y = pts.y[1],
         .n = pts.n[1],
         .marker = EVO_PLOT_DIAMOND,
         .marker_r = 3,
         .opacity = 0.7,
         .jitter = 0.25},
    };
    for (int k = 0; k < 2; k++)
        if (!series[k].n) series[k].name = NULL; /* no legend entry for what is not there */
    char title[128], sub[512], foot[512] = "";
    snprintf(title, sizeof title, "Run %lld: fitness of every evaluation", (long long)run->id);
    run_subtitle(run, sub, sizeof sub);
    int nfailed = 0;
    for (int v = 0; v < EVO_V_COUNT; v++) nfailed += pts.failed[v];
    if (nfailed) {
        size_t k = (size_t)snprintf(foot, sizeof foot, "not shown: %d evaluation%s without fitness (", nfailed,
                                    nfailed == 1 ? "" : "s");
        const char *sep = "";
        for (int v = 0; v < EVO_V_COUNT && k < sizeof foot; v++) {
            if (!pts.failed[v]) continue;
            k += (size_t)snprintf(foot + k, sizeof foot - k, "%s%s %d", sep, evo_verdict_name((evo_verdict)v),
                                  pts.failed[v]);
            sep = ", ";
        }
        if (k < sizeof foot) snprintf(foot + k, sizeof foot - k, ")");
    }
    evo_plot_xy chart = {
        .title = title,
        .subtitle = sub,
        .x_label = "generation",
        .y_label = "fitness (speedup over the baseline)",
        .series = series,
        .n_series = 2,
        .integer_x = 1,
        .y_ref = 1.0,
        .y_ref_label = "baseline",
        .note = "no evaluation of this run has a fitness",
        .footnote = nfailed ? foot : NULL,
    };
    evo_str svg = {0};
    s = evo_plot_xy_svg(&chart, &svg, err);
    if (s == EVO_OK) s = write_svg(o->dir, run->id, "evaluations", &svg, err);
    evo_str_free(&svg);
    for (int k = 0; k < 2; k++) {
        free(pts.x[k]);
        free(pts.y[k]);
    }
    return s;
}

EVO_CMD(plot)
{
    plot_opts o;
    evo_status s = parse_opts(argc, argv, &o, err);
    if (s != EVO_OK) return s;
    evo_store *st;
    int64_t id = o.run;
    evo_run_rec run;
    evo_gen_rec *gens;
    int n;
    s = evo_cli_open_run(o.db, &id, &st, &run, &gens, &n, err);
    if (!st) return s;
    if (s == EVO_OK) s = check_outputs(o.dir, id, o.db, err);
    if (s == EVO_OK) s = evo_mkdir_p(o.dir, err);
    if (s == EVO_OK) s = plot_fitness(&o, &run, gens, n, err);
    if (s == EVO_OK) s = plot_elites(&o, st, &run, err);
    if (s == EVO_OK) s = plot_evaluations(&o, st, &run, err);
    for (int i = 0; i < n; i++) evo_store_gen_free(&gens[i]);
    free(gens);
    evo_store_run_free(&run);
    evo_store_close(st);
    return s;
}
