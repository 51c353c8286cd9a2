/* The gate's decision rules (sluice/records/gate.h).
 *
 * Wall time. The unit is the process: repetitions inside one process agree
 * to a couple of percent, while two processes of the same binary may sit
 * 30% apart (address-space layout, thread placement, where the fixture's
 * pages landed). A test over repetitions, or over batches, reads the
 * processes' differences as the code's and calls them significant; here
 * each process gives one figure (the median of its repetitions' medians)
 * and the test is Student's t over the logs of those figures, the model
 * with a random effect per process. The rows of a check are one family:
 * Holm's procedure keeps the chance of calling any row slower by the test
 * at alpha. A change must also be large (min_effect) and larger than the
 * base's own spread between processes; when the runs waited for a CPU long
 * enough that the wait alone could make the change (or the wait is
 * unknown), or the machine was loaded, the row says it cannot tell. And a
 * row whose test could not have seen min_effect with the processes it has
 * says "cannot tell" and how many it would need, never "same": a verdict
 * of no change needs the power to see one. docs/gate.md gives the
 * measured spreads and rates.
 *
 * Counts. Callgrind's instructions and simulated cache misses per batch
 * are deterministic; a row is slower when they grow past a threshold, set
 * above what a harmless change of code generation moves them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/core/stats.h"
#include "sluice/records/gate.h"

void sl_gate_options_init(sl_gate_options *options)
{
    *options = (sl_gate_options){.alpha = 0.01, .min_effect = 0.05, .power = 0.8};
}

double sl_gate_max_cpu_wait(const sl_gate_options *options)
{
    if (options->max_cpu_wait != 0.0)
        return options->max_cpu_wait;
    return options->min_effect / (1.0 + options->min_effect);
}

const char *sl_gate_verdict_name(sl_gate_verdict verdict)
{
    switch (verdict) {
    case SL_GATE_SLOWER: return "slower";
    case SL_GATE_FASTER: return "faster";
    case SL_GATE_INCONCLUSIVE: return "inconclusive";
    case SL_GATE_NOT_OK: return "not ok";
    default: return "same";
    }
}

/* Each repetition's median, doubled so that a median between two batches
 * stays an exact integer. */
static bool repetition_medians(const int64_t *samples, size_t count, size_t per_repetition, double inflate,
                               int64_t *medians)
{
    int64_t *scaled = malloc(per_repetition * sizeof *scaled);
    bool ok = scaled != NULL;
    for (size_t r = 0; ok && r < count / per_repetition; r++) {
        for (size_t i = 0; i < per_repetition; i++)
            scaled[i] = (int64_t)llround((double)samples[r * per_repetition + i] * (1.0 + inflate));
        sl_median_ci ci;
        ok = sl_median_ci_i64(scaled, per_repetition, SL_CI_LEVEL, &ci);
        medians[r] = ok ? (int64_t)llround(2.0 * ci.median) : 0;
    }
    free(scaled);
    return ok;
}

/* One side's process figures: the median of each process's repetition
 * medians (doubled, as they are). False for process numbers that are not 0
 * first, then the same or one more, or too many processes. */
static bool process_figures(const sl_gate_side *side, size_t per_repetition, double inflate, int64_t *figures,
                            int *processes, int *repetitions)
{
    size_t reps = side->count / per_repetition;
    int64_t *medians = malloc((reps ? reps : 1) * sizeof *medians);
    bool ok = medians && repetition_medians(side->samples, side->count, per_repetition, inflate, medians);
    *processes = 0;
    *repetitions = (int)reps;
    for (size_t first = 0; ok && first < reps;) {
        int process = side->process ? side->process[first] : 0;
        size_t end = first;
        while (end < reps && (side->process ? side->process[end] : 0) == process)
            end++;
        sl_median_ci ci;
        ok = process == *processes && *processes < SL_GATE_MAX_PROCESSES &&
             sl_median_ci_i64(medians + first, end - first, SL_CI_LEVEL, &ci) && ci.median > 0.0;
        if (ok)
            figures[(*processes)++] = (int64_t)llround(ci.median);
        first = end;
    }
    free(medians);
    return ok && *processes > 0;
}

/* How much the base's processes disagree: the width of the 95%
 * order-statistic interval of their median, over that median (below 6
 * figures, the range over the median). */
static double spread_of(const int64_t *v, size_t n)
{
    sl_median_ci ci;
    if (!sl_median_ci_i64(v, n, SL_CI_LEVEL, &ci) || !(ci.median > 0.0))
        return INFINITY;
    return (ci.hi - ci.lo) / ci.median;
}

/* The mean and the sum of squared deviations of the logs of n figures. */
static void log_moments(const int64_t *v, int n, double *mean, double *squares)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += log((double)v[i]);
    *mean = sum / n;
    *squares = 0.0;
    for (int i = 0; i < n; i++) {
        double d = log((double)v[i]) - *mean;
        *squares += d * d;
    }
}

double sl_gate_detectable(int n, double sd, double level, double power)
{
    if (n < 2 || !(sd >= 0.0))
        return INFINITY;
    double df = 2.0 * n - 2.0;
    double reach = sl_student_t_quantile_upper(level, df) + sl_student_t_quantile_upper(1.0 - power, df);
    return expm1(reach * sd * sqrt(2.0 / n));
}

bool sl_gate_compare(const sl_gate_side *base, const sl_gate_side *fresh, size_t per_repetition, sl_gate_busy busy,
                     const sl_gate_options *options, sl_gate_result *out)
{
    bool waits_known = busy.base_cpu_wait >= 0.0 && busy.new_cpu_wait >= 0.0;
    *out = (sl_gate_result){.load = busy.load,
                            .cpu_wait = waits_known ? fmax(busy.base_cpu_wait, busy.new_cpu_wait) : -1.0,
                            .wait_gap = waits_known ? busy.new_cpu_wait - busy.base_cpu_wait : 0.0,
                            .process_spread = -1.0,
                            .detectable = -1.0,
                            .verdict = SL_GATE_NOT_OK};
    if (base->count == 0 || fresh->count == 0 || per_repetition == 0 || base->count % per_repetition ||
        fresh->count % per_repetition)
        return false;
    int64_t b[SL_GATE_MAX_PROCESSES], n[SL_GATE_MAX_PROCESSES];
    int nb = 0, nn = 0;
    if (!process_figures(base, per_repetition, 0.0, b, &nb, &out->base_repetitions) ||
        !process_figures(fresh, per_repetition, options->inflate, n, &nn, &out->new_repetitions))
        return false;
    double mean_b, mean_n, squares_b, squares_n;
    log_moments(b, nb, &mean_b, &squares_b);
    log_moments(n, nn, &mean_n, &squares_n);
    out->base_processes = nb;
    out->new_processes = nn;
    /* Geometric means of the process figures (doubled medians, halved). */
    out->base_median = exp(mean_b) / 2.0;
    out->new_median = exp(mean_n) / 2.0;
    out->ratio = exp(mean_n - mean_b);
    out->base_spread = spread_of(b, (size_t)nb);
    out->p_slower = out->p_faster = 1.0;
    int df = nb + nn - 2;
    if (nb >= 2 && nn >= 2) {
        double sd = sqrt((squares_b + squares_n) / df);
        out->process_spread = expm1(sd);
        double difference = mean_n - mean_b;
        if (sd > 0.0) {
            double t = difference / (sd * sqrt(1.0 / nb + 1.0 / nn));
            out->p_slower = sl_student_t_upper(t, df);
            out->p_faster = sl_student_t_upper(-t, df);
        } else {
            /* Processes that agree exactly: any difference is certain. */
            out->p_slower = difference > 0.0 ? 0.0 : 1.0;
            out->p_faster = difference < 0.0 ? 0.0 : 1.0;
        }
    }
    out->verdict = SL_GATE_SAME;
    return true;
}

/* The power rule: the smallest change the row detects with its processes,
 * and how many a side it would need to detect min_effect, at level (the
 * first Holm step, alpha over the rows: the bar a row must clear when all
 * are tested together). */
static void set_power(sl_gate_result *r, double level, const sl_gate_options *options)
{
    double power = options->power > 0.0 ? options->power : 0.8;
    if (r->process_spread < 0.0) {
        r->needed_processes = 0;
        return;
    }
    double sd = log1p(r->process_spread);
    int n = r->base_processes < r->new_processes ? r->base_processes : r->new_processes;
    r->detectable = sl_gate_detectable(n, sd, level, power);
    r->needed_processes = -1;
    for (int k = 2; k <= SL_GATE_MAX_PROCESSES; k++)
        if (sl_gate_detectable(k, sd, level, power) <= options->min_effect) {
            r->needed_processes = k;
            break;
        }
}

static void say_needed(const sl_gate_result *r, char *text, size_t size)
{
    if (r->needed_processes > 0)
        snprintf(text, size, "%d processes a side", r->needed_processes);
    else if (r->needed_processes < 0)
        snprintf(text, size, "more than %d processes a side", SL_GATE_MAX_PROCESSES);
    else
        snprintf(text, size, "2 or more processes a side to measure their spread");
}

/* Whether a change that is slower by the test is not believed; the rule
 * says why. */
static bool slower_doubted(sl_gate_result *r, const sl_gate_options *options, double change)
{
    double max_wait = sl_gate_max_cpu_wait(options);
    if (max_wait >= 0.0 && r->cpu_wait < 0.0)
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but how long the runs waited for a CPU is "
                 "unknown",
                 change, r->p_slower);
    else if (max_wait >= 0.0 && r->wait_gap > max_wait)
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but its runs waited for a CPU %.1f points of "
                 "their time more than the base's, above %.1f",
                 change, r->p_slower, r->wait_gap * 100.0, max_wait * 100.0);
    else if (options->max_load > 0.0 && r->load > options->max_load)
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but the load average reached %.1f, above %.1f",
                 change, r->p_slower, r->load, options->max_load);
    else if (options->max_base_spread > 0.0 && r->base_spread > options->max_base_spread)
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but the base's %d processes disagree by %.1f%%, "
                 "more than %.0f%%",
                 change, r->p_slower, r->base_processes, r->base_spread * 100.0, options->max_base_spread * 100.0);
    else if (r->ratio - 1.0 <= r->base_spread)
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but within the base's own spread between its %d "
                 "processes (%.1f%%)",
                 change, r->p_slower, r->base_processes, r->base_spread * 100.0);
    else
        return false;
    return true;
}

static void decide_row(sl_gate_result *r, bool slower_significant, bool faster_significant, double faster_level,
                       int family, const sl_gate_options *options)
{
    double change = (r->ratio - 1.0) * 100.0;
    bool large = r->ratio >= 1.0 + options->min_effect;
    char needed[64];
    set_power(r, options->alpha / family, options);
    say_needed(r, needed, sizeof needed);
    if (r->base_processes < 2 || r->new_processes < 2) {
        r->verdict = SL_GATE_INCONCLUSIVE;
        snprintf(r->rule, sizeof r->rule, "cannot tell: %d process%s against %d (%+.1f%%); the test needs %s",
                 r->base_processes, r->base_processes == 1 ? "" : "es", r->new_processes, change, needed);
    } else if (large && slower_significant) {
        r->verdict = SL_GATE_INCONCLUSIVE;
        if (!slower_doubted(r, options, change)) {
            r->verdict = SL_GATE_SLOWER;
            snprintf(r->rule, sizeof r->rule, "slower: %+.1f%% >= %.0f%% and p %.2g <= %.2g (Holm over %d rows)",
                     change, options->min_effect * 100.0, r->p_slower, r->holm_level, family);
        }
    } else if (r->ratio <= 1.0 / (1.0 + options->min_effect) && faster_significant) {
        r->verdict = SL_GATE_FASTER;
        snprintf(r->rule, sizeof r->rule, "faster: %+.1f%% and p %.2g <= %.2g (Holm over %d rows)", change, r->p_faster,
                 faster_level, family);
    } else if (!(r->detectable <= options->min_effect)) {
        r->verdict = SL_GATE_INCONCLUSIVE;
        snprintf(r->rule, sizeof r->rule,
                 "cannot tell: %+.1f%% (p %.2g); %d processes a side spread %.1f%% detect %.1f%%, not %.0f%%: that "
                 "needs %s",
                 change, r->p_slower, r->base_processes < r->new_processes ? r->base_processes : r->new_processes,
                 r->process_spread * 100.0, r->detectable * 100.0, options->min_effect * 100.0, needed);
    } else if (!large) {
        r->verdict = SL_GATE_SAME;
        snprintf(r->rule, sizeof r->rule, "same: %+.1f%%, under the %.0f%% that counts (detects %.1f%%)", change,
                 options->min_effect * 100.0, r->detectable * 100.0);
    } else {
        r->verdict = SL_GATE_SAME;
        snprintf(r->rule, sizeof r->rule, "same: %+.1f%% but p %.2g > %.2g (Holm over %d rows; detects %.1f%%)", change,
                 r->p_slower, r->holm_level, family, r->detectable * 100.0);
    }
}

void sl_gate_decide(sl_gate_result *rows, int count, const sl_gate_options *options)
{
    int family = 0;
    for (int i = 0; i < count; i++)
        family += rows[i].verdict != SL_GATE_NOT_OK;
    double *p_slower = calloc((size_t)(family > 0 ? family : 1), sizeof *p_slower);
    double *p_faster = calloc((size_t)(family > 0 ? family : 1), sizeof *p_faster);
    double *slower_level = calloc((size_t)(family > 0 ? family : 1), sizeof *slower_level);
    double *faster_level = calloc((size_t)(family > 0 ? family : 1), sizeof *faster_level);
    bool *slower = calloc((size_t)(family > 0 ? family : 1), sizeof *slower);
    bool *faster = calloc((size_t)(family > 0 ? family : 1), sizeof *faster);
    if (!p_slower || !p_faster || !slower_level || !faster_level || !slower || !faster) {
        /* Without memory for the family, no row can be called anything. */
        for (int i = 0; i < count; i++)
            if (rows[i].verdict != SL_GATE_NOT_OK) {
                rows[i].verdict = SL_GATE_INCONCLUSIVE;
                snprintf(rows[i].rule, sizeof rows[i].rule, "inconclusive: out of memory for the rows' tests");
            }
    } else {
        for (int i = 0, k = 0; i < count; i++)
            if (rows[i].verdict != SL_GATE_NOT_OK) {
                p_slower[k] = rows[i].p_slower;
                p_faster[k++] = rows[i].p_faster;
            }
        sl_holm(p_slower, family, options->alpha, slower, slower_level);
        sl_holm(p_faster, family, options->alpha, faster, faster_level);
        for (int i = 0, k = 0; i < count; i++) {
            if (rows[i].verdict == SL_GATE_NOT_OK)
                continue;
            rows[i].holm_level = slower_level[k];
            decide_row(&rows[i], slower[k], faster[k], faster_level[k], family, options);
            k++;
        }
    }
    free(p_slower);
    free(p_faster);
    free(slower_level);
    free(faster_level);
    free(slower);
    free(faster);
}

void sl_gate_count_options_init(sl_gate_count_options *options)
{
    *options = (sl_gate_count_options){.max_instructions = 0.02,
                                       .min_instructions = 1000.0,
                                       .max_d1 = 0.25,
                                       .min_miss_share = 0.005,
                                       .max_ll = 1.0,
                                       .min_ll_share = 0.01};
}

static double growth(double base, double fresh)
{
    return base > 0.0 ? fresh / base - 1.0 : (fresh > 0.0 ? INFINITY : 0.0);
}

/* A miss count that grew past its threshold by a number of misses that
 * matters against the row's instructions (share of them). */
static bool misses_grew(double base, double fresh, double threshold, double instructions, double share)
{
    return growth(base, fresh) > threshold && fresh - base >= share * instructions;
}

sl_gate_verdict sl_gate_compare_counts(const sl_gate_counts *base, const sl_gate_counts *fresh,
                                       const sl_gate_count_options *options, char *rule, size_t size)
{
    double ir = growth(base->instructions, fresh->instructions);
    double d1 = growth(base->d1_misses, fresh->d1_misses);
    double ll = growth(base->ll_misses, fresh->ll_misses);
    if (ir > options->max_instructions && fresh->instructions - base->instructions >= options->min_instructions) {
        snprintf(rule, size, "slower: instructions per batch %+.2f%% > %.0f%% (%+.0f)", ir * 100.0,
                 options->max_instructions * 100.0, fresh->instructions - base->instructions);
        return SL_GATE_SLOWER;
    }
    if (misses_grew(base->d1_misses, fresh->d1_misses, options->max_d1, fresh->instructions, options->min_miss_share)) {
        snprintf(rule, size, "slower: D1 misses per batch %+.1f%% > %.0f%% (%+.0f)", d1 * 100.0,
                 options->max_d1 * 100.0, fresh->d1_misses - base->d1_misses);
        return SL_GATE_SLOWER;
    }
    if (misses_grew(base->ll_misses, fresh->ll_misses, options->max_ll, fresh->instructions, options->min_ll_share)) {
        snprintf(rule, size, "slower: LL misses per batch %+.1f%% > %.0f%% (%+.0f)", ll * 100.0,
                 options->max_ll * 100.0, fresh->ll_misses - base->ll_misses);
        return SL_GATE_SLOWER;
    }
    if (ir < -options->max_instructions && base->instructions - fresh->instructions >= options->min_instructions) {
        snprintf(rule, size, "faster: instructions per batch %+.2f%%", ir * 100.0);
        return SL_GATE_FASTER;
    }
    snprintf(rule, size, "same: instructions %+.2f%%, D1 misses %+.1f%%, LL misses %+.1f%% per batch", ir * 100.0,
             d1 * 100.0, ll * 100.0);
    return SL_GATE_SAME;
}
