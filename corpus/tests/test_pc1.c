/* PC-1, deep transform chains: the standard checks for each ci depth (1, 5,
 * 10 and 50), fused equal to unfused and to the chain written out by hand,
 * and a per-stage cost in every depth's record. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(pc1_depth1, "PC-1", "depth1")
SL_CORPUS_STANDARD_TESTS(pc1_depth5, "PC-1", "depth5")
SL_CORPUS_STANDARD_TESTS(pc1_depth10, "PC-1", "depth10")
SL_CORPUS_STANDARD_TESTS(pc1_depth50, "PC-1", "depth50")

/* The cycle of SCENARIOS.md, one rounding per operation. */
static float by_hand(float x, int depth)
{
    for (int i = 0; i < depth; i++) {
        switch (i % 5) {
        case 0: x = (x - 0.09f) * (1.0f / 1.8f); break;
        case 1: x = x * 1.9f; break;
        case 2: x = x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); break;
        case 3: x = x + 0.1f; break;
        default: x = x * 0.9f; break;
        }
    }
    return x;
}

static void expect_chain(const char *variant, int depth)
{
    sl_scenario_instance *instance = harness_build("PC-1", variant);
    run_output fused, unfused;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 2, &fused);
    harness_run(instance, "reference", 0, 0, (sl_position){0, 0}, 2, &unfused);
    cr_assert_eq(fused.size[0], unfused.size[0]);
    cr_assert(memcmp(fused.bytes[0], unfused.bytes[0], fused.size[0]) == 0, "depth %d: fused differs from unfused",
              depth);
    for (int64_t r = 0; r < fused.rows; r++) {
        const float *in = sl_source_map(instance->fixture, 0, (size_t)fused.ids[r] * 4096 * 4, 4096 * 4);
        const float *out = harness_row(&fused, 0, r);
        for (int i = 0; i < 4096; i++)
            cr_assert_eq(out[i], by_hand(in[i], depth), "depth %d element %lld value %d", depth,
                         (long long)fused.ids[r], i);
    }
    harness_release(&fused);
    harness_release(&unfused);
    sl_scenario_instance_free(instance);
}

Test(pc1, fused_equals_unfused_and_the_hand_chain)
{
    expect_chain("depth1", 1);
    expect_chain("depth5", 5);
    expect_chain("depth10", 10);
    expect_chain("depth50", 50);
}

Test(pc1, every_depth_reports_a_cost_per_stage)
{
    const char *variants[] = {"depth1", "depth5", "depth10", "depth50"};
    const int depths[] = {1, 5, 10, 50};
    for (int v = 0; v < 4; v++) {
        sl_scenario_instance *instance = harness_build("PC-1", variants[v]);
        sl_bench_options options;
        sl_bench_options_init(&options, SL_PROFILE_CI, 42);
        options.repetitions = 1;
        options.warmup_batches = 1;
        options.measured_batches = 3;
        sl_record record;
        sl_err err = {0};
        cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);
        const sl_record_metric *per_stage = NULL;
        for (int m = 0; m < record.nmetrics; m++)
            if (strcmp(record.metrics[m].name, "p50_ns_per_stage") == 0)
                per_stage = &record.metrics[m];
        cr_assert_not_null(per_stage, "%s: no p50_ns_per_stage metric", variants[v]);
        sl_latency_summary summary;
        sl_latency_summarize(record.latency_ns, (size_t)record.measured_batches, &summary);
        /* The metric is the median batch time spread over the stages. */
        cr_expect_float_eq(per_stage->value, summary.p50_ns / depths[v], 1e-6 * summary.p50_ns, "%s", variants[v]);
        sl_record_release(&record);
        sl_scenario_instance_free(instance);
    }
}

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int64_t distinct_values(const float *values, int64_t n)
{
    float *sorted = malloc((size_t)n * sizeof *sorted);
    memcpy(sorted, values, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_floats);
    int64_t distinct = n > 0;
    for (int64_t i = 1; i < n; i++)
        distinct += sorted[i] != sorted[i - 1];
    free(sorted);
    return distinct;
}

/* The deepest chain (depth 100, full size only; one batch here) must keep
 * the information of its input: one cycle is a contraction by 0.95 toward
 * 0.09, so 20 cycles leave a spread of 0.95^20 = 0.36 of the range, where
 * floats are still 2^-25 to 2^-23 apart against an input grid of 2^-24 x
 * 0.36: most distinct inputs stay distinct. The cycle used before left two
 * values; a third of the input's distinct values is far from either. */
Test(pc1, the_deepest_chain_keeps_its_values_distinct)
{
    const sl_scenario *scenario = sl_scenario_find("PC-1");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.n_override = 64;
    sl_scenario_instance *instance;
    sl_err err = {0};
    cr_assert_eq(
        sl_scenario_instantiate(scenario, sl_scenario_variant(scenario, "depth100"), &options, &instance, &err), SL_OK,
        "%s", err.msg);
    run_output out;
    harness_run(instance, "reference", 0, 0, (sl_position){0, 0}, 1, &out);
    int64_t n = out.rows * 4096;
    const float *in = sl_source_map(instance->fixture, 0, 0, (size_t)n * 4);
    int64_t distinct_in = distinct_values(in, n);
    int64_t distinct_out = distinct_values((const float *)out.bytes[0], n);
    cr_expect_geq(distinct_out * 3, distinct_in, "depth 100 keeps %lld distinct values of %lld",
                  (long long)distinct_out, (long long)distinct_in);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}
