/* Declarations shared inside libsluice only (sl__ prefix). */
#ifndef SLUICE_INTERNAL_H
#define SLUICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/status.h"

/* The commit the library was built from ("unknown" outside a git checkout). */
const char *sl__build_git_commit(void);

/* Aligned allocation for batch data and scratch buffers; release with free(). */
void *sl__aligned_alloc(size_t alignment, size_t size);

/* Bounded copy that always terminates dst. */
void sl__copy_string(char *dst, size_t size, const char *src);

/* Reads a whole file as sl_read_file does, refusing one larger than
 * max_bytes and, with regular_only, anything but a regular file (a FIFO
 * would block, /dev/zero would never end). */
sl_status sl__read_file_limited(const char *path, size_t max_bytes, bool regular_only, char **data, size_t *size,
                                sl_err *err);

struct sl_source;
/* SL_OK, or the error of a source whose bytes can no longer be trusted.
 * Executors call it once per batch, after the batch's reads, so a file that
 * shrank under a mapping fails the run instead of feeding it zeros. */
sl_status sl__source_check(const struct sl_source *source, sl_err *err);

#endif
