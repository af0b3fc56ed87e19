/* strategy.c — the strategy list and lookup, the instance wrapper the loop holds, and what every strategy shares:
 * operator names, the seen-genome set, random unseen genomes and the mutation step (see strategy.h).
 */
#include "strategy.h"

#include "compile.h"
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const evo_strategy_ops *const strategies[] = {&evo_strategy_ga, &evo_strategy_random, &evo_strategy_seeds};

const evo_strategy_ops *const *evo_strategy_list(int *n)
{
    *n = (int)EVO_ARRAY_LEN(strategies);
    return strategies;
}

void evo_strategy_register_config_checks(void)
{
    static const char *names[EVO_ARRAY_LEN(strategies) + 1];
    for (size_t i = 0; i < EVO_ARRAY_LEN(strategies); i++) names[i] = strategies[i]->name;
    evo_config_set_checks(&(evo_config_checks){.strategy_names = names, .compile_options = evo_compile_check_options});
}

const evo_strategy_ops *evo_strategy_find(const char *name)
{
    for (size_t i = 0; i < EVO_ARRAY_LEN(strategies); i++)
        if (name && strcmp(strategies[i]->name, name) == 0) return strategies[i];
    return NULL;
}

static const char *const op_names[EVO_OP_COUNT] = {
    [EVO_OP_BASELINE] = "baseline",   [EVO_OP_SEED] = "seed",
    [EVO_OP_ELITE] = "elite",         [EVO_OP_RANDOM] = "random",
    [EVO_OP_IMMIGRANT] = "immigrant", [EVO_OP_CROSSOVER] = "crossover",
    [EVO_OP_MUTATION] = "mutation",   [EVO_OP_CROSSOVER_MUTATION] = "crossover+mutation",
    [EVO_OP_NEIGHBOUR] = "neighbour", [EVO_OP_MIGRANT] = "migrant",
};

const char *evo_operator_name(evo_operator op) { return (unsigned)op < EVO_OP_COUNT ? op_names[op] : "unknown"; }

void evo_strategy_params_default(evo_strategy_params *p)
{
    memset(p, 0, sizeof *p);
    p->population = 16;
    p->elites = 2;
    p->tournament = 3;
    p->crossover_rate = 0.7;
    p->mutation_rate = 0.2;
    p->immigrant_rate = 0.1;
    p->local_rate = 0.5;
}

/* ---- instance ---- */
struct evo_strategy {
    const evo_strategy_ops *ops;
    void *state;
    evo_insights *insights;
    evo_genome_set *observed; /* repeats are dropped here, so no strategy or insight counts a result twice */
};

evo_status evo_strategy_create(const char *name, const evo_space *space, const evo_strategy_params *params,
                               evo_strategy **out, evo_err *err)
{
    *out = NULL;
    const evo_strategy_ops *ops = evo_strategy_find(name);
    if (!ops) {
        evo_str known = {0};
        for (size_t i = 0; i < EVO_ARRAY_LEN(strategies); i++)
            evo_str_appendf(&known, "%s%s", i ? ", " : "", strategies[i]->name);
        evo_status st = evo_fail(err, EVO_E_CONFIG, "evolution.strategy: unknown strategy '%s' (known: %s)",
                                 name ? name : "", evo_str_cstr(&known));
        evo_str_free(&known);
        return st;
    }
    void *state = NULL;
    evo_status st = ops->create(space, params, &state, err);
    if (st != EVO_OK) return st;
    evo_strategy *s = evo_xcalloc(1, sizeof *s);
    s->ops = ops;
    s->state = state;
    s->insights = params->insights;
    s->observed = evo_genome_set_new(space);
    *out = s;
    return EVO_OK;
}

evo_status evo_strategy_propose(evo_strategy *s, evo_proposal *out, int max, int *n, evo_err *err)
{
    *n = 0;
    if (max <= 0) return EVO_OK;
    return s->ops->propose(s->state, out, max, n, err);
}

void evo_strategy_observe(evo_strategy *s, const evo_observation *obs, int n)
{
    evo_observation *fresh = evo_xmalloc(sizeof *fresh * (size_t)(n > 0 ? n : 1));
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!evo_genome_set_add(s->observed, &obs[i].genome)) continue;
        fresh[m++] = obs[i];
        if (s->insights && !obs[i].reused)
            evo_insights_add(s->insights, &obs[i].genome, obs[i].verdict, obs[i].fitness);
    }
    if (m) s->ops->observe(s->state, fresh, m);
    free(fresh);
}

void evo_strategy_refresh(evo_strategy *s, const evo_observation *obs, int n)
{
    if (s->ops->refresh && n > 0) s->ops->refresh(s->state, obs, n);
}

int evo_strategy_elites(const evo_strategy *s, evo_observation *out, int max)
{
    return s->ops->elites && max > 0 ? s->ops->elites(s->state, out, max) : 0;
}

const char *evo_strategy_name(const evo_strategy *s) { return s->ops->name; }
bool evo_strategy_carries_elites(const evo_strategy *s) { return s->ops->carries_elites; }

void evo_strategy_destroy(evo_strategy *s)
{
    if (!s) return;
    s->ops->destroy(s->state);
    evo_genome_set_free(s->observed);
    free(s);
}

/* ---- genome set: open addressing over the knobs' index bytes ---- */
struct evo_genome_set {
    int n_knobs;
    size_t cap, count; /* cap is a power of two, kept at most half full */
    evo_genome *slots;
    uint8_t *used;
};

evo_genome_set *evo_genome_set_new(const evo_space *space)
{
    evo_genome_set *set = evo_xcalloc(1, sizeof *set);
    set->n_knobs = evo_space_n_knobs(space);
    set->cap = 64;
    set->slots = evo_xcalloc(set->cap, sizeof *set->slots);
    set->used = evo_xcalloc(set->cap, 1);
    return set;
}

void evo_genome_set_free(evo_genome_set *set)
{
    if (!set) return;
    free(set->slots);
    free(set->used);
    free(set);
}

static size_t set_find(const evo_genome_set *set, const evo_genome *g, bool *found)
{
    size_t mask = set->cap - 1;
    size_t i = (size_t)evo_fnv1a64(g->idx, (size_t)set->n_knobs) & mask;
    while (set->used[i]) {
        if (memcmp(set->slots[i].idx, g->idx, (size_t)set->n_knobs) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
    *found = false;
    return i;
}

bool evo_genome_set_has(const evo_genome_set *set, const evo_genome *g)
{
    bool found;
    set_find(set, g, &found);
    return found;
}

bool evo_genome_set_add(evo_genome_set *set, const evo_genome *g)
{
    bool found;
    size_t i = set_find(set, g, &found);
    if (found) return false;
    if (2 * (set->count + 1) > set->cap) {
        evo_genome_set bigger = *set;
        bigger.cap = set->cap * 2;
        bigger.count = 0;
        bigger.slots = evo_xcalloc(bigger.cap, sizeof *bigger.slots);
        bigger.used = evo_xcalloc(bigger.cap, 1);
        for (size_t j = 0; j < set->cap; j++)
            if (set->used[j]) evo_genome_set_add(&bigger, &set->slots[j]);
        free(set->slots);
        free(set->used);
        *set = bigger;
        i = set_find(set, g, &found);
    }
    memset(&set->slots[i], 0, sizeof set->slots[i]);
    memcpy(set->slots[i].idx, g->idx, (size_t)set->n_knobs);
    set->used[i] = 1;
    set->count++;
    return true;
}

int evo_genome_set_count(const evo_genome_set *set) { return (int)set->count; }

/* ---- random unseen ---- */
typedef struct {
    const evo_genome_set *seen;
    evo_rng *rng;
    uint64_t n;
    evo_genome pick;
} unseen_pick;

static int unseen_visit(const evo_genome *g, void *ctx)
{
    unseen_pick *u = ctx;
    if (evo_genome_set_has(u->seen, g)) return 0;
    u->n++;
    if (evo_rng_below(u->rng, (uint32_t)(u->n < UINT32_MAX ? u->n : UINT32_MAX)) == 0) u->pick = *g;
    return 0;
}

bool evo_strategy_random_unseen(const evo_space *space, const evo_genome_set *seen, evo_rng *rng, evo_genome *out)
{
    /* While most valid genomes are unseen, rejection is fast and uniform; once 64 draws in a row were seen, the
     * unseen ones are rare enough that one pass over the valid genomes (reservoir sampling) is the cheaper way. */
    for (int attempt = 0; attempt < 64; attempt++) {
        if (evo_space_random(space, rng, out, NULL) != EVO_OK) return false;
        if (!evo_genome_set_has(seen, out)) return true;
    }
    unseen_pick u = {seen, rng, 0, {{0}}};
    evo_space_foreach_valid(space, unseen_visit, &u);
    if (!u.n) return false;
    *out = u.pick;
    return true;
}

/* ---- constraints ---- */
uint32_t evo_constraint_knobs(const evo_space *space, const char *text)
{
    uint32_t mask = 0;
    for (const char *p = text; p && *p;) {
        if (isalpha((unsigned char)*p) || *p == '_') {
            char name[64];
            int n = 0;
            while (isalnum((unsigned char)*p) || *p == '_') {
                if (n < 63) name[n++] = *p;
                p++;
            }
            name[n] = '\0';
            int k = evo_space_find_knob(space, name);
            if (k >= 0) mask |= 1u << k;
        } else {
            p++;
        }
    }
    return mask;
}

/* ---- neighbours ---- */
void evo_genome_list_push(evo_genome_list *l, const evo_genome *g)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->g = evo_xrealloc(l->g, sizeof *l->g * (size_t)l->cap);
    }
    l->g[l->n++] = *g;
}

typedef struct {
    int knob, value;
    uint64_t key; /* far moves after adjacent ones, then a draw seeded by (seed, centre) */
} move;

static int move_cmp(const void *pa, const void *pb)
{
    const move *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->knob != b->knob ? a->knob - b->knob : a->value - b->value;
}

evo_genome evo_genome_normalized(const evo_space *space, const evo_genome *g)
{
    evo_genome n;
    memset(&n, 0, sizeof n);
    memcpy(n.idx, g->idx, (size_t)evo_space_n_knobs(space));
    evo_genome_canonicalize(space, &n);
    return n;
}

bool evo_strategy_take(const evo_space *space, evo_genome_set *seen, const evo_genome *g, evo_operator op,
                       const evo_genome *p1, const evo_genome *p2, evo_proposal *out)
{
    const evo_genome n = evo_genome_normalized(space, g);
    if (!evo_space_valid(space, &n, NULL) || !evo_genome_set_add(seen, &n)) return false;
    memset(out, 0, sizeof *out);
    out->genome = n;
    out->op = op;
    if (p1) out->parents[out->n_parents++] = *p1;
    if (p2) out->parents[out->n_parents++] = *p2;
    return true;
}

int evo_strategy_given(const evo_space *space, evo_genome_set *seen, const evo_strategy_params *p, evo_proposal *out,
                       int want)
{
    const struct {
        const evo_genome *g;
        int count;
        evo_operator op;
    } sources[] = {{p->baseline, p->baseline ? 1 : 0, EVO_OP_BASELINE},
                   {p->seeds, p->n_seeds, EVO_OP_SEED},
                   {p->prior_elites, p->n_prior_elites, EVO_OP_ELITE}};
    int n = 0;
    for (size_t i = 0; i < EVO_ARRAY_LEN(sources); i++)
        for (int j = 0; j < sources[i].count && n < want; j++)
            n += evo_strategy_take(space, seen, &sources[i].g[j], sources[i].op, NULL, NULL, &out[n]);
    return n;
}

int evo_strategy_around(const evo_space *space, evo_genome_set *seen, uint64_t seed, const evo_genome *starts_in,
                        int n_starts, evo_proposal *out, int n, int until)
{
    if (n_starts <= 0) return n;
    evo_genome *starts = evo_xcalloc((size_t)n_starts, sizeof *starts); /* a copy: starts_in may live in out */
    memcpy(starts, starts_in, (size_t)n_starts * sizeof *starts);
    evo_genome_list *nb = evo_xcalloc((size_t)n_starts, sizeof *nb);
    int *next = evo_xcalloc((size_t)n_starts, sizeof *next);
    for (int i = 0; i < n_starts; i++) evo_strategy_neighbours(space, &starts[i], seed, &nb[i]);
    for (bool any = true; any && n < until;) {
        any = false;
        for (int i = 0; i < n_starts && n < until; i++) {
            while (next[i] < nb[i].n &&
                   !evo_strategy_take(space, seen, &nb[i].g[next[i]], EVO_OP_NEIGHBOUR, &starts[i], NULL, &out[n]))
                next[i]++;
            if (next[i] < nb[i].n) n++, next[i]++, any = true;
        }
    }
    for (int i = 0; i < n_starts; i++) free(nb[i].g);
    free(nb);
    free(next);
    free(starts);
    return n;
}

void evo_strategy_neighbours(const evo_space *space, const evo_genome *g, uint64_t seed, evo_genome_list *out)
{
    out->n = 0;
    const int n_knobs = evo_space_n_knobs(space);
    evo_rng r;
    evo_rng_seed(&r, seed ^ evo_fnv1a64(g->idx, (size_t)n_knobs));
    move moves[EVO_MAX_KNOBS * EVO_MAX_DOMAIN];
    int nm = 0;
    const uint32_t act = evo_space_active(space, g);
    for (int k = 0; k < n_knobs; k++)
        for (int v = 0; v < evo_space_domain_size(space, k) && (act >> k & 1u); v++)
            if (v != g->idx[k])
                moves[nm++] = (move){k, v, (uint64_t)(abs(v - g->idx[k]) > 1) << 32 | (uint32_t)evo_rng_next(&r)};
    if (nm > 1) qsort(moves, (size_t)nm, sizeof *moves, move_cmp);
    for (int i = 0; i < nm; i++) {
        evo_genome m = *g;
        m.idx[moves[i].knob] = (uint8_t)moves[i].value;
        evo_genome_settle(space, &m, act, NULL); /* knobs the move turned on: their first values */
        const uint32_t m_act = evo_space_active(space, &m);
        const char *violated = NULL;
        if (evo_space_valid(space, &m, &violated)) {
            evo_genome_list_push(out, &m);
            continue;
        }
        const uint32_t mask = evo_constraint_knobs(space, violated) & m_act;
        for (int j = 0; j < n_knobs; j++) {
            if (j == moves[i].knob || !(mask >> j & 1u)) continue;
            const int n = evo_space_domain_size(space, j), cur = m.idx[j];
            for (int d = 1; d < n; d++)
                for (int sign = -1; sign <= 1; sign += 2) {
                    const int w = cur + sign * d;
                    if (w < 0 || w >= n) continue;
                    evo_genome fix = m;
                    fix.idx[j] = (uint8_t)w;
                    evo_genome_settle(space, &fix, m_act, NULL);
                    if (evo_space_valid(space, &fix, NULL)) evo_genome_list_push(out, &fix);
                }
        }
    }
}

/* ---- mutation step ---- */
void evo_mutate_probabilities(const evo_space *space, const evo_insights *ins, int knob, int cur, double *p)
{
    int n = evo_space_domain_size(space, knob);
    for (int v = 0; v < n; v++) p[v] = 0;
    if (n == 1) {
        p[0] = 1;
        return;
    }
    int n_near = (cur > 0) + (cur < n - 1);
    int n_far = n - 1 - n_near;
    double near = n_far ? EVO_MUTATE_NEIGHBOUR_P / n_near : 1.0 / n_near;
    double far = n_far ? (1.0 - EVO_MUTATE_NEIGHBOUR_P) / n_far : 0;
    double total = 0;
    for (int v = 0; v < n; v++) {
        if (v == cur) continue;
        p[v] = (abs(v - cur) == 1 ? near : far) * evo_insights_weight(ins, knob, v);
        total += p[v];
    }
    for (int v = 0; v < n; v++) p[v] /= total;
}

bool evo_genome_mutate(const evo_space *space, const evo_insights *ins, evo_genome *g, double rate, evo_rng *rng)
{
    bool mutated = false;
    const uint32_t act = evo_space_active(space, g);
    for (int k = 0; k < evo_space_n_knobs(space); k++) {
        if ((act >> k & 1u) && evo_space_domain_size(space, k) > 1 && evo_rng_uniform(rng) < rate) {
            g->idx[k] = (uint8_t)evo_mutate_value(space, ins, k, g->idx[k], rng);
            mutated = true;
        }
    }
    if (mutated) evo_genome_settle(space, g, act, rng);
    return mutated;
}

int evo_mutate_value(const evo_space *space, const evo_insights *ins, int knob, int cur, evo_rng *rng)
{
    int n = evo_space_domain_size(space, knob);
    if (n == 1) return cur;
    double p[EVO_MAX_DOMAIN];
    evo_mutate_probabilities(space, ins, knob, cur, p);
    double u = evo_rng_uniform(rng), acc = 0;
    int last = cur;
    for (int v = 0; v < n; v++) {
        if (v == cur) continue;
        acc += p[v];
        last = v;
        if (u < acc) return v;
    }
    return last; /* u landed in the rounding gap above the last cumulative sum */
}
