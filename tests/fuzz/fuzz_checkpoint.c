/* The checkpoint reader: JSON, the pipeline fingerprint, the checksum and
 * the position's range, against one small fixed pipeline. An accepted
 * position must be one the pipeline can resume from: an iterator starts
 * there and yields a batch. */
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "sluice/fixtures.h"
#include "sluice/pipeline.h"

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
    if (st == SL_OK) {
        sl_iter_options options = {SL_KERNELS_BEST, 0, 0, position};
        sl_iter *it = NULL;
        sl_batch *batch = NULL;
        if (sl_iter_create(pipeline, &options, &it, &err) != SL_OK || sl_iter_next(it, &batch, &err) != SL_OK) {
            fprintf(stderr, "resuming from an accepted checkpoint failed: %s\n", err.msg);
            abort();
        }
        sl_batch_free(batch);
        sl_iter_free(it);
    }
    return 0;
}
