/* PR-2: multi-epoch determinism. Random crop (7/8 of each side, zero-padded
 * back, centred) and random horizontal flip on uint8 images: every decision
 * keyed by (seed, op, epoch, element), so runs repeat and epochs differ. */
#include "common.h"

/* Stable op ids: the keys of the two ops' random streams. */
enum { PR2_CROP_OP = 1, PR2_FLIP_OP = 2 };

static const sl_variant variants[] = {
    {"64x64", "500 x 64x64x3 u8, bs 64", {500, 5000}, {64, 64}, 64, true},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_status st = sl__scenario_begin_images(instance, variant, options, side, err);
    if (st)
        return st;
    int32_t crop = side * 7 / 8;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_random_crop("image", PR2_CROP_OP, crop, crop), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_random_hflip("image", PR2_FLIP_OP, 0.5f), err);
    return st;
}

const sl_scenario sl__scenario_pr2 = {
    .id = "PR-2",
    .title = "multi-epoch determinism",
    .property = "runs identical; epochs differ; per-element decisions independent of batch size and workers",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
