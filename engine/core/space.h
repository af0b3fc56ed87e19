/* space.h — the search space: knobs with integer or enumerated domains, conditions on knobs, constraints between
 * them, genomes.
 *
 * A knob may have a condition (an expression over other knobs, expr.h: "FAMILY == 1"): it is active in a genome
 * when every knob its condition reads is active and the condition holds; a knob without one is always active. A
 * genome assigns every active knob one value of its domain. It is stored as domain *indices* (so mutation and
 * crossover never leave the domain), one slot per knob; evo_space_value() turns an index into the knob's integer
 * value (for an enumerated knob, the index itself) and evo_space_value_text() into its text ("64", "mma").
 *
 * Invariant (EVO_ASSERT in the text form): a genome is canonical — an inactive knob's slot, and every slot past
 * the space's knobs, holds index 0 (the knob's first value). So two genomes that differ only in inactive knobs are
 * one genome: equal bytes, one text, one hash. What reads an inactive knob (evo_genome_get, a task's render) sees
 * its first value. evo_genome_canonicalize makes any genome canonical; parsing, random genomes and enumeration
 * return canonical ones.
 *
 * Canonical text form: "K1=V1,K2=V2,..." listing the active knobs in the order they were declared;
 * evo_genome_parse accepts the knobs in any order with optional spaces, accepts and drops inactive knobs (the texts
 * stored before a knob had its condition list every knob), and rejects unknown knobs, values outside the domain,
 * duplicates and missing active knobs, naming the one at fault. The hash is SHA-256 of the canonical text, stable
 * across machines.
 *
 * Constraints are expressions over knob names (see expr.h); a genome is valid when every constraint that reads
 * only active knobs is non-zero (one that reads an inactive knob holds) and, when the space has a filter
 * (evo_space_set_filter: a rule no expression states, such as what one GPU can run), the filter takes it.
 *
 * Ownership: evo_space owns its knobs, conditions and constraints; free with evo_space_free. A built space is
 * read-only and may be shared between threads. Build order: new → add knobs → set conditions (which may name any
 * knob added, but not their own and never in a cycle) → add constraints (which may only name knobs already
 * added) → use.
 */
#ifndef EVO_SPACE_H
#define EVO_SPACE_H

#include "evo.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

#define EVO_MAX_KNOBS 32
#define EVO_MAX_DOMAIN 64
#define EVO_GENOME_TEXT_MAX 1024

typedef struct evo_space evo_space;

typedef struct {
    uint8_t idx[EVO_MAX_KNOBS]; /* domain index per knob, in declaration order */
} evo_genome;

evo_status evo_space_new(evo_space **out);
void evo_space_free(evo_space *s);

/* name: [A-Za-z_][A-Za-z0-9_]*, unique. values: distinct, 1..EVO_MAX_DOMAIN of them. */
evo_status evo_space_add_int_knob(evo_space *s, const char *name, const int *values, int n, evo_err *err);
/* names: distinct identifiers, 1..EVO_MAX_DOMAIN of them. */
evo_status evo_space_add_enum_knob(evo_space *s, const char *name, const char *const *names, int n, evo_err *err);
/* Parses expr now; errors say the column and the token ("constraint 2, column 14: unknown knob 'TILE_Q'").
 * An identifier that is not a knob but a value name of an enumerated knob stands for that value's index. */
evo_status evo_space_add_constraint(evo_space *s, const char *expr, evo_err *err);
/* Same, for callers that place the error themselves (the config maps it to a file column): on a parse error
 * err holds only what is wrong ("unknown knob 'TILE_Q'") and *err_column the 1-based column in expr. */
evo_status evo_space_add_constraint_ex(evo_space *s, const char *expr, int *err_column, evo_err *err);

/* Gives knob k (added) the condition expr: parsed now (errors as for constraints, *err_column the column in expr, 0
 * when the error is about the whole condition); EVO_E_CONFIG when it reads knob k itself ("the condition of knob
 * 'X' reads 'X' itself"), when the conditions would form a cycle ("... form a cycle (A -> B -> A: ...)", the space
 * unchanged), or when k has one already. */
evo_status evo_space_set_condition(evo_space *s, int k, const char *expr, int *err_column, evo_err *err);
const char *evo_space_knob_condition(const evo_space *s, int k); /* its text; NULL: always active */
bool evo_space_has_conditions(const evo_space *s);
/* The knob at position i of the walk order (declaration order, each conditional knob after the knobs its condition
 * reads): the order in which a genome's knobs can be decided one after the other. */
int evo_space_walk_knob(const evo_space *s, int i);

/* Bit k set when knob k is active in g. */
uint32_t evo_space_active(const evo_space *s, const evo_genome *g);
/* Inactive slots (and the slots past the knobs) to index 0. */
void evo_genome_canonicalize(const evo_space *s, evo_genome *g);
bool evo_genome_is_canonical(const evo_space *s, const evo_genome *g);
/* After a move changed knobs (mutation, crossover): each knob active in g whose bit is not in keep — its value means
 * nothing yet, e.g. a knob a changed condition has just turned on — gets a uniformly drawn value from rng (its first
 * value when rng is NULL); then g is made canonical. keep = UINT32_MAX only canonicalises. */
void evo_genome_settle(const evo_space *s, evo_genome *g, uint32_t keep, evo_rng *rng);

int evo_space_n_knobs(const evo_space *s);
const char *evo_space_knob_name(const evo_space *s, int knob);
bool evo_space_knob_is_enum(const evo_space *s, int knob);
int evo_space_domain_size(const evo_space *s, int knob);
int evo_space_find_knob(const evo_space *s, const char *name); /* -1 when absent */
int evo_space_value(const evo_space *s, int knob, int idx);    /* integer value (enum: the index) */
const char *evo_space_value_text(const evo_space *s, int knob, int idx);
int evo_space_n_constraints(const evo_space *s);
const char *evo_space_constraint_text(const evo_space *s, int i);

/* Value of a knob in a genome, by name; returns def when the space has no such knob (an inactive knob: its first
 * value). */
int evo_genome_get(const evo_space *s, const evo_genome *g, const char *knob, int def);

/* True when every constraint holds (one reading an inactive knob holds) and the filter, if any, takes g. When it is
 * not valid and violated is not NULL, *violated is the first failing constraint's text, or the filter's label (both
 * owned by the space or the filter's setter). */
bool evo_space_valid(const evo_space *s, const evo_genome *g, const char **violated);
/* evo_space_valid without the filter: the constraints alone. */
bool evo_space_constraints_hold(const evo_space *s, const evo_genome *g, const char **violated);

/* A rule over whole genomes that no constraint expression states (the search loop's: what the task can implement at
 * one GPU's limits). fn returns true for a genome it takes; it sees canonical genomes that satisfy every constraint.
 * evo_space_valid, evo_space_foreach_valid and evo_space_random then leave out what it refuses; evo_space_count
 * counts the constraints alone. fn, ctx and label (what evo_space_valid names as violated) are borrowed and must
 * outlive the filter; fn = NULL removes it. The space is then no longer read-only: set the filter before sharing it
 * and remove it before ctx goes away. */
typedef bool (*evo_space_filter_fn)(const evo_genome *g, void *ctx);
void evo_space_set_filter(evo_space *s, evo_space_filter_fn fn, void *ctx, const char *label);

evo_status evo_genome_parse(const evo_space *s, const char *text, evo_genome *g, evo_err *err);
/* Canonical text; returns the length (truncated to n-1 when it does not fit, like snprintf). */
int evo_genome_format(const evo_space *s, const evo_genome *g, char *buf, size_t n);
void evo_genome_hash(const evo_space *s, const evo_genome *g, char hex[65]);
bool evo_genome_equal(const evo_space *s, const evo_genome *a, const evo_genome *b);

/* The number of distinct genomes constraints aside (*total: the product of the domain sizes, or with conditions
 * the sum over the condition knobs' cases of the product of the domains active in each) and, by enumeration, the
 * number of valid genomes (exact up to `limit` genomes enumerated; *exact is false when the space is larger than
 * that and *valid is then an estimate from sampling). The enumeration cuts subtrees as soon as a constraint fails,
 * so much larger spaces are often still exact. *total saturates at UINT64_MAX. EVO_E_CONFIG when the space has no
 * knobs. */
evo_status evo_space_count(const evo_space *s, uint64_t limit, uint64_t *total, uint64_t *valid, bool *exact,
                           evo_err *err);
/* Visit every valid genome (canonical; the filter's too) in lexicographic index order of the walk order; stop early
 * when fn returns non-zero. */
void evo_space_foreach_valid(const evo_space *s, int (*fn)(const evo_genome *g, void *ctx), void *ctx);
/* How many genomes evo_space_foreach_valid visits (the filter's verdict included): one pass, no limit. */
uint64_t evo_space_count_filtered(const evo_space *s);
/* A random valid genome, canonical: each active knob drawn uniformly in the walk order, so without conditions a
 * uniformly random one, and with conditions each case of a condition knob as likely as without (rejection
 * sampling, then enumeration when rejection keeps failing, which costs one pass over the valid genomes and is
 * uniform over them: fine for spaces whose valid fraction is not tiny or whose constraints prune early).
 * Deterministic for a given rng state. Returns EVO_E_CONFIG when no genome is valid. */
evo_status evo_space_random(const evo_space *s, evo_rng *rng, evo_genome *out, evo_err *err);

#endif
