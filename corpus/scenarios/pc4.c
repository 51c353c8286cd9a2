/* PC-4: probabilistic and conditional ops. Each 64x64x3 f32 image gets a
 * random brightness offset with probability p = 0.5 (random_apply), then
 * either a second brightness offset or Gaussian noise, chosen per element
 * with probability 0.5 (random_choice). Every decision is keyed by (seed,
 * op id, epoch, element), so the same elements are chosen whatever the
 * batch size, workers or execution mode. */
#include "common.h"

/* Stable op ids: the two decisions and the three random ops they run. */
enum {
    PC4_APPLY_OP = 1,
    PC4_APPLIED_BRIGHTNESS_OP = 2,
    PC4_CHOICE_OP = 3,
    PC4_CHOSEN_BRIGHTNESS_OP = 4,
    PC4_CHOSEN_NOISE_OP = 5
};

static const sl_variant variants[] = {
    {"p0.5",
     "50k x 64x64x3 f32, bs 64: apply brightness with p 0.5; brightness or noise",
     {4000, 50000},
     {64, 64},
     0,
     false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, 64, 64, 3, err);
    if (st)
        return st;
    const sl_op ops[] = {
        sl_op_random_apply("x", PC4_APPLY_OP, 0.5f, 1),
        sl_op_random_brightness("x", PC4_APPLIED_BRIGHTNESS_OP, 0.2f),
        sl_op_random_choice("x", PC4_CHOICE_OP, 0.5f, 1, 1),
        sl_op_random_brightness("x", PC4_CHOSEN_BRIGHTNESS_OP, 0.2f),
        sl_op_gaussian_noise("x", PC4_CHOSEN_NOISE_OP, 0.05f),
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && st == SL_OK; i++)
        st = sl_pipeline_spec_add(&instance->spec, ops[i], err);
    return st;
}

const sl_scenario sl__scenario_pc4 = {
    .id = "PC-4",
    .title = "probabilistic and conditional",
    .property = "applied fraction within a binomial bound of p; decisions independent of batch size, workers and "
                "execution mode",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
