/* TAB-2, sparse features (DLRM): the standard checks, then the scenario's
 * property over a whole epoch, each part recomputed from the fixture's raw
 * rows rather than taken from the pipeline: bag offsets rise by each bag's
 * length (0 for a missing id, 1 otherwise) and end at the column's id count;
 * every hashed id is the definition's hash of its raw id and lies below its
 * table size; log1p lies within its stated bound of libm's double log1p. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "ulp_error.h"

SL_CORPUS_STANDARD_TESTS(tab2, "TAB-2", "criteo")

enum { DENSE = 13, CATEGORICAL = 26, ROWS = 50000, BATCH = 1024 };

/* docs/determinism.md's bound for log1p, in ulps of the exact value. */
#define LOG1P_MAX_ULP 0.835

/* SplitMix64's finalizer from its published constants. */
static uint64_t splitmix64_finalizer(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

typedef struct epoch {
    sl_scenario_instance *instance;
    run_output out;
    int dense, sparse, offsets; /* field indices in the output */
    const float *raw_dense;     /* the fixture's rows */
    const int64_t *raw_ids;
    const int64_t *table_sizes; /* as the pipeline was given them */
} epoch;

static void run_epoch(epoch *e, const char *adapter)
{
    e->instance = harness_build("TAB-2", "criteo");
    harness_run(e->instance, adapter, 0, 0, (sl_position){0, 0}, 0, &e->out);
    cr_assert_eq(e->out.rows, ROWS);
    const sl_schema *schema = sl_pipeline_output_schema(e->instance->pipeline);
    e->dense = sl_schema_find(schema, "dense");
    e->sparse = sl_schema_find(schema, "sparse");
    e->offsets = sl_schema_find(schema, "offsets");
    cr_assert(e->dense >= 0 && e->sparse >= 0 && e->offsets >= 0, "TAB-2 outputs dense, sparse and offsets");
    const sl_source *fx = e->instance->fixture;
    e->raw_dense = sl_source_map(fx, 0, 0, sl_source_field_bytes(fx, 0));
    e->raw_ids = sl_source_map(fx, 1, 0, sl_source_field_bytes(fx, 1));
    cr_assert(e->raw_dense && e->raw_ids);
    const sl_pipeline_spec *spec = sl_pipeline_get_spec(e->instance->pipeline);
    e->table_sizes = NULL;
    for (int i = 0; i < spec->nops; i++)
        if (spec->ops[i].kind == SL_OP_HASH_IDS)
            e->table_sizes = spec->ops[i].u.hash.sizes;
    cr_assert_not_null(e->table_sizes);
}

static void release_epoch(epoch *e)
{
    harness_release(&e->out);
    sl_scenario_instance_free(e->instance);
}

Test(tab2, bag_offsets_rise_by_bag_length_and_end_at_the_id_count)
{
    epoch e;
    run_epoch(&e, "fused");
    int64_t empty_bags = 0, batches = 0;
    for (int64_t first = 0; first < ROWS; first += BATCH, batches++) {
        int64_t rows = ROWS - first < BATCH ? ROWS - first : BATCH;
        int64_t batch_total = 0, batch_ends = 0;
        for (int j = 0; j < CATEGORICAL; j++) {
            int64_t previous = 0, present = 0;
            for (int64_t r = 0; r < rows; r++) {
                int64_t id = e.out.ids[first + r];
                bool missing = e.raw_ids[id * CATEGORICAL + j] < 0;
                present += !missing;
                empty_bags += missing;
                const int64_t *ends = harness_row(&e.out, e.offsets, first + r);
                int64_t step = ends[j] - previous;
                cr_assert_eq(step, missing ? 0 : 1,
                             "batch %lld row %lld column %d: offsets step by %lld for a bag of %d ids",
                             (long long)batches, (long long)r, j, (long long)step, missing ? 0 : 1);
                previous = ends[j];
            }
            /* The column's last offset is its id count in the batch. */
            cr_assert_eq(previous, present, "batch %lld column %d ends at %lld, holds %lld ids", (long long)batches, j,
                         (long long)previous, (long long)present);
            batch_total += present;
            batch_ends += previous;
        }
        cr_assert_eq(batch_ends, batch_total);
    }
    cr_assert_eq(batches, (ROWS + BATCH - 1) / BATCH);
    /* Columns j with j mod 4 = 1, 2, 3 miss 10%, 20%, 30% of their values
     * (18 such columns, 1.2 expected misses in total per row on average), so
     * the offsets did step by zero, many times: the test saw empty bags. */
    cr_expect_gt(empty_bags, (int64_t)ROWS, "only %lld empty bags in the epoch", (long long)empty_bags);
    release_epoch(&e);
}

Test(tab2, hashed_ids_are_their_raw_ids_hash_below_the_table_size)
{
    epoch e;
    run_epoch(&e, "iter");
    int64_t hits_top_half = 0;
    for (int64_t r = 0; r < ROWS; r++) {
        int64_t element = e.out.ids[r];
        const int64_t *hashed = harness_row(&e.out, e.sparse, r);
        for (int j = 0; j < CATEGORICAL; j++) {
            int64_t raw = e.raw_ids[element * CATEGORICAL + j], size = e.table_sizes[j];
            if (raw < 0) {
                cr_assert_eq(hashed[j], -1, "element %lld column %d: a missing id became %lld", (long long)element, j,
                             (long long)hashed[j]);
                continue;
            }
            cr_assert(hashed[j] >= 0 && hashed[j] < size, "element %lld column %d: id %lld is outside [0, %lld)",
                      (long long)element, j, (long long)hashed[j], (long long)size);
            uint64_t want = (splitmix64_finalizer((uint64_t)raw) >> 32) % (uint64_t)size;
            cr_assert_eq(hashed[j], (int64_t)want, "element %lld column %d: raw id %lld hashed to %lld, expected %llu",
                         (long long)element, j, (long long)raw, (long long)hashed[j], (unsigned long long)want);
            hits_top_half += hashed[j] >= size / 2;
        }
    }
    /* A hash that spreads ids uses both halves of the tables. */
    cr_expect_gt(hits_top_half, (int64_t)ROWS * CATEGORICAL / 3);
    release_epoch(&e);
}

Test(tab2, log1p_is_within_its_bound_of_double_log1p)
{
    epoch e;
    run_epoch(&e, "fused");
    double worst = 0.0;
    int64_t exact = 0;
    for (int64_t r = 0; r < ROWS; r++) {
        const float *x = e.raw_dense + e.out.ids[r] * DENSE;
        const float *y = harness_row(&e.out, e.dense, r);
        for (int j = 0; j < DENSE; j++) {
            double want = log1p((double)x[j]);
            double err = ulp_error(y[j], want);
            if (err > worst)
                worst = err;
            exact += y[j] == (float)want;
        }
    }
    cr_expect_leq(worst, LOG1P_MAX_ULP, "a dense value is %.4f ulp from log1p", worst);
    /* Most values come out correctly rounded; this catches a log1p whose
     * errors, though bounded, are systematic. */
    cr_expect_gt(exact, (int64_t)ROWS * DENSE * 3 / 4, "only %lld of %lld values correctly rounded", (long long)exact,
                 (long long)ROWS * DENSE);
    release_epoch(&e);
}

Test(tab2, raw_rows_need_every_op)
{
    /* Guards the tests above against a fixture that makes an op a no-op:
     * raw ids far beyond the tables, dense values far beyond log scale. */
    sl_scenario_instance *instance = harness_build("TAB-2", "criteo");
    const sl_source *fx = instance->fixture;
    const int64_t *ids = sl_source_map(fx, 1, 0, sl_source_field_bytes(fx, 1));
    const float *dense = sl_source_map(fx, 0, 0, sl_source_field_bytes(fx, 0));
    int64_t beyond_2_32 = 0, above_1000 = 0;
    for (int64_t i = 0; i < (int64_t)ROWS * CATEGORICAL; i++)
        beyond_2_32 += ids[i] >= ((int64_t)1 << 32);
    for (int64_t i = 0; i < (int64_t)ROWS * DENSE; i++)
        above_1000 += dense[i] > 1000.0f;
    cr_expect_gt(beyond_2_32, (int64_t)ROWS * CATEGORICAL / 3);
    cr_expect_gt(above_1000, (int64_t)ROWS * DENSE / 4);
    sl_scenario_instance_free(instance);
}
