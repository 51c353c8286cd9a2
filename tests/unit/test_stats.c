/* Statistics: the median's order-statistic interval against published
 * ranks, and the Mann-Whitney U test against values worked by hand. */
#include <math.h>

#include <criterion/criterion.h>

#include "sluice/gate.h"
#include "sluice/stats.h"

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

Test(stats, noisy_means_wider_than_a_tenth_of_the_median)
{
    sl_median_ci tight = {.median = 100.0, .lo = 96.0, .hi = 105.0, .n = 20};
    sl_median_ci wide = {.median = 100.0, .lo = 90.0, .hi = 111.0, .n = 20};
    cr_expect_not(sl_median_ci_is_noisy(&tight));
    cr_expect(sl_median_ci_is_noisy(&wide));
}

Test(stats, mann_whitney_of_separated_samples)
{
    /* b = 11..20 exceeds every a = 1..10: U = 100; mean 50, variance
     * 10 * 10 * 21 / 12 = 175, z = (100 - 50 - 0.5) / sqrt(175) = 3.7418,
     * one-sided p = 9.13e-5. */
    int64_t a[10], b[10];
    for (int i = 0; i < 10; i++) {
        a[i] = i + 1;
        b[i] = i + 11;
    }
    sl_mann_whitney mw;
    cr_assert(sl_mann_whitney_greater(a, 10, b, 10, &mw));
    cr_expect_eq(mw.u, 100.0);
    cr_expect_float_eq(mw.z, 3.7418, 1e-4);
    cr_expect_float_eq(mw.p_greater, 9.13e-5, 1e-6);
    /* Reversed, b is never greater. */
    cr_assert(sl_mann_whitney_greater(b, 10, a, 10, &mw));
    cr_expect_eq(mw.u, 0.0);
    cr_expect_gt(mw.p_greater, 0.99);
}

Test(stats, mann_whitney_of_identical_samples_finds_nothing)
{
    int64_t a[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    sl_mann_whitney mw;
    cr_assert(sl_mann_whitney_greater(a, 8, a, 8, &mw));
    cr_expect_eq(mw.u, 32.0, "ties count one half: U = na nb / 2");
    cr_expect_gt(mw.p_greater, 0.4);
}

/* The gate's rule on synthetic runs: three repetitions of 20 batches, each
 * batch near 1000 ns with a spread of +-2%. */
static void synthetic_run(int64_t *out, double scale, double drift_of_rep2, uint32_t seed)
{
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < 20; i++) {
            uint32_t h = (seed * 2654435761u) ^ (uint32_t)(rep * 20 + i) * 40503u;
            double jitter = (double)(h % 41) - 20.0; /* -20 .. 20 ns */
            double v = (1000.0 + jitter) * scale * (rep == 2 ? 1.0 + drift_of_rep2 : 1.0);
            out[rep * 20 + i] = (int64_t)v;
        }
}

Test(gate, same_code_is_same)
{
    int64_t a[60], b[60];
    synthetic_run(a, 1.0, 0.0, 1);
    synthetic_run(b, 1.0, 0.0, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r;
    cr_assert(sl_gate_compare(a, 60, b, 60, 20, &options, &r));
    cr_expect_eq(r.verdict, SL_GATE_SAME, "ratio %g p %g", r.ratio, r.p_slower);
}

Test(gate, a_ten_percent_slowdown_is_slower_and_a_speedup_faster)
{
    int64_t a[60], b[60];
    synthetic_run(a, 1.0, 0.0, 1);
    synthetic_run(b, 1.10, 0.0, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r;
    cr_assert(sl_gate_compare(a, 60, b, 60, 20, &options, &r));
    cr_expect_eq(r.verdict, SL_GATE_SLOWER);
    cr_expect_float_eq(r.ratio, 1.10, 0.02);
    cr_expect_lt(r.p_slower, 1e-6);
    cr_assert(sl_gate_compare(b, 60, a, 60, 20, &options, &r));
    cr_expect_eq(r.verdict, SL_GATE_FASTER);
    /* The testing aid stretches the new side: same code, inflated 10%. */
    options.inflate = 0.10;
    cr_assert(sl_gate_compare(a, 60, a, 60, 20, &options, &r));
    cr_expect_eq(r.verdict, SL_GATE_SLOWER);
}

/* One repetition that drifted by 30% moves the pooled median and passes a
 * batch-level test, but the other repetitions overlap the baseline's: the
 * machine, not the change. */
Test(gate, one_drifting_repetition_is_not_a_regression)
{
    int64_t a[60], b[60];
    synthetic_run(a, 1.0, 0.0, 1);
    synthetic_run(b, 1.0, 0.30, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.min_effect = 0.0; /* leave the repetition rule alone to decide */
    sl_gate_result r;
    cr_assert(sl_gate_compare(a, 60, b, 60, 20, &options, &r));
    cr_expect_lt(r.p_slower, 0.01, "the batch-level test alone would flag it");
    cr_expect_eq(r.verdict, SL_GATE_SAME);
}
