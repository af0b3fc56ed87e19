/* strategy_ga.c — the genetic algorithm: tournament selection, uniform crossover, per-knob mutation (neighbours
 * first, biased by insights), elitism, random immigrants, and local children (the elites' unseen neighbours);
 * invalid children repaired by re-mutating the knobs of the violated constraint. Generation 0 is baseline, seeds,
 * earlier elites, then their neighbours and random valid genomes.
 */
#include "strategy.h"

#include "noise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BREED_ATTEMPTS 16 /* children tried before falling back to a random unseen genome */
#define REPAIR_STEPS 8    /* re-mutations of an invalid child before it is dropped */
#define MAX_CONSTRAINTS_TRACKED 64

typedef struct {
    evo_genome g;
    evo_verdict v;
    double fitness;
    double lo, hi; /* the fitness interval; 0 or NAN when unknown */
} member;

typedef struct {
    member *m;
    int n, cap;
} member_list;

typedef struct {
    const evo_space *space;
    evo_strategy_params p;
    int n_knobs;
    evo_rng rng;
    evo_genome_set *seen; /* proposed or observed */
    member_list fresh;    /* observed since the last propose: the generation being completed */
    member_list pool;     /* what the next children are bred from: last generation plus elites */
    member_list elites;   /* best OK results so far, best first, at most p.elites */
    int generation;
    bool exhausted;
    /* knobs each constraint names, for repair: bit k set when knob k appears in constraint i */
    uint32_t constraint_knobs[MAX_CONSTRAINTS_TRACKED];
    int n_constraints;
} ga;

static void list_push(member_list *l, const member *m)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->m = evo_xrealloc(l->m, sizeof *l->m * (size_t)l->cap);
    }
    l->m[l->n++] = *m;
}

/* 0: OK, 1: REGRESSED (correct and timed, but slow), 2: no fitness. */
static int tier(const member *m)
{
    if (!isfinite(m->fitness)) return 2;
    return m->v == EVO_V_OK ? 0 : m->v == EVO_V_REGRESSED ? 1 : 2;
}

/* Genomes inside the GA have every index past the last knob zeroed (see normalized), so whole structs compare. */
static int genome_cmp(const evo_genome *a, const evo_genome *b) { return memcmp(a->idx, b->idx, sizeof a->idx); }

/* A total order, best first: tier, then fitness, then genome indices, so ties never depend on arrival order. */
static int member_cmp(const member *a, const member *b);
/* The elites' stated invariants: at most p.elites of them, all OK, in member_cmp order (best first). */
static bool elites_ordered(const ga *s)
{
    if (s->elites.n > s->p.elites) return false;
    for (int i = 0; i < s->elites.n; i++)
        if (tier(&s->elites.m[i]) != 0 || (i > 0 && member_cmp(&s->elites.m[i - 1], &s->elites.m[i]) > 0)) return false;
    return true;
}

static int member_cmp(const member *a, const member *b)
{
    int ta = tier(a), tb = tier(b);
    if (ta != tb) return ta < tb ? -1 : 1;
    if (ta < 2 && a->fitness != b->fitness) return a->fitness > b->fitness ? -1 : 1;
    return genome_cmp(&a->g, &b->g);
}

static int member_qsort_cmp(const void *a, const void *b) { return member_cmp(a, b); }

static int genome_qsort_cmp(const void *a, const void *b)
{
    return genome_cmp(&((const member *)a)->g, &((const member *)b)->g);
}

static evo_status check_params(const evo_strategy_params *p, evo_err *err)
{
    if (p->population < 1)
        return evo_fail(err, EVO_E_CONFIG, "evolution.population: must be >= 1, is %d", p->population);
    if (p->elites < 0 || p->elites >= p->population)
        return evo_fail(err, EVO_E_CONFIG, "evolution.elites: must be 0..%d (below the population), is %d",
                        p->population - 1, p->elites);
    if (p->tournament < 1)
        return evo_fail(err, EVO_E_CONFIG, "evolution.tournament: must be >= 1, is %d", p->tournament);
    const struct {
        const char *key;
        double v;
    } rates[] = {{"crossover_rate", p->crossover_rate},
                 {"mutation_rate", p->mutation_rate},
                 {"immigrant_rate", p->immigrant_rate},
                 {"local_rate", p->local_rate}};
    for (size_t i = 0; i < EVO_ARRAY_LEN(rates); i++)
        if (!(rates[i].v >= 0 && rates[i].v <= 1))
            return evo_fail(err, EVO_E_CONFIG, "evolution.%s: must be in [0, 1], is %g", rates[i].key, rates[i].v);
    return EVO_OK;
}

static evo_status ga_create(const evo_space *space, const evo_strategy_params *params, void **state, evo_err *err)
{
    evo_status st = check_params(params, err);
    if (st != EVO_OK) return st;
    ga *s = evo_xcalloc(1, sizeof *s);
    s->space = space;
    s->p = *params;
    s->n_knobs = evo_space_n_knobs(space);
    evo_rng_seed(&s->rng, params->seed);
    s->seen = evo_genome_set_new(space);
    s->n_constraints = evo_space_n_constraints(space);
    if (s->n_constraints > MAX_CONSTRAINTS_TRACKED) s->n_constraints = MAX_CONSTRAINTS_TRACKED;
    for (int i = 0; i < s->n_constraints; i++)
        s->constraint_knobs[i] = evo_constraint_knobs(space, evo_space_constraint_text(space, i));
    *state = s;
    return EVO_OK;
}

static void ga_destroy(void *state)
{
    ga *s = state;
    if (!s) return;
    evo_genome_set_free(s->seen);
    free(s->fresh.m);
    free(s->pool.m);
    free(s->elites.m);
    free(s);
}

/* Admission: while there is room every OK result enters; once the elites are full, a newcomer replaces the weakest
 * only when it is better beyond the noise of both measurements (noise.h), so selection does not follow
 * measurement luck. Without intervals (older stores, replays) it is the plain comparison. */
static void note_elite(ga *s, const member *m)
{
    if (s->p.elites == 0 || tier(m) != 0) return;
    if (s->elites.n >= s->p.elites) {
        const member *w = &s->elites.m[s->elites.n - 1];
        if (!evo_noise_better(m->fitness, m->lo, m->hi, w->fitness, w->lo, w->hi)) return;
    }
    list_push(&s->elites, m);
    if (s->elites.n > 1) qsort(s->elites.m, (size_t)s->elites.n, sizeof *s->elites.m, member_qsort_cmp);
    if (s->elites.n > s->p.elites) s->elites.n = s->p.elites;
    EVO_ASSERT(elites_ordered(s));
}

static void ga_observe(void *state, const evo_observation *obs, int n)
{
    ga *s = state;
    for (int i = 0; i < n; i++) {
        member m = {evo_genome_normalized(s->space, &obs[i].genome), obs[i].verdict, obs[i].fitness, obs[i].fitness_lo,
                    obs[i].fitness_hi};
        evo_genome_set_add(s->seen, &m.g);
        list_push(&s->fresh, &m);
    }
}

static void ga_refresh(void *state, const evo_observation *obs, int n)
{
    ga *s = state;
    for (int i = 0; i < n; i++) {
        const evo_genome g = evo_genome_normalized(s->space, &obs[i].genome);
        member_list *lists[] = {&s->elites, &s->pool, &s->fresh};
        for (size_t l = 0; l < EVO_ARRAY_LEN(lists); l++)
            for (int j = 0; j < lists[l]->n; j++)
                if (genome_cmp(&lists[l]->m[j].g, &g) == 0) {
                    member *m = &lists[l]->m[j];
                    m->fitness = obs[i].fitness, m->lo = obs[i].fitness_lo, m->hi = obs[i].fitness_hi;
                    m->v = obs[i].verdict;
                }
    }
    /* An elite whose new measurement is no longer OK (regressed, or the re-timing failed) leaves the elites: a
     * NaN or regressed weakest elite would otherwise keep every newcomer out (note_elite compares with it). */
    int kept = 0;
    for (int j = 0; j < s->elites.n; j++)
        if (tier(&s->elites.m[j]) == 0) s->elites.m[kept++] = s->elites.m[j];
    s->elites.n = kept;
    if (s->elites.n > 1) qsort(s->elites.m, (size_t)s->elites.n, sizeof *s->elites.m, member_qsort_cmp);
    EVO_ASSERT(elites_ordered(s));
}

/* Close the generation the observations since the last propose belong to: its results are offered to the elites
 * best first (so admission does not depend on arrival order), then it becomes the breeding pool, with the elites
 * added. Sorting by genome first makes the pool independent of the order results arrived in. */
static void close_generation(ga *s)
{
    if (s->fresh.n == 0) return;
    if (s->fresh.n > 1) qsort(s->fresh.m, (size_t)s->fresh.n, sizeof *s->fresh.m, member_qsort_cmp);
    for (int i = 0; i < s->fresh.n; i++) note_elite(s, &s->fresh.m[i]);
    if (s->fresh.n > 1) qsort(s->fresh.m, (size_t)s->fresh.n, sizeof *s->fresh.m, genome_qsort_cmp);
    s->pool.n = 0;
    for (int i = 0; i < s->fresh.n; i++) list_push(&s->pool, &s->fresh.m[i]);
    for (int i = 0; i < s->elites.n; i++) {
        bool dup = false;
        for (int j = 0; j < s->fresh.n && !dup; j++) dup = genome_cmp(&s->elites.m[i].g, &s->fresh.m[j].g) == 0;
        if (!dup) list_push(&s->pool, &s->elites.m[i]);
    }
    s->fresh.n = 0;
}

static const member *tournament(ga *s)
{
    EVO_ASSERT(s->pool.n > 0 && s->p.tournament >= 1);
    const member *best = NULL;
    for (int i = 0; i < s->p.tournament; i++) {
        const member *c = &s->pool.m[evo_rng_below(&s->rng, (uint32_t)s->pool.n)];
        if (!best || member_cmp(c, best) < 0) best = c;
    }
    return best;
}

static void mutate_knob(ga *s, evo_genome *g, int k)
{
    g->idx[k] = (uint8_t)evo_mutate_value(s->space, s->p.insights, k, g->idx[k], &s->rng);
}

/* An active knob of g to change: one from mask when it has any with more than one value, else any such knob; -1 if
 * none. */
static int pick_knob(ga *s, const evo_genome *g, uint32_t mask)
{
    const uint32_t act = evo_space_active(s->space, g);
    int cand[EVO_MAX_KNOBS], n = 0;
    for (int pass = 0; pass < 2 && n == 0; pass++)
        for (int k = 0; k < s->n_knobs; k++)
            if ((act >> k & 1u) && (pass == 1 || (mask >> k & 1u)) && evo_space_domain_size(s->space, k) > 1)
                cand[n++] = k;
    return n ? cand[evo_rng_below(&s->rng, (uint32_t)n)] : -1;
}

/* Changes knob k of g (active) and settles the knobs the change turned on (random values) or off. */
static void move_knob(ga *s, evo_genome *g, int k)
{
    const uint32_t act = evo_space_active(s->space, g);
    mutate_knob(s, g, k);
    evo_genome_settle(s->space, g, act, &s->rng);
}

static uint32_t violated_knobs(ga *s, const char *violated)
{
    for (int i = 0; i < s->n_constraints; i++)
        if (violated == evo_space_constraint_text(s->space, i) ||
            (violated && strcmp(violated, evo_space_constraint_text(s->space, i)) == 0))
            return s->constraint_knobs[i];
    return 0;
}

static bool random_child(ga *s, evo_operator op, evo_proposal *out)
{
    evo_genome g;
    if (!evo_strategy_random_unseen(s->space, s->seen, &s->rng, &g)) {
        s->exhausted = true;
        return false;
    }
    return evo_strategy_take(s->space, s->seen, &g, op, NULL, NULL, out);
}

/* The next unseen neighbour of the elites (evo_strategy_neighbours), the best elite's first. */
static bool elite_neighbour(ga *s, evo_proposal *out)
{
    evo_genome_list nb = {0};
    bool got = false;
    for (int e = 0; e < s->elites.n && !got; e++) {
        evo_strategy_neighbours(s->space, &s->elites.m[e].g, s->p.seed, &nb);
        for (int j = 0; j < nb.n && !got; j++)
            got = evo_strategy_take(s->space, s->seen, &nb.g[j], EVO_OP_NEIGHBOUR, &s->elites.m[e].g, NULL, out);
    }
    free(nb.g);
    return got;
}

static bool breed(ga *s, evo_proposal *out)
{
    /* no draw at all when local_rate is 0, so such a search is the same as before the rate existed */
    if (s->p.local_rate > 0 && evo_rng_uniform(&s->rng) < s->p.local_rate && elite_neighbour(s, out)) return true;
    for (int attempt = 0; attempt < BREED_ATTEMPTS && s->pool.n > 0; attempt++) {
        if (evo_rng_uniform(&s->rng) < s->p.immigrant_rate) return random_child(s, EVO_OP_IMMIGRANT, out);
        const member *p1 = tournament(s), *p2 = NULL;
        evo_genome child = p1->g;
        if (s->pool.n > 1 && evo_rng_uniform(&s->rng) < s->p.crossover_rate) {
            for (int i = 0; i < 4 && (!p2 || genome_cmp(&p1->g, &p2->g) == 0); i++) p2 = tournament(s);
            if (genome_cmp(&p1->g, &p2->g) == 0) p2 = NULL;
            /* Each knob from either parent; a value from a parent in which the knob is inactive means nothing, so
             * such a knob, when active in the child, is drawn afresh (evo_genome_settle). */
            const uint32_t a1 = evo_space_active(s->space, &p1->g), a2 = p2 ? evo_space_active(s->space, &p2->g) : 0;
            uint32_t keep = 0;
            for (int k = 0; p2 && k < s->n_knobs; k++) {
                const bool second = evo_rng_below(&s->rng, 2);
                if (second) child.idx[k] = p2->g.idx[k];
                keep |= (uint32_t)((second ? a2 : a1) >> k & 1u) << k;
            }
            if (p2) evo_genome_settle(s->space, &child, keep, &s->rng);
        }
        bool mutated = evo_genome_mutate(s->space, s->p.insights, &child, s->p.mutation_rate, &s->rng);
        /* A child identical to something already seen teaches nothing: nudge one knob. */
        if (evo_genome_set_has(s->seen, &child)) {
            int k = pick_knob(s, &child, 0);
            if (k < 0) continue;
            move_knob(s, &child, k);
            mutated = true;
        }
        const char *violated = NULL;
        for (int step = 0; step < REPAIR_STEPS && !evo_space_valid(s->space, &child, &violated); step++) {
            int k = pick_knob(s, &child, violated_knobs(s, violated));
            if (k < 0) break;
            move_knob(s, &child, k);
            mutated = true;
        }
        EVO_ASSERT(evo_genome_is_canonical(s->space, &child)); /* GA moves leave inactive knobs canonical */
        evo_operator op = p2 ? (mutated ? EVO_OP_CROSSOVER_MUTATION : EVO_OP_CROSSOVER) : EVO_OP_MUTATION;
        if (evo_strategy_take(s->space, s->seen, &child, op, &p1->g, p2 ? &p2->g : NULL, out)) return true;
    }
    return random_child(s, EVO_OP_RANDOM, out);
}

/* Generation 0: baseline, seeds, earlier elites (each once, when valid and new); then, for a share local_rate of
 * the slots left, neighbours of the seeds and elites taken in turn; the rest random valid genomes. */
static int initial_population(ga *s, evo_proposal *out, int want)
{
    int n = evo_strategy_given(s->space, s->seen, &s->p, out, want);
    const int n_starts = n - (s->p.baseline && n > 0 && out[0].op == EVO_OP_BASELINE);
    evo_genome *starts = evo_xcalloc((size_t)(n_starts > 0 ? n_starts : 1), sizeof *starts);
    for (int i = 0; i < n_starts; i++) starts[i] = out[n - n_starts + i].genome;
    n = evo_strategy_around(s->space, s->seen, s->p.seed, starts, n_starts, out, n,
                            n + (int)(s->p.local_rate * (want - n) + 0.5));
    free(starts);
    while (n < want && !s->exhausted) n += random_child(s, EVO_OP_RANDOM, &out[n]);
    return n;
}

static evo_status ga_propose(void *state, evo_proposal *out, int max, int *n, evo_err *err)
{
    (void)err;
    ga *s = state;
    close_generation(s);
    *n = 0;
    if (s->generation == 0) {
        *n = initial_population(s, out, max < s->p.population ? max : s->p.population);
    } else {
        /* The elites are carried over as they are: already evaluated, they take their place without a slot. */
        int want = s->p.population - s->elites.n;
        if (want > max) want = max;
        while (*n < want && !s->exhausted && breed(s, &out[*n])) (*n)++;
    }
    s->generation++;
    return EVO_OK;
}

static int ga_elites(void *state, evo_observation *out, int max)
{
    const ga *s = state;
    int n = 0;
    for (; n < s->elites.n && n < max; n++) {
        const member *m = &s->elites.m[n];
        out[n] = (evo_observation){
            .genome = m->g, .verdict = m->v, .fitness = m->fitness, .fitness_lo = m->lo, .fitness_hi = m->hi};
    }
    return n;
}

const evo_strategy_ops evo_strategy_ga = {
    .name = "ga",
    .carries_elites = true,
    .summary = "genetic algorithm: tournament selection, uniform crossover, per-knob mutation, elitism, immigrants",
    .create = ga_create,
    .propose = ga_propose,
    .observe = ga_observe,
    .refresh = ga_refresh,
    .elites = ga_elites,
    .destroy = ga_destroy,
};
