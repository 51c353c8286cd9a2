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

#include "sluice/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Probe ------------------------------------------------------------- */

/* What the probe found. Versions are CUDA's integers (13000 is 13.0). */
typedef struct sl_cuda_device_info {
    bool built;               /* sluice was built with the CUDA back end */
    bool available;           /* a device can run the cuda adapters */
    char reason[192];         /* why not, when !available */
    int device_count;
    char name[96];            /* device 0's, when there is one */
    int cc_major, cc_minor;   /* compute capability */
    int driver_version;       /* 0 without a driver */
    int runtime_version;      /* the CUDA runtime sluice was linked with */
    int64_t total_bytes;      /* device memory */
    int64_t free_bytes;       /* free when probed */
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

/* Per-channel constants, passed to a kernel by value (kernel parameters),
 * so a launch needs no device copy of them and a captured graph holds them. */
typedef struct sl_cuda_channels {
    int channels;
    float a[SL_MAX_CHANNELS];   /* normalize: mean; affine: scale; mul_channels: s */
    float b[SL_MAX_CHANNELS];   /* normalize: 1 / std; affine: bias */
} sl_cuda_channels;

/* An element-wise chain by value, fused into one kernel: each value loads
 * once, runs every step, stores once. A chain with a gaussian_noise step
 * covers one element (its values counted from the element's first, as for
 * sl_ew_chain_fn); a kind without a device body is refused with
 * SL_CUDA_EUNSUPPORTED. */
#define SL_CUDA_MAX_STEPS 16
typedef struct sl_cuda_chain {
    int nsteps;
    sl_ew_step steps[SL_CUDA_MAX_STEPS];
} sl_cuda_chain;

/* Returned by a launcher for work the device kernels do not cover. */
#define SL_CUDA_EUNSUPPORTED (-1)

typedef struct sl_cuda_kernel_table {
    const char *name;       /* "cuda" */
    /* Element-wise; n counts values. src may equal dst. */
    int (*normalize_u8)(const uint8_t *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
    int (*normalize_f32)(const float *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
    int (*affine_f32)(const float *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
    int (*mul_channels)(const float *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
    int (*ew_chain)(float *x, int64_t n, const sl_cuda_chain *chain, void *stream);
    /* normalize from u8 followed by a chain, fused into one kernel. */
    int (*normalize_u8_chain)(const uint8_t *src, float *dst, int64_t n, const sl_cuda_channels *k,
                              const sl_cuda_chain *chain, void *stream);
    /* The same two with steps that differ per row (random ops resolved per
     * element): n values of rows of `values` each; row r's steps are
     * [first, first + nsteps) of its row_steps steps in the device array
     * table (rows x row_steps). A gaussian_noise step numbers its draws
     * from the row's first value. */
    int (*ew_chain_rows)(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps, int first,
                         int nsteps, void *stream);
    int (*normalize_u8_chain_rows)(const uint8_t *src, float *dst, int64_t n, const sl_cuda_channels *k,
                                   int64_t values, const sl_ew_step *table, int row_steps, int first, int nsteps,
                                   void *stream);
    int (*blend)(float *dst, const float *a, const float *b, int64_t n, float wa, float wb, void *stream);
    int (*dropout)(const float *src, float *dst, int64_t n, const sl_dropout_key *d, void *stream);
    int (*log1p)(const float *src, float *dst, int64_t n, void *stream);
    /* Integer ops. */
    int (*hash_ids)(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream);
    int (*one_hot)(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream);
    int (*pack)(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad, void *stream);
    /* pad_rows gathers from src into a distinct dst (rows x width). */
    int (*pad_rows)(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                    int64_t width, int32_t pad, void *stream);
    int (*length_mask)(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width, void *stream);
    /* Data movement, each from src into a distinct dst. */
    int (*crop_pad)(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                    int off_x, void *stream);
    int (*hflip)(const void *src, void *dst, int h, int w, size_t pixel_bytes, void *stream);
    int (*rot90)(const void *src, void *dst, int side, size_t pixel_bytes, int k, void *stream);
    int (*crop3d)(const void *src, void *dst, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz, int oy,
                  int ox, void *stream);
    int (*flip3d)(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, unsigned axes, void *stream);
    /* Bilinear resize; plan_dev holds a device copy of the plan's y0, y1,
     * wy, x0, x1, wx arrays (sl_cuda_resize_plan_upload). */
    int (*resize_u8)(const uint8_t *src, int64_t src_stride, float *dst, const sl_resize_plan *plan_dev, void *stream);
    int (*resize_f32)(const float *src, int64_t src_stride, float *dst, const sl_resize_plan *plan_dev, void *stream);
} sl_cuda_kernel_table;

/* The launchers, or NULL when sluice was built without CUDA. */
const sl_cuda_kernel_table *sl_cuda_kernels(void);

/* Copies a plan's arrays to the device: *dev is the plan with its array
 * pointers replaced by device pointers (one allocation, freed by
 * sl_cuda_resize_plan_free). Returns 0 or a cudaError_t. */
int sl_cuda_resize_plan_upload(const sl_resize_plan *plan, sl_resize_plan *dev);
void sl_cuda_resize_plan_free(sl_resize_plan *dev);

/* The channel constants of a normalize or affine op, for a launch. */
void sl_cuda_channels_from_normalize(const sl_normalize_consts *k, sl_cuda_channels *out);
void sl_cuda_channels_from_affine(const sl_affine_consts *k, sl_cuda_channels *out);

#ifdef __cplusplus
}
#endif

#endif
