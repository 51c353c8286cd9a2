/* XFMR-1, per-element vs batched vs fused: the standard checks (whose
 * determinism and equivalence checks include the per-element mode), then
 * the three modes bit-identical over two epochs with and without workers,
 * every output rebuilt from the fixture bytes by the ops' definitions and
 * an independent re-implementation of the keyed draws, the turns uniform,
 * an element's output independent of its batch, and the records carrying
 * the speedups between the modes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(xfmr1, "XFMR-1", "32x32")

enum { SIDE = 32, CHANNELS = 3, CROP = 28, BORDER = (SIDE - CROP) / 2, VALUES = SIDE * SIDE * CHANNELS };
enum { CROP_OP = 1, ROT90_OP = 2, EPOCHS = 2, N = 2000 };
static const float mean[3] = {123.675f, 116.28f, 103.53f};
static const float stddev[3] = {58.395f, 57.12f, 57.375f};

static void run_epochs(const sl_scenario_instance *instance, const char *adapter, int workers, int threads,
                       run_output *out)
{
    sl_run_request request = {
        .nbatches = EPOCHS * sl_pipeline_batches_per_epoch(instance->pipeline), .workers = workers, .threads = threads};
    harness_run_request(instance, adapter, &request, out);
}

static void expect_identical(const run_output *a, const run_output *b, const char *what)
{
    cr_assert_eq(a->rows, b->rows, "%s", what);
    cr_assert(memcmp(a->ids, b->ids, (size_t)a->rows * sizeof *a->ids) == 0, "%s: element order differs", what);
    for (int f = 0; f < a->nfields; f++)
        for (int64_t r = 0; r < a->rows; r++)
            cr_assert(memcmp(harness_row(a, f, r), harness_row(b, f, r), a->row_bytes[f]) == 0,
                      "%s: field %d differs at row %lld (element %lld)", what, f, (long long)r, (long long)a->ids[r]);
}

Test(xfmr1, per_element_batched_and_fused_are_bit_identical_over_two_epochs)
{
    sl_scenario_instance *instance = harness_build("XFMR-1", "32x32");
    run_output per_element, others;
    run_epochs(instance, "per-element", 0, 1, &per_element);
    cr_assert_eq(per_element.rows, EPOCHS * N);
    static const struct {
        const char *adapter;
        int workers, threads;
        const char *what;
    } runs[] = {
        {"reference", 0, 1, "reference"}, {"per-element", 2, 1, "per-element with 2 workers"},
        {"iter", 0, 1, "batched"},        {"iter", 2, 1, "batched with 2 workers"},
        {"fused", 0, 1, "fused"},         {"fused", 0, 2, "fused on 2 threads"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        run_epochs(instance, runs[i].adapter, runs[i].workers, runs[i].threads, &others);
        expect_identical(&per_element, &others, runs[i].what);
        harness_release(&others);
    }
    harness_release(&per_element);
    sl_scenario_instance_free(instance);
}

/* The keyed draws as docs/determinism.md tables them, written here from
 * that table and Philox's public functions, not from the ops' code. */
static sl_philox_ctr draw(uint32_t op, int64_t element, int64_t epoch)
{
    return sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, 0), sl_philox_key_for(42, op));
}

static int turns_of(int64_t element, int64_t epoch)
{
    return (int)(((uint64_t)draw(ROT90_OP, element, epoch).v[0] * 4) >> 32);
}

/* The output of one element from its u8 pixels: normalize ((x - mean) times
 * the float 1 / std), crop at the keyed offset and pad back centred, then
 * numpy.rot90 by k: out[y][x] = cropped[x][n-1-y] for one turn, and so on. */
static void expected_output(const uint8_t *image, int64_t element, int64_t epoch, float *out)
{
    static float normalized[VALUES], cropped[VALUES];
    for (int i = 0; i < VALUES; i++) {
        int c = i % CHANNELS;
        normalized[i] = ((float)image[i] - mean[c]) * (1.0f / stddev[c]);
    }
    sl_philox_ctr offsets = draw(CROP_OP, element, epoch);
    int oy = (int)(((uint64_t)offsets.v[0] * (SIDE - CROP + 1)) >> 32);
    int ox = (int)(((uint64_t)offsets.v[1] * (SIDE - CROP + 1)) >> 32);
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            int cy = y - BORDER, cx = x - BORDER;
            bool inside = cy >= 0 && cy < CROP && cx >= 0 && cx < CROP;
            for (int c = 0; c < CHANNELS; c++)
                cropped[(y * SIDE + x) * CHANNELS + c] =
                    inside ? normalized[((cy + oy) * SIDE + (cx + ox)) * CHANNELS + c] : 0.0f;
        }
    int k = turns_of(element, epoch), n = SIDE;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            int sy = k == 0 ? y : k == 1 ? x : k == 2 ? n - 1 - y : n - 1 - x;
            int sx = k == 0 ? x : k == 1 ? n - 1 - y : k == 2 ? n - 1 - x : y;
            memcpy(&out[(y * n + x) * CHANNELS], &cropped[(sy * n + sx) * CHANNELS], CHANNELS * sizeof(float));
        }
}

Test(xfmr1, every_output_is_its_image_normalized_cropped_and_turned_by_its_keyed_k)
{
    sl_scenario_instance *instance = harness_build("XFMR-1", "32x32");
    run_output out;
    run_epochs(instance, "per-element", 0, 1, &out);
    static float expected[VALUES];
    int64_t turns[4] = {0};
    int64_t ambiguous = 0;
    for (int64_t r = 0; r < out.rows; r++) {
        int64_t epoch = r / N, element = out.ids[r];
        const uint8_t *image = sl_source_map(instance->fixture, 0, (size_t)element * VALUES, VALUES);
        cr_assert_not_null(image);
        expected_output(image, element, epoch, expected);
        cr_assert(memcmp(harness_row(&out, 0, r), expected, sizeof expected) == 0,
                  "row %lld (element %lld, epoch %lld, k %d) is not its image normalized, cropped and turned",
                  (long long)r, (long long)element, (long long)epoch, turns_of(element, epoch));
        turns[turns_of(element, epoch)]++;
        /* The output tells its turn apart: turning the expected image any
         * other number of times gives other bytes (noise images have no
         * rotational symmetry). */
        float turned[VALUES];
        for (int j = 1; j < 4; j++) {
            sl_kernels_reference()->rot90(expected, turned, SIDE, CHANNELS * sizeof(float), j);
            ambiguous += memcmp(turned, expected, sizeof turned) == 0;
        }
        cr_assert_eq(((const int32_t *)out.bytes[1])[r],
                     *(const int32_t *)sl_source_map(instance->fixture, 1, (size_t)element * 4, 4),
                     "row %lld: the label left its image", (long long)r);
    }
    cr_expect_eq(ambiguous, 0, "%lld outputs equal a turn of themselves", (long long)ambiguous);
    /* 4000 draws, p = 1/4 each: sd = sqrt(4000 x 3/16) ~ 27.4; 5 sd = 137. */
    for (int k = 0; k < 4; k++)
        cr_expect(llabs(turns[k] - EPOCHS * N / 4) < 137, "k = %d came %lld times of %d", k, (long long)turns[k],
                  EPOCHS * N);
    harness_release(&out);
    sl_scenario_instance_free(instance);
}

Test(xfmr1, an_elements_output_does_not_depend_on_its_batch_or_the_mode)
{
    sl_scenario_instance *base = harness_build("XFMR-1", "32x32");
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.batch_override = 100;
    sl_scenario_instance *other = harness_build_with("XFMR-1", "32x32", &options);
    run_output a, b;
    run_epochs(base, "fused", 0, 1, &a);
    run_epochs(other, "per-element", 2, 1, &b);
    cr_assert_eq(a.rows, b.rows);
    cr_assert_neq(a.batches, b.batches);
    for (int64_t r = 0; r < a.rows; r++) {
        int64_t epoch = r / N;
        int64_t match = harness_find_element(&b, a.ids[r], epoch * N, (epoch + 1) * N);
        cr_assert_geq(match, 0);
        cr_assert(memcmp(harness_row(&a, 0, r), harness_row(&b, 0, match), a.row_bytes[0]) == 0,
                  "element %lld of epoch %lld differs between fused at bs 128 and per-element at bs 100",
                  (long long)a.ids[r], (long long)epoch);
    }
    harness_release(&a);
    harness_release(&b);
    sl_scenario_instance_free(base);
    sl_scenario_instance_free(other);
}

Test(xfmr1, records_carry_each_modes_time_and_the_speedups_between_them)
{
    sl_scenario_instance *instance = harness_build("XFMR-1", "32x32");
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 3;
    options.skip_probes = true;
    sl_record record;
    sl_err err = {0};
    cr_assert_eq(sl_bench_run(instance, sl_adapter_find("per-element"), &options, &record, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(record.outcome, SL_RECORD_OK, "%s", record.reason);
    const sl_record_metric *per_element = harness_metric(&record, "per_element_p50_ns_per_batch");
    const sl_record_metric *batched = harness_metric(&record, "batched_p50_ns_per_batch");
    const sl_record_metric *fused = harness_metric(&record, "fused_p50_ns_per_batch");
    const sl_record_metric *ratios[3] = {harness_metric(&record, "batched_speedup_over_per_element"),
                                         harness_metric(&record, "fused_speedup_over_per_element"),
                                         harness_metric(&record, "fused_speedup_over_batched")};
    const double expected[3] = {per_element->value / batched->value, per_element->value / fused->value,
                                batched->value / fused->value};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(ratios[i]->scope, SL_METRIC_SCENARIO);
        cr_expect_str_eq(ratios[i]->unit, "ratio");
        cr_expect(fabs(ratios[i]->value - expected[i]) <= 1e-12 * expected[i], "%s is %g, not %g", ratios[i]->name,
                  ratios[i]->value, expected[i]);
    }
    cr_expect_gt(per_element->value, 0.0);
    cr_expect_gt(batched->value, 0.0);
    cr_expect_gt(fused->value, 0.0);
    cr_expect_eq(per_element->scope, SL_METRIC_SCENARIO);
    sl_record_release(&record);
    sl_scenario_instance_free(instance);
}
