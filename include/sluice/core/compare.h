/* Comparing an output with the reference's: bitwise, as invariant 3
 * promises for element-wise kernels, or within a scenario's stated
 * tolerance where an op sums in a back end's own order (a BLAS product). */
#ifndef SLUICE_COMPARE_H
#define SLUICE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether `got` matches `want`, `count` values of dtype each. With
 * tolerance 0, or for any dtype but f32, the bytes must be equal. Otherwise
 * every f32 pair must satisfy |got - want| <= tolerance (a NaN matches only
 * a NaN). *worst (may be NULL) receives the largest absolute difference
 * seen (infinity for a NaN mismatch, 1 for unequal bytes) and *first (may be
 * NULL) the index of the first value that does not match. */
bool sl_values_match(sl_dtype dtype, const void *want, const void *got, size_t count, double tolerance, double *worst,
                     size_t *first);

/* The same over every field of two batches with the same schema and count;
 * on a mismatch, *field receives the field's index. */
bool sl_batches_match(const sl_batch *want, const sl_batch *got, double tolerance, double *worst, int *field,
                      size_t *first);

#ifdef __cplusplus
}
#endif

#endif
