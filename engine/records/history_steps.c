/* A history's series and the steps in them (sluice/history.h): one series
 * per machine and row, its measured points' log rates searched for change
 * points (sluice/changepoint.h), each change sized by the Hodges-Lehmann
 * shift of the segments beside it, the ones below the minimum effect
 * dropped, and each checked against the instruction counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/history.h"
#include "sluice/stats.h"

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
 * the measured points between the cuts beside it, at most
 * SL_HISTORY_STEP_WINDOW on each side. */
static bool size_step(const double *x, int start, int c, int end, sl_shift *shift)
{
    int from = c - start > SL_HISTORY_STEP_WINDOW ? c - SL_HISTORY_STEP_WINDOW : start;
    int to = end - c > SL_HISTORY_STEP_WINDOW ? c + SL_HISTORY_STEP_WINDOW : end;
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

static sl_status find_steps(const sl_history *history, const sl_history_options *options, sl_history_series *s,
                            sl_err *err)
{
    int *measured = malloc((size_t)(s->npoints ? s->npoints : 1) * sizeof *measured);
    double *x = malloc((size_t)(s->npoints ? s->npoints : 1) * sizeof *x);
    sl_changepoint *cp = malloc((size_t)(s->npoints ? s->npoints : 1) * sizeof *cp);
    sl_shift *shift = malloc((size_t)(s->npoints ? s->npoints : 1) * sizeof *shift);
    if (!measured || !x || !cp || !shift) {
        free(measured);
        free(x);
        free(cp);
        free(shift);
        return sl_fail(err, SL_ENOMEM, "out of memory for the steps of %s %s %s", s->key.scenario, s->key.variant,
                       s->key.adapter);
    }
    int n = 0;
    for (int i = 0; i < s->npoints; i++) {
        const sl_history_row *row = sl_history_point_row(history, &s->points[i]);
        double rate = row->measured ? sl_history_rate(&row->figure) : 0.0;
        if (rate > 0.0 && isfinite(rate)) {
            measured[n] = i;
            x[n++] = log(rate);
        }
    }
    int ncp = sl_edivisive(x, n, &options->changepoint, cp, n);
    sl_status status = ncp < 0 ? sl_fail(err, SL_ENOMEM, "out of memory searching %s %s %s for steps", s->key.scenario,
                                         s->key.variant, s->key.adapter)
                               : SL_OK;
    /* Size every change from its neighbours; drop the smallest one below
     * the minimum effect and size the rest again (its segments merged),
     * until every change left is large enough to report. */
    while (status == SL_OK && ncp > 0) {
        int smallest = -1;
        for (int k = 0; k < ncp; k++) {
            int start = k > 0 ? cp[k - 1].index : 0, end = k + 1 < ncp ? cp[k + 1].index : n;
            if (!size_step(x, start, cp[k].index, end, &shift[k])) {
                status = sl_fail(err, SL_ENOMEM, "out of memory sizing the steps of %s %s %s", s->key.scenario,
                                 s->key.variant, s->key.adapter);
                break;
            }
            double effect = fabs(expm1(shift[k].estimate));
            if (effect < options->min_effect && (smallest < 0 || effect < fabs(expm1(shift[smallest].estimate))))
                smallest = k;
        }
        if (status != SL_OK || smallest < 0)
            break;
        memmove(&cp[smallest], &cp[smallest + 1], (size_t)(ncp - smallest - 1) * sizeof *cp);
        ncp--;
    }
    if (status == SL_OK && ncp > 0 && !(s->steps = calloc((size_t)ncp, sizeof *s->steps)))
        status = sl_fail(err, SL_ENOMEM, "out of memory for the steps of %s %s %s", s->key.scenario, s->key.variant,
                         s->key.adapter);
    for (int k = 0; status == SL_OK && k < ncp; k++) {
        sl_history_step *step = &s->steps[s->nsteps++];
        step->before = measured[cp[k].index - 1];
        step->after = measured[cp[k].index];
        step->change = expm1(shift[k].estimate);
        step->change_lo = expm1(shift[k].lo);
        step->change_hi = expm1(shift[k].hi);
        step->level = shift[k].level;
        step->p = cp[k].p;
        step->instructions = check_instructions(sl_history_point_row(history, &s->points[step->before]),
                                                sl_history_point_row(history, &s->points[step->after]), step->change,
                                                options->instructions_threshold, &step->instructions_change);
    }
    free(measured);
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
    }
    free(series);
}
