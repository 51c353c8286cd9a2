/* CV-1, image classification: the standard checks, and labels staying
 * aligned with their images through the shuffle. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(cv1, "CV-1", "32x32")

typedef struct keyed_label {
    uint64_t image_digest;
    int32_t label;
} keyed_label;

static int by_digest(const void *a, const void *b)
{
    uint64_t x = ((const keyed_label *)a)->image_digest, y = ((const keyed_label *)b)->image_digest;
    return x < y ? -1 : x > y;
}

Test(cv1, labels_stay_with_their_images_through_shuffle)
{
    /* Identify each image by the digest of its normalized pixels in the
     * unshuffled epoch, not by the ids the pipeline reports, so the check
     * holds even if ids and data were permuted together wrongly. */
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.shuffle = false;
    sl_scenario_instance *plain = harness_build_with("CV-1", "32x32", &options);
    sl_scenario_instance *shuffled = harness_build("CV-1", "32x32");
    run_output in_order, mixed;
    harness_run(plain, "reference", 0, 0, (sl_position){0, 0}, 0, &in_order);
    harness_run(shuffled, "fused", 0, 0, (sl_position){0, 0}, 0, &mixed);
    int image = sl_schema_find(sl_pipeline_output_schema(plain->pipeline), "image");
    int label = sl_schema_find(sl_pipeline_output_schema(plain->pipeline), "label");
    cr_assert(image >= 0 && label >= 0);

    int64_t n = in_order.rows;
    cr_assert_eq(mixed.rows, n);
    keyed_label *table = malloc((size_t)n * sizeof *table);
    for (int64_t r = 0; r < n; r++) {
        table[r].image_digest = sl_digest_bytes(harness_row(&in_order, image, r), in_order.row_bytes[image]);
        memcpy(&table[r].label, harness_row(&in_order, label, r), sizeof(int32_t));
        /* Unshuffled, row r is element r and carries the fixture's label. */
        cr_assert_eq(in_order.ids[r], r);
    }
    qsort(table, (size_t)n, sizeof *table, by_digest);

    int64_t moved = 0;
    for (int64_t r = 0; r < n; r++) {
        keyed_label key = {sl_digest_bytes(harness_row(&mixed, image, r), mixed.row_bytes[image]), 0};
        keyed_label *hit = bsearch(&key, table, (size_t)n, sizeof *table, by_digest);
        cr_assert_not_null(hit, "shuffled row %lld holds an image the data set does not have", (long long)r);
        int32_t got;
        memcpy(&got, harness_row(&mixed, label, r), sizeof got);
        cr_assert_eq(got, hit->label, "shuffled row %lld: label %d, but its image has label %d", (long long)r, got,
                     hit->label);
        moved += mixed.ids[r] != r;
    }
    /* A shuffle that left nearly everything in place would make this test
     * vacuous; a random permutation of 10k fixes about one element. */
    cr_expect_gt(moved, n - 100, "only %lld of %lld rows moved", (long long)moved, (long long)n);
    free(table);
    harness_release(&in_order);
    harness_release(&mixed);
    sl_scenario_instance_free(plain);
    sl_scenario_instance_free(shuffled);
}

Test(cv1, normalize_uses_the_cifar_statistics)
{
    /* An independent recomputation of one element from the fixture bytes and
     * the op's definition: ((float)x - mean) * (1 / std) per channel. */
    sl_scenario_instance *instance = harness_build("CV-1", "32x32");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 1, &out);
    const float mean[3] = {125.3f, 123.0f, 113.9f}, stddev[3] = {63.0f, 62.1f, 66.7f};
    int64_t element = out.ids[5];
    const uint8_t *pixels = sl_source_map(instance->fixture, 0, (size_t)element * 3072, 3072);
    cr_assert_not_null(pixels);
    const float *row = harness_row(&out, 0, 5);
    for (int i = 0; i < 3072; i++) {
        float expected = ((float)pixels[i] - mean[i % 3]) * (1.0f / stddev[i % 3]);
        cr_assert_eq(row[i], expected, "value %d of element %lld", i, (long long)element);
    }
    harness_release(&out);
    sl_scenario_instance_free(instance);
}
