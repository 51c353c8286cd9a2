/* Pipelines: validation names the op and field, batching covers the epoch,
 * and every executor (unfused reference, iter with any worker count, fused)
 * gives identical batches, including across epoch boundaries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "batch_ring.h"
#include "core/internal.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"

#include "support.h"

static sl_source *images(int64_t n, int side)
{
    return test_image_fixture(n, side);
}

static const float mean3[3] = {120.0f, 110.0f, 100.0f};
static const float std3[3] = {60.0f, 61.0f, 62.0f};

/* Crop before normalize takes the staging path in every executor; the flip
 * after normalize works on f32 pixels. */
static sl_pipeline *mixed_pipeline(sl_source *src, int64_t batch_size, bool shuffle)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, batch_size, 7);
    spec.shuffle = shuffle;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_random_crop("image", 1, 12, 10), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("image", 3, mean3, std3), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_random_hflip("image", 2, 0.5f), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_scale("image", 0.5f), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_clip("image", -1.0f, 1.0f), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

/* Collects batches as one byte string per field plus the element ids. */
typedef struct collected {
    unsigned char *bytes[SL_MAX_FIELDS];
    size_t size[SL_MAX_FIELDS];
    int64_t *ids;
    int64_t nids;
    int64_t batches;
} collected;

static void collect(collected *c, const sl_batch *b)
{
    for (int f = 0; f < b->schema.nfields; f++) {
        size_t n = sl_tensor_nbytes(&b->fields[f]);
        c->bytes[f] = realloc(c->bytes[f], c->size[f] + n);
        memcpy(c->bytes[f] + c->size[f], b->fields[f].data, n);
        c->size[f] += n;
    }
    c->ids = realloc(c->ids, (size_t)(c->nids + b->count) * sizeof *c->ids);
    memcpy(c->ids + c->nids, b->element_ids, (size_t)b->count * sizeof *c->ids);
    c->nids += b->count;
    c->batches++;
}

static int collect_sink(const sl_batch *b, void *user)
{
    collect(user, b);
    return 0;
}

static void release(collected *c)
{
    for (int f = 0; f < SL_MAX_FIELDS; f++)
        free(c->bytes[f]);
    free(c->ids);
    memset(c, 0, sizeof *c);
}

static void expect_same(const collected *a, const collected *b, const char *what)
{
    cr_assert_eq(a->nids, b->nids, "%s: %lld vs %lld elements", what, (long long)a->nids, (long long)b->nids);
    cr_assert(memcmp(a->ids, b->ids, (size_t)a->nids * sizeof *a->ids) == 0, "%s: element order differs", what);
    for (int f = 0; f < SL_MAX_FIELDS; f++) {
        cr_assert_eq(a->size[f], b->size[f], "%s: field %d size", what, f);
        if (a->size[f])
            cr_assert(memcmp(a->bytes[f], b->bytes[f], a->size[f]) == 0, "%s: field %d bytes differ", what, f);
    }
}

static void run_iter(const sl_pipeline *p, const sl_kernel_table *k, int workers, sl_position start, int64_t n,
                     collected *out)
{
    sl_iter_options o = {.kernels = k, .workers = workers, .prefetch_depth = 0, .start = start};
    sl_iter *it;
    sl_err err = {0};
    cr_assert_eq(sl_iter_create(p, &o, &it, &err), SL_OK, "%s", err.msg);
    for (int64_t i = 0; i < n; i++) {
        sl_batch *b;
        cr_assert_eq(sl_iter_next(it, &b, &err), SL_OK, "%s", err.msg);
        collect(out, b);
        sl_batch_free(b);
    }
    sl_iter_free(it);
}

static void run_fused(const sl_pipeline *p, sl_position start, int64_t n, collected *out)
{
    sl_fused *fz;
    sl_err err = {0};
    cr_assert_eq(sl_fused_create(p, sl_test_kernels(), &fz, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_fused_run(fz, start, n, collect_sink, out, &err), SL_OK, "%s", err.msg);
    sl_fused_free(fz);
}

Test(pipeline, executors_agree_across_workers_and_epochs)
{
    sl_source *src = images(100, 16);
    sl_pipeline *p = mixed_pipeline(src, 16, true);
    /* 100 elements in batches of 16: 7 batches, the last of 4 rows. Run
     * two and a half epochs so every executor crosses epoch boundaries. */
    cr_assert_eq(sl_pipeline_batches_per_epoch(p), 7);
    cr_assert_eq(sl_pipeline_batch_rows(p, 6), 4);
    int64_t n = 17;
    collected ref = {0};
    run_iter(p, sl_kernels_reference(), 0, (sl_position){0, 0}, n, &ref);
    cr_assert_eq(ref.nids, 2 * 100 + 3 * 16);
    for (int workers = 0; workers <= 3; workers++) {
        collected it = {0};
        run_iter(p, sl_test_kernels(), workers, (sl_position){0, 0}, n, &it);
        expect_same(&ref, &it, workers == 0 ? "iter, 0 workers" : "iter with workers");
        release(&it);
    }
    collected fz = {0};
    run_fused(p, (sl_position){0, 0}, n, &fz);
    expect_same(&ref, &fz, "fused");
    release(&fz);
    release(&ref);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* The per-element mode crosses epochs too (its batch ops and ids come from
 * the same position), with and without workers; and one element computed
 * alone is exactly its row in the batch, whichever batch holds it. */
Test(pipeline, per_element_mode_is_bit_identical_to_batches)
{
    sl_source *src = images(100, 16);
    sl_pipeline *p = mixed_pipeline(src, 16, true);
    int64_t n = 17;
    collected ref = {0};
    run_iter(p, sl_kernels_reference(), 0, (sl_position){0, 0}, n, &ref);
    for (int workers = 0; workers <= 2; workers += 2) {
        sl_iter_options o = {.kernels = sl_test_kernels(), .workers = workers, .prefetch_depth = 0, .start = {0, 0}};
        sl_iter *it;
        sl_err err = {0};
        cr_assert_eq(sl_iter_create_mode(p, &o, SL_ITER_PER_ELEMENT, &it, &err), SL_OK, "%s", err.msg);
        collected pe = {0};
        for (int64_t i = 0; i < n; i++) {
            sl_batch *b;
            cr_assert_eq(sl_iter_next(it, &b, &err), SL_OK, "%s", err.msg);
            collect(&pe, b);
            sl_batch_free(b);
        }
        sl_iter_free(it);
        expect_same(&ref, &pe, workers ? "per-element, 2 workers" : "per-element, 0 workers");
        release(&pe);
    }

    /* Element 5 of epoch 1, alone, against its row in epoch 1. */
    size_t row_bytes = ref.size[0] / (size_t)ref.nids;
    int64_t row = -1;
    for (int64_t r = 100; r < 200 && row < 0; r++)
        if (ref.ids[r] == 5)
            row = r;
    cr_assert_geq(row, 0);
    unsigned char *image = malloc(row_bytes);
    int32_t label;
    void *out[SL_MAX_FIELDS] = {image, &label};
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_produce_element(p, sl_kernels_reference(), 1, 5, out, &err), SL_OK, "%s", err.msg);
    cr_expect(memcmp(image, ref.bytes[0] + (size_t)row * row_bytes, row_bytes) == 0);
    cr_expect_eq(label, ((const int32_t *)ref.bytes[1])[row]);
    cr_expect_eq(sl_pipeline_produce_element(p, sl_test_kernels(), 1, 100, out, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "element 100") != NULL, "%s", err.msg);
    cr_expect_eq(sl_pipeline_produce_element(p, sl_test_kernels(), -1, 0, out, &err), SL_EINVAL);
    cr_expect_neq(sl_iter_create_mode(p, NULL, (sl_iter_mode)7, &(sl_iter *){NULL}, &err), SL_OK);
    free(image);
    release(&ref);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* A fused run's batches, and how many of them were split. */
typedef struct fused_collected {
    collected *batches;
    const sl_fused *fused;
    int64_t split;
} fused_collected;

static int collect_fused(const sl_batch *b, void *user)
{
    fused_collected *c = user;
    c->split += sl_fused_last_split(c->fused);
    collect(c->batches, b);
    return 0;
}

/* Returns how many of the n batches were split. */
static int64_t run_fused_threads(const sl_pipeline *p, int threads, int64_t n, collected *out)
{
    sl_fused *fz;
    sl_err err = {0};
    cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), threads, &fz, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_fused_threads(fz), threads);
    fused_collected c = {out, fz, 0};
    cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, n, collect_fused, &c, &err), SL_OK, "%s", err.msg);
    sl_fused_free(fz);
    return c.split;
}

/* Batches of 32 images of 32x32x3 f32 (384 KiB; the crop pads back to the
 * image's size) are large enough to be split across threads, and the
 * executor splits its first batches whatever the machine (split_choice.h:
 * its first trial), so each run with more than one thread splits some; 3
 * threads split 32 rows unevenly and the last batch of 8 rows leaves some
 * threads fewer rows than others. */
Test(pipeline, fused_is_bit_identical_for_any_thread_count)
{
    sl_source *src = images(200, 32);
    sl_pipeline *p = mixed_pipeline(src, 32, true);
    int64_t n = 2 * sl_pipeline_batches_per_epoch(p);
    collected ref = {0};
    run_iter(p, sl_kernels_reference(), 0, (sl_position){0, 0}, n, &ref);
    for (int threads = 1; threads <= 4; threads++) {
        collected fz = {0};
        int64_t split = run_fused_threads(p, threads, n, &fz);
        cr_expect(threads == 1 ? split == 0 : split > 0, "%d threads split %lld of %lld batches", threads,
                  (long long)split, (long long)n);
        char what[32];
        snprintf(what, sizeof what, "fused, %d threads", threads);
        expect_same(&ref, &fz, what);
        release(&fz);
    }
    release(&ref);
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* The buffer each batch of a run was handed to the sink in. */
typedef struct buffers_seen {
    const void *data[24];
    int batches;
} buffers_seen;

static int note_buffer(const sl_batch *b, void *user)
{
    buffers_seen *seen = user;
    cr_assert_lt(seen->batches, 24);
    seen->data[seen->batches++] = b->fields[0].data;
    return 0;
}

static buffers_seen buffers_of_run(const sl_pipeline *p, int threads, int64_t n)
{
    buffers_seen seen = {0};
    sl_fused *fz;
    sl_err err = {0};
    cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), threads, &fz, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, n, note_buffer, &seen, &err), SL_OK, "%s", err.msg);
    sl_fused_free(fz);
    return seen;
}

/* Batch i's buffer is batch i - ring's, and none of the ring - 1 batches
 * before it used it. */
static void expect_rotation(const buffers_seen *seen, int ring, const char *what)
{
    for (int i = 1; i < seen->batches; i++)
        for (int back = 1; back <= ring && back <= i; back++) {
            bool same = seen->data[i] == seen->data[i - back];
            cr_expect_eq(same, back == ring, "%s: batch %d and the batch %d before it, a ring of %d", what, i, back,
                         ring);
        }
}

/* The ring a splitting executor of p's 32-row batches has on this machine
 * (batch_ring.h), and those batches' bytes. */
static int ring_of_32_rows(const sl_pipeline *p, size_t *batch_bytes)
{
    sl_batch *probe;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 32, &probe, &err), SL_OK, "%s", err.msg);
    *batch_bytes = sl_batch_data_bytes(probe);
    sl_batch_free(probe);
    return sl__batch_ring_size(*batch_bytes, sl__l2_cache_bytes());
}

/* An executor that splits batches hands its sink each batch in the buffer
 * it saw longest ago, rotating through as many as batch_ring.h says for this
 * machine's L2, so a worker's writes do not find their lines in the
 * consumer's cache; one that never splits (one thread, or batches too small
 * to split) keeps one buffer. The bytes are the same either way
 * (fused_is_bit_identical_for_any_thread_count runs these batch sizes). */
Test(pipeline, a_splitting_fused_executor_hands_its_sink_a_ring_of_buffers)
{
    sl_source *src = images(200, 32);
    sl_pipeline *p = mixed_pipeline(src, 32, true);
    size_t batch_bytes;
    int ring = ring_of_32_rows(p, &batch_bytes);
    cr_log_info("batches of 384 KiB, an L2 of %zu bytes: a ring of %d", sl__l2_cache_bytes(), ring);
    buffers_seen seen = buffers_of_run(p, 2, 12);
    cr_assert_eq(seen.batches, 12);
    expect_rotation(&seen, ring, "2 threads");
    seen = buffers_of_run(p, 1, 12);
    expect_rotation(&seen, 1, "1 thread");
    sl_pipeline_free(p);

    /* 4 images are 48 KiB, below what is ever split. */
    p = mixed_pipeline(src, 4, true);
    seen = buffers_of_run(p, 2, 6);
    expect_rotation(&seen, 1, "2 threads, 48 KiB batches");
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* This process's resident bytes, from /proc/self/statm. */
static size_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    unsigned long long size = 0, resident = 0;
    cr_assert_eq(fscanf(f, "%llu %llu", &size, &resident), 2);
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* A splitting executor's ring of buffers is resident once the executor is
 * created, so that the split chooser's first trial, which writes the
 * ring's buffers first, does not pay their page faults (fused.c,
 * make_resident). Each 384 KiB buffer is above malloc's mmap threshold, so
 * it comes from fresh pages that nothing touches unless the executor does. */
Test(pipeline, a_splitting_fused_executor_makes_its_ring_resident_when_created)
{
    sl_source *src = images(200, 32);
    sl_pipeline *p = mixed_pipeline(src, 32, true);
    size_t batch_bytes;
    int ring = ring_of_32_rows(p, &batch_bytes);
    if (ring == 1)
        cr_skip_test("this machine's L2 (%zu bytes) gives 384 KiB batches no ring", sl__l2_cache_bytes());
    size_t before = resident_bytes();
    sl_fused *fz;
    sl_err err = {0};
    cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), 2, &fz, &err), SL_OK, "%s", err.msg);
    size_t grown = resident_bytes() - before;
    cr_expect_geq(grown, (size_t)ring * batch_bytes, "%zu bytes became resident for a ring of %d buffers of %zu", grown,
                  ring, batch_bytes);
    sl_fused_free(fz);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(pipeline, fused_thread_count_is_validated)
{
    sl_source *src = images(10, 16);
    sl_pipeline *p = mixed_pipeline(src, 4, true);
    sl_fused *fz = NULL;
    sl_err err = {0};
    cr_expect_neq(sl_fused_create_threads(p, sl_test_kernels(), 0, &fz, &err), SL_OK);
    cr_expect_not_null(strstr(err.msg, "threads"), "%s", err.msg);
    cr_expect_neq(sl_fused_create_threads(p, sl_test_kernels(), SL_FUSED_MAX_THREADS + 1, &fz, &err), SL_OK);
    cr_expect_null(fz);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(pipeline, available_cpus_is_within_the_online_count)
{
    int cpus = sl_available_cpus();
    cr_expect_geq(cpus, 1);
    cr_expect_leq(cpus, sysconf(_SC_NPROCESSORS_ONLN));
}

/* Under `ulimit -v`, what is left of the address space binds before the
 * machine's free memory does, and is named as the limit. Criterion runs
 * each test in its own process, so the limit ends with the test. */
Test(pipeline, memory_available_honours_the_address_space_limit)
{
    const char *limit = NULL;
    int64_t unlimited = sl_memory_available(&limit);
    cr_assert_gt(unlimited, 0, "no memory figure at all (limit '%s')", limit);
    FILE *status = fopen("/proc/self/status", "r");
    cr_assert_not_null(status);
    char line[256];
    long long vm_kib = -1;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmSize: %lld kB", &vm_kib) == 1)
            break;
    fclose(status);
    cr_assert_gt(vm_kib, 0);
    const int64_t headroom = 64 << 20;
    struct rlimit rl = {.rlim_cur = (rlim_t)vm_kib * 1024 + (rlim_t)headroom, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
    int64_t limited = sl_memory_available(&limit);
    cr_assert_leq(limited, headroom, "%lld bytes under a %lld-byte headroom", (long long)limited, (long long)headroom);
    cr_assert_gt(limited, headroom / 2, "%lld bytes: the mapped size was counted twice?", (long long)limited);
    cr_assert_str_eq(limit, "RLIMIT_AS (ulimit -v)");
}

Test(pipeline, epoch_is_a_permutation_and_epochs_differ)
{
    sl_source *src = images(100, 16);
    sl_pipeline *p = mixed_pipeline(src, 16, true);
    collected c = {0};
    run_fused(p, (sl_position){0, 0}, 14, &c);
    int seen[2][100] = {{0}};
    for (int64_t i = 0; i < c.nids; i++)
        seen[i / 100][c.ids[i]]++;
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 100; i++)
            cr_assert_eq(seen[e][i], 1, "epoch %d: element %d seen %d times", e, i, seen[e][i]);
    cr_expect(memcmp(c.ids, c.ids + 100, 100 * sizeof *c.ids) != 0, "two epochs in the same order");
    release(&c);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(pipeline, unshuffled_order_and_drop_last)
{
    sl_source *src = images(10, 4);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 4, 1);
    spec.shuffle = false;
    spec.drop_last = true;
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(sl_pipeline_batches_per_epoch(p), 2);
    for (int64_t i = 0; i < 8; i++)
        cr_expect_eq(sl_pipeline_element_at(p, 3, i), i);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(pipeline, sharded_ranks_split_the_epoch)
{
    sl_source *src = images(50, 4);
    int owner[50];
    memset(owner, -1, sizeof owner);
    for (int rank = 0; rank < 3; rank++) {
        sl_pipeline_spec spec;
        sl_pipeline_spec_init(&spec, src, 8, 9);
        spec.shard = (sl_shard){rank, 3};
        sl_pipeline *p;
        sl_err err = {0};
        cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
        collected c = {0};
        run_fused(p, (sl_position){0, 0}, sl_pipeline_batches_per_epoch(p), &c);
        cr_assert_eq(c.nids, sl_pipeline_epoch_size(p));
        for (int64_t i = 0; i < c.nids; i++) {
            cr_assert_eq(owner[c.ids[i]], -1, "element %lld in two ranks", (long long)c.ids[i]);
            owner[c.ids[i]] = rank;
        }
        release(&c);
        sl_pipeline_free(p);
    }
    for (int i = 0; i < 50; i++)
        cr_expect_neq(owner[i], -1, "element %d in no rank", i);
    sl_source_free(src);
}

static void expect_refused(sl_source *src, sl_op op, const char *needle)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 4, 1);
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, op, &err), SL_OK);
    sl_pipeline *p = NULL;
    cr_expect_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect_null(p);
    cr_expect(strstr(err.msg, needle) != NULL, "message '%s' should mention '%s'", err.msg, needle);
}

Test(pipeline, invalid_specs_name_the_op_and_field)
{
    sl_source *src = images(10, 8);
    expect_refused(src, sl_op_scale("pixels", 2.0f), "'pixels'");
    expect_refused(src, sl_op_scale("image", 2.0f), "normalize it first");
    expect_refused(src, sl_op_normalize("label", 1, mean3, std3), "label");
    expect_refused(src, sl_op_random_crop("image", 1, 9, 4), "does not fit");
    expect_refused(src, sl_op_rot90("label", 1), "rot90 needs an image");
    {
        /* A quarter turn of an 8x6 image would be 6x8: refused, naming the op, field and shape. */
        sl_fixture_spec wide_spec = {.kind = SL_FIXTURE_IMAGES, .n = 4, .h = 8, .w = 6, .c = 3, .classes = 2};
        sl_source *wide;
        sl_err err = {0};
        cr_assert_eq(sl_fixture_build(&wide_spec, 42, &wide, &err), SL_OK, "%s", err.msg);
        expect_refused(wide, sl_op_rot90("image", 1), "op 0: rot90 needs a square image, but field 'image' is 8x6");
        sl_source_free(wide);
    }
    expect_refused(src, sl_op_pack_tokens("label", 8, 0), "pack_tokens");
    float zero = 0.0f;
    expect_refused(src, sl_op_normalize("image", 1, mean3, &zero), "std");
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 0, 1);
    sl_pipeline *p;
    sl_err err = {0};
    cr_expect_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "batch_size") != NULL, "%s", err.msg);
    sl_pipeline_spec_init(&spec, src, 4, 1);
    spec.shard = (sl_shard){3, 2};
    cr_expect_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    sl_source_free(src);
}

Test(pipeline, output_schema_and_fingerprint)
{
    sl_source *src = images(20, 16);
    sl_pipeline *a = mixed_pipeline(src, 16, true);
    sl_pipeline *b = mixed_pipeline(src, 16, true);
    sl_pipeline *c = mixed_pipeline(src, 8, true);
    const sl_schema *out = sl_pipeline_output_schema(a);
    cr_expect_eq(out->fields[sl_schema_find(out, "image")].dtype, SL_F32);
    cr_expect_eq(out->fields[sl_schema_find(out, "label")].dtype, SL_I32);
    cr_expect_eq(sl_pipeline_fingerprint(a), sl_pipeline_fingerprint(b));
    cr_expect_neq(sl_pipeline_fingerprint(a), sl_pipeline_fingerprint(c));
    cr_expect_eq(sl_pipeline_batch_bytes(a), 16u * (16 * 16 * 3 * 4 + 4));
    sl_pipeline_free(a);
    sl_pipeline_free(b);
    sl_pipeline_free(c);
    sl_source_free(src);
}

Test(pack_tokens, token_packing_pads_the_tail)
{
    /* 10 tokens in sequences of 4: three sequences, the last half padding. */
    int32_t *tokens = malloc(10 * sizeof *tokens);
    for (int i = 0; i < 10; i++)
        tokens[i] = 100 + i;
    sl_schema schema = {0};
    schema.nfields = 1;
    strcpy(schema.fields[0].name, "tokens");
    schema.fields[0].dtype = SL_I32;
    sl_source *src;
    sl_err err = {0};
    void *data[1] = {tokens};
    cr_assert_eq(sl_source_memory_create(&schema, 10, data, SL_TAKE, &src, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 3, 1);
    spec.shuffle = false;
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_pack_tokens("tokens", 4, -7), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_pipeline_dataset_size(p), 3);
    collected c = {0};
    run_fused(p, (sl_position){0, 0}, 1, &c);
    const int32_t expected[12] = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109, -7, -7};
    cr_assert_eq(c.size[0], sizeof expected);
    cr_expect(memcmp(c.bytes[0], expected, sizeof expected) == 0);
    collected r = {0};
    run_iter(p, sl_kernels_reference(), 0, (sl_position){0, 0}, 1, &r);
    expect_same(&c, &r, "packing");
    release(&c);
    release(&r);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(pack_tokens, token_packing_is_the_same_through_every_source)
{
    /* A pread source has no mapped view, so packing reads the tokens and then
     * pads in place: a different path from memory and mmap. */
    sl_fixture_spec spec = {.kind = SL_FIXTURE_TOKENS, .n = 1000, .vocab = 50, .mean_doc_len = 20};
    sl_source *memory;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 3, &memory, &err), SL_OK, "%s", err.msg);
    char dir[] = "/tmp/sluice-pack-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(sl_source_export_npy(memory, dir, &err), SL_OK, "%s", err.msg);
    char path[64];
    snprintf(path, sizeof path, "%s/tokens.npy", dir);
    const char *names[1] = {"tokens"}, *paths[1] = {path};
    collected out[3];
    memset(out, 0, sizeof out);
    for (int kind = 0; kind < 3; kind++) {
        sl_source *src = memory;
        if (kind != SL_SOURCE_MEMORY)
            cr_assert_eq(sl_source_file_create((sl_source_kind)kind, 1, names, paths, &src, &err), SL_OK, "%s",
                         err.msg);
        sl_pipeline_spec ps;
        sl_pipeline_spec_init(&ps, src, 5, 9);
        /* 1000 tokens in sequences of 64: the last sequence is 40 tokens
         * and 24 pads, and it lands somewhere in the shuffled epoch. */
        cr_assert_eq(sl_pipeline_spec_add(&ps, sl_op_pack_tokens("tokens", 64, -1), &err), SL_OK);
        sl_pipeline *p;
        cr_assert_eq(sl_pipeline_create(&ps, &p, &err), SL_OK, "%s", err.msg);
        run_iter(p, sl_test_kernels(), 0, (sl_position){0, 0}, sl_pipeline_batches_per_epoch(p), &out[kind]);
        sl_pipeline_free(p);
        if (src != memory)
            sl_source_free(src);
    }
    expect_same(&out[0], &out[1], "mmap vs memory");
    expect_same(&out[0], &out[2], "pread vs memory");
    int pads = 0;
    for (size_t i = 0; i < out[2].size[0] / sizeof(int32_t); i++)
        pads += ((const int32_t *)out[2].bytes[0])[i] == -1;
    cr_expect_eq(pads, 24);
    for (int kind = 0; kind < 3; kind++)
        release(&out[kind]);
    unlink(path);
    rmdir(dir);
    sl_source_free(memory);
}

/* Every executor fails, naming the file, when the mapped file under its
 * source shrinks: before, the first read past the new end was a SIGBUS that
 * killed the process with nothing recorded. */
/* 512 images of 32x32x3 exported as npy files into a fresh folder, read back
 * through a file source of one kind and normalized in shuffled batches of
 * 64 (768 KiB of output, large enough for fused to split). */
typedef struct file_pipeline {
    char dir[128];
    char image_path[256];
    sl_source *fixture, *source;
    sl_pipeline *pipeline;
} file_pipeline;

static void file_pipeline_open(file_pipeline *fp, const char *tag, sl_source_kind kind)
{
    test_tmpdir_create(fp->dir, sizeof fp->dir, tag);
    fp->fixture = images(512, 32);
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(fp->fixture, fp->dir, &err), SL_OK, "%s", err.msg);
    char label_path[256];
    snprintf(fp->image_path, sizeof fp->image_path, "%s/image.npy", fp->dir);
    snprintf(label_path, sizeof label_path, "%s/label.npy", fp->dir);
    const char *names[2] = {"image", "label"};
    const char *paths[2] = {fp->image_path, label_path};
    cr_assert_eq(sl_source_file_create(kind, 2, names, paths, &fp->source, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, fp->source, 64, 7);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("image", 3, mean3, std3), &err), SL_OK);
    cr_assert_eq(sl_pipeline_create(&spec, &fp->pipeline, &err), SL_OK, "%s", err.msg);
}

static void file_pipeline_close(file_pipeline *fp)
{
    sl_pipeline_free(fp->pipeline);
    sl_source_free(fp->source);
    sl_source_free(fp->fixture);
    test_tmpdir_remove(fp->dir);
}

Test(pipeline, every_executor_fails_cleanly_when_a_mapped_file_shrinks)
{
    file_pipeline fp;
    file_pipeline_open(&fp, "shrink", SL_SOURCE_MMAP);
    const sl_pipeline *p = fp.pipeline;
    const char *image_path = fp.image_path;
    sl_err err = {0};
    cr_assert_eq(truncate(image_path, 4096), 0);

    /* Every batch of a shuffled epoch holds elements far past 4 KiB. */
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 64, &b, &err), SL_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(sl_pipeline_produce(p, sl_kernels_reference(), (sl_position){0, 1}, b, &err), SL_EIO);
    cr_assert(strstr(err.msg, image_path), "reference: %s", err.msg);
    sl_batch_free(b);

    for (int workers = 0; workers <= 2; workers += 2) {
        sl_iter_options o = {.kernels = sl_test_kernels(), .workers = workers, .prefetch_depth = 0, .start = {0, 0}};
        sl_iter *it;
        cr_assert_eq(sl_iter_create(p, &o, &it, &err), SL_OK, "%s", err.msg);
        memset(&err, 0, sizeof err);
        cr_assert_eq(sl_iter_next(it, &b, &err), SL_EIO, "iter with %d workers", workers);
        cr_assert(strstr(err.msg, image_path), "iter with %d workers: %s", workers, err.msg);
        sl_iter_free(it);
    }
    for (int threads = 1; threads <= 2; threads++) {
        sl_fused *fz;
        cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), threads, &fz, &err), SL_OK, "%s", err.msg);
        memset(&err, 0, sizeof err);
        cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, 2, NULL, NULL, &err), SL_EIO, "fused, %d threads", threads);
        cr_assert(strstr(err.msg, image_path), "fused with %d threads: %s", threads, err.msg);
        sl_fused_free(fz);
    }
    file_pipeline_close(&fp);
}

/* A file deleted or made unreadable after its source opened it is not an
 * error: the source holds the mapping or descriptor, so the run reads the
 * same bytes it would have. Every executor's output equals the memory
 * source's. */
Test(pipeline, files_deleted_or_made_unreadable_mid_run_still_read_whole)
{
    char dir[128];
    test_tmpdir_create(dir, sizeof dir, "vanish");
    sl_source *fixture = images(256, 16);
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(fixture, dir, &err), SL_OK, "%s", err.msg);
    sl_pipeline *expected_p = mixed_pipeline(fixture, 32, true);
    collected expected = {0};
    run_fused(expected_p, (sl_position){0, 0}, 0, &expected);

    for (sl_source_kind kind = SL_SOURCE_MMAP; kind <= SL_SOURCE_PREAD; kind++) {
        char image_path[256], label_path[256];
        snprintf(image_path, sizeof image_path, "%s/image.npy", dir);
        snprintf(label_path, sizeof label_path, "%s/label.npy", dir);
        const char *names[2] = {"image", "label"};
        const char *paths[2] = {image_path, label_path};
        sl_source *files;
        cr_assert_eq(sl_source_file_create(kind, 2, names, paths, &files, &err), SL_OK, "%s", err.msg);
        /* One file made unreadable, the other deleted. */
        cr_assert_eq(chmod(image_path, 0), 0);
        cr_assert_eq(unlink(label_path), 0);
        sl_pipeline *p = mixed_pipeline(files, 32, true);
        collected fused = {0}, iter = {0};
        run_fused(p, (sl_position){0, 0}, 0, &fused);
        run_iter(p, sl_test_kernels(), 2, (sl_position){0, 0}, sl_pipeline_batches_per_epoch(p), &iter);
        expect_same(&expected, &fused, sl_source_kind_name(kind));
        expect_same(&expected, &iter, sl_source_kind_name(kind));
        release(&fused);
        release(&iter);
        sl_pipeline_free(p);
        sl_source_free(files);
        /* Put the files back for the next kind. */
        cr_assert_eq(chmod(image_path, 0644), 0);
        cr_assert_eq(sl_source_export_npy(fixture, dir, &err), SL_OK, "%s", err.msg);
    }
    release(&expected);
    sl_pipeline_free(expected_p);
    sl_source_free(fixture);
    test_tmpdir_remove(dir);
}

Test(pad_tokens, pad_tokens_cuts_pads_and_ends_every_row)
{
    /* Rows of capacity 6 with end token 9: a short row, one whose end token
     * comes exactly at the cut, one too long, and one with no end token. */
    static int32_t rows[4][6] = {
        {5, 6, 9, 0, 0, 0},
        {5, 6, 7, 9, 0, 0},
        {1, 2, 3, 4, 5, 9},
        {1, 2, 3, 4, 5, 6},
    };
    const int32_t expected[4][4] = {{5, 6, 9, -1}, {5, 6, 7, 9}, {1, 2, 3, 9}, {1, 2, 3, 9}};
    sl_schema schema = {.nfields = 1};
    strcpy(schema.fields[0].name, "text");
    schema.fields[0].dtype = SL_I32;
    schema.fields[0].shape = (sl_shape){.rank = 1, .dims = {6}};
    void *data[1] = {rows};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, 4, data, SL_BORROW, &src, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 4, 1);
    spec.shuffle = false;
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_pad_tokens("text", 4, 9, -1), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_pipeline_output_schema(p)->fields[0].shape.dims[0], 4);
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 4, &b, &err), SL_OK);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(
            sl_pipeline_produce(p, k ? sl_test_kernels() : sl_kernels_reference(), (sl_position){0, 0}, b, &err), SL_OK,
            "%s", err.msg);
        cr_assert(memcmp(b->fields[0].data, expected, sizeof expected) == 0, "%s kernels", k ? "best" : "reference");
    }
    sl_batch_free(b);
    sl_pipeline_free(p);
    /* A field that is not rows of i32 tokens is refused, naming it. */
    sl_pipeline_spec_init(&spec, src, 4, 1);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_pad_tokens("text", 0, 9, -1), &err), SL_OK);
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "op 0") && strstr(err.msg, "text"), "%s", err.msg);
    sl_source_free(src);
}

/* A pread source over a file cut short fails row by row, each error naming
 * the offset of the row that failed. In a split batch the threads may run
 * rows in any order, and a thread may take another's rows after its own:
 * the error reported is still the first failing row's, as the reference
 * executor, which runs rows in order, finds it, for any thread count. */
Test(pipeline, fused_reports_the_first_failing_row_for_any_thread_count)
{
    file_pipeline fp;
    file_pipeline_open(&fp, "firstfail", SL_SOURCE_PREAD);
    const sl_pipeline *p = fp.pipeline;
    sl_err err = {0};
    /* Cut the images, once open, at about a third: a third of each shuffled
     * batch's rows still read whole, the rest fail, scattered over it. */
    cr_assert_eq(truncate(fp.image_path, 128 + 170 * 32 * 32 * 3), 0);

    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 64, &b, &err), SL_OK);
    sl_err first = {0};
    cr_assert_eq(sl_pipeline_produce(p, sl_kernels_reference(), (sl_position){0, 0}, b, &first), SL_EIO);
    cr_assert(strstr(first.msg, "offset"), "the reference names the failing offset: %s", first.msg);
    sl_batch_free(b);

    for (int threads = 1; threads <= 4; threads++) {
        /* Several executors each: which thread takes which rows varies. */
        for (int run = 0; run < 8; run++) {
            sl_fused *fz;
            cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), threads, &fz, &err), SL_OK, "%s", err.msg);
            memset(&err, 0, sizeof err);
            cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, 1, NULL, NULL, &err), SL_EIO);
            cr_assert(sl_fused_last_split(fz) == (threads > 1), "the first batch of a trial is split");
            cr_expect_str_eq(err.msg, first.msg, "fused with %d threads", threads);
            sl_fused_free(fz);
        }
    }
    file_pipeline_close(&fp);
}

/* The gather probe reads a source with no mapped view through its read path,
 * and a file cut short under it is an error naming the file, not a crash or
 * a figure. */
Test(pipeline, the_gather_probe_reads_a_pread_source_and_reports_a_short_file)
{
    file_pipeline fp;
    file_pipeline_open(&fp, "gather", SL_SOURCE_PREAD);
    double ns = 0.0;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_gather_probe(fp.pipeline, sl_test_kernels(), 0, 4, 2, &ns, &err), SL_OK, "%s", err.msg);
    cr_expect(ns > 0.0, "%g ns", ns);
    cr_assert_eq(truncate(fp.image_path, 4096), 0);
    ns = -1.0;
    cr_expect_eq(sl_pipeline_gather_probe(fp.pipeline, sl_test_kernels(), 0, 4, 2, &ns, &err), SL_EIO);
    cr_expect(strstr(err.msg, fp.image_path), "%s", err.msg);
    cr_expect_float_eq(ns, -1.0, 0.0);
    file_pipeline_close(&fp);
}

/* So does the traffic probe, which reads each row through the same path
 * before it stores the row's output bytes. */
Test(pipeline, the_traffic_probe_reads_a_pread_source_and_reports_a_short_file)
{
    file_pipeline fp;
    file_pipeline_open(&fp, "traffic", SL_SOURCE_PREAD);
    double ns = 0.0;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_traffic_probe(fp.pipeline, sl_test_kernels(), 0, 4, 2, &ns, &err), SL_OK, "%s", err.msg);
    cr_expect(ns > 0.0, "%g ns", ns);
    cr_assert_eq(truncate(fp.image_path, 4096), 0);
    ns = -1.0;
    cr_expect_eq(sl_pipeline_traffic_probe(fp.pipeline, sl_test_kernels(), 0, 4, 2, &ns, &err), SL_EIO);
    cr_expect(strstr(err.msg, fp.image_path), "%s", err.msg);
    cr_expect_float_eq(ns, -1.0, 0.0);
    file_pipeline_close(&fp);
}

/* A row whose source bytes outnumber its output element's is still read
 * whole: resized from 32x32x3 u8 (3072 bytes) to 8x8x3 f32 (768), each
 * image's first 768 bytes fill its element and the rest is read past it, so
 * the last image cut short after its first 1000 bytes is found (the window
 * is the whole epoch of 512). */
Test(pipeline, the_traffic_probe_reads_every_source_byte_past_a_small_output)
{
    file_pipeline fp;
    file_pipeline_open(&fp, "traffic_small", SL_SOURCE_PREAD);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, fp.source, 64, 7);
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_resize("image", 8, 8), &err), SL_OK, "%s", err.msg);
    sl_pipeline *resized;
    cr_assert_eq(sl_pipeline_create(&spec, &resized, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_field_element_bytes(&sl_pipeline_output_schema(resized)->fields[0]), 768);
    cr_assert_eq(sl_pipeline_batches_per_epoch(resized), 8);
    struct stat image;
    cr_assert_eq(stat(fp.image_path, &image), 0);
    cr_assert_eq(truncate(fp.image_path, image.st_size - 3072 + 1000), 0);
    double ns = -1.0;
    cr_expect_eq(sl_pipeline_traffic_probe(resized, sl_test_kernels(), 0, 8, 1, &ns, &err), SL_EIO);
    cr_expect(strstr(err.msg, fp.image_path), "%s", err.msg);
    cr_expect_float_eq(ns, -1.0, 0.0);
    sl_pipeline_free(resized);
    file_pipeline_close(&fp);
}
