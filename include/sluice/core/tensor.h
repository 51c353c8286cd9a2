/* Tensors, field schemas and batches of named fields. */
#ifndef SLUICE_TENSOR_H
#define SLUICE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MAX_RANK     6
#define SL_MAX_FIELDS   8
#define SL_NAME_MAX     32
/* Per-channel statistics cover up to this many channels; tabular z-score
 * treats each feature as a channel. */
#define SL_MAX_CHANNELS 128

/* Every buffer sluice allocates for batch data is aligned to this many bytes,
 * so that vector loads never straddle a cache line at a field's start. */
#define SL_ALIGN 64

typedef enum sl_dtype { SL_U8 = 0, SL_I32, SL_I64, SL_F32, SL_DTYPE_COUNT } sl_dtype;

size_t sl_dtype_size(sl_dtype dtype);
const char *sl_dtype_name(sl_dtype dtype); /* "u8", "i32", "i64", "f32" */
/* Parses a dtype name; returns false when the name is not one of the four. */
bool sl_dtype_parse(const char *name, sl_dtype *out);

typedef struct sl_shape {
    int rank;
    int64_t dims[SL_MAX_RANK];
} sl_shape;

int64_t sl_shape_numel(const sl_shape *shape);
/* rows x the product of the dims, when no step overflows and the result is
 * at most limit; false otherwise. Every size read from a file goes through
 * this before it is used. */
bool sl_shape_numel_checked(const sl_shape *shape, int64_t rows, int64_t limit, int64_t *out);
/* The bytes of rows x shape elements of elem_size bytes each, by numpy's
 * rule: the product of the nonzero dimensions (and the item size) must fit
 * even when another dimension is zero, here in int64_t, since element
 * counts (sl_shape_numel, of the whole shape or of a row) are int64_t and
 * are multiplied out dimension by dimension. Without it an array of 0 rows
 * of a huge item passes where one order of multiplication meets the zero
 * first and fails where another meets it last; numpy refuses such a shape
 * ("array is too big"), and so does every reader here. False on a negative
 * dimension too. */
bool sl_shape_bytes_checked(const sl_shape *shape, int64_t rows, size_t elem_size, size_t *out);
bool sl_shape_equal(const sl_shape *a, const sl_shape *b);
/* Writes "[2, 32, 32, 3]" into buf. */
void sl_shape_format(const sl_shape *shape, char *buf, size_t size);

typedef struct sl_tensor {
    sl_dtype dtype;
    sl_shape shape;
    void *data;
} sl_tensor;

size_t sl_tensor_nbytes(const sl_tensor *tensor);

/* One named field of a data set element: its dtype and per-element shape. */
typedef struct sl_field_spec {
    char name[SL_NAME_MAX];
    sl_dtype dtype;
    sl_shape shape;
} sl_field_spec;

typedef struct sl_schema {
    int nfields;
    sl_field_spec fields[SL_MAX_FIELDS];
} sl_schema;

/* Index of the field called name, or -1. */
int sl_schema_find(const sl_schema *schema, const char *name);
size_t sl_field_element_bytes(const sl_field_spec *field);

/* A batch: `count` elements, each field a tensor whose first dimension is
 * count. element_ids[i] is the data set index of row i, which is what keyed
 * randomness and every alignment check are defined on. All of it lives in one
 * aligned allocation so that a batch is one malloc and one free. */
typedef struct sl_batch {
    int64_t epoch;
    int64_t index; /* batch position within the epoch, rank-local */
    int64_t count;
    int64_t capacity; /* rows the storage holds */
    int64_t *element_ids;
    sl_schema schema; /* per-element field specs, same order as fields */
    sl_tensor fields[SL_MAX_FIELDS];
    void *storage;
} sl_batch;

/* Allocates a batch able to hold `capacity` rows of schema. */
sl_status sl_batch_create(const sl_schema *schema, int64_t capacity, sl_batch **out, sl_err *err);
void sl_batch_free(sl_batch *batch);
/* Sets count (<= capacity) and every field's leading dimension. */
void sl_batch_set_count(sl_batch *batch, int64_t count);
/* Field by name, or NULL. */
const sl_tensor *sl_batch_field(const sl_batch *batch, const char *name);
/* Bytes of field data the batch's rows occupy (ids excluded). */
size_t sl_batch_data_bytes(const sl_batch *batch);

#ifdef __cplusplus
}
#endif

#endif
