/* per-element: the optimized kernels, one element per call through the op
 * chain, then the batch collated, as a Python `map` over a data set and a
 * collate function do. The baseline that shows what batching (`iter`) and
 * fusion (`fused`) buy; optional prefetch workers, as a DataLoader's. */
#include "adapters.h"

static sl_status run_per_element(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                                 sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    return sl__run_iter_loop(adapter, pipeline, request, SL_ITER_PER_ELEMENT, false, sink, user, latency_ns, err);
}

const sl_adapter sl__adapter_per_element = {
    .name = "per-element",
    .summary = "optimized CPU kernels, one element per call through every op, then collated; optional prefetch "
               "workers",
    .backend = "cpu",
    .kernels = SL_KERNELS_OPTIMIZED,
    .implements = sl_op_cpu_transforms,
    .available = NULL,
    .run = run_per_element,
};
