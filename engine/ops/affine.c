/* affine: per-channel y = x * scale[c] + bias[c] on f32, with scale and bias
 * learnable. Its VJP gives the input's cotangent dy * scale[c] and the
 * parameters' gradients: sum dy * x per channel for the scale, sum dy for
 * the bias. */
#include <stdlib.h>

#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    int channels = op->u.affine.channels;
    int64_t last = field->shape.rank ? field->shape.dims[field->shape.rank - 1] : 1;
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: affine takes f32, field '%s' is %s (normalize it first)", index,
                       field->name, sl_dtype_name(field->dtype));
    if (channels < 1 || channels > SL_MAX_CHANNELS || (channels != 1 && channels != last))
        return sl_fail(err, SL_EINVAL, "op %d: affine has %d channels; field '%s' needs 1 or its last dimension %lld",
                       index, channels, field->name, (long long)last);
    sl_affine_consts *k = malloc(sizeof *k);
    if (!k)
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate affine constants", index);
    sl_status st = sl_affine_consts_init(k, channels, op->u.affine.scale, op->u.affine.bias, err);
    if (st) {
        free(k);
        return sl_fail_context(err, "op %d (affine of field '%s')", index, field->name);
    }
    c->state = k;
    return SL_OK;
}

static void release(sl__compiled_op *c)
{
    if (c->state)
        sl_affine_consts_release(c->state);
    free(c->state);
    c->state = NULL;
}

static int64_t pixels_of(const sl__compiled_op *c, int64_t count)
{
    const sl_affine_consts *k = c->state;
    return c->values / k->channels * count;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    ctx->kernels->affine_f32(in, out, pixels_of(c, count), c->state);
}

/* The gradients read dy before dx is written, because dx may be dy. */
static void vjp(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *x,
                const float *dy, float *dx, double *dparams)
{
    (void)ids;
    const sl_affine_consts *k = c->state;
    int64_t pixels = pixels_of(c, count);
    ctx->kernels->affine_grads(x, dy, pixels, k->channels, dparams, dparams + k->channels);
    if (dx)
        ctx->kernels->mul_channels(dy, dx, pixels, k->channels, k->scale);
}

/* scale[0..channels) then bias[0..channels). */
static int64_t param_count(const sl_op *op)
{
    int channels = op->u.affine.channels;
    return channels >= 1 && channels <= SL_MAX_CHANNELS ? 2 * (int64_t)channels : 0;
}

static float *param_at(sl_op *op, int64_t k)
{
    int64_t channels = op->u.affine.channels;
    return k < channels ? &op->u.affine.scale[k] : &op->u.affine.bias[k - channels];
}

static const sl__param_column channel_columns[] = {
    SL__COLUMN_F32("scale", affine.scale),
    SL__COLUMN_F32("bias", affine.bias),
};

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    const sl_affine_consts *k = c->state;
    sl_device_channels channels = sl__device_channels(k->channels, k->scale, k->bias);
    return ctx->device->affine_f32(in, out, ctx->rows * c->values, &channels, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_TABLE("channels", affine.channels, channel_columns)};

const sl__op_desc sl__op_affine_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .release = release,
    .rows = rows,
    .device_rows = device_rows,
    .vjp = vjp,
    .vjp_needs_input = true,
    .param_count = param_count,
    .param_at = param_at,
    SL__PARAMS(params),
};

sl_op sl_op_affine(const char *field, int32_t channels, const float *scale, const float *bias)
{
    sl_op op = sl__op_on(SL_OP_AFFINE, field, 0);
    op.u.affine.channels = channels;
    for (int32_t c = 0; c < channels && c < SL_MAX_CHANNELS; c++) {
        op.u.affine.scale[c] = scale[c];
        op.u.affine.bias[c] = bias[c];
    }
    return op;
}
