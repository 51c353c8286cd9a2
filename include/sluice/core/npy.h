/* NumPy .npy files (format 1.0 and 2.0): the exchange format with peers. */
#ifndef SLUICE_NPY_H
#define SLUICE_NPY_H

#include <stddef.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_npy_header {
    sl_dtype dtype;
    sl_shape shape;     /* full array shape, leading dimension first */
    size_t data_offset; /* byte offset of the array data in the file */
    size_t data_bytes;
} sl_npy_header;

/* Writes tensor to path through a temporary file renamed into place, so a
 * crash never leaves a half-written array behind. */
sl_status sl_npy_write(const char *path, const sl_tensor *tensor, sl_err *err);

/* Parses and validates the header of the open file descriptor fd (path is for
 * messages). Rejects unsupported dtypes, Fortran order, big-endian data and a
 * file shorter than its header promises, naming the file and the problem. */
sl_status sl_npy_read_header_fd(int fd, const char *path, sl_npy_header *out, sl_err *err);
sl_status sl_npy_read_header(const char *path, sl_npy_header *out, sl_err *err);

/* Loads a whole array; tensor->data is allocated with SL_ALIGN alignment and
 * released with free(). */
sl_status sl_npy_load(const char *path, sl_tensor *tensor, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
