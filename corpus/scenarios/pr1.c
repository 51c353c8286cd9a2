/* PR-1: checkpoint save and restore. A run stopped after k batches and
 * resumed from its checkpoint in a fresh pipeline continues bit for bit;
 * a damaged or foreign checkpoint is refused. Its metrics say what a
 * checkpoint costs: its size, the time to save it, to restore it, and to
 * have the first batch after a restore. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/timing.h"
#include "sluice/corpus/scenarios.h"
#include "sluice/records/record.h"

static const float pixel_mean[1] = {0.5f};
static const float pixel_std[1] = {0.25f};

/* param: the side of the element (32: 32x32x3 images; 64: 64^3 volumes). */
static const sl_variant variants[] = {
    {"32x32", "1k x 32x32x3 f32, bs 64 (10k at full size)", {1000, 10000}, {64, 64}, 32, false},
    {"64x64x64", "500 x 64^3 f32 volumes, bs 4", {0, 500}, {0, 4}, 64, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_fixture_spec fixture =
        side == 64 ? (sl_fixture_spec){.kind = SL_FIXTURE_VOLUMES,
                                       .n = sl_variant_n(variant, options),
                                       .d = side,
                                       .h = side,
                                       .w = side}
                   : (sl_fixture_spec){
                         .kind = SL_FIXTURE_FLOATS, .n = sl_variant_n(variant, options), .h = side, .w = side, .c = 3};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl__scenario_begin_spec(instance, options);
    const char *field = side == 64 ? "volume" : "x";
    return sl_pipeline_spec_add(&instance->spec, sl_op_normalize(field, 1, pixel_mean, pixel_std), err);
}

/* Repetitions of each timed step; their median is reported. */
enum { TIMED_REPETITIONS = 9 };

/* Saves a checkpoint in the middle of epoch 1 and restores it, timing each
 * step, in a work directory of its own. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    const sl_pipeline *p = instance->pipeline;
    char dir[512], path[600];
    sl_status st = sl_workdir_create(sl_temp_base(), "pr1", dir, sizeof dir, err);
    if (st)
        return st;
    snprintf(path, sizeof path, "%s/checkpoint.json", dir);
    sl_position position = {1, sl_pipeline_batches_per_epoch(p) / 2};
    int64_t save_ns[TIMED_REPETITIONS], restore_ns[TIMED_REPETITIONS], first_batch_ns[TIMED_REPETITIONS];
    for (int r = 0; r < TIMED_REPETITIONS && st == SL_OK; r++) {
        int64_t start = sl_now_ns();
        st = sl_checkpoint_save(p, position, path, err);
        save_ns[r] = sl_now_ns() - start;
        sl_position restored = {0, 0};
        start = sl_now_ns();
        if (st == SL_OK)
            st = sl_checkpoint_load(p, path, &restored, err);
        restore_ns[r] = sl_now_ns() - start;
        /* The first batch after a restore is what a resumed job waits for. */
        sl_iter_options options = {.kernels = sl_adapter_kernels(adapter, kernels), .start = restored};
        sl_iter *it = NULL;
        sl_batch *batch = NULL;
        if (st == SL_OK)
            st = sl_iter_create(p, &options, &it, err);
        if (st == SL_OK)
            st = sl_iter_next(it, &batch, err);
        first_batch_ns[r] = sl_now_ns() - start;
        sl_batch_free(batch);
        sl_iter_free(it);
    }
    struct stat file;
    if (st == SL_OK && stat(path, &file) != 0)
        st = sl_fail(err, SL_EIO, "cannot stat the checkpoint %s", path);
    if (st == SL_OK) {
        sl_record_add_scenario_metric(record, "checkpoint_bytes", (double)file.st_size, "B");
        sl_record_add_scenario_metric(record, "checkpoint_save_ns", sl_percentile_i64(save_ns, TIMED_REPETITIONS, 50.0),
                                      "ns");
        sl_record_add_scenario_metric(record, "checkpoint_restore_ns",
                                      sl_percentile_i64(restore_ns, TIMED_REPETITIONS, 50.0), "ns");
        sl_record_add_scenario_metric(record, "restore_to_first_batch_ns",
                                      sl_percentile_i64(first_batch_ns, TIMED_REPETITIONS, 50.0), "ns");
    }
    sl_workdir_remove(dir);
    return st;
}

const sl_scenario sl__scenario_pr1 = {
    .id = "PR-1",
    .title = "checkpoint save/restore",
    .property = "a run resumed from its checkpoint in a fresh pipeline continues bit-identically, across an epoch "
                "boundary too; a corrupted or foreign checkpoint is refused",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
