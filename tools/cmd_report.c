/* `sluice report RECORDS_DIR`: a comparison report from a folder of records,
 * as Markdown (report.md) and as one self-contained HTML page with gnuplot
 * charts (report.html). docs/report.md says how to read it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

static const char usage[] =
    "usage: sluice report RECORDS_DIR [options]\n"
    "\n"
    "Reads every record in RECORDS_DIR (e.g. records/ci) and writes report.md and\n"
    "report.html: per category and scenario, each adapter's throughput and latency\n"
    "with 95% intervals, its ratio to the reference and to the best other adapter,\n"
    "for sluice's own adapters the ratio to the best equivalent peer (peer:<name>),\n"
    "a classification (strength above 1.2x the reference, gap below 0.8x, parity\n"
    "between, noisy when the interval straddles a threshold), the transforms run,\n"
    "whether its output was verified against the reference, and the environment.\n"
    "\n"
    "options:\n"
    "  --output DIR      where the report goes (default RECORDS_DIR)\n"
    "  --step-ms T       add the input-pipeline verdict: does the loader, at its\n"
    "                    measured p99 batch time, keep an accelerator step of T ms fed?\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit status: 0 when the report was written from every record; 1 when a record\n"
    "could not be read (the report is still written from the others) or the report\n"
    "could not be written; 2 for a bad command line.\n";

typedef struct report_args {
    const char *records;
    const char *output;
    double step_ms;
} report_args;

static void report_bad_file(const char *message, void *user)
{
    int *bad = user;
    (*bad)++;
    sl__cli_error("report", "%s (left out of the report)", message);
}

static void format_rate(char *buf, size_t size, double v)
{
    static const char *const suffix[] = {"", "k", "M", "G"};
    int i = 0;
    if (!isfinite(v)) {
        snprintf(buf, size, "-");
        return;
    }
    while (v >= 999.5 && i < 3) {
        v /= 1000.0;
        i++;
    }
    snprintf(buf, size, "%.*f%s", v < 9.995 ? 2 : v < 99.95 ? 1 : 0, v, suffix[i]);
}

static void format_ratio(char *buf, size_t size, double v)
{
    if (isfinite(v))
        snprintf(buf, size, "%.2fx", v);
    else
        snprintf(buf, size, "-");
}

/* Scenario ids are CATEGORY-N: the category groups the report's sections. */
static void category_of(const char *scenario, char *buf, size_t size)
{
    size_t n = strcspn(scenario, "-");
    snprintf(buf, size, "%.*s", (int)n, scenario);
}

static sl__table *variant_table(const sl__report *report, int first, int end, double step_ms)
{
    static const char *const headers[] = {"adapter", "framework", "outcome", "elements/s", "95% interval",
                                          "p50 (µs)", "p99 (µs)", "vs reference", "vs best other", "vs best peer",
                                          "class", "verified", "step verdict", "note"};
    static const sl__align align[] = {SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__LEFT};
    sl__table *table = sl__table_new(14, headers, align);
    for (int i = first; i < end; i++) {
        const sl__report_row *row = &report->rows[i];
        const sl_record *r = row->record;
        char rate[32], lo[32], hi[32], interval[80], p50[32], p99[32], ref[32], best[80], ratio[32], peer[96], step[96];
        format_rate(rate, sizeof rate, row->throughput);
        format_rate(lo, sizeof lo, row->throughput_lo);
        format_rate(hi, sizeof hi, row->throughput_hi);
        snprintf(interval, sizeof interval, row->ranked ? "%s to %s" : "-", lo, hi);
        snprintf(p50, sizeof p50, isfinite(row->p50_ns) ? "%.1f" : "-", row->p50_ns / 1e3);
        snprintf(p99, sizeof p99, isfinite(row->p99_ns) ? "%.1f" : "-", row->p99_ns / 1e3);
        format_ratio(ref, sizeof ref, row->vs_reference);
        format_ratio(best, sizeof best, row->vs_best_other);
        if (isfinite(row->vs_best_other)) {
            size_t used = strlen(best);
            snprintf(best + used, sizeof best - used, " (%s)", row->best_other);
        }
        format_ratio(ratio, sizeof ratio, row->vs_best_peer);
        if (isfinite(row->vs_best_peer))
            /* In parentheses when either side is noisy: shown, not ranked. */
            snprintf(peer, sizeof peer, row->best_peer_unranked ? "(%s) %s" : "%s %s", ratio, row->best_peer);
        else
            snprintf(peer, sizeof peer, "-");
        if (step_ms > 0.0 && row->ranked) {
            /* The MaxText rule of thumb: the input pipeline keeps the step fed
             * when its slowest ordinary batch (p99) is ready within a step. */
            double margin = step_ms * 1e6 / row->p99_ns;
            snprintf(step, sizeof step, "%s, %.1fx margin", margin >= 1.0 ? "keeps up" : "STALLS the step", margin);
        } else {
            snprintf(step, sizeof step, "-");
        }
        const char *cells[] = {r->adapter, r->framework[0] ? r->framework : "-", sl_record_outcome_name(r->outcome),
                               rate, interval, p50, p99, ref, best, peer, row->classification, r->equivalence, step,
                               r->reason};
        sl__table_add_row(table, cells);
    }
    return table;
}

static void write_environment(FILE *out, const sl__report *report, bool html)
{
    if (report->nenvironments > 1)
        fprintf(out, html ? "<p class=\"warn\"><b>These records come from %d different machines or commits; numbers "
                            "from different environments are not comparable.</b></p>\n"
                          : "**These records come from %d different machines or commits; numbers from different "
                            "environments are not comparable.**\n\n",
                report->nenvironments);
    for (int e = 0; e < report->nenvironments; e++) {
        const sl_environment *env = report->environments[e];
        if (html) {
            fputs("<ul>", out);
            fputs("<li>CPU: ", out);
            sl__html_escape(out, env->cpu_model);
            fprintf(out, " (%d logical CPUs)</li><li>compiler: ", env->cpu_cores);
            sl__html_escape(out, env->compiler);
            fputs(", ", out);
            sl__html_escape(out, env->compile_flags);
            fputs("</li><li>commit: ", out);
            sl__html_escape(out, env->git_commit);
            fputs("</li><li>kernel: ", out);
            sl__html_escape(out, env->kernel);
            fputs("</li><li>libraries: ", out);
            sl__html_escape(out, env->library_versions);
            fputs("</li></ul>\n", out);
        } else {
            fprintf(out, "- CPU: %s (%d logical CPUs)\n- compiler: %s, %s\n- commit: %s\n- kernel: %s\n"
                         "- libraries: %s\n\n",
                    env->cpu_model, env->cpu_cores, env->compiler, env->compile_flags, env->git_commit, env->kernel,
                    env->library_versions);
        }
    }
}

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>sluice report</title>\n"
    "<style>\n"
    "body{font-family:sans-serif;margin:2em;max-width:80em;color:#222}\n"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}\n"
    "th,td{border:1px solid #ccc;padding:0.25em 0.5em;font-size:0.9em}\n"
    "th{background:#f0f0f0}td.r{text-align:right}\n"
    ".strength{background:#dfd}.gap{background:#fdd}.noisy{background:#ffd}.mismatch{background:#f99}\n"
    ".warn{color:#a00}svg{max-width:100%;height:auto}\n"
    "</style>\n</head>\n<body>\n";

/* Every variant's rows are consecutive (records come sorted by file name). */
static int variant_end(const sl__report *report, int first)
{
    int end = first + 1;
    while (end < report->nrows && strcmp(report->rows[end].record->scenario, report->rows[first].record->scenario) == 0 &&
           strcmp(report->rows[end].record->variant, report->rows[first].record->variant) == 0)
        end++;
    return end;
}

static void write_reports(const report_args *args, const sl__report *report, FILE *md, FILE *html)
{
    fputs("# sluice report\n\n", md);
    fputs(html_head, html);
    fputs("<h1>sluice report</h1>\n", html);
    fprintf(md, "Records: `%s`. Throughput is elements per second at the median batch time over every repetition; "
                "its interval comes from the median's 95%% order-statistic interval. Class compares with the "
                "reference: strength above %.1fx, gap below %.1fx, parity between, noisy when the interval cannot "
                "tell. Verified: how the output was held to the reference before its speed counted.\n\n",
            args->records, SL__REPORT_STRENGTH, SL__REPORT_GAP);
    fputs("<p>Records: <code>", html);
    sl__html_escape(html, args->records);
    fprintf(html, "</code>. Throughput is elements per second at the median batch time over every repetition, with "
                  "the median's 95%% order-statistic interval. Class compares with the reference: strength above "
                  "%.1fx, gap below %.1fx, parity between, noisy when the interval cannot tell. Verified: how the "
                  "output was held to the reference before its speed counted.</p>\n",
            SL__REPORT_STRENGTH, SL__REPORT_GAP);
    if (args->step_ms > 0.0) {
        fprintf(md, "Step verdict: whether each loader, at its measured p99 batch time, keeps an accelerator step of "
                    "%g ms fed, and by what margin (step / p99).\n\n",
                args->step_ms);
        fprintf(html, "<p>Step verdict: whether each loader, at its measured p99 batch time, keeps an accelerator "
                      "step of %g ms fed, and by what margin (step / p99).</p>\n",
                args->step_ms);
    }
    fputs("## Environment\n\n", md);
    fputs("<h2>Environment</h2>\n", html);
    write_environment(md, report, false);
    write_environment(html, report, true);

    /* Charts are drawn through files that gnuplot reads and writes; a
     * report without charts is still a report, so a failure here only
     * drops them. */
    char workdir[4096];
    sl_err workdir_err = {0};
    bool charts = sl_workdir_create(sl_temp_base(), "report", workdir, sizeof workdir, &workdir_err) == SL_OK;
    char category[16] = "";
    for (int first = 0; first < report->nrows;) {
        int end = variant_end(report, first);
        const sl_record *r = report->rows[first].record;
        char this_category[16];
        category_of(r->scenario, this_category, sizeof this_category);
        if (strcmp(this_category, category) != 0) {
            snprintf(category, sizeof category, "%s", this_category);
            fprintf(md, "## %s\n\n", category);
            fprintf(html, "<h2>%s</h2>\n", category);
        }
        fprintf(md, "### %s / %s\n\nTransforms: %s.\n\n", r->scenario, r->variant, r->transforms[0] ? r->transforms : "none");
        fputs("<h3>", html);
        sl__html_escape(html, r->scenario);
        fputs(" / ", html);
        sl__html_escape(html, r->variant);
        fputs("</h3>\n<p>Transforms: ", html);
        sl__html_escape(html, r->transforms[0] ? r->transforms : "none");
        fputs(".</p>\n", html);
        sl__table *table = variant_table(report, first, end, args->step_ms);
        sl__table_print_markdown(table, md);
        fputc('\n', md);
        sl__table_print_html(table, html, 10);
        sl__table_free(table);
        char *svg = NULL;
        char reason[256] = "";
        if (charts && sl__report_chart(report, first, end, workdir, &svg, reason, sizeof reason)) {
            fputs(svg, html);
            fputc('\n', html);
            free(svg);
        } else if (charts && strstr(reason, "gnuplot")) {
            fputs("<p class=\"warn\">No chart: ", html);
            sl__html_escape(html, reason);
            fputs("</p>\n", html);
            charts = false; /* one note is enough */
        }
        first = end;
    }
    if (charts)
        sl_workdir_remove(workdir);
    fputs("</body>\n</html>\n", html);
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
    sl__cli cli = sl__cli_start("report", argc, argv);
    const char *value;
    while (sl__cli_next(&cli)) {
        if (sl__cli_is_help(&cli)) {
            fputs(usage, stdout);
            return SL__EXIT_OK;
        } else if (sl__cli_option(&cli, "--output", &value)) {
            args.output = value;
        } else if (sl__cli_option(&cli, "--step-ms", &value)) {
            char *end = NULL;
            args.step_ms = strtod(value, &end);
            if (end == value || *end != '\0' || !(args.step_ms > 0.0 && args.step_ms < 1e6))
                sl__cli_usage_error(&cli, "option --step-ms: '%s' is not a step time in milliseconds", value);
        } else if (!args.records && sl__cli_arg(&cli)[0] != '-') {
            args.records = sl__cli_arg(&cli);
        } else {
            sl__cli_unknown(&cli);
        }
    }
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
    sl__report_build(&set, &report);
    if (report.nenvironments > 1)
        sl__cli_error("report", "%s holds records from %d different machines or commits; the report says so",
                      args.records, report.nenvironments);
    char *md_text = NULL, *html_text = NULL;
    size_t md_size = 0, html_size = 0;
    FILE *md = open_memstream(&md_text, &md_size);
    FILE *html = open_memstream(&html_text, &html_size);
    bool ok = md && html;
    if (ok) {
        write_reports(&args, &report, md, html);
    }
    if (md)
        fclose(md);
    if (html)
        fclose(html);
    ok = ok && sl_make_dirs(args.output, &err) == SL_OK;
    /* A killed report's half-written files go before this one writes. */
    if (ok)
        sl_sweep_stale_temporaries(args.output);
    ok = ok && save(args.output, "report.md", md_text, md_size) && save(args.output, "report.html", html_text, html_size);
    free(md_text);
    free(html_text);
    sl__report_free(&report);
    sl_record_set_free(&set);
    return ok && bad == 0 ? SL__EXIT_OK : SL__EXIT_FAILED;
}
