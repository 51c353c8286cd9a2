/* Order-statistic intervals, the headline throughput, ratio intervals, the
 * Mann-Whitney U test and Holm's procedure (sluice/core/stats.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/core/philox.h"
#include "sluice/core/stats.h"

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int compare_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The k-th smallest of v[0..n) (0-based), reordering v so that v[k] holds
 * it with nothing larger before it and nothing smaller after it: Hoare's
 * selection with a middle pivot, linear on average, for the bootstrap's
 * many medians and the median's interval. Past twice log2(n) partitions
 * (an input shaped against the pivot) it sorts what is left, so the worst
 * case is O(n log n), never quadratic. */
static double select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k;
    int partitions_left = 0;
    for (size_t m = n; m > 1; m >>= 1)
        partitions_left += 2;
    while (lo < hi) {
        if (partitions_left-- == 0) {
            qsort(v + lo, (size_t)(hi - lo + 1), sizeof *v, compare_f64);
            break;
        }
        double pivot = v[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

static double largest_of(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static double smallest_of(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static double median_of(double *v, size_t n)
{
    double upper = select_kth(v, n, n / 2);
    if (n % 2)
        return upper;
    /* The lower middle is the largest of what selection left below it. */
    return (largest_of(v, n / 2) + upper) / 2.0;
}

/* One term of Binomial(n, 1/2): P(X = i), from log-gamma so that it stays
 * finite for any n (2^-n alone underflows past n = 1074). */
static double binomial_half_pmf(size_t n, size_t i)
{
    return exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) + (double)n * log(0.5));
}

/* The lower rank k (1-based; 0 when no interval exists) of the median's
 * interval: the largest k with P(X <= k - 1) <= alpha / 2, X ~ Binomial(n,
 * 1/2). The CDF is summed once, term by term in the order the exact sum
 * takes, stopping at the first k that passes the bound: O(the rank) terms,
 * not O(rank^2) as re-summing it for each k did (D23).
 *
 * For large n the sum starts 20 sqrt(n) below the mean, not at 0. Below
 * that every term is under exp(-2 d^2 / n) = exp(-800) (Hoeffding's bound,
 * d the distance to n/2), which is 0.0 in double precision, so the terms
 * left out are exactly the zeros the full sum would have added: the ranks
 * are the same, bit for bit, and the work is O(sqrt(n)). */
static size_t median_lower_rank(size_t n, double alpha)
{
    double threshold = alpha / 2;
    double skip = 20.0 * sqrt((double)n);
    size_t first = (double)(n / 2) > skip ? (size_t)((double)(n / 2) - skip) : 0;
    double cdf = 0.0;
    size_t k = first;
    for (size_t i = first; k < n / 2; i++) {
        cdf += binomial_half_pmf(n, i);
        if (!(cdf <= threshold))
            break;
        k = i + 1;
    }
    return k;
}

bool sl_median_ci_i64(const int64_t *values, size_t n, double level, sl_median_ci *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return false;
    /* As doubles: the conversion keeps the order (ties may merge, never
     * swap), so the order statistics of the copy are the samples' own,
     * converted, which is what the interval reports. */
    double *v = malloc(n * sizeof *v);
    if (!v)
        return false;
    for (size_t i = 0; i < n; i++)
        v[i] = (double)values[i];
    out->n = n;
    /* Three or four order statistics, each found by selection (linear)
     * rather than by sorting the whole sample (D23): once the median's rank
     * m = n / 2 is selected, every rank below it lies in v[0..m) and every
     * rank above it in v(m..n). */
    size_t m = n / 2;
    out->median = median_of(v, n);
    double middle = v[m];
    /* The largest k with P(X <= k - 1) <= alpha / 2 gives the lower rank k
     * (1-based); by symmetry the upper rank is n + 1 - k. Since k <= m,
     * the 0-based ranks are k - 1 < m and n - k >= m. */
    size_t k = median_lower_rank(n, 1.0 - level);
    if (k == 0) {
        out->lo = smallest_of(v, n);
        out->hi = largest_of(v, n);
    } else {
        out->lo = select_kth(v, m, k - 1);
        out->hi = n - k == m ? middle : select_kth(v + m + 1, n - m - 1, n - k - m - 1);
    }
    free(v);
    return true;
}

bool sl_median_ci_is_noisy(const sl_median_ci *ci)
{
    return ci->n == 0 || !(ci->median > 0.0) || (ci->hi - ci->lo) > SL_NOISY_RELATIVE_WIDTH * ci->median;
}

bool sl_throughput_of(const int64_t *samples, size_t n, double per_batch, sl_throughput *out)
{
    memset(out, 0, sizeof *out);
    sl_median_ci ci;
    if (n == 0 || !(per_batch > 0.0) || !sl_median_ci_i64(samples, n, SL_CI_LEVEL, &ci) || !(ci.median > 0.0))
        return false;
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total += (double)samples[i];
    out->n = n;
    out->per_batch = per_batch;
    out->median_ns = ci.median;
    out->lo_ns = ci.lo;
    out->hi_ns = ci.hi;
    out->mean_ns = total / (double)n;
    out->rate = per_batch / ci.median * 1e9;
    /* A batch time of 0 ns (a clock that did not tick) has no finite rate;
     * the interval's end is then unbounded, which is what it is. */
    out->rate_lo = ci.hi > 0.0 ? per_batch / ci.hi * 1e9 : INFINITY;
    out->rate_hi = ci.lo > 0.0 ? per_batch / ci.lo * 1e9 : INFINITY;
    out->mean_rate = out->mean_ns > 0.0 ? per_batch / out->mean_ns * 1e9 : 0.0;
    out->wide = sl_median_ci_is_noisy(&ci);
    /* The rates are per_batch over each time, so their ratio is the ratio
     * of the times, read in either direction. */
    double gap = out->mean_ns / ci.median;
    out->skewed = gap > 1.0 + SL_NOISY_MEAN_MEDIAN || gap < 1.0 / (1.0 + SL_NOISY_MEAN_MEDIAN);
    out->noisy = out->wide || out->skewed;
    return true;
}

void sl_throughput_noise_reason(const sl_throughput *t, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    size_t used = 0;
    if (t->wide)
        used += (size_t)snprintf(buf, size,
                                 "the 95%% interval of the median batch time is %.4g to %.4g µs, wider than %.0f%% "
                                 "of its median",
                                 t->lo_ns / 1e3, t->hi_ns / 1e3, SL_NOISY_RELATIVE_WIDTH * 100.0);
    if (t->skewed && used < size)
        snprintf(buf + used, size - used, "%sthe mean batch time is %.0f%% %s the median (%.4g vs %.4g µs): %s",
                 used ? "; " : "", fabs(t->mean_ns / t->median_ns - 1.0) * 100.0,
                 t->mean_ns > t->median_ns ? "above" : "below", t->mean_ns / 1e3, t->median_ns / 1e3,
                 t->mean_ns > t->median_ns ? "a few batches stalled" : "a few batches were much faster than the rest");
}

/* The samples sorted, as doubles: the bootstrap draws from the sorted copy
 * so that its result does not depend on the samples' order. */
static double *sorted_copy(const int64_t *v, size_t n)
{
    double *out = malloc(n * sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        out[i] = (double)v[i];
    qsort(out, n, sizeof *out, compare_f64);
    return out;
}

/* One bootstrap median: n draws with replacement from sorted[0..n), the
 * draws keyed by (resample, side) so that both sides' draws are fixed. */
static double resampled_median(const double *sorted, size_t n, double *scratch, uint32_t resample, uint32_t side)
{
    sl_philox_key key = sl_philox_key_for(0x5A7105u, side);
    for (size_t i = 0; i < n; i += 4) {
        sl_philox_ctr c = {{(uint32_t)i, resample, side, 0u}};
        sl_philox_ctr r = sl_philox4x32_10(c, key);
        for (size_t j = 0; j < 4 && i + j < n; j++)
            scratch[i + j] = sorted[sl_u32_below(r.v[j], (uint32_t)n)];
    }
    return median_of(scratch, n);
}

/* The median of one repetition of per_round batches. */
static double round_median(const int64_t *v, size_t per_round, double *scratch)
{
    for (size_t i = 0; i < per_round; i++)
        scratch[i] = (double)v[i];
    return median_of(scratch, per_round);
}

bool sl_ratio_of_medians(const int64_t *a, size_t na, const int64_t *b, size_t nb, size_t per_round, sl_ratio *out)
{
    memset(out, 0, sizeof *out);
    if (na == 0 || nb == 0 || na > UINT32_MAX || nb > UINT32_MAX)
        return false;
    double *sa = sorted_copy(a, na), *sb = sorted_copy(b, nb);
    size_t most = na > nb ? na : nb;
    double *scratch = malloc(most * sizeof *scratch);
    double *ratios = malloc(SL_RATIO_RESAMPLES * sizeof *ratios);
    bool ok = sa && sb && scratch && ratios;
    double ma = 0.0, mb = 0.0;
    if (ok) {
        memcpy(scratch, sa, na * sizeof *scratch);
        ma = median_of(scratch, na);
        memcpy(scratch, sb, nb * sizeof *scratch);
        mb = median_of(scratch, nb);
        ok = ma > 0.0 && mb > 0.0;
    }
    if (ok) {
        out->ratio = mb / ma;
        int kept = 0;
        for (uint32_t r = 0; r < SL_RATIO_RESAMPLES; r++) {
            double ra = resampled_median(sa, na, scratch, r, 0);
            double rb = resampled_median(sb, nb, scratch, r, 1);
            if (ra > 0.0)
                ratios[kept++] = rb / ra;
        }
        ok = kept > 0;
        if (ok) {
            qsort(ratios, (size_t)kept, sizeof *ratios, compare_f64);
            /* The 2.5th and 97.5th percentiles of the resampled ratios. */
            double tail = (1.0 - SL_CI_LEVEL) / 2.0;
            out->boot_lo = ratios[(size_t)floor(tail * (kept - 1))];
            out->boot_hi = ratios[(size_t)ceil((1.0 - tail) * (kept - 1))];
        }
    }
    if (ok) {
        out->lo = out->boot_lo < out->ratio ? out->boot_lo : out->ratio;
        out->hi = out->boot_hi > out->ratio ? out->boot_hi : out->ratio;
        size_t rounds = per_round > 0 && na == nb && na % per_round == 0 ? na / per_round : 0;
        if (rounds >= 2) {
            for (size_t r = 0; r < rounds; r++) {
                double ra = round_median(a + r * per_round, per_round, scratch);
                double rb = round_median(b + r * per_round, per_round, scratch);
                if (!(ra > 0.0))
                    continue;
                double q = rb / ra;
                if (out->rounds == 0 || q < out->round_lo)
                    out->round_lo = q;
                if (out->rounds == 0 || q > out->round_hi)
                    out->round_hi = q;
                out->rounds++;
            }
            if (out->rounds > 0) {
                out->lo = out->round_lo < out->lo ? out->round_lo : out->lo;
                out->hi = out->round_hi > out->hi ? out->round_hi : out->hi;
            }
        }
        out->call = out->lo > 1.0 ? SL_RATIO_WIN : out->hi < 1.0 ? SL_RATIO_LOSS : SL_RATIO_CANNOT_TELL;
    }
    free(sa);
    free(sb);
    free(scratch);
    free(ratios);
    return ok;
}

const char *sl_ratio_call_name(sl_ratio_call call)
{
    switch (call) {
    case SL_RATIO_WIN: return "win";
    case SL_RATIO_LOSS: return "loss";
    default: return "cannot tell";
    }
}

/* P(U >= u) for samples of na and nb without ties under the hypothesis
 * that they come from one distribution: the count of arrangements of the
 * pooled order whose U is at least u, over all C(na + nb, na). The counts
 * follow f(i, j, u) = f(i - 1, j, u) + f(i, j - 1, u - i): the largest of
 * i + j values is an a (it exceeds no a for b's sake) or a b (it exceeds
 * all i a's). Only additions, so the doubles stay exact enough. */
static double exact_p_greater(size_t na, size_t nb, double u)
{
    size_t top = na * nb;
    size_t width = top + 1;
    double *prev = calloc((nb + 1) * width, sizeof *prev);
    double *cur = calloc((nb + 1) * width, sizeof *cur);
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return NAN;
    }
    /* i = 0: no a, so U = 0 whatever j. */
    for (size_t j = 0; j <= nb; j++)
        prev[j * width] = 1.0;
    for (size_t i = 1; i <= na; i++) {
        memset(cur, 0, (nb + 1) * width * sizeof *cur);
        cur[0] = 1.0; /* j = 0: no b, U = 0 */
        for (size_t j = 1; j <= nb; j++)
            for (size_t v = 0; v <= i * j; v++)
                cur[j * width + v] = prev[j * width + v] + (v >= i ? cur[(j - 1) * width + v - i] : 0.0);
        double *t = prev;
        prev = cur;
        cur = t;
    }
    double total = 0.0, tail = 0.0;
    for (size_t v = 0; v <= top; v++) {
        total += prev[nb * width + v];
        if ((double)v >= u - 1e-9)
            tail += prev[nb * width + v];
    }
    free(prev);
    free(cur);
    return tail / total;
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
    bool ties = tie_term > 0.0;
    if (!ties && na <= SL_MANN_WHITNEY_EXACT_MAX && nb <= SL_MANN_WHITNEY_EXACT_MAX) {
        double p = exact_p_greater(na, nb, u);
        if (isfinite(p)) {
            out->p_greater = p;
            out->exact = true;
        }
    }
    return true;
}

/* The continued fraction of the regularized incomplete beta function
 * (modified Lentz), which converges fast for x < (a + 1) / (a + b + 2). */
static double beta_fraction(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 300; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + num * d;
        c = 1.0 + num / c;
        d = 1.0 / (fabs(d) < tiny ? tiny : d);
        c = fabs(c) < tiny ? tiny : c;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + num * d;
        c = 1.0 + num / c;
        d = 1.0 / (fabs(d) < tiny ? tiny : d);
        c = fabs(c) < tiny ? tiny : c;
        double step = d * c;
        h *= step;
        if (fabs(step - 1.0) < 1e-15)
            break;
    }
    return h;
}

/* I_x(a, b), the regularized incomplete beta function. */
static double incomplete_beta(double a, double b, double x)
{
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0))
        return front * beta_fraction(a, b, x) / a;
    return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

double sl_student_t_upper(double t, double df)
{
    if (isnan(t) || !(df > 0.0))
        return NAN;
    if (isinf(t))
        return t > 0.0 ? 0.0 : 1.0;
    double tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    return t > 0.0 ? tail : 1.0 - tail;
}

double sl_student_t_quantile_upper(double p, double df)
{
    if (!(p > 0.0 && p < 1.0) || !(df > 0.0))
        return NAN;
    /* The tail falls as t grows; widen the bracket until it holds p. */
    double lo = -1.0, hi = 1.0;
    while (sl_student_t_upper(lo, df) < p && lo > -1e12)
        lo *= 2.0;
    while (sl_student_t_upper(hi, df) > p && hi < 1e12)
        hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * (1.0 + fabs(hi)); i++) {
        double mid = 0.5 * (lo + hi);
        if (sl_student_t_upper(mid, df) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

typedef struct ranked_p {
    double p;
    int index;
} ranked_p;

static int compare_ranked_p(const void *a, const void *b)
{
    const ranked_p *x = a, *y = b;
    if (x->p != y->p)
        return (x->p > y->p) - (x->p < y->p);
    return (x->index > y->index) - (x->index < y->index);
}

void sl_holm(const double *p, int m, double alpha, bool *reject, double *threshold)
{
    if (m <= 0)
        return;
    ranked_p *order = malloc((size_t)m * sizeof *order);
    bool still = order != NULL;
    for (int i = 0; order && i < m; i++)
        order[i] = (ranked_p){isnan(p[i]) ? 1.0 : p[i], i};
    if (order)
        qsort(order, (size_t)m, sizeof *order, compare_ranked_p);
    for (int rank = 0; rank < m; rank++) {
        int j = order ? order[rank].index : rank;
        double level = alpha / (double)(m - rank);
        if (threshold)
            threshold[j] = order ? level : alpha / (double)m;
        /* Without memory for the order, Bonferroni: stricter, still sound. */
        bool below = order ? order[rank].p <= level : p[j] <= alpha / (double)m;
        still = still && below;
        reject[j] = order ? still : below;
    }
    free(order);
}
