/* CV-2: 3D medical volumes. Each f32 [d, h, w] scan is z-scored over its own
 * voxels, a patch of 3/4 of each side is cut at a random offset (the patch is
 * the output), and each of the patch's three axes is mirrored with
 * probability 1/2: MONAI's NormalizeIntensity, RandSpatialCrop and RandFlip
 * on every axis. */
#include "common.h"
#include "sluice/corpus/scenarios.h"

/* Stable op ids: the keys of the two ops' random streams. */
enum { CV2_CROP_OP = 1, CV2_FLIP_OP = 2 };

static const sl_variant variants[] = {
    {"32x32x32", "64 x 32^3 f32 volumes, 24^3 patches, bs 2", {64, 64}, {2, 2}, 32, false},
    {"64x64x64", "500 x 64^3 f32 volumes, 48^3 patches, bs 2", {0, 500}, {0, 2}, 64, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_fixture_spec fixture = {
        .kind = SL_FIXTURE_VOLUMES, .n = sl_variant_n(variant, options), .d = side, .h = side, .w = side};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    int32_t patch = side * 3 / 4;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_zscore("volume"), err);
    if (st == SL_OK)
        st =
            sl_pipeline_spec_add(&instance->spec, sl_op_random_crop3d("volume", CV2_CROP_OP, patch, patch, patch), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_random_flip3d("volume", CV2_FLIP_OP, 0.5f), err);
    return st;
}

const sl_scenario sl__scenario_cv2 = {
    .id = "CV-2",
    .title = "3D medical volumes",
    .property = "patches lie inside the volume; z-score mean 0 / std 1 per volume within tolerance",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    /* The whole ci epoch (64 volumes in batches of 2): every volume's crop
     * and flips are pinned, where 2 batches pinned 4 of 64. */
    .golden_batches = 32,
    .build = build,
};
