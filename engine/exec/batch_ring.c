/* The fused executor's ring of batch buffers (batch_ring.h). */
#include "batch_ring.h"

/* Past this many L2s a batch's own reads have evicted all but the last
 * quarter of what the caller held of the worker's rows, and a second
 * buffer as large as the batch would buy little. */
#define RING_MAX_L2S 4

int sl__batch_ring_size(size_t batch_bytes, size_t l2_bytes)
{
    if (batch_bytes == 0 || l2_bytes == 0 || batch_bytes > RING_MAX_L2S * l2_bytes)
        return 1;
    size_t ring = 1 + (l2_bytes + batch_bytes - 1) / batch_bytes;
    return ring < SL__BATCH_RING_MAX ? (int)ring : SL__BATCH_RING_MAX;
}
