/* The fused executor's choice between splitting a batch and running it on
 * one thread, revisited for the executor's whole life (split_choice.h). */
#include "split_choice.h"

#include <string.h>

/* Splitting, or switching ways, must be this much faster to be chosen, so
 * that two ways within noise of each other do not trade places. */
#define SPLIT_MARGIN     0.95
/* The kept way's median growing by this factor over its reference calls a
 * re-trial before its period is over. */
#define SLOWDOWN_RETRIAL 1.25

void sl__split_choice_init(sl__split_choice *choice)
{
    memset(choice, 0, sizeof *choice);
    choice->phase = SL__SPLIT_TRIAL_SPLIT;
    choice->period = SL__SPLIT_PERIOD_FIRST;
}

/* The median of at most SL__SPLIT_BLOCK or SL__SPLIT_KEPT times, without
 * allocating: the executor allocates nothing per batch. An even count
 * takes the mean of the middle two. */
static double median_of_few(const int64_t *values, int n)
{
    int64_t sorted[SL__SPLIT_BLOCK > SL__SPLIT_KEPT ? SL__SPLIT_BLOCK : SL__SPLIT_KEPT];
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && sorted[j - 1] > values[i]; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = values[i];
    }
    return n % 2 ? (double)sorted[n / 2] : ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2.0;
}

bool sl__split_choice_next(sl__split_choice *choice)
{
    switch (choice->phase) {
    case SL__SPLIT_TRIAL_SPLIT: choice->split = true; break;
    case SL__SPLIT_TRIAL_ONE: choice->split = false; break;
    case SL__SPLIT_STEADY: choice->split = choice->kept_split; break;
    case SL__SPLIT_RETRIAL: choice->split = !choice->kept_split; break;
    }
    return choice->split;
}

static void keep_way(sl__split_choice *choice, bool split, const int64_t *ns, int n)
{
    choice->kept_split = split;
    choice->kept_counted = 0;
    for (int i = 0; i < n && i < SL__SPLIT_KEPT; i++)
        choice->kept_ns[choice->kept_counted++] = ns[i];
    choice->kept_next = choice->kept_counted % SL__SPLIT_KEPT;
    choice->kept_reference_ns = median_of_few(choice->kept_ns, choice->kept_counted);
}

static void start_block(sl__split_choice *choice, sl__split_phase phase)
{
    choice->phase = phase;
    choice->block_run = 0;
    choice->block_counted = 0;
}

static void start_steady(sl__split_choice *choice)
{
    choice->phase = SL__SPLIT_STEADY;
    choice->until_retrial = choice->period;
}

/* A block ended: decide between the ways it compared. */
static void end_block(sl__split_choice *choice)
{
    double block = median_of_few(choice->block_ns, choice->block_counted);
    if (choice->phase == SL__SPLIT_TRIAL_SPLIT) {
        memcpy(choice->trial_split_ns, choice->block_ns, sizeof choice->block_ns);
        choice->trial_split_counted = choice->block_counted;
        start_block(choice, SL__SPLIT_TRIAL_ONE);
        return;
    }
    if (choice->phase == SL__SPLIT_TRIAL_ONE) {
        double split = median_of_few(choice->trial_split_ns, choice->trial_split_counted);
        if (split < SPLIT_MARGIN * block)
            keep_way(choice, true, choice->trial_split_ns, choice->trial_split_counted);
        else
            keep_way(choice, false, choice->block_ns, choice->block_counted);
        start_steady(choice);
        return;
    }
    /* A re-trial of the way not kept. */
    double kept = median_of_few(choice->kept_ns, choice->kept_counted);
    if (block < SPLIT_MARGIN * kept) {
        keep_way(choice, !choice->kept_split, choice->block_ns, choice->block_counted);
        choice->period = SL__SPLIT_PERIOD_FIRST;
        choice->switches++;
    } else {
        choice->kept_reference_ns = kept;
        if (choice->period < SL__SPLIT_PERIOD_MAX)
            choice->period *= 2;
    }
    start_steady(choice);
}

void sl__split_choice_record(sl__split_choice *choice, int64_t ns)
{
    /* The first batch after a change of way (and the very first batch)
     * pays for the change, not for the way. */
    bool counted = choice->has_previous && choice->previous_split == choice->split;
    choice->previous_split = choice->split;
    choice->has_previous = true;
    if (choice->phase == SL__SPLIT_STEADY) {
        if (counted) {
            choice->kept_ns[choice->kept_next] = ns;
            choice->kept_next = (choice->kept_next + 1) % SL__SPLIT_KEPT;
            if (choice->kept_counted < SL__SPLIT_KEPT)
                choice->kept_counted++;
            if (choice->kept_counted == SL__SPLIT_KEPT &&
                median_of_few(choice->kept_ns, choice->kept_counted) > SLOWDOWN_RETRIAL * choice->kept_reference_ns)
                choice->until_retrial = 0;
        }
        /* A re-trial needs the kept way's times to compare with. */
        if (--choice->until_retrial <= 0 && choice->kept_counted > 0)
            start_block(choice, SL__SPLIT_RETRIAL);
        return;
    }
    if (counted)
        choice->block_ns[choice->block_counted++] = ns;
    if (++choice->block_run == SL__SPLIT_BLOCK)
        end_block(choice);
}
