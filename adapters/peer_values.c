/* The peer's batches kept as sluice copied them from the ring, and the
 * value-by-value comparison that names a first difference (peer-check, and
 * the scenarios with a stated tolerance). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "sluice/core/compare.h"

sl_status sl__peer_batches_keep(sl__peer_batches *kept, const sl_batch *view, sl_err *err)
{
    sl_batch **grown = realloc(kept->batches, (size_t)(kept->count + 1) * sizeof *grown);
    if (!grown)
        return sl_fail(err, SL_ENOMEM, "no memory to keep the peer's batch %" PRId64, kept->count);
    kept->batches = grown;
    sl_batch *copy = NULL;
    sl_status st = sl_batch_create(&view->schema, view->count > 0 ? view->count : 1, &copy, err);
    if (st)
        return st;
    copy->count = view->count;
    for (int f = 0; f < view->schema.nfields; f++) {
        /* The declared shape (a field's width may vary by batch) within the
         * room the batch was made with. */
        copy->fields[f].shape = view->fields[f].shape;
        memcpy(copy->fields[f].data, view->fields[f].data, sl_tensor_nbytes(&view->fields[f]));
    }
    kept->batches[kept->count++] = copy;
    return SL_OK;
}

void sl__peer_batches_free(sl__peer_batches *kept)
{
    for (int64_t i = 0; i < kept->count; i++)
        sl_batch_free(kept->batches[i]);
    free(kept->batches);
    kept->batches = NULL;
    kept->count = 0;
}

static void format_value(sl_dtype dtype, const void *data, size_t i, char *out, size_t size)
{
    switch (dtype) {
    case SL_F32: {
        float v = ((const float *)data)[i];
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        snprintf(out, size, "%.9g (0x%08" PRIx32 ")", (double)v, bits);
        break;
    }
    case SL_U8: snprintf(out, size, "%u", ((const uint8_t *)data)[i]); break;
    case SL_I32: snprintf(out, size, "%" PRId32, ((const int32_t *)data)[i]); break;
    case SL_I64: snprintf(out, size, "%" PRId64, ((const int64_t *)data)[i]); break;
    default: snprintf(out, size, "?");
    }
}

bool sl__peer_first_difference(const sl_batch *peer, const sl_batch *reference, double tolerance, double *worst,
                               char *why, size_t size)
{
    for (int f = 0; f < reference->schema.nfields; f++) {
        const sl_tensor *p = &peer->fields[f], *r = &reference->fields[f];
        const char *name = reference->schema.fields[f].name;
        if (!sl_shape_equal(&p->shape, &r->shape)) {
            char ps[96], rs[96];
            sl_shape_format(&p->shape, ps, sizeof ps);
            sl_shape_format(&r->shape, rs, sizeof rs);
            snprintf(why, size, "field '%s' has shape %s, the reference's %s", name, ps, rs);
            return true;
        }
        size_t first = 0;
        double field_worst = 0.0;
        size_t count = (size_t)sl_shape_numel(&r->shape);
        if (!sl_values_match(r->dtype, r->data, p->data, count, tolerance, &field_worst, &first)) {
            size_t per_row = r->shape.dims[0] > 0 ? count / (size_t)r->shape.dims[0] : 1;
            char pv[64], rv[64];
            format_value(r->dtype, p->data, first, pv, sizeof pv);
            format_value(r->dtype, r->data, first, rv, sizeof rv);
            snprintf(why, size, "field '%s' row %zu value %zu (flat index %zu): the peer has %s, the reference %s",
                     name, per_row ? first / per_row : 0, per_row ? first % per_row : first, first, pv, rv);
            if (worst)
                *worst = fmax(*worst, field_worst);
            return true;
        }
        if (worst)
            *worst = fmax(*worst, field_worst);
    }
    return false;
}

sl_status sl__peer_values_check(const sl_pipeline *pipeline, const sl__peer_batches *kept, double tolerance,
                                bool *agree, double *worst, char *why, size_t size, sl_err *err)
{
    *agree = true;
    *worst = 0.0;
    sl_batch *reference = NULL;
    sl_status st = sl_batch_create(sl_pipeline_output_schema(pipeline), sl_pipeline_get_spec(pipeline)->batch_size,
                                   &reference, err);
    sl_position pos = {0, 0};
    for (int64_t k = 0; k < kept->count && !st && *agree; k++) {
        st = sl_pipeline_produce(pipeline, sl_kernels_reference(), pos, reference, err);
        char detail[320];
        if (!st && sl__peer_first_difference(kept->batches[k], reference, tolerance, worst, detail, sizeof detail)) {
            snprintf(why, size, "batch %" PRId64 ", %s", k, detail);
            *agree = false;
        }
        pos = sl_position_advance(pipeline, pos, 1);
    }
    sl_batch_free(reference);
    return st;
}
