/* `sluice export`: writes what a peer loader needs to do one scenario
 * variant's work (sluice/export.h, docs/peers.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sluice/export.h"
#include "sluice/scenario.h"

static const char usage[] = "usage: sluice export --scenario ID --variant V --output DIR [options]\n"
                            "\n"
                            "Writes the variant's fixture fields as .npy, each epoch's element order, the\n"
                            "per-element and per-batch random decisions of its ops (MixUp and CutMix lambdas,\n"
                            "boxes and partners), the reference's per-batch digests\n"
                            "and plan.json (ops and parameters, batch size, n, seed, epochs, batches) into\n"
                            "DIR, for a peer loader to do the same work and prove it (docs/peers.md).\n"
                            "\n"
                            "options:\n"
                            "  --scenario ID       the scenario (sluice list shows them)\n"
                            "  --variant V         its variant\n"
                            "  --profile ci|full   sizes and the batch count of a bench run (default ci)\n"
                            "  --batches N         batches from the start of epoch 0 (default: the profile's\n"
                            "                      warmup + measured batches, what one bench repetition runs)\n"
                            "  --seed N            fixture and pipeline seed (default 42)\n"
                            "  --output DIR        where to write: created, or replaced whole when it holds an\n"
                            "                      export (a folder of other files is refused)\n"
                            "  -h, --help          show this help\n";

/* What an export folder holds (sluice/export.h): an export written before
 * manifests existed may be replaced, a folder of anything else may not. */
static bool export_file_name(const char *name)
{
    size_t len = strlen(name);
    return strcmp(name, "plan.json") == 0 || strcmp(name, SL_FOLDER_MANIFEST) == 0 ||
           (len > 4 && strcmp(name + len - 4, ".npy") == 0);
}

int sl__cmd_export(int argc, char **argv)
{
    const char *scenario_id = NULL, *variant_name = NULL, *output = NULL;
    sl_profile profile = SL_PROFILE_CI;
    uint64_t seed = 42;
    int64_t batches = 0;
    sl__cli cli = sl__cli_start("export", argc, argv);
    const char *value;
    while (sl__cli_next(&cli)) {
        if (sl__cli_is_help(&cli)) {
            fputs(usage, stdout);
            return SL__EXIT_OK;
        } else if (sl__cli_option(&cli, "--scenario", &value)) {
            scenario_id = value;
        } else if (sl__cli_option(&cli, "--variant", &value)) {
            variant_name = value;
        } else if (sl__cli_option(&cli, "--profile", &value)) {
            profile = sl__cli_profile(&cli, "--profile", value);
        } else if (sl__cli_option(&cli, "--batches", &value)) {
            batches = sl__cli_int(&cli, "--batches", value, 1, 1 << 24);
        } else if (sl__cli_option(&cli, "--seed", &value)) {
            seed = sl__cli_u64(&cli, "--seed", value);
        } else if (sl__cli_option(&cli, "--output", &value)) {
            output = value;
        } else {
            sl__cli_unknown(&cli);
        }
    }
    if (!scenario_id || !variant_name || !output)
        sl__cli_usage_error(&cli, "say --scenario ID, --variant V and --output DIR");
    const sl_scenario *scenario = sl_scenario_find(scenario_id);
    if (!scenario)
        sl__cli_usage_error(&cli, "unknown scenario '%s' (sluice list shows them)", scenario_id);
    const sl_variant *variant = sl_scenario_variant(scenario, variant_name);
    if (!variant)
        sl__cli_usage_error(&cli, "scenario %s has no variant '%s'", scenario->id, variant_name);
    const sl_profile_settings *settings = sl_profile_get(profile);
    if (batches == 0)
        batches = settings->warmup_batches + settings->measured_batches;

    sl_build_options build;
    sl_build_options_init(&build, profile, seed);
    sl_scenario_instance *instance = NULL;
    sl_err err = {0};
    sl__origin origin;
    sl__cli_origin(argc, argv, &origin);
    /* Written beside the folder and renamed into place: a re-export that
     * dies halfway leaves the old export whole, never new data beside an
     * old plan. */
    sl_staged_folder staged;
    sl_status st = sl_folder_stage(output, "export", export_file_name, &staged, &err);
    if (st == SL_OK)
        st = sl_scenario_instantiate(scenario, variant, &build, &instance, &err);
    if (st == SL_OK) {
        sl_export_meta meta = {.scenario = scenario->id,
                               .variant = variant->name,
                               .profile = settings->name,
                               .warmup_batches = settings->warmup_batches,
                               .kernels = sl_kernels_reference(),
                               .origin = &origin.view};
        st = sl_export_write(instance->pipeline, &meta, batches, staged.path, &err);
        if (st == SL_OK)
            st = sl_folder_commit(&staged, &err);
    }
    sl_scenario_instance_free(instance);
    if (st != SL_OK) {
        sl_folder_abandon(&staged);
        sl__cli_error("export", "%s/%s: %s", scenario->id, variant->name, err.msg);
        return SL__EXIT_FAILED;
    }
    printf("exported %s/%s (%s, %lld batches) to %s\n", scenario->id, variant->name, settings->name,
           (long long)batches, output);
    return SL__EXIT_OK;
}
