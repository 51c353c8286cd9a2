/* IO-3, mixed sources: the standard checks for both weightings; the share
 * of each source within a binomial bound of its weight; each source's
 * elements in that source's own order, with their own bytes and labels;
 * choices that depend on neither batch size nor workers; and a checkpoint
 * taken anywhere, an epoch boundary included, resuming bit for bit in a
 * fresh pipeline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(io3_w50, "IO-3", "w50")
SL_CORPUS_STANDARD_TESTS(io3_w70, "IO-3", "w70")

/* What docs/scenarios.md states for IO-3 at ci size: two sources of 500
 * rows, part 1 generated with seed + 1, an epoch of 1000 positions. */
#define PART_ROWS   500
#define EPOCH       1000
#define ITEM_VALUES (64 * 64 * 3)

static sl_scenario_instance *build_io3(const char *variant, uint64_t seed, bool shuffle, int64_t batch_size)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, seed);
    options.shuffle = shuffle;
    options.batch_override = batch_size;
    return harness_build_with("IO-3", variant, &options);
}

/* Five standard deviations of a binomial count, worked out here. */
Test(io3, proportions_are_within_a_binomial_bound)
{
    static const struct {
        const char *variant;
        double p;
    } variants[] = {{"w50", 0.5}, {"w70", 0.7}};
    static const uint64_t seeds[] = {42, 7, 1234, 99};
    for (size_t v = 0; v < 2; v++)
        for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
            sl_scenario_instance *instance = build_io3(variants[v].variant, seeds[s], true, 0);
            cr_assert_eq(sl_pipeline_epoch_size(instance->pipeline), EPOCH);
            run_output out;
            harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
            cr_assert_eq(out.rows, EPOCH);
            int64_t first = 0;
            for (int64_t r = 0; r < out.rows; r++)
                first += out.ids[r] < PART_ROWS;
            double expected = EPOCH * variants[v].p;
            double bound = 5.0 * sqrt(EPOCH * variants[v].p * (1.0 - variants[v].p));
            cr_expect(fabs((double)first - expected) <= bound,
                      "%s seed %llu: source 0 took %lld of %d positions; %.0f +- %.1f expected", variants[v].variant,
                      (unsigned long long)seeds[s], (long long)first, EPOCH, expected, bound);
            harness_release(&out);
            sl_scenario_instance_free(instance);
        }
}

/* Row e of part s as the pipeline must deliver it: normalized with the
 * scenario's constants, multiplying by the float reciprocal as the kernels
 * do. */
static void expected_row(const sl_source *part, int64_t e, float *out)
{
    const float *x = sl_source_map(part, 0, (size_t)e * ITEM_VALUES * sizeof(float), ITEM_VALUES * sizeof(float));
    cr_assert_not_null(x);
    const float inv_std = 1.0f / 0.288675f;
    for (int i = 0; i < ITEM_VALUES; i++)
        out[i] = (x[i] - 0.5f) * inv_std;
}

/* The k-th element a part contributes, over three epochs: unshuffled, row
 * k mod 500 (the part starts over when it runs out); shuffled, element
 * k mod 500 of pass k / 500's own keyed order (stream SL_STREAM_MIX_PART +
 * part, the pass as its epoch). Each row carries that element's bytes and
 * label, read from the part itself. */
static void expect_own_orders(const char *variant, bool shuffle)
{
    sl_scenario_instance *instance = build_io3(variant, 42, shuffle, 0);
    int64_t per_epoch = sl_pipeline_batches_per_epoch(instance->pipeline);
    run_output out;
    harness_run(instance, "iter", 2, 0, (sl_position){0, 0}, 3 * per_epoch, &out);
    cr_assert_eq(out.rows, 3 * EPOCH);
    int64_t next[2] = {0, 0};
    float *row = malloc(ITEM_VALUES * sizeof *row);
    for (int64_t r = 0; r < out.rows; r++) {
        int s = out.ids[r] >= PART_ROWS;
        int64_t k = next[s]++;
        int64_t e = k % PART_ROWS;
        if (shuffle) {
            sl_permutation pass;
            sl_permutation_init_keyed(&pass, PART_ROWS, 42, SL_STREAM_MIX_PART + (uint64_t)s, (uint64_t)(k / PART_ROWS),
                                      0, true);
            e = (int64_t)sl_permutation_apply(&pass, (uint64_t)e);
        }
        cr_assert_eq(out.ids[r], s * PART_ROWS + e,
                     "%s: row %lld is source %d's element %lld: row %lld expected, got id %lld", variant, (long long)r,
                     s, (long long)k, (long long)e, (long long)out.ids[r]);
        const sl_source *part = sl_source_part(instance->fixture, s);
        expected_row(part, e, row);
        cr_assert_eq(memcmp(harness_row(&out, 0, r), row, ITEM_VALUES * sizeof *row), 0,
                     "%s: row %lld does not hold source %d's row %lld", variant, (long long)r, s, (long long)e);
        const int32_t *label = sl_source_map(part, 1, (size_t)e * 4, 4);
        cr_assert_eq(*(const int32_t *)harness_row(&out, 1, r), *label, "%s: row %lld has another label", variant,
                     (long long)r);
    }
    /* Over three epochs both sources ran past their 500 rows at 0.5 and
     * 0.7, so the wrap into a new pass was checked too. */
    cr_expect_gt(next[0], PART_ROWS);
    free(row);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(io3, each_source_keeps_its_own_order)
{
    expect_own_orders("w50", false);
    expect_own_orders("w70", false);
    expect_own_orders("w50", true);
    expect_own_orders("w70", true);
}

/* The two sources are the float fixture of seeds 42 and 43, with labels. */
Test(io3, sources_are_two_fixtures_of_their_own)
{
    sl_scenario_instance *instance = build_io3("w70", 42, true, 0);
    for (int s = 0; s < 2; s++) {
        sl_fixture_spec spec = {.kind = SL_FIXTURE_FLOATS, .n = PART_ROWS, .h = 64, .w = 64, .c = 3, .classes = 1000};
        sl_source *expected;
        sl_err err = {0};
        cr_assert_eq(sl_fixture_build(&spec, 42 + (uint64_t)s, &expected, &err), SL_OK, "%s", err.msg);
        const sl_source *part = sl_source_part(instance->fixture, s);
        cr_assert_not_null(part);
        for (int f = 0; f < 2; f++) {
            size_t bytes = sl_source_field_bytes(expected, f);
            cr_assert_eq(sl_source_field_bytes(part, f), bytes);
            cr_assert_eq(memcmp(sl_source_map(part, f, 0, bytes), sl_source_map(expected, f, 0, bytes), bytes), 0,
                         "source %d field %d", s, f);
        }
        sl_source_free(expected);
    }
    sl_scenario_instance_free(instance);
}

/* The element at each position, over two epochs, with batches of 64 and
 * 16, prefetch workers and split batches: always the same. */
Test(io3, choices_depend_on_neither_batch_size_nor_workers)
{
    static const struct {
        int64_t batch;
        const char *adapter;
        int workers, threads;
    } runs[] = {{64, "reference", 0, 1}, {16, "reference", 0, 1}, {16, "iter", 2, 1}, {37, "fused", 0, 3}};
    run_output out[4];
    for (int i = 0; i < 4; i++) {
        sl_scenario_instance *instance = build_io3("w70", 42, true, runs[i].batch);
        sl_run_request request = {.nbatches = 2 * sl_pipeline_batches_per_epoch(instance->pipeline),
                                  .workers = runs[i].workers,
                                  .threads = runs[i].threads};
        harness_run_request(instance, runs[i].adapter, &request, &out[i]);
        cr_assert_eq(out[i].rows, 2 * EPOCH);
        sl_scenario_instance_free(instance);
    }
    for (int i = 1; i < 4; i++) {
        cr_assert_eq(memcmp(out[i].ids, out[0].ids, 2 * EPOCH * sizeof *out[0].ids), 0,
                     "batch size %lld on %s orders the elements differently", (long long)runs[i].batch,
                     runs[i].adapter);
        cr_assert_eq(memcmp(out[i].bytes[0], out[0].bytes[0], out[0].size[0]), 0);
    }
    for (int i = 0; i < 4; i++)
        harness_release(&out[i]);
}

/* A checkpoint is a position; a fresh build of the scenario loads it and
 * carries on exactly where the uninterrupted run went: mid epoch, at the
 * epoch boundary (batch 16 is batch 0 of epoch 1), and later. */
Test(io3, resumes_bit_identically_from_a_checkpoint)
{
    enum { TOTAL = 40 };
    static const int64_t stops[] = {5, 16, 23, 37};
    sl_scenario_instance *first = build_io3("w70", 42, true, 0);
    cr_assert_eq(sl_pipeline_batches_per_epoch(first->pipeline), 16);
    run_output whole;
    harness_run(first, "iter", 0, 0, (sl_position){0, 0}, TOTAL, &whole);
    char dir[64] = "/tmp/sluice-io3-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/checkpoint.json", dir);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        /* Iterate up to the stop as a training loop would, then save. */
        sl_iter_options options = {.kernels = sl_test_kernels(), .workers = 0, .prefetch_depth = 0, .start = {0, 0}};
        sl_iter *iter;
        sl_err err = {0};
        cr_assert_eq(sl_iter_create(first->pipeline, &options, &iter, &err), SL_OK, "%s", err.msg);
        for (int64_t b = 0; b < stops[i]; b++) {
            sl_batch *batch;
            cr_assert_eq(sl_iter_next(iter, &batch, &err), SL_OK, "%s", err.msg);
            sl_batch_free(batch);
        }
        sl_position at = sl_iter_position(iter);
        cr_assert_eq(sl_checkpoint_save(first->pipeline, at, path, &err), SL_OK, "%s", err.msg);
        sl_iter_free(iter);

        sl_scenario_instance *fresh = build_io3("w70", 42, true, 0);
        sl_position loaded;
        cr_assert_eq(sl_checkpoint_load(fresh->pipeline, path, &loaded, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(loaded.epoch, stops[i] / 16);
        cr_assert_eq(loaded.batch, stops[i] % 16);
        run_output rest;
        harness_run(fresh, "iter", 2, 0, loaded, TOTAL - stops[i], &rest);
        int64_t skip = stops[i] * 64 - (stops[i] >= 16 ? 24 : 0) - (stops[i] >= 32 ? 24 : 0);
        cr_assert_eq(rest.rows, whole.rows - skip, "stop %lld", (long long)stops[i]);
        cr_assert_eq(memcmp(rest.ids, whole.ids + skip, (size_t)rest.rows * sizeof *rest.ids), 0,
                     "resumed at batch %lld: other elements", (long long)stops[i]);
        for (int f = 0; f < 2; f++)
            cr_assert_eq(memcmp(rest.bytes[f], whole.bytes[f] + (size_t)skip * whole.row_bytes[f], rest.size[f]), 0,
                         "resumed at batch %lld: field %d differs", (long long)stops[i], f);
        harness_release(&rest);
        sl_scenario_instance_free(fresh);
    }
    /* Another weighting is another pipeline: its checkpoint is refused. */
    sl_scenario_instance *other = build_io3("w50", 42, true, 0);
    sl_position ignored;
    sl_err err = {0};
    cr_assert_neq(sl_checkpoint_load(other->pipeline, path, &ignored, &err), SL_OK);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    sl_scenario_instance_free(other);
    unlink(path);
    rmdir(dir);
    harness_release(&whole);
    sl_scenario_instance_free(first);
}
