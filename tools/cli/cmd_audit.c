/* `sluice audit`: a determinism audit. Runs every selected scenario,
 * variant and available adapter for several seeds and epochs and writes a
 * manifest of per-batch, per-field and per-row digests; `--compare A B`
 * names the first difference between two manifests. Two builds, machines
 * or kernel tables agree when their manifests compare equal.
 *
 * The output is a folder written whole or not at all (sluice/core/folder.h),
 * like a baseline or an export: the digests in audit.json and a
 * MANIFEST.json that says where they came from (commit, machine, command).
 * An audit killed while writing leaves the previous folder as it was. */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "sluice/bench/audit.h"
#include "sluice/kernels/kernels.h"

typedef struct audit_args {
    const char *scenarios, *variants, *adapters, *seeds, *output;
    const char *compare_a, *compare_b;
    int epochs, workers, threads;
    int64_t batches;
    const char *kernels;
} audit_args;

/* What an audit runs, once the command line is read: the seeds, the
 * selection and the settings of its runs. */
typedef struct audit_plan {
    sl__cli_list seeds;
    uint64_t *seed_values;
    sl__selection selection;
    sl_audit_settings settings;
} audit_plan;

/* The digests' file inside an audit folder, beside its MANIFEST.json. */
#define AUDIT_DIGESTS "audit.json"

/* What an audit folder holds: what lets one written before the folder had
 * a manifest be replaced, and nothing else (a user's files stay). */
static bool audit_file_name(const char *name)
{
    return strcmp(name, AUDIT_DIGESTS) == 0 || strcmp(name, SL_FOLDER_MANIFEST) == 0;
}

/* Reads the audit folder at path, refusing one whose manifest is missing,
 * damaged or does not match its files, and the single file an audit wrote
 * before its output was a folder. */
static sl_status load_audit_folder(const char *path, sl_audit **out, sl_err *err)
{
    *out = NULL;
    struct stat info;
    if (stat(path, &info) == 0 && S_ISREG(info.st_mode))
        return sl_fail(err, SL_EFORMAT,
                       "%s is a single file, as audits were written before their output became a folder with a "
                       "MANIFEST.json; regenerate it with `sluice audit --output DIR` and compare the folders",
                       path);
    sl_status status = sl_folder_check(path, "audit", true, err);
    if (status != SL_OK)
        return sl_fail_context(err, "refusing to compare the audit %s", path);
    char digests[PATH_MAX];
    if ((size_t)snprintf(digests, sizeof digests, "%s/%s", path, AUDIT_DIGESTS) >= sizeof digests)
        return sl_fail(err, SL_EINVAL, "%s: the path is too long", path);
    return sl_audit_load(digests, out, err);
}

static int compare_manifests(const char *a_path, const char *b_path)
{
    sl_audit *a = NULL, *b = NULL;
    sl_err err = {0};
    if (load_audit_folder(a_path, &a, &err) != SL_OK || load_audit_folder(b_path, &b, &err) != SL_OK) {
        sl__cli_error("audit", "%s", err.msg);
        sl_audit_free(a);
        return SL__EXIT_FAILED;
    }
    sl_audit_comparison result;
    sl_status status = sl_audit_compare(a, b, &result, &err);
    if (status == SL_OK && result.table_dependent == 0) {
        printf("%d runs, %" PRId64 " batch%s: identical\n", sl_audit_runs(a), result.batches,
               result.batches == 1 ? "" : "es");
    } else if (status == SL_OK) {
        printf("%d runs, %" PRId64 " batch%s: identical but for %d table-dependent run%s (held to their stated "
               "tolerance by the tests, not compared here; docs/audit.md); the first: %s\n",
               sl_audit_runs(a), result.batches, result.batches == 1 ? "" : "es", result.table_dependent,
               result.table_dependent == 1 ? "" : "s", result.table_dependent_first);
    } else {
        printf("first difference: %s\n", err.msg);
    }
    sl_audit_free(a);
    sl_audit_free(b);
    return status == SL_OK ? SL__EXIT_OK : SL__EXIT_FAILED;
}

/* --compare A B: the second manifest is the next argument. */
static void take_second_manifest(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)option;
    (void)value;
    if (!sl__cli_next(cli))
        sl__cli_usage_error(cli, "option --compare needs two manifests");
    ((audit_args *)args)->compare_b = sl__cli_arg(cli);
}

static const sl__option audit_options[] = {
    {.name = "--scenarios",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, scenarios),
     .help = "scenario ids, 'gate' or 'all' (default all)"},
    {.name = "--variants",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, variants),
     .help = "keep only these variants"},
    {.name = "--adapters",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, adapters),
     .help = "adapters (default all)"},
    {.name = "--seeds",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, seeds),
     .help = "seeds, comma-separated (default 42,7)"},
    {.name = "--epochs",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(audit_args, epochs),
     .min = 1,
     .max = 1000,
     .help = "epochs per run (default 2)"},
    {.name = "--batches",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(audit_args, batches),
     .min = 0,
     .max = 10000000,
     .help = "batches from the start of each epoch, 0 for all (default 4)"},
    {.name = "--workers",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(audit_args, workers),
     .min = 0,
     .max = 1024,
     .help = "prefetch workers for iter (default 0)"},
    {.name = "--threads",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(audit_args, threads),
     .min = 1,
     .max = SL_FUSED_MAX_THREADS,
     .help = "threads for fused (default 1)"},
    {.name = "--kernels",
     .arg = "NAME",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, kernels),
     .help = "kernel table behind iter and fused (see sluice bench --help);\n"
             "default the one the CPU's features choose, never auto, so that\n"
             "another machine can repeat the audit"},
    {.name = "--output",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, output),
     .help = "the folder the manifest goes to"},
    {.name = "--compare",
     .arg = "A B",
     .kind = SL__OPTION_TEXT,
     SL__AT(audit_args, compare_a),
     .handle = take_second_manifest,
     .help = "compare two manifest folders instead of running"},
};

const sl__command_spec sl__audit_spec = {
    .name = "audit",
    .synopsis = "sluice audit [options] --output DIR\nsluice audit --compare A B",
    .about = "Runs every selected scenario variant (ci size) on every available adapter that\n"
             "implements its transforms, for each seed and epoch, and writes the digest of\n"
             "every batch, field and row to a manifest: the folder DIR, holding audit.json\n"
             "and MANIFEST.json (commit, machine, command), replaced whole or not at all.\n"
             "--compare reads two such folders and names the first difference: scenario,\n"
             "variant, adapter, seed, epoch, batch, field and row.",
    .options = audit_options,
    .noptions = SL__COUNT(audit_options),
    .epilogue = "exit status: 0 when the audit was written or the manifests agree; 1 when a run\n"
                "failed or the manifests differ; 2 for a bad command line.",
};

static sl__cli parse_args(int argc, char **argv, audit_args *args)
{
    *args = (audit_args){.seeds = "42,7", .epochs = 2, .threads = 1, .batches = 4};
    return sl__options_parse(&sl__audit_spec, argc, argv, args);
}

/* The seeds, the selection and the kernel table a run of the audit needs,
 * each checked in that order (a bad name is a usage error), and the
 * settings of its runs. */
static void plan_audit(const sl__cli *cli, const audit_args *args, audit_plan *plan)
{
    if (!args->output)
        sl__cli_usage_error(cli, "say where the manifest goes with --output DIR (or compare two with --compare)");
    plan->seeds = sl__cli_split(cli, "--seeds", args->seeds);
    plan->seed_values = sl__cli_alloc((size_t)plan->seeds.count * sizeof *plan->seed_values);
    for (int i = 0; i < plan->seeds.count; i++)
        plan->seed_values[i] = sl__cli_u64(cli, "--seeds", plan->seeds.items[i]);
    sl__cli_select(cli, args->scenarios, args->variants, args->adapters, &plan->selection);
    plan->settings = (sl_audit_settings){
        .epochs = args->epochs, .batches_per_epoch = args->batches, .workers = args->workers, .threads = args->threads};
    sl__cli_copy(plan->settings.kernels, sizeof plan->settings.kernels,
                 sl__cli_pinned_kernels(cli, args->kernels)->name);
}

static void plan_free(audit_plan *plan)
{
    sl__selection_free(&plan->selection);
    sl__cli_list_free(&plan->seeds);
    free(plan->seed_values);
}

/* Adds a run of every selected adapter that is available and implements
 * the instance's transforms; returns how many failed, each printed. */
static int audit_instance(sl_audit *audit, const sl_scenario_instance *instance, uint64_t seed,
                          const sl__selection *selection)
{
    int failed = 0;
    sl_transform_set needed = sl_pipeline_transforms(instance->pipeline);
    for (int a = 0; a < selection->nadapters; a++) {
        const sl_adapter *adapter = sl_adapter_at(a);
        if (!selection->adapters[a] || !sl_adapter_is_available(adapter, NULL, 0) ||
            !sl_adapter_supports(adapter, needed, NULL, 0))
            continue;
        sl_err err = {0};
        if (sl_audit_add_run(audit, instance, adapter, seed, &err) != SL_OK) {
            sl__cli_error("audit", "%s/%s on %s, seed %" PRIu64 ": %s", instance->scenario->id, instance->variant->name,
                          adapter->name, seed, err.msg);
            failed++;
        }
    }
    return failed;
}

/* One variant at ci size for each seed: a variant without that size, or
 * one skipped when built, adds nothing. Returns the failures, printed. */
static int audit_variant(sl_audit *audit, const sl_scenario *scenario, const sl_variant *variant,
                         const audit_plan *plan)
{
    int failed = 0;
    for (int k = 0; k < plan->seeds.count; k++) {
        sl_build_options build;
        sl_build_options_init(&build, SL_PROFILE_CI, plan->seed_values[k]);
        if (sl_variant_n(variant, &build) <= 0)
            continue;
        sl_scenario_instance *instance = NULL;
        sl_err err = {0};
        sl_status status = sl_scenario_instantiate(scenario, variant, &build, &instance, &err);
        if (status == SL_ESKIPPED)
            continue;
        if (status != SL_OK) {
            sl__cli_error("audit", "%s/%s: %s", scenario->id, variant->name, err.msg);
            failed++;
            continue;
        }
        failed += audit_instance(audit, instance, plan->seed_values[k], &plan->selection);
        sl_scenario_instance_free(instance);
    }
    return failed;
}

/* Writes the digests into the staged folder, closes it with its manifest
 * and puts it in place, and says so; returns 1 when any step failed,
 * printed, and the folder at --output is then as it was. */
static int save_manifest(const sl_audit *audit, sl_staged_folder *staged, const audit_args *args,
                         const audit_plan *plan, int argc, char **argv)
{
    sl_environment env;
    sl_environment_collect(&env);
    sl__origin origin;
    sl__cli_origin(argc, argv, &origin);
    sl_err err = {0};
    char digests[sizeof staged->path + sizeof AUDIT_DIGESTS + 1];
    snprintf(digests, sizeof digests, "%s/%s", staged->path, AUDIT_DIGESTS);
    if (sl_audit_save(audit, &env, digests, &err) != SL_OK ||
        sl_folder_write_manifest(staged->path, "audit", &origin.view, &err) != SL_OK ||
        sl_folder_commit(staged, &err) != SL_OK) {
        sl_folder_abandon(staged);
        sl__cli_error("audit", "%s; %s is as it was", err.msg, args->output);
        return 1;
    }
    printf("%d runs audited (%s kernels, %d workers, %d threads); manifest in %s/\n", sl_audit_runs(audit),
           plan->settings.kernels, args->workers, args->threads, staged->target);
    return 0;
}

int sl__cmd_audit(int argc, char **argv)
{
    audit_args args;
    sl__cli cli = parse_args(argc, argv, &args);
    if (args.compare_a)
        return compare_manifests(args.compare_a, args.compare_b);
    audit_plan plan;
    plan_audit(&cli, &args, &plan);
    /* Staged before the runs, so that an output that cannot be written is
     * refused before minutes of work, and a kill at any moment leaves the
     * old folder (the staged one is swept by the next writer). */
    sl_staged_folder staged;
    sl_err err = {0};
    if (sl_folder_stage(args.output, "audit", audit_file_name, &staged, &err) != SL_OK) {
        sl__cli_error("audit", "%s", err.msg);
        plan_free(&plan);
        return SL__EXIT_FAILED;
    }
    sl_audit *audit = sl_audit_new(&plan.settings);
    int failed = 0;
    for (int s = 0; s < plan.selection.nscenarios; s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++)
            if (sl__selection_has_variant(&plan.selection, s, v))
                failed += audit_variant(audit, scenario, &scenario->variants[v], &plan);
    }
    failed += save_manifest(audit, &staged, &args, &plan, argc, argv);
    sl_audit_free(audit);
    plan_free(&plan);
    return failed ? SL__EXIT_FAILED : SL__EXIT_OK;
}
