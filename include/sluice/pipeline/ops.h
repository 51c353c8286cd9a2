/* The transforms a pipeline can chain, and how a scenario describes one. */
#ifndef SLUICE_OPS_H
#define SLUICE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/core/tensor.h"
#include "sluice/pipeline/op_list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One entry per transform. The name is what adapters declare, records list
 * and `sluice list` prints; adding a transform means adding it here, to the
 * kernel table, and to each adapter that implements it. */
/* One entry per transform, from the list in sluice/pipeline/op_list.h: its name is
 * what adapters declare, records list and `sluice list` prints. */
#define SL__OP_KIND(NAME, name, summary) SL_OP_##NAME,
typedef enum sl_op_kind { SL_OP_LIST(SL__OP_KIND) SL_OP_KIND_COUNT } sl_op_kind;
#undef SL__OP_KIND

/* A set of transforms, one bit per sl_op_kind. */
typedef uint64_t sl_transform_set;
#define SL_TRANSFORM(kind) ((sl_transform_set)1 << (kind))

const char *sl_op_kind_name(sl_op_kind kind);
bool sl_op_kind_parse(const char *name, sl_op_kind *out);
/* Writes "normalize,scale" (in sl_op_kind order) into buf. */
void sl_transform_set_format(sl_transform_set set, char *buf, size_t size);

typedef struct sl_op {
    sl_op_kind kind;
    char field[SL_NAME_MAX]; /* the field it acts on */
    /* Key of the op's random stream (with the seed). Scenarios give stable
     * ids so that inserting an op does not reshuffle every op after it. */
    uint32_t op_id;
    union {
        struct {
            int32_t seq_len;
            int32_t pad_id;
        } pack;
        struct {
            int32_t channels;
            float mean[SL_MAX_CHANNELS];
            float std[SL_MAX_CHANNELS];
        } normalize;
        struct {
            float value;
        } scalar; /* scale, add, multiply */
        struct {
            float lo, hi;
        } clip;
        struct {
            int32_t crop_h, crop_w;
        } crop;
        struct {
            float p;
        } flip; /* random_hflip, random_flip3d */
        struct {
            int32_t d, h, w;
        } patch; /* random_crop3d */
        struct {
            int32_t classes;
        } one_hot;
        struct {
            int32_t count;
        } rounds; /* trig_rounds */
        /* mixup, cutmix: `field` is the image, `label` the one-hot labels
         * mixed with it. */
        struct {
            char label[SL_NAME_MAX];
            float alpha;
        } mix;
        struct {
            int32_t out_h, out_w;
        } resize;
        /* Box area a fraction in [scale_lo, scale_hi] of the image's, aspect
         * w / h in [1 / ratio, ratio] (sl_random_resized_crop_box). */
        struct {
            int32_t out_h, out_w;
            float scale_lo, scale_hi, ratio;
        } rrc;
        struct {
            int32_t length, end_id, pad_id;
        } pad;
        struct {
            int32_t sample_rate, frame, hop, n_fft, mels;
        } mel;
        /* hash_ids: one table size per column of the field. */
        struct {
            int32_t columns;
            int64_t sizes[SL_MAX_CHANNELS];
        } hash;
        /* bag_offsets: the name of the offsets field it adds. */
        struct {
            char out[SL_NAME_MAX];
        } bag;
        /* bucket_by_length: batches per window sorted by length. */
        struct {
            int32_t window_batches;
        } bucket;
        /* pad_to_multiple: the i32 length field, the multiple and the pad id. */
        struct {
            char lengths[SL_NAME_MAX];
            int32_t multiple;
            int32_t pad_id;
        } pad_multiple;
        /* attention_mask: the i32 length field and the name of the mask field it adds. */
        struct {
            char lengths[SL_NAME_MAX];
            char out[SL_NAME_MAX];
        } mask;
        /* affine: y = x * scale[c] + bias[c]; both are learnable parameters
         * (the autodiff API's gradients and SGD step address them as
         * scale[0..channels) then bias[0..channels)). */
        struct {
            int32_t channels;
            float scale[SL_MAX_CHANNELS];
            float bias[SL_MAX_CHANNELS];
        } affine;
        struct {
            float p;
        } dropout; /* drop probability in [0, 1) */
        struct {
            int32_t micro;
        } rebatch; /* rows per micro-batch */
        struct {
            float sigma;
        } noise; /* gaussian_noise */
        struct {
            float delta;
        } brightness; /* random_brightness */
        struct {
            float lo, hi;
        } range; /* random_scale */
        /* branch_mean, random_apply, random_choice: the op owns the ops_a
         * ops of the spec after it (branch a) and the ops_b after those
         * (branch b); p is the probability of running branch a. */
        struct {
            int32_t ops_a, ops_b;
            float p;
        } sub;
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
/* k quarter turns as numpy.rot90(image, k) turns them (the first axis towards
 * the second: counter-clockwise as an image is displayed), k drawn per
 * element. The image must be square, so that every k keeps its shape and
 * batches stay dense. */
sl_op sl_op_rot90(const char *field, uint32_t op_id);

/* A cache point: the ops before it run once per element and their output
 * is kept for every later epoch (tf.data's cache()). They must be per-element
 * ops without randomness, whose output an epoch does not change. field is
 * any field of the element; the whole element is cached. */
sl_op sl_op_cache(const char *field);
/* IO-4's expensive op: `rounds` rounds of y = sin y + cos y per value. */
sl_op sl_op_trig_rounds(const char *field, int32_t rounds);
sl_op sl_op_resize(const char *field, int32_t out_h, int32_t out_w);
sl_op sl_op_random_resized_crop(const char *field, uint32_t op_id, int32_t out_h, int32_t out_w, float scale_lo,
                                float scale_hi, float ratio);
sl_op sl_op_pad_tokens(const char *field, int32_t length, int32_t end_id, int32_t pad_id);
sl_op sl_op_log_mel(const char *field, int32_t sample_rate, int32_t frame, int32_t hop, int32_t n_fft, int32_t mels);

/* The box a random_resized_crop op takes from an in_h x in_w image: rows
 * [y, y + h), columns [x, x + w). */
typedef struct sl_crop_box {
    int32_t y, x, h, w;
} sl_crop_box;

/* The box of element `element` in `epoch` for a random_resized_crop op under
 * pipeline seed `seed`: what the op's rows resize, and what a peer loader
 * is handed so it crops the same box. Drawn from Philox keyed by (seed,
 * op id) with counter (element, epoch, attempt), without libm: up to ten
 * attempts each draw a scale s uniform in [scale_lo, scale_hi), t uniform in
 * [-1, 1) and take the aspect a = (1 + k t) / (1 - k t), k = (ratio - 1) /
 * (ratio + 1), which spans [1 / ratio, ratio] and gives a and 1 / a the same
 * distribution (as torchvision's log-uniform aspect does); then
 * w = round(sqrt(s h w a)), h = round(sqrt(s h w / a)) (correctly rounded
 * float sqrt), and offsets uniform over the positions where the box fits.
 * An attempt whose box does not fit is followed by the next; after ten, the
 * whole image. */
sl_crop_box sl_random_resized_crop_box(const sl_op *op, uint64_t seed, int64_t epoch, int64_t element, int32_t in_h,
                                       int32_t in_w);
sl_op sl_op_log1p(const char *field);
/* sizes[j] is the table size of column j, in [1, 2^31]. */
sl_op sl_op_hash_ids(const char *field, int32_t columns, const int64_t *sizes);
sl_op sl_op_bag_offsets(const char *field, const char *out);
/* `field` is the i32 length field that orders the batches; op_id keys the
 * order of the batches within a window. */
sl_op sl_op_bucket_by_length(const char *field, uint32_t op_id, int32_t window_batches);
sl_op sl_op_pad_to_multiple(const char *field, const char *lengths, int32_t multiple, int32_t pad_id);
sl_op sl_op_attention_mask(const char *field, const char *lengths, const char *out);
/* channels 1 (every value alike) or the field's last dimension. */
sl_op sl_op_affine(const char *field, int32_t channels, const float *scale, const float *bias);
/* Drops each value independently with probability p in training mode (a
 * Philox draw keyed by the element id and the value's index), scaling the
 * kept ones by 1 / (1 - p); the identity in eval mode (sl_pipeline_spec). */
sl_op sl_op_dropout(const char *field, uint32_t op_id, float p);
/* A batch op: splits the batch into micro-batches of `micro` rows, each a
 * batch of its own (sluice/pipeline/rebatch.h), and concatenates them back. Every
 * field moves with its rows; `field` names the one the op is written
 * against (any field of the batch). */
sl_op sl_op_rebatch(const char *field, int32_t micro);
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

/* The transforms whose descriptors run on the CPU (every table implements
 * every kernel, the reference's at least), and those with a device path in
 * the cuda adapters' plan: what the CPU and cuda adapters implement,
 * derived from the descriptors rather than listed by hand. */
sl_transform_set sl_op_cpu_transforms(void);
sl_transform_set sl_op_device_transforms(void);

/* Whether an op maps each value to a new value independently of the others
 * (the ops a fused executor can chain inside one tile). */
bool sl_op_is_elementwise(sl_op_kind kind);

#ifdef __cplusplus
}
#endif

#endif
