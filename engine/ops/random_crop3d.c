/* random_crop3d: a d' x h' x w' patch of a volume at a keyed uniform offset.
 * The patch is the output (the field's shape becomes the patch's), not a
 * crop padded back to the volume's size as the 2D random_crop does: patch
 * training exists to feed the network a smaller tensor, and padding a 3/4
 * patch back would carry 58% zeros through every later op and transfer. */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    sl_status st = sl__volume_geometry(field, "random_crop3d", index, c, err);
    if (st)
        return st;
    const int32_t patch[3] = {op->u.patch.d, op->u.patch.h, op->u.patch.w};
    const int size[3] = {c->d, c->h, c->w};
    for (int a = 0; a < 3; a++)
        if (patch[a] < 1 || patch[a] > size[a])
            return sl_fail(err, SL_EINVAL, "op %d: patch %dx%dx%d does not fit field '%s' of %dx%dx%d", index, patch[0],
                           patch[1], patch[2], field->name, size[0], size[1], size[2]);
    for (int a = 0; a < 3; a++)
        field->shape.dims[a] = patch[a];
    c->out_bytes = (size_t)patch[0] * (size_t)patch[1] * (size_t)patch[2] * c->pixel_bytes;
    return SL_OK;
}

/* One Philox block per element: words 0, 1, 2 give the depth, height and
 * width offsets, each uniform over the positions where the patch fits. */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BELOW, 3);
    rule->bound[0] = (uint32_t)(c->d - c->op->u.patch.d + 1);
    rule->bound[1] = (uint32_t)(c->h - c->op->u.patch.h + 1);
    rule->bound[2] = (uint32_t)(c->w - c->op->u.patch.w + 1);
}

void sl__crop3d_offsets(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int offset[3])
{
    int32_t drawn[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__op_decide(ctx, c, element, drawn);
    for (int i = 0; i < 3; i++)
        offset[i] = drawn[i];
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)scratch;
    for (int64_t r = 0; r < count; r++) {
        int o[3];
        sl__crop3d_offsets(ctx, c, ids[r], o);
        ctx->kernels->crop3d((const char *)in + (size_t)r * c->in_bytes, (char *)out + (size_t)r * c->out_bytes, c->d,
                             c->h, c->w, c->pixel_bytes, c->op->u.patch.d, c->op->u.patch.h, c->op->u.patch.w, o[0],
                             o[1], o[2]);
    }
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->crop3d_rows(in, out, ctx->rows, c->d, c->h, c->w, c->pixel_bytes, c->op->u.patch.d,
                                    c->op->u.patch.h, c->op->u.patch.w, ctx->decisions, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("d", patch.d), SL__PARAM_I32("h", patch.h),
                                      SL__PARAM_I32("w", patch.w)};

const sl__op_desc sl__op_random_crop3d_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = false,
    .compile = compile,
    .rows = rows,
    .decision_columns = "off_d,off_h,off_w",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_random_crop3d(const char *field, uint32_t op_id, int32_t patch_d, int32_t patch_h, int32_t patch_w)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_CROP3D, field, op_id);
    op.u.patch.d = patch_d;
    op.u.patch.h = patch_h;
    op.u.patch.w = patch_w;
    return op;
}
