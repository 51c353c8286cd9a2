/* The iter executor: one batch a call, each newly allocated and computed the
 * unfused way, either in the caller or by prefetch workers. */
#include <stdlib.h>

#include "pipeline/internal.h"
#include "prefetch.h"
#include "sluice/exec/executors.h"

struct sl_iter {
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels;
    sl_iter_mode mode;
    sl_position start;  /* position of sequence number 0 */
    int64_t returned;   /* batches handed out so far */
    sl__prefetch *pool; /* NULL with zero workers */
};

static sl_status produce_at(const sl_iter *it, int64_t seq, sl_batch **out, sl_err *err)
{
    *out = NULL;
    sl_batch *batch;
    sl_status st = sl_batch_create(&it->pipeline->output_schema, it->pipeline->spec.batch_size, &batch, err);
    if (st)
        return st;
    sl_position position = sl_position_advance(it->pipeline, it->start, seq);
    st = it->mode == SL_ITER_PER_ELEMENT
             ? sl_pipeline_produce_per_element(it->pipeline, it->kernels, position, batch, err)
             : sl_pipeline_produce(it->pipeline, it->kernels, position, batch, err);
    if (st) {
        sl_batch_free(batch);
        return st;
    }
    *out = batch;
    return SL_OK;
}

static sl_status produce_for_pool(void *ctx, int64_t seq, sl_batch **out, sl_err *err)
{
    return produce_at(ctx, seq, out, err);
}

sl_status sl_iter_create(const sl_pipeline *pipeline, const sl_iter_options *options, sl_iter **out, sl_err *err)
{
    return sl_iter_create_mode(pipeline, options, SL_ITER_BATCHED, out, err);
}

sl_status sl_iter_create_mode(const sl_pipeline *pipeline, const sl_iter_options *options, sl_iter_mode mode,
                              sl_iter **out, sl_err *err)
{
    *out = NULL;
    if (!options || !options->kernels)
        return sl_fail(err, SL_EINVAL, "an iterator needs options naming its kernel table (sl_kernels_choose)");
    if (mode != SL_ITER_BATCHED && mode != SL_ITER_PER_ELEMENT)
        return sl_fail(err, SL_EINVAL, "unknown iterator mode %d", (int)mode);
    if (options->workers < 0)
        return sl_fail(err, SL_EINVAL, "workers must be 0 or more, got %d", options->workers);
    sl_status bounded =
        sl__prefetch_check_bounds(options->workers, options->prefetch_depth, sl_pipeline_batch_bytes(pipeline), err);
    if (bounded)
        return bounded;
    if (options->start.epoch < 0 || options->start.epoch > SL_MAX_EPOCH || options->start.batch < 0 ||
        options->start.batch >= pipeline->batches_per_epoch)
        return sl_fail(err, SL_EINVAL, "start epoch %lld batch %lld is outside [0, %lld) batches",
                       (long long)options->start.epoch, (long long)options->start.batch,
                       (long long)pipeline->batches_per_epoch);
    sl_iter *it = calloc(1, sizeof *it);
    if (!it)
        return sl_fail(err, SL_ENOMEM, "cannot allocate an iterator");
    it->pipeline = pipeline;
    it->kernels = options->kernels;
    it->mode = mode;
    it->start = options->start;
    if (options->workers > 0) {
        sl_status st =
            sl__prefetch_create(options->workers, options->prefetch_depth, produce_for_pool, it, &it->pool, err);
        if (st) {
            free(it);
            return st;
        }
    }
    *out = it;
    return SL_OK;
}

sl_status sl_iter_next(sl_iter *it, sl_batch **out, sl_err *err)
{
    sl_status st = it->pool ? sl__prefetch_next(it->pool, out, err) : produce_at(it, it->returned, out, err);
    if (st == SL_OK)
        it->returned++;
    return st;
}

sl_position sl_iter_position(const sl_iter *it)
{
    return sl_position_advance(it->pipeline, it->start, it->returned);
}

void sl_iter_free(sl_iter *it)
{
    if (!it)
        return;
    sl__prefetch_free(it->pool);
    free(it);
}
