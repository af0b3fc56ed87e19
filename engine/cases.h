/* cases.h — the correctness and timing cases a worker runs for a config: every (shape, causal, seed, distribution,
 * softmax scale) the gates check, and one timing case per timed shape. Shared by the GPU worker (eval_gpu.c),
 * which makes inputs and references for each, and the fake worker, which reports what it would check, so CPU-only
 * tests see the same list.
 *
 * Rules: every shape (timed ones first, then correctness.shapes) x correctness.causal x distribution at the first
 * softmax scale; the timed shapes with the first correctness.timed_seeds seeds, the extra shapes with all. Each
 * further scale on every shape and causal setting, first seed and distribution only (a kernel that ignores the
 * scale is wrong on any input). Under a sanitizer: the first seed, distribution and scale only. Then, unless under a
 * sanitizer, one timing case per timed shape (its own causal flag, the timed softmax_scale, seed
 * EVO_TIMING_SEED + shape, normal inputs).
 *
 * Pure: the list is malloc'd (free it), nothing else is kept.
 */
#ifndef EVO_CASES_H
#define EVO_CASES_H

#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#define EVO_TIMING_SEED 0x7157ull /* timing inputs differ from every checked one (config seeds are small) */

typedef struct {
    int shape;      /* index into timed shapes followed by correctness.shapes */
    bool causal;
    uint64_t seed;
    evo_dist dist;
    double scale;   /* softmax scale; 0 = 1/sqrt(head_dim) */
    bool timing;    /* the timing inputs of timed shape `shape` */
} evo_gate_case;

/* The cases in the order above; returns how many (*out malloc'd, NULL when 0). */
int evo_gate_cases(const evo_config *cfg, bool sanitize, evo_gate_case **out);
/* The shape of case c: cfg->shapes[c->shape] or cfg->correctness.shapes[c->shape - n_shapes]. */
const evo_shape *evo_gate_case_shape(const evo_config *cfg, const evo_gate_case *c);

#endif
