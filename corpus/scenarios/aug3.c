/* AUG-3: stochastic depth. f32 64x64 tensors normalized, then `depth`
 * levels of [Gaussian noise, random brightness, random scale], all fused
 * into one element-wise tile chain. The `sweep` variant (the normalize
 * alone, depth 0) times every depth of the profile on its source through
 * its metrics hook and reports the least-squares cost per level and its
 * R^2. */
#include <stdio.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/records/record.h"

#define AUG3_VARIANT(depth, ci_n)                                                                                      \
    {                                                                                                                  \
        "depth" #depth, "50k x 64x64 f32, bs 64, depth " #depth, {ci_n, 50000}, {64, 64}, depth, false                 \
    }

/* param 0 is the sweep. */
static const sl_variant variants[] = {
    AUG3_VARIANT(1, 2000),
    AUG3_VARIANT(3, 2000),
    AUG3_VARIANT(6, 2000),
    AUG3_VARIANT(12, 0),
    {"sweep",
     "50k x 64x64 f32, bs 64, normalize only; times every depth of the profile",
     {2000, 50000},
     {64, 64},
     0,
     false},
};
#define AUG3_NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

/* The normalize and `depth` levels. Level k's ops have ids 3k + 1, 3k + 2
 * and 3k + 3 at every depth, so a deeper chain starts with the draws of a
 * shallower one. */
static sl_status add_chain(sl_pipeline_spec *spec, int64_t depth, sl_err *err)
{
    static const float mean = 0.5f, stddev = 0.25f;
    sl_status st = sl_pipeline_spec_add(spec, sl_op_normalize("x", 1, &mean, &stddev), err);
    for (int64_t k = 0; k < depth && st == SL_OK; k++) {
        uint32_t id = (uint32_t)(3 * k);
        st = sl_pipeline_spec_add(spec, sl_op_gaussian_noise("x", id + 1, 0.05f), err);
        if (st == SL_OK)
            st = sl_pipeline_spec_add(spec, sl_op_random_brightness("x", id + 2, 0.2f), err);
        if (st == SL_OK)
            st = sl_pipeline_spec_add(spec, sl_op_random_scale("x", id + 3, 0.8f, 1.2f), err);
    }
    return st;
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, 64, 64, 1, err);
    if (st)
        return st;
    return add_chain(&instance->spec, variant->param, err);
}

#define AUG3_PASSES 3

/* y = intercept + slope x by ordinary least squares over n >= 2 points with
 * distinct x, and its R^2 (1 when y does not vary). */
static void least_squares(const double *x, const double *y, int n, double *slope, double *intercept, double *r2)
{
    double mean_x = 0, mean_y = 0;
    for (int i = 0; i < n; i++) {
        mean_x += x[i] / n;
        mean_y += y[i] / n;
    }
    double sxx = 0, sxy = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mean_x) * (x[i] - mean_x);
        sxy += (x[i] - mean_x) * (y[i] - mean_y);
        syy += (y[i] - mean_y) * (y[i] - mean_y);
    }
    *slope = sxy / sxx;
    *intercept = mean_y - *slope * mean_x;
    double residual = 0;
    for (int i = 0; i < n; i++) {
        double e = y[i] - (*intercept + *slope * x[i]);
        residual += e * e;
    }
    *r2 = syy > 0 ? 1.0 - residual / syy : 1.0;
}

/* The sweep: the depths of the variants that run at the record's size
 * profile (1, 3, 6 at ci; 1, 3, 6, 12 at full), each a pipeline over the
 * sweep's source, timed in interleaved passes with the record's adapter
 * and batch counts. The fit is ordinary least squares of the median batch
 * time on the depth: slope, intercept and R^2, with each depth's time
 * reported too. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    if (instance->variant->param != 0)
        return SL_OK;
    sl_profile profile;
    if (!sl_profile_parse(record->profile, &profile))
        return sl_fail(err, SL_EINVAL, "AUG-3 sweep: unknown profile '%s' in the record", record->profile);
    int size = sl_profile_get(profile)->size_profile == SL_PROFILE_FULL ? 1 : 0;
    sl_pipeline *pipelines[AUG3_NVARIANTS];
    double depths[AUG3_NVARIANTS], p50[AUG3_NVARIANTS];
    int count = 0;
    sl_status st = SL_OK;
    for (int v = 0; v < AUG3_NVARIANTS && st == SL_OK; v++) {
        if (variants[v].param == 0 || variants[v].n[size] == 0)
            continue;
        st = sl__scenario_twin(instance, add_chain, variants[v].param, &pipelines[count], err);
        if (st == SL_OK)
            depths[count++] = (double)variants[v].param;
    }
    /* An adapter without the noise ops (a peer) runs the sweep's normalize
     * but cannot time the depths: the record says so instead of failing. */
    char lacks[160];
    bool timed = st == SL_OK && count > 0 &&
                 sl_adapter_supports(adapter, sl_pipeline_transforms(pipelines[count - 1]), lacks, sizeof lacks);
    if (st == SL_OK && count > 0 && !timed && !record->reason[0])
        snprintf(record->reason, sizeof record->reason, "depths not timed: %s", lacks);
    if (timed)
        st = sl__scenario_time_pipelines(adapter, kernels, pipelines, count, record, AUG3_PASSES, p50, err);
    for (int i = 0; i < count; i++)
        sl_pipeline_free(pipelines[i]);
    if (st || !timed)
        return st;

    double slope, intercept, r2;
    least_squares(depths, p50, count, &slope, &intercept, &r2);
    for (int i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "p50_ns_depth%d", (int)depths[i]);
        sl_record_add_scenario_metric(record, name, p50[i], "ns");
    }
    sl_record_add_scenario_metric(record, "slope_ns_per_depth", slope, "ns");
    sl_record_add_scenario_metric(record, "intercept_ns", intercept, "ns");
    sl_record_add_scenario_metric(record, "slope_r2", r2, "ratio");
    return SL_OK;
}

const sl_scenario sl__scenario_aug3 = {
    .id = "AUG-3",
    .title = "stochastic depth",
    .property = "cost grows linearly with depth (slope and R^2 reported by the sweep variant); values stay finite",
    .variants = variants,
    .nvariants = AUG3_NVARIANTS,
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
