/* CUDA data-movement kernels over whole batches: one thread per output
 * byte, the source byte found by the reference's own index mapping
 * (kernels/bodies.h) with the row's decision. Each gathers from src into a
 * distinct dst. Beside kernels/ref/crop_pad.c, hflip.c, rotate.c, volume.c
 * and resize.c. */
#include "cuda/launch.cuh"

static __global__ void crop_pad_rows(const uint8_t *src, uint8_t *dst, int64_t n, int h, int w, size_t pixel_bytes,
                                     int crop_h, int crop_w, sl_device_rows_i32 offsets)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_crop_pad_rows(src, dst, i, h, w, pixel_bytes, crop_h, crop_w, offsets);
}

static __global__ void hflip_rows(const uint8_t *src, uint8_t *dst, int64_t n, int h, int w, size_t pixel_bytes,
                                  sl_device_rows_i32 flip)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_hflip_rows(src, dst, i, h, w, pixel_bytes, flip);
}

static __global__ void rot90_rows(const uint8_t *src, uint8_t *dst, int64_t n, int side, size_t pixel_bytes,
                                  sl_device_rows_i32 k)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_rot90_rows(src, dst, i, side, pixel_bytes, k);
}

static __global__ void crop3d_rows(const uint8_t *src, uint8_t *dst, int64_t n, int d, int h, int w, size_t voxel_bytes,
                                   int pd, int ph, int pw, sl_device_rows_i32 offsets)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_crop3d_rows(src, dst, i, d, h, w, voxel_bytes, pd, ph, pw, offsets);
}

static __global__ void flip3d_rows(const uint8_t *src, uint8_t *dst, int64_t n, int d, int h, int w, size_t voxel_bytes,
                                   sl_device_rows_i32 axes)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_flip3d_rows(src, dst, i, d, h, w, voxel_bytes, axes);
}

static __global__ void resize_rows(const void *src, bool u8, float *dst, int64_t n, int in_h, int in_w, int channels,
                                   int out_h, int out_w)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_resize_rows(src, u8, dst, i, in_h, in_w, channels, out_h, out_w);
}

static __global__ void resized_crop_rows(const void *src, bool u8, float *dst, int64_t n, int in_h, int in_w,
                                         int channels, int out_h, int out_w, sl_device_rows_i32 boxes)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_resized_crop_rows(src, u8, dst, i, in_h, in_w, channels, out_h, out_w, boxes);
}

int sl__cuda_crop_pad_rows(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes, int crop_h,
                           int crop_w, sl_device_rows_i32 offsets, void *stream)
{
    int64_t n = rows * h * w * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(crop_pad_rows, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, h, w, pixel_bytes, crop_h,
                    crop_w, offsets);
}

int sl__cuda_hflip_rows(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes,
                        sl_device_rows_i32 flip, void *stream)
{
    int64_t n = rows * h * w * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(hflip_rows, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, h, w, pixel_bytes, flip);
}

int sl__cuda_rot90_rows(const void *src, void *dst, int64_t rows, int side, size_t pixel_bytes, sl_device_rows_i32 k,
                        void *stream)
{
    int64_t n = rows * side * side * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(rot90_rows, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, side, pixel_bytes, k);
}

int sl__cuda_crop3d_rows(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes, int pd,
                         int ph, int pw, sl_device_rows_i32 offsets, void *stream)
{
    int64_t n = rows * pd * ph * pw * (int64_t)voxel_bytes;
    SL__CUDA_LAUNCH(crop3d_rows, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, d, h, w, voxel_bytes, pd, ph, pw,
                    offsets);
}

int sl__cuda_flip3d_rows(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes,
                         sl_device_rows_i32 axes, void *stream)
{
    int64_t n = rows * d * h * w * (int64_t)voxel_bytes;
    SL__CUDA_LAUNCH(flip3d_rows, n, stream, (const uint8_t *)src, (uint8_t *)dst, n, d, h, w, voxel_bytes, axes);
}

int sl__cuda_resize_rows(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                         int out_h, int out_w, void *stream)
{
    int64_t n = rows * out_h * out_w * channels;
    SL__CUDA_LAUNCH(resize_rows, n, stream, src, src_u8, dst, n, in_h, in_w, channels, out_h, out_w);
}

int sl__cuda_resized_crop_rows(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                               int out_h, int out_w, sl_device_rows_i32 boxes, void *stream)
{
    int64_t n = rows * out_h * out_w * channels;
    SL__CUDA_LAUNCH(resized_crop_rows, n, stream, src, src_u8, dst, n, in_h, in_w, channels, out_h, out_w, boxes);
}
