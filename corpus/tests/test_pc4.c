/* PC-4, conditional ops: the standard checks; every element's output is
 * exactly one of the four outcomes written out here from the ops'
 * definitions (brightness applied or not, then brightness or noise), which
 * recovers the two decisions from the output; they agree with the keyed
 * draws (u < 0.5, u the top 24 bits of word 0 of (element, epoch 0, draw 0)
 * under ops 1 and 3); the applied and chosen fractions lie within 5
 * binomial standard deviations of p; and the same elements are chosen, with
 * the same bytes, at batch size 64 and 50, with 0 and 2 workers, and in
 * the fused, iter and reference modes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "kernels/normal.h"

SL_CORPUS_STANDARD_TESTS(pc4, "PC-4", "p0.5")

enum {
    VALUES = 64 * 64 * 3,
    APPLY_OP = 1,
    APPLIED_BRIGHTNESS_OP = 2,
    CHOICE_OP = 3,
    CHOSEN_BRIGHTNESS_OP = 4,
    CHOSEN_NOISE_OP = 5
};
static const double P = 0.5;

static sl_philox_ctr draw(uint32_t op_id, int64_t element, uint32_t index)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, 0, index), sl_philox_key_for(42, op_id));
}

static float brightness_offset(uint32_t op_id, int64_t element)
{
    return 0.2f * ((float)((int32_t)(draw(op_id, element, 0).v[0] >> 8) - (1 << 23)) / 8388608.0f);
}

static bool keyed_decision(uint32_t op_id, int64_t element)
{
    return (double)(draw(op_id, element, 0).v[0] >> 8) / 16777216.0 < P;
}

/* Which of the four outcomes (bit 1: brightness applied, bit 0: the choice
 * took brightness) the row is, or -1 when none or several are. */
static int outcome(const float *x, const float *row, int64_t element)
{
    float d1 = brightness_offset(APPLIED_BRIGHTNESS_OP, element);
    float d2 = brightness_offset(CHOSEN_BRIGHTNESS_OP, element);
    bool match[4] = {true, true, true, true};
    for (int i = 0; i < VALUES; i++) {
        uint32_t word = draw(CHOSEN_NOISE_OP, element, (uint32_t)(16 * (i / 64) + i % 16)).v[(i % 64) / 16];
        float noise = 0.05f * sl__normal_f32(word);
        for (int applied = 0; applied < 2; applied++) {
            float v = applied ? x[i] + d1 : x[i];
            float chosen[2] = {v + noise, v + d2};
            for (int brightness = 0; brightness < 2; brightness++)
                match[applied * 2 + brightness] &= memcmp(&chosen[brightness], &row[i], sizeof(float)) == 0;
        }
    }
    int found = -1;
    for (int k = 0; k < 4; k++)
        if (match[k]) {
            if (found >= 0)
                return -1;
            found = k;
        }
    return found;
}

static const float *source_row(const sl_scenario_instance *instance, int64_t element)
{
    return sl_source_map(instance->fixture, 0, (size_t)element * VALUES * sizeof(float), VALUES * sizeof(float));
}

Test(pc4, decisions_follow_the_keyed_draws_and_fractions_lie_within_a_binomial_bound)
{
    sl_scenario_instance *instance = harness_build("PC-4", "p0.5");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    cr_assert_eq(out.rows, 4000);
    int64_t applied = 0, chose_brightness = 0;
    for (int64_t r = 0; r < out.rows; r++) {
        int64_t element = out.ids[r];
        int k = outcome(source_row(instance, element), harness_row(&out, 0, r), element);
        cr_assert_geq(k, 0, "element %lld matches no single outcome by hand", (long long)element);
        cr_assert_eq((k >> 1) & 1, keyed_decision(APPLY_OP, element), "element %lld: apply decision",
                     (long long)element);
        cr_assert_eq(k & 1, keyed_decision(CHOICE_OP, element), "element %lld: choice", (long long)element);
        applied += (k >> 1) & 1;
        chose_brightness += k & 1;
    }
    /* Binomial(n, p): mean n p, standard deviation sqrt(n p (1 - p)). */
    double n = (double)out.rows, sd = sqrt(n * P * (1 - P));
    cr_expect_leq(fabs((double)applied - n * P), 5 * sd, "applied %lld of %.0f (bound %.0f +- %.0f)",
                  (long long)applied, n, n * P, 5 * sd);
    cr_expect_leq(fabs((double)chose_brightness - n * P), 5 * sd, "chose brightness %lld of %.0f",
                  (long long)chose_brightness, n);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

/* Row of each element id in a run over a data set of n elements. */
static int64_t *rows_by_element(const run_output *out, int64_t n)
{
    int64_t *at = malloc((size_t)n * sizeof *at);
    for (int64_t e = 0; e < n; e++)
        at[e] = -1;
    for (int64_t r = 0; r < out->rows; r++)
        at[out->ids[r]] = r;
    return at;
}

Test(pc4, the_same_elements_are_chosen_whatever_the_batch_size_workers_or_mode)
{
    sl_scenario_instance *base = harness_build("PC-4", "p0.5");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.batch_override = 50;
    sl_scenario_instance *other = harness_build_with("PC-4", "p0.5", &options);
    run_output runs[4];
    harness_run(base, "fused", 0, 0, (sl_position){0, 0}, 0, &runs[0]);
    harness_run(other, "iter", 2, 0, (sl_position){0, 0}, 0, &runs[1]);
    harness_run(other, "fused", 0, 0, (sl_position){0, 0}, 0, &runs[2]);
    harness_run(base, "reference", 0, 0, (sl_position){0, 0}, 0, &runs[3]);
    const char *names[4] = {"fused bs 64", "iter bs 50 2 workers", "fused bs 50", "reference bs 64"};
    int64_t *at[4];
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(runs[k].rows, 4000, "%s", names[k]);
        at[k] = rows_by_element(&runs[k], 4000);
    }
    for (int64_t e = 0; e < 4000; e++) {
        cr_assert_geq(at[0][e], 0);
        const float *want = harness_row(&runs[0], 0, at[0][e]);
        for (int k = 1; k < 4; k++) {
            cr_assert_geq(at[k][e], 0, "%s misses element %lld", names[k], (long long)e);
            cr_assert(memcmp(want, harness_row(&runs[k], 0, at[k][e]), VALUES * sizeof(float)) == 0,
                      "element %lld differs between %s and %s", (long long)e, names[0], names[k]);
        }
    }
    /* Equal bytes mean equal decisions: the four outcomes of an element
     * differ (outcome() finds exactly one), so spot-check that here on the
     * rows of the iter run. */
    for (int64_t e = 0; e < 4000; e += 97)
        cr_assert_eq(outcome(source_row(base, e), harness_row(&runs[1], 0, at[1][e]), e),
                     outcome(source_row(base, e), harness_row(&runs[0], 0, at[0][e]), e));
    for (int k = 0; k < 4; k++) {
        harness_release(&runs[k]);
        free(at[k]);
    }
    sl_scenario_instance_free(base);
    sl_scenario_instance_free(other);
}

Test(pc4, sub_chains_refuse_ops_that_cannot_run_inside_them)
{
    sl_scenario_instance *instance = harness_build("PC-4", "p0.5");
    sl_pipeline_spec spec = instance->spec;
    sl_err err = {0};
    sl_pipeline *p = NULL;
    /* A probability outside [0, 1]. */
    spec.nops = 0;
    sl_pipeline_spec_add(&spec, sl_op_random_apply("x", 1, 1.5f, 1), &err);
    sl_pipeline_spec_add(&spec, sl_op_random_brightness("x", 2, 0.2f), &err);
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "probability") != NULL, "%s", err.msg);
    /* A sub-chain op inside another. */
    spec.nops = 0;
    sl_pipeline_spec_add(&spec, sl_op_random_apply("x", 1, 0.5f, 1), &err);
    sl_pipeline_spec_add(&spec, sl_op_random_apply("x", 2, 0.5f, 1), &err);
    sl_pipeline_spec_add(&spec, sl_op_random_brightness("x", 3, 0.2f), &err);
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "op 1 (random_apply) cannot run inside op 0 (random_apply)") != NULL, "%s", err.msg);
    sl_scenario_instance_free(instance);
}
