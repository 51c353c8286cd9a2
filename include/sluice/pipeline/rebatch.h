/* Rebatching: one batch as micro-batches of fewer rows, and micro-batches
 * concatenated back into one batch, with the vector-Jacobian products that
 * make both differentiable.
 *
 * Micro-batch k of a batch of n rows split at m rows is rows
 * [k m, min((k + 1) m, n)) with every field and the rows' element ids: a
 * batch of 256 split at 32 gives 8 micro-batches, one of 232 gives 7 of 32
 * and one of 8. A micro-batch keeps its batch's epoch and index, so keyed
 * randomness and alignment checks see the same element ids as before.
 *
 * Split then concatenate is the identity, and so are the two VJPs in turn:
 * the VJP of a split concatenates the micro-batches' cotangents, the VJP of
 * a concatenation splits the cotangent at the same rows. */
#ifndef SLUICE_REBATCH_H
#define SLUICE_REBATCH_H

#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Micro-batches of `micro` rows in `rows` rows: ceil(rows / micro); 0 when
 * either is not positive. */
int64_t sl_rebatch_count(int64_t rows, int64_t micro);

/* Rows [first, first + count) of batch as a batch that borrows the batch's
 * storage: no copy, valid as long as the batch is and unchanged by it. A
 * view owns nothing (its storage is NULL): never pass it to sl_batch_free. */
sl_status sl_batch_view(const sl_batch *batch, int64_t first, int64_t count, sl_batch *view, sl_err *err);

/* Splits a batch into its micro-batches as views (nothing is copied or
 * allocated). nviews must be sl_rebatch_count(batch->count, micro). */
sl_status sl_batch_split_views(const sl_batch *batch, int64_t micro, sl_batch *views, int64_t nviews, sl_err *err);

/* Splits a batch into micro-batches that are batches of their own: each
 * one allocation (sl_batch_create) holding a copy of its rows, freed by the
 * caller with sl_batch_free. nparts must be sl_rebatch_count(batch->count,
 * micro). On failure nothing stays allocated and parts are NULL. */
sl_status sl_batch_split_copies(const sl_batch *batch, int64_t micro, sl_batch **parts, int64_t nparts, sl_err *err);

/* Concatenates parts, in order, into out: rows, element ids, and the epoch
 * and index of parts[0]. Every part has out's schema and the same per-batch
 * field shapes; out's capacity holds their rows. A part may be a view of
 * out's own rows at the place it is copied to (that copy is skipped, which
 * makes concatenating the views of a batch back into it free); a part that
 * overlaps out anywhere else is refused. */
sl_status sl_batch_concat(const sl_batch *const *parts, int64_t nparts, sl_batch *out, sl_err *err);

/* The VJP of a split on one field: the cotangent of the split batch's field
 * is the micro-batches' cotangents concatenated. part_cotangents[k] has
 * micro-batch k's rows (shape.dims[0]); cotangent's dims[0] is their sum;
 * every tensor has the same dtype and per-row shape. */
sl_status sl_rebatch_split_vjp(const sl_tensor *part_cotangents, int64_t nparts, sl_tensor *cotangent, sl_err *err);

/* The VJP of a concatenation on one field: micro-batch k's cotangent is
 * rows [k micro, ...) of the concatenation's cotangent, copied into
 * part_cotangents[k] (whose dims[0] must be that micro-batch's rows). nparts
 * must be sl_rebatch_count(cotangent->shape.dims[0], micro). */
sl_status sl_rebatch_concat_vjp(const sl_tensor *cotangent, int64_t micro, sl_tensor *part_cotangents, int64_t nparts,
                                sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
