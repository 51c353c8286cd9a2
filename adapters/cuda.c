/* cuda and cuda-graph: the CUDA back end's adapters (docs/adapters.md).
 *
 * Both are declared with backend "cuda" and an availability check that
 * says why they cannot run here: sluice built without CUDA, no driver, a
 * driver older than the runtime, no device, or too little free device
 * memory (kernels/cuda/probe.c). A bench or a test then records them
 * `unavailable` with that reason; none of them is ever passed silently.
 * Where a device exists, cuda_run.c runs a pipeline through the device
 * executor (engine/exec/device.c), every op by its descriptor's device
 * path; a scenario with an op that has none (sl_op_device_transforms)
 * records them `excluded` with the op named. */
#include <stdio.h>
#include <string.h>

#include "adapters.h"
#include "kernels/cuda.h"
#include "sluice/records/record.h"

static bool cuda_available(char *reason, size_t size)
{
    sl_cuda_device_info info;
    if (sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES))
        return true;
    if (reason && size)
        snprintf(reason, size, "%s", info.reason);
    return false;
}

/* The device a record's run had, when there is one, the most device
 * memory the runs so far had in use, and the record's own runs' figures:
 * their allocations' peak and whether the source was resident. Called
 * before the runs (nothing of theirs yet) and after them. */
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
    record->device_peak_memory_bytes = sl__cuda_peak_device_bytes();
    sl_device_adapter_stats runs;
    sl__cuda_take_runs(&runs);
    record->device_allocated_peak_bytes = runs.allocated_peak_bytes;
    snprintf(record->device_source, sizeof record->device_source, "%s",
             runs.runs == 0  ? ""
             : runs.resident ? "resident"
                             : "streamed");
    record->device_source_setup_ns = runs.runs == 0 ? -1 : runs.source_setup_ns;
}

const sl_adapter sl__adapter_cuda = {
    .name = "cuda",
    .summary =
        "CUDA kernels on the local rank's device: a source in memory kept on the device when it fits (else pinned "
        "staging), decisions drawn there, two batches in flight on two streams, outputs left on the device",
    .backend = "cuda",
    .kernels = SL_KERNELS_OPTIMIZED,
    .implements = sl_op_device_transforms,
    .available = cuda_available,
    .run = sl__cuda_run,
    .device = cuda_device,
};

const sl_adapter sl__adapter_cuda_graph = {
    .name = "cuda-graph",
    .summary = "as cuda, each batch's copies and kernels captured once as a CUDA graph and replayed",
    .backend = "cuda",
    .kernels = SL_KERNELS_OPTIMIZED,
    .implements = sl_op_device_transforms,
    .available = cuda_available,
    .run = sl__cuda_run,
    .device = cuda_device,
};
