/* The inside of sl_source, shared by the memory source (source.c), the file
 * sources (source_file.c) and the .npy reader (npy.c). Not installed. */
#ifndef SLUICE_SOURCE_IMPL_H
#define SLUICE_SOURCE_IMPL_H

#include <stddef.h>
#include <sys/types.h>

#include "sluice/source/source.h"
#include "source/check.h"

/* What differs between back ends. Sources whose bytes are in place (memory,
 * mmap) need no read hook: sl_source_read copies from data[] and
 * sl_source_map points into it, so the two share one dispatch and one bounds
 * check whatever the back end. */
typedef struct sl__source_ops {
    /* Copies bytes of a field without in-place data; offset and nbytes are
     * already checked against the field's size. NULL for in-place sources. */
    sl_status (*read)(const sl_source *source, int field, size_t offset, size_t nbytes, void *dst, sl_err *err);
    /* Releases what the back end holds: owned buffers, mappings, descriptors. */
    void (*release)(sl_source *source);
    /* Optional: fails, naming the file, when bytes already handed out may
     * be wrong (a mapped file that shrank under its mapping). */
    sl_status (*check)(const sl_source *source, sl_err *err);
    /* Optional, for sources without data[]: a pointer to bytes in place
     * (offset and nbytes checked), or NULL when there is none. A
     * concatenation of in-place parts has one for each part but no single
     * data[] for the whole. */
    const void *(*map)(const sl_source *source, int field, size_t offset, size_t nbytes);
} sl__source_ops;

/* Room for a source's origin (below). */
#define SL__SOURCE_ORIGIN_BYTES 128

struct sl_source {
    sl_source_kind kind;
    sl_schema schema;
    int64_t rows;
    size_t field_bytes[SL_MAX_FIELDS];
    /* The field's first byte when the bytes are addressable, else NULL. */
    const unsigned char *data[SL_MAX_FIELDS];
    const sl__source_ops *ops;
    void *state; /* back-end data, owned by ops->release */
    /* A concatenation's parts, as row counts; 1 part (all rows) otherwise. */
    int nparts;
    int64_t part_rows[SL_MAX_PARTS];
    /* What the layer that generated the source made it from (a fixture's
     * spec), opaque here and empty (origin_size 0) for any other source:
     * the fixtures keep theirs so that the same fixture can be generated
     * again with another seed (sl_fixture_regenerate). */
    unsigned char origin[SL__SOURCE_ORIGIN_BYTES];
    size_t origin_size;
};

/* Validates schema and rows (field count, names non-empty and unique, dtypes,
 * shapes, total size) and allocates a source with field_bytes filled and
 * data[] cleared; the caller sets data[], ops and state. */
sl_status sl__source_new(sl_source_kind kind, const sl_schema *schema, int64_t rows, sl_source **out, sl_err *err);

/* A reserved source (source_reserved.c): `rows` rows of `schema` addressed
 * whole, none of them there until filled; a memory source to every reader.
 * Filling rows commits their pages (and every row that shares one, so a
 * readable page never holds a row that is not there) and calls fill with
 * each field's base and a run of rows [first, first + count) to write. A
 * read of a row never filled reads zeros and fails the source's check,
 * naming the field. */
typedef void (*sl__source_fill_fn)(void *user, unsigned char *const *fields, int64_t first, int64_t count);
sl_status sl__source_reserved_create(const sl_schema *schema, int64_t rows, sl_source **out, sl_err *err);
sl_status sl__source_reserved_fill(sl_source *source, const int64_t *ids, int64_t n, sl__source_fill_fn fill,
                                   void *user, sl_err *err);
/* The rows filled so far (all rows, for any other source). */
int64_t sl__source_reserved_rows(const sl_source *source);

/* The file sources' shared opening: validates the arguments, opens each
 * field's file, checks its header and the row counts, and returns the
 * schema, the rows, and per field its descriptor (open), the offset of its
 * data and its path (owned by the caller, freed with free). On failure
 * everything opened is closed and freed. Used by source_file.c and
 * source_stream.c. */
typedef struct sl__opened_files {
    int nfields;
    sl_schema schema;
    int64_t rows;
    int fd[SL_MAX_FIELDS];
    size_t data_offset[SL_MAX_FIELDS];
    size_t data_bytes[SL_MAX_FIELDS];
    char *path[SL_MAX_FIELDS];
} sl__opened_files;
sl_status sl__open_field_files(int nfields, const char *const *field_names, const char *const *paths,
                               sl__opened_files *out, sl_err *err);
/* Closes and frees what sl__open_field_files opened (fd -1 and NULL paths
 * are skipped, so a caller may take some of them first). */
void sl__close_field_files(sl__opened_files *files);

#endif
