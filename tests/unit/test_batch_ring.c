/* The fused executor's ring of batch buffers (engine/exec/batch_ring.h):
 * how many buffers a splitting executor rotates through, from made-up batch
 * and L2 sizes. The expected counts follow from the rule the header states
 * (the batches read since a buffer was written must fill the L2), worked
 * out by hand below. */
#include <criterion/criterion.h>

#include "batch_ring.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

Test(batch_ring, the_batches_since_a_buffer_was_written_fill_the_l2)
{
    /* CV-1 at 32x32: 64 rows of 12 KiB, 768 KiB. Two newer batches (1.5
     * MiB) are needed to cover a 1 MiB L2, so three buffers. */
    cr_expect_eq(sl__batch_ring_size(768 * KIB, 1 * MIB), 3);
    /* Exactly the L2: one newer batch covers it. */
    cr_expect_eq(sl__batch_ring_size(1 * MIB, 1 * MIB), 2);
    /* One byte short of the L2: still one newer batch short by a byte, so
     * two newer ones. */
    cr_expect_eq(sl__batch_ring_size(1 * MIB - 1, 1 * MIB), 3);
    /* IO-1's 3 MiB batch and a 2 MiB L2 (a server core): two buffers. */
    cr_expect_eq(sl__batch_ring_size(3 * MIB, 2 * MIB), 2);
}

Test(batch_ring, small_batches_stop_at_the_most_buffers)
{
    /* 64 KiB batches would need 17 buffers for a 1 MiB L2. */
    cr_expect_eq(sl__batch_ring_size(64 * KIB, 1 * MIB), SL__BATCH_RING_MAX);
    cr_expect_eq(sl__batch_ring_size(1, 1 * MIB), SL__BATCH_RING_MAX);
}

Test(batch_ring, large_batches_and_unknown_sizes_keep_one_buffer)
{
    /* Four L2s is the last size that rotates; one byte more does not. */
    cr_expect_eq(sl__batch_ring_size(4 * MIB, 1 * MIB), 2);
    cr_expect_eq(sl__batch_ring_size(4 * MIB + 1, 1 * MIB), 1);
    /* CV-1 at 256x256: a 48 MiB batch. */
    cr_expect_eq(sl__batch_ring_size(48 * MIB, 1 * MIB), 1);
    /* A machine that does not say its L2, and an empty batch. */
    cr_expect_eq(sl__batch_ring_size(768 * KIB, 0), 1);
    cr_expect_eq(sl__batch_ring_size(0, 1 * MIB), 1);
}
