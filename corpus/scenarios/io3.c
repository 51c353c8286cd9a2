/* IO-3: mixed sources. Two sources of f32 images with labels, generated from
 * different seeds, concatenated and interleaved by weight (0.5/0.5 and
 * 0.7/0.3). The part at each position is a keyed draw on the position alone;
 * each part is read in its own keyed order, pass after pass; an epoch is as
 * many positions as both sources hold together. So the proportions follow
 * the weights, each source keeps its own order, and a checkpoint (a
 * position) resumes bit for bit. */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "sluice/corpus/scenarios.h"
#include "sluice/records/record.h"

static const float unit_mean[3] = {0.5f, 0.5f, 0.5f};
static const float unit_std[3] = {0.288675f, 0.288675f, 0.288675f};

/* n is per source; param is part 0's weight in percent. */
static const sl_variant variants[] = {
    {"w50", "two 500 x 64x64x3 f32 + label sources interleaved 0.5/0.5, bs 64", {500, 2500}, {64, 64}, 50, false},
    {"w70", "two 500 x 64x64x3 f32 + label sources interleaved 0.7/0.3, bs 64", {500, 2500}, {64, 64}, 70, false},
};

#define NPARTS 2

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {
        .kind = SL_FIXTURE_FLOATS, .n = sl_variant_n(variant, options), .h = 64, .w = 64, .c = 3, .classes = 1000};
    /* Part s is the fixture of seed + s: two sources with different data. */
    sl_source *parts[NPARTS] = {NULL, NULL};
    sl_status st = SL_OK;
    for (int s = 0; s < NPARTS && st == SL_OK; s++) {
        st = sl__scenario_make_fixture(instance, &fixture, options->seed + (uint64_t)s, err);
        parts[s] = instance->fixture;
        instance->fixture = instance->source = NULL;
    }
    if (st == SL_OK)
        st = sl_source_concat_create(NPARTS, parts, SL_TAKE, &instance->fixture, err);
    if (st != SL_OK) {
        for (int s = 0; s < NPARTS; s++)
            sl_source_free(parts[s]);
        return st;
    }
    instance->source = instance->fixture;
    sl__scenario_begin_spec(instance, options);
    instance->spec.mix =
        (sl_mixture){.nparts = NPARTS, .weights = {(uint32_t)variant->param, (uint32_t)(100 - variant->param)}};
    return sl_pipeline_spec_add(&instance->spec, sl_op_normalize("x", 3, unit_mean, unit_std), err);
}

/* The share of an epoch's positions that take part 0, against its weight:
 * how far this seed's draws stray from the proportions asked for. */
static sl_status metrics(const sl_scenario_instance *instance, const struct sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    (void)adapter;
    (void)kernels;
    (void)err;
    const sl_pipeline *pipeline = instance->pipeline;
    int64_t rows0 = sl_source_rows(sl_source_part(instance->source, 0));
    int64_t length = sl_pipeline_epoch_size(pipeline), first = 0;
    for (int64_t i = 0; i < length; i++)
        first += sl_pipeline_element_at(pipeline, 0, i) < rows0;
    sl_record_add_scenario_metric(record, "part0_weight", (double)instance->variant->param / 100.0, "ratio");
    sl_record_add_scenario_metric(record, "part0_share", length ? (double)first / (double)length : 0.0, "ratio");
    return SL_OK;
}

const sl_scenario sl__scenario_io3 = {
    .id = "IO-3",
    .title = "mixed sources",
    .property = "proportions within a binomial bound; each source keeps its own order; resumes exactly",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
