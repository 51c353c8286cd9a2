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
#include "sluice/philox.h"
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

/* One step of an element-wise chain on f32 data. A per-element random op
 * (random_brightness, random_scale) resolves its draw for the element into
 * an ADD or MULTIPLY step; a per-value one (gaussian_noise) is a step of its
 * own that carries its key and the element's counter: value i = 64 g +
 * 16 k + j of the element takes word k of Philox block (ctr.v[0..2],
 * ctr.v[3] + 16 g + j) (kernels/ref/ref.h, docs/determinism.md). */
typedef struct sl_ew_step {
    sl_op_kind kind;        /* SL_OP_NORMALIZE (channels == 1 only), SCALE, CLIP, ADD, MULTIPLY, GAUSSIAN_NOISE */
    float a, b;             /* normalize: mean, inv_std; scale/add/multiply: value, -; clip: lo, hi;
                             * gaussian_noise: sigma, - */
    sl_philox_key key;      /* gaussian_noise: the op's stream */
    sl_philox_ctr ctr;      /* gaussian_noise: (element, epoch, first draw) */
} sl_ew_step;

/* Applies steps in order to every value of x, in place. The reference runs
 * each step over all n values in turn; the optimized version runs all steps
 * over one cache-sized tile before moving on. Each value sees the same
 * operations in the same order either way, so the results are identical.
 * x[i] is value i of one element for a step that draws per value: a caller
 * with such a step passes one element (from its first value) per call. */
typedef void (*sl_ew_chain_fn)(float *x, int64_t n, const sl_ew_step *steps, int nsteps);

/* Copies the crop_h x crop_w window at (off_y, off_x) of an h x w image of
 * pixel_bytes-sized pixels into dst, centred, with zeros around it. */
typedef void (*sl_crop_pad_fn)(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h,
                               int crop_w, int off_y, int off_x);
/* Mirrors an h x w image of pixel_bytes-sized pixels along its width, in place. */
typedef void (*sl_hflip_fn)(void *image, int h, int w, size_t pixel_bytes);
/* Writes one sequence: the `available` tokens of src, then pad up to seq_len. */
typedef void (*sl_pack_fn)(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);

/* Mean and population variance of n floats, both in double, in one fixed
 * order that every back end follows so that they agree bit for bit: value i
 * goes into partial sum i mod 8 (each partial in index order), and the eight
 * partials are added as ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)).
 * mean is that sum over n; var is the same sum of ((double)x - mean)^2 over
 * n (two passes, so no cancellation). n >= 1. */
typedef void (*sl_moments_fn)(const float *x, int64_t n, double *mean, double *var);
/* Copies the pd x ph x pw patch at (oz, oy, ox) of a d x h x w volume of
 * voxel_bytes-sized voxels into dst, which is the patch (no padding). */
typedef void (*sl_crop3d_fn)(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph,
                             int pw, int oz, int oy, int ox);
/* Mirrors a d x h x w volume in place along the axes set in `axes`:
 * SL_AXIS_D, SL_AXIS_H, SL_AXIS_W. */
#define SL_AXIS_D 1u
#define SL_AXIS_H 2u
#define SL_AXIS_W 4u
typedef void (*sl_flip3d_fn)(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes);
/* out[i * classes + k] = labels[i] == k ? 1 : 0; a label outside [0, classes)
 * gives a row of zeros. */
typedef void (*sl_one_hot_fn)(const int32_t *labels, float *out, int64_t count, int32_t classes);
/* dst[i] = a[i] * wa + b[i] * wb, two products and one sum, each rounded to
 * float; dst may equal a or b. */
typedef void (*sl_blend_fn)(float *dst, const float *a, const float *b, int64_t n, float wa, float wb);
/* Copies rows [y0, y1) x columns [x0, x1) of an h x w image of
 * pixel_bytes-sized pixels from src into the same place of dst. */
typedef void (*sl_paste_box_fn)(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0,
                                int x1);

typedef struct sl_kernel_table {
    const char *name;       /* "reference", "cpu-avx2", "cpu-generic", ... */
    sl_normalize_u8_fn normalize_u8;
    sl_normalize_f32_fn normalize_f32;
    sl_ew_chain_fn ew_chain;
    sl_crop_pad_fn crop_pad;
    sl_hflip_fn hflip;
    sl_pack_fn pack;
    sl_moments_fn moments;
    sl_crop3d_fn crop3d;
    sl_flip3d_fn flip3d;
    sl_one_hot_fn one_hot;
    sl_blend_fn blend;
    sl_paste_box_fn paste_box;
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
