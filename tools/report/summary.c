/* The bench summary (summary.h): a view of the comparison model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "summary.h"

static int64_t *copy_i64(const int64_t *values, size_t n)
{
    if (!values || n == 0)
        return NULL;
    int64_t *copy = sl__cli_alloc(n * sizeof *copy);
    memcpy(copy, values, n * sizeof *copy);
    return copy;
}

void sl__summary_add(sl__summary *s, const sl_record *record, const sl_environment *env)
{
    if (s->count == s->capacity) {
        s->capacity = s->capacity > 0 ? 2 * s->capacity : 32;
        sl_record *records = realloc(s->records, (size_t)s->capacity * sizeof *records);
        sl_environment *envs = realloc(s->environments, (size_t)s->capacity * sizeof *envs);
        if (!records || !envs) {
            fputs("sluice: out of memory\n", stderr);
            exit(SL__EXIT_FAILED);
        }
        s->records = records;
        s->environments = envs;
    }
    sl_record *copy = &s->records[s->count];
    *copy = *record;
    size_t measured = record->measured_batches > 0 ? (size_t)record->measured_batches : 0;
    size_t reps = record->repetitions > 0 ? (size_t)record->repetitions : 0;
    copy->latency_ns = copy_i64(record->latency_ns, measured);
    copy->samples_ns = copy_i64(record->samples_ns, measured * reps);
    if (env)
        s->environments[s->count] = *env;
    else
        memset(&s->environments[s->count], 0, sizeof s->environments[s->count]);
    s->count++;
    s->failed += record->outcome == SL_RECORD_FAILED;
    s->mismatched += record->outcome == SL_RECORD_MISMATCH;
}

void sl__summary_free(sl__summary *s)
{
    for (int i = 0; i < s->count; i++)
        sl_record_release(&s->records[i]);
    free(s->records);
    free(s->environments);
    memset(s, 0, sizeof *s);
}

const double *sl__find_metric(const sl_record *record, const char *name)
{
    for (int i = 0; i < record->nmetrics; i++)
        if (strcmp(record->metrics[i].name, name) == 0)
            return &record->metrics[i].value;
    return NULL;
}

static void format_fixed(char *buf, size_t size, double value, double scale, int decimals, const char *suffix)
{
    if (!isfinite(value))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.*f%s", decimals, value * scale, suffix);
}

static void format_metric(char *buf, size_t size, const sl_record *record, const char *name)
{
    const double *value = sl__find_metric(record, name);
    format_fixed(buf, size, value ? *value : NAN, 1.0, 2, "");
}

/* The note of a row: why it did not run or was not ranked, the back end it
 * ran on when that is not the profile's, or why its figure is noisy. */
static void row_note(const sl__report_row *row, char *buf, size_t size)
{
    const sl_record *r = row->record;
    buf[0] = '\0';
    if (r->outcome != SL_RECORD_OK) {
        snprintf(buf, size, "%s", r->reason);
        return;
    }
    size_t used = 0;
    /* A peer's note (a hand-over, a slow exit) says why a row is not ranked
     * or what else to know. */
    if (r->note[0])
        used += (size_t)snprintf(buf, size, "%s", r->note);
    /* A run on another back end than the profile asks for is legitimate (the
     * gpu profile still measures the CPU adapters) but must not pass
     * unnoticed in a table read for GPU numbers. */
    if (strcmp(r->backend_active, r->backend_requested) != 0 && used < size)
        used += (size_t)snprintf(buf + used, size - used, "%sran on %s; the %s profile asks for %s", used ? "; " : "",
                                 r->backend_active, r->profile, r->backend_requested);
    /* The terminal's short form of sl_throughput_noise_reason (the record
     * and the report hold the long one); how busy the machine was is said
     * once, under the table. */
    if (row->ranked && row->t.wide && used < size)
        used += (size_t)snprintf(buf + used, size - used, "%snoisy: interval ±%.1f%%", used ? "; " : "",
                                 100.0 * (row->t.hi_ns - row->t.lo_ns) / 2.0 / row->t.median_ns);
    /* Above 1 on one thread the hardware bound was no bound: the record
     * flags the probe, and the row says so rather than show a result. */
    if (sl__find_metric(r, "hardware_bound_defect") && used < size)
        used += (size_t)snprintf(buf + used, size - used, "%shw bound above 1: probe defect", used ? "; " : "");
    if (row->ranked && row->t.skewed && used < size)
        used += (size_t)snprintf(buf + used, size - used, "%s mean %+.0f%% of median%s",
                                 row->t.wide ? ","
                                 : used      ? "; noisy:"
                                             : "noisy:",
                                 100.0 * (row->t.mean_ns / row->t.median_ns - 1.0),
                                 row->t.mean_ns > row->t.median_ns ? " (stalls)" : "");
    /* A device row's memory and source path sit beside what the host held
     * (the record's peak_rss_bytes). */
    char device[160];
    sl__format_device_runs(device, sizeof device, r);
    if (device[0] && used < size)
        snprintf(buf + used, size - used, "%s%s", used ? "; " : "", device);
}

static void threads_cell(char *buf, size_t size, const sl_record *r)
{
    /* Several threads may split a batch, not must: the share that ran
     * split follows the count, so "2" is never read as "twice the cores". */
    const double *split = sl__find_metric(r, "split_fraction");
    if (split)
        snprintf(buf, size, "%lld (%.0f%%)", (long long)r->threads, 100.0 * *split);
    else
        snprintf(buf, size, "%lld", (long long)r->threads);
}

static void peer_cell(char *buf, size_t size, const sl__report_row *row)
{
    if (!row->vs_best_peer.has) {
        snprintf(buf, size, "-");
        return;
    }
    char ratio[96];
    sl__format_ratio(ratio, sizeof ratio, &row->vs_best_peer, false);
    snprintf(buf, size, "%s %s", ratio, row->vs_best_peer.other);
}

sl__table *sl__summary_table(const sl__summary *s)
{
    static const char *const headers[] = {
        "scenario", "variant",  "adapter", "outcome",      "verified",  "threads",     "elements/s",  "±95%", "mean/s",
        "p50 (µs)", "p99 (µs)", "vs ref",  "vs best peer", "of memcpy", "of roofline", "of hw bound", "note"};
    static const sl__align align[] = {SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__LEFT};
    sl__table *table = sl__table_new(17, headers, align);
    sl__report model;
    sl__report_build(s->records, s->environments, s->count, &model);
    for (int k = 0; k < model.nvariants; k++) {
        const sl__report_variant *v = &model.variants[k];
        for (int i = v->first; i < v->end - v->nfolded; i++) {
            const sl__report_row *row = &model.rows[i];
            const sl_record *r = row->record;
            char threads[32], rate[32] = "-", ci[16] = "-", mean[32] = "-", p50[32] = "-", p99[32] = "-";
            char ref[96], peer[160], memcpy_cell[32], roofline[32], bound[32], note[1024];
            char adapter[sizeof r->adapter + sizeof r->framework + sizeof r->timing + 8];
            threads_cell(threads, sizeof threads, r);
            if (row->ranked) {
                sl__format_rate(rate, sizeof rate, row->t.rate);
                /* Half the interval's width, as a fraction of the median. */
                format_fixed(ci, sizeof ci, (row->t.hi_ns - row->t.lo_ns) / 2.0 / row->t.median_ns, 100.0, 1, "%");
                sl__format_rate(mean, sizeof mean, row->t.mean_rate);
                format_fixed(p50, sizeof p50, row->t.median_ns, 1e-3, 1, "");
                format_fixed(p99, sizeof p99, row->p99_ns, 1e-3, 1, "");
            }
            if (row->ranked && strcmp(r->adapter, "reference") == 0)
                snprintf(ref, sizeof ref, "1.00x");
            else
                sl__format_ratio(ref, sizeof ref, &row->vs_reference, false);
            peer_cell(peer, sizeof peer, row);
            format_metric(memcpy_cell, sizeof memcpy_cell, r, "fraction_of_memcpy");
            format_metric(roofline, sizeof roofline, r, "fraction_of_roofline");
            format_metric(bound, sizeof bound, r, "fraction_of_hardware_bound");
            row_note(row, note, sizeof note);
            /* A peer says how its times read unless they are plain per-batch costs. */
            bool plain = !r->timing[0] || strcmp(r->timing, "per-batch") == 0;
            if (r->framework[0] && !plain)
                snprintf(adapter, sizeof adapter, "%s (%s; %s)", r->adapter, r->framework, r->timing);
            else
                snprintf(adapter, sizeof adapter, r->framework[0] ? "%s (%s)" : "%s", r->adapter, r->framework);
            const char *cells[] = {r->scenario,
                                   r->variant,
                                   adapter,
                                   sl_record_outcome_name(r->outcome),
                                   r->equivalence,
                                   threads,
                                   rate,
                                   ci,
                                   mean,
                                   p50,
                                   p99,
                                   ref,
                                   peer,
                                   memcpy_cell,
                                   roofline,
                                   bound,
                                   note};
            sl__table_add_row(table, cells);
        }
    }
    sl__report_free(&model);
    return table;
}

/* "checkpoint_bytes 179 B; checkpoint_save_ns 7.11e+05 ns": four
 * significant digits, since these figures range from fractions to bytes. */
static void format_scenario_metrics(const sl_record *record, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < record->nmetrics && used < size; i++) {
        const sl_record_metric *m = &record->metrics[i];
        if (m->scope != SL_METRIC_SCENARIO)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s %.4g%s%s", used ? "; " : "", m->name, m->value,
                                 m->unit[0] ? " " : "", m->unit);
    }
}

sl__table *sl__summary_metrics_table(const sl__summary *s)
{
    static const char *const headers[] = {"scenario", "variant", "adapter", "scenario metrics"};
    static const sl__align align[] = {SL__LEFT, SL__LEFT, SL__LEFT, SL__LEFT};
    sl__table *table = NULL;
    for (int i = 0; i < s->count; i++) {
        const sl_record *r = &s->records[i];
        char metrics[512];
        if (r->outcome != SL_RECORD_OK)
            continue;
        format_scenario_metrics(r, metrics, sizeof metrics);
        if (!metrics[0])
            continue;
        if (!table)
            table = sl__table_new(4, headers, align);
        const char *cells[] = {r->scenario, r->variant, r->adapter, metrics};
        sl__table_add_row(table, cells);
    }
    return table;
}

/* The adapters that did not run here, one line per outcome and reason
 * across every variant: an adapter missing everywhere (cuda without a GPU)
 * is one line, not a row per scenario. */
static void not_run_lines(const sl__summary *s, FILE *out, const char *prefix)
{
    int variants = 0;
    for (int i = 0; i < s->count; i++) {
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = strcmp(s->records[j].scenario, s->records[i].scenario) != 0 ||
                    strcmp(s->records[j].variant, s->records[i].variant) != 0;
        variants += first;
    }
    bool *done = sl__cli_alloc((size_t)(s->count > 0 ? s->count : 1) * sizeof *done);
    memset(done, 0, (size_t)(s->count > 0 ? s->count : 1) * sizeof *done);
    for (int i = 0; i < s->count; i++) {
        const sl_record *r = &s->records[i];
        bool skip =
            r->outcome != SL_RECORD_UNAVAILABLE && r->outcome != SL_RECORD_EXCLUDED && r->outcome != SL_RECORD_SKIPPED;
        if (done[i] || skip)
            continue;
        /* Every adapter with the same outcome and reason, and the variants
         * the first of them was left out of. */
        char adapters[512] = "", where[1024] = "";
        size_t na = 0, nw = 0;
        int count = 0;
        for (int j = i; j < s->count; j++) {
            const sl_record *o = &s->records[j];
            if (done[j] || o->outcome != r->outcome || strcmp(o->reason, r->reason) != 0)
                continue;
            done[j] = true;
            if (!strstr(adapters, o->adapter) && na < sizeof adapters)
                na += (size_t)snprintf(adapters + na, sizeof adapters - na, "%s%s", na ? ", " : "", o->adapter);
            if (strcmp(o->adapter, r->adapter) == 0) {
                count++;
                if (nw < sizeof where)
                    nw += (size_t)snprintf(where + nw, sizeof where - nw, "%s%s/%s", nw ? ", " : "", o->scenario,
                                           o->variant);
            }
        }
        fprintf(out, "%s%s: %s on %s (%s)\n", prefix, adapters, sl_record_outcome_name(r->outcome),
                count == variants && variants > 1 ? "every variant" : where, r->reason);
    }
    free(done);
}

void sl__summary_notes(const sl__summary *s, FILE *out, const char *prefix)
{
    not_run_lines(s, out, prefix);
    sl__report model;
    sl__report_build(s->records, s->environments, s->count, &model);
    int ranked = 0;
    for (int i = 0; i < model.nrows; i++)
        ranked += model.rows[i].ranked;
    if (model.nbusy > 0)
        fprintf(out,
                "%sthe machine was too busy to rank %d of %d runs (load average up to %.1f on %d CPUs, steal up to "
                "%.0f%%, runs waiting for a CPU up to %.0f%% of their time): their figures say how fast it was then, "
                "and their ratios may say more about the machine "
                "than the code; rerun on a quieter machine, or with --rounds so that every adapter meets the same "
                "load\n",
                prefix, model.nbusy, ranked, model.busiest_load,
                model.environments[0] ? model.environments[0]->cpu_cores : 0,
                model.most_steal > 0.0 ? 100.0 * model.most_steal : 0.0,
                model.most_wait > 0.0 ? 100.0 * model.most_wait : 0.0);
    sl__report_free(&model);
}

void sl__summary_variant_line(const sl__summary *s, const char *scenario, const char *variant, char *buf, size_t size)
{
    sl__report model;
    sl__report_build(s->records, s->environments, s->count, &model);
    size_t used = (size_t)snprintf(buf, size, "%s/%s:", scenario, variant);
    for (int k = 0; k < model.nvariants; k++) {
        const sl__report_variant *v = &model.variants[k];
        const sl_record *r0 = model.rows[v->first].record;
        if (strcmp(r0->scenario, scenario) != 0 || strcmp(r0->variant, variant) != 0)
            continue;
        if (v->nranked == 0 && used < size)
            used += (size_t)snprintf(buf + used, size - used, " no adapter ran ok");
        for (int i = v->first; i < v->first + v->nranked && used < size; i++) {
            const sl__report_row *row = &model.rows[i];
            char rate[32];
            sl__format_rate(rate, sizeof rate, row->t.rate);
            used += (size_t)snprintf(buf + used, size - used, "%s %s %s/s%s", i == v->first ? "" : ";",
                                     row->record->adapter, rate, row->t.noisy ? " (noisy)" : "");
            if (i == v->fastest && row->vs_best.has && used < size) {
                char ratio[96];
                sl__format_ratio(ratio, sizeof ratio, &row->vs_best, false);
                used += (size_t)snprintf(buf + used, size - used, ", %s over %s", ratio, row->vs_best.other);
            }
        }
        int failed = v->end - v->nfolded - v->first - v->nranked;
        if (failed > 0 && used < size)
            used += (size_t)snprintf(buf + used, size - used, "; %d not ranked (failed or mismatched)", failed);
    }
    sl__report_free(&model);
}

const char sl__summary_legend[] =
    "elements/s is the headline figure: elements per second at the median batch time over every\n"
    "repetition's measured batches (docs/records.md, \"The headline figure\"); '±95%' is half the width\n"
    "of the median's 95% order-statistic interval, as a fraction of it; 'mean/s' is elements per second\n"
    "at the mean batch time, shown beside it because a gap between the two is how stalls show. A row\n"
    "is noisy when its interval is wider than 10% of its median or its mean and median disagree by\n"
    "more than 10%: its note says which, and its ratios are in parentheses (shown, not ranked). p50 is\n"
    "that median batch time, p99 the kept repetition's 99th percentile. Rows are fastest first within\n"
    "each variant. 'vs ref' is elements/s over the reference adapter's on the same variant and 'vs best\n"
    "peer' over the fastest equivalent peer's (a peer:<name> row that ran ok and is bitwise, within a\n"
    "tolerance or statistically equivalent; named), each with its call: win when the whole 95%\n"
    "interval of the ratio (a bootstrap of the ratio of medians, widened to cover every per-round\n"
    "ratio) is above 1, loss when below, cannot tell otherwise. 'of memcpy' is output bytes/s over\n"
    "plain memcpy bandwidth for blocks of one batch's size; 'of roofline' is elements/s over the\n"
    "roofline probe's (the scenario's op chain on one cache-resident batch, one fused thread, with the\n"
    "fastest of the run's and every optimized kernel table); 'of hw bound' is the hardware bound over\n"
    "the p50, the larger of just fetching the batch's source bytes (the gather probe, also in records\n"
    "as fraction_of_gather) and just storing its output bytes (not their sum: the gather probe stores\n"
    "what it fetches, and a core overlaps stores with loads); above 1 on one thread it is a probe\n"
    "defect, noted. 'threads' is how many threads may split each batch, "
    "with the share\n"
    "of measured batches that ran split in parentheses. 'verified' is how the output was held to the\n"
    "reference (bitwise, within a tolerance, statistical, mismatch). A peer's adapter is followed by\n"
    "its framework and version. Adapters that did not run here are listed under the table, one line\n"
    "per reason.\n";

void sl__summary_print(const sl__summary *s, FILE *out)
{
    sl__table *table = sl__summary_table(s);
    sl__table *metrics = sl__summary_metrics_table(s);
    sl__table_print(table, out, 0);
    if (metrics) {
        fputc('\n', out);
        sl__table_print(metrics, out, 0);
        sl__table_free(metrics);
    }
    sl__table *throughput = sl__throughput_table(s->records, s->count);
    if (throughput) {
        fputs("\nAll at once (compared by throughput, never per batch):\n", out);
        sl__table_print(throughput, out, 0);
        sl__table_free(throughput);
    }
    fputc('\n', out);
    sl__summary_notes(s, out, "");
    sl__table_free(table);
}

bool sl__summary_write_markdown(const sl__summary *s, const char *command, const char *title, int argc, char **argv,
                                const char *path)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (out == NULL) {
        sl__cli_error(command, "cannot build %s: out of memory", path);
        return false;
    }
    /* How the numbers were taken, so that a file found later can be read
     * without the terminal session that made it. */
    fprintf(out, "# %s\n\n", title);
    fputs("- command: `sluice", out);
    for (int i = 0; i < argc; i++)
        fprintf(out, strpbrk(argv[i], " \t'\"") != NULL ? " '%s'" : " %s", argv[i]);
    fputs("`\n", out);
    if (s->count > 0)
        sl__write_environment(out, &s->environments[0], false);
    sl__table *table = sl__summary_table(s);
    sl__table_print_markdown(table, out);
    sl__table_free(table);
    fputc('\n', out);
    /* The notes are sluice's own sentences, with record strings inside;
     * each line is escaped whole. */
    char *notes = NULL;
    size_t notes_size = 0;
    FILE *nf = open_memstream(&notes, &notes_size);
    if (nf) {
        sl__summary_notes(s, nf, "");
        fclose(nf);
        for (char *line = strtok(notes, "\n"); line; line = strtok(NULL, "\n")) {
            fputs("- ", out);
            sl__markdown_escape(out, line);
            fputc('\n', out);
        }
        free(notes);
    }
    fputc('\n', out);
    fputs(sl__summary_legend, out);
    sl__table *metrics = sl__summary_metrics_table(s);
    if (metrics) {
        fputs("\n## Scenario metrics\n\nEach scenario's own figures (docs/scenarios.md lists them):\n\n", out);
        sl__table_print_markdown(metrics, out);
        sl__table_free(metrics);
    }
    fclose(out);
    sl_err err = {0};
    bool ok = sl_write_file_atomic(path, text, size, &err) == SL_OK;
    if (!ok)
        sl__cli_error(command, "%s", err.msg);
    free(text);
    return ok;
}
