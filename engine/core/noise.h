/* noise.h — what a set of timed repetitions says and how sure it is: median, p10, p90, a distribution-free 95 %
 * confidence interval of the median from order statistics, speedup and fitness intervals, and the rule that says
 * when one fitness is better than another beyond the noise.
 *
 * Intervals are carried as (lo, hi) pairs in the measured unit and combined as log half-widths
 * h = ln(hi / lo) / 2: a speedup t_b / t_c has h = sqrt(h_b^2 + h_c^2) (the two medians are independent), a
 * geometric mean over n shapes sqrt(sum h_i^2) / n, a worst-shape fitness the h of its worst shape. An interval
 * that is unknown (0 or NaN bounds: results stored before intervals existed) makes every derived interval unknown
 * (NaN), and the comparison rule then falls back to comparing the values alone.
 *
 * Pure functions on plain numbers: no allocation kept, thread-safe, no GPU.
 */
#ifndef EVO_NOISE_H
#define EVO_NOISE_H

#include <stdbool.h>

#define EVO_NOISE_CONFIDENCE 0.95

typedef struct {
    int n;
    double median, p10, p90;
    double ci_lo, ci_hi; /* the median's 95 % interval: order statistics ranks from the binomial(n, 1/2) law */
    double mean, sd;
} evo_noise_stats;

/* Summary of n > 0 samples (the array is not modified). n == 0 gives all zeros. */
void evo_noise_summarize(const double *x, int n, evo_noise_stats *out);

/* 0-based ranks (into the sorted sample) of the median's interval: the largest j with P(Bin(n,1/2) < j+1) <= 2.5 %
 * and its mirror n-1-j; for n < 6, where no such j exists, 0 and n-1. */
void evo_noise_median_ranks(int n, int *lo, int *hi);

/* ln(hi / lo) / 2, or NaN when either bound is not a positive finite number or lo > hi. */
double evo_noise_log_halfwidth(double lo, double hi);

/* The log half-width of the ratio of two independent medians given their intervals (NaN when either is unknown). */
double evo_noise_ratio_halfwidth(double lo_a, double hi_a, double lo_b, double hi_b);

/* Fitness interval from per-shape speedups and their log half-widths h[i]: geometric mean (worst == false) or the
 * smallest speedup (worst == true). *lo and *hi are NaN when any h[i] is NaN or n == 0. */
void evo_noise_fitness_interval(const double *speedup, const double *h, int n, bool worst, double *lo, double *hi);

/* Is a (with interval [a_lo, a_hi]) better than b beyond the noise: ln(a / b) > sqrt(h_a^2 + h_b^2)? With either
 * interval unknown: a > b. */
bool evo_noise_better(double a, double a_lo, double a_hi, double b, double b_lo, double b_hi);

#endif
