/* What the bench layer's files share and do not publish. */
#ifndef SLUICE_BENCH_INTERNAL_H
#define SLUICE_BENCH_INTERNAL_H

#include "sluice/adapters/adapter.h"
#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"
#include "sluice/kernels/kernels.h"
#include "sluice/records/record.h"

/* Names a record after what ran and how: scenario, variant, adapter,
 * profile, the requested and active back ends and the adapter's kernel
 * table under the run's optimized one. One definition for a measured
 * record (sl_bench_run) and for the record of a run that never started (a
 * session's variant that could not be built), so that both read alike. */
void sl__record_identify(sl_record *record, const sl_scenario *scenario, const sl_variant *variant,
                         const sl_adapter *adapter, const sl_profile_settings *profile,
                         const sl_kernel_table *run_kernels);

/* One sl_bench_run taken apart, so that a session can run the adapters of
 * a variant in rounds (sluice bench --rounds): begin each adapter's run,
 * then repetition r of each in turn, then end each. sl_bench_run is begin,
 * every repetition, end.
 *
 * sl__bench_begin identifies the record and, for an adapter that cannot run
 * here or lacks a transform, fills it with that outcome and sets *out to
 * NULL (SL_OK: not an error). Otherwise *out is the run, which holds record
 * until sl__bench_end finishes it (the median kept, the checks against the
 * reference, the metrics) and frees the run, or sl__bench_abandon frees it
 * after a failed repetition (the record then says why). */
typedef struct sl__bench_run sl__bench_run;
sl_status sl__bench_begin(const sl_scenario_instance *instance, const sl_adapter *adapter,
                          const sl_bench_options *options, sl_record *record, sl__bench_run **out, sl_err *err);
sl_status sl__bench_repetition(sl__bench_run *run, int r, sl_err *err);
sl_status sl__bench_end(sl__bench_run *run, sl_err *err);
void sl__bench_abandon(sl__bench_run *run);

/* How many batches from the start of epoch 0 a run with these options
 * reads: its warmup and measured batches (the options', else the
 * profile's); every repetition, the reference's digest and the probes read
 * within them. */
int64_t sl__bench_batches_read(const sl_bench_options *options);

#endif
