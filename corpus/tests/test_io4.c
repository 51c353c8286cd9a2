/* IO-4, cache effectiveness: the standard checks; three epochs through the
 * cached pipeline equal three epochs of the same ops without the cache, in
 * every executor; the epochs after the first really read the cache (changing
 * the source after epoch 0 changes nothing); the cache holds exactly one
 * copy of every element; a cache after a random op is refused; and the
 * record carries the per-epoch speedups and the cache's bytes. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(io4, "IO-4", "64x64x3")

enum { EPOCHS = 3, ELEMENT_BYTES = 64 * 64 * 3 * 4 };

/* The same pipeline as the instance's, without its cache op. */
static sl_pipeline *without_cache(const sl_scenario_instance *instance)
{
    sl_pipeline_spec spec = instance->spec;
    spec.nops = 0;
    for (int i = 0; i < instance->spec.nops; i++)
        if (instance->spec.ops[i].kind != SL_OP_CACHE)
            spec.ops[spec.nops++] = instance->spec.ops[i];
    cr_assert_eq(spec.nops, instance->spec.nops - 1, "the scenario has no cache op");
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

static void expect_same(const run_output *a, const run_output *b, const char *what)
{
    cr_assert_eq(a->rows, b->rows, "%s: %lld vs %lld rows", what, (long long)a->rows, (long long)b->rows);
    cr_assert(memcmp(a->ids, b->ids, (size_t)a->rows * sizeof *a->ids) == 0, "%s: element order differs", what);
    cr_assert_eq(a->size[0], b->size[0]);
    cr_assert(memcmp(a->bytes[0], b->bytes[0], a->size[0]) == 0, "%s: values differ", what);
}

Test(cache, three_epochs_through_the_cache_equal_three_without_it)
{
    sl_scenario_instance *instance = harness_build("IO-4", "64x64x3");
    int64_t batches = EPOCHS * sl_pipeline_batches_per_epoch(instance->pipeline);
    /* The uncached pipeline, run through the reference adapter, is the
     * expected output: every epoch computes every element. */
    sl_scenario_instance uncached = *instance;
    uncached.pipeline = without_cache(instance);
    run_output expected;
    harness_run(&uncached, "reference", 0, 0, (sl_position){0, 0}, batches, &expected);
    static const struct {
        const char *adapter;
        int workers;
    } runs[] = {{"reference", 0}, {"iter", 0}, {"iter", 2}, {"fused", 0}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        sl_pipeline_cache_reset(instance->pipeline);
        run_output out;
        harness_run(instance, runs[i].adapter, runs[i].workers, 0, (sl_position){0, 0}, batches, &out);
        char what[64];
        snprintf(what, sizeof what, "%s with %d workers", runs[i].adapter, runs[i].workers);
        expect_same(&expected, &out, what);
        harness_release(&out);
    }
    harness_release(&expected);
    sl_pipeline_free(uncached.pipeline);
    sl_scenario_instance_free(instance);
}

Test(cache, later_epochs_read_the_cache_not_the_source)
{
    sl_scenario_instance *instance = harness_build("IO-4", "64x64x3");
    const sl_pipeline *p = instance->pipeline;
    int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
    int64_t n = sl_source_rows(instance->source);
    sl_pipeline_cache_reset(p);
    cr_assert_eq(sl_pipeline_cache_bytes(p, sl_test_kernels()), 0);
    run_output epoch0;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, per_epoch, &epoch0);
    /* One copy of every element, and nothing else. */
    cr_assert_eq(sl_pipeline_cache_bytes(p, sl_test_kernels()), (size_t)n * ELEMENT_BYTES);
    cr_assert_eq(sl_pipeline_cache_bytes(p, sl_kernels_reference()), 0, "fused filled the reference's cache");

    /* Overwrite the source: an uncached epoch would now compute other
     * values, a cached one replays epoch 0's. */
    float *x = (float *)sl_source_map(instance->source, 0, 0, sl_source_field_bytes(instance->source, 0));
    cr_assert_not_null(x);
    for (int64_t i = 0; i < n * ELEMENT_BYTES / 4; i++)
        x[i] = 0.5f;
    run_output epoch1;
    harness_run(instance, "fused", 0, 0, (sl_position){1, 0}, per_epoch, &epoch1);
    /* Epoch 1 is another order of the same elements: compare per element. */
    for (int64_t r = 0; r < epoch1.rows; r++) {
        int64_t at = harness_find_element(&epoch0, epoch1.ids[r], 0, epoch0.rows);
        cr_assert_geq(at, 0);
        cr_assert(memcmp(harness_row(&epoch0, 0, at), harness_row(&epoch1, 0, r), ELEMENT_BYTES) == 0,
                  "element %lld changed in epoch 1: the cache was not read", (long long)epoch1.ids[r]);
    }
    /* And after a reset, the change shows: the cache, not a stale source,
     * is what kept the values. */
    sl_pipeline_cache_reset(p);
    run_output fresh;
    harness_run(instance, "fused", 0, 0, (sl_position){1, 0}, 1, &fresh);
    int64_t at = harness_find_element(&epoch0, fresh.ids[0], 0, epoch0.rows);
    cr_assert(memcmp(harness_row(&epoch0, 0, at), harness_row(&fresh, 0, 0), ELEMENT_BYTES) != 0,
              "after a reset the overwritten source still gave the old values");
    harness_release(&epoch0);
    harness_release(&epoch1);
    harness_release(&fresh);
    sl_scenario_instance_free(instance);
}

Test(cache, a_cache_after_a_random_op_is_refused)
{
    sl_scenario_instance *instance = harness_build("IO-4", "64x64x3");
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, instance->source, 64, 42);
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_random_hflip("x", 1, 0.5f), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_cache("x"), &err), SL_OK);
    sl_pipeline *p = NULL;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "random_hflip") && strstr(err.msg, "replay"), "%s", err.msg);
    /* Two caches are refused too. */
    sl_pipeline_spec_init(&spec, instance->source, 64, 42);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_cache("x"), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_cache("x"), &err), SL_OK);
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "both caches"), "%s", err.msg);
    sl_scenario_instance_free(instance);
}

Test(cache, the_record_carries_speedups_and_cache_bytes)
{
    sl_scenario_instance *instance = harness_build("IO-4", "64x64x3");
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 2;
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    double bytes = harness_metric(&record, "cache_bytes")->value;
    double speedup1 = harness_metric(&record, "epoch1_speedup")->value;
    double speedup2 = harness_metric(&record, "epoch2_speedup")->value;
    /* After the metrics' three epochs the cache holds every element once. */
    cr_expect_eq(bytes, (double)sl_source_rows(instance->source) * ELEMENT_BYTES);
    /* Speedups are measured, not asserted: only that they were. */
    cr_expect_gt(speedup1, 0);
    cr_expect_gt(speedup2, 0);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}
