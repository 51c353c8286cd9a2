/* CV-4: multi-resolution. u8 128x128x3 images resampled bilinearly (half-pixel
 * centres, sl_resize_plan) through a chain of sizes back to 128x128, then
 * normalized per channel: down by 1/2 and back up, or through a list of
 * scales that are not powers of two; and f32 images of full-precision values
 * (no grid a weight's error could hide in) resized to sides that are no
 * power of two and no multiple of a vector width, ending at 45x45. Its tests
 * show a constant image stays exactly constant, a linear ramp is reproduced
 * exactly, and the output is within a stated bound of a double-precision
 * bilinear. */
#include "common.h"

static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};
/* The same statistics for values in [0, 1), the f32 variant's range. */
static const float unit_mean[3] = {0.485f, 0.456f, 0.406f};
static const float unit_std[3] = {0.229f, 0.224f, 0.225f};

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
    /* odd: from f32 values to 77 and 45: neither a power of two nor, times
     * 3 channels, a multiple of any vector width, and weights of 77ths and
     * 90ths. */
    {2, {77, 45}},
};

static const sl_variant variants[] = {
    {"half", "256 x 128x128x3 u8, resize to 64x64 and back, bs 64", {256, 2000}, {64, 64}, 0, false},
    {"scales", "256 x 128x128x3 u8, resize through 96, 160, 112, 128, bs 64", {256, 2000}, {64, 64}, 1, false},
    {"odd", "256 x 128x128x3 f32 in [0, 1), resize to 77 then 45, bs 64", {256, 2000}, {64, 64}, 2, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    const int chain = (int)variant->param;
    bool floats = chain == 2;
    sl_status st = floats ? sl__scenario_begin_floats(instance, variant, options, CV4_SIDE, CV4_SIDE, 3, err)
                          : sl__scenario_begin_images(instance, variant, options, CV4_SIDE, err);
    if (st)
        return st;
    const char *field = floats ? "x" : "image";
    for (int s = 0; s < chains[chain].nsteps && !st; s++) {
        int32_t side = chains[chain].sides[s];
        st = sl_pipeline_spec_add(&instance->spec, sl_op_resize(field, side, side), err);
    }
    if (!st)
        st = sl_pipeline_spec_add(
            &instance->spec,
            sl_op_normalize(field, 3, floats ? unit_mean : imagenet_mean, floats ? unit_std : imagenet_std), err);
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
