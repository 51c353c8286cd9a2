/* MM-1, image-text pairs: the standard checks; every image stays paired with
 * its own caption through the shuffle (both modalities carry the element id
 * from the fixture, and the test reads it back out of each); captions are
 * cut or padded to 77 tokens exactly as open_clip's tokenizer does; and each
 * image is a bilinear resize of an in-bounds box of its source, recomputed
 * here in double precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(mm1, "MM-1", "64x64")

enum { SIDE = 64, CHANNELS = 3, VALUES = SIDE * SIDE * CHANNELS, CONTEXT = 77, CAPACITY = 96, N = 1000 };

static const float mean[3] = {122.770935f, 116.74601f, 104.093735f};
static const float stddev[3] = {68.50024f, 66.63224f, 70.32316f};

static float normalized(float v, int c)
{
    return (v - mean[c]) * (1.0f / stddev[c]);
}

/* The byte a constant plane of channel c held before the pipeline, or -1
 * when the plane is not constant or no byte normalizes to its value: a
 * crop and bilinear resize keep a constant exactly, and normalize is one
 * expression, so the value identifies the byte. */
static int plane_byte(const float *image, int c)
{
    float v = image[c];
    for (int p = 1; p < SIDE * SIDE; p++)
        if (image[p * CHANNELS + c] != v)
            return -1;
    for (int b = 0; b < 256; b++)
        if (normalized((float)b, c) == v)
            return b;
    return -1;
}

static void check_pairs(const run_output *out, const char *what)
{
    cr_assert_eq(out->rows, N);
    bool *seen = calloc(N, 1);
    int64_t in_place = 0;
    for (int64_t r = 0; r < out->rows; r++) {
        const float *image = harness_row(out, 0, r);
        const int32_t *text = harness_row(out, 1, r);
        int high = plane_byte(image, 1), low = plane_byte(image, 2);
        cr_assert(high >= 0 && low >= 0, "%s: row %lld: the image's tag planes are not intact", what, (long long)r);
        int64_t image_id = high * 256 + low;
        int64_t text_id = text[1] - SL_TOKEN_FIRST_CONTENT;
        cr_assert_eq(image_id, text_id, "%s: row %lld pairs the image of element %lld with the text of %lld", what,
                     (long long)r, (long long)image_id, (long long)text_id);
        cr_assert_eq(image_id, out->ids[r], "%s: row %lld holds element %lld but says %lld", what, (long long)r,
                     (long long)image_id, (long long)out->ids[r]);
        cr_assert(!seen[image_id], "%s: element %lld appears twice", what, (long long)image_id);
        seen[image_id] = true;
        in_place += image_id == r;
    }
    /* A shuffled epoch leaves about one element in place. */
    cr_expect_lt(in_place, 20, "%s: %lld of %d elements in their unshuffled place", what, (long long)in_place, N);
    free(seen);
}

Test(mm1, each_image_stays_paired_with_its_own_text)
{
    sl_scenario_instance *instance = harness_build("MM-1", "64x64");
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    check_pairs(&out, "fused");
    harness_release(&out);
    harness_run(instance, "iter", 2, 4, (sl_position){0, 0}, 0, &out);
    check_pairs(&out, "iter with 2 workers");
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(mm1, captions_are_cut_or_padded_to_77_with_one_end_token)
{
    sl_scenario_instance *instance = harness_build("MM-1", "64x64");
    run_output out;
    harness_run(instance, "iter", 0, 0, (sl_position){0, 0}, 0, &out);
    int cut = 0, padded = 0;
    for (int64_t r = 0; r < out.rows; r++) {
        const int32_t *text = harness_row(&out, 1, r);
        size_t row_bytes = CAPACITY * sizeof(int32_t);
        const int32_t *caption = sl_source_map(instance->fixture, 1, (size_t)out.ids[r] * row_bytes, row_bytes);
        cr_assert_not_null(caption);
        /* open_clip: tokens up to the end token; past the context, the first
         * 76 and then the end token; short ones padded with 0. */
        int content = 0;
        while (content < CAPACITY && caption[content] != SL_TOKEN_EOD)
            content++;
        int keep = content < CONTEXT - 1 ? content : CONTEXT - 1;
        cut += content > CONTEXT - 1;
        padded += content < CONTEXT - 1;
        for (int k = 0; k < CONTEXT; k++) {
            int32_t want = k < keep ? caption[k] : (k == keep ? SL_TOKEN_EOD : SL_TOKEN_PAD);
            cr_assert_eq(text[k], want, "row %lld (element %lld) token %d is %d, not %d", (long long)r,
                         (long long)out.ids[r], k, text[k], want);
        }
    }
    /* Content of 3 to 82 tokens, uniform: about 6 in 80 are cut. */
    cr_expect_gt(cut, 20, "only %d of %d captions were long enough to cut", cut, N);
    cr_expect_gt(padded, 800, "only %d captions were padded", padded);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

/* Where output index d of a side resized from `in` to `out` samples the
 * input, half-pixel centres, clamped to the edge pixels. */
static double source_position(int d, int in, int out)
{
    double s = (d + 0.5) * in / out - 0.5;
    return s < 0.0 ? 0.0 : (s > in - 1 ? in - 1 : s);
}

/* The mean area fraction of the box the definition of random_resized_crop
 * gives (ops.h), integrated numerically over the scale and the aspect
 * parameter: the first attempt that fits is the conditional distribution
 * on the region that fits; a miss of all ten attempts gives 1. */
static double expected_area_fraction(double lo, double hi, double ratio, double fit)
{
    enum { STEPS = 1000 };
    double k = (ratio - 1) / (ratio + 1), inside = 0, sum = 0;
    for (int i = 0; i < STEPS; i++)
        for (int j = 0; j < STEPS; j++) {
            double s = lo + (hi - lo) * (i + 0.5) / STEPS, t = -1 + 2 * (j + 0.5) / STEPS;
            double a = (1 + k * t) / (1 - k * t);
            if (s * a <= fit && s / a <= fit) {
                inside += 1;
                sum += s;
            }
        }
    double p = inside / ((double)STEPS * STEPS), miss = pow(1 - p, 10);
    return sum / inside * (1 - miss) + miss;
}

Test(random_resized_crop, images_are_in_bounds_boxes_resized_bilinearly)
{
    sl_scenario_instance *instance = harness_build("MM-1", "64x64");
    const sl_op *crop = &instance->spec.ops[0];
    cr_assert_eq(crop->kind, SL_OP_RANDOM_RESIZED_CROP);
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    double worst = 0.0, scale_sum = 0.0, min_scale = 1.0, min_aspect = 2.0, max_aspect = 0.0;
    for (int64_t r = 0; r < out.rows; r++) {
        sl_crop_box box = sl_random_resized_crop_box(crop, 42, 0, out.ids[r], SIDE, SIDE);
        cr_assert(
            box.h >= 1 && box.w >= 1 && box.y >= 0 && box.x >= 0 && box.y + box.h <= SIDE && box.x + box.w <= SIDE,
            "element %lld: box (%d, %d) %dx%d is outside the image", (long long)out.ids[r], box.y, box.x, box.h, box.w);
        double scale = (double)box.h * box.w / (SIDE * SIDE), aspect = (double)box.w / box.h;
        scale_sum += scale;
        min_scale = scale < min_scale ? scale : min_scale;
        min_aspect = aspect < min_aspect ? aspect : min_aspect;
        max_aspect = aspect > max_aspect ? aspect : max_aspect;
        const uint8_t *image = sl_source_map(instance->fixture, 0, (size_t)out.ids[r] * VALUES, VALUES);
        const float *got = harness_row(&out, 0, r);
        /* Channel 0 (the untagged one) from the textbook four-weight formula
         * over the box, in double. */
        for (int oy = 0; oy < SIDE; oy++) {
            double sy = source_position(oy, box.h, SIDE);
            int y0 = (int)floor(sy), y1 = y0 + 1 < box.h ? y0 + 1 : y0;
            double fy = sy - y0;
            for (int ox = 0; ox < SIDE; ox++) {
                double sx = source_position(ox, box.w, SIDE);
                int x0 = (int)floor(sx), x1 = x0 + 1 < box.w ? x0 + 1 : x0;
                double fx = sx - x0;
#define AT(row, col) (double)image[((box.y + (row)) * SIDE + box.x + (col)) * CHANNELS]
                double v = (1 - fx) * (1 - fy) * AT(y0, x0) + fx * (1 - fy) * AT(y0, x1) + (1 - fx) * fy * AT(y1, x0) +
                           fx * fy * AT(y1, x1);
#undef AT
                double diff = fabs(got[(oy * SIDE + ox) * CHANNELS] - (v - mean[0]) / stddev[0]);
                worst = diff > worst ? diff : worst;
            }
        }
    }
    /* One resize stage: docs/determinism.md's bound. */
    double bound = ldexp(1.0, -13) / stddev[0] + ldexp(1.0, -20);
    cr_expect_leq(worst, bound, "largest difference from the double-precision crop is %.3g, bound %.3g", worst, bound);
    /* The expected area fraction, from the box's definition: attempts draw
     * s uniform on [0.08, 1] and an aspect a(t) uniform in t, and keep the
     * first box whose rounded sides fit (s a and s / a below (64.5 / 64)^2),
     * or the whole image after ten misses. Large boxes of uneven aspect do
     * not fit, so the mean is below 0.54. The box's area differs from s by
     * the rounding of its sides, which averages out. The sd of the fraction
     * is under 0.27, so 1000 boxes give a standard error under 0.0085; six
     * of them is 0.05. */
    double expected = expected_area_fraction(0.08, 1.0, 4.0 / 3.0, (64.5 / 64) * (64.5 / 64));
    cr_expect(fabs(scale_sum / N - expected) < 0.05, "mean box area fraction %.3f, expected %.3f", scale_sum / N,
              expected);
    /* Rounding a side of 18 or more moves the area by under 6% and the
     * aspect by under 6% beyond [3/4, 4/3]. */
    cr_expect_geq(min_scale, 0.08 * 0.94, "a box of area fraction %.4f", min_scale);
    cr_expect(min_aspect >= 0.75 * 0.94 && max_aspect <= 4.0 / 3.0 * 1.06, "aspects span [%.3f, %.3f]", min_aspect,
              max_aspect);
    cr_expect(min_aspect < 0.8 && max_aspect > 1.25, "aspects only span [%.3f, %.3f]", min_aspect, max_aspect);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(mm1, crops_change_between_epochs_but_not_with_the_batch_size)
{
    sl_scenario_instance *instance = harness_build("MM-1", "64x64");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.batch_override = 50;
    sl_scenario_instance *other = harness_build_with("MM-1", "64x64", &options);
    run_output a, b;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 2 * sl_pipeline_batches_per_epoch(instance->pipeline),
                &a);
    harness_run(other, "iter", 2, 0, (sl_position){0, 0}, sl_pipeline_batches_per_epoch(other->pipeline), &b);
    int same = 0;
    for (int64_t r = 0; r < N; r++) {
        int64_t again = harness_find_element(&a, a.ids[r], N, 2 * N);
        cr_assert_geq(again, N);
        same += memcmp(harness_row(&a, 0, r), harness_row(&a, 0, again), VALUES * sizeof(float)) == 0;
        int64_t match = harness_find_element(&b, a.ids[r], 0, N);
        cr_assert_geq(match, 0);
        cr_assert(memcmp(harness_row(&a, 0, r), harness_row(&b, 0, match), VALUES * sizeof(float)) == 0,
                  "element %lld differs between bs 64 and bs 50 with 2 workers", (long long)a.ids[r]);
    }
    /* Two epochs draw the same box only on a fallback or a coincidence. */
    cr_expect_lt(same, 10, "%d of %d images came out the same in both epochs", same, N);
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(instance);
    sl_scenario_instance_free(other);
}
