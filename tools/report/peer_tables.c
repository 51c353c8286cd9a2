/* The peers' table apart from the per-batch ranking: a batch-all-at-once
 * peer (a scan) against sluice's fastest adapter of the same variant, by
 * throughput over all its batches, with its first batch's time (docs/peers.md,
 * "Like with like"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sluice/records/peer_rank.h"
#include "sluice/records/record.h"
#include "summary.h"

static double metric(const sl_record *record, const char *name)
{
    const double *value = sl__find_metric(record, name);
    return value ? *value : NAN;
}

sl__table *sl__throughput_table(const sl_record *records, int count)
{
    static const char *const headers[] = {
        "scenario",         "variant",          "peer",         "elements/s (all batches)",
        "first batch (ms)", "sluice's fastest", "sluice / peer"};
    static const sl__align align[] = {SL__LEFT, SL__LEFT, SL__LEFT, SL__RIGHT, SL__RIGHT, SL__LEFT, SL__RIGHT};
    sl__table *table = NULL;
    for (int i = 0; i < count; i++) {
        const sl_record *r = &records[i];
        if (r->outcome != SL_RECORD_OK || strcmp(r->timing, "throughput") != 0)
            continue;
        int best = sl_fastest_own(records, count, r->scenario, r->variant);
        double peer = metric(r, "peer_throughput_elements_per_s");
        double own = best >= 0 ? sl_record_elements_per_s(&records[best]) : NAN;
        char rate[32], first[32], fastest[64], ratio[32];
        snprintf(rate, sizeof rate, "%.4g", peer);
        snprintf(first, sizeof first, "%.3g", metric(r, "peer_first_batch_ns") / 1e6);
        snprintf(fastest, sizeof fastest, best >= 0 ? "%s %.4g" : "-", best >= 0 ? records[best].adapter : "", own);
        snprintf(ratio, sizeof ratio, isfinite(own / peer) ? "%.2fx" : "-", own / peer);
        if (!table)
            table = sl__table_new(7, headers, align);
        const char *cells[] = {r->scenario, r->variant, r->adapter, rate, first, fastest, ratio};
        sl__table_add_row(table, cells);
    }
    return table;
}
