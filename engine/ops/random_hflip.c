/* random_hflip: mirror the width axis with probability p, keyed per element. */
#include <string.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    sl_status st = sl__image_geometry(field, "random_hflip", index, c, err);
    if (st)
        return st;
    if (!(c->op->u.flip.p >= 0.0f && c->op->u.flip.p <= 1.0f))
        return sl_fail(err, SL_EINVAL, "op %d: flip probability must be in [0, 1]", index);
    return SL_OK;
}

/* Word 0 of the element's block, as a unit float below p: flip (1). */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    *rule = sl__op_rule(ctx, c, SL_DECIDE_BITS, 1);
    rule->bound[0] = 1;
    rule->p = c->op->u.flip.p;
}

bool sl__flip_decision(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element)
{
    int32_t flip[SL_DECIDE_MAX_COLUMNS] = {0};
    sl__op_decide(ctx, c, element, flip);
    return flip[0] != 0;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)scratch;
    if (in != out)
        memcpy(out, in, c->in_bytes * (size_t)count);
    for (int64_t r = 0; r < count; r++)
        if (sl__flip_decision(ctx, c, ids[r]))
            ctx->kernels->hflip((char *)out + (size_t)r * c->out_bytes, c->h, c->w, c->pixel_bytes);
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->hflip_rows(in, out, ctx->rows, c->h, c->w, c->pixel_bytes, ctx->decisions, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_F32("p", flip.p)};

const sl__op_desc sl__op_random_hflip_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .rows = rows,
    .decision_columns = "flip",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_random_hflip(const char *field, uint32_t op_id, float p)
{
    sl_op op = sl__op_on(SL_OP_RANDOM_HFLIP, field, op_id);
    op.u.flip.p = p;
    return op;
}
