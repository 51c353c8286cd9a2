/* The ops that apply one float to every value: scale and multiply (x * value)
 * and add (x + value), each on its own, so that each has a suite named after
 * it (docs/testing.md lists the tests by op). Every value comes out as the
 * test's own float32 arithmetic gives it, with the reference kernels, the
 * table under test and the fused and iter executors, on values that round
 * (0.1, 1/3), overflow, underflow to subnormals and zero, and are signed
 * zeros, infinities and NaN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "kernels_under_test.h"
#include "sluice/adapters/adapter.h"
#include "sluice/pipeline/pipeline.h"
#include "support.h"

enum { N = 5, H = 3, W = 13, V = H * W, SEED = 11 };

/* Values chosen to catch a wrong operation, a fused multiply-add, a flush
 * of subnormals to zero or a lost sign; the rest of each element is filled
 * with a spread of ordinary values. */
static const float special[] = {0.1f, 1.0f / 3.0f, -7.25f,   3.0e38f,   -3.0e38f, 1.0e-38f,    -1.0e-40f,   1.0e-45f,
                                0.0f, -0.0f,       INFINITY, -INFINITY, NAN,      16777216.0f, -16777217.0f};

static void fill(float *data)
{
    const int nspecial = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < N * V; i++)
        data[i] = i < nspecial ? special[i] : (float)((i * 2654435761u) % 20011u) / 97.0f - 100.0f;
}

static sl_pipeline *pipeline_of(sl_source *src, int64_t batch, sl_op op)
{
    sl_pipeline_spec spec;
    sl_pipeline_spec_init(&spec, src, batch, SEED);
    spec.shuffle = false;
    sl_err err = {0};
    cr_assert_eq(sl_pipeline_spec_add(&spec, op, &err), SL_OK, "%s", err.msg);
    sl_pipeline *p = NULL;
    cr_assert_eq(sl_pipeline_create(&spec, &p, &err), SL_OK, "%s", err.msg);
    return p;
}

/* Whether got is want: the same bits, or both NaN (a NaN's payload is the
 * hardware's to choose). */
static bool same_value(float got, float want)
{
    if (isnan(want))
        return isnan(got);
    return memcmp(&got, &want, sizeof got) == 0;
}

static void expect_values(const float *got, const float *want, const char *op, const char *how)
{
    for (int i = 0; i < N * V; i++)
        cr_expect(same_value(got[i], want[i]), "%s through %s: value %d is %a, expected %a", op, how, i, (double)got[i],
                  (double)want[i]);
}

/* Runs op over the N elements in every way sluice runs it on the CPU and
 * expects want's values each time. */
static void expect_op_gives(sl_op op, const float *want)
{
    float data[N * V], got[N * V];
    fill(data);
    sl_source *src = test_source_x(SL_F32, H, W, N, data);
    sl_err err = {0};

    const sl_kernel_table *tables[] = {sl_kernels_reference(), sl_test_kernels()};
    for (int t = 0; t < 2; t++) {
        sl_pipeline *p = pipeline_of(src, N, op);
        sl_batch *b;
        cr_assert_eq(sl_batch_create(sl_pipeline_output_schema(p), N, &b, &err), SL_OK);
        cr_assert_eq(sl_pipeline_produce(p, tables[t], (sl_position){0, 0}, b, &err), SL_OK, "%s", err.msg);
        expect_values(b->fields[0].data, want, sl_op_kind_name(op.kind), tables[t]->name);
        sl_batch_free(b);
        sl_pipeline_free(p);
    }

    /* Batches of 2, so the last is ragged. */
    sl_pipeline *p = pipeline_of(src, 2, op);
    const char *adapters[] = {"fused", "iter"};
    for (int a = 0; a < 2; a++) {
        memset(got, 0, sizeof got);
        cr_assert_eq(test_run_adapter_field0(adapters[a], p, got, sizeof(float) * V), N);
        expect_values(got, want, sl_op_kind_name(op.kind), adapters[a]);
    }
    sl_pipeline_free(p);
    sl_source_free(src);
}

/* x * value for every value, rounded once to float32, as C computes it. */
static void products(float value, float *want)
{
    float data[N * V];
    fill(data);
    for (int i = 0; i < N * V; i++)
        want[i] = data[i] * value;
}

Test(scale, multiplies_every_value_by_the_factor_rounding_once)
{
    float want[N * V];
    const float factors[] = {0.1f, -2.5f, 1.0f / 3.0f, 1.0e10f};
    for (int f = 0; f < 4; f++) {
        products(factors[f], want);
        expect_op_gives(sl_op_scale("x", factors[f]), want);
    }
}

Test(multiply, multiplies_every_value_by_the_value_rounding_once)
{
    float want[N * V];
    const float values[] = {0.3f, -1.0f, 65537.0f, 1.0e-30f};
    for (int v = 0; v < 4; v++) {
        products(values[v], want);
        expect_op_gives(sl_op_multiply("x", values[v]), want);
    }
}

Test(add, adds_the_value_to_every_value_rounding_once)
{
    float data[N * V], want[N * V];
    fill(data);
    const float values[] = {0.1f, -100.0f, 3.0e38f, -0.0f};
    for (int v = 0; v < 4; v++) {
        for (int i = 0; i < N * V; i++)
            want[i] = data[i] + values[v];
        expect_op_gives(sl_op_add("x", values[v]), want);
    }
}
