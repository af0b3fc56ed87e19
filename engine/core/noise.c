/* noise.c — medians, order-statistic intervals, speedup and fitness intervals, the better-beyond-noise rule
 * (see noise.h). */
#include "noise.h"

#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void evo_noise_median_ranks(int n, int *lo, int *hi)
{
    /* The largest 1-based j with P(X < j) <= 2.5 %, X ~ Bin(n, 1/2): [x_(j), x_(n+1-j)] covers the median with
     * probability >= 95 %. The CDF is summed from log terms (2^-n underflows past n = 1074). */
    const double alpha = (1.0 - EVO_NOISE_CONFIDENCE) / 2;
    double cdf = 0;
    int j = 0;
    for (int k = 0; k < n / 2; k++) {
        cdf += exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) - n * log(2.0));
        if (cdf > alpha) break;
        j = k + 1;
    }
    *lo = j > 0 ? j - 1 : 0;
    *hi = n > 0 ? n - 1 - *lo : 0;
}

void evo_noise_summarize(const double *x, int n, evo_noise_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0) return;
    double *s = evo_xmalloc((size_t)n * sizeof *s);
    memcpy(s, x, (size_t)n * sizeof *s);
    if (n > 1) qsort(s, (size_t)n, sizeof *s, cmp_double);
    out->n = n;
    out->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    out->p10 = s[(n - 1) / 10];
    out->p90 = s[(n - 1) * 9 / 10];
    int lo, hi;
    evo_noise_median_ranks(n, &lo, &hi);
    out->ci_lo = s[lo];
    out->ci_hi = s[hi];
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    out->mean = sum / n;
    for (int i = 0; i < n; i++) sq += (s[i] - out->mean) * (s[i] - out->mean);
    out->sd = n > 1 ? sqrt(sq / (n - 1)) : 0;
    free(s);
}

double evo_noise_log_halfwidth(double lo, double hi)
{
    if (!(lo > 0) || !(hi > 0) || !isfinite(lo) || !isfinite(hi) || lo > hi) return NAN;
    return 0.5 * log(hi / lo);
}

double evo_noise_ratio_halfwidth(double lo_a, double hi_a, double lo_b, double hi_b)
{
    const double a = evo_noise_log_halfwidth(lo_a, hi_a), b = evo_noise_log_halfwidth(lo_b, hi_b);
    return sqrt(a * a + b * b); /* NaN propagates */
}

void evo_noise_fitness_interval(const double *speedup, const double *h, int n, bool worst, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n <= 0) return;
    double log_sum = 0, sq = 0, h_worst = NAN, s_worst = INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(h[i]) || !(speedup[i] > 0)) return;
        log_sum += log(speedup[i]);
        sq += h[i] * h[i];
        if (speedup[i] < s_worst) s_worst = speedup[i], h_worst = h[i];
    }
    const double centre = worst ? log(s_worst) : log_sum / n;
    const double half = worst ? h_worst : sqrt(sq) / n;
    *lo = exp(centre - half);
    *hi = exp(centre + half);
}

bool evo_noise_better(double a, double a_lo, double a_hi, double b, double b_lo, double b_hi)
{
    if (!(a > 0) || !(b > 0)) return a > b;
    const double ha = evo_noise_log_halfwidth(a_lo, a_hi), hb = evo_noise_log_halfwidth(b_lo, b_hi);
    if (isnan(ha) || isnan(hb)) return a > b;
    return log(a / b) > sqrt(ha * ha + hb * hb);
}
