/* AUG-1: a stochastic augmentation chain. u8 images normalized per channel,
 * then Gaussian noise per value (sigma 0.05) and a brightness offset per
 * image (uniform in [-0.2, 0.2]), each keyed by (seed, op id, epoch,
 * element) and fused into the element-wise tile chain. */
#include "common.h"

/* Stable op ids: the keys of the two ops' random streams. */
enum { AUG1_NOISE_OP = 1, AUG1_BRIGHTNESS_OP = 2 };

/* CIFAR-10's per-channel statistics, as CV-1. */
static const float cifar_mean[3] = {125.3f, 123.0f, 113.9f};
static const float cifar_std[3] = {63.0f, 62.1f, 66.7f};

static const sl_variant variants[] = {
    {"32x32", "10k x 32x32x3 u8, bs 64", {2000, 10000}, {64, 64}, 32, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_status st = sl__scenario_begin_images(instance, variant, options, side, err);
    if (st)
        return st;
    const sl_op ops[] = {
        sl_op_normalize("image", 3, cifar_mean, cifar_std),
        sl_op_gaussian_noise("image", AUG1_NOISE_OP, 0.05f),
        sl_op_random_brightness("image", AUG1_BRIGHTNESS_OP, 0.2f),
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && st == SL_OK; i++)
        st = sl_pipeline_spec_add(&instance->spec, ops[i], err);
    return st;
}

const sl_scenario sl__scenario_aug1 = {
    .id = "AUG-1",
    .title = "stochastic augmentation chain",
    .property = "noise has mean 0 and std 0.05 within sampling bounds; brightness offsets lie in [-0.2, 0.2]",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
