/* The best equivalent peer: over hand-made records, a peer that did other
 * work, failed or timed out is never chosen however fast it was; a variant
 * without an eligible peer has no ratio; ties and noise are settled the
 * way docs/report.md says. Expected ratios are worked by hand. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/records/peer_rank.h"

/* A record as the bench writes it, reduced to what ranking reads. */
static sl_record record_of(const char *variant, const char *adapter, sl_record_outcome outcome, const char *equivalence)
{
    sl_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.scenario, sizeof r.scenario, "CV-1");
    snprintf(r.variant, sizeof r.variant, "%s", variant);
    snprintf(r.adapter, sizeof r.adapter, "%s", adapter);
    snprintf(r.equivalence, sizeof r.equivalence, "%s", equivalence);
    r.outcome = outcome;
    return r;
}

static sl_rank_entry entry_of(const sl_record *r, double elements_per_s, bool noisy)
{
    return (sl_rank_entry){.scenario = r->scenario,
                           .variant = r->variant,
                           .adapter = r->adapter,
                           .equivalence = r->equivalence,
                           .outcome = r->outcome,
                           .elements_per_s = elements_per_s,
                           .noisy = noisy};
}

Test(peer_rank, a_mismatched_peer_is_never_chosen_even_when_fastest)
{
    sl_record r[4] = {
        record_of("32x32", "fused", SL_RECORD_OK, "bitwise"),
        record_of("32x32", "peer:wrong", SL_RECORD_MISMATCH, "mismatch"),
        record_of("32x32", "peer:numpy", SL_RECORD_OK, "bitwise"),
        record_of("32x32", "peer:torch", SL_RECORD_OK, "bitwise"),
    };
    sl_rank_entry e[4] = {entry_of(&r[0], 600e3, false), entry_of(&r[1], 9e6, false), entry_of(&r[2], 200e3, false),
                          entry_of(&r[3], 150e3, false)};
    bool noisy = true;
    cr_expect_eq(sl_best_peer(e, 4, "CV-1", "32x32", &noisy), 2);
    cr_expect_not(noisy);
    int best = -1;
    double ratio = sl_ratio_to_best_peer(e, 4, 0, &best, &noisy);
    cr_expect_eq(best, 2);
    cr_expect_float_eq(ratio, 3.0, 1e-12, "600k / 200k");
    cr_expect_not(noisy);
}

Test(peer_rank, failed_timed_out_and_unchecked_peers_are_not_ranked)
{
    sl_record r[4] = {
        record_of("v", "iter", SL_RECORD_OK, "bitwise"),
        record_of("v", "peer:crash", SL_RECORD_FAILED, "not checked"),
        record_of("v", "peer:hang", SL_RECORD_FAILED, "not checked"),
        /* ok but never held to the reference: not equivalent work */
        record_of("v", "peer:unchecked", SL_RECORD_OK, "not checked"),
    };
    sl_rank_entry e[4] = {entry_of(&r[0], 100.0, false), entry_of(&r[1], 1e9, false), entry_of(&r[2], NAN, false),
                          entry_of(&r[3], 1e9, false)};
    int best = 7;
    bool noisy = true;
    cr_expect(isnan(sl_ratio_to_best_peer(e, 4, 0, &best, &noisy)));
    cr_expect_eq(best, -1);
    cr_expect_not(noisy);
}

Test(peer_rank, no_peer_gives_no_ratio)
{
    sl_record r[2] = {record_of("v", "reference", SL_RECORD_OK, "bitwise"),
                      record_of("v", "fused", SL_RECORD_OK, "bitwise")};
    sl_rank_entry e[2] = {entry_of(&r[0], 100.0, false), entry_of(&r[1], 300.0, false)};
    int best = 7;
    cr_expect(isnan(sl_ratio_to_best_peer(e, 2, 1, &best, NULL)));
    cr_expect_eq(best, -1);
    cr_expect_eq(sl_best_peer(e, 2, "CV-1", "v", NULL), -1);
}

Test(peer_rank, peers_of_another_variant_do_not_count)
{
    sl_record r[3] = {record_of("small", "fused", SL_RECORD_OK, "bitwise"),
                      record_of("large", "peer:numpy", SL_RECORD_OK, "bitwise"),
                      record_of("small", "peer:torch", SL_RECORD_OK, "bitwise")};
    sl_rank_entry e[3] = {entry_of(&r[0], 500.0, false), entry_of(&r[1], 1000.0, false), entry_of(&r[2], 250.0, false)};
    int best = -1;
    cr_expect_float_eq(sl_ratio_to_best_peer(e, 3, 0, &best, NULL), 2.0, 1e-12);
    cr_expect_eq(best, 2);
}

Test(peer_rank, a_tie_goes_to_the_name_that_sorts_first_in_any_order)
{
    sl_record r[3] = {record_of("v", "peer:torch", SL_RECORD_OK, "bitwise"),
                      record_of("v", "fused", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:grain", SL_RECORD_OK, "bitwise")};
    sl_rank_entry e[3] = {entry_of(&r[0], 400.0, false), entry_of(&r[1], 800.0, false), entry_of(&r[2], 400.0, false)};
    cr_expect_eq(sl_best_peer(e, 3, "CV-1", "v", NULL), 2, "peer:grain sorts before peer:torch");
    sl_rank_entry swapped[3] = {e[2], e[1], e[0]};
    cr_expect_eq(sl_best_peer(swapped, 3, "CV-1", "v", NULL), 0);
    int best = -1;
    cr_expect_float_eq(sl_ratio_to_best_peer(e, 3, 1, &best, NULL), 2.0, 1e-12);
}

/* A slower steady peer must not stand in for a faster noisy one: that
 * would inflate sluice's ratio exactly when the machine is noisiest. */
Test(peer_rank, the_fastest_peer_is_chosen_even_when_noisy_and_marks_the_ratio)
{
    sl_record r[3] = {record_of("v", "fused", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:jax", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:numpy", SL_RECORD_OK, "within 1 ulp")};
    sl_rank_entry e[3] = {entry_of(&r[0], 900.0, false), entry_of(&r[1], 800.0, true), entry_of(&r[2], 300.0, false)};
    int best = -1;
    bool noisy = false;
    cr_expect_float_eq(sl_ratio_to_best_peer(e, 3, 0, &best, &noisy), 900.0 / 800.0, 1e-12);
    cr_expect_eq(best, 1);
    cr_expect(noisy);
}

Test(peer_rank, only_noisy_peers_give_a_ratio_marked_unranked)
{
    sl_record r[3] = {record_of("v", "fused", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:jax", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:tfdata", SL_RECORD_OK, "statistical")};
    sl_rank_entry e[3] = {entry_of(&r[0], 900.0, false), entry_of(&r[1], 300.0, true), entry_of(&r[2], 450.0, true)};
    int best = -1;
    bool noisy = false;
    cr_expect_float_eq(sl_ratio_to_best_peer(e, 3, 0, &best, &noisy), 2.0, 1e-12);
    cr_expect_eq(best, 2, "a statistically equivalent peer is ranked");
    cr_expect(noisy);
}

Test(peer_rank, a_noisy_sluice_row_marks_its_ratio_unranked)
{
    sl_record r[2] = {record_of("v", "iter", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:numpy", SL_RECORD_OK, "bitwise")};
    sl_rank_entry e[2] = {entry_of(&r[0], 100.0, true), entry_of(&r[1], 400.0, false)};
    bool noisy = false;
    int best = -1;
    cr_expect_float_eq(sl_ratio_to_best_peer(e, 2, 0, &best, &noisy), 0.25, 1e-12);
    cr_expect(noisy);
}

Test(peer_rank, a_peer_row_has_no_ratio_of_its_own)
{
    sl_record r[2] = {record_of("v", "peer:torch", SL_RECORD_OK, "bitwise"),
                      record_of("v", "peer:numpy", SL_RECORD_OK, "bitwise")};
    sl_rank_entry e[2] = {entry_of(&r[0], 100.0, false), entry_of(&r[1], 400.0, false)};
    int best = 5;
    cr_expect(isnan(sl_ratio_to_best_peer(e, 2, 0, &best, NULL)));
    cr_expect_eq(best, -1);
}

Test(peer_rank, equivalences)
{
    cr_expect(sl_equivalence_is_equivalent("bitwise"));
    cr_expect(sl_equivalence_is_equivalent("within 0.001"));
    cr_expect(sl_equivalence_is_equivalent("statistical"));
    cr_expect_not(sl_equivalence_is_equivalent("mismatch"));
    cr_expect_not(sl_equivalence_is_equivalent("not checked"));
    cr_expect_not(sl_equivalence_is_equivalent(""));
    cr_expect(sl_adapter_is_peer("peer:numpy"));
    cr_expect_not(sl_adapter_is_peer("fused"));
    cr_expect_not(sl_adapter_is_peer("peer"));
}

/* Only per-batch costs are ranked per batch: a hand-over (latencies that
 * leave the work out) and a scan (every batch in one call) never are, however
 * fast; a prefetching peer, timed with a consumer that does nothing, is. */
Test(peer_rank, hand_overs_and_scans_are_never_the_best_peer)
{
    sl_record r[5] = {
        record_of("v", "fused", SL_RECORD_OK, "bitwise"),
        record_of("v", "peer:echo", SL_RECORD_OK, "bitwise"),
        record_of("v", "peer:datarax-scan", SL_RECORD_OK, "bitwise"),
        record_of("v", "peer:tfdata", SL_RECORD_OK, "bitwise"),
        record_of("v", "peer:numpy", SL_RECORD_OK, "bitwise"),
    };
    sl_rank_entry e[5] = {entry_of(&r[0], 900.0, false), entry_of(&r[1], 9e9, false), entry_of(&r[2], 9e8, false),
                          entry_of(&r[3], 450.0, false), entry_of(&r[4], 300.0, false)};
    e[1].timing = "hand-over";
    e[2].timing = "throughput";
    e[3].timing = "prefetching";
    e[4].timing = "per-batch";
    int best = -1;
    cr_expect_float_eq(sl_ratio_to_best_peer(e, 5, 0, &best, NULL), 2.0, 1e-12, "900 / 450");
    cr_expect_eq(best, 3);
    cr_expect(sl_timing_is_a_cost(NULL));
    cr_expect(sl_timing_is_a_cost(""));
    cr_expect(sl_timing_is_a_cost("per-batch"));
    cr_expect(sl_timing_is_a_cost("prefetching"));
    cr_expect_not(sl_timing_is_a_cost("hand-over"));
    cr_expect_not(sl_timing_is_a_cost("throughput"));
}

/* The throughput table's yardstick: the fastest of sluice's own that ran ok
 * and equivalent, never a peer. */
Test(peer_rank, the_fastest_own_adapter_is_sluices_never_a_peers)
{
    sl_record r[4] = {
        record_of("v", "reference", SL_RECORD_OK, "bitwise"),
        record_of("v", "fused", SL_RECORD_OK, "bitwise"),
        record_of("v", "iter", SL_RECORD_MISMATCH, "mismatch"),
        record_of("v", "peer:numpy", SL_RECORD_OK, "bitwise"),
    };
    int64_t lat[4][2] = {{400, 400}, {100, 100}, {10, 10}, {1, 1}};
    for (int i = 0; i < 4; i++) {
        r[i].latency_ns = lat[i];
        r[i].measured_batches = 2;
        r[i].elements = 64;
    }
    cr_expect_eq(sl_fastest_own(r, 4, "CV-1", "v"), 1, "fused: the mismatched iter and the peer do not count");
    cr_expect_eq(sl_fastest_own(r, 4, "CV-1", "other"), -1);
}
