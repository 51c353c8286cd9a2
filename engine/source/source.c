/* The sl_source type, its shared read/map dispatch, the memory source and
 * the .npy export that lets file sources and peers read the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "sluice/core/fileio.h"
#include "sluice/core/npy.h"
#include "sluice/source/source.h"
#include "source/source_impl.h"

static const char *const kind_names[SL_SOURCE_KIND_COUNT] = {
    [SL_SOURCE_MEMORY] = "memory", [SL_SOURCE_MMAP] = "mmap",   [SL_SOURCE_PREAD] = "pread",
    [SL_SOURCE_CACHE] = "cache",   [SL_SOURCE_EAGER] = "eager", [SL_SOURCE_STREAM] = "stream",
    [SL_SOURCE_CONCAT] = "concat",
};

const char *sl_source_kind_name(sl_source_kind kind)
{
    return (unsigned)kind < SL_SOURCE_KIND_COUNT ? kind_names[kind] : "?";
}

bool sl_source_kind_parse(const char *name, sl_source_kind *out)
{
    for (int k = 0; name && k < SL_SOURCE_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (sl_source_kind)k;
            return true;
        }
    }
    return false;
}

/* Checks one field spec and returns its total bytes over rows in *bytes,
 * refusing sizes that would overflow size_t so later offsets stay exact. */
static sl_status check_field(const sl_field_spec *field, int64_t rows, size_t *bytes, sl_err *err)
{
    if ((unsigned)field->dtype >= SL_DTYPE_COUNT)
        return sl_fail(err, SL_EINVAL, "field '%s' has an unknown dtype (%d)", field->name, (int)field->dtype);
    if (field->shape.rank < 0 || field->shape.rank >= SL_MAX_RANK)
        return sl_fail(err, SL_EINVAL, "field '%s' has item rank %d; items may have rank 0 to %d", field->name,
                       field->shape.rank, SL_MAX_RANK - 1);
    for (int d = 0; d < field->shape.rank; d++)
        if (field->shape.dims[d] < 0)
            return sl_fail(err, SL_EINVAL, "field '%s' has a negative dimension (%lld)", field->name,
                           (long long)field->shape.dims[d]);
    if (!sl_shape_bytes_checked(&field->shape, rows, sl_dtype_size(field->dtype), bytes))
        return sl_fail(err, SL_EINVAL, "field '%s' over %lld rows is too large to address", field->name,
                       (long long)rows);
    return SL_OK;
}

sl_status sl__source_new(sl_source_kind kind, const sl_schema *schema, int64_t rows, sl_source **out, sl_err *err)
{
    *out = NULL;
    if (schema->nfields < 1 || schema->nfields > SL_MAX_FIELDS)
        return sl_fail(err, SL_EINVAL, "a source needs 1 to %d fields, got %d", SL_MAX_FIELDS, schema->nfields);
    if (rows < 0)
        return sl_fail(err, SL_EINVAL, "a source cannot have a negative row count (%lld)", (long long)rows);
    size_t field_bytes[SL_MAX_FIELDS];
    for (int f = 0; f < schema->nfields; f++) {
        const char *name = schema->fields[f].name;
        if (!memchr(name, '\0', SL_NAME_MAX))
            return sl_fail(err, SL_EINVAL, "field %d's name is not terminated within %d bytes", f, SL_NAME_MAX);
        if (name[0] == '\0')
            return sl_fail(err, SL_EINVAL, "field %d has an empty name", f);
        for (int g = 0; g < f; g++)
            if (strcmp(name, schema->fields[g].name) == 0)
                return sl_fail(err, SL_EINVAL, "field name '%s' appears twice (fields %d and %d)", name, g, f);
        sl_status st = check_field(&schema->fields[f], rows, &field_bytes[f], err);
        if (st != SL_OK)
            return st;
    }
    sl_source *source = calloc(1, sizeof *source);
    if (!source)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a source");
    source->kind = kind;
    source->schema = *schema;
    source->rows = rows;
    source->nparts = 1;
    source->part_rows[0] = rows;
    memcpy(source->field_bytes, field_bytes, (size_t)schema->nfields * sizeof field_bytes[0]);
    *out = source;
    return SL_OK;
}

static void release_taken(sl_source *source)
{
    for (int f = 0; f < source->schema.nfields; f++)
        free((void *)source->data[f]);
}

static const sl__source_ops borrowed_ops = {NULL, NULL, NULL, NULL};
static const sl__source_ops taken_ops = {NULL, release_taken, NULL, NULL};

/* On failure nothing is taken, even with SL_TAKE: the caller still owns the
 * buffers, so an error path never has to guess whether they were freed. */
sl_status sl_source_memory_create(const sl_schema *schema, int64_t rows, void *const *field_data,
                                  sl_ownership ownership, sl_source **out, sl_err *err)
{
    *out = NULL;
    sl_source *source;
    sl_status st = sl__source_new(SL_SOURCE_MEMORY, schema, rows, &source, err);
    if (st != SL_OK)
        return st;
    for (int f = 0; f < schema->nfields; f++) {
        if (!field_data[f] && source->field_bytes[f] > 0) {
            st = sl_fail(err, SL_EINVAL, "field '%s' has %zu bytes but no buffer", schema->fields[f].name,
                         source->field_bytes[f]);
            free(source);
            return st;
        }
        source->data[f] = field_data[f];
    }
    source->ops = ownership == SL_TAKE ? &taken_ops : &borrowed_ops;
    *out = source;
    return SL_OK;
}

void sl_source_free(sl_source *source)
{
    if (!source)
        return;
    if (source->ops && source->ops->release)
        source->ops->release(source);
    free(source);
}

sl_source_kind sl_source_kind_of(const sl_source *source)
{
    return source->kind;
}

const sl_schema *sl_source_schema(const sl_source *source)
{
    return &source->schema;
}

int64_t sl_source_rows(const sl_source *source)
{
    return source->rows;
}

size_t sl_source_field_bytes(const sl_source *source, int field)
{
    if (field < 0 || field >= source->schema.nfields)
        return 0;
    return source->field_bytes[field];
}

static bool in_range(const sl_source *source, int field, size_t offset, size_t nbytes)
{
    if (field < 0 || field >= source->schema.nfields)
        return false;
    size_t size = source->field_bytes[field];
    return offset <= size && nbytes <= size - offset;
}

sl_status sl_source_read(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err)
{
    if (field < 0 || field >= source->schema.nfields)
        return sl_fail(err, SL_EINVAL, "read of field %d from a source with %d fields", field, source->schema.nfields);
    if (!in_range(source, field, offset, nbytes))
        return sl_fail(err, SL_EINVAL, "read of %zu bytes at offset %zu is outside field '%s' (%zu bytes)", nbytes,
                       offset, source->schema.fields[field].name, source->field_bytes[field]);
    if (nbytes == 0)
        return SL_OK;
    if (source->data[field]) {
        memcpy(dst, source->data[field] + offset, nbytes);
        return sl__source_check(source, err);
    }
    return source->ops->read(source, field, offset, nbytes, dst, err);
}

sl_status sl__source_check(const sl_source *source, sl_err *err)
{
    return source->ops->check ? source->ops->check(source, err) : SL_OK;
}

const void *sl_source_map(const sl_source *source, int field, size_t offset, size_t nbytes)
{
    if (!in_range(source, field, offset, nbytes))
        return NULL;
    if (source->data[field])
        return source->data[field] + offset;
    return source->ops->map ? source->ops->map(source, field, offset, nbytes) : NULL;
}

int sl_source_parts(const sl_source *source, int64_t *rows, int max)
{
    for (int p = 0; p < source->nparts && p < max; p++)
        rows[p] = source->part_rows[p];
    return source->nparts;
}

/* A field as a whole-array tensor: leading dimension rows, then the item
 * shape. Pread sources have no bytes in place, so they are read into a
 * scratch buffer that *scratch hands back for the caller to free. */
static sl_status field_tensor(const sl_source *source, int field, sl_tensor *tensor, void **scratch, sl_err *err)
{
    const sl_field_spec *spec = &source->schema.fields[field];
    size_t bytes = source->field_bytes[field];
    tensor->dtype = spec->dtype;
    tensor->shape.rank = spec->shape.rank + 1;
    tensor->shape.dims[0] = source->rows;
    for (int d = 0; d < spec->shape.rank; d++)
        tensor->shape.dims[d + 1] = spec->shape.dims[d];
    *scratch = NULL;
    tensor->data = (void *)sl_source_map(source, field, 0, bytes);
    if (tensor->data || bytes == 0)
        return SL_OK;
    *scratch = sl__aligned_alloc(SL_ALIGN, bytes);
    if (!*scratch)
        return sl_fail(err, SL_ENOMEM, "cannot allocate %zu bytes to export field '%s'", bytes, spec->name);
    tensor->data = *scratch;
    return sl_source_read(source, field, 0, bytes, *scratch, err);
}

sl_status sl_source_export_npy(const sl_source *source, const char *dir, sl_err *err)
{
    sl_status st = sl_make_dirs(dir, err);
    if (st != SL_OK)
        return st;
    for (int f = 0; f < source->schema.nfields && st == SL_OK; f++) {
        const char *name = source->schema.fields[f].name;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s.npy", dir, name) >= sizeof path)
            return sl_fail(err, SL_EINVAL, "export path for field '%s' under '%s' is too long", name, dir);
        sl_tensor tensor;
        void *scratch;
        st = field_tensor(source, f, &tensor, &scratch, err);
        if (st == SL_OK)
            st = sl_npy_write(path, &tensor, err);
        free(scratch);
    }
    return st;
}
