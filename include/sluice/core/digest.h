/* Canonical bytes and digests of batches. */
#ifndef SLUICE_DIGEST_H
#define SLUICE_DIGEST_H

#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Streaming XXH3-64 over batches. A batch's canonical bytes are, for each
 * field in order: its name, dtype name, shape (as little-endian i64s) and its
 * data as little-endian bytes. Element ids are not part of it: two batches
 * with the same content digest equal however they were produced. */
typedef struct sl_digest sl_digest;

sl_digest *sl_digest_new(void);
void sl_digest_add_batch(sl_digest *digest, const sl_batch *batch);
uint64_t sl_digest_value(const sl_digest *digest);
void sl_digest_free(sl_digest *digest);
/* One-shot digest of a buffer. */
uint64_t sl_digest_bytes(const void *data, size_t size);

#ifdef __cplusplus
}
#endif

#endif
