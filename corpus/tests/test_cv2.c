/* CV-2, 3D medical volumes: the standard checks; each volume z-scored to
 * mean 0 and std 1 within the bound docs/determinism.md derives, checked in
 * double against the fixture; every output patch found inside its z-scored
 * volume by search, at the offset and with the flips that an independent
 * re-implementation of the keyed decisions gives; and those decisions
 * independent of batch size and workers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(cv2, "CV-2", "32x32x32")

enum { N = 64, SIDE = 32, PATCH = 24, SPAN = SIDE - PATCH + 1, VOXELS = SIDE * SIDE * SIDE };
enum { PATCH_VOXELS = PATCH * PATCH * PATCH, CROP_OP = 1, FLIP_OP = 2 };
#define SEED 42
/* 2^-24: a float's unit roundoff. */
#define U24  (1.0 / 16777216.0)

/* The fixture's volumes z-scored by a pipeline of the zscore op alone, in
 * data set order, through the given kernels. */
static float *zscored_volumes(const sl_scenario_instance *instance, const sl_kernel_table *kernels)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, instance->fixture, 4, SEED);
    spec.shuffle = false;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_zscore("volume"), &err), SL_OK);
    sl_pipeline *p;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 4, &b, &err), SL_OK);
    float *all = malloc((size_t)N * VOXELS * sizeof *all);
    for (int64_t k = 0; k < sl_pipeline_batches_per_epoch(p); k++) {
        cr_assert_eq(sl_pipeline_produce(p, kernels, (sl_position){0, k}, b, &err), SL_OK, "%s", err.msg);
        memcpy(all + (size_t)k * 4 * VOXELS, b->fields[0].data, (size_t)b->count * VOXELS * sizeof *all);
    }
    sl_batch_free(b);
    sl_pipeline_free(p);
    return all;
}

Test(cv2, zscore_gives_each_volume_mean_0_and_std_1)
{
    sl_scenario_instance *instance = harness_build("CV-2", "32x32x32");
    const float *raw = sl_source_map(instance->fixture, 0, 0, sl_source_field_bytes(instance->fixture, 0));
    const sl_kernel_table *choices[2] = {sl_kernels_reference(), sl_test_kernels()};
    float *z[2];
    for (int t = 0; t < 2; t++)
        z[t] = zscored_volumes(instance, choices[t]);
    cr_assert(memcmp(z[0], z[1], (size_t)N * VOXELS * sizeof(float)) == 0,
              "the optimized moments must follow the reference's summation order bit for bit");
    int far_from_standard = 0;
    for (int i = 0; i < N; i++) {
        /* The exact statistics, computed here in double from the fixture. */
        const float *x = raw + (size_t)i * VOXELS;
        const float *y = z[1] + (size_t)i * VOXELS;
        double m = 0, var = 0;
        for (int k = 0; k < VOXELS; k++)
            m += x[k];
        m /= VOXELS;
        for (int k = 0; k < VOXELS; k++)
            var += (x[k] - m) * (x[k] - m);
        double sd = sqrt(var / VOXELS), conditioning = fabs(m) / sd;
        far_from_standard += conditioning > 1.0;
        /* Per voxel: |y - (x - m) / sd| <= 2^-24 (|m| / sd + 3 |z|), the
         * bound docs/determinism.md derives (float mean, float 1 / sd, two
         * roundings), with a hair of slack for the double terms. */
        double ymean = 0, yvar = 0;
        for (int k = 0; k < VOXELS; k++) {
            double exact = (x[k] - m) / sd;
            double bound = U24 * (1.001 * conditioning + 3.001 * fabs(exact)) + 1e-12;
            cr_assert(fabs(y[k] - exact) <= bound, "volume %d voxel %d: %.9g vs exact %.9g (bound %.3g)", i, k, y[k],
                      exact, bound);
            ymean += y[k];
        }
        ymean /= VOXELS;
        for (int k = 0; k < VOXELS; k++)
            yvar += (y[k] - ymean) * (y[k] - ymean);
        double ysd = sqrt(yvar / VOXELS);
        double mean_bound = U24 * (conditioning + 3) + 1e-12, sd_bound = 4 * U24;
        cr_expect(fabs(ymean) <= mean_bound, "volume %d: mean %.3g exceeds %.3g", i, ymean, mean_bound);
        cr_expect(fabs(ysd - 1) <= sd_bound, "volume %d: std 1 %+.3g exceeds %.3g", i, ysd - 1, sd_bound);
    }
    /* Guards the test: raw volumes are far from standard (levels in the
     * hundreds, scales 50 to 250), so a zscore that did nothing would fail. */
    cr_expect_gt(far_from_standard, N / 2, "only %d raw volumes have |mean| > std", far_from_standard);
    free(z[0]);
    free(z[1]);
    sl_scenario_instance_free(instance);
}

/* The keyed decisions, re-implemented from docs/determinism.md rather than
 * taken from the engine: one Philox block per element and op, keyed by
 * (seed, op id) with counter (element, epoch, 0); crop word a gives axis a's
 * offset by multiply-shift, flip word a mirrors axis a when its top 24 bits
 * fall below p = 1/2. */
static sl_philox_ctr decision_block(uint32_t op_id, int64_t element, int64_t epoch)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, 0), sl_philox_key_for(SEED, op_id));
}

static void expected_decisions(int64_t element, int64_t epoch, int offset[3], bool flip[3])
{
    sl_philox_ctr crop = decision_block(CROP_OP, element, epoch), mirror = decision_block(FLIP_OP, element, epoch);
    for (int a = 0; a < 3; a++) {
        offset[a] = (int)(((uint64_t)crop.v[a] * SPAN) >> 32);
        flip[a] = (mirror.v[a] >> 8) < (1u << 23);
    }
}

/* Whether out is the PATCH^3 window of volume v at offset o, with the axes
 * in flip mirrored, compared bit for bit. */
static bool explains(const float *v, const float *out, const int o[3], const bool flip[3])
{
    for (int z = 0; z < PATCH; z++)
        for (int y = 0; y < PATCH; y++)
            for (int x = 0; x < PATCH; x++) {
                int sz = flip[0] ? PATCH - 1 - z : z, sy = flip[1] ? PATCH - 1 - y : y;
                int sx = flip[2] ? PATCH - 1 - x : x;
                const float *src = &v[((size_t)(o[0] + sz) * SIDE + (size_t)(o[1] + sy)) * SIDE + (size_t)(o[2] + sx)];
                if (memcmp(src, &out[((size_t)z * PATCH + y) * PATCH + x], sizeof(float)) != 0)
                    return false;
            }
    return true;
}

Test(cv2, patches_lie_inside_their_volumes_at_the_keyed_offsets_and_flips)
{
    sl_scenario_instance *instance = harness_build("CV-2", "32x32x32");
    float *z = zscored_volumes(instance, sl_kernels_reference());
    run_output out;
    int64_t batches = 2 * sl_pipeline_batches_per_epoch(instance->pipeline);
    harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, batches, &out);
    cr_assert_eq(out.rows, 2 * N);
    cr_assert_eq(out.row_bytes[0], PATCH_VOXELS * sizeof(float));
    int seen[3][SPAN] = {{0}}, flips[3] = {0};
    for (int64_t r = 0; r < out.rows; r++) {
        int64_t epoch = r / N, element = out.ids[r];
        const float *patch = harness_row(&out, 0, r), *volume = z + (size_t)element * VOXELS;
        /* Search every offset and flip set: the one that explains the patch
         * is where it came from, and it lies inside the volume because the
         * search only tries offsets that do. */
        int found = 0, at[3] = {0}, o[3];
        bool mirrored[3] = {false}, f[3];
        for (o[0] = 0; o[0] < SPAN; o[0]++)
            for (o[1] = 0; o[1] < SPAN; o[1]++)
                for (o[2] = 0; o[2] < SPAN; o[2]++)
                    for (int axes = 0; axes < 8; axes++) {
                        for (int a = 0; a < 3; a++)
                            f[a] = axes >> a & 1;
                        if (!explains(volume, patch, o, f))
                            continue;
                        found++;
                        memcpy(at, o, sizeof at);
                        memcpy(mirrored, f, sizeof mirrored);
                    }
        cr_assert_eq(found, 1, "row %lld (element %lld): %d in-bounds crops and flips explain the patch", (long long)r,
                     (long long)element, found);
        int want[3];
        bool want_flip[3];
        expected_decisions(element, epoch, want, want_flip);
        for (int a = 0; a < 3; a++) {
            cr_assert_eq(at[a], want[a], "row %lld axis %d: offset %d, the keyed draw says %d", (long long)r, a, at[a],
                         want[a]);
            cr_assert_eq(mirrored[a], want_flip[a], "row %lld axis %d: flip %d, the keyed draw says %d", (long long)r,
                         a, mirrored[a], want_flip[a]);
            seen[a][at[a]]++;
            flips[a] += mirrored[a];
        }
    }
    for (int a = 0; a < 3; a++) {
        /* 128 uniform offsets over 9 positions miss one with probability
         * about 9 (8/9)^128 = 3e-6. */
        for (int k = 0; k < SPAN; k++)
            cr_expect_gt(seen[a][k], 0, "axis %d never has offset %d", a, k);
        /* Binomial(128, 1/2): sd 5.7, five sd 28. */
        cr_expect(abs(flips[a] - 64) <= 28, "axis %d flipped %d of 128 times", a, flips[a]);
    }
    harness_release(&out);
    free(z);
    sl_scenario_instance_free(instance);
}

Test(cv2, decisions_do_not_depend_on_batch_size_or_workers)
{
    sl_scenario_instance *base = harness_build("CV-2", "32x32x32");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, SEED);
    options.batch_override = 3;
    sl_scenario_instance *other = harness_build_with("CV-2", "32x32x32", &options);
    run_output a, b;
    harness_run(base, "fused", 0, 0, (sl_position){0, 0}, 0, &a);
    harness_run(other, "iter", 2, 0, (sl_position){0, 0}, 0, &b);
    cr_assert_eq(a.rows, N);
    cr_assert_eq(b.rows, N);
    for (int64_t r = 0; r < N; r++) {
        int64_t match = harness_find_element(&b, a.ids[r], 0, N);
        cr_assert_geq(match, 0);
        cr_assert(memcmp(harness_row(&a, 0, r), harness_row(&b, 0, match), a.row_bytes[0]) == 0,
                  "element %lld differs between bs 2 and bs 3 with 2 workers", (long long)a.ids[r]);
    }
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(base);
    sl_scenario_instance_free(other);
}
