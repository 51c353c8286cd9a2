/* How many batch buffers a fused executor that splits batches hands its
 * sink in turn.
 *
 * A split batch's rows are written by every thread, and the sink (in
 * `sluice bench`, a digest of the whole batch on the caller's thread) then
 * reads them all, so the caller's cache ends up holding a copy of the
 * lines each worker wrote. With one buffer, each worker's next batch writes
 * those same lines again, and every store must first take its line back
 * from the caller's cache. On the 2-vCPU VMs this project runs on that cost
 * more than the split gained: CV-1 with the digest ran 0.92 to 0.98x on two
 * threads against one, and the split chooser kept one thread
 * (ci/split-consumer.sh; docs/adapters.md, "Two threads and the consumer").
 *
 * So the executor writes each batch into the buffer the sink saw longest
 * ago, with enough buffers that the batches the caller read since then
 * fill its L2: by the time a worker writes a buffer again the caller's
 * copies of its lines have been evicted by newer batches, and the worker
 * takes them from the shared L3 instead of from the caller's core. A batch
 * the size of the L2 or more needs two; past a few L2s the caller keeps
 * only the last few of a batch's lines anyway, and the extra buffers would
 * cost memory for little, so there is one. A sink sees a batch only during
 * its call (sl_batch_sink), so which buffer holds it changes nothing the
 * sink may keep, and the bytes are the same whichever buffer they are in. */
#ifndef SLUICE_BATCH_RING_H
#define SLUICE_BATCH_RING_H

#include <stddef.h>

/* The most buffers a ring has. */
#define SL__BATCH_RING_MAX 4

/* The buffers to rotate through for batches of batch_bytes, where the
 * consumer's core has l2_bytes of L2: 1 + ceil(l2_bytes / batch_bytes) up
 * to SL__BATCH_RING_MAX, and 1 (no rotation) for a batch larger than four
 * times the L2 or an unknown size (0). */
int sl__batch_ring_size(size_t batch_bytes, size_t l2_bytes);

#endif
