/* aliases.c — the texts a store holds for one genome of a config's space (see aliases.h): a sorted array of
 * (canonical, stored) pairs, searched by canonical text. */
#include "aliases.h"

#include "space.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *canonical, *stored;
} alias;

struct evo_aliases {
    alias *a;
    int n, cap;
    const evo_space *space;
};

static void add_stored(const char *genome, void *ctx)
{
    evo_aliases *x = ctx;
    evo_genome g;
    if (!genome || evo_genome_parse(x->space, genome, &g, NULL) != EVO_OK) return;
    char text[EVO_GENOME_TEXT_MAX];
    evo_genome_format(x->space, &g, text, sizeof text);
    if (strcmp(text, genome) == 0) return;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 64;
        x->a = evo_xrealloc(x->a, (size_t)x->cap * sizeof *x->a);
    }
    x->a[x->n++] = (alias){evo_strdup(text), evo_strdup(genome)};
}

static int alias_cmp(const void *pa, const void *pb)
{
    const alias *a = pa, *b = pb;
    int c = strcmp(a->canonical, b->canonical);
    return c ? c : strcmp(a->stored, b->stored);
}

evo_status evo_aliases_build(evo_store *st, const evo_config *cfg, evo_aliases **out, evo_err *err)
{
    evo_aliases *x = evo_xcalloc(1, sizeof *x);
    x->space = cfg->space;
    if (evo_space_has_conditions(cfg->space)) {
        evo_status s = evo_store_foreach_genome(st, cfg->task, add_stored, x, err);
        if (s != EVO_OK) {
            evo_aliases_free(x);
            return s;
        }
        if (x->n > 1) qsort(x->a, (size_t)x->n, sizeof *x->a, alias_cmp);
    }
    *out = x;
    return EVO_OK;
}

void evo_aliases_free(evo_aliases *a)
{
    if (!a) return;
    for (int i = 0; i < a->n; i++) {
        free(a->a[i].canonical);
        free(a->a[i].stored);
    }
    free(a->a);
    free(a);
}

int evo_aliases_count(const evo_aliases *a) { return a ? a->n : 0; }

evo_status evo_aliases_find_evaluation(evo_store *st, const evo_aliases *a, const char *task, const char *genome,
                                       const char *shape_set, const char *arch, evo_eval_rec *out, bool *found,
                                       evo_err *err)
{
    int lo = 0, hi = a ? a->n : 0;
    while (lo < hi) { /* the first pair whose canonical text is not below genome */
        const int mid = lo + (hi - lo) / 2;
        if (strcmp(a->a[mid].canonical, genome) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int end = lo;
    while (a && end < a->n && strcmp(a->a[end].canonical, genome) == 0) end++;
    if (end == lo) return evo_store_find_evaluation_by_genome(st, task, genome, shape_set, arch, out, found, err);
    const char **texts = evo_xcalloc((size_t)(end - lo + 1), sizeof *texts);
    texts[0] = genome;
    for (int i = lo; i < end; i++) texts[i - lo + 1] = a->a[i].stored;
    evo_status s =
        evo_store_find_evaluation_by_genomes(st, task, texts, end - lo + 1, shape_set, arch, out, found, err);
    free(texts);
    return s;
}
