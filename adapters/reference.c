/* reference: scalar kernels, unfused, single thread. The oracle every other
 * adapter's output is checked against, and the baseline of every ratio. */
#include "adapters.h"

static sl_status run_reference(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                               sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    return sl__run_iter_loop(adapter, pipeline, request, SL_ITER_BATCHED, true, sink, user, latency_ns, err);
}

const sl_adapter sl__adapter_reference = {
    .name = "reference",
    .summary = "portable scalar reference kernels, unfused, single thread (the oracle)",
    .backend = "cpu",
    .kernels = SL_KERNELS_REFERENCE,
    .implements = sl_op_cpu_transforms,
    .available = NULL,
    .run = run_reference,
};
