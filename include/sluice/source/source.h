/* Sources: where a data set's bytes live. Memory, memory-mapped file, pread,
 * a whole file loaded eagerly, a file streamed through a bounded chunk cache,
 * and a concatenation of sources that a pipeline's mixture interleaves. */
#ifndef SLUICE_SOURCE_H
#define SLUICE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_source_kind {
    SL_SOURCE_MEMORY = 0,
    SL_SOURCE_MMAP,
    SL_SOURCE_PREAD,
    SL_SOURCE_CACHE,  /* a pipeline's cache op: the output of the ops before it, kept per element */
    SL_SOURCE_EAGER,  /* every file read whole into memory when the source is opened */
    SL_SOURCE_STREAM, /* files read in chunks into a cache of bounded size */
    SL_SOURCE_CONCAT, /* the rows of several sources one after another */
    SL_SOURCE_KIND_COUNT
} sl_source_kind;

/* "memory", "mmap", "pread", "eager", "stream", "concat" */
const char *sl_source_kind_name(sl_source_kind kind);
bool sl_source_kind_parse(const char *name, sl_source_kind *out);

/* A source holds `rows` items per field; field f's item has the dtype and
 * shape of schema->fields[f], and its rows are stored contiguously. A token
 * stream is a field of scalar items; the pipeline's packing op cuts it into
 * sequences, so sources never need to know about elements larger than a row.
 * Reads are thread-safe: prefetch workers share one source. */
typedef struct sl_source sl_source;

typedef enum sl_ownership { SL_BORROW = 0, SL_TAKE = 1 } sl_ownership;

/* A source over buffers in memory, one per field (field_data[f] holds rows
 * items). With SL_TAKE the source frees the buffers with free(). */
sl_status sl_source_memory_create(const sl_schema *schema, int64_t rows, void *const *field_data,
                                  sl_ownership ownership, sl_source **out, sl_err *err);

/* A source over .npy files, one per field (C order, little-endian, dtype
 * u1/i4/i8/f4). The leading dimension is the row count and must agree across
 * files; the rest is the item shape. kind is SL_SOURCE_MMAP, SL_SOURCE_PREAD,
 * SL_SOURCE_EAGER (each file is read whole into memory here, and the source
 * then serves it like a memory source) or SL_SOURCE_STREAM (with the default
 * sl_stream_options). Errors name the file and what was wrong (missing,
 * truncated, bad header). */
sl_status sl_source_file_create(sl_source_kind kind, int nfields, const char *const *field_names,
                                const char *const *paths, sl_source **out, sl_err *err);

/* A streaming source reads field f's file in chunks of chunk_rows rows (chunk
 * k holds rows [k chunk_rows, (k + 1) chunk_rows)) into a cache of at most
 * cache_chunks chunks per field, evicting the least recently used chunk that
 * no reader is copying from. Its memory is therefore bounded by
 * cache_chunks x chunk_rows x (the row bytes of every field) whatever the
 * file's size. A read that finds every slot busy goes straight to the file.
 * It gives no pointers in place (sl_source_map returns NULL), since a chunk
 * may be evicted once a read is done. */
typedef struct sl_stream_options {
    int64_t chunk_rows; /* 0 picks SL_STREAM_DEFAULT_CHUNK_BYTES of the widest field, at least one row */
    int cache_chunks;   /* 0 picks SL_STREAM_DEFAULT_CACHE_CHUNKS */
} sl_stream_options;

#define SL_STREAM_DEFAULT_CHUNK_BYTES  ((size_t)4 << 20)
#define SL_STREAM_DEFAULT_CACHE_CHUNKS 16

sl_status sl_source_stream_create(int nfields, const char *const *field_names, const char *const *paths,
                                  const sl_stream_options *options, sl_source **out, sl_err *err);

/* What a streaming source did since it was opened, all fields together. */
typedef struct sl_stream_stats {
    int64_t chunk_rows;
    int cache_chunks;
    size_t cache_bytes;     /* the bound: every field's slots full, of the chunks its file has */
    size_t bytes_requested; /* bytes readers asked for */
    size_t bytes_read;      /* bytes read from the files */
    int64_t chunk_loads;    /* chunks read into the cache */
    int64_t hits;           /* chunk lookups served from the cache */
    int64_t bypass_reads;   /* reads that found every slot busy and went to the file */
} sl_stream_stats;

/* Fills *out and returns SL_OK for a streaming source, SL_EINVAL otherwise. */
sl_status sl_source_stream_stats(const sl_source *source, sl_stream_stats *out, sl_err *err);

/* The most parts a concatenation holds. */
#define SL_MAX_PARTS 8

/* A source whose rows are part 0's rows, then part 1's, and so on, so row
 * r + (rows of parts before p) is row r of part p. The parts must have the
 * same schema (names, dtypes, shapes); a difference is an error naming the
 * part and the field. Reads and zero-copy views go to the part that holds
 * the bytes. With SL_TAKE the concatenation frees the parts. On failure
 * nothing is taken. A pipeline's mixture (sl_pipeline_spec.mix) interleaves
 * the parts of such a source. */
sl_status sl_source_concat_create(int nparts, sl_source *const *parts, sl_ownership ownership, sl_source **out,
                                  sl_err *err);

/* The parts of a source: writes the row count of each (up to max) to rows
 * and returns how many there are: a concatenation's parts, or 1 (the
 * source itself) for any other source. */
int sl_source_parts(const sl_source *source, int64_t *rows, int max);
/* Part p of a concatenation (the source itself for part 0 of any other
 * source), or NULL when there is no such part. */
const sl_source *sl_source_part(const sl_source *source, int part);

void sl_source_free(sl_source *source);

sl_source_kind sl_source_kind_of(const sl_source *source);
const sl_schema *sl_source_schema(const sl_source *source);
int64_t sl_source_rows(const sl_source *source);
/* Total bytes of one field (rows x item bytes). */
size_t sl_source_field_bytes(const sl_source *source, int field);

/* Copies nbytes of field starting at byte offset into dst. */
sl_status sl_source_read(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err);

/* A pointer to the bytes in place when the source can give one without a copy
 * (memory, mmap), NULL otherwise (pread). Valid until sl_source_free. */
const void *sl_source_map(const sl_source *source, int field, size_t offset, size_t nbytes);

/* Writes each field to dir/<field name>.npy (atomically), so file sources
 * and peer frameworks read exactly the same bytes. */
sl_status sl_source_export_npy(const sl_source *source, const char *dir, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
