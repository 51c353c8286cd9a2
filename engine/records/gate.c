/* The gate's decision rules (sluice/gate.h).
 *
 * Wall time. Batches of one repetition move together when the machine is
 * busy, so a test over batches treats a repetition's drift as sixty pieces
 * of evidence; the test here is over repetition medians, one per fresh
 * run, with the exact Mann-Whitney p. The rows of a check are one family:
 * Holm's procedure keeps the chance of calling any row slower by the test
 * at alpha, where eighteen or twenty-four rows each at alpha once made a
 * false alarm of one decision in four. A change must also be large
 * (min_effect), and when the base's own repetitions disagree by more than
 * the gate is asked to resolve, or the runs waited for a CPU long enough
 * that the wait alone could make the change, or the machine was loaded,
 * the row says it cannot tell instead of guessing. The wait is the direct
 * measure: a load generator with one busy process per CPU holds the load
 * average near the CPU count, under any threshold a busy runner's normal
 * load allows, while it takes a third of each run's time from whichever
 * side it meets. docs/gate.md gives the measured rates.
 *
 * Counts. Callgrind's instructions and simulated cache misses per batch
 * are deterministic; a row is slower when they grow past a threshold, set
 * above what a harmless change of code generation moves them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/gate.h"
#include "sluice/stats.h"

void sl_gate_options_init(sl_gate_options *options)
{
    *options = (sl_gate_options){.alpha = 0.01, .min_effect = 0.05};
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
 * stays an exact integer for the rank test. */
static int64_t *repetition_medians(const int64_t *samples, size_t n, size_t per_repetition, size_t *count)
{
    *count = n / per_repetition;
    int64_t *medians = malloc(*count * sizeof *medians);
    for (size_t r = 0; medians && r < *count; r++) {
        sl_median_ci ci;
        if (!sl_median_ci_i64(samples + r * per_repetition, per_repetition, SL_CI_LEVEL, &ci)) {
            free(medians);
            return NULL;
        }
        medians[r] = (int64_t)llround(2.0 * ci.median);
    }
    return medians;
}

/* How much the base's repetitions disagree: the width of the 95%
 * order-statistic interval of their median, over that median. A range
 * (largest over smallest) would grow with every repetition added, and one
 * repetition that met a stall would decide it; the interval's ends are
 * ranks 4 and 12 of 15, so it measures the spread of the typical
 * repetitions. Below 6 repetitions it is the range. */
static double spread_of(const int64_t *v, size_t n)
{
    sl_median_ci ci;
    if (!sl_median_ci_i64(v, n, SL_CI_LEVEL, &ci) || !(ci.median > 0.0))
        return INFINITY;
    return (ci.hi - ci.lo) / ci.median;
}

bool sl_gate_compare(const int64_t *base, size_t nbase, const int64_t *fresh, size_t nfresh, size_t per_repetition,
                     sl_gate_busy busy, const sl_gate_options *options, sl_gate_result *out)
{
    *out = (sl_gate_result){.load = busy.load, .cpu_wait = busy.cpu_wait, .verdict = SL_GATE_NOT_OK};
    if (nbase == 0 || nfresh == 0 || per_repetition == 0 || nbase % per_repetition || nfresh % per_repetition)
        return false;
    int64_t *scaled = malloc(nfresh * sizeof *scaled);
    if (!scaled)
        return false;
    for (size_t i = 0; i < nfresh; i++)
        scaled[i] = (int64_t)llround((double)fresh[i] * (1.0 + options->inflate));
    size_t nb = 0, nn = 0;
    int64_t *base_medians = repetition_medians(base, nbase, per_repetition, &nb);
    int64_t *new_medians = repetition_medians(scaled, nfresh, per_repetition, &nn);
    sl_median_ci b, n;
    sl_mann_whitney slower, faster;
    bool ok = base_medians && new_medians && sl_median_ci_i64(base, nbase, SL_CI_LEVEL, &b) &&
              sl_median_ci_i64(scaled, nfresh, SL_CI_LEVEL, &n) &&
              sl_mann_whitney_greater(base_medians, nb, new_medians, nn, &slower) &&
              sl_mann_whitney_greater(new_medians, nn, base_medians, nb, &faster) && b.median > 0.0;
    if (ok) {
        out->base_median = b.median;
        out->new_median = n.median;
        out->ratio = n.median / b.median;
        out->base_repetitions = (int)nb;
        out->new_repetitions = (int)nn;
        out->p_slower = slower.p_greater;
        out->p_faster = faster.p_greater;
        out->base_spread = spread_of(base_medians, nb);
        out->verdict = SL_GATE_SAME;
    }
    free(scaled);
    free(base_medians);
    free(new_medians);
    return ok;
}

static void decide_row(sl_gate_result *r, bool slower_significant, bool faster_significant, double faster_level,
                       int family, const sl_gate_options *options)
{
    double max_spread = options->max_base_spread > 0.0 ? options->max_base_spread : 2.0 * options->min_effect;
    double max_wait = sl_gate_max_cpu_wait(options);
    double change = (r->ratio - 1.0) * 100.0;
    bool large = r->ratio >= 1.0 + options->min_effect;
    if (large && slower_significant && max_wait >= 0.0 && r->cpu_wait > max_wait) {
        r->verdict = SL_GATE_INCONCLUSIVE;
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but the runs waited for a CPU %.1f%% of their "
                 "time, above %.1f%%",
                 change, r->p_slower, r->cpu_wait * 100.0, max_wait * 100.0);
    } else if (large && slower_significant && options->max_load > 0.0 && r->load > options->max_load) {
        r->verdict = SL_GATE_INCONCLUSIVE;
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: slower by the rule (%+.1f%%, p %.2g) but the load average reached %.1f, above %.1f",
                 change, r->p_slower, r->load, options->max_load);
    } else if (large && slower_significant) {
        r->verdict = SL_GATE_SLOWER;
        snprintf(r->rule, sizeof r->rule, "slower: %+.1f%% >= %.0f%% and p %.2g <= %.2g (Holm over %d rows)", change,
                 options->min_effect * 100.0, r->p_slower, r->holm_level, family);
    } else if (r->base_spread > max_spread) {
        r->verdict = SL_GATE_INCONCLUSIVE;
        snprintf(r->rule, sizeof r->rule,
                 "inconclusive: the base's %d repetitions disagree by %.1f%% (their median's 95%% interval), more "
                 "than %.0f%% (%+.1f%%)",
                 r->base_repetitions, r->base_spread * 100.0, max_spread * 100.0, change);
    } else if (r->ratio <= 1.0 / (1.0 + options->min_effect) && faster_significant) {
        r->verdict = SL_GATE_FASTER;
        snprintf(r->rule, sizeof r->rule, "faster: %+.1f%% and p %.2g <= %.2g (Holm over %d rows)", change, r->p_faster,
                 faster_level, family);
    } else if (!large) {
        r->verdict = SL_GATE_SAME;
        snprintf(r->rule, sizeof r->rule, "same: %+.1f%%, under the %.0f%% that counts", change,
                 options->min_effect * 100.0);
    } else {
        r->verdict = SL_GATE_SAME;
        snprintf(r->rule, sizeof r->rule, "same: %+.1f%% but p %.2g > %.2g (Holm over %d rows)", change, r->p_slower,
                 r->holm_level, family);
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
