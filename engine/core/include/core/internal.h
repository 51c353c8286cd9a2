/* Declarations shared inside libsluice only (sl__ prefix). */
#ifndef SLUICE_INTERNAL_H
#define SLUICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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

/* Whether text[0, size) is valid UTF-8 (RFC 3629: no overlong forms,
 * surrogates or code points past U+10FFFF); when not, *bad_at (if given) is
 * the offset of the first byte that is not. Every reader of text a user
 * hands sluice calls this one function. */
bool sl__utf8_valid(const char *text, size_t size, size_t *bad_at);

/* The process's umask, read from /proc without changing it (umask(2)
 * changes it, racing with threads that create files); 022 if unknown. */
mode_t sl__current_umask(void);

/* Opens path read-only; a missing file is SL_ENOTFOUND, other failures
 * SL_EIO, both naming path. */
sl_status sl__open_readonly(const char *path, int *fd, sl_err *err);

/* pread until nbytes arrive, retrying short reads and EINTR. End of file
 * before nbytes is an error naming path and offset. Safe from any thread. */
sl_status sl__pread_full(int fd, void *buf, size_t nbytes, off_t offset, const char *path, sl_err *err);

#endif
