/* AUG-1, a stochastic augmentation chain: the standard checks; over an
 * epoch, the noise (what is left of each value once its normalized pixel,
 * recomputed here from the fixture, and its image's brightness offset,
 * recomputed from Philox by docs/determinism.md's table, are taken away) has
 * mean 0 and standard deviation 0.05 within sampling bounds computed here,
 * with the normal's tail mass; every image's measured brightness offset lies
 * within [-0.2, 0.2] up to its noise and agrees with the keyed draw; and
 * each element's output does not depend on the batch size or the workers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(aug1, "AUG-1", "32x32")

enum { SIDE = 32, CHANNELS = 3, VALUES = SIDE * SIDE * CHANNELS, BRIGHTNESS_OP = 2 };
static const float cifar_mean[3] = {125.3f, 123.0f, 113.9f};
static const float cifar_std[3] = {63.0f, 62.1f, 66.7f};
static const double SIGMA = 0.05, DELTA = 0.2;

/* Image `element`'s brightness offset at epoch 0: word 0 of draw 0 of op 2,
 * d = 0.2 (k - 2^23) / 2^23 with k its top 24 bits, in float. */
static float brightness_offset(int64_t element)
{
    uint32_t word =
        sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, 0, 0), sl_philox_key_for(42, BRIGHTNESS_OP)).v[0];
    return 0.2f * ((float)((int32_t)(word >> 8) - (1 << 23)) / 8388608.0f);
}

Test(aug1, noise_and_brightness_have_their_stated_distributions)
{
    sl_scenario_instance *instance = harness_build("AUG-1", "32x32");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    cr_assert_eq(out.rows, 2000);
    float inv_std[3];
    for (int c = 0; c < 3; c++)
        inv_std[c] = 1.0f / cifar_std[c];

    /* Sampling bounds at 6 standard errors, plus float rounding: the
     * residual of a value is its noise sigma z up to half an ulp of three
     * roundings of values below 4 in magnitude (under 1e-6). */
    const double n = (double)out.rows * VALUES, rounding = 1e-6;
    const double element_se = SIGMA / sqrt((double)VALUES);
    double sum = 0, sum2 = 0;
    int64_t beyond_3sd = 0;
    float lowest = 1, highest = -1;
    for (int64_t r = 0; r < out.rows; r++) {
        int64_t element = out.ids[r];
        const uint8_t *pixels = sl_source_map(instance->fixture, 0, (size_t)element * VALUES, VALUES);
        const float *row = harness_row(&out, 0, r);
        float d = brightness_offset(element);
        cr_assert(d >= -DELTA && d <= DELTA, "element %lld: offset %.9g", (long long)element, d);
        lowest = fminf(lowest, d);
        highest = fmaxf(highest, d);
        double element_sum = 0;
        for (int i = 0; i < VALUES; i++) {
            float normalized = ((float)pixels[i] - cifar_mean[i % 3]) * inv_std[i % 3];
            double shift = (double)row[i] - (double)normalized;
            double noise = shift - (double)d;
            cr_assert(isfinite(row[i]));
            element_sum += shift;
            sum += noise;
            sum2 += noise * noise;
            beyond_3sd += fabs(noise) > 3 * SIGMA;
        }
        /* The measured offset is d plus the mean of the image's noise. */
        double measured = element_sum / VALUES;
        cr_assert_leq(fabs(measured), DELTA + 6 * element_se + rounding, "element %lld: brightness %.5f",
                      (long long)element, measured);
        cr_assert_leq(fabs(measured - d), 6 * element_se + rounding,
                      "element %lld: brightness %.5f, but its keyed draw is %.5f", (long long)element, measured, d);
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    cr_expect_leq(fabs(mean), 6 * SIGMA / sqrt(n) + rounding, "noise mean %.3g", mean);
    /* A sample standard deviation of N normal values has se sigma / sqrt(2N). */
    cr_expect_leq(fabs(sd - SIGMA), 6 * SIGMA / sqrt(2 * n) + rounding, "noise std %.6f", sd);
    double p3 = erfc(3 / sqrt(2.0)), observed = (double)beyond_3sd / n;
    cr_expect_leq(fabs(observed - p3), 6 * sqrt(p3 * (1 - p3) / n), "P(|noise| > 3 sigma): %.5f vs %.5f", observed, p3);
    /* 2000 uniform offsets reach within 1% of both ends (each end missed
     * with probability 0.995^2000 < 5e-5). */
    cr_expect_leq(lowest, -0.99 * DELTA);
    cr_expect_geq(highest, 0.99 * DELTA);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(aug1, an_elements_augmentation_does_not_depend_on_batch_size_or_workers)
{
    sl_scenario_instance *base = harness_build("AUG-1", "32x32");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.batch_override = 50;
    sl_scenario_instance *other = harness_build_with("AUG-1", "32x32", &options);
    run_output a, b;
    harness_run(base, "fused", 0, 0, (sl_position){0, 0}, 4, &a);
    harness_run(other, "iter", 2, 0, (sl_position){0, 0}, 6, &b);
    for (int64_t r = 0; r < a.rows; r++) {
        int64_t match = harness_find_element(&b, a.ids[r], 0, b.rows);
        cr_assert_geq(match, 0, "element %lld is not among the first 300 at bs 50", (long long)a.ids[r]);
        cr_assert(memcmp(harness_row(&a, 0, r), harness_row(&b, 0, match), VALUES * sizeof(float)) == 0,
                  "element %lld differs between bs 64 and bs 50 with 2 workers", (long long)a.ids[r]);
    }
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(base);
    sl_scenario_instance_free(other);
}
