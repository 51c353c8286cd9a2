/* `sluice baseline save NAME`: keeps a run's records, with every batch's
 * time, as the baseline a later `sluice check --baseline NAME` compares
 * with. A baseline is a folder of records and a manifest naming what it
 * holds and where it came from, written whole or not at all
 * (sluice/core/folder.h): saving a name again replaces the folder. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct baseline_args {
    sl__text_list from;
    const char *baseline_dir, *name;
    bool saw_save;
} baseline_args;

/* The words `save NAME`. */
static bool take_positional(sl__cli *cli, const char *arg, void *args)
{
    (void)cli;
    baseline_args *a = args;
    if (!a->saw_save && strcmp(arg, "save") == 0)
        a->saw_save = true;
    else if (a->saw_save && !a->name)
        a->name = arg;
    else
        return false;
    return true;
}

static const sl__option baseline_options[] = {
    {.name = "--from",
     .arg = "DIR",
     .kind = SL__OPTION_LIST,
     SL__AT(baseline_args, from),
     .max = SL__TEXT_LIST_MAX,
     .help = "the run's records (default records/ci, where\n"
             "`sluice bench` writes the ci profile); repeat it (up to\n"
             "16 times) to pool\n"
             "the repetitions of several runs into the first one's\n"
             "records (a record only a later run has is left out,\n"
             "and named)"},
    {.name = "--baseline-dir",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(baseline_args, baseline_dir),
     .help = "where baselines live (default baselines)"},
};

const sl__command_spec sl__baseline_spec = {
    .name = "baseline",
    .synopsis = "sluice baseline save NAME [options]",
    .about = "Saves the records of a bench run (every repetition's batch times, the\n"
             "environment) as baseline NAME, for `sluice check --baseline NAME`.",
    .options = baseline_options,
    .noptions = SL__COUNT(baseline_options),
    .epilogue = "exit status: 0 when saved; 1 when the records could not be read or written;\n"
                "2 for a bad command line.",
    .positional = take_positional,
};

static void report_bad_file(const char *message, void *user)
{
    (void)user;
    sl__cli_error("baseline", "%s", message);
}

int sl__cmd_baseline(int argc, char **argv)
{
    /* The default run sits where a first --from goes, so it counts only
     * when none is given. */
    baseline_args args = {.from = {.values = {"records/ci"}}, .baseline_dir = "baselines"};
    sl__cli cli = sl__options_parse(&sl__baseline_spec, argc, argv, &args);
    const char **from = args.from.values;
    int nfrom = args.from.count;
    const char *baseline_dir = args.baseline_dir, *name = args.name;
    bool saw_save = args.saw_save;
    if (!saw_save || !name)
        sl__cli_usage_error(&cli, "say `sluice baseline save NAME`");
    sl__cli_baseline_name(&cli, name);

    if (nfrom == 0)
        nfrom = 1;
    sl_record_set set;
    sl_err err = {0};
    if (sl_record_set_load_runs(from, nfrom, &set, report_bad_file, NULL, &err) != SL_OK) {
        sl__cli_error("baseline", "%s", err.msg);
        sl_record_set_free(&set);
        return SL__EXIT_FAILED;
    }
    int failed = set.nerrors, saved = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", baseline_dir, name);
    sl_staged_folder staged;
    if (set.count == 0) {
        sl__cli_error("baseline", "%s: no records to save (run `sluice bench` first)", from[0]);
        failed++;
    } else if (sl_folder_stage(dir, "baseline", sl__baseline_file_name, &staged, &err) != SL_OK) {
        sl__cli_error("baseline", "%s", err.msg);
        failed++;
    }
    for (int i = 0; !failed && i < set.count; i++) {
        char file[256], path[sizeof staged.path + 258];
        sl_record_file_name(&set.records[i], file, sizeof file);
        snprintf(path, sizeof path, "%s/%s", staged.path, file);
        if (sl_record_write(&set.records[i], &set.environments[i], path, &err) != SL_OK) {
            sl__cli_error("baseline", "%s", err.msg);
            failed++;
        } else {
            saved++;
        }
    }
    if (!failed) {
        sl__origin origin;
        sl__cli_origin(argc, argv, &origin);
        if (sl_folder_write_manifest(staged.path, "baseline", &origin.view, &err) != SL_OK ||
            sl_folder_commit(&staged, &err) != SL_OK) {
            sl__cli_error("baseline", "%s", err.msg);
            failed++;
        }
    }
    if (failed && set.count > 0 && staged.path[0]) {
        sl_folder_abandon(&staged);
        sl__cli_error("baseline", "nothing saved; %s is as it was", dir);
    }
    if (!failed)
        printf("saved %d records of %s%s as baseline %s (%s)\n", saved, from[0], nfrom > 1 ? " and more" : "", name,
               dir);
    sl_record_set_free(&set);
    return failed ? SL__EXIT_FAILED : SL__EXIT_OK;
}
