/* The cuda adapters' launch plan, run on the CPU.
 *
 * adapters/cuda_run.c turns a pipeline into launches (adapters/cuda_plan.c)
 * and queues them on a device; here the same plan runs on the CPU through
 * the same per-thread functions the kernels wrap, on the source rows the
 * device would receive, and must give exactly the batch the pipeline itself
 * produces. So the mapping from ops to kernels (which field, which
 * constants, fused how far, in which order) is checked on every machine,
 * with or without a GPU. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cuda_plan.h"
#include "kernels_under_test.h"
#include "sluice/fixtures.h"
#include "sluice/pipeline.h"

static const float mean3[3] = {123.675f, 116.28f, 103.53f};
static const float std3[3] = {58.395f, 57.12f, 57.375f};

static sl_source *fixture(sl_fixture_kind kind, int c)
{
    sl_fixture_spec spec = {.kind = kind, .n = 50, .h = 6, .w = 5, .c = c, .classes = 10};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&spec, 42, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

/* Every batch of epochs 0 and 1 (50 rows in batches of 16 leave 2 at the
 * end, so batch 3 is short) through the pipeline, and through the plan from
 * the rows of the same pipeline without ops and the batch's row table;
 * every field compared. */
static void expect_plan_matches(sl_pipeline_spec *spec, sl__cuda_plan *plan)
{
    sl_err err = {0};
    sl_pipeline *p, *raw;
    cr_assert_eq(sl_pipeline_create(spec, &p, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec raw_spec = *spec;
    raw_spec.nops = 0;
    cr_assert_eq(sl_pipeline_create(&raw_spec, &raw, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl__cuda_plan_build("cuda", p, plan, &err), SL_OK, "%s", err.msg);
    for (int64_t b = 0; b < 8; b++) {
        sl_position at = {b / 4, b % 4};
        sl_batch *want, *rows;
        cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), spec->batch_size, &want, &err), SL_OK);
        cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(raw), spec->batch_size, &rows, &err), SL_OK);
        cr_assert_eq(sl_pipeline_produce(p, sl_kernels_reference(), at, want, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_pipeline_produce(raw, sl_test_kernels(), at, rows, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(rows->count, want->count);
        cr_assert(memcmp(rows->element_ids, want->element_ids, (size_t)want->count * sizeof(int64_t)) == 0,
                  "the pipeline without ops gathers other rows");
        sl_ew_step *table = NULL;
        if (plan->row_steps > 0) {
            table = malloc((size_t)rows->count * (size_t)plan->row_steps * sizeof *table);
            sl__cuda_plan_row_steps(plan, p, rows->epoch, rows->element_ids, rows->count, table);
        }
        for (int f = 0; f < plan->nfields; f++) {
            size_t bytes = (size_t)want->count * plan->fields[f].out_bytes;
            void *got = malloc(bytes ? bytes : 1);
            sl__cuda_plan_run_host(plan, f, rows->fields[plan->fields[f].source_field].data, got, want->count, table);
            cr_expect(memcmp(got, want->fields[f].data, bytes) == 0,
                      "field %s of batch %lld differs from the pipeline's", want->schema.fields[f].name, (long long)b);
            free(got);
        }
        free(table);
        sl_batch_free(want);
        sl_batch_free(rows);
    }
    sl_pipeline_free(raw);
    sl_pipeline_free(p);
}

static void add(sl_pipeline_spec *spec, sl_op op)
{
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(spec, op, &err), SL_OK, "%s", err.msg);
}

Test(cuda_plan, a_u8_normalize_and_the_steps_after_it_are_one_launch)
{
    sl_source *src = fixture(SL_FIXTURE_IMAGES, 3);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    add(&spec, sl_op_normalize("image", 3, mean3, std3));
    add(&spec, sl_op_scale("image", 0.5f));
    add(&spec, sl_op_clip("image", -1.0f, 1.0f));
    add(&spec, sl_op_add("image", 0.25f));
    add(&spec, sl_op_multiply("image", 3.0f));
    sl__cuda_plan plan;
    expect_plan_matches(&spec, &plan);
    int image = 0, label = 1;
    cr_assert_eq(plan.nfields, 2);
    cr_expect_eq(plan.fields[image].nlaunches, 1);
    cr_expect_eq(plan.fields[image].launches[0].kind, SL__LAUNCH_NORMALIZE_U8_CHAIN);
    cr_expect_eq(plan.fields[image].launches[0].chain.nsteps, 4);
    cr_expect_eq(plan.fields[label].nlaunches, 0, "the label has no ops: it is copied");
    sl_source_free(src);
}

Test(cuda_plan, a_normalize_alone_is_its_own_launch)
{
    sl_source *src = fixture(SL_FIXTURE_IMAGES, 3);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    add(&spec, sl_op_normalize("image", 3, mean3, std3));
    sl__cuda_plan plan;
    expect_plan_matches(&spec, &plan);
    cr_expect_eq(plan.fields[0].nlaunches, 1);
    cr_expect_eq(plan.fields[0].launches[0].kind, SL__LAUNCH_NORMALIZE_U8);
    sl_source_free(src);
}

Test(cuda_plan, one_channel_f32_normalizes_join_the_chain_and_long_chains_split)
{
    sl_source *src = fixture(SL_FIXTURE_FLOATS, 1);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    const float m = 0.5f, s = 4.0f; /* inv_std 0.25, unlike the mean */
    /* 1 + 19 + 1 = 21 steps: a chain of 16, then one of 5. */
    add(&spec, sl_op_normalize("x", 1, &m, &s));
    for (int i = 0; i < 19; i++)
        add(&spec, i % 2 ? sl_op_add("x", 0.125f * (float)i) : sl_op_scale("x", 1.0f + 0.01f * (float)i));
    add(&spec, sl_op_normalize("x", 1, &m, &s));
    sl__cuda_plan plan;
    expect_plan_matches(&spec, &plan);
    cr_expect_eq(plan.fields[0].nlaunches, 2);
    cr_expect_eq(plan.fields[0].launches[0].kind, SL__LAUNCH_CHAIN);
    cr_expect_eq(plan.fields[0].launches[0].chain.nsteps, SL_CUDA_MAX_STEPS);
    cr_expect_eq(plan.fields[0].launches[1].chain.nsteps, 21 - SL_CUDA_MAX_STEPS);
    sl_source_free(src);
}

Test(cuda_plan, a_many_channel_f32_normalize_is_a_launch_between_chains)
{
    sl_source *src = fixture(SL_FIXTURE_FLOATS, 3);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    const float m[3] = {0.1f, -0.2f, 0.3f}, s[3] = {0.5f, 2.0f, 3.0f};
    add(&spec, sl_op_scale("x", 2.0f));
    add(&spec, sl_op_normalize("x", 3, m, s));
    add(&spec, sl_op_clip("x", -0.5f, 0.5f));
    sl__cuda_plan plan;
    expect_plan_matches(&spec, &plan);
    cr_expect_eq(plan.fields[0].nlaunches, 3);
    cr_expect_eq(plan.fields[0].launches[0].kind, SL__LAUNCH_CHAIN);
    cr_expect_eq(plan.fields[0].launches[1].kind, SL__LAUNCH_NORMALIZE_F32);
    cr_expect_eq(plan.fields[0].launches[2].kind, SL__LAUNCH_CHAIN);
    cr_expect_not(sl__cuda_plan_reads_input(&plan.fields[0]), "a chain first works on a copy of the input");
    sl_source_free(src);
}

Test(cuda_plan, random_steps_are_resolved_per_row_into_the_fused_normalize)
{
    /* AUG-1's chain and AUG-2's stochastic one on one field: normalize from
     * u8, then noise, brightness and scale drawn per element. */
    sl_source *src = fixture(SL_FIXTURE_IMAGES, 3);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    add(&spec, sl_op_normalize("image", 3, mean3, std3));
    add(&spec, sl_op_gaussian_noise("image", 11, 0.1f));
    add(&spec, sl_op_random_brightness("image", 12, 0.2f));
    add(&spec, sl_op_clip("image", -2.0f, 2.0f));
    add(&spec, sl_op_random_scale("image", 13, 0.8f, 1.2f));
    sl__cuda_plan plan;
    expect_plan_matches(&spec, &plan);
    cr_expect_eq(plan.fields[0].nlaunches, 1);
    cr_expect_eq(plan.fields[0].launches[0].kind, SL__LAUNCH_NORMALIZE_U8_CHAIN);
    cr_expect(plan.fields[0].launches[0].per_row);
    cr_expect_eq(plan.row_steps, 4, "noise, brightness, clip and scale are the row's steps");
    sl_source_free(src);
}

Test(cuda_plan, random_steps_on_floats_with_a_one_channel_normalize)
{
    sl_source *src = fixture(SL_FIXTURE_FLOATS, 1);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    const float m = 0.5f, s = 4.0f;
    add(&spec, sl_op_normalize("x", 1, &m, &s));
    add(&spec, sl_op_gaussian_noise("x", 21, 0.05f));
    add(&spec, sl_op_random_scale("x", 22, 0.5f, 1.5f));
    add(&spec, sl_op_gaussian_noise("x", 23, 0.01f));
    sl__cuda_plan plan;
    expect_plan_matches(&spec, &plan);
    cr_expect_eq(plan.fields[0].nlaunches, 1);
    cr_expect(plan.fields[0].launches[0].per_row);
    cr_expect_eq(plan.row_steps, 4);
    sl_source_free(src);
}

Test(cuda_plan, an_op_without_a_device_kernel_is_refused_by_name)
{
    sl_source *src = fixture(SL_FIXTURE_IMAGES, 3);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, 16, 7);
    add(&spec, sl_op_random_hflip("image", 3, 0.5f));
    sl_pipeline *p;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    sl__cuda_plan plan;
    cr_expect_eq(sl__cuda_plan_build("cuda", p, &plan, &err), SL_EUNSUPPORTED);
    cr_expect(strstr(err.msg, "random_hflip") != NULL, "message: %s", err.msg);
    sl_pipeline_free(p);
    sl_source_free(src);
}
