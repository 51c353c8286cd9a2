/* Steps every scenario build shares. */
#ifndef SLUICE_SCENARIOS_COMMON_H
#define SLUICE_SCENARIOS_COMMON_H

#include "sluice/bench/scenario.h"
#include "sluice/exec/executors.h"
#include "sluice/fixtures/fixtures.h"

extern const sl_scenario sl__scenario_cv1;
extern const sl_scenario sl__scenario_nlp1;
extern const sl_scenario sl__scenario_tab1;
extern const sl_scenario sl__scenario_pc1;
extern const sl_scenario sl__scenario_io1;
extern const sl_scenario sl__scenario_io4;
extern const sl_scenario sl__scenario_pr1;
extern const sl_scenario sl__scenario_io2;
extern const sl_scenario sl__scenario_io3;
extern const sl_scenario sl__scenario_pr2;
extern const sl_scenario sl__scenario_cv2;
extern const sl_scenario sl__scenario_cv3;
extern const sl_scenario sl__scenario_cv4;
extern const sl_scenario sl__scenario_mm1;
extern const sl_scenario sl__scenario_mm2;
extern const sl_scenario sl__scenario_tab2;
extern const sl_scenario sl__scenario_nlp2;
extern const sl_scenario sl__scenario_dist1;
extern const sl_scenario sl__scenario_dist2;
extern const sl_scenario sl__scenario_pc3;
extern const sl_scenario sl__scenario_pc5;
extern const sl_scenario sl__scenario_xfmr1;
extern const sl_scenario sl__scenario_nnx1;
extern const sl_scenario sl__scenario_aug1;
extern const sl_scenario sl__scenario_aug2;
extern const sl_scenario sl__scenario_aug3;
extern const sl_scenario sl__scenario_pc2;
extern const sl_scenario sl__scenario_pc4;

/* Generates the fixture into instance->fixture (and instance->source), or
 * returns SL_ESKIPPED when it would not fit in available memory. */
sl_status sl__scenario_make_fixture(sl_scenario_instance *instance, const sl_fixture_spec *spec, uint64_t seed,
                                    sl_err *err);

/* Shard-only generation (sluice/fixtures/fixtures.h): a reserved fixture into
 * instance->fixture and instance->source, none of its rows there yet; then,
 * once instance->spec is complete, every row a run reading epoch 0 and the
 * first batches_read batches will read, generated. */
sl_status sl__scenario_reserve_fixture(sl_scenario_instance *instance, const sl_fixture_spec *spec, sl_err *err);
sl_status sl__scenario_generate_read_rows(sl_scenario_instance *instance, const sl_fixture_spec *spec, uint64_t seed,
                                          int64_t batches_read, sl_err *err);

/* The usual start of a scenario over f32 images: a floats fixture of the
 * variant's n elements of h x w x c (no labels), then the spec begun over
 * it. */
sl_status sl__scenario_begin_floats(sl_scenario_instance *instance, const sl_variant *variant,
                                    const sl_build_options *options, int32_t h, int32_t w, int32_t c, sl_err *err);

/* The usual start of a scenario over RGB images: an images fixture of the
 * variant's n side x side x 3 u8 elements with SL__IMAGE_CLASSES classes,
 * then the spec begun over it. */
#define SL__IMAGE_CLASSES 10
sl_status sl__scenario_begin_images(sl_scenario_instance *instance, const sl_variant *variant,
                                    const sl_build_options *options, int32_t side, sl_err *err);

/* Starts instance->spec over instance->source with the variant's batch size,
 * the options' seed and order. */
void sl__scenario_begin_spec(sl_scenario_instance *instance, const sl_build_options *options);

struct sl_adapter;
struct sl_record;
/* DIST-1 and DIST-2 (dist_common.c): their shared build, and the metrics
 * hook that checks the gathered shards and adds every rank's figures. */
sl_status sl__scenario_dist_build(const sl_scenario *scenario, const sl_variant *variant,
                                  const sl_build_options *options, sl_scenario_instance *instance, sl_err *err);
sl_status sl__scenario_dist_metrics(const sl_scenario_instance *instance, const struct sl_adapter *adapter,
                                    const sl_kernel_table *kernels, struct sl_record *record, sl_err *err);
/* One measured pass for a metrics hook: `warmup` then `measured` batches
 * from the start of epoch 0 through the adapter's own run (its timing
 * loop), on one thread with no workers. Gives the median latency of the
 * measured batches and the digest of their output; `inner`, when not NULL,
 * sees every batch after it is digested, outside the latency as every sink
 * is. */
struct sl_adapter;
typedef struct sl__measured {
    double median_ns;
    uint64_t digest;
    int64_t batches;
} sl__measured;
sl_status sl__scenario_measure(const sl_scenario_instance *instance, const struct sl_adapter *adapter,
                               const sl_kernel_table *kernels, int64_t warmup, int64_t measured, sl_batch_sink inner,
                               void *user, sl__measured *out, sl_err *err);

/* Times `count` pipelines with the adapter as the record was measured
 * (its warmup and measured batches, workers and threads from the start of
 * epoch 0), in `passes` interleaved passes; p50_ns[i] is pipeline i's
 * median batch latency over the measured batches of every pass. For
 * scenario metrics that compare pipelines over the same source. */
sl_status sl__scenario_time_pipelines(const struct sl_adapter *adapter, const sl_kernel_table *kernels,
                                      sl_pipeline *const *pipelines, int count, const struct sl_record *record,
                                      int passes, double *p50_ns, sl_err *err);

/* A pipeline over the instance's source with its spec (batch size, seed,
 * order) but the ops add_ops(spec, param) puts in place of its own. */
sl_status sl__scenario_twin(const sl_scenario_instance *instance,
                            sl_status (*add_ops)(sl_pipeline_spec *spec, int64_t param, sl_err *err), int64_t param,
                            sl_pipeline **out, sl_err *err);

#endif
