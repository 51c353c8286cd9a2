/* Opening the .npy files of a file or stream source, one per field:
 * arguments checked, headers read, row counts agreed. Shared by the mapped
 * and pread sources (source_file.c) and the stream source
 * (source_stream.c), neither of which needs the other. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "sluice/core/npy.h"
#include "source/source_impl.h"

static sl_status check_arguments(int nfields, const char *const *field_names, const char *const *paths, sl_err *err)
{
    if (nfields < 1 || nfields > SL_MAX_FIELDS)
        return sl_fail(err, SL_EINVAL, "a source needs 1 to %d fields, got %d", SL_MAX_FIELDS, nfields);
    for (int f = 0; f < nfields; f++) {
        if (!field_names[f] || !paths[f])
            return sl_fail(err, SL_EINVAL, "field %d has no %s", f, field_names[f] ? "path" : "name");
        size_t len = strlen(field_names[f]);
        if (len >= SL_NAME_MAX)
            return sl_fail(err, SL_EINVAL, "%s: field name '%s' is %zu bytes; names must be shorter than %d", paths[f],
                           field_names[f], len, SL_NAME_MAX);
        for (int g = 0; g < f; g++)
            if (strcmp(field_names[f], field_names[g]) == 0)
                return sl_fail(err, SL_EINVAL, "field name '%s' is given to both %s and %s", field_names[f], paths[g],
                               paths[f]);
    }
    return SL_OK;
}

/* Opens and validates field f's file and fills its schema entry, row count
 * and data offset. */
static sl_status open_field(sl__opened_files *files, int f, const char *name, int64_t *rows, sl_err *err)
{
    const char *path = files->path[f];
    sl_status st = sl__open_readonly(path, &files->fd[f], err);
    if (st != SL_OK)
        return st;
    sl_npy_header h;
    st = sl_npy_read_header_fd(files->fd[f], path, &h, err);
    if (st != SL_OK)
        return st;
    if (h.shape.rank < 1)
        return sl_fail(err, SL_EFORMAT, "%s: a 0-d array has no rows; a field file needs a leading dimension", path);
    sl_field_spec *spec = &files->schema.fields[f];
    sl__copy_string(spec->name, sizeof spec->name, name);
    spec->dtype = h.dtype;
    spec->shape.rank = h.shape.rank - 1;
    for (int d = 1; d < h.shape.rank; d++)
        spec->shape.dims[d - 1] = h.shape.dims[d];
    *rows = h.shape.dims[0];
    files->data_offset[f] = h.data_offset;
    files->data_bytes[f] = h.data_bytes;
    return SL_OK;
}

void sl__close_field_files(sl__opened_files *files)
{
    for (int f = 0; f < files->nfields; f++) {
        if (files->fd[f] >= 0)
            close(files->fd[f]);
        files->fd[f] = -1;
        free(files->path[f]);
        files->path[f] = NULL;
    }
}

sl_status sl__open_field_files(int nfields, const char *const *field_names, const char *const *paths,
                               sl__opened_files *files, sl_err *err)
{
    memset(files, 0, sizeof *files);
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        files->fd[f] = -1;
    sl_status st = check_arguments(nfields, field_names, paths, err);
    if (st != SL_OK)
        return st;
    files->nfields = nfields;
    files->schema.nfields = nfields;
    for (int f = 0; f < nfields && st == SL_OK; f++) {
        files->path[f] = strdup(paths[f]);
        if (!files->path[f]) {
            st = sl_fail(err, SL_ENOMEM, "cannot allocate a file source");
            break;
        }
        int64_t field_rows = 0;
        st = open_field(files, f, field_names[f], &field_rows, err);
        if (st != SL_OK)
            break;
        if (f == 0)
            files->rows = field_rows;
        else if (field_rows != files->rows)
            st = sl_fail(err, SL_EMISMATCH,
                         "%s has %lld rows but %s has %lld rows; every field needs the same leading dimension",
                         paths[0], (long long)files->rows, paths[f], (long long)field_rows);
    }
    if (st != SL_OK)
        sl__close_field_files(files);
    return st;
}
