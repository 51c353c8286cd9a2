/* random_crop: an h' x w' window at a keyed uniform offset, copied to the
 * centre of a zeroed h x w image (crop and pad back, so shapes stay fixed). */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    sl_status st = sl__image_geometry(field, "random_crop", index, c, err);
    if (st)
        return st;
    if (op->u.crop.crop_h < 1 || op->u.crop.crop_h > c->h || op->u.crop.crop_w < 1 || op->u.crop.crop_w > c->w)
        return sl_fail(err, SL_EINVAL, "op %d: crop %dx%d does not fit field '%s' of %dx%d", index, op->u.crop.crop_h,
                       op->u.crop.crop_w, field->name, c->h, c->w);
    return SL_OK;
}

/* Words 0 and 1 of the element's block, below the window's free rows and
 * columns. */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BELOW, 2);
    rule->bound[0] = (uint32_t)(c->h - c->op->u.crop.crop_h + 1);
    rule->bound[1] = (uint32_t)(c->w - c->op->u.crop.crop_w + 1);
}

void sl__crop_offsets(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int *off_y, int *off_x)
{
    int32_t offsets[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__op_decide(ctx, c, element, offsets);
    *off_y = offsets[0];
    *off_x = offsets[1];
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)scratch;
    for (int64_t r = 0; r < count; r++) {
        int oy, ox;
        sl__crop_offsets(ctx, c, ids[r], &oy, &ox);
        ctx->kernels->crop_pad((const char *)in + (size_t)r * c->in_bytes, (char *)out + (size_t)r * c->out_bytes, c->h,
                               c->w, c->pixel_bytes, c->op->u.crop.crop_h, c->op->u.crop.crop_w, oy, ox);
    }
}

/* On a device: each row's offsets are its decisions, drawn there by the
 * rule. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->crop_pad_rows(in, out, ctx->rows, c->h, c->w, c->pixel_bytes, c->op->u.crop.crop_h,
                                      c->op->u.crop.crop_w, ctx->decisions, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("crop_h", crop.crop_h), SL__PARAM_I32("crop_w", crop.crop_w)};

const sl__op_desc sl__op_random_crop_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = false,
    .compile = compile,
    .rows = rows,
    .decision_columns = "off_y,off_x",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_random_crop(const char *field, uint32_t op_id, int32_t crop_h, int32_t crop_w)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_CROP, field, op_id);
    op.u.crop.crop_h = crop_h;
    op.u.crop.crop_w = crop_w;
    return op;
}
