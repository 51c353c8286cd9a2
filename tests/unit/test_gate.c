/* The gate's rules (sluice/records/gate.h) on synthetic runs whose answers are
 * known: one figure per process tested with Student's t over their logs,
 * Holm's procedure over the rows, the minimum effect, "cannot tell" with
 * the processes a row would need, the base-spread, CPU-wait and load rules,
 * and the counts' thresholds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/core/stats.h"
#include "sluice/records/gate.h"

#define BATCHES 20
#define MOST    (SL_GATE_MAX_PROCESSES * 4 * BATCHES)

/* A side of a row: processes x reps repetitions of BATCHES batches near
 * 1000 ns x scale, process p at level[p] (the process's own effect: its
 * layout, its thread placement), each repetition within 1% of its process
 * and each batch within 2% of its repetition. */
typedef struct side {
    int64_t samples[MOST];
    int process[SL_GATE_MAX_PROCESSES * 4];
    sl_gate_side view;
} side;

static void side_of(side *out, int processes, int reps, const double *level, double scale, uint32_t seed)
{
    for (int p = 0; p < processes; p++)
        for (int r = 0; r < reps; r++) {
            int rep = p * reps + r;
            out->process[rep] = p;
            for (int i = 0; i < BATCHES; i++) {
                uint32_t h = (seed * 2654435761u) ^ (uint32_t)(rep * BATCHES + i) * 40503u;
                double jitter = ((double)(h % 41) - 20.0) / 1000.0;
                double drift = ((double)(r % 3) - 1.0) / 100.0;
                out->samples[rep * BATCHES + i] =
                    (int64_t)(1000.0 * scale * level[p] * (1.0 + drift) * (1.0 + jitter)) + rep;
            }
        }
    out->view = (sl_gate_side){out->samples, (size_t)(processes * reps * BATCHES), out->process};
}

/* Process levels with a given spread: a fixed pattern of standard normal
 * scores (mean 0, standard deviation 1 over eight), scaled, rotated by
 * `turn` so that two sides do not share one. */
static void levels(double *out, int processes, double spread, int turn)
{
    static const double scores[8] = {-1.53, -0.89, -0.49, -0.16, 0.16, 0.49, 0.89, 1.53};
    for (int p = 0; p < processes; p++)
        out[p] = exp(spread * scores[(p + turn) % 8]);
}

/* A machine whose load and CPU wait never come near a limit. */
static const sl_gate_busy quiet = {.load = 1.0, .base_cpu_wait = 0.001, .new_cpu_wait = 0.001};

static sl_gate_result one_row(const side *a, const side *b, sl_gate_busy busy, const sl_gate_options *options)
{
    sl_gate_result r;
    cr_assert(sl_gate_compare(&a->view, &b->view, BATCHES, busy, options, &r));
    sl_gate_decide(&r, 1, options);
    return r;
}

static side a, b;

/* Both sides of a row: `processes` processes of `reps` repetitions, their
 * levels spread by `spread` (the base's pattern turned by turn_a, the
 * head's by turn_b), the head scaled by `scale`; seeds 1 and 2 (and more
 * for rows of a family). */
static void two_sides(int processes, int reps, double spread, int turn_a, int turn_b, double scale, uint32_t seed)
{
    double la[SL_GATE_MAX_PROCESSES], lb[SL_GATE_MAX_PROCESSES];
    levels(la, processes, spread, turn_a);
    levels(lb, processes, spread, turn_b);
    side_of(&a, processes, reps, la, 1.0, seed);
    side_of(&b, processes, reps, lb, scale, seed + 1);
}

/* The row of sides a and b decided alone with the default options on a
 * quiet machine. */
static sl_gate_result decided_by_default(void)
{
    sl_gate_options options;
    sl_gate_options_init(&options);
    return one_row(&a, &b, quiet, &options);
}

Test(gate, the_t_distribution_matches_its_tables)
{
    /* Printed tables: t = 2 with 5 degrees of freedom has a two-sided p of
     * 0.1019; the 97.5% point at 10 is 2.228; at 1 (Cauchy) the tail of 1
     * is exactly a quarter. */
    cr_expect_float_eq(sl_student_t_upper(2.0, 5.0), 0.050970, 2e-6);
    cr_expect_float_eq(sl_student_t_quantile_upper(0.025, 10.0), 2.228139, 2e-6);
    cr_expect_float_eq(sl_student_t_upper(1.0, 1.0), 0.25, 1e-12);
    cr_expect_float_eq(sl_student_t_upper(-2.0, 5.0), 1.0 - 0.050970, 2e-6);
    /* The smallest change 8 processes a side spread 10% detect with 80%
     * power at 0.01: (t(0.99, 14) 2.6245 + t(0.8, 14) 0.8682) x 0.1 x
     * sqrt(2/8), as a ratio. */
    cr_expect_float_eq(sl_gate_detectable(8, 0.1, 0.01, 0.8), expm1((2.6245 + 0.8682) * 0.1 * 0.5), 2e-4);
    cr_expect(isinf(sl_gate_detectable(1, 0.1, 0.01, 0.8)));
}

Test(gate, same_code_in_processes_that_agree_is_same)
{
    two_sides(8, 2, 0.005, 0, 3, 1.0, 1);
    sl_gate_result r = decided_by_default();
    cr_expect_eq(r.verdict, SL_GATE_SAME, "%s", r.rule);
    cr_expect_eq(r.base_processes, 8);
    cr_expect_eq(r.base_repetitions, 16);
    cr_expect_not_null(strstr(r.rule, "same:"), "%s", r.rule);
}

Test(gate, the_process_is_the_unit_not_the_repetition)
{
    /* Five processes a side, four repetitions each, the processes 8%
     * apart (what two builds' layouts make of the same code), and the
     * head's 8% above: over the 20 repetitions a side, whose 2% agreement
     * inside a process reads as precision, that is p below 0.001; over
     * five processes it is p near 0.1. Not slower: the processes are
     * what varies independently. */
    two_sides(5, 4, 0.08, 1, 5, 1.08, 1);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r = one_row(&a, &b, quiet, &options);
    cr_expect_eq(r.base_processes, 5);
    cr_expect_eq(r.new_processes, 5);
    cr_expect_gt(r.p_slower, 0.01, "%s", r.rule);
    cr_expect_neq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
    cr_expect_float_eq(r.process_spread, 0.08, 0.03, "the spread between processes is measured: %g", r.process_spread);
}

Test(gate, a_doubling_with_five_processes_a_side_is_slower_on_nine_rows_in_ten)
{
    /* 24 rows, each process 10% apart from the next (a noisy machine),
     * every head doubled: at least 22 of 24 rows must be slower in one
     * family at 0.01. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result rows[24];
    for (int i = 0; i < 24; i++) {
        two_sides(5, 2, 0.10, i, i + 3, 2.0, 100u + 2u * (uint32_t)i);
        cr_assert(sl_gate_compare(&a.view, &b.view, BATCHES, quiet, &options, &rows[i]));
    }
    sl_gate_decide(rows, 24, &options);
    int slower = 0;
    for (int i = 0; i < 24; i++)
        slower += rows[i].verdict == SL_GATE_SLOWER;
    cr_expect_geq(slower, 22, "%d of 24 rows slower; row 0: %s", slower, rows[0].rule);
}

Test(gate, one_process_a_side_cannot_tell_never_same)
{
    /* A doubling and no change alike: one process a side has nothing to
     * measure the processes' spread by. */
    double one = 1.0;
    sl_gate_options options;
    sl_gate_options_init(&options);
    for (int k = 0; k < 2; k++) {
        side_of(&a, 1, 5, &one, 1.0, 1);
        side_of(&b, 1, 5, &one, k ? 2.0 : 1.0, 2);
        sl_gate_result r = one_row(&a, &b, quiet, &options);
        cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
        cr_expect_not_null(strstr(r.rule, "cannot tell"), "%s", r.rule);
    }
    /* Repetitions without process numbers are one process. */
    side_of(&a, 1, 5, &one, 1.0, 1);
    a.view.process = NULL;
    b.view.process = NULL;
    sl_gate_result r = one_row(&a, &b, quiet, &options);
    cr_expect_eq(r.base_processes, 1);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
}

Test(gate, too_few_processes_cannot_tell_and_say_how_many_they_need)
{
    /* Three processes a side 10% apart, no change: the test could not
     * have seen 5%, so the row cannot tell; the number it names is the
     * first at which the test would. */
    two_sides(3, 3, 0.10, 0, 4, 1.0, 1);
    sl_gate_result r = decided_by_default();
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "cannot tell"), "%s", r.rule);
    cr_expect_gt(r.detectable, 0.05, "%s", r.rule);
    double sd = log1p(r.process_spread);
    cr_assert_gt(r.needed_processes, 3, "%s", r.rule);
    cr_expect_leq(sl_gate_detectable(r.needed_processes, sd, 0.01, 0.8), 0.05);
    cr_expect_gt(sl_gate_detectable(r.needed_processes - 1, sd, 0.01, 0.8), 0.05);
    char needed[32];
    snprintf(needed, sizeof needed, "needs %d processes a side", r.needed_processes);
    cr_expect_not_null(strstr(r.rule, needed), "%s", r.rule);
}

Test(gate, a_p_that_passes_alone_fails_in_a_family_of_twenty_four)
{
    /* One row, 8 processes a side 2% apart, 3% slower by t over
     * their logs (min_effect lowered to 2% so that only the test decides):
     * found alone at 0.01, not among 24 rows at 0.01/24 for the first. */
    two_sides(8, 2, 0.02, 0, 4, 1.03, 1);
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.min_effect = 0.02;
    options.max_base_spread = 0.0;
    sl_gate_result rows[24];
    for (int i = 0; i < 24; i++)
        cr_assert(sl_gate_compare(&a.view, &b.view, BATCHES, quiet, &options, &rows[i]));
    cr_assert_lt(rows[0].p_slower, 0.01, "p %g", rows[0].p_slower);
    cr_assert_gt(rows[0].p_slower, 0.01 / 24, "p %g", rows[0].p_slower);
    sl_gate_decide(rows, 1, &options);
    cr_expect_not_null(strstr(rows[0].rule, "slower"), "alone, slower by the test: %s", rows[0].rule);
    for (int i = 0; i < 24; i++)
        cr_assert(sl_gate_compare(&a.view, &b.view, BATCHES, quiet, &options, &rows[i]));
    sl_gate_decide(rows, 24, &options);
    for (int i = 0; i < 24; i++)
        cr_expect_null(strstr(rows[i].rule, "slower"), "row %d of 24, not slower by the test: %s", i, rows[i].rule);
    cr_expect_float_eq(rows[0].holm_level, 0.01 / 24, 1e-15);
}

Test(gate, a_change_within_the_base_spread_is_not_slower)
{
    /* Four base processes together and one 40% above them; the head's
     * five all 17% up. The test alone (at 0.05) calls that slower, but the
     * base's own processes move further than the change: the spread rule
     * comes first. */
    static const double la[5] = {1.0, 1.001, 0.999, 1.002, 1.4};
    static const double lb[5] = {1.25, 1.251, 1.249, 1.252, 1.248};
    side_of(&a, 5, 2, la, 1.0, 1);
    side_of(&b, 5, 2, lb, 1.0, 2);
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.alpha = 0.05;
    sl_gate_result r = one_row(&a, &b, quiet, &options);
    cr_assert_lt(r.p_slower, 0.05, "%s", r.rule);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "within the base's own spread"), "%s", r.rule);
    /* With a fixed limit, a base that spread more than it cannot make a row
     * slower either. */
    options.max_base_spread = 0.10;
    side_of(&b, 5, 2, lb, 2.0, 2);
    r = one_row(&a, &b, quiet, &options);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "disagree"), "%s", r.rule);
}

/* A row 30% slower in 8 processes a side 2% apart, decided alone on a
 * machine as busy as `busy` says. */
static sl_gate_result slower_on(sl_gate_busy busy, const sl_gate_options *options)
{
    two_sides(8, 2, 0.02, 0, 5, 1.30, 1);
    return one_row(&a, &b, busy, options);
}

Test(gate, a_slowdown_under_too_much_load_is_inconclusive)
{
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.max_load = 4.0;
    sl_gate_result r = slower_on((sl_gate_busy){.load = 6.5, .base_cpu_wait = 0.001, .new_cpu_wait = 0.001}, &options);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "load"), "%s", r.rule);
}

Test(gate, a_slowdown_whose_runs_alone_waited_for_a_cpu_is_inconclusive)
{
    /* A load generator with one busy process per CPU makes a benchmark
     * wait about a third of its runnable time (measured with stress-ng,
     * docs/gate.md) while the load average stays near the CPU count. When
     * only the new side's runs met it, the wait could be the change. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    options.max_load = 4.0;
    sl_gate_result r = slower_on((sl_gate_busy){.load = 2.3, .base_cpu_wait = 0.001, .new_cpu_wait = 0.35}, &options);
    cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
    cr_expect_not_null(strstr(r.rule, "waited for a CPU 34.9 points of their time more than the base's"), "%s", r.rule);
}

Test(gate, a_wait_both_sides_met_does_not_doubt_a_slowdown)
{
    /* Alternated processes meet the same machine: on a 2-vCPU VM beside
     * other builds and stress-ng (docs/gate.md, "The CPU wait,
     * re-examined"), processes waited 80 to 95% of their runnable time and
     * the gate rows' medians moved by -3.5% to +7.4%, uncorrelated with the
     * wait. A wait both sides met is the process spread the test already
     * counts, not a change. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r = slower_on((sl_gate_busy){.load = 1.0, .base_cpu_wait = 0.9, .new_cpu_wait = 0.9}, &options);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
    /* Less wait on the new side is no reason to doubt it either. */
    r = slower_on((sl_gate_busy){.load = 1.0, .base_cpu_wait = 0.6, .new_cpu_wait = 0.2}, &options);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
}

Test(gate, the_default_wait_limit_is_the_extra_wait_that_alone_makes_the_minimum_effect)
{
    /* A run that waits w more of its runnable time than another takes up
     * to 1 / (1 - w) of its time: 1.05 at w = 0.05 / 1.05. Just under that
     * gap a slowdown is believed; just over, not; and a negative limit is
     * none. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    cr_expect_float_eq(sl_gate_max_cpu_wait(&options), 0.05 / 1.05, 1e-15);
    cr_expect_float_eq(1.0 / (1.0 - sl_gate_max_cpu_wait(&options)), 1.05, 1e-12);
    static const double gaps[3] = {0.047, 0.048, 0.9};
    static const sl_gate_verdict expected[3] = {SL_GATE_SLOWER, SL_GATE_INCONCLUSIVE, SL_GATE_SLOWER};
    for (int i = 0; i < 3; i++) {
        options.max_cpu_wait = i == 2 ? -1.0 : 0.0;
        sl_gate_result r =
            slower_on((sl_gate_busy){.load = 1.0, .base_cpu_wait = 0.05, .new_cpu_wait = 0.05 + gaps[i]}, &options);
        cr_expect_eq(r.verdict, expected[i], "wait gap %g: %s", gaps[i], r.rule);
    }
}

Test(gate, an_unknown_wait_is_unknown_not_zero)
{
    /* A wait nobody measured may be any wait, on either side: the slowdown
     * is not believed unless the caller lifted the limit. */
    sl_gate_options options;
    sl_gate_options_init(&options);
    for (int side = 0; side < 2; side++) {
        sl_gate_busy busy = {.load = 1.0, .base_cpu_wait = side ? 0.001 : -1.0, .new_cpu_wait = side ? -1.0 : 0.001};
        sl_gate_result r = slower_on(busy, &options);
        cr_expect_eq(r.verdict, SL_GATE_INCONCLUSIVE, "%s", r.rule);
        cr_expect_not_null(strstr(r.rule, "unknown"), "%s", r.rule);
    }
    options.max_cpu_wait = -1.0;
    sl_gate_result r = slower_on((sl_gate_busy){.load = 1.0, .base_cpu_wait = -1.0, .new_cpu_wait = -1.0}, &options);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "%s", r.rule);
}

Test(gate, rows_that_did_not_run_stay_out_of_the_family)
{
    two_sides(8, 2, 0.02, 0, 5, 1.30, 1);
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result rows[3] = {{.verdict = SL_GATE_NOT_OK}, {.verdict = SL_GATE_NOT_OK}};
    strcpy(rows[0].rule, "not ok: failed in this run");
    cr_assert(sl_gate_compare(&a.view, &b.view, BATCHES, quiet, &options, &rows[2]));
    sl_gate_decide(rows, 3, &options);
    cr_expect_eq(rows[0].verdict, SL_GATE_NOT_OK);
    cr_expect_str_eq(rows[0].rule, "not ok: failed in this run");
    cr_expect_eq(rows[2].verdict, SL_GATE_SLOWER, "%s", rows[2].rule);
    cr_expect_float_eq(rows[2].holm_level, 0.01, 1e-15, "a family of one");
    sl_gate_result none;
    sl_gate_side empty = {a.samples, 0, a.process}, ragged = {a.samples, 30, a.process};
    cr_expect_not(sl_gate_compare(&empty, &b.view, BATCHES, quiet, &options, &none));
    cr_expect_not(sl_gate_compare(&ragged, &b.view, BATCHES, quiet, &options, &none),
                  "30 is not whole repetitions of 20");
    /* Process numbers must start at 0 and step by one. */
    a.process[2] = 2;
    cr_expect_not(sl_gate_compare(&a.view, &b.view, BATCHES, quiet, &options, &none));
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
