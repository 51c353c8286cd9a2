/* `sluice export`: writes what a peer loader needs to do one scenario
 * variant's work (sluice/records/export.h, docs/peers.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sluice/bench/scenario.h"
#include "sluice/records/export.h"

typedef struct export_args {
    sl__variant_args variant;
    const char *output, *digests;
} export_args;

static const sl__option export_options[] = {
    SL__VARIANT_OPTIONS(export_args, variant, "its variant"),
    {.name = "--output",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(export_args, output),
     .help = "where to write: created, or replaced whole when it holds an\n"
             "export (a folder of other files is refused)"},
    {.name = "--digests",
     .arg = "FILE",
     .kind = SL__OPTION_TEXT,
     SL__AT(export_args, digests),
     .help = "also write the reference's XXH3-64 of each batch's canonical\n"
             "bytes (i64 .npy holding the u64 bits) to FILE, outside DIR"},
};

const sl__command_spec sl__export_spec = {
    .name = "export",
    .synopsis = "sluice export --scenario ID --variant V --output DIR [options]",
    .about = "Writes the variant's fixture fields as .npy, each epoch's element order, the\n"
             "per-element and per-batch random decisions of its ops (MixUp and CutMix lambdas,\n"
             "boxes and partners) and plan.json (ops and parameters, batch size, n, seed,\n"
             "epochs, batches) into DIR, for a peer loader to do the same work\n"
             "(docs/peers.md). DIR holds no expected output: `sluice peer-check` holds a\n"
             "loader to the reference, and --digests writes the reference's per-batch\n"
             "digests to a file of their own, for checks of one's own.",
    .options = export_options,
    .noptions = SL__COUNT(export_options),
};

/* What an export folder holds (sluice/records/export.h): an export written before
 * manifests existed may be replaced, a folder of anything else may not. */
static bool export_file_name(const char *name)
{
    size_t len = strlen(name);
    return strcmp(name, "plan.json") == 0 || strcmp(name, SL_FOLDER_MANIFEST) == 0 ||
           (len > 4 && strcmp(name + len - 4, ".npy") == 0);
}

int sl__cmd_export(int argc, char **argv)
{
    export_args parsed = {0};
    sl__variant_args_init(&parsed.variant);
    sl__cli cli = sl__options_parse(&sl__export_spec, argc, argv, &parsed);
    sl__variant_args args = parsed.variant;
    const char *output = parsed.output, *digests = parsed.digests;
    if (!args.scenario || !args.variant || !output)
        sl__cli_usage_error(&cli, "say --scenario ID, --variant V and --output DIR");
    /* The answers never go where a peer reads its plan. */
    size_t len = strlen(output);
    while (len > 1 && output[len - 1] == '/')
        len--;
    if (digests && strncmp(digests, output, len) == 0 && (digests[len] == '/' || digests[len] == '\0'))
        sl__cli_usage_error(&cli, "--digests %s is inside --output %s, where a peer would read it; put it elsewhere",
                            digests, output);
    const sl_scenario *scenario = NULL;
    const sl_variant *variant = NULL;
    sl_err err = {0};
    sl_scenario_instance *instance = sl__cli_instantiate(&cli, &args, false, &scenario, &variant, &err);
    const sl_profile_settings *settings = sl_profile_get(args.profile);
    sl__origin origin;
    sl__cli_origin(argc, argv, &origin);
    /* Written beside the folder and renamed into place: a re-export that
     * dies halfway leaves the old export whole, never new data beside an
     * old plan. */
    sl_staged_folder staged;
    bool staging = false;
    sl_status st = SL_EINVAL;
    if (instance) {
        st = sl_folder_stage(output, "export", export_file_name, &staged, &err);
        staging = st == SL_OK;
    }
    if (st == SL_OK) {
        sl_export_meta meta = {.scenario = scenario->id,
                               .variant = variant->name,
                               .profile = settings->name,
                               .warmup_batches = settings->warmup_batches,
                               .kernels = sl_kernels_reference(),
                               .digests_path = digests,
                               .origin = &origin.view};
        st = sl_export_write(instance->pipeline, &meta, args.batches, staged.path, &err);
        if (st == SL_OK)
            st = sl_folder_commit(&staged, &err);
    }
    sl_scenario_instance_free(instance);
    if (st != SL_OK) {
        if (staging)
            sl_folder_abandon(&staged);
        sl__cli_error("export", "%s/%s: %s", scenario->id, variant->name, err.msg);
        return SL__EXIT_FAILED;
    }
    printf("exported %s/%s (%s, %lld batches) to %s\n", scenario->id, variant->name, settings->name,
           (long long)args.batches, output);
    return SL__EXIT_OK;
}
