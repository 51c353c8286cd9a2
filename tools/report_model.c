/* The report's rows: throughput with its interval, ratios to the reference
 * and to the best other adapter, and a classification that refuses to call
 * a difference the data cannot tell apart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "sluice/peer_rank.h"
#include "sluice/stats.h"

static bool same_variant(const sl_record *a, const sl_record *b)
{
    return strcmp(a->scenario, b->scenario) == 0 && strcmp(a->variant, b->variant) == 0;
}

static void fill_row(sl__report_row *row, const sl_record *r)
{
    *row = (sl__report_row){.record = r, .throughput = NAN, .throughput_lo = NAN, .throughput_hi = NAN,
                            .p50_ns = NAN, .p99_ns = NAN, .vs_reference = NAN, .vs_best_other = NAN, .vs_best_peer = NAN,
                            .classification = "-"};
    sl_median_ci ci;
    if (r->outcome != SL_RECORD_OK || !sl_record_latency_ci(r, &ci) || !(ci.median > 0.0))
        return;
    /* A batch's elements over its time; every measured batch of a ci or
     * full run is a full one. */
    double per_batch = r->measured_batches > 0 ? (double)r->elements / (double)r->measured_batches : 0.0;
    row->ranked = per_batch > 0.0;
    row->throughput = per_batch / ci.median * 1e9;
    row->throughput_lo = per_batch / ci.hi * 1e9;
    row->throughput_hi = per_batch / ci.lo * 1e9;
    row->p50_ns = ci.median;
    sl_latency_summary s;
    sl_latency_summarize(r->latency_ns, (size_t)r->measured_batches, &s);
    row->p99_ns = s.p99_ns;
    row->noisy = sl_median_ci_is_noisy(&ci);
}

/* Strength, gap or parity from the ratio's interval: when the interval
 * straddles a threshold, the data cannot say which side it is on. */
static const char *classify(const sl__report_row *row, const sl__report_row *reference)
{
    if (!row->ranked || !reference || !reference->ranked || row == reference)
        return "-";
    double lo = row->throughput_lo / reference->throughput_hi;
    double hi = row->throughput_hi / reference->throughput_lo;
    if (row->noisy || reference->noisy)
        return "noisy";
    if (lo > SL__REPORT_STRENGTH)
        return "strength";
    if (hi < SL__REPORT_GAP)
        return "gap";
    if (lo >= SL__REPORT_GAP && hi <= SL__REPORT_STRENGTH)
        return "parity";
    return "noisy";
}

void sl__report_build(const sl_record_set *set, sl__report *report)
{
    memset(report, 0, sizeof *report);
    report->rows = calloc((size_t)(set->count ? set->count : 1), sizeof *report->rows);
    if (!report->rows)
        return;
    report->nrows = set->count;
    for (int i = 0; i < set->count; i++) {
        fill_row(&report->rows[i], &set->records[i]);
        const sl_environment *env = &set->environments[i];
        bool known = false;
        for (int e = 0; e < report->nenvironments; e++)
            known = known || (strcmp(report->environments[e]->cpu_model, env->cpu_model) == 0 &&
                              strcmp(report->environments[e]->git_commit, env->git_commit) == 0);
        if (!known && report->nenvironments < 8)
            report->environments[report->nenvironments++] = env;
    }
    for (int i = 0; i < report->nrows; i++) {
        sl__report_row *row = &report->rows[i];
        const sl__report_row *reference = NULL, *best = NULL;
        for (int j = 0; j < report->nrows; j++) {
            const sl__report_row *other = &report->rows[j];
            if (!same_variant(other->record, row->record) || !other->ranked)
                continue;
            if (strcmp(other->record->adapter, "reference") == 0)
                reference = other;
            if (j != i && (!best || other->throughput > best->throughput))
                best = other;
        }
        if (row->ranked && reference)
            row->vs_reference = row->throughput / reference->throughput;
        if (row->ranked && best) {
            row->vs_best_other = row->throughput / best->throughput;
            row->best_other = best->record->adapter;
        }
        row->classification = classify(row, reference);
    }
    /* The same choice of peer as the bench summary's, on the report's
     * pooled-median rates. */
    sl_rank_entry *entries = calloc(report->nrows > 0 ? (size_t)report->nrows : 1, sizeof *entries);
    if (!entries)
        return;
    for (int i = 0; i < report->nrows; i++) {
        const sl__report_row *row = &report->rows[i];
        entries[i] = (sl_rank_entry){.scenario = row->record->scenario,
                                     .variant = row->record->variant,
                                     .adapter = row->record->adapter,
                                     .equivalence = row->record->equivalence,
                                     .outcome = row->record->outcome,
                                     .elements_per_s = row->ranked ? row->throughput : NAN,
                                     .noisy = row->noisy,
                                     .timing = row->record->timing};
    }
    for (int i = 0; i < report->nrows; i++) {
        sl__report_row *row = &report->rows[i];
        int best = -1;
        row->vs_best_peer = sl_ratio_to_best_peer(entries, report->nrows, i, &best, &row->best_peer_unranked);
        row->best_peer = best >= 0 ? report->rows[best].record->adapter : NULL;
    }
    free(entries);
}

void sl__report_free(sl__report *report)
{
    free(report->rows);
    memset(report, 0, sizeof *report);
}

void sl__format_rate(char *buf, size_t size, double value)
{
    static const char *const suffixes[] = {"", "k", "M", "G", "T"};
    int i = 0;
    if (!isfinite(value)) {
        snprintf(buf, size, "-");
        return;
    }
    /* Rounding to three digits can carry into the next power of 1000
     * (999.7k prints as 1.00M), so the scale is chosen on the rounded value. */
    while (fabs(value) >= 999.5 && i < 4) {
        value /= 1000.0;
        i++;
    }
    int decimals = fabs(value) < 9.995 ? 2 : fabs(value) < 99.95 ? 1 : 0;
    snprintf(buf, size, "%.*f%s", decimals, value, suffixes[i]);
}
