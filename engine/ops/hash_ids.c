/* hash_ids: every raw id of column j of an i64 [columns] field becomes an
 * index into column j's embedding table: the high 32 bits of SplitMix64's
 * finalizer of the id, modulo the table size. A negative id is a missing
 * value and stays SL_ID_MISSING (an empty bag for bag_offsets). */
#include <stdlib.h>

#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    if (field->dtype != SL_I64 || field->shape.rank != 1)
        return sl_fail(err, SL_EINVAL, "op %d: hash_ids needs an i64 [columns] field, field '%s' is %s rank %d", index,
                       field->name, sl_dtype_name(field->dtype), field->shape.rank);
    if (op->u.hash.columns != field->shape.dims[0])
        return sl_fail(err, SL_EINVAL, "op %d: hash_ids has %d table sizes for the %lld columns of field '%s'", index,
                       op->u.hash.columns, (long long)field->shape.dims[0], field->name);
    sl_hash_consts *consts = malloc(sizeof *consts);
    if (!consts)
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate hash_ids constants", index);
    c->state = consts;
    sl_status st = sl_hash_consts_init(consts, op->u.hash.columns, op->u.hash.sizes, err);
    if (st)
        sl_fail_context(err, "op %d (hash_ids of field '%s')", index, field->name);
    return st;
}

static void release(sl__compiled_op *c)
{
    free(c->state);
    c->state = NULL;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    ctx->kernels->hash_ids(in, out, count, c->state);
}

static const sl__param_column column_sizes[] = {SL__COLUMN_I64("sizes", hash.sizes)};

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->hash_ids(in, out, ctx->rows, c->state, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_TABLE("columns", hash.columns, column_sizes)};

const sl__op_desc sl__op_hash_ids_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .release = release,
    .rows = rows,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_hash_ids(const char *field, int32_t columns, const int64_t *sizes)
{
    sl_op op = sl__op_on(SL_OP_HASH_IDS, field, 0);
    op.u.hash.columns = columns;
    for (int32_t j = 0; j < columns && j < SL_MAX_CHANNELS; j++)
        op.u.hash.sizes[j] = sizes[j];
    return op;
}
