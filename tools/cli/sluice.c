/* The `sluice` command: runs the scenario corpus as benchmarks and manages
 * what it produces. This file only dispatches to the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sluice/core/cleanup.h"
#include "sluice/kernels/kernels.h"
#include "sluice_config.h"

typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    const sl__command_spec *spec;
} command;

static const command commands[] = {
    {"bench", "run scenarios on adapters and write timing records", sl__cmd_bench, &sl__bench_spec},
    {"list", "show the scenarios, their variants and sizes, and the adapters", sl__cmd_list, &sl__list_spec},
    {"bless", "regenerate the golden outputs from the reference adapter", sl__cmd_bless, &sl__bless_spec},
    {"audit", "write a determinism manifest, or compare two and name the first difference", sl__cmd_audit,
     &sl__audit_spec},
    {"baseline", "save a run's records as a baseline for the performance gate", sl__cmd_baseline, &sl__baseline_spec},
    {"check", "compare a run with a baseline; exit 1 on a regression (the gate)", sl__cmd_check, &sl__check_spec},
    {"export", "write a scenario's data, order and decisions for a peer loader", sl__cmd_export, &sl__export_spec},
    {"peer-check", "check a loader of one's own against the reference, naming its first difference", sl__cmd_peer_check,
     &sl__peer_check_spec},
    {"report", "turn a records folder into a Markdown and HTML comparison report", sl__cmd_report, &sl__report_spec},
    {"summary", "print the bench summary table of a records folder again, or export it", sl__cmd_summary,
     &sl__summary_spec},
    {"kernels", "check every kernel table against the reference, kernel by kernel, then time each", sl__cmd_kernels,
     &sl__kernels_spec},
    {"history", "file runs by commit and machine, find the steps between commits, publish a static site",
     sl__cmd_history, &sl__history_spec},
    {"tune", "choose the fastest kernel table per kernel by timing them here; cache the choice", sl__cmd_tune,
     &sl__tune_spec},
};

#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void print_help(FILE *out)
{
    fputs("usage: sluice <command> [options]\n"
          "       sluice <command> --help\n"
          "       sluice --version\n"
          "\n"
          "Benchmark corpus for ML data-loading pipelines.\n"
          "\n"
          "commands:\n",
          out);
    for (int i = 0; i < NCOMMANDS; i++) {
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    }
    fputs("  help     show this help, or a command's (sluice help bench); help --options lists\n"
          "           every command's options, one a line\n"
          "\n"
          "exit status: 0 success, 1 a run or file operation failed, 2 bad command line.\n"
          "See docs/cli.md for every option and an example session.\n",
          out);
}

static void print_version(void)
{
    sl_environment env;
    sl_environment_collect(&env);
    printf("sluice %s (commit %s)\n", SLUICE_VERSION, env.git_commit);
}

/* `sluice help --options`: every command's declared options, one a line,
 * with the range of a number ("bench --workers N [0, 1024]") and how often
 * a repeatable one may be given ("check --records DIR (up to 16 times)"), each
 * declaration checked first; what tests/cli/test_options.sh holds the
 * commands' --help and parsers to, and what a shell completion can read. */
static int print_options(void)
{
    for (int i = 0; i < NCOMMANDS; i++) {
        const sl__command_spec *spec = commands[i].spec;
        if (!sl__options_check(spec))
            return SL__EXIT_FAILED;
        for (int o = 0; o < spec->noptions; o++) {
            const sl__option *option = &spec->options[o];
            printf("%s %s%s%s", spec->name, option->name, option->arg ? " " : "", option->arg ? option->arg : "");
            if (option->kind == SL__OPTION_INT)
                printf(" [%lld, %lld]", (long long)option->min, (long long)option->max);
            else if (option->kind == SL__OPTION_NUMBER)
                printf(" [%g, %g]", option->low, option->high);
            else if (option->kind == SL__OPTION_LIST)
                printf(" (up to %lld times)", (long long)option->max);
            putchar('\n');
        }
    }
    return SL__EXIT_OK;
}

static const command *find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

static _Noreturn void unknown_command(const sl__cli *cli, const char *name)
{
    char names[256] = "", hint[96];
    const char *known[NCOMMANDS];
    size_t used = 0;
    for (int i = 0; i < NCOMMANDS; i++) {
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i > 0 ? ", " : "", commands[i].name);
        known[i] = commands[i].name;
    }
    sl__did_you_mean(hint, sizeof hint, name, known, NCOMMANDS);
    sl__cli_usage_error(cli, "unknown command '%s'%s; commands: %s", name, hint, names);
}

int main(int argc, char **argv)
{
    sl__cli cli = sl__cli_start(NULL, argc, argv);
    if (!sl__cli_next(&cli)) {
        print_help(stderr);
        return SL__EXIT_USAGE;
    }
    if (sl__cli_is_help(&cli)) {
        print_help(stdout);
        return SL__EXIT_OK;
    }
    if (sl__cli_flag(&cli, "--version")) {
        /* Anything after it was meant for something; saying nothing of it
         * would let a typo pass as success. */
        if (sl__cli_next(&cli))
            sl__cli_unknown(&cli);
        print_version();
        return SL__EXIT_OK;
    }
    const char *name = sl__cli_arg(&cli);
    if (strcmp(name, "help") == 0) {
        if (!sl__cli_next(&cli)) {
            print_help(stdout);
            return SL__EXIT_OK;
        }
        if (strcmp(sl__cli_arg(&cli), "--options") == 0) {
            if (sl__cli_next(&cli))
                sl__cli_unknown(&cli);
            return print_options();
        }
        /* "sluice help bench" is "sluice bench --help". */
        const command *topic = find_command(sl__cli_arg(&cli));
        if (topic == NULL) {
            unknown_command(&cli, sl__cli_arg(&cli));
        }
        if (sl__cli_next(&cli)) {
            sl__cli_unknown(&cli);
        }
        char *help_argv[] = {(char *)topic->name, "--help", NULL};
        return topic->run(2, help_argv);
    }
    if (name[0] == '-') {
        sl__cli_unknown(&cli);
    }
    const command *cmd = find_command(name);
    if (cmd == NULL) {
        unknown_command(&cli, name);
    }
    /* Every command refuses a SLUICE_KERNELS that names no usable table, so
     * a typo cannot silently measure the default. */
    const char *kernels = getenv("SLUICE_KERNELS");
    const sl_kernel_table *table = NULL;
    sl_err err = {0};
    if (!sl__cli_is_auto(kernels) && sl_kernels_choose(kernels, &table, &err) != SL_OK) {
        sl__cli_error(cmd->name, "environment variable SLUICE_KERNELS: %s", err.msg);
        return SL__EXIT_USAGE;
    }
    /* An interrupted run removes its temporaries (IO-1's exports, a record
     * being written); a killed one leaves them for the next run to sweep. */
    sl_cleanup_on_signals();
    sl_sweep_stale_temporaries(sl_temp_base());
    return cmd->run(argc - 1, argv + 1);
}
