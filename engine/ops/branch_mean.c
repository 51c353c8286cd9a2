/* branch_mean: a graph, not a chain. The element's value x goes down two
 * sub-chains (the ops_a ops after this one, and the ops_b after those),
 * each on its own copy, and the field becomes their mean. The branches'
 * ops draw under their own op ids, so their numbers are independent. */
#include <string.h>

#include "subchain.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    return sl__subchain_compile(p, index, c, field, 2, true, err);
}

/* Branch a runs in the output row, branch b in a copy in scratch; the mean
 * is the blend kernel with both weights 0.5: a * 0.5 and b * 0.5 are exact
 * (for normal floats), so their rounded sum is (a + b) * 0.5 rounded once
 * in float, without the overflow of a + b near FLT_MAX. */
static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    float *second = scratch;
    for (int64_t r = 0; r < count; r++) {
        const char *src = (const char *)in + (size_t)r * c->in_bytes;
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        memcpy(second, src, c->in_bytes);
        if ((const void *)dst != (const void *)src)
            memcpy(dst, src, c->in_bytes);
        sl__subchain_run(ctx, c, 0, ids[r], dst, scratch);
        sl__subchain_run(ctx, c, 1, ids[r], second, scratch);
        ctx->kernels->blend(dst, dst, second, c->values, 0.5f, 0.5f);
    }
}

/* On a device: branch a on a copy in out, branch b on in itself (the
 * executor's working rows, free to overwrite), then the same blend. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    int e = sl__subchain_device_both(ctx, c, in, out);
    if (!e)
        e = ctx->device->blend(out, out, in, ctx->rows * c->values, 0.5f, 0.5f, ctx->stream);
    return e;
}

const sl__op_desc sl__op_branch_mean_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .release = sl__subchain_release,
    .rows = rows,
    .nested = sl__subchain_nested,
    .device_rows = device_rows,
    SL__PARAMS(sl__subchain_params),
};

sl_op sl_op_branch_mean(const char *field, int32_t ops_a, int32_t ops_b)
{
    return sl__subchain_op(SL_OP_BRANCH_MEAN, field, 0, 1.0f, ops_a, ops_b);
}
