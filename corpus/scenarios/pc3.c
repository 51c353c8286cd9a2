/* PC-3: differentiable rebatching. f32 images normalized per channel in
 * batches of 256, each batch then split into 8 micro-batches of 32 (copies,
 * each a batch of its own) and concatenated back, in the batch phase. The
 * scenario's batch is the 256-row batch: adapters time, digest and
 * checkpoint it, and the rebatching round trip is part of its time. */
#include "common.h"

/* Uniform [0, 1) values: mean 1/2, std 1/sqrt(12); per-channel constants a
 * little apart, so a channel mix-up shows in the output. */
static const float pc3_mean[3] = {0.5f, 0.45f, 0.55f};
static const float pc3_std[3] = {0.29f, 0.3f, 0.28f};

static const sl_variant variants[] = {
    {"256to32", "1k x 64x64x3 f32, bs 256 rebatched into 8 x 32 and back", {1000, 5000}, {256, 256}, 32, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, 64, 64, 3, err);
    if (st)
        return st;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("x", 3, pc3_mean, pc3_std), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_rebatch("x", (int32_t)variant->param), err);
    return st;
}

const sl_scenario sl__scenario_pc3 = {
    .id = "PC-3",
    .title = "differentiable rebatching",
    .property = "rebatched output concatenates to the input; its VJP is the identity",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
