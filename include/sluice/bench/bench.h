/* Running a scenario on an adapter as a benchmark and producing its record;
 * shared by `sluice bench` and the corpus tests. */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <stdint.h>

#include "sluice/adapters/adapter.h"
#include "sluice/bench/scenario.h"
#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_bench_options {
    sl_profile profile;
    uint64_t seed;
    int repetitions;          /* 0: the profile's */
    int64_t warmup_batches;   /* < 0: the profile's */
    int64_t measured_batches; /* <= 0: the profile's */
    int workers;
    int threads; /* for threaded adapters (fused); 0 means 1 */
    /* The optimized kernel table the run's adapters use (those declaring
     * SL_KERNELS_OPTIMIZED): sl_kernels_default() unless set. */
    const sl_kernel_table *kernels;
    /* The memcpy yardstick for this instance's batch size, in bytes/s; 0
     * measures it inside sl_bench_run. A caller running several adapters on
     * one instance measures it once (sl_probe_memcpy_bandwidth with
     * sl_pipeline_batch_bytes) so every record of the instance shares it. */
    double memcpy_probe_bytes_per_s;
    /* The roofline for this instance, in ns per batch, and the table whose
     * probe gave it; 0 measures it inside sl_bench_run
     * (sl_probe_roofline_best). */
    double roofline_ns_per_batch;
    const sl_kernel_table *roofline_kernels;
    /* The gather probe for this instance over the measured batches, in ns
     * per batch; 0 measures it inside sl_bench_run
     * (sl_probe_gather_ns_per_batch). */
    double gather_ns_per_batch;
    /* The write probe for this instance's batch bytes, in ns per batch; 0
     * measures it inside sl_bench_run (sl_probe_write_ns_per_batch). */
    double write_ns_per_batch;
    /* The traffic probe for this instance over the measured batches, in ns
     * per batch; 0 measures it inside sl_bench_run
     * (sl_probe_traffic_ns_per_batch). */
    double traffic_ns_per_batch;
    /* No time without a check: when set, an adapter's digest of the
     * measured batches is compared with reference_digest (the reference
     * adapter's digest of the same batches, sl_bench_reference_digest) before
     * its speed counts, and a difference makes the record a mismatch. */
    bool check_against_reference;
    /* Leaves out the memcpy, roofline and gather metrics instead of
     * measuring them. */
    bool skip_probes;
    /* For callgrind (ci/gate.sh): turns valgrind's instrumentation on for
     * each repetition's run only and dumps its counts as each batch reaches
     * the sink, labelled "sluice-batch <scenario>/<variant>/<adapter>
     * <repetition> <batch>", so that counts per batch leave the run's setup
     * out. Nothing happens outside valgrind. */
    bool instrument;
    uint64_t reference_digest;
    /* Leaves the scenario's metrics hook to the caller: a distributed run
     * calls it on rank 0 once every rank's report is gathered
     * (sl_dist_finish), not on each rank alone. */
    bool defer_scenario_metrics;
} sl_bench_options;

void sl_bench_options_init(sl_bench_options *options, sl_profile profile, uint64_t seed);

/* Runs warmup then measured batches, `repetitions` times, each repetition in a
 * fresh run from the epoch's start, and fills record with the median
 * repetition (by elements/s). An excluded or unavailable adapter yields a
 * record with that outcome and reason, not an error. record->latency_ns is
 * allocated; release with sl_record_release. */
sl_status sl_bench_run(const sl_scenario_instance *instance, const sl_adapter *adapter, const sl_bench_options *options,
                       sl_record *record, sl_err *err);

/* Runs the scenario's metrics hook on an ok record (nothing for another
 * outcome or a scenario without one); a failing hook fails the record with
 * its message. sl_bench_run calls it unless told to defer. */
sl_status sl_bench_scenario_metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                                    const sl_kernel_table *kernels, sl_record *record, sl_err *err);

/* The digest the reference adapter gives for the measured batches of a
 * run under options (warmup and measured counts of the profile or the
 * options), computed once with the reference kernels and no timing, so
 * that every adapter of an instance is held to the same value. */
sl_status sl_bench_reference_digest(const sl_scenario_instance *instance, const sl_bench_options *options,
                                    uint64_t *digest, sl_err *err);

/* Whether this build can count per batch under callgrind
 * (sl_bench_options.instrument): it has valgrind's client requests. */
bool sl_bench_instrument_available(void);

/* File name of a record: <scenario>__<variant>__<adapter>.json. */
void sl_record_file_name(const sl_record *record, char *buf, size_t size);

/* Bandwidth of memcpy, in bytes/s, copying block_bytes-sized blocks out of a
 * 64 MiB source into one reused destination (the access pattern of a fused
 * executor writing batches), median of `repetitions`. */
double sl_probe_memcpy_bandwidth(size_t block_bytes, int repetitions);

/* The roofline probe of a pipeline: the median time, over `repetitions`,
 * of its own op chain run by one fused thread with the best kernels over
 * the first batch of epoch 0 once it is in cache (sl_fused_probe): no
 * gather misses, no shuffle, no allocation. An adapter's throughput over
 * this probe's is its "fraction of roofline". 0 when it cannot run. */
double sl_probe_roofline_ns_per_batch(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int repetitions);

/* The roofline a run is held to: the fastest of the roofline probes with
 * the run's table and with every optimized table this CPU runs (each
 * probed once; the reference is the oracle, not a candidate). A slow
 * kernel in the run's table then shows as a gap below 1 instead of moving
 * the yardstick with it. *fastest (may be NULL) names the table whose probe
 * it is. 0 when no probe can run. */
double sl_probe_roofline_best(const sl_pipeline *pipeline, const sl_kernel_table *run_kernels, int repetitions,
                              const sl_kernel_table **fastest);

/* The write probe: the median time of one store of batch_bytes into one
 * reused buffer (memset), over at least 64 stores and 2 ms, each timed
 * alone as a batch is: the least a batch of that many output bytes costs
 * to write, whatever computes it. With the gather probe (the least its
 * reads cost) it makes the hardware bound that no kernel table moves
 * (docs/cli.md, fraction_of_hardware_bound). 0 for 0 bytes. */
double sl_probe_write_ns_per_batch(size_t batch_bytes);

/* The gather probe of a pipeline over the batches a run under options
 * measures (after its warmup batches): the median time per batch of just
 * fetching each batch's source bytes in the run's order
 * (sl_pipeline_gather_probe). An adapter's p50 against it is its "fraction
 * of gather": near 1, a scenario is bound by memory or storage, not by its
 * ops. 0 when it cannot run. */
double sl_probe_gather_ns_per_batch(const sl_pipeline *pipeline, const sl_bench_options *options);

/* The traffic probe over the same batches (sl_pipeline_traffic_probe): the
 * gather probe's reads and the batch's output stores, row by row on one
 * core, with no op. With the write probe it makes the hardware bound (the
 * larger of the two). 0 when it cannot run. */
double sl_probe_traffic_ns_per_batch(const sl_pipeline *pipeline, const sl_bench_options *options);

#ifdef __cplusplus
}
#endif

#endif
