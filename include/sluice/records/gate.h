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
    /* The data cannot tell: too few processes for the row's test to reach
     * its level ("cannot tell", with how many it would need), a change
     * inside the base's own spread, or a machine too busy or of unknown
     * busyness. */
    SL_GATE_INCONCLUSIVE,
    /* A side did not run ok: nothing to compare. */
    SL_GATE_NOT_OK,
} sl_gate_verdict;

typedef struct sl_gate_options {
    /* The family-wise level over every row of a check (Holm's procedure
     * over the rows' p values): the chance that any row of a decision is
     * called slower by the test when none is, under its assumptions. */
    double alpha;
    /* A move counts only when the figures differ by at least this (0.05:
     * 5%). */
    double min_effect;
    /* A row is called slower only when its change is larger than the
     * base's own spread (its process figures' range, or above 5 processes
     * the width of their median's 95% interval, over the median): a change
     * the base alone shows between its processes is not the code's. When
     * above 0, a slower row whose base spread exceeds this is inconclusive
     * whatever its change. */
    double max_base_spread;
    /* A slower row is inconclusive when the 1-minute load average during
     * either side's runs exceeded this; 0 means no limit (the caller sets
     * it from the CPUs, docs/gate.md). */
    double max_load;
    /* A slower row is inconclusive when the new side's runs spent a share
     * of their runnable time waiting for a CPU that other work held larger
     * than the base side's by more than this (sl_gate_busy), or when either
     * share is unknown. A wait both sides met, as alternated processes do,
     * does not bias their ratio (docs/gate.md, "The CPU wait, re-examined");
     * one the new side alone met could. 0 means the share that alone would
     * lengthen a run by min_effect: min_effect / (1 + min_effect), 4.8% for
     * 5%. Negative means no limit. */
    double max_cpu_wait;
    /* The power the "cannot tell" rule asks of a row's test: a row whose
     * test would detect a change of min_effect with less than this chance,
     * given its processes and their spread, cannot tell (0 means 0.8). */
    double power;
    /* A testing aid: the new samples are multiplied by (1 + inflate) before
     * the comparison. 0 in real use; never a measure of detection. */
    double inflate;
} sl_gate_options;

/* alpha 0.01, min_effect 0.05, max_base_spread 0 (the change itself),
 * max_load 0, max_cpu_wait 0 (from min_effect), power 0.8, inflate 0. */
void sl_gate_options_init(sl_gate_options *options);
/* The CPU wait share past which a slower row is inconclusive, with 0
 * resolved from min_effect; negative when there is no limit. */
double sl_gate_max_cpu_wait(const sl_gate_options *options);

/* One side of a row: samples in whole repetitions of per_repetition
 * batches (a record's samples_ns, several runs' pooled), and the process
 * each repetition ran in (sl_record.repetition_process: 0 first, then the
 * same or one more); NULL means every repetition ran in one process. */
typedef struct sl_gate_side {
    const int64_t *samples;
    size_t count;
    const int *process;
} sl_gate_side;

/* The most processes a side may hold. */
#define SL_GATE_MAX_PROCESSES 64

typedef struct sl_gate_result {
    double base_median, new_median; /* the median of each side's process figures */
    double ratio;                   /* new_median / base_median */
    int base_repetitions, new_repetitions;
    int base_processes, new_processes;
    /* One-sided p of Student's t test over the log of one figure per
     * process (the median of its repetitions' medians), the two sides'
     * variances pooled: the model with a random effect per process, where
     * the repetitions inside a process share its effect. 1 when a side has
     * a single process (nothing measures their spread). */
    double p_slower, p_faster;
    /* The spread between processes: the pooled standard deviation of the
     * log process figures, as a fraction (exp(sd) - 1); -1 unknown (one
     * process a side). */
    double process_spread;
    /* The smallest change the row's test detects with options->power at
     * its Holm level, with the processes it has (-1 unknown), and how many
     * processes a side it would need to detect min_effect (0 unknown, -1
     * more than SL_GATE_MAX_PROCESSES). Set by sl_gate_decide. */
    double detectable;
    int needed_processes;
    double base_spread; /* of the base's process figures, as a fraction (options->max_base_spread) */
    double load;        /* the higher of the two sides' loads, -1 unknown */
    double cpu_wait;    /* the higher of the two sides' CPU wait shares, -1 unknown */
    double wait_gap;    /* the new side's CPU wait share less the base's, where both are known */
    double holm_level;  /* the level p_slower was held to (sl_gate_decide) */
    sl_gate_verdict verdict;
    char rule[240]; /* the rule that decided, in words */
} sl_gate_result;

/* How busy the machine was while a row's runs took their times (a
 * record's environment): the 1-minute load average, the worse of the two
 * sides, and each side's share of its runs' runnable time spent waiting for
 * a CPU (the worst of its processes); -1 where unknown. */
typedef struct sl_gate_busy {
    double load;
    double base_cpu_wait;
    double new_cpu_wait;
} sl_gate_busy;

/* The figures of one row. The verdict is left to sl_gate_decide, which
 * needs every row. False when a side has no samples, they are not whole
 * repetitions, or a side's process numbers are not 0 first and then the
 * same or one more, up to SL_GATE_MAX_PROCESSES. */
bool sl_gate_compare(const sl_gate_side *base, const sl_gate_side *fresh, size_t per_repetition, sl_gate_busy busy,
                     const sl_gate_options *options, sl_gate_result *out);

/* The smallest change, as a fraction, that a one-sided two-sample t test
 * over n processes a side detects with the given power at level, when the
 * log process figures spread by sd; INFINITY when n < 2. */
double sl_gate_detectable(int n, double sd, double level, double power);

/* The verdict of every row of a check, in this order of rules:
 *   1. a row with one process a side cannot tell (nothing measures the
 *      spread between processes);
 *   2. slower: the figure moved up by at least min_effect and p_slower is
 *      within its Holm level over the rows; inconclusive instead when the
 *      runs waited for a CPU more than max_cpu_wait of their time (or the
 *      wait is unknown), the load was above max_load, or the change is
 *      within the base's own spread (max_base_spread);
 *   3. faster: the mirror of 2, with p_faster under its own Holm levels;
 *   4. cannot tell: the row's test could not detect min_effect with the
 *      processes it has (it says how many a side it would need);
 *   5. same, saying why.
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
