/* `sluice check`: the pull-request gate's two comparisons.
 *   --baseline NAME: a new run's batch times against a saved baseline's,
 *     row by row (scenario, variant, adapter), with the rules of
 *     sluice/records/gate.h: slower, faster, same, or inconclusive;
 *   --counts BASE NEW: callgrind's counts per batch of two builds (from
 *     ci/gate-counts.py), instructions and simulated cache misses.
 * Every row prints the rule that decided it. docs/gate.md gives the
 * measured error rates. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sluice/records/gate.h"

/* A check that found no row slower but some it cannot tell about. */
#define EXIT_INCONCLUSIVE 3

static void report_bad_file(const char *message, void *user)
{
    (void)user;
    sl__cli_error("check", "%s", message);
}

static size_t sample_count(const sl_record *r)
{
    return r->samples_ns ? (size_t)r->repetitions * (size_t)r->measured_batches : 0;
}

typedef struct check_args {
    sl__text_list records;
    const char *baseline_dir, *name;
    const char *counts_base, *counts_new;
    const char *unsettled;
    bool allow_other_machine;
    bool max_load_given;
    sl_gate_options gate;
    sl_gate_count_options counts;
} check_args;

/* Without --max-load, the limit comes from the records' CPUs. */
static void note_max_load(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)cli;
    (void)option;
    (void)value;
    ((check_args *)args)->max_load_given = true;
}

/* --max-wait 1: every share passes, and so does an unknown one. */
static void wait_without_limit(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)cli;
    (void)option;
    (void)value;
    check_args *a = args;
    if (a->gate.max_cpu_wait >= 1.0)
        a->gate.max_cpu_wait = -1.0;
}

/* --counts BASE NEW: the new build's counts are the next argument. */
static void take_new_counts(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)option;
    (void)value;
    if (!sl__cli_next(cli) || sl__cli_arg(cli)[0] == '-')
        sl__cli_usage_error(cli, "option --counts needs two files: the base's and the new build's");
    ((check_args *)args)->counts_new = sl__cli_arg(cli);
}

static const sl__option check_options[] = {
    {.name = "--baseline",
     .arg = "NAME",
     .kind = SL__OPTION_TEXT,
     SL__AT(check_args, name),
     .help = "the baseline (see sluice baseline save)"},
    {.name = "--records",
     .arg = "DIR",
     .kind = SL__OPTION_LIST,
     SL__AT(check_args, records),
     .max = SL__TEXT_LIST_MAX,
     .help = "the run to check (default records/ci); repeat it (up to\n"
             "16 times) to pool several runs, each one process\n"
             "(ci/gate.sh)"},
    {.name = "--baseline-dir",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(check_args, baseline_dir),
     .help = "where baselines live (default baselines)"},
    {.name = "--alpha",
     .arg = "P",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, gate.alpha),
     .low = 1e-12,
     .high = 0.5,
     .help = "family-wise level over the rows (default 0.01)"},
    {.name = "--min-effect",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, gate.min_effect),
     .low = 0.0,
     .high = 10.0,
     .help = "smallest slowdown that counts, as a fraction (default 0.05)"},
    {.name = "--max-spread",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, gate.max_base_spread),
     .low = 1e-6,
     .high = 100.0,
     .help = "a slower row whose base processes spread by more than F is\n"
             "inconclusive (default: only a change within that spread)"},
    {.name = "--max-load",
     .arg = "L",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, gate.max_load),
     .low = 0.0,
     .high = 1e6,
     .handle = note_max_load,
     .help = "largest load average a slower row is believed under\n"
             "(default: twice the CPUs the records name; 0: no limit)"},
    {.name = "--max-wait",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, gate.max_cpu_wait),
     .low = 1e-6,
     .high = 1.0,
     .handle = wait_without_limit,
     .help = "largest share of their runnable time the new runs may\n"
             "have waited for a CPU beyond the base's for a slower row\n"
             "to be believed (the records' cpu_wait_fraction; a wait\n"
             "both sides met does not bias their ratio); default\n"
             "--min-effect / (1 + --min-effect), the extra wait that\n"
             "alone makes that change; 1: no limit, which also\n"
             "believes an unknown wait)"},
    {.name = "--unsettled",
     .arg = "FILE",
     .kind = SL__OPTION_TEXT,
     SL__AT(check_args, unsettled),
     .help = "write the rows found slower, one 'scenario variant\n"
             "adapter' a line, for a run that confirms them"},
    {.name = "--inflate",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, gate.inflate),
     .low = -0.9,
     .high = 10.0,
     .help = "testing aid: multiply the run's times by 1 + F first"},
    {.name = "--allow-other-machine",
     .kind = SL__OPTION_FLAG,
     SL__AT(check_args, allow_other_machine),
     .help = "compare with a baseline taken on another CPU model"},
    {.name = "--counts",
     .arg = "BASE NEW",
     .kind = SL__OPTION_TEXT,
     SL__AT(check_args, counts_base),
     .handle = take_new_counts,
     .help = "compare two builds' counts per batch instead"},
    {.name = "--max-instructions",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, counts.max_instructions),
     .low = 0.0,
     .high = 10.0,
     .help = "with --counts: largest growth of instructions per batch, as a\nfraction (default 0.02)"},
    {.name = "--max-d1",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, counts.max_d1),
     .low = 0.0,
     .high = 10.0,
     .help = "with --counts: largest growth of D1 data misses per batch\n(default 0.25)"},
    {.name = "--max-ll",
     .arg = "F",
     .kind = SL__OPTION_NUMBER,
     SL__AT(check_args, counts.max_ll),
     .low = 0.0,
     .high = 10.0,
     .help = "with --counts: largest growth of LL data misses per batch\n(default 1.0)"},
};

const sl__command_spec sl__check_spec = {
    .name = "check",
    .synopsis = "sluice check --baseline NAME [options]\nsluice check --counts BASE.tsv NEW.tsv [options]",
    .about = "With --baseline, compares the batch times of a run with baseline NAME's, for every\n"
             "scenario, variant and adapter both ran ok. The unit is the process (one `sluice\n"
             "bench` run): repetitions inside one process agree to a few percent, while two\n"
             "processes of the same binary can differ by 30%, so each process gives one figure\n"
             "(the median of its repetitions) and the test is Student's t over their logs. Pool\n"
             "several runs with --records (and the base's with `baseline save --from`): one\n"
             "run a side is one process a side, and every row then says 'cannot tell'.\n"
             "\n"
             "A row is slower when its figure moved up by at least --min-effect and the\n"
             "one-sided p is within its Holm level (the rows are one family at --alpha), unless\n"
             "the change is within the base's own spread between processes, the runs waited for\n"
             "a CPU more than --max-wait of their time (or that wait is unknown), or the load\n"
             "average passed --max-load: then it is inconclusive. Faster is the mirror. A row\n"
             "neither slower nor faster whose test could not have detected --min-effect with\n"
             "the processes it has says 'cannot tell' and how many processes a side it would\n"
             "need, never 'same'. Every row prints its processes, their spread (the pooled\n"
             "standard deviation of the log process figures) and the smallest change its test\n"
             "detects with 80% power at alpha over the rows. What that means, at one-sided\n"
             "alpha 0.01/24 and 80% power (docs/gate.md has each gate row's measured spread):\n"
             "  spread between processes     2%     5%    10%    20%\n"
             "  5 processes a side         7.9%    21%    44%   102%\n"
             "  8 processes a side         5.2%    13%    28%    59%\n"
             "  16 processes a side        3.2%   8.2%    17%    34%\n"
             "  processes a side for 5%       9     38    137   >200\n"
             "Adapters that did not run here are left out; a row that failed on a side is\n"
             "'not ok'.\n"
             "\n"
             "With --counts, compares callgrind's counts per batch of two builds\n"
             "(ci/gate-counts.py writes them): a row is slower when its instructions per batch\n"
             "grew by more than --max-instructions (and by 1000 or more), its D1 data misses by\n"
             "more than --max-d1 (and by 0.5% of its instructions or more), or its LL data\n"
             "misses by more than --max-ll (and by 1% of its instructions or more).",
    .options = check_options,
    .noptions = SL__COUNT(check_options),
    .epilogue = "exit status: 0 when every row is same, faster or not ok; 1 when a row is slower,\n"
                "or a file could not be read, or the baseline comes from another machine; 3 when no\n"
                "row is slower but one is inconclusive or cannot tell; 2 for a bad command line.",
};

static void parse_args(int argc, char **argv, check_args *args)
{
    *args = (check_args){.records = {.values = {"records/ci"}}, .baseline_dir = "baselines"};
    sl_gate_options_init(&args->gate);
    sl_gate_count_options_init(&args->counts);
    sl__cli cli = sl__options_parse(&sl__check_spec, argc, argv, args);
    if (!args->name && !args->counts_base)
        sl__cli_usage_error(&cli, "say what to compare: --baseline NAME, or --counts BASE.tsv NEW.tsv");
    if (args->name && args->counts_base)
        sl__cli_usage_error(&cli, "--baseline and --counts are two checks; run them one at a time");
    if (args->name)
        sl__cli_baseline_name(&cli, args->name);
    /* No --records: the default run. */
    if (args->records.count == 0)
        args->records.count = 1;
}

/* --- wall time ------------------------------------------------------------------ */

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
    if (sl_record_set_load_runs(args->records.values, args->records.count, fresh, report_bad_file, NULL, &err) !=
        SL_OK) {
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

/* Did not run here on a side: left out of the check, as out of a report. */
static bool not_run_here(const sl_record *r)
{
    return r->outcome == SL_RECORD_UNAVAILABLE || r->outcome == SL_RECORD_EXCLUDED || r->outcome == SL_RECORD_SKIPPED;
}

static double load_of(const sl_environment *env)
{
    return env->load_start > env->load_end ? env->load_start : env->load_end;
}

/* The worse of two CPU wait shares; unknown (-1) when either is: an
 * unknown wait may be any wait, and must not pass as the other side's. */
/* One row: the run's record i against the baseline's of the same scenario,
 * variant and adapter. Returns false for a row left out. */
static bool compare_record(const sl_record_set *fresh, int i, const sl_record_set *base, const sl_gate_options *gate,
                           sl_gate_result *result)
{
    const sl_record *r = &fresh->records[i];
    int j = sl_record_set_find(base, r->scenario, r->variant, r->adapter);
    *result = (sl_gate_result){.verdict = SL_GATE_NOT_OK};
    if (not_run_here(r) || (j >= 0 && not_run_here(&base->records[j])))
        return false;
    if (r->outcome != SL_RECORD_OK) {
        snprintf(result->rule, sizeof result->rule, "not ok: %s in this run", sl_record_outcome_name(r->outcome));
    } else if (j < 0) {
        snprintf(result->rule, sizeof result->rule, "not ok: new (no baseline)");
    } else if (base->records[j].outcome != SL_RECORD_OK) {
        snprintf(result->rule, sizeof result->rule, "not ok: %s in the baseline",
                 sl_record_outcome_name(base->records[j].outcome));
    } else if (base->records[j].measured_batches != r->measured_batches) {
        snprintf(result->rule, sizeof result->rule, "not ok: %lld batches a repetition here, %lld in the baseline",
                 (long long)r->measured_batches, (long long)base->records[j].measured_batches);
    } else {
        sl_gate_busy busy = {.load = fmax(load_of(&base->environments[j]), load_of(&fresh->environments[i])),
                             .base_cpu_wait = base->environments[j].cpu_wait_fraction,
                             .new_cpu_wait = fresh->environments[i].cpu_wait_fraction};
        sl_gate_side base_side = {base->records[j].samples_ns, sample_count(&base->records[j]),
                                  base->records[j].repetition_process};
        sl_gate_side fresh_side = {r->samples_ns, sample_count(r), r->repetition_process};
        if (!sl_gate_compare(&base_side, &fresh_side, (size_t)r->measured_batches, busy, gate, result))
            snprintf(result->rule, sizeof result->rule, "not ok: no samples");
    }
    return true;
}

static bool write_unsettled(const char *path, const sl_record_set *fresh, const int *index, const sl_gate_result *rows,
                            int count)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return false;
    for (int k = 0; k < count; k++)
        if (rows[k].verdict == SL_GATE_SLOWER) {
            const sl_record *r = &fresh->records[index[k]];
            fprintf(out, "%s %s %s\n", r->scenario, r->variant, r->adapter);
        }
    fclose(out);
    sl_err err = {0};
    bool ok = sl_write_file_atomic(path, text, size, &err) == SL_OK;
    if (!ok)
        sl__cli_error("check", "%s", err.msg);
    free(text);
    return ok;
}

/* Said before the table: a check whose runs hold one process a side can
 * only say "cannot tell", and one with a handful is weak whatever the
 * machine; the table's "detects" column says how weak, row by row. */
static void warn_powerless(const sl_gate_result *rows, int count)
{
    int fewest = SL_GATE_MAX_PROCESSES;
    for (int k = 0; k < count; k++)
        if (rows[k].verdict != SL_GATE_NOT_OK) {
            fewest = rows[k].base_processes < fewest ? rows[k].base_processes : fewest;
            fewest = rows[k].new_processes < fewest ? rows[k].new_processes : fewest;
        }
    if (fewest < 2)
        fprintf(stderr,
                "sluice check: warning: some rows have one process a side; the test is over processes, so they "
                "cannot tell. Pool several runs: --records DIR1 --records DIR2 ... (and `baseline save --from` each "
                "of the base's)\n");
    else if (fewest < 5)
        fprintf(stderr,
                "sluice check: warning: %d processes a side; below 5 a side only a change several times the "
                "processes' spread can be called slower (the 'detects' column)\n",
                fewest);
}

static int check_wall_time(check_args *args)
{
    char base_dir[4096];
    snprintf(base_dir, sizeof base_dir, "%s/%s", args->baseline_dir, args->name);
    sl_record_set base, fresh;
    if (!load_records(args, base_dir, &base, &fresh))
        return SL__EXIT_FAILED;
    int problems = base.nerrors + fresh.nerrors + comparison_problems(args, base_dir, &base, &fresh);
    if (problems) {
        sl_record_set_free(&base);
        sl_record_set_free(&fresh);
        return SL__EXIT_FAILED;
    }
    /* A machine is loaded past its limit when twice as many tasks want to
     * run as it has CPUs: then a slow row may be the machine. */
    if (!args->max_load_given && fresh.count > 0 && fresh.environments[0].cpu_cores > 0)
        args->gate.max_load = 2.0 * fresh.environments[0].cpu_cores;
    sl_gate_result *rows = sl__cli_alloc((size_t)(fresh.count > 0 ? fresh.count : 1) * sizeof *rows);
    int *index = sl__cli_alloc((size_t)(fresh.count > 0 ? fresh.count : 1) * sizeof *index);
    int count = 0;
    for (int i = 0; i < fresh.count; i++)
        if (compare_record(&fresh, i, &base, &args->gate, &rows[count]))
            index[count++] = i;
    sl_gate_decide(rows, count, &args->gate);

    warn_powerless(rows, count);
    static const char *const headers[] = {"scenario",  "variant", "adapter", "base (µs)", "new (µs)",  "change",
                                          "processes", "spread",  "detects", "p slower",  "decided by"};
    static const sl__align align[] = {SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__LEFT};
    sl__table *table = sl__table_new(11, headers, align);
    int tally[SL_GATE_NOT_OK + 1] = {0};
    for (int k = 0; k < count; k++) {
        const sl_gate_result *g = &rows[k];
        const sl_record *r = &fresh.records[index[k]];
        char b50[32] = "-", n50[32] = "-", change[32] = "-", processes[32] = "-", spread[32] = "-", detects[32] = "-",
             p[32] = "-";
        if (g->verdict != SL_GATE_NOT_OK) {
            snprintf(b50, sizeof b50, "%.1f", g->base_median / 1e3);
            snprintf(n50, sizeof n50, "%.1f", g->new_median / 1e3);
            snprintf(change, sizeof change, "%+.1f%%", (g->ratio - 1.0) * 100.0);
            snprintf(processes, sizeof processes, "%d vs %d", g->base_processes, g->new_processes);
            if (g->process_spread >= 0.0)
                snprintf(spread, sizeof spread, "%.1f%%", g->process_spread * 100.0);
            if (g->detectable >= 0.0 && isfinite(g->detectable))
                snprintf(detects, sizeof detects, "%.1f%%", g->detectable * 100.0);
            snprintf(p, sizeof p, "%.2g", g->p_slower);
        }
        tally[g->verdict]++;
        const char *cells[] = {r->scenario, r->variant, r->adapter, b50, n50,    change,
                               processes,   spread,     detects,    p,   g->rule};
        sl__table_add_row(table, cells);
    }
    sl__table_print(table, stdout, 0);
    printf("\n%d rows: %d slower, %d inconclusive or cannot tell, %d faster, %d same, %d not ok (wall time: +%.0f%% "
           "and Holm at %g over one figure per process; cannot tell below %.0f%% power for +%.0f%%; inconclusive "
           "within the base's spread, past a CPU wait of %.1f%% (negative: no limit) or a load of %.1f (0: none)); "
           "baseline %s\n",
           count, tally[SL_GATE_SLOWER], tally[SL_GATE_INCONCLUSIVE], tally[SL_GATE_FASTER], tally[SL_GATE_SAME],
           tally[SL_GATE_NOT_OK], args->gate.min_effect * 100.0, args->gate.alpha,
           (args->gate.power > 0.0 ? args->gate.power : 0.8) * 100.0, args->gate.min_effect * 100.0,
           sl_gate_max_cpu_wait(&args->gate) * 100.0, args->gate.max_load, base_dir);
    bool written = !args->unsettled || write_unsettled(args->unsettled, &fresh, index, rows, count);
    sl__table_free(table);
    free(rows);
    free(index);
    sl_record_set_free(&base);
    sl_record_set_free(&fresh);
    if (!written || tally[SL_GATE_SLOWER] > 0)
        return SL__EXIT_FAILED;
    return tally[SL_GATE_INCONCLUSIVE] > 0 ? EXIT_INCONCLUSIVE : SL__EXIT_OK;
}

/* --- counts --------------------------------------------------------------------- */

typedef struct count_row {
    char scenario[16], variant[32], adapter[32];
    sl_gate_counts counts;
} count_row;

/* The rows of a ci/gate-counts.py file; false, with the file and line
 * named, for anything else. */
static bool read_counts(const char *path, count_row **rows, int *count)
{
    char *text = NULL;
    size_t size = 0;
    sl_err err = {0};
    *rows = NULL;
    *count = 0;
    if (sl_read_file(path, &text, &size, &err) != SL_OK) {
        sl__cli_error("check", "%s", err.msg);
        return false;
    }
    int capacity = 0, line_number = 0;
    bool ok = true;
    for (char *line = strtok(text, "\n"); line && ok; line = strtok(NULL, "\n")) {
        line_number++;
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (*count == capacity) {
            capacity = capacity ? 2 * capacity : 32;
            count_row *grown = realloc(*rows, (size_t)capacity * sizeof *grown);
            if (!grown) {
                sl__cli_error("check", "%s: out of memory", path);
                ok = false;
                break;
            }
            *rows = grown;
        }
        count_row *r = &(*rows)[*count];
        long long batches = 0;
        int fields = sscanf(line, "%15s %31s %31s %lld %lf %lf %lf", r->scenario, r->variant, r->adapter, &batches,
                            &r->counts.instructions, &r->counts.d1_misses, &r->counts.ll_misses);
        if (fields != 7 || batches <= 0 || !(r->counts.instructions > 0.0) || r->counts.d1_misses < 0.0 ||
            r->counts.ll_misses < 0.0) {
            sl__cli_error("check",
                          "%s: line %d is not 'scenario variant adapter batches instructions d1_misses "
                          "ll_misses' with counts per batch (ci/gate-counts.py writes them)",
                          path, line_number);
            ok = false;
        } else {
            (*count)++;
        }
    }
    free(text);
    if (ok && *count == 0) {
        sl__cli_error("check", "%s: no counts", path);
        ok = false;
    }
    return ok;
}

static int check_counts(const check_args *args)
{
    count_row *base = NULL, *fresh = NULL;
    int nbase = 0, nfresh = 0;
    if (!read_counts(args->counts_base, &base, &nbase) || !read_counts(args->counts_new, &fresh, &nfresh)) {
        free(base);
        free(fresh);
        return SL__EXIT_FAILED;
    }
    static const char *const headers[] = {"scenario",        "variant",   "adapter",   "base instr/batch",
                                          "new instr/batch", "D1 misses", "LL misses", "decided by"};
    static const sl__align align[] = {SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__LEFT};
    sl__table *table = sl__table_new(8, headers, align);
    int slower = 0, compared = 0, missing = 0;
    for (int i = 0; i < nfresh; i++) {
        const count_row *n = &fresh[i];
        const count_row *b = NULL;
        for (int j = 0; j < nbase && !b; j++)
            if (strcmp(base[j].scenario, n->scenario) == 0 && strcmp(base[j].variant, n->variant) == 0 &&
                strcmp(base[j].adapter, n->adapter) == 0)
                b = &base[j];
        char bi[32] = "-", ni[32], d1[64] = "-", ll[64] = "-", rule[200];
        snprintf(ni, sizeof ni, "%.0f", n->counts.instructions);
        if (!b) {
            snprintf(rule, sizeof rule, "not ok: new (no base count)");
            missing++;
        } else {
            compared++;
            snprintf(bi, sizeof bi, "%.0f", b->counts.instructions);
            snprintf(d1, sizeof d1, "%.0f -> %.0f", b->counts.d1_misses, n->counts.d1_misses);
            snprintf(ll, sizeof ll, "%.0f -> %.0f", b->counts.ll_misses, n->counts.ll_misses);
            slower +=
                sl_gate_compare_counts(&b->counts, &n->counts, &args->counts, rule, sizeof rule) == SL_GATE_SLOWER;
        }
        const char *cells[] = {n->scenario, n->variant, n->adapter, bi, ni, d1, ll, rule};
        sl__table_add_row(table, cells);
    }
    sl__table_print(table, stdout, 0);
    printf("\n%d rows compared, %d slower, %d new (slower per batch: instructions +%.0f%% and +%.0f, D1 misses "
           "+%.0f%% and %.1f%% of the instructions, LL misses +%.0f%% and %.1f%%)\n",
           compared, slower, missing, args->counts.max_instructions * 100.0, args->counts.min_instructions,
           args->counts.max_d1 * 100.0, args->counts.min_miss_share * 100.0, args->counts.max_ll * 100.0,
           args->counts.min_ll_share * 100.0);
    sl__table_free(table);
    free(base);
    free(fresh);
    return slower ? SL__EXIT_FAILED : SL__EXIT_OK;
}

int sl__cmd_check(int argc, char **argv)
{
    check_args args;
    parse_args(argc, argv, &args);
    return args.counts_base ? check_counts(&args) : check_wall_time(&args);
}
