/* trig_rounds: y = sin y + cos y, `rounds` times, per f32 value (IO-4's
 * expensive op; see sl_trig_rounds_fn). */
#include "pipeline/op_desc.h"

/* More rounds than any scenario needs, and few enough that a typo (800 for
 * 8) is refused rather than run for an hour. */
#define TRIG_ROUNDS_MAX 64

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    if (field->dtype != SL_F32)
        return sl_fail(err, SL_EINVAL, "op %d: trig_rounds takes f32, field '%s' is %s", index, field->name,
                       sl_dtype_name(field->dtype));
    int rounds = c->op->u.rounds.count;
    if (rounds < 1 || rounds > TRIG_ROUNDS_MAX)
        return sl_fail(err, SL_EINVAL, "op %d: trig_rounds on field '%s' has %d rounds; it takes 1 to %d", index,
                       field->name, rounds, TRIG_ROUNDS_MAX);
    return SL_OK;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    (void)scratch;
    ctx->kernels->trig_rounds(in, out, c->values * count, c->op->u.rounds.count);
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    return ctx->device->trig_rounds(in, out, ctx->rows * c->values, c->op->u.rounds.count, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("rounds", rounds.count)};

const sl__op_desc sl__op_trig_rounds_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = true,
    .compile = compile,
    .rows = rows,
    .device_rows = device_rows,
    SL__PARAMS(params),
};

sl_op sl_op_trig_rounds(const char *field, int32_t rounds)
{
    sl_op op = sl__op_on(SL_OP_TRIG_ROUNDS, field, 0);
    op.u.rounds.count = rounds;
    return op;
}
