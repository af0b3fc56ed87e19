/* strategy_seeds.c — "seeds": the baseline, the seed genomes and earlier elites, then hill climbing from them. Every
 * later proposal is a neighbour (one knob moved; repaired when the move breaks a constraint) of the best genome
 * measured so far whose neighbours are not all seen. The yardstick for what the hand-written seeds give without
 * evolution: `--generations 1 --population 1+seeds` evaluates exactly the baseline and the seeds.
 */
#include "strategy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    evo_genome g;
    int tier; /* 0 OK, 1 REGRESSED: both measured; nothing else is a centre */
    double fitness;
    bool done; /* every neighbour seen: skipped from now on (the seen set only grows) */
} centre;

typedef struct {
    const evo_space *space;
    evo_strategy_params p;
    int n_knobs;
    evo_rng rng;          /* the random fallback once every neighbourhood is seen */
    evo_genome_set *seen; /* proposed or observed */
    centre *c;            /* measured genomes; sorted best first at each propose */
    int n_c, cap_c;
    evo_genome_list starts; /* seeds, earlier elites, baseline: the centres before anything is measured */
    int generation;
} hill;

/* Best first: OK before REGRESSED, then higher fitness, then genome indices (never arrival order). */
static int centre_cmp(const void *pa, const void *pb)
{
    const centre *a = pa, *b = pb;
    if (a->tier != b->tier) return a->tier < b->tier ? -1 : 1;
    if (a->fitness != b->fitness) return a->fitness > b->fitness ? -1 : 1;
    return memcmp(a->g.idx, b->g.idx, sizeof a->g.idx);
}

static evo_status hill_create(const evo_space *space, const evo_strategy_params *params, void **state, evo_err *err)
{
    if (params->population < 1)
        return evo_fail(err, EVO_E_CONFIG, "evolution.population: must be >= 1, is %d", params->population);
    hill *s = evo_xcalloc(1, sizeof *s);
    s->space = space;
    s->p = *params;
    s->n_knobs = evo_space_n_knobs(space);
    evo_rng_seed(&s->rng, params->seed);
    s->seen = evo_genome_set_new(space);
    *state = s;
    return EVO_OK;
}

static void hill_destroy(void *state)
{
    hill *s = state;
    if (!s) return;
    evo_genome_set_free(s->seen);
    free(s->c);
    free(s->starts.g);
    free(s);
}

static void hill_observe(void *state, const evo_observation *obs, int n)
{
    hill *s = state;
    for (int i = 0; i < n; i++) {
        evo_genome g = evo_genome_normalized(s->space, &obs[i].genome);
        evo_genome_set_add(s->seen, &g);
        const bool measured =
            (obs[i].verdict == EVO_V_OK || obs[i].verdict == EVO_V_REGRESSED) && isfinite(obs[i].fitness);
        if (!measured) continue;
        if (s->n_c == s->cap_c) {
            s->cap_c = s->cap_c ? 2 * s->cap_c : 64;
            s->c = evo_xrealloc(s->c, sizeof *s->c * (size_t)s->cap_c);
        }
        s->c[s->n_c++] = (centre){g, obs[i].verdict == EVO_V_OK ? 0 : 1, obs[i].fitness, false};
    }
}

/* Unseen neighbours of the measured genomes, best first, until want or none is left. */
static int around_best(hill *s, evo_proposal *out, int n, int want)
{
    if (s->n_c > 1) qsort(s->c, (size_t)s->n_c, sizeof *s->c, centre_cmp);
    evo_genome_list nb = {0};
    for (int i = 0; i < s->n_c && n < want; i++) {
        if (s->c[i].done) continue;
        evo_strategy_neighbours(s->space, &s->c[i].g, s->p.seed, &nb);
        int j = 0;
        for (; j < nb.n && n < want; j++)
            n += evo_strategy_take(s->space, s->seen, &nb.g[j], EVO_OP_NEIGHBOUR, &s->c[i].g, NULL, &out[n]);
        bool left = false;
        for (; j < nb.n && !left; j++) left = !evo_genome_set_has(s->seen, &nb.g[j]);
        s->c[i].done = !left;
    }
    free(nb.g);
    return n;
}

static evo_status hill_propose(void *state, evo_proposal *out, int max, int *n, evo_err *err)
{
    (void)err;
    hill *s = state;
    const int want = max < s->p.population ? max : s->p.population;
    *n = 0;
    if (s->generation == 0) {
        *n = evo_strategy_given(s->space, s->seen, &s->p, out, want);
        /* the baseline is the last resort as a start: the seeds are meant to be better */
        for (int i = 0; i < *n; i++)
            if (out[i].op != EVO_OP_BASELINE) evo_genome_list_push(&s->starts, &out[i].genome);
        if (s->p.baseline && evo_space_valid(s->space, s->p.baseline, NULL)) {
            evo_genome b = evo_genome_normalized(s->space, s->p.baseline);
            evo_genome_list_push(&s->starts, &b);
        }
    }
    *n = s->n_c ? around_best(s, out, *n, want)
                : evo_strategy_around(s->space, s->seen, s->p.seed, s->starts.g, s->starts.n, out, *n, want);
    evo_genome g;
    while (*n < want && evo_strategy_random_unseen(s->space, s->seen, &s->rng, &g))
        *n += evo_strategy_take(s->space, s->seen, &g, EVO_OP_RANDOM, NULL, NULL, &out[*n]);
    s->generation++;
    return EVO_OK;
}

const evo_strategy_ops evo_strategy_seeds = {
    .name = "seeds",
    .summary = "baseline and seed genomes, then hill climbing: neighbours of the best measured genome first",
    .create = hill_create,
    .propose = hill_propose,
    .observe = hill_observe,
    .destroy = hill_destroy,
};
