/* aliases.h — stored genome texts read in a config's space: the texts a store holds for one genome.
 *
 * A store never rewrites a genome's text: a candidate's row keeps the text it was first stored under. When a config
 * gives knobs conditions (space.h), texts stored before — listing every knob, inactive ones too — are other texts
 * for the same genome. An alias index, built once from a store for a config, maps each canonical text to the stored
 * texts that parse to it in the config's space and differ from it; a lookup by genome then asks the store for the
 * canonical text and all its aliases. Texts that do not parse in the config's space are left out.
 *
 * Contract: evo_aliases_build reads the store (which must stay open while the index is used, and be the same store
 * passed to evo_aliases_find_evaluation). Rows the store gains after the build are found only under their own text:
 * what evo writes is canonical. A config whose space has no conditions gets an empty index without reading the
 * store, and its lookups are exactly evo_store_find_evaluation_by_genome. Not thread-safe; free with
 * evo_aliases_free (NULL is fine).
 */
#ifndef EVO_ALIASES_H
#define EVO_ALIASES_H

#include "config.h"
#include "evo.h"
#include "store.h"

typedef struct evo_aliases evo_aliases;

evo_status evo_aliases_build(evo_store *st, const evo_config *cfg, evo_aliases **out, evo_err *err);
void evo_aliases_free(evo_aliases *a);
/* How many stored texts differ from their canonical text. */
int evo_aliases_count(const evo_aliases *a);

/* evo_store_find_evaluation_by_genome for the canonical text `genome` and every text stored for it (a NULL: the
 * text alone). */
evo_status evo_aliases_find_evaluation(evo_store *st, const evo_aliases *a, const char *task, const char *genome,
                                       const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                       evo_err *err);

#endif
