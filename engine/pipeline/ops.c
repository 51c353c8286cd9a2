#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "pipeline/op_desc.h"
#include "sluice/ops.h"

/* Indexed by sl_op_kind, from the list in sluice/op_list.h: every kind has
 * exactly one descriptor and one name. */
#define DESCRIPTOR(NAME, name, summary) [SL_OP_##NAME] = &sl__op_##name##_desc,
static const sl__op_desc *const descriptors[SL_OP_KIND_COUNT] = {SL_OP_LIST(DESCRIPTOR)};
#undef DESCRIPTOR
#define NAME(NAME, name, summary) [SL_OP_##NAME] = #name,
static const char *const names[SL_OP_KIND_COUNT] = {SL_OP_LIST(NAME)};
#undef NAME
#define SUMMARY(NAME, name, summary) [SL_OP_##NAME] = summary,
static const char *const summaries[SL_OP_KIND_COUNT] = {SL_OP_LIST(SUMMARY)};
#undef SUMMARY

const sl__op_desc *sl__op_desc_of(sl_op_kind kind)
{
    return (unsigned)kind < SL_OP_KIND_COUNT ? descriptors[kind] : NULL;
}

const char *sl_op_kind_name(sl_op_kind kind)
{
    return (unsigned)kind < SL_OP_KIND_COUNT ? names[kind] : "?";
}

const char *sl_op_kind_summary(sl_op_kind kind)
{
    return (unsigned)kind < SL_OP_KIND_COUNT ? summaries[kind] : "?";
}

bool sl_op_kind_parse(const char *name, sl_op_kind *out)
{
    for (int k = 0; k < SL_OP_KIND_COUNT; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = (sl_op_kind)k;
            return true;
        }
    }
    return false;
}

void sl_transform_set_format(sl_transform_set set, char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int k = 0; k < SL_OP_KIND_COUNT && used < size; k++) {
        if (set & SL_TRANSFORM(k))
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", names[k]);
    }
}

/* An op runs on the CPU when its phase has a runner there: gathering or
 * ordering (source phase), its rows, or its batch function. */
static bool has_cpu_path(const sl__op_desc *desc)
{
    switch (desc->phase) {
    case SL__PHASE_SOURCE:
        return true;
    case SL__PHASE_ELEMENT:
        return desc->rows != NULL;
    case SL__PHASE_BATCH:
        return desc->batch != NULL;
    }
    return false;
}

sl_transform_set sl_op_cpu_transforms(void)
{
    sl_transform_set set = 0;
    for (int k = 0; k < SL_OP_KIND_COUNT; k++)
        if (has_cpu_path(descriptors[k]))
            set |= SL_TRANSFORM(k);
    return set;
}

sl_transform_set sl_op_device_transforms(void)
{
    sl_transform_set set = 0;
    for (int k = 0; k < SL_OP_KIND_COUNT; k++)
        if (descriptors[k]->device != SL__DEVICE_NONE)
            set |= SL_TRANSFORM(k);
    return set;
}

bool sl_op_is_elementwise(sl_op_kind kind)
{
    const sl__op_desc *desc = sl__op_desc_of(kind);
    return desc && desc->ew_step != NULL;
}

static sl_op op_on(sl_op_kind kind, const char *field, uint32_t op_id)
{
    sl_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.op_id = op_id;
    sl__copy_string(op.field, sizeof op.field, field);
    return op;
}

sl_op sl_op_pack_tokens(const char *field, int32_t seq_len, int32_t pad_id)
{
    sl_op op = op_on(SL_OP_PACK_TOKENS, field, 0);
    op.u.pack.seq_len = seq_len;
    op.u.pack.pad_id = pad_id;
    return op;
}

sl_op sl_op_normalize(const char *field, int32_t channels, const float *mean, const float *std)
{
    sl_op op = op_on(SL_OP_NORMALIZE, field, 0);
    op.u.normalize.channels = channels;
    for (int32_t c = 0; c < channels && c < SL_MAX_CHANNELS; c++) {
        op.u.normalize.mean[c] = mean[c];
        op.u.normalize.std[c] = std[c];
    }
    return op;
}

static sl_op scalar_op(sl_op_kind kind, const char *field, float value)
{
    sl_op op = op_on(kind, field, 0);
    op.u.scalar.value = value;
    return op;
}

sl_op sl_op_scale(const char *field, float value) { return scalar_op(SL_OP_SCALE, field, value); }
sl_op sl_op_add(const char *field, float value) { return scalar_op(SL_OP_ADD, field, value); }
sl_op sl_op_multiply(const char *field, float value) { return scalar_op(SL_OP_MULTIPLY, field, value); }

sl_op sl_op_clip(const char *field, float lo, float hi)
{
    sl_op op = op_on(SL_OP_CLIP, field, 0);
    op.u.clip.lo = lo;
    op.u.clip.hi = hi;
    return op;
}

sl_op sl_op_random_crop(const char *field, uint32_t op_id, int32_t crop_h, int32_t crop_w)
{
    sl_op op = op_on(SL_OP_RANDOM_CROP, field, op_id);
    op.u.crop.crop_h = crop_h;
    op.u.crop.crop_w = crop_w;
    return op;
}

sl_op sl_op_random_hflip(const char *field, uint32_t op_id, float p)
{
    sl_op op = op_on(SL_OP_RANDOM_HFLIP, field, op_id);
    op.u.flip.p = p;
    return op;
}

sl_op sl_op_zscore(const char *field)
{
    return op_on(SL_OP_ZSCORE, field, 0);
}

sl_op sl_op_random_crop3d(const char *field, uint32_t op_id, int32_t patch_d, int32_t patch_h, int32_t patch_w)
{
    sl_op op = op_on(SL_OP_RANDOM_CROP3D, field, op_id);
    op.u.patch.d = patch_d;
    op.u.patch.h = patch_h;
    op.u.patch.w = patch_w;
    return op;
}

sl_op sl_op_random_flip3d(const char *field, uint32_t op_id, float p)
{
    sl_op op = op_on(SL_OP_RANDOM_FLIP3D, field, op_id);
    op.u.flip.p = p;
    return op;
}

sl_op sl_op_one_hot(const char *field, int32_t classes)
{
    sl_op op = op_on(SL_OP_ONE_HOT, field, 0);
    op.u.one_hot.classes = classes;
    return op;
}

static sl_op mix_op(sl_op_kind kind, const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    sl_op op = op_on(kind, image_field, op_id);
    sl__copy_string(op.u.mix.label, sizeof op.u.mix.label, label_field);
    op.u.mix.alpha = alpha;
    return op;
}

sl_op sl_op_mixup(const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    return mix_op(SL_OP_MIXUP, image_field, label_field, op_id, alpha);
}

sl_op sl_op_cutmix(const char *image_field, const char *label_field, uint32_t op_id, float alpha)
{
    return mix_op(SL_OP_CUTMIX, image_field, label_field, op_id, alpha);
}

sl_op sl_op_cache(const char *field)
{
    return op_on(SL_OP_CACHE, field, 0);
}

sl_op sl_op_resize(const char *field, int32_t out_h, int32_t out_w)
{
    sl_op op = op_on(SL_OP_RESIZE, field, 0);
    op.u.resize.out_h = out_h;
    op.u.resize.out_w = out_w;
    return op;
}

sl_op sl_op_random_resized_crop(const char *field, uint32_t op_id, int32_t out_h, int32_t out_w, float scale_lo,
                                float scale_hi, float ratio)
{
    sl_op op = op_on(SL_OP_RANDOM_RESIZED_CROP, field, op_id);
    op.u.rrc.out_h = out_h;
    op.u.rrc.out_w = out_w;
    op.u.rrc.scale_lo = scale_lo;
    op.u.rrc.scale_hi = scale_hi;
    op.u.rrc.ratio = ratio;
    return op;
}

sl_op sl_op_pad_tokens(const char *field, int32_t length, int32_t end_id, int32_t pad_id)
{
    sl_op op = op_on(SL_OP_PAD_TOKENS, field, 0);
    op.u.pad.length = length;
    op.u.pad.end_id = end_id;
    op.u.pad.pad_id = pad_id;
    return op;
}

sl_op sl_op_log_mel(const char *field, int32_t sample_rate, int32_t frame, int32_t hop, int32_t n_fft, int32_t mels)
{
    sl_op op = op_on(SL_OP_LOG_MEL, field, 0);
    op.u.mel.sample_rate = sample_rate;
    op.u.mel.frame = frame;
    op.u.mel.hop = hop;
    op.u.mel.n_fft = n_fft;
    op.u.mel.mels = mels;
    return op;
}

sl_op sl_op_trig_rounds(const char *field, int32_t rounds)
{
    sl_op op = op_on(SL_OP_TRIG_ROUNDS, field, 0);
    op.u.rounds.count = rounds;
    return op;
}

sl_op sl_op_log1p(const char *field)
{
    return op_on(SL_OP_LOG1P, field, 0);
}

sl_op sl_op_hash_ids(const char *field, int32_t columns, const int64_t *sizes)
{
    sl_op op = op_on(SL_OP_HASH_IDS, field, 0);
    op.u.hash.columns = columns;
    for (int32_t j = 0; j < columns && j < SL_MAX_CHANNELS; j++)
        op.u.hash.sizes[j] = sizes[j];
    return op;
}

sl_op sl_op_bag_offsets(const char *field, const char *out)
{
    sl_op op = op_on(SL_OP_BAG_OFFSETS, field, 0);
    sl__copy_string(op.u.bag.out, sizeof op.u.bag.out, out);
    return op;
}

sl_op sl_op_bucket_by_length(const char *field, uint32_t op_id, int32_t window_batches)
{
    sl_op op = op_on(SL_OP_BUCKET_BY_LENGTH, field, op_id);
    op.u.bucket.window_batches = window_batches;
    return op;
}

sl_op sl_op_pad_to_multiple(const char *field, const char *lengths, int32_t multiple, int32_t pad_id)
{
    sl_op op = op_on(SL_OP_PAD_TO_MULTIPLE, field, 0);
    sl__copy_string(op.u.pad_multiple.lengths, sizeof op.u.pad_multiple.lengths, lengths);
    op.u.pad_multiple.multiple = multiple;
    op.u.pad_multiple.pad_id = pad_id;
    return op;
}

sl_op sl_op_attention_mask(const char *field, const char *lengths, const char *out)
{
    sl_op op = op_on(SL_OP_ATTENTION_MASK, field, 0);
    sl__copy_string(op.u.mask.lengths, sizeof op.u.mask.lengths, lengths);
    sl__copy_string(op.u.mask.out, sizeof op.u.mask.out, out);
    return op;
}

sl_op sl_op_affine(const char *field, int32_t channels, const float *scale, const float *bias)
{
    sl_op op = op_on(SL_OP_AFFINE, field, 0);
    op.u.affine.channels = channels;
    for (int32_t c = 0; c < channels && c < SL_MAX_CHANNELS; c++) {
        op.u.affine.scale[c] = scale[c];
        op.u.affine.bias[c] = bias[c];
    }
    return op;
}

sl_op sl_op_dropout(const char *field, uint32_t op_id, float p)
{
    sl_op op = op_on(SL_OP_DROPOUT, field, op_id);
    op.u.dropout.p = p;
    return op;
}

sl_op sl_op_rebatch(const char *field, int32_t micro)
{
    sl_op op = op_on(SL_OP_REBATCH, field, 0);
    op.u.rebatch.micro = micro;
    return op;
}

sl_op sl_op_rot90(const char *field, uint32_t op_id)
{
    return op_on(SL_OP_ROT90, field, op_id);
}
sl_op sl_op_gaussian_noise(const char *field, uint32_t op_id, float sigma)
{
    sl_op op = op_on(SL_OP_GAUSSIAN_NOISE, field, op_id);
    op.u.noise.sigma = sigma;
    return op;
}

sl_op sl_op_random_brightness(const char *field, uint32_t op_id, float delta)
{
    sl_op op = op_on(SL_OP_RANDOM_BRIGHTNESS, field, op_id);
    op.u.brightness.delta = delta;
    return op;
}

sl_op sl_op_random_scale(const char *field, uint32_t op_id, float lo, float hi)
{
    sl_op op = op_on(SL_OP_RANDOM_SCALE, field, op_id);
    op.u.range.lo = lo;
    op.u.range.hi = hi;
    return op;
}

static sl_op sub_op(sl_op_kind kind, const char *field, uint32_t op_id, float p, int32_t ops_a, int32_t ops_b)
{
    sl_op op = op_on(kind, field, op_id);
    op.u.sub.ops_a = ops_a;
    op.u.sub.ops_b = ops_b;
    op.u.sub.p = p;
    return op;
}

sl_op sl_op_branch_mean(const char *field, int32_t ops_a, int32_t ops_b)
{
    return sub_op(SL_OP_BRANCH_MEAN, field, 0, 1.0f, ops_a, ops_b);
}

sl_op sl_op_random_apply(const char *field, uint32_t op_id, float p, int32_t ops)
{
    return sub_op(SL_OP_RANDOM_APPLY, field, op_id, p, ops, 0);
}

sl_op sl_op_random_choice(const char *field, uint32_t op_id, float p, int32_t ops_a, int32_t ops_b)
{
    return sub_op(SL_OP_RANDOM_CHOICE, field, op_id, p, ops_a, ops_b);
}
