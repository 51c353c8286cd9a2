/* PC-1: deep transform chains. A cycle of five element-wise stages repeated
 * to the variant's depth: where fusing a chain per tile pays off most. */
#include "common.h"

#define PC1_VARIANT(depth, ci_n, gate)                                                                               \
    {"depth" #depth, "64x64 f32, bs 64, chain depth " #depth, {ci_n, 50000}, {64, 64}, depth, gate}

static const sl_variant variants[] = {
    PC1_VARIANT(1, 2000, true),   PC1_VARIANT(2, 0, false),  PC1_VARIANT(5, 2000, false),
    PC1_VARIANT(10, 2000, false), PC1_VARIANT(20, 0, false), PC1_VARIANT(50, 0, false),
    PC1_VARIANT(100, 0, false),
};

/* Stage i of the chain is stage i mod 5 of the cycle. */
static sl_op stage(int i)
{
    static const float mean = 0.5f, stddev = 0.25f;
    switch (i % 5) {
    case 0: return sl_op_normalize("x", 1, &mean, &stddev);
    case 1: return sl_op_scale("x", 2.0f);
    case 2: return sl_op_clip("x", 0.0f, 1.0f);
    case 3: return sl_op_add("x", 0.1f);
    default: return sl_op_multiply("x", 0.9f);
    }
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_FLOATS, .n = sl_variant_n(variant, options), .h = 64, .w = 64,
                               .c = 1};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    for (int i = 0; i < variant->param && st == SL_OK; i++)
        st = sl_pipeline_spec_add(&instance->spec, stage(i), err);
    return st;
}

const sl_scenario sl__scenario_pc1 = {
    .id = "PC-1",
    .title = "deep transform chains",
    .property = "fused equals unfused; cost per stage reported for each depth",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
