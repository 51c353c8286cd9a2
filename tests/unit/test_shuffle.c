/* The keyed Feistel shuffle is a permutation, depends on seed and epoch only,
 * and sharding by rank/world is disjoint, covering and world-independent. */
#include <stdlib.h>

#include <criterion/criterion.h>

#include "sluice/kernels/kernels.h"
#include "sluice/order/shuffle.h"

static void expect_permutation(uint64_t n, uint64_t seed, uint64_t epoch)
{
    sl_permutation perm;
    sl_permutation_init(&perm, n, seed, epoch, true);
    unsigned char *seen = calloc(n ? n : 1, 1);
    for (uint64_t p = 0; p < n; p++) {
        uint64_t e = sl_permutation_apply(&perm, p);
        cr_assert_lt(e, n, "n=%llu: position %llu maps outside to %llu", (unsigned long long)n, (unsigned long long)p,
                     (unsigned long long)e);
        cr_assert_eq(seen[e], 0, "n=%llu: element %llu appears twice", (unsigned long long)n, (unsigned long long)e);
        seen[e] = 1;
    }
    free(seen);
}

Test(shuffle, is_a_permutation_for_many_sizes)
{
    /* Powers of two, powers of four, one off either side, and primes, where
     * cycle walking and the half-width rounding are most likely to slip. */
    const uint64_t sizes[] = {1,   2,   3,   4,    5,    7,    15,   16,   17,   63,    64,    65,
                              255, 256, 257, 1000, 1023, 1024, 1025, 4096, 4099, 10000, 65536, 100003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        expect_permutation(sizes[i], 42, 0);
    expect_permutation(10000, 42, 1);
    expect_permutation(10000, 7, 3);
}

Test(shuffle, actually_shuffles_and_depends_on_seed_and_epoch)
{
    enum { n = 1000 };
    sl_permutation a, b, c, same;
    sl_permutation_init(&a, n, 42, 0, true);
    sl_permutation_init(&b, n, 42, 1, true);
    sl_permutation_init(&c, n, 43, 0, true);
    sl_permutation_init(&same, n, 42, 0, true);
    int fixed = 0, diff_epoch = 0, diff_seed = 0;
    for (uint64_t p = 0; p < n; p++) {
        uint64_t x = sl_permutation_apply(&a, p);
        fixed += x == p;
        diff_epoch += x != sl_permutation_apply(&b, p);
        diff_seed += x != sl_permutation_apply(&c, p);
        cr_assert_eq(x, sl_permutation_apply(&same, p));
    }
    /* A random permutation has one fixed point on average; two unrelated
     * ones agree at about one position. Bounds of 20 leave a wide margin. */
    cr_expect_lt(fixed, 20);
    cr_expect_gt(diff_epoch, n - 20);
    cr_expect_gt(diff_seed, n - 20);
}

Test(shuffle, identity_when_not_shuffled)
{
    sl_permutation perm;
    sl_permutation_init(&perm, 100, 42, 5, false);
    for (uint64_t p = 0; p < 100; p++)
        cr_assert_eq(sl_permutation_apply(&perm, p), p);
}

Test(shuffle, invert_undoes_apply)
{
    /* Sizes where cycle walking happens (non-squares) and where it cannot
     * (squares), and a large one whose grid side passes 2^16. */
    const uint64_t sizes[] = {2, 3, 10, 16, 17, 99, 1000, 4099, 100003, (uint64_t)1 << 33};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        sl_permutation perm;
        sl_permutation_init_keyed(&perm, sizes[i], 42, SL_STREAM_BLOCK_WINDOW, 3, 7, true);
        uint64_t step = sizes[i] > 5000 ? sizes[i] / 4093 : 1;
        for (uint64_t p = 0; p < sizes[i]; p += step) {
            uint64_t e = sl_permutation_apply(&perm, p);
            cr_assert_eq(sl_permutation_invert(&perm, e), p, "n=%llu: position %llu -> %llu -> %llu",
                         (unsigned long long)sizes[i], (unsigned long long)p, (unsigned long long)e,
                         (unsigned long long)sl_permutation_invert(&perm, e));
        }
    }
    sl_permutation identity;
    sl_permutation_init(&identity, 50, 42, 0, false);
    cr_assert_eq(sl_permutation_invert(&identity, 17), 17);
}

Test(shuffle, keyed_orders_are_independent_and_the_default_is_the_shuffle_stream)
{
    enum { n = 1000 };
    sl_permutation plain, keyed, other_index, other_stream;
    sl_permutation_init(&plain, n, 42, 5, true);
    sl_permutation_init_keyed(&keyed, n, 42, SL_STREAM_SHUFFLE, 5, 0, true);
    sl_permutation_init_keyed(&other_index, n, 42, SL_STREAM_SHUFFLE, 5, 1, true);
    sl_permutation_init_keyed(&other_stream, n, 42, SL_STREAM_MIX_PART, 5, 0, true);
    int diff_index = 0, diff_stream = 0;
    for (uint64_t p = 0; p < n; p++) {
        uint64_t x = sl_permutation_apply(&plain, p);
        cr_assert_eq(x, sl_permutation_apply(&keyed, p), "stream SL_STREAM_SHUFFLE, index 0 must be the default");
        diff_index += x != sl_permutation_apply(&other_index, p);
        diff_stream += x != sl_permutation_apply(&other_stream, p);
    }
    /* Unrelated permutations agree at about one position. */
    cr_expect_gt(diff_index, n - 20);
    cr_expect_gt(diff_stream, n - 20);
}

Test(shuffle, shards_are_disjoint_cover_and_keep_the_global_order)
{
    enum { n = 1001 };
    sl_permutation perm;
    sl_permutation_init(&perm, n, 42, 2, true);
    uint64_t global[n];
    for (uint64_t p = 0; p < n; p++)
        global[p] = sl_permutation_apply(&perm, p);
    for (int world = 1; world <= 8; world++) {
        int owner[n];
        for (int i = 0; i < n; i++)
            owner[i] = -1;
        uint64_t total = 0;
        for (int rank = 0; rank < world; rank++) {
            sl_shard shard = {rank, world};
            uint64_t size = sl_shard_size(shard, n);
            total += size;
            for (uint64_t local = 0; local < size; local++) {
                uint64_t position = sl_shard_global_position(shard, local);
                cr_assert_lt(position, n);
                uint64_t element = sl_permutation_apply(&perm, position);
                cr_assert_eq(owner[element], -1, "world %d: element %llu in ranks %d and %d", world,
                             (unsigned long long)element, owner[element], rank);
                owner[element] = rank;
                /* Interleaving the shards rebuilds the one global order. */
                cr_assert_eq(element, global[position]);
            }
        }
        cr_assert_eq(total, n, "world %d covers %llu of %d", world, (unsigned long long)total, n);
    }
}

Test(shuffle, shard_sizes_when_world_exceeds_n)
{
    cr_expect_eq(sl_shard_size((sl_shard){0, 4}, 3), 1);
    cr_expect_eq(sl_shard_size((sl_shard){2, 4}, 3), 1);
    cr_expect_eq(sl_shard_size((sl_shard){3, 4}, 3), 0);
    cr_expect_eq(sl_shard_size((sl_shard){1, 3}, 10), 3);
}

/* Every kernel table's batch of ids (the AVX2 and AVX-512 ones compute the
 * scalar network's integers lane by lane) must agree with the portable
 * path exactly: small sets (the grid's walk outside [0, n) is frequent),
 * sizes around a square and a power of two, and large sets (past 2^32 the
 * scalar split takes its 64-bit division and the vector paths hand over to
 * it), strides of sharded ranks, counts that leave a tail for the narrower
 * path, and on many seeds and epochs. */
static void check_table_equals_portable(const sl_kernel_table *table)
{
    const uint64_t sizes[] = {
        2, 3, 17, 100, 1000, 10000, 65536, 65537, 1000003, (uint64_t)1 << 33, ((uint64_t)1 << 40) + 12345};
    const uint64_t strides[] = {1, 3, 8};
    int64_t a[203], b[203];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (uint64_t seed = 1; seed <= 5; seed++)
            for (size_t k = 0; k < sizeof strides / sizeof strides[0]; k++) {
                sl_permutation perm;
                sl_permutation_init(&perm, sizes[s], seed, seed * 7, true);
                uint64_t stride = strides[k];
                int64_t count = (int64_t)((sizes[s] - 1) / stride + 1);
                if (count > 203)
                    count = 203;
                uint64_t first = sizes[s] > 1000 ? sizes[s] / 3 : 0;
                if (first + (uint64_t)(count - 1) * stride >= sizes[s])
                    first = 0;
                sl_permutation_apply_strided(&perm, first, stride, count, a);
                table->permute_strided(&perm, first, stride, count, b);
                for (int64_t i = 0; i < count; i++)
                    cr_assert_eq(a[i], b[i], "n=%llu seed=%llu stride=%llu position %lld: portable %lld, %s %lld",
                                 (unsigned long long)sizes[s], (unsigned long long)seed, (unsigned long long)stride,
                                 (long long)i, (long long)a[i], table->name, (long long)b[i]);
            }
}

Test(shuffle, every_tables_ids_equal_the_portable_ones)
{
    int checked = 0;
    for (int t = 0; t < sl_kernel_table_count(); t++) {
        const sl_kernel_table *table = sl_kernel_table_at(t);
        if (!sl_kernel_table_supported(table, NULL, 0))
            continue;
        check_table_equals_portable(table);
        checked++;
    }
    cr_expect_geq(checked, 2, "the reference and generic tables run everywhere");
}
