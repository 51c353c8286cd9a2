/* Steps every scenario build shares. */
#ifndef SLUICE_SCENARIOS_COMMON_H
#define SLUICE_SCENARIOS_COMMON_H

#include "sluice/fixtures.h"
#include "sluice/scenario.h"

extern const sl_scenario sl__scenario_cv1;
extern const sl_scenario sl__scenario_nlp1;
extern const sl_scenario sl__scenario_tab1;
extern const sl_scenario sl__scenario_pc1;
extern const sl_scenario sl__scenario_io1;
extern const sl_scenario sl__scenario_io2;
extern const sl_scenario sl__scenario_io3;
extern const sl_scenario sl__scenario_pr2;

/* Generates the fixture into instance->fixture (and instance->source), or
 * returns SL_ESKIPPED when it would not fit in available memory. */
sl_status sl__scenario_make_fixture(sl_scenario_instance *instance, const sl_fixture_spec *spec, uint64_t seed,
                                    sl_err *err);

/* Starts instance->spec over instance->source with the variant's batch size,
 * the options' seed and order. */
void sl__scenario_begin_spec(sl_scenario_instance *instance, const sl_build_options *options);

#endif
