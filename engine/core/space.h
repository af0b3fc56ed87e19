/* space.h — the search space: knobs with integer or enumerated domains, constraints between them, genomes.
 *
 * A genome assigns every knob one value of its domain. It is stored as domain *indices* (so mutation and
 * crossover never leave the domain); evo_space_value() turns an index into the knob's integer value (for an
 * enumerated knob, the index itself) and evo_space_value_text() into its text ("64", "mma").
 * Canonical text form: "K1=V1,K2=V2,..." in the order the knobs were declared; evo_genome_parse accepts the
 * knobs in any order with optional spaces, and rejects unknown knobs, values outside the domain, duplicates and
 * missing knobs, naming the one at fault. The hash is SHA-256 of the canonical text, stable across machines.
 *
 * Constraints are expressions over knob names (see expr.h); a genome is valid when every constraint is non-zero.
 *
 * Ownership: evo_space owns its knobs and constraints; free with evo_space_free. A built space is read-only and
 * may be shared between threads. Build order: new → add knobs → add constraints (which may only name knobs
 * already added) → use.
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

int evo_space_n_knobs(const evo_space *s);
const char *evo_space_knob_name(const evo_space *s, int knob);
bool evo_space_knob_is_enum(const evo_space *s, int knob);
int evo_space_domain_size(const evo_space *s, int knob);
int evo_space_find_knob(const evo_space *s, const char *name); /* -1 when absent */
int evo_space_value(const evo_space *s, int knob, int idx);    /* integer value (enum: the index) */
const char *evo_space_value_text(const evo_space *s, int knob, int idx);
int evo_space_n_constraints(const evo_space *s);
const char *evo_space_constraint_text(const evo_space *s, int i);

/* Value of a knob in a genome, by name; returns def when the space has no such knob. */
int evo_genome_get(const evo_space *s, const evo_genome *g, const char *knob, int def);

/* True when every constraint holds. When it does not and violated is not NULL, *violated is the first failing
 * constraint's text (owned by the space). */
bool evo_space_valid(const evo_space *s, const evo_genome *g, const char **violated);

evo_status evo_genome_parse(const evo_space *s, const char *text, evo_genome *g, evo_err *err);
/* Canonical text; returns the length (truncated to n-1 when it does not fit, like snprintf). */
int evo_genome_format(const evo_space *s, const evo_genome *g, char *buf, size_t n);
void evo_genome_hash(const evo_space *s, const evo_genome *g, char hex[65]);
bool evo_genome_equal(const evo_space *s, const evo_genome *a, const evo_genome *b);

/* Cartesian size and, by enumeration, the number of valid genomes (exact up to `limit` genomes enumerated;
 * *exact is false when the space is larger than that and *valid is then an estimate from sampling).
 * The enumeration cuts subtrees as soon as a constraint fails, so much larger spaces are often still exact.
 * *total saturates at UINT64_MAX. EVO_E_CONFIG when the space has no knobs. */
evo_status evo_space_count(const evo_space *s, uint64_t limit, uint64_t *total, uint64_t *valid, bool *exact,
                           evo_err *err);
/* Visit every valid genome in lexicographic index order; stop early when fn returns non-zero. */
void evo_space_foreach_valid(const evo_space *s, int (*fn)(const evo_genome *g, void *ctx), void *ctx);
/* A uniformly random valid genome (rejection sampling, then enumeration when rejection keeps failing, which
 * costs one pass over the valid genomes: fine for spaces whose valid fraction is not tiny or whose constraints
 * prune early). Deterministic for a given rng state. Returns EVO_E_CONFIG when no genome is valid. */
evo_status evo_space_random(const evo_space *s, evo_rng *rng, evo_genome *out, evo_err *err);

#endif
