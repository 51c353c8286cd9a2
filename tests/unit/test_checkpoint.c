/* Checkpoints: resuming from a saved position continues bit-identically,
 * across an epoch boundary too, and damaged or foreign files are refused
 * with a message that names the file and the field. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <xxhash.h>

#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/records/record.h"

#include "support.h"

static char dir[64];
static sl_source *src;

static void setup(void)
{
    test_tmpdir_create(dir, sizeof dir, "ckpt");
    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = 50, .h = 8, .w = 8, .c = 3, .classes = 10};
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 42, &src, &err), SL_OK, "%s", err.msg);
}

static void teardown(void)
{
    sl_source_free(src);
    test_tmpdir_remove(dir);
}

TestSuite(checkpoint, .init = setup, .fini = teardown);

static sl_pipeline *make(uint64_t seed)
{
    static const float mean[3] = {1, 2, 3}, std[3] = {50, 60, 70};
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 8, seed);
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_random_crop("image", 3, 6, 6), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("image", 3, mean, std), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

static sl_batch *next(sl_iter *it)
{
    sl_batch *b;
    sl_err err = {0};
    cr_assert_eq(sl_iter_next(it, &b, &err), SL_OK, "%s", err.msg);
    return b;
}

static void expect_equal_batches(const sl_batch *a, const sl_batch *b, int k)
{
    cr_assert_eq(a->count, b->count);
    cr_assert_eq(a->epoch, b->epoch);
    cr_assert_eq(a->index, b->index);
    for (int f = 0; f < a->schema.nfields; f++)
        cr_assert(memcmp(a->fields[f].data, b->fields[f].data, sl_tensor_nbytes(&a->fields[f])) == 0,
                  "resumed after %d batches: field %d differs", k, f);
}

Test(checkpoint, resume_is_bit_identical_for_several_k)
{
    /* 50 elements in batches of 8 make 7 batches an epoch; k = 7 resumes
     * exactly at an epoch boundary and k = 9 inside the second epoch. */
    const int ks[] = {0, 1, 3, 6, 7, 9};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        int k = ks[i];
        sl_pipeline *p = make(5);
        sl_iter *it;
        sl_err err = {0};
        sl_iter_options from_start = {.kernels = sl_test_kernels()};
        cr_assert_eq(sl_iter_create(p, &from_start, &it, &err), SL_OK, "%s", err.msg);
        for (int j = 0; j < k; j++)
            sl_batch_free(next(it));
        char path[128];
        snprintf(path, sizeof path, "%s/k%d.json", dir, k);
        cr_assert_eq(sl_checkpoint_save(p, sl_iter_position(it), path, &err), SL_OK, "%s", err.msg);

        /* A fresh pipeline object, as a restarted process would build. */
        sl_pipeline *q = make(5);
        sl_position pos;
        cr_assert_eq(sl_checkpoint_load(q, path, &pos, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(pos.epoch, k / 7);
        cr_assert_eq(pos.batch, k % 7);
        sl_iter_options o = {.kernels = sl_test_kernels(), .workers = 1, .prefetch_depth = 0, .start = pos};
        sl_iter *resumed;
        cr_assert_eq(sl_iter_create(q, &o, &resumed, &err), SL_OK);
        for (int j = 0; j < 9; j++) {
            sl_batch *a = next(it), *b = next(resumed);
            expect_equal_batches(a, b, k);
            sl_batch_free(a);
            sl_batch_free(b);
        }
        sl_iter_free(it);
        sl_iter_free(resumed);
        sl_pipeline_free(p);
        sl_pipeline_free(q);
    }
}

static void expect_refused(const sl_pipeline *p, const char *path, sl_status status, const char *needle)
{
    sl_position pos;
    sl_err err = {0};
    cr_expect_eq(sl_checkpoint_load(p, path, &pos, &err), status, "%s", err.msg);
    cr_expect(strstr(err.msg, path) != NULL, "message must name the file: %s", err.msg);
    cr_expect(strstr(err.msg, needle) != NULL, "message '%s' should mention '%s'", err.msg, needle);
}

Test(checkpoint, damaged_or_foreign_files_are_refused)
{
    sl_pipeline *p = make(5);
    char good[128], bad[128];
    snprintf(good, sizeof good, "%s/good.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    sl_err err = {0};
    cr_assert_eq(sl_checkpoint_save(p, (sl_position){1, 3}, good, &err), SL_OK);
    char *text = test_read_text(good);

    /* Truncated: half the file. */
    char *half = strndup(text, strlen(text) / 2);
    test_write_text(bad, half);
    expect_refused(p, bad, SL_EFORMAT, "JSON");
    free(half);

    /* A tampered position no longer matches the checksum. */
    char *tampered = strdup(text);
    char *batch = strstr(tampered, "\"batch\":");
    cr_assert_not_null(batch);
    char *digit = strchr(batch, '3');
    cr_assert_not_null(digit);
    *digit = '4';
    test_write_text(bad, tampered);
    expect_refused(p, bad, SL_EFORMAT, "checksum");
    free(tampered);

    /* A missing field. */
    test_write_text(bad, "{\"format\": \"sluice-checkpoint\", \"version\": 1}");
    expect_refused(p, bad, SL_EFORMAT, "pipeline_fingerprint");

    /* Written by a pipeline with another seed. */
    sl_pipeline *other = make(6);
    expect_refused(other, good, SL_ESTATE, "different pipeline");
    sl_pipeline_free(other);

    /* A file that is not there. */
    snprintf(bad, sizeof bad, "%s/missing.json", dir);
    sl_position pos;
    cr_expect_neq(sl_checkpoint_load(p, bad, &pos, &err), SL_OK);
    cr_expect(strstr(err.msg, "missing.json") != NULL, "%s", err.msg);

    free(text);
    sl_pipeline_free(p);
}

/* A checkpoint forged with a matching checksum (the checksum guards
 * against damage, not forgery, and is computed here the way the format
 * defines it) must still be refused when its epoch is past the last one:
 * epoch 2^32 once replayed epoch 0, and 2^53 overflowed position
 * arithmetic. */
static void write_forged(const char *path, const sl_pipeline *p, int64_t epoch)
{
    char text[160];
    int n = snprintf(text, sizeof text, "sluice-checkpoint/1/%016" PRIx64 "/%lld/0/%lld", sl_pipeline_fingerprint(p),
                     (long long)epoch, (long long)sl_pipeline_batches_per_epoch(p));
    char json[512];
    snprintf(json, sizeof json,
             "{\"format\": \"sluice-checkpoint\", \"version\": 1, \"pipeline_fingerprint\": \"%016" PRIx64 "\", "
             "\"epoch\": %lld, \"batch\": 0, \"batches_per_epoch\": %lld, \"checksum\": \"%016" PRIx64 "\"}",
             sl_pipeline_fingerprint(p), (long long)epoch, (long long)sl_pipeline_batches_per_epoch(p),
             (uint64_t)XXH3_64bits(text, (size_t)n));
    test_write_text(path, json);
}

Test(checkpoint, epochs_past_the_last_are_refused)
{
    sl_pipeline *p = make(5);
    char path[128];
    snprintf(path, sizeof path, "%s/forged.json", dir);
    sl_position pos;
    sl_err err = {0};
    write_forged(path, p, SL_MAX_EPOCH);
    cr_expect_eq(sl_checkpoint_load(p, path, &pos, &err), SL_OK, "the last epoch is valid: %s", err.msg);
    write_forged(path, p, (int64_t)1 << 32);
    expect_refused(p, path, SL_EFORMAT, "'epoch'");
    write_forged(path, p, (int64_t)1 << 53);
    expect_refused(p, path, SL_EFORMAT, "'epoch'");
    sl_pipeline_free(p);
}

Test(checkpoint, position_arithmetic_cannot_overflow)
{
    sl_pipeline *p = make(5);
    int64_t per_epoch = sl_pipeline_batches_per_epoch(p);
    sl_position last = {SL_MAX_EPOCH, per_epoch - 1};
    sl_position next = sl_position_advance(p, last, 1);
    cr_expect_eq(next.epoch, SL_MAX_EPOCH + 1, "past the last epoch is a position every executor refuses");
    next = sl_position_advance(p, (sl_position){3, 1}, INT64_MAX);
    cr_expect_eq(next.epoch, SL_MAX_EPOCH + 1);
    next = sl_position_advance(p, (sl_position){3, per_epoch - 1}, per_epoch + 2);
    cr_expect_eq(next.epoch, 5);
    cr_expect_eq(next.batch, 1);
    sl_iter *it = NULL;
    sl_iter_options options = {
        .kernels = sl_test_kernels(), .workers = 0, .prefetch_depth = 0, .start = {SL_MAX_EPOCH + 1, 0}};
    sl_err err = {0};
    cr_expect_neq(sl_iter_create(p, &options, &it, &err), SL_OK);
    cr_expect_null(it);
    sl_pipeline_free(p);
}
