/* Where goldens live and the one way they are made: the reference adapter's
 * first batches of a scenario, captured through the same adapter interface
 * every benchmark uses. */
#include <stdio.h>
#include <stdlib.h>

#include "sluice/adapters/adapter.h"
#include "sluice/bench/scenario.h"
#include "sluice/core/digest.h"
#include "sluice/records/golden.h"
#include "sluice_config.h"

const char *sl_golden_default_dir(void)
{
    return SLUICE_SOURCE_ROOT "/golden";
}

void sl_golden_path(const char *dir, const sl_scenario *scenario, const sl_variant *variant, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s__%s.json", dir, scenario->id, variant->name);
}

/* The sink stops the run at the first batch the golden cannot take, keeping
 * that error for the caller. */
typedef struct capture_sink {
    sl_golden *golden;
    int64_t seen;
    sl_status status;
    sl_err err;
} capture_sink;

static int capture_batch(const sl_batch *batch, void *user)
{
    capture_sink *sink = user;
    sink->status = sl_golden_add_batch(sink->golden, batch, &sink->err);
    sink->seen++;
    return sink->status != SL_OK;
}

sl_status sl_scenario_capture_golden(const sl_scenario_instance *instance, struct sl_golden **out, sl_err *err)
{
    *out = NULL;
    const sl_scenario *scenario = instance->scenario;
    const sl_adapter *reference = sl_adapter_find("reference");
    if (reference == NULL) {
        return sl_fail(err, SL_ENOTFOUND, "capturing the golden of %s/%s: no adapter named 'reference'", scenario->id,
                       instance->variant->name);
    }
    if (scenario->golden_batches <= 0) {
        return sl_fail(err, SL_EINVAL, "capturing the golden of %s/%s: golden_batches is %d, must be positive",
                       scenario->id, instance->variant->name, scenario->golden_batches);
    }

    int64_t nbatches = scenario->golden_batches;
    int64_t *latency = malloc((size_t)nbatches * sizeof *latency);
    uint64_t seed = sl_pipeline_get_spec(instance->pipeline)->seed;
    sl_golden *golden = sl_golden_new(scenario->id, instance->variant->name, seed);
    sl_status status = SL_OK;
    if (latency == NULL || golden == NULL) {
        status = sl_fail(err, SL_ENOMEM, "capturing the golden of %s/%s: out of memory", scenario->id,
                         instance->variant->name);
        goto fail;
    }

    capture_sink sink = {.golden = golden};
    sl_run_request request = {.start = {0, 0}, .nbatches = nbatches};
    sl_err run_err = {0};
    status = reference->run(reference, instance->pipeline, &request, capture_batch, &sink, latency, &run_err);
    if (sink.status != SL_OK) {
        status = sl_fail(err, sink.status, "capturing the golden of %s/%s: %s", scenario->id, instance->variant->name,
                         sink.err.msg);
        goto fail;
    }
    if (status != SL_OK) {
        status = sl_fail(err, status, "capturing the golden of %s/%s: %s", scenario->id, instance->variant->name,
                         run_err.msg);
        goto fail;
    }
    if (sink.seen != nbatches) {
        status = sl_fail(err, SL_EMISMATCH,
                         "capturing the golden of %s/%s: the reference adapter delivered %lld of %lld batches",
                         scenario->id, instance->variant->name, (long long)sink.seen, (long long)nbatches);
        goto fail;
    }
    free(latency);
    *out = golden;
    return SL_OK;

fail:
    if (golden != NULL) {
        sl_golden_free(golden);
    }
    free(latency);
    return status;
}
