/* A history's series and the steps in them (sluice/records/history.h): one series
 * per machine and row, its measured points' log rates searched for change
 * points (sluice/core/changepoint.h), each change sized by the Hodges-Lehmann
 * shift of the segments beside it, the ones below the minimum effect
 * dropped, and each checked against the instruction counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/core/stats.h"
#include "sluice/records/history.h"

void sl_history_defaults(sl_history_options *options)
{
    sl_changepoint_defaults(&options->changepoint);
    options->min_effect = SL_HISTORY_MIN_EFFECT;
    options->instructions_threshold = SL_HISTORY_INSTRUCTIONS_THRESHOLD;
}

const char *sl_step_instructions_name(sl_step_instructions value)
{
    switch (value) {
    case SL_STEP_CONFIRMED: return "confirmed";
    case SL_STEP_UNCHANGED: return "unchanged";
    case SL_STEP_CONTRADICTED: return "contradicted";
    case SL_STEP_NOT_COUNTED: break;
    }
    return "not counted";
}

const sl_history_row *sl_history_point_row(const sl_history *history, const sl_history_point *point)
{
    return &history->runs[point->run].rows[point->row];
}

const sl_history_run *sl_history_point_run(const sl_history *history, const sl_history_point *point)
{
    return &history->runs[point->run];
}

/* --- grouping rows into series --------------------------------------------- */

/* Keys in the order the series are listed: scenario, variant, adapter,
 * profile, kernel table, threads, workers. */
static int compare_keys(const sl_history_key *x, const sl_history_key *y)
{
    int c;
    if ((c = strcmp(x->scenario, y->scenario)) || (c = strcmp(x->variant, y->variant)) ||
        (c = strcmp(x->adapter, y->adapter)) || (c = strcmp(x->profile, y->profile)) ||
        (c = strcmp(x->kernels, y->kernels)))
        return c;
    if (x->threads != y->threads)
        return (x->threads > y->threads) - (x->threads < y->threads);
    return (x->workers > y->workers) - (x->workers < y->workers);
}

static int compare_series(const void *a, const void *b)
{
    const sl_history_series *x = a, *y = b;
    return x->machine != y->machine ? x->machine - y->machine : compare_keys(&x->key, &y->key);
}

static sl_history_series *series_for(sl_history_series **all, int *n, int *capacity, int machine,
                                     const sl_history_row *row)
{
    for (int i = *n - 1; i >= 0; i--)
        if ((*all)[i].machine == machine && compare_keys(&(*all)[i].key, &row->key) == 0)
            return &(*all)[i];
    if (*n == *capacity) {
        *capacity = *capacity ? 2 * *capacity : 64;
        sl_history_series *grown = realloc(*all, (size_t)*capacity * sizeof *grown);
        if (!grown)
            return NULL;
        *all = grown;
    }
    sl_history_series *s = &(*all)[(*n)++];
    memset(s, 0, sizeof *s);
    s->machine = machine;
    s->key = row->key;
    return s;
}

static bool add_point(sl_history_series *s, int run, int row)
{
    /* Points arrive in run order, which is commit order within a machine;
     * the array doubles whenever its length reaches a power of two. */
    if ((s->npoints & (s->npoints - 1)) == 0) {
        size_t capacity = s->npoints ? 2 * (size_t)s->npoints : 1;
        sl_history_point *grown = realloc(s->points, capacity * sizeof *grown);
        if (!grown)
            return false;
        s->points = grown;
    }
    s->points[s->npoints++] = (sl_history_point){run, row};
    return true;
}

/* --- steps --------------------------------------------------------------------- */

/* The step at measured point c (the first after the change), sized from
 * the measured points between the cuts beside it, of at most
 * SL_HISTORY_STEP_WINDOW commits (groups) on each side. */
static bool size_step(const double *x, const int *group, int start, int c, int end, sl_shift *shift)
{
    int from = c;
    while (from > start && group[c - 1] - group[from - 1] < SL_HISTORY_STEP_WINDOW)
        from--;
    int to = c;
    while (to < end && group[to] - group[c] < SL_HISTORY_STEP_WINDOW)
        to++;
    return sl_shift_estimate(x + from, c - from, x + c, to - c, SL_CI_LEVEL, shift);
}

static sl_step_instructions check_instructions(const sl_history_row *before, const sl_history_row *after, double change,
                                               double threshold, double *moved)
{
    *moved = 0.0;
    if (before->instructions <= 0 || after->instructions <= 0)
        return SL_STEP_NOT_COUNTED;
    *moved = (double)after->instructions / (double)before->instructions - 1.0;
    if (fabs(*moved) < threshold)
        return SL_STEP_UNCHANGED;
    /* Fewer elements per second should come with more instructions. */
    return (*moved > 0) == (change < 0) ? SL_STEP_CONFIRMED : SL_STEP_CONTRADICTED;
}

/* The change points of the measured points x[start, end) (one stretch of
 * one kernel choice), sized, the ones below the minimum effect dropped;
 * appended to cp and shift (indices into x). Returns how many, or -1 when
 * memory ran out. */
static int stretch_steps(const double *x, const int *group, int start, int end, const sl_history_options *options,
                         sl_changepoint *cp, sl_shift *shift)
{
    int n = end - start;
    int ncp = sl_edivisive_grouped(x + start, group + start, n, &options->changepoint, cp, n);
    if (ncp < 0)
        return -1;
    for (int k = 0; k < ncp; k++)
        cp[k].index += start;
    /* Size every change from its neighbours; drop the smallest one below
     * the minimum effect and size the rest again (its segments merged),
     * until every change left is large enough to report. */
    while (ncp > 0) {
        int smallest = -1;
        for (int k = 0; k < ncp; k++) {
            int from = k > 0 ? cp[k - 1].index : start, to = k + 1 < ncp ? cp[k + 1].index : end;
            if (!size_step(x, group, from, cp[k].index, to, &shift[k]))
                return -1;
            double effect = fabs(expm1(shift[k].estimate));
            if (effect < options->min_effect && (smallest < 0 || effect < fabs(expm1(shift[smallest].estimate))))
                smallest = k;
        }
        if (smallest < 0)
            break;
        memmove(&cp[smallest], &cp[smallest + 1], (size_t)(ncp - smallest - 1) * sizeof *cp);
        ncp--;
    }
    return ncp;
}

static sl_status find_steps(const sl_history *history, const sl_history_options *options, sl_history_series *s,
                            sl_err *err)
{
    size_t room = (size_t)(s->npoints ? s->npoints : 1);
    int *measured = malloc(room * sizeof *measured), *group = malloc(room * sizeof *group);
    double *x = malloc(room * sizeof *x);
    sl_changepoint *cp = malloc(room * sizeof *cp);
    sl_shift *shift = malloc(room * sizeof *shift);
    s->steps = calloc(room, sizeof *s->steps);
    s->kernel_changes = calloc(room, sizeof *s->kernel_changes);
    sl_status status = SL_OK;
    if (!measured || !group || !x || !cp || !shift || !s->steps || !s->kernel_changes)
        status = sl_fail(err, SL_ENOMEM, "out of memory for the steps of %s %s %s", s->key.scenario, s->key.variant,
                         s->key.adapter);
    /* The measured points' log rates, each with its commit (the run) as
     * its group: a commit's processes are points of one group. */
    int n = 0;
    for (int i = 0; status == SL_OK && i < s->npoints; i++) {
        const sl_history_row *row = sl_history_point_row(history, &s->points[i]);
        double rate = row->measured ? sl_history_rate(&row->figure) : 0.0;
        if (rate > 0.0 && isfinite(rate)) {
            measured[n] = i;
            group[n] = s->points[i].run;
            x[n++] = log(rate);
        }
    }
    s->measured_points = n;
    for (int i = 0; i < n; i++)
        s->measured_commits += i == 0 || group[i] != group[i - 1];
    /* Stretches of one kernel choice, each searched on its own: a changed
     * choice is the tuner's, so it is flagged and never compared across. */
    for (int start = 0; status == SL_OK && start < n;) {
        const char *choice = sl_history_point_row(history, &s->points[measured[start]])->kernel_choice;
        int end = start + 1;
        while (end < n && strcmp(sl_history_point_row(history, &s->points[measured[end]])->kernel_choice, choice) == 0)
            end++;
        if (end < n)
            s->kernel_changes[s->nkernel_changes++] = measured[end];
        int commits = 0;
        for (int i = start; i < end; i++)
            commits += i == start || group[i] != group[i - 1];
        if (sl_changepoint_testable(end - start, commits, &options->changepoint))
            s->testable = true;
        int ncp = stretch_steps(x, group, start, end, options, cp, shift);
        if (ncp < 0)
            status = sl_fail(err, SL_ENOMEM, "out of memory searching %s %s %s for steps", s->key.scenario,
                             s->key.variant, s->key.adapter);
        for (int k = 0; status == SL_OK && k < ncp; k++) {
            sl_history_step *step = &s->steps[s->nsteps++];
            step->before = measured[cp[k].index - 1];
            step->after = measured[cp[k].index];
            step->change = expm1(shift[k].estimate);
            step->change_lo = expm1(shift[k].lo);
            step->change_hi = expm1(shift[k].hi);
            step->level = shift[k].level;
            step->p = cp[k].p;
            step->instructions =
                check_instructions(sl_history_point_row(history, &s->points[step->before]),
                                   sl_history_point_row(history, &s->points[step->after]), step->change,
                                   options->instructions_threshold, &step->instructions_change);
        }
        start = end;
    }
    free(measured);
    free(group);
    free(x);
    free(cp);
    free(shift);
    return status;
}

sl_status sl_history_analyze(const sl_history *history, const sl_history_options *options, sl_history_series **series,
                             int *nseries, sl_err *err)
{
    sl_history_options defaults;
    sl_history_defaults(&defaults);
    if (!options)
        options = &defaults;
    *series = NULL;
    *nseries = 0;
    int capacity = 0;
    sl_status status = SL_OK;
    for (int r = 0; status == SL_OK && r < history->nruns; r++) {
        const sl_history_run *run = &history->runs[r];
        int machine = sl_history_find_machine(history, run->machine);
        for (int i = 0; status == SL_OK && i < run->nrows; i++) {
            sl_history_series *s = series_for(series, nseries, &capacity, machine, &run->rows[i]);
            if (!s || !add_point(s, r, i))
                status = sl_fail(err, SL_ENOMEM, "out of memory grouping %d runs into series", history->nruns);
        }
    }
    if (status == SL_OK && *nseries > 1)
        qsort(*series, (size_t)*nseries, sizeof **series, compare_series);
    for (int i = 0; status == SL_OK && i < *nseries; i++)
        status = find_steps(history, options, &(*series)[i], err);
    if (status != SL_OK) {
        sl_history_series_free(*series, *nseries);
        *series = NULL;
        *nseries = 0;
    }
    return status;
}

void sl_history_series_free(sl_history_series *series, int nseries)
{
    for (int i = 0; i < nseries; i++) {
        free(series[i].points);
        free(series[i].steps);
        free(series[i].kernel_changes);
    }
    free(series);
}
