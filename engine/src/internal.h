/* Declarations shared inside libsluice only (sl__ prefix). */
#ifndef SLUICE_INTERNAL_H
#define SLUICE_INTERNAL_H

#include <stddef.h>

/* The commit the library was built from ("unknown" outside a git checkout). */
const char *sl__build_git_commit(void);

/* Aligned allocation for batch data and scratch buffers; release with free(). */
void *sl__aligned_alloc(size_t alignment, size_t size);

/* Bounded copy that always terminates dst. */
void sl__copy_string(char *dst, size_t size, const char *src);

#endif
