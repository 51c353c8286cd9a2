/* NLP-2, variable-length text: the standard checks for both variants, then
 * the scenario's property over whole epochs, recomputed from the fixture's
 * raw sequences: each batch is as wide as the smallest multiple of 128 that
 * holds its longest sequence; mask sums equal lengths; pads equal the pad
 * id; every element's tokens appear exactly once. Then what bucketing
 * promises (it only regroups the shuffled epoch's windows, into batches of
 * non-overlapping lengths, and wastes less padding), and the padding waste
 * each record reports. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(nlp2_padded, "NLP-2", "padded")
SL_CORPUS_STANDARD_TESTS(nlp2_bucketed, "NLP-2", "bucketed")

enum { N = 5000, BATCH = 32, CAPACITY = 512, MULTIPLE = 128, PAD = 0, WINDOW = 16 };

typedef struct epoch {
    sl_scenario_instance *instance;
    run_output out;
    int tokens, length, mask;
    const int32_t *raw_tokens, *raw_lengths;
} epoch;

static void run_epoch(epoch *e, const char *variant, const char *adapter, int workers)
{
    e->instance = harness_build("NLP-2", variant);
    harness_run(e->instance, adapter, workers, 0, (sl_position){0, 0}, 0, &e->out);
    cr_assert_eq(e->out.rows, N);
    const sl_schema *schema = sl_pipeline_output_schema(e->instance->pipeline);
    e->tokens = sl_schema_find(schema, "tokens");
    e->length = sl_schema_find(schema, "length");
    e->mask = sl_schema_find(schema, "mask");
    cr_assert(e->tokens >= 0 && e->length >= 0 && e->mask >= 0);
    const sl_source *fx = e->instance->fixture;
    e->raw_tokens = sl_source_map(fx, 0, 0, sl_source_field_bytes(fx, 0));
    e->raw_lengths = sl_source_map(fx, 1, 0, sl_source_field_bytes(fx, 1));
    cr_assert(e->raw_tokens && e->raw_lengths);
}

static void release_epoch(epoch *e)
{
    harness_release(&e->out);
    sl_scenario_instance_free(e->instance);
}

/* The width a batch must have: its longest sequence rounded up to a multiple
 * of 128, from the fixture's lengths. */
static int64_t expected_width(const epoch *e, int64_t first, int64_t rows)
{
    int64_t longest = 0;
    for (int64_t r = first; r < first + rows; r++)
        if (e->raw_lengths[e->out.ids[r]] > longest)
            longest = e->raw_lengths[e->out.ids[r]];
    int64_t width = (longest + MULTIPLE - 1) / MULTIPLE * MULTIPLE;
    return width < CAPACITY ? width : CAPACITY;
}

/* Checks an epoch against the fixture and returns its padding waste: the
 * fraction of the batches' token positions that are pads. */
static double check_epoch(const epoch *e)
{
    char *seen = calloc(N, 1);
    cr_assert_not_null(seen);
    int64_t real = 0, positions = 0, fixture_tokens = 0;
    for (int64_t first = 0; first < N; first += BATCH) {
        int64_t rows = N - first < BATCH ? N - first : BATCH;
        int64_t width = expected_width(e, first, rows);
        for (int64_t r = first; r < first + rows; r++) {
            int64_t element = e->out.ids[r];
            cr_assert(element >= 0 && element < N && !seen[element], "row %lld: element %lld twice or out of range",
                      (long long)r, (long long)element);
            seen[element] = 1;
            int32_t length = e->raw_lengths[element];
            const int32_t *raw = e->raw_tokens + element * CAPACITY;
            cr_assert_eq(harness_row_bytes(&e->out, e->tokens, r), (size_t)width * sizeof(int32_t),
                         "batch %lld: tokens are %zu bytes wide, expected a width of %lld", (long long)(first / BATCH),
                         harness_row_bytes(&e->out, e->tokens, r), (long long)width);
            cr_assert_eq(harness_row_bytes(&e->out, e->mask, r), (size_t)width);
            const int32_t *tokens = harness_row(&e->out, e->tokens, r);
            const uint8_t *mask = harness_row(&e->out, e->mask, r);
            int32_t out_length;
            memcpy(&out_length, harness_row(&e->out, e->length, r), sizeof out_length);
            cr_assert_eq(out_length, length);
            int64_t mask_sum = 0;
            for (int64_t i = 0; i < width; i++) {
                mask_sum += mask[i];
                cr_assert_eq(mask[i], i < length, "element %lld position %lld: mask %d with length %d",
                             (long long)element, (long long)i, mask[i], length);
                if (i < length)
                    cr_assert_eq(tokens[i], raw[i], "element %lld token %lld is %d, expected %d", (long long)element,
                                 (long long)i, tokens[i], raw[i]);
                else
                    cr_assert_eq(tokens[i], PAD, "element %lld position %lld past length %d holds %d, not the pad",
                                 (long long)element, (long long)i, length, tokens[i]);
            }
            cr_assert_eq(mask_sum, length, "element %lld: mask sums to %lld, length %d", (long long)element,
                         (long long)mask_sum, length);
            real += mask_sum;
            positions += width;
        }
    }
    /* Every element once, so every token of the data set once. */
    for (int64_t i = 0; i < N; i++) {
        cr_assert(seen[i], "element %lld is missing from the epoch", (long long)i);
        fixture_tokens += e->raw_lengths[i];
    }
    cr_assert_eq(real, fixture_tokens, "the epoch holds %lld tokens, the data set %lld", (long long)real,
                 (long long)fixture_tokens);
    free(seen);
    return 1.0 - (double)real / (double)positions;
}

Test(nlp2_padded, every_token_once_masks_and_pads_right)
{
    epoch e;
    run_epoch(&e, "padded", "iter", 2);
    double waste = check_epoch(&e);
    /* Lengths uniform in [10, 512], batches of 32: almost every batch holds
     * a sequence past 384 and pads to 512, wasting 1 - 261/512 ~ 0.49. */
    cr_expect(waste > 0.45 && waste < 0.53, "padding waste %.3f", waste);
    release_epoch(&e);
}

Test(nlp2_bucketed, every_token_once_masks_and_pads_right)
{
    epoch e;
    run_epoch(&e, "bucketed", "fused", 0);
    check_epoch(&e);
    release_epoch(&e);
}

/* The length range [lo, hi] of the batch starting at row first. */
static void batch_range(const epoch *e, int64_t first, int32_t *lo, int32_t *hi)
{
    int64_t rows = N - first < BATCH ? N - first : BATCH;
    *lo = CAPACITY + 1, *hi = -1;
    for (int64_t r = first; r < first + rows; r++) {
        int32_t l = e->raw_lengths[e->out.ids[r]];
        *lo = l < *lo ? l : *lo;
        *hi = l > *hi ? l : *hi;
    }
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

Test(nlp2_bucketed, bucketing_regroups_each_window_by_length)
{
    epoch plain, bucketed;
    run_epoch(&plain, "padded", "reference", 0);
    run_epoch(&bucketed, "bucketed", "iter", 1);
    int64_t per_window = (int64_t)WINDOW * BATCH;
    int64_t *a = malloc((size_t)per_window * sizeof *a), *b = malloc((size_t)per_window * sizeof *b);
    cr_assert(a && b);
    for (int64_t start = 0; start < N; start += per_window) {
        int64_t n = N - start < per_window ? N - start : per_window;
        /* The same elements as the shuffled order's window: bucketing only
         * regroups within it. */
        memcpy(a, plain.out.ids + start, (size_t)n * sizeof *a);
        memcpy(b, bucketed.out.ids + start, (size_t)n * sizeof *b);
        qsort(a, (size_t)n, sizeof *a, compare_i64);
        qsort(b, (size_t)n, sizeof *b, compare_i64);
        cr_assert(memcmp(a, b, (size_t)n * sizeof *a) == 0, "window at position %lld holds other elements",
                  (long long)start);
        /* Its batches are sorted chunks: no two overlap in length, except
         * at a shared boundary length. */
        for (int64_t x = start; x < start + n; x += BATCH)
            for (int64_t y = x + BATCH; y < start + n; y += BATCH) {
                int32_t xlo, xhi, ylo, yhi;
                batch_range(&bucketed, x, &xlo, &xhi);
                batch_range(&bucketed, y, &ylo, &yhi);
                cr_assert(xhi <= ylo || yhi <= xlo, "batches at rows %lld [%d, %d] and %lld [%d, %d] overlap",
                          (long long)x, xlo, xhi, (long long)y, ylo, yhi);
            }
    }
    /* The chunks come in a shuffled order, not by rising length: the
     * first window's batches are not already sorted. */
    int32_t lo0, hi0, lo1, hi1;
    int rising = 0;
    for (int k = 0; k + 1 < WINDOW; k++) {
        batch_range(&bucketed, (int64_t)k * BATCH, &lo0, &hi0);
        batch_range(&bucketed, (int64_t)(k + 1) * BATCH, &lo1, &hi1);
        rising += hi0 <= lo1;
    }
    cr_expect_lt(rising, WINDOW - 1, "the first window's batches come in rising length order");
    free(a);
    free(b);
    release_epoch(&plain);
    release_epoch(&bucketed);
}

Test(nlp2_bucketed, bucketing_halves_the_padding)
{
    epoch plain, bucketed;
    run_epoch(&plain, "padded", "fused", 0);
    run_epoch(&bucketed, "bucketed", "fused", 0);
    double plain_waste = check_epoch(&plain), bucketed_waste = check_epoch(&bucketed);
    /* A window's 512 sorted lengths make batches spanning about 31 lengths,
     * so a batch pads to the multiple of 128 just above its lengths: about
     * 0.2 waste against 0.49. */
    cr_expect_lt(bucketed_waste, 0.6 * plain_waste, "bucketed waste %.3f vs %.3f", bucketed_waste, plain_waste);
    release_epoch(&plain);
    release_epoch(&bucketed);
}

static void expect_waste_metric(const char *variant)
{
    epoch e;
    run_epoch(&e, variant, "reference", 0);
    double waste = check_epoch(&e);
    int64_t fixture_tokens = 0;
    for (int64_t i = 0; i < N; i++)
        fixture_tokens += e.raw_lengths[i];
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 2;
    options.skip_probes = true;
    const char *adapters[] = {"reference", "iter", "fused"};
    for (int a = 0; a < 3; a++) {
        sl_record record;
        sl_err err = {0};
        cr_assert_eq(sl_bench_run(e.instance, sl_adapter_find(adapters[a]), &options, &record, &err), SL_OK, "%s",
                     err.msg);
        const sl_record_metric *found = NULL, *capacity = NULL;
        for (int m = 0; m < record.nmetrics; m++) {
            if (strcmp(record.metrics[m].name, "padding_waste_fraction") == 0)
                found = &record.metrics[m];
            if (strcmp(record.metrics[m].name, "capacity_padding_waste_fraction") == 0)
                capacity = &record.metrics[m];
        }
        cr_assert(found && capacity, "%s/%s: the record lacks the padding metrics", variant, adapters[a]);
        cr_expect_eq(found->scope, SL_METRIC_SCENARIO);
        cr_expect_float_eq(found->value, waste, 1e-12, "%s/%s: metric %.6f, recomputed %.6f", variant, adapters[a],
                           found->value, waste);
        double at_capacity = 1.0 - (double)fixture_tokens / ((double)N * CAPACITY);
        cr_expect_float_eq(capacity->value, at_capacity, 1e-12, "%s/%s", variant, adapters[a]);
        sl_record_release(&record);
    }
    release_epoch(&e);
}

Test(nlp2_padded, records_report_the_padding_waste)
{
    expect_waste_metric("padded");
}

Test(nlp2_bucketed, records_report_the_padding_waste)
{
    expect_waste_metric("bucketed");
}
