/* attn_gate.c — the attention task's per-slice verdicts (see attn_gate.h). */
#include "attn_gate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AN_FN static inline
#include "attn_numerics.h"

void attn_fp8_bounds(const evo_slice_acc *model, size_t n, double *rel_bound, double *abs_bound)
{
    for (size_t s = 0; s < n; s++)
        an_fp8_budget(evo_slice_rel_l2(&model[s]), model[s].max_abs, model[s].max_ref, &rel_bound[s], &abs_bound[s]);
}

static bool nonfinite(const evo_slice_acc *a, size_t n, char *why, size_t why_len)
{
    unsigned long long bad = 0, first = ~0ull;
    for (size_t s = 0; s < n; s++) {
        bad += a[s].n_nonfinite;
        if (a[s].n_nonfinite && a[s].first_bad < first) first = a[s].first_bad;
    }
    if (!bad) return false;
    snprintf(why, why_len, "%llu output elements not written or not finite (first at %llu)", bad, first);
    return true;
}

bool attn_fp8_judge(const evo_slice_acc *kernel, const evo_slice_acc *model, const double *rel_bound,
                    const double *abs_bound, size_t n, size_t slice_elems, int rows_d, char *why, size_t why_len)
{
    why[0] = '\0';
    if (nonfinite(kernel, n, why, why_len)) return false;
    for (size_t s = 0; s < n; s++) {
        const double rel = evo_slice_rel_l2(&kernel[s]);
        if (!(rel <= rel_bound[s])) {
            snprintf(why, why_len, "head %zu: rel-L2 %.3g > %.3g (%g x the FP8 model's %.3g + %g)", s, rel,
                     rel_bound[s], AN_FP8_K, evo_slice_rel_l2(&model[s]), AN_FP8_REL_ATOL);
            return false;
        }
        if (kernel[s].n_over) {
            const unsigned long long in = kernel[s].first_bad - (unsigned long long)s * slice_elems;
            snprintf(why, why_len,
                     "head %zu, row %llu: %llu elements with |out - ref| over %.3g (%g x the FP8 model's max %.3g + "
                     "2^-10 x max|ref| %.3g); max %.3g",
                     s, in / (unsigned long long)rows_d, kernel[s].n_over, abs_bound[s], AN_FP8_K, model[s].max_abs,
                     model[s].max_ref, kernel[s].max_abs);
            return false;
        }
    }
    return true;
}

bool attn_fp8_judge_saturated(const evo_slice_acc *kernel, size_t n, char *why, size_t why_len)
{
    why[0] = '\0';
    if (nonfinite(kernel, n, why, why_len)) return false;
    for (size_t s = 0; s < n; s++) {
        const double rel = evo_slice_rel_l2(&kernel[s]);
        if (!(rel <= AN_FP8_SATURATED_REL)) {
            snprintf(why, why_len, "head %zu: rel-L2 %.3g > %g (huge logits)", s, rel, AN_FP8_SATURATED_REL);
            return false;
        }
    }
    return true;
}

bool attn_exact_slices_judge(const evo_slice_acc *kernel, size_t n, double rel_l2, char *why, size_t why_len)
{
    why[0] = '\0';
    if (nonfinite(kernel, n, why, why_len)) return false;
    for (size_t s = 0; s < n; s++) {
        const double rel = evo_slice_rel_l2(&kernel[s]);
        if (!(rel <= rel_l2)) {
            snprintf(why, why_len, "head %zu: rel-L2 %.3g > %.3g (each head on its own)", s, rel, rel_l2);
            return false;
        }
    }
    return true;
}
