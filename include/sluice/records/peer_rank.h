/* Sluice against the best equivalent peer: which peer loader of a scenario
 * variant may stand for "the best other framework", and sluice's ratio to
 * it. One definition for the bench summary and the report (docs/report.md,
 * "vs best peer"). */
#ifndef SLUICE_PEER_RANK_H
#define SLUICE_PEER_RANK_H

#include <stdbool.h>

#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What ranking needs of one run. Callers fill elements_per_s and noisy with
 * the figures they show (the summary its median repetition's rate, the
 * report its pooled-median rate), so the ratio agrees with the table. */
typedef struct sl_rank_entry {
    const char *scenario;
    const char *variant;
    const char *adapter;
    const char *equivalence; /* the record's: "bitwise", "within 0.001", "statistical ...", "mismatch" */
    sl_record_outcome outcome;
    double elements_per_s; /* NAN when the run has no speed */
    bool noisy;            /* the median's 95% interval is too wide to rank */
    /* The record's timing (sluice/records/record.h): "hand-over", "throughput" and
     * "self-declared" runs are never ranked per batch; NULL or "" for
     * sluice's own. */
    const char *timing;
} sl_rank_entry;

/* A `peer:<name>` adapter: another framework run by sluice. */
bool sl_adapter_is_peer(const char *adapter);

/* An equivalence under which a run did the reference's work: bitwise,
 * within a stated tolerance, or statistically equivalent (a plan whose
 * random draws cannot be handed over). "mismatch" and "not checked" are
 * not. */
bool sl_equivalence_is_equivalent(const char *equivalence);

/* Whether a run's latencies are per-batch costs that may be ranked: not a
 * hand-over (latencies that add up to much less than the time sluice saw)
 * and not a batch-all-at-once mode (a scan, compared by throughput). */
bool sl_timing_is_a_cost(const char *timing);

/* The best equivalent peer of a scenario variant: the fastest peer entry of
 * that variant that ran ok, is equivalent, whose timing is a per-batch
 * cost (sl_timing_is_a_cost) and has a finite positive speed.
 * A noisy peer is not passed over for a slower steady one (that would
 * flatter sluice); *noisy is set when the chosen one is noisy, so the caller
 * shows the ratio as not ranked. Equal speeds go to the adapter name that
 * sorts first, so the choice does not depend on the entries' order.
 * Returns the entry's index, or -1 when no peer qualifies (a mismatched,
 * failed or timed-out peer never does). */
int sl_best_peer(const sl_rank_entry *entries, int count, const char *scenario, const char *variant, bool *noisy);

/* The fastest of sluice's own adapters (not a peer) among records that ran
 * ok and bitwise or within a tolerance on the variant, by elements/s;
 * the record's index, or -1. The throughput table's yardstick for a
 * batch-all-at-once peer. */
int sl_fastest_own(const sl_record *records, int count, const char *scenario, const char *variant);

/* Entry i's elements/s over its variant's best equivalent peer's: NAN for
 * a peer entry, an entry without a speed, or a variant without such a peer.
 * *best is the chosen peer's index (-1 when none) and *noisy is true when
 * either side is noisy (the ratio is then shown but not ranked). */
double sl_ratio_to_best_peer(const sl_rank_entry *entries, int count, int i, int *best, bool *noisy);

#ifdef __cplusplus
}
#endif

#endif
