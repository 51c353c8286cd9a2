/* CV-4: multi-resolution. u8 128x128x3 images resampled bilinearly (half-pixel
 * centres, sl_resize_plan) through a chain of sizes back to 128x128, then
 * normalized per channel: down by 1/2 and back up, or through a list of
 * scales that are not powers of two. Its tests show a constant image stays
 * exactly constant, a linear ramp is reproduced exactly, and the output is
 * within a stated bound of a double-precision bilinear. */
#include "common.h"

static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

enum { CV4_SIDE = 128, CV4_MAX_STEPS = 4 };

/* The sides each variant resizes through, in order; the last is the input
 * side again, so batches keep the input's shape. */
static const struct {
    int nsteps;
    int32_t sides[CV4_MAX_STEPS];
} chains[] = {
    /* half: 1/2 and back. */
    {2, {64, 128}},
    /* scales: 3/4, 5/4, 7/8 and 1 of the input side, i.e. down and up by
     * ratios whose weights are not dyadic, ending where it started. */
    {4, {96, 160, 112, 128}},
};

static const sl_variant variants[] = {
    {"half", "256 x 128x128x3 u8, resize to 64x64 and back, bs 64", {256, 2000}, {64, 64}, 0, false},
    {"scales", "256 x 128x128x3 u8, resize through 96, 160, 112, 128, bs 64", {256, 2000}, {64, 64}, 1, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_images(instance, variant, options, CV4_SIDE, err);
    if (st)
        return st;
    const int chain = (int)variant->param;
    for (int s = 0; s < chains[chain].nsteps && !st; s++) {
        int32_t side = chains[chain].sides[s];
        st = sl_pipeline_spec_add(&instance->spec, sl_op_resize("image", side, side), err);
    }
    if (!st)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("image", 3, imagenet_mean, imagenet_std), err);
    return st;
}

const sl_scenario sl__scenario_cv4 = {
    .id = "CV-4",
    .title = "multi-resolution",
    .property = "a constant image stays constant; a linear ramp is reproduced exactly",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
