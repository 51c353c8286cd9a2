/* `sluice report RECORDS_DIR`: a comparison report from a folder of records,
 * as Markdown (report.md) and as one self-contained HTML page with gnuplot
 * charts (report.html). It opens with who won each scenario, by how much
 * and how surely, then shows each variant's adapters fastest first.
 * docs/report.md says how to read it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

typedef struct report_args {
    const char *records;
    const char *output;
    double step_ms;
} report_args;

static void read_step_ms(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)option;
    report_args *a = args;
    char *end = NULL;
    a->step_ms = strtod(value, &end);
    if (end == value || *end != '\0' || !(a->step_ms > 0.0 && a->step_ms < 1e6))
        sl__cli_usage_error(cli, "option --step-ms: '%s' is not a step time in milliseconds", value);
}

static const sl__option report_options[] = {
    {.name = "--output",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(report_args, output),
     .help = "where the report goes (default RECORDS_DIR)"},
    {.name = "--step-ms",
     .arg = "T",
     .kind = SL__OPTION_CUSTOM,
     .handle = read_step_ms,
     .help = "add the input-pipeline verdict: does the loader, at its\n"
             "measured p99 batch time, keep an accelerator step of T ms fed?"},
};

const sl__command_spec sl__report_spec = {
    .name = "report",
    .synopsis = "sluice report RECORDS_DIR [options]",
    .about = "Reads every record in RECORDS_DIR (e.g. records/ci) and writes report.md and\n"
             "report.html. They open with a winners table: per scenario variant, the fastest\n"
             "verified adapter, its lead over the runner-up with the ratio's 95% interval, and\n"
             "whether that lead is real (win) or the data cannot tell, and where peers ran,\n"
             "sluice's fastest adapter over the best peer. Then an overview chart\n"
             "of each variant's fastest adapter against the reference, and per variant every\n"
             "adapter fastest first: elements/s at the median batch time with its interval and\n"
             "the mean beside it, the ratios to the fastest, the reference and the best\n"
             "equivalent peer, whether its output was verified, and charts of the rates and of\n"
             "the batch times. Adapters that did not run here are folded into one line.",
    .options = report_options,
    .noptions = SL__COUNT(report_options),
    .epilogue = "exit status: 0 when the report was written from every record; 1 when a record\n"
                "could not be read (the report is still written from the others) or the report\n"
                "could not be written; 2 for a bad command line.",
    SL__OPERAND(report_args, records),
};

static void report_bad_file(const char *message, void *user)
{
    int *bad = user;
    (*bad)++;
    sl__cli_error("report", "%s (left out of the report)", message);
}

/* Scenario ids are CATEGORY-N: the category groups the report's sections. */
static void category_of(const char *scenario, char *buf, size_t size)
{
    size_t n = strcspn(scenario, "-");
    snprintf(buf, size, "%.*s", (int)n, scenario);
}

/* An HTML id for a variant's section: letters, digits and '-' only. */
static void anchor_of(const sl_record *r, char *buf, size_t size)
{
    snprintf(buf, size, "v-%s-%s", r->scenario, r->variant);
    for (char *c = buf; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
            *c = '-';
}

/* Text in both documents: escaped for each. */
typedef struct outputs {
    FILE *md, *html;
} outputs;

static void both(const outputs *o, const char *text)
{
    sl__markdown_escape(o->md, text);
    sl__html_escape(o->html, text);
}

/* --- the winners ------------------------------------------------------------------ */

/* Whether the fastest row's lead over the runner-up is real: the whole
 * interval of the ratio above 1, and neither row noisy. */
static const char *lead_verdict(const sl__report_row *fastest)
{
    if (!fastest->vs_best.has)
        return "no runner-up";
    if (fastest->vs_best.ratio.call != SL_RATIO_WIN)
        return "cannot tell";
    return fastest->vs_best.unranked ? "win, but a side is noisy" : "yes";
}

/* The variant's fastest ranked row of sluice's own adapters (not a peer's),
 * or -1. */
static int fastest_own_row(const sl__report *report, const sl__report_variant *v)
{
    for (int i = v->first; i < v->first + v->nranked; i++)
        if (strncmp(report->rows[i].record->adapter, "peer:", 5) != 0)
            return i;
    return -1;
}

/* Where peers ran: sluice's fastest adapter over the fastest equivalent
 * peer, with the ratio's interval and call and both names, so that the
 * winners compare sluice with the loaders its users know whichever row
 * is the runner-up; "-" where no peer ran. */
static void own_vs_peer(char *buf, size_t size, const sl__report *report, const sl__report_variant *v)
{
    int own = fastest_own_row(report, v);
    snprintf(buf, size, "-");
    if (own < 0 || !report->rows[own].vs_best_peer.has)
        return;
    const sl__report_row *row = &report->rows[own];
    char ratio[96];
    sl__format_ratio(ratio, sizeof ratio, &row->vs_best_peer, true);
    snprintf(buf, size, "%s: %s over %s", row->record->adapter, ratio, row->vs_best_peer.other);
}

static sl__table *winners_table(const sl__report *report, const char **colours)
{
    /* The answer first, so that it is what a narrow screen shows. */
    static const char *const headers[] = {"variant",   "fastest (verified)", "lead is real", "lead (95% interval)",
                                          "runner-up", "elements/s",         "vs reference", "sluice vs best peer"};
    static const sl__align align[] = {SL__LEFT, SL__LEFT,  SL__LEFT,  SL__RIGHT,
                                      SL__LEFT, SL__RIGHT, SL__RIGHT, SL__LEFT};
    sl__table *table = sl__table_new(8, headers, align);
    for (int k = 0; k < report->nvariants; k++) {
        const sl__report_variant *v = &report->variants[k];
        const sl_record *first = report->rows[v->first].record;
        char variant[64], rate[32] = "-", lead[96] = "-", ref[96] = "-", peer[256];
        const char *winner = "no adapter ran ok", *runner = "-", *real = "-";
        colours[k] = NULL;
        snprintf(variant, sizeof variant, "%s / %s", first->scenario, first->variant);
        if (v->fastest >= 0) {
            const sl__report_row *row = &report->rows[v->fastest];
            winner = row->record->adapter;
            colours[k] = sl__adapter_colour(winner);
            sl__format_rate(rate, sizeof rate, row->t.rate);
            if (row->vs_best.has) {
                /* The lead's own figures: its call is the next column. */
                sl__report_ratio plain = row->vs_best;
                plain.unranked = false;
                runner = row->vs_best.other;
                sl__format_ratio(lead, sizeof lead, &plain, true);
                lead[strcspn(lead, "]") + 1] = '\0';
            }
            real = lead_verdict(row);
            if (strcmp(row->record->adapter, "reference") == 0)
                snprintf(ref, sizeof ref, "1.00x");
            else
                sl__format_ratio(ref, sizeof ref, &row->vs_reference, false);
        }
        own_vs_peer(peer, sizeof peer, report, v);
        const char *cells[] = {variant, winner, real, lead, runner, rate, ref, peer};
        sl__table_add_row(table, cells);
    }
    return table;
}

/* --- a variant's table -------------------------------------------------------------- */

/* The MaxText rule of thumb: the input pipeline keeps the step fed when its
 * slowest ordinary batch (p99) is ready within a step. The p99 it judged is
 * printed beside the verdict. */
static void step_verdict(char *buf, size_t size, const sl__report_row *row, double step_ms)
{
    if (step_ms <= 0.0 || !row->ranked || !(row->p99_ns > 0.0)) {
        snprintf(buf, size, "-");
        return;
    }
    double margin = step_ms * 1e6 / row->p99_ns;
    snprintf(buf, size, "%s (p99 %.3g ms, %.1fx margin)", margin >= 1.0 ? "keeps up" : "STALLS the step",
             row->p99_ns / 1e6, margin);
}

/* The standing is the row's colour (its CSS class): fastest, tied (the
 * data cannot tell it from the fastest), behind; or, for a row without a
 * rankable speed, its outcome. */
static const char *standing_of(const sl__report_row *row)
{
    if (row->standing == SL__STANDING_TIED)
        return "tied";
    if (row->ranked)
        return sl__standing_name(row->standing);
    return row->record->outcome == SL_RECORD_OK ? "not verified" : sl_record_outcome_name(row->record->outcome);
}

#define STANDING_COLUMN 1

/* Where a row ran: the device a device row was verified and timed on (its
 * name, compute capability, driver and runtime from the record's device
 * object), else the CPU; then the back end asked for when another one ran.
 * Device and CPU rows sit in one table with the same statistics, so this
 * is what tells them apart. */
static void ran_on(char *buf, size_t size, const sl__report_row *row)
{
    const sl_record *r = row->record;
    size_t used;
    if (r->device_name[0])
        used = (size_t)snprintf(buf, size, "%s: %s (compute %s, driver %s, runtime %s)", r->backend_active,
                                r->device_name, r->device_compute_capability, r->device_driver, r->device_runtime);
    else
        used = (size_t)snprintf(buf, size, "%s: %s", r->backend_active[0] ? r->backend_active : "cpu",
                                row->env ? row->env->cpu_model : "an unknown CPU");
    if (used < size && r->backend_requested[0] && strcmp(r->backend_requested, r->backend_active) != 0)
        snprintf(buf + used, size - used, "; %s was asked for", r->backend_requested);
}

/* A variant's table, built whole and then made to fit a narrow page: a
 * column no row fills ("-" throughout: no peers, no --step-ms) is dropped,
 * a column every row shares (verified, ran on) becomes one line under the
 * table, and the notes (why a row is noisy, an outcome's reason), the
 * widest cells, are lines under the table too. What is left is at most
 * VARIANT_MAX_COLUMNS columns of short cells that wrap, so that the table
 * fits 800 px without scrolling (docs/report.md). */
enum {
    COL_ADAPTER,
    COL_STANDING,
    COL_RATE,
    COL_INTERVAL,
    COL_VS_FASTEST,
    COL_VS_REFERENCE,
    COL_VS_PEER,
    COL_MEAN,
    COL_P50,
    COL_P99,
    COL_VERIFIED,
    COL_RAN_ON,
    COL_STEP,
    COL_NOTE,
    VARIANT_COLUMNS
};

typedef struct variant_view {
    sl__table *table;
    int nrows;
    const char *colours[64]; /* each row's adapter colour */
    char under[4096];        /* the lines under the table, '\n' between */
} variant_view;

static bool column_empty(char *cells[][VARIANT_COLUMNS], int nrows, int c)
{
    for (int i = 0; i < nrows; i++)
        if (cells[i][c][0] && strcmp(cells[i][c], "-") != 0)
            return false;
    return true;
}

static bool column_constant(char *cells[][VARIANT_COLUMNS], int nrows, int c)
{
    for (int i = 1; i < nrows; i++)
        if (strcmp(cells[i][c], cells[0][c]) != 0)
            return false;
    return nrows > 0;
}

static void add_line(variant_view *view, const char *line)
{
    size_t used = strlen(view->under);
    snprintf(view->under + used, sizeof view->under - used, "%s%s", used ? "\n" : "", line);
}

static void variant_table(const sl__report *report, const sl__report_variant *v, double step_ms, variant_view *view)
{
    static const char *const headers[VARIANT_COLUMNS] = {
        "adapter", "standing", "elements/s", "95% interval", "vs fastest", "vs reference", "vs best peer",
        "mean/s",  "p50 (µs)", "p99 (µs)",   "verified",     "ran on",     "step verdict", "note"};
    static const sl__align align[VARIANT_COLUMNS] = {SL__LEFT,  SL__LEFT,  SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                                     SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                                     SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__LEFT};
    memset(view, 0, sizeof *view);
    int nrows = v->end - v->nfolded - v->first;
    if (nrows > (int)(sizeof view->colours / sizeof *view->colours))
        nrows = (int)(sizeof view->colours / sizeof *view->colours);
    char *(*cells)[VARIANT_COLUMNS] = sl__cli_alloc((size_t)(nrows ? nrows : 1) * sizeof *cells);
    for (int k = 0; k < nrows; k++) {
        int i = v->first + k;
        const sl__report_row *row = &report->rows[i];
        const sl_record *r = row->record;
        char adapter[sizeof r->adapter + sizeof r->framework + 4];
        char rate[32] = "-", lo[32], hi[32], interval[80] = "-", mean[32] = "-", p50[32] = "-", p99[32] = "-";
        char best[128] = "-", ref[96] = "-", peer[160] = "-", step[96], note[768], where[384];
        /* A peer's framework and version follow its name. */
        snprintf(adapter, sizeof adapter, r->framework[0] ? "%s (%s)" : "%s", r->adapter, r->framework);
        if (row->ranked) {
            sl__format_rate(rate, sizeof rate, row->t.rate);
            sl__format_rate(lo, sizeof lo, row->t.rate_lo);
            sl__format_rate(hi, sizeof hi, row->t.rate_hi);
            snprintf(interval, sizeof interval, "%s to %s", lo, hi);
            sl__format_rate(mean, sizeof mean, row->t.mean_rate);
            snprintf(p50, sizeof p50, "%.1f", row->t.median_ns / 1e3);
            if (isfinite(row->p99_ns))
                snprintf(p99, sizeof p99, "%.1f", row->p99_ns / 1e3);
            if (i == v->fastest)
                snprintf(best, sizeof best, "1.00x");
            else
                sl__format_ratio(best, sizeof best, &row->vs_best, true);
            if (strcmp(r->adapter, "reference") == 0)
                snprintf(ref, sizeof ref, "1.00x");
            else
                sl__format_ratio(ref, sizeof ref, &row->vs_reference, true);
            if (row->vs_best_peer.has) {
                char ratio[96];
                sl__format_ratio(ratio, sizeof ratio, &row->vs_best_peer, true);
                snprintf(peer, sizeof peer, "%s %s", ratio, row->vs_best_peer.other);
            }
        }
        step_verdict(step, sizeof step, row, step_ms);
        ran_on(where, sizeof where, row);
        if (row->ranked && row->t.noisy) {
            char why[600];
            sl_throughput_noise_reason(&row->t, why, sizeof why);
            snprintf(note, sizeof note, "noisy: %s", why);
        } else {
            snprintf(note, sizeof note, "%s", r->reason);
        }
        char device[160];
        sl__format_device_runs(device, sizeof device, r);
        if (device[0]) {
            size_t used = strlen(note);
            snprintf(note + used, sizeof note - used, "%s%s", used ? "; " : "", device);
        }
        const char *texts[VARIANT_COLUMNS] = {adapter, standing_of(row), rate,  interval, best, ref, peer, mean, p50,
                                              p99,     r->equivalence,   where, step,     note};
        for (int c = 0; c < VARIANT_COLUMNS; c++)
            cells[k][c] = sl__cli_strdup(texts[c]);
        view->colours[k] = sl__adapter_colour(r->adapter);
    }
    bool keep[VARIANT_COLUMNS];
    int nkept = 0;
    for (int c = 0; c < VARIANT_COLUMNS; c++) {
        keep[c] = c == COL_ADAPTER || c == COL_STANDING || !column_empty(cells, nrows, c);
        if (keep[c] && c == COL_VERIFIED && column_constant(cells, nrows, c)) {
            char line[512];
            snprintf(line, sizeof line, "verified: %s, every row.", cells[0][c]);
            add_line(view, line);
            keep[c] = false;
        }
        if (keep[c] && c == COL_RAN_ON) {
            /* Where every row ran, once; the records' times then go with
             * it. When rows ran on different devices, each says its own,
             * with its time. */
            if (column_constant(cells, nrows, c)) {
                char line[512];
                snprintf(line, sizeof line, "ran on %s, every row.", cells[0][c]);
                add_line(view, line);
                keep[c] = false;
            } else {
                for (int k = 0; k < nrows; k++) {
                    const sl__report_row *row = &report->rows[v->first + k];
                    if (row->env && row->env->time_utc[0]) {
                        char with_time[512];
                        snprintf(with_time, sizeof with_time, "%s; %s", cells[k][c], row->env->time_utc);
                        free(cells[k][c]);
                        cells[k][c] = sl__cli_strdup(with_time);
                    }
                }
            }
        }
        if (c == COL_NOTE) {
            for (int k = 0; keep[c] && k < nrows; k++) {
                if (!cells[k][c][0])
                    continue;
                char line[1024];
                snprintf(line, sizeof line, "%s: %s", cells[k][COL_ADAPTER], cells[k][c]);
                add_line(view, line);
            }
            keep[c] = false;
        }
        nkept += keep[c];
    }
    const char *kept_headers[VARIANT_COLUMNS];
    sl__align kept_align[VARIANT_COLUMNS];
    int n = 0;
    for (int c = 0; c < VARIANT_COLUMNS; c++)
        if (keep[c]) {
            kept_headers[n] = headers[c];
            kept_align[n++] = align[c];
        }
    view->table = sl__table_new(nkept, kept_headers, kept_align);
    for (int k = 0; k < nrows; k++) {
        const char *kept_cells[VARIANT_COLUMNS];
        n = 0;
        for (int c = 0; c < VARIANT_COLUMNS; c++)
            if (keep[c])
                kept_cells[n++] = cells[k][c];
        sl__table_add_row(view->table, kept_cells);
        for (int c = 0; c < VARIANT_COLUMNS; c++)
            free(cells[k][c]);
    }
    free(cells);
    view->nrows = nrows;
}

/* --- the page ------------------------------------------------------------------------- */

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>sluice report</title>\n"
    "<style>\n"
    "body{font-family:system-ui,sans-serif;margin:1em auto;max-width:90em;padding:0 1em;color:#222;line-height:1.4}\n"
    ".scroll{overflow-x:auto;margin:0.5em 0 1.2em;max-width:100%}\n"
    "table{border-collapse:collapse}\n"
    /* Cells wrap at spaces (a number or a word is never cut): with the
     * constant, empty and note columns moved under the table, no table is
     * wider than the page at 800 px (ci/report-screenshots.sh measures it
     * in a browser). */
    "th,td{border:1px solid #ccc;padding:0.2em 0.4em;font-size:0.9em;white-space:normal;overflow-wrap:break-word;"
    "vertical-align:top}\n"
    ".swatch{display:inline-block;width:0.8em;height:0.8em;margin-right:0.3em;border-radius:2px;"
    "vertical-align:baseline}\n"
    "ul.under{margin:-0.6em 0 1.2em;padding-left:1.2em;font-size:0.85em;color:#444}\n"
    "dl.legend{font-size:0.85em;color:#444}dl.legend dt{font-weight:bold;float:left;clear:left;margin-right:0.4em}"
    "dl.legend dd{margin:0 0 0.2em 0}\n"
    "th{background:#f0f0f0;position:sticky;top:0}td.r{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".fastest{background:#d8f5d8}.tied{background:#eef8e4}.mismatch,.failed{background:#fbd3d3}\n"
    ".warn{color:#a00}.folded{color:#555;font-size:0.9em}\n"
    ".chart{width:100%;max-width:64em}.chart svg{width:100%;height:auto}\n"
    "@media (max-width:700px){body{padding:0 0.4em}th,td{font-size:0.8em}}\n"
    "</style>\n</head>\n<body>\n";

static void write_environment(FILE *out, const sl__report *report, bool html)
{
    for (int e = 0; e < report->nenvironments; e++)
        sl__write_environment(out, report->environments[e], html);
}

static void write_lede(const report_args *args, const sl__report *report, const outputs *o)
{
    fputs("Records: `", o->md);
    sl__markdown_escape(o->md, args->records);
    fputs("<p>Records: <code>", o->html);
    sl__html_escape(o->html, args->records);
    static const char lede[] =
        "Every speed is the headline figure: elements per second at the median batch time over every "
        "repetition's measured batches, with the median's 95% order-statistic interval, and the mean beside it "
        "(docs/records.md). A ratio is called a win or a loss only when its whole 95% interval (a bootstrap of "
        "the ratio of medians, widened to cover each round's ratio) is on one side of 1; otherwise the data "
        "cannot tell. A row is noisy when its interval is wider than 10% of its median or its mean and median "
        "disagree by more than 10%. Verified: how the output was held to the reference before its speed counted.";
    fprintf(o->md, "`. %s\n\n", lede);
    fprintf(o->html, "</code>. %s</p>\n", lede);
    if (args->step_ms > 0.0) {
        fprintf(o->md,
                "Step verdict: whether each loader, at its measured p99 batch time, keeps an accelerator step of "
                "%g ms fed, and by what margin (step / p99).\n\n",
                args->step_ms);
        fprintf(o->html,
                "<p>Step verdict: whether each loader, at its measured p99 batch time, keeps an accelerator "
                "step of %g ms fed, and by what margin (step / p99).</p>\n",
                args->step_ms);
    }
    /* Above the Winners, which it contradicts: a winner across machines or
     * commits is no winner. */
    if (report->nenvironments > 1) {
        char line[256];
        snprintf(line, sizeof line,
                 "These records come from %d different machines or commits (listed under Environment); numbers "
                 "from different environments are not comparable, and neither are the Winners below.",
                 report->nenvironments);
        fprintf(o->md, "**%s**\n\n", line);
        fprintf(o->html, "<p class=\"warn\"><b>%s</b></p>\n", line);
    }
    if (report->nbusy > 0) {
        char line[512];
        snprintf(line, sizeof line,
                 "The machine was too busy to rank %d of these runs (load average up to %.1f, steal up to %.0f%%, "
                 "runs waiting for a CPU up to %.0f%% of their time): their ratios may say more about the machine "
                 "than the code.",
                 report->nbusy, report->busiest_load, report->most_steal > 0 ? 100.0 * report->most_steal : 0.0,
                 report->most_wait > 0 ? 100.0 * report->most_wait : 0.0);
        fprintf(o->md, "**%s**\n\n", line);
        fprintf(o->html, "<p class=\"warn\"><b>%s</b></p>\n", line);
    }
}

/* What the marks in the tables mean, once, under the Winners. */
static void write_legend(const outputs *o)
{
    static const char *const items[][2] = {
        {"(1.23x)", "a ratio in parentheses has a noisy row on one side (its interval is wider than 10% of its "
                    "median, or its mean and median disagree by more than 10%): shown for diagnosis, never ranked"},
        {"cannot tell", "the ratio's 95% interval covers 1: the data cannot say which is faster; more repetitions "
                        "(--rounds) or a quieter machine may"},
        {"too busy to rank", "the machine's load average was above its CPUs, more than 5% of its time was stolen, "
                             "or the run waited for a CPU: the lede says how many runs and how busy"},
        {"colours", "each adapter has one colour, fixed by its name, in every table and chart of every report; a "
                    "row's background is its standing (fastest, tied, behind, mismatch, failed)"},
    };
    fputs("Legend:\n\n", o->md);
    fputs("<dl class=\"legend\">\n", o->html);
    for (size_t i = 0; i < sizeof items / sizeof *items; i++) {
        fprintf(o->md, "- **%s**: ", items[i][0]);
        sl__markdown_escape(o->md, items[i][1]);
        fputc('\n', o->md);
        fprintf(o->html, "<dt>%s</dt><dd>", items[i][0]);
        sl__html_escape(o->html, items[i][1]);
        fputs("</dd>\n", o->html);
    }
    fputs("\n", o->md);
    fputs("</dl>\n", o->html);
}

static void write_table(const outputs *o, const sl__table *table, int class_column, int mark_column,
                        const char *const *marks)
{
    sl__table_print_markdown(table, o->md);
    fputc('\n', o->md);
    fputs("<div class=\"scroll\">\n", o->html);
    sl__table_print_html_marked(table, o->html, class_column, mark_column, marks);
    fputs("</div>\n", o->html);
}

/* The lines under a table ('\n' between), escaped for each document. */
static void write_under(const outputs *o, const char *lines)
{
    if (!lines[0])
        return;
    fputs("<ul class=\"under\">\n", o->html);
    for (const char *line = lines; *line;) {
        size_t n = strcspn(line, "\n");
        char one[1100];
        snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), line);
        fputs("<li>", o->html);
        sl__html_escape(o->html, one);
        fputs("</li>\n", o->html);
        fputs("- ", o->md);
        sl__markdown_escape(o->md, one);
        fputc('\n', o->md);
        line += n + (line[n] == '\n');
    }
    fputs("</ul>\n", o->html);
    fputc('\n', o->md);
}

/* Charts are drawn through files in a temporary folder that gnuplot reads
 * and writes; a report without charts is still a report, so a failure only
 * drops them, and the page says why once. */
typedef struct charts {
    bool on;
    char workdir[4096];
    bool said;
} charts;

static void embed(charts *c, FILE *html, bool drawn, char *svg, const char *reason)
{
    if (drawn) {
        fputs("<div class=\"chart\">", html);
        fputs(svg, html);
        fputs("</div>\n", html);
        free(svg);
    } else if (strstr(reason, "gnuplot") && !c->said) {
        fputs("<p class=\"warn\">No charts: ", html);
        sl__html_escape(html, reason);
        fputs("</p>\n", html);
        c->said = true;
        c->on = false;
    }
}

static void write_variant(const report_args *args, const sl__report *report, const sl__report_variant *v,
                          const outputs *o, charts *c)
{
    const sl_record *r = report->rows[v->first].record;
    char anchor[96];
    anchor_of(r, anchor, sizeof anchor);
    fputs("### ", o->md);
    sl__markdown_escape(o->md, r->scenario);
    fputs(" / ", o->md);
    sl__markdown_escape(o->md, r->variant);
    fprintf(o->html, "<h3 id=\"%s\">", anchor);
    sl__html_escape(o->html, r->scenario);
    fputs(" / ", o->html);
    sl__html_escape(o->html, r->variant);
    fputs("\n\nTransforms: ", o->md);
    fputs("</h3>\n<p>Transforms: ", o->html);
    both(o, r->transforms[0] ? r->transforms : "none");
    fputs(".\n\n", o->md);
    fputs(".</p>\n", o->html);
    if (v->end - v->nfolded > v->first) {
        variant_view view;
        variant_table(report, v, args->step_ms, &view);
        write_table(o, view.table, STANDING_COLUMN, 0, view.colours);
        write_under(o, view.under);
        sl__table_free(view.table);
    }
    if (v->nfolded > 0) {
        char line[2048];
        sl__report_folded_line(report, v, line, sizeof line);
        fputs("<p class=\"folded\">", o->html);
        sl__html_escape(o->html, line);
        fputs("</p>\n", o->html);
        sl__markdown_escape(o->md, line);
        fputs("\n\n", o->md);
    }
    if (c->on && v->nranked > 0) {
        char *svg = NULL;
        char reason[256] = "";
        bool drawn = sl__chart_rates(report, v, c->workdir, &svg, reason, sizeof reason);
        embed(c, o->html, drawn, svg, reason);
        if (c->on) {
            drawn = sl__chart_latency(report, v, c->workdir, &svg, reason, sizeof reason);
            embed(c, o->html, drawn, svg, reason);
        }
    }
}

/* A chart of the whole report, under its heading when it could be drawn. */
typedef bool (*whole_chart_fn)(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size);

static void whole_chart(charts *c, FILE *html, const sl__report *report, whole_chart_fn chart, const char *heading)
{
    if (!c->on)
        return;
    char *svg = NULL;
    char reason[256] = "";
    bool drawn = chart(report, c->workdir, &svg, reason, sizeof reason);
    if (drawn)
        fputs(heading, html);
    embed(c, html, drawn, svg, reason);
}

static void write_reports(const report_args *args, const sl__report *report, const outputs *o)
{
    fputs("# sluice report\n\n", o->md);
    fputs(html_head, o->html);
    fputs("<h1>sluice report</h1>\n", o->html);
    write_lede(args, report, o);

    fputs("## Winners\n\n", o->md);
    fputs("<h2>Winners</h2>\n", o->html);
    const char **colours = sl__cli_alloc((size_t)(report->nvariants ? report->nvariants : 1) * sizeof *colours);
    sl__table *winners = winners_table(report, colours);
    write_table(o, winners, -1, 1, colours);
    sl__table_free(winners);
    free(colours);
    write_legend(o);

    charts c = {0};
    sl_err workdir_err = {0};
    c.on = sl_workdir_create(sl_temp_base(), "report", c.workdir, sizeof c.workdir, &workdir_err) == SL_OK;
    bool made_workdir = c.on;
    whole_chart(&c, o->html, report, sl__chart_overview,
                "<h2>Overview</h2>\n<p>Each variant's fastest verified adapter against the reference adapter, "
                "with the ratio's 95% interval, on a log scale: 1 is the reference's speed.</p>\n");
    whole_chart(&c, o->html, report, sl__chart_batch_scaling,
                "<h2>Batch-size scaling</h2>\n<p>Time per element at the median batch time against batch size, "
                "for each variant run at several batch sizes (<code>sluice bench --batch-sizes</code>), with "
                "the median's 95% interval: a flat line scales perfectly, a falling one amortizes per-batch "
                "costs.</p>\n");
    whole_chart(&c, o->html, report, sl__chart_workers_scaling,
                "<h2>Workers scaling</h2>\n<p>Time per element at the median batch time against prefetch "
                "workers, for each variant run at several worker counts (<code>sluice bench "
                "--workers-sweep</code>), with the median's 95% interval: a falling line is work the workers "
                "took off the consumer's clock.</p>\n");

    fputs("## Environment\n\n", o->md);
    fputs("<h2>Environment</h2>\n", o->html);
    write_environment(o->md, report, false);
    write_environment(o->html, report, true);

    char category[16] = "";
    for (int k = 0; k < report->nvariants; k++) {
        const sl__report_variant *v = &report->variants[k];
        char this_category[16];
        category_of(report->rows[v->first].record->scenario, this_category, sizeof this_category);
        if (strcmp(this_category, category) != 0) {
            snprintf(category, sizeof category, "%s", this_category);
            fputs("## ", o->md);
            sl__markdown_escape(o->md, category);
            fputs("\n\n", o->md);
            fputs("<h2>", o->html);
            sl__html_escape(o->html, category);
            fputs("</h2>\n", o->html);
        }
        write_variant(args, report, v, o, &c);
    }
    if (made_workdir)
        sl_workdir_remove(c.workdir);
    fputs("</body>\n</html>\n", o->html);
}

static bool save(const char *dir, const char *name, const char *text, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sl_err err = {0};
    if (sl_write_file_atomic(path, text, size, &err) != SL_OK) {
        sl__cli_error("report", "%s", err.msg);
        return false;
    }
    printf("wrote %s\n", path);
    return true;
}

int sl__cmd_report(int argc, char **argv)
{
    report_args args = {0};
    sl__cli cli = sl__options_parse(&sl__report_spec, argc, argv, &args);
    if (!args.records)
        sl__cli_usage_error(&cli, "say which records folder to report on, e.g. records/ci");
    if (!args.output)
        args.output = args.records;

    sl_record_set set;
    sl_err err = {0};
    int bad = 0;
    if (sl_record_set_load(args.records, &set, report_bad_file, &bad, &err) != SL_OK) {
        sl__cli_error("report", "%s", err.msg);
        return SL__EXIT_FAILED;
    }
    if (set.count == 0) {
        sl__cli_error("report", "%s: no readable records (run `sluice bench` first)", args.records);
        sl_record_set_free(&set);
        return SL__EXIT_FAILED;
    }
    sl__report report;
    sl__report_build(set.records, set.environments, set.count, &report);
    if (report.nenvironments > 1)
        sl__cli_error("report", "%s holds records from %d different machines or commits; the report says so",
                      args.records, report.nenvironments);
    char *md_text = NULL, *html_text = NULL;
    size_t md_size = 0, html_size = 0;
    outputs o = {open_memstream(&md_text, &md_size), open_memstream(&html_text, &html_size)};
    bool ok = o.md && o.html;
    if (ok)
        write_reports(&args, &report, &o);
    if (o.md)
        fclose(o.md);
    if (o.html)
        fclose(o.html);
    ok = ok && sl_make_dirs(args.output, &err) == SL_OK;
    /* A killed report's half-written files go before this one writes. */
    if (ok)
        sl_sweep_stale_temporaries(args.output);
    ok = ok && save(args.output, "report.md", md_text, md_size) &&
         save(args.output, "report.html", html_text, html_size);
    free(md_text);
    free(html_text);
    sl__report_free(&report);
    sl_record_set_free(&set);
    return ok && bad == 0 ? SL__EXIT_OK : SL__EXIT_FAILED;
}
