/* Golden outputs: the digests of the reference adapter's first batches,
 * saved when blessed and compared against on every run. */
#ifndef SLUICE_GOLDEN_H
#define SLUICE_GOLDEN_H

#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A golden output: the digest of the reference adapter's first K batches plus
 * what a readable failure needs (per-row digests of every field and the first
 * few values of each field of the first batch). */
typedef struct sl_golden sl_golden; /* defined in golden.c */

sl_golden *sl_golden_new(const char *scenario, const char *variant, uint64_t seed);
sl_status sl_golden_add_batch(sl_golden *golden, const sl_batch *batch, sl_err *err);
int sl_golden_batches(const sl_golden *golden);
uint64_t sl_golden_digest(const sl_golden *golden);

/* Writes golden as JSON, atomically. Only the bless command calls this. */
sl_status sl_golden_save(const sl_golden *golden, const char *path, sl_err *err);
sl_status sl_golden_load(const char *path, sl_golden **out, sl_err *err);
/* Loads a golden of a blessed golden set, path being <set>/<file>: refuses
 * it unless the set's manifest is whole and lists the file with the size
 * and XXH3-64 it has (sluice/core/folder.h), so a set that a bless did not
 * finish, or a golden changed by hand, is never compared against. */
sl_status sl_golden_load_blessed(const char *path, sl_golden **out, sl_err *err);

/* SL_OK when actual matches expected. Otherwise SL_EMISMATCH with a message
 * that names the field, the batch, the first row that differs (and its
 * element id), its flat index range and, where a stored value covers it, the
 * first differing index with both values. */
sl_status sl_golden_compare(const sl_golden *expected, const sl_golden *actual, sl_err *err);
void sl_golden_free(sl_golden *golden);

#ifdef __cplusplus
}
#endif

#endif
