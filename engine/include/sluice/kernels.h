/* Kernel signatures and the tables that dispatch them.
 *
 * Each signature is declared once here and implemented per back end:
 * kernels/ref (portable C, the oracle, always built), kernels/cpu (optimized)
 * and, later, kernels/cuda. The registry fills a table reference-first and
 * lets faster versions override entries after a runtime check, so an op
 * without an optimized version silently runs the reference. */
#ifndef SLUICE_KERNELS_H
#define SLUICE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/ops.h"
#include "sluice/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-channel constants of a normalize op, prepared once when a pipeline is
 * built. inv_std is 1.0f / std computed on the host, so every back end
 * multiplies by the same float. The reference reads the per-channel arrays;
 * optimized kernels read them tiled to `period` values (a multiple of the
 * channel count, and of 16 where that stays short), so their inner loops need
 * no modulo, and preparing nothing per call keeps short rows (a tabular row
 * of 100 features) cheap. */
typedef struct sl_normalize_consts {
    int channels;
    int period;
    float mean[SL_MAX_CHANNELS];
    float inv_std[SL_MAX_CHANNELS];
    float *mean_tiled;      /* period values: mean[j % channels] */
    float *inv_std_tiled;
} sl_normalize_consts;

sl_status sl_normalize_consts_init(sl_normalize_consts *consts, int channels, const float *mean, const float *std,
                                   sl_err *err);
void sl_normalize_consts_release(sl_normalize_consts *consts);

/* Normalize `pixels` pixels of consts->channels interleaved channels:
 * dst = ((float)src - mean[c]) * inv_std[c]. */
typedef void (*sl_normalize_u8_fn)(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
/* As above for f32 input; src may equal dst. */
typedef void (*sl_normalize_f32_fn)(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k);

/* One step of an element-wise chain on f32 data. */
typedef struct sl_ew_step {
    sl_op_kind kind;        /* SL_OP_NORMALIZE (channels == 1 only), SCALE, CLIP, ADD, MULTIPLY */
    float a, b;             /* normalize: mean, inv_std; scale/add/multiply: value, -; clip: lo, hi */
} sl_ew_step;

/* Applies steps in order to every value of x, in place. The reference runs
 * each step over all n values in turn; the optimized version runs all steps
 * over one cache-sized tile before moving on. Each value sees the same
 * operations in the same order either way, so the results are identical. */
typedef void (*sl_ew_chain_fn)(float *x, int64_t n, const sl_ew_step *steps, int nsteps);

/* Copies the crop_h x crop_w window at (off_y, off_x) of an h x w image of
 * pixel_bytes-sized pixels into dst, centred, with zeros around it. */
typedef void (*sl_crop_pad_fn)(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h,
                               int crop_w, int off_y, int off_x);
/* Mirrors an h x w image of pixel_bytes-sized pixels along its width, in place. */
typedef void (*sl_hflip_fn)(void *image, int h, int w, size_t pixel_bytes);
/* Writes one sequence: the `available` tokens of src, then pad up to seq_len. */
typedef void (*sl_pack_fn)(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);

/* log(1 + x) of n f32 values, without libm: one range reduction and a fixed
 * polynomial in correctly rounded float operations (sl__log1p_f32 in
 * kernels/ref/ref.h), so every back end returns the same bits; within 1.54
 * ulp of the exact value (docs/determinism.md). src may equal dst. */
typedef void (*sl_log1p_fn)(const float *src, float *dst, int64_t n);

/* Per-column table sizes of a hash_ids op, prepared once when a pipeline is
 * built, with the 64-bit reciprocal of each size that lets an optimized
 * kernel take the remainder with two multiplies instead of a division
 * (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019). */
typedef struct sl_hash_consts {
    int columns;
    uint32_t size[SL_MAX_CHANNELS];
    uint64_t reciprocal[SL_MAX_CHANNELS];   /* UINT64_MAX / size + 1 (wraps to 0 for size 1) */
} sl_hash_consts;

/* Fills consts for sizes[0..columns), each in [1, 2^31]; errors say which. */
sl_status sl_hash_consts_init(sl_hash_consts *consts, int columns, const int64_t *sizes, sl_err *err);

/* The hashed id of raw id `id` in a table of `size` rows: the high 32 bits
 * of SplitMix64's finalizer of the id, modulo the size. A negative id is
 * missing and stays SL_ID_MISSING. One definition shared by every back end
 * and by the tests. */
#define SL_ID_MISSING ((int64_t)-1)
/* Hashes rows x consts->columns ids (row-major) into dst; src may equal dst. */
typedef void (*sl_hash_ids_fn)(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k);

/* The CSR offsets of one embedding bag per column: ends[r * columns + j] is
 * the number of present (non-negative) ids in column j over rows 0..r, so
 * column j's offsets are 0 followed by ends[.][j] (torch.nn.EmbeddingBag's
 * include_last_offset layout, without its leading 0). */
typedef void (*sl_bag_offsets_fn)(const int64_t *ids, int64_t *ends, int64_t rows, int columns);

/* Dynamic padding, in place: row r of `rows` rows of `stride` i32 tokens
 * moves to offset r * width (width <= stride), keeping its first
 * min(max(length[r], 0), width) tokens and filling the rest of its width
 * with pad. */
typedef void (*sl_pad_rows_fn)(int32_t *tokens, const int32_t *lengths, int64_t rows, int64_t stride,
                               int64_t width, int32_t pad);
/* An attention mask of rows x width u8: 1 below the row's length (clamped
 * to [0, width]), 0 after it. */
typedef void (*sl_length_mask_fn)(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width);

typedef struct sl_kernel_table {
    const char *name;       /* "reference", "cpu-avx2", "cpu-generic", ... */
    sl_normalize_u8_fn normalize_u8;
    sl_normalize_f32_fn normalize_f32;
    sl_ew_chain_fn ew_chain;
    sl_crop_pad_fn crop_pad;
    sl_hflip_fn hflip;
    sl_pack_fn pack;
    sl_log1p_fn log1p;
    sl_hash_ids_fn hash_ids;
    sl_bag_offsets_fn bag_offsets;
    sl_pad_rows_fn pad_rows;
    sl_length_mask_fn length_mask;
} sl_kernel_table;

/* The reference kernels alone. */
const sl_kernel_table *sl_kernels_reference(void);
/* The table behind SL_KERNELS_BEST: the fastest this CPU supports, unless
 * the environment variable SLUICE_KERNELS (read once) or sl_kernels_select
 * chose another. Filled once, thread-safe. */
const sl_kernel_table *sl_kernels_best(void);

/* Every registered table, supported here or not, slowest first:
 * "reference", "cpu-generic", "cpu-avx2", "cpu-avx512". */
int sl_kernel_table_count(void);
const sl_kernel_table *sl_kernel_table_at(int index);
/* By name, case-insensitive, or NULL. */
const sl_kernel_table *sl_kernels_find(const char *name);
/* Whether this CPU can run the table; otherwise says why in reason. */
bool sl_kernel_table_supported(const sl_kernel_table *table, char *reason, size_t size);
/* Puts the named table behind SL_KERNELS_BEST for the rest of the process
 * (`sluice bench --kernels`, the tests that run every table). Refuses an
 * unknown name, listing the tables, and a table this CPU cannot run. */
sl_status sl_kernels_select(const char *name, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
