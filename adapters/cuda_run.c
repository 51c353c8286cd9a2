/* The device runtime of the cuda and cuda-graph adapters (docs/adapters.md).
 *
 * UNVERIFIED: written on a machine without a GPU. It compiles and links
 * here, but no line below has run on a device; tests/unit/test_cuda.c and
 * the corpus equivalence tests exercise it where a device exists.
 *
 * What it runs: pipelines whose every op is an element-wise op the device
 * kernels implement (sl_op_device_transforms): normalize, scale, clip, add,
 * multiply, and the random gaussian_noise, random_brightness and
 * random_scale, whose steps the host resolves per row with the ops' own
 * ew_step into a row table copied with the batch. For each batch:
 *   1. the CPU gathers the batch's source rows (a copy of the pipeline with
 *      no ops, so the same order, shard and seed) into one of two staging
 *      batches whose storage is page-locked (cudaHostRegister);
 *   2. the copy stream copies every field host-to-device, then records
 *      `copied`;
 *   3. the compute stream waits for `copied` and runs each field's
 *      launches (cuda_plan.c: as few kernels as the op chain allows, a u8
 *      normalize fused with the steps after it), then records `done`.
 * Batch i+1's gather and copy are issued before batch i's `done` is waited
 * on, so they overlap batch i's kernels (double buffering: two staging
 * batches, two sets of device buffers). A batch's time ends when `done` is
 * synchronized: all its fields are on the device. Only then, in the sink's
 * untimed part, are the outputs copied back so the sink (the bench's digest
 * check) sees them.
 *
 * cuda-graph captures step 2 and 3 of a full batch once per buffer slot
 * (the slots' pointers differ) into a CUDA graph and replays it, so a
 * batch costs one graph launch; a short last batch runs the direct path. */
#include <stdio.h>
#include <string.h>

#include "adapters.h"
#include "cuda_plan.h"
#include "kernels/cuda.h"
#include "sluice/timing.h"
#include "sluice_config.h"

#if HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* The most device memory in use at any point of this process's cuda runs
 * (cudaMemGetInfo after the buffers are allocated), for records. */
static _Atomic int64_t peak_device_bytes = -1;

int64_t sl__cuda_peak_device_bytes(void)
{
    return peak_device_bytes;
}

#if !HAVE_CUDA

sl_status sl__cuda_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    (void)pipeline, (void)request, (void)sink, (void)user, (void)latency_ns;
    return sl_fail(err, SL_EUNSUPPORTED, "adapter '%s': sluice was built without CUDA", adapter->name);
}

#else

typedef struct slot {
    sl_batch *staging;          /* page-locked; the raw pipeline's batch */
    void *registered;
    void *dev_in[SL_MAX_FIELDS];
    void *dev_out[SL_MAX_FIELDS];
    sl_ew_step *row_table;      /* page-locked: each row's resolved random steps */
    sl_ew_step *dev_row_table;
    cudaEvent_t copied, done;
    cudaGraphExec_t graph;      /* cuda-graph: this slot's full-batch work */
    cudaStream_t stream;        /* where the slot's graph runs (the two slots' graphs overlap) */
    bool prepared;
    int64_t rows;
} slot;

typedef struct runner {
    const sl_adapter *adapter;
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels; /* the run's: its shuffle and pack gather each batch */
    sl_pipeline *raw;           /* the same spec with no ops */
    sl__cuda_plan plan;
    cudaStream_t copy, compute;
    slot slots[2];
    sl_batch *host_out;         /* what the sink sees */
    bool graphs;
} runner;

static sl_status cuda_fail(sl_err *err, const runner *r, cudaError_t e, const char *what)
{
    return sl_fail(err, SL_EIO, "adapter '%s': %s failed: %s", r->adapter->name, what, cudaGetErrorString(e));
}

#define CUDA_TRY(call, what)                                                                                          \
    do {                                                                                                              \
        cudaError_t e_ = (call);                                                                                      \
        if (e_ != cudaSuccess)                                                                                        \
            return cuda_fail(err, r, e_, what);                                                                       \
    } while (0)

/* One launch of a field's plan: its kernel on n values of in into out. */
static int launch(const runner *r, const slot *s, const sl__cuda_field_plan *fp, const sl__cuda_launch *la,
                  const void *in, void *out, int64_t n, cudaStream_t stream)
{
    const sl_cuda_kernel_table *cu = sl_cuda_kernels();
    const int rs = r->plan.row_steps;
    if (la->per_row && la->kind == SL__LAUNCH_NORMALIZE_U8_CHAIN)
        return cu->normalize_u8_chain_rows(in, out, n, &la->channels, fp->out_values, s->dev_row_table, rs,
                                           la->row_first, la->chain.nsteps, stream);
    if (la->per_row)
        return cu->ew_chain_rows(out, n, fp->out_values, s->dev_row_table, rs, la->row_first, la->chain.nsteps,
                                 stream);
    switch (la->kind) {
    case SL__LAUNCH_NORMALIZE_U8: return cu->normalize_u8(in, out, n, &la->channels, stream);
    case SL__LAUNCH_NORMALIZE_U8_CHAIN: return cu->normalize_u8_chain(in, out, n, &la->channels, &la->chain, stream);
    case SL__LAUNCH_NORMALIZE_F32: return cu->normalize_f32(in, out, n, &la->channels, stream);
    case SL__LAUNCH_CHAIN: return cu->ew_chain(out, n, &la->chain, stream);
    }
    return SL_CUDA_EUNSUPPORTED;
}

/* One batch's device work on a stream: the copies in, then each field's
 * launches (the first reads dev_in, the rest work in place on dev_out).
 * Used directly, and inside a graph capture. */
static sl_status enqueue(runner *r, slot *s, int64_t rows, cudaStream_t stream, bool copy_on_stream, sl_err *err)
{
    cudaStream_t copy = copy_on_stream ? stream : r->copy;
    for (int f = 0; f < r->plan.nfields; f++) {
        const sl__cuda_field_plan *fp = &r->plan.fields[f];
        CUDA_TRY(cudaMemcpyAsync(s->dev_in[f], s->staging->fields[fp->source_field].data,
                                 (size_t)rows * fp->in_bytes, cudaMemcpyHostToDevice, copy),
                 "cudaMemcpyAsync (host to device)");
    }
    if (r->plan.row_steps > 0)
        CUDA_TRY(cudaMemcpyAsync(s->dev_row_table, s->row_table,
                                 (size_t)rows * (size_t)r->plan.row_steps * sizeof(sl_ew_step),
                                 cudaMemcpyHostToDevice, copy),
                 "cudaMemcpyAsync (host to device)");
    if (!copy_on_stream) {
        CUDA_TRY(cudaEventRecord(s->copied, r->copy), "cudaEventRecord");
        CUDA_TRY(cudaStreamWaitEvent(stream, s->copied, 0), "cudaStreamWaitEvent");
    }
    /* The order of sl__cuda_plan_run_host, which test_cuda_plan checks on
     * the CPU. */
    for (int f = 0; f < r->plan.nfields; f++) {
        const sl__cuda_field_plan *fp = &r->plan.fields[f];
        int64_t n = rows * fp->out_values;
        bool from_input = sl__cuda_plan_reads_input(fp);
        if (!from_input)
            CUDA_TRY(cudaMemcpyAsync(s->dev_out[f], s->dev_in[f], (size_t)rows * fp->out_bytes,
                                     cudaMemcpyDeviceToDevice, stream),
                     "cudaMemcpyAsync (device to device)");
        for (int l = 0; l < fp->nlaunches; l++) {
            const sl__cuda_launch *la = &fp->launches[l];
            const void *in = from_input ? s->dev_in[f] : s->dev_out[f];
            int rc = launch(r, s, fp, la, in, s->dev_out[f], n, stream);
            if (rc == SL_CUDA_EUNSUPPORTED)
                return sl_fail(err, SL_EUNSUPPORTED, "adapter '%s': a chain the device kernels do not run",
                               r->adapter->name);
            if (rc)
                return cuda_fail(err, r, (cudaError_t)rc, "a kernel launch");
            from_input = false;
        }
    }
    return SL_OK;
}

/* The graph holds the copies in and the kernels, in one stream's order;
 * the two slots' graphs run on the two streams, so one slot's copies
 * overlap the other's kernels as in the direct path. */
static sl_status capture_graph(runner *r, slot *s, sl_err *err)
{
    cudaGraph_t graph;
    CUDA_TRY(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    sl_status st = enqueue(r, s, s->staging->capacity, s->stream, true, err);
    cudaError_t e = cudaStreamEndCapture(s->stream, &graph);
    if (st)
        return st;
    if (e != cudaSuccess)
        return cuda_fail(err, r, e, "cudaStreamEndCapture");
    e = cudaGraphInstantiate(&s->graph, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess)
        return cuda_fail(err, r, e, "cudaGraphInstantiate");
    return SL_OK;
}

static void note_peak(void)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
        return;
    int64_t used = (int64_t)(total_bytes - free_bytes);
    if (used > peak_device_bytes)
        peak_device_bytes = used;
}

static sl_status setup(runner *r, sl_err *err)
{
    sl_pipeline_spec raw = *sl_pipeline_get_spec(r->pipeline);
    raw.nops = 0;
    sl_status st = sl_pipeline_create(&raw, &r->raw, err);
    if (st)
        return st;
    if ((st = sl__cuda_plan_build(r->adapter->name, r->pipeline, &r->plan, err)))
        return st;
    int64_t capacity = raw.batch_size;
    /* The gpu profile's full sizes may not fit: two slots of every field's
     * input and output, against what the device has free. Skipped with the
     * reason, not failed. */
    size_t need = 2 * (size_t)capacity * (size_t)r->plan.row_steps * sizeof(sl_ew_step), free_bytes = 0,
           total_bytes = 0;
    for (int f = 0; f < r->plan.nfields; f++)
        need += 2 * (size_t)capacity * (r->plan.fields[f].in_bytes + r->plan.fields[f].out_bytes);
    CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    if (need > free_bytes)
        return sl_fail(err, SL_ESKIPPED,
                       "adapter '%s': the batch buffers need %.2f GB of device memory, %.2f GB are free",
                       r->adapter->name, (double)need / 1e9, (double)free_bytes / 1e9);
    CUDA_TRY(cudaStreamCreateWithFlags(&r->copy, cudaStreamNonBlocking), "cudaStreamCreate");
    CUDA_TRY(cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int k = 0; k < 2; k++) {
        slot *s = &r->slots[k];
        s->stream = k == 0 ? r->compute : r->copy;
        if ((st = sl_batch_create(sl_pipeline_output_schema(r->raw), capacity, &s->staging, err)))
            return st;
        /* The storage is one allocation from element_ids to the last field. */
        const sl_batch *b = s->staging;
        int lastf = b->schema.nfields - 1;
        size_t bytes = (size_t)((char *)b->fields[lastf].data - (char *)b->storage) +
                       (size_t)capacity * sl_field_element_bytes(&b->schema.fields[lastf]);
        CUDA_TRY(cudaHostRegister(b->storage, bytes, cudaHostRegisterDefault), "cudaHostRegister");
        s->registered = b->storage;
        for (int f = 0; f < r->plan.nfields; f++) {
            CUDA_TRY(cudaMalloc(&s->dev_in[f], (size_t)capacity * r->plan.fields[f].in_bytes), "cudaMalloc");
            CUDA_TRY(cudaMalloc(&s->dev_out[f], (size_t)capacity * r->plan.fields[f].out_bytes), "cudaMalloc");
        }
        if (r->plan.row_steps > 0) {
            size_t table_bytes = (size_t)capacity * (size_t)r->plan.row_steps * sizeof(sl_ew_step);
            CUDA_TRY(cudaMallocHost((void **)&s->row_table, table_bytes), "cudaMallocHost");
            CUDA_TRY(cudaMalloc((void **)&s->dev_row_table, table_bytes), "cudaMalloc");
        }
        CUDA_TRY(cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming), "cudaEventCreate");
        CUDA_TRY(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming), "cudaEventCreate");
        if (r->graphs && (st = capture_graph(r, s, err)))
            return st;
    }
    if ((st = sl_batch_create(sl_pipeline_output_schema(r->pipeline), capacity, &r->host_out, err)))
        return st;
    note_peak();
    return SL_OK;
}

static void teardown(runner *r)
{
    if (r->compute)
        cudaStreamSynchronize(r->compute);
    if (r->copy)
        cudaStreamSynchronize(r->copy);
    for (int k = 0; k < 2; k++) {
        slot *s = &r->slots[k];
        if (s->graph)
            cudaGraphExecDestroy(s->graph);
        if (s->copied)
            cudaEventDestroy(s->copied);
        if (s->done)
            cudaEventDestroy(s->done);
        for (int f = 0; f < SL_MAX_FIELDS; f++) {
            if (s->dev_in[f])
                cudaFree(s->dev_in[f]);
            if (s->dev_out[f])
                cudaFree(s->dev_out[f]);
        }
        if (s->registered)
            cudaHostUnregister(s->registered);
        if (s->row_table)
            cudaFreeHost(s->row_table);
        if (s->dev_row_table)
            cudaFree(s->dev_row_table);
        sl_batch_free(s->staging);
    }
    if (r->copy)
        cudaStreamDestroy(r->copy);
    if (r->compute)
        cudaStreamDestroy(r->compute);
    sl_batch_free(r->host_out);
    sl_pipeline_free(r->raw);
}

/* Gathers the batch at `position` on the CPU into the slot's page-locked
 * staging batch and queues its copies and kernels. */
static sl_status prepare(runner *r, slot *s, sl_position position, sl_err *err)
{
    sl_status st = sl_pipeline_produce(r->raw, r->kernels, position, s->staging, err);
    if (st)
        return st;
    s->rows = s->staging->count;
    /* The random ops' steps for these rows, drawn on the host by the ops'
     * own ew_step (as `fused` draws them), copied with the batch. */
    if (r->plan.row_steps > 0)
        sl__cuda_plan_row_steps(&r->plan, r->pipeline, s->staging->epoch, s->staging->element_ids, s->rows,
                                s->row_table);
    if (r->graphs && s->rows == s->staging->capacity) {
        CUDA_TRY(cudaGraphLaunch(s->graph, s->stream), "cudaGraphLaunch");
        CUDA_TRY(cudaEventRecord(s->done, s->stream), "cudaEventRecord");
    } else {
        if ((st = enqueue(r, s, s->rows, r->compute, false, err)))
            return st;
        CUDA_TRY(cudaEventRecord(s->done, r->compute), "cudaEventRecord");
    }
    s->prepared = true;
    return SL_OK;
}

/* The sink's untimed part: the outputs back on the host, for the caller. */
static sl_status deliver(runner *r, const slot *s, sl_err *err)
{
    sl_batch *out = r->host_out;
    sl_batch_set_count(out, s->rows);
    out->epoch = s->staging->epoch;
    out->index = s->staging->index;
    memcpy(out->element_ids, s->staging->element_ids, (size_t)s->rows * sizeof(int64_t));
    for (int f = 0; f < r->plan.nfields; f++)
        CUDA_TRY(cudaMemcpy(out->fields[f].data, s->dev_out[f], (size_t)s->rows * r->plan.fields[f].out_bytes,
                            cudaMemcpyDeviceToHost),
                 "cudaMemcpy (device to host)");
    return SL_OK;
}

sl_status sl__cuda_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err)
{
    int64_t requested = sl_now_ns();
    runner run = {.adapter = adapter,
                  .pipeline = pipeline,
                  .kernels = sl_adapter_kernels(adapter, request->kernels),
                  .graphs = strcmp(adapter->name, "cuda-graph") == 0};
    runner *r = &run;
    sl_status st = setup(r, err);
    sl_position position = request->start;
    if (!st && request->nbatches > 0)
        st = prepare(r, &r->slots[0], position, err);
    for (int64_t i = 0; !st && i < request->nbatches; i++) {
        slot *s = &r->slots[i % 2];
        /* Batch i + 1 gathers and copies while batch i computes. */
        if (i + 1 < request->nbatches) {
            position = sl_position_advance(pipeline, position, 1);
            if ((st = prepare(r, &r->slots[(i + 1) % 2], position, err)))
                break;
        }
        cudaError_t e = cudaEventSynchronize(s->done);
        if (e != cudaSuccess) {
            st = cuda_fail(err, r, e, "cudaEventSynchronize");
            break;
        }
        sl__test_slowdown(requested);
        latency_ns[i] = sl_now_ns() - requested;
        if ((st = deliver(r, s, err)))
            break;
        int stop = sink ? sink(r->host_out, user) : 0;
        if (stop)
            break;
        requested = sl_now_ns();
    }
    teardown(r);
    return st;
}

#endif
