/* attn_gate.h — the attention task's verdicts per (batch, head) slice, from slice statistics (numerics.h's
 * evo_slice_acc) however they were measured: on the GPU by the worker (gpu.c), on the CPU by the tests.
 *
 * Two accuracy classes (docs/templates.md, "Accuracy classes"):
 *   exact  the config's tolerance; on the structural probes also each slice's rel-L2 on its own (the worst head
 *          decides), since a fault in one head of many barely moves the whole tensor's;
 *   fp8    FlashAttention-3's form, per slice, both errors against the exact reference: the kernel's rel-L2
 *          <= 2 x the FP8 model's + 1e-3, and every element's |out - ref| <= 2 x the model's max-abs + 2^-10 x
 *          max|ref| of the slice (an_fp8_budget; constants fixed in attn_numerics.h, not in the config). On inputs
 *          whose logits run into the thousands (the `large` distribution) a row is decided by one FP8 score and a
 *          score off by a few units swaps the winning key, for the model and every FP8 kernel alike: there each
 *          slice's rel-L2 must stay within AN_FP8_SATURATED_REL (0.1, above the 1/16 one rounding of P can cost)
 *          and every element be written and finite (attn_fp8_judge_saturated).
 * Pure functions; thread-safe.
 */
#ifndef EVO_ATTN_GATE_H
#define EVO_ATTN_GATE_H

#include "numerics.h"

#include <stdbool.h>
#include <stddef.h>

enum { ATTN_ACC_EXACT = 0, ATTN_ACC_FP8 = 1, ATTN_N_ACC };

/* The fp8 budget of each slice from the model's statistics against the exact reference (model[s] measured
 * without bounds). */
void attn_fp8_bounds(const evo_slice_acc *model, size_t n, double *rel_bound, double *abs_bound);

/* fp8 class: the kernel's statistics (measured with abs_bound as each slice's element bound) against the budget.
 * false with *why ("head 5: rel-L2 0.071 > 0.057 (2 x the model's 0.028 + 0.001)", "head 2, row 17: |out - ref|
 * 0.31 > 0.12 ...", "12 output elements not written or not finite ...") when any slice fails. rows_d: the row
 * length (head dim), slice_elems: S x D, to name the row of the first bad element. */
bool attn_fp8_judge(const evo_slice_acc *kernel, const evo_slice_acc *model, const double *rel_bound,
                    const double *abs_bound, size_t n, size_t slice_elems, int rows_d, char *why, size_t why_len);

/* fp8 class on saturated logits: every element finite, every slice's rel-L2 <= AN_FP8_SATURATED_REL. */
bool attn_fp8_judge_saturated(const evo_slice_acc *kernel, size_t n, char *why, size_t why_len);

/* exact class on a probe: every slice's rel-L2 <= rel_l2 (statistics measured without bounds). */
bool attn_exact_slices_judge(const evo_slice_acc *kernel, size_t n, double rel_l2, char *why, size_t why_len);

#endif
