/* MM-1: image-text pairs, as a CLIP loader feeds them. Each element is a u8
 * 64x64x3 image and a tokenized caption in a fixed-capacity field. The image
 * gets a random resized crop (a keyed box, bilinearly resized back to 64x64
 * with CV-4's kernels) and CLIP's normalization; the caption is truncated
 * or padded to 77 tokens with an end token. Its test shows every image
 * stays paired with its own caption through the shuffle. */
#include "common.h"
#include "sluice/corpus/scenarios.h"

/* CLIP's image statistics, on the 0..255 scale. */
static const float clip_mean[3] = {122.770935f, 116.74601f, 104.093735f};
static const float clip_std[3] = {68.50024f, 66.63224f, 70.32316f};

enum {
    MM1_SIDE = 64,
    MM1_CONTEXT = 77,      /* CLIP's context length */
    MM1_VOCAB = 49408,     /* CLIP's vocabulary size */
    MM1_CAPACITY = 96,     /* the caption field before truncation */
    MM1_MEAN_CAPTION = 40, /* content lengths uniform in [1, 80]: about 1 in 13 is cut */
    MM1_CROP_OP = 1,
};

static const sl_variant variants[] = {
    {"64x64", "1k x (64x64x3 u8 + 96 tokens), bs 64", {1000, 5000}, {64, 64}, 0, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_IMAGE_TEXT,
                               .n = sl_variant_n(variant, options),
                               .h = MM1_SIDE,
                               .w = MM1_SIDE,
                               .c = 3,
                               .vocab = MM1_VOCAB,
                               .mean_doc_len = MM1_MEAN_CAPTION,
                               .seq_capacity = MM1_CAPACITY};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    /* torchvision's defaults: scale [0.08, 1], aspect [3/4, 4/3]. */
    sl_op ops[] = {
        sl_op_random_resized_crop("image", MM1_CROP_OP, MM1_SIDE, MM1_SIDE, 0.08f, 1.0f, 4.0f / 3.0f),
        sl_op_normalize("image", 3, clip_mean, clip_std),
        sl_op_pad_tokens("text", MM1_CONTEXT, SL_TOKEN_EOD, SL_TOKEN_PAD),
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !st; i++)
        st = sl_pipeline_spec_add(&instance->spec, ops[i], err);
    return st;
}

const sl_scenario sl__scenario_mm1 = {
    .id = "MM-1",
    .title = "image-text pairs (CLIP)",
    .property = "each image stays paired with its own text",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
