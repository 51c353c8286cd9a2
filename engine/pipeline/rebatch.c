/* Rebatching (sluice/pipeline/rebatch.h). Every copy here is whole rows of one field
 * (or of the element ids) moved from one row-major buffer to another, so
 * split, concatenation and both VJPs share one row mover. */
#include <string.h>

#include "sluice/pipeline/rebatch.h"

int64_t sl_rebatch_count(int64_t rows, int64_t micro)
{
    return rows > 0 && micro > 0 ? rows / micro + (rows % micro != 0) : 0;
}

/* Bytes of one row of a batch tensor: its dims after the first. */
static size_t row_bytes(const sl_tensor *t)
{
    size_t bytes = sl_dtype_size(t->dtype);
    for (int d = 1; d < t->shape.rank; d++)
        bytes *= (size_t)t->shape.dims[d];
    return bytes;
}

static bool same_rows(const sl_tensor *a, const sl_tensor *b)
{
    if (a->dtype != b->dtype || a->shape.rank != b->shape.rank || a->shape.rank < 1)
        return false;
    for (int d = 1; d < a->shape.rank; d++)
        if (a->shape.dims[d] != b->shape.dims[d])
            return false;
    return true;
}

/* Moves `bytes` from src to dst; nothing when they are the same place. */
static void move_rows(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes)
        memmove(dst, src, bytes);
}

sl_status sl_batch_view(const sl_batch *batch, int64_t first, int64_t count, sl_batch *view, sl_err *err)
{
    if (first < 0 || count < 1 || first > batch->count || count > batch->count - first)
        return sl_fail(err, SL_EINVAL, "a view of rows [%lld, %lld) is outside the batch's %lld rows", (long long)first,
                       (long long)first + count, (long long)batch->count);
    *view = *batch;
    view->storage = NULL;
    view->capacity = count;
    view->element_ids = batch->element_ids + first;
    for (int f = 0; f < batch->schema.nfields; f++)
        view->fields[f].data = (char *)batch->fields[f].data + (size_t)first * row_bytes(&batch->fields[f]);
    sl_batch_set_count(view, count);
    return SL_OK;
}

static sl_status check_parts(const sl_batch *batch, int64_t micro, int64_t nparts, sl_err *err)
{
    if (micro < 1)
        return sl_fail(err, SL_EINVAL, "micro-batches need at least one row, got %lld", (long long)micro);
    int64_t expected = sl_rebatch_count(batch->count, micro);
    if (nparts != expected)
        return sl_fail(err, SL_EINVAL, "a batch of %lld rows splits into %lld micro-batches of %lld, not %lld",
                       (long long)batch->count, (long long)expected, (long long)micro, (long long)nparts);
    return SL_OK;
}

static int64_t part_rows(int64_t rows, int64_t micro, int64_t k)
{
    int64_t left = rows - k * micro;
    return left < micro ? left : micro;
}

sl_status sl_batch_split_views(const sl_batch *batch, int64_t micro, sl_batch *views, int64_t nviews, sl_err *err)
{
    sl_status st = check_parts(batch, micro, nviews, err);
    for (int64_t k = 0; k < nviews && !st; k++)
        st = sl_batch_view(batch, k * micro, part_rows(batch->count, micro, k), &views[k], err);
    return st;
}

sl_status sl_batch_split_copies(const sl_batch *batch, int64_t micro, sl_batch **parts, int64_t nparts, sl_err *err)
{
    sl_status st = check_parts(batch, micro, nparts, err);
    if (st)
        return st;
    for (int64_t k = 0; k < nparts; k++)
        parts[k] = NULL;
    for (int64_t k = 0; k < nparts && !st; k++) {
        sl_batch view;
        st = sl_batch_view(batch, k * micro, part_rows(batch->count, micro, k), &view, err);
        if (!st)
            st = sl_batch_create(&batch->schema, view.count, &parts[k], err);
        if (!st)
            st = sl_batch_concat((const sl_batch *const[]){&view}, 1, parts[k], err);
    }
    if (st) {
        for (int64_t k = 0; k < nparts; k++) {
            sl_batch_free(parts[k]);
            parts[k] = NULL;
        }
    }
    return st;
}

/* Whether [a, a + an) and [b, b + bn) share a byte. */
static bool overlaps(const void *a, size_t an, const void *b, size_t bn)
{
    const char *pa = a, *pb = b;
    return an && bn && pa < pb + bn && pb < pa + an;
}

sl_status sl_batch_concat(const sl_batch *const *parts, int64_t nparts, sl_batch *out, sl_err *err)
{
    if (nparts < 1)
        return sl_fail(err, SL_EINVAL, "concatenating needs at least one batch, got %lld", (long long)nparts);
    const sl_schema *schema = &out->schema;
    int64_t rows = 0;
    for (int64_t k = 0; k < nparts; k++) {
        const sl_batch *part = parts[k];
        if (part->schema.nfields != schema->nfields)
            return sl_fail(err, SL_EINVAL, "batch %lld to concatenate has %d fields, the output %d", (long long)k,
                           part->schema.nfields, schema->nfields);
        for (int f = 0; f < schema->nfields; f++) {
            const sl_field_spec *a = &part->schema.fields[f], *b = &schema->fields[f];
            if (strcmp(a->name, b->name) != 0 || a->dtype != b->dtype || !sl_shape_equal(&a->shape, &b->shape))
                return sl_fail(err, SL_EINVAL, "batch %lld to concatenate: field %d ('%s') is not the output's '%s'",
                               (long long)k, f, a->name, b->name);
            if (!same_rows(&part->fields[f], &parts[0]->fields[f]))
                return sl_fail(err, SL_EINVAL,
                               "batch %lld to concatenate: field '%s' has another per-batch shape than batch 0's",
                               (long long)k, a->name);
        }
        if (part->count < 0 || part->count > out->capacity - rows)
            return sl_fail(err, SL_EINVAL, "concatenating more rows than the output's capacity of %lld",
                           (long long)out->capacity);
        rows += part->count;
    }
    /* Refuse sources that overlap the output away from their own place
     * before moving anything, so a refusal leaves out unchanged. */
    int64_t at = 0;
    for (int64_t k = 0; k < nparts; k++) {
        const sl_batch *part = parts[k];
        for (int f = -1; f < schema->nfields; f++) {
            size_t row = f < 0 ? sizeof(int64_t) : row_bytes(&parts[0]->fields[f]);
            char *base = f < 0 ? (char *)out->element_ids : out->fields[f].data;
            const char *src = f < 0 ? (const char *)part->element_ids : part->fields[f].data;
            size_t n = (size_t)part->count * row;
            if (src != base + (size_t)at * row && overlaps(src, n, base, (size_t)out->capacity * row))
                return sl_fail(err, SL_EINVAL, "batch %lld to concatenate overlaps the output at another place",
                               (long long)k);
        }
        at += part->count;
    }
    for (int f = 0; f < schema->nfields; f++) {
        sl_tensor *t = &out->fields[f];
        for (int d = 1; d < t->shape.rank; d++)
            t->shape.dims[d] = parts[0]->fields[f].shape.dims[d];
    }
    at = 0;
    for (int64_t k = 0; k < nparts; k++) {
        const sl_batch *part = parts[k];
        move_rows(out->element_ids + at, part->element_ids, (size_t)part->count * sizeof(int64_t));
        for (int f = 0; f < schema->nfields; f++) {
            size_t row = row_bytes(&out->fields[f]);
            move_rows((char *)out->fields[f].data + (size_t)at * row, part->fields[f].data, (size_t)part->count * row);
        }
        at += part->count;
    }
    out->epoch = parts[0]->epoch;
    out->index = parts[0]->index;
    sl_batch_set_count(out, rows);
    return SL_OK;
}

sl_status sl_rebatch_split_vjp(const sl_tensor *part_cotangents, int64_t nparts, sl_tensor *cotangent, sl_err *err)
{
    if (nparts < 1)
        return sl_fail(err, SL_EINVAL, "the split's VJP needs at least one micro-batch cotangent");
    int64_t rows = 0;
    for (int64_t k = 0; k < nparts; k++) {
        if (!same_rows(&part_cotangents[k], cotangent))
            return sl_fail(err, SL_EINVAL, "micro-batch cotangent %lld has another dtype or row shape than the batch's",
                           (long long)k);
        rows += part_cotangents[k].shape.dims[0];
    }
    if (rows != cotangent->shape.dims[0])
        return sl_fail(err, SL_EINVAL, "micro-batch cotangents hold %lld rows, the batch's cotangent %lld",
                       (long long)rows, (long long)cotangent->shape.dims[0]);
    size_t row = row_bytes(cotangent);
    int64_t at = 0;
    for (int64_t k = 0; k < nparts; k++) {
        move_rows((char *)cotangent->data + (size_t)at * row, part_cotangents[k].data,
                  (size_t)part_cotangents[k].shape.dims[0] * row);
        at += part_cotangents[k].shape.dims[0];
    }
    return SL_OK;
}

sl_status sl_rebatch_concat_vjp(const sl_tensor *cotangent, int64_t micro, sl_tensor *part_cotangents, int64_t nparts,
                                sl_err *err)
{
    int64_t rows = cotangent->shape.rank >= 1 ? cotangent->shape.dims[0] : 0;
    if (micro < 1 || nparts != sl_rebatch_count(rows, micro))
        return sl_fail(err, SL_EINVAL, "a cotangent of %lld rows splits into %lld micro-batches of %lld, not %lld",
                       (long long)rows, (long long)sl_rebatch_count(rows, micro), (long long)micro, (long long)nparts);
    size_t row = row_bytes(cotangent);
    for (int64_t k = 0; k < nparts; k++) {
        int64_t n = part_rows(rows, micro, k);
        if (!same_rows(&part_cotangents[k], cotangent) || part_cotangents[k].shape.dims[0] != n)
            return sl_fail(err, SL_EINVAL,
                           "micro-batch cotangent %lld must be %lld rows of the batch's dtype and row shape",
                           (long long)k, (long long)n);
    }
    for (int64_t k = 0; k < nparts; k++)
        move_rows(part_cotangents[k].data, (const char *)cotangent->data + (size_t)k * (size_t)micro * row,
                  (size_t)part_cotangents[k].shape.dims[0] * row);
    return SL_OK;
}
