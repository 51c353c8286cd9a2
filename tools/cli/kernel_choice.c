/* Which kernel table a command runs: a name from --kernels or
 * SLUICE_KERNELS, or by default "auto", the table tuned on this machine
 * (sluice/bench/kernel_tune.h), resolved once per process. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

bool sl__cli_is_auto(const char *name)
{
    return name && strcasecmp(name, SL_KERNELS_AUTO) == 0;
}

/* Says, in one line, what the tuned table cost this run: nothing when it
 * came from the cache, else the measurement and where it was saved. */
static void say_how(const char *command, const sl_kernels_auto_report *report, const sl_kernel_tuning *tuning)
{
    if (report->refused[0])
        sl__cli_error(command, "kernel cache refused: %s", report->refused);
    if (report->from_cache)
        return;
    int differ = 0;
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++)
        differ += tuning->choice.table[e] != tuning->default_table;
    if (report->not_saved[0])
        sl__cli_error(command,
                      "chose the kernels by timing every kernel table once (%.1f s; %d kernels differ from %s); "
                      "not saved, so the next run measures again: %s",
                      tuning->seconds, differ, sl_kernel_table_at(tuning->default_table)->name, report->not_saved);
    else
        sl__cli_error(command,
                      "chose the kernels by timing every kernel table once (%.1f s; %d kernels differ from %s); "
                      "saved in %s ('sluice tune' shows the choice)",
                      tuning->seconds, differ, sl_kernel_table_at(tuning->default_table)->name, report->path);
}

const sl_kernel_table *sl__cli_auto_kernels(const char *command, sl_kernel_tuning *tuning)
{
    /* One tuned table per process: every scenario and adapter of a run
     * shares it, and a program measures at most once. */
    static sl_kernel_table table;
    static sl_kernel_tuning chosen;
    static int state; /* 0 not asked, 1 have it, -1 cannot */
    if (state == 0) {
        sl_kernels_auto_report report;
        sl_err err = {0};
        sl_status st = sl_kernels_auto(&table, &chosen, &report, &err);
        if (st == SL_OK) {
            say_how(command, &report, &chosen);
            state = 1;
        } else if (st == SL_EMISMATCH) {
            /* A kernel computes other bits than the reference: no table is
             * run in its place, the command fails naming it. */
            sl__cli_error(command, "%s", err.msg);
            exit(SL__EXIT_FAILED);
        } else {
            sl__cli_error(command, "cannot choose the kernels by measurement: %s", err.msg);
            state = -1;
        }
    }
    if (state < 0)
        return NULL;
    if (tuning)
        *tuning = chosen;
    return &table;
}

static const sl_kernel_table *resolve(const sl__cli *cli, const char *option_value, bool pinned)
{
    const char *name = option_value;
    const char *what = "option --kernels";
    if (!name) {
        name = getenv("SLUICE_KERNELS");
        what = "environment variable SLUICE_KERNELS";
    }
    bool unnamed = !name || !*name;
    if (pinned && sl__cli_is_auto(name))
        sl__cli_usage_error(cli,
                            "%s: auto is this machine's measured choice, which another machine cannot repeat; "
                            "an audit runs a named table (default %s)",
                            what, sl_kernels_default()->name);
    if (pinned && unnamed)
        return sl_kernels_default();
    if (unnamed || sl__cli_is_auto(name)) {
        const sl_kernel_table *tuned = sl__cli_auto_kernels(cli->command, NULL);
        if (tuned)
            return tuned;
        sl__cli_error(cli->command, "running the flag-chosen table %s instead", sl_kernels_default()->name);
        return sl_kernels_default();
    }
    const sl_kernel_table *table = NULL;
    sl_err err = {0};
    if (sl_kernels_choose(name, &table, &err) != SL_OK)
        sl__cli_usage_error(cli, "%s: %s%s", what, err.msg,
                            err.status == SL_ENOTFOUND ? ", or auto (the choice measured here, the default)" : "");
    return table;
}

const sl_kernel_table *sl__cli_kernels(const sl__cli *cli, const char *option_value)
{
    return resolve(cli, option_value, false);
}

const sl_kernel_table *sl__cli_pinned_kernels(const sl__cli *cli, const char *option_value)
{
    return resolve(cli, option_value, true);
}
