/* random_flip3d: mirror each of a volume's three axes independently with
 * probability p, keyed per element. */
#include <string.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    sl_status st = sl__volume_geometry(field, "random_flip3d", index, c, err);
    if (st)
        return st;
    if (!(c->op->u.flip.p >= 0.0f && c->op->u.flip.p <= 1.0f))
        return sl_fail(err, SL_EINVAL, "op %d: flip probability must be in [0, 1]", index);
    return SL_OK;
}

/* One Philox block per element: word a decides axis a (depth, height,
 * width), so the three decisions are independent. */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BITS, 3);
    rule->bound[0] = SL_AXIS_D;
    rule->bound[1] = SL_AXIS_H;
    rule->bound[2] = SL_AXIS_W;
    rule->p = c->op->u.flip.p;
}

unsigned sl__flip3d_axes(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element)
{
    int32_t axes[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__op_decide(ctx, c, element, axes);
    return (unsigned)axes[0];
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)scratch;
    if (in != out)
        memcpy(out, in, c->in_bytes * (size_t)count);
    for (int64_t r = 0; r < count; r++) {
        unsigned axes = sl__flip3d_axes(ctx, c, ids[r]);
        if (axes)
            ctx->kernels->flip3d((char *)out + (size_t)r * c->out_bytes, c->d, c->h, c->w, c->pixel_bytes, axes);
    }
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->flip3d_rows(in, out, ctx->rows, c->d, c->h, c->w, c->pixel_bytes, ctx->decisions, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_F32("p", flip.p)};

const sl__op_desc sl__op_random_flip3d_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .rows = rows,
    .decision_columns = "axes",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_random_flip3d(const char *field, uint32_t op_id, float p)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_FLIP3D, field, op_id);
    op.u.flip.p = p;
    return op;
}
