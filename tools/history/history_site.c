/* `sluice history publish`: the static site (docs/history.md). One index
 * with a row per series (its sparkline, latest figure and latest change)
 * and one page per series (its chart of elements/s per commit with the
 * intervals and steps, its steps and its points). Plain HTML with inline
 * CSS and inline SVG drawn here: no script, no external address, readable
 * without a server. Every string that came from a record is escaped. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "history.h"
#include "report.h"
#include "sluice/core/digest.h"

/* A page is built in memory, then written whole with sl_write_file_atomic. */
typedef struct page {
    char *text;
    size_t size;
    FILE *out;
} page;

static bool page_open(page *p)
{
    p->text = NULL;
    p->size = 0;
    p->out = open_memstream(&p->text, &p->size);
    return p->out != NULL;
}

static bool page_save(page *p, const char *dir, const char *name)
{
    fclose(p->out);
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    sl_err err = {0};
    bool ok = n > 0 && (size_t)n < sizeof path && sl_write_file_atomic(path, p->text, p->size, &err) == SL_OK;
    if (!ok)
        sl__cli_error("history", "%s", err.msg[0] ? err.msg : "the site's path is too long");
    free(p->text);
    return ok;
}

static const char style[] =
    "body{font-family:sans-serif;margin:1em auto;max-width:1100px;padding:0 1em;color:#222;line-height:1.4}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}"
    "table{border-collapse:collapse;margin:.5em 0;font-size:.9em}"
    "td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:middle}"
    "td.r,th.r{text-align:right}.wrap{overflow-x:auto}"
    "code{font-size:.95em}.slower{color:#b00020}.faster{color:#1b7f3b}.muted{color:#777}.warn{color:#8a5a00}"
    "svg.chart{width:100%;height:auto;max-width:1100px;border:1px solid #eee}"
    "svg text{font-family:sans-serif;font-size:11px;fill:#444}"
    "@media (max-width:820px){td,th{padding:.2em .3em;font-size:.85em}}";

static void page_head(FILE *out, const char *title, const char *up)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          out);
    sl__html_escape(out, title);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n", style);
    if (up)
        fprintf(out, "<p><a href=\"%s\">all rows</a></p>\n", up);
}

static void row_title(FILE *out, const sl_history_series *s)
{
    sl__html_escape(out, s->key.scenario);
    fputc(' ', out);
    sl__html_escape(out, s->key.variant);
    fputc(' ', out);
    sl__html_escape(out, s->key.adapter);
}

static void row_details(FILE *out, const sl_history_series *s)
{
    sl__html_escape(out, s->key.profile);
    fputs(", ", out);
    sl__html_escape(out, s->key.kernels);
    fprintf(out, ", %" PRId64 " thread%s", s->key.threads, s->key.threads == 1 ? "" : "s");
    if (s->key.workers)
        fprintf(out, ", %" PRId64 " worker%s", s->key.workers, s->key.workers == 1 ? "" : "s");
}

void sl__history_page_name(const sl_history *history, const sl_history_series *s, char *buf, size_t size)
{
    char key[512];
    int n = snprintf(key, sizeof key, "%s\n%s\n%s\n%s\n%s\n%" PRId64 "\n%" PRId64, s->key.scenario, s->key.variant,
                     s->key.adapter, s->key.profile, s->key.kernels, s->key.threads, s->key.workers);
    uint64_t digest = sl_digest_bytes(key, n > 0 && (size_t)n < sizeof key ? (size_t)n : strlen(key));
    snprintf(buf, size, "%s-%016" PRIx64 ".html", history->machines[s->machine].id, digest);
}

static const sl_history_row *row_at(const sl_history *h, const sl_history_series *s, int i)
{
    return sl_history_point_row(h, &s->points[i]);
}

static const sl_history_run *run_at(const sl_history *h, const sl_history_series *s, int i)
{
    return sl_history_point_run(h, &s->points[i]);
}

static void short_commit(char *buf, size_t size, const char *commit)
{
    snprintf(buf, size, "%.10s", commit);
}

/* "-9.8% [-12.1%, -7.6%]" with a class that colours it. */
static void step_size(FILE *out, const sl_history_step *step)
{
    fprintf(out, "<span class=\"%s\">%+.1f%%</span> [%+.1f%%, %+.1f%%]", step->change < 0 ? "slower" : "faster",
            100 * step->change, 100 * step->change_lo, 100 * step->change_hi);
}

static void step_range(FILE *out, const sl_history *h, const sl_history_series *s, const sl_history_step *step)
{
    char good[16], bad[16];
    short_commit(good, sizeof good, run_at(h, s, step->before)->commit);
    short_commit(bad, sizeof bad, run_at(h, s, step->after)->commit);
    fprintf(out, "<code>%s</code>..<code>%s</code>", good, bad);
}

static void step_evidence(FILE *out, const sl_history_step *step)
{
    fprintf(out, "p %.3f", step->p);
    if (step->instructions == SL_STEP_NOT_COUNTED)
        fputs(", no instruction counts", out);
    else
        fprintf(out, ", instructions %s (%+.2f%%)", sl_step_instructions_name(step->instructions),
                100 * step->instructions_change);
}

/* --- charts -------------------------------------------------------------------- */

typedef struct scale {
    double x0, dx; /* x of point i: x0 + i * dx */
    double y0, y1; /* pixel rows of the lowest and highest value */
    double lo, hi; /* values at y0 and y1 */
    bool logarithmic;
} scale;

static double y_of(const scale *sc, double v)
{
    double t =
        sc->logarithmic ? (log(v) - log(sc->lo)) / (log(sc->hi) - log(sc->lo)) : (v - sc->lo) / (sc->hi - sc->lo);
    return sc->y0 + t * (sc->y1 - sc->y0);
}

/* The range of the measured points' intervals, widened a little, and false
 * when nothing was measured. */
static bool value_range(const sl_history *h, const sl_history_series *s, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < s->npoints; i++) {
        const sl_history_row *row = row_at(h, s, i);
        if (!row->measured)
            continue;
        *lo = fmin(*lo, sl_history_rate_low(&row->figure));
        *hi = fmax(*hi, sl_history_rate_high(&row->figure));
    }
    if (!(*lo <= *hi) || !(*lo > 0))
        return false;
    double pad = (*hi - *lo) * 0.08 + *hi * 0.01;
    *lo = fmax(*lo - pad, *lo * 0.5);
    *hi += pad;
    return true;
}

static void sparkline(FILE *out, const sl_history *h, const sl_history_series *s)
{
    const double width = 160, height = 30;
    double lo, hi;
    fprintf(out, "<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"trend\">",
            width, height, width, height);
    if (!value_range(h, s, &lo, &hi)) {
        fputs("</svg>", out);
        return;
    }
    scale sc = {.x0 = 4,
                .dx = s->npoints > 1 ? (width - 8) / (s->npoints - 1) : 0,
                .y0 = height - 3,
                .y1 = 3,
                .lo = lo,
                .hi = hi,
                .logarithmic = true};
    for (int k = 0; k < s->nsteps; k++) {
        double x = sc.x0 + (s->steps[k].before + s->steps[k].after) / 2.0 * sc.dx;
        fprintf(out, "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>", x, x,
                height, s->steps[k].change < 0 ? "#b00020" : "#1b7f3b");
    }
    fputs("<polyline fill=\"none\" stroke=\"#2458a6\" stroke-width=\"1.5\" points=\"", out);
    for (int i = 0; i < s->npoints; i++) {
        const sl_history_row *row = row_at(h, s, i);
        if (row->measured)
            fprintf(out, "%.1f,%.1f ", sc.x0 + i * sc.dx, y_of(&sc, sl_history_rate(&row->figure)));
    }
    fputs("\"/></svg>", out);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The series' chart: elements/s per commit with its interval, the level
 * of each segment between steps, the steps, and the commits below. */
static void chart(FILE *out, const sl_history *h, const sl_history_series *s)
{
    const double width = 1000, height = 380, left = 78, right = 16, top = 22, bottom = 92;
    double lo, hi;
    if (!value_range(h, s, &lo, &hi)) {
        fputs("<p class=\"muted\">Nothing measured in this series.</p>\n", out);
        return;
    }
    double plot = width - left - right;
    scale sc = {.x0 = left + plot / s->npoints / 2,
                .dx = plot / s->npoints,
                .y0 = height - bottom,
                .y1 = top,
                .lo = lo,
                .hi = hi,
                .logarithmic = false};
    fprintf(out,
            "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"elements per second by "
            "commit\">\n",
            width, height);
    /* The value axis: five gridlines with their rates. */
    for (int k = 0; k <= 4; k++) {
        double v = lo + (hi - lo) * k / 4.0, y = y_of(&sc, v);
        char label[32];
        sl__format_rate(label, sizeof label, v);
        fprintf(out,
                "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                left, y, width - right, y, left - 6, y + 4, label);
    }
    fprintf(out,
            "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" text-anchor=\"middle\">elements/s "
            "(median, 95%% interval)</text>\n",
            (top + height - bottom) / 2, (top + height - bottom) / 2);
    /* Each segment's level: the median of its measured rates. */
    double *rates = malloc((size_t)s->npoints * sizeof *rates);
    int start = 0;
    for (int k = 0; rates && k <= s->nsteps; k++) {
        int end = k < s->nsteps ? s->steps[k].after : s->npoints, n = 0;
        for (int i = start; i < end; i++)
            if (row_at(h, s, i)->measured)
                rates[n++] = sl_history_rate(&row_at(h, s, i)->figure);
        if (n > 0) {
            qsort(rates, (size_t)n, sizeof *rates, compare_doubles);
            double level = n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0a202\" stroke-width=\"2\" "
                    "stroke-dasharray=\"6 3\"/>\n",
                    sc.x0 + (start - 0.4) * sc.dx, y_of(&sc, level), sc.x0 + (end - 1 + 0.4) * sc.dx, y_of(&sc, level));
        }
        start = end;
    }
    free(rates);
    /* Steps: a line between the last good and the first bad commit. */
    for (int k = 0; k < s->nsteps; k++) {
        const sl_history_step *step = &s->steps[k];
        double x = sc.x0 + (step->before + step->after) / 2.0 * sc.dx;
        const char *colour = step->change < 0 ? "#b00020" : "#1b7f3b";
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\" "
                "stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%.0f\" fill=\"%s\" style=\"fill:%s\" "
                "text-anchor=\"middle\">%+.1f%%</text>\n",
                x, top, x, height - bottom, colour, x, top - 6, colour, colour, 100 * step->change);
    }
    /* The points and their intervals; a run that measured nothing is a
     * grey cross on the axis, its outcome in its title. */
    int label_every = s->npoints > 40 ? (s->npoints + 39) / 40 : 1;
    for (int i = 0; i < s->npoints; i++) {
        const sl_history_row *row = row_at(h, s, i);
        const sl_history_run *run = run_at(h, s, i);
        double x = sc.x0 + i * sc.dx;
        char commit[16];
        short_commit(commit, sizeof commit, run->commit);
        if (row->measured) {
            char rate[32];
            sl__format_rate(rate, sizeof rate, sl_history_rate(&row->figure));
            fprintf(out,
                    "<g><title>%s: %s elements/s</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#2458a6\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#2458a6\"/></g>\n",
                    commit, rate, x, y_of(&sc, sl_history_rate_low(&row->figure)), x,
                    y_of(&sc, sl_history_rate_high(&row->figure)), x, y_of(&sc, sl_history_rate(&row->figure)));
        } else {
            fprintf(out, "<g><title>%s: ", commit);
            sl__html_escape(out, sl_record_outcome_name(row->outcome));
            fputs(" ", out);
            sl__html_escape(out, row->reason);
            fprintf(out, "</title><path d=\"M%.1f %.1f l6 6 m0 -6 l-6 6\" stroke=\"#999\" stroke-width=\"1.5\"/></g>\n",
                    x - 3, height - bottom - 9);
        }
        if (i % label_every == 0)
            fprintf(out,
                    "<text x=\"%.1f\" y=\"%.0f\" transform=\"rotate(-50 %.1f %.0f)\" text-anchor=\"end\">%s</text>\n",
                    x + 3, height - bottom + 12, x + 3, height - bottom + 12, commit);
    }
    fprintf(out, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>\n</svg>\n", left,
            height - bottom, width - right, height - bottom);
}

/* --- pages ----------------------------------------------------------------------- */

static void figure_cells(FILE *out, const sl_history_row *row)
{
    if (!row->measured) {
        fputs("<td class=\"r\">-</td><td class=\"r\">-</td><td class=\"r\">-</td>", out);
        return;
    }
    char rate[32], lo[32], hi[32];
    sl__format_rate(rate, sizeof rate, sl_history_rate(&row->figure));
    sl__format_rate(lo, sizeof lo, sl_history_rate_low(&row->figure));
    sl__format_rate(hi, sizeof hi, sl_history_rate_high(&row->figure));
    fprintf(out, "<td class=\"r\">%s</td><td class=\"r\">%s to %s</td><td class=\"r\">%.1f</td>", rate, lo, hi,
            row->figure.median_ns / 1000.0);
}

static void machine_paragraph(FILE *out, const sl_history_machine *m)
{
    char label[600];
    sl_history_machine_label(&m->environment, label, sizeof label);
    fputs("<p>Machine <code>", out);
    sl__html_escape(out, m->id);
    fputs("</code>: ", out);
    sl__html_escape(out, label);
    fputs("; flags <code>", out);
    sl__html_escape(out, m->environment.compile_flags);
    fputs("</code>; ", out);
    sl__html_escape(out, m->environment.library_versions);
    fputs(".</p>\n", out);
}

/* Where the kernel choice changed: the series is split there, the change
 * is the tuner's (each build of `auto` tunes its own), and no step is
 * sought across it. */
static void kernel_change_notes(FILE *out, const sl_history *h, const sl_history_series *s)
{
    for (int k = 0; k < s->nkernel_changes; k++) {
        int at = s->kernel_changes[k];
        const sl_history_row *row = row_at(h, s, at);
        fputs("<p class=\"warn\">The kernel choice changed at <code>", out);
        sl__html_escape(out, run_at(h, s, at)->commit);
        fputs("</code> (now <code>", out);
        sl__html_escape(out, row->kernel_choice[0] ? row->kernel_choice : "not recorded");
        fputs("</code>): the series is split there and not compared across it, because a changed choice is the "
              "tuner's, not the commit's. Pin the table (<code>--kernels NAME</code>) to compare across.</p>\n",
              out);
    }
}

static void series_page(FILE *out, const sl_history *h, const sl_history_series *s, const sl_history_options *o)
{
    char title[256];
    snprintf(title, sizeof title, "%s %s %s: history", s->key.scenario, s->key.variant, s->key.adapter);
    page_head(out, title, "../index.html");
    fputs("<h1>", out);
    row_title(out, s);
    fputs("</h1>\n<p>", out);
    row_details(out, s);
    fprintf(out, "; %d run%s in commit order.</p>\n", s->npoints, s->npoints == 1 ? "" : "s");
    machine_paragraph(out, &h->machines[s->machine]);
    fputs("<div class=\"wrap\">\n", out);
    chart(out, h, s);
    fputs("</div>\n<h2>Steps</h2>\n", out);
    kernel_change_notes(out, h, s);
    if (!s->testable) {
        fprintf(out,
                "<p class=\"warn\">Too short to test: %d measured process%s over %d commit%s%s, and no arrangement "
                "of so few points is rarer than p &le; %.2f. A step can be told from the noise with at least %d "
                "processes over two commits or more: run more commits, or several processes per commit "
                "(<code>sluice history add DIR1 DIR2 ...</code>, <code>HISTORY_PROCESSES=3 ci/bench.sh</code>). "
                "No step here is not \"no change\".</p>\n",
                s->measured_points, s->measured_points == 1 ? "" : "es", s->measured_commits,
                s->measured_commits == 1 ? "" : "s", s->nkernel_changes ? " between kernel-choice changes" : "",
                o->changepoint.alpha, sl_changepoint_points_needed(&o->changepoint));
    } else if (s->nsteps == 0) {
        fprintf(out,
                "<p>None: no change of at least %.0f%% that a permutation test at p &le; %.2f tells from the "
                "noise.</p>\n",
                100 * o->min_effect, o->changepoint.alpha);
    } else {
        fputs("<div class=\"wrap\"><table>\n<tr><th>last good..first bad</th><th>positions</th><th>change in "
              "elements/s [interval]</th><th>interval's confidence</th><th>evidence</th></tr>\n",
              out);
        for (int k = 0; k < s->nsteps; k++) {
            const sl_history_step *step = &s->steps[k];
            fputs("<tr><td>", out);
            step_range(out, h, s, step);
            fprintf(out, "</td><td class=\"r\">%" PRId64 "..%" PRId64 "</td><td>", run_at(h, s, step->before)->position,
                    run_at(h, s, step->after)->position);
            step_size(out, step);
            fprintf(out, "</td><td class=\"r\">%.0f%%</td><td>", 100 * step->level);
            step_evidence(out, step);
            fputs("</td></tr>\n", out);
        }
        fputs("</table></div>\n", out);
    }
    fputs(
        "<h2>Runs</h2>\n<div class=\"wrap\"><table>\n<tr><th class=\"r\">position</th><th>commit</th><th>committed</th>"
        "<th class=\"r\">process</th>"
        "<th class=\"r\">elements/s</th><th class=\"r\">95% interval</th><th class=\"r\">median batch (µs)</th>"
        "<th>outcome</th><th class=\"r\">instructions</th><th>output</th></tr>\n",
        out);
    uint64_t last_digest = 0;
    bool have_digest = false;
    for (int i = 0; i < s->npoints; i++) {
        const sl_history_row *row = row_at(h, s, i);
        const sl_history_run *run = run_at(h, s, i);
        fprintf(out, "<tr><td class=\"r\">%" PRId64 "</td><td><code>", run->position);
        sl__html_escape(out, run->commit);
        fputs("</code></td><td>", out);
        /* "2026-11-23T20:48:59+00:00" as "2026-11-23 20:48": narrow enough
         * for the table to read at 800 px. */
        char when[32];
        snprintf(when, sizeof when, "%.10s %.5s", run->commit_time,
                 strlen(run->commit_time) > 11 ? run->commit_time + 11 : "");
        sl__html_escape(out, when);
        fprintf(out, "</td><td class=\"r\">%d</td>", row->process + 1);
        figure_cells(out, row);
        fputs("<td>", out);
        sl__html_escape(out, sl_record_outcome_name(row->outcome));
        if (row->reason[0]) {
            fputs(": ", out);
            sl__html_escape(out, row->reason);
        }
        fputs("</td>", out);
        if (row->instructions > 0)
            fprintf(out, "<td class=\"r\">%" PRId64 "</td>", row->instructions);
        else
            fputs("<td class=\"r\">-</td>", out);
        bool measured_output = row->outcome == SL_RECORD_OK;
        fprintf(out, "<td>%s</td></tr>\n",
                !measured_output                                   ? "-"
                : have_digest && row->output_digest != last_digest ? "<b>changed</b>"
                                                                   : "same");
        if (measured_output) {
            last_digest = row->output_digest;
            have_digest = true;
        }
    }
    fputs("</table></div>\n</body>\n</html>\n", out);
}

/* The latest step of a series, or NULL. */
static const sl_history_step *latest_step(const sl_history_series *s)
{
    return s->nsteps ? &s->steps[s->nsteps - 1] : NULL;
}

static const sl_history_row *latest_measured(const sl_history *h, const sl_history_series *s)
{
    for (int i = s->npoints - 1; i >= 0; i--)
        if (row_at(h, s, i)->measured)
            return row_at(h, s, i);
    return NULL;
}

static void index_page(FILE *out, const sl_history *h, const sl_history_series *series, int nseries,
                       const sl_history_options *o)
{
    page_head(out, "sluice performance history", NULL);
    int steps = 0;
    for (int i = 0; i < nseries; i++)
        steps += series[i].nsteps;
    fprintf(out,
            "<h1>sluice performance history</h1>\n<p>%d run%s on %d machine%s, %d series, %d step%s found. Each row "
            "is one scenario, variant and adapter on one machine; its figure is elements per second at the median "
            "batch time over every repetition, with its 95%% interval. A step is a change of at least %.0f%% found "
            "by E-divisive means with a permutation test (p &le; %.2f, %d shuffles); its size is the Hodges-Lehmann "
            "shift of the commits on either side, with its interval. A new machine starts new series, never a "
            "step.</p>\n",
            h->nruns, h->nruns == 1 ? "" : "s", h->nmachines, h->nmachines == 1 ? "" : "s", nseries, steps,
            steps == 1 ? "" : "s", 100 * o->min_effect, o->changepoint.alpha, o->changepoint.permutations);
    for (int m = 0; m < h->nmachines; m++) {
        fprintf(out, "<h2>Machine %d of %d</h2>\n", m + 1, h->nmachines);
        machine_paragraph(out, &h->machines[m]);
        fputs("<div class=\"wrap\"><table>\n<tr><th>row</th><th>commits</th><th class=\"r\">latest "
              "elements/s</th><th class=\"r\">95% interval</th><th>latest change</th></tr>\n",
              out);
        for (int i = 0; i < nseries; i++) {
            const sl_history_series *s = &series[i];
            if (s->machine != m)
                continue;
            char name[128], rate[32] = "-", interval[80] = "-";
            sl__history_page_name(h, s, name, sizeof name);
            const sl_history_row *last = latest_measured(h, s);
            if (last) {
                char lo[32], hi[32];
                sl__format_rate(rate, sizeof rate, sl_history_rate(&last->figure));
                sl__format_rate(lo, sizeof lo, sl_history_rate_low(&last->figure));
                sl__format_rate(hi, sizeof hi, sl_history_rate_high(&last->figure));
                snprintf(interval, sizeof interval, "%s to %s", lo, hi);
            }
            fprintf(out, "<tr><td><a href=\"rows/%s\">", name);
            row_title(out, s);
            fputs("</a><br><small class=\"muted\">", out);
            row_details(out, s);
            fputs("</small></td><td>", out);
            sparkline(out, h, s);
            fprintf(out, "</td><td class=\"r\">%s</td><td class=\"r\">%s</td><td>", rate, interval);
            const sl_history_step *step = latest_step(s);
            if (step) {
                step_size(out, step);
                fputs(" at ", out);
                step_range(out, h, s, step);
                fputs("<br><small class=\"muted\">", out);
                step_evidence(out, step);
                fputs("</small>", out);
            } else {
                fputs(!last          ? "<span class=\"muted\">never measured</span>"
                      : !s->testable ? "<span class=\"muted\">too short to test</span>"
                                     : "<span class=\"muted\">none</span>",
                      out);
            }
            if (s->nkernel_changes)
                fprintf(out, "<br><small class=\"warn\">kernel choice changed %d time%s: split there</small>",
                        s->nkernel_changes, s->nkernel_changes == 1 ? "" : "s");
            fputs("</td></tr>\n", out);
        }
        fputs("</table></div>\n", out);
    }
    fputs("</body>\n</html>\n", out);
}

int sl__history_publish(const sl_history *history, const sl_history_series *series, int nseries,
                        const sl_history_options *options, const char *dir)
{
    char rows[4096];
    sl_err err = {0};
    int n = snprintf(rows, sizeof rows, "%s/rows", dir);
    if (n < 0 || (size_t)n >= sizeof rows || sl_make_dirs(rows, &err) != SL_OK) {
        sl__cli_error("history", "%s", err.msg[0] ? err.msg : "the site's path is too long");
        return 1;
    }
    /* A publish killed mid-way left temporaries beside the pages; their
     * process is gone. */
    sl_sweep_stale_temporaries(dir);
    sl_sweep_stale_temporaries(rows);
    for (int i = 0; i < nseries; i++) {
        page p;
        char name[128];
        if (!page_open(&p)) {
            sl__cli_error("history", "out of memory for a page");
            return 1;
        }
        series_page(p.out, history, &series[i], options);
        sl__history_page_name(history, &series[i], name, sizeof name);
        if (!page_save(&p, rows, name))
            return 1;
    }
    /* The index last: while it is the old one, it links only to pages that
     * exist. */
    page p;
    if (!page_open(&p)) {
        sl__cli_error("history", "out of memory for the index");
        return 1;
    }
    index_page(p.out, history, series, nseries, options);
    return page_save(&p, dir, "index.html") ? 0 : 1;
}
