/* The random arithmetic ops on their own: gaussian_noise, random_brightness
 * and random_scale draw exactly what docs/determinism.md says (recomputed
 * here from Philox, not from the engine), stay in their ranges, give the
 * same bits through every executor and kernel table, and refuse bad
 * parameters naming the op and the field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels/normal.h"
#include "kernels_under_test.h"
#include "sluice/adapters/adapter.h"
#include "sluice/exec/executors.h"
#include "sluice/pipeline/pipeline.h"
#include "support.h"

enum { H = 7, W = 11, V = H * W, SEED = 3 };

/* A memory source of n f32 elements [H, W], all equal to value. */
static sl_source *constant_source(float **data, int64_t n, float value)
{
    *data = malloc((size_t)n * V * sizeof(float));
    for (int64_t i = 0; i < n * V; i++)
        (*data)[i] = value;
    return test_source_x(SL_F32, H, W, n, *data);
}

static sl_pipeline *pipeline_of(sl_source *src, int64_t batch, const sl_op *ops, int nops, sl_status *status,
                                sl_err *err)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, batch, SEED);
    spec.shuffle = false;
    for (int i = 0; i < nops; i++)
        cr_assert_eq(sl_pipeline_spec_add(&spec, ops[i], err), SL_OK);
    sl_pipeline *p = NULL;
    *status = sl_pipeline_create(&spec, &p, err);
    return p;
}

/* One unshuffled batch of all n elements at epoch `epoch` into out. */
static void run_ops(sl_source *src, int64_t n, const sl_op *ops, int nops, const sl_kernel_table *kernels,
                    int64_t epoch, float *out)
{
    sl_err err = {0};
    sl_status st;
    sl_pipeline *p = pipeline_of(src, n, ops, nops, &st, &err);
    cr_assert_eq(st, SL_OK, "%s", err.msg);
    sl_batch *b;
    cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), n, &b, &err), SL_OK);
    cr_assert_eq(sl_pipeline_produce(p, kernels, (sl_position){epoch, 0}, b, &err), SL_OK, "%s", err.msg);
    memcpy(out, b->fields[0].data, sl_tensor_nbytes(&b->fields[0]));
    sl_batch_free(b);
    sl_pipeline_free(p);
}

/* Word `word` of draw `draw` of an op's stream for one element. */
static uint32_t draw_word(uint32_t op_id, int64_t element, int64_t epoch, uint32_t draw, int word)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, draw), sl_philox_key_for(SEED, op_id))
        .v[word];
}

Test(random_brightness, brightness_adds_the_documented_offset_within_delta)
{
    enum { N = 4000 };
    float *data, *out = malloc((size_t)N * V * sizeof(float));
    sl_source *src = constant_source(&data, N, 0.0f);
    const float delta = 0.2f;
    sl_op op = sl_op_random_brightness("x", 5, delta);
    run_ops(src, N, &op, 1, sl_kernels_reference(), 1, out);
    double sum = 0, lo = 1, hi = -1;
    for (int64_t e = 0; e < N; e++) {
        /* Top 24 bits k of word 0: d = delta (k - 2^23) / 2^23. */
        uint32_t k = draw_word(5, e, 1, 0, 0) >> 8;
        float expected = delta * ((float)((int32_t)k - (1 << 23)) / 8388608.0f);
        for (int i = 0; i < V; i++)
            cr_assert_eq(out[e * V + i], expected, "element %lld value %d: %.9g vs %.9g", (long long)e, i,
                         out[e * V + i], expected);
        cr_assert(expected >= -delta && expected <= delta);
        sum += expected;
        lo = fmin(lo, expected);
        hi = fmax(hi, expected);
    }
    /* Uniform on [-delta, delta]: sd delta / sqrt 3; the extremes come
     * within 4 delta / N of the ends with probability 1 - 2e^-4 each. */
    cr_expect_leq(fabs(sum / N), 5 * delta / sqrt(3.0 * N), "mean offset %.5f", sum / N);
    cr_expect_leq(lo, -delta + 8.0 * delta / N);
    cr_expect_geq(hi, delta - 8.0 * delta / N);
    sl_source_free(src);
    free(data);
    free(out);
}

Test(random_scale, scale_multiplies_by_the_documented_factor_within_its_range)
{
    enum { N = 4000 };
    float *data, *out = malloc((size_t)N * V * sizeof(float));
    sl_source *src = constant_source(&data, N, 1.0f);
    const float lo = 0.8f, hi = 1.2f;
    sl_op op = sl_op_random_scale("x", 6, lo, hi);
    run_ops(src, N, &op, 1, sl_kernels_reference(), 0, out);
    double sum = 0;
    for (int64_t e = 0; e < N; e++) {
        float u = (float)(draw_word(6, e, 0, 0, 0) >> 8) / 16777216.0f;
        float expected = lo + (hi - lo) * u;
        expected = expected > hi ? hi : expected;
        for (int i = 0; i < V; i++)
            cr_assert_eq(out[e * V + i], expected, "element %lld value %d", (long long)e, i);
        cr_assert(expected >= lo && expected <= hi, "factor %.9g", expected);
        sum += expected;
    }
    cr_expect_leq(fabs(sum / N - 1.0), 5 * 0.2 / sqrt(3.0 * N), "mean factor %.5f", sum / N);
    sl_source_free(src);
    free(data);
    free(out);
}

/* With x = 0 and sigma = 1 the output is the variate itself: value
 * i = 64 g + 16 k + j of an element takes word k of block 16 g + j. */
Test(gaussian_noise, noise_draws_each_value_from_the_documented_word)
{
    enum { N = 40 };
    float *data, out[N * V];
    sl_source *src = constant_source(&data, N, 0.0f);
    sl_op op = sl_op_gaussian_noise("x", 9, 1.0f);
    run_ops(src, N, &op, 1, sl_kernels_reference(), 2, out);
    for (int64_t e = 0; e < N; e++)
        for (int i = 0; i < V; i++) {
            uint32_t draw = (uint32_t)(16 * (i / 64) + i % 16);
            float expected = sl__normal_f32(draw_word(9, e, 2, draw, (i % 64) / 16));
            cr_assert_eq(out[e * V + i], expected, "element %lld value %d: %.9g vs %.9g", (long long)e, i,
                         out[e * V + i], expected);
        }
    sl_source_free(src);
    free(data);
}

/* The three ops chained after a normalize, on random values: every kernel
 * table and executor gives the reference's bits, the noise's spread is
 * sigma's, and another epoch draws other numbers. */
Test(random_ops, every_executor_and_table_gives_the_reference_bits)
{
    enum { N = 96 };
    float *data;
    sl_source *src = constant_source(&data, N, 0.0f);
    for (int64_t i = 0; i < N * V; i++)
        data[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    const float mean = 0.5f, sd = 0.25f;
    const sl_op ops[] = {
        sl_op_normalize("x", 1, &mean, &sd),   sl_op_gaussian_noise("x", 1, 0.05f),
        sl_op_random_brightness("x", 2, 0.2f), sl_op_random_scale("x", 3, 0.8f, 1.2f),
        sl_op_gaussian_noise("x", 4, 0.5f),    sl_op_clip("x", -3.0f, 3.0f),
    };
    const int nops = sizeof ops / sizeof ops[0];
    float *reference = malloc(sizeof(float) * N * V), *other = malloc(sizeof(float) * N * V);
    run_ops(src, N, ops, nops, sl_kernels_reference(), 0, reference);
    run_ops(src, N, ops, nops, sl_test_kernels(), 0, other);
    cr_assert(memcmp(reference, other, sizeof(float) * N * V) == 0, "optimized kernels differ from the reference");

    /* fused and iter with batches of 7 (a ragged last batch). */
    sl_err err = {0};
    sl_status st;
    sl_pipeline *p = pipeline_of(src, 7, ops, nops, &st, &err);
    cr_assert_eq(st, SL_OK, "%s", err.msg);
    const char *adapters[] = {"fused", "iter"};
    for (int a = 0; a < 2; a++) {
        cr_assert_eq(test_run_adapter_field0(adapters[a], p, other, sizeof(float) * V), N);
        cr_assert(memcmp(reference, other, sizeof(float) * N * V) == 0, "%s differs from the reference", adapters[a]);
    }
    sl_pipeline_free(p);

    run_ops(src, N, ops, nops, sl_kernels_reference(), 1, other);
    int64_t same = 0;
    for (int64_t i = 0; i < N * V; i++)
        same += reference[i] == other[i];
    cr_expect_lt(same, N * V / 100, "epoch 1 repeats %lld of epoch 0's values", (long long)same);
    sl_source_free(src);
    free(data);
    free(reference);
    free(other);
}

static void expect_refused(sl_op op, sl_dtype dtype, const char *needle)
{
    uint8_t bytes[2 * V * 4] = {0};
    sl_source *src = test_source_x(dtype, H, W, 2, bytes);
    sl_err err = {0};
    sl_status st;
    sl_pipeline *p = pipeline_of(src, 2, &op, 1, &st, &err);
    cr_expect_eq(st, SL_EINVAL, "expected a refusal: %s", needle);
    cr_expect(strstr(err.msg, needle) != NULL, "message lacks \"%s\": %s", needle, err.msg);
    sl_pipeline_free(p);
    sl_source_free(src);
}

Test(random_ops, refusals_name_the_op_and_field)
{
    expect_refused(sl_op_gaussian_noise("x", 1, 0.1f), SL_U8, "op 0: gaussian_noise takes f32, field 'x' is u8");
    expect_refused(sl_op_gaussian_noise("x", 1, -0.1f), SL_F32,
                   "op 0: gaussian_noise on field 'x' needs a finite sigma");
    expect_refused(sl_op_gaussian_noise("x", 1, NAN), SL_F32, "needs a finite sigma >= 0, got nan");
    expect_refused(sl_op_random_brightness("x", 1, -1.0f), SL_F32, "op 0: random_brightness on field 'x' needs");
    expect_refused(sl_op_random_brightness("x", 1, 0.1f), SL_I32, "random_brightness takes f32, field 'x' is i32");
    expect_refused(sl_op_random_scale("x", 1, 1.2f, 0.8f), SL_F32,
                   "op 0: random_scale on field 'x' needs finite lo <= hi, got [1.2, 0.8]");
    expect_refused(sl_op_random_scale("x", 1, 0.0f, INFINITY), SL_F32, "random_scale on field 'x' needs finite");
}

Test(random_ops, names_round_trip)
{
    const char *names[] = {"gaussian_noise", "random_brightness", "random_scale"};
    const sl_op_kind kinds[] = {SL_OP_GAUSSIAN_NOISE, SL_OP_RANDOM_BRIGHTNESS, SL_OP_RANDOM_SCALE};
    for (int i = 0; i < 3; i++) {
        sl_op_kind kind;
        cr_assert(sl_op_kind_parse(names[i], &kind));
        cr_expect_eq(kind, kinds[i]);
        cr_expect_str_eq(sl_op_kind_name(kinds[i]), names[i]);
        cr_expect(sl_op_is_elementwise(kinds[i]), "%s joins the fused tile chain", names[i]);
    }
}
