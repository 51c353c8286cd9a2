/* Declarations shared inside libsluice only (sl__ prefix). */
#ifndef SLUICE_INTERNAL_H
#define SLUICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sluice/status.h"

/* The commit the library was built from ("unknown" outside a git checkout). */
const char *sl__build_git_commit(void);
/* The GNU build id of the object holding libsluice's code, in hex, into
 * buf; false, with buf empty, when the linker wrote none (or buf is too
 * small for it). */
bool sl__build_id(char *buf, size_t size);

/* The value of the first "field : value" line of /proc/cpuinfo's text
 * (info) named `field` ("model name", "microcode"), into buf; false, with
 * buf untouched, when there is none. */
bool sl__cpuinfo_field(const char *info, const char *field, char *buf, size_t size);

/* Aligned allocation for batch data and scratch buffers; release with free(). */
void *sl__aligned_alloc(size_t alignment, size_t size);

/* Bounded copy that always terminates dst. */
void sl__copy_string(char *dst, size_t size, const char *src);

/* Reads a whole file as sl_read_file does, refusing one larger than
 * max_bytes and, with regular_only, anything but a regular file (a FIFO
 * would block, /dev/zero would never end). */
sl_status sl__read_file_limited(const char *path, size_t max_bytes, bool regular_only, char **data, size_t *size,
                                sl_err *err);

/* Opens path read-only; a missing file is SL_ENOTFOUND, other failures
 * SL_EIO, both naming path. */
sl_status sl__open_readonly(const char *path, int *fd, sl_err *err);

/* pread until nbytes arrive, retrying short reads and EINTR. End of file
 * before nbytes is an error naming path and offset. Safe from any thread. */
sl_status sl__pread_full(int fd, void *buf, size_t nbytes, off_t offset, const char *path, sl_err *err);

#endif
