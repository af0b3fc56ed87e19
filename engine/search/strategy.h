/* strategy.h — search strategies: what decides which genomes the loop evaluates next.
 *
 * A strategy is one table of functions (evo_strategy_ops); adding one means one file and one entry in
 * strategy.c's list. Built in: "ga" (strategy_ga.c: tournament selection, uniform crossover, per-knob mutation,
 * elitism, random immigrants), "random" (strategy_random.c: uniform random valid genomes, for comparison) and
 * "seeds" (strategy_seeds.c: the baseline and seeds, then hill climbing from the best measured genome).
 *
 * Call order: evo_strategy_create → { evo_strategy_propose → evo_strategy_observe ... } per generation →
 * evo_strategy_destroy. One propose call is one generation. observe takes the results of the generation's
 * proposals, in one or several calls; it also accepts genomes the strategy never proposed (results the loop
 * found in the store), which then count as seen and join the breeding pool.
 *
 * Guarantees of every strategy:
 * - every proposal is valid (evo_space_valid) and was neither proposed nor observed before in this search,
 *   so a generation has no duplicates and nothing is evaluated twice;
 * - deterministic: the same space, params (seed included) and observations give the same proposals. Nothing
 *   depends on time, global state, hash-table order or the order of observations within one generation.
 *   That makes --resume a replay: create, then for each finished generation propose and observe its stored
 *   results; the interrupted generation's proposals come out again, identical. With insights on, feed the
 *   insights only the evaluations made before the run began, and replay the run's own results as not reused
 *   (reused = whether they were reused the first time), so the statistics match the first pass.
 * - propose returns fewer than asked, down to 0, only when the valid genomes not yet seen run out.
 *
 * Ownership: the space, the params and everything they point to (insights included) are borrowed and must
 * outlive the strategy. evo_strategy_observe adds each new, non-reused observation to params->insights (the
 * loop feeds the store's earlier evaluations in before the first propose). Proposals are written into the
 * caller's array. A strategy is used by one thread at a time; separate strategies share nothing.
 */
#ifndef EVO_STRATEGY_H
#define EVO_STRATEGY_H

#include "evo.h"
#include "insights.h"
#include "space.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

/* How a proposal came about; stored as lineage by name (evo_operator_name). */
typedef enum {
    EVO_OP_BASELINE = 0,       /* the config's baseline genome                                  */
    EVO_OP_SEED,               /* a seed genome from the config                                  */
    EVO_OP_ELITE,              /* an elite of an earlier run (params.prior_elites)               */
    EVO_OP_RANDOM,             /* random valid genome: initial fill, or when breeding found nothing new */
    EVO_OP_IMMIGRANT,          /* random valid genome injected on purpose for diversity          */
    EVO_OP_CROSSOVER,          /* uniform crossover of parents[0] and parents[1]                  */
    EVO_OP_MUTATION,           /* mutation of parents[0]                                         */
    EVO_OP_CROSSOVER_MUTATION, /* crossover, then mutation of the child                          */
    EVO_OP_NEIGHBOUR,          /* a neighbour of parents[0] (evo_strategy_neighbours): local search */
    EVO_OP_MIGRANT,            /* a genome another island sent (islands.h); the loop adds it, no strategy proposes it */
    EVO_OP_COUNT
} evo_operator;

/* "baseline", "seed", "elite", "random", "immigrant", "crossover", "mutation", "crossover+mutation", "neighbour",
 * "migrant". */
const char *evo_operator_name(evo_operator op);

typedef struct {
    evo_genome genome;
    evo_operator op;
    int n_parents;         /* 0, 1 (mutation, neighbour) or 2 (crossover) */
    evo_genome parents[2]; /* the loop maps them to candidate ids for the lineage table */
} evo_proposal;

typedef struct {
    evo_genome genome;
    evo_verdict verdict;
    double fitness;                /* geomean speedup over the baseline; NAN unless verdict is OK or REGRESSED */
    double fitness_lo, fitness_hi; /* its 95 % interval (noise.h); 0 or NAN when unknown */
    bool reused; /* the result came from the store, not a new evaluation: it is seen and may breed, but it is
                       not added to insights again (the loop fed the store's evaluations in already) */
} evo_observation;

typedef struct {
    uint64_t seed;
    int population;             /* genomes per generation, >= 1                                        */
    int elites;                 /* ga: best genomes carried over unchanged (not re-proposed), < population */
    int tournament;             /* ga: tournament size, >= 1                                           */
    double crossover_rate;      /* ga: probability a child has two parents, [0, 1]                     */
    double mutation_rate;       /* ga: probability each knob of a child mutates, [0, 1]                */
    double immigrant_rate;      /* ga: probability a child is a random immigrant instead, [0, 1]       */
    double local_rate;          /* ga: probability a child is the next unseen neighbour of the elites (best first),
                               and the share of generation 0's free slots given to the seeds' and earlier
                               elites' neighbours, [0, 1]; 0 = no neighbour children                  */
    const evo_genome *baseline; /* may be NULL; first proposal of generation 0 when valid and unseen */
    const evo_genome *seeds;    /* config seed genomes, proposed next in generation 0 */
    int n_seeds;
    const evo_genome *prior_elites; /* elites of earlier runs of this task and arch, best first; then these */
    int n_prior_elites;
    evo_insights *insights; /* NULL: mutation ignores statistics (--no-insights) */
} evo_strategy_params;

/* Sensible values for tools and tests (the config sets its own): population 16, elites 2, tournament 3,
 * crossover 0.7, mutation 0.2, immigrants 0.1, local 0.5, seed 0, no genomes, no insights. */
void evo_strategy_params_default(evo_strategy_params *p);

typedef struct {
    const char *name;    /* what --strategy and evolution.strategy name: "ga", "random", "seeds" */
    const char *summary; /* one line for messages and docs */
    /* The strategy carries params->elites evaluated genomes from one generation to the next without proposing
     * them again, so the loop asks it for population - elites proposals after generation 0. */
    bool carries_elites;
    /* Make the state of a new search over space. Checks params (EVO_E_CONFIG naming the evolution.* key at
     * fault). space and params are borrowed for the life of the state. */
    evo_status (*create)(const evo_space *space, const evo_strategy_params *params, void **state, evo_err *err);
    /* Write up to max proposals for the next generation into out[0..*n). Each is valid and new to this search.
     * *n < max only when the unseen valid genomes run out. */
    evo_status (*propose)(void *state, evo_proposal *out, int max, int *n, evo_err *err);
    /* Take n results, in any order within a generation. Through evo_strategy_observe each genome arrives at most
     * once: the wrapper drops repeats and adds the non-reused results to params->insights itself. */
    void (*observe)(void *state, const evo_observation *obs, int n);
    /* Take new measurements of genomes observed before (elites re-timed after the baseline drifted): their
     * fitness and interval replace the old ones. NULL: the strategy keeps what it saw first. */
    void (*refresh)(void *state, const evo_observation *obs, int n);
    /* The evaluated genomes carried into the generation last proposed (carries_elites), best first, at most max,
     * with their current fitness (after any refresh); returns how many. NULL: the strategy carries none. */
    int (*elites)(void *state, evo_observation *out, int max);
    /* Free the state; NULL is allowed. */
    void (*destroy)(void *state);
} evo_strategy_ops;

extern const evo_strategy_ops evo_strategy_ga;
extern const evo_strategy_ops evo_strategy_random;
extern const evo_strategy_ops evo_strategy_seeds;

/* Lookup by name; NULL when unknown. */
const evo_strategy_ops *evo_strategy_find(const char *name);
/* All built-in strategies, in a fixed order. */
const evo_strategy_ops *const *evo_strategy_list(int *n);
/* Registers with the config layer what it checks through hooks (config.h's evo_config_checks): these strategies'
 * names, and NVRTC's verdict on compile.extra_options (compile.h). main calls it first; so do tests that load
 * configs. */
void evo_strategy_register_config_checks(void);

/* ---- a strategy instance: ops + state, what the loop holds ---- */
typedef struct evo_strategy evo_strategy;

/* Unknown name: EVO_E_CONFIG "unknown strategy 'x' (known: ga, random, seeds)". */
evo_status evo_strategy_create(const char *name, const evo_space *space, const evo_strategy_params *params,
                               evo_strategy **out, evo_err *err);
evo_status evo_strategy_propose(evo_strategy *s, evo_proposal *out, int max, int *n, evo_err *err);
/* New measurements of genomes already observed (ops->refresh; ignored when the strategy has none). */
void evo_strategy_refresh(evo_strategy *s, const evo_observation *obs, int n);
void evo_strategy_observe(evo_strategy *s, const evo_observation *obs, int n);
/* ops->elites, or 0 when the strategy has none. */
int evo_strategy_elites(const evo_strategy *s, evo_observation *out, int max);
const char *evo_strategy_name(const evo_strategy *s);
bool evo_strategy_carries_elites(const evo_strategy *s);
void evo_strategy_destroy(evo_strategy *s); /* NULL is allowed */

/* ---- helpers shared by strategy implementations ---- */

/* The set of genomes a search has seen (proposed or observed). Membership only, never iterated, so its hash
 * order cannot leak into proposals. */
typedef struct evo_genome_set evo_genome_set;
evo_genome_set *evo_genome_set_new(const evo_space *space);
void evo_genome_set_free(evo_genome_set *set);
bool evo_genome_set_has(const evo_genome_set *set, const evo_genome *g);
bool evo_genome_set_add(evo_genome_set *set, const evo_genome *g); /* false when already present */
int evo_genome_set_count(const evo_genome_set *set);

/* A uniformly random valid genome not in seen (rejection first, then enumeration of the valid genomes once
 * rejection keeps hitting seen ones). Returns false when every valid genome is in seen. */
bool evo_strategy_random_unseen(const evo_space *space, const evo_genome_set *seen, evo_rng *rng, evo_genome *out);

/* Which knobs a constraint's text names (bit k for knob k): every identifier in it that is a knob. */
uint32_t evo_constraint_knobs(const evo_space *space, const char *text);

/* A growable list of genomes (free g when done). */
typedef struct {
    evo_genome *g;
    int n, cap;
} evo_genome_list;
void evo_genome_list_push(evo_genome_list *l, const evo_genome *g);

/* The neighbours of g in an order fixed by (seed, g), into out (emptied first): for each move of one knob to
 * another value — moves to an adjacent value first, then the others, each group in a seeded order — the moved
 * genome when it is valid, else every valid genome made from it by also changing one knob that the first violated
 * constraint names (nearest values first). Genomes may repeat; g itself never appears. */
void evo_strategy_neighbours(const evo_space *space, const evo_genome *g, uint64_t seed, evo_genome_list *out);

/* g with every index past the space's last knob zeroed: strategies keep genomes so, and whole structs compare. */
evo_genome evo_genome_normalized(const evo_space *space, const evo_genome *g);

/* Makes out a proposal of g (normalized) by op with parents p1, p2 (either may be NULL) when g is valid and not in
 * seen; adds it to seen. false, and out untouched, otherwise. */
bool evo_strategy_take(const evo_space *space, evo_genome_set *seen, const evo_genome *g, evo_operator op,
                       const evo_genome *p1, const evo_genome *p2, evo_proposal *out);

/* Generation 0's given genomes: the baseline, the seeds, the earlier elites of p, each taken (evo_strategy_take) in
 * that order while fewer than want are proposed. Returns how many are in out. */
int evo_strategy_given(const evo_space *space, evo_genome_set *seen, const evo_strategy_params *p, evo_proposal *out,
                       int want);

/* Unseen neighbours (evo_strategy_neighbours with seed) of the n_starts start genomes, one per start in turn, as
 * EVO_OP_NEIGHBOUR proposals with the start as parent, into out[n..until) (starts may point into out). Returns the
 * new n. */
int evo_strategy_around(const evo_space *space, evo_genome_set *seen, uint64_t seed, const evo_genome *starts,
                        int n_starts, evo_proposal *out, int n, int until);

/* Probability that mutation moves a knob to one of the neighbouring domain values (domains are ordered, so a
 * neighbour is a small step); the rest is spread evenly over the other values. */
#define EVO_MUTATE_NEIGHBOUR_P 0.75

/* A new domain index for knob, different from cur (cur itself when the domain has one value): neighbours of cur
 * share EVO_MUTATE_NEIGHBOUR_P, the other values the rest, each value's share then multiplied by its insight
 * weight (evo_insights_weight; 1 everywhere when ins is NULL). */
int evo_mutate_value(const evo_space *space, const evo_insights *ins, int knob, int cur, evo_rng *rng);
/* The GA's mutation of a genome: each active knob (space.h) with more than one value moves with probability rate
 * (evo_mutate_value); inactive knobs are never drawn for. Knobs a move turns on (a condition knob changed) get
 * uniformly random values, knobs it turns off their first; g stays canonical. True when some knob moved. */
bool evo_genome_mutate(const evo_space *space, const evo_insights *ins, evo_genome *g, double rate, evo_rng *rng);
/* The probability evo_mutate_value gives each value (p[cur] = 0); p holds domain-size entries. */
void evo_mutate_probabilities(const evo_space *space, const evo_insights *ins, int knob, int cur, double *p);

#endif
