/* Change points and shifts (sluice/core/changepoint.h) on synthetic series whose
 * steps are known: found where they are, not found in pure noise more often
 * than the stated rate, and the shift's interval against published tables
 * and a brute-force count. Every series is drawn from Philox under a fixed
 * key, so each test is deterministic and takes no timing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/core/changepoint.h"
#include "sluice/core/philox.h"

/* A standard normal draw (Box-Muller) for point i of series s. */
static double gaussian(uint64_t s, int i)
{
    sl_philox_ctr c = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, (uint32_t)s, 0), sl_philox_key_for(7, s));
    double u1 = ((double)c.v[0] + 1.0) / 4294967297.0, u2 = (double)c.v[1] / 4294967296.0;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* A uniform draw in [0, 1) for point i of series s, independent of the
 * gaussian one. */
static double uniform(uint64_t s, int i)
{
    sl_philox_ctr c = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, (uint32_t)s, 1), sl_philox_key_for(7, s));
    return (double)c.v[2] / 4294967296.0;
}

/* A log-throughput series as a shared machine gives it: 2% gaussian noise,
 * and, with heavy tails, one point in ten slowed by 20 to 60% (another job
 * took the CPU during that run), which only ever lowers throughput. Steps
 * change the level by `step` (in log units) from index `at` on. */
static void series(uint64_t s, double *x, int n, bool heavy_tails, int at, double step, int at2, double step2)
{
    for (int i = 0; i < n; i++) {
        x[i] = 0.02 * gaussian(s, i);
        if (heavy_tails && uniform(s, i) < 0.1)
            x[i] += log(1.0 - (0.2 + 0.4 * uniform(s + 1000003, i)));
        if (at >= 0 && i >= at)
            x[i] += step;
        if (at2 >= 0 && i >= at2)
            x[i] += step2;
    }
}

Test(changepoint, a_ten_percent_step_is_found_at_its_index)
{
    /* 200 series of 30 commits, throughput 10% lower from commit 15 on. */
    int exact = 0, extra = 0;
    for (uint64_t s = 0; s < 200; s++) {
        double x[30];
        series(s, x, 30, false, 15, log(0.9), -1, 0);
        sl_changepoint cp[8];
        int n = sl_edivisive(x, 30, NULL, cp, 8);
        cr_assert_geq(n, 0);
        bool at_step = false;
        for (int k = 0; k < n; k++) {
            if (cp[k].index == 15)
                at_step = true;
            else
                extra++;
        }
        exact += at_step;
    }
    /* A 10% step against 2% noise is 5 standard deviations: every series
     * should find it at the commit itself; the other splits are the false
     * ones, which the permutation test keeps near 1% per test. */
    cr_expect_geq(exact, 198, "the step was found at its commit in %d of 200 series", exact);
    cr_expect_leq(extra, 8, "%d splits elsewhere in 200 series", extra);
}

Test(changepoint, a_step_is_found_through_heavy_tails)
{
    int near = 0;
    for (uint64_t s = 0; s < 200; s++) {
        double x[30];
        series(s + 5000, x, 30, true, 12, log(0.9), -1, 0);
        sl_changepoint cp[8];
        int n = sl_edivisive(x, 30, NULL, cp, 8);
        bool found = false;
        for (int k = 0; k < n; k++)
            found |= abs(cp[k].index - 12) <= 1;
        near += found;
    }
    /* One point in ten is an outlier of 20 to 60%, larger than the step
     * itself. Clipped to 3 MADs an outlier is only a point at the edge of
     * the bulk, not a jump several steps wide, so the step is still found,
     * though an outlier beside it can move it by one commit. The aim
     * stated in docs/history.md: within one commit in at least 75% of
     * series. */
    cr_expect_geq(near, 150, "the step was found within one commit in %d of 200 heavy-tailed series", near);
}

Test(changepoint, two_steps_are_both_found)
{
    int both = 0;
    for (uint64_t s = 0; s < 100; s++) {
        double x[45];
        series(s + 9000, x, 45, false, 15, log(0.9), 30, log(1.12));
        sl_changepoint cp[8];
        int n = sl_edivisive(x, 45, NULL, cp, 8);
        bool first = false, second = false;
        for (int k = 0; k < n; k++) {
            first |= cp[k].index == 15;
            second |= cp[k].index == 30;
        }
        both += first && second;
        for (int k = 1; k < n; k++)
            cr_assert_lt(cp[k - 1].index, cp[k].index, "change points are returned in order of index");
    }
    cr_expect_geq(both, 95, "both steps were found in %d of 100 series", both);
}

/* Clipping within segments, isolated: a long old level, then a new level
 * 30% slower, then another 30% slower again, each new level shorter than
 * the old (8 points against 24). Clipped against the whole series, whose
 * median and MAD are the old level's, both new levels are pulled to the
 * same bound 3 MADs away and the second step vanishes; clipped within the
 * segment the first split found, the two new levels keep their own medians
 * and the second step is found at its index. */
Test(changepoint, a_second_step_on_a_new_level_is_not_clipped_away)
{
    int second_found = 0;
    for (uint64_t s = 0; s < 100; s++) {
        double x[40];
        series(s + 12000, x, 40, false, 24, log(1.0 / 1.3), 32, log(1.0 / 1.3));
        sl_changepoint cp[8];
        int n = sl_edivisive(x, 40, NULL, cp, 8);
        for (int k = 0; k < n; k++)
            second_found += cp[k].index == 32;
    }
    cr_expect_geq(second_found, 90, "the second step was found in %d of 100 series", second_found);
}

/* The rate of false steps in pure noise, over many series: the first test
 * of each series is a permutation test at alpha = 0.01, so at most 1% of
 * series may show any step (docs/history.md). With 2000 series the count
 * is Binomial(2000, <= 0.01): mean <= 20, standard deviation 4.4; 36 is
 * more than 3.5 standard deviations above the bound. */
static int series_with_a_step(bool heavy_tails, int n, uint64_t first)
{
    int flagged = 0;
    for (uint64_t s = first; s < first + 2000; s++) {
        double x[40];
        series(s, x, n, heavy_tails, -1, 0, -1, 0);
        sl_changepoint cp[8];
        flagged += sl_edivisive(x, n, NULL, cp, 8) > 0;
    }
    return flagged;
}

Test(changepoint, pure_gaussian_noise_shows_a_step_in_at_most_one_percent_of_series)
{
    int flagged = series_with_a_step(false, 30, 100000);
    cr_expect_leq(flagged, 36, "%d of 2000 noise series had a step", flagged);
}

Test(changepoint, pure_heavy_tailed_noise_shows_a_step_in_at_most_one_percent_of_series)
{
    int flagged = series_with_a_step(true, 40, 200000);
    cr_expect_leq(flagged, 36, "%d of 2000 heavy-tailed noise series had a step", flagged);
}

Test(changepoint, a_constant_or_short_series_has_no_step)
{
    double x[20];
    for (int i = 0; i < 20; i++)
        x[i] = 3.0;
    sl_changepoint cp[4];
    cr_expect_eq(sl_edivisive(x, 20, NULL, cp, 4), 0, "every shuffle ties a constant series: p = 1");
    cr_expect_eq(sl_edivisive(x, 1, NULL, cp, 4), 0);
    cr_expect_eq(sl_edivisive(x, 0, NULL, cp, 4), 0);
}

Test(changepoint, a_step_at_the_last_commit_is_not_yet_a_step)
{
    /* One point after a change cannot be told from one slow run: of the 30
     * positions it could have had, being last has probability 1/30, far
     * above alpha. The history waits for more commits. */
    double x[30];
    series(42, x, 30, false, 29, log(0.8), -1, 0);
    sl_changepoint cp[4];
    int n = sl_edivisive(x, 30, NULL, cp, 4);
    for (int k = 0; k < n; k++)
        cr_expect_neq(cp[k].index, 29);
}

Test(changepoint, the_same_series_gives_the_same_answer)
{
    double x[30];
    series(77, x, 30, true, 10, log(0.92), -1, 0);
    sl_changepoint a[8], b[8];
    int na = sl_edivisive(x, 30, NULL, a, 8), nb = sl_edivisive(x, 30, NULL, b, 8);
    cr_assert_eq(na, nb);
    for (int k = 0; k < na; k++) {
        cr_expect_eq(a[k].index, b[k].index);
        cr_expect_eq(a[k].p, b[k].p);
        cr_expect_eq(a[k].q, b[k].q);
    }
}

Test(changepoint, the_statistic_matches_its_definition)
{
    /* x = 0 0 1 1: the best split is at 2 with m = k = 2; between sum = 4,
     * within sums 0, so q = (2 * 2 / 4) * (2 * 4 / 4) = 2. */
    double x[4] = {0, 0, 1, 1};
    sl_changepoint_options options;
    sl_changepoint_defaults(&options);
    options.alpha = 1.0; /* keep the split whatever its p */
    options.permutations = 5;
    options.clip_mads = 0.0;
    sl_changepoint cp[4];
    int n = sl_edivisive(x, 4, &options, cp, 1);
    cr_assert_eq(n, 1);
    cr_expect_eq(cp[0].index, 2);
    cr_expect_float_eq(cp[0].q, 2.0, 1e-12);
}

Test(changepoint, a_wild_point_counts_the_same_whatever_its_size)
{
    /* Past 3 MADs from the median a point is clipped to that bound, so a
     * run slowed by 40% and one slowed a thousandfold weigh the same. */
    double a[30], b[30];
    series(11, a, 30, false, 18, log(0.9), -1, 0);
    memcpy(b, a, sizeof a);
    a[7] = log(0.6);
    b[7] = log(0.001);
    sl_changepoint ca[8], cb[8];
    int na = sl_edivisive(a, 30, NULL, ca, 8), nb = sl_edivisive(b, 30, NULL, cb, 8);
    cr_assert_eq(na, nb);
    cr_assert_geq(na, 1);
    for (int k = 0; k < na; k++) {
        cr_expect_eq(ca[k].index, cb[k].index);
        cr_expect_eq(ca[k].q, cb[k].q);
        cr_expect_eq(ca[k].p, cb[k].p);
    }
}

Test(shift, the_interval_of_two_samples_of_five_matches_the_tables)
{
    /* Published tables of the Mann-Whitney U give 2 as the two-sided 5%
     * critical value for sizes 5 and 5, so the interval runs from the 3rd
     * to the 23rd of the 25 sorted differences, with confidence
     * 1 - 2 P(U <= 2) = 1 - 2 * 4 / 252. Here the differences are 10 +
     * (j - i): 6 once, 7 twice, ..., 10 five times, ..., 14 once. */
    double a[5] = {1, 2, 3, 4, 5}, b[5] = {11, 12, 13, 14, 15};
    sl_shift shift;
    cr_assert(sl_shift_estimate(a, 5, b, 5, 0.95, &shift));
    cr_expect_float_eq(shift.estimate, 10.0, 1e-12);
    cr_expect_float_eq(shift.lo, 7.0, 1e-12);
    cr_expect_float_eq(shift.hi, 13.0, 1e-12);
    cr_expect_float_eq(shift.level, 1.0 - 8.0 / 252.0, 1e-12);
}

Test(shift, too_few_points_give_the_widest_interval_and_say_its_level)
{
    /* One point against three: C(4, 1) = 4 orderings, so even the widest
     * interval has confidence only 1 - 2/4. */
    double a[1] = {1}, b[3] = {2, 5, 9};
    sl_shift shift;
    cr_assert(sl_shift_estimate(a, 1, b, 3, 0.95, &shift));
    cr_expect_float_eq(shift.estimate, 4.0, 1e-12);
    cr_expect_float_eq(shift.lo, 1.0, 1e-12);
    cr_expect_float_eq(shift.hi, 8.0, 1e-12);
    cr_expect_float_eq(shift.level, 0.5, 1e-12);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(shift, large_samples_use_the_normal_approximation)
{
    /* 60 and 60 points: the normal approximation with continuity
     * correction puts the lower rank at the largest c with
     * Phi((c - 1 + 0.5 - 1800) / sqrt(3600 * 121 / 12)) <= 0.025, which is
     * c = 1427 (1800 - 1.96 * 190.53 = 1426.6, plus the 0.5). The interval
     * is then the 1427th and 2174th of the sorted differences, counted
     * here by brute force. */
    double a[60], b[60], d[3600];
    for (int i = 0; i < 60; i++) {
        a[i] = gaussian(1, i);
        b[i] = 0.5 + gaussian(2, i);
    }
    for (int i = 0; i < 60; i++)
        for (int j = 0; j < 60; j++)
            d[i * 60 + j] = b[j] - a[i];
    qsort(d, 3600, sizeof *d, compare_doubles);
    sl_shift shift;
    cr_assert(sl_shift_estimate(a, 60, b, 60, 0.95, &shift));
    cr_expect_eq(shift.lo, d[1426]);
    cr_expect_eq(shift.hi, d[3600 - 1427]);
    cr_expect_float_eq(shift.estimate, (d[1799] + d[1800]) / 2.0, 1e-12);
    cr_expect(shift.level >= 0.95 && shift.level < 0.951, "level %f", shift.level);
}

Test(changepoint, a_change_falls_between_groups_never_inside_one)
{
    /* Three points per group; the level moves inside group 2 (at point 7,
     * not at a group's start 6 or 9): the change found must be at a
     * group's start. */
    double x[18];
    int group[18];
    for (int i = 0; i < 18; i++) {
        group[i] = i / 3;
        x[i] = (i >= 7 ? 1.0 : 0.0) + 0.01 * gaussian(11, i);
    }
    sl_changepoint cp[18];
    int n = sl_edivisive_grouped(x, group, 18, NULL, cp, 18);
    cr_assert_geq(n, 1);
    for (int k = 0; k < n; k++)
        cr_expect_eq(cp[k].index % 3, 0, "a change at point %d, inside a group", cp[k].index);
    cr_expect_eq(sl_edivisive(x, 18, NULL, cp, 18), 1);
    cr_expect_eq(cp[0].index, 7, "ungrouped, every point is its own group");
}

Test(changepoint, too_few_points_are_too_short_to_test)
{
    /* C(8, 4) = 70 < 100: no arrangement of 8 points is rarer than 1%;
     * C(9, 4) = 126 is. One group cannot change at all. */
    cr_expect_not(sl_changepoint_testable(6, 6, NULL));
    cr_expect_not(sl_changepoint_testable(8, 8, NULL));
    cr_expect(sl_changepoint_testable(9, 9, NULL));
    cr_expect(sl_changepoint_testable(18, 6, NULL));
    cr_expect_not(sl_changepoint_testable(30, 1, NULL));
    cr_expect_eq(sl_changepoint_points_needed(NULL), 9);
    /* And a series too short finds nothing, however clear. */
    double x[6] = {0, 0, 0, 0, 1, 1};
    sl_changepoint cp[6];
    cr_expect_eq(sl_edivisive(x, 6, NULL, cp, 6), 0);
}
