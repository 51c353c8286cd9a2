/* The comparison model (report.h): each row's headline figure, its ratios
 * to the reference, to the fastest and to the best equivalent peer with
 * their intervals, and the order and standing every view shows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"
#include "sluice/records/peer_rank.h"

static bool same_variant(const sl_record *a, const sl_record *b)
{
    return strcmp(a->scenario, b->scenario) == 0 && strcmp(a->variant, b->variant) == 0;
}

/* Did not run here: the views fold these into one line per variant. */
static bool folded(const sl_record *r)
{
    return r->outcome == SL_RECORD_UNAVAILABLE || r->outcome == SL_RECORD_EXCLUDED || r->outcome == SL_RECORD_SKIPPED;
}

static void fill_row(sl__report_row *row, const sl_record *r, const sl_environment *env)
{
    *row = (sl__report_row){.record = r, .env = env, .p99_ns = NAN};
    if (r->outcome != SL_RECORD_OK || !sl_equivalence_is_equivalent(r->equivalence) ||
        !sl_record_throughput(r, &row->t))
        return;
    row->ranked = true;
    if (r->latency_ns && r->measured_batches > 0) {
        sl_latency_summary s;
        sl_latency_summarize(r->latency_ns, (size_t)r->measured_batches, &s);
        row->p99_ns = s.p99_ns;
    }
}

/* The order within a variant: ranked rows fastest first (equal rates by
 * adapter name, so the order never depends on the records' order), then
 * rows that ran without a rankable speed, then those that did not run. */
static int group_of(const sl__report_row *row)
{
    return row->ranked ? 0 : folded(row->record) ? 2 : 1;
}

static int compare_rows(const void *pa, const void *pb)
{
    const sl__report_row *a = pa, *b = pb;
    int ga = group_of(a), gb = group_of(b);
    if (ga != gb)
        return ga - gb;
    if (ga == 0 && a->t.rate != b->t.rate)
        return a->t.rate > b->t.rate ? -1 : 1;
    return strcmp(a->record->adapter, b->record->adapter);
}

static sl__report_ratio ratio_between(const sl__report_row *row, const sl__report_row *other)
{
    sl__report_ratio r = {0};
    if (!row->ranked || !other || !other->ranked)
        return r;
    r.has = sl_record_ratio(row->record, other->record, &r.ratio);
    r.other = other->record->adapter;
    r.unranked = row->t.noisy || other->t.noisy;
    r.interleaved = row->record->rounds > 1 && row->record->rounds == other->record->rounds;
    return r;
}

static void compare_within(sl__report *report, sl__report_variant *v)
{
    const sl__report_row *reference = NULL;
    for (int i = v->first; i < v->first + v->nranked; i++)
        if (strcmp(report->rows[i].record->adapter, "reference") == 0)
            reference = &report->rows[i];
    v->fastest = v->nranked > 0 ? v->first : -1;
    for (int i = v->first; i < v->first + v->nranked; i++) {
        sl__report_row *row = &report->rows[i];
        if (row != reference)
            row->vs_reference = ratio_between(row, reference);
        if (i == v->fastest) {
            row->vs_best = ratio_between(row, v->nranked > 1 ? &report->rows[i + 1] : NULL);
            row->standing = SL__STANDING_FASTEST;
        } else {
            row->vs_best = ratio_between(row, &report->rows[v->fastest]);
            /* The fastest by median, so its ratio is at most 1: either the
             * whole interval is below (behind) or it covers 1. */
            row->standing =
                row->vs_best.has && row->vs_best.ratio.call == SL_RATIO_LOSS ? SL__STANDING_BEHIND : SL__STANDING_TIED;
        }
    }
}

/* The best equivalent peer, chosen as peer ranking chooses (sluice/
 * peer_rank.h) from the headline rates, then the ratio to it with its
 * interval. */
static void compare_with_peers(sl__report *report)
{
    sl_rank_entry *entries = sl__cli_alloc((size_t)(report->nrows > 0 ? report->nrows : 1) * sizeof *entries);
    for (int i = 0; i < report->nrows; i++) {
        const sl__report_row *row = &report->rows[i];
        entries[i] = (sl_rank_entry){.scenario = row->record->scenario,
                                     .variant = row->record->variant,
                                     .adapter = row->record->adapter,
                                     .equivalence = row->record->equivalence,
                                     .outcome = row->record->outcome,
                                     .elements_per_s = row->ranked ? row->t.rate : NAN,
                                     .noisy = row->t.noisy,
                                     .timing = row->record->timing};
    }
    for (int i = 0; i < report->nrows; i++) {
        sl__report_row *row = &report->rows[i];
        int best = -1;
        bool unranked = false;
        if (isnan(sl_ratio_to_best_peer(entries, report->nrows, i, &best, &unranked)) || best < 0)
            continue;
        row->vs_best_peer = ratio_between(row, &report->rows[best]);
        row->vs_best_peer.unranked = row->vs_best_peer.unranked || unranked;
    }
    free(entries);
}

static void note_environment(sl__report *report, const sl__report_row *row)
{
    const sl_environment *env = row->env;
    if (!env)
        return;
    bool known = false;
    for (int e = 0; e < report->nenvironments; e++)
        known = known || (strcmp(report->environments[e]->cpu_model, env->cpu_model) == 0 &&
                          strcmp(report->environments[e]->git_commit, env->git_commit) == 0);
    if (!known && report->nenvironments < 8)
        report->environments[report->nenvironments++] = env;
    if (!row->ranked)
        return;
    report->nbusy += sl_environment_busy(env);
    double load = env->load_start > env->load_end ? env->load_start : env->load_end;
    report->busiest_load = load > report->busiest_load ? load : report->busiest_load;
    report->most_steal = env->steal_fraction > report->most_steal ? env->steal_fraction : report->most_steal;
    report->most_wait = env->cpu_wait_fraction > report->most_wait ? env->cpu_wait_fraction : report->most_wait;
}

void sl__report_build(const sl_record *records, const sl_environment *environments, int count, sl__report *report)
{
    memset(report, 0, sizeof *report);
    report->rows = sl__cli_alloc((size_t)(count > 0 ? count : 1) * sizeof *report->rows);
    report->variants = sl__cli_alloc((size_t)(count > 0 ? count : 1) * sizeof *report->variants);
    /* Variants in the order their first record comes, each one's rows
     * gathered behind it. */
    bool *taken = sl__cli_alloc((size_t)(count > 0 ? count : 1) * sizeof *taken);
    memset(taken, 0, (size_t)(count > 0 ? count : 1) * sizeof *taken);
    for (int i = 0; i < count; i++) {
        if (taken[i])
            continue;
        sl__report_variant *v = &report->variants[report->nvariants++];
        *v = (sl__report_variant){.first = report->nrows, .fastest = -1};
        for (int j = i; j < count; j++) {
            if (taken[j] || !same_variant(&records[i], &records[j]))
                continue;
            taken[j] = true;
            sl__report_row *row = &report->rows[report->nrows++];
            fill_row(row, &records[j], environments ? &environments[j] : NULL);
            v->nranked += row->ranked;
            v->nfolded += folded(row->record) && !row->ranked;
        }
        v->end = report->nrows;
        qsort(report->rows + v->first, (size_t)(v->end - v->first), sizeof *report->rows, compare_rows);
    }
    free(taken);
    for (int i = 0; i < report->nrows; i++)
        note_environment(report, &report->rows[i]);
    for (int k = 0; k < report->nvariants; k++)
        compare_within(report, &report->variants[k]);
    compare_with_peers(report);
}

void sl__report_free(sl__report *report)
{
    free(report->rows);
    free(report->variants);
    memset(report, 0, sizeof *report);
}

const char *sl__standing_name(sl__standing standing)
{
    switch (standing) {
    case SL__STANDING_FASTEST: return "fastest";
    case SL__STANDING_TIED: return "cannot tell from the fastest";
    case SL__STANDING_BEHIND: return "behind";
    default: return "-";
    }
}

/* Two decimals, or two significant digits below 0.1 (0.0071x, not 0.01x). */
static void format_factor(char *buf, size_t size, double value)
{
    snprintf(buf, size, value >= 0.1 ? "%.2f" : "%.2g", value);
}

void sl__format_ratio(char *buf, size_t size, const sl__report_ratio *r, bool with_interval)
{
    if (!r->has) {
        snprintf(buf, size, "-");
        return;
    }
    char ratio[32], lo[32], hi[32], interval[80] = "";
    format_factor(ratio, sizeof ratio, r->ratio.ratio);
    char rounds[96] = "";
    if (with_interval) {
        format_factor(lo, sizeof lo, r->ratio.lo);
        format_factor(hi, sizeof hi, r->ratio.hi);
        snprintf(interval, sizeof interval, " [%s, %s]", lo, hi);
        if (r->ratio.rounds > 1) {
            format_factor(lo, sizeof lo, r->ratio.round_lo);
            format_factor(hi, sizeof hi, r->ratio.round_hi);
            snprintf(rounds, sizeof rounds, ", %s %s to %s", r->interleaved ? "rounds" : "repetitions", lo, hi);
        }
    }
    snprintf(buf, size, r->unranked ? "(%sx)%s %s%s" : "%sx%s %s%s", ratio, interval, sl_ratio_call_name(r->ratio.call),
             rounds);
}

void sl__format_device_runs(char *buf, size_t size, const sl_record *r)
{
    buf[0] = '\0';
    if (!r->device_name[0] || r->device_allocated_peak_bytes < 0)
        return;
    size_t used = (size_t)snprintf(buf, size, "device memory %.1f MiB at peak",
                                   (double)r->device_allocated_peak_bytes / 1048576.0);
    if (used >= size || !r->device_source[0])
        return;
    if (strcmp(r->device_source, "resident") == 0)
        snprintf(buf + used, size - used, "; source resident, placed in %.1f ms",
                 (double)r->device_source_setup_ns / 1e6);
    else
        snprintf(buf + used, size - used, "; source %s", r->device_source);
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

void sl__report_folded_line(const sl__report *report, const sl__report_variant *v, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    int start = v->end - v->nfolded;
    bool *done = sl__cli_alloc((size_t)(v->nfolded > 0 ? v->nfolded : 1) * sizeof *done);
    memset(done, 0, (size_t)(v->nfolded > 0 ? v->nfolded : 1) * sizeof *done);
    /* One phrase per outcome and reason, naming every adapter it covers. */
    for (int i = start; i < v->end && used < size; i++) {
        if (done[i - start])
            continue;
        const sl_record *r = report->rows[i].record;
        used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "; " : "not run here: ", r->adapter);
        for (int j = i + 1; j < v->end && used < size; j++) {
            const sl_record *o = report->rows[j].record;
            if (!done[j - start] && o->outcome == r->outcome && strcmp(o->reason, r->reason) == 0) {
                done[j - start] = true;
                used += (size_t)snprintf(buf + used, size - used, ", %s", o->adapter);
            }
        }
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, " (%s: %s)", sl_record_outcome_name(r->outcome),
                                     r->reason[0] ? r->reason : "no reason given");
    }
    free(done);
}

void sl__write_environment(FILE *out, const sl_environment *env, bool html)
{
    void (*escape)(FILE *, const char *) = html ? sl__html_escape : sl__markdown_escape;
    const char *open = html ? "<li>" : "- ", *close = html ? "</li>" : "\n";
    fputs(html ? "<ul>" : "", out);
    fprintf(out, "%sCPU: ", open);
    escape(out, env->cpu_model);
    fprintf(out, " (%d logical CPUs)%s%scompiler: ", env->cpu_cores, close, open);
    escape(out, env->compiler);
    fputs(", ", out);
    escape(out, env->compile_flags);
    fprintf(out, "%s%scommit: ", close, open);
    escape(out, env->git_commit);
    fprintf(out, "%s%skernel: ", close, open);
    escape(out, env->kernel);
    fprintf(out, "%s%slibraries: ", close, open);
    escape(out, env->library_versions);
    fprintf(out, "%s%stime (UTC): ", close, open);
    escape(out, env->time_utc);
    fprintf(out, "%s%s", close, html ? "</ul>\n" : "\n");
}

const char *sl__adapter_colour(const char *adapter)
{
    /* sluice's own adapters have fixed colours; any other name (a peer)
     * takes one of the palette by a digest of its name. Neither depends on
     * the adapter's rank, so an adapter is the same colour in every chart,
     * table and report. */
    static const struct {
        const char *name, *colour;
    } own[] = {
        {"reference", "#7f7f7f"},   {"iter", "#1f77b4"}, {"fused", "#2ca02c"},
        {"per-element", "#ff7f0e"}, {"cuda", "#d62728"}, {"cuda-graph", "#9467bd"},
    };
    static const char *const palette[] = {"#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79", "#637939",
                                          "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strcmp(adapter, own[i].name) == 0)
            return own[i].colour;
    /* FNV-1a: fixed, and nothing about the run enters it. */
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)adapter; *c; c++)
        h = (h ^ *c) * 16777619u;
    return palette[h % (sizeof palette / sizeof *palette)];
}
