/* Order-statistic intervals and the Mann-Whitney U test (sluice/stats.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/stats.h"

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double median_sorted(const int64_t *sorted, size_t n)
{
    return n % 2 ? (double)sorted[n / 2] : ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2.0;
}

/* P(X <= k) for X ~ Binomial(n, 1/2), summed in log space so that it stays
 * exact enough for the few thousand samples a record holds. */
static double binomial_half_cdf(size_t n, size_t k)
{
    double total = 0.0;
    double log_half_n = (double)n * log(0.5);
    for (size_t i = 0; i <= k; i++)
        total += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) + log_half_n);
    return total;
}

bool sl_median_ci_i64(const int64_t *values, size_t n, double level, sl_median_ci *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return false;
    int64_t *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return false;
    memcpy(sorted, values, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_i64);
    out->n = n;
    out->median = median_sorted(sorted, n);
    /* The largest k with P(X <= k - 1) <= alpha / 2 gives the lower rank k
     * (1-based); by symmetry the upper rank is n + 1 - k. */
    double alpha = 1.0 - level;
    size_t k = 0;
    while (k < n / 2 && binomial_half_cdf(n, k) <= alpha / 2)
        k++;
    if (k == 0) {
        out->lo = (double)sorted[0];
        out->hi = (double)sorted[n - 1];
    } else {
        out->lo = (double)sorted[k - 1];
        out->hi = (double)sorted[n - k];
    }
    free(sorted);
    return true;
}

bool sl_median_ci_is_noisy(const sl_median_ci *ci)
{
    return ci->n == 0 || !(ci->median > 0.0) || (ci->hi - ci->lo) > SL_NOISY_RELATIVE_WIDTH * ci->median;
}

bool sl_mann_whitney_greater(const int64_t *a, size_t na, const int64_t *b, size_t nb, sl_mann_whitney *out)
{
    memset(out, 0, sizeof *out);
    if (na == 0 || nb == 0)
        return false;
    /* Rank the pooled sample (midranks for ties), then U_b = R_b - nb(nb+1)/2. */
    size_t n = na + nb;
    struct item {
        int64_t value;
        int from_b;
    } *items = malloc(n * sizeof *items);
    if (!items)
        return false;
    for (size_t i = 0; i < na; i++)
        items[i] = (struct item){a[i], 0};
    for (size_t j = 0; j < nb; j++)
        items[na + j] = (struct item){b[j], 1};
    /* compare_i64 reads an item's value, its first member. */
    qsort(items, n, sizeof *items, compare_i64);
    double rank_sum_b = 0.0, tie_term = 0.0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && items[j].value == items[i].value)
            j++;
        double midrank = ((double)i + 1.0 + (double)j) / 2.0;
        for (size_t t = i; t < j; t++)
            if (items[t].from_b)
                rank_sum_b += midrank;
        double ties = (double)(j - i);
        tie_term += ties * ties * ties - ties;
        i = j;
    }
    free(items);
    double u = rank_sum_b - (double)nb * ((double)nb + 1.0) / 2.0;
    double mean = (double)na * (double)nb / 2.0;
    double var = (double)na * (double)nb / 12.0 * (((double)n + 1.0) - tie_term / ((double)n * ((double)n - 1.0)));
    out->u = u;
    out->z = var > 0.0 ? (u - mean - 0.5) / sqrt(var) : 0.0; /* continuity correction */
    out->p_greater = var > 0.0 ? 0.5 * erfc(out->z / sqrt(2.0)) : 1.0;
    return true;
}
