/* CUDA data-movement kernels: one thread per output byte, the source byte
 * found by the reference's own index mapping (bodies.h). Each gathers from
 * src into a distinct dst. Beside kernels/ref/crop_pad.c, hflip.c,
 * rotate.c and volume.c. */
#include "cuda/launch.cuh"

static __global__ void crop_pad(const uint8_t *src, uint8_t *dst, int64_t n, int h, int w, size_t pixel_bytes,
                                int crop_h, int crop_w, int off_y, int off_x)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_crop_pad(src, dst, i, h, w, pixel_bytes, crop_h, crop_w, off_y, off_x);
}

static __global__ void hflip(const uint8_t *src, uint8_t *dst, int64_t n, int w, size_t pixel_bytes)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_hflip(src, dst, i, w, pixel_bytes);
}

static __global__ void rot90(const uint8_t *src, uint8_t *dst, int64_t n, int side, size_t pixel_bytes, int k)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_rot90(src, dst, i, side, pixel_bytes, k);
}

static __global__ void crop3d(const uint8_t *src, uint8_t *dst, int64_t n, int h, int w, size_t voxel_bytes, int ph,
                              int pw, int oz, int oy, int ox)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_crop3d(src, dst, i, h, w, voxel_bytes, ph, pw, oz, oy, ox);
}

static __global__ void flip3d(const uint8_t *src, uint8_t *dst, int64_t n, int d, int h, int w, size_t voxel_bytes,
                              unsigned axes)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_flip3d(src, dst, i, d, h, w, voxel_bytes, axes);
}

int sl__cuda_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                      int off_x, void *stream)
{
    int64_t n = (int64_t)h * w * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(crop_pad, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, h, w, pixel_bytes, crop_h, crop_w,
                    off_y, off_x);
}

int sl__cuda_hflip(const void *src, void *dst, int h, int w, size_t pixel_bytes, void *stream)
{
    int64_t n = (int64_t)h * w * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(hflip, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, w, pixel_bytes);
}

int sl__cuda_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k, void *stream)
{
    int64_t n = (int64_t)side * side * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(rot90, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, side, pixel_bytes, k);
}

int sl__cuda_crop3d(const void *src, void *dst, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox, void *stream)
{
    int64_t n = (int64_t)pd * ph * pw * (int64_t)voxel_bytes;
    SL__CUDA_LAUNCH(crop3d, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, h, w, voxel_bytes, ph, pw, oz, oy, ox);
}

int sl__cuda_flip3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, unsigned axes, void *stream)
{
    int64_t n = (int64_t)d * h * w * (int64_t)voxel_bytes;
    SL__CUDA_LAUNCH(flip3d, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, d, h, w, voxel_bytes, axes);
}
