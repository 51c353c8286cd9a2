#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

sl_scenario_instance *harness_build_with(const char *id, const char *variant_name, const sl_build_options *options)
{
    const sl_scenario *scenario = sl_scenario_find(id);
    cr_assert_not_null(scenario, "no scenario %s in the registry", id);
    const sl_variant *variant = sl_scenario_variant(scenario, variant_name);
    cr_assert_not_null(variant, "no variant %s of %s", variant_name, id);
    sl_scenario_instance *instance;
    sl_err err = {0};
    sl_status st = sl_scenario_instantiate(scenario, variant, options, &instance, &err);
    cr_assert_eq(st, SL_OK, "building %s/%s: %s", id, variant_name, err.msg);
    return instance;
}

sl_scenario_instance *harness_build(const char *id, const char *variant)
{
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    return harness_build_with(id, variant, &options);
}

typedef struct collector {
    run_output *out;
    sl_digest *digest;
    size_t capacity[SL_MAX_FIELDS];
    size_t offsets_capacity[SL_MAX_FIELDS];
    size_t ids_capacity;
} collector;

/* Grows a buffer geometrically: growing by one batch at a time would copy
 * the whole run once per batch, which sanitizer builds (whose realloc always
 * moves) turn into minutes. */
static void *reserve(void *buffer, size_t *capacity, size_t needed)
{
    if (needed <= *capacity)
        return buffer;
    size_t grown = *capacity ? *capacity : 4096;
    while (grown < needed)
        grown *= 2;
    buffer = realloc(buffer, grown);
    cr_assert_not_null(buffer, "cannot grow a collected run to %zu bytes", grown);
    *capacity = grown;
    return buffer;
}

static int collect(const sl_batch *b, void *user)
{
    collector *c = user;
    run_output *out = c->out;
    out->nfields = b->schema.nfields;
    for (int f = 0; f < b->schema.nfields; f++) {
        size_t n = sl_tensor_nbytes(&b->fields[f]);
        size_t row = b->count ? n / (size_t)b->count : 0;
        out->row_bytes[f] = sl_field_element_bytes(&b->schema.fields[f]);
        out->dtype[f] = b->schema.fields[f].dtype;
        cr_assert_leq(row, out->row_bytes[f], "field %d: rows of %zu bytes exceed the schema's %zu", f, row,
                      out->row_bytes[f]);
        out->row_offset[f] =
            reserve(out->row_offset[f], &c->offsets_capacity[f], (size_t)(out->rows + b->count + 1) * sizeof(size_t));
        for (int64_t r = 0; r <= b->count; r++)
            out->row_offset[f][out->rows + r] = out->size[f] + (size_t)r * row;
        out->bytes[f] = reserve(out->bytes[f], &c->capacity[f], out->size[f] + n);
        memcpy(out->bytes[f] + out->size[f], b->fields[f].data, n);
        out->size[f] += n;
    }
    out->ids = reserve(out->ids, &c->ids_capacity, (size_t)(out->rows + b->count) * sizeof *out->ids);
    memcpy(out->ids + out->rows, b->element_ids, (size_t)b->count * sizeof *out->ids);
    out->rows += b->count;
    out->batches++;
    sl_digest_add_batch(c->digest, b);
    return 0;
}

void harness_run(const sl_scenario_instance *instance, const char *adapter_name, int workers, int prefetch_depth,
                 sl_position start, int64_t nbatches, run_output *out)
{
    sl_run_request request = {
        .start = start, .nbatches = nbatches, .workers = workers, .prefetch_depth = prefetch_depth, .threads = 1};
    harness_run_request(instance, adapter_name, &request, out);
}

void harness_run_request(const sl_scenario_instance *instance, const char *adapter_name, const sl_run_request *given,
                         run_output *out)
{
    memset(out, 0, sizeof *out);
    sl_run_request request = *given;
    if (!request.kernels)
        request.kernels = sl_test_kernels();
    int64_t nbatches = request.nbatches;
    const sl_adapter *adapter = sl_adapter_find(adapter_name);
    cr_assert_not_null(adapter, "no adapter %s", adapter_name);
    if (nbatches <= 0)
        nbatches = request.nbatches = sl_pipeline_batches_per_epoch(instance->pipeline);
    int64_t *latency = calloc((size_t)nbatches, sizeof *latency);
    collector c = {.out = out, .digest = sl_digest_new()};
    sl_err err = {0};
    sl_status st = adapter->run(adapter, instance->pipeline, &request, collect, &c, latency, &err);
    cr_assert_eq(st, SL_OK, "%s on %s/%s: %s", adapter_name, instance->scenario->id, instance->variant->name, err.msg);
    cr_assert_eq(out->batches, nbatches);
    out->digest = sl_digest_value(c.digest);
    sl_digest_free(c.digest);
    free(latency);
}

void harness_release(run_output *out)
{
    for (int f = 0; f < SL_MAX_FIELDS; f++) {
        free(out->bytes[f]);
        free(out->row_offset[f]);
    }
    free(out->ids);
    memset(out, 0, sizeof *out);
}

/* A run_output a test assembles itself (CV-3's unmixed run) has no row
 * offsets: its rows are all row_bytes wide. */
const void *harness_row(const run_output *out, int field, int64_t row)
{
    if (!out->row_offset[field])
        return out->bytes[field] + (size_t)row * out->row_bytes[field];
    return out->bytes[field] + out->row_offset[field][row];
}

size_t harness_row_bytes(const run_output *out, int field, int64_t row)
{
    if (!out->row_offset[field])
        return out->row_bytes[field];
    return out->row_offset[field][row + 1] - out->row_offset[field][row];
}

int64_t harness_find_element(const run_output *out, int64_t element, int64_t from, int64_t to)
{
    for (int64_t r = from; r < to && r < out->rows; r++)
        if (out->ids[r] == element)
            return r;
    return -1;
}

/* Names the first field and row where two runs differ, for a readable
 * failure rather than two unequal digests. */
static void expect_same_output(const run_output *a, const run_output *b, const char *what)
{
    cr_assert_eq(a->rows, b->rows, "%s: %lld rows vs %lld", what, (long long)a->rows, (long long)b->rows);
    for (int64_t r = 0; r < a->rows; r++)
        cr_assert_eq(a->ids[r], b->ids[r], "%s: row %lld holds element %lld vs %lld", what, (long long)r,
                     (long long)a->ids[r], (long long)b->ids[r]);
    for (int f = 0; f < a->nfields; f++)
        for (int64_t r = 0; r < a->rows; r++) {
            cr_assert_eq(harness_row_bytes(a, f, r), harness_row_bytes(b, f, r),
                         "%s: field %d row %lld (element %lld) is %zu bytes wide vs %zu", what, f, (long long)r,
                         (long long)a->ids[r], harness_row_bytes(a, f, r), harness_row_bytes(b, f, r));
            cr_assert(memcmp(harness_row(a, f, r), harness_row(b, f, r), harness_row_bytes(a, f, r)) == 0,
                      "%s: field %d differs first at row %lld (element %lld)", what, f, (long long)r,
                      (long long)a->ids[r]);
        }
    cr_assert_eq(a->digest, b->digest, "%s: digests differ", what);
}

/* The same for a run on another kernel table than the reference's, in a
 * scenario with a stated tolerance: f32 fields within it, others bitwise. */
static void expect_close_output(const run_output *a, const run_output *b, double tolerance, const char *what)
{
    cr_assert_eq(a->rows, b->rows, "%s: %lld rows vs %lld", what, (long long)a->rows, (long long)b->rows);
    for (int64_t r = 0; r < a->rows; r++)
        cr_assert_eq(a->ids[r], b->ids[r], "%s: row %lld holds element %lld vs %lld", what, (long long)r,
                     (long long)a->ids[r], (long long)b->ids[r]);
    double worst = 0.0;
    for (int f = 0; f < a->nfields; f++)
        for (int64_t r = 0; r < a->rows; r++) {
            double row_worst;
            size_t first;
            size_t count = a->row_bytes[f] / sl_dtype_size(a->dtype[f]);
            bool ok = sl_values_match(a->dtype[f], harness_row(a, f, r), harness_row(b, f, r), count, tolerance,
                                      &row_worst, &first);
            cr_assert(ok, "%s: field %d row %lld (element %lld) value %zu differs by %.3g, beyond the tolerance %.3g",
                      what, f, (long long)r, (long long)a->ids[r], first, row_worst, tolerance);
            worst = row_worst > worst ? row_worst : worst;
        }
    cr_log_info("%s: largest difference %.3g (tolerance %.3g)", what, worst, tolerance);
}

void harness_check_golden(const char *id, const char *variant)
{
    sl_scenario_instance *instance = harness_build(id, variant);
    char path[512];
    sl_golden_path(sl_golden_default_dir(), instance->scenario, instance->variant, path, sizeof path);
    sl_golden *expected = NULL, *actual = NULL;
    sl_err err = {0};
    sl_status st = sl_golden_load_blessed(path, &expected, &err);
    cr_assert_eq(st, SL_OK, "%s (make it with `sluice bless --scenarios %s`, review it, commit it)", err.msg, id);
    st = sl_scenario_capture_golden(instance, &actual, &err);
    cr_assert_eq(st, SL_OK, "%s", err.msg);
    st = sl_golden_compare(expected, actual, &err);
    cr_expect_eq(st, SL_OK, "%s", err.msg);
    sl_golden_free(expected);
    sl_golden_free(actual);
    sl_scenario_instance_free(instance);
}

void harness_check_determinism(const char *id, const char *variant)
{
    /* Two fresh builds, fixture included, must agree: nothing may depend on
     * addresses, time or state left over from a previous run. */
    sl_scenario_instance *first = harness_build(id, variant);
    sl_scenario_instance *second = harness_build(id, variant);
    run_output a, b;
    harness_run(first, "reference", 0, 0, (sl_position){0, 0}, 0, &a);
    harness_run(second, "reference", 0, 0, (sl_position){0, 0}, 0, &b);
    expect_same_output(&a, &b, "two fresh reference runs");
    harness_release(&b);

    /* Worker counts, prefetch depths and execution modes. */
    static const struct {
        const char *adapter;
        int workers, depth, threads;
        const char *what;
    } runs[] = {
        {"iter", 0, 0, 1, "iter with 0 workers"},
        {"iter", 1, 0, 1, "iter with 1 worker"},
        {"iter", 2, 2, 1, "iter with 2 workers, depth 2"},
        {"iter", 2, 8, 1, "iter with 2 workers, depth 8"},
        {"fused", 0, 0, 1, "fused, 1 thread"},
        {"fused", 0, 0, 2, "fused, 2 threads"},
        /* Three threads split a batch into unequal slices. */
        {"fused", 0, 0, 3, "fused, 3 threads"},
        /* One element per call, then collated, with and without workers. */
        {"per-element", 0, 0, 1, "per-element with 0 workers"},
        {"per-element", 2, 0, 1, "per-element with 2 workers"},
    };
    /* With a stated tolerance, the optimized runs are held to it against the
     * reference, and to each other bit for bit: a kernel table's own
     * summation order must not change with workers, depth or mode. */
    double tolerance = second->scenario->tolerance;
    run_output base = {0};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        sl_run_request request = {
            .workers = runs[i].workers, .prefetch_depth = runs[i].depth, .threads = runs[i].threads};
        harness_run_request(second, runs[i].adapter, &request, &b);
        if (!(tolerance > 0.0)) {
            expect_same_output(&a, &b, runs[i].what);
        } else if (base.rows == 0) {
            expect_close_output(&a, &b, tolerance, runs[i].what);
            base = b;
            continue;
        } else {
            expect_same_output(&base, &b, runs[i].what);
        }
        harness_release(&b);
    }
    harness_release(&base);
    harness_release(&a);
    sl_scenario_instance_free(first);
    sl_scenario_instance_free(second);
}

/* Peers (other loaders, run as Python processes) are tested by
 * tests/unit/test_peers.c and the `peers` suite, not by every scenario's
 * standard tests, which would start a framework per adapter run. */
static bool harness_is_peer(const sl_adapter *adapter)
{
    return strncmp(adapter->name, "peer:", 5) == 0;
}

/* The assembled tables the equivalence check runs beside the registered
 * ones. The tuned table, "auto", is what `sluice` runs by default: the
 * choice measured on this machine, read from the test suite's own cache
 * (meson's test setups point XDG_CACHE_HOME into the build folder), so
 * one test measures and the rest read. Which tables it took differs from
 * machine to machine, and the verdict must not: so the second is a fixed
 * mixture, entry e from candidate (e + a shift that varies by scenario)
 * in turn, which mixes every table this CPU runs on every machine. */
static int assembled_tables(const char *id, sl_kernel_table *out)
{
    sl_err err = {0};
    sl_kernels_auto_report report;
    cr_assert_eq(sl_kernels_auto(&out[0], NULL, &report, &err), SL_OK, "the tuned table: %s", err.msg);
    sl_kernel_table_id ids[SL_TABLE_COUNT];
    int n = sl_kernel_tune_candidate_ids(ids);
    int shift = 0;
    for (const char *c = id; *c; c++)
        shift += (unsigned char)*c;
    sl_kernel_assembly mixture;
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++)
        mixture.table[e] = ids[(e + shift) % n];
    cr_assert_eq(sl_kernels_assemble(&mixture, "mixed", &out[1], &err), SL_OK, "%s", err.msg);
    return 2;
}

void harness_check_equivalence(const char *id, const char *variant)
{
    sl_scenario_instance *instance = harness_build(id, variant);
    sl_transform_set needed = sl_pipeline_transforms(instance->pipeline);
    run_output reference;
    harness_run(instance, "reference", 0, 0, (sl_position){0, 0}, 0, &reference);
    int compared = 0;
    /* Every optimized kernel table this CPU supports, each in turn handed
     * to the adapters that run the run's optimized table: a bug in the
     * generic kernels must not hide behind the AVX2 ones. */
    for (int t = 1; t < sl_kernel_table_count(); t++) {
        const sl_kernel_table *table = sl_kernel_table_at(t);
        if (!sl_kernel_table_supported(table, NULL, 0))
            continue;
        for (int i = 0; i < sl_adapter_count(); i++) {
            const sl_adapter *adapter = sl_adapter_at(i);
            if (harness_is_peer(adapter))
                continue;
            char reason[256] = "";
            if (!sl_adapter_is_available(adapter, reason, sizeof reason) ||
                !sl_adapter_supports(adapter, needed, reason, sizeof reason)) {
                /* Excluded adapters must say why (invariant 5). */
                cr_expect_neq(reason[0], '\0', "adapter %s excluded without a reason", adapter->name);
                continue;
            }
            if (adapter->kernels == SL_KERNELS_REFERENCE && t > 1)
                continue; /* the table does not change it */
            run_output out;
            sl_run_request request = {.start = {0, 0}, .threads = 1, .kernels = table};
            harness_run_request(instance, adapter->name, &request, &out);
            /* Invariant 3 promises bitwise equality (element-wise ops, data
             * movement, reductions in a fixed order such as zscore's
             * moments), except where a scenario states a tolerance for an
             * optimized table (a BLAS's own order: docs/determinism.md). */
            char what[96];
            snprintf(what, sizeof what, "%s with %s kernels vs reference", adapter->name, table->name);
            double tolerance = instance->scenario->tolerance;
            if (adapter->kernels != SL_KERNELS_REFERENCE && tolerance > 0.0)
                expect_close_output(&reference, &out, tolerance, what);
            else
                expect_same_output(&reference, &out, what);
            harness_release(&out);
            compared++;
        }
    }
    cr_expect_geq(compared, 4, "reference, iter, fused and per-element must all run this scenario");
    /* The assembled tables through fused alone: every executor runs a
     * table's kernels the same way, and fused is the one `sluice bench`
     * measures, so a second and third pass of iter and per-element would
     * add time and no coverage. */
    sl_kernel_table assembled[2];
    int nassembled = assembled_tables(id, assembled);
    for (int a = 0; a < nassembled; a++) {
        /* Assembled tables share one cache slot (SL_TABLE_ASSEMBLED): each
         * fills its own cache op's cache, not reads the last one's. */
        sl_pipeline_cache_reset(instance->pipeline);
        run_output out;
        sl_run_request request = {.start = {0, 0}, .threads = 1, .kernels = &assembled[a]};
        harness_run_request(instance, "fused", &request, &out);
        char what[96];
        snprintf(what, sizeof what, "fused with the %s kernel table vs reference", assembled[a].name);
        if (instance->scenario->tolerance > 0.0)
            expect_close_output(&reference, &out, instance->scenario->tolerance, what);
        else
            expect_same_output(&reference, &out, what);
        harness_release(&out);
    }
    harness_release(&reference);
    sl_scenario_instance_free(instance);
}

void harness_check_records(const char *id, const char *variant)
{
    sl_scenario_instance *instance = harness_build(id, variant);
    const char *dir = getenv("SLUICE_RECORDS_DIR");
    if (!dir)
        dir = "records/tests";
    sl_err err = {0};
    cr_assert_eq(sl_make_dirs(dir, &err), SL_OK, "%s", err.msg);
    sl_environment env;
    sl_environment_collect(&env);
    sl_bench_options options;
    sl_bench_options_init(&options, SL_PROFILE_CI, 42);
    options.repetitions = 1;
    options.warmup_batches = 1;
    options.measured_batches = 3;
    /* One digest for every adapter, or with a stated tolerance one per
     * implementation of the ops that sum in their own order: the reference
     * kernels, the optimized CPU tables (OpenBLAS) and a device (cuBLAS)
     * each agree bit for bit among themselves. */
    uint64_t first_digest[3] = {0, 0, 0};
    for (int i = 0; i < sl_adapter_count(); i++) {
        const sl_adapter *adapter = sl_adapter_at(i);
        if (harness_is_peer(adapter))
            continue;
        sl_record record;
        sl_status st = sl_bench_run(instance, adapter, &options, &record, &err);
        cr_assert_eq(st, SL_OK, "%s: %s", adapter->name, err.msg);
        char name[256], path[768];
        sl_record_file_name(&record, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        cr_assert_eq(sl_record_write(&record, &env, path, &err), SL_OK, "%s", err.msg);

        sl_record back;
        sl_environment back_env;
        cr_assert_eq(sl_record_read(path, &back, &back_env, &err), SL_OK, "%s", err.msg);
        if (back.outcome == SL_RECORD_OK) {
            cr_expect_eq(back.measured_batches, 3);
            for (int64_t b = 0; b < back.measured_batches; b++)
                cr_expect_gt(back.latency_ns[b], 0, "%s: batch %lld has no latency", adapter->name, (long long)b);
            cr_expect_gt(back.elements, 0);
            /* The same batches through every adapter: the same digest. */
            int slot = 0;
            if (instance->scenario->tolerance > 0.0 && adapter->kernels != SL_KERNELS_REFERENCE)
                slot = strcmp(adapter->backend, "cuda") == 0 ? 2 : 1;
            if (!first_digest[slot])
                first_digest[slot] = back.output_digest;
            cr_expect_eq(back.output_digest, first_digest[slot], "%s measured other output than the first adapter",
                         adapter->name);
        } else {
            cr_expect_neq(back.reason[0], '\0', "%s: outcome %s without a reason", adapter->name,
                          sl_record_outcome_name(back.outcome));
        }
        sl_record_release(&back);
        sl_record_release(&record);
    }
    sl_scenario_instance_free(instance);
}

const sl_record_metric *harness_find_metric(const sl_record *record, const char *name)
{
    for (int m = 0; m < record->nmetrics; m++)
        if (strcmp(record->metrics[m].name, name) == 0)
            return &record->metrics[m];
    return NULL;
}

const sl_record_metric *harness_metric(const sl_record *record, const char *name)
{
    const sl_record_metric *metric = harness_find_metric(record, name);
    cr_assert_not_null(metric, "the record of %s has no metric %s", record->adapter, name);
    return metric;
}
