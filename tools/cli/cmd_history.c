/* `sluice history`: a performance history across commits (docs/history.md).
 * add files a run of `sluice bench` under its commit and machine; publish
 * writes the static site with the steps found; bisect names the commits
 * between the last good and the first bad run of a row; export writes the
 * runs for asv-style and Bencher-style trackers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "history.h"

extern char **environ;

static void report_bad_file(const char *message, void *user)
{
    int *bad = user;
    (*bad)++;
    sl__cli_error("history", "%s (left out)", message);
}

/* Runs git with args in repo and keeps the first line of its output;
 * false when git cannot be run or fails (its complaints are silenced: the
 * caller says what to do instead). */
static bool git_line(const char *repo, const char *const *args, int nargs, char *out, size_t size)
{
    const char *argv[16] = {"git", "-C", repo};
    int argc = 3;
    for (int i = 0; i < nargs && argc < 15; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&actions, pipefd[0]);
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &actions, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        return false;
    }
    FILE *f = fdopen(pipefd[0], "r");
    bool got = false;
    if (f) {
        got = fgets(out, (int)size, f) != NULL;
        /* Drain the rest so git is not stopped by a full pipe. */
        char skip[4096];
        while (fgets(skip, sizeof skip, f))
            ;
        fclose(f);
    } else {
        close(pipefd[0]);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return false;
    out[strcspn(out, "\n")] = '\0';
    return got;
}

/* --- add ----------------------------------------------------------------------- */

typedef struct add_args {
    const char **records; /* one folder per process of the commit */
    int nrecords;
    const char *into, *repo, *instructions;
    int64_t position; /* -1: ask git */
    bool skip_filed;
} add_args;

/* The commit's position and time from git: its first-parent count, which
 * grows by one per commit along the main line. */
static bool position_from_git(const char *repo, const char *commit, int64_t *position, char *time, size_t size)
{
    char line[256];
    const char *count[] = {"rev-list", "--count", "--first-parent", commit};
    if (!git_line(repo, count, 4, line, sizeof line))
        return false;
    char *end;
    long long p = strtoll(line, &end, 10);
    if (*end || end == line || p < 0)
        return false;
    *position = p;
    const char *when[] = {"show", "-s", "--format=%cI", commit};
    if (!git_line(repo, when, 4, time, size))
        time[0] = '\0';
    return true;
}

/* The run of one records folder (one process): false, having said why,
 * when a record cannot be read or the records do not make a run. */
static bool run_of_folder(const add_args *args, const char *records, int64_t *position, char *commit_time,
                          size_t time_size, sl_history_run *run)
{
    sl_record_set set;
    sl_err err = {0};
    int bad = 0;
    if (sl_record_set_load(records, &set, report_bad_file, &bad, &err) != SL_OK) {
        sl__cli_error("history", "%s", err.msg);
        return false;
    }
    if (bad) {
        sl__cli_error("history", "%s: %d record%s could not be read; nothing filed", records, bad, bad == 1 ? "" : "s");
        sl_record_set_free(&set);
        return false;
    }
    if (set.count > 0 && *position < 0 &&
        !position_from_git(args->repo, set.environments[0].git_commit, position, commit_time, time_size)) {
        sl__cli_error("history",
                      "cannot place commit %s in commit order: git rev-list --count --first-parent failed in %s; run "
                      "in the checkout that built it (--repo DIR) or give --position N",
                      set.environments[0].git_commit, args->repo);
        sl_record_set_free(&set);
        return false;
    }
    sl_status status = sl_history_run_from_records(&set, records, *position, commit_time, run, &err);
    if (status != SL_OK)
        sl__cli_error("history", "%s", err.msg);
    sl_record_set_free(&set);
    return status == SL_OK;
}

static int history_add(const add_args *args)
{
    int64_t position = args->position;
    char commit_time[64] = "";
    sl_history_run run;
    if (!run_of_folder(args, args->records[0], &position, commit_time, sizeof commit_time, &run))
        return SL__EXIT_FAILED;
    sl_err err = {0};
    sl_status status = SL_OK;
    for (int i = 1; status == SL_OK && i < args->nrecords; i++) {
        sl_history_run process;
        if (!run_of_folder(args, args->records[i], &position, commit_time, sizeof commit_time, &process)) {
            sl_history_run_free(&run);
            return SL__EXIT_FAILED;
        }
        status = sl_history_run_add_process(&run, &process, args->records[i], &err);
        if (status != SL_OK)
            sl_history_run_free(&process);
    }
    if (status == SL_OK && args->instructions)
        status = sl_history_run_add_instructions(&run, args->instructions, &err);
    char filed[4096] = "";
    bool was_filed = false;
    /* Two adds at once would each find a position free and both file it:
     * the history folder is held, as a bench holds its records folder. */
    int lock = -1;
    if (status == SL_OK)
        status = sl_history_check_target(args->into, &err);
    if (status == SL_OK)
        status = sl_make_dirs(args->into, &err);
    if (status == SL_OK)
        status = sl_folder_lock(args->into, "sluice history add", &lock, &err);
    if (status == SL_OK)
        status = sl_history_add_unless_filed(args->into, &run, filed, sizeof filed,
                                             args->skip_filed ? &was_filed : NULL, &err);
    sl_folder_unlock(lock);
    if (status == SL_OK && was_filed)
        printf("skipped: commit %s is filed already on machine %s (%s); nothing filed\n", run.commit, run.machine,
               filed);
    else if (status == SL_OK)
        printf("filed %d rows of commit %s (position %" PRId64 ", %d process%s) on machine %s: %s\n", run.nrows,
               run.commit, run.position, sl_history_run_processes(&run),
               sl_history_run_processes(&run) == 1 ? "" : "es", run.machine, filed);
    else
        sl__cli_error("history", "%s", err.msg);
    sl_history_run_free(&run);
    return status == SL_OK ? SL__EXIT_OK : SL__EXIT_FAILED;
}

/* --- loading and analysing ------------------------------------------------------- */

typedef struct loaded {
    sl_history history;
    sl_history_series *series;
    int nseries;
    int bad;
} loaded;

static bool load(const char *dir, const sl_history_options *options, loaded *out)
{
    memset(out, 0, sizeof *out);
    sl_err err = {0};
    if (sl_history_load(dir, &out->history, report_bad_file, &out->bad, &err) != SL_OK ||
        sl_history_analyze(&out->history, options, &out->series, &out->nseries, &err) != SL_OK) {
        sl__cli_error("history", "%s", err.msg);
        sl_history_free(&out->history);
        return false;
    }
    return true;
}

static void unload(loaded *l)
{
    sl_history_series_free(l->series, l->nseries);
    sl_history_free(&l->history);
}

static int history_publish(const char *dir, const char *output, const sl_history_options *options)
{
    loaded l;
    if (!load(dir, options, &l))
        return SL__EXIT_FAILED;
    int failed = sl__history_publish(&l.history, l.series, l.nseries, options, output);
    int steps = 0;
    for (int i = 0; i < l.nseries; i++)
        steps += l.series[i].nsteps;
    if (!failed)
        printf("published %d series of %d run%s on %d machine%s, %d step%s: %s/index.html\n", l.nseries,
               l.history.nruns, l.history.nruns == 1 ? "" : "s", l.history.nmachines,
               l.history.nmachines == 1 ? "" : "s", steps, steps == 1 ? "" : "s", output);
    for (int i = 0; !failed && i < l.nseries; i++) {
        const sl_history_series *s = &l.series[i];
        for (int k = 0; k < s->nsteps; k++) {
            const sl_history_step *step = &s->steps[k];
            printf("  step: %s %s %s on %s: %+.1f%% elements/s [%+.1f%%, %+.1f%%] between %s and %s, p %.3f, "
                   "instructions %s\n",
                   s->key.scenario, s->key.variant, s->key.adapter, l.history.machines[s->machine].id,
                   100 * step->change, 100 * step->change_lo, 100 * step->change_hi,
                   sl_history_point_run(&l.history, &s->points[step->before])->commit,
                   sl_history_point_run(&l.history, &s->points[step->after])->commit, step->p,
                   sl_step_instructions_name(step->instructions));
        }
    }
    int bad = l.bad;
    unload(&l);
    return failed || bad ? SL__EXIT_FAILED : SL__EXIT_OK;
}

/* --- bisect ---------------------------------------------------------------------- */

typedef struct bisect_args {
    const char *row, *history, *machine, *repo;
} bisect_args;

static int history_bisect(const bisect_args *args)
{
    char scenario[64], variant[64], adapter[64], extra;
    if (sscanf(args->row, "%63[^/]/%63[^/]/%63[^/]%c", scenario, variant, adapter, &extra) != 3) {
        sl__cli_error("history", "row '%s' is not SCENARIO/VARIANT/ADAPTER (e.g. CV-1/32x32/fused)", args->row);
        return SL__EXIT_USAGE;
    }
    loaded l;
    if (!load(args->history, NULL, &l))
        return SL__EXIT_FAILED;
    /* The latest slowdown among the row's series (one per machine, kernel
     * table and thread count). */
    const sl_history_series *found = NULL;
    const sl_history_step *step = NULL;
    int64_t latest = -1;
    int matching = 0;
    for (int i = 0; i < l.nseries; i++) {
        const sl_history_series *s = &l.series[i];
        if (strcmp(s->key.scenario, scenario) || strcmp(s->key.variant, variant) || strcmp(s->key.adapter, adapter) ||
            (args->machine && strcmp(l.history.machines[s->machine].id, args->machine)))
            continue;
        matching++;
        for (int k = 0; k < s->nsteps; k++) {
            int64_t at = sl_history_point_run(&l.history, &s->points[s->steps[k].after])->position;
            if (s->steps[k].change < 0 && at > latest) {
                latest = at;
                found = s;
                step = &s->steps[k];
            }
        }
    }
    if (!found) {
        sl__cli_error("history", "%s: %s", args->row,
                      matching ? "no slowdown found in its series; nothing to bisect"
                               : "no such row in the history (see `sluice history publish` for the rows)");
        unload(&l);
        return SL__EXIT_FAILED;
    }
    const sl_history_run *good = sl_history_point_run(&l.history, &found->points[step->before]);
    const sl_history_run *bad = sl_history_point_run(&l.history, &found->points[step->after]);
    char label[512];
    sl_history_machine_label(&l.history.machines[found->machine].environment, label, sizeof label);
    printf("%s on machine %s (%s; %s, %s, %" PRId64 " thread%s):\n", args->row, l.history.machines[found->machine].id,
           label, found->key.profile, found->key.kernels, found->key.threads, found->key.threads == 1 ? "" : "s");
    printf("  %+.1f%% elements/s [%+.1f%%, %+.1f%% at %.0f%%], p %.3f, instructions %s\n", 100 * step->change,
           100 * step->change_lo, 100 * step->change_hi, 100 * step->level, step->p,
           sl_step_instructions_name(step->instructions));
    printf("  last good: %s (position %" PRId64 ")\n  first bad: %s (position %" PRId64 ")\n", good->commit,
           good->position, bad->commit, bad->position);
    char range[128], line[512];
    snprintf(range, sizeof range, "%s..%s", good->commit, bad->commit);
    const char *count[] = {"rev-list", "--count", "--first-parent", range};
    if (git_line(args->repo, count, 4, line, sizeof line)) {
        printf("  commits after the last good, up to the first bad (%s in %s):\n", line, args->repo);
        fflush(stdout);
        /* git prints the list itself: one line per commit, oldest first. */
        const char *argv[] = {"git", "-C", args->repo, "log", "--first-parent", "--reverse", "--format=    %h %s",
                              range, NULL};
        pid_t pid;
        int status = 0;
        if (posix_spawnp(&pid, "git", NULL, NULL, (char *const *)argv, environ) == 0)
            waitpid(pid, &status, 0);
    } else {
        printf("  (not in a git checkout that has both: run `git log --first-parent %s` in one, or give --repo)\n",
               range);
    }
    printf("to find the culprit:\n  git bisect start %s %s\n  ci/bisect.sh %s %s %s\n", bad->commit, good->commit,
           good->commit, bad->commit, args->row);
    unload(&l);
    return SL__EXIT_OK;
}

/* --- export ---------------------------------------------------------------------- */

static int history_export(const char *dir, const char *format, const char *output)
{
    loaded l;
    if (!load(dir, NULL, &l))
        return SL__EXIT_FAILED;
    int failed = strcmp(format, "asv") == 0 ? sl__history_export_asv(&l.history, output)
                                            : sl__history_export_bencher(&l.history, output);
    if (!failed)
        printf("exported %d runs as %s: %s\n", l.history.nruns, format, output);
    int bad = l.bad;
    unload(&l);
    return failed || bad ? SL__EXIT_FAILED : SL__EXIT_OK;
}

/* --- the command line ------------------------------------------------------------ */

typedef struct history_args {
    const char *action, *operand;
    const char **operands; /* add's records folders, one per process, the first being operand */
    int noperands;
    add_args add;
    bisect_args bisect;
    const char *repo, *output, *format;
    sl_history_options options;
} history_args;

/* The action, then its operand (a records folder, a history, a row); add
 * takes more records folders after the first, one per process. */
static bool take_positional(sl__cli *cli, const char *arg, void *args)
{
    (void)cli;
    history_args *a = args;
    if (!a->action)
        a->action = arg;
    else if (!a->operand)
        a->operand = a->operands[a->noperands++] = arg;
    else if (strcmp(a->action, "add") == 0)
        a->operands[a->noperands++] = arg;
    else
        return false;
    return true;
}

static void read_min_effect(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)option;
    history_args *a = args;
    char *end;
    a->options.min_effect = strtod(value, &end);
    if (*end || !(a->options.min_effect >= 0.0 && a->options.min_effect < 1.0))
        sl__cli_usage_error(cli, "option --min-effect: '%s' is not a fraction in [0, 1), e.g. 0.05", value);
}

static const sl__option history_options[] = {
    {.name = "--into",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(history_args, add.into),
     .section = "add       files the records of `sluice bench` runs of one commit (e.g. records/ci)\n"
                "          under their commit and machine, atomically; several folders are\n"
                "          several processes of that commit, each a point of its own (what\n"
                "          lets a short series show a step); refuses a run already filed and\n"
                "          records that mix commits or machines",
     .help = "the history (default history; created when missing)"},
    {.name = "--position",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(history_args, add.position),
     .min = 0,
     .max = INT64_MAX / 2,
     .help = "the commit's place in commit order (default: asked of git,\n"
             "the first-parent count of the commit in --repo)"},
    {.name = "--repo",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(history_args, repo),
     .help = "the git checkout the commit is in (default .; bisect too)"},
    {.name = "--instructions",
     .arg = "FILE",
     .kind = SL__OPTION_TEXT,
     SL__AT(history_args, add.instructions),
     .help = "instruction counts of the run's rows\n"
             "(ci/count-instructions.sh), to confirm steps with"},
    {.name = "--skip-filed",
     .kind = SL__OPTION_FLAG,
     SL__AT(history_args, add.skip_filed),
     .help = "a commit filed already on that machine is not an error:\n"
             "say so, file nothing and exit 0"},
    {.name = "--output",
     .arg = "SITE",
     .kind = SL__OPTION_TEXT,
     SL__AT(history_args, output),
     .section = "publish   writes a static site (index.html, rows/*.html) of every series with\n"
                "          its steps: commit range, size with its interval, confidence",
     .help = "where the site goes (export: where the files go)"},
    {.name = "--min-effect",
     .arg = "F",
     .kind = SL__OPTION_CUSTOM,
     .handle = read_min_effect,
     .help = "the smallest change reported (default 0.05, 5%)"},
    {.name = "--history",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(history_args, bisect.history),
     .section = "bisect    ROW is SCENARIO/VARIANT/ADAPTER: the latest slowdown of that row, its\n"
                "          last good and first bad commit, the commits between them (from git)\n"
                "          and the git bisect and ci/bisect.sh commands to find the culprit",
     .help = "the history (default history)"},
    {.name = "--machine",
     .arg = "ID",
     .kind = SL__OPTION_TEXT,
     SL__AT(history_args, bisect.machine),
     .help = "the machine's series (default: the one whose latest\n"
             "slowdown is the most recent)"},
    {.name = "--format",
     .arg = "asv|bencher",
     .kind = SL__OPTION_CHOICE,
     SL__AT(history_args, format),
     .section = "export    one JSON file per run for other trackers: asv's results layout or\n"
                "          the Bencher Metric Format (docs/history.md)",
     .help = "the format"},
};

const sl__command_spec sl__history_spec = {
    .name = "history",
    .synopsis = "sluice history add RECORDS_DIR... [--into HISTORY_DIR] [options]\n"
                "sluice history publish HISTORY_DIR --output SITE [--min-effect F]\n"
                "sluice history bisect ROW [--history HISTORY_DIR] [--machine ID] [--repo DIR]\n"
                "sluice history export HISTORY_DIR --format asv|bencher --output DIR",
    .about = "A history of bench runs across commits, one series per machine and row\n"
             "(scenario, variant, adapter), with the steps found in each (docs/history.md).",
    .options = history_options,
    .noptions = SL__COUNT(history_options),
    .epilogue = "exit status: 0 done; 1 a file could not be read or written, a run was refused,\n"
                "or bisect found no slowdown; 2 for a bad command line.",
    .positional = take_positional,
};

int sl__cmd_history(int argc, char **argv)
{
    /* add takes several records folders: the operands after the first. */
    const char **operands = calloc((size_t)(argc > 0 ? argc : 1), sizeof *operands);
    if (!operands) {
        sl__cli_error("history", "out of memory");
        return SL__EXIT_FAILED;
    }
    history_args args = {.add = {.into = "history", .position = -1},
                         .bisect = {.history = "history"},
                         .repo = ".",
                         .operands = operands};
    sl_history_defaults(&args.options);
    sl__cli cli = sl__options_parse(&sl__history_spec, argc, argv, &args);
    const char *action = args.action, *operand = args.operand, *output = args.output, *format = args.format;
    int noperands = args.noperands;
    add_args add = args.add;
    bisect_args bisect = args.bisect;
    add.repo = bisect.repo = args.repo;
    sl_history_options options = args.options;
    if (!action)
        sl__cli_usage_error(&cli, "say what to do: add, publish, bisect or export");
    if (strcmp(action, "add") == 0) {
        if (!operand)
            sl__cli_usage_error(&cli, "say which records to file: sluice history add RECORDS_DIR");
        add.records = operands;
        add.nrecords = noperands;
        int exit_status = history_add(&add);
        free(operands);
        return exit_status;
    }
    free(operands); /* only add needs them past here */
    if (strcmp(action, "publish") == 0) {
        if (!operand || !output)
            sl__cli_usage_error(&cli, "say `sluice history publish HISTORY_DIR --output SITE`");
        return history_publish(operand, output, &options);
    }
    if (strcmp(action, "bisect") == 0) {
        if (!operand)
            sl__cli_usage_error(&cli, "say which row: sluice history bisect SCENARIO/VARIANT/ADAPTER");
        bisect.row = operand;
        return history_bisect(&bisect);
    }
    if (strcmp(action, "export") == 0) {
        if (!operand || !output || !format)
            sl__cli_usage_error(&cli, "say `sluice history export HISTORY_DIR --format asv|bencher --output DIR`");
        return history_export(operand, format, output);
    }
    sl__cli_usage_error(&cli, "unknown action '%s'; actions: add, publish, bisect, export", action);
}
