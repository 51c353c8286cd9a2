/* The CUDA back end as C sees it: a probe that says whether a device can
 * run here, and the table of kernel launchers the cuda adapters call.
 *
 * Nothing here needs the CUDA headers, so plain C (the adapters, the
 * command) includes it whether or not sluice was built with CUDA. The
 * launchers take device pointers and a stream as `void *` (a cudaStream_t;
 * NULL is the legacy default stream), queue one kernel and return 0 or the
 * cudaError_t of the launch; they never synchronize, so a batch's kernels
 * can be captured into a CUDA graph. Each kernel is a grid-stride loop
 * around one sl__at_* function of kernels/include/kernels/at.h, the code that
 * tests/unit/test_cuda_bodies.c runs on the CPU against the reference. */
#ifndef SLUICE_KERNELS_CUDA_H
#define SLUICE_KERNELS_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Probe ------------------------------------------------------------- */

/* What the probe found. Versions are CUDA's integers (13000 is 13.0). */
typedef struct sl_cuda_device_info {
    bool built;       /* sluice was built with the CUDA back end */
    bool available;   /* a device can run the cuda adapters */
    char reason[192]; /* why not, when !available */
    int device_count;
    char name[96];          /* device 0's, when there is one */
    int cc_major, cc_minor; /* compute capability */
    int driver_version;     /* 0 without a driver */
    int runtime_version;    /* the CUDA runtime sluice was linked with */
    int64_t total_bytes;    /* device memory */
    int64_t free_bytes;     /* free when probed */
} sl_cuda_device_info;

/* Device memory the cuda adapters want free before they call a device
 * usable: room for the double-buffered batches of the gate scenarios. */
#define SL_CUDA_MIN_FREE_BYTES ((int64_t)1 << 30)

/* Probes device 0 (cudaDriverGetVersion, cudaRuntimeGetVersion,
 * cudaGetDeviceCount, cudaGetDeviceProperties, cudaMemGetInfo) and fills
 * info; returns info->available. The reason names what is missing: built
 * without CUDA, no driver, a driver older than the runtime, no device, or
 * less than min_free_bytes of free device memory. Never fails otherwise,
 * and touches no device memory. */
bool sl_cuda_probe(sl_cuda_device_info *info, int64_t min_free_bytes);
/* "13.0" from 13000. */
void sl_cuda_version_string(int version, char *out, size_t size);

/* ---- Kernels ----------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif
