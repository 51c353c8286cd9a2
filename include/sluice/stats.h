/* The statistics every report, summary and gate decision uses, so that a
 * median or an interval means the same thing wherever it is printed. The
 * definitions are in docs/records.md ("Statistics"). */
#ifndef SLUICE_STATS_H
#define SLUICE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The confidence level of every interval sluice reports. */
#define SL_CI_LEVEL 0.95
/* A row is too noisy to rank when its median's interval is wider than this
 * fraction of the median (hi - lo > 0.10 x median, about +-5%). */
#define SL_NOISY_RELATIVE_WIDTH 0.10

/* A median and a distribution-free confidence interval for it: the order
 * statistics x(l) and x(u) of the sorted sample whose ranks come from the
 * Binomial(n, 1/2) distribution, so that P(x(l) <= true median <= x(u)) >=
 * level whatever the distribution of the samples (no normality assumed,
 * one slow batch moves it by at most one rank). For n < 6 no such interval
 * exists at 95%: lo and hi are then the minimum and maximum. */
typedef struct sl_median_ci {
    double median;
    double lo, hi;
    size_t n;
} sl_median_ci;

/* Returns false for n == 0 or when memory for the sorted copy is missing. */
bool sl_median_ci_i64(const int64_t *values, size_t n, double level, sl_median_ci *out);
/* Whether an interval is too wide to rank its row (SL_NOISY_RELATIVE_WIDTH). */
bool sl_median_ci_is_noisy(const sl_median_ci *ci);

/* Mann-Whitney U test of whether samples b tend to be larger than samples a
 * (one-sided): U counts pairs (a_i, b_j) with b_j > a_i, ties counting one
 * half; p is from the normal approximation with the tie correction, which
 * is accurate for the 20+ samples a gate compares. */
typedef struct sl_mann_whitney {
    double u;
    double z;
    double p_greater;   /* P(U >= u) under "same distribution" */
} sl_mann_whitney;

bool sl_mann_whitney_greater(const int64_t *a, size_t na, const int64_t *b, size_t nb, sl_mann_whitney *out);

#ifdef __cplusplus
}
#endif

#endif
