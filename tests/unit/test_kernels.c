/* Kernels: the reference computes what the op definitions say (checked on
 * hand-worked values), and the optimized table matches the reference bit for
 * bit on awkward sizes, where vector loops and their tails part ways. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/normal.h"
#include "kernels_under_test.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/op_consts.h"
#include "sluice/pipeline/ops.h"

static void fill_random_f32(float *x, int64_t n, uint32_t seed, float lo, float hi)
{
    sl_philox_key key = sl_philox_key_for(seed, 99);
    for (int64_t i = 0; i < n; i++) {
        sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key);
        x[i] = lo + (hi - lo) * sl_u32_to_unit_float(r.v[0]);
    }
}

static void fill_random_u8(uint8_t *x, int64_t n, uint32_t seed)
{
    sl_philox_key key = sl_philox_key_for(seed, 98);
    for (int64_t i = 0; i < n; i++)
        x[i] = (uint8_t)sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key).v[0];
}

/* The optimized table under test is the one behind sl_test_kernels(), which
 * meson points at each registered table in turn through SLUICE_KERNELS, so
 * that a bug in the generic kernels cannot hide behind the AVX2 ones. A
 * table this CPU cannot run is skipped with the reason, never replaced by
 * another one and counted as passed. */
static void require_requested_table(void)
{
    const char *requested = getenv("SLUICE_KERNELS");
    if (!requested || !*requested)
        return;
    const sl_kernel_table *table = sl_kernels_find(requested);
    cr_assert_not_null(table, "SLUICE_KERNELS names no kernel table: %s", requested);
    char reason[128] = "";
    if (!sl_kernel_table_supported(table, reason, sizeof reason))
        cr_skip_test("kernel table %s: %s", requested, reason);
    cr_assert_eq(sl_test_kernels(), table, "SLUICE_KERNELS=%s but the best table is %s", requested,
                 sl_test_kernels()->name);
}

/* The kernel tests of one op are in a suite named after it (docs/testing.md
 * lists them by op); every suite here runs on the table SLUICE_KERNELS names. */
TestSuite(kernels, .init = require_requested_table);
TestSuite(normalize, .init = require_requested_table);
TestSuite(clip, .init = require_requested_table);
TestSuite(random_crop, .init = require_requested_table);
TestSuite(random_hflip, .init = require_requested_table);
TestSuite(rot90, .init = require_requested_table);
TestSuite(pack_tokens, .init = require_requested_table);
TestSuite(zscore, .init = require_requested_table);
TestSuite(random_crop3d, .init = require_requested_table);
TestSuite(random_flip3d, .init = require_requested_table);
TestSuite(one_hot, .init = require_requested_table);
TestSuite(mixup, .init = require_requested_table);
TestSuite(cutmix, .init = require_requested_table);
TestSuite(affine, .init = require_requested_table);
TestSuite(dropout, .init = require_requested_table);
TestSuite(resize, .init = require_requested_table);

Test(normalize, reference_normalize_matches_hand_values)
{
    const uint8_t src[6] = {0, 128, 255, 10, 20, 30};
    const float mean[3] = {0.0f, 128.0f, 5.0f};
    const float stddev[3] = {1.0f, 2.0f, 4.0f};
    sl_normalize_consts k;
    sl_err err = {0};
    cr_assert_eq(sl_normalize_consts_init(&k, 3, mean, stddev, &err), SL_OK, "%s", err.msg);
    float out[6];
    sl_kernels_reference()->normalize_u8(src, out, 2, &k);
    sl_normalize_consts_release(&k);
    const float expected[6] = {0.0f, 0.0f, 62.5f, 10.0f, -54.0f, 6.25f};
    for (int i = 0; i < 6; i++)
        cr_expect_eq(out[i], expected[i], "index %d: %g != %g", i, out[i], expected[i]);
}

Test(normalize, optimized_normalize_is_bitwise_reference)
{
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    const int channel_counts[] = {1, 3, 4, 7, 100, 128};
    const int64_t pixel_counts[] = {1, 5, 17, 333, 1024 + 3};
    for (size_t ci = 0; ci < sizeof channel_counts / sizeof channel_counts[0]; ci++)
        for (size_t pi = 0; pi < sizeof pixel_counts / sizeof pixel_counts[0]; pi++) {
            int c = channel_counts[ci];
            int64_t pixels = pixel_counts[pi], n = pixels * c;
            float mean[128], stddev[128];
            fill_random_f32(mean, c, 1, 0.0f, 255.0f);
            fill_random_f32(stddev, c, 2, 0.5f, 100.0f);
            sl_normalize_consts k;
            sl_err err = {0};
            cr_assert_eq(sl_normalize_consts_init(&k, c, mean, stddev, &err), SL_OK, "%s", err.msg);
            uint8_t *u8 = malloc((size_t)n);
            float *f = malloc((size_t)n * 4), *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
            fill_random_u8(u8, n, (uint32_t)(c * 1000 + pixels));
            fill_random_f32(f, n, 3, -10.0f, 300.0f);
            ref->normalize_u8(u8, a, pixels, &k);
            best->normalize_u8(u8, b, pixels, &k);
            cr_assert(memcmp(a, b, (size_t)n * 4) == 0, "u8 normalize differs for c=%d pixels=%lld", c,
                      (long long)pixels);
            ref->normalize_f32(f, a, pixels, &k);
            best->normalize_f32(f, b, pixels, &k);
            cr_assert(memcmp(a, b, (size_t)n * 4) == 0, "f32 normalize differs for c=%d pixels=%lld", c,
                      (long long)pixels);
            /* In place is allowed for f32 and must give the same result. */
            best->normalize_f32(f, f, pixels, &k);
            cr_assert(memcmp(a, f, (size_t)n * 4) == 0, "in-place f32 normalize differs for c=%d", c);
            free(u8);
            free(f);
            free(a);
            free(b);
            sl_normalize_consts_release(&k);
        }
}

/* Every opcode of the element-wise chain, each alone, on values that
 * include NaN, infinities, zeros of both signs and denormals, runs the same
 * on the table under test as on the reference: a new opcode (a line of
 * SL_EW_ARITHMETIC and its body) is checked here without a test of its own. */
Test(kernels, every_chain_opcode_matches_the_reference_alone)
{
    const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-40f, 3e38f, -3e38f};
    const int64_t n = 1001; /* not a multiple of any vector width or tile */
    float *x = malloc((size_t)n * 4), *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    fill_random_f32(x, n, 11, -4.0f, 4.0f);
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        x[i * 97] = specials[i];
    for (int op = 0; op < SL_EW_OPCODE_COUNT; op++) {
        sl_ew_step step = {.kind = (sl_ew_opcode)op, .a = -0.75f, .b = 1.5f, .key = {{7u, 9u}}, .ctr = {{3, 1, 0, 0}}};
        memcpy(a, x, (size_t)n * 4);
        memcpy(b, x, (size_t)n * 4);
        sl_kernels_reference()->ew_chain(a, n, &step, 1);
        sl_test_kernels()->ew_chain(b, n, &step, 1);
        for (int64_t i = 0; i < n; i++)
            cr_assert(memcmp(&a[i], &b[i], 4) == 0 || (isnan(a[i]) && isnan(b[i])),
                      "opcode %d on %s at %lld: reference %a, table %a", op, sl_test_kernels()->name, (long long)i,
                      (double)a[i], (double)b[i]);
    }
    free(x);
    free(a);
    free(b);
}

Test(kernels, chain_matches_composition_and_reference)
{
    const sl_ew_step steps[] = {
        {.kind = SL_EW_NORMALIZE, .a = 0.5f, .b = 4.0f},
        {.kind = SL_EW_MULTIPLY, .a = 2.0f},
        {.kind = SL_EW_CLIP, .a = 0.0f, .b = 1.0f},
        {.kind = SL_EW_ADD, .a = 0.1f},
        {.kind = SL_EW_MULTIPLY, .a = 0.9f},
    };
    const int64_t sizes[] = {1, 7, 2047, 2048, 2049, 10000};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = malloc((size_t)n * 4), *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
        fill_random_f32(x, n, 5, -1.0f, 2.0f);
        memcpy(a, x, (size_t)n * 4);
        memcpy(b, x, (size_t)n * 4);
        sl_kernels_reference()->ew_chain(a, n, steps, 5);
        sl_test_kernels()->ew_chain(b, n, steps, 5);
        for (int64_t i = 0; i < n; i++) {
            /* The chain written out by hand, one rounding per operation. */
            float v = (x[i] - 0.5f) * 4.0f;
            v = v * 2.0f;
            v = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
            v = v + 0.1f;
            v = v * 0.9f;
            cr_assert_eq(a[i], v, "reference differs from the composition at %lld", (long long)i);
        }
        cr_assert(memcmp(a, b, (size_t)n * 4) == 0, "optimized chain differs for n=%lld", (long long)n);
        free(x);
        free(a);
        free(b);
    }
}

/* gaussian_noise inside a chain, on sizes around the vector widths, the
 * 64-value groups, the 512-value chunks and the 2048-value tiles: the
 * reference adds sigma times the variate of the documented word to each
 * value (value 64 g + 16 k + j: word k of block 16 g + j), and every table
 * gives the reference's bits. */
Test(kernels, noise_chain_draws_the_documented_words_in_every_table)
{
    const int64_t sizes[] = {1, 3, 15, 63, 64, 65, 511, 512, 513, 2047, 2048, 2049, 5000, 12288};
    sl_ew_step steps[] = {
        {.kind = SL_EW_NORMALIZE, .a = 0.5f, .b = 4.0f},
        {.kind = SL_EW_GAUSSIAN_NOISE, .a = 0.05f, .key = {{0x12345678u, 0x9abcdef0u}}, .ctr = {{17, 0, 3, 0}}},
        {.kind = SL_EW_ADD, .a = 0.1f},
        {.kind = SL_EW_GAUSSIAN_NOISE, .a = 2.0f, .key = {{1u, 2u}}, .ctr = {{0xFFFFFFFFu, 7, 0, 100}}},
    };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = malloc((size_t)n * 4), *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
        fill_random_f32(x, n, 6, -1.0f, 2.0f);
        memcpy(a, x, (size_t)n * 4);
        memcpy(b, x, (size_t)n * 4);
        sl_kernels_reference()->ew_chain(a, n, steps, 4);
        sl_test_kernels()->ew_chain(b, n, steps, 4);
        for (int64_t i = 0; i < n; i++) {
            float v = (x[i] - 0.5f) * 4.0f;
            for (int s = 1; s < 4; s++) {
                if (steps[s].kind == SL_EW_ADD) {
                    v = v + steps[s].a;
                    continue;
                }
                sl_philox_ctr c = steps[s].ctr;
                c.v[3] += (uint32_t)(16 * (i / 64) + i % 16);
                uint32_t word = sl_philox4x32_10(c, steps[s].key).v[(i % 64) / 16];
                v = v + steps[s].a * sl__normal_f32(word);
            }
            cr_assert_eq(a[i], v, "n=%lld: reference differs from the definition at %lld", (long long)n, (long long)i);
        }
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(a[i], b[i], "n=%lld: %s differs from the reference at %lld: %.9g vs %.9g", (long long)n,
                         sl_test_kernels()->name, (long long)i, b[i], a[i]);
        free(x);
        free(a);
        free(b);
    }
}

Test(clip, clip_keeps_nan_the_same_way_everywhere)
{
    sl_ew_step clip = {.kind = SL_EW_CLIP, .a = 0.0f, .b = 1.0f};
    float a[3] = {NAN, -1.0f, 2.0f}, b[3] = {NAN, -1.0f, 2.0f};
    sl_kernels_reference()->ew_chain(a, 3, &clip, 1);
    sl_test_kernels()->ew_chain(b, 3, &clip, 1);
    cr_expect(isnan(a[0]) && isnan(b[0]));
    cr_expect_eq(a[1], 0.0f);
    cr_expect_eq(b[2], 1.0f);
}

Test(random_crop, crop_pad_places_the_window_centred)
{
    /* A 4x4 one-byte image holding its own index; a 2x2 crop at (1, 2)
     * lands centred at rows 1-2, columns 1-2, zeros elsewhere. */
    uint8_t img[16], out[16];
    for (int i = 0; i < 16; i++)
        img[i] = (uint8_t)(i + 1);
    const uint8_t expected[16] = {0, 0, 0, 0, 0, 7, 8, 0, 0, 11, 12, 0, 0, 0, 0, 0};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        memset(out, 0xAB, sizeof out);
        tables[t]->crop_pad(img, out, 4, 4, 1, 2, 2, 1, 2);
        cr_assert(memcmp(out, expected, 16) == 0, "table %s", tables[t]->name);
    }
}

Test(random_crop, crop_pad_and_flip_agree_on_rgb_images)
{
    enum { h = 64, w = 64, c = 3 };
    static uint8_t img[h * w * c], a[h * w * c], b[h * w * c];
    fill_random_u8(img, sizeof img, 11);
    for (int oy = 0; oy <= 8; oy += 4)
        for (int ox = 0; ox <= 8; ox += 3) {
            sl_kernels_reference()->crop_pad(img, a, h, w, c, 56, 56, oy, ox);
            sl_test_kernels()->crop_pad(img, b, h, w, c, 56, 56, oy, ox);
            cr_assert(memcmp(a, b, sizeof a) == 0, "crop differs at offset (%d, %d)", oy, ox);
        }
    memcpy(a, img, sizeof img);
    memcpy(b, img, sizeof img);
    sl_kernels_reference()->hflip(a, h, w, c);
    sl_test_kernels()->hflip(b, h, w, c);
    cr_assert(memcmp(a, b, sizeof a) == 0);
    /* Pixel (y, x) moved to (y, w-1-x) with its channels in order. */
    cr_assert(memcmp(&a[(5 * w + (w - 1 - 9)) * c], &img[(5 * w + 9) * c], c) == 0);
    sl_test_kernels()->hflip(b, h, w, c);
    cr_assert(memcmp(b, img, sizeof img) == 0, "flipping twice must restore the image");
}

Test(random_hflip, flip_agrees_for_every_pixel_size)
{
    /* 1, 3, 4 and 12 bytes have specialized row reversals; 5 takes the
     * fallback. Odd and even widths both. */
    const size_t pixel_sizes[] = {1, 3, 4, 5, 12};
    const int widths[] = {1, 7, 64};
    for (size_t p = 0; p < sizeof pixel_sizes / sizeof pixel_sizes[0]; p++)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
            int h = 5, w = widths[wi];
            size_t bytes = (size_t)h * (size_t)w * pixel_sizes[p];
            uint8_t *img = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
            fill_random_u8(img, (int64_t)bytes, (uint32_t)(p * 100 + wi));
            memcpy(a, img, bytes);
            memcpy(b, img, bytes);
            sl_kernels_reference()->hflip(a, h, w, pixel_sizes[p]);
            sl_test_kernels()->hflip(b, h, w, pixel_sizes[p]);
            cr_assert(memcmp(a, b, bytes) == 0, "flip differs for %zu-byte pixels, width %d", pixel_sizes[p], w);
            /* Row 2's first pixel is the source's last pixel of row 2. */
            cr_assert(memcmp(b + 2 * (size_t)w * pixel_sizes[p],
                             img + (2 * (size_t)w + (size_t)(w - 1)) * pixel_sizes[p], pixel_sizes[p]) == 0);
            free(img);
            free(a);
            free(b);
        }
}

Test(rot90, rot90_turns_as_numpy_does)
{
    /* numpy.rot90 of [[1,2,3],[4,5,6],[7,8,9]] for k = 0..3, written out. */
    const uint8_t img[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const uint8_t expected[4][9] = {
        {1, 2, 3, 4, 5, 6, 7, 8, 9},
        {3, 6, 9, 2, 5, 8, 1, 4, 7},
        {9, 8, 7, 6, 5, 4, 3, 2, 1},
        {7, 4, 1, 8, 5, 2, 9, 6, 3},
    };
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 4; k++) {
            uint8_t out[9];
            memset(out, 0xAB, sizeof out);
            tables[t]->rot90(img, out, 3, 1, k);
            cr_assert(memcmp(out, expected[k], 9) == 0, "table %s, k = %d", tables[t]->name, k);
        }
}

Test(rot90, rot90_agrees_for_every_pixel_size_side_and_turn)
{
    /* 1, 3, 4 and 12 bytes have constant-size instances, 5 takes the
     * variable one; sides below, at and across the 16-pixel tile. */
    const size_t pixel_sizes[] = {1, 3, 4, 5, 12};
    const int sides[] = {1, 2, 7, 16, 17, 33};
    for (size_t p = 0; p < sizeof pixel_sizes / sizeof pixel_sizes[0]; p++)
        for (size_t si = 0; si < sizeof sides / sizeof sides[0]; si++) {
            int n = sides[si];
            size_t px = pixel_sizes[p], bytes = (size_t)n * (size_t)n * px;
            uint8_t *img = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
            fill_random_u8(img, (int64_t)bytes, (uint32_t)(p * 100 + si));
            for (int k = 0; k < 4; k++) {
                sl_kernels_reference()->rot90(img, a, n, px, k);
                sl_test_kernels()->rot90(img, b, n, px, k);
                cr_assert(memcmp(a, b, bytes) == 0, "rot90 k = %d differs for %zu-byte pixels, side %d", k, px, n);
                /* Turning back by 4 - k quarter turns restores the image. */
                sl_test_kernels()->rot90(b, c, n, px, (4 - k) % 4);
                cr_assert(memcmp(c, img, bytes) == 0, "k = %d then %d is not the identity (side %d)", k, (4 - k) % 4,
                          n);
            }
            /* One quarter turn moves pixel (0, n-1) to (0, 0). */
            sl_test_kernels()->rot90(img, b, n, px, 1);
            cr_assert(memcmp(b, img + (size_t)(n - 1) * px, px) == 0);
            free(img);
            free(a);
            free(b);
            free(c);
        }
}

Test(pack_tokens, pack_copies_then_pads)
{
    const int32_t stream[5] = {5, 6, 7, 8, 9};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        int32_t out[8];
        tables[t]->pack(out, stream, 5, 8, -1);
        const int32_t expected[8] = {5, 6, 7, 8, 9, -1, -1, -1};
        cr_assert(memcmp(out, expected, sizeof out) == 0, "table %s", tables[t]->name);
        tables[t]->pack(out, stream, 5, 3, -1);
        cr_assert(out[0] == 5 && out[2] == 7, "a full sequence takes only seq_len tokens");
    }
}

Test(zscore, moments_match_hand_values_and_the_stated_order)
{
    const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    double mean, var;
    sl_kernels_reference()->moments(x, 4, &mean, &var);
    cr_expect_eq(mean, 2.5);
    cr_expect_eq(var, 1.25);
    /* The order sl_moments_fn states, written out here: value i into partial
     * i mod 8, partials combined as a balanced tree. Both tables must give
     * exactly its bits on sizes around the eight-value step. */
    const int64_t sizes[] = {1, 7, 8, 9, 15, 17, 1000, 32768 + 3};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *v = malloc((size_t)n * sizeof *v);
        fill_random_f32(v, n, 21, 990.0f, 1010.0f);
        double p[8] = {0}, q[8] = {0};
        for (int64_t i = 0; i < n; i++)
            p[i % 8] += (double)v[i];
        double m = (((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))) / (double)n;
        for (int64_t i = 0; i < n; i++)
            q[i % 8] += ((double)v[i] - m) * ((double)v[i] - m);
        double expected_var = (((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]))) / (double)n;
        const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
        for (int t = 0; t < 2; t++) {
            tables[t]->moments(v, n, &mean, &var);
            cr_assert(mean == m && var == expected_var, "%s moments of %lld values: %.17g %.17g vs %.17g %.17g",
                      tables[t]->name, (long long)n, mean, var, m, expected_var);
        }
        /* Uniform on [990, 1010): variance 400 / 12. */
        if (n > 10000)
            cr_expect(fabs(var - 400.0 / 12) < 0.5 && fabs(mean - 1000) < 0.2, "mean %g var %g", mean, var);
        free(v);
    }
}

Test(kernels, channel_moments_match_hand_values_and_each_channels_moments)
{
    /* Two channels of three pixels: (1, 10), (2, 10), (3, 40). Channel 0 has
     * mean 2 and M2 2; channel 1 mean 20 and M2 100 + 100 + 400 = 600. */
    const float x[6] = {1.0f, 10.0f, 2.0f, 10.0f, 3.0f, 40.0f};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        double mean[2], m2[2];
        tables[t]->channel_moments(x, 3, 2, mean, m2);
        cr_expect(mean[0] == 2.0 && m2[0] == 2.0 && mean[1] == 20.0 && m2[1] == 600.0, "%s: %g %g %g %g",
                  tables[t]->name, mean[0], m2[0], mean[1], m2[1]);
    }
    /* Each channel's figures are exactly sl_moments_fn's on that channel's
     * values alone (the stated order is its order per channel), M2 being
     * n x var; on both tables, for channel counts that leave no whole
     * vector and pixel counts around the eight-pixel step. */
    const int channel_counts[] = {1, 3, 4, 7, 128};
    const int64_t pixel_counts[] = {1, 5, 8, 17, 1027};
    for (size_t ci = 0; ci < sizeof channel_counts / sizeof channel_counts[0]; ci++)
        for (size_t pi = 0; pi < sizeof pixel_counts / sizeof pixel_counts[0]; pi++) {
            int c = channel_counts[ci];
            int64_t n = pixel_counts[pi];
            float *v = malloc((size_t)(n * c) * sizeof *v), *one = malloc((size_t)n * sizeof *one);
            fill_random_f32(v, n * c, (uint32_t)(31 + ci * 7 + pi), -3.0f, 5.0f);
            double mean[128], m2[128];
            for (int t = 0; t < 2; t++) {
                tables[t]->channel_moments(v, n, c, mean, m2);
                for (int k = 0; k < c; k++) {
                    for (int64_t p = 0; p < n; p++)
                        one[p] = v[p * c + k];
                    double m, var;
                    sl_kernels_reference()->moments(one, n, &m, &var);
                    cr_assert(mean[k] == m && m2[k] / (double)n == var,
                              "%s, %d channels, %lld pixels, channel %d: %.17g %.17g vs %.17g %.17g", tables[t]->name,
                              c, (long long)n, k, mean[k], m2[k] / (double)n, m, var);
                }
            }
            free(v);
            free(one);
        }
}

Test(random_crop3d, crop3d_takes_the_patch_at_its_offset)
{
    /* A 3x4x5 one-byte volume holding its own index: the 2x2x3 patch at
     * (1, 2, 1) starts at index (1 * 4 + 2) * 5 + 1 = 31. */
    uint8_t vol[60], out[12];
    for (int i = 0; i < 60; i++)
        vol[i] = (uint8_t)i;
    const uint8_t expected[12] = {31, 32, 33, 36, 37, 38, 51, 52, 53, 56, 57, 58};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        memset(out, 0xAB, sizeof out);
        tables[t]->crop3d(vol, out, 3, 4, 5, 1, 2, 2, 3, 1, 2, 1);
        cr_assert(memcmp(out, expected, sizeof out) == 0, "table %s", tables[t]->name);
    }
    enum { D = 16, H = 12, W = 20, C = 3 };
    static uint8_t big[D * H * W * 4 * C], a[D * H * W * 4 * C], b[D * H * W * 4 * C];
    fill_random_u8(big, sizeof big, 31);
    const size_t voxel_sizes[] = {1, 4, 12};
    for (size_t vs = 0; vs < 3; vs++)
        for (int o = 0; o < 4; o++) {
            size_t bytes = 12 * 9 * 15 * voxel_sizes[vs];
            sl_kernels_reference()->crop3d(big, a, D, H, W, voxel_sizes[vs], 12, 9, 15, o, 3 - o, o + 1);
            sl_test_kernels()->crop3d(big, b, D, H, W, voxel_sizes[vs], 12, 9, 15, o, 3 - o, o + 1);
            cr_assert(memcmp(a, b, bytes) == 0, "crop3d differs for %zu-byte voxels at offset %d", voxel_sizes[vs], o);
        }
}

Test(random_flip3d, flip3d_mirrors_exactly_the_chosen_axes)
{
    /* Even and odd sides; 4-byte voxels take the row path, 5-byte ones the
     * reference fallback. Every one of the eight axis sets. */
    const int dims[][3] = {{4, 6, 8}, {3, 5, 7}, {1, 1, 9}};
    const size_t voxel_sizes[] = {1, 4, 5};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t vs = 0; vs < 3; vs++)
            for (unsigned axes = 0; axes < 8; axes++) {
                int d = dims[di][0], h = dims[di][1], w = dims[di][2];
                size_t vb = voxel_sizes[vs], bytes = (size_t)d * h * w * vb;
                uint8_t *vol = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
                fill_random_u8(vol, (int64_t)bytes, (uint32_t)(di * 100 + vs * 10 + axes));
                memcpy(a, vol, bytes);
                memcpy(b, vol, bytes);
                sl_kernels_reference()->flip3d(a, d, h, w, vb, axes);
                sl_test_kernels()->flip3d(b, d, h, w, vb, axes);
                cr_assert(memcmp(a, b, bytes) == 0, "flip3d differs: %dx%dx%d, %zu-byte voxels, axes %u", d, h, w, vb,
                          axes);
                for (int z = 0; z < d; z++)
                    for (int y = 0; y < h; y++)
                        for (int x = 0; x < w; x++) {
                            int sz = axes & SL_AXIS_D ? d - 1 - z : z, sy = axes & SL_AXIS_H ? h - 1 - y : y;
                            int sx = axes & SL_AXIS_W ? w - 1 - x : x;
                            cr_assert(memcmp(a + (((size_t)z * h + y) * w + x) * vb,
                                             vol + (((size_t)sz * h + sy) * w + sx) * vb, vb) == 0,
                                      "axes %u: voxel (%d, %d, %d) is not its mirror's", axes, z, y, x);
                        }
                free(vol);
                free(a);
                free(b);
            }
}

Test(one_hot, one_hot_marks_the_label)
{
    const int32_t labels[4] = {0, 2, 3, -1};
    const float expected[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        float out[12];
        tables[t]->one_hot(labels, out, 4, 3);
        cr_assert(memcmp(out, expected, sizeof out) == 0, "table %s: labels outside [0, 3) give zeros",
                  tables[t]->name);
    }
}

Test(mixup, blend_rounds_each_step_like_the_reference)
{
    const int64_t sizes[] = {1, 7, 8, 33, 12288 + 5};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *a = malloc((size_t)n * 4),
              *b = malloc((size_t)n * 4);
        fill_random_f32(x, n, 41, -3.0f, 3.0f);
        fill_random_f32(y, n, 42, -3.0f, 3.0f);
        const float wa = 0.3f, wb = 0.7f;
        sl_kernels_reference()->blend(a, x, y, n, wa, wb);
        for (int64_t i = 0; i < n; i++) {
            float pa = x[i] * wa, pb = y[i] * wb;
            cr_assert_eq(a[i], pa + pb, "reference blend at %lld", (long long)i);
        }
        /* In place over the first operand, as the mixing ops call it. */
        memcpy(b, x, (size_t)n * 4);
        sl_test_kernels()->blend(b, b, y, n, wa, wb);
        cr_assert(memcmp(a, b, (size_t)n * 4) == 0, "optimized blend differs for n=%lld", (long long)n);
        free(x);
        free(y);
        free(a);
        free(b);
    }
}

Test(cutmix, paste_box_copies_only_the_box)
{
    enum { H = 6, W = 7, C = 3 };
    uint8_t src[H * W * C], dst[H * W * C], a[H * W * C], b[H * W * C];
    fill_random_u8(src, sizeof src, 51);
    fill_random_u8(dst, sizeof dst, 52);
    const int boxes[][4] = {{1, 4, 2, 6}, {0, 6, 0, 7}, {2, 2, 1, 5}, {3, 5, 4, 4}};
    for (int k = 0; k < 4; k++) {
        const int *box = boxes[k];
        memcpy(a, dst, sizeof dst);
        memcpy(b, dst, sizeof dst);
        sl_kernels_reference()->paste_box(a, src, H, W, C, box[0], box[1], box[2], box[3]);
        sl_test_kernels()->paste_box(b, src, H, W, C, box[0], box[1], box[2], box[3]);
        cr_assert(memcmp(a, b, sizeof a) == 0, "box %d", k);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                bool in = y >= box[0] && y < box[1] && x >= box[2] && x < box[3];
                size_t at = ((size_t)y * W + x) * C;
                cr_assert(memcmp(a + at, (in ? src : dst) + at, C) == 0, "box %d pixel (%d, %d)", k, y, x);
            }
    }
}

Test(affine, affine_matches_hand_values_and_the_reference_bit_for_bit)
{
    const float scale[3] = {2.0f, -0.5f, 0.25f}, bias[3] = {1.0f, 0.0f, -3.0f};
    sl_affine_consts k;
    sl_err err = {0};
    cr_assert_eq(sl_affine_consts_init(&k, 3, scale, bias, &err), SL_OK, "%s", err.msg);
    const float src[6] = {1.0f, 2.0f, 4.0f, -1.5f, 8.0f, 0.0f};
    const float expected[6] = {3.0f, -1.0f, -2.0f, -2.0f, -4.0f, -3.0f};
    float out[6];
    sl_kernels_reference()->affine_f32(src, out, 2, &k);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(out[i], expected[i], "index %d: %g != %g", i, out[i], expected[i]);
    sl_affine_consts_release(&k);
    const float bad[3] = {1.0f, INFINITY, 1.0f};
    cr_expect_eq(sl_affine_consts_init(&k, 3, bad, bias, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "scale[1]") != NULL, "%s", err.msg);

    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    const int channel_counts[] = {1, 3, 4, 7, 100, 128};
    const int64_t pixel_counts[] = {1, 5, 17, 333, 1024 + 3};
    for (size_t ci = 0; ci < sizeof channel_counts / sizeof channel_counts[0]; ci++)
        for (size_t pi = 0; pi < sizeof pixel_counts / sizeof pixel_counts[0]; pi++) {
            int c = channel_counts[ci];
            int64_t pixels = pixel_counts[pi], n = pixels * c;
            float s[128], b[128];
            fill_random_f32(s, c, 61, -2.0f, 2.0f);
            fill_random_f32(b, c, 62, -1.0f, 1.0f);
            cr_assert_eq(sl_affine_consts_init(&k, c, s, b, &err), SL_OK, "%s", err.msg);
            float *x = malloc((size_t)n * 4), *a = malloc((size_t)n * 4), *o = malloc((size_t)n * 4);
            fill_random_f32(x, n, 63, -5.0f, 5.0f);
            ref->affine_f32(x, a, pixels, &k);
            for (int64_t i = 0; i < n; i++) {
                float product = x[i] * s[i % c];
                cr_assert_eq(a[i], product + b[i % c], "reference rounds the product, then the sum (c=%d i=%lld)", c,
                             (long long)i);
            }
            best->affine_f32(x, o, pixels, &k);
            cr_assert(memcmp(a, o, (size_t)n * 4) == 0, "affine differs for c=%d pixels=%lld", c, (long long)pixels);
            best->affine_f32(x, x, pixels, &k);
            cr_assert(memcmp(a, x, (size_t)n * 4) == 0, "in-place affine differs for c=%d", c);
            free(x);
            free(a);
            free(o);
            sl_affine_consts_release(&k);
        }
}

Test(dropout, dropout_keeps_by_the_keyed_words_and_tables_agree)
{
    /* p = 1/4: threshold 2^30, scale 1 / 0.75 rounded to float. */
    const int64_t sizes[] = {1, 3, 4, 5, 31, 4096 + 5};
    sl_dropout_key d = {sl_philox_key_for(42, 7), 12345, 3, 1u << 30, 1.0f / 0.75f};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si], dropped = 0;
        float *x = malloc((size_t)n * 4), *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
        fill_random_f32(x, n, 71, -4.0f, 4.0f);
        sl_kernels_reference()->dropout(x, a, n, &d);
        for (int64_t i = 0; i < n; i++) {
            uint32_t word = sl_philox4x32_10(sl_philox_ctr_for(12345, 3, (uint32_t)(i / 4)), d.key).v[i % 4];
            float expected = word < (1u << 30) ? 0.0f : x[i] * d.scale;
            cr_assert(memcmp(&a[i], &expected, 4) == 0, "n=%lld value %lld: %a, expected %a", (long long)n,
                      (long long)i, (double)a[i], (double)expected);
            dropped += word < (1u << 30);
        }
        sl_test_kernels()->dropout(x, b, n, &d);
        cr_assert(memcmp(a, b, (size_t)n * 4) == 0, "optimized dropout differs for n=%lld", (long long)n);
        sl_test_kernels()->dropout(x, x, n, &d);
        cr_assert(memcmp(a, x, (size_t)n * 4) == 0, "in-place dropout differs for n=%lld", (long long)n);
        if (n > 4096)
            cr_expect(dropped > n / 4 - 150 && dropped < n / 4 + 150, "%lld of %lld dropped at p = 1/4",
                      (long long)dropped, (long long)n);
        free(x);
        free(a);
        free(b);
    }
    /* Threshold 0 (p = 0) keeps everything, times scale 1. */
    float x[9], y[9];
    fill_random_f32(x, 9, 72, -1.0f, 1.0f);
    sl_dropout_key none = {sl_philox_key_for(1, 2), 5, 0, 0, 1.0f};
    sl_test_kernels()->dropout(x, y, 9, &none);
    cr_assert(memcmp(x, y, sizeof x) == 0);
}

Test(kernels, backward_kernels_match_hand_values)
{
    const float dy[6] = {1.0f, 2.0f, -3.0f, 0.5f, -1.0f, 4.0f};
    const float x[6] = {2.0f, 3.0f, 1.0f, -4.0f, 0.5f, 2.0f};
    const float s[3] = {2.0f, 0.5f, -1.0f};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        float dx[6];
        tables[t]->mul_channels(dy, dx, 2, 3, s);
        const float expected[6] = {2.0f, 1.0f, 3.0f, 1.0f, -0.5f, -4.0f};
        cr_assert(memcmp(dx, expected, sizeof dx) == 0, "table %s: mul_channels", tables[t]->name);
        /* The gradients add to what is there. */
        double dscale[3] = {10, 0, 0}, dbias[3] = {0, 0, 100};
        tables[t]->affine_grads(x, dy, 2, 3, dscale, dbias);
        /* dscale[c] += dy[c] x[c] + dy[3 + c] x[3 + c]; dbias[c] += dy[c] + dy[3 + c]. */
        const double es[3] = {10 + 2.0 - 2.0, 6.0 - 0.5, -3.0 + 8.0}, eb[3] = {1.5, 1.0, 101.0};
        for (int c = 0; c < 3; c++) {
            cr_expect_eq(dscale[c], es[c], "table %s: dscale[%d] = %g", tables[t]->name, c, dscale[c]);
            cr_expect_eq(dbias[c], eb[c], "table %s: dbias[%d] = %g", tables[t]->name, c, dbias[c]);
        }
    }
}

Test(normalize, normalize_constants_are_tiled_and_checked)
{
    const float mean[3] = {1, 2, 3}, stddev[3] = {2, 4, 8};
    sl_normalize_consts k;
    sl_err err = {0};
    cr_assert_eq(sl_normalize_consts_init(&k, 3, mean, stddev, &err), SL_OK);
    /* lcm(3, 16) = 48: the constants repeat every three values. */
    cr_expect_eq(k.period, 48);
    cr_expect_eq(k.mean_tiled[47], 3.0f);
    cr_expect_eq(k.inv_std_tiled[46], 0.25f);
    sl_normalize_consts_release(&k);
    /* 100 channels: lcm(100, 16) = 400 would outgrow a 100-value row, so the
     * period is the channel count itself. */
    float many_mean[100], many_std[100];
    for (int c = 0; c < 100; c++) {
        many_mean[c] = (float)c;
        many_std[c] = 1.0f;
    }
    cr_assert_eq(sl_normalize_consts_init(&k, 100, many_mean, many_std, &err), SL_OK);
    cr_expect_eq(k.period, 100);
    cr_expect_eq(k.mean_tiled[99], 99.0f);
    sl_normalize_consts_release(&k);
    const float bad[3] = {1, 0, 1};
    cr_expect_eq(sl_normalize_consts_init(&k, 3, mean, bad, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "std[1]") != NULL, "%s", err.msg);
    cr_expect_eq(sl_normalize_consts_init(&k, SL_MAX_CHANNELS + 1, mean, stddev, &err), SL_EINVAL);
}

Test(kernels, best_table_overrides_reference)
{
    cr_expect_str_eq(sl_kernels_reference()->name, "reference");
    cr_expect_str_neq(sl_test_kernels()->name, "reference");
    cr_expect_neq((void *)sl_test_kernels()->normalize_u8, (void *)sl_kernels_reference()->normalize_u8);
}

Test(kernels, tables_are_named_and_found)
{
    const char *names[] = {"reference", "cpu-generic", "cpu-avx2", "cpu-avx512-256", "cpu-avx512"};
    cr_assert_eq(sl_kernel_table_count(), 5);
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(sl_kernel_table_at(i)->name, names[i]);
        cr_expect_eq(sl_kernels_find(names[i]), sl_kernel_table_at(i));
    }
    cr_expect_eq(sl_kernels_find("CPU-GENERIC"), sl_kernel_table_at(1), "names are case-insensitive");
    cr_expect_null(sl_kernels_find("cpu-sse"));
    cr_expect(sl_kernel_table_supported(sl_kernels_find("cpu-generic"), NULL, 0), "generic runs everywhere");
}

Test(kernels, choose_refuses_unknown_and_unsupported_tables)
{
    sl_err err = {0};
    const sl_kernel_table *table = NULL;
    cr_expect_eq(sl_kernels_choose("cpu-sse", &table, &err), SL_ENOTFOUND);
    cr_expect_null(table);
    cr_expect(strstr(err.msg, "cpu-sse") && strstr(err.msg, "cpu-generic"), "names the request and the tables: %s",
              err.msg);
    for (int i = 0; i < sl_kernel_table_count(); i++) {
        const sl_kernel_table *t = sl_kernel_table_at(i);
        char reason[128] = "";
        if (sl_kernel_table_supported(t, reason, sizeof reason))
            continue;
        cr_expect_neq(reason[0], '\0', "%s is unsupported without a reason", t->name);
        cr_expect_eq(sl_kernels_choose(t->name, &table, &err), SL_EUNSUPPORTED);
        cr_expect(strstr(err.msg, reason) != NULL, "%s", err.msg);
    }
    cr_assert_eq(sl_kernels_choose("cpu-generic", &table, &err), SL_OK, "%s", err.msg);
    cr_expect_str_eq(table->name, "cpu-generic");
    cr_assert_eq(sl_kernels_choose(NULL, &table, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(table, sl_kernels_default(), "no name chooses the default");
    cr_assert_eq(sl_kernels_choose("", &table, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(table, sl_kernels_default(), "an empty name chooses the default");
}

/* The one feature probe decides every table's support: masking features
 * away makes the machine look like one without them. */
Test(kernels, a_masked_feature_rules_its_tables_out)
{
    unsigned features = sl_cpu_features();
    /* The 256-bit AVX-512 table sits below the 512-bit one: the flags alone
     * still choose cpu-avx512, and measuring is the tuner's business. */
    if (sl_kernel_table_supported(sl_kernel_table_at(SL_TABLE_AVX512), NULL, 0))
        cr_expect_eq(sl_kernels_default()->id, SL_TABLE_AVX512);
    sl_cpu_features_mask(~SL_CPU_AVX512);
    cr_expect_eq(sl_cpu_features(), features & ~SL_CPU_AVX512);
    cr_expect_lt(sl_kernels_default()->id, SL_TABLE_AVX512_256, "with AVX-512 masked the default is below it");
    char reason[128] = "";
    cr_expect_not(sl_kernel_table_supported(sl_kernel_table_at(SL_TABLE_AVX512), reason, sizeof reason));
    cr_expect_not(sl_kernel_table_supported(sl_kernel_table_at(SL_TABLE_AVX512_256), NULL, 0));
    cr_expect(strstr(reason, "AVX-512") != NULL, "%s", reason);
    sl_cpu_features_mask(0);
    cr_expect_eq(sl_cpu_features(), 0u);
    cr_expect_eq(sl_kernels_default()->id, SL_TABLE_GENERIC, "a CPU without AVX2 runs the generic table");
    const sl_kernel_table *table = NULL;
    sl_err err = {0};
    cr_expect_eq(sl_kernels_choose("cpu-avx2", &table, &err), SL_EUNSUPPORTED);
    sl_cpu_features_mask(~0u);
    cr_expect_eq(sl_cpu_features(), features, "the mask is undone");
}

Test(kernels, op_names_round_trip)
{
    for (int k = 0; k < SL_OP_KIND_COUNT; k++) {
        sl_op_kind parsed;
        cr_assert(sl_op_kind_parse(sl_op_kind_name((sl_op_kind)k), &parsed), "%s", sl_op_kind_name((sl_op_kind)k));
        cr_expect_eq((int)parsed, k);
    }
    sl_op_kind unused;
    cr_expect_not(sl_op_kind_parse("no_such_op", &unused));
    char names[128];
    sl_transform_set_format(SL_TRANSFORM(SL_OP_CLIP) | SL_TRANSFORM(SL_OP_PACK_TOKENS), names, sizeof names);
    cr_expect_str_eq(names, "pack_tokens,clip");
}

/* A resize plan for in -> out on both axes, with its storage. */
typedef struct test_plan {
    sl_resize_plan plan;
    void *storage;
    float *scratch;
} test_plan;

static void plan_make(test_plan *t, int in_h, int in_w, int out_h, int out_w, int channels)
{
    t->storage = aligned_alloc(64, (sl_resize_plan_bytes(out_h, out_w, channels) + 63) / 64 * 64);
    cr_assert_not_null(t->storage);
    sl_resize_plan_init(&t->plan, t->storage, in_h, in_w, out_h, out_w, channels);
    t->scratch = malloc(sl_resize_scratch_values(&t->plan) * sizeof(float));
}

static void plan_free(test_plan *t)
{
    free(t->storage);
    free(t->scratch);
}

Test(resize, resize_plan_samples_at_half_pixel_centres)
{
    /* For every output index the weight is the exact fraction of
     * (d + 1/2) in / out - 1/2 (clamped to [0, in - 1]), rounded once to
     * float: recomputed here in double, it must agree to float rounding. */
    const int sizes[][2] = {{128, 64}, {64, 128}, {128, 96}, {96, 160}, {7, 3}, {3, 7}, {1, 5}, {5, 1}, {1000, 999}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int in = sizes[s][0], out = sizes[s][1];
        test_plan t;
        plan_make(&t, in, in, out, out, 2);
        for (int d = 0; d < out; d++) {
            double pos = (d + 0.5) * in / out - 0.5;
            pos = pos < 0 ? 0 : (pos > in - 1 ? in - 1 : pos);
            int i0 = (int)floor(pos);
            cr_assert_eq(t.plan.x0[d], i0, "%d -> %d: index %d", in, out, d);
            cr_assert_eq(t.plan.x1[d], i0 + 1 < in ? i0 + 1 : i0);
            cr_assert_eq(t.plan.wx[d], (float)(pos - i0), "%d -> %d: weight %d is %.9g", in, out, d,
                         (double)t.plan.wx[d]);
            cr_assert_eq(t.plan.y0[d], t.plan.x0[d]);
            cr_assert_eq(t.plan.wy[d], t.plan.wx[d]);
            cr_assert_eq(t.plan.v1[2 * d + 1], t.plan.x1[d] * 2 + 1, "per-value offsets interleave the channels");
        }
        plan_free(&t);
    }
}

Test(resize, resize_matches_hand_values)
{
    /* 2x2 -> 4x4 samples at -1/4 (clamped to 0), 1/4, 3/4 and 5/4 (clamped
     * to 1) on each axis, so the row [0, 4] becomes [0, 1, 3, 4]. */
    const uint8_t src[4] = {0, 4, 8, 12};
    const float expected[16] = {0, 1, 3, 4, 2, 3, 5, 6, 6, 7, 9, 10, 8, 9, 11, 12};
    const sl_kernel_table *tables[2] = {sl_kernels_reference(), sl_test_kernels()};
    test_plan t;
    plan_make(&t, 2, 2, 4, 4, 1);
    for (int k = 0; k < 2; k++) {
        float out[16];
        tables[k]->resize_u8(src, 2, out, &t.plan, t.scratch);
        for (int i = 0; i < 16; i++)
            cr_expect_eq(out[i], expected[i], "%s: value %d is %g, not %g", tables[k]->name, i, (double)out[i],
                         (double)expected[i]);
    }
    plan_free(&t);
}

Test(resize, optimized_resize_is_bitwise_reference)
{
    /* Down, up, by odd ratios, to and from one pixel, with 1, 3 and 4
     * channels, from a window of a wider image (a stride beyond the row). */
    const int sizes[][4] = {{128, 128, 64, 64}, {64, 64, 128, 128}, {128, 128, 96, 96}, {96, 96, 160, 160},
                            {37, 53, 61, 19},   {1, 1, 5, 3},       {5, 3, 1, 1},       {64, 64, 64, 64}};
    const int channel_counts[] = {1, 3, 4};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t ci = 0; ci < 3; ci++) {
            int ih = sizes[s][0], iw = sizes[s][1], oh = sizes[s][2], ow = sizes[s][3], c = channel_counts[ci];
            int64_t stride = (int64_t)(iw + 5) * c, in_values = stride * ih, out_values = (int64_t)oh * ow * c;
            uint8_t *u8 = malloc((size_t)in_values);
            float *f = malloc((size_t)in_values * 4), *a = malloc((size_t)out_values * 4),
                  *b = malloc((size_t)out_values * 4);
            fill_random_u8(u8, in_values, (uint32_t)(s * 10 + ci));
            fill_random_f32(f, in_values, (uint32_t)(s * 10 + ci), -3.0f, 300.0f);
            test_plan t;
            plan_make(&t, ih, iw, oh, ow, c);
            sl_kernels_reference()->resize_u8(u8, stride, a, &t.plan, t.scratch);
            sl_test_kernels()->resize_u8(u8, stride, b, &t.plan, t.scratch);
            cr_assert(memcmp(a, b, (size_t)out_values * 4) == 0, "u8 resize %dx%d -> %dx%d, %d channels differs", ih,
                      iw, oh, ow, c);
            sl_kernels_reference()->resize_f32(f, stride, a, &t.plan, t.scratch);
            sl_test_kernels()->resize_f32(f, stride, b, &t.plan, t.scratch);
            cr_assert(memcmp(a, b, (size_t)out_values * 4) == 0, "f32 resize %dx%d -> %dx%d, %d channels differs", ih,
                      iw, oh, ow, c);
            plan_free(&t);
            free(u8);
            free(f);
            free(a);
            free(b);
        }
}
