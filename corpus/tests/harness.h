/* Checks every corpus scenario makes, shared so that each test file holds
 * only what is particular to its scenario. */
#ifndef SLUICE_CORPUS_HARNESS_H
#define SLUICE_CORPUS_HARNESS_H

#include <stdint.h>

#include "kernels_under_test.h"
#include "sluice/sluice.h"

/* A run's output: every field's bytes concatenated over its batches, and the
 * element ids in order. A batch op may narrow a field per batch (dynamic
 * padding), so rows are found through their offsets, and row_bytes is the
 * widest a row can be (the schema's). */
typedef struct run_output {
    int nfields;
    unsigned char *bytes[SL_MAX_FIELDS];
    size_t size[SL_MAX_FIELDS];
    size_t row_bytes[SL_MAX_FIELDS];
    sl_dtype dtype[SL_MAX_FIELDS];
    size_t *row_offset[SL_MAX_FIELDS]; /* rows + 1 entries: where row r starts, and the end */
    int64_t *ids;
    int64_t rows;
    int64_t batches;
    uint64_t digest;
} run_output;

/* Builds a scenario variant at ci size with seed 42, or fails the test. */
sl_scenario_instance *harness_build(const char *scenario, const char *variant);
sl_scenario_instance *harness_build_with(const char *scenario, const char *variant, const sl_build_options *options);

/* Runs nbatches from start through the named adapter (all of epoch 0 when
 * nbatches is 0) and collects the output. */
void harness_run(const sl_scenario_instance *instance, const char *adapter, int workers, int prefetch_depth,
                 sl_position start, int64_t nbatches, run_output *out);
/* The same with a whole request (threads for fused, say); nbatches <= 0
 * runs one epoch. */
void harness_run_request(const sl_scenario_instance *instance, const char *adapter, const sl_run_request *request,
                         run_output *out);
void harness_release(run_output *out);

/* Row r of field f of a run, its size in bytes (the schema's row size
 * unless a batch op narrowed the field in that row's batch), and the row in
 * [from, to) that holds element id (-1 when none does). */
const void *harness_row(const run_output *out, int field, int64_t row);
size_t harness_row_bytes(const run_output *out, int field, int64_t row);
int64_t harness_find_element(const run_output *out, int64_t element, int64_t from, int64_t to);

/* A record's metric by name: NULL when it has none, or (harness_metric)
 * a failed test naming the record's adapter and the metric. */
const sl_record_metric *harness_find_metric(const sl_record *record, const char *name);
const sl_record_metric *harness_metric(const sl_record *record, const char *name);

/* The checks of SCENARIOS.md every scenario asserts at ci size. */
void harness_check_golden(const char *scenario, const char *variant);
void harness_check_determinism(const char *scenario, const char *variant);
void harness_check_equivalence(const char *scenario, const char *variant);
void harness_check_records(const char *scenario, const char *variant);

/* One Criterion test per standard check for a variant. */
#define SL_CORPUS_STANDARD_TESTS(suite, id, variant)                                                                   \
    Test(suite, golden)                                                                                                \
    {                                                                                                                  \
        harness_check_golden(id, variant);                                                                             \
    }                                                                                                                  \
    Test(suite, determinism)                                                                                           \
    {                                                                                                                  \
        harness_check_determinism(id, variant);                                                                        \
    }                                                                                                                  \
    Test(suite, equivalence)                                                                                           \
    {                                                                                                                  \
        harness_check_equivalence(id, variant);                                                                        \
    }                                                                                                                  \
    Test(suite, timing_records)                                                                                        \
    {                                                                                                                  \
        harness_check_records(id, variant);                                                                            \
    }

#endif
