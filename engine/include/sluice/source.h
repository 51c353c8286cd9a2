/* Sources: where a data set's bytes live. Memory, memory-mapped file, pread. */
#ifndef SLUICE_SOURCE_H
#define SLUICE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/status.h"
#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_source_kind { SL_SOURCE_MEMORY = 0, SL_SOURCE_MMAP, SL_SOURCE_PREAD, SL_SOURCE_CACHE, SL_SOURCE_KIND_COUNT } sl_source_kind;

const char *sl_source_kind_name(sl_source_kind kind); /* "memory", "mmap", "pread" */
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
 * files; the rest is the item shape. kind is SL_SOURCE_MMAP or SL_SOURCE_PREAD.
 * Errors name the file and what was wrong (missing, truncated, bad header). */
sl_status sl_source_file_create(sl_source_kind kind, int nfields, const char *const *field_names,
                                const char *const *paths, sl_source **out, sl_err *err);

void sl_source_free(sl_source *source);

sl_source_kind sl_source_kind_of(const sl_source *source);
const sl_schema *sl_source_schema(const sl_source *source);
int64_t sl_source_rows(const sl_source *source);
/* Total bytes of one field (rows x item bytes). */
size_t sl_source_field_bytes(const sl_source *source, int field);

/* Copies nbytes of field starting at byte offset into dst. */
sl_status sl_source_read(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst,
                         sl_err *err);

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
