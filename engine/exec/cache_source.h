/* The source behind a pipeline's `cache` op (see cache_source.c). */
#ifndef SLUICE_CACHE_SOURCE_H
#define SLUICE_CACHE_SOURCE_H

#include <stddef.h>

#include "sluice/pipeline/pipeline.h"
#include "sluice/source/source.h"

/* A cache of prefix's output, computed with the given kernels. prefix is an
 * unshuffled pipeline of batch size 1 and must outlive the cache. */
sl_status sl__cache_source_create(const sl_pipeline *prefix, const sl_kernel_table *kernels, sl_source **out,
                                  sl_err *err);
/* Bytes of the elements filled so far. */
size_t sl__cache_source_bytes(const sl_source *source);
/* Forgets every element (between runs; not while one reads it). */
void sl__cache_source_reset(sl_source *source);

#endif
