/* strategy_random.c — random search, the yardstick for the GA: the baseline first (when given), then uniformly
 * random valid genomes, never one seen before. Observations only mark genomes as seen.
 */
#include "strategy.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const evo_space *space;
    int population;
    const evo_genome *baseline;
    evo_rng rng;
    evo_genome_set *seen;
    bool started, exhausted;
} rnd;

static evo_status rnd_create(const evo_space *space, const evo_strategy_params *params, void **state, evo_err *err)
{
    if (params->population < 1)
        return evo_fail(err, EVO_E_CONFIG, "evolution.population: must be >= 1, is %d", params->population);
    rnd *s = evo_xcalloc(1, sizeof *s);
    s->space = space;
    s->population = params->population;
    s->baseline = params->baseline;
    evo_rng_seed(&s->rng, params->seed);
    s->seen = evo_genome_set_new(space);
    *state = s;
    return EVO_OK;
}

static void rnd_destroy(void *state)
{
    rnd *s = state;
    if (!s) return;
    evo_genome_set_free(s->seen);
    free(s);
}

static void rnd_observe(void *state, const evo_observation *obs, int n)
{
    rnd *s = state;
    for (int i = 0; i < n; i++) evo_genome_set_add(s->seen, &obs[i].genome);
}

static evo_status rnd_propose(void *state, evo_proposal *out, int max, int *n, evo_err *err)
{
    (void)err;
    rnd *s = state;
    int want = max < s->population ? max : s->population;
    *n = 0;
    if (!s->started && s->baseline)
        *n += evo_strategy_take(s->space, s->seen, s->baseline, EVO_OP_BASELINE, NULL, NULL, &out[0]);
    s->started = true;
    while (*n < want && !s->exhausted) {
        evo_genome g;
        if (!evo_strategy_random_unseen(s->space, s->seen, &s->rng, &g)) {
            s->exhausted = true;
            break;
        }
        *n += evo_strategy_take(s->space, s->seen, &g, EVO_OP_RANDOM, NULL, NULL, &out[*n]);
    }
    return EVO_OK;
}

const evo_strategy_ops evo_strategy_random = {
    .name = "random",
    .summary = "random search: uniformly random valid genomes, none repeated",
    .create = rnd_create,
    .propose = rnd_propose,
    .observe = rnd_observe,
    .destroy = rnd_destroy,
};
