/* The scenario registry: lookup, instantiation and the memory check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unistd.h>

#include "scenarios/common.h"
#include "sluice/bench/comm.h"
#include "sluice/core/cleanup.h"
#include "sluice/core/resources.h"
#include "sluice/core/timing.h"
#include "sluice/corpus/scenarios.h"

static const sl_scenario *const scenarios[] = {
    &sl__scenario_cv1,   &sl__scenario_nlp1,  &sl__scenario_tab1, &sl__scenario_pc1,  &sl__scenario_io1,
    &sl__scenario_io4,   &sl__scenario_pr1,   &sl__scenario_pr2,  &sl__scenario_cv2,  &sl__scenario_cv3,
    &sl__scenario_cv4,   &sl__scenario_mm1,   &sl__scenario_mm2,  &sl__scenario_nlp2, &sl__scenario_tab2,
    &sl__scenario_dist1, &sl__scenario_dist2, &sl__scenario_pc3,  &sl__scenario_pc5,  &sl__scenario_xfmr1,
    &sl__scenario_nnx1,  &sl__scenario_aug1,  &sl__scenario_aug2, &sl__scenario_aug3, &sl__scenario_pc2,
    &sl__scenario_pc4,   &sl__scenario_io2,   &sl__scenario_io3,
};

int sl_scenario_count(void)
{
    return (int)(sizeof scenarios / sizeof scenarios[0]);
}

const sl_scenario *sl_scenario_at(int index)
{
    return index >= 0 && index < sl_scenario_count() ? scenarios[index] : NULL;
}

const sl_scenario *sl_scenario_find(const char *id)
{
    for (int i = 0; i < sl_scenario_count(); i++)
        if (strcasecmp(scenarios[i]->id, id) == 0)
            return scenarios[i];
    return NULL;
}

const sl_variant *sl_scenario_variant(const sl_scenario *scenario, const char *name)
{
    for (int i = 0; i < scenario->nvariants; i++)
        if (strcasecmp(scenario->variants[i].name, name) == 0)
            return &scenario->variants[i];
    return NULL;
}

static int size_profile(const sl_build_options *options)
{
    return sl_profile_get(options->profile)->size_profile == SL_PROFILE_FULL ? 1 : 0;
}

int64_t sl_variant_n(const sl_variant *variant, const sl_build_options *options)
{
    return options->n_override > 0 ? options->n_override : variant->n[size_profile(options)];
}

int64_t sl_variant_batch_size(const sl_variant *variant, const sl_build_options *options)
{
    return options->batch_override > 0 ? options->batch_override : variant->batch_size[size_profile(options)];
}

sl_status sl__scenario_make_fixture(sl_scenario_instance *instance, const sl_fixture_spec *spec, uint64_t seed,
                                    sl_err *err)
{
    /* The fixture, a file copy of it for file sources, and batch buffers:
     * asking for twice the fixture keeps the machine out of swap. */
    uint64_t need = 2 * sl_fixture_bytes(spec);
    const char *limit = NULL;
    int64_t have = sl_memory_available(&limit);
    if (have >= 0 && need > (uint64_t)have)
        return sl_fail(err, SL_ESKIPPED, "%s/%s needs about %.2f GiB and %.2f GiB is available (the least is %s)",
                       instance->scenario->id, instance->variant->name, (double)need / (1 << 30),
                       (double)have / (1 << 30), limit);
    sl_status st = sl_fixture_build(spec, seed, &instance->fixture, err);
    if (st)
        return st;
    instance->source = instance->fixture;
    return SL_OK;
}

void sl__scenario_begin_spec(sl_scenario_instance *instance, const sl_build_options *options)
{
    sl_pipeline_spec_init(&instance->spec, instance->source, sl_variant_batch_size(instance->variant, options),
                          options->seed);
    instance->spec.shuffle = options->shuffle;
    instance->spec.shard = sl_comm_data_shard(options->comm);
}

sl_status sl__scenario_begin_floats(sl_scenario_instance *instance, const sl_variant *variant,
                                    const sl_build_options *options, int32_t h, int32_t w, int32_t c, sl_err *err)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_FLOATS, .n = sl_variant_n(variant, options), .h = h, .w = w, .c = c};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st == SL_OK)
        sl__scenario_begin_spec(instance, options);
    return st;
}

sl_status sl__scenario_begin_images(sl_scenario_instance *instance, const sl_variant *variant,
                                    const sl_build_options *options, int32_t side, sl_err *err)
{
    sl_fixture_spec fixture = {.kind = SL_FIXTURE_IMAGES,
                               .n = sl_variant_n(variant, options),
                               .h = side,
                               .w = side,
                               .c = 3,
                               .classes = SL__IMAGE_CLASSES};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st == SL_OK)
        sl__scenario_begin_spec(instance, options);
    return st;
}

sl_status sl__scenario_reserve_fixture(sl_scenario_instance *instance, const sl_fixture_spec *spec, sl_err *err)
{
    sl_status st = sl_fixture_reserve(spec, &instance->fixture, err);
    if (st == SL_OK)
        instance->source = instance->fixture;
    return st;
}

sl_status sl__scenario_generate_read_rows(sl_scenario_instance *instance, const sl_fixture_spec *spec, uint64_t seed,
                                          int64_t batches_read, sl_err *err)
{
    /* The rows are the pipeline's to name: a pipeline over the reserved
     * source (whose rows are not read to make one) gives the ids of every
     * position the run will read. */
    sl_pipeline *order = NULL;
    sl_status st = sl_pipeline_create(&instance->spec, &order, err);
    if (st != SL_OK)
        return st;
    int64_t per_epoch = sl_pipeline_epoch_size(order);
    int64_t batch_size = sl_pipeline_get_spec(order)->batch_size;
    int64_t capacity = per_epoch + batches_read * batch_size;
    int64_t *ids = malloc((size_t)(capacity > 0 ? capacity : 1) * sizeof *ids);
    if (!ids) {
        sl_pipeline_free(order);
        return sl_fail(err, SL_ENOMEM, "no memory for the ids of %lld rows", (long long)capacity);
    }
    int64_t n = 0;
    for (int64_t p = 0; p < per_epoch; p++)
        ids[n++] = sl_pipeline_element_at(order, 0, p);
    sl_position position = {0, 0};
    for (int64_t b = 0; b < batches_read; b++) {
        int64_t rows = sl_pipeline_batch_rows(order, position.batch);
        for (int64_t r = 0; r < rows && n < capacity; r++)
            ids[n++] = sl_pipeline_element_at(order, position.epoch, position.batch * batch_size + r);
        position = sl_position_advance(order, position, 1);
    }
    sl_pipeline_free(order);
    st = sl_fixture_generate_rows(instance->fixture, spec, seed, ids, n, err);
    free(ids);
    return st;
}

sl_status sl_scenario_instantiate(const sl_scenario *scenario, const sl_variant *variant,
                                  const sl_build_options *options, sl_scenario_instance **out, sl_err *err)
{
    *out = NULL;
    const sl_profile_settings *profile = sl_profile_get(options->profile);
    if (sl_variant_n(variant, options) <= 0)
        return sl_fail(err, SL_ESKIPPED, "%s/%s does not run at %s size", scenario->id, variant->name,
                       profile->size_profile == SL_PROFILE_FULL ? "full" : "ci");
    sl_scenario_instance *instance = calloc(1, sizeof *instance);
    if (!instance)
        return sl_fail(err, SL_ENOMEM, "cannot allocate a scenario instance");
    instance->scenario = scenario;
    instance->variant = variant;
    instance->comm = options->comm;
    int64_t start = sl_now_ns();
    sl_status st = scenario->build(scenario, variant, options, instance, err);
    if (st == SL_OK)
        st = sl_pipeline_create(&instance->spec, &instance->pipeline, err);
    instance->build_ns = sl_now_ns() - start;
    if (st) {
        if (st != SL_ESKIPPED)
            sl_fail_context(err, "building %s/%s", scenario->id, variant->name);
        sl_scenario_instance_free(instance);
        return st;
    }
    *out = instance;
    return SL_OK;
}

void sl_scenario_instance_free(sl_scenario_instance *instance)
{
    if (!instance)
        return;
    sl_pipeline_free(instance->pipeline);
    if (instance->source != instance->fixture)
        sl_source_free(instance->source);
    sl_source_free(instance->fixture);
    if (instance->owns_workdir)
        sl_workdir_remove(instance->workdir);
    free(instance);
}
