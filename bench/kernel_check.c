/* The kernel checker and benchmark (sluice/bench/kernel_check.h). The cases are
 * data: one row per entry and shape below, read by one harness per entry
 * that says which buffers a call takes (their type, size and the range
 * their values are drawn from), what else it needs (constants, a plan, a
 * key) and how to call the entry. Everything else (allocating, filling,
 * comparing, timing, the bytes a call moves) is shared, driven by those
 * buffer lists. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sluice/bench/kernel_check.h"
#include "sluice/core/compare.h"
#include "sluice/core/philox.h"
#include "sluice/core/timing.h"
#include "sluice/order/shuffle.h"
#include "sluice/pipeline/op_consts.h"

/* --- the buffers of a call ------------------------------------------------------- */

/* Element types of a case's buffers: sluice's dtypes, and the f64 that the
 * moment kernels and affine's gradients write. */
typedef enum kc_type { KC_U8, KC_I32, KC_I64, KC_F32, KC_F64 } kc_type;

static const size_t type_size[] = {[KC_U8] = 1, [KC_I32] = 4, [KC_I64] = 8, [KC_F32] = 4, [KC_F64] = 8};

/* What a call does with a buffer. An output is filled like an input before
 * the call, with the same values for the reference and the table under
 * test, so values a kernel must leave alone are compared too. */
enum { KC_IN = 1, KC_OUT = 2, KC_INOUT = KC_IN | KC_OUT };

typedef struct kc_buffer {
    const char *name;
    int role;
    kc_type type;
    int64_t count;
    /* The range values are drawn from: u8 takes any byte; i32 an integer
     * in [lo, hi]; i64 a 63-bit id, and a missing one (-1) one time in
     * eight when lo < 0; f32 and f64 a value in [lo, hi). */
    double lo, hi;
} kc_buffer;

#define KC_MAX_BUFFERS 4

typedef struct kc_layout {
    int n;
    kc_buffer b[KC_MAX_BUFFERS];
} kc_layout;

static void add(kc_layout *l, const char *name, int role, kc_type type, int64_t count, double lo, double hi)
{
    l->b[l->n++] = (kc_buffer){name, role, type, count, lo, hi};
}

/* The common shape of an element-wise kernel: n values in, n values out. */
static void unary(kc_layout *l, kc_type in, kc_type out, int64_t n, double lo, double hi)
{
    add(l, "src", KC_IN, in, n, lo, hi);
    add(l, "dst", KC_OUT, out, n, -1.0, 1.0);
}

/* --- deterministic draws ------------------------------------------------------- */

/* A stream of Philox words under (seed, KC_STREAM), block after block. */
#define KC_STREAM 0x6b636865636bull /* "kcheck" */

typedef struct kc_rng {
    sl_philox_key key;
    uint64_t block;
    uint32_t words[4];
    int next;
} kc_rng;

static void rng_init(kc_rng *r, uint64_t seed)
{
    *r = (kc_rng){.key = sl_philox_key_for(seed, KC_STREAM), .next = 4};
}

static uint32_t rng_u32(kc_rng *r)
{
    if (r->next == 4) {
        sl_philox_ctr c = sl_philox4x32_10(sl_philox_ctr_for(r->block++, 0, 0), r->key);
        memcpy(r->words, c.v, sizeof r->words);
        r->next = 0;
    }
    return r->words[r->next++];
}

static uint64_t rng_u64(kc_rng *r)
{
    uint64_t high = rng_u32(r);
    return high << 32 | rng_u32(r);
}

/* A value in [lo, hi). */
static double rng_real(kc_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)rng_u32(r) * 0x1p-32);
}

/* An integer in [lo, hi], for ranges of at most 2^32 values. */
static int64_t rng_int(kc_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(((uint64_t)rng_u32(r) * (uint64_t)(hi - lo + 1)) >> 32);
}

static void fill(void *data, const kc_buffer *b, kc_rng *r)
{
    for (int64_t i = 0; i < b->count; i++) {
        switch (b->type) {
        case KC_U8: ((uint8_t *)data)[i] = (uint8_t)rng_u32(r); break;
        case KC_I32: ((int32_t *)data)[i] = (int32_t)rng_int(r, (int64_t)b->lo, (int64_t)b->hi); break;
        case KC_I64: {
            int64_t id = (int64_t)(rng_u64(r) >> 1);
            ((int64_t *)data)[i] = b->lo < 0 && (rng_u32(r) & 7) == 0 ? -1 : id;
            break;
        }
        case KC_F32: ((float *)data)[i] = (float)rng_real(r, b->lo, b->hi); break;
        case KC_F64: ((double *)data)[i] = rng_real(r, b->lo, b->hi); break;
        }
    }
}

/* --- one set of inputs ---------------------------------------------------------- */

/* A call's buffers and whatever else its entry takes, drawn under one seed. */
typedef struct kc_inputs {
    void *buf[KC_MAX_BUFFERS];
    kc_rng rng; /* the draws after the buffers' */
    sl_normalize_consts norm;
    sl_affine_consts affine;
    sl_melspec_consts mel;
    sl_hash_consts hash;
    sl_resize_plan plan;
    void *plan_storage;
    float *scratch;
    sl_dropout_key dropout;
    sl_permutation perm;
    sl_ew_step steps[5];
    int nsteps;
    float w[SL_MAX_CHANNELS]; /* per-channel factors; blend's two weights */
    int64_t a[4];             /* integer draws: offsets, a box corner, k, axes */
} kc_inputs;

static void draw_reals(kc_inputs *in, float *out, int n, double lo, double hi)
{
    for (int i = 0; i < n; i++)
        out[i] = (float)rng_real(&in->rng, lo, hi);
}

/* --- the harness of each entry -------------------------------------------------- */

/* p holds a case's sizes, in the order each harness's comment gives. */
typedef struct kc_harness {
    void (*layout)(const int64_t *p, kc_layout *l);
    /* Builds what the call needs besides its buffers; NULL when nothing. */
    sl_status (*prepare)(kc_inputs *in, const int64_t *p, sl_err *err);
    void (*run)(const sl_kernel_table *t, kc_inputs *in, const int64_t *p);
    /* The bytes a call moves where that is a window or a box of its
     * buffers rather than all of them; NULL otherwise. */
    int64_t (*bytes)(const int64_t *p);
    double tolerance;
} kc_harness;

/* permute_strided: n, count, stride. */
static void layout_permute(const int64_t *p, kc_layout *l)
{
    add(l, "out", KC_OUT, KC_I64, p[1], 0.0, 0.0);
}

static sl_status prepare_permute(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)err;
    sl_permutation_init(&in->perm, (uint64_t)p[0], rng_u64(&in->rng), 0, true);
    in->a[0] = rng_int(&in->rng, 0, p[0] - 1 - (p[1] - 1) * p[2]);
    return SL_OK;
}

static void run_permute(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->permute_strided(&in->perm, (uint64_t)in->a[0], (uint64_t)p[2], p[1], in->buf[0]);
}

/* normalize_u8, normalize_f32: pixels, channels. */
static void layout_normalize_u8(const int64_t *p, kc_layout *l)
{
    unary(l, KC_U8, KC_F32, p[0] * p[1], 0.0, 0.0);
}

static void layout_normalize_f32(const int64_t *p, kc_layout *l)
{
    unary(l, KC_F32, KC_F32, p[0] * p[1], -10.0, 300.0);
}

static sl_status prepare_normalize(kc_inputs *in, const int64_t *p, sl_err *err)
{
    float mean[SL_MAX_CHANNELS], std[SL_MAX_CHANNELS];
    draw_reals(in, mean, (int)p[1], 0.0, 255.0);
    draw_reals(in, std, (int)p[1], 0.5, 100.0);
    return sl_normalize_consts_init(&in->norm, (int)p[1], mean, std, err);
}

static void run_normalize_u8(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->normalize_u8(in->buf[0], in->buf[1], p[0], &in->norm);
}

static void run_normalize_f32(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->normalize_f32(in->buf[0], in->buf[1], p[0], &in->norm);
}

/* ew_chain: n, stochastic. Both chains contract their values, so calling
 * one over and over in place (as the timing does) keeps them finite. */
static void layout_ew_chain(const int64_t *p, kc_layout *l)
{
    add(l, "x", KC_INOUT, KC_F32, p[0], -1.0, 2.0);
}

static sl_status prepare_ew_chain(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)err;
    if (!p[1]) {
        /* PC-1's cycle of five stages (corpus/scenarios/pc1.c). */
        const sl_ew_step cycle[] = {
            {.kind = SL_EW_NORMALIZE, .a = 0.09f, .b = 1.0f / 1.8f},
            {.kind = SL_EW_MULTIPLY, .a = 1.9f},
            {.kind = SL_EW_CLIP, .a = 0.0f, .b = 1.0f},
            {.kind = SL_EW_ADD, .a = 0.1f},
            {.kind = SL_EW_MULTIPLY, .a = 0.9f},
        };
        memcpy(in->steps, cycle, sizeof cycle);
        in->nsteps = 5;
        return SL_OK;
    }
    /* AUG-2's stochastic chain: normalize, per-value noise, a scale. The
     * draws are sequenced one per statement: the order in which a call's
     * arguments are evaluated is the compiler's choice, and inputs must be
     * the same with every compiler. */
    uint64_t key = rng_u64(&in->rng), element = rng_u32(&in->rng);
    uint32_t epoch = rng_u32(&in->rng);
    in->steps[0] = (sl_ew_step){.kind = SL_EW_NORMALIZE, .a = 0.5f, .b = 0.5f};
    in->steps[1] = (sl_ew_step){.kind = SL_EW_GAUSSIAN_NOISE,
                                .a = 0.1f,
                                .key = sl_philox_key_for(key, 1),
                                .ctr = sl_philox_ctr_for(element, epoch, 0)};
    in->steps[2] = (sl_ew_step){.kind = SL_EW_MULTIPLY, .a = (float)rng_real(&in->rng, 0.8, 1.2)};
    in->nsteps = 3;
    return SL_OK;
}

static void run_ew_chain(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->ew_chain(in->buf[0], p[0], in->steps, in->nsteps);
}

/* crop_pad: h, w, pixel bytes, crop h, crop w. */
static void layout_crop_pad(const int64_t *p, kc_layout *l)
{
    add(l, "src", KC_IN, KC_U8, p[0] * p[1] * p[2], 0.0, 0.0);
    add(l, "dst", KC_OUT, KC_U8, p[0] * p[1] * p[2], 0.0, 0.0);
}

/* Draws the corner of a p[3] x p[4] window of a p[0] x p[1] image. */
static sl_status prepare_window(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)err;
    in->a[0] = rng_int(&in->rng, 0, p[0] - p[3]);
    in->a[1] = rng_int(&in->rng, 0, p[1] - p[4]);
    return SL_OK;
}

static void run_crop_pad(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->crop_pad(in->buf[0], in->buf[1], (int)p[0], (int)p[1], (size_t)p[2], (int)p[3], (int)p[4], (int)in->a[0],
                (int)in->a[1]);
}

/* The window read, then the whole image written. */
static int64_t bytes_crop_pad(const int64_t *p)
{
    return (p[3] * p[4] + p[0] * p[1]) * p[2];
}

/* hflip: h, w, pixel bytes. */
static void layout_image_in_place(const int64_t *p, kc_layout *l)
{
    add(l, "image", KC_INOUT, KC_U8, p[0] * p[1] * p[2], 0.0, 0.0);
}

static void run_hflip(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->hflip(in->buf[0], (int)p[0], (int)p[1], (size_t)p[2]);
}

/* pack: available tokens, sequence length. */
static void layout_pack(const int64_t *p, kc_layout *l)
{
    add(l, "src", KC_IN, KC_I32, p[0], 0, 31999);
    add(l, "dst", KC_OUT, KC_I32, p[1], 0, 31999);
}

static void run_pack(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->pack(in->buf[1], in->buf[0], p[0], p[1], -1);
}

/* moments: n. */
static void layout_moments(const int64_t *p, kc_layout *l)
{
    add(l, "x", KC_IN, KC_F32, p[0], 990.0, 1010.0);
    add(l, "mean_var", KC_OUT, KC_F64, 2, -1.0, 1.0);
}

static void run_moments(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    double *out = in->buf[1];
    t->moments(in->buf[0], p[0], &out[0], &out[1]);
}

/* channel_moments: pixels, channels. */
static void layout_channel_moments(const int64_t *p, kc_layout *l)
{
    add(l, "x", KC_IN, KC_F32, p[0] * p[1], -3.0, 5.0);
    add(l, "mean_m2", KC_OUT, KC_F64, 2 * p[1], -1.0, 1.0);
}

static void run_channel_moments(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    double *out = in->buf[1];
    t->channel_moments(in->buf[0], p[0], (int)p[1], out, out + p[1]);
}

/* crop3d: d, h, w, voxel bytes, patch d, h, w. */
static void layout_crop3d(const int64_t *p, kc_layout *l)
{
    add(l, "src", KC_IN, KC_U8, p[0] * p[1] * p[2] * p[3], 0.0, 0.0);
    add(l, "dst", KC_OUT, KC_U8, p[4] * p[5] * p[6] * p[3], 0.0, 0.0);
}

static sl_status prepare_crop3d(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)err;
    for (int axis = 0; axis < 3; axis++)
        in->a[axis] = rng_int(&in->rng, 0, p[axis] - p[4 + axis]);
    return SL_OK;
}

static void run_crop3d(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->crop3d(in->buf[0], in->buf[1], (int)p[0], (int)p[1], (int)p[2], (size_t)p[3], (int)p[4], (int)p[5], (int)p[6],
              (int)in->a[0], (int)in->a[1], (int)in->a[2]);
}

/* The patch read, then written. */
static int64_t bytes_crop3d(const int64_t *p)
{
    return 2 * p[4] * p[5] * p[6] * p[3];
}

/* flip3d: d, h, w, voxel bytes. */
static void layout_flip3d(const int64_t *p, kc_layout *l)
{
    add(l, "volume", KC_INOUT, KC_U8, p[0] * p[1] * p[2] * p[3], 0.0, 0.0);
}

/* A draw in 1..7 for a harness whose call takes one small integer:
 * flip3d's axes (a nonempty set), and rot90's quarter turns (its low two
 * bits, so every k in 0..3 comes up). */
static sl_status prepare_axes(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)p;
    (void)err;
    in->a[0] = rng_int(&in->rng, 1, 7);
    return SL_OK;
}

static void run_flip3d(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->flip3d(in->buf[0], (int)p[0], (int)p[1], (int)p[2], (size_t)p[3], (unsigned)in->a[0]);
}

/* one_hot: labels, classes; a label may lie outside [0, classes). */
static void layout_one_hot(const int64_t *p, kc_layout *l)
{
    add(l, "labels", KC_IN, KC_I32, p[0], -1, (double)p[1]);
    add(l, "out", KC_OUT, KC_F32, p[0] * p[1], -1.0, 1.0);
}

static void run_one_hot(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->one_hot(in->buf[0], in->buf[1], p[0], (int32_t)p[1]);
}

/* blend: n; the weights are lam and 1 - lam, as MixUp's. */
static void layout_blend(const int64_t *p, kc_layout *l)
{
    add(l, "a", KC_IN, KC_F32, p[0], -3.0, 3.0);
    unary(l, KC_F32, KC_F32, p[0], -3.0, 3.0);
}

static sl_status prepare_blend(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)p;
    (void)err;
    in->w[0] = (float)rng_real(&in->rng, 0.0, 1.0);
    in->w[1] = 1.0f - in->w[0];
    return SL_OK;
}

static void run_blend(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->blend(in->buf[2], in->buf[0], in->buf[1], p[0], in->w[0], in->w[1]);
}

/* paste_box: h, w, pixel bytes, box h, box w. */
static void layout_paste_box(const int64_t *p, kc_layout *l)
{
    add(l, "src", KC_IN, KC_U8, p[0] * p[1] * p[2], 0.0, 0.0);
    add(l, "dst", KC_INOUT, KC_U8, p[0] * p[1] * p[2], 0.0, 0.0);
}

static void run_paste_box(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    int y0 = (int)in->a[0], x0 = (int)in->a[1];
    t->paste_box(in->buf[1], in->buf[0], (int)p[0], (int)p[1], (size_t)p[2], y0, y0 + (int)p[3], x0, x0 + (int)p[4]);
}

/* The box read, then written. */
static int64_t bytes_paste_box(const int64_t *p)
{
    return 2 * p[3] * p[4] * p[2];
}

/* resize_u8, resize_f32: in h, in w, out h, out w, channels. */
static void layout_resize(const int64_t *p, kc_layout *l, kc_type in)
{
    add(l, "src", KC_IN, in, p[0] * p[1] * p[4], -3.0, 300.0);
    add(l, "dst", KC_OUT, KC_F32, p[2] * p[3] * p[4], -1.0, 1.0);
}

static void layout_resize_u8(const int64_t *p, kc_layout *l)
{
    layout_resize(p, l, KC_U8);
}

static void layout_resize_f32(const int64_t *p, kc_layout *l)
{
    layout_resize(p, l, KC_F32);
}

static sl_status alloc_scratch(kc_inputs *in, size_t values, sl_err *err)
{
    in->scratch = malloc(values * sizeof(float));
    return in->scratch ? SL_OK : sl_fail(err, SL_ENOMEM, "cannot allocate %zu floats of kernel scratch", values);
}

static sl_status prepare_resize(kc_inputs *in, const int64_t *p, sl_err *err)
{
    size_t bytes = (sl_resize_plan_bytes((int)p[2], (int)p[3], (int)p[4]) + SL_ALIGN - 1) / SL_ALIGN * SL_ALIGN;
    in->plan_storage = aligned_alloc(SL_ALIGN, bytes);
    if (!in->plan_storage)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a resize plan of %zu bytes", bytes);
    sl_resize_plan_init(&in->plan, in->plan_storage, (int)p[0], (int)p[1], (int)p[2], (int)p[3], (int)p[4]);
    return alloc_scratch(in, sl_resize_scratch_values(&in->plan), err);
}

static void run_resize_u8(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->resize_u8(in->buf[0], p[1] * p[4], in->buf[1], &in->plan, in->scratch);
}

static void run_resize_f32(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->resize_f32(in->buf[0], p[1] * p[4], in->buf[1], &in->plan, in->scratch);
}

/* log_mel: samples, sample rate, frame, hop, n_fft, mels. */
static void layout_log_mel(const int64_t *p, kc_layout *l)
{
    add(l, "wave", KC_IN, KC_F32, p[0], -1.0, 1.0);
    add(l, "out", KC_OUT, KC_F32, (1 + (p[0] - p[2]) / p[3]) * p[5], -1.0, 1.0);
}

static sl_status prepare_log_mel(kc_inputs *in, const int64_t *p, sl_err *err)
{
    sl_status st =
        sl_melspec_consts_init(&in->mel, (int)p[0], (int)p[1], (int)p[2], (int)p[3], (int)p[4], (int)p[5], err);
    return st ? st : alloc_scratch(in, sl_melspec_scratch_values(&in->mel), err);
}

static void run_log_mel(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    (void)p;
    t->log_mel(in->buf[0], in->buf[1], &in->mel, in->scratch);
}

/* trig_rounds: n, rounds. */
static void layout_trig_rounds(const int64_t *p, kc_layout *l)
{
    unary(l, KC_F32, KC_F32, p[0], -4.0, 4.0);
}

static void run_trig_rounds(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->trig_rounds(in->buf[0], in->buf[1], p[0], (int)p[1]);
}

/* log1p: n, over TAB-2's range of heavy-tailed counts and some values in (-1, 0). */
static void layout_log1p(const int64_t *p, kc_layout *l)
{
    unary(l, KC_F32, KC_F32, p[0], -0.99, 1e4);
}

static void run_log1p(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->log1p(in->buf[0], in->buf[1], p[0]);
}

/* hash_ids: rows, columns; some ids missing. */
static void layout_hash_ids(const int64_t *p, kc_layout *l)
{
    add(l, "src", KC_IN, KC_I64, p[0] * p[1], -1.0, 0.0);
    add(l, "dst", KC_OUT, KC_I64, p[0] * p[1], 0.0, 0.0);
}

/* Table sizes from 1 or 2 rows up to 2^31, every order of magnitude
 * between, so the reciprocal's edge cases (size 1 wraps it to 0) come up. */
static sl_status prepare_hash_ids(kc_inputs *in, const int64_t *p, sl_err *err)
{
    int64_t sizes[SL_MAX_CHANNELS];
    for (int j = 0; j < p[1]; j++)
        sizes[j] = 1 + rng_int(&in->rng, 0, ((int64_t)1 << (1 + j * 11 % 31)) - 1);
    return sl_hash_consts_init(&in->hash, (int)p[1], sizes, err);
}

static void run_hash_ids(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->hash_ids(in->buf[0], in->buf[1], p[0], &in->hash);
}

/* bag_offsets: rows, columns. */
static void layout_bag_offsets(const int64_t *p, kc_layout *l)
{
    add(l, "ids", KC_IN, KC_I64, p[0] * p[1], -1.0, 0.0);
    add(l, "ends", KC_OUT, KC_I64, p[0] * p[1], 0.0, 0.0);
}

static void run_bag_offsets(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->bag_offsets(in->buf[0], in->buf[1], p[0], (int)p[1]);
}

/* pad_rows: rows, stride, width; lengths from below 0 to past the width. */
static void layout_pad_rows(const int64_t *p, kc_layout *l)
{
    add(l, "tokens", KC_INOUT, KC_I32, p[0] * p[1], 0, 31999);
    add(l, "lengths", KC_IN, KC_I32, p[0], -10, (double)(p[2] + 10));
}

static void run_pad_rows(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->pad_rows(in->buf[0], in->buf[1], p[0], p[1], p[2], -7);
}

/* The rows' lengths, then each row's width read and written. */
static int64_t bytes_pad_rows(const int64_t *p)
{
    return p[0] * (int64_t)sizeof(int32_t) * (1 + 2 * p[2]);
}

/* length_mask: rows, width. */
static void layout_length_mask(const int64_t *p, kc_layout *l)
{
    add(l, "lengths", KC_IN, KC_I32, p[0], -10, (double)(p[1] + 10));
    add(l, "mask", KC_OUT, KC_U8, p[0] * p[1], 0.0, 0.0);
}

static void run_length_mask(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->length_mask(in->buf[1], in->buf[0], p[0], p[1]);
}

/* affine_f32, mul_channels: pixels, channels. */
static void layout_channels(const int64_t *p, kc_layout *l)
{
    unary(l, KC_F32, KC_F32, p[0] * p[1], -5.0, 5.0);
}

static sl_status prepare_affine(kc_inputs *in, const int64_t *p, sl_err *err)
{
    float scale[SL_MAX_CHANNELS], bias[SL_MAX_CHANNELS];
    draw_reals(in, scale, (int)p[1], -2.0, 2.0);
    draw_reals(in, bias, (int)p[1], -1.0, 1.0);
    return sl_affine_consts_init(&in->affine, (int)p[1], scale, bias, err);
}

static void run_affine(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->affine_f32(in->buf[0], in->buf[1], p[0], &in->affine);
}

static sl_status prepare_factors(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)err;
    draw_reals(in, in->w, (int)p[1], -2.0, 2.0);
    return SL_OK;
}

static void run_mul_channels(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->mul_channels(in->buf[0], in->buf[1], p[0], (int)p[1], in->w);
}

/* affine_grads: pixels, channels; the gradients add to what is there. */
static void layout_affine_grads(const int64_t *p, kc_layout *l)
{
    add(l, "x", KC_IN, KC_F32, p[0] * p[1], -5.0, 5.0);
    add(l, "dy", KC_IN, KC_F32, p[0] * p[1], -1.0, 1.0);
    add(l, "dscale_dbias", KC_INOUT, KC_F64, 2 * p[1], -1.0, 1.0);
}

static void run_affine_grads(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    double *grads = in->buf[2];
    t->affine_grads(in->buf[0], in->buf[1], p[0], (int)p[1], grads, grads + p[1]);
}

/* dropout: n, at PC-5's p = 0.1 under a drawn key, element and epoch. */
static void layout_dropout(const int64_t *p, kc_layout *l)
{
    unary(l, KC_F32, KC_F32, p[0], -4.0, 4.0);
}

static sl_status prepare_dropout(kc_inputs *in, const int64_t *p, sl_err *err)
{
    (void)p;
    (void)err;
    /* One draw per statement, as in prepare_ew_chain. */
    uint64_t key = rng_u64(&in->rng), element = rng_u32(&in->rng);
    uint32_t epoch = rng_u32(&in->rng) & 7;
    in->dropout = (sl_dropout_key){.key = sl_philox_key_for(key, 1),
                                   .element = element,
                                   .epoch = epoch,
                                   .threshold = 429496730u, /* ceil(0.1 x 2^32) */
                                   .scale = 1.0f / 0.9f};
    return SL_OK;
}

static void run_dropout(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->dropout(in->buf[0], in->buf[1], p[0], &in->dropout);
}

/* rot90: side, pixel bytes; k quarter turns from prepare_axes. */
static void layout_rot90(const int64_t *p, kc_layout *l)
{
    add(l, "src", KC_IN, KC_U8, p[0] * p[0] * p[1], 0.0, 0.0);
    add(l, "dst", KC_OUT, KC_U8, p[0] * p[0] * p[1], 0.0, 0.0);
}

static void run_rot90(const sl_kernel_table *t, kc_inputs *in, const int64_t *p)
{
    t->rot90(in->buf[0], in->buf[1], (int)p[0], (size_t)p[1], (int)(in->a[0] & 3));
}

/* --- the registry ---------------------------------------------------------------- */

/* MM-2's stated tolerance for the BLAS log-mel, in output units
 * (sluice/kernels/kernels.h; test_kernel_check holds it equal to the scenario's). */
#define KC_LOG_MEL_TOLERANCE SL_LOG_MEL_TOLERANCE

static const kc_harness harnesses[SL_KERNEL_ENTRY_COUNT] = {
    [SL_ENTRY_permute_strided] = {layout_permute, prepare_permute, run_permute, NULL, 0.0},
    [SL_ENTRY_normalize_u8] = {layout_normalize_u8, prepare_normalize, run_normalize_u8, NULL, 0.0},
    [SL_ENTRY_normalize_f32] = {layout_normalize_f32, prepare_normalize, run_normalize_f32, NULL, 0.0},
    [SL_ENTRY_ew_chain] = {layout_ew_chain, prepare_ew_chain, run_ew_chain, NULL, 0.0},
    [SL_ENTRY_crop_pad] = {layout_crop_pad, prepare_window, run_crop_pad, bytes_crop_pad, 0.0},
    [SL_ENTRY_hflip] = {layout_image_in_place, NULL, run_hflip, NULL, 0.0},
    [SL_ENTRY_pack] = {layout_pack, NULL, run_pack, NULL, 0.0},
    [SL_ENTRY_moments] = {layout_moments, NULL, run_moments, NULL, 0.0},
    [SL_ENTRY_channel_moments] = {layout_channel_moments, NULL, run_channel_moments, NULL, 0.0},
    [SL_ENTRY_crop3d] = {layout_crop3d, prepare_crop3d, run_crop3d, bytes_crop3d, 0.0},
    [SL_ENTRY_flip3d] = {layout_flip3d, prepare_axes, run_flip3d, NULL, 0.0},
    [SL_ENTRY_one_hot] = {layout_one_hot, NULL, run_one_hot, NULL, 0.0},
    [SL_ENTRY_blend] = {layout_blend, prepare_blend, run_blend, NULL, 0.0},
    [SL_ENTRY_paste_box] = {layout_paste_box, prepare_window, run_paste_box, bytes_paste_box, 0.0},
    [SL_ENTRY_resize_u8] = {layout_resize_u8, prepare_resize, run_resize_u8, NULL, 0.0},
    [SL_ENTRY_resize_f32] = {layout_resize_f32, prepare_resize, run_resize_f32, NULL, 0.0},
    [SL_ENTRY_log_mel] = {layout_log_mel, prepare_log_mel, run_log_mel, NULL, KC_LOG_MEL_TOLERANCE},
    [SL_ENTRY_trig_rounds] = {layout_trig_rounds, NULL, run_trig_rounds, NULL, 0.0},
    [SL_ENTRY_log1p] = {layout_log1p, NULL, run_log1p, NULL, 0.0},
    [SL_ENTRY_hash_ids] = {layout_hash_ids, prepare_hash_ids, run_hash_ids, NULL, 0.0},
    [SL_ENTRY_bag_offsets] = {layout_bag_offsets, NULL, run_bag_offsets, NULL, 0.0},
    [SL_ENTRY_pad_rows] = {layout_pad_rows, NULL, run_pad_rows, bytes_pad_rows, 0.0},
    [SL_ENTRY_length_mask] = {layout_length_mask, NULL, run_length_mask, NULL, 0.0},
    [SL_ENTRY_affine_f32] = {layout_channels, prepare_affine, run_affine, NULL, 0.0},
    [SL_ENTRY_dropout] = {layout_dropout, prepare_dropout, run_dropout, NULL, 0.0},
    [SL_ENTRY_mul_channels] = {layout_channels, prepare_factors, run_mul_channels, NULL, 0.0},
    [SL_ENTRY_affine_grads] = {layout_affine_grads, NULL, run_affine_grads, NULL, 0.0},
    [SL_ENTRY_rot90] = {layout_rot90, prepare_axes, run_rot90, NULL, 0.0},
};

typedef struct kc_spec {
    int entry;
    const char *shape;
    const char *origin;
    int64_t p[7];
} kc_spec;

/* Every entry at the element sizes the scenarios run it on, then at sizes
 * that are no multiple of a vector width (origin "odd"). */
static const kc_spec specs[] = {
    {SL_ENTRY_permute_strided, "64 of 10000", "CV-1", {10000, 64, 1}},
    {SL_ENTRY_permute_strided, "64 of 2000 by 4", "DIST-1", {2000, 64, 4}},
    {SL_ENTRY_permute_strided, "17 of 1001", "odd", {1001, 17, 1}},
    {SL_ENTRY_permute_strided, "1 of 7", "odd", {7, 1, 1}},
    {SL_ENTRY_normalize_u8, "32x32x3", "CV-1", {1024, 3}},
    {SL_ENTRY_normalize_u8, "64x64x3", "IO-1", {4096, 3}},
    {SL_ENTRY_normalize_u8, "17x3", "odd", {17, 3}},
    {SL_ENTRY_normalize_u8, "1x7", "odd", {1, 7}},
    {SL_ENTRY_normalize_f32, "100", "TAB-1", {1, 100}},
    {SL_ENTRY_normalize_f32, "64x64", "AUG-3", {4096, 1}},
    {SL_ENTRY_normalize_f32, "64x64x3", "IO-2", {4096, 3}},
    {SL_ENTRY_normalize_f32, "333x7", "odd", {333, 7}},
    {SL_ENTRY_ew_chain, "64x64", "PC-1", {4096, 0}},
    {SL_ENTRY_ew_chain, "64x64x3 noise", "AUG-2", {12288, 1}},
    {SL_ENTRY_ew_chain, "1001 noise", "odd", {1001, 1}},
    {SL_ENTRY_ew_chain, "1", "odd", {1, 0}},
    {SL_ENTRY_crop_pad, "64x64x3 u8", "PR-2", {64, 64, 3, 56, 56}},
    {SL_ENTRY_crop_pad, "32x32x3 f32", "XFMR-1", {32, 32, 12, 28, 28}},
    {SL_ENTRY_crop_pad, "17x13x5B", "odd", {17, 13, 5, 15, 11}},
    {SL_ENTRY_hflip, "64x64x3 u8", "PR-2", {64, 64, 3}},
    {SL_ENTRY_hflip, "17x13x5B", "odd", {17, 13, 5}},
    {SL_ENTRY_hflip, "1x1x3", "odd", {1, 1, 3}},
    {SL_ENTRY_pack, "128", "NLP-1", {128, 128}},
    {SL_ENTRY_pack, "96 of 128", "NLP-1", {96, 128}},
    {SL_ENTRY_pack, "17 of 33", "odd", {17, 33}},
    {SL_ENTRY_moments, "32x32x32", "CV-2", {32768}},
    {SL_ENTRY_moments, "1001", "odd", {1001}},
    {SL_ENTRY_moments, "1", "odd", {1}},
    {SL_ENTRY_channel_moments, "64x64x3", "NNX-1", {4096, 3}},
    {SL_ENTRY_channel_moments, "17x7", "odd", {17, 7}},
    {SL_ENTRY_crop3d, "32^3 to 24^3 f32", "CV-2", {32, 32, 32, 4, 24, 24, 24}},
    {SL_ENTRY_crop3d, "13x11x9 to 5x7x9", "odd", {13, 11, 9, 4, 5, 7, 9}},
    {SL_ENTRY_flip3d, "24^3 f32", "CV-2", {24, 24, 24, 4}},
    {SL_ENTRY_flip3d, "3x5x7x5B", "odd", {3, 5, 7, 5}},
    {SL_ENTRY_one_hot, "128x10", "CV-3", {128, 10}},
    {SL_ENTRY_one_hot, "17x1001", "odd", {17, 1001}},
    {SL_ENTRY_blend, "64x64x3", "CV-3", {12288}},
    {SL_ENTRY_blend, "1001", "odd", {1001}},
    {SL_ENTRY_paste_box, "64x64x3 f32", "CV-3", {64, 64, 12, 32, 40}},
    {SL_ENTRY_paste_box, "17x13x5B", "odd", {17, 13, 5, 9, 7}},
    {SL_ENTRY_resize_u8, "128 to 64 x3", "CV-4", {128, 128, 64, 64, 3}},
    {SL_ENTRY_resize_u8, "37x53 to 61x19 x3", "odd", {37, 53, 61, 19, 3}},
    {SL_ENTRY_resize_f32, "64 to 128 x3", "CV-4", {64, 64, 128, 128, 3}},
    {SL_ENTRY_resize_f32, "37x53 to 61x19 x1", "odd", {37, 53, 61, 19, 1}},
    {SL_ENTRY_log_mel, "16000", "MM-2", {16000, 16000, 400, 160, 400, 80}},
    {SL_ENTRY_log_mel, "4001", "odd", {4001, 16000, 400, 160, 400, 80}},
    {SL_ENTRY_trig_rounds, "64x64x3 x8", "IO-4", {12288, 8}},
    {SL_ENTRY_trig_rounds, "1001 x3", "odd", {1001, 3}},
    {SL_ENTRY_log1p, "13", "TAB-2", {13}},
    {SL_ENTRY_log1p, "1024x13", "TAB-2", {13312}},
    {SL_ENTRY_log1p, "1001", "odd", {1001}},
    {SL_ENTRY_hash_ids, "26", "TAB-2", {1, 26}},
    {SL_ENTRY_hash_ids, "1024x26", "TAB-2", {1024, 26}},
    {SL_ENTRY_hash_ids, "17x3", "odd", {17, 3}},
    {SL_ENTRY_bag_offsets, "1024x26", "TAB-2", {1024, 26}},
    {SL_ENTRY_bag_offsets, "17x3", "odd", {17, 3}},
    {SL_ENTRY_pad_rows, "32x512 to 384", "NLP-2", {32, 512, 384}},
    {SL_ENTRY_pad_rows, "17x130 to 129", "odd", {17, 130, 129}},
    {SL_ENTRY_length_mask, "32x384", "NLP-2", {32, 384}},
    {SL_ENTRY_length_mask, "17x129", "odd", {17, 129}},
    {SL_ENTRY_affine_f32, "32x32x3", "PC-5", {1024, 3}},
    {SL_ENTRY_affine_f32, "17x7", "odd", {17, 7}},
    {SL_ENTRY_dropout, "32x32x3", "PC-5", {3072}},
    {SL_ENTRY_dropout, "1001", "odd", {1001}},
    {SL_ENTRY_mul_channels, "32x32x3", "PC-5", {1024, 3}},
    {SL_ENTRY_mul_channels, "17x7", "odd", {17, 7}},
    {SL_ENTRY_affine_grads, "32x32x3", "PC-5", {1024, 3}},
    {SL_ENTRY_affine_grads, "17x7", "odd", {17, 7}},
    {SL_ENTRY_rot90, "32x32x3 f32", "XFMR-1", {32, 12}},
    {SL_ENTRY_rot90, "17x17x5B", "odd", {17, 5}},
};

#define NCASES ((int)(sizeof specs / sizeof specs[0]))

static sl_kernel_case cases[NCASES];
static pthread_once_t cases_once = PTHREAD_ONCE_INIT;

/* A buffer read and written in place counts twice. */
static int64_t layout_bytes(const kc_layout *l)
{
    int64_t bytes = 0;
    for (int i = 0; i < l->n; i++)
        bytes += l->b[i].count * (int64_t)type_size[l->b[i].type] * (l->b[i].role == KC_INOUT ? 2 : 1);
    return bytes;
}

static void build_cases(void)
{
    for (int i = 0; i < NCASES; i++) {
        const kc_spec *s = &specs[i];
        const kc_harness *h = &harnesses[s->entry];
        kc_layout l = {0};
        h->layout(s->p, &l);
        cases[i] = (sl_kernel_case){.entry = sl_kernel_entry_name(s->entry),
                                    .entry_id = (sl_kernel_entry)s->entry,
                                    .shape = s->shape,
                                    .origin = s->origin,
                                    .bytes = h->bytes ? h->bytes(s->p) : layout_bytes(&l),
                                    .tolerance = h->tolerance,
                                    .index = i};
    }
}

int sl_kernel_case_count(void)
{
    return NCASES;
}

const sl_kernel_case *sl_kernel_case_at(int index)
{
    pthread_once(&cases_once, build_cases);
    return index >= 0 && index < NCASES ? &cases[index] : NULL;
}

const sl_kernel_case *sl_kernel_case_find(const char *entry, const char *shape)
{
    for (int i = 0; i < NCASES; i++) {
        const sl_kernel_case *c = sl_kernel_case_at(i);
        if (strcasecmp(c->entry, entry) == 0 && (!shape || strcasecmp(c->shape, shape) == 0))
            return c;
    }
    return NULL;
}

/* --- running a case ------------------------------------------------------------- */

static void inputs_release(kc_inputs *in, const kc_layout *l)
{
    for (int i = 0; i < l->n; i++)
        free(in->buf[i]);
    sl_normalize_consts_release(&in->norm);
    sl_affine_consts_release(&in->affine);
    sl_melspec_consts_release(&in->mel);
    free(in->plan_storage);
    free(in->scratch);
    memset(in, 0, sizeof *in);
}

/* Allocates and fills the buffers under seed, then draws or builds the
 * rest. Two calls with the same seed give the same inputs. */
static sl_status inputs_make(kc_inputs *in, const kc_harness *h, const kc_spec *s, const kc_layout *l, uint64_t seed,
                             sl_err *err)
{
    memset(in, 0, sizeof *in);
    rng_init(&in->rng, seed);
    sl_status st = SL_OK;
    for (int i = 0; i < l->n && st == SL_OK; i++) {
        size_t bytes = (size_t)l->b[i].count * type_size[l->b[i].type];
        in->buf[i] = aligned_alloc(SL_ALIGN, (bytes + SL_ALIGN - 1) / SL_ALIGN * SL_ALIGN);
        if (!in->buf[i])
            st = sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes for %s's %s", bytes, sl_kernel_entry_name(s->entry),
                         l->b[i].name);
        else
            fill(in->buf[i], &l->b[i], &in->rng);
    }
    if (st == SL_OK && h->prepare)
        st = h->prepare(in, s->p, err);
    if (st)
        inputs_release(in, l);
    return st;
}

/* Whether the case and table can run here: a table's entry runs only on a
 * CPU with the table's features. Also resolves the case's spec. */
static sl_status usable(const sl_kernel_case *c, const sl_kernel_table *table, const kc_spec **spec, kc_layout *l,
                        sl_err *err)
{
    if (!c || c->index < 0 || c->index >= NCASES || !table)
        return sl_fail(err, SL_EINVAL, "kernel check: a case and a kernel table are needed");
    char reason[128] = "";
    if (!sl_kernel_table_supported(table, reason, sizeof reason))
        return sl_fail(err, SL_EUNSUPPORTED, "kernel table %s cannot run here: %s", table->name, reason);
    *spec = &specs[c->index];
    *l = (kc_layout){0};
    harnesses[(*spec)->entry].layout((*spec)->p, l);
    return SL_OK;
}

static void format_value(char *buf, size_t size, kc_type type, const void *data, int64_t i)
{
    switch (type) {
    case KC_U8: snprintf(buf, size, "%u", ((const uint8_t *)data)[i]); break;
    case KC_I32: snprintf(buf, size, "%" PRId32, ((const int32_t *)data)[i]); break;
    case KC_I64: snprintf(buf, size, "%" PRId64, ((const int64_t *)data)[i]); break;
    case KC_F32: {
        float v = ((const float *)data)[i];
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        snprintf(buf, size, "%.9g (0x%08" PRIx32 ")", (double)v, bits);
        break;
    }
    case KC_F64: snprintf(buf, size, "%.17g", ((const double *)data)[i]); break;
    }
}

/* The first value of an output that differs, or count when none does: f32
 * within the case's tolerance where it has one, every other value bit for
 * bit. */
static int64_t first_difference(const sl_kernel_case *c, const kc_buffer *b, const void *want, const void *got)
{
    if (b->type == KC_F32 && c->tolerance > 0.0) {
        size_t first;
        return sl_values_match(SL_F32, want, got, (size_t)b->count, c->tolerance, NULL, &first) ? b->count
                                                                                                : (int64_t)first;
    }
    size_t size = type_size[b->type];
    if (memcmp(want, got, (size_t)b->count * size) == 0)
        return b->count;
    int64_t i = 0;
    while (memcmp((const char *)want + (size_t)i * size, (const char *)got + (size_t)i * size, size) == 0)
        i++;
    return i;
}

sl_status sl_kernel_case_check(const sl_kernel_case *c, const sl_kernel_table *table, char *diff, size_t size,
                               sl_err *err)
{
    if (diff && size)
        diff[0] = '\0';
    const kc_spec *s = NULL;
    kc_layout l = {0};
    sl_status st = usable(c, table, &s, &l, err);
    const kc_harness *h = st ? NULL : &harnesses[s->entry];
    for (uint64_t seed = 1; st == SL_OK && seed <= SL_KERNEL_CHECK_SEEDS; seed++) {
        kc_inputs want, got;
        if ((st = inputs_make(&want, h, s, &l, seed, err)) != SL_OK)
            break;
        if ((st = inputs_make(&got, h, s, &l, seed, err)) != SL_OK) {
            inputs_release(&want, &l);
            break;
        }
        h->run(sl_kernels_reference(), &want, s->p);
        h->run(table, &got, s->p);
        for (int b = 0; b < l.n && st == SL_OK; b++) {
            const kc_buffer *buf = &l.b[b];
            int64_t i = (buf->role & KC_OUT) ? first_difference(c, buf, want.buf[b], got.buf[b]) : buf->count;
            if (i == buf->count)
                continue;
            char mine[64], theirs[64], text[320];
            format_value(mine, sizeof mine, buf->type, got.buf[b], i);
            format_value(theirs, sizeof theirs, buf->type, want.buf[b], i);
            snprintf(text, sizeof text, "seed %" PRIu64 ", %s index %" PRId64 " of %" PRId64 ": %s %s, reference %s%s",
                     seed, buf->name, i, buf->count, table->name, mine, theirs,
                     c->tolerance > 0.0 ? " (beyond the tolerance)" : "");
            if (diff && size)
                snprintf(diff, size, "%s", text);
            st = sl_fail(err, SL_EMISMATCH, "%s %s on %s differs from the reference: %s", c->entry, c->shape,
                         table->name, text);
        }
        inputs_release(&want, &l);
        inputs_release(&got, &l);
    }
    return st;
}

/* --- timing --------------------------------------------------------------------- */

/* A case whose call moves less than this rotates over KC_SETS sets of
 * inputs, so consecutive calls do not read the very same bytes. */
#define KC_SMALL_BYTES (16 * 1024)
#define KC_SETS        8
/* Calls per sample are capped, so a call the clock cannot see ends too. */
#define KC_MAX_CALLS   (1 << 22)

static int64_t time_calls(const kc_harness *h, const sl_kernel_table *table, kc_inputs *sets, int nsets,
                          const int64_t *p, int64_t calls, int64_t (*now)(void))
{
    int64_t start = now();
    for (int64_t i = 0; i < calls; i++)
        h->run(table, &sets[i % nsets], p);
    return now() - start;
}

struct sl_kernel_timer {
    int64_t (*now)(void);
    const kc_spec *spec;
    const kc_harness *harness;
    kc_layout layout;
    kc_inputs sets[KC_SETS];
    int nsets;
};

sl_status sl_kernel_timer_open(const sl_kernel_case *c, sl_kernel_clock clock, sl_kernel_timer **out, sl_err *err)
{
    *out = NULL;
    if (!c || c->index < 0 || c->index >= NCASES)
        return sl_fail(err, SL_EINVAL, "kernel timing: no such case");
    sl_kernel_timer *t = calloc(1, sizeof *t);
    if (!t)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a kernel timer");
    t->now = clock == SL_KERNEL_CLOCK_THREAD_CPU ? sl_thread_cpu_ns : sl_now_ns;
    t->spec = &specs[c->index];
    t->harness = &harnesses[t->spec->entry];
    t->harness->layout(t->spec->p, &t->layout);
    int want = c->bytes < KC_SMALL_BYTES ? KC_SETS : 1;
    sl_status st = SL_OK;
    while (t->nsets < want && st == SL_OK)
        if ((st = inputs_make(&t->sets[t->nsets], t->harness, t->spec, &t->layout, (uint64_t)t->nsets + 1, err)) ==
            SL_OK)
            t->nsets++;
    if (st) {
        sl_kernel_timer_close(t);
        return st;
    }
    *out = t;
    return SL_OK;
}

sl_status sl_kernel_timer_calibrate(sl_kernel_timer *t, const sl_kernel_table *table, int64_t sample_ns, int64_t *calls,
                                    sl_err *err)
{
    *calls = 0;
    char reason[128] = "";
    if (!table || !sl_kernel_table_supported(table, reason, sizeof reason))
        return sl_fail(err, SL_EUNSUPPORTED, "kernel table %s cannot run here: %s", table ? table->name : "(none)",
                       table ? reason : "no table");
    int64_t n = 1;
    while (time_calls(t->harness, table, t->sets, t->nsets, t->spec->p, n, t->now) < sample_ns && n < KC_MAX_CALLS)
        n *= 2;
    *calls = n;
    return SL_OK;
}

double sl_kernel_timer_sample(sl_kernel_timer *t, const sl_kernel_table *table, int64_t calls)
{
    return (double)time_calls(t->harness, table, t->sets, t->nsets, t->spec->p, calls, t->now) / (double)calls;
}

void sl_kernel_timer_close(sl_kernel_timer *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nsets; i++)
        inputs_release(&t->sets[i], &t->layout);
    free(t);
}

sl_status sl_kernel_case_time(const sl_kernel_case *c, const sl_kernel_table *table, int repetitions, double *median_ns,
                              sl_err *err)
{
    if (!median_ns || repetitions < 1)
        return sl_fail(err, SL_EINVAL, "kernel timing: %d repetitions; at least 1 is needed", repetitions);
    *median_ns = 0.0;
    const kc_spec *s = NULL;
    kc_layout l = {0};
    sl_status st = usable(c, table, &s, &l, err);
    if (st)
        return st;
    double *samples = malloc((size_t)repetitions * sizeof *samples);
    if (!samples)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %d timing samples", repetitions);
    sl_kernel_timer *timer = NULL;
    int64_t calls = 0, start = sl_now_ns();
    st = sl_kernel_timer_open(c, SL_KERNEL_CLOCK_WALL, &timer, err);
    /* The calibration is the warmup. */
    if (st == SL_OK)
        st = sl_kernel_timer_calibrate(timer, table, SL_KERNEL_SAMPLE_NS, &calls, err);
    if (st == SL_OK) {
        int n = 0;
        while (n < repetitions && (n < 3 || sl_now_ns() - start < SL_KERNEL_TIME_BUDGET_NS))
            samples[n++] = sl_kernel_timer_sample(timer, table, calls);
        *median_ns = sl_median_f64(samples, (size_t)n);
    }
    sl_kernel_timer_close(timer);
    free(samples);
    return st;
}
