/* IO-2: streaming vs eager. The same f32 images read from a .npy file loaded
 * whole into memory (eager) or streamed through a bounded cache of 64-row
 * chunks (stream). Outputs must be identical, and the streaming run's memory
 * must stay under a fixed budget whatever the data set's size.
 *
 * Both read in a block-shuffled order: 64-row blocks (the stream's chunks) in
 * a keyed order, a keyed order inside each window of 8 blocks. A whole-set
 * shuffle would ask a bounded cache for a random chunk on almost every
 * element (docs/design.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/timing.h"
#include "sluice/corpus/scenarios.h"
#include "sluice/records/record.h"

/* The stream reads chunks of one block; its cache holds two windows, so the
 * next window's chunks load while prefetch workers finish the last one. */
#define BLOCK_ROWS          64
#define WINDOW_BLOCKS       8
#define CACHE_CHUNKS        (2 * WINDOW_BLOCKS)
/* What the streaming run may add to the process: twice its cache (48 MiB
 * for 48 KiB rows), leaving room for batches, prefetch and scratch. */
#define MEMORY_BUDGET_BYTES ((int64_t)96 << 20)

/* Pixels in [0, 1) from the float fixture, centred and scaled to unit
 * variance (1/12 for a uniform). */
static const float unit_mean[3] = {0.5f, 0.5f, 0.5f};
static const float unit_std[3] = {0.288675f, 0.288675f, 0.288675f};

static const sl_variant variants[] = {
    {"eager-10k", "10k x 64x64x3 f32 loaded whole from .npy, bs 64", {10000, 10000}, {64, 64}, SL_SOURCE_EAGER, false},
    {"stream-10k",
     "10k x 64x64x3 f32 streamed through 16 chunks of 64 rows, bs 64",
     {10000, 10000},
     {64, 64},
     SL_SOURCE_STREAM,
     false},
    {"eager-50k", "50k x 64x64x3 f32 loaded whole from .npy, bs 64", {0, 50000}, {64, 64}, SL_SOURCE_EAGER, false},
    {"stream-50k",
     "50k x 64x64x3 f32 streamed through 16 chunks of 64 rows, bs 64",
     {0, 50000},
     {64, 64},
     SL_SOURCE_STREAM,
     false},
    {"eager-200k", "200k x 64x64x3 f32 loaded whole from .npy, bs 64", {0, 200000}, {64, 64}, SL_SOURCE_EAGER, false},
    {"stream-200k",
     "200k x 64x64x3 f32 streamed through 16 chunks of 64 rows, bs 64",
     {0, 200000},
     {64, 64},
     SL_SOURCE_STREAM,
     false},
};

/* Opens the exported fixture as a source of the given kind. */
static sl_status open_export(const sl_scenario_instance *instance, sl_source_kind kind, sl_source **out, sl_err *err)
{
    char path[320];
    snprintf(path, sizeof path, "%s/x.npy", instance->workdir);
    const char *name = "x", *paths[1] = {path};
    if (kind == SL_SOURCE_STREAM) {
        sl_stream_options options = {BLOCK_ROWS, CACHE_CHUNKS};
        return sl_source_stream_create(1, &name, paths, &options, out, err);
    }
    return sl_source_file_create(kind, 1, &name, paths, out, err);
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {
        .kind = SL_FIXTURE_FLOATS, .n = sl_variant_n(variant, options), .h = 64, .w = 64, .c = 3};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    const char *base = options->workdir ? options->workdir : sl_temp_base();
    if ((st = sl_workdir_create(base, "io2", instance->workdir, sizeof instance->workdir, err)) != SL_OK)
        return st;
    instance->owns_workdir = true;
    if ((st = sl_source_export_npy(instance->fixture, instance->workdir, err)) != SL_OK)
        return st;
    /* The generated copy goes once it is on disk: the fixture becomes a
     * mapping of the export (the same bytes, resident only where read), so
     * the largest variant needs memory for one copy, the eager source's. */
    sl_source_free(instance->fixture);
    instance->fixture = instance->source = NULL;
    if ((st = open_export(instance, SL_SOURCE_MMAP, &instance->fixture, err)) != SL_OK)
        return st;
    if ((st = open_export(instance, (sl_source_kind)variant->param, &instance->source, err)) != SL_OK)
        return st;
    sl__scenario_begin_spec(instance, options);
    instance->spec.blocks = (sl_block_shuffle){BLOCK_ROWS, WINDOW_BLOCKS};
    return sl_pipeline_spec_add(&instance->spec, sl_op_normalize("x", 3, unit_mean, unit_std), err);
}

static int count_batch(const sl_batch *batch, void *user)
{
    (void)batch;
    (*(int64_t *)user)++;
    return 0;
}

/* One epoch as a user runs it, from opening the source to closing it, on a
 * fresh source of the variant's kind: the peak resident size is reset
 * (sl_rss_reset) before the source opens, so an eager load counts and the
 * fixture generated at build time (already freed) and anything resident
 * before does not. */
static sl_status measure_epoch(const sl_scenario_instance *instance, const sl_adapter *adapter,
                               const sl_kernel_table *kernels, const sl_record *record, int64_t *growth,
                               sl_stream_stats *stats, sl_err *err)
{
    const sl_pipeline *built = instance->pipeline;
    int64_t nbatches = sl_pipeline_batches_per_epoch(built);
    int64_t *latency = calloc((size_t)nbatches, sizeof *latency);
    sl_pipeline_spec *spec = malloc(sizeof *spec);
    if (!latency || !spec) {
        free(latency);
        free(spec);
        return sl_fail(err, SL_ENOMEM, "cannot allocate the memory measurement's buffers");
    }
    sl_source_kind kind = sl_source_kind_of(instance->source);
    sl_source *source = NULL;
    sl_pipeline *pipeline = NULL;
    int64_t delivered = 0;
    sl_rss_probe probe;
    sl_rss_reset(&probe);
    sl_status st = open_export(instance, kind, &source, err);
    if (st == SL_OK) {
        *spec = *sl_pipeline_get_spec(built);
        spec->source = source;
        st = sl_pipeline_create(spec, &pipeline, err);
    }
    if (st == SL_OK) {
        sl_run_request request = {.start = {0, 0},
                                  .nbatches = nbatches,
                                  .workers = record->workers,
                                  .threads = record->threads,
                                  .kernels = kernels};
        st = adapter->run(adapter, pipeline, &request, count_batch, &delivered, latency, err);
    }
    if (st == SL_OK && delivered != nbatches)
        st = sl_fail(err, SL_EMISMATCH, "the memory measurement's epoch delivered %lld of %lld batches",
                     (long long)delivered, (long long)nbatches);
    if (st == SL_OK && kind == SL_SOURCE_STREAM)
        st = sl_source_stream_stats(source, stats, err);
    sl_pipeline_free(pipeline);
    sl_source_free(source);
    *growth = sl_rss_growth_bytes(&probe);
    free(spec);
    free(latency);
    return st;
}

static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    int64_t growth = -1;
    sl_stream_stats stats = {0};
    sl_status st = measure_epoch(instance, adapter, kernels, record, &growth, &stats, err);
    if (st != SL_OK)
        return sl_fail_context(err, "IO-2's memory measurement");
    /* Without a resettable peak there is no honest figure: none is given. */
    if (growth >= 0)
        sl_record_add_scenario_metric(record, "epoch_peak_growth_bytes", (double)growth, "B");
    sl_record_add_scenario_metric(record, "stream_budget_bytes", (double)MEMORY_BUDGET_BYTES, "B");
    if (sl_source_kind_of(instance->source) == SL_SOURCE_STREAM) {
        sl_record_add_scenario_metric(record, "chunk_cache_bytes", (double)stats.cache_bytes, "B");
        sl_record_add_scenario_metric(record, "chunk_loads", (double)stats.chunk_loads, "chunks");
        sl_record_add_scenario_metric(
            record, "read_amplification",
            stats.bytes_requested ? (double)stats.bytes_read / (double)stats.bytes_requested : 0.0, "ratio");
    }
    return SL_OK;
}

const sl_scenario sl__scenario_io2 = {
    .id = "IO-2",
    .title = "streaming vs eager",
    .property = "identical outputs; the streaming run's peak memory stays under a fixed budget whatever N is",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
