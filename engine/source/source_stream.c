/* The streaming source: .npy files read in chunks of rows into a cache of a
 * fixed number of chunk slots per field, so the memory it holds is bounded
 * whatever the file's size (IO-2).
 *
 * Chunk k of every field holds rows [k chunk_rows, (k + 1) chunk_rows), so a
 * pipeline whose order visits the data set chunk by chunk (a block shuffle
 * with blocks of chunk_rows rows, sl_pipeline_spec.blocks) reads each chunk
 * once per epoch. Any order still reads correct bytes; an order without
 * locality just reads more (the statistics say how much).
 *
 * Readers share the cache under one mutex held only to look slots up: the
 * copy out of a slot and the read of a chunk from its file happen outside
 * it, with the slot pinned (a pinned slot is never evicted) or marked as
 * loading (readers of that chunk wait for it rather than read it twice). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "sluice/source/source.h"
#include "source/source_impl.h"

typedef struct slot {
    int64_t chunk; /* the chunk it holds, or -1 */
    int pins;      /* readers copying out of it, or the loader */
    bool loading;
    uint64_t last_use;   /* the cache's clock at the last lookup */
    unsigned char *data; /* chunk_bytes, allocated on first use */
} slot;

typedef struct field_cache {
    int fd;
    const char *path;
    size_t data_offset;
    size_t data_bytes;
    size_t chunk_bytes;
    /* The most the slots can ever hold: a slot is filled only with a chunk
     * the file has, so min(slots, the file's chunks) chunks (0 for a file
     * of no rows, whose items may be of any size). */
    size_t cache_bound;
    slot *slots;
} field_cache;

typedef struct stream_state {
    int nfields;
    int nslots;
    int64_t chunk_rows;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a load finished or failed */
    uint64_t clock;
    field_cache fields[SL_MAX_FIELDS];
    char *path[SL_MAX_FIELDS];
    /* Statistics, under the lock. */
    size_t bytes_requested;
    size_t bytes_read;
    int64_t chunk_loads;
    int64_t hits;
    int64_t bypass_reads;
} stream_state;

static void free_state(stream_state *ss)
{
    if (!ss)
        return;
    for (int f = 0; f < ss->nfields; f++) {
        field_cache *fc = &ss->fields[f];
        for (int s = 0; fc->slots && s < ss->nslots; s++)
            free(fc->slots[s].data);
        free(fc->slots);
        if (fc->fd >= 0)
            close(fc->fd);
        free(ss->path[f]);
    }
    pthread_cond_destroy(&ss->changed);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}

static void release_stream(sl_source *source)
{
    free_state(source->state);
}

static slot *find_slot(const stream_state *ss, field_cache *fc, int64_t chunk)
{
    for (int s = 0; s < ss->nslots; s++)
        if (fc->slots[s].chunk == chunk)
            return &fc->slots[s];
    return NULL;
}

/* An empty slot, else the least recently used one nobody holds; NULL when
 * every slot is pinned or loading. */
static slot *victim_slot(const stream_state *ss, field_cache *fc)
{
    slot *best = NULL;
    for (int s = 0; s < ss->nslots; s++) {
        slot *candidate = &fc->slots[s];
        if (candidate->pins > 0 || candidate->loading)
            continue;
        if (candidate->chunk < 0)
            return candidate;
        if (!best || candidate->last_use < best->last_use)
            best = candidate;
    }
    return best;
}

/* Loads chunk into a slot pinned and marked loading by the caller (the lock
 * is not held), then publishes it. On failure the slot is emptied. */
static sl_status load_chunk(stream_state *ss, field_cache *fc, slot *target, int64_t chunk, sl_err *err)
{
    size_t start = (size_t)chunk * fc->chunk_bytes;
    size_t len = fc->data_bytes - start < fc->chunk_bytes ? fc->data_bytes - start : fc->chunk_bytes;
    sl_status st = SL_OK;
    if (!target->data) {
        target->data = sl__aligned_alloc(SL_ALIGN, fc->chunk_bytes);
        if (!target->data)
            st = sl_fail(err, SL_ENOMEM, "%s: cannot allocate a %zu-byte chunk slot", fc->path, fc->chunk_bytes);
    }
    if (st == SL_OK)
        st = sl__pread_full(fc->fd, target->data, len, (off_t)(fc->data_offset + start), fc->path, err);
    pthread_mutex_lock(&ss->lock);
    target->loading = false;
    if (st == SL_OK) {
        ss->chunk_loads++;
        ss->bytes_read += len;
    } else {
        target->chunk = -1;
        target->pins--;
    }
    pthread_cond_broadcast(&ss->changed);
    pthread_mutex_unlock(&ss->lock);
    return st;
}

/* Copies [in_chunk, in_chunk + n) of one chunk to dst. */
static sl_status read_in_chunk(stream_state *ss, field_cache *fc, int64_t chunk, size_t in_chunk, size_t n,
                               unsigned char *dst, sl_err *err)
{
    pthread_mutex_lock(&ss->lock);
    ss->bytes_requested += n;
    slot *held;
    for (;;) {
        held = find_slot(ss, fc, chunk);
        if (held && held->loading) {
            pthread_cond_wait(&ss->changed, &ss->lock);
            continue;
        }
        break;
    }
    if (held) {
        ss->hits++;
        held->pins++;
        held->last_use = ++ss->clock;
        pthread_mutex_unlock(&ss->lock);
    } else {
        held = victim_slot(ss, fc);
        if (!held) {
            /* Every slot is in use by other readers: read around the cache
             * rather than wait or grow past the bound. */
            ss->bypass_reads++;
            ss->bytes_read += n;
            pthread_mutex_unlock(&ss->lock);
            return sl__pread_full(fc->fd, dst, n, (off_t)(fc->data_offset + (size_t)chunk * fc->chunk_bytes + in_chunk),
                                  fc->path, err);
        }
        held->chunk = chunk;
        held->loading = true;
        held->pins = 1;
        held->last_use = ++ss->clock;
        pthread_mutex_unlock(&ss->lock);
        sl_status st = load_chunk(ss, fc, held, chunk, err);
        if (st != SL_OK)
            return st;
    }
    memcpy(dst, held->data + in_chunk, n);
    pthread_mutex_lock(&ss->lock);
    held->pins--;
    pthread_mutex_unlock(&ss->lock);
    return SL_OK;
}

static sl_status read_stream(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err)
{
    stream_state *ss = source->state;
    field_cache *fc = &ss->fields[field];
    unsigned char *out = dst;
    while (nbytes > 0) {
        int64_t chunk = (int64_t)(offset / fc->chunk_bytes);
        size_t in_chunk = offset % fc->chunk_bytes;
        size_t n = fc->chunk_bytes - in_chunk < nbytes ? fc->chunk_bytes - in_chunk : nbytes;
        sl_status st = read_in_chunk(ss, fc, chunk, in_chunk, n, out, err);
        if (st != SL_OK)
            return st;
        out += n;
        offset += n;
        nbytes -= n;
    }
    return SL_OK;
}

static const sl__source_ops stream_ops = {read_stream, release_stream, NULL, NULL};

/* Rows per chunk: the caller's, or the default chunk bytes of the widest
 * field. */
static int64_t chunk_rows_for(const sl__opened_files *files, const sl_stream_options *options)
{
    if (options && options->chunk_rows > 0)
        return options->chunk_rows;
    size_t widest = 1;
    for (int f = 0; f < files->nfields; f++) {
        size_t row = sl_field_element_bytes(&files->schema.fields[f]);
        if (row > widest)
            widest = row;
    }
    size_t rows = SL_STREAM_DEFAULT_CHUNK_BYTES / widest;
    return rows > 0 ? (int64_t)rows : 1;
}

sl_status sl_source_stream_create(int nfields, const char *const *field_names, const char *const *paths,
                                  const sl_stream_options *options, sl_source **out, sl_err *err)
{
    *out = NULL;
    if (options && (options->chunk_rows < 0 || options->cache_chunks < 0))
        return sl_fail(err, SL_EINVAL,
                       "a streaming source needs chunk_rows and cache_chunks >= 0 (0 picks the "
                       "default), got %lld and %d",
                       (long long)options->chunk_rows, options->cache_chunks);
    sl__opened_files files;
    sl_status st = sl__open_field_files(nfields, field_names, paths, &files, err);
    if (st != SL_OK)
        return st;
    stream_state *ss = calloc(1, sizeof *ss);
    if (!ss) {
        sl__close_field_files(&files);
        return sl_fail(err, SL_ENOMEM, "cannot allocate a streaming source");
    }
    pthread_mutex_init(&ss->lock, NULL);
    pthread_cond_init(&ss->changed, NULL);
    ss->nfields = nfields;
    ss->nslots = options && options->cache_chunks > 0 ? options->cache_chunks : SL_STREAM_DEFAULT_CACHE_CHUNKS;
    ss->chunk_rows = chunk_rows_for(&files, options);
    /* The state takes the descriptors and paths; free_state releases them. */
    for (int f = 0; f < nfields; f++) {
        field_cache *fc = &ss->fields[f];
        fc->fd = files.fd[f];
        ss->path[f] = files.path[f];
        fc->path = files.path[f];
        fc->data_offset = files.data_offset[f];
        fc->data_bytes = files.data_bytes[f];
    }
    for (int f = 0; f < nfields; f++) {
        field_cache *fc = &ss->fields[f];
        size_t row_bytes = sl_field_element_bytes(&files.schema.fields[f]);
        int64_t file_chunks = files.rows / ss->chunk_rows + (files.rows % ss->chunk_rows != 0);
        int64_t cached_chunks = file_chunks < ss->nslots ? file_chunks : ss->nslots;
        if (row_bytes > 0 &&
            ((size_t)ss->chunk_rows > SIZE_MAX / row_bytes ||
             (cached_chunks > 0 && (size_t)ss->chunk_rows * row_bytes > SIZE_MAX / (size_t)cached_chunks))) {
            st = sl_fail(err, SL_EINVAL, "%s: %lld chunks of %lld rows of %zu bytes cannot be addressed", fc->path,
                         (long long)cached_chunks, (long long)ss->chunk_rows, row_bytes);
            break;
        }
        /* A field of empty items still needs a nonzero chunk to divide by. */
        fc->chunk_bytes = row_bytes > 0 ? (size_t)ss->chunk_rows * row_bytes : 1;
        fc->cache_bound = row_bytes > 0 ? fc->chunk_bytes * (size_t)cached_chunks : 0;
        fc->slots = calloc((size_t)ss->nslots, sizeof *fc->slots);
        if (!fc->slots) {
            st = sl_fail(err, SL_ENOMEM, "cannot allocate the chunk slots of %s", fc->path);
            break;
        }
        for (int s = 0; s < ss->nslots; s++)
            fc->slots[s].chunk = -1;
    }
    sl_source *source = NULL;
    if (st == SL_OK)
        st = sl__source_new(SL_SOURCE_STREAM, &files.schema, files.rows, &source, err);
    if (st != SL_OK) {
        free_state(ss);
        return st;
    }
    source->ops = &stream_ops;
    source->state = ss;
    *out = source;
    return SL_OK;
}

sl_status sl_source_stream_stats(const sl_source *source, sl_stream_stats *out, sl_err *err)
{
    memset(out, 0, sizeof *out);
    if (source->kind != SL_SOURCE_STREAM)
        return sl_fail(err, SL_EINVAL, "a %s source has no streaming statistics", sl_source_kind_name(source->kind));
    stream_state *ss = source->state;
    out->chunk_rows = ss->chunk_rows;
    out->cache_chunks = ss->nslots;
    for (int f = 0; f < ss->nfields; f++)
        out->cache_bytes += ss->fields[f].cache_bound;
    pthread_mutex_lock(&ss->lock);
    out->bytes_requested = ss->bytes_requested;
    out->bytes_read = ss->bytes_read;
    out->chunk_loads = ss->chunk_loads;
    out->hits = ss->hits;
    out->bypass_reads = ss->bypass_reads;
    pthread_mutex_unlock(&ss->lock);
    return SL_OK;
}
