/* random_choice: per element, branch a (the ops_a ops after this one) when
 * its keyed uniform falls below p, else branch b (the ops_b after those).
 * Keyed by (seed, op id, epoch, element) like random_apply. */
#include <string.h>

#include "subchain.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    return sl__subchain_compile(p, index, c, field, 2, false, err);
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    for (int64_t r = 0; r < count; r++) {
        const char *src = (const char *)in + (size_t)r * c->in_bytes;
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        if ((const void *)dst != (const void *)src)
            memcpy(dst, src, c->in_bytes);
        sl__subchain_run(ctx, c, sl__subchain_decision(ctx, c, ids[r]) ? 0 : 1, ids[r], dst, scratch);
    }
}

/* The element's pick as rows() makes it: 0 for branch a, 1 for branch b
 * (the sub-chain's draw, inverted). */
static void decide(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule)
{
    sl__subchain_rule(ctx, c, rule);
    rule->invert = 1;
}

/* On a device: branch a on a copy in out and branch b on in itself, then
 * each row takes one by its decision (1: branch b). */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    int e = sl__subchain_device_both(ctx, c, in, out);
    if (!e)
        e = ctx->device->select_rows(out, in, out, ctx->rows, c->in_bytes, ctx->decisions, ctx->stream);
    return e;
}

const sl__op_desc sl__op_random_choice_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .release = sl__subchain_release,
    .rows = rows,
    .nested = sl__subchain_nested,
    .decision_columns = "branch",
    .decisions = sl__op_decide,
    .decide = decide,
    .device_rows = device_rows,
    SL__PARAMS(sl__subchain_params),
};

sl_op sl_op_random_choice(const char *field, uint32_t op_id, float p, int32_t ops_a, int32_t ops_b)
{
    return sl__subchain_op(SL_OP_RANDOM_CHOICE, field, op_id, p, ops_a, ops_b);
}
