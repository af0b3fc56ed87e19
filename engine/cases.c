/* cases.c — the list of cases the gates check for a config (see cases.h). */
#include "cases.h"

#include "util.h"

typedef struct {
    evo_gate_case *v;
    int n, cap;
} case_list;

static void push(case_list *l, evo_gate_case c)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = evo_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = c;
}

int evo_gate_cases(const evo_config *cfg, bool sanitize, evo_gate_case **out)
{
    case_list l = {NULL, 0, 0};
    const int n_shapes = cfg->n_shapes + cfg->correctness.n_shapes;
    const double *scales = cfg->correctness.softmax_scales;
    const int n_scales = cfg->correctness.n_softmax_scales > 0 ? cfg->correctness.n_softmax_scales : 1;
    const double first_scale = cfg->correctness.n_softmax_scales > 0 ? scales[0] : cfg->softmax_scale;
    for (int sh = 0; sh < n_shapes; sh++) {
        const int n_seeds = sanitize ? 1 : sh < cfg->n_shapes ? cfg->correctness.timed_seeds : cfg->correctness.n_seeds;
        const int n_dists = sanitize ? 1 : cfg->correctness.n_dists;
        for (int c = 0; c < cfg->correctness.n_causal; c++)
            for (int s = 0; s < n_seeds; s++)
                for (int d = 0; d < n_dists; d++)
                    push(&l, (evo_gate_case){sh, cfg->correctness.causal[c], cfg->correctness.seeds[s],
                                             cfg->correctness.dists[d], first_scale, false});
        for (int k = 1; !sanitize && k < n_scales; k++)
            for (int c = 0; c < cfg->correctness.n_causal; c++)
                push(&l, (evo_gate_case){sh, cfg->correctness.causal[c], cfg->correctness.seeds[0],
                                         cfg->correctness.dists[0], scales[k], false});
    }
    for (int i = 0; !sanitize && i < cfg->n_shapes; i++)
        push(&l, (evo_gate_case){i, cfg->shapes[i].causal, EVO_TIMING_SEED + (uint64_t)i, EVO_DIST_NORMAL,
                                 cfg->softmax_scale, true});
    *out = l.v;
    return l.n;
}

const evo_shape *evo_gate_case_shape(const evo_config *cfg, const evo_gate_case *c)
{
    return c->shape < cfg->n_shapes ? &cfg->shapes[c->shape] : &cfg->correctness.shapes[c->shape - cfg->n_shapes];
}
