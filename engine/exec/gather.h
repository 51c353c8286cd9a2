/* How executors fetch elements from a pipeline's source (gather.c). */
#ifndef SLUICE_EXEC_GATHER_H
#define SLUICE_EXEC_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/internal.h"

/* SL_OK when an executor was handed a kernel table, else an error saying
 * what needs one: the library never chooses a table behind its caller. */
sl_status sl__require_kernels(const sl_kernel_table *kernels, const char *who, sl_err *err);
/* The source an executor running `kernels` reads elements from: the
 * spec's, or after a cache op that table's cache, created on first use. */
sl_status sl__element_source(const sl_pipeline *pipeline, const sl_kernel_table *kernels, const sl_source **out,
                             sl_err *err);
/* Where element's bytes of a source field lie: a fixed-size row, or for
 * the packed field the element's window of the token stream (shorter at the
 * stream's end). */
void sl__element_span(const sl_pipeline *pipeline, int field, int64_t element, size_t *offset, size_t *nbytes);
/* The prefetch for row `row` of a loop over rows [first, end) whose element
 * ids are ids[row]. Shuffled elements sit at unrelated addresses, so each
 * one's first read would miss the cache and wait; asking for an element a
 * few rows ahead overlaps those misses with the work on the current row. At
 * the first row the loop's first few rows are asked for together (they have
 * no earlier rows to hide their misses behind), at every row the row that
 * distance ahead: the lines of each source field (up to 16 KiB of them),
 * into L2, where the source has a mapped view (gather.c says why). */
void sl__prefetch_ahead(const sl_pipeline *pipeline, const sl_source *source, const int64_t *ids, int64_t first,
                        int64_t row, int64_t end);
/* Reads element's bytes of a source field from source into dst (packing
 * token streams with the kernels' pack). */
sl_status sl__gather_element(const sl_pipeline *pipeline, const sl_source *source, const sl_kernel_table *kernels,
                             int field, int64_t element, void *dst, sl_err *err);

#endif
