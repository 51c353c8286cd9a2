/* The best equivalent peer of a scenario variant and sluice's ratio to it
 * (sluice/records/peer_rank.h). */
#include <math.h>
#include <string.h>

#include "sluice/records/peer_rank.h"

bool sl_adapter_is_peer(const char *adapter)
{
    return adapter && strncmp(adapter, "peer:", 5) == 0;
}

bool sl_equivalence_is_equivalent(const char *equivalence)
{
    if (!equivalence)
        return false;
    return strcmp(equivalence, "bitwise") == 0 || strncmp(equivalence, "within ", 7) == 0 ||
           strncmp(equivalence, "statistical", 11) == 0;
}

bool sl_timing_is_a_cost(const char *timing)
{
    return !timing || (strcmp(timing, "hand-over") != 0 && strcmp(timing, "throughput") != 0 &&
                       strcmp(timing, "self-declared") != 0);
}

static bool same_variant(const sl_rank_entry *e, const char *scenario, const char *variant)
{
    return strcmp(e->scenario, scenario) == 0 && strcmp(e->variant, variant) == 0;
}

static bool eligible_peer(const sl_rank_entry *e)
{
    return sl_adapter_is_peer(e->adapter) && e->outcome == SL_RECORD_OK &&
           sl_equivalence_is_equivalent(e->equivalence) && sl_timing_is_a_cost(e->timing) &&
           isfinite(e->elements_per_s) && e->elements_per_s > 0.0;
}

/* Faster wins; a tie goes to the adapter name that sorts first. */
static bool better(const sl_rank_entry *a, const sl_rank_entry *b)
{
    if (a->elements_per_s != b->elements_per_s)
        return a->elements_per_s > b->elements_per_s;
    return strcmp(a->adapter, b->adapter) < 0;
}

int sl_best_peer(const sl_rank_entry *entries, int count, const char *scenario, const char *variant, bool *noisy)
{
    /* The fastest equivalent peer, noisy or not. Preferring a slower steady
     * peer to a faster noisy one would flatter sluice exactly when the
     * machine is at its noisiest; taking the fastest and marking the ratio
     * unranked when it is noisy errs against sluice instead. */
    int best = -1;
    for (int i = 0; i < count; i++) {
        const sl_rank_entry *e = &entries[i];
        if (!same_variant(e, scenario, variant) || !eligible_peer(e))
            continue;
        if (best < 0 || better(e, &entries[best]))
            best = i;
    }
    if (noisy)
        *noisy = best >= 0 && entries[best].noisy;
    return best;
}

double sl_ratio_to_best_peer(const sl_rank_entry *entries, int count, int i, int *best, bool *noisy)
{
    const sl_rank_entry *e = &entries[i];
    bool peer_noisy = false;
    int b = -1;
    double ratio = NAN;
    if (!sl_adapter_is_peer(e->adapter) && e->outcome == SL_RECORD_OK && isfinite(e->elements_per_s)) {
        b = sl_best_peer(entries, count, e->scenario, e->variant, &peer_noisy);
        if (b >= 0)
            ratio = e->elements_per_s / entries[b].elements_per_s;
    }
    if (best)
        *best = b;
    if (noisy)
        *noisy = b >= 0 && (peer_noisy || e->noisy);
    return ratio;
}

int sl_fastest_own(const sl_record *records, int count, const char *scenario, const char *variant)
{
    int best = -1;
    double best_rate = 0.0;
    for (int i = 0; i < count; i++) {
        const sl_record *r = &records[i];
        if (sl_adapter_is_peer(r->adapter) || r->outcome != SL_RECORD_OK || strcmp(r->scenario, scenario) != 0 ||
            strcmp(r->variant, variant) != 0 || !sl_equivalence_is_equivalent(r->equivalence))
            continue;
        double rate = sl_record_elements_per_s(r);
        if (isfinite(rate) && (best < 0 || rate > best_rate)) {
            best = i;
            best_rate = rate;
        }
    }
    return best;
}
