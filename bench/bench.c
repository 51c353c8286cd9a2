/* Running one scenario instance on one adapter as a benchmark: repetitions,
 * the median, the determinism check between repetitions, and the memcpy
 * yardstick every record is compared against. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "core/internal.h"
#include "sluice/bench/bench.h"
#include "sluice/core/compare.h"
#include "sluice/core/digest.h"
#include "sluice/core/timing.h"

/* What the sink of one repetition accumulates. Only batches after the warmup
 * count, so the digest, elements and bytes describe exactly the batches whose
 * latencies the record keeps. */
typedef struct measure_sink {
    int64_t warmup;
    int64_t seen;
    int64_t elements;
    int64_t bytes;
    sl_digest *digest;
    /* Under --instrument, the label of this run's callgrind dumps. */
    const char *instrument_label;
} measure_sink;

static int measure_batch(const sl_batch *batch, void *user)
{
    measure_sink *sink = user;
    char label[256];
    if (sink->instrument_label) {
        /* The counts since the previous batch left the sink: this batch's
         * production alone, which is what the gate compares. */
        snprintf(label, sizeof label, "sluice-batch %s %" PRId64, sink->instrument_label, sink->seen);
        sl__instrument_mark(label);
    }
    if (sink->seen >= sink->warmup) {
        sl_digest_add_batch(sink->digest, batch);
        sink->elements += batch->count;
        sink->bytes += (int64_t)sl_batch_data_bytes(batch);
    }
    if (sink->instrument_label) {
        /* The sink's own work (the digest), dumped apart. */
        snprintf(label, sizeof label, "sluice-sink %s %" PRId64, sink->instrument_label, sink->seen);
        sl__instrument_mark(label);
    }
    sink->seen++;
    return 0;
}

/* The result of one repetition, kept until the median is chosen. */
typedef struct repetition {
    int64_t elements;
    int64_t bytes;
    uint64_t digest;
    double elements_per_s;
    int64_t peak_rss_bytes;
    const char *peak_rss_method;
    int64_t growth_bytes;
} repetition;

void sl__record_identify(sl_record *record, const sl_scenario *scenario, const sl_variant *variant,
                         const sl_adapter *adapter, const sl_profile_settings *profile,
                         const sl_kernel_table *run_kernels)
{
    const sl_kernel_table *kernels = sl_adapter_kernels(adapter, run_kernels);
    sl__copy_string(record->scenario, sizeof record->scenario, scenario->id);
    sl__copy_string(record->variant, sizeof record->variant, variant->name);
    sl__copy_string(record->adapter, sizeof record->adapter, adapter->name);
    sl__copy_string(record->profile, sizeof record->profile, profile->name);
    sl__copy_string(record->backend_requested, sizeof record->backend_requested, profile->backend);
    sl__copy_string(record->backend_active, sizeof record->backend_active, adapter->backend);
    sl__copy_string(record->kernels, sizeof record->kernels, kernels != NULL ? kernels->name : "unknown");
    size_t used = 0;
    record->kernel_choice[0] = '\0';
    for (int e = 0; kernels && e < SL_KERNEL_ENTRY_COUNT && used < sizeof record->kernel_choice; e++)
        used += (size_t)snprintf(record->kernel_choice + used, sizeof record->kernel_choice - used, "%s%s=%s",
                                 e ? "," : "", sl_kernel_entry_name(e), sl_kernel_table_at(kernels->origin[e])->name);
}

static void fill_identity(const sl_scenario_instance *instance, const sl_adapter *adapter,
                          const sl_profile_settings *profile, const sl_kernel_table *run_kernels, sl_record *record)
{
    const sl_pipeline_spec *spec = sl_pipeline_get_spec(instance->pipeline);
    sl__record_identify(record, instance->scenario, instance->variant, adapter, profile, run_kernels);
    /* The seed the pipeline was built with is the one that determined the
     * output, so it is the one a record must carry to be reproducible. */
    record->seed = spec->seed;
    record->batch_size = spec->batch_size;
    sl_transform_set_format(sl_pipeline_transforms(instance->pipeline), record->transforms, sizeof record->transforms);
}

/* Marks the record failed and returns status with the same message in err,
 * prefixed with what was being run so a caller's log line stands alone. */
static sl_status fail_record(sl_record *record, sl_status status, const char *message, sl_err *err)
{
    record->outcome = SL_RECORD_FAILED;
    sl__copy_string(record->reason, sizeof record->reason, message);
    return sl_fail(err, status, "%s/%s on %s: %s", record->scenario, record->variant, record->adapter, message);
}

/* Elements per second of a span of batches, computed through the record's own
 * definition so that a repetition's figure and the kept record's agree. */
static double span_elements_per_s(const sl_record *identity, int64_t *latency_ns, int64_t nbatches, int64_t elements,
                                  int64_t bytes)
{
    sl_record span = *identity;
    span.latency_ns = latency_ns;
    span.measured_batches = nbatches;
    span.elements = elements;
    span.bytes = bytes;
    return sl_record_elements_per_s(&span);
}

/* Index of the median repetition by elements/s; for an even count, the lower
 * of the two middle ones, so the choice never flatters the adapter. */
static int median_repetition(const repetition *reps, int n)
{
    int order[SL_RECORD_MAX_REPETITIONS];
    for (int i = 0; i < n; i++) {
        order[i] = i;
    }
    for (int i = 1; i < n; i++) {
        int key = order[i];
        int j = i - 1;
        while (j >= 0 && reps[order[j]].elements_per_s > reps[key].elements_per_s) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = key;
    }
    return order[(n - 1) / 2];
}

/* The figures every ok record carries beyond its latencies: the cost per
 * stage (the median batch spread over the pipeline's ops, which is PC-1's
 * cost per stage at each depth and comparable across scenarios), and the
 * memcpy yardstick: how close the adapter came to just copying its output,
 * and what it spent per batch beyond that copy. */
/* The optimized table of a run: the options', or the default. */
static const sl_kernel_table *run_kernels(const sl_bench_options *options)
{
    return options->kernels ? options->kernels : sl_kernels_default();
}

static void add_metrics(const sl_scenario_instance *instance, const sl_bench_options *options, sl_record *record)
{
    double p50_ns = sl_percentile_i64(record->latency_ns, (size_t)record->measured_batches, 50.0);
    int nops = sl_pipeline_get_spec(instance->pipeline)->nops;
    if (nops > 0) {
        sl_record_add_metric(record, "p50_ns_per_stage", p50_ns / nops, "ns");
    }

    if (options->skip_probes)
        return;
    size_t batch_bytes = sl_pipeline_batch_bytes(instance->pipeline);
    double memcpy_bytes_per_s = options->memcpy_probe_bytes_per_s > 0.0 ? options->memcpy_probe_bytes_per_s
                                                                        : sl_probe_memcpy_bandwidth(batch_bytes, 5);
    if (memcpy_bytes_per_s <= 0.0) {
        return;
    }
    double copy_ns = (double)batch_bytes / memcpy_bytes_per_s * 1e9;
    sl_record_add_metric(record, "memcpy_probe_bytes_per_s", memcpy_bytes_per_s, "bytes/s");
    sl_record_add_metric(record, "fraction_of_memcpy", sl_record_bytes_per_s(record) / memcpy_bytes_per_s, "ratio");
    /* The probe copies from a 64 MiB source that is colder than an
     * adapter's working set, so a small batch can take less than the probe's
     * copy: the difference is then below what the probe can resolve, and is
     * published as 0 with a flag saying so, never as a negative time. */
    double overhead_ns = p50_ns - copy_ns;
    sl_record_add_metric(record, "overhead_beyond_copy_ns", overhead_ns > 0.0 ? overhead_ns : 0.0, "ns");
    if (!(overhead_ns > 0.0))
        sl_record_add_metric(record, "overhead_below_probe_resolution", 1.0, "flag");

    const sl_kernel_table *roofline_kernels = options->roofline_kernels;
    double roofline_ns = options->roofline_ns_per_batch > 0.0
                             ? options->roofline_ns_per_batch
                             : sl_probe_roofline_best(instance->pipeline, run_kernels(options), 21, &roofline_kernels);
    if (roofline_ns > 0.0) {
        /* Elements/s of the probe: a full batch per roofline_ns. */
        double roofline_elements_per_s =
            (double)sl_pipeline_get_spec(instance->pipeline)->batch_size / roofline_ns * 1e9;
        sl_record_add_metric(record, "roofline_ns_per_batch", roofline_ns, "ns");
        sl_record_add_metric(record, "fraction_of_roofline", sl_record_elements_per_s(record) / roofline_elements_per_s,
                             "ratio");
        if (roofline_kernels)
            sl__copy_string(record->roofline_kernels, sizeof record->roofline_kernels, roofline_kernels->name);
    }

    double gather_ns = options->gather_ns_per_batch > 0.0 ? options->gather_ns_per_batch
                                                          : sl_probe_gather_ns_per_batch(instance->pipeline, options);
    /* A p50 of 0 (an adapter whose clock did not tick) has no ratio to give. */
    if (gather_ns > 0.0 && p50_ns > 0.0) {
        sl_record_add_metric(record, "gather_probe_ns_per_batch", gather_ns, "ns");
        sl_record_add_metric(record, "fraction_of_gather", gather_ns / p50_ns, "ratio");
    }

    /* The bound no kernel table moves: a batch must load its source bytes
     * (in the run's order and storage, on memory advised as the source is)
     * and store its output bytes. One core doing both may overlap them (its
     * stores retire into the store buffer while its loads wait on memory)
     * or pay for both (they share its line fill buffers and its path to
     * L2): the traffic probe does both on one core, row by row as a
     * one-thread pipeline does, so which it is is measured, not assumed.
     * The write probe (storing the output's bytes into one reused buffer)
     * is a floor too. The gather probe is not part of the bound: it stores
     * a copy of the source bytes, which a pipeline that reads its source in
     * place (fused) never does, so where the output is smaller than the
     * source it is more than the work (PC-5's eval batch: gather 35 µs,
     * traffic 24, fused 30), and where it is larger the traffic probe
     * already loads every byte the gather probe does. The bound is the
     * larger of the write and traffic probes, never their sum: the traffic
     * probe stores the output too. */
    double write_ns =
        options->write_ns_per_batch > 0.0 ? options->write_ns_per_batch : sl_probe_write_ns_per_batch(batch_bytes);
    double traffic_ns = options->traffic_ns_per_batch > 0.0
                            ? options->traffic_ns_per_batch
                            : sl_probe_traffic_ns_per_batch(instance->pipeline, options);
    double hardware_ns = traffic_ns > write_ns ? traffic_ns : write_ns;
    if (traffic_ns > 0.0 && p50_ns > 0.0)
        sl_record_add_metric(record, "traffic_probe_ns_per_batch", traffic_ns, "ns");
    if (write_ns > 0.0 && p50_ns > 0.0) {
        sl_record_add_metric(record, "write_probe_ns_per_batch", write_ns, "ns");
        sl_record_add_metric(record, "hardware_bound_ns_per_batch", hardware_ns, "ns");
        sl_record_add_metric(record, "fraction_of_hardware_bound", hardware_ns / p50_ns, "ratio");
        /* The probes run on one core, so a run on one thread that beats
         * them shows a probe that missed the memory system's best (a
         * probe defect), not a pipeline faster than its bytes. */
        if (record->threads <= 1 && hardware_ns / p50_ns > 1.0)
            sl_record_add_metric(record, "hardware_bound_defect", 1.0, "flag");
    }
}

/* A record with several threads says how many of its kept measured batches
 * ran split: the executor chooses per batch whether splitting pays
 * (engine/exec/split_choice.h), so a thread count alone does not say how its
 * batches ran. */
static void add_split_fraction(sl_record *record, const bool *split)
{
    int64_t count = 0;
    for (int64_t i = 0; i < record->measured_batches; i++)
        count += split[i];
    sl_record_add_metric(record, "split_fraction", (double)count / (double)record->measured_batches, "ratio");
}

double sl_probe_roofline_ns_per_batch(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int repetitions)
{
    sl_fused *fused;
    sl_err err = {0};
    if (sl_fused_create(pipeline, kernels, &fused, &err) != SL_OK)
        return 0.0;
    double ns = 0.0;
    if (sl_fused_probe(fused, repetitions, &ns, &err) != SL_OK)
        ns = 0.0;
    sl_fused_free(fused);
    return ns;
}

double sl_probe_roofline_best(const sl_pipeline *pipeline, const sl_kernel_table *run_kernels, int repetitions,
                              const sl_kernel_table **fastest)
{
    const sl_kernel_table *best_table = NULL;
    double best = 0.0;
    for (int t = -1; t < sl_kernel_table_count(); t++) {
        const sl_kernel_table *table = t < 0 ? run_kernels : sl_kernel_table_at(t);
        if (!table ||
            (t >= 0 && (t == SL_TABLE_REFERENCE || table == run_kernels || !sl_kernel_table_supported(table, NULL, 0))))
            continue;
        double ns = sl_probe_roofline_ns_per_batch(pipeline, table, repetitions);
        if (ns > 0.0 && (best == 0.0 || ns < best)) {
            best = ns;
            best_table = table;
        }
    }
    if (fastest)
        *fastest = best_table;
    return best;
}

/* The batches a run measures: warmup batches from the start of epoch 0,
 * then measured ones, from the options or else the profile. */
static void measured_window(const sl_bench_options *options, const sl_profile_settings *profile, int64_t *warmup,
                            int64_t *measured)
{
    *warmup = options->warmup_batches >= 0 ? options->warmup_batches : profile->warmup_batches;
    *measured = options->measured_batches > 0 ? options->measured_batches : profile->measured_batches;
}

int64_t sl__bench_batches_read(const sl_bench_options *options)
{
    const sl_profile_settings *profile = sl_profile_get(options->profile);
    if (!profile)
        return 0;
    int64_t warmup, measured;
    measured_window(options, profile, &warmup, &measured);
    return warmup + measured;
}

/* The traffic probe, or else the gather probe, over the batches a run under
 * options measures: as many timed passes as the run has repetitions, each
 * after the window was read once, as an adapter's repetitions after the
 * first. 0 when it cannot run. */
static double memory_probe_ns(const sl_pipeline *pipeline, const sl_bench_options *options, bool traffic)
{
    const sl_profile_settings *profile = sl_profile_get(options->profile);
    if (profile == NULL)
        return 0.0;
    int64_t warmup, measured;
    measured_window(options, profile, &warmup, &measured);
    double ns = 0.0;
    sl_err err = {0};
    int passes = options->repetitions > 0 ? options->repetitions : profile->repetitions;
    sl_status st = traffic
                       ? sl_pipeline_traffic_probe(pipeline, run_kernels(options), warmup, measured, passes, &ns, &err)
                       : sl_pipeline_gather_probe(pipeline, run_kernels(options), warmup, measured, passes, &ns, &err);
    return st == SL_OK ? ns : 0.0;
}

double sl_probe_gather_ns_per_batch(const sl_pipeline *pipeline, const sl_bench_options *options)
{
    return memory_probe_ns(pipeline, options, false);
}

double sl_probe_traffic_ns_per_batch(const sl_pipeline *pipeline, const sl_bench_options *options)
{
    return memory_probe_ns(pipeline, options, true);
}

sl_status sl_bench_reference_digest(const sl_scenario_instance *instance, const sl_bench_options *options,
                                    uint64_t *digest, sl_err *err)
{
    const sl_profile_settings *profile = sl_profile_get(options->profile);
    if (profile == NULL)
        return sl_fail(err, SL_EINVAL, "unknown profile %d", (int)options->profile);
    int64_t warmup, measured;
    measured_window(options, profile, &warmup, &measured);
    const sl_pipeline *pipeline = instance->pipeline;
    sl_batch *batch = NULL;
    sl_status status =
        sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size, &batch, err);
    if (status != SL_OK)
        return status;
    measure_sink sink = {.warmup = warmup, .digest = sl_digest_new()};
    if (sink.digest == NULL) {
        sl_batch_free(batch);
        return sl_fail(err, SL_ENOMEM, "out of memory for the reference digest");
    }
    sl_position position = {0, 0};
    for (int64_t i = 0; i < warmup + measured && status == SL_OK; i++) {
        status = sl_pipeline_produce(pipeline, sl_kernels_reference(), position, batch, err);
        if (status == SL_OK)
            measure_batch(batch, &sink);
        position = sl_position_advance(pipeline, position, 1);
    }
    *digest = sl_digest_value(sink.digest);
    sl_digest_free(sink.digest);
    sl_batch_free(batch);
    return status;
}

/* What the tolerance check's sink holds: the reference's batch at the same
 * position, produced with the reference kernels, and the worst difference. */
typedef struct tolerance_sink {
    const sl_pipeline *pipeline;
    double tolerance;
    int64_t warmup;
    int64_t seen;
    sl_position position;
    sl_batch *reference;
    double worst;
    bool match;
    sl_status status;
    sl_err err;
} tolerance_sink;

static int compare_to_reference(const sl_batch *batch, void *user)
{
    tolerance_sink *sink = user;
    if (sink->seen++ >= sink->warmup) {
        sink->status =
            sl_pipeline_produce(sink->pipeline, sl_kernels_reference(), sink->position, sink->reference, &sink->err);
        double worst = 0.0;
        if (sink->status != SL_OK || !sl_batches_match(sink->reference, batch, sink->tolerance, &worst, NULL, NULL))
            sink->match = false;
        sink->worst = worst > sink->worst ? worst : sink->worst;
        if (sink->status != SL_OK)
            return 1;
    }
    sink->position = sl_position_advance(sink->pipeline, sink->position, 1);
    return 0;
}

/* For a scenario with a stated tolerance (sl_scenario.tolerance) whose
 * digest differs from the reference's: one more unmeasured run of the
 * adapter over the same batches, each measured one held value by value to
 * the reference's. Sets *match and *worst. */
static sl_status check_within_tolerance(const sl_scenario_instance *instance, const sl_adapter *adapter,
                                        const sl_run_request *request, int64_t warmup, bool *match, double *worst,
                                        sl_err *err)
{
    const sl_pipeline *pipeline = instance->pipeline;
    tolerance_sink sink = {
        .pipeline = pipeline, .tolerance = instance->scenario->tolerance, .warmup = warmup, .match = true};
    sl_status status = sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size,
                                       &sink.reference, err);
    if (status != SL_OK)
        return status;
    int64_t *latency = malloc((size_t)request->nbatches * sizeof *latency);
    if (latency == NULL) {
        sl_batch_free(sink.reference);
        return sl_fail(err, SL_ENOMEM, "out of memory for the tolerance check");
    }
    status = adapter->run(adapter, pipeline, request, compare_to_reference, &sink, latency, err);
    if (status == SL_OK && sink.status != SL_OK) {
        status = sink.status;
        if (err)
            *err = sink.err;
    }
    free(latency);
    sl_batch_free(sink.reference);
    *match = sink.match;
    *worst = sink.worst;
    return status;
}

/* One sl_bench_run's window and working memory: the batches each
 * repetition runs, one latency array per repetition (so the kept one can be
 * copied out once the median is known), which batches a threaded adapter
 * split, and each repetition's result. */
struct sl__bench_run {
    const sl_scenario_instance *instance;
    const sl_adapter *adapter;
    const sl_bench_options *options;
    sl_record *record;
    int repetitions;
    int64_t warmup, measured, total;
    int64_t *latencies;
    bool *splits;
    /* The wall time spent on this record so far, over every step of it:
     * with interleaved rounds, only its own steps count. */
    int64_t wall_ns;
    /* How the adapter itself held its last repetition to the reference (a
     * peer checked statistically says "statistical"), read right after the
     * repetition: with interleaved rounds other adapters run before this
     * record is classified, and the adapter's own memory of its last run
     * then belongs to another. */
    char own_equivalence[32];
    repetition reps[SL_RECORD_MAX_REPETITIONS];
};
typedef struct sl__bench_run bench_run;

/* An adapter that cannot run here, or lacks one of the pipeline's
 * transforms, is recorded as such rather than run: returns false with the
 * record's outcome and reason set. */
static bool admit_adapter(const sl_scenario_instance *instance, const sl_adapter *adapter, sl_record *record)
{
    sl__copy_string(record->equivalence, sizeof record->equivalence, "not checked");
    if (!sl_adapter_is_available(adapter, record->reason, sizeof record->reason)) {
        record->outcome = SL_RECORD_UNAVAILABLE;
        return false;
    }
    if (!sl_adapter_supports(adapter, sl_pipeline_transforms(instance->pipeline), record->reason,
                             sizeof record->reason)) {
        record->outcome = SL_RECORD_EXCLUDED;
        return false;
    }
    return true;
}

/* Checks the counts the options ask for, sets the record's workers and
 * threads, and allocates the run's arrays. */
static sl_status prepare_run(bench_run *run, const sl_profile_settings *profile, sl_record *record, sl_err *err)
{
    const sl_bench_options *options = run->options;
    run->repetitions = options->repetitions > 0 ? options->repetitions : profile->repetitions;
    measured_window(options, profile, &run->warmup, &run->measured);
    if (run->repetitions > SL_RECORD_MAX_REPETITIONS) {
        char message[128];
        snprintf(message, sizeof message, "%d repetitions requested; a record holds at most %d", run->repetitions,
                 SL_RECORD_MAX_REPETITIONS);
        return fail_record(record, SL_EINVAL, message, err);
    }
    if (options->workers < 0) {
        return fail_record(record, SL_EINVAL, "the worker count must not be negative", err);
    }
    if (options->threads < 0 || options->threads > SL_FUSED_MAX_THREADS) {
        return fail_record(record, SL_EINVAL, "the thread count must be in [0, 256]", err);
    }
    record->workers = options->workers;
    record->threads = run->adapter->threaded && options->threads > 0 ? options->threads : 1;
    run->total = run->warmup + run->measured;

    size_t slots = (size_t)run->repetitions * (size_t)run->total;
    run->latencies = malloc(slots * sizeof *run->latencies);
    /* Which batches were split is only asked for where several threads may
     * split. */
    run->splits = record->threads > 1 ? calloc(slots, sizeof *run->splits) : NULL;
    if (run->latencies == NULL || (record->threads > 1 && run->splits == NULL)) {
        free(run->latencies);
        free(run->splits);
        run->latencies = NULL;
        run->splits = NULL;
        return fail_record(record, SL_ENOMEM, "out of memory for the latency arrays", err);
    }
    return SL_OK;
}

/* Fails the record for an adapter whose run returned an error. An adapter
 * that checks its own output (a peer, by digest) and says it did other work
 * than the reference makes a mismatch, not ranked; one that finds the
 * variant cannot fit where it runs (a GPU's memory) skips it, with the
 * reason. */
static sl_status fail_adapter_run(sl_record *record, sl_status status, const char *message, sl_err *err)
{
    status = fail_record(record, status, message, err);
    if (status == SL_EMISMATCH) {
        record->outcome = SL_RECORD_MISMATCH;
        sl__copy_string(record->equivalence, sizeof record->equivalence, "mismatch");
    }
    if (status == SL_ESKIPPED)
        record->outcome = SL_RECORD_SKIPPED;
    return status;
}

/* Runs repetition r from the start of epoch 0 and keeps its result in
 * run->reps[r]. */
static sl_status run_one_repetition(bench_run *run, int r, sl_record *record, sl_err *err)
{
    const sl_scenario_instance *instance = run->instance;
    const sl_adapter *adapter = run->adapter;
    int64_t *latency = run->latencies + (size_t)r * (size_t)run->total;
    sl_digest *digest = sl_digest_new();
    if (digest == NULL)
        return fail_record(record, SL_ENOMEM, "out of memory for the output digest", err);
    measure_sink sink = {.warmup = run->warmup, .digest = digest};
    sl_run_request request = {.start = {0, 0},
                              .nbatches = run->total,
                              .workers = run->options->workers,
                              .threads = record->threads,
                              .split = run->splits ? run->splits + (size_t)r * (size_t)run->total : NULL,
                              .kernels = run_kernels(run->options),
                              .tolerance = instance->scenario->tolerance};
    sl_rss_probe probe;
    sl_err run_err = {0};

    /* Every repetition starts from an empty cache (IO-4), so that each
     * measures the same mix of filling and replaying epochs. */
    sl_pipeline_cache_reset(instance->pipeline);
    sl_rss_reset(&probe);
    char label[160];
    if (run->options->instrument) {
        snprintf(label, sizeof label, "%s/%s/%s %d", record->scenario, record->variant, record->adapter, r);
        sink.instrument_label = label;
        sl__instrument_start();
    }
    sl_status status = adapter->run(adapter, instance->pipeline, &request, measure_batch, &sink, latency, &run_err);
    if (run->options->instrument) {
        char end[192];
        snprintf(end, sizeof end, "sluice-end %s", label);
        sl__instrument_mark(end);
        sl__instrument_stop();
    }
    if (adapter->framework)
        adapter->framework(adapter, record->framework, sizeof record->framework);
    if (adapter->annotate)
        adapter->annotate(adapter, record);
    sl_adapter_last_equivalence(adapter, run->own_equivalence, sizeof run->own_equivalence);
    if (status != SL_OK) {
        status = fail_adapter_run(record, status, run_err.msg, err);
    } else if (sink.seen != run->total) {
        char message[SL_ERR_MAX];
        snprintf(message, sizeof message, "the adapter delivered %" PRId64 " of the %" PRId64 " batches requested",
                 sink.seen, run->total);
        status = fail_record(record, SL_EMISMATCH, message, err);
    } else {
        repetition *rep = &run->reps[r];
        *rep = (repetition){
            .elements = sink.elements,
            .bytes = sink.bytes,
            .digest = sl_digest_value(digest),
            .elements_per_s =
                span_elements_per_s(record, latency + run->warmup, run->measured, sink.elements, sink.bytes),
        };
        rep->peak_rss_bytes = sl_rss_peak_bytes(&probe, &rep->peak_rss_method);
        rep->growth_bytes = sl_rss_growth_bytes(&probe);
    }
    sl_digest_free(digest);
    return status;
}

/* The engine is deterministic, so every repetition must produce the same
 * measured batches; checking costs nothing and catches an adapter whose
 * output depends on timing or leftover state. */
static sl_status check_repetitions_agree(const bench_run *run, int r, sl_record *record, sl_err *err)
{
    if (run->reps[r].digest == run->reps[0].digest)
        return SL_OK;
    char message[SL_ERR_MAX];
    snprintf(message, sizeof message,
             "output differs between repetitions: repetition 1 digest %016" PRIx64 ", repetition %d digest %016" PRIx64,
             run->reps[0].digest, r + 1, run->reps[r].digest);
    return fail_record(record, SL_EMISMATCH, message, err);
}

/* Copies the kept repetition's measured latencies into the record, and
 * every repetition's measured batches into its samples, for the interval of
 * the median and the gate: the kept repetition alone would hide how much
 * the repetitions disagree. */
static sl_status keep_median_repetition(const bench_run *run, int kept, sl_record *record, sl_err *err)
{
    size_t measured = (size_t)run->measured, total = (size_t)run->total, warmup = (size_t)run->warmup;
    record->latency_ns = malloc(measured * sizeof *record->latency_ns);
    if (record->latency_ns == NULL)
        return fail_record(record, SL_ENOMEM, "out of memory for the kept latencies", err);
    memcpy(record->latency_ns, run->latencies + (size_t)kept * total + warmup, measured * sizeof *record->latency_ns);
    record->samples_ns = malloc((size_t)run->repetitions * measured * sizeof *record->samples_ns);
    if (record->samples_ns == NULL)
        return fail_record(record, SL_ENOMEM, "out of memory for the samples", err);
    for (int r = 0; r < run->repetitions; r++)
        memcpy(record->samples_ns + (size_t)r * measured, run->latencies + (size_t)r * total + warmup,
               measured * sizeof *record->samples_ns);
    return SL_OK;
}

/* An ok record's counts come from the kept repetition; its memory figures
 * are the largest any repetition reached. */
static void fill_record(const bench_run *run, int kept, sl_record *record)
{
    const repetition *reps = run->reps;
    record->outcome = SL_RECORD_OK;
    record->warmup_batches = run->warmup;
    record->measured_batches = run->measured;
    record->repetitions = run->repetitions;
    record->repetition_kept = kept;
    record->elements = reps[kept].elements;
    record->bytes = reps[kept].bytes;
    record->output_digest = reps[kept].digest;
    record->first_batch_ns = run->latencies[0];
    for (int r = 0; r < run->repetitions; r++) {
        record->repetition_elements_per_s[r] = reps[r].elements_per_s;
        if (r == 0 || reps[r].growth_bytes > record->adapter_memory_bytes)
            record->adapter_memory_bytes = reps[r].growth_bytes;
        if (r == 0 || reps[r].peak_rss_bytes > record->peak_rss_bytes) {
            record->peak_rss_bytes = reps[r].peak_rss_bytes;
            sl__copy_string(record->peak_rss_method, sizeof record->peak_rss_method,
                            reps[r].peak_rss_method != NULL ? reps[r].peak_rss_method : "unknown");
        }
    }
}

/* Says how the record's output was held to the reference's: an own
 * equivalence the adapter reports, bitwise, within the scenario's
 * tolerance (close), or a mismatch with the reason. */
static void classify_equivalence(const bench_run *run, bool close, double worst, sl_record *record)
{
    double tolerance = run->instance->scenario->tolerance;
    uint64_t reference = run->options->reference_digest;
    const char *own = run->own_equivalence;
    if (record->output_digest == reference && own[0]) {
        /* A peer held to the reference statistically handed the sink the
         * reference's batches: say how it was checked, not "bitwise". */
        sl__copy_string(record->equivalence, sizeof record->equivalence, own);
    } else if (record->output_digest == reference) {
        sl__copy_string(record->equivalence, sizeof record->equivalence, "bitwise");
    } else if (close) {
        /* Not the reference's bits, but within the scenario's stated
         * tolerance (docs/determinism.md): equivalent work. */
        snprintf(record->equivalence, sizeof record->equivalence, "within %.3g", tolerance);
    } else {
        /* Its time is kept in the record for diagnosis, but a mismatch is
         * never ranked: it did other work than the reference. */
        record->outcome = SL_RECORD_MISMATCH;
        sl__copy_string(record->equivalence, sizeof record->equivalence, "mismatch");
        if (tolerance > 0.0)
            snprintf(record->reason, sizeof record->reason,
                     "output differs from the reference's by up to %.3g, beyond the scenario's tolerance %.3g", worst,
                     tolerance);
        else
            snprintf(record->reason, sizeof record->reason,
                     "output digest %016" PRIx64 " of the measured batches differs from the reference's %016" PRIx64,
                     record->output_digest, reference);
    }
}

/* No time without a check: holds the record's digest to the reference's,
 * and where they differ in a scenario with a stated tolerance, the output
 * value by value (check_within_tolerance). */
static sl_status check_against_reference(const bench_run *run, sl_record *record, sl_err *err)
{
    bool close = false;
    double worst = 0.0;
    if (record->output_digest != run->options->reference_digest && run->instance->scenario->tolerance > 0.0) {
        sl_run_request request = {.start = {0, 0},
                                  .nbatches = run->total,
                                  .workers = run->options->workers,
                                  .threads = record->threads,
                                  .kernels = run_kernels(run->options)};
        sl_err check_err = {0};
        sl_status check =
            check_within_tolerance(run->instance, run->adapter, &request, run->warmup, &close, &worst, &check_err);
        if (check != SL_OK)
            return fail_record(record, check, check_err.msg, err);
    }
    classify_equivalence(run, close, worst, record);
    return SL_OK;
}

/* The steps after the repetitions ran: the median kept, the record filled
 * with its figures, held to the reference, and given the scenario's own
 * metrics. */
static sl_status finish_record(const bench_run *run, sl_record *record, sl_err *err)
{
    int kept = median_repetition(run->reps, run->repetitions);
    sl_status status = keep_median_repetition(run, kept, record, err);
    if (status != SL_OK)
        return status;
    fill_record(run, kept, record);
    add_metrics(run->instance, run->options, record);
    if (run->splits)
        add_split_fraction(record, run->splits + (size_t)kept * (size_t)run->total + run->warmup);
    if (run->options->check_against_reference) {
        status = check_against_reference(run, record, err);
        if (status != SL_OK)
            return status;
    }
    if (!run->options->defer_scenario_metrics)
        status = sl_bench_scenario_metrics(run->instance, run->adapter, run_kernels(run->options), record, err);
    return status;
}

static void free_run(bench_run *run)
{
    free(run->latencies);
    free(run->splits);
    free(run);
}

sl_status sl__bench_begin(const sl_scenario_instance *instance, const sl_adapter *adapter,
                          const sl_bench_options *options, sl_record *record, sl__bench_run **out, sl_err *err)
{
    int64_t started = sl_now_ns();
    *out = NULL;
    memset(record, 0, sizeof *record);
    if (instance == NULL || instance->pipeline == NULL || adapter == NULL || options == NULL) {
        return sl_fail(err, SL_EINVAL, "sl_bench_run needs an instance with a pipeline, an adapter and options");
    }
    const sl_profile_settings *profile = sl_profile_get(options->profile);
    if (profile == NULL) {
        return sl_fail(err, SL_EINVAL, "unknown profile %d", (int)options->profile);
    }
    fill_identity(instance, adapter, profile, run_kernels(options), record);
    if (adapter->device)
        adapter->device(adapter, record);
    if (!admit_adapter(instance, adapter, record))
        return SL_OK;

    bench_run *run = calloc(1, sizeof *run);
    if (run == NULL)
        return fail_record(record, SL_ENOMEM, "out of memory for a run", err);
    *run = (bench_run){.instance = instance, .adapter = adapter, .options = options, .record = record};
    sl_status status = prepare_run(run, profile, record, err);
    if (status != SL_OK) {
        free(run);
        return status;
    }
    run->wall_ns = sl_now_ns() - started;
    *out = run;
    return SL_OK;
}

sl_status sl__bench_repetition(sl__bench_run *run, int r, sl_err *err)
{
    int64_t started = sl_now_ns();
    sl_status status = run_one_repetition(run, r, run->record, err);
    if (status == SL_OK)
        status = check_repetitions_agree(run, r, run->record, err);
    run->wall_ns += sl_now_ns() - started;
    return status;
}

sl_status sl__bench_end(sl__bench_run *run, sl_err *err)
{
    int64_t started = sl_now_ns();
    sl_record *record = run->record;
    sl_status status = finish_record(run, record, err);
    if (run->adapter->device)
        run->adapter->device(run->adapter, record); /* the peak of the runs just made */
    record->wall_ns = run->wall_ns + (sl_now_ns() - started);
    free_run(run);
    return status;
}

void sl__bench_abandon(sl__bench_run *run)
{
    if (run == NULL)
        return;
    if (run->adapter->device)
        run->adapter->device(run->adapter, run->record);
    run->record->wall_ns = run->wall_ns;
    free_run(run);
}

sl_status sl_bench_run(const sl_scenario_instance *instance, const sl_adapter *adapter, const sl_bench_options *options,
                       sl_record *record, sl_err *err)
{
    sl__bench_run *run = NULL;
    sl_status status = sl__bench_begin(instance, adapter, options, record, &run, err);
    if (status != SL_OK || run == NULL)
        return status;
    for (int r = 0; r < run->repetitions && status == SL_OK; r++)
        status = sl__bench_repetition(run, r, err);
    if (status != SL_OK) {
        sl__bench_abandon(run);
        return status;
    }
    return sl__bench_end(run, err);
}

sl_status sl_bench_scenario_metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                                    const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    if (record->outcome != SL_RECORD_OK || !instance->scenario->metrics)
        return SL_OK;
    sl_err metrics_err = {0};
    sl_status status = instance->scenario->metrics(instance, adapter, kernels, record, &metrics_err);
    if (status != SL_OK)
        return fail_record(record, status, metrics_err.msg, err);
    return SL_OK;
}

bool sl_bench_instrument_available(void)
{
    return sl__instrument_available();
}

void sl_record_file_name(const sl_record *record, char *buf, size_t size)
{
    snprintf(buf, size, "%s__%s__%s.json", record->scenario, record->variant, record->adapter);
    /* Names come from the registries, but a separator or a space in one must
     * never turn a record name into a path or an awkward shell word. */
    for (char *c = buf; *c != '\0'; c++) {
        if (*c == '/' || *c == '\\' || *c == ' ') {
            *c = '_';
        }
    }
}

#define PROBE_SOURCE_BYTES    ((size_t)64 << 20)
#define PROBE_MIN_NS          ((int64_t)20 * 1000 * 1000)
/* The write probe stores into the cache: a few milliseconds, and enough
 * calls for a median, settle it. */
#define WRITE_PROBE_MIN_NS    ((int64_t)2 * 1000 * 1000)
#define WRITE_PROBE_MIN_CALLS 64
#define WRITE_PROBE_MAX_CALLS 4096

double sl_probe_memcpy_bandwidth(size_t block_bytes, int repetitions)
{
    if (block_bytes == 0 || repetitions <= 0) {
        return 0.0;
    }
    /* A block larger than the source would read past it; growing the source
     * keeps the access pattern (one pass of fresh source per block). */
    size_t source_bytes = block_bytes > PROBE_SOURCE_BYTES ? block_bytes : PROBE_SOURCE_BYTES;
    unsigned char *source = sl__aligned_alloc(SL_ALIGN, source_bytes);
    unsigned char *dst = sl__aligned_alloc(SL_ALIGN, block_bytes);
    double *rates = malloc((size_t)repetitions * sizeof *rates);
    double result = 0.0;
    if (source == NULL || dst == NULL || rates == NULL) {
        goto done;
    }
    /* Touching every page first keeps page faults out of the measurement. */
    for (size_t i = 0; i < source_bytes; i++) {
        source[i] = (unsigned char)(i * 131u + 7u);
    }
    memset(dst, 0, block_bytes);

    size_t offset = 0;
    for (int r = 0; r < repetitions; r++) {
        uint64_t copied = 0;
        int64_t start = sl_now_ns();
        int64_t elapsed = 0;
        while (copied < PROBE_SOURCE_BYTES || elapsed < PROBE_MIN_NS) {
            if (offset + block_bytes > source_bytes) {
                offset = 0;
            }
            memcpy(dst, source + offset, block_bytes);
            sl__keep_stores(dst);
            offset += block_bytes;
            copied += block_bytes;
            elapsed = sl_now_ns() - start;
        }
        rates[r] = (double)copied / ((double)elapsed * 1e-9);
    }
    result = sl_median_f64(rates, (size_t)repetitions);

done:
    free(rates);
    free(dst);
    free(source);
    return result;
}

double sl_probe_write_ns_per_batch(size_t batch_bytes)
{
    if (batch_bytes == 0)
        return 0.0;
    unsigned char *dst = sl__aligned_alloc(SL_ALIGN, batch_bytes);
    double *samples = malloc(WRITE_PROBE_MAX_CALLS * sizeof *samples);
    double result = 0.0;
    if (dst && samples) {
        /* The first pass faults the pages in and brings the lines into the
         * cache, as a reused batch buffer is. Then every store of the batch
         * is one sample, as every batch is one latency: on a shared machine
         * a call the scheduler interrupts is an outlier the median leaves
         * out, where a longer sample would carry the interruption. */
        memset(dst, 0, batch_bytes);
        int n = 0;
        int64_t start = sl_now_ns();
        while (n < WRITE_PROBE_MAX_CALLS && (n < WRITE_PROBE_MIN_CALLS || sl_now_ns() - start < WRITE_PROBE_MIN_NS)) {
            int64_t t0 = sl_now_ns();
            memset(dst, (int)(n & 0x7f), batch_bytes);
            sl__keep_stores(dst);
            samples[n++] = (double)(sl_now_ns() - t0);
        }
        result = sl_median_f64(samples, (size_t)n);
    }
    free(samples);
    free(dst);
    return result;
}
