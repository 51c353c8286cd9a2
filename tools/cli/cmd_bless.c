/* `sluice bless`: regenerates the golden outputs from the reference adapter.
 * Goldens change only through this command, and it says what changed so the
 * person running it can decide whether the change is intended. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct bless_args {
    const char *scenarios;
    const char *variants;
    const char *golden_dir;
    uint64_t seed;
    bool fixtures;
    /* The staged golden set being written (sluice/core/folder.h): the goldens
     * of golden_dir carried over, then the new ones saved over them. */
    const char *staged_dir;
} bless_args;

static const sl__option bless_options[] = {
    {.name = "--scenarios",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(bless_args, scenarios),
     .help = "scenario ids, 'gate' or 'all', comma-separated (default all)"},
    {.name = "--variants",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(bless_args, variants),
     .help = "keep only these variants of the selected scenarios"},
    {.name = "--golden-dir",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(bless_args, golden_dir),
     .help = "where goldens go (default: the source tree's golden/)"},
    {.name = "--seed",
     .arg = "N",
     .kind = SL__OPTION_U64,
     SL__AT(bless_args, seed),
     .help = "fixture and pipeline seed (default 42, the one the tests use)"},
    {.name = "--fixtures",
     .kind = SL__OPTION_FLAG,
     SL__AT(bless_args, fixtures),
     .help = "bless the fixture generators' goldens (fixture__<kind>.json)\ninstead of the scenarios'"},
};

const sl__command_spec sl__bless_spec = {
    .name = "bless",
    .synopsis = "sluice bless [options]",
    .about = "Captures the reference adapter's first batches of each selected scenario\n"
             "variant at ci size and saves them as its golden, saying for each whether it\n"
             "is new, unchanged or changed. Review the changes and commit them.",
    .options = bless_options,
    .noptions = SL__COUNT(bless_options),
    .epilogue = "exit status: 0 when every golden was written, 1 when any failed, 2 for a bad\ncommand line.",
};

static void parse_args(int argc, char **argv, bless_args *args, sl__selection *selection)
{
    *args = (bless_args){.golden_dir = sl_golden_default_dir(), .seed = 42};
    sl__cli cli = sl__options_parse(&sl__bless_spec, argc, argv, args);
    /* Goldens belong to the reference adapter alone, so no adapter choice. */
    sl__cli_select(&cli, args->scenarios, args->variants, "reference", selection);
}

typedef struct bless_counts {
    int fresh;
    int unchanged;
    int changed;
    int skipped;
    int failed;
} bless_counts;

typedef enum change { CHANGE_NEW, CHANGE_NONE, CHANGE_CHANGED } change;

/* How the new golden differs from the one on disk, if there is one; the
 * detail goes to how (empty when there is none). */
static change describe_change(const char *path, const sl_golden *golden, char *how, size_t size)
{
    how[0] = '\0';
    if (access(path, F_OK) != 0)
        return CHANGE_NEW;
    sl_golden *old = NULL;
    sl_err err = {0};
    if (sl_golden_load(path, &old, &err) != SL_OK) {
        snprintf(how, size, "the existing golden could not be read: %s", err.msg);
        return CHANGE_CHANGED;
    }
    change c = CHANGE_NONE;
    if (sl_golden_compare(old, golden, &err) != SL_OK) {
        snprintf(how, size, "%s", err.msg);
        c = CHANGE_CHANGED;
    }
    sl_golden_free(old);
    return c;
}

/* The same file name in the golden set being replaced and in the staged
 * one. */
static void golden_paths(const bless_args *args, const char *path_in_golden_dir, char *staged, size_t size)
{
    const char *slash = strrchr(path_in_golden_dir, '/');
    snprintf(staged, size, "%s/%s", args->staged_dir, slash ? slash + 1 : path_in_golden_dir);
}

/* Saves a captured golden into the staged set, saying how it differs from
 * the one in the golden set at path; status and err describe the capture. */
static void save_golden(const bless_args *args, const char *label, const char *path, sl_golden *golden,
                        sl_status status, sl_err *err, bless_counts *counts)
{
    char how[SL_ERR_MAX + 64];
    change c = CHANGE_NONE;
    if (status == SL_OK) {
        /* Compared before saving, counted after: a golden that could not be
         * saved is a failure, never also new or changed. */
        c = describe_change(path, golden, how, sizeof how);
        char staged[8192];
        golden_paths(args, path, staged, sizeof staged);
        status = sl_golden_save(golden, staged, err);
    }
    if (status == SL_OK) {
        static const char *const words[] = {"new", "unchanged", "CHANGED"};
        printf("%s: %s\n", label, words[c]);
        if (how[0])
            printf("    %s\n", how);
        counts->fresh += c == CHANGE_NEW;
        counts->unchanged += c == CHANGE_NONE;
        counts->changed += c == CHANGE_CHANGED;
    } else {
        fflush(stdout);
        sl__cli_error("bless", "%s: %s", label, err->msg);
        counts->failed++;
    }
    if (golden != NULL) {
        sl_golden_free(golden);
    }
}

static void bless_fixtures(const bless_args *args, bless_counts *counts)
{
    for (int kind = 0; kind < SL_FIXTURE_KIND_COUNT; kind++) {
        char label[64], path[4096];
        snprintf(label, sizeof label, "fixture %s", sl_fixture_kind_name((sl_fixture_kind)kind));
        sl_fixture_golden_path(args->golden_dir, (sl_fixture_kind)kind, path, sizeof path);
        sl_golden *golden = NULL;
        sl_err err = {0};
        sl_status status = sl_fixture_capture_golden((sl_fixture_kind)kind, args->seed, &golden, &err);
        save_golden(args, label, path, golden, status, &err, counts);
    }
}

static void bless_variant(const bless_args *args, const sl_scenario *scenario, const sl_variant *variant,
                          bless_counts *counts)
{
    char label[64];
    char path[4096];
    snprintf(label, sizeof label, "%s/%s", scenario->id, variant->name);
    sl_golden_path(args->golden_dir, scenario, variant, path, sizeof path);

    /* Goldens are defined at ci size: that is the size the corpus tests
     * compare against. */
    sl_build_options build;
    sl_build_options_init(&build, SL_PROFILE_CI, args->seed);
    if (sl_variant_n(variant, &build) <= 0) {
        printf("%s: no ci size; no golden\n", label);
        counts->skipped++;
        return;
    }
    sl_scenario_instance *instance = NULL;
    sl_golden *golden = NULL;
    sl_err err = {0};
    sl_status status = sl_scenario_instantiate(scenario, variant, &build, &instance, &err);
    if (status == SL_ESKIPPED) {
        printf("%s: skipped: %s\n", label, err.msg);
        counts->skipped++;
        return;
    }
    if (status == SL_OK) {
        status = sl_scenario_capture_golden(instance, &golden, &err);
    }
    save_golden(args, label, path, golden, status, &err, counts);
    if (instance != NULL) {
        sl_scenario_instance_free(instance);
    }
}

/* What a golden set holds: goldens, which are JSON, and its manifest. */
static bool golden_file_name(const char *name)
{
    size_t len = strlen(name);
    return len > 5 && strcmp(name + len - 5, ".json") == 0;
}

int sl__cmd_bless(int argc, char **argv)
{
    bless_args args;
    sl__selection selection;
    parse_args(argc, argv, &args, &selection);

    sl_err err = {0};
    /* The golden set is written whole (sluice/core/folder.h): the tests never
     * see half of a bless, and a killed bless leaves the set as it was. */
    sl_staged_folder staged;
    if (sl_folder_stage(args.golden_dir, "goldens", golden_file_name, &staged, &err) != SL_OK ||
        sl_folder_carry(&staged, &err) != SL_OK) {
        sl__cli_error("bless", "cannot stage the golden set: %s", err.msg);
        sl_folder_abandon(&staged);
        sl__selection_free(&selection);
        return SL__EXIT_FAILED;
    }
    args.staged_dir = staged.path;
    bless_counts counts = {0};
    if (args.fixtures) {
        bless_fixtures(&args, &counts);
    }
    for (int s = 0; !args.fixtures && s < selection.nscenarios; s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++) {
            if (sl__selection_has_variant(&selection, s, v)) {
                bless_variant(&args, scenario, &scenario->variants[v], &counts);
            }
        }
    }
    sl__selection_free(&selection);
    sl__origin origin;
    sl__cli_origin(argc, argv, &origin);
    if (sl_folder_write_manifest(staged.path, "goldens", &origin.view, &err) != SL_OK ||
        sl_folder_commit(&staged, &err) != SL_OK) {
        sl_folder_abandon(&staged);
        sl__cli_error("bless", "nothing blessed; %s is as it was: %s", args.golden_dir, err.msg);
        return SL__EXIT_FAILED;
    }

    printf("\n%d new, %d changed, %d unchanged, %d skipped, %d failed; goldens in %s/\n", counts.fresh, counts.changed,
           counts.unchanged, counts.skipped, counts.failed, args.golden_dir);
    if (counts.fresh + counts.changed > 0) {
        printf("Review them (git status and git diff -- %s) and commit them with the change that caused them.\n",
               args.golden_dir);
    }
    return counts.failed > 0 ? SL__EXIT_FAILED : SL__EXIT_OK;
}
