/* XFMR-1: per-element vs batched vs fused. u8 images normalized per channel
 * to f32, randomly cropped (7/8 of each side, zero-padded back, centred) and
 * turned by k quarter turns (k uniform in 0..3), every decision keyed by the
 * element. The same pipeline runs one element per call (`per-element`, a
 * Python `map`), one op per batch (`iter`) and fused per element and tile
 * (`fused`): the outputs are bit-identical and the metrics hook reports what
 * batching and fusion buy. */
#include <inttypes.h>
#include <stdio.h>

#include "common.h"
#include "sluice/adapters/adapter.h"
#include "sluice/records/record.h"

/* Stable op ids: the keys of the two random ops' streams. */
enum { XFMR1_CROP_OP = 1, XFMR1_ROT90_OP = 2 };

static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

static const sl_variant variants[] = {
    {"32x32", "2k x 32x32x3 u8, bs 128 (50k at full)", {2000, 50000}, {128, 128}, 32, false},
    {"128x128", "50k x 128x128x3 u8, bs 64, full only", {0, 50000}, {0, 64}, 128, false},
    {"512x512", "10k x 512x512x3 u8, bs 16, full only", {0, 10000}, {0, 16}, 512, false},
};

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    int32_t side = (int32_t)variant->param;
    sl_status st = sl__scenario_begin_images(instance, variant, options, side, err);
    if (st)
        return st;
    int32_t crop = side * 7 / 8;
    st = sl_pipeline_spec_add(&instance->spec, sl_op_normalize("image", 3, imagenet_mean, imagenet_std), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_random_crop("image", XFMR1_CROP_OP, crop, crop), err);
    if (st == SL_OK)
        st = sl_pipeline_spec_add(&instance->spec, sl_op_rot90("image", XFMR1_ROT90_OP), err);
    return st;
}

/* The three execution modes, slowest expected first. */
enum { PER_ELEMENT, BATCHED, FUSED, NMODES };
static const char *const mode_adapters[NMODES] = {"per-element", "iter", "fused"};

/* Runs the three modes over the record's window (its warmup and measured
 * batch counts) on one thread each, checks their outputs are the same bytes
 * and adds each mode's median batch time and the speedups between them. The
 * same figures go into every adapter's record of the scenario, so any one
 * record carries the comparison. */
static sl_status metrics(const sl_scenario_instance *instance, const sl_adapter *adapter,
                         const sl_kernel_table *kernels, sl_record *record, sl_err *err)
{
    (void)adapter;
    sl__measured m[NMODES];
    for (int i = 0; i < NMODES; i++) {
        const sl_adapter *mode = sl_adapter_find(mode_adapters[i]);
        if (!mode)
            return sl_fail(err, SL_ENOTFOUND, "XFMR-1 needs the %s adapter", mode_adapters[i]);
        sl_status st = sl__scenario_measure(instance, mode, kernels, record->warmup_batches, record->measured_batches,
                                            NULL, NULL, &m[i], err);
        if (st) {
            sl_fail_context(err, "XFMR-1 metrics, %s pass", mode_adapters[i]);
            return st;
        }
    }
    for (int i = 1; i < NMODES; i++)
        if (m[i].digest != m[PER_ELEMENT].digest)
            return sl_fail(err, SL_EMISMATCH,
                           "the %s pass's output (digest %016" PRIx64 ") differs from per-element's (%016" PRIx64 ")",
                           mode_adapters[i], m[i].digest, m[PER_ELEMENT].digest);
    sl_record_add_scenario_metric(record, "per_element_p50_ns_per_batch", m[PER_ELEMENT].median_ns, "ns");
    sl_record_add_scenario_metric(record, "batched_p50_ns_per_batch", m[BATCHED].median_ns, "ns");
    sl_record_add_scenario_metric(record, "fused_p50_ns_per_batch", m[FUSED].median_ns, "ns");
    sl_record_add_scenario_metric(record, "batched_speedup_over_per_element",
                                  m[PER_ELEMENT].median_ns / m[BATCHED].median_ns, "ratio");
    sl_record_add_scenario_metric(record, "fused_speedup_over_per_element",
                                  m[PER_ELEMENT].median_ns / m[FUSED].median_ns, "ratio");
    sl_record_add_scenario_metric(record, "fused_speedup_over_batched", m[BATCHED].median_ns / m[FUSED].median_ns,
                                  "ratio");
    return SL_OK;
}

const sl_scenario sl__scenario_xfmr1 = {
    .id = "XFMR-1",
    .title = "per-element vs batched vs fused",
    .property = "per-element, batched and fused modes bit-identical; speedups reported",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
    .metrics = metrics,
};
