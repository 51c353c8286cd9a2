/* The runtime of the cuda and cuda-graph adapters (docs/adapters.md): the
 * device executor (engine/exec/device.c) driven batch after batch, with the
 * timing every adapter shares.
 *
 * Before the first batch a source that fits on the device is placed there
 * (sl_device_run_place: the time it takes is the run's setup, part of the
 * first batch's time and reported on its own), and each batch gathers its
 * rows there. For each batch the host prepares a slot (computes its
 * decisions and, for a streamed source, gathers the batch's rows into
 * page-locked memory) while the device runs the
 * previous batch's slot: two slots on two streams, so the copies and the
 * host's gather of batch i + 1 overlap batch i's kernels. A batch's time
 * runs from its request until its device work is done (all its fields are
 * in device memory, the outputs left there); only then, in the sink's
 * untimed part, are the outputs copied back so the sink (the bench's digest
 * check) sees them. cuda-graph captures each slot's full-batch work once
 * and replays it, so a full batch costs one graph launch, and the short
 * last batch of an epoch the same from a second graph of its rows; a
 * pipeline whose work changes from batch to batch (a cache's misses) runs
 * the direct path.
 *
 * Verified on an NVIDIA H100 (driver 580.159.04, CUDA 13.0) by
 * ci/gpu-check.sh: docs/device-runs/ holds each run's summary. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "adapters.h"
#include "exec/device_run.h"
#include "sluice/core/timing.h"

/* The most device memory in use at any point of this process's device
 * runs, for records (-1 before any). */
static _Atomic int64_t peak_device_bytes = -1;

int64_t sl__cuda_peak_device_bytes(void)
{
    return peak_device_bytes;
}

/* The figures of the runs since they were last taken, for their record:
 * the largest peak of them, the last one's source and setup. */
static sl_device_adapter_stats runs_stats = {.allocated_peak_bytes = -1};
static pthread_mutex_t runs_stats_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_run(const sl_device_adapter_stats *run)
{
    pthread_mutex_lock(&runs_stats_lock);
    int64_t peak = runs_stats.allocated_peak_bytes > run->allocated_peak_bytes ? runs_stats.allocated_peak_bytes
                                                                               : run->allocated_peak_bytes;
    int runs = runs_stats.runs + 1;
    runs_stats = *run;
    runs_stats.allocated_peak_bytes = peak;
    runs_stats.runs = runs;
    pthread_mutex_unlock(&runs_stats_lock);
}

void sl__cuda_take_runs(sl_device_adapter_stats *out)
{
    pthread_mutex_lock(&runs_stats_lock);
    *out = runs_stats;
    runs_stats = (sl_device_adapter_stats){.allocated_peak_bytes = -1};
    pthread_mutex_unlock(&runs_stats_lock);
}

static void note_peak(const sl_device *dev)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (dev->emulated || dev->memory(&free_bytes, &total_bytes))
        return;
    int64_t used = (int64_t)(total_bytes - free_bytes);
    if (used > peak_device_bytes)
        peak_device_bytes = used;
}

typedef struct runner {
    const sl_device *dev;
    sl_device_run *run;
    int nslots;
    void *stream[2];
    void *done[2];
    /* Each slot's graphs: of a full batch, and of the one short size a
     * run's last batches have (its rows in short_rows). */
    void *graph[2];
    void *short_graph[2];
    int64_t short_rows[2];
    bool graphs;
} runner;

static sl_status device_fail(sl_err *err, const runner *r, int e, const char *what)
{
    return sl_fail(err, SL_EIO, "the %s device: %s failed: %s", r->dev->name, what, r->dev->error_string(e));
}

#define DEVICE_TRY(call, what)                                                                                         \
    do {                                                                                                               \
        int e_ = (call);                                                                                               \
        if (e_)                                                                                                        \
            return device_fail(err, r, e_, what);                                                                      \
    } while (0)

static sl_status setup(runner *r, const sl_pipeline *pipeline, const sl_kernel_table *kernels,
                       int64_t source_limit_bytes, sl_device_adapter_stats *stats, sl_err *err)
{
    sl_status st = sl_device_run_create(pipeline, kernels, r->dev, 2, source_limit_bytes, &r->run, err);
    if (st)
        return st;
    stats->resident = sl_device_run_resident(r->run);
    /* A cache's fills must land before a later batch reads them: then both
     * slots share one stream, which keeps their order. */
    r->nslots = sl_device_run_overlappable(r->run) ? 2 : 1;
    for (int k = 0; k < r->nslots; k++)
        DEVICE_TRY(r->dev->stream_create(&r->stream[k]), "creating a stream");
    if (r->nslots == 1)
        r->stream[1] = r->stream[0];
    for (int k = 0; k < 2; k++)
        DEVICE_TRY(r->dev->event_create(&r->done[k]), "creating an event");
    r->graphs = r->graphs && sl_device_run_graphable(r->run, NULL, 0) && !r->dev->emulated;
    int64_t placing = sl_now_ns();
    if ((st = sl_device_run_place(r->run, r->stream[0], err)))
        return st;
    stats->source_setup_ns = sl_now_ns() - placing;
    note_peak(r->dev);
    return SL_OK;
}

static void teardown(runner *r)
{
    for (int k = 0; k < 2; k++) {
        if (r->stream[k] && (k == 0 || r->nslots == 2)) {
            r->dev->stream_sync(r->stream[k]);
            r->dev->stream_destroy(r->stream[k]);
        }
        if (r->graph[k])
            r->dev->graph_destroy(r->graph[k]);
        if (r->short_graph[k])
            r->dev->graph_destroy(r->short_graph[k]);
        if (r->done[k])
            r->dev->event_destroy(r->done[k]);
    }
    sl_device_run_free(r->run);
}

/* A slot's work for a batch of its rows as a graph, captured on the first
 * such batch: the copies read the slot's fixed page-locked buffers, so the
 * graph replays whatever the host prepared there for any batch of as many
 * rows. */
static sl_status capture(runner *r, int k, void **graph, sl_err *err)
{
    DEVICE_TRY(r->dev->graph_begin(r->stream[k]), "beginning a graph capture");
    sl_status st = sl_device_run_enqueue(r->run, k, r->stream[k], err);
    int e = r->dev->graph_end(r->stream[k], graph);
    if (st)
        return st;
    DEVICE_TRY(e, "ending a graph capture");
    return SL_OK;
}

/* Prepares the batch at position in slot k and queues its work. */
static sl_status start(runner *r, int k, sl_position position, sl_err *err)
{
    sl_status st = sl_device_run_prepare(r->run, k, position, err);
    if (st)
        return st;
    int64_t rows = sl_device_run_rows(r->run, k);
    /* A full batch replays the full graph; a short one the short graph,
     * when it has the rows that graph was captured with (the last batch of
     * every epoch has). */
    void **graph = NULL;
    if (r->graphs && rows == sl_device_run_capacity(r->run))
        graph = &r->graph[k];
    else if (r->graphs && (!r->short_graph[k] || r->short_rows[k] == rows))
        graph = &r->short_graph[k];
    if (graph) {
        if (!*graph && (st = capture(r, k, graph, err)))
            return st;
        if (graph == &r->short_graph[k])
            r->short_rows[k] = rows;
        DEVICE_TRY(r->dev->graph_launch(*graph, r->stream[k]), "launching a graph");
    } else if ((st = sl_device_run_enqueue(r->run, k, r->stream[k], err))) {
        return st;
    }
    DEVICE_TRY(r->dev->event_record(r->done[k], r->stream[k]), "recording an event");
    return SL_OK;
}

sl_status sl__device_adapter_run(const sl_device *dev, const sl_device_adapter_options *options,
                                 const sl_pipeline *pipeline, const sl_kernel_table *kernels,
                                 const sl_run_request *request, sl_batch_sink sink, void *user, int64_t *latency_ns,
                                 sl_device_adapter_stats *stats, sl_err *err)
{
    int64_t requested = sl_now_ns();
    runner run = {.dev = dev, .graphs = options->graphs};
    runner *r = &run;
    sl_device_adapter_stats own = {0};
    /* The run's peak counts from what the device held before it (nothing,
     * unless another run is alive in this process). */
    int64_t held_before = 0;
    sl_device_memory_mark(dev);
    sl_device_memory_held(dev, &held_before, NULL);
    sl_status st = setup(r, pipeline, kernels, options->source_limit_bytes, &own, err);
    sl_position position = request->start;
    if (!st && request->nbatches > 0)
        st = start(r, 0, position, err);
    for (int64_t i = 0; !st && i < request->nbatches; i++) {
        int k = (int)(i % 2);
        /* Batch i + 1 is gathered and queued while batch i computes. */
        if (i + 1 < request->nbatches) {
            position = sl_position_advance(pipeline, position, 1);
            if ((st = start(r, (k + 1) % 2, position, err)))
                break;
        }
        int e = r->dev->event_sync(r->done[k]);
        if (e) {
            st = device_fail(err, r, e, "waiting for a batch");
            break;
        }
        sl__test_slowdown(requested);
        latency_ns[i] = sl_now_ns() - requested;
        const sl_batch *out;
        if ((st = sl_device_run_fetch(r->run, k, r->stream[k], &out, err)))
            break;
        int stop = sink ? sink(out, user) : 0;
        if (stop)
            break;
        requested = sl_now_ns();
    }
    if (r->run)
        note_peak(r->dev);
    int64_t peak = 0;
    sl_device_memory_held(dev, NULL, &peak);
    own.allocated_peak_bytes = peak - held_before;
    teardown(r);
    if (stats)
        *stats = own;
    /* A successful run's figures wait for its record (the emulation's too,
     * so that the path to the record is tested on every machine). */
    if (!st)
        note_run(&own);
    return st;
}

sl_status sl__cuda_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    char reason[256] = "";
    const sl_device *dev = sl_device_cuda(reason, sizeof reason);
    if (!dev)
        return sl_fail(err, SL_EUNSUPPORTED, "adapter '%s': %s", adapter->name, reason);
    sl_device_adapter_options options = {.graphs = strcmp(adapter->name, "cuda-graph") == 0, .source_limit_bytes = -1};
    sl_status st = sl__device_adapter_run(dev, &options, pipeline, sl_adapter_kernels(adapter, request->kernels),
                                          request, sink, user, latency_ns, NULL, err);
    return st ? sl_fail_context(err, "adapter '%s'", adapter->name) : st;
}
