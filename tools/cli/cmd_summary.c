/* `sluice summary RECORDS_DIR`: the table `sluice bench` prints at the end
 * of a run, again, from a folder of records, with the same exports: for a
 * run whose terminal is gone, or a folder pooled from several runs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "exports.h"
#include "summary.h"

typedef struct summary_args {
    const char *records, *junit, *format;
} summary_args;

static const sl__option summary_options[] = {
    {.name = "--format",
     .arg = "table|gbench",
     .kind = SL__OPTION_CHOICE,
     SL__AT(summary_args, format),
     .help = "what goes to stdout: the table (default) or Google\n"
             "Benchmark's JSON (the table then goes to stderr)"},
    {.name = "--junit",
     .arg = "FILE",
     .kind = SL__OPTION_TEXT,
     SL__AT(summary_args, junit),
     .help = "also write the records as JUnit XML"},
};

const sl__command_spec sl__summary_spec = {
    .name = "summary",
    .synopsis = "sluice summary RECORDS_DIR [options]",
    .about = "Prints the summary table of the records in RECORDS_DIR (e.g. records/ci), as\n"
             "`sluice bench` prints it when its runs end: every adapter's headline figure\n"
             "(elements/s at the median batch time) with its interval and the mean beside it,\n"
             "ratios to the reference and the best peer with their calls, and the notes.",
    .options = summary_options,
    .noptions = SL__COUNT(summary_options),
    .epilogue = "exit status: 0 when every record was read; 1 when one could not be (the others\n"
                "are still summarized) or an export could not be written; 2 for a bad command line.",
    SL__OPERAND(summary_args, records),
};

static void report_bad_file(const char *message, void *user)
{
    int *bad = user;
    (*bad)++;
    sl__cli_error("summary", "%s (left out)", message);
}

int sl__cmd_summary(int argc, char **argv)
{
    summary_args args = {0};
    sl__cli cli = sl__options_parse(&sl__summary_spec, argc, argv, &args);
    const char *records = args.records, *junit = args.junit;
    bool gbench = args.format && strcmp(args.format, "gbench") == 0;
    if (!records)
        sl__cli_usage_error(&cli, "say which records folder to summarize, e.g. records/ci");

    sl_record_set set;
    sl_err err = {0};
    int bad = 0;
    if (sl_record_set_load(records, &set, report_bad_file, &bad, &err) != SL_OK) {
        sl__cli_error("summary", "%s", err.msg);
        return SL__EXIT_FAILED;
    }
    if (set.count == 0) {
        sl__cli_error("summary", "%s: no readable records (run `sluice bench` first)", records);
        sl_record_set_free(&set);
        return SL__EXIT_FAILED;
    }
    sl__summary summary = {0};
    for (int i = 0; i < set.count; i++)
        sl__summary_add(&summary, &set.records[i], &set.environments[i]);
    sl__summary_print(&summary, gbench ? stderr : stdout);
    if (gbench)
        sl__export_gbench(summary.records, summary.count, &summary.environments[0], stdout);
    bool ok = !junit || sl__export_junit_file(summary.records, summary.environments, summary.count, junit);
    sl__summary_free(&summary);
    sl_record_set_free(&set);
    return ok && bad == 0 ? SL__EXIT_OK : SL__EXIT_FAILED;
}
