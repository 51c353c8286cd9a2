/* IO-1: source back ends. The same images read from memory, from a
 * memory-mapped .npy file and with pread: every source must yield the same
 * batches, so their costs can be compared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "sluice/core/cleanup.h"
#include "sluice/corpus/scenarios.h"

static const float imagenet_mean[3] = {123.675f, 116.28f, 103.53f};
static const float imagenet_std[3] = {58.395f, 57.12f, 57.375f};

static const sl_variant variants[] = {
    {"memory", "1k x 64x64x3 u8 in memory, bs 64", {1000, 5000}, {64, 64}, SL_SOURCE_MEMORY, true},
    {"mmap", "1k x 64x64x3 u8 from a memory-mapped .npy, bs 64", {1000, 5000}, {64, 64}, SL_SOURCE_MMAP, false},
    {"pread", "1k x 64x64x3 u8 read with pread, bs 64", {1000, 5000}, {64, 64}, SL_SOURCE_PREAD, false},
};

/* Exports the fixture to .npy files in a fresh work directory and opens
 * them as the pipeline's source. */
static sl_status open_file_source(sl_scenario_instance *instance, const sl_build_options *options, sl_source_kind kind,
                                  sl_err *err)
{
    const char *base = options->workdir ? options->workdir : sl_temp_base();
    sl_status st = sl_workdir_create(base, "io1", instance->workdir, sizeof instance->workdir, err);
    if (st)
        return st;
    instance->owns_workdir = true;
    st = sl_source_export_npy(instance->fixture, instance->workdir, err);
    if (st)
        return st;
    const sl_schema *schema = sl_source_schema(instance->fixture);
    char paths[SL_MAX_FIELDS][320];
    const char *path_ptrs[SL_MAX_FIELDS], *names[SL_MAX_FIELDS];
    for (int f = 0; f < schema->nfields; f++) {
        snprintf(paths[f], sizeof paths[f], "%s/%s.npy", instance->workdir, schema->fields[f].name);
        path_ptrs[f] = paths[f];
        names[f] = schema->fields[f].name;
    }
    return sl_source_file_create(kind, schema->nfields, names, path_ptrs, &instance->source, err);
}

static sl_status build(const sl_scenario *scenario, const sl_variant *variant, const sl_build_options *options,
                       sl_scenario_instance *instance, sl_err *err)
{
    (void)scenario;
    sl_fixture_spec fixture = {
        .kind = SL_FIXTURE_IMAGES, .n = sl_variant_n(variant, options), .h = 64, .w = 64, .c = 3, .classes = 1000};
    sl_status st = sl__scenario_make_fixture(instance, &fixture, options->seed, err);
    if (st)
        return st;
    sl_source_kind kind = (sl_source_kind)variant->param;
    if (kind != SL_SOURCE_MEMORY && (st = open_file_source(instance, options, kind, err)) != SL_OK)
        return st;
    sl__scenario_begin_spec(instance, options);
    return sl_pipeline_spec_add(&instance->spec, sl_op_normalize("image", 3, imagenet_mean, imagenet_std), err);
}

const sl_scenario sl__scenario_io1 = {
    .id = "IO-1",
    .title = "source back ends",
    .property = "every source yields identical batches",
    .variants = variants,
    .nvariants = sizeof variants / sizeof variants[0],
    .golden_batches = 2,
    .build = build,
};
