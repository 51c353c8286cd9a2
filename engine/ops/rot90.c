/* rot90: k quarter turns of a square image, k uniform in 0..3 and keyed per
 * element. Pure data movement, so every back end agrees bit for bit. */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    sl_status st = sl__image_geometry(field, "rot90", index, c, err);
    if (st)
        return st;
    /* An odd number of turns swaps height and width: a non-square image
     * would leave a batch holding two shapes, so it is refused here rather
     * than padded or cropped behind the user's back. */
    if (c->h != c->w)
        return sl_fail(err, SL_EINVAL, "op %d: rot90 needs a square image, but field '%s' is %dx%d", index, field->name,
                       c->h, c->w);
    return SL_OK;
}

/* Word 0 of draw 0, multiply-shifted to [0, 4): the top two bits, so the four
 * turns are exactly equally likely. */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BELOW, 1);
    rule->bound[0] = 4;
}

int sl__rot90_turns(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element)
{
    int32_t turns[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__op_decide(ctx, c, element, turns);
    return turns[0];
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)scratch;
    for (int64_t r = 0; r < count; r++)
        ctx->kernels->rot90((const char *)in + (size_t)r * c->in_bytes, (char *)out + (size_t)r * c->out_bytes, c->h,
                            c->pixel_bytes, sl__rot90_turns(ctx, c, ids[r]));
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->rot90_rows(in, out, ctx->rows, c->h, c->pixel_bytes, ctx->decisions, ctx->stream);
}

const sl__op_desc sl__op_rot90_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = false,
    .compile = compile,
    .rows = rows,
    /* k quarter turns counter-clockwise: numpy's rot90(image, k) over the
     * (h, w) axes. */
    .decision_columns = "k",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
};

sl_op sl_op_rot90(const char *field, uint32_t op_id)
{
    return sl__op_on(SL_OP_ROT90, field, op_id);
}
