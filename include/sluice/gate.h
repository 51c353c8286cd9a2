/* The pull-request performance gate's decision rules: is a new run slower
 * than a baseline, row by row (a scenario, variant and adapter), by wall
 * time and by callgrind's counts per batch, or can the data not tell?
 * Shared by `sluice check` and the tests (docs/gate.md). */
#ifndef SLUICE_GATE_H
#define SLUICE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_gate_verdict {
    SL_GATE_SAME = 0,
    SL_GATE_SLOWER,
    SL_GATE_FASTER,
    /* The data cannot tell: the base's own repetitions disagree by more
     * than the gate could resolve, or the machine was too busy. */
    SL_GATE_INCONCLUSIVE,
    /* A side did not run ok: nothing to compare. */
    SL_GATE_NOT_OK,
} sl_gate_verdict;

typedef struct sl_gate_options {
    /* The family-wise level over every row of a check (Holm's procedure
     * over the rows' p values): the chance that any row of a decision is
     * called slower by the test when none is, under its assumptions. */
    double alpha;
    /* A move counts only when the medians differ by at least this (0.05:
     * 5%). */
    double min_effect;
    /* A row is inconclusive when the base's repetition medians disagree
     * by more than this: the width of the 95% interval of their median,
     * over it (the range below 6 repetitions). The machine then moved the
     * base more than the gate is asked to resolve. 0 means twice
     * min_effect. */
    double max_base_spread;
    /* A slower row is inconclusive when the 1-minute load average during
     * either side's runs exceeded this; 0 means no limit (the caller sets
     * it from the CPUs, docs/gate.md). */
    double max_load;
    /* A slower row is inconclusive when either side's runs spent more than
     * this share of their runnable time waiting for a CPU that other work
     * held (sl_gate_busy.cpu_wait). 0 means the share that alone would
     * lengthen a run by min_effect: min_effect / (1 + min_effect), 4.8%
     * for 5%. Negative means no limit. */
    double max_cpu_wait;
    /* A testing aid: the new samples are multiplied by (1 + inflate) before
     * the comparison. 0 in real use; never a measure of detection. */
    double inflate;
} sl_gate_options;

/* alpha 0.01, min_effect 0.05, max_base_spread 0 (twice min_effect),
 * max_load 0, max_cpu_wait 0 (from min_effect), inflate 0. */
void sl_gate_options_init(sl_gate_options *options);
/* The CPU wait share past which a slower row is inconclusive, with 0
 * resolved from min_effect; negative when there is no limit. */
double sl_gate_max_cpu_wait(const sl_gate_options *options);

typedef struct sl_gate_result {
    double base_median, new_median; /* pooled over every batch of every repetition */
    double ratio;                   /* new_median / base_median */
    int base_repetitions, new_repetitions;
    /* One-sided, exact Mann-Whitney p over the repetitions' medians (not
     * the batches, which move together within a repetition). */
    double p_slower, p_faster;
    double base_spread; /* of the base's repetition medians */
    double load;        /* the higher of the two sides' loads, -1 unknown */
    double cpu_wait;    /* the higher of the two sides' CPU wait shares, -1 unknown */
    double holm_level;  /* the level p_slower was held to (sl_gate_decide) */
    sl_gate_verdict verdict;
    char rule[200]; /* the rule that decided, in words */
} sl_gate_result;

/* How busy the machine was while a row's runs took their times, the worse
 * of the two sides (a record's environment): the 1-minute load average and
 * the share of the runs' runnable time spent waiting for a CPU; -1 where
 * unknown. */
typedef struct sl_gate_busy {
    double load;
    double cpu_wait;
} sl_gate_busy;

/* The figures of one row: samples come in repetitions of per_repetition
 * batches (a record's samples_ns, or several runs' pooled). The verdict is
 * left to sl_gate_decide, which needs every row. False when a side has no
 * samples or they are not whole repetitions. */
bool sl_gate_compare(const int64_t *base, size_t nbase, const int64_t *fresh, size_t nfresh, size_t per_repetition,
                     sl_gate_busy busy, const sl_gate_options *options, sl_gate_result *out);

/* The verdict of every row of a check, in this order of rules:
 *   1. slower: the median moved up by at least min_effect and p_slower is
 *      within its Holm level over the rows; inconclusive instead when the
 *      runs waited for a CPU more than max_cpu_wait of their time or the
 *      load was above max_load;
 *   2. inconclusive: the base's repetitions spread by more than
 *      max_base_spread and the new median is above the base's;
 *   3. faster: the mirror of 1, with p_faster under its own Holm levels;
 *   4. same, saying which condition of 1 failed.
 * Rows marked SL_GATE_NOT_OK beforehand are left as they are and out of
 * the family. */
void sl_gate_decide(sl_gate_result *rows, int count, const sl_gate_options *options);

const char *sl_gate_verdict_name(sl_gate_verdict verdict);

/* Callgrind's counts of one row per batch, the run's setup left out
 * (sluice bench --instrument, ci/gate-counts.py). */
typedef struct sl_gate_counts {
    double instructions;
    double d1_misses; /* first-level data cache misses, reads and writes */
    double ll_misses; /* last-level data misses, reads and writes */
} sl_gate_counts;

typedef struct sl_gate_count_options {
    /* Growth per batch that makes a row slower: instructions, D1 misses,
     * LL misses, as fractions. */
    double max_instructions, max_d1, max_ll;
    /* Instructions move with where memcpy's and malloc's data land (a few
     * hundred a batch when only the environment's length changes); a
     * growth counts only when it is also at least this many per batch, so
     * that a row of 13,000 instructions a batch cannot fail by layout. */
    double min_instructions;
    /* An LL miss growth counts only when it is at least this fraction of
     * the row's instructions (D1's floor is min_miss_share). */
    double min_ll_share;
    /* Miss counts move with the layout of the heap; a growth in misses
     * counts only when it is also at least this fraction of the row's
     * instructions per batch, so that a few dozen misses more on a row
     * that has a few hundred never fail a gate. */
    double min_miss_share;
} sl_gate_count_options;

/* max_instructions 0.02 with min_instructions 1000, max_d1 0.25 with
 * min_miss_share 0.005, max_ll 1.0 with min_ll_share 0.01: simulated misses
 * move with the addresses things land at, which a change elsewhere or a
 * longer environment shifts (LL misses by up to 66% on one row from the
 * environment alone), so misses catch gross memory regressions, not a few
 * percent (docs/gate.md gives the measurements). */
void sl_gate_count_options_init(sl_gate_count_options *options);

/* The verdict by counts (slower, faster when instructions fell by
 * max_instructions, else same), with the rule that decided in rule. */
sl_gate_verdict sl_gate_compare_counts(const sl_gate_counts *base, const sl_gate_counts *fresh,
                                       const sl_gate_count_options *options, char *rule, size_t size);

#ifdef __cplusplus
}
#endif

#endif
