/* sl_bench_run's contract, with scripted adapters whose latencies and output
 * the test controls: the median repetition is kept, the first batch comes
 * from the first repetition, adapters that lack a transform or are not
 * available are recorded as such, and repetitions that disagree fail. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels_under_test.h"
#include "sluice/sluice.h"

static sl_scenario_instance *small_nlp1(void)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.n_override = 256;
    const sl_scenario *scenario = sl_scenario_find("NLP-1");
    sl_scenario_instance *instance;
    sl_err err = {0};
    cr_assert_eq(sl_scenario_instantiate(scenario, &scenario->variants[0], &options, &instance, &err), SL_OK, "%s",
                 err.msg);
    return instance;
}

/* Each call is one repetition; repetition r reports every batch as taking
 * scripted_ns[r], and, when corrupt_from >= 0, changes its output from that
 * repetition on. */
static int calls;
static int64_t scripted_ns[3] = {3000, 1000, 2000};
static int corrupt_from = -1;
static int64_t deliver = -1;

static sl_status scripted_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                              sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    (void)adapter;
    int rep = calls++;
    sl_batch *batch;
    sl_status st =
        sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size, &batch, err);
    if (st)
        return st;
    int64_t n = deliver >= 0 ? deliver : request->nbatches;
    sl_position pos = request->start;
    for (int64_t i = 0; i < n && st == SL_OK; i++) {
        st = sl_pipeline_produce(pipeline, sl_kernels_reference(), pos, batch, err);
        if (corrupt_from >= 0 && rep >= corrupt_from)
            ((int32_t *)batch->fields[0].data)[0] ^= 1;
        latency_ns[i] = scripted_ns[rep % 3] + (i == 0 ? 500 * (rep + 1) : 0);
        sink(batch, user);
        pos = sl_position_advance(pipeline, pos, 1);
    }
    sl_batch_free(batch);
    return st;
}

static const sl_adapter scripted = {
    .name = "scripted",
    .summary = "test",
    .backend = "cpu",
    .kernels = SL_KERNELS_REFERENCE,
    .transforms = SL_TRANSFORM(SL_OP_PACK_TOKENS),
    .run = scripted_run,
};

static sl_bench_options three_reps(void)
{
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 3;
    options.warmup_batches = 1;
    options.measured_batches = 4;
    return options;
}

static void reset_script(void)
{
    calls = 0;
    corrupt_from = -1;
    deliver = -1;
}

/* A fresh script, one sl_bench_run that must succeed. */
static void bench_scripted(const sl_scenario_instance *instance, const sl_adapter *adapter,
                           const sl_bench_options *options, sl_record *record)
{
    reset_script();
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, adapter, options, record, &err), SL_OK, "%s", err.msg);
}

Test(bench, keeps_the_median_repetition)
{
    reset_script();
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, &scripted, &options, &record, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_eq(calls, 3);
    /* Batches of 3000, 1000 and 2000 ns: the median speed is the 2000 ns
     * repetition, the third one. */
    cr_expect_eq(record.repetition_kept, 2);
    for (int64_t b = 0; b < record.measured_batches; b++)
        cr_expect_eq(record.latency_ns[b], 2000, "batch %lld", (long long)b);
    /* The first batch is the first repetition's warmup batch 0. */
    cr_expect_eq(record.first_batch_ns, 3000 + 500);
    /* 4 measured batches of 32 sequences; 32 x 128 i32 each. */
    cr_expect_eq(record.elements, 4 * 32);
    cr_expect_eq(record.bytes, 4 * 32 * 128 * 4);
    cr_expect_float_eq(sl_record_elements_per_s(&record), 128 / (4 * 2000e-9), 1e-3);
    cr_expect_str_eq(record.transforms, "pack_tokens");
    cr_expect_str_eq(record.backend_requested, "cpu");
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

/* Runs the scripted adapter for three repetitions and returns its record's
 * outcome and reason, for the scripts that must fail it. */
static sl_record_outcome scripted_outcome(char *reason, size_t size)
{
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    sl_record record;
    sl_err err = {0};
    sl_bench_run(instance, &scripted, &options, &record, &err);
    snprintf(reason, size, "%s", record.reason);
    sl_record_outcome outcome = record.outcome;
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
    return outcome;
}

Test(bench, repetitions_that_disagree_fail_the_record)
{
    reset_script();
    corrupt_from = 1;
    char reason[256];
    cr_expect_eq(scripted_outcome(reason, sizeof reason), SL_RECORD_FAILED);
    cr_expect(strstr(reason, "digest") != NULL, "%s", reason);
}

Test(bench, a_short_run_fails_the_record)
{
    reset_script();
    deliver = 2;
    char reason[256];
    cr_expect_eq(scripted_outcome(reason, sizeof reason), SL_RECORD_FAILED);
    cr_expect_neq(reason[0], '\0');
}

static bool no_gpu(char *reason, size_t size)
{
    snprintf(reason, size, "no CUDA device");
    return false;
}

Test(bench, missing_transforms_and_devices_are_recorded_not_run)
{
    reset_script();
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    sl_adapter lacking = scripted;
    lacking.name = "lacking";
    lacking.transforms = SL_TRANSFORM(SL_OP_NORMALIZE);
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, &lacking, &options, &record, &err), SL_OK);
    cr_expect_eq(record.outcome, SL_RECORD_EXCLUDED);
    cr_expect(strstr(record.reason, "pack_tokens") != NULL, "%s", record.reason);
    sl_record_release(&record);

    sl_adapter absent = scripted;
    absent.name = "absent";
    absent.available = no_gpu;
    cr_assert_eq(sl_bench_run(instance, &absent, &options, &record, &err), SL_OK);
    cr_expect_eq(record.outcome, SL_RECORD_UNAVAILABLE);
    cr_expect_str_eq(record.reason, "no CUDA device");
    cr_expect_eq(calls, 0, "neither adapter may run");
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

Test(bench, the_memcpy_probe_measures_something)
{
    double bandwidth = sl_probe_memcpy_bandwidth(1 << 16, 3);
    /* Any machine that runs this copies faster than 100 MB/s and slower than
     * 10 TB/s; outside that the probe is broken, not the machine. */
    cr_expect(bandwidth > 1e8 && bandwidth < 1e13, "probe says %g bytes/s", bandwidth);
}

/* No time without a check. The reference digest is what the reference
 * adapter itself reports for the same measured batches; an adapter that
 * reproduces them is "bitwise", one that changes a single bit is a
 * mismatch whose speed is not ranked. */
Test(bench, reference_digest_is_the_reference_adapters_own)
{
    reset_script();
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    uint64_t expected;
    sl_err err = {0};
    cr_assert_eq(sl_bench_reference_digest(instance, &options, &expected, &err), SL_OK, "%s", err.msg);
    sl_record record;
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("reference"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(record.output_digest, expected);
    cr_expect_str_eq(record.equivalence, "not checked", "a bench told not to check must say so");
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

static sl_record checked_run(void)
{
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    sl_err err = {0};
    options.check_against_reference = true;
    cr_assert_eq(sl_bench_reference_digest(instance, &options, &options.reference_digest, &err), SL_OK, "%s", err.msg);
    sl_record record;
    cr_assert_eq(sl_bench_run(instance, &scripted, &options, &record, &err), SL_OK, "%s", err.msg);
    sl_scenario_instance_free(instance);
    return record;
}

Test(bench, an_adapter_equal_to_the_reference_is_bitwise)
{
    reset_script();
    sl_record record = checked_run();
    cr_expect_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    cr_expect_str_eq(record.equivalence, "bitwise");
    sl_record_release(&record);
}

Test(bench, an_adapter_that_differs_from_the_reference_is_a_mismatch)
{
    reset_script();
    corrupt_from = 0; /* every repetition flips one bit of each batch */
    sl_record record = checked_run();
    cr_expect_eq(record.outcome, SL_RECORD_MISMATCH, "outcome %s: %s", sl_record_outcome_name(record.outcome),
                 record.reason);
    cr_expect_str_eq(record.equivalence, "mismatch");
    cr_expect(strstr(record.reason, "differs from the reference") != NULL, "%s", record.reason);
    sl_record_release(&record);
}

/* A threaded adapter says which batches it split. The scripted one splits
 * the first r + 1 batches of repetition r; the kept repetition is the median
 * one (scripted_ns: repetition 2), whose measured batches (after 1 warmup
 * batch) are split at positions 1 and 2 of 4: a fraction of 0.5, which no
 * other repetition or window would give. */
static sl_status scripted_split_run(const sl_adapter *adapter, const sl_pipeline *pipeline,
                                    const sl_run_request *request, sl_batch_sink sink, void *user, int64_t *latency_ns,
                                    sl_err *err)
{
    int rep = calls;
    /* Asked exactly when several threads may split a batch. */
    cr_assert_eq(request->split != NULL, request->threads > 1, "split asked for with %d threads", request->threads);
    for (int64_t i = 0; request->split && i < request->nbatches; i++)
        request->split[i] = i <= rep;
    return scripted_run(adapter, pipeline, request, sink, user, latency_ns, err);
}

static const sl_record_metric *metric_named(const sl_record *record, const char *name)
{
    for (int i = 0; i < record->nmetrics; i++)
        if (strcmp(record->metrics[i].name, name) == 0)
            return &record->metrics[i];
    return NULL;
}

Test(bench, a_threaded_record_says_how_many_measured_batches_ran_split)
{
    sl_adapter threaded = scripted;
    threaded.threaded = true;
    threaded.run = scripted_split_run;
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    options.skip_probes = true;
    options.threads = 2;
    sl_record record;
    bench_scripted(instance, &threaded, &options, &record);
    cr_assert_eq(record.repetition_kept, 2);
    const sl_record_metric *split = metric_named(&record, "split_fraction");
    cr_assert_not_null(split);
    cr_expect_float_eq(split->value, 0.5, 1e-12);
    sl_record_release(&record);

    /* One thread, or an adapter that does not split: no such figure. */
    options.threads = 1;
    bench_scripted(instance, &threaded, &options, &record);
    cr_expect_null(metric_named(&record, "split_fraction"));
    sl_record_release(&record);
    options.threads = 2;
    bench_scripted(instance, &scripted, &options, &record);
    cr_expect_null(metric_named(&record, "split_fraction"));
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

/* The real fused executor never splits a batch under 64 KiB: NLP-1's small
 * token batches run on one thread whatever the thread count. */
Test(bench, fused_never_splits_a_small_batch)
{
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    options.skip_probes = true;
    options.threads = 2;
    cr_assert_lt(sl_pipeline_batch_bytes(instance->pipeline), (size_t)64 * 1024);
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("fused"), &options, &record, &err), SL_OK, "%s", err.msg);
    const sl_record_metric *split = metric_named(&record, "split_fraction");
    cr_assert_not_null(split);
    cr_expect_float_eq(split->value, 0.0, 1e-12);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

/* The gather probe's figures: the time to fetch the measured batches'
 * source bytes, and the record's p50 against it, computed here from the
 * record's own latencies. sluice bench measures the probe once per instance
 * and hands it to every adapter's run through the options: a given figure
 * is used as it is, not measured again. Without probes neither is there. */
Test(bench, a_record_carries_the_gather_probe_and_its_fraction)
{
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    sl_record record;
    bench_scripted(instance, &scripted, &options, &record);
    const sl_record_metric *gather = metric_named(&record, "gather_probe_ns_per_batch");
    const sl_record_metric *fraction = metric_named(&record, "fraction_of_gather");
    cr_assert_not_null(gather);
    cr_assert_not_null(fraction);
    cr_expect(gather->value > 0.0 && isfinite(gather->value), "gather probe %g ns", gather->value);
    const sl_record_metric *traffic = metric_named(&record, "traffic_probe_ns_per_batch");
    cr_assert_not_null(traffic, "a measured run carries the traffic probe");
    cr_expect(traffic->value > 0.0 && isfinite(traffic->value), "traffic probe %g ns", traffic->value);
    double p50 = sl_percentile_i64(record.latency_ns, (size_t)record.measured_batches, 50.0);
    cr_expect_float_eq(fraction->value, gather->value / p50, 1e-12 * fraction->value);
    sl_record_release(&record);

    /* The scripted batches take 2000 ns each. */
    options.gather_ns_per_batch = 500.0;
    bench_scripted(instance, &scripted, &options, &record);
    gather = metric_named(&record, "gather_probe_ns_per_batch");
    fraction = metric_named(&record, "fraction_of_gather");
    cr_assert_not_null(gather);
    cr_assert_not_null(fraction);
    cr_expect_eq(gather->value, 500.0);
    cr_expect_float_eq(fraction->value, 500.0 / 2000.0, 1e-12);
    sl_record_release(&record);
    options.gather_ns_per_batch = 0.0;

    options.skip_probes = true;
    bench_scripted(instance, &scripted, &options, &record);
    cr_expect_null(metric_named(&record, "gather_probe_ns_per_batch"));
    cr_expect_null(metric_named(&record, "fraction_of_gather"));
    cr_expect_null(metric_named(&record, "traffic_probe_ns_per_batch"));
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

static const sl_adapter scripted_optimized = {
    .name = "scripted",
    .summary = "test",
    .backend = "cpu",
    .kernels = SL_KERNELS_OPTIMIZED,
    .transforms = SL_TRANSFORM(SL_OP_PACK_TOKENS),
    .run = scripted_run,
};

/* A record names the table each kernel came from (here an assembly of two
 * tables), the table whose roofline probe it is held to, and the hardware
 * bound: the largest of the gather, write and traffic probes, over the p50
 * (never a sum: the traffic probe measures one core doing both). */
Test(bench, a_record_names_each_kernels_table_and_the_hardware_bound)
{
    sl_kernel_assembly mixture;
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++)
        mixture.table[e] = SL_TABLE_GENERIC;
    mixture.table[SL_ENTRY_normalize_u8] = SL_TABLE_REFERENCE;
    mixture.table[SL_ENTRY_pack] = SL_TABLE_REFERENCE;
    sl_kernel_table mixed;
    sl_err err = {0};
    cr_assert_eq(sl_kernels_assemble(&mixture, "mixed", &mixed, &err), SL_OK, "%s", err.msg);
    sl_scenario_instance *instance = small_nlp1();
    sl_bench_options options = three_reps();
    options.kernels = &mixed;
    options.memcpy_probe_bytes_per_s = 1e9;
    options.roofline_ns_per_batch = 1000.0;
    options.roofline_kernels = sl_kernels_find("cpu-generic");
    options.gather_ns_per_batch = 500.0;
    options.write_ns_per_batch = 800.0;
    options.traffic_ns_per_batch = 700.0;
    sl_record record;
    bench_scripted(instance, &scripted_optimized, &options, &record);
    cr_expect_str_eq(record.kernels, "mixed");
    cr_expect(strstr(record.kernel_choice, "permute_strided=cpu-generic,normalize_u8=reference,") ==
                  record.kernel_choice,
              "%s", record.kernel_choice);
    cr_expect(strstr(record.kernel_choice, ",pack=reference,") && strstr(record.kernel_choice, ",rot90=cpu-generic"),
              "%s", record.kernel_choice);
    int items = 1;
    for (const char *c = record.kernel_choice; *c; c++)
        items += *c == ',';
    cr_expect_eq(items, SL_KERNEL_ENTRY_COUNT, "one item per kernel entry: %s", record.kernel_choice);
    cr_expect_str_eq(record.roofline_kernels, "cpu-generic");
    /* The scripted batches take 2000 ns each. */
    cr_expect_eq(metric_named(&record, "write_probe_ns_per_batch")->value, 800.0);
    cr_expect_eq(metric_named(&record, "traffic_probe_ns_per_batch")->value, 700.0);
    cr_expect_eq(metric_named(&record, "hardware_bound_ns_per_batch")->value, 800.0,
                 "a core that overlaps its reads and stores is held to the slower of them");
    cr_expect_float_eq(metric_named(&record, "fraction_of_hardware_bound")->value, 800.0 / 2000.0, 1e-12);
    sl_record_release(&record);

    /* A core that pays for part of its reads and its stores together
     * (traffic 1200 ns, over the gather's 500 and the write's 800) is held
     * to what the traffic probe paid, neither the larger of gather and
     * write (800) nor their sum (1300). */
    options.traffic_ns_per_batch = 1200.0;
    bench_scripted(instance, &scripted_optimized, &options, &record);
    cr_expect_eq(metric_named(&record, "hardware_bound_ns_per_batch")->value, 1200.0, "the traffic probe's");
    sl_record_release(&record);
    options.traffic_ns_per_batch = 700.0;

    /* The gather probe stores a copy of the source bytes, which a pipeline
     * reading its source in place never does, so it is no part of the
     * bound: a gather of 2500 ns beside a 2000 ns batch is reported, and the
     * bound stays the write probe's 800. */
    options.gather_ns_per_batch = 2500.0;
    bench_scripted(instance, &scripted_optimized, &options, &record);
    cr_expect_eq(metric_named(&record, "gather_probe_ns_per_batch")->value, 2500.0);
    cr_expect_eq(metric_named(&record, "hardware_bound_ns_per_batch")->value, 800.0, "not the gather probe's");
    cr_expect_null(metric_named(&record, "hardware_bound_defect"), "800 ns under a 2000 ns batch is a bound");
    sl_record_release(&record);
    options.gather_ns_per_batch = 500.0;

    /* A one-thread batch of 2000 ns faster than a 2500 ns bound: the probe
     * missed the memory system's best, and the record flags it. */
    options.traffic_ns_per_batch = 2500.0;
    bench_scripted(instance, &scripted_optimized, &options, &record);
    cr_expect_eq(record.threads, 1);
    cr_expect_float_eq(metric_named(&record, "fraction_of_hardware_bound")->value, 1.25, 1e-12);
    cr_assert_not_null(metric_named(&record, "hardware_bound_defect"));
    cr_expect_eq(metric_named(&record, "hardware_bound_defect")->value, 1.0);
    sl_record_release(&record);

    options.skip_probes = true;
    bench_scripted(instance, &scripted_optimized, &options, &record);
    cr_expect_null(metric_named(&record, "hardware_bound_ns_per_batch"));
    cr_expect_str_empty(record.roofline_kernels);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}

Test(bench, the_write_probe_measures_a_store_and_nothing_for_no_bytes)
{
    cr_expect_eq(sl_probe_write_ns_per_batch(0), 0.0);
    double ns = sl_probe_write_ns_per_batch(64 * 1024);
    cr_expect(ns > 0.0 && isfinite(ns), "storing 64 KiB took %g ns", ns);
}

/* The roofline is the fastest probe among the run's table and every
 * optimized table this CPU runs; the reference is a candidate only as the
 * run's own table. Which one wins is the machine's to say. */
Test(bench, the_roofline_is_one_of_the_run_and_optimized_tables)
{
    sl_scenario_instance *instance = small_nlp1();
    bool candidate[SL_TABLE_COUNT];
    sl_kernel_tune_candidates(candidate);
    const sl_kernel_table *fastest = NULL;
    double ns = sl_probe_roofline_best(instance->pipeline, sl_test_kernels(), 5, &fastest);
    cr_expect_gt(ns, 0.0);
    cr_assert_not_null(fastest);
    cr_expect(fastest == sl_test_kernels() || (fastest->id < SL_TABLE_COUNT && candidate[fastest->id]), "%s",
              fastest->name);
    cr_expect_neq(fastest->id, SL_TABLE_REFERENCE);
    sl_scenario_instance_free(instance);
}

Test(bench, the_gather_and_traffic_probes_refuse_an_empty_window_and_change_no_output)
{
    sl_scenario_instance *instance = small_nlp1();
    const sl_pipeline *p = instance->pipeline;
    double ns = -1.0;
    sl_err err = {0};
    cr_expect_eq(sl_pipeline_gather_probe(p, sl_test_kernels(), 0, 0, 1, &ns, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "gather probe"), "%s", err.msg);
    cr_expect_eq(sl_pipeline_gather_probe(p, sl_test_kernels(), -1, 4, 1, &ns, &err), SL_EINVAL);
    cr_expect_eq(sl_pipeline_gather_probe(p, sl_test_kernels(), 0, 4, 0, &ns, &err), SL_EINVAL);
    cr_expect_float_eq(ns, -1.0, 0.0, "a refused probe leaves its result alone");
    cr_expect_eq(sl_pipeline_traffic_probe(p, sl_test_kernels(), 0, 0, 1, &ns, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "traffic probe needs at least 1 batch"), "%s", err.msg);
    cr_expect_float_eq(ns, -1.0, 0.0, "a refused traffic probe leaves its result alone");

    sl_bench_options options = three_reps();
    uint64_t before, after;
    cr_assert_eq(sl_bench_reference_digest(instance, &options, &before, &err), SL_OK, "%s", err.msg);
    /* Past the epoch's end: the window runs on into the next epoch. */
    int64_t batches = 2 * sl_pipeline_batches_per_epoch(p);
    cr_assert_eq(sl_pipeline_gather_probe(p, sl_test_kernels(), 1, batches, 2, &ns, &err), SL_OK, "%s", err.msg);
    cr_expect(ns > 0.0, "%g ns", ns);
    ns = 0.0;
    cr_assert_eq(sl_pipeline_traffic_probe(p, sl_test_kernels(), 1, batches, 2, &ns, &err), SL_OK, "%s", err.msg);
    cr_expect(ns > 0.0, "%g ns", ns);
    cr_assert_eq(sl_bench_reference_digest(instance, &options, &after, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(before, after);
    sl_scenario_instance_free(instance);
}
