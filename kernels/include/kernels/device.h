/* A device that runs a pipeline's ops on whole batches: its memory, streams,
 * events and graphs, and the batched launchers every op's device path calls
 * (each op's `device_rows` or `device_batch` hook, pipeline/op_desc.h).
 *
 * Two implementations share this table. The CUDA one (kernels/cuda/) queues
 * kernels on streams; the host emulation (kernels/cuda/emulate.c) runs the
 * very same per-value functions of kernels/at.h in loops on the CPU, at
 * once, with host memory standing in for device memory. The device executor
 * (engine/exec/device.c), the cuda adapters and every op's device path are
 * thereby run and checked against the reference on every machine, and a
 * GPU only confirms that the device computes what the host computed.
 *
 * Conventions: every pointer a launcher takes is device memory (host memory
 * in the emulation); n counts values, rows counts elements; every launcher
 * returns 0 or a nonzero device error (SL_DEVICE_EUNSUPPORTED when the
 * device has no such kernel) and queues its work on `stream`. A value that
 * changes from batch to batch (an epoch, a width, a box, a weight) is read
 * from device memory, never passed as an argument, so that a captured graph
 * replays correctly for every batch. Plain C, for nvcc and C compilers. */
#ifndef SLUICE_KERNELS_DEVICE_H
#define SLUICE_KERNELS_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/decide.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_DEVICE_EUNSUPPORTED (-1)
/* Out of memory: CUDA's cudaErrorMemoryAllocation, which the emulation
 * returns too. */
#define SL_DEVICE_ENOMEM       2

/* Doubles of scratch zscore_rows needs: each row's mean, variance and
 * eight partial sums. */
#define SL_DEVICE_ZSCORE_SCRATCH(rows) ((rows)*10)

/* Per-channel constants of normalize (a: mean, b: 1 / std) and affine (a:
 * scale, b: bias), copied by value into each launch. */
typedef struct sl_device_channels {
    int channels;
    float a[SL_MAX_CHANNELS];
    float b[SL_MAX_CHANNELS];
} sl_device_channels;

/* An element-wise chain of at most SL_DEVICE_MAX_STEPS steps, by value. */
#define SL_DEVICE_MAX_STEPS 16
typedef struct sl_device_chain {
    int nsteps;
    sl_ew_step steps[SL_DEVICE_MAX_STEPS];
} sl_device_chain;

/* The decision rules a batch's rows are drawn by (kernels/decide.h), by
 * value: the same for every batch, so a graph replays them. */
#define SL_DEVICE_MAX_RULES 8
typedef struct sl_device_rules {
    int nrules;
    sl_decide_rule rules[SL_DEVICE_MAX_RULES];
} sl_device_rules;

/* Per-row decisions of one op in device memory: row r's are
 * table[r * stride + first .. + the op's column count) (the columns of its
 * descriptor's decision_columns, as `sluice export` writes them). */
typedef struct sl_device_rows_i32 {
    const int32_t *table;
    int stride;
    int first;
} sl_device_rows_i32;

/* What every launcher may read of the batch it runs on, in device memory,
 * refilled for each batch: its epoch and index. */
typedef struct sl_device_batch {
    int64_t epoch;
    int64_t index;
} sl_device_batch;

typedef enum sl_device_copy_kind {
    SL_DEVICE_HOST_TO_DEVICE = 0,
    SL_DEVICE_DEVICE_TO_HOST,
    SL_DEVICE_DEVICE_TO_DEVICE,
} sl_device_copy_kind;

/* The device memory a table's alloc has handed out and not released
 * (kernels/cuda/ledger.c): each block's size by its address, the bytes held
 * now, and the most held at once since the last sl_device_memory_mark. */
typedef struct sl_device_ledger_entry {
    void *ptr;
    size_t bytes;
} sl_device_ledger_entry;

typedef struct sl_device_ledger {
    pthread_mutex_t lock;
    sl_device_ledger_entry *entries;
    size_t count, slots;
    int64_t live, peak;
} sl_device_ledger;

#define SL_DEVICE_LEDGER_INIT                                                                                          \
    {                                                                                                                  \
        PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0                                                                    \
    }

typedef struct sl_device {
    const char *name; /* "cuda", "host-emulation" */
    bool emulated;    /* the host emulation: every call completes before it returns */

    /* --- memory, streams, events, graphs --------------------------------- */
    /* alloc enters each block in the device's ledger and release takes it
     * out, so the bytes a run held at its peak are known on any device. */
    sl_device_ledger *ledger;
    int (*alloc)(void **ptr, size_t bytes);
    void (*release)(void *ptr);
    /* Page-locked host memory, which copies read and write asynchronously. */
    int (*host_alloc)(void **ptr, size_t bytes);
    void (*host_release)(void *ptr);
    int (*copy)(void *dst, const void *src, size_t bytes, sl_device_copy_kind kind, void *stream);
    int (*memset0)(void *ptr, size_t bytes, void *stream);
    int (*memory)(size_t *free_bytes, size_t *total_bytes);
    int (*stream_create)(void **stream);
    void (*stream_destroy)(void *stream);
    int (*stream_sync)(void *stream);
    int (*event_create)(void **event);
    void (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*stream_wait)(void *stream, void *event);
    int (*event_sync)(void *event);
    /* Graphs: the launches queued on `stream` between begin and end become
     * one replayable graph. The emulation has none (SL_DEVICE_EUNSUPPORTED):
     * its launches run as they are queued. */
    int (*graph_begin)(void *stream);
    int (*graph_end)(void *stream, void **graph);
    int (*graph_launch)(void *graph, void *stream);
    void (*graph_destroy)(void *graph);
    /* A device error's text. */
    const char *(*error_string)(int error);

    /* --- element-wise: n values ----------------------------------------- */
    int (*normalize_u8)(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k, void *stream);
    int (*normalize_f32)(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream);
    int (*affine_f32)(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream);
    int (*ew_chain)(float *x, int64_t n, const sl_device_chain *chain, void *stream);
    int (*normalize_u8_chain)(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                              const sl_device_chain *chain, void *stream);
    /* The same two with steps that differ per row (random ops resolved per
     * element on the host): rows of `values` values; row r's steps are
     * [first, first + nsteps) of its row_steps steps in `table` (rows x
     * row_steps). A gaussian_noise step numbers its draws from the row's
     * first value. */
    int (*ew_chain_rows)(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps, int first,
                         int nsteps, void *stream);
    int (*normalize_u8_chain_rows)(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                   int64_t values, const sl_ew_step *table, int row_steps, int first, int nsteps,
                                   void *stream);
    /* dst = a * wa + b * wb; dst may equal a or b. */
    int (*blend)(float *dst, const float *a, const float *b, int64_t n, float wa, float wb, void *stream);
    int (*log1p)(const float *src, float *dst, int64_t n, void *stream);
    int (*trig_rounds)(const float *src, float *dst, int64_t n, int rounds, void *stream);
    /* Dropout of rows of `values` values, row r keyed by element ids[r] and
     * the batch's epoch; threshold and scale as sl_dropout_key's. */
    int (*dropout_rows)(const float *src, float *dst, int64_t rows, int64_t values, const int64_t *ids,
                        const sl_device_batch *batch, sl_philox_key key, uint32_t threshold, float scale, void *stream);
    /* Every row's decisions by each rule: row r's element ids[r], in the
     * batch's epoch, into table[r * stride + rule.first ..]. */
    int (*decide_rows)(const int64_t *ids, const sl_device_batch *batch, const sl_device_rules *rules, int32_t *table,
                       int stride, int64_t rows, void *stream);
    /* Every row's chain steps by each of row_steps rules (in device
     * memory): table[r * row_steps + k] is rule k's step for element
     * ids[r] in the batch's epoch. */
    int (*step_rows)(const int64_t *ids, const sl_device_batch *batch, const sl_step_rule *rules, sl_ew_step *table,
                     int row_steps, int64_t rows, void *stream);
    /* zscore of rows of `values` f32: each row's mean and variance in
     * double in sl_moments_fn's fixed order, then its normalize step, so the
     * bits are the reference's. scratch holds SL_DEVICE_ZSCORE_SCRATCH(rows)
     * doubles. */
    int (*zscore_rows)(const float *src, float *dst, int64_t rows, int64_t values, double *scratch, void *stream);

    /* --- integers and sequences ------------------------------------------ */
    int (*hash_ids)(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream);
    int (*one_hot)(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream);
    /* bag_offsets: ends[r * columns + j] = present ids of column j in rows 0..r. */
    int (*bag_offsets)(const int64_t *ids, int64_t *ends, int64_t rows, int columns, void *stream);
    /* pad_tokens: rows of `capacity` tokens to rows of `length`, as
     * sl_op_pad_tokens describes (one end token, then pads). */
    int (*pad_tokens)(const int32_t *src, int32_t *dst, int64_t rows, int64_t capacity, int64_t length, int32_t end_id,
                      int32_t pad_id, void *stream);
    /* pack_tokens' gather from a token stream of stream_tokens tokens on the
     * device: dst row r is element ids[r]'s window of seq_len tokens (from
     * token ids[r] * seq_len), padded with pad past the stream's end. */
    int (*pack_rows)(int32_t *dst, const int32_t *tokens, int64_t rows, int64_t seq_len, int64_t stream_tokens,
                     const int64_t *ids, int32_t pad, void *stream);
    /* Dynamic padding from src (rows of `stride`) into dst (rows of
     * *width, width in device memory and at most stride), and its mask. */
    int (*pad_rows)(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                    const int64_t *width, int32_t pad, void *stream);
    int (*length_mask)(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t stride, const int64_t *width,
                       void *stream);

    /* --- data movement: rows of images or volumes, src into a distinct dst */
    int (*crop_pad_rows)(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes, int crop_h,
                         int crop_w, sl_device_rows_i32 offsets, void *stream);
    int (*hflip_rows)(const void *src, void *dst, int64_t rows, int h, int w, size_t pixel_bytes,
                      sl_device_rows_i32 flip, void *stream);
    int (*rot90_rows)(const void *src, void *dst, int64_t rows, int side, size_t pixel_bytes, sl_device_rows_i32 k,
                      void *stream);
    int (*crop3d_rows)(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes, int pd,
                       int ph, int pw, sl_device_rows_i32 offsets, void *stream);
    int (*flip3d_rows)(const void *src, void *dst, int64_t rows, int d, int h, int w, size_t voxel_bytes,
                       sl_device_rows_i32 axes, void *stream);
    /* Bilinear resize of rows of in_h x in_w x channels to out_h x out_w,
     * half-pixel centres, each coordinate and weight computed as
     * sl_resize_plan_init computes it (kernels/bodies.h). */
    int (*resize_rows)(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                       int out_h, int out_w, void *stream);
    /* The same from each row's box (y, x, h, w in `boxes`) of its image. */
    int (*resized_crop_rows)(const void *src, bool src_u8, float *dst, int64_t rows, int in_h, int in_w, int channels,
                             int out_h, int out_w, sl_device_rows_i32 boxes, void *stream);

    /* --- whole rows --------------------------------------------------------- */
    /* dst row r = src row index[r] (gather) or dst row index[r] = src row r
     * (scatter), rows of row_bytes. */
    int (*gather_rows)(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index, void *stream);
    int (*scatter_rows)(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index, void *stream);
    /* dst row r = a row r where the row's decision is nonzero, else b row r;
     * dst may equal a or b. */
    int (*select_rows)(void *dst, const void *a, const void *b, int64_t rows, size_t row_bytes,
                       sl_device_rows_i32 take_a, void *stream);
    /* MixUp: dst row r = src row r * w[0] + src row partner[r] * w[1], w in
     * device memory; dst distinct from src. */
    int (*mix_rows)(float *dst, const float *src, int64_t rows, int64_t values, const int64_t *partner, const float *w,
                    void *stream);
    /* CutMix: dst row r is src row r with the box [box[0], box[1]) x
     * [box[2], box[3]) (whole numbers held in floats, in device memory, as
     * the op's batch decisions give them) taken from src row partner[r];
     * dst distinct from src. */
    int (*paste_rows)(void *dst, const void *src, int64_t rows, int h, int w, size_t pixel_bytes,
                      const int64_t *partner, const float *box, void *stream);

    /* --- log-mel spectrograms --------------------------------------------- */
    /* NULL where the device has no BLAS (why in log_mel_missing). Runs
     * waveform rows to log-mel rows with the two matrix products of
     * sl_log_mel_fn in the device's BLAS (within the tolerance of
     * docs/determinism.md, not bitwise); consts hold device copies of the
     * DFT and filter matrices; scratch holds log_mel_scratch bytes. */
    int (*log_mel_rows)(const float *wave, float *out, int64_t rows, const sl_melspec_consts *consts, void *scratch,
                        void *stream);
    size_t (*log_mel_scratch)(const sl_melspec_consts *consts, int64_t rows);
    const char *log_mel_missing;
} sl_device;

/* The CUDA device (NULL, with the reason, where sluice was built without
 * CUDA or no device can run), and the host emulation, always there. */
const sl_device *sl_device_cuda(char *reason, size_t size);
const sl_device *sl_device_emulation(void);

/* The device's ledger: sl_device_memory_mark starts a new peak from the
 * bytes held now; sl_device_memory_held gives the bytes held now and the
 * most held at once since the mark (either pointer may be NULL). Bytes are
 * those the allocations asked for, before the driver's rounding. */
void sl_device_memory_mark(const sl_device *device);
void sl_device_memory_held(const sl_device *device, int64_t *live, int64_t *peak);
/* For the tables' alloc and release: a block handed out, a block taken
 * back (a block the ledger does not hold is ignored). add returns
 * SL_DEVICE_ENOMEM when the ledger itself cannot grow. */
int sl__device_ledger_add(sl_device_ledger *ledger, void *ptr, size_t bytes);
void sl__device_ledger_remove(sl_device_ledger *ledger, void *ptr);

#ifdef __cplusplus
}
#endif

#endif
