/* The CUDA kernels' per-thread code, run on the CPU.
 *
 * Each __global__ kernel of kernels/cuda is a grid-stride loop around one
 * sl__at_* function (kernels/include/kernels/at.h), built from the bodies of
 * kernels/include/kernels/bodies.h. Here every such function runs over every index on
 * the CPU and its output is compared bit for bit with the reference kernels,
 * and with the best CPU table where that has its own (vectorized)
 * implementation, over inputs that include NaN, infinities, signed zeros,
 * denormals and the extremes of float. So the GPU's arithmetic and index
 * mappings are checked on every machine, with or without a GPU; what this
 * cannot check is nvcc's code generation itself (docs/determinism.md). A few
 * expectations are worked by hand, so that a body and the reference cannot
 * agree on a wrong answer. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/at.h"
#include "kernels_under_test.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/op_consts.h"

/* Floats chosen to break arithmetic: NaNs of both signs, infinities, signed
 * zeros, the smallest and largest denormals, the smallest normal, the
 * largest float, values around 1 and 255, and a few ordinary ones. */
static const uint32_t special_bits[] = {
    0x00000000u, 0x80000000u, 0x7fc00000u, 0xffc00000u, 0x7fa00001u, 0x7f800000u, 0xff800000u, 0x00000001u, 0x80000001u,
    0x007fffffu, 0x807fffffu, 0x00800000u, 0x80800000u, 0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u, 0x3f7fffffu,
    0x3f800001u, 0x437f0000u, 0x3effffffu, 0x40490fdbu, 0xc2c80000u, 0x7149f2cau, 0x0da24260u, 0xbf7ffffeu, 0xbf000000u,
};
#define NSPECIAL ((int64_t)(sizeof special_bits / sizeof special_bits[0]))
/* Values tested per op: the special ones, then keyed random bit patterns
 * (every exponent, NaNs included) and keyed random ordinary values. */
#define NVALUES  4099

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void fill_awkward_f32(float *x, int64_t n, uint32_t seed)
{
    sl_philox_key key = sl_philox_key_for(seed, 77);
    for (int64_t i = 0; i < n; i++) {
        sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key);
        if (i < NSPECIAL)
            x[i] = bits_f32(special_bits[i]);
        else if (i % 2)
            x[i] = bits_f32(r.v[0]);
        else
            x[i] = -300.0f + 600.0f * sl_u32_to_unit_float(r.v[1]);
    }
}

static void fill_bytes(uint8_t *x, int64_t n, uint32_t seed)
{
    sl_philox_key key = sl_philox_key_for(seed, 78);
    for (int64_t i = 0; i < n; i++)
        x[i] = (uint8_t)sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key).v[0];
}

/* memcmp, but saying where: the first differing value and both bit
 * patterns. */
static void expect_same_f32(const float *want, const float *got, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &want[i], 4);
        memcpy(&b, &got[i], 4);
        cr_assert_eq(a, b, "%s: value %lld is %08x (%g) on the device path, %08x (%g) in the reference", what,
                     (long long)i, b, (double)got[i], a, (double)want[i]);
    }
}

static void expect_same_bytes(const void *want, const void *got, size_t n, const char *what)
{
    const uint8_t *a = want, *b = got;
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(a[i], b[i], "%s: byte %zu is %u on the device path, %u in the reference", what, i, b[i], a[i]);
}

Test(cuda_bodies, hand_worked_values)
{
    /* (200 - 100) * 0.5, 3 * 1.5 + 1 and a blend of 2 and 4 by 1/4, 3/4:
     * exact in float. */
    cr_expect_eq(sl__body_normalize(200.0f, 100.0f, 0.5f), 50.0f);
    cr_expect_eq(sl__body_affine(3.0f, 1.5f, 1.0f), 5.5f);
    cr_expect_eq(sl__body_blend(2.0f, 4.0f, 0.25f, 0.75f), 3.5f);
    /* clip passes a NaN through (both comparisons fail) and clamps
     * infinities. */
    cr_expect(isnan(sl__body_clip(NAN, 0.0f, 1.0f)));
    cr_expect_eq(sl__body_clip(INFINITY, 0.0f, 1.0f), 1.0f);
    cr_expect_eq(sl__body_clip(-INFINITY, 0.0f, 1.0f), 0.0f);
    /* A multiply-add contracted into an FMA would round once: with
     * a = 1 + 2^-12, a * a - (1 + 2^-11) is 2^-24 exactly, but the product
     * rounded first gives 1 + 2^-11 and so 0. The affine body must give 0. */
    float a = 1.0f + 0x1p-12f;
    cr_expect_eq(sl__body_affine(a, a, -(1.0f + 0x1p-11f)), 0.0f, "affine was contracted into a fused multiply-add");
    /* Dropout: a word below the threshold drops, one at it keeps. */
    cr_expect_eq(sl__body_dropout(3.0f, 9u, 10u, 2.0f), 0.0f);
    cr_expect_eq(sl__body_dropout(3.0f, 10u, 10u, 2.0f), 6.0f);
    /* A 3 x 4 image, crop 1 x 2 at (2, 1): centred at row 1, columns 1..2. */
    cr_expect_eq(sl__body_crop_pad_src(1, 1, 3, 4, 1, 2, 2, 1), 2 * 4 + 1);
    cr_expect_eq(sl__body_crop_pad_src(1, 2, 3, 4, 1, 2, 2, 1), 2 * 4 + 2);
    cr_expect_eq(sl__body_crop_pad_src(0, 1, 3, 4, 1, 2, 2, 1), -1);
    cr_expect_eq(sl__body_crop_pad_src(1, 3, 3, 4, 1, 2, 2, 1), -1);
    /* One quarter turn of a 3 x 3 image: output (0, 0) is source (0, 2). */
    cr_expect_eq(sl__body_rot90_src(0, 0, 3, 1), 2);
    cr_expect_eq(sl__body_rot90_src(2, 1, 3, 2), 0 * 3 + 1);
    cr_expect_eq(sl__body_clamped_length(-5, 8), 0);
    cr_expect_eq(sl__body_clamped_length(9, 8), 8);
    cr_expect_eq(sl__body_hash_id(-3, 10), SL_ID_MISSING);
    cr_expect_eq(sl__log1p_f32(0.0f), 0.0f);
    cr_expect(signbit(sl__log1p_f32(-0.0f)));
    cr_expect_eq(sl__log1p_f32(-1.0f), -INFINITY);
    cr_expect(isnan(sl__log1p_f32(-2.0f)));
}

Test(cuda_bodies, normalize_affine_and_mul_channels_match_the_kernels)
{
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    const int channel_counts[] = {1, 3, 4, 7};
    float *src = malloc(NVALUES * 4), *want = malloc(NVALUES * 4), *got = malloc(NVALUES * 4);
    uint8_t *u8 = malloc(NVALUES);
    fill_awkward_f32(src, NVALUES, 1);
    fill_bytes(u8, NVALUES, 2);
    for (size_t ci = 0; ci < sizeof channel_counts / sizeof channel_counts[0]; ci++) {
        int c = channel_counts[ci];
        int64_t pixels = NVALUES / c, n = pixels * c;
        /* Constants include a denormal mean and a huge inverse std, so
         * overflow and underflow both happen. */
        float mean[7] = {0.0f, 128.0f, 1e-40f, -3.5f, 255.0f, 1e30f, -0.0f};
        float sd[7] = {1.0f, 0.25f, 1e-30f, 3.0f, 1e30f, 7.0f, 0.1f};
        sl_normalize_consts nk;
        sl_affine_consts ak;
        sl_err err = {0};
        cr_assert_eq(sl_normalize_consts_init(&nk, c, mean, sd, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_affine_consts_init(&ak, c, sd, mean, &err), SL_OK, "%s", err.msg);

        ref->normalize_u8(u8, want, pixels, &nk);
        for (int64_t i = 0; i < n; i++)
            sl__at_normalize_u8(u8, got, i, c, nk.mean, nk.inv_std);
        expect_same_f32(want, got, n, "normalize u8 against the reference");
        best->normalize_u8(u8, want, pixels, &nk);
        expect_same_f32(want, got, n, "normalize u8 against the best CPU table");

        ref->normalize_f32(src, want, pixels, &nk);
        for (int64_t i = 0; i < n; i++)
            sl__at_normalize_f32(src, got, i, c, nk.mean, nk.inv_std);
        expect_same_f32(want, got, n, "normalize f32 against the reference");
        best->normalize_f32(src, want, pixels, &nk);
        expect_same_f32(want, got, n, "normalize f32 against the best CPU table");

        ref->affine_f32(src, want, pixels, &ak);
        for (int64_t i = 0; i < n; i++)
            sl__at_affine(src, got, i, c, ak.scale, ak.bias);
        expect_same_f32(want, got, n, "affine against the reference");
        best->affine_f32(src, want, pixels, &ak);
        expect_same_f32(want, got, n, "affine against the best CPU table");

        ref->mul_channels(src, want, pixels, c, sd);
        for (int64_t i = 0; i < n; i++)
            sl__at_mul_channels(src, got, i, c, sd);
        expect_same_f32(want, got, n, "mul_channels against the reference");
        sl_normalize_consts_release(&nk);
        sl_affine_consts_release(&ak);
    }
    free(src);
    free(want);
    free(got);
    free(u8);
}

Test(cuda_bodies, a_fused_chain_per_value_matches_the_chain_step_by_step)
{
    /* Scale by a huge factor (overflow to inf), clip with NaN passing
     * through, add a denormal, multiply by -0. */
    const sl_ew_step chains[][5] = {
        {{.kind = SL_EW_NORMALIZE, .a = 0.5f, .b = 4.0f},
         {.kind = SL_EW_MULTIPLY, .a = 2.0f},
         {.kind = SL_EW_CLIP, .a = 0.0f, .b = 1.0f},
         {.kind = SL_EW_ADD, .a = 0.1f},
         {.kind = SL_EW_MULTIPLY, .a = 0.9f}},
        {{.kind = SL_EW_MULTIPLY, .a = 1e30f},
         {.kind = SL_EW_CLIP, .a = -1e38f, .b = 3e38f},
         {.kind = SL_EW_ADD, .a = 1e-45f},
         {.kind = SL_EW_MULTIPLY, .a = -0.0f},
         {.kind = SL_EW_ADD, .a = -0.0f}},
    };
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    float *x = malloc(NVALUES * 4), *want = malloc(NVALUES * 4), *got = malloc(NVALUES * 4);
    fill_awkward_f32(x, NVALUES, 3);
    for (size_t k = 0; k < sizeof chains / sizeof chains[0]; k++) {
        memcpy(want, x, NVALUES * 4);
        memcpy(got, x, NVALUES * 4);
        ref->ew_chain(want, NVALUES, chains[k], 5);
        for (int64_t i = 0; i < NVALUES; i++)
            sl__at_ew_chain(got, i, chains[k], 5);
        expect_same_f32(want, got, NVALUES, "element-wise chain against the reference");
        memcpy(want, x, NVALUES * 4);
        best->ew_chain(want, NVALUES, chains[k], 5);
        expect_same_f32(want, got, NVALUES, "element-wise chain against the best CPU table");

        /* A u8 normalize fused with the chain, against the two in turn. */
        uint8_t u8[NVALUES];
        for (int64_t i = 0; i < NVALUES; i++)
            u8[i] = (uint8_t)(i * 151 + k);
        const float mean[3] = {123.675f, 116.28f, 103.53f}, sd[3] = {58.395f, 57.12f, 57.375f};
        sl_normalize_consts nk;
        sl_err err = {0};
        cr_assert_eq(sl_normalize_consts_init(&nk, 3, mean, sd, &err), SL_OK, "%s", err.msg);
        int64_t n = NVALUES / 3 * 3;
        ref->normalize_u8(u8, want, n / 3, &nk);
        ref->ew_chain(want, n, chains[k], 5);
        for (int64_t i = 0; i < n; i++)
            sl__at_normalize_u8_chain(u8, got, i, 3, nk.mean, nk.inv_std, chains[k], 5);
        expect_same_f32(want, got, n, "normalize u8 fused with a chain against the reference");
        sl_normalize_consts_release(&nk);
    }
    free(x);
    free(want);
    free(got);
}

Test(cuda_bodies, gaussian_noise_per_value_matches_the_chain_per_element)
{
    /* Two noise steps of different keys and element counters around
     * ordinary steps, over one element of a length that ends mid-group, so
     * the last group of 64 values is partial. */
    sl_ew_step steps[5] = {
        {.kind = SL_EW_NORMALIZE, .a = 0.25f, .b = 2.0f},
        {.kind = SL_EW_GAUSSIAN_NOISE, .a = 0.3f},
        {.kind = SL_EW_ADD, .a = -1.5f},
        {.kind = SL_EW_GAUSSIAN_NOISE, .a = 1e-3f},
        {.kind = SL_EW_CLIP, .a = -2.0f, .b = 2.0f},
    };
    steps[1].key = sl_philox_key_for(42, 11);
    steps[1].ctr = sl_philox_ctr_for(0x123456789ull, 2, 0);
    steps[3].key = sl_philox_key_for(42, 12);
    steps[3].ctr = sl_philox_ctr_for(7, 0, 5);
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    enum { N = 64 * 20 + 37 };
    float x[N], want[N], got[N];
    fill_awkward_f32(x, N, 9);
    memcpy(want, x, sizeof x);
    memcpy(got, x, sizeof x);
    ref->ew_chain(want, N, steps, 5);
    for (int64_t i = 0; i < N; i++)
        sl__at_ew_chain(got, i, steps, 5);
    expect_same_f32(want, got, N, "a chain with gaussian_noise against the reference");
    memcpy(want, x, sizeof x);
    best->ew_chain(want, N, steps, 5);
    expect_same_f32(want, got, N, "a chain with gaussian_noise against the best CPU table");
}

Test(cuda_bodies, blend_dropout_and_log1p_match_the_kernels)
{
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    float *a = malloc(NVALUES * 4), *b = malloc(NVALUES * 4), *want = malloc(NVALUES * 4), *got = malloc(NVALUES * 4);
    fill_awkward_f32(a, NVALUES, 4);
    fill_awkward_f32(b, NVALUES, 5);
    /* b's specials are a's, rotated, so NaN meets inf and so on. */
    for (int64_t i = 0; i < NSPECIAL; i++)
        b[i] = bits_f32(special_bits[(i + 5) % NSPECIAL]);

    ref->blend(want, a, b, NVALUES, 0.3f, 0.7f);
    for (int64_t i = 0; i < NVALUES; i++)
        sl__at_blend(got, a, b, i, 0.3f, 0.7f);
    expect_same_f32(want, got, NVALUES, "blend against the reference");
    best->blend(want, a, b, NVALUES, 0.3f, 0.7f);
    expect_same_f32(want, got, NVALUES, "blend against the best CPU table");

    /* p = 0.3: threshold ceil(0.3 2^32), scale 1 / 0.7. An element index
     * above 2^32 checks both counter words. */
    sl_dropout_key d = {sl_philox_key_for(42, 7), 0x100000005ull, 3, 1288490189u, 1.0f / 0.7f};
    ref->dropout(a, want, NVALUES, &d);
    for (int64_t i = 0; i < NVALUES; i++)
        sl__at_dropout(a, got, i, &d);
    expect_same_f32(want, got, NVALUES, "dropout against the reference");
    best->dropout(a, want, NVALUES, &d);
    expect_same_f32(want, got, NVALUES, "dropout against the best CPU table");

    ref->log1p(a, want, NVALUES);
    for (int64_t i = 0; i < NVALUES; i++)
        sl__at_log1p(a, got, i);
    expect_same_f32(want, got, NVALUES, "log1p against the reference");
    best->log1p(a, want, NVALUES);
    expect_same_f32(want, got, NVALUES, "log1p against the best CPU table");
    free(a);
    free(b);
    free(want);
    free(got);
}

Test(cuda_bodies, integer_ops_match_the_kernels)
{
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    enum { ROWS = 97, COLS = 3, CLASSES = 10, WIDTH = 13, STRIDE = 17 };
    /* hash_ids: negative ids (missing), the extremes of int64 and sizes of 1
     * and 2^31. */
    int64_t ids[ROWS * COLS], want_ids[ROWS * COLS], got_ids[ROWS * COLS];
    sl_philox_key key = sl_philox_key_for(9, 9);
    for (int i = 0; i < ROWS * COLS; i++) {
        sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)i, 0, 0), key);
        ids[i] = (int64_t)(((uint64_t)r.v[0] << 32) | r.v[1]);
    }
    ids[0] = INT64_MAX;
    ids[1] = INT64_MIN;
    ids[2] = 0;
    const int64_t sizes[COLS] = {1, 1000, (int64_t)1 << 31};
    sl_hash_consts hk;
    sl_err err = {0};
    cr_assert_eq(sl_hash_consts_init(&hk, COLS, sizes, &err), SL_OK, "%s", err.msg);
    ref->hash_ids(ids, want_ids, ROWS, &hk);
    for (int64_t i = 0; i < ROWS * COLS; i++)
        sl__at_hash_id(ids, got_ids, i, COLS, hk.size);
    expect_same_bytes(want_ids, got_ids, sizeof want_ids, "hash_ids against the reference");
    best->hash_ids(ids, want_ids, ROWS, &hk);
    expect_same_bytes(want_ids, got_ids, sizeof want_ids, "hash_ids against the best CPU table");

    /* one_hot: labels in range, negative and past the classes. */
    int32_t labels[ROWS];
    for (int i = 0; i < ROWS; i++)
        labels[i] = i % 14 - 2;
    float want_oh[ROWS * CLASSES], got_oh[ROWS * CLASSES];
    ref->one_hot(labels, want_oh, ROWS, CLASSES);
    for (int64_t i = 0; i < ROWS * CLASSES; i++)
        sl__at_one_hot(labels, got_oh, i, CLASSES);
    expect_same_f32(want_oh, got_oh, ROWS * CLASSES, "one_hot against the reference");

    /* pack: a stream shorter than the sequence, and none at all. */
    int32_t stream[40], want_seq[64], got_seq[64];
    for (int i = 0; i < 40; i++)
        stream[i] = 1000 + i;
    const int64_t availables[] = {40, 0};
    for (int k = 0; k < 2; k++) {
        ref->pack(want_seq, stream, availables[k], 64, -7);
        for (int64_t i = 0; i < 64; i++)
            sl__at_pack(got_seq, stream, availables[k], i, -7);
        expect_same_bytes(want_seq, got_seq, sizeof want_seq, "pack against the reference");
    }

    /* pad_rows (in place in the reference, gathered on the device) and the
     * attention mask, with lengths below 0, 0, inside and past the width. */
    int32_t lengths[ROWS], tokens[ROWS * STRIDE], moved[ROWS * STRIDE], got_tok[ROWS * WIDTH];
    for (int i = 0; i < ROWS; i++)
        lengths[i] = i % 21 - 2;
    for (int i = 0; i < ROWS * STRIDE; i++)
        tokens[i] = i + 1;
    memcpy(moved, tokens, sizeof tokens);
    ref->pad_rows(moved, lengths, ROWS, STRIDE, WIDTH, 0);
    for (int64_t i = 0; i < ROWS * WIDTH; i++)
        sl__at_pad_rows(got_tok, tokens, lengths, i, STRIDE, WIDTH, 0);
    expect_same_bytes(moved, got_tok, sizeof got_tok, "pad_rows against the reference");
    uint8_t want_mask[ROWS * WIDTH], got_mask[ROWS * WIDTH];
    ref->length_mask(want_mask, lengths, ROWS, WIDTH);
    for (int64_t i = 0; i < ROWS * WIDTH; i++)
        sl__at_length_mask(got_mask, lengths, i, WIDTH);
    expect_same_bytes(want_mask, got_mask, sizeof want_mask, "attention mask against the reference");
}

Test(cuda_bodies, data_movement_matches_the_kernels)
{
    const sl_kernel_table *ref = sl_kernels_reference();
    /* Odd sides and pixel sizes of 1, 3 and 4 bytes, so a mirrored column
     * can be the middle one and bytes of a pixel stay together. */
    const size_t pixel_sizes[] = {1, 3, 4};
    enum { H = 9, W = 11, D = 5 };
    uint8_t src[D * H * W * 4], want[D * H * W * 4], got[D * H * W * 4];
    fill_bytes(src, sizeof src, 6);
    for (size_t pi = 0; pi < 3; pi++) {
        size_t pb = pixel_sizes[pi];
        int64_t bytes = (int64_t)H * W * (int64_t)pb;

        const int crops[][4] = {{5, 7, 0, 0}, {5, 7, 4, 4}, {9, 11, 0, 0}, {1, 1, 8, 10}, {4, 6, 3, 2}};
        for (int c = 0; c < 5; c++) {
            memset(want, 0xAA, sizeof want);
            ref->crop_pad(src, want, H, W, pb, crops[c][0], crops[c][1], crops[c][2], crops[c][3]);
            for (int64_t i = 0; i < bytes; i++)
                sl__at_crop_pad(src, got, i, H, W, pb, crops[c][0], crops[c][1], crops[c][2], crops[c][3]);
            expect_same_bytes(want, got, (size_t)bytes, "crop_pad against the reference");
        }

        memcpy(want, src, (size_t)bytes);
        ref->hflip(want, H, W, pb);
        for (int64_t i = 0; i < bytes; i++)
            sl__at_hflip(src, got, i, W, pb);
        expect_same_bytes(want, got, (size_t)bytes, "hflip against the reference");

        for (int k = 0; k < 4; k++) {
            int64_t sq = (int64_t)H * H * (int64_t)pb;
            ref->rot90(src, want, H, pb, k);
            for (int64_t i = 0; i < sq; i++)
                sl__at_rot90(src, got, i, H, pb, k);
            expect_same_bytes(want, got, (size_t)sq, "rot90 against the reference");
        }

        int64_t vbytes = (int64_t)D * H * W * (int64_t)pb;
        for (unsigned axes = 0; axes < 8; axes++) {
            memcpy(want, src, (size_t)vbytes);
            ref->flip3d(want, D, H, W, pb, axes);
            for (int64_t i = 0; i < vbytes; i++)
                sl__at_flip3d(src, got, i, D, H, W, pb, axes);
            expect_same_bytes(want, got, (size_t)vbytes, "flip3d against the reference");
        }
        const int patch[] = {3, 4, 6}, offset[] = {2, 5, 5};
        int64_t pbytes = (int64_t)patch[0] * patch[1] * patch[2] * (int64_t)pb;
        ref->crop3d(src, want, D, H, W, pb, patch[0], patch[1], patch[2], offset[0], offset[1], offset[2]);
        for (int64_t i = 0; i < pbytes; i++)
            sl__at_crop3d(src, got, i, H, W, pb, patch[1], patch[2], offset[0], offset[1], offset[2]);
        expect_same_bytes(want, got, (size_t)pbytes, "crop3d against the reference");
    }
}

Test(cuda_bodies, bilinear_resize_matches_the_kernels)
{
    const sl_kernel_table *ref = sl_kernels_reference(), *best = sl_test_kernels();
    /* Down and up, with three channels; the f32 source holds the awkward
     * values, so NaN and inf spread the way the reference spreads them. */
    const int shapes[][4] = {{17, 23, 7, 5}, {5, 7, 16, 19}};
    for (int s = 0; s < 2; s++) {
        int in_h = shapes[s][0], in_w = shapes[s][1], out_h = shapes[s][2], out_w = shapes[s][3], c = 3;
        int64_t n_in = (int64_t)in_h * in_w * c, n_out = (int64_t)out_h * out_w * c;
        sl_resize_plan plan;
        void *storage = aligned_alloc(64, (sl_resize_plan_bytes(out_h, out_w, c) + 63) / 64 * 64);
        sl_resize_plan_init(&plan, storage, in_h, in_w, out_h, out_w, c);
        float *scratch = malloc(sl_resize_scratch_values(&plan) * 4 + 4);
        uint8_t *u8 = malloc((size_t)n_in);
        float *f = malloc((size_t)n_in * 4), *want = malloc((size_t)n_out * 4), *got = malloc((size_t)n_out * 4);
        fill_bytes(u8, n_in, 7);
        fill_awkward_f32(f, n_in, 8);

        ref->resize_u8(u8, (int64_t)in_w * c, want, &plan, scratch);
        for (int64_t i = 0; i < n_out; i++)
            sl__at_resize_u8(u8, (int64_t)in_w * c, got, i, out_w, c, plan.y0, plan.y1, plan.wy, plan.x0, plan.x1,
                             plan.wx);
        expect_same_f32(want, got, n_out, "resize u8 against the reference");
        best->resize_u8(u8, (int64_t)in_w * c, want, &plan, scratch);
        expect_same_f32(want, got, n_out, "resize u8 against the best CPU table");

        ref->resize_f32(f, (int64_t)in_w * c, want, &plan, scratch);
        for (int64_t i = 0; i < n_out; i++)
            sl__at_resize_f32(f, (int64_t)in_w * c, got, i, out_w, c, plan.y0, plan.y1, plan.wy, plan.x0, plan.x1,
                              plan.wx);
        expect_same_f32(want, got, n_out, "resize f32 against the reference");
        free(storage);
        free(scratch);
        free(u8);
        free(f);
        free(want);
        free(got);
    }
}
