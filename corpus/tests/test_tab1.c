/* TAB-1, dense features: the standard checks, and z-scored features with
 * mean ~0 and std ~1 over an epoch. */
#include <math.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(tab1, "TAB-1", "10k")

Test(tab1, each_feature_has_mean_zero_and_unit_std_over_an_epoch)
{
    sl_scenario_instance *instance = harness_build("TAB-1", "10k");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    const int features = 100;
    cr_assert_eq(out.rows, 10000);
    cr_assert_eq(out.row_bytes[0], features * sizeof(float));
    const float *x = (const float *)out.bytes[0];
    for (int j = 0; j < features; j++) {
        double sum = 0.0, sum_sq = 0.0;
        for (int64_t r = 0; r < out.rows; r++)
            sum += x[r * features + j];
        double mean = sum / (double)out.rows;
        for (int64_t r = 0; r < out.rows; r++)
            sum_sq += (x[r * features + j] - mean) * (x[r * features + j] - mean);
        double stddev = sqrt(sum_sq / (double)out.rows);
        /* The scaler was fitted on this very data, so the only error is
         * float rounding (about 1e-7 relative per value); a dropped or
         * repeated row, or a wrong channel, moves these far past 1e-4. */
        cr_expect_lt(fabs(mean), 1e-4, "feature %d has mean %g", j, mean);
        cr_expect_lt(fabs(stddev - 1.0), 1e-4, "feature %d has std %g", j, stddev);
    }
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(tab1, raw_features_are_not_already_standard)
{
    /* Guards the test above against a fixture that is standard before the
     * pipeline touches it, which would let a no-op normalize pass. */
    sl_scenario_instance *instance = harness_build("TAB-1", "10k");
    const float *x = sl_source_map(instance->fixture, 0, 0, sl_source_field_bytes(instance->fixture, 0));
    int far = 0;
    for (int j = 0; j < 100; j++) {
        double sum = 0.0;
        for (int64_t r = 0; r < 10000; r++)
            sum += x[r * 100 + j];
        far += fabs(sum / 10000.0) > 0.1;
    }
    cr_expect_gt(far, 50, "only %d of 100 raw features have a mean away from 0", far);
    sl_scenario_instance_free(instance);
}
