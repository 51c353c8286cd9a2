/* Whether a fused executor with a pool should split its next batch across
 * the pool's threads or run it on the caller's thread alone.
 *
 * Whether splitting pays is a property of the machine at the moment, not of
 * the code: on the 2-vCPU virtual machines this project runs on, the same
 * binary ran a batch split across two threads anywhere from 1.7x faster to
 * 2x slower than on one, as the hypervisor moved the vCPUs and the
 * neighbours' load changed. A choice made once on the first batches kept a
 * split that later lost by half, so the choice is revisited for the
 * executor's whole life:
 *
 * - Trial: a block of batches split, then a block on one thread; the faster
 *   way (by the median of each block, splitting needing a 5% lead) is kept.
 * - Steady: batches run the kept way, and its latest times are remembered.
 * - Re-trial: every `period` steady batches, one block runs the other way and
 *   its median is compared with the kept way's latest times. The other way
 *   is kept instead if it is 5% faster; otherwise the period doubles (up to
 *   a bound), so a stable machine pays for re-trials ever more rarely, and a
 *   switch starts the period again from its shortest.
 *
 * The first batch after a change of way is never counted: it pays for
 * waking the workers or for their going to sleep, which the steady way does
 * not. The choice changes only a batch's time, never its bytes, and it is a
 * pure function of the times it is given, so it is tested with made-up
 * times (tests/unit/test_split_choice.c). */
#ifndef SLUICE_SPLIT_CHOICE_H
#define SLUICE_SPLIT_CHOICE_H

#include <stdbool.h>
#include <stdint.h>

/* Batches in a trial block, the first of which is not counted. */
#define SL__SPLIT_BLOCK        4
/* The kept way's latest times a re-trial is compared with: an odd count,
 * so that their median is a time a majority of them reached. */
#define SL__SPLIT_KEPT         5
/* Steady batches before the first re-trial, and the most between two. */
#define SL__SPLIT_PERIOD_FIRST 16
#define SL__SPLIT_PERIOD_MAX   1024

typedef enum sl__split_phase {
    SL__SPLIT_TRIAL_SPLIT,
    SL__SPLIT_TRIAL_ONE,
    SL__SPLIT_STEADY,
    SL__SPLIT_RETRIAL,
} sl__split_phase;

typedef struct sl__split_choice {
    sl__split_phase phase;
    bool split;          /* how the batch being run is run */
    bool previous_split; /* how the batch before it was run */
    bool has_previous;   /* a batch was recorded before this one */
    int block_run;       /* batches of the current block run so far */
    int block_counted;
    int64_t block_ns[SL__SPLIT_BLOCK];
    int trial_split_counted; /* the first trial's split block, kept for the comparison */
    int64_t trial_split_ns[SL__SPLIT_BLOCK];
    bool kept_split; /* the way steady batches run */
    int kept_counted, kept_next;
    int64_t kept_ns[SL__SPLIT_KEPT];
    double kept_reference_ns; /* the kept way's median when it was last chosen or confirmed */
    int64_t period, until_retrial;
    int64_t switches; /* changes of the kept way, for tests */
} sl__split_choice;

void sl__split_choice_init(sl__split_choice *choice);
/* Whether the next batch is to be split. Call once per batch, then record
 * its time. */
bool sl__split_choice_next(sl__split_choice *choice);
/* The time of the batch sl__split_choice_next was last asked about. */
void sl__split_choice_record(sl__split_choice *choice, int64_t ns);

#endif
