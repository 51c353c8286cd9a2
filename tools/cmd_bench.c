/* `sluice bench`: runs the selected scenario variants on the selected
 * adapters, writes one timing record per run and a summary table. */
#include <math.h>
#include <stdarg.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "exports.h"
#include "launch.h"
#include "sluice/peer_rank.h"
#include "sluice/session.h"
#include "sluice/stats.h"

static const char usage[] =
    "usage: sluice bench [options]\n"
    "\n"
    "Runs each selected scenario variant on each selected adapter, writes one\n"
    "timing record per run to <output-dir>/<profile>/ and prints a summary.\n"
    "\n"
    "options:\n"
    "  --profile ci|full|gpu      sizes, batch counts and back end (default ci)\n"
    "  --scenarios LIST           scenario ids, 'gate' or 'all', comma-separated (default all)\n"
    "  --variants LIST            keep only these variants of the selected scenarios\n"
    "  --adapters LIST            adapters to run, comma-separated (default all: sluice's own;\n"
    "                             'peers' adds every peer:<name>, docs/peers.md)\n"
    "  --repetitions N            fresh runs per record; the median is kept (default: profile's)\n"
    "  --warmup N                 batches run before measuring (default: profile's)\n"
    "  --batches N                measured batches per repetition (default: profile's)\n"
    "  --workers N                prefetch workers for adapters that use them (default 0)\n"
    "  --kernels NAME             the kernel table behind iter and fused: cpu-generic, cpu-avx2,\n"
    "                             cpu-avx512 (default: the fastest this CPU runs; also the\n"
    "                             environment variable SLUICE_KERNELS)\n"
    "  --threads N|auto           threads that may split each batch in fused (default auto: the\n"
    "                             CPUs this process may use, from its affinity mask and cgroup\n"
    "                             quota); fused splits a batch only when that pays, and records\n"
    "                             how many it split (split_fraction)\n"
    "  --output-dir DIR           where records go (default records)\n"
    "  --seed N                   fixture and pipeline seed (default 42)\n"
    "  --quiet                    no progress output\n"
    "  --junit FILE               also write the runs as JUnit XML (a mismatch is a failure,\n"
    "                             a failed run an error)\n"
    "  --format table|gbench      what goes to stdout: the summary table (default) or Google\n"
    "                             Benchmark's JSON, which its compare.py and benchmark trackers read\n"
    "  --no-probes                skip the memcpy, roofline and gather probes (for instruction\n"
    "                             counts under valgrind, where they would only cost time)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Every adapter's output over the measured batches is compared with the reference's\n"
    "before its speed is reported: a difference is outcome 'mismatch', never ranked.\n"
    "\n"
    "Distributed scenarios (DIST-1, DIST-2) run one rank per process when started by\n"
    "mpirun or srun: `mpirun -np 4 sluice bench --scenarios DIST-1`. Each rank loads its\n"
    "shard, rank 0 checks the gathered shards and writes one record per adapter with\n"
    "every rank's latency; the other scenarios are left out of such a job. Alone, the\n"
    "same command runs them as one rank (docs/distributed.md).\n"
    "\n"
    "exit status: 0 when every run was ok, excluded, skipped or unavailable; 1 when any\n"
    "failed or mismatched; 2 for a bad command line.\n";

typedef struct bench_args {
    sl_profile profile;
    const char *scenarios;
    const char *variants;
    const char *adapters;
    int repetitions;
    int64_t warmup;
    int64_t batches;
    int workers;
    int threads;
    const sl_kernel_table *kernels;
    bool no_probes;
    const char *junit;
    bool gbench;
    const char *output_dir;
    uint64_t seed;
    bool quiet;
} bench_args;

static void parse_args(int argc, char **argv, bench_args *args, sl__selection *selection)
{
    const char *kernels_name = NULL;
    *args = (bench_args){.profile = SL_PROFILE_CI, .warmup = -1, .output_dir = "records", .seed = 42};
    sl__cli cli = sl__cli_start("bench", argc, argv);
    const char *value;
    while (sl__cli_next(&cli)) {
        if (sl__cli_is_help(&cli)) {
            fputs(usage, stdout);
            exit(SL__EXIT_OK);
        } else if (sl__cli_option(&cli, "--profile", &value)) {
            args->profile = sl__cli_profile(&cli, "--profile", value);
        } else if (sl__cli_option(&cli, "--scenarios", &value)) {
            args->scenarios = value;
        } else if (sl__cli_option(&cli, "--variants", &value)) {
            args->variants = value;
        } else if (sl__cli_option(&cli, "--adapters", &value)) {
            args->adapters = value;
        } else if (sl__cli_option(&cli, "--repetitions", &value)) {
            args->repetitions = (int)sl__cli_int(&cli, "--repetitions", value, 1, SL_RECORD_MAX_REPETITIONS);
        } else if (sl__cli_option(&cli, "--warmup", &value)) {
            args->warmup = sl__cli_int(&cli, "--warmup", value, 0, 1000000);
        } else if (sl__cli_option(&cli, "--batches", &value)) {
            args->batches = sl__cli_int(&cli, "--batches", value, 1, 10000000);
        } else if (sl__cli_option(&cli, "--workers", &value)) {
            args->workers = (int)sl__cli_int(&cli, "--workers", value, 0, 1024);
        } else if (sl__cli_option(&cli, "--kernels", &value)) {
            kernels_name = value;
        } else if (sl__cli_option(&cli, "--threads", &value)) {
            /* 0 is auto, resolved once every option is read. */
            args->threads =
                strcmp(value, "auto") == 0 ? 0 : (int)sl__cli_int(&cli, "--threads", value, 1, SL_FUSED_MAX_THREADS);
        } else if (sl__cli_option(&cli, "--output-dir", &value)) {
            /* Records go to DIR/<profile>/<name of up to 255 bytes>, which
             * must fit a path; a longer DIR was once cut short silently. */
            if (strlen(value) > SL__MAX_OUTPUT_DIR)
                sl__cli_usage_error(&cli, "option --output-dir: the path is %zu characters; at most %d fit a record's "
                                          "path",
                                    strlen(value), SL__MAX_OUTPUT_DIR);
            args->output_dir = value;
        } else if (sl__cli_option(&cli, "--seed", &value)) {
            args->seed = sl__cli_u64(&cli, "--seed", value);
        } else if (sl__cli_option(&cli, "--junit", &value)) {
            args->junit = value;
        } else if (sl__cli_option(&cli, "--format", &value)) {
            if (strcmp(value, "gbench") != 0 && strcmp(value, "table") != 0)
                sl__cli_usage_error(&cli, "option --format: '%s' is not table or gbench", value);
            args->gbench = strcmp(value, "gbench") == 0;
        } else if (sl__cli_flag(&cli, "--no-probes")) {
            args->no_probes = true;
        } else if (sl__cli_flag(&cli, "--quiet")) {
            args->quiet = true;
        } else {
            sl__cli_unknown(&cli);
        }
    }
    /* Names are checked after every option is read, so that --variants is
     * matched against the scenarios selected wherever --scenarios appears. */
    sl__cli_select(&cli, args->scenarios, args->variants, args->adapters, selection);
    /* The table is chosen once, here, and handed to every run. */
    args->kernels = sl__cli_kernels(&cli, kernels_name);
    /* auto, the default: the CPUs this process may use, read once. */
    if (args->threads == 0) {
        int usable = sl_available_cpus();
        args->threads = usable < SL_FUSED_MAX_THREADS ? usable : SL_FUSED_MAX_THREADS;
    }
}

/* --- progress ------------------------------------------------------------------ */

/* On a terminal, one line rewritten in place; otherwise one line per run, so
 * CI logs stay readable. */
typedef struct progress {
    bool quiet;
    bool tty;
    bool line_open;
} progress;

static void progress_clear(progress *p)
{
    if (p->line_open) {
        fputs("\r\033[K", stderr);
        p->line_open = false;
    }
}

static void progress_step(progress *p, const sl_session_step *step)
{
    if (p->quiet) {
        return;
    }
    const char *scenario = step->scenario->id, *variant = step->variant->name, *adapter = step->adapter->name;
    if (p->tty) {
        fprintf(stderr, "\r\033[K[%d/%d] %s/%s %s", step->index, step->total, scenario, variant, adapter);
        p->line_open = true;
    } else {
        fprintf(stderr, "[%d/%d] %s/%s %s\n", step->index, step->total, scenario, variant, adapter);
    }
    fflush(stderr);
}

/* Informational lines (skips) are progress and obey --quiet; errors do not. */
static void progress_note(progress *p, bool is_error, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void progress_note(progress *p, bool is_error, const char *fmt, ...)
{
    if (p->quiet && !is_error) {
        return;
    }
    progress_clear(p);
    va_list ap;
    va_start(ap, fmt);
    fputs(is_error ? "sluice bench: " : "", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* --- the summary ------------------------------------------------------------------ */

typedef struct summary_row {
    char scenario[16];
    char variant[32];
    char adapter[32];
    /* A peer's framework and version from its hello; empty for sluice's own. */
    char framework[96];
    sl_record_outcome outcome;
    char equivalence[32];
    char reason[256];
    double elements_per_s;
    double p50_ns;
    double p99_ns;
    double fraction_of_memcpy;
    double fraction_of_roofline;
    int64_t threads;
    double split_fraction;     /* NAN where the record has none (one thread) */
    double ci_half_width;      /* of the pooled median, as a fraction of it */
    bool noisy;
    /* The scenario's own figures (its metrics hook), "name value unit; ...". */
    char scenario_metrics[512];
} summary_row;

typedef struct summary {
    summary_row *rows;
    int count;
    int capacity;
    int failed;
    int mismatched;
} summary;

static const double *find_metric(const sl_record *record, const char *name)
{
    for (int i = 0; i < record->nmetrics; i++) {
        if (strcmp(record->metrics[i].name, name) == 0) {
            return &record->metrics[i].value;
        }
    }
    return NULL;
}

/* "checkpoint_bytes 179 B; checkpoint_save_ns 7.11e+05 ns": four
 * significant digits, since these figures range from fractions to bytes. */
static void format_scenario_metrics(const sl_record *record, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < record->nmetrics && used < size; i++) {
        const sl_record_metric *m = &record->metrics[i];
        if (m->scope != SL_METRIC_SCENARIO)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s %.4g%s%s", used ? "; " : "", m->name, m->value,
                                 m->unit[0] ? " " : "", m->unit);
    }
}

static void summary_add(summary *s, const sl_record *record)
{
    if (s->count == s->capacity) {
        s->capacity = s->capacity > 0 ? 2 * s->capacity : 32;
        summary_row *grown = realloc(s->rows, (size_t)s->capacity * sizeof *grown);
        if (grown == NULL) {
            fputs("sluice: out of memory\n", stderr);
            exit(SL__EXIT_FAILED);
        }
        s->rows = grown;
    }
    summary_row *row = &s->rows[s->count++];
    *row = (summary_row){.outcome = record->outcome, .elements_per_s = NAN, .p50_ns = NAN, .p99_ns = NAN,
                         .fraction_of_memcpy = NAN, .fraction_of_roofline = NAN, .threads = record->threads,
                         .split_fraction = NAN, .ci_half_width = NAN};
    memcpy(row->scenario, record->scenario, sizeof row->scenario);
    memcpy(row->variant, record->variant, sizeof row->variant);
    memcpy(row->adapter, record->adapter, sizeof row->adapter);
    memcpy(row->framework, record->framework, sizeof row->framework);
    memcpy(row->equivalence, record->equivalence, sizeof row->equivalence);
    memcpy(row->reason, record->reason, sizeof row->reason);
    /* A run on another back end than the profile asks for is legitimate (the
     * gpu profile still measures the CPU adapters) but must not pass
     * unnoticed in a table read for GPU numbers. */
    if (record->outcome == SL_RECORD_OK && strcmp(record->backend_active, record->backend_requested) != 0) {
        snprintf(row->reason, sizeof row->reason, "ran on %s; the %s profile asks for %s", record->backend_active,
                 record->profile, record->backend_requested);
    }
    if (record->outcome == SL_RECORD_OK && record->latency_ns != NULL && record->measured_batches > 0) {
        sl_latency_summary latency;
        sl_latency_summarize(record->latency_ns, (size_t)record->measured_batches, &latency);
        row->elements_per_s = sl_record_elements_per_s(record);
        row->p50_ns = latency.p50_ns;
        sl_median_ci ci;
        if (sl_record_latency_ci(record, &ci)) {
            /* The pooled median over every repetition, with its interval. */
            row->p50_ns = ci.median;
            row->ci_half_width = (ci.hi - ci.lo) / 2.0 / ci.median;
            row->noisy = sl_median_ci_is_noisy(&ci);
            if (row->noisy && row->reason[0] == '\0')
                snprintf(row->reason, sizeof row->reason,
                         "noisy: the 95%% interval of the median is %.1f to %.1f µs, too wide to rank",
                         ci.lo / 1e3, ci.hi / 1e3);
        }
        row->p99_ns = latency.p99_ns;
        const double *fraction = find_metric(record, "fraction_of_memcpy");
        row->fraction_of_memcpy = fraction != NULL ? *fraction : NAN;
        const double *roofline = find_metric(record, "fraction_of_roofline");
        row->fraction_of_roofline = roofline != NULL ? *roofline : NAN;
        const double *split = find_metric(record, "split_fraction");
        row->split_fraction = split != NULL ? *split : NAN;
        format_scenario_metrics(record, row->scenario_metrics, sizeof row->scenario_metrics);
    }
    s->failed += record->outcome == SL_RECORD_FAILED;
    s->mismatched += record->outcome == SL_RECORD_MISMATCH;
}

/* Rates span nine orders of magnitude across scenarios; three significant
 * digits and an SI suffix keep the column narrow and comparable. */
static void format_rate(char *buf, size_t size, double value)
{
    static const char *const suffixes[] = {"", "k", "M", "G", "T"};
    int i = 0;
    if (isnan(value)) {
        snprintf(buf, size, "-");
        return;
    }
    /* Rounding to three digits can carry into the next power of 1000
     * (999.7k prints as 1.00M), so the scale is chosen on the rounded value. */
    while (fabs(value) >= 999.5 && i < 4) {
        value /= 1000.0;
        i++;
    }
    int decimals = fabs(value) < 9.995 ? 2 : fabs(value) < 99.95 ? 1 : 0;
    snprintf(buf, size, "%.*f%s", decimals, value, suffixes[i]);
}

static void format_fixed(char *buf, size_t size, double value, double scale, int decimals, const char *suffix)
{
    if (isnan(value)) {
        snprintf(buf, size, "-");
    } else {
        snprintf(buf, size, "%.*f%s", decimals, value * scale, suffix);
    }
}

/* elements/s of the reference adapter on the same scenario and variant, or
 * NAN when it did not run there. */
static double reference_rate(const summary *s, const summary_row *row)
{
    for (int i = 0; i < s->count; i++) {
        const summary_row *other = &s->rows[i];
        if (strcmp(other->adapter, "reference") == 0 && strcmp(other->scenario, row->scenario) == 0 &&
            strcmp(other->variant, row->variant) == 0 && other->outcome == SL_RECORD_OK) {
            return other->elements_per_s;
        }
    }
    return NAN;
}

/* Shows a ratio that is not ranked (either side noisy) in parentheses:
 * kept for diagnosis, never read as a result. */
static void mark_unranked(char *ratio, size_t size)
{
    if (ratio[0] == '-')
        return;
    char shown[128];
    snprintf(shown, sizeof shown, "(%.100s)", ratio);
    sl__cli_copy(ratio, size, shown);
}

/* The summary's rows as sl_best_peer sees them: the rates the table shows. */
static sl_rank_entry *rank_entries(const summary *s)
{
    sl_rank_entry *entries = calloc(s->count > 0 ? (size_t)s->count : 1, sizeof *entries);
    if (entries == NULL) {
        fputs("sluice: out of memory\n", stderr);
        exit(SL__EXIT_FAILED);
    }
    for (int i = 0; i < s->count; i++) {
        const summary_row *row = &s->rows[i];
        entries[i] = (sl_rank_entry){.scenario = row->scenario, .variant = row->variant, .adapter = row->adapter,
                                     .equivalence = row->equivalence, .outcome = row->outcome,
                                     .elements_per_s = row->elements_per_s, .noisy = row->noisy};
    }
    return entries;
}

static sl__table *summary_table(const summary *s)
{
    static const char *const headers[] = {"scenario", "variant",  "adapter",  "outcome",   "verified",
                                          "threads",  "elements/s", "p50 (µs)", "±95%",    "p99 (µs)",
                                          "vs ref",   "vs best peer", "of memcpy", "of roofline", "note"};
    static const sl__align align[] = {SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__LEFT,  SL__LEFT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__RIGHT, SL__LEFT};
    sl__table *table = sl__table_new(15, headers, align);
    sl_rank_entry *entries = rank_entries(s);
    for (int i = 0; i < s->count; i++) {
        const summary_row *row = &s->rows[i];
        char rate[32], p50[32], p99[32], ratio[32], fraction[32], roofline[32], threads[32], ci[16];
        char adapter[sizeof row->adapter + sizeof row->framework + 4], vs_peer[96];
        format_fixed(ci, sizeof ci, row->ci_half_width, 100.0, 1, "%");
        /* Several threads may split a batch, not must: the share that ran
         * split follows the count, so "2" is never read as "twice the cores". */
        if (isnan(row->split_fraction))
            snprintf(threads, sizeof threads, "%lld", (long long)row->threads);
        else
            snprintf(threads, sizeof threads, "%lld (%.0f%%)", (long long)row->threads, 100.0 * row->split_fraction);
        format_fixed(roofline, sizeof roofline, row->fraction_of_roofline, 1.0, 2, "");
        format_rate(rate, sizeof rate, row->elements_per_s);
        format_fixed(p50, sizeof p50, row->p50_ns, 1e-3, 1, "");
        format_fixed(p99, sizeof p99, row->p99_ns, 1e-3, 1, "");
        format_fixed(ratio, sizeof ratio, row->elements_per_s / reference_rate(s, row), 1.0, 2, "x");
        if (row->noisy)
            mark_unranked(ratio, sizeof ratio);
        int best = -1;
        bool unranked = false;
        format_fixed(vs_peer, sizeof vs_peer, sl_ratio_to_best_peer(entries, s->count, i, &best, &unranked), 1.0,
                     2, "x");
        if (unranked)
            mark_unranked(vs_peer, sizeof vs_peer);
        if (best >= 0) {
            size_t used = strlen(vs_peer);
            snprintf(vs_peer + used, sizeof vs_peer - used, " %s", s->rows[best].adapter);
        }
        snprintf(adapter, sizeof adapter, row->framework[0] ? "%s (%s)" : "%s", row->adapter, row->framework);
        format_fixed(fraction, sizeof fraction, row->fraction_of_memcpy, 1.0, 2, "");
        const char *cells[] = {row->scenario, row->variant, adapter, sl_record_outcome_name(row->outcome),
                               row->equivalence, threads, rate, p50, ci, p99, ratio, vs_peer, fraction, roofline,
                               row->reason};
        sl__table_add_row(table, cells);
    }
    free(entries);
    return table;
}

/* The scenarios' own figures, one row per run that has any; NULL when no
 * run has. */
static sl__table *scenario_metrics_table(const summary *s)
{
    static const char *const headers[] = {"scenario", "variant", "adapter", "scenario metrics"};
    static const sl__align align[] = {SL__LEFT, SL__LEFT, SL__LEFT, SL__LEFT};
    sl__table *table = NULL;
    for (int i = 0; i < s->count; i++) {
        const summary_row *row = &s->rows[i];
        if (!row->scenario_metrics[0])
            continue;
        if (!table)
            table = sl__table_new(4, headers, align);
        const char *cells[] = {row->scenario, row->variant, row->adapter, row->scenario_metrics};
        sl__table_add_row(table, cells);
    }
    return table;
}

/* The Markdown summary states how the numbers were taken, so that a file
 * found later can be read without the terminal session that made it. */
static bool write_markdown(const sl__table *table, const sl__table *metrics, const sl_environment *env,
                           const char *profile, int argc, char **argv, const char *path)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (out == NULL) {
        sl__cli_error("bench", "cannot build %s: out of memory", path);
        return false;
    }
    fprintf(out, "# sluice bench, %s profile\n\n", profile);
    fputs("- command: `sluice", out);
    for (int i = 0; i < argc; i++) {
        fprintf(out, strpbrk(argv[i], " \t'\"") != NULL ? " '%s'" : " %s", argv[i]);
    }
    fputs("`\n", out);
    fprintf(out, "- time (UTC): %s\n", env->time_utc);
    fprintf(out, "- commit: %s\n", env->git_commit);
    fprintf(out, "- CPU: %s (%d logical CPUs)\n", env->cpu_model, env->cpu_cores);
    fprintf(out, "- compiler: %s, %s\n", env->compiler, env->compile_flags);
    fprintf(out, "- kernel: %s\n\n", env->kernel);
    sl__table_print_markdown(table, out);
    fputs("\nelements/s and latencies are those of the median repetition; 'vs ref' is elements/s over\n"
          "the reference adapter's on the same variant; 'of memcpy' is output bytes/s over plain\n"
          "memcpy bandwidth for blocks of one batch's size; 'of roofline' is elements/s over the\n"
          "roofline probe's (the scenario's op chain on one cache-resident batch, one fused thread;\n"
          "records also hold fraction_of_gather, against just fetching the batch's source bytes);\n"
          "'threads' is how many threads may split each batch, with the share of measured batches\n"
          "that ran split in parentheses; p50 is the median batch latency over\n"
          "every repetition's measured batches and '±95%' half the width of its 95% interval (order\n"
          "statistics, docs/records.md), as a fraction of it. A row whose interval is wider than 10%\n"
          "of its median is noisy: its ratio is shown in parentheses and not ranked. 'verified' is how\n"
          "the output was held to the reference (bitwise, within a tolerance, statistical, mismatch);\n"
          "'vs best peer' is a sluice adapter's elements/s over the fastest equivalent peer's on the\n"
          "same variant (a peer:<name> row that ran ok and is bitwise, within a tolerance or\n"
          "statistically equivalent; a mismatched, failed or timed-out peer is never ranked), named;\n"
          "in parentheses when either side is noisy (only noisy peers: the fastest of them), '-'\n"
          "when no peer qualifies. A peer's adapter is followed by its framework and version.\n",
          out);
    if (metrics) {
        fputs("\n## Scenario metrics\n\nEach scenario's own figures (docs/scenarios.md lists them):\n\n", out);
        sl__table_print_markdown(metrics, out);
    }
    fclose(out);

    sl_err err = {0};
    bool ok = sl_write_file_atomic(path, text, size, &err) == SL_OK;
    if (!ok) {
        sl__cli_error("bench", "%s", err.msg);
    }
    free(text);
    return ok;
}

/* --- what the session reports ------------------------------------------------------ */

/* The presentation of one session: its progress lines, its summary rows and
 * the records the exports read back. */
typedef struct bench_report {
    const bench_args *args;
    const char *profile;
    /* The job's ranks: 1 alone, the launcher's world under mpirun or srun. */
    int ranks;
    progress progress;
    summary summary;
    int write_errors;
    /* The records this invocation wrote, for the exports: the folder may
     * also hold records of earlier runs. */
    sl_record *written;
    int nwritten, written_capacity;
} bench_report;

/* One line per distributed record: the figures a reader of a job wants
 * first, from the record's scenario metrics (docs/records.md). Other
 * records have none of them and print nothing. */
static void note_ranks(bench_report *report, const sl_record *record)
{
    const double *ranks = find_metric(record, "ranks"), *processes = find_metric(record, "processes");
    const double *slowest = find_metric(record, "slowest_rank"), *wall = find_metric(record, "slowest_rank_ns");
    if (record->outcome != SL_RECORD_OK || !ranks || !processes || !slowest || !wall)
        return;
    char line[512];
    int used = snprintf(line, sizeof line, "%s/%s %s: %.0f rank%s in %.0f process%s; p50 per rank (µs):",
                        record->scenario, record->variant, record->adapter, *ranks, *ranks == 1 ? "" : "s",
                        *processes, *processes == 1 ? "" : "es");
    for (int r = 0; r < SL_DIST_RANK_METRICS && used > 0 && (size_t)used < sizeof line; r++) {
        char name[48];
        snprintf(name, sizeof name, "rank_%d_p50_ns", r);
        const double *p50 = find_metric(record, name);
        if (!p50)
            break;
        used += snprintf(line + used, sizeof line - (size_t)used, " %.1f", *p50 / 1e3);
    }
    const double *rss = find_metric(record, "rank_peak_rss_max_bytes"), *fixture = find_metric(record, "rank_fixture_max_bytes");
    const double *startup = find_metric(record, "rank_startup_max_ns");
    char cost[160] = "";
    if (rss && fixture && startup)
        snprintf(cost, sizeof cost, "; per rank at most %.1f MiB peak, %.1f MiB of fixture, %.0f ms to start",
                 *rss / 1048576.0, *fixture / 1048576.0, *startup / 1e6);
    progress_note(&report->progress, false, "%s; slowest rank %.0f, %.2f ms measured%s", line, *slowest, *wall / 1e6,
                  cost);
}

/* Reads a written record back, so the exports see exactly what the record
 * file says. */
static void keep_written(bench_report *report, const char *path)
{
    if (report->nwritten == report->written_capacity) {
        report->written_capacity = report->written_capacity ? 2 * report->written_capacity : 32;
        sl_record *grown = realloc(report->written, (size_t)report->written_capacity * sizeof *grown);
        if (!grown) {
            fputs("sluice: out of memory\n", stderr);
            exit(SL__EXIT_FAILED);
        }
        report->written = grown;
    }
    sl_err err = {0};
    if (sl_record_read(path, &report->written[report->nwritten], NULL, &err) == SL_OK)
        report->nwritten++;
}

static void on_step(void *user, const sl_session_step *step)
{
    bench_report *report = user;
    progress_step(&report->progress, step);
}

static void on_note(void *user, const sl_session_note *note)
{
    bench_report *report = user;
    const char *id = note->scenario->id, *variant = note->variant->name;
    switch (note->kind) {
    case SL_SESSION_NOT_AT_SIZE:
        progress_note(&report->progress, false, "%s/%s does not run at %s size; skipped", id, variant, report->profile);
        break;
    case SL_SESSION_NOT_IN_JOB:
        progress_note(&report->progress, false, "%s/%s is not distributed; a job of %d ranks leaves it out", id,
                      variant, report->ranks);
        break;
    case SL_SESSION_NOT_BUILT:
    case SL_SESSION_NO_MESH:
        progress_note(&report->progress, note->is_error, "%s/%s %s: %s", id, variant,
                      !note->is_error                      ? "skipped"
                      : note->kind == SL_SESSION_NOT_BUILT ? "could not be built"
                                                           : "has no mesh",
                      note->message);
        break;
    case SL_SESSION_NO_REFERENCE:
        progress_note(&report->progress, true, "%s/%s: cannot compute the reference output: %s", id, variant,
                      note->message);
        break;
    case SL_SESSION_RUN_FAILED: progress_note(&report->progress, true, "%s", note->message); break;
    }
}

static void on_record(void *user, const sl_record *record, const char *path, const sl_err *write_err)
{
    bench_report *report = user;
    note_ranks(report, record);
    if (!path) {
        progress_clear(&report->progress);
        sl__cli_error("bench", "%s", write_err->msg);
        report->write_errors++;
    } else if (report->args->junit || report->args->gbench) {
        keep_written(report, path);
    }
    summary_add(&report->summary, record);
}

/* --- the session ------------------------------------------------------------------- */

/* The selected variants in the registry's order with their sizes at the
 * profile: the session, in the layer below the registry, takes them
 * resolved. */
static sl_session_variant *selected_variants(const sl__selection *selection, const bench_args *args, int *count)
{
    sl_build_options build;
    sl_build_options_init(&build, args->profile, args->seed);
    size_t most = 0;
    for (int s = 0; s < selection->nscenarios; s++)
        most += (size_t)sl_scenario_at(s)->nvariants;
    sl_session_variant *variants = sl__cli_alloc(most * sizeof *variants);
    *count = 0;
    for (int s = 0; s < selection->nscenarios; s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++)
            if (sl__selection_has_variant(selection, s, v))
                variants[(*count)++] = (sl_session_variant){
                    .scenario = scenario,
                    .variant = &scenario->variants[v],
                    .n = sl_variant_n(&scenario->variants[v], &build),
                    .batch_size = sl_variant_batch_size(&scenario->variants[v], &build),
                };
    }
    return variants;
}

static const sl_adapter **selected_adapters(const sl__selection *selection, int *count)
{
    const sl_adapter **adapters = sl__cli_alloc((size_t)selection->nadapters * sizeof *adapters);
    *count = 0;
    for (int a = 0; a < selection->nadapters; a++)
        if (selection->adapters[a])
            adapters[(*count)++] = sl_adapter_at(a);
    return adapters;
}

static void session_options(const bench_args *args, const sl_comm *world, bench_report *report,
                            sl_session_options *options)
{
    sl_session_options_init(options, args->profile, args->seed);
    options->bench.repetitions = args->repetitions;
    options->bench.warmup_batches = args->warmup;
    options->bench.measured_batches = args->batches;
    options->bench.workers = args->workers;
    options->bench.threads = args->threads;
    options->bench.kernels = args->kernels;
    options->bench.skip_probes = args->no_probes;
    options->output_dir = args->output_dir;
    options->world = world;
    options->instantiate = sl_scenario_instantiate;
    options->instance_free = sl_scenario_instance_free;
    options->callbacks =
        (sl_session_callbacks){.user = report, .on_step = on_step, .on_note = on_note, .on_record = on_record};
}

/* --- the end of a session ------------------------------------------------------------ */

/* The summary and the closing line, on stdout, or on stderr when stdout
 * carries Google Benchmark's JSON. */
static void print_summary(const bench_report *report, const sl__table *table, const sl__table *metrics, const char *dir,
                          const char *summary_path, bool wrote_summary)
{
    /* With --format gbench, stdout carries only the JSON, so that it can be
     * redirected into a file compare.py reads; the table goes to stderr. */
    FILE *human = report->args->gbench ? stderr : stdout;
    sl__table_print(table, human, 0);
    if (metrics) {
        fputc('\n', human);
        sl__table_print(metrics, human, 0);
    }
    /* A record that could not be written is a failure too: its run is not
     * on disk for anyone to check. */
    int count = report->summary.count;
    fprintf(human, "\n%d run%s, %d failed, %d mismatched", count, count == 1 ? "" : "s",
            report->summary.failed + report->write_errors, report->summary.mismatched);
    if (report->write_errors > 0) {
        fprintf(human, " (%d record%s could not be written)", report->write_errors,
                report->write_errors == 1 ? "" : "s");
    }
    fprintf(human, "; records in %s/", dir);
    if (wrote_summary) {
        fprintf(human, ", summary in %s", summary_path);
    }
    fputc('\n', human);
}

/* The runs as JUnit XML in the --junit file; false when it could not be
 * written. */
static bool write_junit(const bench_report *report)
{
    char *xml = NULL;
    size_t xml_size = 0;
    sl_err err = {0};
    FILE *out = open_memstream(&xml, &xml_size);
    if (out) {
        sl__export_junit(report->written, report->nwritten, out);
        fclose(out);
    }
    bool ok = out && sl_write_file_atomic(report->args->junit, xml, xml_size, &err) == SL_OK;
    if (!ok)
        sl__cli_error("bench", "cannot write %s: %s", report->args->junit, out ? err.msg : "out of memory");
    free(xml);
    return ok;
}

/* Rank 0's presentation once the session ran: the summary table and its
 * Markdown file, the exports, and the exit status. */
static int finish_report(bench_report *report, const sl_session *session, int argc, char **argv)
{
    progress_clear(&report->progress);
    const char *dir = sl_session_dir(session);
    sl__table *table = summary_table(&report->summary);
    sl__table *metrics = scenario_metrics_table(&report->summary);
    char summary_path[4096 + 16];
    snprintf(summary_path, sizeof summary_path, "%s/summary.md", dir);
    bool wrote_summary =
        write_markdown(table, metrics, sl_session_environment(session), report->profile, argc, argv, summary_path);
    print_summary(report, table, metrics, dir, summary_path, wrote_summary);
    if (report->args->gbench) {
        sl__export_gbench(report->written, report->nwritten, sl_session_environment(session), stdout);
    }
    if (report->args->junit && !write_junit(report)) {
        report->write_errors++;
    }
    for (int i = 0; i < report->nwritten; i++) {
        sl_record_release(&report->written[i]);
    }
    free(report->written);
    sl__table_free(table);
    if (metrics)
        sl__table_free(metrics);
    bool failed =
        report->summary.failed > 0 || report->summary.mismatched > 0 || report->write_errors > 0 || !wrote_summary;
    free(report->summary.rows);
    return failed ? SL__EXIT_FAILED : SL__EXIT_OK;
}

/* The watchdog's limit for a job's collective steps: SLUICE_DIST_TIMEOUT_S
 * (whole seconds, at least 1), else the profile's default. A value that is
 * not a number is a usage error, as a bad option is: a job that silently
 * ran with another limit would hang or abort where its user did not expect. */
static double watchdog_limit(sl_profile profile)
{
    const char *text = getenv("SLUICE_DIST_TIMEOUT_S");
    if (!text)
        return sl_dist_watchdog_default_s(profile);
    char *end = NULL;
    errno = 0;
    long long seconds = text[0] >= '0' && text[0] <= '9' ? strtoll(text, &end, 10) : 0;
    if (!end || *end != '\0' || errno == ERANGE || seconds < 1 || seconds > 7 * 24 * 3600) {
        sl__cli_error("bench", "environment variable SLUICE_DIST_TIMEOUT_S: '%s' is not a number of seconds from "
                               "1 to 604800",
                      text);
        exit(SL__EXIT_USAGE);
    }
    return (double)seconds;
}

int sl__cmd_bench(int argc, char **argv)
{
    bench_args args;
    sl__selection selection;
    parse_args(argc, argv, &args, &selection);

    sl_err err = {0};
    sl_comm *launched = NULL;
    char launch_note[256];
    if (sl__launch_start(&launched, launch_note, sizeof launch_note, &err) != SL_OK) {
        sl__cli_error("bench", "%s", err.msg);
        sl__selection_free(&selection);
        return SL__EXIT_FAILED;
    }
    if (launched)
        launched->watchdog_s = watchdog_limit(args.profile);
    /* Only rank 0 of a job prints; the other ranks only take part in the
     * distributed scenarios, and what they measure reaches its records. */
    bool root = !launched || launched->rank == 0;
    bench_report report = {
        .args = &args, .profile = sl_profile_get(args.profile)->name, .ranks = launched ? launched->world : 1};
    report.progress = (progress){.quiet = args.quiet || !root, .tty = isatty(STDERR_FILENO) != 0};
    if (root && launch_note[0])
        progress_note(&report.progress, false, "%s", launch_note);

    int nvariants = 0, nadapters = 0;
    sl_session_variant *variants = selected_variants(&selection, &args, &nvariants);
    const sl_adapter **adapters = selected_adapters(&selection, &nadapters);
    sl__selection_free(&selection);
    sl_session_options options;
    session_options(&args, launched, &report, &options);
    options.variants = variants;
    options.nvariants = nvariants;
    options.adapters = adapters;
    options.nadapters = nadapters;
    sl_session *session = NULL;
    int status = SL__EXIT_OK;
    if (sl_session_create(&options, &session, &err) != SL_OK) {
        sl__cli_error("bench", "%s", err.msg);
        free(variants);
        free(adapters);
        /* On rank 0 of a job, an early failure returns without leaving the
         * job: the launcher then ends every rank instead of leaving them
         * waiting for rank 0 at their first collective. */
        return SL__EXIT_FAILED;
    }
    if (sl_session_run(session, &err) != SL_OK) {
        sl__cli_error("bench", "%s", err.msg);
        status = SL__EXIT_FAILED;
    } else if (root) {
        status = finish_report(&report, session, argc, argv);
    }
    sl_session_free(session);
    free(variants);
    free(adapters);
    if (launched)
        sl__launch_end(launched);
    return status;
}
