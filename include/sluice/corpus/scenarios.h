/* The scenario registry: every scenario of the corpus, found by id, and
 * the instance each variant builds. */
#ifndef SLUICE_SCENARIOS_H
#define SLUICE_SCENARIOS_H

#include <stdint.h>

#include "sluice/bench/scenario.h"
#include "sluice/core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

int sl_scenario_count(void);
const sl_scenario *sl_scenario_at(int index);
const sl_scenario *sl_scenario_find(const char *id); /* case-insensitive */
const sl_variant *sl_scenario_variant(const sl_scenario *scenario, const char *name);
/* n and batch size of a variant under options (overrides applied). */
int64_t sl_variant_n(const sl_variant *variant, const sl_build_options *options);
int64_t sl_variant_batch_size(const sl_variant *variant, const sl_build_options *options);

/* Builds fixture, source and pipeline. Returns SL_ESKIPPED with the reason in
 * err when the variant does not run at this profile's size or would not fit
 * in available memory. */
sl_status sl_scenario_instantiate(const sl_scenario *scenario, const sl_variant *variant,
                                  const sl_build_options *options, sl_scenario_instance **out, sl_err *err);
void sl_scenario_instance_free(sl_scenario_instance *instance);

#ifdef __cplusplus
}
#endif

#endif
