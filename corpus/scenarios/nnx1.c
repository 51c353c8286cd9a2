/* NNX-1: stateful operator modules. f32 images normalized per channel and
 * randomly cropped (7/8, zero-padded back, centred), run as a plain function
 * (the pipeline alone) and as a stateful module (the same ops carrying
 * running per-channel mean and variance of their output across batches,
 * include/sluice/pipeline/module.h). The outputs are identical; the state is
 * folded in batch order whatever the worker count, equals the statistics
 * computed directly, and survives a checkpoint. The metrics hook reports
 * what the state costs per batch. */
#include <inttypes.h>
#include <stdlib.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/timing.h"
#include "sluice/pipeline/module.h"
#include "sluice/records/record.h"

/* The stable op id of the crop's random stream. */
enum { NNX1_CROP_OP = 1 };

/* ImageNet's statistics on the [0, 1) scale of the fixture. */
static const float pixel_mean[3] = {0.485f, 0.456f, 0.406f};
static const float pixel_std[3] = {0.229f, 0.224f, 0.225f};

static const sl_variant variants[] = {
    {"64x64", "1k x 64x64x3 f32, bs 128 (5k at full size)", {1000, 5000}, {128, 128}, 64, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, side, side, 3, err);
    if (st)
        return st;
    int32_t crop = side * 7 / 8;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("x", 3, pixel_mean, pixel_std), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_random_crop("x", NNX1_CROP_OP, crop, crop), err);
    return st;
}

/* The module's pass: each delivered batch folded into the state, the fold
 * timed on its own (outside the batch's latency, as every sink is). */
typedef struct fold_pass {
    sl_module *module;
    int64_t warmup;
    int64_t seen;
    int64_t *update_ns; /* one per measured batch */
    sl_status status;
    sl_err err;
} fold_pass;

static int fold_batch(const sl_batch *batch, void *arg)
{
    fold_pass *f = arg;
    int64_t start = sl_now_ns();
    f->status = sl_module_update(f->module, batch, &f->err);
    int64_t ns = sl_now_ns() - start;
    if (f->seen >= f->warmup)
        f->update_ns[f->seen - f->warmup] = ns;
    f->seen++;
    return f->status != SL_OK;
}

/* Runs the record's adapter over its window twice, as a plain function and
 * with a module folding every batch, checks that both passes delivered the
 * same bytes and that the module folded every batch, and reports the fold's
 * median time per batch beside the plain batch's. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    int64_t warmup = record->warmup_batches, measured = record->measured_batches;
    sl__measured plain, folded;
    sl_status st = sl__scenario_measure(instance, adapter, kernels, warmup, measured, NULL, NULL, &plain, err);
    if (st)
        return st;
    fold_pass f = {.warmup = warmup, .update_ns = calloc((size_t)measured, sizeof(int64_t))};
    if (!f.update_ns)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %lld fold times", (long long)measured);
    st = sl_module_create(instance->pipeline, sl_adapter_kernels(adapter, kernels), "x", (sl_position){0, 0}, &f.module,
                          err);
    if (!st)
        st = sl__scenario_measure(instance, adapter, kernels, warmup, measured, fold_batch, &f, &folded, err);
    if (!st && f.status) {
        st = f.status;
        if (err)
            *err = f.err;
    }
    if (!st && folded.digest != plain.digest)
        st = sl_fail(err, SL_EMISMATCH, "with the module the output digest is %016" PRIx64 ", without it %016" PRIx64,
                     folded.digest, plain.digest);
    if (!st && sl_module_state_of(f.module)->batches != warmup + measured)
        st = sl_fail(err, SL_EMISMATCH, "the module folded %lld of %lld batches",
                     (long long)sl_module_state_of(f.module)->batches, (long long)(warmup + measured));
    if (!st) {
        double update = sl_percentile_i64(f.update_ns, (size_t)measured, 50.0);
        sl_record_add_scenario_metric(record, "module_update_ns_per_batch", update, "ns");
        sl_record_add_scenario_metric(record, "plain_p50_ns_per_batch", plain.median_ns, "ns");
        sl_record_add_scenario_metric(record, "module_overhead_fraction", update / plain.median_ns, "ratio");
    }
    sl_module_free(f.module);
    free(f.update_ns);
    return st;
}

const sl_scenario sl__scenario_nnx1 = {
    .id = "NNX-1",
    .title = "stateful operator modules",
    .property = "module and plain function give identical outputs; module state after an epoch equals the "
                "statistics computed directly; state survives a checkpoint; per-batch state overhead reported",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
