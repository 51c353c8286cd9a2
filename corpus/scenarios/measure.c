/* Extra measured passes for scenario metrics hooks: an adapter run through
 * its own timing loop, its measured batches digested, so that a hook never
 * reports a time for output it has not checked. */
#include <stdlib.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/digest.h"
#include "sluice/core/timing.h"

typedef struct measure_state {
    int64_t warmup;
    int64_t seen;
    sl_digest *digest;
    sl_batch_sink inner;
    void *user;
} measure_state;

static int measure_sink(const sl_batch *batch, void *arg)
{
    measure_state *m = arg;
    if (m->seen++ >= m->warmup)
        sl_digest_add_batch(m->digest, batch);
    return m->inner ? m->inner(batch, m->user) : 0;
}

sl_status sl__scenario_measure(const sl_scenario_instance *instance, const sl_adapter *adapter,
                               const sl_kernel_table *kernels, int64_t warmup, int64_t measured, sl_batch_sink inner,
                               void *user, sl__measured *out, sl_err *err)
{
    int64_t total = warmup + measured;
    if (measured < 1)
        return sl_fail(err, SL_EINVAL, "a measured pass needs at least one measured batch");
    int64_t *latency = calloc((size_t)total, sizeof *latency);
    measure_state m = {warmup, 0, sl_digest_new(), inner, user};
    if (!latency || !m.digest) {
        free(latency);
        sl_digest_free(m.digest);
        return sl_fail(err, SL_ENOMEM, "cannot allocate a measured pass of %lld batches", (long long)total);
    }
    /* One thread and no workers: the pass compares the cost of the calls
     * themselves, not how well each mode spreads over cores. */
    sl_run_request request = {.start = {0, 0}, .nbatches = total, .workers = 0, .threads = 1, .kernels = kernels};
    sl_status st = adapter->run(adapter, instance->pipeline, &request, measure_sink, &m, latency, err);
    if (!st && m.seen != total)
        st = sl_fail(err, SL_EMISMATCH, "%s delivered %lld of %lld batches", adapter->name, (long long)m.seen,
                     (long long)total);
    if (!st) {
        out->median_ns = sl_percentile_i64(latency + warmup, (size_t)measured, 50.0);
        out->digest = sl_digest_value(m.digest);
        out->batches = measured;
    }
    free(latency);
    sl_digest_free(m.digest);
    return st;
}
