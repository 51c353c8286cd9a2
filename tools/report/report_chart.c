/* Charts for the report, drawn by gnuplot (Debian's gnuplot-nox) as SVG so
 * that the HTML page embeds them and stays one self-contained file:
 *   - the rates of a variant's adapters, horizontal bars fastest at the top
 *     with their 95% intervals, on a log axis when the fastest is more than
 *     ten times the slowest (so a slow adapter is still a visible bar);
 *   - the batch times of a variant's adapters as distribution functions on
 *     a log axis, so that tails and stalls are visible;
 *   - the overview: each variant's fastest adapter over the reference.
 * Labels come from the records and are made safe for gnuplot; the SVG is
 * stripped of its <title> and <desc> elements, which gnuplot fills with
 * plot names that would show as tooltips. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "report.h"

extern char **environ;

/* Above this ratio of fastest to slowest, a linear axis would reduce the
 * slow bars to nothing. */
#define LOG_AXIS_RANGE 10.0

static bool run_gnuplot(const char *script, char *reason, size_t size)
{
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    /* stdout and stderr stay the tool's: gnuplot's own complaints reach the
     * user as they are. */
    int rc = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (rc != 0) {
        snprintf(reason, size, "gnuplot could not be started (%s); install gnuplot-nox for charts", strerror(rc));
        return false;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(reason, size, "gnuplot failed on a chart's script");
        return false;
    }
    return true;
}

/* A record string as a gnuplot label: quotes, backslashes and control
 * characters would end the string or the line. */
static void label(char *buf, size_t size, const char *text)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c && n + 1 < size; c++)
        buf[n++] = (*c < 0x20 || *c == '"' || *c == '\'' || *c == '\\' || *c == 0x7f) ? '_' : (char)*c;
    buf[n] = '\0';
}

/* Removes every <tag ...>...</tag> element from text, in place. */
static void strip_elements(char *text, const char *tag)
{
    char open[32], close[32];
    snprintf(open, sizeof open, "<%s", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    for (char *at = strstr(text, open); at; at = strstr(at, open)) {
        char *end = strstr(at, close);
        if (!end)
            break;
        end += strlen(close);
        memmove(at, end, strlen(end) + 1);
    }
}

typedef struct chart_files {
    char data[4096], script[4096], out[4096];
} chart_files;

static void chart_paths(const char *workdir, chart_files *f)
{
    snprintf(f->data, sizeof f->data, "%s/chart.dat", workdir);
    snprintf(f->script, sizeof f->script, "%s/chart.gp", workdir);
    snprintf(f->out, sizeof f->out, "%s/chart.svg", workdir);
}

/* Runs the script and reads its SVG, without the XML prolog and doctype
 * (not allowed inside an HTML body) and without tooltips. */
static bool draw(const chart_files *f, char **svg, char *reason, size_t size)
{
    if (!run_gnuplot(f->script, reason, size))
        return false;
    char *text = NULL;
    size_t length = 0;
    sl_err err = {0};
    if (sl_read_file(f->out, &text, &length, &err) != SL_OK) {
        snprintf(reason, size, "%s", err.msg);
        return false;
    }
    char *start = strstr(text, "<svg");
    if (!start) {
        free(text);
        snprintf(reason, size, "gnuplot wrote no <svg> element");
        return false;
    }
    strip_elements(start, "title");
    strip_elements(start, "desc");
    *svg = sl__cli_strdup(start);
    free(text);
    return true;
}

static FILE *open_or_say(const char *path, char *reason, size_t size)
{
    FILE *f = fopen(path, "w");
    if (!f)
        snprintf(reason, size, "cannot write a chart's file: %s", strerror(errno));
    return f;
}

/* A chart's files in workdir, and its data file open for writing; NULL
 * with the reason when it cannot be. */
static FILE *begin_chart(const char *workdir, chart_files *f, char **svg, char *reason, size_t size)
{
    *svg = NULL;
    chart_paths(workdir, f);
    return open_or_say(f->data, reason, size);
}

/* A chart's gnuplot script, open for writing after the lines every chart
 * of `height` pixels starts with; NULL with the reason when it cannot be. */
static FILE *begin_script(const chart_files *f, int height, char *reason, size_t size)
{
    FILE *s = open_or_say(f->script, reason, size);
    if (s)
        fprintf(s,
                "set terminal svg size 900,%d dynamic font 'sans,12' background rgb 'white'\n"
                "set termoption noenhanced\n"
                "set output '%s'\n",
                height, f->out);
    return s;
}

/* An adapter's colour (sl__adapter_colour) as gnuplot's "rgb variable"
 * reads it: 0xRRGGBB. */
static long colour_value(const char *adapter)
{
    return strtol(sl__adapter_colour(adapter) + 1, NULL, 16);
}

/* Horizontal bars, one per row of data: label, value, interval low, high,
 * position, colour. Shared by the rates and the overview. A rate's bar starts at
 * the axis (0 on a linear axis, below the smallest interval on a log one);
 * a ratio's starts at origin 1, so that it points right when faster and
 * left when slower (origin > 0). */
static bool bars(const chart_files *f, int nbars, double lowest, double highest, const char *xlabel, double origin,
                 char **svg, char *reason, size_t size)
{
    /* Ratios are read on a log scale whatever their range: 2x faster and
     * 2x slower are the same distance from 1. */
    bool log_axis = lowest > 0.0 && (origin > 0.0 || highest / lowest > LOG_AXIS_RANGE);
    double base = log_axis ? (origin > 0.0 ? lowest / 1.3 : pow(10.0, floor(log10(lowest)))) : 0.0;
    double from = origin > 0.0 ? origin : base;
    FILE *s = open_or_say(f->script, reason, size);
    if (!s)
        return false;
    int height = 70 + 26 * nbars;
    fprintf(s,
            "set terminal svg size 900,%d dynamic font 'sans,12' background rgb 'white'\n"
            "set termoption noenhanced\n"
            "set output '%s'\n"
            "unset key\n"
            "set style fill solid 0.65 border -1\n"
            "set yrange [%d.6:-0.6]\n"
            "set ytics scale 0\n"
            "set grid xtics\n"
            "set xlabel \"%s%s\"\n"
            "set format x '%%.1s%%c'\n"
            "set lmargin 18\n",
            height, f->out, nbars - 1, xlabel, log_axis ? " (log scale)" : "");
    if (log_axis)
        fprintf(s, "set logscale x\nset xrange [%g:%g]\n", base, highest * 1.6);
    else
        fprintf(s, "set xrange [0:%g]\n", highest * 1.1);
    if (origin > 0.0)
        fprintf(s, "set arrow from %g, graph 0 to %g, graph 1 nohead lc rgb '#aa3333' dt 2\n", origin, origin);
    fprintf(s,
            "plot '%s' using 2:5:($2 < %g ? $2 : %g):($2 < %g ? %g : $2):($5 - 0.32):($5 + 0.32):6:ytic(1) with "
            "boxxyerror lc rgb variable notitle, \\\n"
            "     '' using 2:5:3:4 with xerrorbars lc rgb 'black' pt 0 notitle\n",
            f->data, from, from, from, from);
    fclose(s);
    return draw(f, svg, reason, size);
}

bool sl__chart_rates(const sl__report *report, const sl__report_variant *v, const char *workdir, char **svg,
                     char *reason, size_t size)
{
    chart_files f;
    FILE *d = begin_chart(workdir, &f, svg, reason, size);
    if (!d)
        return false;
    double lowest = INFINITY, highest = 0.0;
    int n = 0;
    for (int i = v->first; i < v->first + v->nranked; i++) {
        const sl__report_row *row = &report->rows[i];
        char name[64];
        label(name, sizeof name, row->record->adapter);
        double hi = isfinite(row->t.rate_hi) ? row->t.rate_hi : row->t.rate;
        fprintf(d, "\"%s\" %.6g %.6g %.6g %d %ld\n", name, row->t.rate, row->t.rate_lo, hi, n++,
                colour_value(row->record->adapter));
        lowest = fmin(lowest, row->t.rate_lo);
        highest = fmax(highest, hi);
    }
    fclose(d);
    if (n == 0) {
        snprintf(reason, size, "no ranked adapter to draw");
        return false;
    }
    return bars(&f, n, lowest, highest, "elements/s at the median batch time, with its 95% interval", 0.0, svg, reason,
                size);
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

bool sl__chart_latency(const sl__report *report, const sl__report_variant *v, const char *workdir, char **svg,
                       char *reason, size_t size)
{
    chart_files f;
    FILE *d = begin_chart(workdir, &f, svg, reason, size);
    if (!d)
        return false;
    /* One block per adapter: every batch time, sorted, against the share
     * of batches at most that long. */
    int blocks = 0;
    char names[16][64];
    const char *colours[16];
    for (int i = v->first; i < v->first + v->nranked && blocks < 16; i++) {
        const sl_record *r = report->rows[i].record;
        size_t n = r->samples_ns ? (size_t)r->repetitions * (size_t)r->measured_batches : 0;
        if (n == 0)
            continue;
        int64_t *sorted = sl__cli_alloc(n * sizeof *sorted);
        memcpy(sorted, r->samples_ns, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, compare_i64);
        for (size_t k = 0; k < n; k++)
            fprintf(d, "%.6g %.6g\n", (double)(sorted[k] > 0 ? sorted[k] : 1) / 1e3, (double)(k + 1) / (double)n);
        fputs("\n\n", d);
        free(sorted);
        label(names[blocks], sizeof names[blocks], r->adapter);
        colours[blocks] = sl__adapter_colour(r->adapter);
        blocks++;
    }
    fclose(d);
    if (blocks == 0) {
        snprintf(reason, size, "no samples to draw");
        return false;
    }
    FILE *s = begin_script(&f, 360, reason, size);
    if (!s)
        return false;
    fputs("set logscale x\n"
          "set yrange [0:1]\n"
          "set grid xtics ytics\n"
          "set xlabel \"batch time (µs, log scale), every measured batch of every repetition\"\n"
          "set ylabel \"share of batches at most that long\"\n"
          "set key outside right top\n"
          "plot ",
          s);
    for (int b = 0; b < blocks; b++)
        fprintf(s, "%s'%s' index %d using 1:2 with steps lw 2 lc rgb '%s' title '%s'", b ? ", \\\n     " : "", f.data,
                b, colours[b], names[b]);
    fputc('\n', s);
    fclose(s);
    return draw(&f, svg, reason, size);
}

bool sl__chart_overview(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size)
{
    chart_files f;
    FILE *d = begin_chart(workdir, &f, svg, reason, size);
    if (!d)
        return false;
    double lowest = INFINITY, highest = 0.0;
    int n = 0;
    for (int k = 0; k < report->nvariants; k++) {
        const sl__report_variant *v = &report->variants[k];
        if (v->fastest < 0)
            continue;
        const sl__report_row *row = &report->rows[v->fastest];
        if (!row->vs_reference.has)
            continue;
        char text[160], name[160];
        snprintf(text, sizeof text, "%s/%s %s", row->record->scenario, row->record->variant, row->record->adapter);
        label(name, sizeof name, text);
        const sl_ratio *q = &row->vs_reference.ratio;
        fprintf(d, "\"%s\" %.6g %.6g %.6g %d %ld\n", name, q->ratio, q->lo, q->hi, n++,
                colour_value(row->record->adapter));
        lowest = fmin(lowest, fmin(q->lo, 1.0));
        highest = fmax(highest, fmax(q->hi, 1.0));
    }
    fclose(d);
    if (n == 0) {
        snprintf(reason, size, "no variant with a reference to compare with");
        return false;
    }
    return bars(&f, n, lowest, highest, "elements/s of each variant's fastest adapter over the reference's", 1.0, svg,
                reason, size);
}

/* A dimension of a sweep: the tag its points carry in their variant's name
 * (sluice bench names them <variant>@bs<N>@w<M>), where a record's value
 * of it is, and how the chart draws it. */
typedef struct sweep_axis {
    const char *tag; /* "@bs", "@w" */
    int64_t (*value)(const sl_record *r);
    const char *xlabel;
    bool log_x;
    const char *none; /* the reason when no series has two points */
} sweep_axis;

static int64_t record_batch_size(const sl_record *r)
{
    return r->batch_size;
}

static int64_t record_workers(const sl_record *r)
{
    return r->workers;
}

static const sweep_axis batch_size_axis = {"@bs", record_batch_size, "batch size (log scale)", true,
                                           "no batch-size sweep with two points or more"};
static const sweep_axis workers_axis = {"@w", record_workers, "prefetch workers", false,
                                        "no workers sweep with two points or more"};

/* A sweep point's series, its variant without the axis's tag: "CV-1/32x32
 * fused" for variant "32x32@bs16" on the batch-size axis, "CV-1/32x32@bs16
 * iter" for "32x32@bs16@w2" on the workers axis; false for a record that
 * is no point of that sweep. */
static bool sweep_series(const sl_record *r, const sweep_axis *axis, char *series, size_t size)
{
    size_t tag_length = strlen(axis->tag);
    const char *at = r->variant;
    while ((at = strstr(at, axis->tag)) != NULL && !isdigit((unsigned char)at[tag_length]))
        at++;
    if (!at)
        return false;
    const char *rest = at + tag_length;
    while (isdigit((unsigned char)*rest))
        rest++;
    snprintf(series, size, "%s/%.*s%s %s", r->scenario, (int)(at - r->variant), r->variant, rest, r->adapter);
    return true;
}

#define SCALING_MAX_SERIES 16

static bool sweep_chart(const sl__report *report, const sweep_axis *axis, const char *workdir, char **svg, char *reason,
                        size_t size)
{
    /* The series with their point counts, in the rows' order. */
    char series[SCALING_MAX_SERIES][160];
    int points[SCALING_MAX_SERIES] = {0};
    int nseries = 0;
    for (int i = 0; i < report->nrows; i++) {
        char name[160];
        if (!report->rows[i].ranked || !sweep_series(report->rows[i].record, axis, name, sizeof name))
            continue;
        int k = 0;
        while (k < nseries && strcmp(series[k], name) != 0)
            k++;
        if (k == nseries && nseries == SCALING_MAX_SERIES)
            continue;
        if (k == nseries)
            snprintf(series[nseries++], sizeof series[0], "%s", name);
        points[k]++;
    }
    int drawn = 0;
    for (int k = 0; k < nseries; k++)
        drawn += points[k] >= 2;
    *svg = NULL;
    if (drawn == 0) {
        snprintf(reason, size, "%s", axis->none);
        return false;
    }
    chart_files f;
    FILE *d = begin_chart(workdir, &f, svg, reason, size);
    if (!d)
        return false;
    /* One block per series: the axis's value, ns per element at the median
     * batch time, and at the ends of its interval; sorted by the value. */
    for (int k = 0; k < nseries; k++) {
        if (points[k] < 2)
            continue;
        int64_t last = -1;
        for (int n = 0; n < points[k]; n++) {
            const sl__report_row *next = NULL;
            for (int i = 0; i < report->nrows; i++) {
                const sl__report_row *row = &report->rows[i];
                char name[160];
                if (row->ranked && sweep_series(row->record, axis, name, sizeof name) && strcmp(name, series[k]) == 0 &&
                    axis->value(row->record) > last && (!next || axis->value(row->record) < axis->value(next->record)))
                    next = row;
            }
            if (!next)
                break;
            /* Elements of one measured batch: the batch size, or fewer
             * where the data set ends a batch short. */
            double per = next->t.per_batch;
            fprintf(d, "%lld %.6g %.6g %.6g\n", (long long)axis->value(next->record), next->t.median_ns / per,
                    next->t.lo_ns / per, next->t.hi_ns / per);
            last = axis->value(next->record);
        }
        fputs("\n\n", d);
    }
    fclose(d);
    FILE *s = begin_script(&f, 400, reason, size);
    if (!s)
        return false;
    fprintf(s,
            "%s"
            "set grid xtics ytics\n"
            "set xlabel \"%s\"\n"
            "set ylabel \"ns per element at the median batch time (log scale)\"\n"
            "set key outside right top\n"
            "plot ",
            axis->log_x ? "set logscale xy\n" : "set logscale y\nset xtics 1\n", axis->xlabel);
    int block = 0;
    for (int k = 0; k < nseries; k++) {
        if (points[k] < 2)
            continue;
        char name[160];
        label(name, sizeof name, series[k]);
        fprintf(s, "%s'%s' index %d using 1:2:3:4 with yerrorlines lw 2 title '%s'", block ? ", \\\n     " : "", f.data,
                block, name);
        block++;
    }
    fputc('\n', s);
    fclose(s);
    return draw(&f, svg, reason, size);
}

bool sl__chart_batch_scaling(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size)
{
    return sweep_chart(report, &batch_size_axis, workdir, svg, reason, size);
}

bool sl__chart_workers_scaling(const sl__report *report, const char *workdir, char **svg, char *reason, size_t size)
{
    return sweep_chart(report, &workers_axis, workdir, svg, reason, size);
}
