/* CV-1: image classification. uint8 NHWC images normalized per channel to
 * f32, labels carried alongside; its test shows labels stay with their
 * images through the shuffle. */
#include "common.h"

/* CIFAR-10's per-channel statistics, the constants real pipelines use. */
static const float cifar_mean[3] = {125.3f, 123.0f, 113.9f};
static const float cifar_std[3] = {63.0f, 62.1f, 66.7f};

static const sl_variant variants[] = {
    {"32x32", "10k x 32x32x3 u8, bs 64", {10000, 10000}, {64, 64}, 32, true},
    {"128x128", "5k x 128x128x3 u8, bs 128", {0, 5000}, {0, 128}, 128, false},
    {"256x256", "50k x 256x256x3 u8, bs 64", {0, 50000}, {0, 64}, 256, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_images(instance, variant, options, (int32_t)variant->param, err);
    if (st)
        return st;
    return sl_pipeline_spec_add(&instance->spec, sl_op_normalize("image", 3, cifar_mean, cifar_std), err);
}

const sl_scenario sl__scenario_cv1 = {
    .id = "CV-1",
    .title = "image classification",
    .property = "labels stay aligned with their images through shuffle",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
