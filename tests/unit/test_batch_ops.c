/* Batch-phase ops that add fields and narrow a field per batch (dynamic
 * padding, attention masks, bag offsets), and the length-bucketing order:
 * narrowed batches digest and golden-capture only the rows they hold, every
 * executor gives the same batches when widths change from batch to batch,
 * bucketing regroups only within its windows and depends on nothing but
 * (seed, epoch, batch), and bad specs are refused naming the op and field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels_under_test.h"
#include "sluice/core/digest.h"
#include "sluice/exec/executors.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/records/golden.h"

enum { CAPACITY = 300, MULTIPLE = 64, PAD = -9 };

static sl_source *sequences(int64_t n, int min_len, int max_len)
{
    sl_fixture_spec spec = {.kind = SL_FIXTURE_SEQUENCES, .n = n, .vocab = 50, .min_len = min_len, .max_len = max_len};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 42, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

/* Optionally bucketed, then padded to a multiple of 64 with a mask. */
static sl_pipeline *padded(const sl_source *src, int64_t batch_size, int window, bool drop_last, sl_shard shard)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, batch_size, 11);
    spec.drop_last = drop_last;
    spec.shard = shard;
    sl_err err = {0};
    if (window > 0)
        cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_bucket_by_length("length", 3, window), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_pad_to_multiple("tokens", "length", MULTIPLE, PAD), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_attention_mask("tokens", "length", "mask"), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

static sl_batch *produce(const sl_pipeline *p, const sl_kernel_table *kernels, int64_t epoch, int64_t batch)
{
    sl_batch *b;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), sl_pipeline_get_spec(p)->batch_size, &b, &err), SL_OK);
    cr_assert_eq(sl_pipeline_produce(p, kernels, (sl_position){epoch, batch}, b, &err), SL_OK, "%s", err.msg);
    return b;
}

static uint64_t digest_of(const sl_batch *b)
{
    sl_digest *d = sl_digest_new();
    sl_digest_add_batch(d, b);
    uint64_t v = sl_digest_value(d);
    sl_digest_free(d);
    return v;
}

Test(batch_ops, a_narrowed_batch_digests_only_the_rows_it_holds)
{
    sl_source *src = sequences(40, 1, CAPACITY);
    sl_pipeline *p = padded(src, 4, 0, false, (sl_shard){0, 1});
    int narrowed = 0;
    for (int64_t k = 0; k < sl_pipeline_batches_per_epoch(p); k++) {
        sl_batch *b = produce(p, sl_kernels_reference(), 0, k);
        int64_t width = b->fields[0].shape.dims[1];
        cr_assert_eq(b->fields[2].shape.dims[1], width, "the mask is as wide as the tokens");
        if (width == CAPACITY) {
            sl_batch_free(b);
            continue;
        }
        narrowed++;
        uint64_t before = digest_of(b);
        sl_golden *g1 = sl_golden_new("t", "v", 1), *g2 = sl_golden_new("t", "v", 1);
        sl_err err = {0};
        cr_assert_eq(sl_golden_add_batch(g1, b, &err), SL_OK, "%s", err.msg);
        /* Scribble over the capacity the narrowed rows leave unused: no
         * digest may see it. */
        size_t used = (size_t)(b->count * width);
        for (size_t i = used; i < (size_t)(b->capacity * CAPACITY); i++) {
            ((int32_t *)b->fields[0].data)[i] = 12345;
            ((uint8_t *)b->fields[2].data)[i] = 77;
        }
        cr_assert_eq(digest_of(b), before, "batch %lld: the digest reads past its narrowed rows", (long long)k);
        cr_assert_eq(sl_golden_add_batch(g2, b, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_golden_compare(g1, g2, &err), SL_OK, "batch %lld: %s", (long long)k, err.msg);
        /* A changed token inside the rows is seen, by row. */
        ((int32_t *)b->fields[0].data)[width + 1] ^= 1;
        sl_golden *g3 = sl_golden_new("t", "v", 1);
        cr_assert_eq(sl_golden_add_batch(g3, b, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_golden_compare(g1, g3, &err), SL_EMISMATCH);
        cr_assert_not_null(strstr(err.msg, "row 1"), "%s", err.msg);
        sl_golden_free(g1);
        sl_golden_free(g2);
        sl_golden_free(g3);
        sl_batch_free(b);
    }
    cr_assert_gt(narrowed, 2, "too few batches narrowed below the capacity to test anything");
    sl_pipeline_free(p);
    sl_source_free(src);
}

typedef struct fused_check {
    const sl_pipeline *p;
    int64_t batch;
    int widths_seen[CAPACITY / MULTIPLE + 2];
} fused_check;

/* Each fused batch against the unfused reference of the same position. */
static int compare_with_reference(const sl_batch *b, void *user)
{
    fused_check *c = user;
    sl_batch *want = produce(c->p, sl_kernels_reference(), b->epoch, b->index);
    cr_assert_eq(b->count, want->count);
    for (int f = 0; f < b->schema.nfields; f++) {
        cr_assert(sl_shape_equal(&b->fields[f].shape, &want->fields[f].shape), "batch %lld field %d: shapes differ",
                  (long long)b->index, f);
        cr_assert(memcmp(b->fields[f].data, want->fields[f].data, sl_tensor_nbytes(&b->fields[f])) == 0,
                  "batch %lld field %d differs from the reference", (long long)b->index, f);
    }
    cr_assert(memcmp(b->element_ids, want->element_ids, (size_t)b->count * sizeof(int64_t)) == 0);
    c->widths_seen[(b->fields[0].shape.dims[1] + MULTIPLE - 1) / MULTIPLE]++;
    sl_batch_free(want);
    c->batch++;
    return 0;
}

Test(batch_ops, fused_reuses_its_batch_at_every_width)
{
    /* Batches of 2 from lengths in [1, 300]: widths 64 to 300 come and go,
     * so the fused executor's one batch is narrowed, then must be whole
     * again for a wider batch. Bucketed and not, one to three threads. */
    sl_source *src = sequences(90, 1, CAPACITY);
    for (int window = 0; window <= 4; window += 4)
        for (int threads = 1; threads <= 3; threads++) {
            sl_pipeline *p = padded(src, 2, window, false, (sl_shard){0, 1});
            sl_fused *fz;
            sl_err err = {0};
            cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), threads, &fz, &err), SL_OK, "%s", err.msg);
            double ns;
            cr_assert_eq(sl_fused_probe(fz, 3, &ns, &err), SL_OK, "%s", err.msg);
            fused_check c = {p, 0, {0}};
            int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
            cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, 2 * per_epoch, compare_with_reference, &c, &err), SL_OK,
                         "%s", err.msg);
            cr_assert_eq(c.batch, 2 * per_epoch);
            int distinct = 0;
            for (size_t w = 0; w < sizeof c.widths_seen / sizeof c.widths_seen[0]; w++)
                distinct += c.widths_seen[w] > 0;
            cr_expect_geq(distinct, 4, "only %d distinct widths", distinct);
            sl_fused_free(fz);
            sl_pipeline_free(p);
        }
    sl_source_free(src);
}

/* The element ids of a whole epoch through iter with some workers. */
static int64_t *epoch_ids(const sl_pipeline *p, int64_t epoch, int workers, int64_t *rows)
{
    int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
    int64_t *ids = malloc((size_t)(per_epoch * sl_pipeline_get_spec(p)->batch_size) * sizeof *ids);
    cr_assert_not_null(ids);
    sl_iter_options options = {
        .kernels = sl_test_kernels(), .workers = workers, .prefetch_depth = 0, .start = {epoch, 0}};
    sl_iter *it;
    sl_err err = {0};
    cr_assert_eq(sl_iter_create(p, &options, &it, &err), SL_OK, "%s", err.msg);
    *rows = 0;
    for (int64_t k = 0; k < per_epoch; k++) {
        sl_batch *b;
        cr_assert_eq(sl_iter_next(it, &b, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(b->count, sl_pipeline_batch_rows(p, k), "batch %lld has %lld rows", (long long)k,
                     (long long)b->count);
        memcpy(ids + *rows, b->element_ids, (size_t)b->count * sizeof *ids);
        *rows += b->count;
        sl_batch_free(b);
    }
    sl_iter_free(it);
    return ids;
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Whether ids[from, to) and other[from, to) hold the same elements. */
static bool same_set(const int64_t *ids, const int64_t *other, int64_t from, int64_t to)
{
    int64_t n = to - from;
    int64_t *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    memcpy(a, ids + from, (size_t)n * sizeof *a);
    memcpy(b, other + from, (size_t)n * sizeof *b);
    qsort(a, (size_t)n, sizeof *a, compare_i64);
    qsort(b, (size_t)n, sizeof *b, compare_i64);
    bool same = memcmp(a, b, (size_t)n * sizeof *a) == 0;
    free(a);
    free(b);
    return same;
}

Test(bucket_by_length, bucketing_regroups_only_within_windows)
{
    /* 103 elements, batches of 5, windows of 3 batches: the last window is
     * partial and the last batch short (3 rows). */
    sl_source *src = sequences(103, 1, CAPACITY);
    sl_pipeline *plain = padded(src, 5, 0, false, (sl_shard){0, 1});
    sl_pipeline *bucketed = padded(src, 5, 3, false, (sl_shard){0, 1});
    const int32_t *lengths = sl_source_map(src, 1, 0, 103 * sizeof(int32_t));
    for (int64_t epoch = 0; epoch < 2; epoch++) {
        int64_t n_plain, n_bucketed;
        int64_t *a = epoch_ids(plain, epoch, 0, &n_plain);
        int64_t *b = epoch_ids(bucketed, epoch, 2, &n_bucketed);
        cr_assert_eq(n_plain, 103);
        cr_assert_eq(n_bucketed, 103);
        cr_assert(same_set(a, b, 0, 103), "epoch %lld: bucketing changed the epoch's elements", (long long)epoch);
        for (int64_t start = 0; start < 103; start += 15) {
            int64_t end = start + 15 < 103 ? start + 15 : 103;
            cr_assert(same_set(a, b, start, end), "epoch %lld: window at %lld holds other elements", (long long)epoch,
                      (long long)start);
            /* Within a batch, lengths rise; and all lengths of one batch lie
             * on one side of another's. */
            for (int64_t x = start; x < end; x += 5)
                for (int64_t y = x + 5; y < end; y += 5) {
                    int32_t xlo = lengths[b[x]], xhi = lengths[b[x + 4 < end ? x + 4 : end - 1]];
                    int32_t ylo = lengths[b[y]], yhi = lengths[b[y + 4 < end ? y + 4 : end - 1]];
                    cr_assert(xhi <= ylo || yhi <= xlo, "epoch %lld: batches at %lld and %lld overlap in length",
                              (long long)epoch, (long long)x, (long long)y);
                }
        }
        /* The short last batch holds the longest of the last window. */
        for (int64_t r = 100; r < 103; r++)
            for (int64_t q = 90; q < 100; q++)
                cr_assert_geq(lengths[b[r]], lengths[b[q]]);
        free(a);
        free(b);
    }
    sl_pipeline_free(plain);
    sl_pipeline_free(bucketed);
    sl_source_free(src);
}

Test(bucket_by_length, bucketed_batches_depend_on_seed_epoch_and_index_only)
{
    sl_source *src = sequences(64, 1, CAPACITY);
    sl_pipeline *p = padded(src, 4, 4, false, (sl_shard){0, 1});
    int64_t rows;
    int64_t *whole = epoch_ids(p, 1, 1, &rows);
    int64_t *again = epoch_ids(p, 1, 0, &rows);
    cr_assert(memcmp(whole, again, 64 * sizeof *whole) == 0, "two runs of the same epoch differ");
    /* Batch k computed alone, from any starting point. */
    for (int64_t k = 0; k < 16; k++) {
        sl_batch *b = produce(p, sl_test_kernels(), 1, k);
        cr_assert(memcmp(b->element_ids, whole + 4 * k, 4 * sizeof *whole) == 0, "batch %lld alone differs",
                  (long long)k);
        sl_batch_free(b);
    }
    /* Epochs differ: the shuffle and the window order are keyed by it. */
    int64_t *other = epoch_ids(p, 2, 0, &rows);
    cr_assert(memcmp(whole, other, 64 * sizeof *whole) != 0);
    free(whole);
    free(again);
    free(other);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(bucket_by_length, bucketing_drops_the_shuffles_rows_and_shards_disjointly)
{
    sl_source *src = sequences(50, 1, CAPACITY);
    /* drop_last: 50 elements make 7 batches of 7; the dropped element is the
     * one the shuffled order drops, not the longest. */
    sl_pipeline *plain = padded(src, 7, 0, true, (sl_shard){0, 1});
    sl_pipeline *bucketed = padded(src, 7, 2, true, (sl_shard){0, 1});
    int64_t n_plain, n_bucketed;
    int64_t *a = epoch_ids(plain, 0, 0, &n_plain), *b = epoch_ids(bucketed, 0, 0, &n_bucketed);
    cr_assert_eq(n_plain, 49);
    cr_assert_eq(n_bucketed, 49);
    cr_assert(same_set(a, b, 0, 49));
    free(a);
    free(b);
    sl_pipeline_free(plain);
    sl_pipeline_free(bucketed);

    /* Two ranks bucket their own shards: disjoint, covering the epoch. */
    int seen[50] = {0};
    for (int rank = 0; rank < 2; rank++) {
        sl_pipeline *p = padded(src, 4, 3, false, (sl_shard){rank, 2});
        int64_t n;
        int64_t *ids = epoch_ids(p, 0, 0, &n);
        cr_assert_eq(n, 25);
        for (int64_t i = 0; i < n; i++)
            seen[ids[i]]++;
        free(ids);
        sl_pipeline_free(p);
    }
    for (int i = 0; i < 50; i++)
        cr_assert_eq(seen[i], 1, "element %d seen %d times across the two ranks", i, seen[i]);
    sl_source_free(src);
}

Test(pad_to_multiple, pad_width_is_the_smallest_multiple_holding_the_longest)
{
    /* One sequence per batch, at every edge of the rounding: empty, one
     * token, a multiple of 64 and one either side of it, the capacity, past
     * the capacity (clamped) and a negative length (clamped to 0). */
    const int32_t lengths[] = {0, 1, 63, 64, 65, 127, 128, 129, 256, 257, 299, 300, 301, -5};
    enum { N = sizeof lengths / sizeof lengths[0] };
    int32_t *tokens = malloc((size_t)N * CAPACITY * sizeof *tokens);
    int32_t *length_data = malloc(sizeof lengths);
    cr_assert(tokens && length_data);
    memcpy(length_data, lengths, sizeof lengths);
    for (int64_t i = 0; i < (int64_t)N * CAPACITY; i++)
        tokens[i] = (int32_t)(1000 + i);
    sl_schema schema = {0};
    schema.nfields = 2;
    snprintf(schema.fields[0].name, sizeof schema.fields[0].name, "tokens");
    schema.fields[0].dtype = SL_I32;
    schema.fields[0].shape = (sl_shape){.rank = 1, .dims = {CAPACITY}};
    snprintf(schema.fields[1].name, sizeof schema.fields[1].name, "length");
    schema.fields[1].dtype = SL_I32;
    void *data[2] = {tokens, length_data};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, N, data, SL_TAKE, &src, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 1, 1);
    spec.shuffle = false;
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_pad_to_multiple("tokens", "length", MULTIPLE, PAD), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_attention_mask("tokens", "length", "mask"), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    for (int i = 0; i < N; i++) {
        int64_t keep = lengths[i] < 0 ? 0 : (lengths[i] > CAPACITY ? CAPACITY : lengths[i]);
        /* By hand: 0 -> 0, 1 -> 64, 64 -> 64, 65 -> 128, 129 -> 192, ...,
         * 257 -> 320, cut to the capacity 300. */
        int64_t want = (keep + MULTIPLE - 1) / MULTIPLE * MULTIPLE;
        want = want > CAPACITY ? CAPACITY : want;
        sl_batch *b = produce(p, i % 2 ? sl_test_kernels() : sl_kernels_reference(), 0, i);
        cr_assert_eq(b->fields[0].shape.dims[1], want, "length %d: width %lld, expected %lld", lengths[i],
                     (long long)b->fields[0].shape.dims[1], (long long)want);
        cr_assert_eq(b->fields[2].shape.dims[1], want);
        const int32_t *row = b->fields[0].data;
        const uint8_t *mask = b->fields[2].data;
        for (int64_t t = 0; t < want; t++) {
            cr_assert_eq(row[t], t < keep ? 1000 + i * CAPACITY + (int32_t)t : PAD, "length %d position %lld",
                         lengths[i], (long long)t);
            cr_assert_eq(mask[t], t < keep);
        }
        sl_batch_free(b);
    }
    sl_pipeline_free(p);
    sl_source_free(src);
}

static void expect_refused(const sl_source *src, const sl_op *ops, int nops, const char *needle)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 4, 1);
    sl_err err = {0};
    for (int i = 0; i < nops; i++)
        cr_assert_eq(sl_pipeline_spec_add(&spec, ops[i], &err), SL_OK);
    sl_pipeline *p = NULL;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL, "expected a refusal mentioning '%s'", needle);
    cr_assert_null(p);
    cr_assert_not_null(strstr(err.msg, needle), "message lacks \"%s\": %s", needle, err.msg);
}

Test(batch_ops, bad_specs_are_refused_naming_op_and_field)
{
    sl_source *seq = sequences(10, 1, 20);
    sl_op pad = sl_op_pad_to_multiple("tokens", "length", 8, 0);
    expect_refused(seq, (sl_op[]){sl_op_pad_to_multiple("length", "length", 8, 0)}, 1,
                   "op 0: pad_to_multiple needs an i32 [capacity] field, field 'length'");
    expect_refused(seq, (sl_op[]){sl_op_pad_to_multiple("tokens", "length", 0, 0)}, 1, "positive multiple");
    expect_refused(seq, (sl_op[]){sl_op_pad_to_multiple("tokens", "lengths", 8, 0)}, 1,
                   "length field 'lengths', which the source does not have");
    expect_refused(seq, (sl_op[]){sl_op_pad_to_multiple("tokens", "tokens", 8, 0)}, 1,
                   "length field 'tokens' as i32 scalars");
    expect_refused(seq, (sl_op[]){pad, sl_op_attention_mask("tokens", "length", "length")}, 2,
                   "op 1: attention_mask adds field 'length', which already exists");
    expect_refused(seq, (sl_op[]){sl_op_attention_mask("tokens", "length", "")}, 1, "needs a name");
    expect_refused(seq, (sl_op[]){sl_op_bucket_by_length("length", 1, 0)}, 1, "window must be 1 to 1024 batches");
    expect_refused(seq, (sl_op[]){sl_op_bucket_by_length("length", 1, 2), sl_op_bucket_by_length("length", 2, 2)}, 2,
                   "op 1: a pipeline has at most one bucket_by_length");
    expect_refused(seq, (sl_op[]){sl_op_bag_offsets("tokens", "offsets")}, 1,
                   "bag_offsets needs an i64 [columns] id field, field 'tokens'");
    expect_refused(seq, (sl_op[]){sl_op_log1p("tokens")}, 1, "log1p takes f32, field 'tokens'");

    sl_fixture_spec sparse_spec = {.kind = SL_FIXTURE_SPARSE, .n = 8, .features = 2, .categorical = 3};
    sl_source *sparse;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&sparse_spec, 1, &sparse, &err), SL_OK);
    const int64_t sizes[3] = {10, 0, 10};
    expect_refused(sparse, (sl_op[]){sl_op_hash_ids("sparse", 2, sizes)}, 1,
                   "hash_ids has 2 table sizes for the 3 columns of field 'sparse'");
    expect_refused(sparse, (sl_op[]){sl_op_hash_ids("sparse", 3, sizes)}, 1,
                   "op 0 (hash_ids of field 'sparse'): hash_ids table size of column 1");
    expect_refused(sparse, (sl_op[]){sl_op_hash_ids("dense", 2, sizes)}, 1, "field 'dense' is f32");
    expect_refused(sparse, (sl_op[]){sl_op_bag_offsets("sparse", "dense")}, 1, "adds field 'dense'");
    expect_refused(sparse, (sl_op[]){sl_op_bag_offsets("sparse", "offsets"), sl_op_log1p("dense")}, 2,
                   "op 1 (log1p) is a per-element op after a batch op");

    /* Lengths spanning more than the counting sort's range. */
    int32_t lengths[2] = {0, 70000};
    sl_schema schema = {0};
    schema.nfields = 1;
    snprintf(schema.fields[0].name, sizeof schema.fields[0].name, "length");
    schema.fields[0].dtype = SL_I32;
    void *data[1] = {lengths};
    sl_source *wide;
    cr_assert_eq(sl_source_memory_create(&schema, 2, data, SL_BORROW, &wide, &err), SL_OK, "%s", err.msg);
    expect_refused(wide, (sl_op[]){sl_op_bucket_by_length("length", 1, 2)}, 1, "spans [0, 70000]");
    sl_source_free(wide);
    sl_source_free(sparse);
    sl_source_free(seq);
}

Test(bag_offsets, bag_offsets_add_a_field_every_executor_fills)
{
    sl_fixture_spec spec = {.kind = SL_FIXTURE_SPARSE, .n = 30, .features = 3, .categorical = 4};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 2, &src, &err), SL_OK);
    sl_pipeline_spec ps;
    sl_pipeline_spec_init(&ps, src, 8, 5);
    const int64_t sizes[4] = {5, 6, 7, 8};
    cr_assert_eq(sl_pipeline_spec_add(&ps, sl_op_hash_ids("sparse", 4, sizes), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&ps, sl_op_bag_offsets("sparse", "offsets"), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&ps, &p, &err), SL_OK, "%s", err.msg);
    const sl_schema *out = sl_pipeline_output_schema(p);
    cr_assert_eq(out->nfields, 3);
    cr_assert_str_eq(out->fields[2].name, "offsets");
    cr_assert_eq(out->fields[2].dtype, SL_I64);
    cr_assert_eq(sl_pipeline_batch_bytes(p), (size_t)8 * (3 * 4 + 4 * 8 + 4 * 8));
    fused_check c = {p, 0, {0}};
    sl_fused *fz;
    cr_assert_eq(sl_fused_create(p, sl_test_kernels(), &fz, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, 0, compare_with_reference, &c, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(c.batch, 4);
    sl_batch *b = produce(p, sl_kernels_reference(), 0, 3);
    /* The last batch has 6 rows; each column's last offset counts its ids. */
    cr_assert_eq(b->count, 6);
    const int64_t *ids = b->fields[1].data, *ends = b->fields[2].data;
    for (int j = 0; j < 4; j++) {
        int64_t present = 0;
        for (int64_t r = 0; r < 6; r++)
            present += ids[r * 4 + j] >= 0;
        cr_assert_eq(ends[5 * 4 + j], present);
    }
    sl_batch_free(b);
    sl_fused_free(fz);
    sl_pipeline_free(p);
    sl_source_free(src);
}
