/* Files written whole or not at all, read whole, and folders made. */
#ifndef SLUICE_FILEIO_H
#define SLUICE_FILEIO_H

#include <stddef.h>

#include "sluice/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes path atomically: a temporary file in the same directory, fsync,
 * rename. Shared by records, goldens, checkpoints and npy exports. */
sl_status sl_write_file_atomic(const char *path, const void *data, size_t size, sl_err *err);
/* Reads a whole file (NUL-terminated, size excludes the NUL). */
sl_status sl_read_file(const char *path, char **data, size_t *size, sl_err *err);
/* mkdir -p. */
sl_status sl_make_dirs(const char *path, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
