/* Stateful modules: the state folds batches in order and refuses others,
 * merges exactly as the stated formula on hand-worked values, does not
 * depend on workers or the execution mode, and survives a checkpoint
 * exactly; damaged, foreign or mismatched module checkpoints are refused by
 * file and field. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/module.h"
#include "sluice/pipeline/pipeline.h"
#include "sluice/records/record.h"

#include "support.h"

static char dir[64];
static sl_source *src;

static void setup(void)
{
    test_tmpdir_create(dir, sizeof dir, "module");
    sl_fixture_spec spec = {.kind = SL_FIXTURE_FLOATS, .n = 50, .h = 8, .w = 8, .c = 3};
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 42, &src, &err), SL_OK, "%s", err.msg);
}

static void teardown(void)
{
    sl_source_free(src);
    test_tmpdir_remove(dir);
}

TestSuite(module, .init = setup, .fini = teardown);

/* 50 elements in batches of 8: 7 batches an epoch, the last of 2. */
static sl_pipeline *make(uint64_t seed)
{
    static const float mean[3] = {0.5f, 0.4f, 0.3f}, std[3] = {0.25f, 0.3f, 0.2f};
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 8, seed);
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("x", 3, mean, std), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_random_crop("x", 1, 6, 6), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

static sl_module *module_on(const sl_pipeline *p, sl_position start)
{
    sl_module *m;
    sl_err err = {0};
    cr_assert_eq(sl_module_create(p, sl_test_kernels(), "x", start, &m, &err), SL_OK, "%s", err.msg);
    return m;
}

static void expect_same_state(const sl_module_state *a, const sl_module_state *b, const char *what)
{
    cr_assert_eq(a->batches, b->batches, "%s", what);
    cr_assert_eq(a->next.epoch, b->next.epoch, "%s", what);
    cr_assert_eq(a->next.batch, b->next.batch, "%s", what);
    cr_assert_eq(a->stats.count, b->stats.count, "%s", what);
    cr_assert_eq(a->stats.channels, b->stats.channels, "%s", what);
    for (int c = 0; c < a->stats.channels; c++)
        cr_assert(a->stats.mean[c] == b->stats.mean[c] && a->stats.m2[c] == b->stats.m2[c],
                  "%s: channel %d: %.17g %.17g vs %.17g %.17g", what, c, a->stats.mean[c], a->stats.m2[c],
                  b->stats.mean[c], b->stats.m2[c]);
}

Test(module, merge_follows_the_stated_formula_on_hand_values)
{
    /* {1, 2, 3} then {4, 5}: 3 values with mean 2 and M2 2, 2 with mean 4.5
     * and M2 0.5. Together: mean 3, M2 = 4 + 1 + 0 + 1 + 4 = 10. */
    sl_channel_stats a = {.channels = 1, .count = 3, .mean = {2.0}, .m2 = {2.0}};
    sl_channel_stats b = {.channels = 1, .count = 2, .mean = {4.5}, .m2 = {0.5}};
    sl_channel_stats empty = {.channels = 1};
    sl_channel_stats_merge(&a, &b);
    cr_expect_eq(a.count, 5);
    cr_expect_eq(a.mean[0], 3.0);
    cr_expect_eq(a.m2[0], 10.0);
    double var;
    sl_channel_stats_variance(&a, &var);
    cr_expect_eq(var, 2.0);
    /* An empty state takes the batch's figures as they are. */
    sl_channel_stats_merge(&empty, &b);
    cr_expect(empty.count == 2 && empty.mean[0] == 4.5 && empty.m2[0] == 0.5);
}

static sl_batch *produce(const sl_pipeline *p, sl_position position)
{
    sl_batch *b;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), sl_pipeline_get_spec(p)->batch_size, &b, &err), SL_OK);
    cr_assert_eq(sl_pipeline_produce(p, sl_test_kernels(), position, b, &err), SL_OK, "%s", err.msg);
    return b;
}

Test(module, batches_fold_in_order_and_others_are_refused)
{
    sl_pipeline *p = make(5);
    sl_module *m = module_on(p, (sl_position){0, 0});
    sl_batch *first = produce(p, (sl_position){0, 0}), *second = produce(p, (sl_position){0, 1});
    sl_err err = {0};
    cr_expect_eq(sl_module_update(m, second, &err), SL_ESTATE);
    cr_expect(strstr(err.msg, "expects epoch 0 batch 0") != NULL, "%s", err.msg);
    cr_expect_eq(sl_module_state_of(m)->batches, 0, "a refused batch leaves the state as it was");
    cr_expect_eq(sl_module_state_of(m)->stats.count, 0);
    cr_assert_eq(sl_module_update(m, first, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(sl_module_update(m, first, &err), SL_ESTATE, "the same batch twice");
    cr_assert_eq(sl_module_update(m, second, &err), SL_OK, "%s", err.msg);
    const sl_module_state *s = sl_module_state_of(m);
    cr_expect_eq(s->batches, 2);
    cr_expect_eq(s->stats.count, 2 * 8 * 8 * 8, "two batches of 8 elements of 8x8 pixels");
    cr_expect(s->next.epoch == 0 && s->next.batch == 2);
    /* The state is the merge of the two batches' own statistics, which is
     * what a caller threading the state through the plain functions gets. */
    sl_channel_stats threaded = {.channels = 3}, one;
    cr_assert_eq(sl_batch_channel_stats(first, 0, sl_kernels_reference(), &one, &err), SL_OK);
    sl_channel_stats_merge(&threaded, &one);
    cr_assert_eq(sl_batch_channel_stats(second, 0, sl_kernels_reference(), &one, &err), SL_OK);
    sl_channel_stats_merge(&threaded, &one);
    sl_module_state expected = *s;
    expected.stats = threaded;
    expect_same_state(s, &expected, "module vs plain functions");
    sl_batch_free(first);
    sl_batch_free(second);
    sl_module_free(m);
    sl_pipeline_free(p);
}

Test(module, creation_refuses_fields_without_f32_channels)
{
    sl_pipeline *p = make(5);
    sl_module *m = NULL;
    sl_err err = {0};
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 8, 5);
    cr_expect_eq(sl_module_create(p, sl_test_kernels(), "y", (sl_position){0, 0}, &m, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "'y'") != NULL, "%s", err.msg);
    cr_expect_eq(sl_module_create(p, sl_test_kernels(), "x", (sl_position){0, 7}, &m, &err), SL_EINVAL, "batch 7 of 7");
    cr_expect_null(m);
    sl_fixture_spec images = {.kind = SL_FIXTURE_IMAGES, .n = 10, .h = 4, .w = 4, .c = 3, .classes = 2};
    sl_source *u8;
    cr_assert_eq(sl_fixture_build(&images, 42, &u8, &err), SL_OK);
    sl_pipeline_spec_init(&spec, u8, 4, 5);
    sl_pipeline *q;
    cr_assert_eq(sl_pipeline_create(&spec, &q, &err), SL_OK);
    cr_expect_eq(sl_module_create(q, sl_test_kernels(), "image", (sl_position){0, 0}, &m, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "u8") != NULL, "%s", err.msg);
    sl_pipeline_free(q);
    sl_source_free(u8);
    sl_pipeline_free(p);
}

/* Folds n batches from start through an iterator in the given mode. */
static void fold(const sl_pipeline *p, sl_module *m, sl_iter_mode mode, int workers, sl_position start, int64_t n)
{
    sl_iter_options o = {.kernels = sl_test_kernels(), .workers = workers, .prefetch_depth = 0, .start = start};
    sl_iter *it;
    sl_err err = {0};
    cr_assert_eq(sl_iter_create_mode(p, &o, mode, &it, &err), SL_OK, "%s", err.msg);
    for (int64_t i = 0; i < n; i++) {
        sl_batch *b;
        cr_assert_eq(sl_iter_next(it, &b, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_module_update(m, b, &err), SL_OK, "%s", err.msg);
        sl_batch_free(b);
    }
    sl_iter_free(it);
}

static int fold_sink(const sl_batch *b, void *user)
{
    sl_err err = {0};
    cr_assert_eq(sl_module_update(user, b, &err), SL_OK, "%s", err.msg);
    return 0;
}

Test(module, state_does_not_depend_on_workers_or_the_execution_mode)
{
    sl_pipeline *p = make(5);
    /* Two and a half epochs, so the state crosses epoch boundaries. */
    int64_t n = 17;
    sl_module *ref = module_on(p, (sl_position){0, 0});
    fold(p, ref, SL_ITER_BATCHED, 0, (sl_position){0, 0}, n);
    cr_assert_eq(sl_module_state_of(ref)->stats.count, (2 * 50 + 3 * 8) * 64);
    const struct {
        sl_iter_mode mode;
        int workers;
        const char *what;
    } runs[] = {
        {SL_ITER_BATCHED, 1, "iter, 1 worker"},
        {SL_ITER_BATCHED, 3, "iter, 3 workers"},
        {SL_ITER_PER_ELEMENT, 0, "per-element"},
        {SL_ITER_PER_ELEMENT, 2, "per-element, 2 workers"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        sl_module *m = module_on(p, (sl_position){0, 0});
        fold(p, m, runs[i].mode, runs[i].workers, (sl_position){0, 0}, n);
        expect_same_state(sl_module_state_of(ref), sl_module_state_of(m), runs[i].what);
        sl_module_free(m);
    }
    for (int threads = 1; threads <= 3; threads += 2) {
        sl_module *m = module_on(p, (sl_position){0, 0});
        sl_fused *fz;
        sl_err err = {0};
        cr_assert_eq(sl_fused_create_threads(p, sl_test_kernels(), threads, &fz, &err), SL_OK);
        cr_assert_eq(sl_fused_run(fz, (sl_position){0, 0}, n, fold_sink, m, &err), SL_OK, "%s", err.msg);
        sl_fused_free(fz);
        expect_same_state(sl_module_state_of(ref), sl_module_state_of(m), threads == 1 ? "fused" : "fused, 3 threads");
        sl_module_free(m);
    }
    sl_module_free(ref);
    sl_pipeline_free(p);
}

Test(module, state_survives_a_checkpoint_and_resumes_exactly)
{
    /* k = 7 is the epoch boundary, 9 inside the second epoch. */
    const int ks[] = {0, 1, 6, 7, 9};
    sl_pipeline *p = make(5);
    sl_module *whole = module_on(p, (sl_position){0, 0});
    fold(p, whole, SL_ITER_BATCHED, 0, (sl_position){0, 0}, 16);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        int k = ks[i];
        sl_module *m = module_on(p, (sl_position){0, 0});
        fold(p, m, SL_ITER_BATCHED, 0, (sl_position){0, 0}, k);
        char path[128];
        snprintf(path, sizeof path, "%s/k%d.json", dir, k);
        sl_err err = {0};
        sl_position at = sl_module_state_of(m)->next;
        cr_assert_eq(sl_checkpoint_save_module(p, at, m, path, &err), SL_OK, "%s", err.msg);

        /* A fresh pipeline and module, as a restarted process builds them. */
        sl_pipeline *q = make(5);
        sl_module *resumed = module_on(q, (sl_position){0, 0});
        sl_position pos;
        cr_assert_eq(sl_checkpoint_load_module(q, path, &pos, resumed, &err), SL_OK, "%s", err.msg);
        cr_expect(pos.epoch == k / 7 && pos.batch == k % 7);
        expect_same_state(sl_module_state_of(m), sl_module_state_of(resumed), "the state as loaded");
        fold(q, resumed, SL_ITER_BATCHED, 2, pos, 16 - k);
        expect_same_state(sl_module_state_of(whole), sl_module_state_of(resumed), "resumed after k batches");
        sl_module_free(resumed);
        sl_module_free(m);
        sl_pipeline_free(q);
    }
    sl_module_free(whole);
    sl_pipeline_free(p);
}

static void expect_refused(const sl_pipeline *p, const char *path, sl_module *m, sl_status status, const char *needle)
{
    sl_position pos;
    sl_err err = {0};
    sl_module_state before = *sl_module_state_of(m);
    sl_status st = sl_checkpoint_load_module(p, path, &pos, m, &err);
    cr_expect_eq(st, status, "%s", err.msg);
    cr_expect(strstr(err.msg, path) != NULL, "message must name the file: %s", err.msg);
    cr_expect(strstr(err.msg, needle) != NULL, "message '%s' should mention '%s'", err.msg, needle);
    expect_same_state(&before, sl_module_state_of(m), "a refused load leaves the module as it was");
}

Test(module, damaged_foreign_or_mismatched_module_checkpoints_are_refused)
{
    sl_pipeline *p = make(5);
    sl_module *m = module_on(p, (sl_position){0, 0});
    fold(p, m, SL_ITER_BATCHED, 0, (sl_position){0, 0}, 3);
    char good[128], bad[128], plain[128];
    snprintf(good, sizeof good, "%s/good.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    snprintf(plain, sizeof plain, "%s/plain.json", dir);
    sl_err err = {0};
    cr_expect_eq(sl_checkpoint_save_module(p, (sl_position){0, 2}, m, good, &err), SL_ESTATE,
                 "the state covers 3 batches, not 2");
    cr_assert_eq(sl_checkpoint_save_module(p, (sl_position){0, 3}, m, good, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_checkpoint_save(p, (sl_position){0, 3}, plain, &err), SL_OK);
    char *text = test_read_text(good);
    cr_expect(strstr(text, "\"version\":\t2") != NULL, "%s", text);
    char *plain_text = test_read_text(plain);
    cr_expect(strstr(plain_text, "\"version\":\t1") != NULL, "a checkpoint without a module stays version 1");
    free(plain_text);

    sl_module *fresh = module_on(p, (sl_position){0, 0});
    /* The first hex digit of mean[0] changed: the checksum no longer
     * matches. After the key "mean" comes its array's first string. */
    char *tampered = strdup(text);
    char *mean = strstr(tampered, "\"mean\"");
    cr_assert_not_null(mean);
    char *digit = strchr(mean + strlen("\"mean\""), '"') + 1;
    *digit = *digit == '0' ? '1' : '0';
    test_write_text(bad, tampered);
    expect_refused(p, bad, fresh, SL_EFORMAT, "checksum");
    free(tampered);

    /* A version 1 file holds no state for the module. */
    expect_refused(p, plain, fresh, SL_ESTATE, "no module state");
    /* A module file read without its module would lose the state. */
    sl_position pos;
    cr_expect_eq(sl_checkpoint_load(p, good, &pos, &err), SL_ESTATE);
    cr_expect(strstr(err.msg, "'module'") && strstr(err.msg, good), "%s", err.msg);
    /* Another pipeline (seed 6): its fingerprint. */
    sl_pipeline *other = make(6);
    sl_module *other_module = module_on(other, (sl_position){0, 0});
    expect_refused(other, good, other_module, SL_ESTATE, "different pipeline");
    /* The array of means cut to one entry for three channels. */
    char *short_mean = strdup(text);
    char *comma = strstr(strstr(short_mean, "\"mean\""), ",");
    char *close = strchr(comma, ']');
    memmove(comma, close, strlen(close) + 1);
    test_write_text(bad, short_mean);
    expect_refused(p, bad, fresh, SL_EFORMAT, "module.mean");
    free(short_mean);
    /* The state as loaded, when nothing is wrong. */
    cr_assert_eq(sl_checkpoint_load_module(p, good, &pos, fresh, &err), SL_OK, "%s", err.msg);
    expect_same_state(sl_module_state_of(m), sl_module_state_of(fresh), "loaded");

    sl_module_state broken = *sl_module_state_of(m);
    broken.stats.m2[1] = -1.0;
    cr_expect_eq(sl_module_set_state(fresh, &broken, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "channel 1") != NULL, "%s", err.msg);
    broken = *sl_module_state_of(m);
    broken.stats.channels = 2;
    cr_expect_eq(sl_module_set_state(fresh, &broken, &err), SL_ESTATE);
    free(text);
    sl_module_free(other_module);
    sl_pipeline_free(other);
    sl_module_free(fresh);
    sl_module_free(m);
    sl_pipeline_free(p);
}
