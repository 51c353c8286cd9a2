/* random_resized_crop: a keyed random box of the image (area fraction and
 * aspect drawn per element, sl_random_resized_crop_box), bilinearly resized
 * to out_h x out_w with the resize op's kernels. The box changes with every
 * element, so its resize plan is built per element in the op's scratch: a
 * few hundred integer steps against the out_h x out_w x c lerps it saves
 * nothing to precompute. */
#include <math.h>

#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

/* The rule of an op's boxes on an image of in_h x in_w (kernels/decide.h:
 * ten attempts, as torchvision, then the whole image). */
static sl_decide_rule box_rule(const sl_op *op, uint64_t seed, int32_t in_h, int32_t in_w)
{
    return (sl_decide_rule){.key = sl_philox_key_for(seed, op->op_id),
                            .kind = SL_DECIDE_RESIZED_CROP,
                            .columns = 4,
                            .bound = {(uint32_t)in_h, (uint32_t)in_w},
                            .lo = op->u.rrc.scale_lo,
                            .hi = op->u.rrc.scale_hi,
                            .ratio = op->u.rrc.ratio};
}

sl_crop_box sl_random_resized_crop_box(const sl_op *op, uint64_t seed, int64_t epoch, int64_t element, int32_t in_h,
                                       int32_t in_w)
{
    sl_decide_rule rule = box_rule(op, seed, in_h, in_w);
    int32_t box[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__decide(&rule, element, epoch, box);
    return (sl_crop_box){box[0], box[1], box[2], box[3]};
}

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    int channels;
    sl_status st =
        sl__resample_geometry(field, "random_resized_crop", index, op->u.rrc.out_h, op->u.rrc.out_w, c, &channels, err);
    if (st)
        return st;
    if (!(op->u.rrc.scale_lo > 0.0f && op->u.rrc.scale_lo <= op->u.rrc.scale_hi && op->u.rrc.scale_hi <= 1.0f))
        return sl_fail(err, SL_EINVAL,
                       "op %d: random_resized_crop scale range [%g, %g] of field '%s' is not within "
                       "(0, 1]",
                       index, (double)op->u.rrc.scale_lo, (double)op->u.rrc.scale_hi, field->name);
    if (!(op->u.rrc.ratio >= 1.0f && op->u.rrc.ratio <= 16.0f))
        return sl_fail(err, SL_EINVAL, "op %d: random_resized_crop ratio %g of field '%s' is not in [1, 16]", index,
                       (double)op->u.rrc.ratio, field->name);
    /* The element's plan, then the kernel's own scratch. Plan sizes are
     * multiples of SL_ALIGN, so the kernel's part stays aligned. */
    c->scratch_bytes = sl_resize_plan_bytes(op->u.rrc.out_h, op->u.rrc.out_w, channels) +
                       2 * (size_t)op->u.rrc.out_w * (size_t)channels * sizeof(float);
    sl__resample_output(field, op->u.rrc.out_h, op->u.rrc.out_w, channels, c);
    return SL_OK;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    const sl_op *op = c->op;
    const int channels = (int)(c->pixel_bytes / sl_dtype_size(c->in_dtype));
    const int64_t stride = (int64_t)c->w * channels;
    size_t plan_bytes = sl_resize_plan_bytes(op->u.rrc.out_h, op->u.rrc.out_w, channels);
    float *kernel_scratch = (float *)((char *)scratch + plan_bytes);
    for (int64_t r = 0; r < count; r++) {
        sl_crop_box box = sl_random_resized_crop_box(op, ctx->pipeline->spec.seed, ctx->epoch, ids[r], c->h, c->w);
        sl_resize_plan plan;
        sl_resize_plan_init(&plan, scratch, box.h, box.w, op->u.rrc.out_h, op->u.rrc.out_w, channels);
        int64_t origin = (int64_t)box.y * stride + (int64_t)box.x * channels;
        const char *image = (const char *)in + (size_t)r * c->in_bytes;
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        if (c->in_dtype == SL_U8)
            ctx->kernels->resize_u8((const uint8_t *)image + origin, stride, dst, &plan, kernel_scratch);
        else
            ctx->kernels->resize_f32((const float *)image + origin, stride, dst, &plan, kernel_scratch);
    }
}

static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = box_rule(c->op, ctx->pipeline->spec.seed, c->h, c->w);
}

/* On a device: each row's box is its decisions, drawn there by the rule. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    const int channels = (int)(c->pixel_bytes / sl_dtype_size(c->in_dtype));
    return ctx->device->resized_crop_rows(in, c->in_dtype == SL_U8, out, ctx->rows, c->h, c->w, channels,
                                          c->op->u.rrc.out_h, c->op->u.rrc.out_w, ctx->decisions, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("out_h", rrc.out_h), SL__PARAM_I32("out_w", rrc.out_w),
                                      SL__PARAM_F32("scale_lo", rrc.scale_lo), SL__PARAM_F32("scale_hi", rrc.scale_hi),
                                      SL__PARAM_F32("ratio", rrc.ratio)};

const sl__op_desc sl__op_random_resized_crop_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = false,
    .compile = compile,
    .rows = rows,
    .decision_columns = "y,x,h,w",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_random_resized_crop(const char *field, uint32_t op_id, int32_t out_h, int32_t out_w, float scale_lo,
                                float scale_hi, float ratio)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_RESIZED_CROP, field, op_id);
    op.u.rrc.out_h = out_h;
    op.u.rrc.out_w = out_w;
    op.u.rrc.scale_lo = scale_lo;
    op.u.rrc.scale_hi = scale_hi;
    op.u.rrc.ratio = ratio;
    return op;
}
