/* The device executor (device.c): a pipeline's batches on a device
 * (kernels/device.h), for the cuda adapters above. */
#ifndef SLUICE_EXEC_DEVICE_RUN_H
#define SLUICE_EXEC_DEVICE_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/device.h"
#include "sluice/pipeline/pipeline.h"

/* A run holds `slots` batches in flight. For each batch the host computes
 * what the host decides (element ids, the random decisions no rule
 * describes, per-batch parameters) into one block and, for a streamed
 * source, gathers its rows into page-locked memory (prepare); the device
 * copies both in, draws the decisions and chain steps that follow a rule
 * (kernels/decide.h), gathers a resident source's rows, and runs every op
 * on the whole batch, op after op, consecutive element-wise steps fused into
 * one chain (enqueue); the outputs stay on the device until fetched. */
typedef struct sl_device_run sl_device_run;

/* Plans the pipeline's ops on the device and allocates every buffer.
 * SL_EUNSUPPORTED names an op with no device path; SL_ESKIPPED says how
 * much device memory the buffers need against what is free. `kernels` is
 * the host's table (the gather's shuffle and pack). The source is kept on
 * the device when it can be and takes at most source_limit_bytes there (-1:
 * no limit but the free memory; 0: it always streams). */
sl_status sl_device_run_create(const sl_pipeline *pipeline, const sl_kernel_table *kernels, const sl_device *device,
                               int slots, int64_t source_limit_bytes, sl_device_run **out, sl_err *err);
void sl_device_run_free(sl_device_run *run);
/* Places the source on the device when the run keeps it there (resident:
 * it fits in the device's free memory beside the batch buffers, its rows
 * are fixed-size, and no op reads them on the host), through `stream`, and
 * waits for it; nothing otherwise. Once, before the first batch. */
sl_status sl_device_run_place(sl_device_run *run, void *stream, sl_err *err);
/* Whether the batches gather their rows from the source on the device
 * (resident), or the host gathers them and copies them in (streamed). */
bool sl_device_run_resident(const sl_device_run *run);

/* The host's part of the batch at `position`, into a slot. */
sl_status sl_device_run_prepare(sl_device_run *run, int slot, sl_position position, sl_err *err);
/* Queues the slot's copies in and its ops on `stream`. rows is the slot's
 * batch's rows, or the capacity when capturing a graph of a full batch. */
sl_status sl_device_run_enqueue(sl_device_run *run, int slot, void *stream, sl_err *err);
/* Copies the slot's outputs to the host, once its work is done (queued on
 * `stream` and waited for): the batch is valid until the slot is prepared
 * again. */
sl_status sl_device_run_fetch(sl_device_run *run, int slot, void *stream, const sl_batch **out, sl_err *err);

int64_t sl_device_run_rows(const sl_device_run *run, int slot);
int64_t sl_device_run_capacity(const sl_device_run *run);
/* Whether full batches may be replayed from one captured graph: not for a
 * pipeline with a cache op, whose misses change from batch to batch. Says
 * why not. Whether batches may overlap on two streams: not with a cache,
 * whose fills a later batch reads. */
bool sl_device_run_graphable(const sl_device_run *run, char *why, size_t size);
bool sl_device_run_overlappable(const sl_device_run *run);

#endif
