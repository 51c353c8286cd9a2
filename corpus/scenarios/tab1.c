/* TAB-1: dense tabular features, z-scored per feature with statistics fitted
 * on the data set, as a standard scaler does before training. */
#include <math.h>

#include "common.h"
#include "sluice/corpus/scenarios.h"

static const sl_variant variants[] = {
    {"10k", "10k rows x 100 f32, bs 256", {10000, 10000}, {256, 256}, 100, true},
    {"1M", "1M rows x 100 f32, bs 1024", {0, 1000000}, {0, 1024}, 100, false},
};

/* Column means and standard deviations, accumulated in double in row order:
 * a fixed order, and sqrt is correctly rounded by IEEE 754, so the fitted
 * constants are the same on every machine. */
static void fit_columns(const float *x, int64_t rows, int features, float *mean, float *stddev)
{
    for (int j = 0; j < features; j++) {
        double sum = 0.0, sum_sq = 0.0;
        for (int64_t r = 0; r < rows; r++)
            sum += x[r * features + j];
        double m = sum / (double)rows;
        for (int64_t r = 0; r < rows; r++) {
            double d = x[r * features + j] - m;
            sum_sq += d * d;
        }
        mean[j] = (float)m;
        stddev[j] = (float)sqrt(sum_sq / (double)rows);
    }
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int features = (int)variant->param;
    int64_t rows = sl_variant_n(variant, options);
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_TABULAR, .n = rows, .features = features};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    const float *x = sl_source_map(instance->fixture, 0, 0, sl_source_field_bytes(instance->fixture, 0));
    float mean[SL_MAX_CHANNELS], stddev[SL_MAX_CHANNELS];
    fit_columns(x, rows, features, mean, stddev);
    sl__scenario_begin_spec(instance, options);
    return sl_pipeline_spec_add(&instance->spec, sl_op_normalize("features", features, mean, stddev), err);
}

const sl_scenario sl__scenario_tab1 = {
    .id = "TAB-1",
    .title = "dense tabular features",
    .property = "over an epoch each feature has mean ~0 and std ~1",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
