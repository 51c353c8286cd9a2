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
#include "sluice/core/npy.h"
#include "sluice/source/source.h"
#include "source/source_impl.h"

typedef struct file_state {
    int nfields;
    int fd[SL_MAX_FIELDS];    /* open for pread, -1 once mapped or loaded */
    void *map[SL_MAX_FIELDS]; /* whole file, header included */
    size_t map_len[SL_MAX_FIELDS];
    int guard[SL_MAX_FIELDS];   /* the mapping's SIGBUS guard slot */
    void *owned[SL_MAX_FIELDS]; /* an eager source's copy of the data */
    size_t data_offset[SL_MAX_FIELDS];
    char *path[SL_MAX_FIELDS]; /* for messages from later reads */
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

static sl_status pread_field(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err)
{
    const file_state *fs = source->state;
    return sl__pread_full(fs->fd[field], dst, nbytes, (off_t)(fs->data_offset[field] + offset), fs->path[field], err);
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
