#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "sluice/core/tensor.h"

static const struct {
    const char *name;
    size_t size;
} dtype_info[SL_DTYPE_COUNT] = {
    [SL_U8] = {"u8", 1},
    [SL_I32] = {"i32", 4},
    [SL_I64] = {"i64", 8},
    [SL_F32] = {"f32", 4},
};

size_t sl_dtype_size(sl_dtype dtype)
{
    return (unsigned)dtype < SL_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

const char *sl_dtype_name(sl_dtype dtype)
{
    return (unsigned)dtype < SL_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

bool sl_dtype_parse(const char *name, sl_dtype *out)
{
    for (int d = 0; d < SL_DTYPE_COUNT; d++) {
        if (strcmp(name, dtype_info[d].name) == 0) {
            *out = (sl_dtype)d;
            return true;
        }
    }
    return false;
}

int64_t sl_shape_numel(const sl_shape *shape)
{
    int64_t n = 1;
    for (int i = 0; i < shape->rank; i++)
        n *= shape->dims[i];
    return n;
}

bool sl_shape_numel_checked(const sl_shape *shape, int64_t rows, int64_t limit, int64_t *out)
{
    int64_t n = rows;
    if (n < 0)
        return false;
    for (int i = 0; i < shape->rank; i++)
        if (shape->dims[i] < 0 || __builtin_mul_overflow(n, shape->dims[i], &n))
            return false;
    if (n > limit)
        return false;
    if (out)
        *out = n;
    return true;
}

bool sl_shape_bytes_checked(const sl_shape *shape, int64_t rows, size_t elem_size, size_t *out)
{
    size_t nonzero_product = elem_size;
    bool any_zero = false;
    for (int d = -1; d < shape->rank; d++) {
        int64_t dim = d < 0 ? rows : shape->dims[d];
        if (dim < 0)
            return false;
        if (dim == 0) {
            any_zero = true;
            continue;
        }
        if (__builtin_mul_overflow(nonzero_product, (uint64_t)dim, &nonzero_product) ||
            nonzero_product > (size_t)INT64_MAX)
            return false;
    }
    *out = any_zero ? 0 : nonzero_product;
    return true;
}

bool sl_shape_equal(const sl_shape *a, const sl_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

void sl_shape_format(const sl_shape *shape, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < shape->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape->dims[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

size_t sl_tensor_nbytes(const sl_tensor *tensor)
{
    return (size_t)sl_shape_numel(&tensor->shape) * sl_dtype_size(tensor->dtype);
}

int sl_schema_find(const sl_schema *schema, const char *name)
{
    for (int f = 0; f < schema->nfields; f++)
        if (strcmp(schema->fields[f].name, name) == 0)
            return f;
    return -1;
}

size_t sl_field_element_bytes(const sl_field_spec *field)
{
    return (size_t)sl_shape_numel(&field->shape) * sl_dtype_size(field->dtype);
}

void sl__copy_string(char *dst, size_t size, const char *src)
{
    if (size == 0)
        return;
    snprintf(dst, size, "%s", src ? src : "");
    /* A cut never splits a UTF-8 character: half of one is invalid UTF-8,
     * which every JSON reader of sluice refuses (D22: a framework name cut
     * so made sluice refuse its own record). */
    size_t n = strlen(dst);
    if (src && n < strlen(src))
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            dst[--n] = '\0';
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

sl_status sl_batch_create(const sl_schema *schema, int64_t capacity, sl_batch **out, sl_err *err)
{
    *out = NULL;
    if (capacity <= 0)
        return sl_fail(err, SL_EINVAL, "batch capacity must be positive, got %lld", (long long)capacity);
    if (schema->nfields <= 0 || schema->nfields > SL_MAX_FIELDS)
        return sl_fail(err, SL_EINVAL, "a batch needs 1 to %d fields, got %d", SL_MAX_FIELDS, schema->nfields);
    size_t offsets[SL_MAX_FIELDS];
    size_t total = round_up((size_t)capacity * sizeof(int64_t), SL_ALIGN);
    for (int f = 0; f < schema->nfields; f++) {
        offsets[f] = total;
        total += round_up((size_t)capacity * sl_field_element_bytes(&schema->fields[f]), SL_ALIGN);
    }
    sl_batch *batch = calloc(1, sizeof *batch);
    void *storage = sl__aligned_alloc(SL_ALIGN, total);
    if (!batch || !storage) {
        free(batch);
        free(storage);
        return sl_fail(err, SL_ENOMEM, "cannot allocate a batch of %lld rows (%zu bytes)", (long long)capacity, total);
    }
    batch->storage = storage;
    batch->capacity = capacity;
    batch->schema = *schema;
    batch->element_ids = storage;
    for (int f = 0; f < schema->nfields; f++) {
        sl_tensor *t = &batch->fields[f];
        t->dtype = schema->fields[f].dtype;
        t->data = (char *)storage + offsets[f];
        t->shape.rank = schema->fields[f].shape.rank + 1;
        for (int d = 0; d < schema->fields[f].shape.rank; d++)
            t->shape.dims[d + 1] = schema->fields[f].shape.dims[d];
    }
    sl_batch_set_count(batch, capacity);
    *out = batch;
    return SL_OK;
}

void sl_batch_free(sl_batch *batch)
{
    if (!batch)
        return;
    free(batch->storage);
    free(batch);
}

void sl_batch_set_count(sl_batch *batch, int64_t count)
{
    batch->count = count;
    for (int f = 0; f < batch->schema.nfields; f++)
        batch->fields[f].shape.dims[0] = count;
}

const sl_tensor *sl_batch_field(const sl_batch *batch, const char *name)
{
    int f = sl_schema_find(&batch->schema, name);
    return f < 0 ? NULL : &batch->fields[f];
}

size_t sl_batch_data_bytes(const sl_batch *batch)
{
    size_t total = 0;
    for (int f = 0; f < batch->schema.nfields; f++)
        total += sl_tensor_nbytes(&batch->fields[f]);
    return total;
}
