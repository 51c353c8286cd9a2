/* PC-2, a branching pipeline: the standard checks; every element of an
 * epoch, through iter and fused, equals the graph written out here from the
 * ops' definitions (brightness offset d from Philox under op 1, noise from
 * Philox under op 2 with the op's own variate, a = x + d, b = x + 0.05 z,
 * (a + b) * 0.5 in float); the graph equals the mean of its two branches run
 * as separate pipelines, whose outputs differ from each other and from the
 * graph's; the branches' draws are uncorrelated (the brightness offset and
 * the noise of value 0, both measured from the output, whose words come
 * from the same counter and would be correlated were the streams one); and
 * a branch pair that shares an op id is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "kernels/normal.h"

SL_CORPUS_STANDARD_TESTS(pc2, "PC-2", "64x64x3")

enum { VALUES = 64 * 64 * 3, BRIGHTNESS_OP = 1, NOISE_OP = 2 };

static sl_philox_ctr draw(uint32_t op_id, int64_t element, uint32_t index)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, 0, index), sl_philox_key_for(42, op_id));
}

/* Brightness: word 0 of draw 0, d = 0.2 (k - 2^23) / 2^23 in float. */
static float brightness_offset(int64_t element)
{
    return 0.2f * ((float)((int32_t)(draw(BRIGHTNESS_OP, element, 0).v[0] >> 8) - (1 << 23)) / 8388608.0f);
}

/* The graph by hand at epoch 0 (value i = 64 g + 16 q + j takes word q of
 * block 16 g + j of the noise's stream). */
static void by_hand(const float *x, int64_t element, float *out)
{
    float d = brightness_offset(element);
    for (int i = 0; i < VALUES; i++) {
        uint32_t word = draw(NOISE_OP, element, (uint32_t)(16 * (i / 64) + i % 16)).v[(i % 64) / 16];
        float a = x[i] + d;
        float b = x[i] + 0.05f * sl__normal_f32(word);
        out[i] = (a + b) * 0.5f;
    }
}

static const float *source_row(const sl_scenario_instance *instance, int64_t element)
{
    return sl_source_map(instance->fixture, 0, (size_t)element * VALUES * sizeof(float), VALUES * sizeof(float));
}

Test(pc2, equals_the_graph_written_by_hand_in_iter_and_fused)
{
    sl_scenario_instance *instance = harness_build("PC-2", "64x64x3");
    float *expected = malloc(VALUES * sizeof *expected);
    const char *adapters[] = {"fused", "iter"};
    for (int a = 0; a < 2; a++) {
        run_output out;
        harness_run(instance, adapters[a], a, 0, (sl_position){0, 0}, 0, &out);
        cr_assert_eq(out.rows, 2000);
        for (int64_t r = 0; r < out.rows; r++) {
            by_hand(source_row(instance, out.ids[r]), out.ids[r], expected);
            const float *row = harness_row(&out, 0, r);
            for (int i = 0; i < VALUES; i++)
                cr_assert(memcmp(&row[i], &expected[i], sizeof(float)) == 0,
                          "%s: element %lld value %d is %.9g, by hand %.9g", adapters[a], (long long)out.ids[r], i,
                          row[i], expected[i]);
        }
        harness_release(&out);
    }
    free(expected);
    sl_scenario_instance_free(instance);
}

/* One epoch of a pipeline made of `ops` over PC-2's source and spec,
 * through the fused executor, rows in batch order. */
typedef struct collected {
    float *rows;
    int64_t count;
} collected;

static int collect(const sl_batch *batch, void *user)
{
    collected *c = user;
    memcpy(c->rows + (size_t)c->count * VALUES, batch->fields[0].data, (size_t)batch->count * VALUES * sizeof(float));
    c->count += batch->count;
    return 0;
}

static float *run_ops(const sl_scenario_instance *instance, const sl_op *ops, int nops)
{
    sl_pipeline_spec spec = instance->spec;
    spec.nops = 0;
    sl_err err = {0};
    for (int i = 0; i < nops; i++)
        cr_assert_eq(sl_pipeline_spec_add(&spec, ops[i], &err), SL_OK, "%s", err.msg);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    sl_fused *fz;
    cr_assert_eq(sl_fused_create(p, sl_test_kernels(), &fz, &err), SL_OK, "%s", err.msg);
    collected c = {malloc((size_t)sl_pipeline_epoch_size(p) * VALUES * sizeof(float)), 0};
    cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, 0, collect, &c, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(c.count, sl_pipeline_epoch_size(p));
    sl_fused_free(fz);
    sl_pipeline_free(p);
    return c.rows;
}

Test(branch_mean, equals_the_mean_of_its_branches_run_as_separate_passes_and_the_branches_differ)
{
    sl_scenario_instance *instance = harness_build("PC-2", "64x64x3");
    const sl_op graph_ops[] = {sl_op_branch_mean("x", 1, 1), sl_op_random_brightness("x", BRIGHTNESS_OP, 0.2f),
                               sl_op_gaussian_noise("x", NOISE_OP, 0.05f)};
    const sl_op a_ops[] = {sl_op_random_brightness("x", BRIGHTNESS_OP, 0.2f)};
    const sl_op b_ops[] = {sl_op_gaussian_noise("x", NOISE_OP, 0.05f)};
    float *graph = run_ops(instance, graph_ops, 3), *a = run_ops(instance, a_ops, 1), *b = run_ops(instance, b_ops, 1);
    int64_t n = 2000 * (int64_t)VALUES, a_ne_b = 0, graph_ne_a = 0, graph_ne_b = 0;
    for (int64_t i = 0; i < n; i++) {
        float mean = (a[i] + b[i]) * 0.5f;
        cr_assert(memcmp(&graph[i], &mean, sizeof mean) == 0, "value %lld: graph %.9g, (a + b) / 2 = %.9g",
                  (long long)i, graph[i], mean);
        a_ne_b += a[i] != b[i];
        graph_ne_a += graph[i] != a[i];
        graph_ne_b += graph[i] != b[i];
    }
    /* b - a = 0.05 z - d vanishes in float only when the noise and the
     * offset agree to within an ulp; allow one value in a thousand. */
    cr_expect_geq(a_ne_b, n - n / 1000, "the branches agree on %lld of %lld values", (long long)(n - a_ne_b),
                  (long long)n);
    cr_expect_geq(graph_ne_a, n - n / 1000);
    cr_expect_geq(graph_ne_b, n - n / 1000);
    free(graph);
    free(a);
    free(b);
    sl_scenario_instance_free(instance);
}

Test(pc2, the_branches_draw_independent_numbers)
{
    sl_scenario_instance *instance = harness_build("PC-2", "64x64x3");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    /* 2 (y - x) = d + 0.05 z per value, up to rounding: the element's mean
     * of it measures d (within 0.05 / sqrt(12288) < 5e-4), and value 0's
     * less that measures its noise. Value 0's noise word is word 0 of the
     * very counter (element, epoch, 0) the offset's word comes from, so
     * one stream for both would make them almost perfectly correlated. */
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    int64_t n = out.rows;
    for (int64_t r = 0; r < n; r++) {
        const float *x = source_row(instance, out.ids[r]);
        const float *y = harness_row(&out, 0, r);
        double sum = 0;
        for (int i = 0; i < VALUES; i++)
            sum += 2.0 * ((double)y[i] - (double)x[i]);
        double d = sum / VALUES;
        cr_assert_leq(fabs(d - brightness_offset(out.ids[r])), 6 * 0.05 / sqrt((double)VALUES) + 1e-6);
        double z = 2.0 * ((double)y[0] - (double)x[0]) - d;
        sx += d;
        sy += z;
        sxx += d * d;
        syy += z * z;
        sxy += d * z;
    }
    double cov = sxy / n - (sx / n) * (sy / n);
    double corr = cov / sqrt((sxx / n - (sx / n) * (sx / n)) * (syy / n - (sy / n) * (sy / n)));
    /* A sample correlation of n independent pairs has standard deviation
     * about 1 / sqrt(n): 5 of them is 0.11 at n = 2000. */
    cr_expect_leq(fabs(corr), 5.0 / sqrt((double)n), "offset-noise correlation %.4f over %lld elements", corr,
                  (long long)n);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(pc2, branches_that_share_an_op_id_are_refused)
{
    sl_scenario_instance *instance = harness_build("PC-2", "64x64x3");
    sl_pipeline_spec spec = instance->spec;
    spec.nops = 0;
    sl_err err = {0};
    sl_pipeline_spec_add(&spec, sl_op_branch_mean("x", 1, 1), &err);
    sl_pipeline_spec_add(&spec, sl_op_random_brightness("x", 7, 0.2f), &err);
    sl_pipeline_spec_add(&spec, sl_op_gaussian_noise("x", 7, 0.05f), &err);
    sl_pipeline *p = NULL;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "share op id 7") != NULL, "%s", err.msg);
    /* Owning more ops than follow is refused too, naming the op. */
    spec.nops = 2;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "op 0: branch_mean") != NULL, "%s", err.msg);
    sl_scenario_instance_free(instance);
}
