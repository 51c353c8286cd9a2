/* `sluice check --baseline NAME`: the pull-request gate. Compares a new
 * run's batch times with a saved baseline's, scenario by scenario, and
 * exits 1 when any moved slower by enough and with enough confidence
 * (sluice/gate.h), printing what moved, by how much and with what p value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sluice/gate.h"

static const char usage[] =
    "usage: sluice check --baseline NAME [options]\n"
    "\n"
    "Compares the batch times of a run (every repetition's samples) with baseline\n"
    "NAME's, for every scenario, variant and adapter both have, with a one-sided\n"
    "Mann-Whitney U test and a minimum effect size: a row is 'slower' when its\n"
    "median moved up by at least --min-effect and p < --alpha. Exits 1 when any\n"
    "row is slower. docs/gate.md gives the measured error rates.\n"
    "\n"
    "options:\n"
    "  --baseline NAME        the baseline (see sluice baseline save)\n"
    "  --records DIR          the run to check (default records/ci); repeat it to pool\n"
    "                         the repetitions of several runs (ABAB, ci/gate.sh)\n"
    "  --baseline-dir DIR     where baselines live (default baselines)\n"
    "  --alpha P              significance level (default 0.01)\n"
    "  --min-effect F         smallest slowdown that counts, as a fraction (default 0.05)\n"
    "  --inflate F            testing aid: multiply the run's times by 1 + F first\n"
    "  --allow-other-machine  compare with a baseline taken on another CPU model\n"
    "  -h, --help             show this help\n"
    "\n"
    "exit status: 0 when nothing is slower; 1 when something is, or a file could not\n"
    "be read, or the baseline comes from another machine; 2 for a bad command line.\n";

static void report_bad_file(const char *message, void *user)
{
    (void)user;
    sl__cli_error("check", "%s", message);
}

static double parse_fraction(const sl__cli *cli, const char *option, const char *text, double lo, double hi)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= lo && v <= hi))
        sl__cli_usage_error(cli, "option %s: '%s' is not a number in [%g, %g]", option, text, lo, hi);
    return v;
}

static size_t sample_count(const sl_record *r)
{
    return r->samples_ns ? (size_t)r->repetitions * (size_t)r->measured_batches : 0;
}

typedef struct check_args {
    const char *records[8];
    int nrecords;
    const char *baseline_dir, *name;
    bool allow_other_machine;
    sl_gate_options gate;
} check_args;

static void parse_args(int argc, char **argv, check_args *args)
{
    *args = (check_args){.records = {"records/ci"}, .baseline_dir = "baselines"};
    sl_gate_options_init(&args->gate);
    sl__cli cli = sl__cli_start("check", argc, argv);
    const char *value;
    while (sl__cli_next(&cli)) {
        if (sl__cli_is_help(&cli)) {
            fputs(usage, stdout);
            exit(SL__EXIT_OK);
        } else if (sl__cli_option(&cli, "--baseline", &value)) {
            args->name = value;
        } else if (sl__cli_option(&cli, "--records", &value)) {
            if (args->nrecords == 8)
                sl__cli_usage_error(&cli, "option --records: at most 8 runs");
            args->records[args->nrecords++] = value;
        } else if (sl__cli_option(&cli, "--baseline-dir", &value)) {
            args->baseline_dir = value;
        } else if (sl__cli_option(&cli, "--alpha", &value)) {
            args->gate.alpha = parse_fraction(&cli, "--alpha", value, 1e-12, 0.5);
        } else if (sl__cli_option(&cli, "--min-effect", &value)) {
            args->gate.min_effect = parse_fraction(&cli, "--min-effect", value, 0.0, 10.0);
        } else if (sl__cli_option(&cli, "--inflate", &value)) {
            args->gate.inflate = parse_fraction(&cli, "--inflate", value, -0.9, 10.0);
        } else if (sl__cli_flag(&cli, "--allow-other-machine")) {
            args->allow_other_machine = true;
        } else {
            sl__cli_unknown(&cli);
        }
    }
    if (!args->name)
        sl__cli_usage_error(&cli, "say which baseline with --baseline NAME");
    sl__cli_baseline_name(&cli, args->name);
    /* No --records: the default run. */
    if (args->nrecords == 0)
        args->nrecords = 1;
}

/* The baseline's records and the run's (pooled over every --records);
 * false, with the error printed, when either cannot be loaded. */
static bool load_records(const check_args *args, const char *base_dir, sl_record_set *base, sl_record_set *fresh)
{
    sl_err err = {0};
    /* A baseline is whole or it is not one: a save that was interrupted,
     * or records dropped in by hand, would pass rows as "new". */
    if (sl_folder_check(base_dir, "baseline", true, &err) != SL_OK) {
        sl__cli_error("check", "baseline '%s' cannot be used: %s (save it with `sluice baseline save %s`)", args->name,
                      err.msg, args->name);
        return false;
    }
    if (sl_record_set_load(base_dir, base, report_bad_file, NULL, &err) != SL_OK) {
        sl__cli_error("check", "baseline '%s' not found: %s (save one with `sluice baseline save %s`)", args->name,
                      err.msg, args->name);
        return false;
    }
    if (sl_record_set_load_runs(args->records, args->nrecords, fresh, report_bad_file, NULL, &err) != SL_OK) {
        sl__cli_error("check", "%s", err.msg);
        sl_record_set_free(base);
        sl_record_set_free(fresh);
        return false;
    }
    return true;
}

/* What makes the comparison meaningless, each printed: an empty baseline,
 * or wall times from two CPU models, which are not comparable. */
static int comparison_problems(const check_args *args, const char *base_dir, const sl_record_set *base,
                               const sl_record_set *fresh)
{
    int problems = 0;
    if (base->count == 0) {
        sl__cli_error("check", "baseline '%s' (%s) holds no records", args->name, base_dir);
        problems++;
    }
    if (base->count > 0 && fresh->count > 0 && !args->allow_other_machine &&
        strcmp(base->environments[0].cpu_model, fresh->environments[0].cpu_model) != 0) {
        sl__cli_error("check",
                      "%s was measured on '%s' but %s on '%s': wall times from different machines are not "
                      "comparable (--allow-other-machine to compare anyway)",
                      base->paths[0], base->environments[0].cpu_model, fresh->paths[0],
                      fresh->environments[0].cpu_model);
        problems++;
    }
    return problems;
}

/* The gate's counts over the run's records. */
typedef struct check_counts {
    int compared, slower;
} check_counts;

/* One row of the table: the record r of the run against the baseline's
 * record of the same scenario, variant and adapter, when both are ok. */
static void compare_record(const sl_record *r, const sl_record_set *base, const sl_gate_options *gate, sl__table *table,
                           check_counts *counts)
{
    int j = sl_record_set_find(base, r->scenario, r->variant, r->adapter);
    const char *verdict = NULL;
    char b50[32] = "-", n50[32] = "-", change[32] = "-", p[32] = "-";
    sl_gate_result result;
    if (r->outcome != SL_RECORD_OK) {
        verdict = "not ok in this run";
    } else if (j < 0) {
        verdict = "new (no baseline)";
    } else if (base->records[j].outcome != SL_RECORD_OK) {
        verdict = "not ok in the baseline";
    } else {
        if (!sl_gate_compare(base->records[j].samples_ns, sample_count(&base->records[j]), r->samples_ns,
                             sample_count(r), (size_t)r->measured_batches, gate, &result)) {
            verdict = "no samples";
        } else {
            counts->compared++;
            snprintf(b50, sizeof b50, "%.1f", result.base_median / 1e3);
            snprintf(n50, sizeof n50, "%.1f", result.new_median / 1e3);
            snprintf(change, sizeof change, "%+.1f%%", (result.ratio - 1.0) * 100.0);
            snprintf(p, sizeof p, "%.2g", result.p_slower);
            verdict = result.verdict == SL_GATE_SLOWER ? "SLOWER" : sl_gate_verdict_name(result.verdict);
            counts->slower += result.verdict == SL_GATE_SLOWER;
        }
    }
    const char *cells[] = {r->scenario, r->variant, r->adapter, b50, n50, change, p, verdict};
    sl__table_add_row(table, cells);
}

static sl__table *comparison_table(void)
{
    static const char *const headers[] = {"scenario", "variant", "adapter", "base p50 (µs)", "new p50 (µs)",
                                          "change",   "p slower", "verdict"};
    static const sl__align align[] = {SL__LEFT, SL__LEFT, SL__LEFT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                      SL__LEFT};
    return sl__table_new(8, headers, align);
}

int sl__cmd_check(int argc, char **argv)
{
    check_args args;
    parse_args(argc, argv, &args);

    char base_dir[4096];
    snprintf(base_dir, sizeof base_dir, "%s/%s", args.baseline_dir, args.name);
    sl_record_set base, fresh;
    if (!load_records(&args, base_dir, &base, &fresh))
        return SL__EXIT_FAILED;
    int problems = base.nerrors + fresh.nerrors;
    problems += comparison_problems(&args, base_dir, &base, &fresh);
    check_counts counts = {0};
    sl__table *table = comparison_table();
    for (int i = 0; !problems && i < fresh.count; i++)
        compare_record(&fresh.records[i], &base, &args.gate, table, &counts);
    if (!problems) {
        sl__table_print(table, stdout, 0);
        printf("\n%d compared, %d slower (threshold: +%.0f%% and p < %g); baseline %s\n", counts.compared,
               counts.slower, args.gate.min_effect * 100.0, args.gate.alpha, base_dir);
    }
    sl__table_free(table);
    sl_record_set_free(&base);
    sl_record_set_free(&fresh);
    return problems || counts.slower ? SL__EXIT_FAILED : SL__EXIT_OK;
}
