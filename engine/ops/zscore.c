/* zscore: each element's values to (x - mean) * (1 / std), with the mean and
 * the (population) standard deviation of that element alone: MONAI's
 * NormalizeIntensity over a whole volume. The statistics are a reduction in
 * double in the fixed order of sl_moments_fn; the step after it is the
 * normalize step of the element-wise chain with float constants, so every
 * back end computes the same bits (docs/determinism.md states the bound
 * against exact arithmetic). */
#include <math.h>
#include <string.h>

#include "kernels/bodies.h"
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: zscore takes f32, field '%s' is %s (normalize it first)", index,
                       field->name, sl_dtype_name(field->dtype));
    if (c->values < 1)
        return sl_fail(err, SL_EINVAL, "op %d: zscore needs at least one value per element of field '%s'", index,
                       field->name);
    return SL_OK;
}

/* The mean and 1 / std of one element as the float constants of a normalize
 * step. A constant element (std 0) keeps 1 as its scale, as MONAI does, so
 * it becomes all zeros instead of NaN. */
static sl_ew_step zscore_step(const sl_kernel_table *k, const float *x, int64_t n)
{
    double mean, var;
    k->moments(x, n, &mean, &var);
    sl_ew_step step = {.kind = SL_EW_NORMALIZE};
    sl__body_zscore_constants(mean, var, &step.a, &step.b);
    return step;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    for (int64_t r = 0; r < count; r++) {
        const float *src = (const float *)((const char *)in + (size_t)r * c->in_bytes);
        float *dst = (float *)((char *)out + (size_t)r * c->out_bytes);
        sl_ew_step step = zscore_step(ctx->kernels, src, c->values);
        if (dst != src)
            memcpy(dst, src, c->in_bytes);
        ctx->kernels->ew_chain(dst, c->values, &step, 1);
    }
}

/* On a device: each row's moments in the same fixed order of partial sums
 * in double (one thread per row), then the same normalize step. */
static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->zscore_rows(in, out, ctx->rows, c->values, ctx->scratch, ctx->stream);
}

static size_t device_scratch(const sl_device *device, const sl__compiled_op *c, int64_t capacity)
{
    (void)device;
    (void)c;
    return (size_t)SL_DEVICE_ZSCORE_SCRATCH(capacity) * sizeof(double);
}

const sl__op_desc sl__op_zscore_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .rows = rows,
    .device_rows = device_rows,
    .device_scratch = device_scratch,
};

sl_op sl_op_zscore(const char *field)
{
    return sl__op_on(SL_OP_ZSCORE, field, 0);
}
