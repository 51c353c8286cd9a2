/* normalize: per-channel (x - mean) * (1 / std), u8 or f32 in, f32 out. */
#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    int channels = op->u.normalize.channels;
    int64_t last = field->shape.rank ? field->shape.dims[field->shape.rank - 1] : 1;
    if (field->dtype != SL_U8 && field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: normalize takes u8 or f32, field '%s' is %s", index, field->name,
                       sl_dtype_name(field->dtype));
    if (channels < 1 || channels > SL_MAX_CHANNELS || (channels != 1 && channels != last))
        return sl_fail(err, SL_EINVAL,
                       "op %d: normalize has %d channels; field '%s' needs 1 or its last dimension %lld", index,
                       channels, field->name, (long long)last);
    sl_status st = sl_normalize_consts_init(&c->norm, channels, op->u.normalize.mean, op->u.normalize.std, err);
    if (st)
        return sl_fail_context(err, "op %d (normalize of field '%s')", index, field->name);
    field->dtype = SL_F32;
    c->out_dtype = SL_F32;
    c->out_bytes = (size_t)c->values * sizeof(float);
    return SL_OK;
}

static void release(sl__compiled_op *c)
{
    sl_normalize_consts_release(&c->norm);
}

/* Consecutive elements are contiguous, so a span of them is one kernel call
 * over all their pixels: what lets `iter` normalize a batch in one pass. */
static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    int64_t pixels = c->values / c->norm.channels * count;
    if (c->in_dtype == SL_U8)
        ctx->kernels->normalize_u8(in, out, pixels, &c->norm);
    else
        ctx->kernels->normalize_f32(in, out, pixels, &c->norm);
}

/* With one channel on f32 input, normalize is one arithmetic step. */
static bool ew_step(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, sl_ew_step *step)
{
    (void)ctx;
    (void)element;
    if (c->in_dtype != SL_F32 || c->norm.channels != 1)
        return false;
    *step = (sl_ew_step){.kind = SL_EW_NORMALIZE, .a = c->norm.mean[0], .b = c->norm.inv_std[0]};
    return true;
}

/* y = (x - mean[c]) / std[c], with the constants fixed: dx = dy / std[c],
 * multiplied by the same inv_std float the forward pass uses. */
static void vjp(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *x,
                const float *dy, float *dx, double *dparams)
{
    (void)ids;
    (void)x;
    (void)dparams;
    if (dx)
        ctx->kernels->mul_channels(dy, dx, c->values / c->norm.channels * count, c->norm.channels, c->norm.inv_std);
}

/* What the kernels multiply by (sl_normalize_consts_init): IEEE division
 * is correctly rounded, so the export hands a peer the same float. */
static float inv_std(const sl_op *op, int channel)
{
    return 1.0f / op->u.normalize.std[channel];
}

static const sl__param_column channel_columns[] = {
    SL__COLUMN_F32("mean", normalize.mean),
    SL__COLUMN_F32("std", normalize.std),
    {.name = "inv_std", .type = SL__PARAM_F32, .derive = inv_std},
};

/* On a device: the same per-value body over the batch's values. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    sl_device_channels k = sl__device_channels(c->norm.channels, c->norm.mean, c->norm.inv_std);
    int64_t n = ctx->rows * c->values;
    return c->in_dtype == SL_U8 ? ctx->device->normalize_u8(in, out, n, &k, ctx->stream)
                                : ctx->device->normalize_f32(in, out, n, &k, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_TABLE("channels", normalize.channels, channel_columns)};

const sl__op_desc sl__op_normalize_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .release = release,
    .rows = rows,
    .ew_step = ew_step,
    .device_rows = device_rows,
    .vjp = vjp,
    SL__PARAMS(params),
};

sl_op sl_op_normalize(const char *field, int32_t channels, const float *mean, const float *std)
{
    sl_op op = sl__op_on(SL_OP_NORMALIZE, field, 0);
    op.u.normalize.channels = channels;
    for (int32_t c = 0; c < channels && c < SL_MAX_CHANNELS; c++) {
        op.u.normalize.mean[c] = mean[c];
        op.u.normalize.std[c] = std[c];
    }
    return op;
}
