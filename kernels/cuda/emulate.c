/* The host emulation of a device (kernels/device.h): host memory for
 * device memory, and every launcher a loop over the same per-index function
 * (kernels/at.h) that the CUDA kernel runs in each thread. Launches complete
 * before they return, so streams and events have nothing to order; graphs
 * are not emulated. It exists so that the device executor, the cuda
 * adapters' runtime and every op's device path run, and are held to the
 * reference, on machines without a GPU: a device then only has to compute
 * what these loops computed. */
#include <stdlib.h>
#include <string.h>

#include "kernels/at.h"
#include "kernels/device.h"

/* The emulated device memory's ledger: what these allocations would take
 * on a device, counted as the CUDA device counts its own. */
static sl_device_ledger emu_ledger = SL_DEVICE_LEDGER_INIT;

static int emu_host_alloc(void **ptr, size_t bytes)
{
    /* Rounded up to the alignment, as aligned_alloc requires. */
    *ptr = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    return *ptr ? 0 : SL_DEVICE_ENOMEM;
}

static void emu_host_release(void *ptr)
{
    free(ptr);
}

static int emu_alloc(void **ptr, size_t bytes)
{
    bytes = bytes ? bytes : 8;
    int e = emu_host_alloc(ptr, bytes);
    if (!e && (e = sl__device_ledger_add(&emu_ledger, *ptr, bytes)) != 0) {
        free(*ptr);
        *ptr = NULL;
    }
    return e;
}

static void emu_release(void *ptr)
{
    sl__device_ledger_remove(&emu_ledger, ptr);
    free(ptr);
}

static int emu_copy(void *dst, const void *src, size_t bytes, sl_device_copy_kind kind, void *stream)
{
    (void)kind, (void)stream;
    if (bytes)
        memmove(dst, src, bytes);
    return 0;
}

static int emu_memset0(void *ptr, size_t bytes, void *stream)
{
    (void)stream;
    memset(ptr, 0, bytes);
    return 0;
}

static int emu_memory(size_t *free_bytes, size_t *total_bytes)
{
    /* Enough for any ci-size batch; the executor's fit check passes. */
    *free_bytes = (size_t)1 << 40;
    *total_bytes = (size_t)1 << 40;
    return 0;
}

/* Streams and events are tokens: every launch has finished when it returns. */
static char token;

static int emu_create(void **handle)
{
    *handle = &token;
    return 0;
}

static void emu_destroy(void *handle)
{
    (void)handle;
}

static int emu_nothing(void *handle)
{
    (void)handle;
    return 0;
}

static int emu_pair(void *a, void *b)
{
    (void)a, (void)b;
    return 0;
}

static int emu_graph_begin(void *stream)
{
    (void)stream;
    return SL_DEVICE_EUNSUPPORTED;
}

static int emu_graph_end(void *stream, void **graph)
{
    (void)stream;
    *graph = NULL;
    return SL_DEVICE_EUNSUPPORTED;
}

static int emu_graph_launch(void *graph, void *stream)
{
    (void)graph, (void)stream;
    return SL_DEVICE_EUNSUPPORTED;
}

static const char *emu_error_string(int error)
{
    return error == SL_DEVICE_EUNSUPPORTED ? "not supported by the host emulation"
           : error == SL_DEVICE_ENOMEM     ? "out of memory"
                                           : "emulated device error";
}

/* Every index of a launch, in order. */
#define EACH(i, n) for (int64_t i = 0; i < (n); i++)

static int emu_normalize_u8(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_normalize_u8(src, dst, i, k->channels, k->a, k->b);
    return 0;
}

static int emu_normalize_f32(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_normalize_f32(src, dst, i, k->channels, k->a, k->b);
    return 0;
}

static int emu_affine_f32(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_affine(src, dst, i, k->channels, k->a, k->b);
    return 0;
}

static int emu_ew_chain(float *x, int64_t n, const sl_device_chain *chain, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_ew_chain(x, i, chain->steps, chain->nsteps);
    return 0;
}

static int emu_normalize_u8_chain(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                  const sl_device_chain *chain, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_normalize_u8_chain(src, dst, i, k->channels, k->a, k->b, chain->steps, chain->nsteps);
    return 0;
}

static int emu_ew_chain_rows(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps, int first,
                             int nsteps, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_ew_chain_rows(x, i, values, table, row_steps, first, nsteps);
    return 0;
}

static int emu_normalize_u8_chain_rows(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                       int64_t values, const sl_ew_step *table, int row_steps, int first, int nsteps,
                                       void *stream)
{
    (void)stream;
    EACH(i, n)
    sl__at_normalize_u8_chain_rows(src, dst, i, k->channels, k->a, k->b, values, table, row_steps, first, nsteps);
    return 0;
}

static int emu_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_blend(dst, a, b, i, wa, wb);
    return 0;
}

static int emu_log1p(const float *src, float *dst, int64_t n, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_log1p(src, dst, i);
    return 0;
}

static int emu_trig_rounds(const float *src, float *dst, int64_t n, int rounds, void *stream)
{
    (void)stream;
    EACH(i, n) sl__at_trig_rounds(src, dst, i, rounds);
    return 0;
}

static int emu_dropout_rows(const float *src, float *dst, int64_t rows, int64_t values, const int64_t *ids,
                            const sl_device_batch *batch, sl_philox_key key, uint32_t threshold, float scale,
                            void *stream)
{
    (void)stream;
    EACH(i, rows * values) sl__at_dropout_rows(src, dst, i, values, ids, batch, key, threshold, scale);
    return 0;
}

static int emu_decide_rows(const int64_t *ids, const sl_device_batch *batch, const sl_device_rules *rules,
                           int32_t *table, int stride, int64_t rows, void *stream)
{
    (void)stream;
    EACH(i, rows * rules->nrules) sl__at_decide_rows(ids, batch, rules, table, stride, i);
    return 0;
}

static int emu_step_rows(const int64_t *ids, const sl_device_batch *batch, const sl_step_rule *rules, sl_ew_step *table,
                         int row_steps, int64_t rows, void *stream)
{
    (void)stream;
    EACH(i, rows * row_steps) sl__at_step_rows(ids, batch, rules, table, row_steps, i);
    return 0;
}

static int emu_zscore_rows(const float *src, float *dst, int64_t rows, int64_t values, double *scratch, void *stream)
{
    (void)stream;
    EACH(r, rows) sl__at_moments_row(src, r, values, scratch, scratch + rows);
    EACH(i, rows * values) sl__at_zscore_apply(src, dst, i, values, scratch, scratch + rows);
    return 0;
}

static int emu_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream)
{
    (void)stream;
    EACH(i, rows * k->columns) sl__at_hash_id(src, dst, i, k->columns, k->size);
    return 0;
}

static int emu_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream)
{
    (void)stream;
    EACH(i, count * classes) sl__at_one_hot(labels, out, i, classes);
    return 0;
}

static int emu_bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns, void *stream)
{
    (void)stream;
    EACH(j, columns) sl__at_bag_offsets_column(ids, ends, rows, columns, (int)j);
    return 0;
}

static int emu_pad_tokens(const int32_t *src, int32_t *dst, int64_t rows, int64_t capacity, int64_t length,
                          int32_t end_id, int32_t pad_id, void *stream)
{
    (void)stream;
    EACH(r, rows) sl__at_pad_tokens_row(src, dst, r, capacity, length, end_id, pad_id);
    return 0;
}

static int emu_pack_rows(int32_t *dst, const int32_t *tokens, int64_t rows, int64_t seq_len, int64_t stream_tokens,
                         const int64_t *ids, int32_t pad, void *stream)
{
    (void)stream;
    EACH(i, rows * seq_len) sl__at_pack_rows(dst, tokens, i, seq_len, stream_tokens, ids, pad);
    return 0;
}

static int emu_pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                        const int64_t *width, int32_t pad, void *stream)
{
    (void)stream;
    EACH(i, rows * *width) sl__at_pad_rows_dyn(dst, src, lengths, i, stride, width, pad);
    return 0;
}

static int emu_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t stride, const int64_t *width,
                           void *stream)
{
    (void)stream, (void)stride;
    EACH(i, rows * *width) sl__at_length_mask_dyn(mask, lengths, i, width);
    return 0;
}

static int emu_crop_pad_rows(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes, int crop_h,
                             int crop_w, sl_device_rows_i32 offsets, void *stream)
{
    (void)stream;
    EACH(i, rows * h * w * (int64_t)pixel_bytes)
    sl__at_crop_pad_rows(src, dst, i, h, w, pixel_bytes, crop_h, crop_w, offsets);
    return 0;
}

static int emu_hflip_rows(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes,
                          sl_device_rows_i32 flip, void *stream)
{
    (void)stream;
    EACH(i, rows * h * w * (int64_t)pixel_bytes) sl__at_hflip_rows(src, dst, i, h, w, pixel_bytes, flip);
    return 0;
}

static int emu_rot90_rows(const void *src, void *dst, int64_t rows, int side, size_t pixel_bytes, sl_device_rows_i32 k,
                          void *stream)
{
    (void)stream;
    EACH(i, rows * side * side * (int64_t)pixel_bytes) sl__at_rot90_rows(src, dst, i, side, pixel_bytes, k);
    return 0;
}

static int emu_crop3d_rows(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes, int pd,
                           int ph, int pw, sl_device_rows_i32 offsets, void *stream)
{
    (void)stream;
    EACH(i, rows * pd * ph * pw * (int64_t)voxel_bytes)
    sl__at_crop3d_rows(src, dst, i, d, h, w, voxel_bytes, pd, ph, pw, offsets);
    return 0;
}

static int emu_flip3d_rows(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes,
                           sl_device_rows_i32 axes, void *stream)
{
    (void)stream;
    EACH(i, rows * d * h * w * (int64_t)voxel_bytes) sl__at_flip3d_rows(src, dst, i, d, h, w, voxel_bytes, axes);
    return 0;
}

static int emu_resize_rows(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                           int out_h, int out_w, void *stream)
{
    (void)stream;
    EACH(i, rows * out_h * out_w * channels)
    sl__at_resize_rows(src, src_u8, dst, i, in_h, in_w, channels, out_h, out_w);
    return 0;
}

static int emu_resized_crop_rows(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w,
                                 int channels, int out_h, int out_w, sl_device_rows_i32 boxes, void *stream)
{
    (void)stream;
    EACH(i, rows * out_h * out_w * channels)
    sl__at_resized_crop_rows(src, src_u8, dst, i, in_h, in_w, channels, out_h, out_w, boxes);
    return 0;
}

static int emu_gather_rows(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index,
                           void *stream)
{
    (void)stream;
    EACH(i, rows * (int64_t)row_bytes) sl__at_gather_rows(dst, src, i, row_bytes, index);
    return 0;
}

static int emu_scatter_rows(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index,
                            void *stream)
{
    (void)stream;
    EACH(i, rows * (int64_t)row_bytes) sl__at_scatter_rows(dst, src, i, row_bytes, index);
    return 0;
}

static int emu_select_rows(void *dst, const void *a, const void *b, int64_t rows, size_t row_bytes,
                           sl_device_rows_i32 take_a, void *stream)
{
    (void)stream;
    EACH(i, rows * (int64_t)row_bytes) sl__at_select_rows(dst, a, b, i, row_bytes, take_a);
    return 0;
}

static int emu_mix_rows(float *dst, const float *src, int64_t rows, int64_t values, const int64_t *partner,
                        const float *w, void *stream)
{
    (void)stream;
    EACH(i, rows * values) sl__at_mix_rows(dst, src, i, values, partner, w);
    return 0;
}

static int emu_paste_rows(void *dst, const void *src, int64_t rows, int h, int w, size_t pixel_bytes,
                          const int64_t *partner, const float *box, void *stream)
{
    (void)stream;
    EACH(i, rows * h * w * (int64_t)pixel_bytes) sl__at_paste_rows(dst, src, i, h, w, pixel_bytes, partner, box);
    return 0;
}

/* The emulation's products are the reference's ordered ones (each output
 * summed over k ascending from 0), so its log-mel is the reference's to the
 * bit; the device's BLAS is held to the tolerance instead. */
static void ordered_sgemm(int64_t m, int n, int kk, const float *a, const float *b, float *c)
{
    for (int64_t i = 0; i < m; i++) {
        float *row = c + i * n;
        for (int j = 0; j < n; j++)
            row[j] = 0.0f;
        for (int p = 0; p < kk; p++) {
            const float x = a[i * kk + p];
            const float *brow = b + (int64_t)p * n;
            for (int j = 0; j < n; j++)
                row[j] = row[j] + x * brow[j];
        }
    }
}

static size_t emu_log_mel_scratch(const sl_melspec_consts *k, int64_t rows)
{
    int64_t frames = rows * k->frames;
    return (size_t)(frames * k->frame + frames * 2 * k->bins + frames * k->bins + rows) * sizeof(float);
}

static int emu_log_mel_rows(const float *wave, float *out, int64_t rows, const sl_melspec_consts *k, void *scratch,
                            void *stream)
{
    (void)stream;
    int64_t frames = rows * k->frames;
    float *framed = scratch, *spectrum = framed + frames * k->frame;
    float *power = spectrum + frames * 2 * k->bins, *loudest = power + frames * k->bins;
    EACH(i, frames * k->frame) sl__at_frame(wave, framed, i, k->samples, k->frames, k->frame, k->hop);
    ordered_sgemm(frames, 2 * k->bins, k->frame, framed, k->dft, spectrum);
    EACH(i, frames * k->bins) sl__at_power(spectrum, power, i, k->bins);
    ordered_sgemm(frames, k->mels, k->bins, power, k->filters, out);
    int64_t values = (int64_t)k->frames * k->mels;
    EACH(i, rows * values) sl__at_log10_floor(out, i);
    EACH(r, rows) sl__at_loudest_row(out, loudest, r, values);
    EACH(i, rows * values) sl__at_log_mel_scale(out, i, values, loudest);
    return 0;
}

static const sl_device emulation = {
    .name = "host-emulation",
    .emulated = true,
    .ledger = &emu_ledger,
    .alloc = emu_alloc,
    .release = emu_release,
    .host_alloc = emu_host_alloc,
    .host_release = emu_host_release,
    .copy = emu_copy,
    .memset0 = emu_memset0,
    .memory = emu_memory,
    .stream_create = emu_create,
    .stream_destroy = emu_destroy,
    .stream_sync = emu_nothing,
    .event_create = emu_create,
    .event_destroy = emu_destroy,
    .event_record = emu_pair,
    .stream_wait = emu_pair,
    .event_sync = emu_nothing,
    .graph_begin = emu_graph_begin,
    .graph_end = emu_graph_end,
    .graph_launch = emu_graph_launch,
    .graph_destroy = emu_destroy,
    .error_string = emu_error_string,
    .normalize_u8 = emu_normalize_u8,
    .normalize_f32 = emu_normalize_f32,
    .affine_f32 = emu_affine_f32,
    .ew_chain = emu_ew_chain,
    .normalize_u8_chain = emu_normalize_u8_chain,
    .ew_chain_rows = emu_ew_chain_rows,
    .normalize_u8_chain_rows = emu_normalize_u8_chain_rows,
    .blend = emu_blend,
    .log1p = emu_log1p,
    .trig_rounds = emu_trig_rounds,
    .dropout_rows = emu_dropout_rows,
    .decide_rows = emu_decide_rows,
    .step_rows = emu_step_rows,
    .zscore_rows = emu_zscore_rows,
    .hash_ids = emu_hash_ids,
    .one_hot = emu_one_hot,
    .bag_offsets = emu_bag_offsets,
    .pad_tokens = emu_pad_tokens,
    .pack_rows = emu_pack_rows,
    .pad_rows = emu_pad_rows,
    .length_mask = emu_length_mask,
    .crop_pad_rows = emu_crop_pad_rows,
    .hflip_rows = emu_hflip_rows,
    .rot90_rows = emu_rot90_rows,
    .crop3d_rows = emu_crop3d_rows,
    .flip3d_rows = emu_flip3d_rows,
    .resize_rows = emu_resize_rows,
    .resized_crop_rows = emu_resized_crop_rows,
    .gather_rows = emu_gather_rows,
    .scatter_rows = emu_scatter_rows,
    .select_rows = emu_select_rows,
    .mix_rows = emu_mix_rows,
    .paste_rows = emu_paste_rows,
    .log_mel_rows = emu_log_mel_rows,
    .log_mel_scratch = emu_log_mel_scratch,
    .log_mel_missing = NULL,
};

const sl_device *sl_device_emulation(void)
{
    return &emulation;
}
