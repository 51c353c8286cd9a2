/* iter: the optimized kernels, one batch a call, optional prefetch workers. */
#include "adapters.h"
#include "sluice/core/timing.h"

sl_status sl__run_iter_loop(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                            sl_iter_mode mode, bool single_thread, sl_batch_sink sink, void *user, int64_t *latency_ns,
                            sl_err *err)
{
    sl_iter_options options = {.kernels = sl_adapter_kernels(adapter, request->kernels),
                               .workers = single_thread ? 0 : request->workers,
                               .prefetch_depth = request->prefetch_depth,
                               .start = request->start};
    /* The first request is the start of the run, so batch 0 carries the
     * iterator's setup, as a fresh loader's first batch does. */
    int64_t requested = sl_now_ns();
    sl_iter *it;
    sl_status st = sl_iter_create_mode(pipeline, &options, mode, &it, err);
    if (st)
        return st;
    for (int64_t i = 0; i < request->nbatches; i++) {
        sl_batch *batch;
        st = sl_iter_next(it, &batch, err);
        if (st)
            break;
        sl__test_slowdown(requested);
        latency_ns[i] = sl_now_ns() - requested;
        int stop = sink ? sink(batch, user) : 0;
        sl_batch_free(batch);
        if (stop)
            break;
        requested = sl_now_ns();
    }
    sl_iter_free(it);
    return st;
}

static sl_status run_iter(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                          sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    return sl__run_iter_loop(adapter, pipeline, request, SL_ITER_BATCHED, false, sink, user, latency_ns, err);
}

const sl_adapter sl__adapter_iter = {
    .name = "iter",
    .summary = "optimized CPU kernels, one batch per call, unfused ops, optional prefetch workers",
    .backend = "cpu",
    .kernels = SL_KERNELS_OPTIMIZED,
    .implements = sl_op_cpu_transforms,
    .available = NULL,
    .run = run_iter,
};
