/* PR-2, multi-epoch determinism: the standard checks; runs repeat; epochs
 * differ; each element's crop and flip depend on the element and epoch only,
 * not on batch size or workers; and every output is explained by a crop that
 * lies inside the image, with flips at the stated probability. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(pr2, "PR-2", "64x64")

enum { SIDE = 64, CHANNELS = 3, CROP = 56, BORDER = (SIDE - CROP) / 2, IMAGE_BYTES = SIDE * SIDE * CHANNELS };

static void run_epochs(const sl_scenario_instance *instance, const char *adapter, int workers, int epochs,
                       run_output *out)
{
    int64_t batches = sl_pipeline_batches_per_epoch(instance->pipeline) * epochs;
    harness_run(instance, adapter, workers, 0, (sl_position){0, 0}, batches, out);
}

Test(pr2, two_runs_of_two_epochs_are_identical)
{
    sl_scenario_instance *a = harness_build("PR-2", "64x64"), *b = harness_build("PR-2", "64x64");
    run_output x, y;
    run_epochs(a, "reference", 0, 2, &x);
    run_epochs(b, "fused", 0, 2, &y);
    cr_assert_eq(x.rows, 1000);
    cr_expect_eq(x.digest, y.digest);
    cr_expect(memcmp(x.bytes[0], y.bytes[0], x.size[0]) == 0);
    harness_release(&x);
    harness_release(&y);
    sl_scenario_instance_free(a);
    sl_scenario_instance_free(b);
}

Test(pr2, epochs_differ_for_almost_every_element)
{
    sl_scenario_instance *instance = harness_build("PR-2", "64x64");
    run_output out;
    run_epochs(instance, "fused", 0, 2, &out);
    int64_t same = 0;
    for (int64_t r = 0; r < 500; r++) {
        int64_t again = harness_find_element(&out, out.ids[r], 500, 1000);
        cr_assert_geq(again, 500, "element %lld missing from epoch 1", (long long)out.ids[r]);
        same += memcmp(harness_row(&out, 0, r), harness_row(&out, 0, again), IMAGE_BYTES) == 0;
    }
    /* The same crop and flip twice has probability 1/81 x 1/2; 25 of 500 is
     * far above the ~3 expected. */
    cr_expect_lt(same, 25, "%lld of 500 elements came out the same in both epochs", (long long)same);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(pr2, decisions_do_not_depend_on_batch_size_or_workers)
{
    sl_scenario_instance *base = harness_build("PR-2", "64x64");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.batch_override = 50;
    sl_scenario_instance *other = harness_build_with("PR-2", "64x64", &options);
    run_output a, b;
    run_epochs(base, "fused", 0, 2, &a);
    run_epochs(other, "iter", 2, 2, &b);
    cr_assert_eq(a.rows, b.rows);
    for (int epoch = 0; epoch < 2; epoch++)
        for (int64_t r = epoch * 500; r < (epoch + 1) * 500; r++) {
            int64_t match = harness_find_element(&b, a.ids[r], epoch * 500, (epoch + 1) * 500);
            cr_assert_geq(match, 0);
            cr_assert(memcmp(harness_row(&a, 0, r), harness_row(&b, 0, match), IMAGE_BYTES) == 0,
                      "epoch %d element %lld differs between bs 64 and bs 50 with 2 workers", epoch,
                      (long long)a.ids[r]);
        }
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(base);
    sl_scenario_instance_free(other);
}

/* Whether out is image cropped at (oy, ox), zero-padded back centred and
 * mirrored when flip, written from the op's definition in SCENARIOS.md. */
static bool explains(const uint8_t *image, const uint8_t *out, int oy, int ox, bool flip)
{
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            int sx = flip ? SIDE - 1 - x : x;
            int cy = y - BORDER, cx = sx - BORDER;
            bool inside = cy >= 0 && cy < CROP && cx >= 0 && cx < CROP;
            for (int c = 0; c < CHANNELS; c++) {
                uint8_t expected = inside ? image[((cy + oy) * SIDE + (cx + ox)) * CHANNELS + c] : 0;
                if (out[(y * SIDE + x) * CHANNELS + c] != expected)
                    return false;
            }
        }
    return true;
}

Test(pr2, crops_lie_inside_and_flips_follow_p)
{
    sl_scenario_instance *instance = harness_build("PR-2", "64x64");
    run_output out;
    run_epochs(instance, "fused", 0, 2, &out);
    int flips = 0, min_offset = SIDE, max_offset = -1;
    for (int64_t r = 0; r < out.rows; r++) {
        const uint8_t *image = sl_source_map(instance->fixture, 0, (size_t)out.ids[r] * IMAGE_BYTES, IMAGE_BYTES);
        cr_assert_not_null(image);
        bool found = false;
        for (int oy = 0; oy <= SIDE - CROP && !found; oy++)
            for (int ox = 0; ox <= SIDE - CROP && !found; ox++)
                for (int flip = 0; flip < 2 && !found; flip++)
                    if (explains(image, harness_row(&out, 0, r), oy, ox, flip)) {
                        found = true;
                        flips += flip;
                        min_offset = oy < min_offset ? oy : min_offset;
                        max_offset = oy > max_offset ? oy : max_offset;
                    }
        cr_assert(found, "row %lld (element %lld) is no in-bounds crop of its image", (long long)r,
                  (long long)out.ids[r]);
    }
    /* 1000 flips with p = 0.5: sd = sqrt(1000 / 4) ~ 15.8; 5 sd = 79. */
    cr_expect(flips > 500 - 79 && flips < 500 + 79, "%d of 1000 images flipped", flips);
    /* Offsets are uniform over 0..8; missing an end in 1000 draws has
     * probability about 2 x (8/9)^1000. */
    cr_expect_eq(min_offset, 0);
    cr_expect_eq(max_offset, SIDE - CROP);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}
