/* The checkpoint reader: JSON, the pipeline fingerprint, the checksum and
 * the position's range, against one small fixed pipeline, read both as a
 * plain checkpoint and as one with a module's state (version 2). An
 * accepted position must be one the pipeline can resume from: an iterator
 * starts there and yields a batch; an accepted module state must be one the
 * module can go on folding from. */
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/exec/executors.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/module.h"
#include "sluice/pipeline/pipeline.h"

static const sl_pipeline *fixed_pipeline(void)
{
    static sl_pipeline *pipeline;
    if (pipeline)
        return pipeline;
    sl_fixture_spec spec = {.kind = SL_FIXTURE_TABULAR, .n = 100, .features = 4};
    sl_source *source;
    sl_err err = {0};
    if (sl_fixture_build(&spec, 42, &source, &err) != SL_OK)
        abort();
    sl_pipeline_spec pspec;
    sl_pipeline_spec_init(&pspec, source, 10, 42);
    if (sl_pipeline_spec_add(&pspec, sl_op_scale("features", 2.0f), &err) != SL_OK ||
        sl_pipeline_create(&pspec, &pipeline, &err) != SL_OK)
        abort();
    /* The source and pipeline live as long as the fuzzing process. */
    return pipeline;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const sl_pipeline *pipeline = fixed_pipeline();
    const char *path = fuzz_input_path(data, size);
    sl_position position;
    sl_err err = {0};
    sl_status st = sl_checkpoint_load(pipeline, path, &position, &err);
    fuzz_expect_named_refusal(st, &err, path);
    if (st == SL_OK && (position.epoch < 0 || position.epoch > SL_MAX_EPOCH || position.batch < 0 ||
                        position.batch >= sl_pipeline_batches_per_epoch(pipeline))) {
        fprintf(stderr, "an accepted checkpoint is at epoch %lld batch %lld\n", (long long)position.epoch,
                (long long)position.batch);
        abort();
    }
    sl_module *module = NULL;
    if (sl_module_create(pipeline, sl_kernels_default(), "features", (sl_position){0, 0}, &module, &err) != SL_OK)
        abort();
    sl_position module_position;
    sl_err module_err = {0};
    sl_status module_st = sl_checkpoint_load_module(pipeline, path, &module_position, module, &module_err);
    fuzz_expect_named_refusal(module_st, &module_err, path);
    if (module_st == SL_OK && st == SL_OK) {
        fprintf(stderr, "a checkpoint was accepted both with and without module state\n");
        abort();
    }
    if (module_st == SL_OK) {
        const sl_module_state *state = sl_module_state_of(module);
        if (state->next.epoch != module_position.epoch || state->next.batch != module_position.batch) {
            fprintf(stderr, "an accepted module state does not resume at its checkpoint's position\n");
            abort();
        }
        st = SL_OK;
        position = module_position;
    }
    if (st == SL_OK) {
        sl_iter_options options = {
            .kernels = sl_kernels_default(), .workers = 0, .prefetch_depth = 0, .start = position};
        sl_iter *it = NULL;
        sl_batch *batch = NULL;
        if (sl_iter_create(pipeline, &options, &it, &err) != SL_OK || sl_iter_next(it, &batch, &err) != SL_OK) {
            fprintf(stderr, "resuming from an accepted checkpoint failed: %s\n", err.msg);
            abort();
        }
        if (module_st == SL_OK && sl_module_update(module, batch, &err) != SL_OK) {
            fprintf(stderr, "a module restored from an accepted checkpoint cannot fold the next batch: %s\n", err.msg);
            abort();
        }
        sl_batch_free(batch);
        sl_iter_free(it);
    }
    sl_module_free(module);
    return 0;
}
