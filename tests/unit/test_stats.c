/* Statistics: the median's order-statistic interval against published
 * ranks, and the Mann-Whitney U test against values worked by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/core/stats.h"

Test(stats, median_interval_of_twenty_uses_ranks_six_and_fifteen)
{
    /* For n = 20 the distribution-free 95% interval of the median is
     * [x(6), x(15)] (P(Bin(20, 1/2) <= 5) = 0.0207 <= 0.025 < P(<= 6) =
     * 0.0577), the ranks statistics tables give. */
    int64_t x[20];
    for (int i = 0; i < 20; i++)
        x[i] = 20 - i; /* unsorted on purpose */
    sl_median_ci ci;
    cr_assert(sl_median_ci_i64(x, 20, 0.95, &ci));
    cr_expect_eq(ci.median, 10.5);
    cr_expect_eq(ci.lo, 6.0);
    cr_expect_eq(ci.hi, 15.0);
    cr_expect_eq(ci.n, 20);
}

Test(stats, one_slow_sample_moves_the_interval_by_at_most_one_rank)
{
    int64_t x[21];
    for (int i = 0; i < 21; i++)
        x[i] = 1000 + i;
    sl_median_ci before, after;
    cr_assert(sl_median_ci_i64(x, 21, 0.95, &before));
    x[3] = 1000000; /* a batch that waited on the scheduler */
    cr_assert(sl_median_ci_i64(x, 21, 0.95, &after));
    cr_expect_leq(after.median - before.median, 1.0);
    cr_expect_leq(after.hi - before.hi, 1.0);
}

Test(stats, too_few_samples_give_the_range)
{
    int64_t x[5] = {5, 1, 4, 2, 3};
    sl_median_ci ci;
    cr_assert(sl_median_ci_i64(x, 5, 0.95, &ci));
    cr_expect_eq(ci.median, 3.0);
    cr_expect_eq(ci.lo, 1.0);
    cr_expect_eq(ci.hi, 5.0);
    cr_expect_not(sl_median_ci_i64(x, 0, 0.95, &ci));
}

/* The interval as it was computed before D23, kept here as the oracle for
 * the linear one: the whole sample sorted, and the binomial CDF summed
 * afresh for every candidate rank (quadratic in n, so only small n). */
static int compare_i64_for_oracle(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double quadratic_binomial_half_cdf(size_t n, size_t k)
{
    double total = 0.0;
    double log_half_n = (double)n * log(0.5);
    for (size_t i = 0; i <= k; i++)
        total += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) + log_half_n);
    return total;
}

static sl_median_ci quadratic_median_ci(const int64_t *values, size_t n, double level)
{
    sl_median_ci out = {.n = n};
    int64_t *sorted = malloc(n * sizeof *sorted);
    cr_assert_not_null(sorted);
    memcpy(sorted, values, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_i64_for_oracle);
    out.median = n % 2 ? (double)sorted[n / 2] : ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2.0;
    double alpha = 1.0 - level;
    size_t k = 0;
    while (k < n / 2 && quadratic_binomial_half_cdf(n, k) <= alpha / 2)
        k++;
    out.lo = (double)sorted[k == 0 ? 0 : k - 1];
    out.hi = (double)sorted[k == 0 ? n - 1 : n - k];
    free(sorted);
    return out;
}

/* Samples with ties and a spread, from a fixed LCG (no global RNG). */
static void fill_samples(int64_t *x, size_t n, uint64_t seed, int64_t spread)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = 1000 + (int64_t)((s >> 33) % (uint64_t)spread);
    }
}

static void expect_same_interval(const int64_t *x, size_t n, double level)
{
    sl_median_ci fast;
    cr_assert(sl_median_ci_i64(x, n, level, &fast));
    sl_median_ci slow = quadratic_median_ci(x, n, level);
    cr_expect_eq(fast.n, n);
    cr_expect_eq(fast.median, slow.median, "n = %zu level %g: median %g, the quadratic form's %g", n, level,
                 fast.median, slow.median);
    cr_expect_eq(fast.lo, slow.lo, "n = %zu level %g: lo %g, the quadratic form's %g", n, level, fast.lo, slow.lo);
    cr_expect_eq(fast.hi, slow.hi, "n = %zu level %g: hi %g, the quadratic form's %g", n, level, fast.hi, slow.hi);
}

Test(stats, the_linear_interval_equals_the_quadratic_one_for_every_small_n)
{
    /* Every n up to 400 at both levels sluice uses, with many ties (a
     * spread of 7) and with few (a spread of 10^6), and n past 1600, where
     * the CDF's sum starts 20 sqrt(n) below the mean instead of at 0. */
    static int64_t x[4001];
    for (size_t n = 1; n <= 400; n++) {
        for (int spread = 0; spread < 2; spread++) {
            fill_samples(x, n, n, spread ? 1000000 : 7);
            expect_same_interval(x, n, 0.95);
            expect_same_interval(x, n, 0.99);
        }
    }
    size_t large[] = {1000, 1600, 1601, 1602, 2500, 4001};
    for (size_t i = 0; i < sizeof large / sizeof *large; i++) {
        fill_samples(x, large[i], large[i], 1000000);
        expect_same_interval(x, large[i], 0.95);
        expect_same_interval(x, large[i], 0.99);
    }
}

Test(stats, ordered_and_constant_samples_give_the_sorted_ranks)
{
    /* Shapes a selection's pivot can do badly on: sorted, reversed, all
     * equal, organ pipe; each against the sort-based oracle. */
    static int64_t x[3001];
    size_t n = 3001;
    for (int shape = 0; shape < 4; shape++) {
        for (size_t i = 0; i < n; i++)
            x[i] = shape == 0   ? (int64_t)i
                   : shape == 1 ? (int64_t)(n - i)
                   : shape == 2 ? 42
                                : (int64_t)(i < n / 2 ? i : n - i);
        expect_same_interval(x, n, 0.95);
    }
}

Test(stats, a_million_samples_get_the_normal_approximations_ranks)
{
    /* For large n the lower rank is n/2 - z sqrt(n)/2 to within a couple
     * of ranks (z = 1.959964 at 95%): the normal approximation to
     * Binomial(n, 1/2), independent of the exact sum the code does. The
     * samples are a shuffle of 0..n-1 so the value at rank r is r. */
    size_t n = 1000001;
    int64_t *x = malloc(n * sizeof *x);
    cr_assert_not_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (int64_t)((i * 7919u) % n); /* 7919 is prime, so a permutation */
    sl_median_ci ci;
    cr_assert(sl_median_ci_i64(x, n, 0.95, &ci));
    double expected_lo = (double)n / 2.0 - 1.959964 * sqrt((double)n) / 2.0 - 1.0; /* 0-based */
    cr_expect_eq(ci.median, 500000.0);
    cr_expect(fabs(ci.lo - expected_lo) <= 2.0, "lo %g, about %g expected", ci.lo, expected_lo);
    cr_expect_eq(ci.hi, (double)(n - 1) - ci.lo, "hi %g is not lo's mirror (lo %g)", ci.hi, ci.lo);
    free(x);
}

Test(stats, noisy_means_wider_than_a_tenth_of_the_median)
{
    sl_median_ci tight = {.median = 100.0, .lo = 96.0, .hi = 105.0, .n = 20};
    sl_median_ci wide = {.median = 100.0, .lo = 90.0, .hi = 111.0, .n = 20};
    cr_expect_not(sl_median_ci_is_noisy(&tight));
    cr_expect(sl_median_ci_is_noisy(&wide));
}

Test(stats, mann_whitney_of_separated_samples)
{
    /* b = 11..20 exceeds every a = 1..10: U = 100, the largest value, and
     * exactly one of the C(20, 10) = 184756 equally likely orders gives it:
     * p = 1 / 184756. (The normal approximation, z = (100 - 50 - 0.5) /
     * sqrt(10 * 10 * 21 / 12) = 3.7418, would say 9.13e-5, 17 times too
     * large: why small samples get the exact p.) */
    int64_t a[10], b[10];
    for (int i = 0; i < 10; i++) {
        a[i] = i + 1;
        b[i] = i + 11;
    }
    sl_mann_whitney mw;
    cr_assert(sl_mann_whitney_greater(a, 10, b, 10, &mw));
    cr_expect_eq(mw.u, 100.0);
    cr_expect_float_eq(mw.z, 3.7418, 1e-4);
    cr_expect(mw.exact);
    cr_expect_float_eq(mw.p_greater, 1.0 / 184756.0, 1e-12);
    /* Reversed, b is never greater: every order has U >= 0. */
    cr_assert(sl_mann_whitney_greater(b, 10, a, 10, &mw));
    cr_expect_eq(mw.u, 0.0);
    cr_expect_float_eq(mw.p_greater, 1.0, 1e-12);
}

Test(stats, exact_mann_whitney_of_two_a_side_counts_the_six_orders)
{
    /* Two a side, the six orders of {a, a, b, b} give U = 0, 1, 2, 2, 3, 4.
     * a = {1, 3}, b = {2, 4}: U counts 2 > 1, 4 > 1, 4 > 3 = 3, and two of
     * the six orders reach 3 or more. */
    int64_t a[2] = {1, 3}, b[2] = {2, 4};
    sl_mann_whitney mw;
    cr_assert(sl_mann_whitney_greater(a, 2, b, 2, &mw));
    cr_expect_eq(mw.u, 3.0);
    cr_expect(mw.exact);
    cr_expect_float_eq(mw.p_greater, 2.0 / 6.0, 1e-12);
}

Test(stats, mann_whitney_with_ties_uses_the_normal_approximation)
{
    int64_t a[3] = {1, 2, 2}, b[3] = {2, 3, 4};
    sl_mann_whitney mw;
    cr_assert(sl_mann_whitney_greater(a, 3, b, 3, &mw));
    cr_expect_not(mw.exact);
    /* Pairs with b > a: 2 > 1, 3 > 1, 3 > 2 twice, 4 > 1, 4 > 2 twice = 7;
     * the two ties of b = 2 with an a of 2 count a half each: U = 8. */
    cr_expect_eq(mw.u, 8.0);
}

Test(stats, holm_stops_at_the_first_p_above_its_level)
{
    /* Sorted: 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop. */
    double p[4] = {0.01, 0.04, 0.03, 0.005};
    bool reject[4];
    double level[4];
    sl_holm(p, 4, 0.05, reject, level);
    cr_expect(reject[3]);
    cr_expect(reject[0]);
    cr_expect_not(reject[2]);
    cr_expect_not(reject[1], "0.04 <= 0.05 alone, but Holm stopped before it");
    cr_expect_float_eq(level[3], 0.0125, 1e-12);
    cr_expect_float_eq(level[0], 0.05 / 3.0, 1e-12);
    cr_expect_float_eq(level[2], 0.025, 1e-12);
    cr_expect_float_eq(level[1], 0.05, 1e-12);
}

Test(stats, throughput_is_at_the_median_with_the_interval_inverted)
{
    /* 1..20 us, ten elements a batch: the median is 10.5 us, the interval
     * [x(6), x(15)] = [6, 15] us, so 10 / 10.5 us = 952381/s, from 10 / 15
     * us = 666667/s to 10 / 6 us = 1666667/s. The mean is also 10.5 us. */
    int64_t x[20];
    for (int i = 0; i < 20; i++)
        x[i] = (20 - i) * 1000;
    sl_throughput t;
    cr_assert(sl_throughput_of(x, 20, 10.0, &t));
    cr_expect_float_eq(t.rate, 10.0 / 10.5e-6, 1e-6);
    cr_expect_float_eq(t.rate_lo, 10.0 / 15e-6, 1e-6);
    cr_expect_float_eq(t.rate_hi, 10.0 / 6e-6, 1e-6);
    cr_expect_float_eq(t.mean_rate, 10.0 / 10.5e-6, 1e-6);
    cr_expect(t.wide, "an interval of 9 us around 10.5 us is wide");
    cr_expect_not(t.skewed);
    cr_expect(t.noisy);
    cr_expect_not(sl_throughput_of(x, 0, 10.0, &t));
    cr_expect_not(sl_throughput_of(x, 20, 0.0, &t));
}

Test(stats, one_huge_stall_flags_a_tight_row_noisy)
{
    /* 59 batches of 1000 ns and one of 100000 ns: the median and its
     * interval stay at 1000 ns (not wide), but the mean is (59000 +
     * 100000) / 60 = 2650 ns, 165% above: the row is noisy, and says why. */
    int64_t x[60];
    for (int i = 0; i < 60; i++)
        x[i] = 1000;
    x[17] = 100000;
    sl_throughput t;
    cr_assert(sl_throughput_of(x, 60, 1.0, &t));
    cr_expect_eq(t.median_ns, 1000.0);
    cr_expect_not(t.wide);
    cr_expect_float_eq(t.mean_ns, 2650.0, 1e-9);
    cr_expect(t.skewed);
    cr_expect(t.noisy);
    char reason[256];
    sl_throughput_noise_reason(&t, reason, sizeof reason);
    cr_expect_not_null(strstr(reason, "stalled"), "%s", reason);
    /* Without the stall the same row is steady. */
    x[17] = 1000;
    cr_assert(sl_throughput_of(x, 60, 1.0, &t));
    cr_expect_not(t.noisy);
}

/* Three repetitions of 20 batches near base ns, +-1%, deterministic. */
static void steady_run(int64_t *out, double base, const double round_scale[3], uint32_t seed)
{
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 20; i++) {
            uint32_t h = (seed * 2654435761u) ^ (uint32_t)(r * 20 + i) * 40503u;
            out[r * 20 + i] = (int64_t)(base * round_scale[r] * (1.0 + ((double)(h % 21) - 10.0) / 1000.0));
        }
}

Test(stats, a_clear_lead_is_a_win_and_equal_runs_cannot_tell)
{
    static const double flat[3] = {1, 1, 1};
    int64_t a[60], b[60], c[60];
    steady_run(a, 1000, flat, 1);
    steady_run(b, 2000, flat, 2);
    steady_run(c, 1000, flat, 3);
    sl_ratio r;
    cr_assert(sl_ratio_of_medians(a, 60, b, 60, 20, &r));
    cr_expect_float_eq(r.ratio, 2.0, 0.02, "a's batches take half b's time: twice the throughput");
    cr_expect_leq(r.lo, r.ratio);
    cr_expect_geq(r.hi, r.ratio);
    cr_expect_eq(r.call, SL_RATIO_WIN);
    cr_expect_eq(r.rounds, 3);
    cr_assert(sl_ratio_of_medians(b, 60, a, 60, 20, &r));
    cr_expect_eq(r.call, SL_RATIO_LOSS);
    cr_assert(sl_ratio_of_medians(a, 60, c, 60, 20, &r));
    cr_expect_eq(r.call, SL_RATIO_CANNOT_TELL, "ratio %g in [%g, %g]", r.ratio, r.lo, r.hi);
    cr_expect_str_eq(sl_ratio_call_name(r.call), "cannot tell");
    /* The same samples in another order give the same interval. */
    int64_t shuffled[60];
    for (int i = 0; i < 60; i++)
        shuffled[i] = a[(i * 7) % 60];
    sl_ratio again;
    cr_assert(sl_ratio_of_medians(shuffled, 60, b, 60, 0, &again));
    cr_assert(sl_ratio_of_medians(a, 60, b, 60, 0, &r));
    cr_expect_eq(again.lo, r.lo);
    cr_expect_eq(again.hi, r.hi);
}

Test(stats, rounds_that_disagree_make_a_pooled_lead_uncertain)
{
    /* Pooled, a looks 3% faster with a tight bootstrap interval; but in its
     * third round it was 5% slower than b: the rounds disagree, so the
     * interval covers 1 and nobody wins. */
    static const double a_rounds[3] = {0.95, 0.95, 1.05}, b_rounds[3] = {1, 1, 1};
    int64_t a[60], b[60];
    steady_run(a, 1000, a_rounds, 1);
    steady_run(b, 1000, b_rounds, 2);
    sl_ratio r;
    cr_assert(sl_ratio_of_medians(a, 60, b, 60, 0, &r));
    cr_expect_eq(r.call, SL_RATIO_WIN, "without rounds the pooled batches alone say win [%g, %g]", r.lo, r.hi);
    cr_assert(sl_ratio_of_medians(a, 60, b, 60, 20, &r));
    cr_expect_eq(r.rounds, 3);
    cr_expect_float_eq(r.round_lo, 1.0 / 1.05, 0.01);
    cr_expect_eq(r.call, SL_RATIO_CANNOT_TELL);
}

Test(stats, mann_whitney_of_identical_samples_finds_nothing)
{
    int64_t a[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    sl_mann_whitney mw;
    cr_assert(sl_mann_whitney_greater(a, 8, a, 8, &mw));
    cr_expect_eq(mw.u, 32.0, "ties count one half: U = na nb / 2");
    cr_expect_gt(mw.p_greater, 0.4);
}
