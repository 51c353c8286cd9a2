/* Adapters: the ways a scenario's pipeline can be executed. Every adapter
 * goes through the same timing points (DESIGN.md invariant 4) and declares
 * the transforms it implements (invariant 5). */
#ifndef SLUICE_ADAPTER_H
#define SLUICE_ADAPTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/exec/executors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which kernel table an adapter runs: the reference (the oracle, and what
 * peers' exports are computed with) or the run's optimized table
 * (sl_run_request.kernels). */
typedef enum sl_kernel_choice { SL_KERNELS_REFERENCE = 0, SL_KERNELS_OPTIMIZED } sl_kernel_choice;

typedef struct sl_run_request {
    sl_position start;
    int64_t nbatches;
    int workers; /* honoured by adapters that prefetch */
    int prefetch_depth;
    int threads; /* threads splitting each batch, for adapters that do (fused); 0 means 1 */
    /* When not NULL, nbatches entries: an adapter that splits batches sets
     * entry i to whether batch i ran split, since it chooses per batch
     * whether splitting pays. Others leave it alone. */
    bool *split;
    /* The run's optimized kernel table (sl_kernels_choose), which adapters
     * declaring SL_KERNELS_OPTIMIZED run; NULL: sl_kernels_default(). */
    const sl_kernel_table *kernels;
    /* The scenario's stated tolerance (0: bitwise). An adapter that holds
     * its own output to the reference (a peer) compares within it. */
    double tolerance;
} sl_run_request;

/* Latency of batch i is the time from the request for it to all its fields
 * materialized. A call that returns one batch is requested when called; in a
 * call that returns many, batch i is requested when batch i-1 was handed to
 * the sink and the sink returned (batch 0 when the call began). The sink's own
 * time is never counted. So the latencies of a run add up to its wall time,
 * for every adapter. latency_ns has room for nbatches entries. */
struct sl_record;

typedef struct sl_adapter {
    const char *name;
    const char *summary;
    const char *backend; /* "cpu" or "cuda" */
    sl_kernel_choice kernels;
    sl_transform_set transforms; /* what it implements, unless implements says */
    /* When not NULL, what it implements, derived from the op descriptors
     * (sl_op_cpu_transforms, sl_op_device_transforms) so that an op with a
     * kernel is never left out by a list kept by hand. */
    sl_transform_set (*implements)(void);
    bool threaded; /* splits each batch across sl_run_request.threads threads */
    /* NULL when always available; else says why not (e.g. no GPU). */
    bool (*available)(char *reason, size_t size);
    sl_status (*run)(const struct sl_adapter *adapter, const sl_pipeline *pipeline, const sl_run_request *request,
                     sl_batch_sink sink, void *user, int64_t *latency_ns, sl_err *err);
    /* NULL for sluice's own adapters. A peer (another loader) writes the
     * framework and version its last run reported, e.g. "grain 0.2.18", or
     * an empty string when that run never said; records carry it. */
    void (*framework)(const struct sl_adapter *adapter, char *out, size_t size);
    /* NULL for CPU adapters. A "cuda" adapter fills the record's device
     * fields (device_name ... device_peak_memory_bytes, sluice/records/record.h)
     * when the machine has a device, its peak from its last run. */
    void (*device)(const struct sl_adapter *adapter, struct sl_record *record);
    /* NULL for sluice's own adapters. A peer fills the record from its last
     * run: how its batch times may be read (timing), a note, and figures of
     * its own (docs/peers.md). Called after each repetition. */
    void (*annotate)(const struct sl_adapter *adapter, struct sl_record *record);
} sl_adapter;

/* The table an adapter runs under a run whose optimized table is `run`
 * (NULL: sl_kernels_default()). */
const sl_kernel_table *sl_adapter_kernels(const sl_adapter *adapter, const sl_kernel_table *run);

int sl_adapter_count(void);
const sl_adapter *sl_adapter_at(int index);
/* A registered adapter by name, or, for `peer:<path to a .py file>`, a
 * loader of the user's run under the peer protocol (made on first use);
 * NULL when neither. */
const sl_adapter *sl_adapter_find(const char *name);

/* True when the adapter implements every transform in needed; otherwise
 * writes "lacks transform <name>" into reason. */
/* What the adapter implements (its implements hook, else transforms). */
sl_transform_set sl_adapter_transforms(const sl_adapter *adapter);
bool sl_adapter_supports(const sl_adapter *adapter, sl_transform_set needed, char *reason, size_t size);
bool sl_adapter_is_available(const sl_adapter *adapter, char *reason, size_t size);
/* How the adapter's last run held its output to the reference when it did
 * so itself rather than leaving it to the bench's digest comparison:
 * "statistical" for a peer on a plan whose random draws are not exported
 * (docs/peers.md, Equivalence); "" otherwise. */
void sl_adapter_last_equivalence(const sl_adapter *adapter, char *out, size_t size);

#ifdef __cplusplus
}
#endif

#endif
