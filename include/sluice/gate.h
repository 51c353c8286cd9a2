/* The pull-request performance gate's decision for one scenario, variant
 * and adapter: are the new run's batch times slower than the baseline's,
 * by enough to matter and with enough confidence? Shared by `sluice check`
 * and the tests that measure the gate's error rates (docs/gate.md). */
#ifndef SLUICE_GATE_H
#define SLUICE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_gate_verdict { SL_GATE_SAME = 0, SL_GATE_SLOWER, SL_GATE_FASTER } sl_gate_verdict;

typedef struct sl_gate_options {
    /* A move counts only when the one-sided Mann-Whitney p is below alpha
     * and the medians differ by at least min_effect (0.05: 5%). */
    double alpha;
    double min_effect;
    /* A testing aid: the new samples are multiplied by (1 + inflate) before
     * the comparison, to measure from real samples how often the gate sees
     * a slowdown of that size. 0 in real use. */
    double inflate;
} sl_gate_options;

/* alpha 0.01, min_effect 0.05, inflate 0. */
void sl_gate_options_init(sl_gate_options *options);

typedef struct sl_gate_result {
    double base_median, new_median;
    double ratio;        /* new_median / base_median */
    double p_slower;     /* one-sided: new samples tend to be larger */
    double p_faster;
    sl_gate_verdict verdict;
} sl_gate_result;

/* Samples come in repetitions of per_repetition batches each (a record's
 * samples_ns, or several runs' concatenated). A row is slower when three
 * things agree: the median moved up by min_effect, the one-sided
 * Mann-Whitney p is below alpha, and the fastest repetition of the new run
 * is slower than the slowest repetition of the baseline (so that one run's
 * drift, which moves all its batches together and fools a test that treats
 * batches as independent, is not enough). False when a side has no samples. */
bool sl_gate_compare(const int64_t *base, size_t nbase, const int64_t *fresh, size_t nfresh, size_t per_repetition,
                     const sl_gate_options *options, sl_gate_result *out);
const char *sl_gate_verdict_name(sl_gate_verdict verdict);

#ifdef __cplusplus
}
#endif

#endif
