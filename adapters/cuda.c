/* cuda and cuda-graph: the CUDA back end's adapters (docs/adapters.md).
 *
 * Both are declared with backend "cuda" and an availability check that
 * says why they cannot run here: sluice built without CUDA, no driver, a
 * driver older than the runtime, no device, or too little free device
 * memory (kernels/cuda/probe.c). A bench or a test then records them
 * `unavailable` with that reason; none of them is ever passed silently.
 *
 * What they do not have yet is the device runtime that runs a pipeline's
 * ops on the GPU (staging in pinned memory, double-buffered copies, the
 * captured graph): the kernels exist (kernels/cuda) and are checked on the
 * CPU, but nothing yet drives them from a pipeline. Until it does, the
 * adapters declare no transforms, so on a machine with a device every
 * scenario records them `excluded` with the reason rather than failing or
 * pretending. */
#include <stdio.h>
#include <string.h>

#include "adapters.h"
#include "kernels/cuda/cuda.h"
#include "sluice/record.h"

static bool cuda_available(char *reason, size_t size)
{
    sl_cuda_device_info info;
    if (sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES))
        return true;
    if (reason && size)
        snprintf(reason, size, "%s", info.reason);
    return false;
}

/* The device a record's run had, when there is one; the peak is not
 * measured until the adapters run on the device. */
static void cuda_device(const sl_adapter *adapter, sl_record *record)
{
    (void)adapter;
    sl_cuda_device_info info;
    sl_cuda_probe(&info, 0);
    if (info.device_count == 0)
        return;
    snprintf(record->device_name, sizeof record->device_name, "%s", info.name);
    snprintf(record->device_compute_capability, sizeof record->device_compute_capability, "%d.%d", info.cc_major,
             info.cc_minor);
    sl_cuda_version_string(info.driver_version, record->device_driver, sizeof record->device_driver);
    sl_cuda_version_string(info.runtime_version, record->device_runtime, sizeof record->device_runtime);
    record->device_peak_memory_bytes = -1;
}

static sl_status cuda_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                          sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    (void)pipeline, (void)request, (void)sink, (void)user, (void)latency_ns;
    return sl_fail(err, SL_EUNSUPPORTED,
                   "adapter '%s': the device runtime that runs a pipeline on the GPU is not built yet; the CUDA "
                   "kernels exist (kernels/cuda) but nothing drives them from a pipeline",
                   adapter->name);
}

const sl_adapter sl__adapter_cuda = {
    .name = "cuda",
    .summary = "CUDA kernels on device 0; staging and double-buffered copies not built yet (declares no transforms)",
    .backend = "cuda",
    .kernels = SL_KERNELS_BEST,
    .transforms = 0,
    .available = cuda_available,
    .run = cuda_run,
    .device = cuda_device,
};

const sl_adapter sl__adapter_cuda_graph = {
    .name = "cuda-graph",
    .summary = "as cuda, each batch's work captured once as a CUDA graph and replayed; not built yet (declares no "
               "transforms)",
    .backend = "cuda",
    .kernels = SL_KERNELS_BEST,
    .transforms = 0,
    .available = cuda_available,
    .run = cuda_run,
    .device = cuda_device,
};
