/* IO-4: cache effectiveness. An expensive per-element op (8 rounds of
 * sin + cos on every value), a cache after it, and a cheap op after that:
 * the first epoch computes every element and fills the cache, later epochs
 * read it back. Its test shows they replay the cache exactly; its metrics
 * say what the cache buys per epoch and what it costs in bytes. */
#include <stdlib.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/timing.h"
#include "sluice/records/record.h"

/* Rounds of the expensive op: SCENARIOS.md's "8 x sin+cos". */
enum { IO4_ROUNDS = 8, IO4_EPOCHS = 3 };

static const sl_variant variants[] = {
    {"64x64x3", "500 x 64x64x3 f32, bs 64, 3 epochs (5k at full size)", {500, 5000}, {64, 64}, 64, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, side, side, 3, err);
    if (st)
        return st;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_trig_rounds("x", IO4_ROUNDS), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_cache("x"), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_add("x", 0.1f), err);
    return st;
}

/* Times each of three whole epochs from an empty cache through the
 * adapter: epoch 0 fills the cache, epochs 1 and 2 read it. One run of the
 * three epochs, each epoch's time the sum of its batches' latencies: a peer
 * runs only from the start of epoch 0, and its cache lives as long as its
 * process, so three runs would give it nothing to replay. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    const sl_pipeline *p = instance->pipeline;
    int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
    int64_t *latency = malloc((size_t)(IO4_EPOCHS * per_epoch) * sizeof *latency);
    if (!latency)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %lld latencies", (long long)(IO4_EPOCHS * per_epoch));
    sl_pipeline_cache_reset(p);
    sl_run_request request = {.start = {0, 0}, .nbatches = IO4_EPOCHS * per_epoch, .kernels = kernels};
    sl_status st = adapter->run(adapter, p, &request, NULL, NULL, latency, err);
    double epoch_ns[IO4_EPOCHS] = {0};
    for (int e = 0; e < IO4_EPOCHS && st == SL_OK; e++)
        for (int64_t b = 0; b < per_epoch; b++)
            epoch_ns[e] += (double)latency[e * per_epoch + b];
    free(latency);
    if (st)
        return st;
    sl_record_add_scenario_metric(record, "epoch0_ms", epoch_ns[0] / 1e6, "ms");
    sl_record_add_scenario_metric(record, "epoch1_speedup", epoch_ns[0] / epoch_ns[1], "x");
    sl_record_add_scenario_metric(record, "epoch2_speedup", epoch_ns[0] / epoch_ns[2], "x");
    sl_record_add_scenario_metric(record, "cache_bytes",
                                  (double)sl_pipeline_cache_bytes(p, sl_adapter_kernels(adapter, kernels)), "B");
    return SL_OK;
}

const sl_scenario sl__scenario_io4 = {
    .id = "IO-4",
    .title = "cache effectiveness",
    .property = "epochs after the first replay the cache exactly; speedup reported; cache bytes accounted",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
