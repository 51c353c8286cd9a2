/* Helpers every op descriptor shares. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "pipeline/op_desc.h"

sl_status sl__image_geometry(const sl_field_spec *field, const char *what, int index, sl__compiled_op *c, sl_err *err)
{
    if (field->shape.rank != 2 && field->shape.rank != 3)
        return sl_fail(err, SL_EINVAL, "op %d: %s needs an image field [h, w] or [h, w, c], but field '%s' has rank %d",
                       index, what, field->name, field->shape.rank);
    c->h = (int)field->shape.dims[0];
    c->w = (int)field->shape.dims[1];
    int64_t channels = field->shape.rank == 3 ? field->shape.dims[2] : 1;
    c->pixel_bytes = (size_t)channels * sl_dtype_size(field->dtype);
    return SL_OK;
}

sl_status sl__volume_geometry(const sl_field_spec *field, const char *what, int index, sl__compiled_op *c, sl_err *err)
{
    if (field->shape.rank != 3 && field->shape.rank != 4)
        return sl_fail(err, SL_EINVAL,
                       "op %d: %s needs a volume field [d, h, w] or [d, h, w, c], but field '%s' has rank %d", index,
                       what, field->name, field->shape.rank);
    c->d = (int)field->shape.dims[0];
    c->h = (int)field->shape.dims[1];
    c->w = (int)field->shape.dims[2];
    int64_t channels = field->shape.rank == 4 ? field->shape.dims[3] : 1;
    c->pixel_bytes = (size_t)channels * sl_dtype_size(field->dtype);
    return SL_OK;
}

sl_philox_ctr sl__op_draw(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, uint32_t draw)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)ctx->epoch, draw),
                            sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id));
}

sl_decide_rule sl__op_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_kind kind, int columns)
{
    sl_decide_rule rule;
    memset(&rule, 0, sizeof rule);
    rule.key = sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id);
    rule.kind = kind;
    rule.columns = columns;
    return rule;
}

void sl__op_decide(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int32_t *out)
{
    sl_decide_rule rule;
    c->desc->decide(ctx, c, &rule);
    sl__decide(&rule, element, ctx->epoch, out);
}

bool sl__ew_step_by_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, sl_ew_step *step)
{
    sl_step_rule rule;
    c->desc->step_rule(ctx, c, &rule);
    sl__step_for(&rule, element, ctx->epoch, step);
    return true;
}

sl_philox_ctr sl__op_batch_draw(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch, uint32_t draw)
{
    (void)ctx;
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)batch->index, (uint32_t)batch->epoch, draw),
                            sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id));
}

void sl__rows_by_ew_step(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count,
                         const void *in, void *out, void *scratch)
{
    (void)scratch;
    for (int64_t r = 0; r < count; r++) {
        const char *src = (const char *)in + (size_t)r * c->in_bytes;
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        sl_ew_step step;
        c->desc->ew_step(ctx, c, ids[r], &step);
        if ((const void *)dst != (const void *)src)
            memcpy(dst, src, c->in_bytes);
        ctx->kernels->ew_chain(dst, c->values, &step, 1);
    }
}

sl_status sl__require_f32(const sl_field_spec *field, const char *what, int index, sl_err *err)
{
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: %s takes f32, field '%s' is %s (normalize it first)", index, what,
                       field->name, sl_dtype_name(field->dtype));
    return SL_OK;
}

static void fingerprint_i64(XXH3_state_t *state, int64_t value)
{
    XXH3_64bits_update(state, &value, sizeof value);
}

static void fingerprint_f32(XXH3_state_t *state, float value)
{
    XXH3_64bits_update(state, &value, sizeof value);
}

static const void *at(const sl_op *op, size_t offset)
{
    return (const char *)op + offset;
}

void sl__op_fingerprint(const sl_op *op, XXH3_state_t *state)
{
    const sl__op_desc *desc = sl__op_desc_of(op->kind);
    for (int i = 0; desc && i < desc->nparams; i++) {
        const sl__op_param *param = &desc->params[i];
        const void *value = at(op, param->offset);
        switch (param->type) {
        case SL__PARAM_I32: fingerprint_i64(state, *(const int32_t *)value); break;
        case SL__PARAM_I64: fingerprint_i64(state, *(const int64_t *)value); break;
        case SL__PARAM_F32: fingerprint_f32(state, *(const float *)value); break;
        case SL__PARAM_NAME: XXH3_64bits_update(state, value, strlen(value) + 1); break;
        case SL__PARAM_TABLE: {
            int32_t rows = *(const int32_t *)value;
            fingerprint_i64(state, rows);
            for (int r = 0; r < rows && r < SL_MAX_CHANNELS; r++)
                for (int k = 0; k < param->ncolumns; k++) {
                    const sl__param_column *column = &param->columns[k];
                    if (column->derive)
                        continue;
                    if (column->type == SL__PARAM_I64)
                        fingerprint_i64(state, ((const int64_t *)at(op, column->offset))[r]);
                    else
                        fingerprint_f32(state, ((const float *)at(op, column->offset))[r]);
                }
            break;
        }
        }
    }
}

sl_status sl__add_batch_field(sl_pipeline *p, int index, const char *what, const char *name, sl_dtype dtype,
                              const sl_shape *shape, int *out, sl_err *err)
{
    sl_schema *schema = &p->output_schema;
    if (name[0] == '\0')
        return sl_fail(err, SL_EINVAL, "op %d: %s needs a name for the field it adds", index, what);
    if (sl_schema_find(schema, name) >= 0)
        return sl_fail(err, SL_EINVAL, "op %d: %s adds field '%s', which already exists", index, what, name);
    if (schema->nfields >= SL_MAX_FIELDS)
        return sl_fail(err, SL_EINVAL, "op %d: %s cannot add field '%s': a batch holds at most %d fields", index, what,
                       name, SL_MAX_FIELDS);
    sl_field_spec *field = &schema->fields[schema->nfields];
    memset(field, 0, sizeof *field);
    snprintf(field->name, sizeof field->name, "%s", name);
    field->dtype = dtype;
    field->shape = *shape;
    *out = schema->nfields++;
    return SL_OK;
}

sl_status sl__length_field(const sl_pipeline *p, int index, const char *what, const char *name, int *out, sl_err *err)
{
    int f = sl_schema_find(&p->source_schema, name);
    if (f < 0)
        return sl_fail(err, SL_EINVAL, "op %d: %s names length field '%s', which the source does not have", index, what,
                       name);
    const sl_field_spec *field = &p->source_schema.fields[f];
    if (field->dtype != SL_I32 || field->shape.rank != 0)
        return sl_fail(err, SL_EINVAL, "op %d: %s needs length field '%s' as i32 scalars, it is %s rank %d", index,
                       what, name, sl_dtype_name(field->dtype), field->shape.rank);
    /* The element phase may not have changed it: the lengths are the
     * source's. */
    if (p->output_schema.fields[f].dtype != SL_I32 || p->output_schema.fields[f].shape.rank != 0)
        return sl_fail(err, SL_EINVAL, "op %d: %s: length field '%s' was changed by an earlier op", index, what, name);
    *out = f;
    return SL_OK;
}

sl_op sl__op_on(sl_op_kind kind, const char *field, uint32_t op_id)
{
    sl_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.op_id = op_id;
    sl__copy_string(op.field, sizeof op.field, field);
    return op;
}

sl_device_channels sl__device_channels(int channels, const float *a, const float *b)
{
    sl_device_channels k = {.channels = channels};
    for (int ch = 0; ch < channels && ch < SL_MAX_CHANNELS; ch++) {
        k.a[ch] = a[ch];
        k.b[ch] = b[ch];
    }
    return k;
}

int sl__device_copy_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, const void *in, void *out)
{
    return ctx->device->copy(out, in, (size_t)ctx->rows * c->in_bytes, SL_DEVICE_DEVICE_TO_DEVICE, ctx->stream);
}

void sl__device_swap(sl__device_fields *fields, int field)
{
    void *rows = fields->data[field];
    fields->data[field] = fields->spare[field];
    fields->spare[field] = rows;
}

int sl__column_count(const char *columns)
{
    if (!columns || !*columns)
        return 0;
    int n = 1;
    for (const char *c = columns; *c; c++)
        n += *c == ',';
    return n;
}

size_t sl__device_partners_offset(const sl__op_desc *desc)
{
    return ((size_t)sl__column_count(desc->batch_decision_columns) * sizeof(float) + 7) / 8 * 8;
}
