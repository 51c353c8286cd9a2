/* CV-4, multi-resolution: the standard checks for every variant; then the
 * scenario's own op chain run on images made for the purpose: a constant
 * image stays exactly constant, a linear ramp comes out exactly as the
 * half-pixel-centre mapping says, and the fixture's images are within a
 * stated bound of a bilinear resize recomputed here in double precision from
 * its textbook definition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(cv4_half, "CV-4", "half")
SL_CORPUS_STANDARD_TESTS(cv4_scales, "CV-4", "scales")
SL_CORPUS_STANDARD_TESTS(cv4_odd, "CV-4", "odd")

enum { SIDE = 128, CHANNELS = 3, VALUES = SIDE * SIDE * CHANNELS };

/* The scenario's normalization, written down again: the property is stated
 * in terms of what the whole chain must produce. */
static const float mean[3] = {123.675f, 116.28f, 103.53f};
static const float stddev[3] = {58.395f, 57.12f, 57.375f};

/* What normalize makes of a value v of channel c: (v - mean) * (1 / std),
 * with 1 / std rounded to float once, as docs/design.md specifies. */
static float normalized(float v, int c)
{
    return (v - mean[c]) * (1.0f / stddev[c]);
}

/* Runs the scenario variant's own ops over n u8 images given here, through
 * the named adapter, and returns the output pixels (n x VALUES floats). */
static float *run_scenario_ops(const char *variant, const uint8_t *images, int64_t n, const char *adapter)
{
    sl_scenario_instance *instance = harness_build("CV-4", variant);
    sl_schema schema = {0};
    schema.nfields = 1;
    strcpy(schema.fields[0].name, "image");
    schema.fields[0].dtype = SL_U8;
    schema.fields[0].shape = (sl_shape){.rank = 3, .dims = {SIDE, SIDE, CHANNELS}};
    void *data[1] = {(void *)images};
    sl_source *source;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, n, data, SL_BORROW, &source, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec = instance->spec;
    spec.source = source;
    spec.shuffle = false;
    spec.batch_size = n;
    sl_scenario_instance probe = *instance;
    cr_assert_eq(sl_pipeline_create(&spec, &probe.pipeline, &err), SL_OK, "%s", err.msg);
    run_output out;
    harness_run(&probe, adapter, 0, 0, (sl_position){0, 0}, 1, &out);
    cr_assert_eq(out.rows, n);
    float *pixels = malloc(out.size[0]);
    memcpy(pixels, out.bytes[0], out.size[0]);
    harness_release(&out);
    sl_pipeline_free(probe.pipeline);
    sl_source_free(source);
    sl_scenario_instance_free(instance);
    return pixels;
}

static const char *const adapters[] = {"reference", "iter", "fused"};
static const char *const variant_names[] = {"half", "scales"};

Test(cv4, a_constant_image_stays_exactly_constant)
{
    /* Constant images of several levels, channel by channel, including both
     * ends of the u8 range. Every lerp is then p + w * (p - p) = p exactly,
     * whatever the weights, so no rounding is allowed anywhere. */
    enum { N = 4 };
    static const uint8_t levels[N][CHANNELS] = {{0, 0, 0}, {255, 255, 255}, {17, 128, 254}, {200, 3, 99}};
    uint8_t *images = malloc((size_t)N * VALUES);
    for (int i = 0; i < N; i++)
        for (int p = 0; p < SIDE * SIDE; p++)
            for (int c = 0; c < CHANNELS; c++)
                images[(size_t)i * VALUES + (size_t)p * CHANNELS + (size_t)c] = levels[i][c];
    for (size_t v = 0; v < 2; v++)
        for (size_t a = 0; a < 3; a++) {
            float *out = run_scenario_ops(variant_names[v], images, N, adapters[a]);
            for (int i = 0; i < N; i++)
                for (int p = 0; p < SIDE * SIDE; p++)
                    for (int c = 0; c < CHANNELS; c++) {
                        float got = out[(size_t)i * VALUES + (size_t)p * CHANNELS + (size_t)c];
                        float want = normalized((float)levels[i][c], c);
                        cr_assert_eq(got, want, "%s/%s: image %d pixel %d channel %d is %.9g, not %.9g",
                                     variant_names[v], adapters[a], i, p, c, (double)got, (double)want);
                    }
            free(out);
        }
    free(images);
}

/* A linear ramp per channel, with integer slopes, within 0..255. */
static double ramp(double x, double y, int c)
{
    switch (c) {
    case 0: return x + y;
    case 1: return 127.0 + x - y;
    default: return 2.0 * x;
    }
}

/* Where output index d of a resize from `in` to `out` samples its input,
 * with half-pixel centres and clamping to the edge pixels. */
static double source_position(int d, int in, int out)
{
    double s = (d + 0.5) * in / out - 0.5;
    return s < 0.0 ? 0.0 : (s > in - 1 ? in - 1 : s);
}

Test(cv4, a_linear_ramp_is_reproduced_exactly)
{
    /* Bilinear interpolation reproduces a linear function exactly in exact
     * arithmetic, and in the `half` variant it does so in float too:
     * 128 -> 64 samples at s = 2d + 1/2 (weights 1/2), 64 -> 128 at
     * s = d/2 - 1/4 clamped to [0, 63] (weights 1/4 or 3/4, or 0 at the
     * clamped edges). With integer slopes every difference p1 - p0 is a
     * small integer or half-integer, every weight a power-of-two fraction,
     * and every intermediate value a multiple of 1/8 below 2^9: each product
     * and sum has at most 12 significant bits, far inside float's 24, so no
     * operation rounds. The expected output is the ramp at the composite
     * source position, an independent statement of the geometry. (The
     * `scales` variant's weights are multiples of 1/6, 1/10 ... which float
     * cannot hold, so its ramp is held to the double-precision bound below.) */
    enum { N = 1 };
    uint8_t *images = malloc(VALUES);
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            for (int c = 0; c < CHANNELS; c++)
                images[((size_t)y * SIDE + (size_t)x) * CHANNELS + (size_t)c] = (uint8_t)ramp(x, y, c);
    for (size_t a = 0; a < 3; a++) {
        float *out = run_scenario_ops("half", images, N, adapters[a]);
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                /* Output (x, y) reads the 64-wide image at t, which reads the
                 * input at 2t + 1/2 (never clamped: 2t + 1/2 <= 126.5). */
                double sy = 2.0 * source_position(y, 64, SIDE) + 0.5;
                double sx = 2.0 * source_position(x, 64, SIDE) + 0.5;
                for (int c = 0; c < CHANNELS; c++) {
                    float want = normalized((float)ramp(sx, sy, c), c);
                    float got = out[((size_t)y * SIDE + (size_t)x) * CHANNELS + (size_t)c];
                    cr_assert_eq(got, want, "%s: pixel (%d, %d) channel %d is %.9g, not %.9g", adapters[a], x, y, c,
                                 (double)got, (double)want);
                }
            }
        free(out);
    }
    free(images);
}

/* One bilinear resize in double, written from its textbook definition:
 * the four neighbours weighted by (1 - fx)(1 - fy), fx (1 - fy), ... */
static void resize_double(const double *in, int in_side, double *out, int out_side)
{
    for (int oy = 0; oy < out_side; oy++) {
        double sy = source_position(oy, in_side, out_side);
        int y0 = (int)floor(sy), y1 = y0 + 1 < in_side ? y0 + 1 : y0;
        double fy = sy - y0;
        for (int ox = 0; ox < out_side; ox++) {
            double sx = source_position(ox, in_side, out_side);
            int x0 = (int)floor(sx), x1 = x0 + 1 < in_side ? x0 + 1 : x0;
            double fx = sx - x0;
            for (int c = 0; c < CHANNELS; c++) {
#define AT(y, x) in[((size_t)(y) * (size_t)in_side + (size_t)(x)) * CHANNELS + (size_t)c]
                out[((size_t)oy * (size_t)out_side + (size_t)ox) * CHANNELS + (size_t)c] =
                    (1 - fx) * (1 - fy) * AT(y0, x0) + fx * (1 - fy) * AT(y0, x1) + (1 - fx) * fy * AT(y1, x0) +
                    fx * fy * AT(y1, x1);
#undef AT
            }
        }
    }
}

/* The bound of docs/determinism.md: each resize stage adds at most 2^-13 in
 * u8 units (values below 256, three lerps of three roundings each, and the
 * weights' own rounding; lerps are convex, so earlier errors do not grow),
 * normalize divides that by std and adds at most three roundings of its own
 * result (|x| < 3, so under 2^-20). For values below 1 (the f32 variant)
 * the resize's share shrinks by 256 with them. */
static double stated_bound(int stages, double range, double least_std)
{
    return stages * ldexp(1.0, -13) * (range / 256.0) / least_std + ldexp(1.0, -20);
}

/* A variant's chain: its input (u8 below 256, or f32 in [0, 1)), the sides
 * it resizes through and its normalization. */
typedef struct chain {
    const char *variant;
    bool f32;
    int nsides;
    int sides[4];
    const float *mean, *stddev;
} chain;

static const float unit_mean[3] = {0.485f, 0.456f, 0.406f};
static const float unit_std[3] = {0.229f, 0.224f, 0.225f};

static void check_against_double(const chain *ch)
{
    sl_scenario_instance *instance = harness_build("CV-4", ch->variant);
    run_output out;
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out);
    double *a = malloc(sizeof(double) * 160 * 160 * CHANNELS), *b = malloc(sizeof(double) * 160 * 160 * CHANNELS);
    double worst = 0.0;
    int out_side = ch->sides[ch->nsides - 1];
    int out_values = out_side * out_side * CHANNELS;
    size_t in_bytes = ch->f32 ? VALUES * sizeof(float) : VALUES;
    for (int64_t r = 0; r < out.rows; r++) {
        const void *image = sl_source_map(instance->fixture, 0, (size_t)out.ids[r] * in_bytes, in_bytes);
        cr_assert_not_null(image);
        for (int i = 0; i < VALUES; i++)
            a[i] = ch->f32 ? (double)((const float *)image)[i] : (double)((const uint8_t *)image)[i];
        int side = SIDE;
        for (int s = 0; s < ch->nsides; s++) {
            resize_double(a, side, b, ch->sides[s]);
            double *t = a;
            a = b;
            b = t;
            side = ch->sides[s];
        }
        const float *got = harness_row(&out, 0, r);
        for (int i = 0; i < out_values; i++) {
            int c = i % CHANNELS;
            double want = (a[i] - ch->mean[c]) / ch->stddev[c];
            double diff = fabs((double)got[i] - want);
            worst = diff > worst ? diff : worst;
        }
    }
    double bound = stated_bound(ch->nsides, ch->f32 ? 1.0 : 256.0, ch->f32 ? 0.224 : 57.12);
    const char *variant = ch->variant;
    cr_expect_leq(worst, bound, "%s: largest difference from the double-precision bilinear is %.3g, bound %.3g",
                  variant, worst, bound);
    /* A guard that the comparison can fail: the chain does change values
     * (a resize through other sizes is not the identity). */
    cr_expect_gt(worst, 0.0, "%s: the output equals the double recomputation to the last bit everywhere", variant);
    free(a);
    free(b);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(cv4, half_matches_a_double_precision_bilinear)
{
    static const chain ch = {"half", false, 2, {64, 128}, mean, stddev};
    check_against_double(&ch);
}

Test(cv4, scales_match_a_double_precision_bilinear)
{
    static const chain ch = {"scales", false, 4, {96, 160, 112, 128}, mean, stddev};
    check_against_double(&ch);
}

/* Full-precision f32 values and sides that are no power of two: a weight
 * that is wrong, or a lane that is, has no grid to hide in here. */
Test(cv4, odd_sides_from_f32_match_a_double_precision_bilinear)
{
    static const chain ch = {"odd", true, 2, {77, 45}, unit_mean, unit_std};
    check_against_double(&ch);
}
