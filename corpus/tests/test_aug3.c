/* AUG-3, stochastic depth: the standard checks for each ci depth and the
 * sweep; the depth-6 chain equals the chain written out by hand from the
 * fixture and docs/determinism.md's draws; every value of every depth stays
 * finite over an epoch; and the sweep's record carries each depth's time
 * with the least-squares slope, intercept and R^2 that this test
 * recomputes from them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "kernels/normal.h"

SL_CORPUS_STANDARD_TESTS(aug3_depth1, "AUG-3", "depth1")
SL_CORPUS_STANDARD_TESTS(aug3_depth3, "AUG-3", "depth3")
SL_CORPUS_STANDARD_TESTS(aug3_depth6, "AUG-3", "depth6")
SL_CORPUS_STANDARD_TESTS(aug3_sweep, "AUG-3", "sweep")

enum { VALUES = 64 * 64 };

static sl_philox_ctr draw(uint32_t op_id, int64_t element, uint32_t index)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, 0, index), sl_philox_key_for(42, op_id));
}

/* The chain by hand at epoch 0: normalize (mean 0.5, std 0.25), then per
 * level k: noise with op 3k + 1 (value i = 64 g + 16 q + j takes word q of
 * block 16 g + j), brightness with op 3k + 2, scale with op 3k + 3, each
 * rounded once per operation. */
static void by_hand(const float *in, int64_t element, int depth, float *out)
{
    for (int i = 0; i < VALUES; i++)
        out[i] = (in[i] - 0.5f) * (1.0f / 0.25f);
    for (int k = 0; k < depth; k++) {
        uint32_t id = (uint32_t)(3 * k);
        float d = 0.2f * ((float)((int32_t)(draw(id + 2, element, 0).v[0] >> 8) - (1 << 23)) / 8388608.0f);
        float f = 0.8f + (1.2f - 0.8f) * ((float)(draw(id + 3, element, 0).v[0] >> 8) / 16777216.0f);
        f = f > 1.2f ? 1.2f : f;
        for (int i = 0; i < VALUES; i++) {
            uint32_t word = draw(id + 1, element, (uint32_t)(16 * (i / 64) + i % 16)).v[(i % 64) / 16];
            float v = out[i] + 0.05f * sl__normal_f32(word);
            v = v + d;
            out[i] = v * f;
        }
    }
}

Test(aug3, depth6_equals_the_chain_by_hand)
{
    sl_scenario_instance *instance = harness_build("AUG-3", "depth6");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 2, &out);
    float *expected = malloc(VALUES * sizeof *expected);
    for (int64_t r = 0; r < out.rows; r++) {
        int64_t element = out.ids[r];
        by_hand(sl_source_map(instance->fixture, 0, (size_t)element * VALUES * 4, VALUES * 4), element, 6, expected);
        const float *row = harness_row(&out, 0, r);
        for (int i = 0; i < VALUES; i++)
            cr_assert_eq(row[i], expected[i], "element %lld value %d: %.9g vs %.9g", (long long)element, i, row[i],
                         expected[i]);
    }
    free(expected);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(aug3, values_stay_finite_at_every_depth)
{
    const char *variants[] = {"depth1", "depth3", "depth6"};
    for (int v = 0; v < 3; v++) {
        sl_scenario_instance *instance = harness_build("AUG-3", variants[v]);
        run_output out;
        harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
        const float *x = (const float *)out.bytes[0];
        int64_t n = out.rows * VALUES;
        double sum2 = 0;
        for (int64_t i = 0; i < n; i++) {
            cr_assert(isfinite(x[i]), "%s: value %lld is %g", variants[v], (long long)i, x[i]);
            sum2 += (double)x[i] * x[i];
        }
        /* Not collapsed either: normalized uniform values have variance
         * 4/3, and the levels only add to it on average. */
        cr_expect_gt(sum2 / n, 1.0, "%s: mean square %.3f", variants[v], sum2 / n);
        harness_release(&out);
        sl_scenario_instance_free(instance);
    }
}

Test(aug3, the_sweep_reports_the_least_squares_slope_over_the_ci_depths)
{
    sl_scenario_instance *instance = harness_build("AUG-3", "sweep");
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 3;
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);

    const double depths[3] = {1, 3, 6};
    const char *names[3] = {"p50_ns_depth1", "p50_ns_depth3", "p50_ns_depth6"};
    double t[3];
    for (int i = 0; i < 3; i++) {
        const sl_record_metric *m = harness_find_metric(&record, names[i]);
        cr_assert_not_null(m, "no %s", names[i]);
        cr_expect_eq(m->scope, SL_METRIC_SCENARIO);
        cr_expect_gt(m->value, 0);
        t[i] = m->value;
    }
    cr_expect_null(harness_find_metric(&record, "p50_ns_depth12"), "depth 12 runs at full size only");
    /* Least squares by the normal equations: with x = (1, 3, 6), mean
     * 10/3 and sum of squared deviations 38/3. */
    double mean_t = (t[0] + t[1] + t[2]) / 3;
    double sxy = 0, syy = 0;
    for (int i = 0; i < 3; i++) {
        sxy += (depths[i] - 10.0 / 3) * (t[i] - mean_t);
        syy += (t[i] - mean_t) * (t[i] - mean_t);
    }
    double slope = sxy / (38.0 / 3), intercept = mean_t - slope * 10.0 / 3, r2 = slope * sxy / syy;
    const sl_record_metric *m_slope = harness_find_metric(&record, "slope_ns_per_depth");
    const sl_record_metric *m_intercept = harness_find_metric(&record, "intercept_ns");
    const sl_record_metric *m_r2 = harness_find_metric(&record, "slope_r2");
    cr_assert(m_slope && m_intercept && m_r2, "the fit's figures are missing");
    cr_expect_float_eq(m_slope->value, slope, 1e-9 * fabs(slope) + 1e-9);
    cr_expect_float_eq(m_intercept->value, intercept, 1e-9 * mean_t);
    cr_expect_float_eq(m_r2->value, r2, 1e-9);
    cr_expect(m_r2->value >= 0 && m_r2->value <= 1, "R^2 %.4f", m_r2->value);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);

    /* The depth variants report no sweep of their own. */
    instance = harness_build("AUG-3", "depth1");
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_expect_null(harness_find_metric(&record, "slope_ns_per_depth"));
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}
