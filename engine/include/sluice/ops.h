/* The transforms a pipeline can chain, and how a scenario describes one. */
#ifndef SLUICE_OPS_H
#define SLUICE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One entry per transform. The name is what adapters declare, records list
 * and `sluice list` prints; adding a transform means adding it here, to the
 * kernel table, and to each adapter that implements it. */
typedef enum sl_op_kind {
    SL_OP_PACK_TOKENS = 0, /* cut a token stream into sequences (first op only) */
    SL_OP_NORMALIZE,       /* per-channel (x - mean) * (1 / std); u8 or f32 in, f32 out */
    SL_OP_SCALE,           /* x * value */
    SL_OP_CLIP,            /* x < lo ? lo : (x > hi ? hi : x) */
    SL_OP_ADD,             /* x + value */
    SL_OP_MULTIPLY,        /* x * value */
    SL_OP_RANDOM_CROP,     /* crop an h' x w' window at a random offset, zero-pad back, centred */
    SL_OP_RANDOM_HFLIP,    /* mirror the width axis with probability p */
    SL_OP_ZSCORE,          /* per element: (x - mean) * (1 / std) over all its values, f32 */
    SL_OP_RANDOM_CROP3D,   /* a d' x h' x w' patch of a volume at a random offset; the patch is the output */
    SL_OP_RANDOM_FLIP3D,   /* mirror each of a volume's three axes independently with probability p */
    SL_OP_ONE_HOT,         /* an i32 class label to an f32 [classes] one-hot vector */
    SL_OP_MIXUP,           /* batch op: lam x + (1 - lam) x[partner], labels alike; lam ~ Beta(alpha, alpha) */
    SL_OP_CUTMIX,          /* batch op: a box from x[partner] pasted in; labels weighted by the box's area */
    SL_OP_GAUSSIAN_NOISE,  /* x + sigma z, z a standard normal variate per value (docs/determinism.md) */
    SL_OP_RANDOM_BRIGHTNESS, /* x + d, d uniform in [-delta, delta] per element */
    SL_OP_RANDOM_SCALE,    /* x * f, f uniform in [lo, hi] per element */
    SL_OP_BRANCH_MEAN,     /* the next ops_a ops and the ops_b after them as two branches from x; (a + b) / 2 */
    SL_OP_RANDOM_APPLY,    /* the next ops_a ops run on an element with probability p */
    SL_OP_RANDOM_CHOICE,   /* per element, the next ops_a ops with probability p, else the ops_b after them */
    SL_OP_KIND_COUNT
} sl_op_kind;

/* A set of transforms, one bit per sl_op_kind. */
typedef uint64_t sl_transform_set;
#define SL_TRANSFORM(kind) ((sl_transform_set)1 << (kind))

const char *sl_op_kind_name(sl_op_kind kind);
bool sl_op_kind_parse(const char *name, sl_op_kind *out);
/* Writes "normalize,scale" (in sl_op_kind order) into buf. */
void sl_transform_set_format(sl_transform_set set, char *buf, size_t size);

/* Per-channel statistics cover up to this many channels; tabular z-score
 * treats each feature as a channel. */
#define SL_MAX_CHANNELS 128

typedef struct sl_op {
    sl_op_kind kind;
    char field[SL_NAME_MAX];  /* the field it acts on */
    /* Key of the op's random stream (with the seed). Scenarios give stable
     * ids so that inserting an op does not reshuffle every op after it. */
    uint32_t op_id;
    union {
        struct { int32_t seq_len; int32_t pad_id; } pack;
        struct { int32_t channels; float mean[SL_MAX_CHANNELS]; float std[SL_MAX_CHANNELS]; } normalize;
        struct { float value; } scalar;   /* scale, add, multiply */
        struct { float lo, hi; } clip;
        struct { int32_t crop_h, crop_w; } crop;
        struct { float p; } flip;           /* random_hflip, random_flip3d */
        struct { int32_t d, h, w; } patch;  /* random_crop3d */
        struct { int32_t classes; } one_hot;
        /* mixup, cutmix: `field` is the image, `label` the one-hot labels
         * mixed with it. */
        struct { char label[SL_NAME_MAX]; float alpha; } mix;
        struct { float sigma; } noise;      /* gaussian_noise */
        struct { float delta; } brightness; /* random_brightness */
        struct { float lo, hi; } range;     /* random_scale */
        /* branch_mean, random_apply, random_choice: the op owns the ops_a
         * ops of the spec after it (branch a) and the ops_b after those
         * (branch b); p is the probability of running branch a. */
        struct { int32_t ops_a, ops_b; float p; } sub;
    } u;
} sl_op;

/* Builders that keep scenario definitions to one readable line per op. */
sl_op sl_op_pack_tokens(const char *field, int32_t seq_len, int32_t pad_id);
sl_op sl_op_normalize(const char *field, int32_t channels, const float *mean, const float *std);
sl_op sl_op_scale(const char *field, float value);
sl_op sl_op_clip(const char *field, float lo, float hi);
sl_op sl_op_add(const char *field, float value);
sl_op sl_op_multiply(const char *field, float value);
sl_op sl_op_random_crop(const char *field, uint32_t op_id, int32_t crop_h, int32_t crop_w);
sl_op sl_op_random_hflip(const char *field, uint32_t op_id, float p);
sl_op sl_op_zscore(const char *field);
sl_op sl_op_random_crop3d(const char *field, uint32_t op_id, int32_t patch_d, int32_t patch_h, int32_t patch_w);
sl_op sl_op_random_flip3d(const char *field, uint32_t op_id, float p);
sl_op sl_op_one_hot(const char *field, int32_t classes);
/* alpha must be 2 / m for an integer m in [1, 64] (0.4, 0.5, 1, 2, ...): the
 * Beta sampler stays free of libm only for those (docs/determinism.md). */
sl_op sl_op_mixup(const char *image_field, const char *label_field, uint32_t op_id, float alpha);
sl_op sl_op_cutmix(const char *image_field, const char *label_field, uint32_t op_id, float alpha);
/* Per-value and per-element random arithmetic on f32 fields, each one step
 * of the fused element-wise chain: x + sigma z with z ~ N(0, 1) per value;
 * x + d with d uniform in [-delta, delta] per element; x * f with f uniform
 * in [lo, hi] per element. */
sl_op sl_op_gaussian_noise(const char *field, uint32_t op_id, float sigma);
sl_op sl_op_random_brightness(const char *field, uint32_t op_id, float delta);
sl_op sl_op_random_scale(const char *field, uint32_t op_id, float lo, float hi);

/* Ops over sub-chains. Each owns the ops that follow it in the spec: the
 * next ops_a form branch a, the ops_b after those branch b. Those ops act on
 * the same f32 field, keep its layout and run per element (element-wise,
 * random or not, and per-element movement ops); they are compiled, named in
 * errors and fingerprinted by their own index, and draw under their own op
 * ids, but only the owning op runs them (docs/design.md, "Graphs").
 * branch_mean: both branches start from the element's value x; the field
 * becomes a * 0.5 + b * 0.5 (two exact halvings and one rounded sum: (a + b)
 * * 0.5 in float wherever a + b does not overflow).
 * random_apply: branch a runs on an element when its keyed uniform u < p.
 * random_choice: branch a when u < p, else branch b.
 * u is word 0 of Philox draw 0 of (seed, op_id, element, epoch) as k / 2^24
 * (docs/determinism.md), so decisions follow the element, not its batch. */
sl_op sl_op_branch_mean(const char *field, int32_t ops_a, int32_t ops_b);
sl_op sl_op_random_apply(const char *field, uint32_t op_id, float p, int32_t ops);
sl_op sl_op_random_choice(const char *field, uint32_t op_id, float p, int32_t ops_a, int32_t ops_b);

/* Whether an op maps each value to a new value independently of the others
 * (the ops a fused executor can chain inside one tile). */
bool sl_op_is_elementwise(sl_op_kind kind);

#ifdef __cplusplus
}
#endif

#endif
