/* The fused executor's split choice (engine/exec/split_choice.h), driven by
 * made-up batch times: a simulated machine gives each way a base time, and
 * the first batch after a change of way an extra cost, as waking or parking
 * the pool's workers does on a real one. */
#include <criterion/criterion.h>

#include "split_choice.h"

typedef struct machine {
    int64_t split_ns, one_ns; /* a steady batch's time each way */
    int64_t change_ns;        /* added to the first batch after a change of way */
    bool last_split;
    int64_t batches;
} machine;

/* Runs one batch through the choice on the machine; returns whether it was
 * split. */
static bool run_batch(sl__split_choice *choice, machine *m)
{
    bool split = sl__split_choice_next(choice);
    int64_t ns = split ? m->split_ns : m->one_ns;
    if (m->batches > 0 && split != m->last_split)
        ns += m->change_ns;
    m->last_split = split;
    m->batches++;
    sl__split_choice_record(choice, ns);
    return split;
}

static int64_t run_batches(sl__split_choice *choice, machine *m, int64_t n)
{
    int64_t split = 0;
    for (int64_t i = 0; i < n; i++)
        split += run_batch(choice, m);
    return split;
}

/* The batches a run of n batches spends on the way not kept, when the kept
 * way never changes: the first trial's block of it, then one block per
 * re-trial, re-trials coming after periods that start at
 * SL__SPLIT_PERIOD_FIRST steady batches and double up to
 * SL__SPLIT_PERIOD_MAX. Worked out from the schedule, not from the code. */
static int64_t other_way_batches(int64_t n)
{
    int64_t used = 2 * SL__SPLIT_BLOCK, other = SL__SPLIT_BLOCK, period = SL__SPLIT_PERIOD_FIRST;
    for (;;) {
        used += period;
        if (used >= n)
            return other;
        other += used + SL__SPLIT_BLOCK <= n ? SL__SPLIT_BLOCK : n - used;
        used += SL__SPLIT_BLOCK;
        if (period < SL__SPLIT_PERIOD_MAX)
            period *= 2;
    }
}

Test(split_choice, starts_with_a_split_block_then_a_one_thread_block)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 100, .one_ns = 100};
    for (int i = 0; i < 2 * SL__SPLIT_BLOCK; i++)
        cr_assert_eq(run_batch(&choice, &m), i < SL__SPLIT_BLOCK, "batch %d", i);
}

Test(split_choice, keeps_splitting_when_it_is_faster)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    /* A large change cost: counted, it would make splitting look slower. */
    machine m = {.split_ns = 50, .one_ns = 100, .change_ns = 10000};
    int64_t n = 5000;
    int64_t split = run_batches(&choice, &m, n);
    cr_assert_eq(n - split, other_way_batches(n), "one-thread batches %lld", (long long)(n - split));
    cr_assert_eq(choice.switches, 0);
}

Test(split_choice, keeps_one_thread_when_splitting_is_slower)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 100, .one_ns = 60, .change_ns = 10000};
    int64_t n = 5000;
    int64_t split = run_batches(&choice, &m, n);
    /* The first trial's split block is the way not kept. */
    cr_assert_eq(split, other_way_batches(n), "split batches %lld", (long long)split);
    cr_assert_lt(split, n / 50, "re-trials cost under 2%% of the batches");
}

Test(split_choice, a_lead_under_the_margin_does_not_split)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 97, .one_ns = 100};
    run_batches(&choice, &m, 2 * SL__SPLIT_BLOCK);
    cr_assert_not(choice.kept_split, "a 3%% lead is within the 5%% margin");
}

Test(split_choice, switches_to_one_thread_soon_after_splitting_slows_down)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 50, .one_ns = 100, .change_ns = 1000};
    /* Long enough for the re-trial period to have grown to its bound. */
    run_batches(&choice, &m, 20000);
    cr_assert(choice.kept_split);
    cr_assert_eq(choice.period, SL__SPLIT_PERIOD_MAX);
    /* A neighbour takes the second vCPU: splitting now loses. */
    m.split_ns = 150;
    int64_t until_switch = 0;
    while (choice.kept_split && until_switch < SL__SPLIT_PERIOD_MAX)
        run_batch(&choice, &m), until_switch++;
    cr_assert_not(choice.kept_split);
    /* A majority of the kept way's window turns slow, then one re-trial
     * block runs. */
    cr_assert_leq(until_switch, SL__SPLIT_KEPT / 2 + 1 + SL__SPLIT_BLOCK, "switched after %lld batches",
                  (long long)until_switch);
    cr_assert_eq(choice.switches, 1);
    cr_assert_eq(choice.period, SL__SPLIT_PERIOD_FIRST);
}

Test(split_choice, switches_to_splitting_when_it_becomes_faster)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 100, .one_ns = 60, .change_ns = 1000};
    run_batches(&choice, &m, 300);
    cr_assert_not(choice.kept_split);
    /* The neighbour leaves: splitting now wins, which only a periodic
     * re-trial can see, since the kept way did not slow down. */
    m.split_ns = 35;
    int64_t period = choice.period, until_switch = 0;
    while (!choice.kept_split && until_switch < 2 * SL__SPLIT_PERIOD_MAX)
        run_batch(&choice, &m), until_switch++;
    cr_assert(choice.kept_split);
    cr_assert_leq(until_switch, period + SL__SPLIT_BLOCK, "switched after %lld batches", (long long)until_switch);
}

Test(split_choice, jitter_within_the_margin_never_switches)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 70, .one_ns = 100};
    /* Every batch within 2% of its way's time, either side. */
    for (int i = 0; i < 20000; i++) {
        int64_t wobble = (i * 7919) % 5 - 2;
        m.split_ns = 70 + wobble;
        m.one_ns = 100 - 2 * wobble;
        run_batch(&choice, &m);
    }
    cr_assert(choice.kept_split);
    cr_assert_eq(choice.switches, 0);
}

Test(split_choice, a_machine_slowing_down_on_both_ways_keeps_the_faster)
{
    sl__split_choice choice;
    sl__split_choice_init(&choice);
    machine m = {.split_ns = 50, .one_ns = 100};
    run_batches(&choice, &m, 1000);
    /* Everything three times slower: the slowdown calls a re-trial, which
     * confirms splitting, and the new times become the reference, so no
     * re-trial follows every batch. */
    m.split_ns = 150;
    m.one_ns = 300;
    int64_t one_thread = 2000 - run_batches(&choice, &m, 2000);
    cr_assert(choice.kept_split);
    cr_assert_eq(choice.switches, 0);
    cr_assert_lt(one_thread, 2000 / 50, "one-thread batches %lld", (long long)one_thread);
}
