/* rebatch: a batch op that splits the batch into micro-batches of `micro`
 * rows, each a batch of its own (a copy, as a consumer that hands
 * micro-batches to separate devices or accumulation steps needs), and
 * concatenates them back (sluice/pipeline/rebatch.h). The batch comes out as it went
 * in; what the op costs is the round trip, timed inside the batch like any
 * batch op. Its VJP is the VJPs of the concatenation and of the split, in
 * that order, on the field's cotangent: the identity. */
#include <stdlib.h>

#include "pipeline/op_desc.h"
#include "sluice/pipeline/rebatch.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    int32_t micro = c->op->u.rebatch.micro;
    if (micro < 1 || micro > p->spec.batch_size)
        return sl_fail(err, SL_EINVAL, "op %d: rebatch micro-batches of %d rows must be in [1, batch size %lld]", index,
                       micro, (long long)p->spec.batch_size);
    (void)field;
    return SL_OK;
}

static sl_status batch(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *b, sl_err *err)
{
    (void)ctx;
    int64_t micro = c->op->u.rebatch.micro, nparts = sl_rebatch_count(b->count, micro);
    sl_batch **parts = calloc((size_t)nparts, sizeof *parts);
    if (!parts)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %lld micro-batch slots", (long long)nparts);
    sl_status st = sl_batch_split_copies(b, micro, parts, nparts, err);
    if (!st)
        st = sl_batch_concat((const sl_batch *const *)parts, nparts, b, err);
    for (int64_t k = 0; k < nparts; k++)
        sl_batch_free(parts[k]);
    free(parts);
    return st;
}

static sl_status batch_vjp(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *b, sl_tensor *cotangent,
                           sl_err *err)
{
    (void)ctx;
    (void)b;
    int64_t micro = c->op->u.rebatch.micro, rows = cotangent->shape.dims[0];
    int64_t nparts = sl_rebatch_count(rows, micro);
    size_t row = sl_tensor_nbytes(cotangent) / (size_t)(rows > 0 ? rows : 1);
    sl_tensor *parts = calloc((size_t)nparts, sizeof *parts);
    void *storage = malloc(sl_tensor_nbytes(cotangent) + 1);
    if (!parts || !storage) {
        free(parts);
        free(storage);
        return sl_fail(err, SL_ENOMEM, "cannot allocate the micro-batch cotangents");
    }
    for (int64_t k = 0; k < nparts; k++) {
        parts[k] = *cotangent;
        parts[k].shape.dims[0] = rows - k * micro < micro ? rows - k * micro : micro;
        parts[k].data = (char *)storage + (size_t)(k * micro) * row;
    }
    /* Forward was split then concatenate, so backward is the
     * concatenation's VJP (a split), then the split's (a concatenation). */
    sl_status st = sl_rebatch_concat_vjp(cotangent, micro, parts, nparts, err);
    if (!st)
        st = sl_rebatch_split_vjp(parts, nparts, cotangent, err);
    free(parts);
    free(storage);
    return st;
}

/* On a device: the same round trip, each field split into a copy and
 * concatenated back, as two device-to-device copies of its rows. */
static int device_batch(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields)
{
    (void)c;
    const sl_schema *schema = &ctx->pipeline->output_schema;
    for (int f = 0; f < schema->nfields; f++) {
        size_t bytes = (size_t)ctx->rows * sl_field_element_bytes(&schema->fields[f]);
        int e = ctx->device->copy(fields->spare[f], fields->data[f], bytes, SL_DEVICE_DEVICE_TO_DEVICE, ctx->stream);
        if (!e)
            e = ctx->device->copy(fields->data[f], fields->spare[f], bytes, SL_DEVICE_DEVICE_TO_DEVICE, ctx->stream);
        if (e)
            return e;
    }
    return 0;
}

static const sl__op_param params[] = {SL__PARAM_I32("micro", rebatch.micro)};

const sl__op_desc sl__op_rebatch_desc = {
    .phase = SL__PHASE_BATCH,
    .compile = compile,
    .batch = batch,
    .batch_vjp = batch_vjp,
    .device_batch = device_batch,
    SL__PARAMS(params),
};

sl_op sl_op_rebatch(const char *field, int32_t micro)
{
    sl_op op = sl__op_on(SL_OP_REBATCH, field, 0);
    op.u.rebatch.micro = micro;
    return op;
}
