/* insights.h — per-knob-value statistics that bias mutation toward promising values and away from failing ones.
 *
 * For every (knob, value) the table keeps: how many evaluations had that value, how many failed (INVALID,
 * COMPILE_FAIL, RESOURCE_FAIL, LAUNCH_FAIL, CRASHED, TIMEOUT, INCORRECT), and the mean log fitness of the
 * measured ones (OK and REGRESSED: both correct and timed; SLOW was aborted and has no fitness). NOT_RECORDED (a
 * replay found no result) is not counted at all: it says nothing about the genome. From that,
 * evo_insights_weight gives the factor by which mutation multiplies a value's plain probability:
 *
 *     weight = clamp((1 - fail_rate) * exp(EVO_INSIGHTS_BETA * (mean_log - overall_mean_log)),
 *                    EVO_INSIGHTS_FLOOR, EVO_INSIGHTS_CAP)
 *
 * where the failure part counts once the value has EVO_INSIGHTS_MIN_OBS evaluations and the speedup part once
 * it has that many measured ones; below that the weight is 1 (no opinion yet). The floor keeps every value
 * reachable, so the search can still revisit a value whose failures came from other knobs.
 *
 * Sources: the loop feeds the store's evaluations of the same task, arch and shape set through
 * evo_insights_add_stored (its signature fits evo_store_foreach_evaluation), and the strategy adds each new
 * observation with evo_insights_add.
 *
 * Ownership: the table borrows the space (which must outlive it); free with evo_insights_free. Not thread-safe.
 */
#ifndef EVO_INSIGHTS_H
#define EVO_INSIGHTS_H

#include "evo.h"
#include "space.h"
#include "util.h"

#include <stdbool.h>

#define EVO_INSIGHTS_MIN_OBS 3  /* evaluations of a value before its statistics count             */
#define EVO_INSIGHTS_FLOOR 0.05 /* no value's weight drops below this: exploration never stops    */
#define EVO_INSIGHTS_CAP 8.0    /* nor rises above this: one lucky value cannot take over a knob */
#define EVO_INSIGHTS_BETA 4.0   /* a value 10% faster on average than the rest weighs ~1.46x more */

typedef struct evo_insights evo_insights;

typedef struct {
    int n;          /* evaluations with this value        */
    int n_fail;     /* of which failed                    */
    int n_timed;    /* of which measured (OK, REGRESSED)  */
    double sum_log; /* sum of log(fitness) of the measured */
} evo_insight_stat;

evo_insights *evo_insights_new(const evo_space *space);
void evo_insights_free(evo_insights *ins);

/* Count one evaluation. fitness is read only for OK and REGRESSED, and only when finite and > 0. */
void evo_insights_add(evo_insights *ins, const evo_genome *g, evo_verdict v, double fitness);
/* The same from a stored genome text; a text that does not parse in this space (the space changed since) is
 * skipped and counted in evo_insights_skipped. ctx is the evo_insights. */
void evo_insights_add_stored(const char *genome, evo_verdict v, double fitness, void *ctx);

int evo_insights_total(const evo_insights *ins);   /* evaluations counted */
int evo_insights_skipped(const evo_insights *ins); /* stored genomes that did not fit the space */
evo_insight_stat evo_insights_stat(const evo_insights *ins, int knob, int value);

/* Mutation weight of a value (see above); 1 when ins is NULL. */
double evo_insights_weight(const evo_insights *ins, int knob, int value);

/* The table for `evo insights`: text (one row per knob value: knob, value, n, fail rate, mean log speedup,
 * weight) or JSON ({"evaluations": N, "skipped": N, "min_obs": N, "values": [{"knob", "value", "n", "failed",
 * "fail_rate", "timed", "mean_log_speedup", "weight"}, ...]}, rates and means null when there is nothing to
 * average). Appends to out. */
void evo_insights_format(const evo_insights *ins, bool json, evo_str *out);

#endif
