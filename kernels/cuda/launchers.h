/* The CUDA launchers behind sl_cuda_kernel_table (kernels/include/kernels/cuda.h), one
 * group per .cu file, with C linkage so that table.c, plain C, fills the
 * table. */
#ifndef SLUICE_KERNELS_CUDA_LAUNCHERS_H
#define SLUICE_KERNELS_CUDA_LAUNCHERS_H

#include "kernels/cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* elementwise.cu */
int sl__cuda_normalize_u8(const uint8_t *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
int sl__cuda_normalize_f32(const float *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
int sl__cuda_affine_f32(const float *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
int sl__cuda_mul_channels(const float *src, float *dst, int64_t n, const sl_cuda_channels *k, void *stream);
int sl__cuda_ew_chain(float *x, int64_t n, const sl_cuda_chain *chain, void *stream);
int sl__cuda_normalize_u8_chain(const uint8_t *src, float *dst, int64_t n, const sl_cuda_channels *k,
                                const sl_cuda_chain *chain, void *stream);
int sl__cuda_ew_chain_rows(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps, int first,
                           int nsteps, void *stream);
int sl__cuda_normalize_u8_chain_rows(const uint8_t *src, float *dst, int64_t n, const sl_cuda_channels *k,
                                     int64_t values, const sl_ew_step *table, int row_steps, int first, int nsteps,
                                     void *stream);
int sl__cuda_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb, void *stream);
int sl__cuda_dropout(const float *src, float *dst, int64_t n, const sl_dropout_key *d, void *stream);
int sl__cuda_log1p(const float *src, float *dst, int64_t n, void *stream);

/* sequences.cu */
int sl__cuda_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream);
int sl__cuda_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream);
int sl__cuda_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad, void *stream);
int sl__cuda_pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                      int64_t width, int32_t pad, void *stream);
int sl__cuda_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width, void *stream);

/* movement.cu */
int sl__cuda_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                      int off_x, void *stream);
int sl__cuda_hflip(const void *src, void *dst, int h, int w, size_t pixel_bytes, void *stream);
int sl__cuda_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k, void *stream);
int sl__cuda_crop3d(const void *src, void *dst, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox, void *stream);
int sl__cuda_flip3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, unsigned axes, void *stream);

/* resize.cu */
int sl__cuda_resize_u8(const uint8_t *src, int64_t src_stride, float *dst, const sl_resize_plan *plan_dev,
                       void *stream);
int sl__cuda_resize_f32(const float *src, int64_t src_stride, float *dst, const sl_resize_plan *plan_dev,
                        void *stream);

#ifdef __cplusplus
}
#endif

#endif
