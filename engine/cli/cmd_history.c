/* cmd_history.c — `evo history`: one line per generation of a run (default: the latest) with best and median
 * fitness, evaluated / reused counts, verdict counts and the wall-time split; `--json` for machines.
 * Opens the store read-only.
 */
#include "cli.h"
#include "store.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *db;
    int64_t run; /* 0 = the latest */
    int json;
} history_opts;

/* `evo history`'s options: parsing (getopt_long through evo_cli_longopts) and the usage's option lines. */
const evo_cli_opt evo_cli_opts_history[] = {
    {"run", 'R', required_argument, false, "ID", "the run to show (default: the latest)"},
    {"json", 'J', no_argument, false, NULL, "machine-readable output"},
    {"db", 'D', required_argument, false, "F", "database (default population.db)"},
    {0},
};

static evo_status parse_opts(int argc, char **argv, history_opts *o, evo_err *err)
{
    const evo_cmd *self = evo_cli_find("history");
    struct option longopts[EVO_CLI_MAX_OPTS];
    evo_cli_longopts(evo_cli_opts_history, longopts, EVO_ARRAY_LEN(longopts));
    *o = (history_opts){.db = EVO_DEFAULT_DB};
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
            case 'J': o->json = 1; break;
            case 'D': o->db = optarg; break;
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
            case ':': return evo_cli_usage_error(self, err, "%s needs a value", argv[optind - 1]);
            default: return evo_cli_usage_error(self, err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return evo_cli_usage_error(self, err, "unexpected argument '%s'", argv[optind]);
    return EVO_OK;
}

static void fmt_num(char *buf, size_t n, const char *fmt, double v)
{
    if (!isfinite(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt, v);
}

/* The generations after which the elites were re-timed because the baseline drifted (retimes, schema 3): the next
 * generation counts their new figures, so its best may be lower without anything having got worse. */
typedef struct {
    int gen[4096];
    int n;
} retimed_after;

static void note_retime(const evo_retime_rec *r, void *ctx)
{
    retimed_after *x = ctx;
    if (r->why && !strcmp(r->why, "baseline drift") && x->n < (int)EVO_ARRAY_LEN(x->gen))
        x->gen[x->n++] = r->generation;
}

static bool was_retimed(const retimed_after *x, int gen)
{
    for (int i = 0; i < x->n; i++)
        if (x->gen[i] == gen) return true;
    return false;
}

static void print_text(const char *db, const evo_run_rec *r, const evo_gen_rec *g, int n, const retimed_after *rt)
{
    printf("%s: run %lld — %s on %s, strategy %s, seed %lld, population %d, %d generations planned; %s\n", db,
           (long long)r->id, r->task, r->arch, r->strategy ? r->strategy : "?", (long long)r->seed, r->population,
           r->generations, r->state);
    char wall[32], comp[32], chk[32], tim[32];
    fmt_num(wall, sizeof wall, "%.1f", r->wall_s);
    fmt_num(comp, sizeof comp, "%.1f", r->compile_s);
    fmt_num(chk, sizeof chk, "%.1f", r->check_s);
    fmt_num(tim, sizeof tim, "%.1f", r->time_s);
    /* compiling is wall time of the driver; the gates' times are summed over the evaluations (several workers run
     * at once, and a replay's are the recording's), so they may add up to more than the wall */
    printf("started %s, %s%s; wall %s s, of which compile %s s; summed over evaluations: check %s s, timing %s s",
           r->started_at, r->finished_at ? "finished " : "not finished", r->finished_at ? r->finished_at : "", wall,
           comp, chk, tim);
    if (r->gpu) printf("; %s", r->gpu);
    printf("\n\n");
    if (n == 0) {
        printf("no generation of this run has finished yet\n");
        return;
    }
    printf("%4s  %8s  %8s  %9s  %6s  %7s  %9s  %7s  %6s  %6s  %s\n", "gen", "best", "median", "evaluated", "reused",
           "wall s", "compile s", "check s", "time s", "noise", "verdicts");
    int best = -1;
    bool any_retime = false;
    for (int i = 0; i < n; i++) {
        const evo_gen_rec *x = &g[i];
        char b[32], m[32], w[32], c[32], k[32], t[32], noise[32];
        const bool after_retime = i > 0 && was_retimed(rt, g[i - 1].generation);
        fmt_num(b, sizeof b, after_retime ? "%.3fx*" : "%.3fx", x->best_fitness);
        any_retime |= after_retime;
        fmt_num(m, sizeof m, "%.3fx", x->median_fitness);
        fmt_num(w, sizeof w, "%.1f", x->wall_s);
        fmt_num(c, sizeof c, "%.1f", x->compile_s);
        fmt_num(k, sizeof k, "%.1f", x->check_s);
        fmt_num(t, sizeof t, "%.1f", x->time_s);
        fmt_num(noise, sizeof noise, "%.1f%%", x->baseline_noise * 100);
        printf("%4d  %8s  %8s  %9d  %6d  %7s  %9s  %7s  %6s  %6s  ", x->generation, b, m, x->evaluated, x->reused, w, c,
               k, t, noise);
        const char *sep = "";
        for (int v = 0; v < EVO_V_COUNT; v++) {
            if (!x->counts[v]) continue;
            printf("%s%s %d", sep, evo_verdict_name((evo_verdict)v), x->counts[v]);
            sep = ", ";
        }
        printf("\n");
        if (isfinite(x->best_fitness) && (best < 0 || x->best_fitness > g[best].best_fitness)) best = i;
    }
    printf("\nbest and median count the elites carried into each generation%s\n",
           any_retime ? "; * the elites were re-timed before it (the baseline drifted): their new figures count" : "");
    if (best >= 0)
        printf("best: %.3fx in generation %d: %s\n", g[best].best_fitness, g[best].generation,
               g[best].best_genome ? g[best].best_genome : "?");
}

static void print_json(const evo_run_rec *r, const evo_gen_rec *g, int n, const retimed_after *rt)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *run = cJSON_AddObjectToObject(root, "run");
    cJSON_AddNumberToObject(run, "id", (double)r->id);
    evo_json_str(run, "task", r->task);
    evo_json_str(run, "arch", r->arch);
    evo_json_str(run, "shape_set", r->shape_set);
    evo_json_str(run, "state", r->state);
    evo_json_str(run, "strategy", r->strategy);
    cJSON_AddNumberToObject(run, "seed", (double)r->seed);
    cJSON_AddNumberToObject(run, "population", r->population);
    cJSON_AddNumberToObject(run, "generations", r->generations);
    evo_json_str(run, "started_at", r->started_at);
    evo_json_str(run, "finished_at", r->finished_at);
    evo_json_str(run, "config_path", r->config_path);
    evo_json_str(run, "gpu", r->gpu);
    evo_json_str(run, "driver", r->driver);
    evo_json_str(run, "nvrtc_version", r->nvrtc_version);
    evo_json_str(run, "evo_version", r->evo_version);
    evo_json_num(run, "wall_s", r->wall_s);
    evo_json_num(run, "compile_s", r->compile_s);
    evo_json_num(run, "check_s", r->check_s);
    evo_json_num(run, "time_s", r->time_s);
    cJSON *gens = cJSON_AddArrayToObject(root, "generations");
    for (int i = 0; i < n; i++) {
        const evo_gen_rec *x = &g[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "generation", x->generation);
        evo_json_num(o, "best_fitness", x->best_fitness);
        evo_json_num(o, "median_fitness", x->median_fitness);
        cJSON_AddNumberToObject(o, "evaluated", x->evaluated);
        cJSON_AddNumberToObject(o, "reused", x->reused);
        cJSON *counts = cJSON_AddObjectToObject(o, "counts");
        for (int v = 0; v < EVO_V_COUNT; v++)
            cJSON_AddNumberToObject(counts, evo_verdict_name((evo_verdict)v), x->counts[v]);
        evo_json_num(o, "wall_s", x->wall_s);
        evo_json_num(o, "compile_s", x->compile_s);
        evo_json_num(o, "check_s", x->check_s);
        evo_json_num(o, "time_s", x->time_s);
        evo_json_num(o, "baseline_noise", x->baseline_noise);
        evo_json_str(o, "best_genome", x->best_genome);
        cJSON_AddBoolToObject(o, "elites_retimed_before", i > 0 && was_retimed(rt, g[i - 1].generation));
        cJSON_AddItemToArray(gens, o);
    }
    char *text = cJSON_Print(root);
    printf("%s\n", text);
    free(text);
    cJSON_Delete(root);
}

evo_status evo_cli_open_run(const char *db, int64_t *id, evo_store **st, evo_run_rec *run, evo_gen_rec **gens, int *n,
                            evo_err *err)
{
    *gens = NULL;
    *n = 0;
    memset(run, 0, sizeof *run);
    *st = NULL;
    evo_status s = evo_store_open(db, EVO_STORE_READONLY, st, err);
    if (s != EVO_OK) {
        *st = NULL;
        return s;
    }
    if (!*id) s = evo_store_last_run(*st, id, err);
    if (s == EVO_OK) s = evo_store_get_run(*st, *id, run, err);
    if (s == EVO_OK) s = evo_store_generations(*st, *id, gens, n, err);
    return s;
}

EVO_CMD(history)
{
    history_opts o;
    evo_status s = parse_opts(argc, argv, &o, err);
    if (s != EVO_OK) return s;
    evo_store *st;
    int64_t id = o.run;
    evo_run_rec run;
    evo_gen_rec *gens;
    int n;
    s = evo_cli_open_run(o.db, &id, &st, &run, &gens, &n, err);
    if (!st) return s;
    retimed_after *rt = evo_xcalloc(1, sizeof *rt);
    if (s == EVO_OK) s = evo_store_foreach_retime(st, id, -1, note_retime, rt, err);
    if (s == EVO_OK) {
        if (o.json)
            print_json(&run, gens, n, rt);
        else
            print_text(evo_show(o.db).s, &run, gens, n, rt);
    }
    free(rt);
    for (int i = 0; i < n; i++) evo_store_gen_free(&gens[i]);
    free(gens);
    evo_store_run_free(&run);
    evo_store_close(st);
    return s;
}
