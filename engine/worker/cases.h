/* cases.h — the correctness and timing cases a worker runs for a config: every shape with every combination of
 * its task's axis values (attention: causal, softmax scale), seed and distribution that the gates check, and one
 * timing case per timed shape. Shared by the GPU worker (eval_gpu.c), which makes inputs and references for each
 * through the task, and the fake worker, which reports what it would check, so CPU-only tests see the same list.
 *
 * Rules: every shape (timed ones first, then correctness.shapes) x every combination of the values of the axes
 * (correctness.<field>; the first value of each "cheap" axis) x distribution x seed: the timed shapes with the first
 * correctness.timed_seeds seeds, the extra shapes with all. Then each further value of a cheap axis on every
 * combination of the others, with the first seed and distribution only (a kernel that ignores a softmax scale is
 * wrong on any input). Then each of the task's structural probes the config keeps (correctness.probes) on every
 * combination of the non-cheap axes, with the first seed, in the shapes task->probe_cases gives (e.g. its own
 * softmax scales). Under a sanitizer: the first seed and distribution, no cheap values beyond the first, no probes.
 * Then, unless under a sanitizer, one timing case per timed shape: its own field values, seed EVO_TIMING_SEED +
 * shape, normal inputs. A case equal to an earlier one (every field value after the axes are applied, seed,
 * distribution or probe, timing flag) is dropped: a timed shape and its causal twin (b4h16s4k, b4h16s4kc) give the
 * same problems once the causal axis sets both, and each is checked once, under the first shape's name.
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
    int shape;   /* index into timed shapes followed by correctness.shapes */
    evo_shape s; /* that shape with the case's axis values applied */
    uint64_t seed;
    evo_dist dist;
    bool timing; /* the timing inputs of timed shape `shape` */
    int probe;   /* -1: inputs of distribution dist; else the task's structural probe of that index */
} evo_gate_case;

/* The cases in the order above; returns how many (*out malloc'd, NULL when 0). */
int evo_gate_cases(const evo_config *cfg, bool sanitize, evo_gate_case **out);
/* The shape of case c as the config wrote it: cfg->shapes[c->shape] or cfg->correctness.shapes[...]. */
const evo_shape *evo_gate_case_shape(const evo_config *cfg, const evo_gate_case *c);

#endif
