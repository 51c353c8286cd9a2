/* AUG-2, deterministic vs stochastic overhead: the standard checks for both
 * chains; under another seed (so another order), the deterministic chain
 * gives every element the same bytes, equal to the chain written out by
 * hand from the fixture, while the stochastic chain changes every element;
 * and the stochastic variant's records carry both chains' times and their
 * ratio. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(aug2_deterministic, "AUG-2", "deterministic")
SL_CORPUS_STANDARD_TESTS(aug2_stochastic, "AUG-2", "stochastic")

enum { VALUES = 64 * 64 * 3, OTHER_SEED = 7 };
static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

/* One epoch of the variant's pipeline with the pipeline seed 42 (as built)
 * and again with OTHER_SEED, over the same fixture; in the second run,
 * row_of[element] is the row that holds the element. */
static void run_both_seeds(const sl_scenario_instance *instance, run_output *a, run_output *b, int64_t **row_of)
{
    sl_pipeline_spec spec = instance->spec;
    spec.seed = OTHER_SEED;
    sl_pipeline *pipeline;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &pipeline, &err), SL_OK, "%s", err.msg);
    sl_scenario_instance reseeded = *instance;
    reseeded.pipeline = pipeline;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, a);
    harness_run(&reseeded, "fused", 0, 0, (sl_position){0, 0}, 0, b);
    sl_pipeline_free(pipeline);
    cr_assert_eq(a->rows, b->rows);
    *row_of = malloc((size_t)b->rows * sizeof **row_of);
    for (int64_t r = 0; r < b->rows; r++)
        (*row_of)[b->ids[r]] = r;
    /* The seed also keys the order: the comparison is by element. */
    int64_t same_place = 0;
    for (int64_t r = 0; r < a->rows; r++)
        same_place += a->ids[r] == b->ids[r];
    cr_expect_lt(same_place, a->rows / 10, "the other seed should shuffle differently");
}

Test(aug2, deterministic_output_does_not_depend_on_the_seed)
{
    sl_scenario_instance *instance = harness_build("AUG-2", "deterministic");
    run_output a, b;
    int64_t *row_of;
    run_both_seeds(instance, &a, &b, &row_of);
    float inv_std[3];
    for (int c = 0; c < 3; c++)
        inv_std[c] = 1.0f / imagenet_std[c];
    for (int64_t r = 0; r < a.rows; r++) {
        int64_t element = a.ids[r];
        const float *row = harness_row(&a, 0, r);
        cr_assert(memcmp(row, harness_row(&b, 0, row_of[element]), VALUES * sizeof(float)) == 0,
                  "element %lld changed with the seed", (long long)element);
        /* normalize, scale 0.9, clip [-2, 2], one rounding per operation. */
        const uint8_t *pixels = sl_source_map(instance->fixture, 0, (size_t)element * VALUES, VALUES);
        for (int i = 0; i < VALUES; i++) {
            float v = ((float)pixels[i] - imagenet_mean[i % 3]) * inv_std[i % 3];
            v = v * 0.9f;
            v = v < -2.0f ? -2.0f : (v > 2.0f ? 2.0f : v);
            cr_assert_eq(row[i], v, "element %lld value %d: %.9g vs %.9g", (long long)element, i, row[i], v);
        }
    }
    free(row_of);
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(instance);
}

/* Under another seed every value draws other noise, so it can keep its
 * value only by chance: the noise (sd 0.05) and scale would have to land on
 * the same float. 1% of any element's values is far above that. */
Test(aug2, stochastic_output_changes_with_the_seed)
{
    sl_scenario_instance *instance = harness_build("AUG-2", "stochastic");
    run_output a, b;
    int64_t *row_of;
    run_both_seeds(instance, &a, &b, &row_of);
    for (int64_t r = 0; r < a.rows; r++) {
        int64_t element = a.ids[r];
        const float *x = harness_row(&a, 0, r), *y = harness_row(&b, 0, row_of[element]);
        int same = 0;
        for (int i = 0; i < VALUES; i++)
            same += x[i] == y[i];
        cr_assert_lt(same, VALUES / 100, "element %lld kept %d of %d values under another seed", (long long)element,
                     same, VALUES);
    }
    free(row_of);
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(instance);
}

static void bench_once(const char *variant, const char *adapter, sl_record *record)
{
    sl_scenario_instance *instance = harness_build("AUG-2", variant);
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 3;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find(adapter), &options, record, &err), SL_OK, "%s", err.msg);
    sl_scenario_instance_free(instance);
}

Test(aug2, the_stochastic_records_carry_the_overhead_ratio)
{
    const char *adapters[] = {"reference", "iter", "fused"};
    for (int a = 0; a < 3; a++) {
        sl_record record;
        bench_once("stochastic", adapters[a], &record);
        const sl_record_metric *det = harness_find_metric(&record, "deterministic_p50_ns");
        const sl_record_metric *sto = harness_find_metric(&record, "stochastic_p50_ns");
        const sl_record_metric *ratio = harness_find_metric(&record, "stochastic_overhead_ratio");
        cr_assert(det && sto && ratio, "%s: a figure of the overhead is missing", adapters[a]);
        cr_expect_eq(det->scope, SL_METRIC_SCENARIO);
        cr_expect_eq(ratio->scope, SL_METRIC_SCENARIO);
        cr_expect_gt(det->value, 0);
        cr_expect_gt(sto->value, 0);
        cr_expect_float_eq(ratio->value, sto->value / det->value, 1e-12 * ratio->value, "%s", adapters[a]);
        sl_record_release(&record);
    }
    /* The deterministic variant's records do not time the pair again. */
    sl_record record;
    bench_once("deterministic", "fused", &record);
    for (int m = 0; m < record.nmetrics; m++)
        cr_expect_neq(record.metrics[m].scope, SL_METRIC_SCENARIO, "unexpected scenario metric %s",
                      record.metrics[m].name);
    sl_record_release(&record);
}
