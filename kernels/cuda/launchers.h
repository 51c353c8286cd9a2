/* The CUDA launchers behind the CUDA device (kernels/device.h), one per
 * kernel of the .cu files, each queuing its kernel on a stream and
 * returning the launch's error. kernels/cuda/device.c puts them in the
 * device's table. */
#ifndef SLUICE_KERNELS_CUDA_LAUNCHERS_H
#define SLUICE_KERNELS_CUDA_LAUNCHERS_H

#include "kernels/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* elementwise.cu */
int sl__cuda_normalize_u8(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k, void *stream);
int sl__cuda_normalize_f32(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream);
int sl__cuda_affine_f32(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream);
int sl__cuda_ew_chain(float *x, int64_t n, const sl_device_chain *chain, void *stream);
int sl__cuda_normalize_u8_chain(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                const sl_device_chain *chain, void *stream);
int sl__cuda_ew_chain_rows(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps, int first,
                           int nsteps, void *stream);
int sl__cuda_normalize_u8_chain_rows(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                     int64_t values, const sl_ew_step *table, int row_steps, int first, int nsteps,
                                     void *stream);
int sl__cuda_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb, void *stream);
int sl__cuda_log1p(const float *src, float *dst, int64_t n, void *stream);

/* sequences.cu */
int sl__cuda_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream);
int sl__cuda_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream);
int sl__cuda_bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns, void *stream);
int sl__cuda_pad_tokens(const int32_t *src, int32_t *dst, int64_t rows, int64_t capacity, int64_t length,
                        int32_t end_id, int32_t pad_id, void *stream);
int sl__cuda_pack_rows(int32_t *dst, const int32_t *tokens, int64_t rows, int64_t seq_len, int64_t stream_tokens,
                       const int64_t *ids, int32_t pad, void *stream);
int sl__cuda_pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                      const int64_t *width, int32_t pad, void *stream);
int sl__cuda_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t stride, const int64_t *width,
                         void *stream);

/* movement.cu */
int sl__cuda_crop_pad_rows(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes, int crop_h,
                           int crop_w, sl_device_rows_i32 offsets, void *stream);
int sl__cuda_hflip_rows(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes,
                        sl_device_rows_i32 flip, void *stream);
int sl__cuda_rot90_rows(const void *src, void *dst, int64_t rows, int side, size_t pixel_bytes, sl_device_rows_i32 k,
                        void *stream);
int sl__cuda_crop3d_rows(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes, int pd,
                         int ph, int pw, sl_device_rows_i32 offsets, void *stream);
int sl__cuda_flip3d_rows(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes,
                         sl_device_rows_i32 axes, void *stream);
int sl__cuda_resize_rows(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                         int out_h, int out_w, void *stream);
int sl__cuda_resized_crop_rows(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                               int out_h, int out_w, sl_device_rows_i32 boxes, void *stream);

/* rows.cu */
int sl__cuda_trig_rounds(const float *src, float *dst, int64_t n, int rounds, void *stream);
int sl__cuda_dropout_rows(const float *src, float *dst, int64_t rows, int64_t values, const int64_t *ids,
                          const sl_device_batch *batch, sl_philox_key key, uint32_t threshold, float scale,
                          void *stream);
int sl__cuda_decide_rows(const int64_t *ids, const sl_device_batch *batch, const sl_device_rules *rules, int32_t *table,
                         int stride, int64_t rows, void *stream);
int sl__cuda_step_rows(const int64_t *ids, const sl_device_batch *batch, const sl_step_rule *rules, sl_ew_step *table,
                       int row_steps, int64_t rows, void *stream);
int sl__cuda_zscore_rows(const float *src, float *dst, int64_t rows, int64_t values, double *scratch, void *stream);
int sl__cuda_gather_rows(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index,
                         void *stream);
int sl__cuda_scatter_rows(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index,
                          void *stream);
int sl__cuda_select_rows(void *dst, const void *a, const void *b, int64_t rows, size_t row_bytes,
                         sl_device_rows_i32 take_a, void *stream);
int sl__cuda_mix_rows(float *dst, const float *src, int64_t rows, int64_t values, const int64_t *partner,
                      const float *w, void *stream);
int sl__cuda_paste_rows(void *dst, const void *src, int64_t rows, int h, int w, size_t pixel_bytes,
                        const int64_t *partner, const float *box, void *stream);
/* log-mel's steps around its two products (kernels/cuda/device.c runs the
 * products in cuBLAS). */
int sl__cuda_frame(const float *wave, float *framed, int64_t rows, int64_t samples, int frames, int frame_len, int hop,
                   void *stream);
int sl__cuda_power(const float *spectrum, float *out, int64_t frames, int bins, void *stream);
int sl__cuda_log_mel_finish(float *x, float *loudest, int64_t rows, int64_t values, void *stream);

#ifdef __cplusplus
}
#endif

#endif
