/* log_mel: a waveform field (f32 [samples]) to its log-mel spectrogram
 * (f32 [frames, mels]), Whisper's recipe (sl_melspec_consts in kernels.h).
 * The DFT matrix and the filter bank are computed once here; each element's
 * two matrix products are what the optimized table hands to OpenBLAS. One
 * product per element, never one per batch: a BLAS's blocking (and so its
 * last bits) may depend on the shape, and a per-batch shape would make an
 * element's output depend on its batch, which no sluice output may. */
#include <stdlib.h>

#include "pipeline/op_desc.h"
#include "sluice/pipeline/op_consts.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    const sl_op *op = c->op;
    if (field->dtype != SL_F32 || field->shape.rank != 1)
        return sl_fail(err, SL_EINVAL, "op %d: log_mel needs a waveform field f32 [samples], field '%s' is %s rank %d",
                       index, field->name, sl_dtype_name(field->dtype), field->shape.rank);
    if (field->shape.dims[0] > INT32_MAX)
        return sl_fail(err, SL_EINVAL, "op %d: log_mel waveforms of field '%s' are longer than 2^31", index,
                       field->name);
    sl_melspec_consts *k = calloc(1, sizeof *k);
    if (!k)
        return sl_fail(err, SL_ENOMEM, "op %d: cannot allocate log_mel constants", index);
    sl_status st = sl_melspec_consts_init(k, (int)field->shape.dims[0], op->u.mel.sample_rate, op->u.mel.frame,
                                          op->u.mel.hop, op->u.mel.n_fft, op->u.mel.mels, err);
    if (st) {
        free(k);
        return sl_fail_context(err, "op %d (log_mel of field '%s')", index, field->name);
    }
    c->state = k;
    c->scratch_bytes = sl_melspec_scratch_values(k) * sizeof(float);
    field->shape.rank = 2;
    field->shape.dims[0] = k->frames;
    field->shape.dims[1] = k->mels;
    c->out_bytes = (size_t)k->frames * (size_t)k->mels * sizeof(float);
    return SL_OK;
}

static void release(sl__compiled_op *c)
{
    if (c->state)
        sl_melspec_consts_release(c->state);
    free(c->state);
    c->state = NULL;
}

static void rows(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch)
{
    (void)ids;
    const sl_melspec_consts *k = c->state;
    for (int64_t r = 0; r < count; r++)
        ctx->kernels->log_mel((const float *)((const char *)in + (size_t)r * c->in_bytes),
                              (float *)((char *)out + (size_t)r * c->out_bytes), k, scratch);
}

/* On a device: the DFT and filter matrices copied to the device once per
 * run, and every row of the batch through the device's BLAS (two matrix
 * products over the whole batch, since a device's products are held to
 * the tolerance of docs/determinism.md rather than to the bit). */
typedef struct device_consts {
    sl_melspec_consts k; /* dft and filters in device memory */
} device_consts;

static void device_release(const sl_device *device, void *state)
{
    device_consts *d = state;
    if (!d)
        return;
    if (d->k.dft)
        device->release(d->k.dft);
    if (d->k.filters)
        device->release(d->k.filters);
    free(d);
}

static int device_setup(const sl_device *device, const sl__compiled_op *c, void **state)
{
    const sl_melspec_consts *host = c->state;
    device_consts *d = calloc(1, sizeof *d);
    if (!d)
        return SL_DEVICE_ENOMEM;
    d->k = *host;
    d->k.dft = d->k.filters = NULL;
    size_t dft_bytes = (size_t)host->frame * 2 * (size_t)host->bins * sizeof(float);
    size_t filter_bytes = (size_t)host->bins * (size_t)host->mels * sizeof(float);
    int e = device->alloc((void **)&d->k.dft, dft_bytes);
    if (!e)
        e = device->alloc((void **)&d->k.filters, filter_bytes);
    if (!e)
        e = device->copy(d->k.dft, host->dft, dft_bytes, SL_DEVICE_HOST_TO_DEVICE, NULL);
    if (!e)
        e = device->copy(d->k.filters, host->filters, filter_bytes, SL_DEVICE_HOST_TO_DEVICE, NULL);
    if (!e)
        e = device->stream_sync(NULL);
    if (e) {
        device_release(device, d);
        return e;
    }
    *state = d;
    return 0;
}

static const char *device_missing(const sl_device *device)
{
    return device->log_mel_rows ? NULL : device->log_mel_missing;
}

static size_t device_scratch(const sl_device *device, const sl__compiled_op *c, int64_t capacity)
{
    return device->log_mel_rows ? device->log_mel_scratch(c->state, capacity) : 0;
}

static int device_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out)
{
    const device_consts *d = ctx->state;
    (void)c;
    return ctx->device->log_mel_rows(in, out, ctx->rows, &d->k, ctx->scratch, ctx->stream);
}

static const sl__op_param params[] = {SL__PARAM_I32("sample_rate", mel.sample_rate), SL__PARAM_I32("frame", mel.frame),
                                      SL__PARAM_I32("hop", mel.hop), SL__PARAM_I32("n_fft", mel.n_fft),
                                      SL__PARAM_I32("mels", mel.mels)};

const sl__op_desc sl__op_log_mel_desc = {
    .phase = SL__PHASE_ELEMENT,
    .in_place = false,
    .compile = compile,
    .release = release,
    .rows = rows,
    .device_rows = device_rows,
    .device_scratch = device_scratch,
    .device_setup = device_setup,
    .device_release = device_release,
    .device_missing = device_missing,
    SL__PARAMS(params),
};

sl_op sl_op_log_mel(const char *field, int32_t sample_rate, int32_t frame, int32_t hop, int32_t n_fft, int32_t mels)
{
    sl_op op = sl__op_on(SL_OP_LOG_MEL, field, 0);
    op.u.mel.sample_rate = sample_rate;
    op.u.mel.frame = frame;
    op.u.mel.hop = hop;
    op.u.mel.n_fft = n_fft;
    op.u.mel.mels = mels;
    return op;
}
