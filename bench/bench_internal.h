/* What the bench layer's files share and do not publish. */
#ifndef SLUICE_BENCH_INTERNAL_H
#define SLUICE_BENCH_INTERNAL_H

#include "sluice/adapter.h"
#include "sluice/bench.h"
#include "sluice/kernels.h"
#include "sluice/record.h"
#include "sluice/scenario.h"

/* Names a record after what ran and how: scenario, variant, adapter,
 * profile, the requested and active back ends and the adapter's kernel
 * table under the run's optimized one. One definition for a measured
 * record (sl_bench_run) and for the record of a run that never started (a
 * session's variant that could not be built), so that both read alike. */
void sl__record_identify(sl_record *record, const sl_scenario *scenario, const sl_variant *variant,
                         const sl_adapter *adapter, const sl_profile_settings *profile,
                         const sl_kernel_table *run_kernels);

/* How many batches from the start of epoch 0 a run with these options
 * reads: its warmup and measured batches (the options', else the
 * profile's); every repetition, the reference's digest and the probes read
 * within them. */
int64_t sl__bench_batches_read(const sl_bench_options *options);

#endif
