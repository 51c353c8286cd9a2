/* The gate's decision rule (sluice/gate.h).
 *
 * A rank test alone would flag the few-percent drifts that a shared machine
 * shows between two runs of the same code: with 60 samples a side, a 2%
 * shift of the whole distribution is "significant", yet it is the machine,
 * not the change. A minimum effect alone would flag one unlucky run. Both
 * must agree: the shift is large (min_effect) and consistent across the
 * batches (the p value). docs/gate.md gives the measured error rates. */
#include <math.h>
#include <stdlib.h>

#include "sluice/gate.h"
#include "sluice/stats.h"

void sl_gate_options_init(sl_gate_options *options)
{
    options->alpha = 0.01;
    options->min_effect = 0.05;
    options->inflate = 0.0;
}

const char *sl_gate_verdict_name(sl_gate_verdict verdict)
{
    switch (verdict) {
    case SL_GATE_SLOWER: return "slower";
    case SL_GATE_FASTER: return "faster";
    default: return "same";
    }
}

/* The smallest and largest of the repetitions' medians. */
static bool repetition_median_range(const int64_t *samples, size_t n, size_t per_repetition, double *lo, double *hi)
{
    if (per_repetition == 0 || n % per_repetition != 0)
        return false;
    for (size_t r = 0; r < n / per_repetition; r++) {
        sl_median_ci ci;
        if (!sl_median_ci_i64(samples + r * per_repetition, per_repetition, SL_CI_LEVEL, &ci))
            return false;
        if (r == 0 || ci.median < *lo)
            *lo = ci.median;
        if (r == 0 || ci.median > *hi)
            *hi = ci.median;
    }
    return true;
}

bool sl_gate_compare(const int64_t *base, size_t nbase, const int64_t *fresh, size_t nfresh, size_t per_repetition,
                     const sl_gate_options *options, sl_gate_result *out)
{
    *out = (sl_gate_result){0};
    if (nbase == 0 || nfresh == 0)
        return false;
    int64_t *scaled = malloc(nfresh * sizeof *scaled);
    if (!scaled)
        return false;
    for (size_t i = 0; i < nfresh; i++)
        scaled[i] = (int64_t)llround((double)fresh[i] * (1.0 + options->inflate));
    sl_median_ci b, n;
    sl_mann_whitney slower, faster;
    double base_lo = 0, base_hi = 0, new_lo = 0, new_hi = 0;
    bool ok = sl_median_ci_i64(base, nbase, SL_CI_LEVEL, &b) && sl_median_ci_i64(scaled, nfresh, SL_CI_LEVEL, &n) &&
              sl_mann_whitney_greater(base, nbase, scaled, nfresh, &slower) &&
              sl_mann_whitney_greater(scaled, nfresh, base, nbase, &faster) &&
              repetition_median_range(base, nbase, per_repetition, &base_lo, &base_hi) &&
              repetition_median_range(scaled, nfresh, per_repetition, &new_lo, &new_hi);
    free(scaled);
    if (!ok || !(b.median > 0.0))
        return false;
    out->base_median = b.median;
    out->new_median = n.median;
    out->ratio = n.median / b.median;
    out->p_slower = slower.p_greater;
    out->p_faster = faster.p_greater;
    if (out->ratio >= 1.0 + options->min_effect && out->p_slower < options->alpha && new_lo > base_hi)
        out->verdict = SL_GATE_SLOWER;
    else if (out->ratio <= 1.0 / (1.0 + options->min_effect) && out->p_faster < options->alpha && new_hi < base_lo)
        out->verdict = SL_GATE_FASTER;
    return true;
}
