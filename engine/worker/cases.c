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

static bool cheap(const evo_config *cfg, int a)
{
    return cfg->task_ops->shape_fields[cfg->correctness.axes[a].field].axis_cheap;
}

/* The k-th combination of the full axes' values (the last axis varying fastest), cheap axes at their first value;
 * false past the last one. */
static bool full_combination(const evo_config *cfg, int k, long long *axis)
{
    for (int a = cfg->correctness.n_axes - 1; a >= 0; a--) {
        if (cheap(cfg, a)) {
            axis[a] = cfg->correctness.axes[a].values[0];
            continue;
        }
        axis[a] = cfg->correctness.axes[a].values[k % cfg->correctness.axes[a].n];
        k /= cfg->correctness.axes[a].n;
    }
    return k == 0;
}

static evo_gate_case make(const evo_config *cfg, int sh, const long long *axis, uint64_t seed, evo_dist dist)
{
    evo_gate_case c = {.shape = sh, .seed = seed, .dist = dist, .probe = -1};
    c.s = *evo_gate_case_shape(cfg, &c);
    for (int a = 0; axis && a < cfg->correctness.n_axes; a++) c.s.v[cfg->correctness.axes[a].field] = axis[a];
    return c;
}

/* The same problem on the same inputs: every field value, seed, distribution or probe, and the timing flag (the shape
 * a case came from and its name do not change what is checked). */
static bool same_case(const evo_config *cfg, const evo_gate_case *a, const evo_gate_case *b)
{
    if (a->seed != b->seed || a->dist != b->dist || a->probe != b->probe || a->timing != b->timing) return false;
    for (int f = 0; f < cfg->task_ops->n_shape_fields; f++)
        if (a->s.v[f] != b->s.v[f]) return false;
    return true;
}

/* Drops every case equal to an earlier one (same_case), keeping the order of the rest; returns how many are left. */
static int drop_repeats(const evo_config *cfg, evo_gate_case *v, int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < kept && !seen; j++) seen = same_case(cfg, &v[j], &v[i]);
        if (!seen) v[kept++] = v[i];
    }
    return kept;
}

int evo_gate_cases(const evo_config *cfg, bool sanitize, evo_gate_case **out)
{
    case_list l = {NULL, 0, 0};
    const int n_shapes = cfg->n_shapes + cfg->correctness.n_shapes;
    for (int sh = 0; sh < n_shapes; sh++) {
        const int n_seeds = sanitize ? 1 : sh < cfg->n_shapes ? cfg->correctness.timed_seeds : cfg->correctness.n_seeds;
        const int n_dists = sanitize ? 1 : cfg->correctness.n_dists;
        long long axis[EVO_FIELDS_MAX];
        for (int k = 0; full_combination(cfg, k, axis); k++)
            for (int s = 0; s < n_seeds; s++)
                for (int d = 0; d < n_dists; d++)
                    push(&l, make(cfg, sh, axis, cfg->correctness.seeds[s], cfg->correctness.dists[d]));
        for (int a = 0; !sanitize && a < cfg->correctness.n_axes; a++) {
            if (!cheap(cfg, a)) continue;
            for (int j = 1; j < cfg->correctness.axes[a].n; j++)
                for (int k = 0; full_combination(cfg, k, axis); k++) {
                    axis[a] = cfg->correctness.axes[a].values[j];
                    push(&l, make(cfg, sh, axis, cfg->correctness.seeds[0], cfg->correctness.dists[0]));
                }
        }
        const evo_task *t = cfg->task_ops;
        for (int pr = 0; !sanitize && t->probe_cases && pr < t->n_probes && pr < 32; pr++) {
            if (!(cfg->correctness.probes & (1u << pr))) continue;
            for (int k = 0; full_combination(cfg, k, axis); k++) {
                evo_gate_case base = make(cfg, sh, axis, cfg->correctness.seeds[0], EVO_DIST_NORMAL);
                evo_shape ps[8];
                const int n = t->probe_cases(cfg, &base.s, pr, ps, (int)EVO_ARRAY_LEN(ps));
                for (int j = 0; j < n; j++) {
                    evo_gate_case c = base;
                    c.s = ps[j];
                    c.probe = pr;
                    push(&l, c);
                }
            }
        }
    }
    for (int i = 0; !sanitize && i < cfg->n_shapes; i++) {
        evo_gate_case c = make(cfg, i, NULL, EVO_TIMING_SEED + (uint64_t)i, EVO_DIST_NORMAL);
        c.timing = true;
        push(&l, c);
    }
    *out = l.v;
    return drop_repeats(cfg, l.v, l.n);
}

const evo_shape *evo_gate_case_shape(const evo_config *cfg, const evo_gate_case *c)
{
    return c->shape < cfg->n_shapes ? &cfg->shapes[c->shape] : &cfg->correctness.shapes[c->shape - cfg->n_shapes];
}
