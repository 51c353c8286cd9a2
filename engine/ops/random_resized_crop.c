/* random_resized_crop: a keyed random box of the image (area fraction and
 * aspect drawn per element, sl_random_resized_crop_box), bilinearly resized
 * to out_h x out_w with the resize op's kernels. The box changes with every
 * element, so its resize plan is built per element in the op's scratch: a
 * few hundred integer steps against the out_h x out_w x c lerps it saves
 * nothing to precompute. */
#include <math.h>

#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

/* Attempts before the box falls back to the whole image, as torchvision. */
#define RRC_ATTEMPTS 10

sl_crop_box sl_random_resized_crop_box(const sl_op *op, uint64_t seed, int64_t epoch, int64_t element, int32_t in_h,
                                       int32_t in_w)
{
    const float lo = op->u.rrc.scale_lo, hi = op->u.rrc.scale_hi, ratio = op->u.rrc.ratio;
    const float k = (ratio - 1.0f) / (ratio + 1.0f);
    const float image_area = (float)in_h * (float)in_w;
    sl_philox_key key = sl_philox_key_for(seed, op->op_id);
    for (uint32_t attempt = 0; attempt < RRC_ATTEMPTS; attempt++) {
        sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, attempt), key);
        float scale = lo + (hi - lo) * sl_u32_to_unit_float(r.v[0]);
        float t = 2.0f * sl_u32_to_unit_float(r.v[1]) - 1.0f;
        float aspect = (1.0f + k * t) / (1.0f - k * t);
        float area = scale * image_area;
        /* sqrtf is correctly rounded (IEEE 754), so the box is the same bits
         * on every machine; the + 0.5f truncation rounds half up. */
        int32_t w = (int32_t)(sqrtf(area * aspect) + 0.5f);
        int32_t h = (int32_t)(sqrtf(area / aspect) + 0.5f);
        if (w >= 1 && w <= in_w && h >= 1 && h <= in_h) {
            int32_t y = (int32_t)sl_u32_below(r.v[2], (uint32_t)(in_h - h + 1));
            int32_t x = (int32_t)sl_u32_below(r.v[3], (uint32_t)(in_w - w + 1));
            return (sl_crop_box){y, x, h, w};
        }
    }
    return (sl_crop_box){0, 0, in_h, in_w};
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

static void decisions(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int32_t *out)
{
    sl_crop_box box = sl_random_resized_crop_box(c->op, ctx->pipeline->spec.seed, ctx->epoch, element, c->h, c->w);
    out[0] = box.y;
    out[1] = box.x;
    out[2] = box.h;
    out[3] = box.w;
}

/* On a device: each row's box is its decisions, drawn on the host. */
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
    .decisions = decisions,
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
