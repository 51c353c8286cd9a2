/* What DIST-1 and DIST-2 share: the data set and pipeline (SCENARIOS.md:
 * 10k x 32x32x3 f32, bs 64, normalize) and the metrics hook that checks the
 * gathered shards and reports every rank's latency. They differ in the mesh
 * their ranks form. */
#include "common.h"
#include "sluice/bench/dist.h"
#include "sluice/corpus/scenarios.h"

/* ImageNet's per-channel statistics for values in [0, 1). */
static const float unit_mean[3] = {0.485f, 0.456f, 0.406f};
static const float unit_std[3] = {0.229f, 0.224f, 0.225f};

sl_status sl__scenario_dist_build(const sl_scenario *scenario, const sl_variant *variant,
                                  const sl_build_options *options, sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    /* The fixture stands in for a data set on shared storage, which every
     * rank addresses whole and reads only its shard's rows of
     * (sl__scenario_begin_spec takes the shard from options->comm). A rank
     * of a run that says what it reads generates only those rows, so its
     * memory and start-up follow its shard, not the data set; otherwise
     * (tests, the one-process checks) the whole fixture is generated. */
    sl_fixture_spec fixture = {
        .kind = SL_FIXTURE_FLOATS, .n = sl_variant_n(variant, options), .h = 32, .w = 32, .c = 3};
    bool shard_only = options->comm && options->batches_read > 0;
    sl_status st = shard_only ? sl__scenario_reserve_fixture(instance, &fixture, err)
                              : sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("x", 3, unit_mean, unit_std), err);
    if (st == SL_OK && shard_only)
        st = sl__scenario_generate_read_rows(instance, &fixture, options->seed, options->batches_read, err);
    return st;
}

sl_status sl__scenario_dist_metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                                    const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    (void)kernels;
    (void)adapter;
    sl_dist_view scratch = {0};
    const sl_dist_view *view = NULL;
    sl_status st = sl_dist_view_for(instance, record, &scratch, &view, err);
    /* A record whose ranks did not load their shards exactly is not a
     * measurement of this scenario: the hook's error fails it. */
    if (st == SL_OK)
        st = sl_dist_check_shards(view, instance->pipeline, err);
    if (st == SL_OK)
        sl_dist_add_rank_metrics(view, record);
    sl_dist_view_free(&scratch);
    return st;
}
