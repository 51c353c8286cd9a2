/* The CPU adapters and the run loops they share: one loop per calling
 * convention, so every adapter takes its timestamps at the same points. */
#ifndef SLUICE_ADAPTERS_H
#define SLUICE_ADAPTERS_H

#include "sluice/adapters/adapter.h"

extern const sl_adapter sl__adapter_reference;
extern const sl_adapter sl__adapter_iter;
extern const sl_adapter sl__adapter_fused;
extern const sl_adapter sl__adapter_per_element;
/* The CUDA back end's (cuda.c), unavailable with the reason where no device
 * can run them. */
extern const sl_adapter sl__adapter_cuda;
extern const sl_adapter sl__adapter_cuda_graph;
/* The device runtime of both cuda adapters, and the most device memory its
 * runs in this process had in use (-1 before any). */
sl_status sl__cuda_run(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                       sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err);
int64_t sl__cuda_peak_device_bytes(void);
/* What one run of that runtime reports for its record: the most device
 * memory its allocations held at once (the device's ledger,
 * kernels/device.h: batch buffers, decisions, op constants, cache, and the
 * source when resident), whether the source was resident on the device or
 * streamed through page-locked staging, and how long placing it took. The
 * peak counts from what the device held when the run began; runs that
 * overlap in one process (simulated ranks on threads) count each other's
 * allocations made meanwhile. */
typedef struct sl_device_adapter_stats {
    int64_t allocated_peak_bytes;
    bool resident;
    int64_t source_setup_ns;
    int runs; /* in sl__cuda_take_runs: how many runs the figures cover */
} sl_device_adapter_stats;
/* How that runtime runs: full batches replayed from graphs (cuda-graph),
 * and the most bytes the source may take on the device: -1 as much as is
 * free beside the batch buffers (the adapters), 0 never (every batch
 * streams its rows); the tests set it to run both paths on the emulation. */
typedef struct sl_device_adapter_options {
    bool graphs;
    int64_t source_limit_bytes;
} sl_device_adapter_options;
/* That runtime on a given device (the CUDA one, or the host emulation that
 * the tests run everywhere), as options say, on a given table for the
 * host's part; stats (may be NULL) gets the run's figures, also on
 * failure. */
struct sl_device;
sl_status sl__device_adapter_run(const struct sl_device *dev, const sl_device_adapter_options *options,
                                 const sl_pipeline *pipeline, const sl_kernel_table *kernels,
                                 const sl_run_request *request, sl_batch_sink sink, void *user, int64_t *latency_ns,
                                 sl_device_adapter_stats *stats, sl_err *err);
/* The figures of this process's device runs that succeeded since they were
 * last taken (the largest peak, the last run's source and setup; runs 0 and
 * peak -1 when none), and forgets them: a record takes its own runs'. */
void sl__cuda_take_runs(sl_device_adapter_stats *out);

/* One batch per call through sl_iter in the given mode, with the adapter's
 * kernels and the request's workers (workers forced to 0 when
 * single_thread). */
sl_status sl__run_iter_loop(const sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                            sl_iter_mode mode, bool single_thread, sl_batch_sink sink, void *user, int64_t *latency_ns,
                            sl_err *err);

/* The gate's test-only slowdown (adapters/slowdown.c): with -Dgate_knob=true
 * and SLUICE_TEST_SLOWDOWN_PCT set, stretches a batch that started at
 * started_ns by that percentage of its time so far; otherwise nothing. */
void sl__test_slowdown(int64_t started_ns);

#endif
