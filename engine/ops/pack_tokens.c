/* pack_tokens: cut a stream of i32 tokens into sequences of seq_len, padding
 * past the stream's end. It runs while an element is gathered
 * (sl__gather_element), so it has no rows of its own. */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    const sl_op *op = c->op;
    if (index != 0)
        return sl_fail(err, SL_EINVAL, "op %d: pack_tokens must be the first op", index);
    if (field->dtype != SL_I32 || field->shape.rank != 0)
        return sl_fail(err, SL_EINVAL, "op %d: pack_tokens needs a stream of i32 scalars, field '%s' is %s rank %d",
                       index, field->name, sl_dtype_name(field->dtype), field->shape.rank);
    if (p->source_schema.nfields != 1)
        return sl_fail(err, SL_EINVAL, "op %d: pack_tokens needs a source with only the token field", index);
    if (op->u.pack.seq_len <= 0)
        return sl_fail(err, SL_EINVAL, "op %d: pack_tokens seq_len must be positive, got %d", index,
                       op->u.pack.seq_len);
    p->pack_field = c->field;
    p->seq_len = op->u.pack.seq_len;
    p->pad_id = op->u.pack.pad_id;
    p->stream_tokens = sl_source_rows(p->source);
    field->shape.rank = 1;
    field->shape.dims[0] = op->u.pack.seq_len;
    c->values = op->u.pack.seq_len;
    /* Gathering already produces the packed layout, so the op's own layout
     * change is not a stage of its own. */
    c->in_bytes = c->out_bytes = (size_t)op->u.pack.seq_len * sizeof(int32_t);
    return SL_OK;
}

static const sl__op_param params[] = {SL__PARAM_I32("seq_len", pack.seq_len), SL__PARAM_I32("pad_id", pack.pad_id)};

const sl__op_desc sl__op_pack_tokens_desc = {
    .phase = SL__PHASE_SOURCE,
    .compile = compile,
    SL__PARAMS(params),
};

sl_op sl_op_pack_tokens(const char *field, int32_t seq_len, int32_t pad_id)
{
    sl_op op = sl__op_on(SL_OP_PACK_TOKENS, field, 0);
    op.u.pack.seq_len = seq_len;
    op.u.pack.pad_id = pad_id;
    return op;
}
