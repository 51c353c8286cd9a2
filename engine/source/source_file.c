/* File sources over one .npy file per field: mmap (bytes in place, reads are
 * copies out of the mapping), pread (descriptors kept open, every read a
 * system call) and eager (every file read whole into memory at open). All
 * are safe to read from many threads: a mapping and a loaded copy are
 * read-only and pread carries its own offset. The streaming source
 * (source_stream.c) shares the opening. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/mapguard.h"
#include "source/source_impl.h"
#include "sluice/npy.h"
#include "sluice/source.h"

typedef struct file_state {
    int nfields;
    int fd[SL_MAX_FIELDS];          /* open for pread, -1 once mapped or loaded */
    void *map[SL_MAX_FIELDS];       /* whole file, header included */
    size_t map_len[SL_MAX_FIELDS];
    int guard[SL_MAX_FIELDS];       /* the mapping's SIGBUS guard slot */
    void *owned[SL_MAX_FIELDS];     /* an eager source's copy of the data */
    size_t data_offset[SL_MAX_FIELDS];
    char *path[SL_MAX_FIELDS];      /* for messages from later reads */
} file_state;

static void free_state(file_state *fs)
{
    if (!fs)
        return;
    for (int f = 0; f < fs->nfields; f++) {
        if (fs->map[f]) {
            sl__mapguard_unregister(fs->guard[f]);
            munmap(fs->map[f], fs->map_len[f]);
        }
        if (fs->fd[f] >= 0)
            close(fs->fd[f]);
        free(fs->owned[f]);
        free(fs->path[f]);
    }
    free(fs);
}

static void release_files(sl_source *source)
{
    free_state(source->state);
}

static sl_status pread_field(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst,
                             sl_err *err)
{
    const file_state *fs = source->state;
    return sl__pread_full(fs->fd[field], dst, nbytes, (off_t)(fs->data_offset[field] + offset), fs->path[field],
                          err);
}

/* A mapped file that shrank: the guard turned the reads past its new end
 * into zeros, so everything read since is suspect and the run must fail. */
static sl_status check_mappings(const sl_source *source, sl_err *err)
{
    const file_state *fs = source->state;
    for (int f = 0; f < fs->nfields; f++) {
        if (!sl__mapguard_damaged(fs->guard[f]))
            continue;
        struct stat st;
        if (stat(fs->path[f], &st) == 0)
            return sl_fail(err, SL_EIO,
                           "%s: the file shrank to %lld bytes while mapped (it had %zu); reads past its end were "
                           "void",
                           fs->path[f], (long long)st.st_size, fs->map_len[f]);
        return sl_fail(err, SL_EIO, "%s: the file shrank or went away while mapped (%s); reads past its end were void",
                       fs->path[f], strerror(errno));
    }
    return SL_OK;
}

static const sl__source_ops mmap_ops = {NULL, release_files, check_mappings, NULL};
static const sl__source_ops pread_ops = {pread_field, release_files, NULL, NULL};
/* An eager source's bytes are its own copy, in place like a memory source's. */
static const sl__source_ops eager_ops = {NULL, release_files, NULL, NULL};

static sl_status check_arguments(int nfields, const char *const *field_names, const char *const *paths,
                                 sl_err *err)
{
    if (nfields < 1 || nfields > SL_MAX_FIELDS)
        return sl_fail(err, SL_EINVAL, "a source needs 1 to %d fields, got %d", SL_MAX_FIELDS, nfields);
    for (int f = 0; f < nfields; f++) {
        if (!field_names[f] || !paths[f])
            return sl_fail(err, SL_EINVAL, "field %d has no %s", f, field_names[f] ? "path" : "name");
        size_t len = strlen(field_names[f]);
        if (len >= SL_NAME_MAX)
            return sl_fail(err, SL_EINVAL, "%s: field name '%s' is %zu bytes; names must be shorter than %d",
                           paths[f], field_names[f], len, SL_NAME_MAX);
        for (int g = 0; g < f; g++)
            if (strcmp(field_names[f], field_names[g]) == 0)
                return sl_fail(err, SL_EINVAL, "field name '%s' is given to both %s and %s", field_names[f],
                               paths[g], paths[f]);
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
        return sl_fail(err, SL_EFORMAT, "%s: a 0-d array has no rows; a field file needs a leading dimension",
                       path);
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

/* Maps field f's file whole (the descriptor is then closed: the mapping
 * keeps the file alive). */
static sl_status map_field(file_state *fs, int f, size_t data_bytes, sl_err *err)
{
    size_t len = fs->data_offset[f] + data_bytes;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fs->fd[f], 0);
    if (map == MAP_FAILED)
        return sl_fail(err, SL_EIO, "%s: cannot map %zu bytes: %s", fs->path[f], len, strerror(errno));
    fs->map[f] = map;
    fs->map_len[f] = len;
    fs->guard[f] = sl__mapguard_register(map, len);
    close(fs->fd[f]);
    fs->fd[f] = -1;
    return SL_OK;
}

/* Reads field f's data whole into memory of its own, then closes the file:
 * the eager source holds every byte from here on. */
static sl_status load_field(file_state *fs, int f, size_t data_bytes, sl_err *err)
{
    fs->owned[f] = sl__aligned_alloc(SL_ALIGN, data_bytes ? data_bytes : 1);
    if (!fs->owned[f])
        return sl_fail(err, SL_ENOMEM, "%s: cannot allocate %zu bytes to load it", fs->path[f], data_bytes);
    sl_status st = sl__pread_full(fs->fd[f], fs->owned[f], data_bytes, (off_t)fs->data_offset[f], fs->path[f], err);
    if (st != SL_OK)
        return st;
    close(fs->fd[f]);
    fs->fd[f] = -1;
    return SL_OK;
}

sl_status sl_source_file_create(sl_source_kind kind, int nfields, const char *const *field_names,
                                const char *const *paths, sl_source **out, sl_err *err)
{
    *out = NULL;
    if (kind == SL_SOURCE_STREAM)
        return sl_source_stream_create(nfields, field_names, paths, NULL, out, err);
    if (kind != SL_SOURCE_MMAP && kind != SL_SOURCE_PREAD && kind != SL_SOURCE_EAGER)
        return sl_fail(err, SL_EINVAL, "a file source is mmap, pread, eager or stream, not '%s'",
                       sl_source_kind_name(kind));
    sl__opened_files files;
    sl_status st = sl__open_field_files(nfields, field_names, paths, &files, err);
    if (st != SL_OK)
        return st;
    file_state *fs = calloc(1, sizeof *fs);
    if (!fs) {
        sl__close_field_files(&files);
        return sl_fail(err, SL_ENOMEM, "cannot allocate a file source");
    }
    /* The state takes the descriptors and paths; free_state releases them. */
    fs->nfields = nfields;
    for (int f = 0; f < nfields; f++) {
        fs->fd[f] = files.fd[f];
        fs->path[f] = files.path[f];
        fs->guard[f] = -1;
        fs->data_offset[f] = files.data_offset[f];
    }
    for (int f = 0; f < nfields && st == SL_OK; f++) {
        if (kind == SL_SOURCE_MMAP)
            st = map_field(fs, f, files.data_bytes[f], err);
        else if (kind == SL_SOURCE_EAGER)
            st = load_field(fs, f, files.data_bytes[f], err);
    }
    sl_source *source = NULL;
    if (st == SL_OK)
        st = sl__source_new(kind, &files.schema, files.rows, &source, err);
    if (st != SL_OK) {
        free_state(fs);
        return st;
    }
    for (int f = 0; f < nfields; f++) {
        if (fs->map[f])
            source->data[f] = (const unsigned char *)fs->map[f] + fs->data_offset[f];
        else if (fs->owned[f])
            source->data[f] = fs->owned[f];
    }
    source->ops = kind == SL_SOURCE_MMAP ? &mmap_ops : kind == SL_SOURCE_EAGER ? &eager_ops : &pread_ops;
    source->state = fs;
    *out = source;
    return SL_OK;
}
