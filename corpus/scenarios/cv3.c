/* CV-3: batch mixing. u8 images normalized to f32, labels made one-hot, then
 * each batch mixed with a permutation of itself: MixUp (the pixels and labels
 * blended by lam ~ Beta(0.4, 0.4)) or, in the cutmix variant, CutMix (a box
 * of the partner's pixels pasted in, labels weighted by its area). The mixing
 * runs in the batch phase, keyed by (seed, op, epoch, batch index). */
#include "common.h"

/* The stable op id of the mixing op's random stream. */
enum { CV3_MIX_OP = 1 };

enum { CV3_MIXUP, CV3_CUTMIX };

static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

static const sl_variant variants[] = {
    {"mixup", "1k x 64x64x3 u8, 10 classes, MixUp alpha 0.4, bs 128", {1000, 5000}, {128, 128}, CV3_MIXUP, false},
    {"cutmix", "1k x 64x64x3 u8, 10 classes, CutMix alpha 0.4, bs 128", {1000, 5000}, {128, 128}, CV3_CUTMIX, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_images(instance, variant, options, 64, err);
    if (st)
        return st;
    sl_op mix = variant->param == CV3_CUTMIX ? sl_op_cutmix("image", "label", CV3_MIX_OP, 0.4f)
                                             : sl_op_mixup("image", "label", CV3_MIX_OP, 0.4f);
    st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("image", 3, imagenet_mean, imagenet_std), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_one_hot("label", SL__IMAGE_CLASSES), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, mix, err);
    return st;
}

const sl_scenario sl__scenario_cv3 = {
    .id = "CV-3",
    .title = "batch mixing",
    .property = "mixed labels sum to 1 and equal the pixel mix ratio; partner map is a permutation",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
