/* The gate's minimum effect at its edge (issue 33: a planted `>` for `>=`
 * in the decision rule survived every test). A move of exactly 5 % with a
 * significant p is `slower`; one of 4.9 % is `same`, "under the 5% that
 * counts". In a file of its own, beside test_gate.c. */
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/gate.h"

/* 15 repetitions of 20 batches: base all `base_ns`, new all `new_ns`. The
 * medians are those values exactly, and every new repetition is slower
 * than every base one, so p_slower is the smallest 15 against 15 allow. */
static sl_gate_result decided(int64_t base_ns, int64_t new_ns)
{
    enum { REPS = 15, PER = 20 };
    static int64_t base[REPS * PER], fresh[REPS * PER];
    for (int i = 0; i < REPS * PER; i++) {
        base[i] = base_ns;
        fresh[i] = new_ns;
    }
    sl_gate_options options;
    sl_gate_options_init(&options);
    sl_gate_result r;
    sl_gate_busy unknown = {-1.0, -1.0};
    cr_assert(sl_gate_compare(base, REPS * PER, fresh, REPS * PER, PER, unknown, &options, &r));
    sl_gate_decide(&r, 1, &options);
    return r;
}

Test(gate_threshold, a_move_of_exactly_the_minimum_effect_counts_as_slower)
{
    sl_gate_options options;
    sl_gate_options_init(&options);
    cr_assert_eq(options.min_effect, 0.05, "this test is about the default 5 %%");
    /* 1050 / 1000 is the same double as 1 + 0.05: the edge itself. */
    sl_gate_result r = decided(1000, 1050);
    cr_expect_eq(r.ratio, 1.0 + options.min_effect);
    cr_expect_eq(r.verdict, SL_GATE_SLOWER, "at exactly 5 %%: %s (%s)", sl_gate_verdict_name(r.verdict), r.rule);
}

Test(gate_threshold, a_move_just_under_the_minimum_effect_is_the_same)
{
    sl_gate_result r = decided(1000, 1049);
    cr_expect_eq(r.verdict, SL_GATE_SAME, "at 4.9 %%: %s (%s)", sl_gate_verdict_name(r.verdict), r.rule);
    cr_expect(strstr(r.rule, "under the 5% that counts") != NULL, "%s", r.rule);
}
