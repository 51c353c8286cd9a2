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

static const char usage[] = "usage: sluice history add RECORDS_DIR [--into HISTORY_DIR] [options]\n"
                            "       sluice history publish HISTORY_DIR --output SITE [--min-effect F]\n"
                            "       sluice history bisect ROW [--history HISTORY_DIR] [--machine ID] [--repo DIR]\n"
                            "       sluice history export HISTORY_DIR --format asv|bencher --output DIR\n"
                            "\n"
                            "A history of bench runs across commits, one series per machine and row\n"
                            "(scenario, variant, adapter), with the steps found in each (docs/history.md).\n"
                            "\n"
                            "add       files the records of one `sluice bench` run (e.g. records/ci) under\n"
                            "          their commit and machine, atomically; refuses a run already filed\n"
                            "          and records that mix commits or machines\n"
                            "  --into DIR           the history (default history; created when missing)\n"
                            "  --position N         the commit's place in commit order (default: asked of git,\n"
                            "                       the first-parent count of the commit in --repo)\n"
                            "  --repo DIR           the git checkout the commit is in (default .)\n"
                            "  --instructions FILE  instruction counts of the run's rows\n"
                            "                       (ci/count-instructions.sh), to confirm steps with\n"
                            "publish   writes a static site (index.html, rows/*.html) of every series with\n"
                            "          its steps: commit range, size with its interval, confidence\n"
                            "  --output SITE        where the site goes\n"
                            "  --min-effect F       the smallest change reported (default 0.05, 5%)\n"
                            "bisect    ROW is SCENARIO/VARIANT/ADAPTER: the latest slowdown of that row, its\n"
                            "          last good and first bad commit, the commits between them (from git)\n"
                            "          and the git bisect and ci/bisect.sh commands to find the culprit\n"
                            "  --history DIR        the history (default history)\n"
                            "  --machine ID         the machine's series (default: the one whose latest\n"
                            "                       slowdown is the most recent)\n"
                            "export    one JSON file per run for other trackers: asv's results layout or\n"
                            "          the Bencher Metric Format (docs/history.md)\n"
                            "\n"
                            "exit status: 0 done; 1 a file could not be read or written, a run was refused,\n"
                            "or bisect found no slowdown; 2 for a bad command line.\n";

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
    const char *records, *into, *repo, *instructions;
    int64_t position; /* -1: ask git */
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

static int history_add(const add_args *args)
{
    sl_record_set set;
    sl_err err = {0};
    int bad = 0;
    if (sl_record_set_load(args->records, &set, report_bad_file, &bad, &err) != SL_OK) {
        sl__cli_error("history", "%s", err.msg);
        return SL__EXIT_FAILED;
    }
    if (bad) {
        sl__cli_error("history", "%s: %d record%s could not be read; nothing filed", args->records, bad,
                      bad == 1 ? "" : "s");
        sl_record_set_free(&set);
        return SL__EXIT_FAILED;
    }
    int64_t position = args->position;
    char commit_time[64] = "";
    if (set.count > 0 && position < 0 &&
        !position_from_git(args->repo, set.environments[0].git_commit, &position, commit_time, sizeof commit_time)) {
        sl__cli_error("history",
                      "cannot place commit %s in commit order: git rev-list --count --first-parent failed in %s; run "
                      "in the checkout that built it (--repo DIR) or give --position N",
                      set.environments[0].git_commit, args->repo);
        sl_record_set_free(&set);
        return SL__EXIT_FAILED;
    }
    sl_history_run run;
    sl_status status = sl_history_run_from_records(&set, args->records, position, commit_time, &run, &err);
    if (status == SL_OK && args->instructions)
        status = sl_history_run_add_instructions(&run, args->instructions, &err);
    char filed[4096] = "";
    /* Two adds at once would each find a position free and both file it:
     * the history folder is held, as a bench holds its records folder. */
    int lock = -1;
    if (status == SL_OK)
        status = sl_make_dirs(args->into, &err);
    if (status == SL_OK)
        status = sl_folder_lock(args->into, "sluice history add", &lock, &err);
    if (status == SL_OK)
        status = sl_history_add(args->into, &run, filed, sizeof filed, &err);
    sl_folder_unlock(lock);
    if (status == SL_OK)
        printf("filed %d rows of commit %s (position %" PRId64 ") on machine %s: %s\n", run.nrows, run.commit,
               run.position, run.machine, filed);
    else
        sl__cli_error("history", "%s", err.msg);
    if (status == SL_OK || run.rows)
        sl_history_run_free(&run);
    sl_record_set_free(&set);
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

int sl__cmd_history(int argc, char **argv)
{
    sl__cli cli = sl__cli_start("history", usage, argc, argv);
    const char *action = NULL, *operand = NULL, *value;
    add_args add = {.into = "history", .repo = ".", .position = -1};
    bisect_args bisect = {.history = "history", .repo = "."};
    const char *output = NULL, *format = NULL;
    sl_history_options options;
    sl_history_defaults(&options);
    while (sl__cli_next(&cli)) {
        if (sl__cli_is_help(&cli)) {
            fputs(usage, stdout);
            return SL__EXIT_OK;
        } else if (sl__cli_option(&cli, "--into", &value)) {
            add.into = value;
        } else if (sl__cli_option(&cli, "--position", &value)) {
            add.position = sl__cli_int(&cli, "--position", value, 0, INT64_MAX / 2);
        } else if (sl__cli_option(&cli, "--repo", &value)) {
            add.repo = bisect.repo = value;
        } else if (sl__cli_option(&cli, "--instructions", &value)) {
            add.instructions = value;
        } else if (sl__cli_option(&cli, "--output", &value)) {
            output = value;
        } else if (sl__cli_option(&cli, "--min-effect", &value)) {
            char *end;
            options.min_effect = strtod(value, &end);
            if (*end || !(options.min_effect >= 0.0 && options.min_effect < 1.0))
                sl__cli_usage_error(&cli, "option --min-effect: '%s' is not a fraction in [0, 1), e.g. 0.05", value);
        } else if (sl__cli_option(&cli, "--history", &value)) {
            bisect.history = value;
        } else if (sl__cli_option(&cli, "--machine", &value)) {
            bisect.machine = value;
        } else if (sl__cli_option(&cli, "--format", &value)) {
            if (strcmp(value, "asv") != 0 && strcmp(value, "bencher") != 0)
                sl__cli_usage_error(&cli, "option --format: '%s' is not asv or bencher", value);
            format = value;
        } else if (sl__cli_arg(&cli)[0] == '-') {
            sl__cli_unknown(&cli);
        } else if (!action) {
            action = sl__cli_arg(&cli);
        } else if (!operand) {
            operand = sl__cli_arg(&cli);
        } else {
            sl__cli_unknown(&cli);
        }
    }
    if (!action)
        sl__cli_usage_error(&cli, "say what to do: add, publish, bisect or export");
    if (strcmp(action, "add") == 0) {
        if (!operand)
            sl__cli_usage_error(&cli, "say which records to file: sluice history add RECORDS_DIR");
        add.records = operand;
        return history_add(&add);
    }
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
