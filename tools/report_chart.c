/* Charts for the report, drawn by gnuplot (Debian's gnuplot-nox) as SVG so
 * that the HTML page embeds them and stays one self-contained file. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "report.h"

extern char **environ;

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
        snprintf(reason, size, "gnuplot failed on %s", script);
        return false;
    }
    return true;
}

bool sl__report_chart(const sl__report *report, int first, int end, const char *workdir, char **svg, char *reason,
                      size_t size)
{
    *svg = NULL;
    char data[4096], script[4096], out[4096];
    snprintf(data, sizeof data, "%s/chart.dat", workdir);
    snprintf(script, sizeof script, "%s/chart.gp", workdir);
    snprintf(out, sizeof out, "%s/chart.svg", workdir);
    FILE *f = fopen(data, "w");
    if (!f) {
        snprintf(reason, size, "cannot write %s: %s", data, strerror(errno));
        return false;
    }
    int bars = 0;
    for (int i = first; i < end; i++) {
        const sl__report_row *row = &report->rows[i];
        if (!row->ranked)
            continue;
        fprintf(f, "\"%s\" %.6g %.6g %.6g\n", row->record->adapter, row->throughput, row->throughput_lo,
                row->throughput_hi);
        bars++;
    }
    fclose(f);
    if (bars == 0) {
        snprintf(reason, size, "no ranked adapter to draw");
        return false;
    }
    const sl_record *r = report->rows[first].record;
    f = fopen(script, "w");
    if (!f) {
        snprintf(reason, size, "cannot write %s: %s", script, strerror(errno));
        return false;
    }
    fprintf(f,
            "set terminal svg size 560,280 font 'sans,11' background rgb 'white'\n"
            "set output '%s'\n"
            "set title '%s / %s: elements/s, median and 95%% interval'\n"
            "set style fill solid 0.6 border -1\n"
            "set boxwidth 0.6\n"
            "set yrange [0:*]\n"
            "set grid ytics\n"
            "unset key\n"
            "set format y '%%.1s%%c'\n"
            "set xrange [-0.6:%d.6]\n"
            "plot '%s' using 0:2:xtic(1) with boxes lc rgb '#4477aa', \\\n"
            "     '' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0\n",
            out, r->scenario, r->variant, bars - 1, data);
    fclose(f);
    if (!run_gnuplot(script, reason, size))
        return false;
    char *text = NULL;
    size_t length = 0;
    sl_err err = {0};
    if (sl_read_file(out, &text, &length, &err) != SL_OK) {
        snprintf(reason, size, "%s", err.msg);
        return false;
    }
    /* The XML prolog and doctype are not allowed inside an HTML body. */
    char *start = strstr(text, "<svg");
    if (!start) {
        free(text);
        snprintf(reason, size, "gnuplot wrote no <svg> element to %s", out);
        return false;
    }
    *svg = sl__cli_strdup(start);
    free(text);
    return true;
}
