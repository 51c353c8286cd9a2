/* PC-5: end-to-end differentiable. f32 images normalized per channel, then
 * a learnable per-channel affine (scale and bias), then dropout with p = 0.1
 * (keyed per element and value, op id 1). The `train` variant runs the
 * pipeline in training mode (dropout drops), `eval` in inference mode
 * (dropout is the identity). Every op has a VJP, so a batch can be
 * differentiated end to end with the autodiff API (sluice/exec/autodiff.h). */
#include "common.h"

/* The stable op id of dropout's random stream. */
enum { PC5_DROPOUT_OP = 1 };

static const float pc5_mean[3] = {0.5f, 0.45f, 0.55f};
static const float pc5_std[3] = {0.29f, 0.3f, 0.28f};
/* Initial parameters away from the identity and different per channel, so
 * each channel's gradient is its own. */
static const float pc5_scale[3] = {1.5f, 0.75f, 1.25f};
static const float pc5_bias[3] = {0.1f, -0.2f, 0.05f};

static const sl_variant variants[] = {
    {"train", "1k x 32x32x3 f32, bs 32, dropout 0.1 in training mode", {1000, 10000}, {32, 32}, SL_MODE_TRAIN, false},
    {"eval", "1k x 32x32x3 f32, bs 32, eval mode (dropout off)", {1000, 10000}, {32, 32}, SL_MODE_EVAL, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, 32, 32, 3, err);
    if (st)
        return st;
    instance->spec.mode = (sl_mode)variant->param;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("x", 3, pc5_mean, pc5_std), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_affine("x", 3, pc5_scale, pc5_bias), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_dropout("x", PC5_DROPOUT_OP, 0.1f), err);
    return st;
}

const sl_scenario sl__scenario_pc5 = {
    .id = "PC-5",
    .title = "end-to-end differentiable",
    .property = "gradients match finite differences; eval disables dropout; SGD steps lower a toy loss",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
