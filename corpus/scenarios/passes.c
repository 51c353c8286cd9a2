/* Timed passes of several pipelines over one scenario's source, for the
 * scenario metrics that compare pipelines (AUG-2's overhead ratio, AUG-3's
 * cost per depth). */
#include <stdlib.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/core/timing.h"
#include "sluice/records/record.h"

sl_status sl__scenario_time_pipelines(const sl_adapter *adapter, const sl_kernel_table *kernels,
                                      sl_pipeline *const *pipelines, int count, const sl_record *record, int passes,
                                      double *p50_ns, sl_err *err)
{
    int64_t warmup = record->warmup_batches, measured = record->measured_batches, total = warmup + measured;
    if (count < 1 || passes < 1 || measured < 1)
        return sl_fail(err, SL_EINVAL, "timing %d pipelines needs passes and measured batches", count);
    int64_t *latency = malloc((size_t)total * sizeof *latency);
    int64_t *samples = malloc((size_t)count * (size_t)passes * (size_t)measured * sizeof *samples);
    sl_status st = latency && samples ? SL_OK : sl_fail(err, SL_ENOMEM, "cannot allocate the timed passes");
    sl_run_request request = {.start = {0, 0},
                              .nbatches = total,
                              .workers = (int)record->workers,
                              .threads = (int)record->threads,
                              .kernels = kernels};
    /* Pass by pass, every pipeline in turn, so that a change in the
     * machine's state (another process, the clock) falls on all of them
     * alike rather than on whichever ran last. */
    for (int pass = 0; pass < passes && st == SL_OK; pass++)
        for (int i = 0; i < count && st == SL_OK; i++) {
            st = adapter->run(adapter, pipelines[i], &request, NULL, NULL, latency, err);
            for (int64_t b = 0; b < measured && st == SL_OK; b++)
                samples[((size_t)i * (size_t)passes + (size_t)pass) * (size_t)measured + (size_t)b] =
                    latency[warmup + b];
        }
    for (int i = 0; i < count && st == SL_OK; i++)
        p50_ns[i] = sl_percentile_i64(samples + (size_t)i * (size_t)passes * (size_t)measured,
                                      (size_t)passes * (size_t)measured, 50.0);
    free(latency);
    free(samples);
    return st;
}

sl_status sl__scenario_twin(const sl_scenario_instance *instance,
                            sl_status (*add_ops)(sl_pipeline_spec *spec, int64_t param, sl_err *err), int64_t param,
                            sl_pipeline **out, sl_err *err)
{
    sl_pipeline_spec spec = instance->spec;
    spec.nops = 0;
    sl_status st = add_ops(&spec, param, err);
    return st ? st : sl_pipeline_create(&spec, out, err);
}
