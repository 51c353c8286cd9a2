/* Whether a CUDA device can run the cuda adapters here, and if not, why.
 * Compiled by the C compiler against the CUDA runtime's C API; built
 * without CUDA it says so. The order of the checks gives the most useful
 * reason: no driver before no device, a driver too old for the runtime
 * before anything the driver would report. */
#include <stdio.h>
#include <string.h>

#include "kernels/cuda.h"
#include "sluice_config.h"

#if HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

void sl_cuda_version_string(int version, char *out, size_t size)
{
    if (version <= 0)
        snprintf(out, size, "none");
    else
        snprintf(out, size, "%d.%d", version / 1000, version % 1000 / 10);
}

bool sl_cuda_probe(sl_cuda_device_info *info, int64_t min_free_bytes)
{
    memset(info, 0, sizeof *info);
#if !HAVE_CUDA
    (void)min_free_bytes;
    snprintf(info->reason, sizeof info->reason,
             "sluice was built without CUDA (-Dcuda=disabled, or no nvcc when it was configured)");
    return false;
#else
    info->built = true;
    cudaRuntimeGetVersion(&info->runtime_version);
    char runtime[16], driver[16];
    sl_cuda_version_string(info->runtime_version, runtime, sizeof runtime);
    if (cudaDriverGetVersion(&info->driver_version) != cudaSuccess || info->driver_version == 0) {
        info->driver_version = 0;
        snprintf(info->reason, sizeof info->reason, "no NVIDIA driver (libcuda could not be loaded; runtime %s)",
                 runtime);
        return false;
    }
    sl_cuda_version_string(info->driver_version, driver, sizeof driver);
    if (info->driver_version < info->runtime_version) {
        snprintf(info->reason, sizeof info->reason,
                 "the NVIDIA driver supports CUDA %s, older than the CUDA %s runtime sluice was built with", driver,
                 runtime);
        return false;
    }
    cudaError_t e = cudaGetDeviceCount(&info->device_count);
    if (e != cudaSuccess || info->device_count == 0) {
        info->device_count = 0;
        snprintf(info->reason, sizeof info->reason, "no CUDA device (%s; driver %s, runtime %s)",
                 e == cudaSuccess ? "none found" : cudaGetErrorString(e), driver, runtime);
        cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        return false;
    }
    struct cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, 0);
    if (e != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "device 0 could not be queried: %s", cudaGetErrorString(e));
        return false;
    }
    /* Device names are short; the precision bounds the copy. */
    snprintf(info->name, sizeof info->name, "%.*s", (int)sizeof info->name - 1, prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    size_t free_bytes = 0, total_bytes = 0;
    e = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (e != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "%s: memory could not be queried: %s", info->name,
                 cudaGetErrorString(e));
        return false;
    }
    info->free_bytes = (int64_t)free_bytes;
    info->total_bytes = (int64_t)total_bytes;
    if (info->free_bytes < min_free_bytes) {
        snprintf(info->reason, sizeof info->reason,
                 "%s has %.2f GB of device memory free, fewer than the %.2f GB needed", info->name,
                 (double)info->free_bytes / 1e9, (double)min_free_bytes / 1e9);
        return false;
    }
    info->available = true;
    return true;
#endif
}
