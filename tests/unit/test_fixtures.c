/* Seeded fixtures: documented schemas and sizes, determinism, independence
 * of elements (a shorter fixture is a prefix of a longer one), value ranges,
 * and distributions within stated statistical bounds. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/bench/scenario.h"
#include "sluice/core/digest.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/records/golden.h"
#include "support.h"

static sl_source *build(const sl_fixture_spec *spec, uint64_t seed)
{
    sl_source *src = NULL;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(spec, seed, &src, &err), SL_OK, "%s", err.msg);
    cr_assert_not_null(src);
    return src;
}

static const void *field(const sl_source *src, int f)
{
    const void *p = sl_source_map(src, f, 0, sl_source_field_bytes(src, f));
    cr_assert_not_null(p, "a fixture is a memory source, so its bytes can be mapped");
    return p;
}

/* Specs with item sizes that are not multiples of a Philox block (16 bytes,
 * or 4 floats), so partial blocks are exercised. */
static const sl_fixture_spec images_spec = {.kind = SL_FIXTURE_IMAGES, .n = 40, .h = 5, .w = 3, .c = 3, .classes = 7};
static const sl_fixture_spec tokens_spec = {.kind = SL_FIXTURE_TOKENS, .n = 1001, .vocab = 50, .mean_doc_len = 8};
static const sl_fixture_spec tabular_spec = {.kind = SL_FIXTURE_TABULAR, .n = 40, .features = 5};
static const sl_fixture_spec floats_spec = {.kind = SL_FIXTURE_FLOATS, .n = 40, .h = 3, .w = 3, .c = 1};
static const sl_fixture_spec volumes_spec = {.kind = SL_FIXTURE_VOLUMES, .n = 12, .d = 3, .h = 5, .w = 7};

static const sl_fixture_spec sparse_spec = {.kind = SL_FIXTURE_SPARSE, .n = 40, .features = 5, .categorical = 7};
/* Lengths close to the capacity, so that two seeds' rows rarely share
 * their unused tail (the seed test compares whole rows). */
static const sl_fixture_spec sequences_spec = {
    .kind = SL_FIXTURE_SEQUENCES, .n = 40, .vocab = 50, .min_len = 7, .max_len = 9};

static const sl_fixture_spec *all_specs[] = {&images_spec,  &tokens_spec, &tabular_spec,  &floats_spec,
                                             &volumes_spec, &sparse_spec, &sequences_spec};
#define NSPECS (sizeof all_specs / sizeof all_specs[0])

Test(fixtures, kind_names)
{
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_IMAGES), "images");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_TOKENS), "tokens");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_TABULAR), "tabular");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_FLOATS), "floats");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_VOLUMES), "volumes");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_IMAGE_TEXT), "image_text");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_AUDIO_TEXT), "audio_text");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_SPARSE), "sparse");
    cr_assert_str_eq(sl_fixture_kind_name(SL_FIXTURE_SEQUENCES), "sequences");
}

static void expect_field(const sl_source *src, int f, const char *name, sl_dtype dtype, sl_shape shape)
{
    const sl_field_spec *fs = &sl_source_schema(src)->fields[f];
    cr_assert_str_eq(fs->name, name);
    cr_assert_eq(fs->dtype, dtype, "field '%s' dtype", name);
    cr_assert(sl_shape_equal(&fs->shape, &shape), "field '%s' shape", name);
}

Test(fixtures, schemas_and_sizes_are_as_documented)
{
    sl_source *s = build(&images_spec, 1);
    cr_assert_eq(sl_source_schema(s)->nfields, 2);
    cr_assert_eq(sl_source_rows(s), 40);
    expect_field(s, 0, "image", SL_U8, (sl_shape){.rank = 3, .dims = {5, 3, 3}});
    expect_field(s, 1, "label", SL_I32, (sl_shape){.rank = 0});
    cr_assert_eq(sl_source_field_bytes(s, 0), 40 * 45);
    cr_assert_eq(sl_source_field_bytes(s, 1), 40 * 4);
    cr_assert_eq(sl_fixture_bytes(&images_spec), 40 * 45 + 40 * 4);
    sl_source_free(s);

    s = build(&tokens_spec, 1);
    cr_assert_eq(sl_source_schema(s)->nfields, 1);
    cr_assert_eq(sl_source_rows(s), 1001);
    expect_field(s, 0, "tokens", SL_I32, (sl_shape){.rank = 0});
    cr_assert_eq(sl_fixture_bytes(&tokens_spec), 1001 * 4);
    sl_source_free(s);

    s = build(&tabular_spec, 1);
    expect_field(s, 0, "features", SL_F32, (sl_shape){.rank = 1, .dims = {5}});
    cr_assert_eq(sl_fixture_bytes(&tabular_spec), 40 * 5 * 4);
    sl_source_free(s);

    s = build(&floats_spec, 1);
    expect_field(s, 0, "x", SL_F32, (sl_shape){.rank = 3, .dims = {3, 3, 1}});
    cr_assert_eq(sl_fixture_bytes(&floats_spec), 40 * 9 * 4);
    sl_source_free(s);

    s = build(&volumes_spec, 1);
    cr_assert_eq(sl_source_schema(s)->nfields, 1);
    expect_field(s, 0, "volume", SL_F32, (sl_shape){.rank = 3, .dims = {3, 5, 7}});
    cr_assert_eq(sl_fixture_bytes(&volumes_spec), 12 * 105 * 4);
    sl_source_free(s);

    s = build(&sparse_spec, 1);
    cr_assert_eq(sl_source_schema(s)->nfields, 2);
    expect_field(s, 0, "dense", SL_F32, (sl_shape){.rank = 1, .dims = {5}});
    expect_field(s, 1, "sparse", SL_I64, (sl_shape){.rank = 1, .dims = {7}});
    cr_assert_eq(sl_fixture_bytes(&sparse_spec), 40 * (5 * 4 + 7 * 8));
    sl_source_free(s);

    s = build(&sequences_spec, 1);
    cr_assert_eq(sl_source_schema(s)->nfields, 2);
    expect_field(s, 0, "tokens", SL_I32, (sl_shape){.rank = 1, .dims = {9}});
    expect_field(s, 1, "length", SL_I32, (sl_shape){.rank = 0});
    cr_assert_eq(sl_fixture_bytes(&sequences_spec), 40 * (9 * 4 + 4));
    sl_source_free(s);

    /* 10k 32x32x3 images: 30,720,000 pixel bytes plus 40,000 label bytes. */
    sl_fixture_spec big = {.kind = SL_FIXTURE_IMAGES, .n = 10000, .h = 32, .w = 32, .c = 3, .classes = 10};
    cr_assert_eq(sl_fixture_bytes(&big), 30760000u);
}

Test(fixtures, same_spec_and_seed_give_same_bytes)
{
    for (size_t k = 0; k < NSPECS; k++) {
        sl_source *a = build(all_specs[k], 42), *b = build(all_specs[k], 42);
        for (int f = 0; f < sl_source_schema(a)->nfields; f++)
            cr_assert_eq(memcmp(field(a, f), field(b, f), sl_source_field_bytes(a, f)), 0, "spec %zu field %d", k, f);
        sl_source_free(a);
        sl_source_free(b);
    }
}

/* Fraction of the elements (of elem_size bytes) that differ between two
 * equally sized buffers. */
static double differing(const void *a, const void *b, size_t bytes, size_t elem_size)
{
    size_t n = bytes / elem_size, diff = 0;
    for (size_t i = 0; i < n; i++)
        diff += memcmp((const char *)a + i * elem_size, (const char *)b + i * elem_size, elem_size) != 0;
    return (double)diff / (double)n;
}

Test(fixtures, different_seeds_give_different_bytes)
{
    /* Two independent draws agree on a pixel with probability about 1/128,
     * on a token id about 1/48 (plus shared end-of-document marks), and on a
     * 24-bit float almost never, so 90% different is a loose floor. */
    for (size_t k = 0; k < NSPECS; k++) {
        sl_source *a = build(all_specs[k], 1), *b = build(all_specs[k], 2);
        const sl_field_spec *fs = &sl_source_schema(a)->fields[0];
        double d = differing(field(a, 0), field(b, 0), sl_source_field_bytes(a, 0), sl_dtype_size(fs->dtype));
        cr_assert_gt(d, 0.9, "spec %zu: only %.3f of the values differ between seeds", k, d);
        sl_source_free(a);
        sl_source_free(b);
    }
}

/* A fixture generated again with another seed (a peer's session on a data
 * set of its own, docs/peers.md) is that seed's fixture of the same spec,
 * byte for byte, for every kind; a source no fixture made is refused,
 * saying why. */
Test(fixtures, a_fixture_generated_again_is_its_spec_at_the_new_seed)
{
    sl_err err = {0};
    for (size_t k = 0; k < NSPECS; k++) {
        sl_source *bench = build(all_specs[k], 42), *expected = build(all_specs[k], 1234), *again = NULL;
        cr_assert_eq(sl_fixture_regenerate(bench, 1234, &again, &err), SL_OK, "spec %zu: %s", k, err.msg);
        cr_assert_eq(sl_source_rows(again), sl_source_rows(expected), "spec %zu", k);
        cr_assert_eq(sl_source_schema(again)->nfields, sl_source_schema(expected)->nfields, "spec %zu", k);
        for (int f = 0; f < sl_source_schema(expected)->nfields; f++) {
            cr_assert_eq(sl_source_field_bytes(again, f), sl_source_field_bytes(expected, f), "spec %zu", k);
            cr_expect_eq(memcmp(field(again, f), field(expected, f), sl_source_field_bytes(expected, f)), 0,
                         "spec %zu field %d", k, f);
        }
        sl_source_free(bench);
        sl_source_free(expected);
        sl_source_free(again);
    }
    float x[4] = {0};
    sl_source *other = test_source_x(SL_F32, 1, 1, 4, x);
    sl_source *none = NULL;
    cr_expect_eq(sl_fixture_regenerate(other, 1, &none, &err), SL_EUNSUPPORTED);
    cr_expect_null(none);
    cr_expect(strstr(err.msg, "not generated whole by a fixture") != NULL, "%s", err.msg);
    sl_source_free(other);
}

Test(fixtures, a_smaller_fixture_is_a_prefix_of_a_larger_one)
{
    for (size_t k = 0; k < NSPECS; k++) {
        sl_fixture_spec small = *all_specs[k], large = *all_specs[k];
        small.n = 7;
        large.n = all_specs[k]->n * 3;
        sl_source *a = build(&small, 9), *b = build(&large, 9);
        for (int f = 0; f < sl_source_schema(a)->nfields; f++)
            cr_assert_eq(memcmp(field(a, f), field(b, f), sl_source_field_bytes(a, f)), 0, "spec %zu field %d", k, f);
        sl_source_free(a);
        sl_source_free(b);
    }
}

Test(fixtures, labels_are_uniform_over_classes)
{
    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = 5000, .h = 2, .w = 2, .c = 1, .classes = 10};
    sl_source *s = build(&spec, 3);
    const int32_t *labels = field(s, 1);
    int counts[10] = {0};
    for (int i = 0; i < 5000; i++) {
        cr_assert(labels[i] >= 0 && labels[i] < 10, "label %d of image %d is outside [0, 10)", labels[i], i);
        counts[labels[i]]++;
    }
    /* Each count is Binomial(5000, 0.1): mean 500, sd 21.2; six sd = 127. */
    for (int c = 0; c < 10; c++)
        cr_assert(abs(counts[c] - 500) < 127, "class %d appears %d times, expected 500 +- 127", c, counts[c]);
    sl_source_free(s);

    spec.classes = 1;
    s = build(&spec, 3);
    labels = field(s, 1);
    for (int i = 0; i < 5000; i++)
        cr_assert_eq(labels[i], 0);
    sl_source_free(s);
}

Test(fixtures, images_cover_the_byte_range_and_differ)
{
    enum { N = 100, ITEM = 32 * 32 * 3 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = N, .h = 32, .w = 32, .c = 3, .classes = 10};
    sl_source *s = build(&spec, 5);
    const uint8_t *px = field(s, 0);
    int histogram[256] = {0};
    double min_mean = 255, max_mean = 0;
    for (int i = 0; i < N; i++) {
        const uint8_t *img = px + (size_t)i * ITEM;
        long sum = 0;
        int lo = 255, hi = 0;
        for (int k = 0; k < ITEM; k++) {
            histogram[img[k]]++;
            sum += img[k];
            lo = img[k] < lo ? img[k] : lo;
            hi = img[k] > hi ? img[k] : hi;
        }
        cr_assert_gt(hi - lo, 32, "image %d is nearly constant (%d..%d)", i, lo, hi);
        if (i > 0)
            cr_assert_neq(memcmp(img, img - ITEM, ITEM), 0, "images %d and %d are identical", i - 1, i);
        double mean = (double)sum / ITEM;
        min_mean = mean < min_mean ? mean : min_mean;
        max_mean = mean > max_mean ? mean : max_mean;
    }
    int distinct = 0;
    for (int v = 0; v < 256; v++)
        distinct += histogram[v] > 0;
    cr_assert_geq(distinct, 250, "only %d distinct pixel values", distinct);
    int low = 0, high = 0;
    for (int v = 0; v < 16; v++)
        low += histogram[v], high += histogram[255 - v];
    cr_assert(low > 0 && high > 0, "no pixels near 0 (%d) or near 255 (%d)", low, high);
    /* Images are not all alike in brightness: noise alone would keep every
     * image's mean within a fraction of a level of the others. */
    cr_assert_gt(max_mean - min_mean, 20.0, "image means span only %.1f levels", max_mean - min_mean);
    sl_source_free(s);
}

Test(fixtures, tokens_form_documents_within_bounds)
{
    enum { N = 200000, VOCAB = 1000, MEAN = 16 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_TOKENS, .n = N, .vocab = VOCAB, .mean_doc_len = MEAN};
    sl_source *s = build(&spec, 11);
    const int32_t *t = field(s, 0);
    static int seen[VOCAB];
    memset(seen, 0, sizeof seen);
    long docs = 0, total_len = 0, len = 0;
    for (int p = 0; p < N; p++) {
        cr_assert_neq(t[p], SL_TOKEN_PAD, "the stream has a pad token at %d", p);
        cr_assert(t[p] >= 0 && t[p] < VOCAB, "token %d at %d is outside the vocabulary", t[p], p);
        seen[t[p]]++;
        if (t[p] != SL_TOKEN_EOD) {
            len++;
            cr_assert_leq(len, 2 * MEAN, "a document at %d is longer than %d tokens", p, 2 * MEAN);
            continue;
        }
        cr_assert_geq(len, 1, "an empty document ends at %d", p);
        docs++;
        total_len += len;
        len = 0;
    }
    cr_assert_gt(docs, 0);
    for (int id = 2; id < VOCAB; id++)
        cr_assert_gt(seen[id], 0, "token id %d never appears", id);
    /* Lengths are uniform on [1, 32]: mean 16.5, sd sqrt((32^2 - 1) / 12) =
     * 9.23. About 200000 / 17.5 = 11400 documents give a standard error of
     * 0.086; six of them is 0.52. */
    double mean_len = (double)total_len / (double)docs;
    cr_assert(fabs(mean_len - 16.5) < 0.52, "mean document length %.3f, expected 16.5 +- 0.52", mean_len);
    sl_source_free(s);
}

Test(fixtures, tabular_columns_follow_their_parameters)
{
    enum { N = 20000, F = 6 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_TABULAR, .n = N, .features = F};
    sl_source *s = build(&spec, 7);
    const float *x = field(s, 0);
    for (int j = 0; j < F; j++) {
        float mean, sd;
        sl_fixture_tabular_column_params(7, j, &mean, &sd);
        cr_assert(mean >= -5.0f && mean < 5.0f, "column %d mean %g", j, mean);
        cr_assert(sd >= 0.5f && sd < 3.0f, "column %d std %g", j, sd);
        double sum = 0, sq = 0;
        for (int i = 0; i < N; i++) {
            double v = x[(size_t)i * F + j];
            /* An Irwin-Hall sum of four uniforms, centred and scaled to unit
             * variance, lies within +-2 sqrt(3). */
            cr_assert(fabs(v - mean) <= 2 * 1.7320508 * sd * (1 + 1e-5), "row %d column %d: %g is out of support", i, j,
                      v);
            sum += v;
            sq += v * v;
        }
        double m = sum / N, s_hat = sqrt((sq - N * m * m) / (N - 1));
        /* Six standard errors. The mean's is sd / sqrt(N). The sample sd's is
         * sd * sqrt((2 + k) / (4 N)) with excess kurtosis k = -0.3 for this
         * Irwin-Hall sum; taking k = 0 (the normal case) is conservative:
         * 6 sqrt(1 / (2 N)) = 0.030 of sd. */
        double mean_bound = 6 * sd / sqrt((double)N);
        cr_assert(fabs(m - mean) < mean_bound, "column %d: mean %.4f, expected %.4f +- %.4f", j, m, mean, mean_bound);
        cr_assert(fabs(s_hat / sd - 1) < 0.030, "column %d: std %.4f, expected %.4f (within 3%%)", j, s_hat, sd);
    }
    sl_source_free(s);
}

Test(fixtures, tabular_parameters_are_a_function_of_seed_and_column)
{
    float m1, s1, m2, s2;
    sl_fixture_tabular_column_params(1, 3, &m1, &s1);
    sl_fixture_tabular_column_params(1, 3, &m2, &s2);
    cr_assert(m1 == m2 && s1 == s2);
    int same_mean = 0;
    for (int j = 0; j < 50; j++) {
        sl_fixture_tabular_column_params(1, j, &m1, &s1);
        sl_fixture_tabular_column_params(2, j, &m2, &s2);
        same_mean += m1 == m2;
        if (j > 0) {
            float prev_m, prev_s;
            sl_fixture_tabular_column_params(1, j - 1, &prev_m, &prev_s);
            cr_assert(prev_m != m1 || prev_s != s1, "columns %d and %d share parameters", j - 1, j);
        }
    }
    cr_assert_eq(same_mean, 0, "seeds 1 and 2 give %d columns the same mean", same_mean);
}

Test(fixtures, floats_are_uniform_in_unit_interval)
{
    enum { N = 100, ITEM = 16 * 16 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_FLOATS, .n = N, .h = 16, .w = 16, .c = 1};
    sl_source *s = build(&spec, 13);
    const float *x = field(s, 0);
    double sum = 0;
    int below_tenth = 0;
    for (size_t k = 0; k < (size_t)N * ITEM; k++) {
        cr_assert(x[k] >= 0.0f && x[k] < 1.0f, "value %zu is %g", k, x[k]);
        sum += x[k];
        below_tenth += x[k] < 0.1f;
    }
    /* 25600 uniforms: the mean has sd sqrt(1/12 / 25600) = 0.0018, the count
     * below 0.1 sd sqrt(25600 * 0.09) = 48; six sd each. */
    double mean = sum / ((double)N * ITEM);
    cr_assert(fabs(mean - 0.5) < 0.011, "mean %.4f", mean);
    cr_assert(abs(below_tenth - 2560) < 288, "%d values below 0.1, expected 2560 +- 288", below_tenth);
    sl_source_free(s);
}

/* Each voxel is level + scale * (noise + 3 inside the sphere), so
 * subtracting the known level, dividing by the scale and removing the
 * sphere's 3 leaves the noise, which must be close to standard normal in
 * every volume, and bounded by the Irwin-Hall support. */
Test(fixtures, volumes_follow_their_parameters)
{
    enum { N = 20, D = 24, H = 20, W = 28 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_VOLUMES, .n = N, .d = D, .h = H, .w = W};
    sl_source *s = build(&spec, 17);
    const float *v = field(s, 0);
    double min_level = 1e9, max_level = -1e9;
    for (int i = 0; i < N; i++) {
        sl_fixture_volume_params p;
        sl_fixture_volume_params_of(&spec, 17, i, &p);
        cr_assert(p.level >= 0.0f && p.level < 1000.0f, "volume %d level %g", i, p.level);
        cr_assert(p.scale >= 50.0f && p.scale < 250.0f, "volume %d scale %g", i, p.scale);
        cr_assert(p.radius >= 20 / 8 && p.radius <= 20 / 4, "volume %d radius %d", i, p.radius);
        cr_assert(p.centre[0] >= 0 && p.centre[0] < D && p.centre[1] >= 0 && p.centre[1] < H && p.centre[2] >= 0 &&
                  p.centre[2] < W);
        min_level = p.level < min_level ? p.level : min_level;
        max_level = p.level > max_level ? p.level : max_level;
        double sum = 0, sq = 0;
        long inside = 0;
        for (int z = 0; z < D; z++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    int dz = z - p.centre[0], dy = y - p.centre[1], dx = x - p.centre[2];
                    bool in = dz * dz + dy * dy + dx * dx <= p.radius * p.radius;
                    inside += in;
                    double noise = ((double)v[((size_t)i * D * H + (size_t)z * H + y) * W + x] - p.level) / p.scale -
                                   (in ? 3.0 : 0.0);
                    cr_assert(fabs(noise) <= 2 * 1.7320508 + 1e-3, "volume %d voxel (%d, %d, %d): noise %g", i, z, y, x,
                              noise);
                    sum += noise;
                    sq += noise * noise;
                }
        cr_assert_gt(inside, 0, "volume %d has no sphere voxel", i);
        /* 13440 voxels: the mean's sd is 1 / sqrt(13440) = 0.0086, six sd
         * 0.052; the variance's sd is about sqrt(1.7 / 13440) = 0.011 (excess
         * kurtosis -0.3), six sd 0.07. */
        double n = (double)D * H * W, mean = sum / n, var = sq / n - mean * mean;
        cr_assert(fabs(mean) < 0.052, "volume %d: noise mean %g", i, mean);
        cr_assert(fabs(var - 1) < 0.07, "volume %d: noise variance %g", i, var);
    }
    cr_assert_gt(max_level - min_level, 200.0, "levels span only %g", max_level - min_level);
    sl_source_free(s);
}

/* Bit length of a non-negative integer (0 for 0). */
static int bit_length(uint64_t v)
{
    int bits = 0;
    while (v) {
        bits++;
        v >>= 1;
    }
    return bits;
}

Test(fixtures, sparse_dense_values_are_heavy_tailed_quarter_integers)
{
    enum { N = 2000, F = 13 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_SPARSE, .n = N, .features = F, .categorical = 1};
    sl_source *s = build(&spec, 3);
    const float *x = field(s, 0);
    /* The documented recipe: b bits, b uniform in [0, 24], then b random
     * bits, over 4. The count's bit length is l when b >= l and the top l-th
     * bit is its highest set one: P(l) = 1/25 sum_{b=l}^{24} 2^-(b-l+1) =
     * (1 - 2^-(25-l)) / 25 for l >= 1, and the rest of the mass at l = 0. */
    int64_t by_length[26] = {0};
    for (int64_t i = 0; i < (int64_t)N * F; i++) {
        cr_assert_geq(x[i], 0.0f, "value %lld is negative: %g", (long long)i, (double)x[i]);
        float q = x[i] * 4.0f;
        cr_assert_eq(q, (float)(uint32_t)q, "value %lld (%g) is not a quarter integer", (long long)i, (double)x[i]);
        int l = bit_length((uint32_t)q);
        cr_assert_leq(l, 24, "value %lld (%g) is beyond 2^22", (long long)i, (double)x[i]);
        by_length[l]++;
    }
    double total = (double)N * F, rest = 1.0;
    for (int l = 1; l <= 24; l++) {
        double p = (1.0 - ldexp(1.0, -(25 - l))) / 25.0;
        rest -= p;
        double expected = total * p, sd = sqrt(total * p * (1.0 - p));
        cr_expect(fabs((double)by_length[l] - expected) < 6.0 * sd, "bit length %d: %lld values, expected %.0f +- %.0f",
                  l, (long long)by_length[l], expected, 6.0 * sd);
    }
    double zero_sd = sqrt(total * rest * (1.0 - rest));
    cr_expect(fabs((double)by_length[0] - total * rest) < 6.0 * zero_sd, "%lld zeros, expected %.0f",
              (long long)by_length[0], total * rest);
    sl_source_free(s);
}

Test(fixtures, sparse_ids_span_63_bits_and_miss_at_the_stated_rates)
{
    enum { N = 4000, C = 26 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_SPARSE, .n = N, .features = 1, .categorical = C};
    sl_source *s = build(&spec, 5);
    const int64_t *ids = field(s, 1);
    int64_t small = 0, huge = 0;
    for (int j = 0; j < C; j++) {
        int64_t missing = 0;
        for (int64_t i = 0; i < N; i++) {
            int64_t id = ids[i * C + j];
            if (id == SL_FIXTURE_ID_MISSING) {
                missing++;
                continue;
            }
            cr_assert_geq(id, 0, "row %lld column %d: id %lld", (long long)i, j, (long long)id);
            small += id < (1 << 16);
            huge += id >= (int64_t)1 << 62;
        }
        /* Missing with probability (j mod 4) / 10, by the fixture's contract. */
        double p = (j % 4) / 10.0, sd = sqrt(N * p * (1.0 - p));
        if (j % 4 == 0)
            cr_expect_eq(missing, 0, "column %d misses %lld values; it never should", j, (long long)missing);
        else
            cr_expect(fabs((double)missing - N * p) < 6.0 * sd, "column %d misses %lld of %d, expected %.0f", j,
                      (long long)missing, N, N * p);
    }
    /* A shift of s in [0, 62] leaves 63 - s bits: ids below 2^16 need
     * s >= 47 (about 16/63 of them); ids at or above 2^62 need s = 0 and the
     * top bit (1/126). Both are common, which is the point. */
    cr_expect_gt(small, (int64_t)N * C / 8, "%lld small ids", (long long)small);
    cr_expect_gt(huge, (int64_t)N * C / 400, "%lld ids at or above 2^62", (long long)huge);
    sl_source_free(s);
}

Test(fixtures, sequences_hold_their_length_of_tokens_then_no_token)
{
    enum { N = 3000, MIN = 10, MAX = 64, VOCAB = 100 };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_SEQUENCES, .n = N, .vocab = VOCAB, .min_len = MIN, .max_len = MAX};
    sl_source *s = build(&spec, 8);
    const int32_t *tokens = field(s, 0), *lengths = field(s, 1);
    int64_t by_length[MAX + 1] = {0};
    for (int64_t i = 0; i < N; i++) {
        cr_assert(lengths[i] >= MIN && lengths[i] <= MAX, "element %lld has length %d", (long long)i, lengths[i]);
        by_length[lengths[i]]++;
        for (int p = 0; p < MAX; p++) {
            int32_t t = tokens[i * MAX + p];
            if (p < lengths[i])
                cr_assert(t >= 2 && t < VOCAB, "element %lld position %d: token %d", (long long)i, p, t);
            else
                cr_assert_eq(t, SL_FIXTURE_NO_TOKEN, "element %lld position %d past its length holds %d", (long long)i,
                             p, t);
        }
    }
    /* Uniform over 55 lengths: about 54.5 each, sd about 7.3. */
    double expected = (double)N / (MAX - MIN + 1), sd = sqrt(expected * (1.0 - 1.0 / (MAX - MIN + 1)));
    for (int l = MIN; l <= MAX; l++)
        cr_expect(fabs((double)by_length[l] - expected) < 6.0 * sd, "length %d: %lld elements, expected %.1f", l,
                  (long long)by_length[l], expected);
    sl_source_free(s);
}

/* Labels are an extra field under their own tag: the items are the bytes
 * of the same fixture without them, and the labels cover [0, classes). */
Test(fixtures, floats_with_classes_add_labels_and_keep_the_items)
{
    enum { N = 2000, CLASSES = 10 };
    sl_fixture_spec plain = {.kind = SL_FIXTURE_FLOATS, .n = N, .h = 4, .w = 4, .c = 3};
    sl_fixture_spec labelled = plain;
    labelled.classes = CLASSES;
    cr_assert_eq(sl_fixture_bytes(&labelled), sl_fixture_bytes(&plain) + N * 4);
    sl_source *a = build(&plain, 5), *b = build(&labelled, 5);
    cr_assert_eq(sl_source_schema(a)->nfields, 1);
    cr_assert_eq(sl_source_schema(b)->nfields, 2);
    cr_assert_str_eq(sl_source_schema(b)->fields[1].name, "label");
    cr_assert_eq(sl_source_schema(b)->fields[1].dtype, SL_I32);
    cr_assert_eq(memcmp(field(a, 0), field(b, 0), sl_source_field_bytes(a, 0)), 0);
    const int32_t *labels = field(b, 1);
    int count[CLASSES] = {0};
    for (int i = 0; i < N; i++) {
        cr_assert(labels[i] >= 0 && labels[i] < CLASSES, "label %d is %d", i, labels[i]);
        count[labels[i]]++;
    }
    /* 200 expected per class, sd sqrt(2000 * 0.1 * 0.9) = 13.4; six sd. */
    for (int k = 0; k < CLASSES; k++)
        cr_expect(abs(count[k] - 200) < 81, "class %d has %d labels", k, count[k]);
    sl_source_free(a);
    sl_source_free(b);
    sl_fixture_spec negative = plain;
    negative.classes = -1;
    sl_source *none = NULL;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&negative, 1, &none, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, "'classes'"), "%s", err.msg);
}

static void expect_invalid(sl_fixture_spec spec, const char *needle)
{
    sl_source *src = (sl_source *)&spec;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 1, &src, &err), SL_EINVAL, "expected '%s' to be refused", needle);
    cr_assert_null(src);
    cr_assert_not_null(strstr(err.msg, needle), "message lacks \"%s\": %s", needle, err.msg);
    cr_assert_eq(sl_fixture_bytes(&spec), 0);
}

/* Image-text pairs: odd sizes, texts that fill their capacity at the
 * longest. */
static const sl_fixture_spec image_text_spec = {.kind = SL_FIXTURE_IMAGE_TEXT,
                                                .n = 600,
                                                .h = 5,
                                                .w = 3,
                                                .c = 3,
                                                .vocab = 100,
                                                .mean_doc_len = 6,
                                                .seq_capacity = 15};

Test(fixtures, image_text_is_reproducible_and_prefix_stable)
{
    sl_source *a = build(&image_text_spec, 42), *b = build(&image_text_spec, 42);
    sl_fixture_spec small = image_text_spec;
    small.n = 7;
    sl_source *c = build(&small, 42);
    cr_assert_eq(sl_source_schema(a)->nfields, 2);
    expect_field(a, 0, "image", SL_U8, (sl_shape){.rank = 3, .dims = {5, 3, 3}});
    expect_field(a, 1, "text", SL_I32, (sl_shape){.rank = 1, .dims = {15}});
    cr_assert_eq(sl_fixture_bytes(&image_text_spec), 600 * (45 + 15 * 4));
    for (int f = 0; f < 2; f++) {
        cr_assert_eq(memcmp(field(a, f), field(b, f), sl_source_field_bytes(a, f)), 0, "field %d", f);
        cr_assert_eq(memcmp(field(a, f), field(c, f), sl_source_field_bytes(c, f)), 0, "prefix, field %d", f);
    }
    sl_source_free(a);
    sl_source_free(b);
    sl_source_free(c);
}

Test(fixtures, image_text_pairs_carry_their_tags)
{
    enum { N = 600, PIXELS = 15, CAP = 15, MEAN = 6, VOCAB = 100 };
    sl_source *s = build(&image_text_spec, 3), *other = build(&image_text_spec, 4);
    const uint8_t *px = field(s, 0), *px_other = field(other, 0);
    const int32_t *text = field(s, 1);
    long content = 0, longest = 0, channel0_same = 0;
    for (int i = 0; i < N; i++) {
        /* The last two channels are constant planes holding the id's bytes. */
        for (int p = 0; p < PIXELS; p++) {
            cr_assert_eq(px[(i * PIXELS + p) * 3 + 1], (i >> 8) & 255, "image %d pixel %d high tag", i, p);
            cr_assert_eq(px[(i * PIXELS + p) * 3 + 2], i & 255, "image %d pixel %d low tag", i, p);
            channel0_same += px[(i * PIXELS + p) * 3] == px_other[(i * PIXELS + p) * 3];
        }
        const int32_t *t = text + (size_t)i * CAP;
        cr_assert_eq(t[0], SL_TOKEN_BOS);
        cr_assert_eq(t[1], SL_TOKEN_FIRST_CONTENT + i % (VOCAB - SL_TOKEN_FIRST_CONTENT), "text %d tag", i);
        int at = 2;
        while (at < CAP && t[at] != SL_TOKEN_EOD) {
            cr_assert(t[at] >= SL_TOKEN_FIRST_CONTENT && t[at] < VOCAB, "text %d token %d is %d", i, at, t[at]);
            at++;
        }
        cr_assert_lt(at, CAP, "text %d has no end token", i);
        int length = at - 2;
        cr_assert(length >= 1 && length <= 2 * MEAN, "text %d has %d content tokens", i, length);
        content += length;
        longest = length > longest ? length : longest;
        for (at++; at < CAP; at++)
            cr_assert_eq(t[at], SL_TOKEN_PAD, "text %d: token %d after the end is not a pad", i, at);
    }
    /* Lengths uniform on [1, 12]: mean 6.5, sd 3.45; 600 texts give a
     * standard error of 0.14, six of them 0.85. */
    cr_assert(fabs((double)content / N - 6.5) < 0.85, "mean content length %.3f", (double)content / N);
    cr_assert_eq(longest, 2 * MEAN, "no text reaches the longest length");
    /* The untagged channel depends on the seed (about 1 in 128 equal). */
    cr_assert_lt(channel0_same, N * PIXELS / 20, "%ld of the first channel's bytes agree across seeds", channel0_same);
    sl_source_free(s);
    sl_source_free(other);
}

static const sl_fixture_spec audio_text_spec = {
    .kind = SL_FIXTURE_AUDIO_TEXT, .n = 20, .samples = 1601, .vocab = 500, .mean_doc_len = 6, .seq_capacity = 15};

Test(fixtures, audio_text_is_reproducible_bounded_and_tonal)
{
    sl_source *a = build(&audio_text_spec, 42), *b = build(&audio_text_spec, 42), *other = build(&audio_text_spec, 43);
    sl_fixture_spec small = audio_text_spec;
    small.n = 3;
    sl_source *c = build(&small, 42);
    expect_field(a, 0, "wave", SL_F32, (sl_shape){.rank = 1, .dims = {1601}});
    expect_field(a, 1, "text", SL_I32, (sl_shape){.rank = 1, .dims = {15}});
    cr_assert_eq(sl_fixture_bytes(&audio_text_spec), 20 * (1601 * 4 + 15 * 4));
    for (int f = 0; f < 2; f++) {
        cr_assert_eq(memcmp(field(a, f), field(b, f), sl_source_field_bytes(a, f)), 0, "field %d", f);
        cr_assert_eq(memcmp(field(a, f), field(c, f), sl_source_field_bytes(c, f)), 0, "prefix, field %d", f);
    }
    const float *w = field(a, 0), *w_other = field(other, 0);
    const int32_t *text = field(a, 1);
    for (int i = 0; i < 20; i++) {
        double energy = 0, sum = 0;
        int same = 0;
        for (int s = 0; s < 1601; s++) {
            float v = w[i * 1601 + s];
            /* Three tones of amplitude below 0.3 and noise below 0.02. */
            cr_assert(fabsf(v) < 0.92f, "wave %d sample %d is %g", i, s, (double)v);
            energy += (double)v * v;
            sum += v;
            same += v == w_other[i * 1601 + s];
        }
        /* Each tone adds a^2 / 2 >= 0.00125 of mean power; the mean of
         * whole tones over 0.1 s is near 0. */
        cr_assert_gt(energy / 1601, 3 * 0.00125, "wave %d is too quiet", i);
        cr_assert_lt(fabs(sum / 1601), 0.05, "wave %d has a mean of %g", i, sum / 1601);
        cr_assert_lt(same, 16, "wave %d: %d samples agree across seeds", i, same);
        cr_assert_eq(text[i * 15 + 1], SL_TOKEN_FIRST_CONTENT + i, "text %d tag", i);
    }
    sl_source_free(a);
    sl_source_free(b);
    sl_source_free(c);
    sl_source_free(other);
}

Test(fixtures, invalid_specs_are_refused_naming_the_field)
{
    sl_fixture_spec s;
    s = images_spec, s.h = 0;
    expect_invalid(s, "fixture spec field 'h' must be positive, got 0");
    s = images_spec, s.w = -3;
    expect_invalid(s, "field 'w' must be positive, got -3");
    s = images_spec, s.c = 0;
    expect_invalid(s, "field 'c'");
    s = images_spec, s.classes = 0;
    expect_invalid(s, "field 'classes'");
    s = images_spec, s.n = 0;
    expect_invalid(s, "field 'n' must be positive, got 0");
    s = images_spec, s.h = 1 << 16, s.w = 1 << 16;
    expect_invalid(s, "'h'");
    s = tokens_spec, s.vocab = 2;
    expect_invalid(s, "field 'vocab' must be at least 3, got 2");
    s = tokens_spec, s.mean_doc_len = 0;
    expect_invalid(s, "field 'mean_doc_len'");
    s = tabular_spec, s.features = 0;
    expect_invalid(s, "field 'features'");
    s = floats_spec, s.n = -5;
    expect_invalid(s, "field 'n'");
    s = volumes_spec, s.d = 0;
    expect_invalid(s, "fixture spec field 'd' must be positive, got 0");
    s = volumes_spec, s.d = 1 << 11, s.h = 1 << 11, s.w = 1 << 11;
    expect_invalid(s, "'d', 'h', 'w'");
    s = image_text_spec, s.c = 2;
    expect_invalid(s, "field 'c' must be at least 3");
    s = image_text_spec, s.vocab = 3;
    expect_invalid(s, "field 'vocab'");
    s = audio_text_spec, s.samples = 0;
    expect_invalid(s, "field 'samples' must be positive");
    s = image_text_spec, s.seq_capacity = 14;
    expect_invalid(s, "field 'seq_capacity' must be at least 15");
    s = sparse_spec, s.categorical = 0;
    expect_invalid(s, "field 'categorical'");
    s = sparse_spec, s.features = 0;
    expect_invalid(s, "field 'features'");
    s = sequences_spec, s.vocab = 2;
    expect_invalid(s, "field 'vocab'");
    s = sequences_spec, s.min_len = -1;
    expect_invalid(s, "field 'min_len'");
    s = sequences_spec, s.min_len = 12;
    expect_invalid(s, "field 'max_len' must be at least 12, got 9");
    s = floats_spec, s.kind = (sl_fixture_kind)99;
    expect_invalid(s, "field 'kind'");
}

Test(fixtures, fields_unused_by_a_kind_are_ignored)
{
    /* A tokens spec does not need h, w, c or classes to be set, and setting
     * them does not change its bytes. */
    sl_fixture_spec other = tokens_spec;
    other.h = 99, other.classes = -1, other.features = 3;
    sl_source *a = build(&tokens_spec, 4), *b = build(&other, 4);
    cr_assert_eq(memcmp(field(a, 0), field(b, 0), sl_source_field_bytes(a, 0)), 0);
    sl_source_free(a);
    sl_source_free(b);
}

/* Every generator's bytes against its committed golden. The golden is
 * pinned by the fixtures' contract (same spec and seed, same bytes on every
 * machine and compiler), so any byte that moves is a broken promise, and
 * the message names the field, row and element where it moved. */
Test(fixtures, every_generator_matches_its_pinned_golden)
{
    for (int kind = 0; kind < SL_FIXTURE_KIND_COUNT; kind++) {
        char path[4096];
        sl_fixture_golden_path(sl_golden_default_dir(), (sl_fixture_kind)kind, path, sizeof path);
        sl_golden *expected = NULL, *actual = NULL;
        sl_err err = {0};
        cr_assert_eq(sl_golden_load_blessed(path, &expected, &err), SL_OK, "%s (bless it with sluice bless --fixtures)",
                     err.msg);
        cr_assert_eq(sl_fixture_capture_golden((sl_fixture_kind)kind, 42, &actual, &err), SL_OK, "%s", err.msg);
        sl_status status = sl_golden_compare(expected, actual, &err);
        cr_expect_eq(status, SL_OK, "fixture %s changed: %s", sl_fixture_kind_name((sl_fixture_kind)kind), err.msg);
        sl_golden_free(expected);
        sl_golden_free(actual);
    }
}
