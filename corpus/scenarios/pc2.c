/* PC-2: a branching pipeline. Each 64x64x3 f32 image goes down two branches
 * from the same value, a random brightness offset (+-0.2) on one and
 * Gaussian noise (sigma 0.05) on the other, and leaves as their mean:
 * branch_mean owns the two ops after it. The branches draw under op ids 1
 * and 2, so their numbers are independent. Its records carry the graph's
 * batch time against the same two branches run as separate passes with
 * the merge done afterwards (the metrics hook). */
#include <stdlib.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/timing.h"
#include "sluice/records/record.h"

/* Stable op ids of the two branches. */
enum { PC2_BRIGHTNESS_OP = 1, PC2_NOISE_OP = 2 };
/* What add_ops builds: the graph, or one of its branches alone. */
enum { PC2_GRAPH = 0, PC2_BRANCH_A = 1, PC2_BRANCH_B = 2 };

static const sl_variant variants[] = {
    {"64x64x3", "50k x 64x64x3 f32, bs 64: branch (brightness | noise), mean", {2000, 50000}, {64, 64}, 0, false},
};

static sl_status add_ops(sl_pipeline_spec *spec, int64_t which, sl_err *err)
{
    sl_status st = SL_OK;
    if (which == PC2_GRAPH)
        st = sl_pipeline_spec_add(spec, sl_op_branch_mean("x", 1, 1), err);
    if (st == SL_OK && which != PC2_BRANCH_B)
        st = sl_pipeline_spec_add(spec, sl_op_random_brightness("x", PC2_BRIGHTNESS_OP, 0.2f), err);
    if (st == SL_OK && which != PC2_BRANCH_A)
        st = sl_pipeline_spec_add(spec, sl_op_gaussian_noise("x", PC2_NOISE_OP, 0.05f), err);
    return st;
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_status st = sl__scenario_begin_floats(instance, variant, options, 64, 64, 3, err);
    if (st)
        return st;
    return add_ops(&instance->spec, PC2_GRAPH, err);
}

/* Passes of each pipeline behind the figures (as AUG-2). */
#define PC2_PASSES 3

/* The median time of merging two batches (a * 0.5 + b * 0.5 with the
 * adapter's blend kernel, as branch_mean merges), over `repetitions`. */
static sl_status time_merge(const sl_kernel_table *k, int64_t values, int64_t repetitions, double *p50_ns, sl_err *err)
{
    float *a = malloc((size_t)values * sizeof(float));
    float *b = malloc((size_t)values * sizeof(float));
    int64_t *samples = malloc((size_t)repetitions * sizeof *samples);
    sl_status st = a && b && samples ? SL_OK : sl_fail(err, SL_ENOMEM, "cannot allocate PC-2's merge buffers");
    for (int64_t i = 0; i < values && st == SL_OK; i++) {
        a[i] = (float)(i % 251) * 0x1p-8f;
        b[i] = (float)(i % 241) * 0x1p-8f;
    }
    for (int64_t r = 0; r < repetitions && st == SL_OK; r++) {
        int64_t start = sl_now_ns();
        k->blend(a, a, b, values, 0.5f, 0.5f);
        samples[r] = sl_now_ns() - start;
    }
    if (st == SL_OK)
        *p50_ns = sl_percentile_i64(samples, (size_t)repetitions, 50.0);
    free(a);
    free(b);
    free(samples);
    return st;
}

/* The graph against its two branches as separate passes over the same
 * source (each a pipeline of its own, timed in interleaved passes with the
 * record's adapter and batch counts) plus the merge of their batches. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    sl_pipeline *branch[2] = {NULL, NULL};
    sl_status st = sl__scenario_twin(instance, add_ops, PC2_BRANCH_A, &branch[0], err);
    if (st == SL_OK)
        st = sl__scenario_twin(instance, add_ops, PC2_BRANCH_B, &branch[1], err);
    double p50[3], merge = 0;
    if (st == SL_OK) {
        sl_pipeline *const pipelines[3] = {instance->pipeline, branch[0], branch[1]};
        st = sl__scenario_time_pipelines(adapter, kernels, pipelines, 3, record, PC2_PASSES, p50, err);
    }
    if (st == SL_OK) {
        int64_t values = sl_pipeline_batch_bytes(instance->pipeline) / sizeof(float);
        st = time_merge(sl_adapter_kernels(adapter, kernels), values, record->measured_batches * PC2_PASSES, &merge,
                        err);
    }
    sl_pipeline_free(branch[0]);
    sl_pipeline_free(branch[1]);
    if (st)
        return st;
    double separate = p50[1] + p50[2] + merge;
    sl_record_add_scenario_metric(record, "graph_p50_ns", p50[0], "ns");
    sl_record_add_scenario_metric(record, "branch_a_p50_ns", p50[1], "ns");
    sl_record_add_scenario_metric(record, "branch_b_p50_ns", p50[2], "ns");
    sl_record_add_scenario_metric(record, "merge_p50_ns", merge, "ns");
    sl_record_add_scenario_metric(record, "separate_passes_ns", separate, "ns");
    sl_record_add_scenario_metric(record, "separate_over_graph", separate / p50[0], "ratio");
    return SL_OK;
}

const sl_scenario sl__scenario_pc2 = {
    .id = "PC-2",
    .title = "branching DAG",
    .property = "equals the hand composition of its branches; the branches draw independent numbers",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
