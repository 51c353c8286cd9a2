/* AUG-2: what randomness costs. The same u8 images through a deterministic
 * chain (normalize, scale, clip) and a stochastic one (normalize, Gaussian
 * noise, random scale in [0.8, 1.2]); the stochastic variant's records carry
 * its cost over the deterministic chain's, timed on the same source in
 * interleaved passes by its metrics hook. */
#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/records/record.h"

/* Stable op ids of the stochastic chain. */
enum { AUG2_NOISE_OP = 1, AUG2_SCALE_OP = 2 };
enum { AUG2_DETERMINISTIC = 0, AUG2_STOCHASTIC = 1 };

/* ImageNet's per-channel statistics on the 0-255 scale. */
static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

static const sl_variant variants[] = {
    {"deterministic",
     "10k x 64x64x3 u8, bs 64: normalize, scale, clip",
     {1000, 10000},
     {64, 64},
     AUG2_DETERMINISTIC,
     false},
    {"stochastic",
     "10k x 64x64x3 u8, bs 64: normalize, noise, random scale",
     {1000, 10000},
     {64, 64},
     AUG2_STOCHASTIC,
     false},
};

/* The chain of one variant; the metrics hook builds the other with it. */
static sl_status add_chain(sl_pipeline_spec *spec, int64_t which, sl_err *err)
{
    sl_status st = sl_pipeline_spec_add(spec, sl_op_normalize("image", 3, imagenet_mean, imagenet_std), err);
    if (which == AUG2_DETERMINISTIC) {
        if (st == SL_OK)
            st = sl_pipeline_spec_add(spec, sl_op_scale("image", 0.9f), err);
        if (st == SL_OK)
            st = sl_pipeline_spec_add(spec, sl_op_clip("image", -2.0f, 2.0f), err);
    } else {
        if (st == SL_OK)
            st = sl_pipeline_spec_add(spec, sl_op_gaussian_noise("image", AUG2_NOISE_OP, 0.05f), err);
        if (st == SL_OK)
            st = sl_pipeline_spec_add(spec, sl_op_random_scale("image", AUG2_SCALE_OP, 0.8f, 1.2f), err);
    }
    return st;
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_images(instance, variant, options, 64, err);
    if (st)
        return st;
    return add_chain(&instance->spec, variant->param, err);
}

/* Passes of each chain behind the ratio: enough that the median of their
 * batches does not hang on one disturbed pass. */
#define AUG2_PASSES 3

/* The stochastic variant's records: both chains' median batch times on this
 * source, timed in interleaved passes with the record's adapter and batch
 * counts, and their ratio. The deterministic variant adds nothing (the
 * same figures would be timed twice). */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    if (instance->variant->param != AUG2_STOCHASTIC)
        return SL_OK;
    sl_pipeline *deterministic = NULL;
    sl_status st = sl__scenario_twin(instance, add_chain, AUG2_DETERMINISTIC, &deterministic, err);
    if (st)
        return st;
    sl_pipeline *const pipelines[2] = {deterministic, instance->pipeline};
    double p50[2];
    st = sl__scenario_time_pipelines(adapter, kernels, pipelines, 2, record, AUG2_PASSES, p50, err);
    sl_pipeline_free(deterministic);
    if (st)
        return st;
    sl_record_add_scenario_metric(record, "deterministic_p50_ns", p50[0], "ns");
    sl_record_add_scenario_metric(record, "stochastic_p50_ns", p50[1], "ns");
    sl_record_add_scenario_metric(record, "stochastic_overhead_ratio", p50[1] / p50[0], "ratio");
    return SL_OK;
}

const sl_scenario sl__scenario_aug2 = {
    .id = "AUG-2",
    .title = "deterministic vs stochastic overhead",
    .property = "deterministic output independent of the seed; stochastic output changes with it; overhead ratio "
                "reported",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
