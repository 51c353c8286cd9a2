/* fused: the optimized kernels, all requested batches in one call, ops fused
 * per element and tile, nothing allocated per batch. */
#include "adapters.h"
#include "sluice/core/timing.h"

typedef struct fused_timing {
    const sl_fused *fused;
    bool *split; /* the request's, or NULL */
    int64_t *latency_ns;
    int64_t delivered;
    int64_t requested; /* when the batch now being computed was requested */
    sl_batch_sink sink;
    void *user;
} fused_timing;

/* Batch i is requested when batch i-1's sink returned (adapter.h). */
static int timed_sink(const sl_batch *batch, void *arg)
{
    fused_timing *t = arg;
    sl__test_slowdown(t->requested);
    if (t->split)
        t->split[t->delivered] = sl_fused_last_split(t->fused);
    t->latency_ns[t->delivered++] = sl_now_ns() - t->requested;
    int stop = t->sink ? t->sink(batch, t->user) : 0;
    t->requested = sl_now_ns();
    return stop;
}

static sl_status run_fused(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                           sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    /* Batch 0 is requested when the call began, so the executor's creation
     * counts in the first batch's time. */
    int64_t called = sl_now_ns();
    sl_fused *fused;
    sl_status st = sl_fused_create_threads(pipeline, sl_adapter_kernels(adapter, request->kernels),
                                           request->threads > 0 ? request->threads : 1, &fused, err);
    if (st)
        return st;
    fused_timing timing = {fused, request->split, latency_ns, 0, called, sink, user};
    st = sl_fused_run(fused, request->start, request->nbatches, timed_sink, &timing, err);
    sl_fused_free(fused);
    return st;
}

const sl_adapter sl__adapter_fused = {
    .name = "fused",
    .summary = "optimized CPU kernels, many batches per call, ops fused per element and tile, preallocated",
    .backend = "cpu",
    .kernels = SL_KERNELS_OPTIMIZED,
    .implements = sl_op_cpu_transforms,
    .threaded = true,
    .available = NULL,
    .run = run_fused,
};
