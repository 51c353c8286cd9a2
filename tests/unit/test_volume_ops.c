/* The volume ops on their own: zscore on hand-worked values and on a
 * constant volume, random_crop3d and random_flip3d at their extreme
 * settings, and the refusals that name the op and the field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels_under_test.h"
#include "sluice/exec/executors.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"

/* A memory source of n volumes [d, h, w] whose bytes the test owns. */
static sl_source *volumes_of(float *data, int64_t n, int d, int h, int w)
{
    sl_schema schema;
    memset(&schema, 0, sizeof schema);
    schema.nfields = 1;
    strcpy(schema.fields[0].name, "volume");
    schema.fields[0].dtype = SL_F32;
    schema.fields[0].shape = (sl_shape){.rank = 3, .dims = {d, h, w}};
    void *fields[1] = {data};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&schema, n, fields, SL_BORROW, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

/* Runs one batch of all n elements, unshuffled, through ops, with the given
 * kernels, into out (the batch's first field). */
static sl_status run_ops(sl_source *src, int64_t n, const sl_op *ops, int nops, const sl_kernel_table *kernels,
                         void *out, sl_err *err)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, n, 3);
    spec.shuffle = false;
    for (int i = 0; i < nops; i++)
        cr_assert_eq(sl_pipeline_spec_add(&spec, ops[i], err), SL_OK);
    sl_pipeline *p;
    sl_status st = sl_pipeline_create(&spec, &p, err);
    if (st)
        return st;
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), n, &b, err), SL_OK);
    cr_assert_eq(sl_pipeline_produce(p, kernels, (sl_position){0, 0}, b, err), SL_OK, "%s", err->msg);
    memcpy(out, b->fields[0].data, sl_tensor_nbytes(&b->fields[0]));
    sl_batch_free(b);
    sl_pipeline_free(p);
    return SL_OK;
}

Test(zscore, zscore_matches_hand_values_and_zeroes_a_constant_volume)
{
    /* Volume 0: 1, 2, ..., 8: mean 4.5, population variance 63 / 12 = 5.25.
     * Volume 1: all 7, whose std is 0: it becomes zeros, not NaN. */
    float data[16], out[16];
    for (int k = 0; k < 8; k++) {
        data[k] = (float)(k + 1);
        data[8 + k] = 7.0f;
    }
    sl_source *src = volumes_of(data, 2, 2, 2, 2);
    sl_op op = sl_op_zscore("volume");
    sl_err err = {0};
    const sl_kernel_table *choices[2] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(run_ops(src, 2, &op, 1, choices[t], out, &err), SL_OK, "%s", err.msg);
        float inv_std = (float)(1.0 / sqrt(5.25));
        for (int k = 0; k < 8; k++) {
            float expected = ((float)(k + 1) - 4.5f) * inv_std;
            cr_expect_eq(out[k], expected, "value %d: %.9g vs %.9g", k, out[k], expected);
            cr_expect_eq(out[8 + k], 0.0f, "the constant volume's value %d is %g", k, out[8 + k]);
        }
    }
    sl_source_free(src);
}

Test(random_crop3d, crop3d_of_the_whole_volume_is_the_volume_and_flips_follow_p)
{
    enum { N = 6, D = 4, H = 5, W = 6, V = D * H * W };
    sl_fixture_spec spec = {.kind = SL_FIXTURE_VOLUMES, .n = N, .d = D, .h = H, .w = W};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 1, &src, &err), SL_OK);
    const float *raw = sl_source_map(src, 0, 0, sl_source_field_bytes(src, 0));
    static float out[N * V];
    sl_op whole = sl_op_random_crop3d("volume", 1, D, H, W);
    cr_assert_eq(run_ops(src, N, &whole, 1, sl_test_kernels(), out, &err), SL_OK, "%s", err.msg);
    cr_expect(memcmp(out, raw, sizeof out) == 0, "a patch the size of the volume is the volume");
    sl_op never = sl_op_random_flip3d("volume", 2, 0.0f), always = sl_op_random_flip3d("volume", 2, 1.0f);
    cr_assert_eq(run_ops(src, N, &never, 1, sl_test_kernels(), out, &err), SL_OK);
    cr_expect(memcmp(out, raw, sizeof out) == 0, "p = 0 flips nothing");
    cr_assert_eq(run_ops(src, N, &always, 1, sl_test_kernels(), out, &err), SL_OK);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < V; k++)
            cr_assert_eq(out[i * V + k], raw[i * V + V - 1 - k], "p = 1 mirrors all three axes: volume reversed");
    sl_source_free(src);
}

static void expect_refused(const sl_op *ops, int nops, const char *needle)
{
    float data[2 * 3 * 4 * 5] = {0};
    sl_source *src = volumes_of(data, 2, 3, 4, 5);
    float out[2 * 3 * 4 * 5];
    sl_err err = {0};
    cr_assert_eq(run_ops(src, 2, ops, nops, sl_kernels_reference(), out, &err), SL_EINVAL, "expected: %s", needle);
    cr_expect(strstr(err.msg, needle) != NULL, "message lacks \"%s\": %s", needle, err.msg);
    sl_source_free(src);
}

Test(volume_ops, refusals_name_the_op_and_field)
{
    sl_op big = sl_op_random_crop3d("volume", 1, 3, 5, 5);
    expect_refused(&big, 1, "op 0: patch 3x5x5 does not fit field 'volume' of 3x4x5");
    sl_op zero = sl_op_random_crop3d("volume", 1, 0, 1, 1);
    expect_refused(&zero, 1, "patch 0x1x1");
    sl_op flip = sl_op_random_flip3d("volume", 2, 1.5f);
    expect_refused(&flip, 1, "op 0: flip probability must be in [0, 1]");
    /* A patch is still an f32 volume, which one_hot does not take. */
    sl_op chain[2] = {sl_op_random_crop3d("volume", 1, 2, 2, 2), sl_op_one_hot("volume", 3)};
    expect_refused(chain, 2, "op 1: one_hot takes an i32 scalar label, field 'volume' is f32 rank 3");

    sl_fixture_spec spec = {.kind = SL_FIXTURE_IMAGES, .n = 4, .h = 4, .w = 4, .c = 3, .classes = 2};
    sl_source *images;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 1, &images, &err), SL_OK);
    float out[4 * 48];
    sl_op z = sl_op_zscore("image");
    cr_assert_eq(run_ops(images, 4, &z, 1, sl_kernels_reference(), out, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "op 0: zscore takes f32, field 'image' is u8"), "%s", err.msg);
    sl_op crop = sl_op_random_crop3d("label", 1, 1, 1, 1);
    cr_assert_eq(run_ops(images, 4, &crop, 1, sl_kernels_reference(), out, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "random_crop3d needs a volume field [d, h, w] or [d, h, w, c], but field 'label' has "
                              "rank 0"),
              "%s", err.msg);
    sl_source_free(images);
}
