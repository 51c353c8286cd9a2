/* dropout: in training, each value of an element is dropped (set to 0)
 * with probability p and the kept ones are scaled by 1 / (1 - p), so the
 * expected value is unchanged; in eval mode it is the identity. The mask is
 * keyed by (seed, op id) and the element's id, epoch and value index
 * (sl_dropout_fn), so it is the same whatever the batch, worker or executor,
 * and the backward pass recomputes it instead of storing it. */
#include <string.h>

#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: dropout takes f32, field '%s' is %s (normalize it first)", index,
                       field->name, sl_dtype_name(field->dtype));
    float drop = c->op->u.dropout.p;
    if (!(drop >= 0.0f && drop < 1.0f))
        return sl_fail(err, SL_EINVAL, "op %d: dropout probability must be in [0, 1), got %g", index, (double)drop);
    return SL_OK;
}

/* ceil(p 2^32) without libm: p 2^32 is exact in double (p is a float below
 * 1), so the threshold is its integer part, plus one unless it was whole.
 * A value is then dropped with probability threshold / 2^32, which is p
 * rounded up to the next multiple of 2^-32. */
static uint32_t threshold_of(float drop)
{
    double scaled = (double)drop * 4294967296.0;
    uint64_t whole = (uint64_t)scaled;
    return (uint32_t)(whole + ((double)whole < scaled));
}

static sl_dropout_key key_of(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element)
{
    float drop = c->op->u.dropout.p;
    return (sl_dropout_key){
        .key = sl_philox_key_for(ctx->pipeline->spec.seed, c->op->op_id),
        .element = (uint64_t)element,
        .epoch = (uint32_t)ctx->epoch,
        .threshold = threshold_of(drop),
        .scale = 1.0f / (1.0f - drop),
    };
}

static bool training(const sl__op_ctx *ctx)
{
    return ctx->pipeline->spec.mode == SL_MODE_TRAIN;
}

/* The mask applied to `count` elements of src: the forward pass on values,
 * the backward pass on cotangents. */
static void apply(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const float *src,
                  float *dst)
{
    if (!training(ctx)) {
        if (src != dst)
            memcpy(dst, src, (size_t)count * (size_t)c->values * sizeof(float));
        return;
    }
    for (int64_t r = 0; r < count; r++) {
        sl_dropout_key d = key_of(ctx, c, ids[r]);
        size_t at = (size_t)r * (size_t)c->values;
        ctx->kernels->dropout(src + at, dst + at, c->values, &d);
    }
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)scratch;
    apply(ctx, c, ids, count, in, out);
}

/* y = m x / (1 - p) with m fixed by the keys, so dx = m dy / (1 - p): the
 * forward pass itself, on the cotangent. */
static void vjp(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *x,
                const float *dy, float *dx, double *dparams)
{
    (void)x;
    (void)dparams;
    if (dx)
        apply(ctx, c, ids, count, dy, dx);
}

/* On a device: the same keyed mask, each row keyed by its element id and
 * the batch's epoch read from device memory (so a graph replays it). */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    if (ctx->pipeline->spec.mode != SL_MODE_TRAIN)
        return sl__device_copy_rows(ctx, c, in, out);
    sl__op_ctx host = {ctx->pipeline, NULL, 0};
    sl_dropout_key d = key_of(&host, c, 0);
    return ctx->device->dropout_rows(in, out, ctx->rows, c->values, ctx->ids, ctx->batch, d.key, d.threshold, d.scale,
                                     ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_F32("p", dropout.p)};

const sl__op_desc sl__op_dropout_desc = {
    .phase = SL__PHASE_ELEMENT,
    .random = true,
    .in_place = true,
    .compile = compile,
    .rows = rows,
    .vjp = vjp,
    .device_rows = device_rows,
    .keyed_draws = "Philox4x32-10 with key sl_philox_key_for(seed, op_id) (mixed = mix64(seed ^ mix64(op_id)), "
                   "key (mixed mod 2^32, mixed >> 32)) and counter (element mod 2^32, element >> 32, epoch, i / 4) "
                   "for value i of an element; value i is dropped (0) when word i mod 4 is below ceil(p 2^32), "
                   "else multiplied by float32(1 / (1 - p)); the identity when the plan's mode is eval",
    SL__PARAMS(params),
};

sl_op sl_op_dropout(const char *field, uint32_t op_id, float p)
{
    sl_op op = sl__op_on(SL_OP_DROPOUT, field, op_id);
    op.u.dropout.p = p;
    return op;
}
