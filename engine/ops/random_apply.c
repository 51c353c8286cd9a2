/* random_apply: the ops_a ops after this one run on an element when its
 * keyed uniform falls below p, and the element passes unchanged otherwise.
 * The decision is keyed by (seed, op id, epoch, element), so the same
 * elements are chosen whatever the batch size, workers or executor. */
#include <string.h>

#include "subchain.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    return sl__subchain_compile(p, index, c, field, 1, false, err);
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    for (int64_t r = 0; r < count; r++) {
        const char *src = (const char *)in + (size_t)r * c->in_bytes;
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        if ((const void *)dst != (const void *)src)
            memcpy(dst, src, c->in_bytes);
        if (sl__subchain_decision(ctx, c, ids[r]))
            sl__subchain_run(ctx, c, 0, ids[r], dst, scratch);
    }
}

/* On a device: the branch on every row's copy, then each row takes the
 * branch's result or its input by its decision. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    const sl__subchain *s = c->state;
    int e = sl__device_copy_rows(ctx, c, in, out);
    if (!e)
        e = ctx->run_nested(ctx, s->first[0], s->count[0], out);
    if (!e)
        e = ctx->device->select_rows(out, out, in, ctx->rows, c->in_bytes, ctx->decisions, ctx->stream);
    return e;
}

const sl__op_desc sl__op_random_apply_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .release = sl__subchain_release,
    .rows = rows,
    .nested = sl__subchain_nested,
    .decision_columns = "apply",
    /* The element's pick as rows() makes it (sl__subchain_rule): 1 when
     * ops_a run on the element. */
    .decisions = sl__op_decide,
    .decide = sl__subchain_rule,
    .device_rows = device_rows,
    SL__PARAMS(sl__subchain_params),
};

sl_op sl_op_random_apply(const char *field, uint32_t op_id, float p, int32_t ops)
{
    return sl__subchain_op(SL_OP_RANDOM_APPLY, field, op_id, p, ops, 0);
}
