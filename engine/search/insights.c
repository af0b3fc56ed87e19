/* insights.c — per-knob-value statistics and the mutation weights they give (see insights.h).
 * Log fitness is summed in fixed point, so the statistics, and the weights drawn from them, do not depend on the
 * order the evaluations arrived in (floating-point sums would, in their last bits).
 */
#include "insights.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_SCALE 4294967296.0 /* 2^32 units per nat: |log speedup| < 2e9 before the sums could overflow */

typedef struct {
    int n, n_fail, n_timed;
    int64_t sum_log; /* fixed point, LOG_SCALE units */
} cell;

struct evo_insights {
    const evo_space *space;
    cell cells[EVO_MAX_KNOBS][EVO_MAX_DOMAIN];
    int total, skipped, total_timed;
    int64_t total_sum_log;
};

evo_insights *evo_insights_new(const evo_space *space)
{
    evo_insights *ins = evo_xcalloc(1, sizeof *ins);
    ins->space = space;
    return ins;
}

void evo_insights_free(evo_insights *ins) { free(ins); }

static bool is_failure(evo_verdict v)
{
    switch (v) {
        case EVO_V_INVALID:
        case EVO_V_COMPILE_FAIL:
        case EVO_V_RESOURCE_FAIL:
        case EVO_V_LAUNCH_FAIL:
        case EVO_V_CRASHED:
        case EVO_V_TIMEOUT:
        case EVO_V_INCORRECT: return true;
        default: return false;
    }
}

void evo_insights_add(evo_insights *ins, const evo_genome *g, evo_verdict v, double fitness)
{
    if (v == EVO_V_NOT_RECORDED) return; /* a replay without a result says nothing about the genome */
    bool fail = is_failure(v);
    bool timed = (v == EVO_V_OK || v == EVO_V_REGRESSED) && isfinite(fitness) && fitness > 0;
    int64_t q = timed ? llround(log(fitness) * LOG_SCALE) : 0;
    const int nk = evo_space_n_knobs(ins->space);
    const uint32_t act = evo_space_active(ins->space, g);
    for (int k = 0; k < nk; k++) {
        if (!(act >> k & 1u)) continue; /* an inactive knob's value took no part in the result */
        cell *c = &ins->cells[k][g->idx[k]];
        c->n++;
        c->n_fail += fail;
        if (timed) {
            c->n_timed++;
            c->sum_log += q;
        }
    }
    ins->total++;
    if (timed) {
        ins->total_timed++;
        ins->total_sum_log += q;
    }
}

void evo_insights_add_stored(const char *genome, evo_verdict v, double fitness, void *ctx)
{
    evo_insights *ins = ctx;
    evo_genome g;
    if (evo_genome_parse(ins->space, genome, &g, NULL) != EVO_OK) {
        ins->skipped++;
        return;
    }
    evo_insights_add(ins, &g, v, fitness);
}

int evo_insights_total(const evo_insights *ins) { return ins->total; }
int evo_insights_skipped(const evo_insights *ins) { return ins->skipped; }

evo_insight_stat evo_insights_stat(const evo_insights *ins, int knob, int value)
{
    const cell *c = &ins->cells[knob][value];
    return (evo_insight_stat){c->n, c->n_fail, c->n_timed, (double)c->sum_log / LOG_SCALE};
}

double evo_insights_weight(const evo_insights *ins, int knob, int value)
{
    if (!ins) return 1.0;
    const cell *c = &ins->cells[knob][value];
    double w = 1.0;
    bool opinion = false;
    if (c->n >= EVO_INSIGHTS_MIN_OBS) {
        w *= 1.0 - (double)c->n_fail / c->n;
        opinion = true;
    }
    if (c->n_timed >= EVO_INSIGHTS_MIN_OBS) {
        double mean = (double)c->sum_log / LOG_SCALE / c->n_timed;
        double overall = (double)ins->total_sum_log / LOG_SCALE / ins->total_timed;
        w *= exp(EVO_INSIGHTS_BETA * (mean - overall));
    }
    if (!opinion) return w;
    return w < EVO_INSIGHTS_FLOOR ? EVO_INSIGHTS_FLOOR : w > EVO_INSIGHTS_CAP ? EVO_INSIGHTS_CAP : w;
}

static void format_json(const evo_insights *ins, evo_str *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "evaluations", ins->total);
    cJSON_AddNumberToObject(root, "skipped", ins->skipped);
    cJSON_AddNumberToObject(root, "min_obs", EVO_INSIGHTS_MIN_OBS);
    cJSON *values = cJSON_AddArrayToObject(root, "values");
    for (int k = 0; k < evo_space_n_knobs(ins->space); k++) {
        for (int v = 0; v < evo_space_domain_size(ins->space, k); v++) {
            evo_insight_stat s = evo_insights_stat(ins, k, v);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "knob", evo_space_knob_name(ins->space, k));
            cJSON_AddStringToObject(o, "value", evo_space_value_text(ins->space, k, v));
            cJSON_AddNumberToObject(o, "n", s.n);
            cJSON_AddNumberToObject(o, "failed", s.n_fail);
            if (s.n)
                cJSON_AddNumberToObject(o, "fail_rate", (double)s.n_fail / s.n);
            else
                cJSON_AddNullToObject(o, "fail_rate");
            cJSON_AddNumberToObject(o, "timed", s.n_timed);
            if (s.n_timed)
                cJSON_AddNumberToObject(o, "mean_log_speedup", s.sum_log / s.n_timed);
            else
                cJSON_AddNullToObject(o, "mean_log_speedup");
            cJSON_AddNumberToObject(o, "weight", evo_insights_weight(ins, k, v));
            cJSON_AddItemToArray(values, o);
        }
    }
    char *text = cJSON_Print(root);
    evo_str_append(out, text);
    evo_str_append(out, "\n");
    cJSON_free(text);
    cJSON_Delete(root);
}

void evo_insights_format(const evo_insights *ins, bool json, evo_str *out)
{
    if (json) {
        format_json(ins, out);
        return;
    }
    const evo_space *sp = ins->space;
    int wk = 4, wv = 5;
    for (int k = 0; k < evo_space_n_knobs(sp); k++) {
        int l = (int)strlen(evo_space_knob_name(sp, k));
        if (l > wk) wk = l;
        for (int v = 0; v < evo_space_domain_size(sp, k); v++) {
            l = (int)strlen(evo_space_value_text(sp, k, v));
            if (l > wv) wv = l;
        }
    }
    evo_str_appendf(out, "%d evaluations", ins->total);
    if (ins->skipped) evo_str_appendf(out, " (%d more skipped: genome not in this space)", ins->skipped);
    evo_str_appendf(out, "; a value's statistics count from %d evaluations\n", EVO_INSIGHTS_MIN_OBS);
    evo_str_appendf(out, "%-*s  %-*s  %6s  %9s  %6s  %16s  %6s\n", wk, "knob", wv, "value", "n", "fail rate", "timed",
                    "mean log speedup", "weight");
    for (int k = 0; k < evo_space_n_knobs(sp); k++) {
        for (int v = 0; v < evo_space_domain_size(sp, k); v++) {
            evo_insight_stat s = evo_insights_stat(ins, k, v);
            char fail[16] = "-", mean[24] = "-";
            if (s.n) snprintf(fail, sizeof fail, "%.1f%%", 100.0 * s.n_fail / s.n);
            if (s.n_timed) snprintf(mean, sizeof mean, "%+.4f", s.sum_log / s.n_timed);
            evo_str_appendf(out, "%-*s  %-*s  %6d  %9s  %6d  %16s  %6.3f\n", wk, evo_space_knob_name(sp, k), wv,
                            evo_space_value_text(sp, k, v), s.n, fail, s.n_timed, mean, evo_insights_weight(ins, k, v));
        }
    }
}
