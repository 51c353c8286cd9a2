/* The gate's rules (sluice/gate.h) on synthetic runs whose answers are
 * known: repetition medians tested with the exact Mann-Whitney p, Holm's
 * procedure over the rows, the minimum effect, the base-spread, CPU-wait
 * and load rules, and the counts' thresholds. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/gate.h"

/* reps repetitions of 20 batches near 1000 ns x scale, +-2% jitter, with
 * repetition r scaled again by drift[r] (NULL: none). The jitter pattern
 * is the same in every repetition and repetition r is r ns longer, so no
 * two repetitions share a median and the exact p applies (ties take the
 * normal approximation). */
static void run_of(int64_t *out, int reps, double scale, const double *drift, uint32_t seed)
{
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < 20; i++) {
            uint32_t h = (seed * 2654435761u) ^ (uint32_t)i * 40503u;
            double jitter = (double)(h % 41) - 20.0;
            out[r * 20 + i] = (int64_t)((1000.0 + jitter) * scale * (drift ? drift[r] : 1.0)) + r;
        }
}

/* A machine whose load and CPU wait never come near a limit. */
static const sl_gate_busy quiet = {.load = 1.0, .cpu_wait = 0.001};

static sl_gate_result one_row(const int64_t *a, int na, const int64_t *b, int nb, const sl_gate_options *options)
{
    sl_gate_result r;
    cr_assert(sl_gate_compare(a, (size_t)na * 20, b, (size_t)nb * 20, 20, quiet, options, &r));
    sl_gate_decide(&r, 1, options);
    return r;
}

Test(gate, same_code_is_same)
{
    int64_t a[200], b[200];
    run_of(a, 10, 1.0, NULL, 1);
    run_of(b, 10, 1.0, NULL, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r = one_row(a, 10, b, 10, &options);
    cr_expect_eq(r.verdict, SL_GATE_SAME, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "same:"), "%s", r.rule);
}

Test(gate, a_ten_percent_slowdown_is_slower_with_the_exact_p)
{
    /* Ten repetition medians a side, every new one above every base one:
     * U = 100 and p = 1 / C(20, 10) = 1 / 184756. */
    int64_t a[200], b[200];
    run_of(a, 10, 1.0, NULL, 1);
    run_of(b, 10, 1.10, NULL, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r = one_row(a, 10, b, 10, &options);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
    cr_expect_float_eq(r.p_slower, 1.0 / 184756.0, 1e-12);
    cr_expect_float_eq(r.ratio, 1.10, 0.02);
    cr_expect_eq(r.base_repetitions, 10);
    cr_expect_not_null(strstr(r.rule, "Holm"), "the rule names what decided: %s", r.rule);
    r = one_row(b, 10, a, 10, &options);
    cr_expect_eq(r.verdict, SL_GATE_FASTER, "%s", r.rule);
}

Test(gate, one_drifting_repetition_is_not_a_regression)
{
    /* Three repetitions a side: one new repetition 30% slow moves the
     * pooled median, but three medians against three can reach p = 1/20 at
     * best, far from 0.01. */
    static const double drift[3] = {1.0, 1.0, 1.30};
    int64_t a[60], b[60];
    run_of(a, 3, 1.0, NULL, 1);
    run_of(b, 3, 1.0, drift, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.min_effect = 0.0;
    sl_gate_result r = one_row(a, 3, b, 3, &options);
    cr_expect_neq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
    cr_expect_geq(r.p_slower, 0.05);
}

Test(gate, a_p_that_passes_alone_fails_in_a_family_of_twenty_four)
{
    /* Six repetitions a side, all separated: p = 1 / C(12, 6) = 1 / 924 =
     * 0.00108, below 0.01 alone but above 0.01 / 24 = 0.00042, the first
     * Holm level of 24 rows. */
    int64_t a[120], b[120];
    run_of(a, 6, 1.0, NULL, 1);
    run_of(b, 6, 1.10, NULL, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result rows[24];
    for (int i = 0; i < 24; i++)
        cr_assert(sl_gate_compare(a, 120, b, 120, 20, quiet, &options, &rows[i]));
    sl_gate_decide(rows, 1, &options);
    cr_expect_eq(rows[0].verdict, SL_GATE_SLOWER, "alone: %s", rows[0].rule);
    for (int i = 0; i < 24; i++)
        cr_assert(sl_gate_compare(a, 120, b, 120, 20, quiet, &options, &rows[i]));
    sl_gate_decide(rows, 24, &options);
    for (int i = 0; i < 24; i++)
        cr_expect_eq(rows[i].verdict, SL_GATE_SAME, "row %d of 24: %s", i, rows[i].rule);
    cr_expect_float_eq(rows[0].holm_level, 0.01 / 24, 1e-15);
}

Test(gate, a_base_whose_repetitions_disagree_is_inconclusive)
{
    /* The base's repetitions spread 15%, more than twice the 5% effect. */
    static const double drift[4] = {1.0, 1.15, 1.05, 1.0};
    int64_t a[80], b[80];
    run_of(a, 4, 1.0, drift, 1);
    run_of(b, 4, 1.02, NULL, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r = one_row(a, 4, b, 4, &options);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_float_eq(r.base_spread, 0.15, 0.02);
    cr_expect_not_null(strstr(r.rule, "disagree"), "%s", r.rule);
}

/* A row 10% slower in every repetition (p = 1 / 184756), decided alone
 * on a machine as busy as `busy` says. */
static sl_gate_result ten_percent_slower_on(sl_gate_busy busy, const sl_gate_options *options)
{
    int64_t a[200], b[200];
    run_of(a, 10, 1.0, NULL, 1);
    run_of(b, 10, 1.10, NULL, 2);
    sl_gate_result r;
    cr_assert(sl_gate_compare(a, 200, b, 200, 20, busy, options, &r));
    sl_gate_decide(&r, 1, options);
    return r;
}

Test(gate, a_slowdown_under_too_much_load_is_inconclusive)
{
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.max_load = 4.0;
    sl_gate_result r = ten_percent_slower_on((sl_gate_busy){.load = 6.5, .cpu_wait = -1.0}, &options);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "load"), "%s", r.rule);
}

Test(gate, a_slowdown_whose_runs_waited_for_a_cpu_is_inconclusive)
{
    /* A load generator with one busy process per CPU makes a benchmark
     * wait about a third of its runnable time (measured with stress-ng,
     * docs/gate.md) while the load average stays near the CPU count. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.max_load = 4.0;
    sl_gate_result r = ten_percent_slower_on((sl_gate_busy){.load = 2.3, .cpu_wait = 0.35}, &options);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "waited for a CPU 35.0%"), "%s", r.rule);
}

Test(gate, the_default_wait_limit_is_the_wait_that_alone_makes_the_minimum_effect)
{
    /* A run that waits w of its runnable time takes 1 / (1 - w) of its
     * running time: 1.05 at w = 0.05 / 1.05. Just under that a slowdown is
     * believed; just over, not; and a negative limit is none. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    cr_expect_float_eq(sl_gate_max_cpu_wait(&options), 0.05 / 1.05, 1e-15);
    cr_expect_float_eq(1.0 / (1.0 - sl_gate_max_cpu_wait(&options)), 1.05, 1e-12);
    static const double waits[3] = {0.047, 0.048, 0.9};
    static const sl_gate_verdict expected[3] = {SL_GATE_SLOWER, SL_GATE_INCONCLUSIVE, SL_GATE_SLOWER};
    for (int i = 0; i < 3; i++) {
        options.max_cpu_wait = i == 2 ? -1.0 : 0.0;
        sl_gate_result r = ten_percent_slower_on((sl_gate_busy){.load = 1.0, .cpu_wait = waits[i]}, &options);
        cr_expect_eq(r.verdict, expected[i], "wait %g: %s", waits[i], r.rule);
    }
}

Test(gate, an_unknown_wait_leaves_the_decision_to_the_test)
{
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r = ten_percent_slower_on((sl_gate_busy){.load = 1.0, .cpu_wait = -1.0}, &options);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
}

Test(gate, rows_that_did_not_run_stay_out_of_the_family)
{
    int64_t a[200], b[200];
    run_of(a, 10, 1.0, NULL, 1);
    run_of(b, 10, 1.10, NULL, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result rows[3] = {{.verdict = SL_GATE_NOT_OK}, {.verdict = SL_GATE_NOT_OK}};
    strcpy(rows[0].rule, "not ok: failed in this run");
    cr_assert(sl_gate_compare(a, 200, b, 200, 20, quiet, &options, &rows[2]));
    sl_gate_decide(rows, 3, &options);
    cr_expect_eq(rows[0].verdict, SL_GATE_NOT_OK);
    cr_expect_str_eq(rows[0].rule, "not ok: failed in this run");
    cr_expect_eq(rows[2].verdict, SL_GATE_SLOWER, "%s", rows[2].rule);
    cr_expect_float_eq(rows[2].holm_level, 0.01, 1e-15, "a family of one");
    sl_gate_result none;
    cr_expect_not(sl_gate_compare(a, 0, b, 200, 20, quiet, &options, &none));
    cr_expect_not(sl_gate_compare(a, 30, b, 200, 20, quiet, &options, &none), "30 is not whole repetitions of 20");
}

Test(gate, counts_grow_past_their_thresholds_or_not)
{
    sl_gate_count_options options;
    sl_gate_count_options_init(&options);
    sl_gate_counts base = {.instructions = 1e6, .d1_misses = 20000, .ll_misses = 3000};
    char rule[200];
    sl_gate_counts c = base;
    c.instructions = 1.03e6;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_SLOWER);
    cr_expect_not_null(strstr(rule, "instructions"), "%s", rule);
    c.instructions = 1.01e6;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_SAME, "%s", rule);
    /* D1 misses up 40% (8000 more, 0.8% of the instructions): slower; up
     * 20%, below the 25% that counts: same. */
    c = base;
    c.d1_misses = 28000;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_SLOWER);
    cr_expect_not_null(strstr(rule, "D1"), "%s", rule);
    c.d1_misses = 24000;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_SAME, "%s", rule);
    /* LL misses tripled, but by 6000 of a million instructions (0.6%):
     * what a shift of the heap's layout moved a row by, same; by 11000
     * (1.1%), more than doubled: slower. */
    c = base;
    c.ll_misses = 9000;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_SAME, "%s", rule);
    c.ll_misses = 14000;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_SLOWER, "%s", rule);
    cr_expect_not_null(strstr(rule, "LL"), "%s", rule);
    /* A small row, 13,500 instructions a batch, 310 more (+2.3%): what
     * layout alone moves it by, below the 1000 that count. */
    sl_gate_counts small = {.instructions = 13500, .d1_misses = 590, .ll_misses = 520};
    c = small;
    c.instructions = 13810;
    cr_expect_eq(sl_gate_compare_counts(&small, &c, &options, rule, sizeof rule), SL_GATE_SAME, "%s", rule);
    c = base;
    c.instructions = 0.9e6;
    cr_expect_eq(sl_gate_compare_counts(&base, &c, &options, rule, sizeof rule), SL_GATE_FASTER, "%s", rule);
}
