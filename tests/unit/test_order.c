/* Epoch orders beyond the whole-set shuffle: the block shuffle (a streaming
 * source with a cache of one window of blocks reads each block once) and the
 * mixture (weighted interleave of a concatenation's parts, each part in its
 * own order, decided per position). Expectations are worked out here from
 * the definitions, not read back from the code under test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/exec/executors.h"
#include "sluice/order/shuffle.h"
#include "sluice/pipeline/pipeline.h"

/* A source of n rows of one i32 field holding the row index. */
static sl_source *counting_source(int64_t n, int64_t offset)
{
    sl_schema schema = {.nfields = 1};
    strcpy(schema.fields[0].name, "x");
    schema.fields[0].dtype = SL_I32;
    int32_t *data = malloc((size_t)(n ? n : 1) * sizeof *data);
    for (int64_t i = 0; i < n; i++)
        data[i] = (int32_t)(i + offset);
    void *fields[1] = {data};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, n, fields, SL_TAKE, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

static sl_pipeline *block_pipeline(const sl_source *src, int64_t rows, int64_t window, uint64_t seed, bool shuffle)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, seed);
    spec.shuffle = shuffle;
    spec.blocks = (sl_block_shuffle){rows, window};
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

/* The ids of one epoch, position by position. */
static int64_t *epoch_ids(const sl_pipeline *p, int64_t epoch)
{
    int64_t n = sl_pipeline_epoch_size(p);
    int64_t *ids = malloc((size_t)n * sizeof *ids);
    for (int64_t i = 0; i < n; i++)
        ids[i] = sl_pipeline_element_at(p, epoch, i);
    return ids;
}

static void expect_permutation(const int64_t *ids, int64_t n, const char *what)
{
    unsigned char *seen = calloc((size_t)n, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_assert(ids[i] >= 0 && ids[i] < n, "%s: position %lld holds %lld", what, (long long)i, (long long)ids[i]);
        cr_assert_eq(seen[ids[i]], 0, "%s: element %lld appears twice", what, (long long)ids[i]);
        seen[ids[i]] = 1;
    }
    free(seen);
}

/* Chunk loads of a reader with an LRU cache of `slots` blocks of `rows`
 * rows, reading the elements in this order. */
static int64_t lru_loads(const int64_t *ids, int64_t n, int64_t rows, int slots)
{
    int64_t cache[64];
    int64_t used[64];
    int filled = 0;
    int64_t loads = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t block = ids[i] / rows;
        int hit = -1;
        for (int s = 0; s < filled; s++)
            if (cache[s] == block)
                hit = s;
        if (hit < 0) {
            loads++;
            if (filled < slots) {
                hit = filled++;
            } else {
                hit = 0;
                for (int s = 1; s < filled; s++)
                    if (used[s] < used[hit])
                        hit = s;
            }
            cache[hit] = block;
        }
        used[hit] = i;
    }
    return loads;
}

Test(order, block_shuffle_is_a_permutation_a_window_of_blocks_at_a_time)
{
    /* Rows that divide and rows that leave a short block, a window larger
     * than the data set, one-row blocks, and a data set smaller than a block. */
    static const struct {
        int64_t n, rows, window;
    } cases[] = {{1000, 64, 8}, {1000, 60, 4}, {1001, 10, 3}, {97, 8, 50}, {50, 1, 5}, {5, 64, 8}, {640, 64, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sl_source *src = counting_source(cases[c].n, 0);
        for (int64_t epoch = 0; epoch < 3; epoch++) {
            sl_pipeline *p = block_pipeline(src, cases[c].rows, cases[c].window, 42, true);
            int64_t *ids = epoch_ids(p, epoch);
            char what[96];
            snprintf(what, sizeof what, "n=%lld rows=%lld window=%lld epoch %lld", (long long)cases[c].n,
                     (long long)cases[c].rows, (long long)cases[c].window, (long long)epoch);
            expect_permutation(ids, cases[c].n, what);
            int64_t blocks = (cases[c].n + cases[c].rows - 1) / cases[c].rows;
            int slots = (int)(cases[c].window < blocks ? cases[c].window : blocks);
            /* A cache of one window of blocks loads each block once. */
            cr_expect_eq(lru_loads(ids, cases[c].n, cases[c].rows, slots), blocks, "%s", what);
            free(ids);
            sl_pipeline_free(p);
        }
        sl_source_free(src);
    }
}

Test(order, block_shuffle_shuffles_and_depends_on_seed_and_epoch)
{
    enum { n = 2000 };
    sl_source *src = counting_source(n, 0);
    sl_pipeline *a = block_pipeline(src, 50, 8, 42, true);
    sl_pipeline *b = block_pipeline(src, 50, 8, 43, true);
    int64_t *a0 = epoch_ids(a, 0), *a1 = epoch_ids(a, 1), *b0 = epoch_ids(b, 0);
    int fixed = 0, diff_epoch = 0, diff_seed = 0, in_block_order = 0;
    for (int64_t i = 0; i < n; i++) {
        fixed += a0[i] == i;
        diff_epoch += a0[i] != a1[i];
        diff_seed += a0[i] != b0[i];
        in_block_order += i > 0 && a0[i] == a0[i - 1] + 1;
    }
    cr_expect_lt(fixed, 20);
    cr_expect_gt(diff_epoch, n - 20);
    cr_expect_gt(diff_seed, n - 20);
    /* Rows of a block are scattered over the window, not read in a run. */
    cr_expect_lt(in_block_order, 40, "%d of %d consecutive positions hold consecutive rows", in_block_order, n);
    free(a0);
    free(a1);
    free(b0);
    sl_pipeline_free(a);
    sl_pipeline_free(b);
    /* Unshuffled, the blocks change nothing. */
    sl_pipeline *plain = block_pipeline(src, 50, 8, 42, false);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(sl_pipeline_element_at(plain, 0, i), i);
    sl_pipeline_free(plain);
    sl_source_free(src);
}

/* Batches gather their ids in runs (sl_pipeline_produce), element_at one at
 * a time, and shards take every world-th position: all must agree. */
static void expect_batches_and_shards_agree(sl_pipeline_spec spec, const char *what)
{
    sl_err err = {0};
    sl_pipeline *whole;
    cr_assert_eq(sl_pipeline_create(&spec, &whole, &err), SL_OK, "%s", err.msg);
    int64_t n = sl_pipeline_epoch_size(whole);
    for (int64_t epoch = 0; epoch < 2; epoch++) {
        int64_t *ids = epoch_ids(whole, epoch);
        sl_batch *batch;
        cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(whole), spec.batch_size, &batch, &err), SL_OK);
        for (int64_t b = 0; b < sl_pipeline_batches_per_epoch(whole); b++) {
            cr_assert_eq(sl_pipeline_produce(whole, sl_kernels_reference(), (sl_position){epoch, b}, batch, &err),
                         SL_OK, "%s", err.msg);
            for (int64_t r = 0; r < batch->count; r++) {
                int64_t position = b * spec.batch_size + r;
                cr_assert_eq(batch->element_ids[r], ids[position], "%s: epoch %lld batch %lld row %lld", what,
                             (long long)epoch, (long long)b, (long long)r);
                /* The bytes are the element's: the source holds row indices
                 * (plus the part's offset, which the ids include). */
                cr_assert_eq(((int32_t *)batch->fields[0].data)[r], (int32_t)ids[position]);
            }
        }
        sl_batch_free(batch);
        for (int world = 2; world <= 3; world++)
            for (int rank = 0; rank < world; rank++) {
                sl_pipeline_spec sharded = spec;
                sharded.shard = (sl_shard){rank, world};
                sl_pipeline *p;
                cr_assert_eq(sl_pipeline_create(&sharded, &p, &err), SL_OK, "%s", err.msg);
                sl_batch *sb;
                cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), spec.batch_size, &sb, &err), SL_OK);
                for (int64_t b = 0; b < sl_pipeline_batches_per_epoch(p); b++) {
                    cr_assert_eq(sl_pipeline_produce(p, sl_kernels_reference(), (sl_position){epoch, b}, sb, &err),
                                 SL_OK, "%s", err.msg);
                    for (int64_t r = 0; r < sb->count; r++) {
                        int64_t global = (b * spec.batch_size + r) * world + rank;
                        cr_assert_lt(global, n);
                        cr_assert_eq(sb->element_ids[r], ids[global], "%s: rank %d of %d, position %lld", what, rank,
                                     world, (long long)global);
                    }
                }
                sl_batch_free(sb);
                sl_pipeline_free(p);
            }
        free(ids);
    }
    sl_pipeline_free(whole);
}

Test(order, block_shuffle_batches_and_shards_agree_with_the_order)
{
    sl_source *src = counting_source(1001, 0);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 37, 9);
    spec.blocks = (sl_block_shuffle){30, 4};
    expect_batches_and_shards_agree(spec, "blocks");
    sl_source_free(src);
}

/* A concatenation of parts of the given sizes, each holding its own row
 * indices offset by the rows before it (so a row's value is its id). */
static sl_source *parts_source(int nparts, const int64_t *rows)
{
    sl_source *parts[SL_MAX_PARTS];
    int64_t offset = 0;
    for (int s = 0; s < nparts; s++) {
        parts[s] = counting_source(rows[s], offset);
        offset += rows[s];
    }
    sl_source *cat;
    sl_err err = {0};
    cr_assert_eq(sl_source_concat_create(nparts, parts, SL_TAKE, &cat, &err), SL_OK, "%s", err.msg);
    return cat;
}

static sl_pipeline_spec mix_spec(const sl_source *src, int nparts, const uint32_t *weights, int64_t length,
                                 bool shuffle)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 42);
    spec.shuffle = shuffle;
    spec.mix.nparts = nparts;
    for (int s = 0; s < nparts; s++)
        spec.mix.weights[s] = weights[s];
    spec.mix.epoch_length = length;
    return spec;
}

static sl_pipeline *create(const sl_pipeline_spec *spec)
{
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

/* Unshuffled, part s's elements come in its row order, and a part that runs
 * out starts again from its first row: its k-th element is row k mod rows,
 * counted across epochs. */
Test(order, mixture_keeps_each_part_in_its_own_order_across_epochs)
{
    const int64_t rows[3] = {50, 120, 7};
    const uint32_t weights[3] = {5, 3, 2};
    sl_source *src = parts_source(3, rows);
    sl_pipeline_spec spec = mix_spec(src, 3, weights, 0, false);
    sl_pipeline *p = create(&spec);
    cr_assert_eq(sl_pipeline_dataset_size(p), 177, "an epoch defaults to the source's rows");
    int64_t next[3] = {0, 0, 0};
    const int64_t first[3] = {0, 50, 170};
    for (int64_t epoch = 0; epoch < 4; epoch++)
        for (int64_t i = 0; i < 177; i++) {
            int64_t id = sl_pipeline_element_at(p, epoch, i);
            int s = id < 50 ? 0 : id < 170 ? 1 : 2;
            cr_assert_eq(id - first[s], next[s] % rows[s],
                         "epoch %lld position %lld: part %d's element %lld is row %lld", (long long)epoch, (long long)i,
                         s, (long long)next[s], (long long)(id - first[s]));
            next[s]++;
        }
    /* Part 2 (7 rows, weight 0.2) ran out and started over many times. */
    cr_expect_gt(next[2], 3 * 7);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* Shuffled, part s's k-th element is element k mod rows of its pass
 * k / rows, each pass a keyed permutation of its own (stream
 * SL_STREAM_MIX_PART + s, the pass as the epoch), as pipeline.h states. */
Test(order, mixture_parts_follow_their_own_shuffled_passes)
{
    const int64_t rows[2] = {40, 25};
    const uint32_t weights[2] = {1, 1};
    sl_source *src = parts_source(2, rows);
    sl_pipeline_spec spec = mix_spec(src, 2, weights, 100, true);
    sl_pipeline *p = create(&spec);
    int64_t next[2] = {0, 0};
    for (int64_t epoch = 0; epoch < 3; epoch++)
        for (int64_t i = 0; i < 100; i++) {
            int64_t id = sl_pipeline_element_at(p, epoch, i);
            int s = id < 40 ? 0 : 1;
            int64_t k = next[s]++;
            sl_permutation pass;
            sl_permutation_init_keyed(&pass, (uint64_t)rows[s], 42, SL_STREAM_MIX_PART + (uint64_t)s,
                                      (uint64_t)(k / rows[s]), 0, true);
            int64_t expected = (s ? 40 : 0) + (int64_t)sl_permutation_apply(&pass, (uint64_t)(k % rows[s]));
            cr_assert_eq(id, expected, "epoch %lld position %lld (part %d, element %lld)", (long long)epoch,
                         (long long)i, s, (long long)k);
        }
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* The part at a position is a draw keyed by the position alone: the same
 * in every epoch, for every seed-equal pipeline whatever its batch size,
 * with proportions within five standard deviations of the weights. */
Test(order, mixture_choice_depends_on_the_position_alone)
{
    const int64_t rows[2] = {300, 300};
    const uint32_t weights[2] = {7, 3};
    sl_source *src = parts_source(2, rows);
    enum { length = 20000 };
    sl_pipeline_spec spec = mix_spec(src, 2, weights, length, true);
    sl_pipeline *p = create(&spec);
    spec.batch_size = 5;
    sl_pipeline *small = create(&spec);
    int64_t count0 = 0;
    for (int64_t i = 0; i < length; i++) {
        int part = sl_pipeline_element_at(p, 0, i) >= 300;
        count0 += part == 0;
        cr_assert_eq(sl_pipeline_element_at(p, 3, i) >= 300, part, "position %lld changed part in epoch 3",
                     (long long)i);
        cr_assert_eq(sl_pipeline_element_at(small, 0, i), sl_pipeline_element_at(p, 0, i));
    }
    double expected = length * 0.7, sd = sqrt(length * 0.7 * 0.3);
    cr_expect(fabs((double)count0 - expected) <= 5 * sd, "part 0 took %lld of %d positions; expected %.0f +- %.0f",
              (long long)count0, length, expected, 5 * sd);
    sl_pipeline_free(small);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(order, mixture_batches_and_shards_agree_with_the_order)
{
    const int64_t rows[2] = {130, 70};
    const uint32_t weights[2] = {3, 1};
    sl_source *src = parts_source(2, rows);
    sl_pipeline_spec spec = mix_spec(src, 2, weights, 333, true);
    spec.batch_size = 29;
    expect_batches_and_shards_agree(spec, "mix");
    sl_source_free(src);
}

Test(order, mixture_and_blocks_are_checked_by_name)
{
    const int64_t rows[2] = {10, 10};
    const uint32_t weights[2] = {1, 1};
    sl_source *cat = parts_source(2, rows);
    sl_source *plain = counting_source(10, 0);
    static const struct {
        int source; /* 0: the concatenation, 1: a plain source */
        int nparts;
        uint32_t w0;
        int64_t length, block_rows, window;
        const char *needle;
    } cases[] = {
        {1, 2, 1, 0, 0, 0, "spec.mix.nparts is 2 but the source has 1 part"},
        {0, 2, 0, 0, 0, 0, "spec.mix.weights[0] is 0"},
        {0, 2, (1u << 24) + 1, 0, 0, 0, "spec.mix.weights[0]"},
        {0, 2, 1, (int64_t)1 << 31, 0, 0, "spec.mix.epoch_length"},
        {0, 2, 1, -1, 0, 0, "spec.mix.epoch_length"},
        {0, 2, 1, 0, 4, 2, "exclusive"},
        {0, 0, 1, 5, 0, 0, "spec.mix.epoch_length is 5"},
        {1, 0, 1, 0, -1, 0, "spec.blocks.rows"},
        {1, 0, 1, 0, 4, 0, "spec.blocks.window"},
        {1, 0, 1, 0, 0, 3, "spec.blocks.window is 3"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sl_pipeline_spec spec =
            mix_spec(cases[c].source ? plain : cat, cases[c].nparts, weights, cases[c].length, true);
        spec.mix.weights[0] = cases[c].w0;
        spec.blocks = (sl_block_shuffle){cases[c].block_rows, cases[c].window};
        sl_pipeline *p = NULL;
        sl_err err = {0};
        cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL, "case %zu was accepted", c);
        cr_assert_null(p);
        cr_assert_not_null(strstr(err.msg, cases[c].needle), "case %zu: %s", c, err.msg);
    }
    sl_source_free(cat);
    sl_source_free(plain);
}

/* Checkpoints carry the fingerprint: another order is another pipeline. */
Test(order, fingerprints_tell_orders_apart)
{
    const int64_t rows[2] = {10, 10};
    const uint32_t even[2] = {1, 1}, skewed[2] = {7, 3};
    sl_source *cat = parts_source(2, rows);
    sl_pipeline_spec a = mix_spec(cat, 2, even, 0, true), b = mix_spec(cat, 2, skewed, 0, true),
                     c = mix_spec(cat, 2, even, 30, true), plain = mix_spec(cat, 0, even, 0, true), blocks = plain;
    blocks.blocks = (sl_block_shuffle){4, 2};
    sl_pipeline *pa = create(&a), *pb = create(&b), *pc = create(&c), *pp = create(&plain), *pk = create(&blocks);
    uint64_t f[5] = {sl_pipeline_fingerprint(pa), sl_pipeline_fingerprint(pb), sl_pipeline_fingerprint(pc),
                     sl_pipeline_fingerprint(pp), sl_pipeline_fingerprint(pk)};
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            cr_expect_neq(f[i], f[j], "pipelines %d and %d share a fingerprint", i, j);
    sl_pipeline_free(pa);
    sl_pipeline_free(pb);
    sl_pipeline_free(pc);
    sl_pipeline_free(pp);
    sl_pipeline_free(pk);
    sl_source_free(cat);
}
