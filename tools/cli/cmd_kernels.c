/* `sluice kernels`: every kernel case (sluice/bench/kernel_check.h) checked on
 * every kernel table against the reference, then timed, one row per case:
 * whether each table agrees and how many bytes per second it moves. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "sluice/bench/kernel_check.h"
#include "sluice/core/timing.h"

#define DEFAULT_REPETITIONS 11

typedef struct kernels_args {
    const char *tables, *entries;
    bool check_only;
    int repetitions;
} kernels_args;

static const sl__option kernels_options[] = {
    {.name = "--tables",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(kernels_args, tables),
     .help = "kernel tables (reference, cpu-generic, cpu-avx2,\n"
             "cpu-avx512-256, cpu-avx512); default every one this\n"
             "CPU can run"},
    {.name = "--entries",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(kernels_args, entries),
     .help = "kernel entries (normalize_u8, resize_u8, ...); default all"},
    {.name = "--check-only", .kind = SL__OPTION_FLAG, SL__AT(kernels_args, check_only), .help = "check, do not time"},
    {.name = "--repetitions",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(kernels_args, repetitions),
     .min = 1,
     .max = 1000,
     .help = "timed samples per case and table, the median reported\n(default 11)"},
};

const sl__command_spec sl__kernels_spec = {
    .name = "kernels",
    .synopsis = "sluice kernels [options]",
    .about = "Checks every kernel case (each kernel table entry at the element sizes\n"
             "the scenarios run it on, and at sizes that are no multiple of a vector\n"
             "width) on each kernel table against the reference table, under 3 seeds:\n"
             "bit for bit, or for log_mel within MM-2's tolerance. Then times each case\n"
             "that agreed, on inputs in cache, and prints one row per case: per table\n"
             "ok or FAIL and GB/s (bytes read plus written per call over the median\n"
             "call time). A case that fails is printed with its first difference.",
    .options = kernels_options,
    .noptions = SL__COUNT(kernels_options),
    .epilogue = "exit status: 0 every case agreed, 1 a case failed, 2 bad command line.",
};

/* The tables named by --tables, or every supported one (saying which were
 * left out and why). A name that is unknown or that this CPU cannot run is
 * a usage error, worded as --kernels words it. */
static void select_tables(const sl__cli *cli, const char *text, bool *selected)
{
    if (!text) {
        for (int t = 0; t < sl_kernel_table_count(); t++) {
            char reason[128] = "";
            selected[t] = sl_kernel_table_supported(sl_kernel_table_at(t), reason, sizeof reason);
            if (!selected[t])
                printf("%s: skipped, %s\n", sl_kernel_table_at(t)->name, reason);
        }
        return;
    }
    sl__cli_list list = sl__cli_split(cli, "--tables", text);
    for (int i = 0; i < list.count; i++) {
        const sl_kernel_table *table = NULL;
        sl_err err = {0};
        if (sl_kernels_choose(list.items[i], &table, &err) != SL_OK)
            sl__cli_usage_error(cli, "option --tables: %s", err.msg);
        selected[table->id] = true;
    }
    sl__cli_list_free(&list);
}

/* The entries named by --entries, or all; an unknown name is a usage error
 * that lists the entries. */
static void select_entries(const sl__cli *cli, const char *text, bool *selected)
{
    int n = sl_kernel_entry_count();
    for (int e = 0; e < n; e++)
        selected[e] = !text;
    if (!text)
        return;
    sl__cli_list list = sl__cli_split(cli, "--entries", text);
    for (int i = 0; i < list.count; i++) {
        int e = 0;
        while (e < n && strcasecmp(list.items[i], sl_kernel_entry_name(e)) != 0)
            e++;
        if (e == n) {
            char names[1024] = "";
            size_t used = 0;
            for (int k = 0; k < n && used < sizeof names; k++)
                used +=
                    (size_t)snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "", sl_kernel_entry_name(k));
            sl__cli_usage_error(cli, "option --entries: unknown kernel entry '%s'\nvalid: %s", list.items[i], names);
        }
        selected[e] = true;
    }
    sl__cli_list_free(&list);
}

static bool case_selected(const sl_kernel_case *c, const bool *entries)
{
    for (int e = 0; e < sl_kernel_entry_count(); e++)
        if (strcmp(c->entry, sl_kernel_entry_name(e)) == 0)
            return entries[e];
    return false;
}

/* Bandwidth with three significant digits (0.00312, 30.1) and no exponent. */
static void format_rate(char *buf, size_t size, double gb_per_s)
{
    snprintf(buf, size, gb_per_s < 1000.0 ? "%.3g" : "%.0f", gb_per_s);
}

/* Checks, then (unless check_only) times, one case on one table: fills the
 * table's two cells and counts a failure, printing why on stderr. */
static void run_case(const sl_kernel_case *c, const sl_kernel_table *table, bool check_only, int repetitions,
                     char *verdict, char *rate, size_t size, int *failures)
{
    char diff[512];
    sl_err err = {0};
    sl_status st = sl_kernel_case_check(c, table, diff, sizeof diff, &err);
    double ns = 0.0;
    if (st == SL_OK && !check_only)
        st = sl_kernel_case_time(c, table, repetitions, &ns, &err);
    snprintf(verdict, size, "%s", st == SL_OK ? "ok" : "FAIL");
    snprintf(rate, size, "-");
    if (st == SL_OK && ns > 0.0)
        format_rate(rate, size, (double)c->bytes / ns);
    if (st != SL_OK) {
        sl__cli_error("kernels", "%s %s on %s: %s", c->entry, c->shape, table->name,
                      st == SL_EMISMATCH ? diff : err.msg);
        (*failures)++;
    }
}

int sl__cmd_kernels(int argc, char **argv)
{
    kernels_args args = {.repetitions = DEFAULT_REPETITIONS};
    sl__cli cli = sl__options_parse(&sl__kernels_spec, argc, argv, &args);
    const char *tables_text = args.tables, *entries_text = args.entries;
    bool check_only = args.check_only;
    int repetitions = args.repetitions;
    bool tables[SL_TABLE_COUNT] = {false};
    bool *entries = sl__cli_alloc((size_t)sl_kernel_entry_count() * sizeof *entries);
    select_tables(&cli, tables_text, tables);
    select_entries(&cli, entries_text, entries);

    /* entry, shape, from, bytes, then two cells per selected table. */
    int ncols = 4;
    const char *headers[4 + 2 * SL_TABLE_COUNT] = {"entry", "shape", "from", "bytes"};
    sl__align align[4 + 2 * SL_TABLE_COUNT] = {SL__LEFT, SL__LEFT, SL__LEFT, SL__RIGHT};
    for (int t = 0; t < SL_TABLE_COUNT; t++) {
        if (!tables[t])
            continue;
        headers[ncols] = sl_kernel_table_at(t)->name;
        align[ncols++] = SL__LEFT;
        if (!check_only) {
            headers[ncols] = "GB/s";
            align[ncols++] = SL__RIGHT;
        }
    }
    sl__table *out = sl__table_new(ncols, headers, align);
    int cases = 0, checks = 0, failures = 0;
    int64_t start = sl_now_ns();
    for (int i = 0; i < sl_kernel_case_count(); i++) {
        const sl_kernel_case *c = sl_kernel_case_at(i);
        if (!case_selected(c, entries))
            continue;
        char bytes[24], cells[2 * SL_TABLE_COUNT][32];
        const char *row[4 + 2 * SL_TABLE_COUNT] = {c->entry, c->shape, c->origin, bytes};
        snprintf(bytes, sizeof bytes, "%lld", (long long)c->bytes);
        int col = 4;
        for (int t = 0; t < SL_TABLE_COUNT; t++) {
            if (!tables[t])
                continue;
            char *verdict = cells[2 * t], *rate = cells[2 * t + 1];
            run_case(c, sl_kernel_table_at(t), check_only, repetitions, verdict, rate, sizeof cells[0], &failures);
            row[col++] = verdict;
            if (!check_only)
                row[col++] = rate;
            checks++;
        }
        sl__table_add_row(out, row);
        cases++;
    }
    sl__table_print(out, stdout, 0);
    printf("%d cases, %d checks%s, %d failed, in %.1f s\n", cases, checks, check_only ? "" : " and timings", failures,
           (double)(sl_now_ns() - start) * 1e-9);
    sl__table_free(out);
    free(entries);
    return failures ? SL__EXIT_FAILED : SL__EXIT_OK;
}
