/* The gate's minimum effect at its edge (issue 33: a planted `>` for `>=`
 * in the decision rule survived every test). A significant move of exactly
 * the minimum effect is `slower`; one a double under it is `same`, "under
 * the ...% that counts". In a file of its own, beside test_gate.c. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/records/gate.h"

/* Seven processes a side, one repetition of PER batches each; every batch
 * of a process takes its process's figure. The base's process figures
 * spread by about 0.3% around 10,000 ns (so that the row has the power to
 * see 5% and the change is far beyond the base's own spread), and the
 * head's are the base's times 1.05, about a 5% move. The machine's wait and
 * load are known and small: the rules under test are the effect's, not the
 * machine's. With min_effect_at_edge the minimum effect is set to the
 * row's own move, exactly (ratio - 1 is exact for a ratio in [1, 2], and
 * 1 + it is the ratio again), so the rule's comparison meets its edge;
 * otherwise one double above it. */
static sl_gate_result decided(bool min_effect_at_edge)
{
    enum { PROCESSES = 7, PER = 20 };
    static const int64_t figures[PROCESSES] = {9960, 9980, 10000, 10000, 10000, 10020, 10040};
    static int64_t base[PROCESSES * PER], fresh[PROCESSES * PER];
    static int process[PROCESSES];
    for (int p = 0; p < PROCESSES; p++) {
        process[p] = p;
        for (int i = 0; i < PER; i++) {
            base[p * PER + i] = figures[p];
            fresh[p * PER + i] = figures[p] * 105 / 100;
        }
    }
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r;
    const sl_gate_busy quiet = {.load = 1.0, .base_cpu_wait = 0.001, .new_cpu_wait = 0.001};
    const sl_gate_side base_side = {base, PROCESSES * PER, process}, fresh_side = {fresh, PROCESSES * PER, process};
    cr_assert(sl_gate_compare(&base_side, &fresh_side, PER, quiet, &options, &r));
    cr_assert(r.ratio > 1.04 && r.ratio < 1.06, "the head is about 5%% slower: %.17g", r.ratio);
    double edge = r.ratio - 1.0;
    options.min_effect = min_effect_at_edge ? edge : nextafter(r.ratio, 2.0) - 1.0;
    cr_assert_eq(1.0 + edge, r.ratio, "the edge is exact");
    sl_gate_decide(&r, 1, &options);
    return r;
}

Test(gate_threshold, a_move_of_exactly_the_minimum_effect_counts_as_slower)
{
    sl_gate_result r = decided(true);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "at exactly the minimum effect: %s (%s)", sl_gate_verdict_name(r.verdict),
                 r.rule);
}

Test(gate_threshold, a_move_just_under_the_minimum_effect_is_the_same)
{
    sl_gate_result r = decided(false);
    cr_expect_eq(r.verdict, SL_GATE_SAME, "just under the minimum effect: %s (%s)", sl_gate_verdict_name(r.verdict),
                 r.rule);
    cr_expect(strstr(r.rule, "that counts") != NULL, "%s", r.rule);
}
