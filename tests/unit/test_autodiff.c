/* The autodiff API (sluice/exec/autodiff.h) on small pipelines worked out by
 * hand: parameter layout, the VJPs of normalize, affine and dropout chained
 * by the tape, train and eval modes, the SGD step's rounding, and refusals
 * that name the op or field and leave the gradients untouched. PC-5's test
 * checks the same against finite differences at scale. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels_under_test.h"
#include "sluice/exec/autodiff.h"
#include "sluice/fixtures/fixtures.h"
#include "sluice/pipeline/pipeline.h"

/* Four f32 elements of 2 pixels x 3 channels, unshuffled, batch size 2. */
enum { VALUES = 6, COUNT = 2 };

static const float mean3[3] = {0.25f, 0.5f, 0.75f};
static const float std3[3] = {0.5f, 2.0f, 4.0f};
static const float scale3[3] = {2.0f, 3.0f, -1.0f};
static const float bias3[3] = {1.0f, -1.0f, 0.5f};

static sl_source *floats(void)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_FLOATS, .n = 4, .h = 1, .w = 2, .c = 3};
    sl_source *source;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&fixture, 42, &source, &err), SL_OK, "%s", err.msg);
    return source;
}

/* normalize, affine, dropout(p) in the given mode. */
static sl_pipeline_spec chain(const sl_source *source, float p, sl_mode mode)
{
    sl_pipeline_spec spec;
    sl_err err = {0};
    sl_pipeline_spec_init(&spec, source, COUNT, 42);
    spec.shuffle = false;
    spec.mode = mode;
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("x", 3, mean3, std3), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_affine("x", 3, scale3, bias3), &err), SL_OK);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_dropout("x", 9, p), &err), SL_OK);
    return spec;
}

Test(autodiff, parameters_are_laid_out_per_op)
{
    sl_source *source = floats();
    sl_pipeline_spec spec = chain(source, 0.5f, SL_MODE_TRAIN);
    cr_expect_eq(sl_op_param_count(&spec.ops[0]), 0);
    cr_expect_eq(sl_op_param_count(&spec.ops[1]), 6);
    cr_expect_eq(sl_op_param_count(&spec.ops[2]), 0);
    cr_expect_eq(*sl_op_param_at(&spec.ops[1], 1), 3.0f, "scale[1]");
    cr_expect_eq(*sl_op_param_at(&spec.ops[1], 5), 0.5f, "bias[2]");
    cr_expect_null(sl_op_param_at(&spec.ops[1], 6));
    cr_expect_null(sl_op_param_at(&spec.ops[1], -1));
    cr_expect_null(sl_op_param_at(&spec.ops[0], 0));
    sl_pipeline *p;
    sl_grads *g;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_grads_create(p, &g, &err), SL_OK);
    cr_expect_eq(g->nops, 3);
    cr_expect_eq(g->count, 6);
    const int64_t offsets[4] = {0, 0, 6, 6};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(g->offset[i], offsets[i], "offset[%d]", i);
    sl_grads_free(g);
    sl_pipeline_free(p);
    sl_source_free(source);
}

/* The batch's rows, the input cotangent and the affine gradients through
 * the tape, with dy[i] = i + 1 (a cotangent whose every value differs). */
typedef struct backward {
    float x[COUNT * VALUES], y[COUNT * VALUES], dy[COUNT * VALUES], dx[COUNT * VALUES];
    double grads[6];
} backward;

static void run_backward(const sl_source *source, const sl_pipeline_spec *spec, backward *out)
{
    sl_pipeline *p;
    sl_batch *b;
    sl_tape *tape;
    sl_grads *g;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), COUNT, &b, &err), SL_OK);
    cr_assert_eq(sl_tape_forward(p, sl_kernels_reference(), (sl_position){0, 0}, b, &tape, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(b->element_ids[0], 0, "unshuffled");
    memcpy(out->x, sl_source_map(source, 0, 0, sizeof out->x), sizeof out->x);
    memcpy(out->y, b->fields[0].data, sizeof out->y);
    for (int i = 0; i < COUNT * VALUES; i++)
        out->dy[i] = (float)(i + 1);
    cr_assert_eq(sl_grads_create(p, &g, &err), SL_OK);
    cr_assert_eq(sl_tape_backward(tape, "x", out->dy, out->dx, g, &err), SL_OK, "%s", err.msg);
    memcpy(out->grads, g->values + g->offset[1], sizeof out->grads);
    sl_grads_free(g);
    sl_tape_free(tape);
    sl_batch_free(b);
    sl_pipeline_free(p);
}

Test(autodiff, eval_mode_chains_the_vjps_of_normalize_and_affine)
{
    sl_source *source = floats();
    sl_pipeline_spec spec = chain(source, 0.5f, SL_MODE_EVAL);
    backward r;
    run_backward(source, &spec, &r);
    double dscale[3] = {0}, dbias[3] = {0};
    for (int i = 0; i < COUNT * VALUES; i++) {
        int c = i % 3;
        float n = (r.x[i] - mean3[c]) * (1.0f / std3[c]);
        /* Eval: dropout is the identity, forward and backward. */
        cr_assert_eq(r.y[i], n * scale3[c] + bias3[c], "value %d", i);
        /* dx = dy * scale * (1 / std), rounded after each product. */
        float expected = r.dy[i] * scale3[c] * (1.0f / std3[c]);
        cr_assert_eq(r.dx[i], expected, "dx[%d] = %g, expected %g", i, (double)r.dx[i], (double)expected);
        dscale[c] += (double)r.dy[i] * (double)n;
        dbias[c] += r.dy[i];
    }
    for (int c = 0; c < 3; c++) {
        cr_expect_eq(r.grads[c], dscale[c], "dscale[%d] = %.17g, expected %.17g", c, r.grads[c], dscale[c]);
        cr_expect_eq(r.grads[3 + c], dbias[c], "dbias[%d]", c);
    }
    /* dbias sums the cotangents of its channel: 1 + 4 + 7 + 10 for channel 0. */
    cr_expect_eq(r.grads[3], 22.0);
    sl_source_free(source);
}

Test(autodiff, training_mode_masks_the_cotangent_as_the_output)
{
    sl_source *source = floats();
    sl_pipeline_spec spec = chain(source, 0.5f, SL_MODE_TRAIN);
    backward r;
    run_backward(source, &spec, &r);
    int dropped = 0;
    for (int i = 0; i < COUNT * VALUES; i++) {
        int c = i % 3;
        float n = (r.x[i] - mean3[c]) * (1.0f / std3[c]);
        if (r.y[i] == 0.0f) {
            /* Dropped: no gradient reaches the input or the parameters. */
            cr_assert_eq(r.dx[i], 0.0f, "value %d is dropped, its cotangent must be 0", i);
            dropped++;
            continue;
        }
        cr_assert_eq(r.y[i], (n * scale3[c] + bias3[c]) * 2.0f, "kept values are doubled at p = 1/2");
        cr_assert_eq(r.dx[i], r.dy[i] * 2.0f * scale3[c] * (1.0f / std3[c]), "dx[%d]", i);
    }
    cr_expect(dropped > 0 && dropped < COUNT * VALUES, "%d of 12 dropped at p = 1/2", dropped);
    sl_source_free(source);
}

Test(autodiff, sgd_moves_each_parameter_by_lr_times_its_gradient)
{
    sl_source *source = floats();
    sl_pipeline_spec spec = chain(source, 0.0f, SL_MODE_TRAIN);
    sl_pipeline *p;
    sl_grads *g;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_grads_create(p, &g, &err), SL_OK);
    for (int k = 0; k < 6; k++)
        g->values[k] = 0.5 * (k + 1);
    cr_assert_eq(sl_sgd_step(&spec, g, 0.25, &err), SL_OK, "%s", err.msg);
    for (int c = 0; c < 3; c++) {
        cr_expect_eq(spec.ops[1].u.affine.scale[c], scale3[c] - 0.125f * (float)(c + 1), "scale[%d]", c);
        cr_expect_eq(spec.ops[1].u.affine.bias[c], bias3[c] - 0.125f * (float)(c + 4), "bias[%d]", c);
    }
    /* theta - lr g in double, rounded once to float. */
    sl_grads_zero(g);
    g->values[3] = 1.0 / 3.0;
    float before = spec.ops[1].u.affine.bias[0];
    cr_assert_eq(sl_sgd_step(&spec, g, 0.1, &err), SL_OK);
    cr_expect_eq(spec.ops[1].u.affine.bias[0], (float)((double)before - 0.1 / 3.0));
    /* Gradients of another pipeline are refused. */
    sl_pipeline_spec shorter = spec;
    shorter.nops = 2;
    cr_expect_eq(sl_sgd_step(&shorter, g, 1.0, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "3 ops") && strstr(err.msg, "2 ops"), "%s", err.msg);
    sl_grads_free(g);
    sl_pipeline_free(p);
    sl_source_free(source);
}

Test(autodiff, an_op_without_a_vjp_is_refused_by_name_before_anything_changes)
{
    sl_source *source = floats();
    sl_pipeline_spec spec = chain(source, 0.0f, SL_MODE_TRAIN);
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_clip("x", -1.0f, 1.0f), &err), SL_OK);
    sl_pipeline *p;
    sl_batch *b;
    sl_tape *tape;
    sl_grads *g;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), COUNT, &b, &err), SL_OK);
    cr_assert_eq(sl_tape_forward(p, sl_test_kernels(), (sl_position){0, 1}, b, &tape, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_grads_create(p, &g, &err), SL_OK);
    float dy[COUNT * VALUES], dx[COUNT * VALUES];
    for (int i = 0; i < COUNT * VALUES; i++)
        dy[i] = 1.0f;
    cr_expect_eq(sl_tape_backward(tape, "x", dy, dx, g, &err), SL_EUNSUPPORTED);
    cr_expect(strstr(err.msg, "op 3 (clip) on field 'x' has no VJP"), "%s", err.msg);
    for (int k = 0; k < g->count; k++)
        cr_expect_eq(g->values[k], 0.0, "a refused backward pass must not touch the gradients");
    cr_expect_eq(sl_tape_backward(tape, "y", dy, dx, g, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "no field 'y'"), "%s", err.msg);
    sl_grads_free(g);
    sl_tape_free(tape);
    sl_batch_free(b);
    sl_pipeline_free(p);
    sl_source_free(source);
}

Test(autodiff, only_f32_fields_have_cotangents_and_gradients_must_fit)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_IMAGES, .n = 4, .h = 2, .w = 2, .c = 3, .classes = 3};
    sl_source *source;
    sl_err err = {0};
    cr_assert_eq(sl_fixture_build(&fixture, 42, &source, &err), SL_OK, "%s", err.msg);
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, source, 2, 42);
    cr_assert_eq(sl_pipeline_spec_add(&spec, sl_op_normalize("image", 3, mean3, std3), &err), SL_OK);
    sl_pipeline *p;
    sl_batch *b;
    sl_tape *tape;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), 2, &b, &err), SL_OK);
    cr_assert_eq(sl_tape_forward(p, sl_kernels_reference(), (sl_position){0, 0}, b, &tape, &err), SL_OK);
    float dy[2 * 12] = {0}, dx[2 * 12];
    cr_expect_eq(sl_tape_backward(tape, "label", dy, dx, NULL, &err), SL_EUNSUPPORTED);
    cr_expect(strstr(err.msg, "'label' is i32"), "%s", err.msg);
    /* A u8 image normalized: its input cotangent is with respect to the
     * pixel value, dy / std per channel. */
    for (int i = 0; i < 24; i++)
        dy[i] = (float)i;
    cr_assert_eq(sl_tape_backward(tape, "image", dy, dx, NULL, &err), SL_OK, "%s", err.msg);
    for (int i = 0; i < 24; i++)
        cr_expect_eq(dx[i], dy[i] * (1.0f / std3[i % 3]));
    /* Gradients shaped for another pipeline are refused. */
    sl_source *other_source = floats();
    sl_pipeline_spec other = chain(other_source, 0.0f, SL_MODE_TRAIN);
    sl_pipeline *q;
    sl_grads *g;
    cr_assert_eq(sl_pipeline_create(&other, &q, &err), SL_OK);
    cr_assert_eq(sl_grads_create(q, &g, &err), SL_OK);
    cr_expect_eq(sl_tape_backward(tape, "image", dy, dx, g, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "do not fit"), "%s", err.msg);
    sl_grads_free(g);
    sl_pipeline_free(q);
    sl_source_free(other_source);
    sl_tape_free(tape);
    sl_batch_free(b);
    sl_pipeline_free(p);
    sl_source_free(source);
}

Test(autodiff, the_mode_is_part_of_the_spec)
{
    sl_source *source = floats();
    sl_pipeline_spec train = chain(source, 0.1f, SL_MODE_TRAIN), eval = chain(source, 0.1f, SL_MODE_EVAL);
    sl_pipeline *a, *b;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_create(&train, &a, &err), SL_OK);
    cr_assert_eq(sl_pipeline_create(&eval, &b, &err), SL_OK);
    cr_expect_neq(sl_pipeline_fingerprint(a), sl_pipeline_fingerprint(b), "a checkpoint must know the mode");
    cr_expect_str_eq(sl_mode_name(SL_MODE_TRAIN), "train");
    cr_expect_str_eq(sl_mode_name(SL_MODE_EVAL), "eval");
    sl_pipeline_free(a);
    sl_pipeline_free(b);
    eval.mode = (sl_mode)7;
    cr_expect_eq(sl_pipeline_create(&eval, &a, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "mode"), "%s", err.msg);
    /* Dropout refuses p outside [0, 1), naming the op. */
    const float bad[] = {-0.1f, 1.0f, NAN};
    for (int k = 0; k < 3; k++) {
        sl_pipeline_spec spec = chain(source, bad[k], SL_MODE_TRAIN);
        cr_expect_eq(sl_pipeline_create(&spec, &a, &err), SL_EINVAL);
        cr_expect(strstr(err.msg, "op 2: dropout probability"), "%s", err.msg);
    }
    sl_source_free(source);
}
