/* `sluice bench`: runs the selected scenario variants on the selected
 * adapters, writes one timing record per run and a summary table. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "exports.h"
#include "launch.h"
#include "sluice/bench/session.h"
#include "sluice/core/timing.h"
#include "summary.h"

/* The most points one --batch-sizes or --workers-sweep list takes. */
#define SWEEP_MAX_POINTS 16

typedef struct bench_args {
    sl_profile profile;
    const char *scenarios;
    const char *variants;
    const char *adapters;
    int repetitions;
    int rounds;
    int64_t warmup;
    int64_t batches;
    int workers;
    bool workers_given; /* --workers appeared, which a workers sweep replaces */
    /* --batch-sizes: the sweep's points, or none. */
    int64_t batch_sizes[SWEEP_MAX_POINTS];
    int nbatch_sizes;
    /* --workers-sweep: the worker counts of the sweep, or none. */
    int64_t worker_counts[SWEEP_MAX_POINTS];
    int nworker_counts;
    int threads;
    const char *kernels_name; /* --kernels, resolved once every option is read */
    const sl_kernel_table *kernels;
    bool no_probes;
    bool instrument;
    const char *junit;
    const char *format; /* --format: "table" or "gbench" */
    bool gbench;
    const char *output_dir;
    uint64_t seed;
    bool quiet;
} bench_args;

/* "16,64,256" appended to values[*count..], each from min to max, none
 * twice: the points of a sweep option (--batch-sizes, --workers-sweep),
 * whose name and what it lists (`what`) every error gives. */
static void parse_sweep(const sl__cli *cli, const char *option, const char *what, const char *list, int64_t min,
                        int64_t max, int64_t *values, int *count)
{
    char token[32];
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof token)
            sl__cli_usage_error(cli, "option %s: '%s' is not a comma-separated list of %s", option, list, what);
        if (*count == SWEEP_MAX_POINTS)
            sl__cli_usage_error(cli, "option %s: at most %d %s, got more in '%s'", option, SWEEP_MAX_POINTS, what,
                                list);
        memcpy(token, p, n);
        token[n] = '\0';
        int64_t value = sl__cli_int(cli, option, token, min, max);
        for (int i = 0; i < *count; i++)
            if (values[i] == value)
                sl__cli_usage_error(cli, "option %s: %lld appears twice in '%s'", option, (long long)value, list);
        values[(*count)++] = value;
        p += n;
        if (*p == '\0')
            break;
    }
}

/* --batch-sizes LIST: the points of the sweep, each from 1 to 2^20. */
static void take_batch_sizes(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    bench_args *a = args;
    parse_sweep(cli, option->name, "batch sizes", value, 1, (int64_t)1 << 20, a->batch_sizes, &a->nbatch_sizes);
}

/* The most prefetch workers --workers and each point of --workers-sweep
 * may ask for. */
#define WORKERS_MAX 1024

/* --workers-sweep LIST: worker counts from 0, as --workers takes them. */
static void take_worker_counts(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    bench_args *a = args;
    parse_sweep(cli, option->name, "worker counts", value, 0, WORKERS_MAX, a->worker_counts, &a->nworker_counts);
}

/* --workers N: noted, so that a workers sweep beside it is refused. */
static void note_workers(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)cli;
    (void)option;
    (void)value;
    ((bench_args *)args)->workers_given = true;
}

/* Records go to DIR/<profile>/<name of up to 255 bytes>, which must fit a
 * path; a longer DIR was once cut short silently. */
static void check_output_dir(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)option;
    (void)args;
    if (strlen(value) > SL__MAX_OUTPUT_DIR)
        sl__cli_usage_error(cli, "option --output-dir: the path is %zu characters; at most %d fit a record's path",
                            strlen(value), SL__MAX_OUTPUT_DIR);
}

static void check_instrument(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)option;
    (void)value;
    (void)args;
    if (!sl_bench_instrument_available())
        sl__cli_usage_error(cli, "option --instrument: this sluice was built without valgrind's "
                                 "valgrind/callgrind.h (install valgrind and configure again)");
}

static const sl__option bench_options[] = {
    {.name = "--profile",
     .arg = "ci|full|gpu",
     .kind = SL__OPTION_PROFILE,
     SL__AT(bench_args, profile),
     .help = "sizes, batch counts and back end (default ci)"},
    {.name = "--scenarios",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(bench_args, scenarios),
     .help = "scenario ids, 'gate' or 'all', comma-separated (default all)"},
    {.name = "--variants",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(bench_args, variants),
     .help = "keep only these variants of the selected scenarios"},
    {.name = "--adapters",
     .arg = "LIST",
     .kind = SL__OPTION_TEXT,
     SL__AT(bench_args, adapters),
     .help = "adapters to run, comma-separated (default all: sluice's own;\n"
             "'peers' adds every peer:<name>, docs/peers.md)"},
    {.name = "--repetitions",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(bench_args, repetitions),
     .min = 1,
     .max = SL_RECORD_MAX_REPETITIONS,
     .help = "fresh runs per record, back to back; the median is kept\n(default: the profile's)"},
    {.name = "--rounds",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(bench_args, rounds),
     .min = 1,
     .max = SL_RECORD_MAX_REPETITIONS,
     .help = "instead of --repetitions: N rounds, each running every adapter of a\n"
             "variant once in turn (A B C, A B C, ...), so that the machine's drift\n"
             "falls on all alike; ratios then take in every round's ratio"},
    {.name = "--warmup",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(bench_args, warmup),
     .min = 0,
     .max = 1000000,
     .help = "batches run before measuring (default: profile's)"},
    {.name = "--batches",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(bench_args, batches),
     .min = 1,
     .max = 10000000,
     .help = "measured batches per repetition (default: profile's)"},
    {.name = "--workers",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(bench_args, workers),
     .handle = note_workers,
     .min = 0,
     .max = WORKERS_MAX,
     .help = "prefetch workers for adapters that use them (default 0)"},
    {.name = "--workers-sweep",
     .arg = "LIST",
     .kind = SL__OPTION_CUSTOM,
     .handle = take_worker_counts,
     .help = "instead of --workers: run each selected variant at each of\n"
             "these worker counts (comma-separated, e.g. 0,1,2,4): one record\n"
             "per point, its variant named <variant>@w<N> (after @bs<N> with\n"
             "--batch-sizes), each held to the reference; only adapters with\n"
             "prefetch workers (iter, peers) use them, fused splits batches\n"
             "by --threads; `sluice report` charts time per element against\n"
             "workers"},
    {.name = "--batch-sizes",
     .arg = "LIST",
     .kind = SL__OPTION_CUSTOM,
     .handle = take_batch_sizes,
     .help = "run each selected variant at each of these batch sizes instead\n"
             "of its own (comma-separated, e.g. 16,64,256): one record per\n"
             "point, its variant named <variant>@bs<N>, each held to the\n"
             "reference at that batch size; `sluice report` charts time\n"
             "per element against batch size"},
    {.name = "--kernels",
     .arg = "NAME",
     .kind = SL__OPTION_TEXT,
     SL__AT(bench_args, kernels_name),
     .help = "the kernel table behind iter and fused: auto (the default: per\n"
             "kernel the fastest table, measured on this machine once and\n"
             "cached; see sluice tune), cpu-generic, cpu-avx2, cpu-avx512-256,\n"
             "cpu-avx512 or reference (also the environment variable\n"
             "SLUICE_KERNELS)"},
    /* 0 is auto, resolved once every option is read. */
    {.name = "--threads",
     .arg = "N|auto",
     .kind = SL__OPTION_INT,
     SL__AT(bench_args, threads),
     .min = 1,
     .max = SL_FUSED_MAX_THREADS,
     .word = "auto",
     .word_value = 0,
     .help = "threads that may split each batch in fused (default auto: the\n"
             "CPUs this process may use, from its affinity mask and cgroup\n"
             "quota); fused splits a batch only when that pays, and records\n"
             "how many it split (split_fraction)"},
    {.name = "--output-dir",
     .arg = "DIR",
     .kind = SL__OPTION_TEXT,
     SL__AT(bench_args, output_dir),
     .handle = check_output_dir,
     .help = "where records go (default records)"},
    {.name = "--seed",
     .arg = "N",
     .kind = SL__OPTION_U64,
     SL__AT(bench_args, seed),
     .help = "fixture and pipeline seed (default 42)"},
    {.name = "--quiet", .kind = SL__OPTION_FLAG, SL__AT(bench_args, quiet), .help = "no progress output"},
    {.name = "--junit",
     .arg = "FILE",
     .kind = SL__OPTION_TEXT,
     SL__AT(bench_args, junit),
     .help = "also write the runs as JUnit XML (a mismatch is a failure,\na failed run an error)"},
    {.name = "--format",
     .arg = "table|gbench",
     .kind = SL__OPTION_CHOICE,
     SL__AT(bench_args, format),
     .help = "what goes to stdout: the summary table (default) or Google\n"
             "Benchmark's JSON, which its compare.py and benchmark trackers read"},
    {.name = "--no-probes",
     .kind = SL__OPTION_FLAG,
     SL__AT(bench_args, no_probes),
     .help = "skip the memcpy, roofline and gather probes (for instruction\n"
             "counts under valgrind, where they would only cost time)"},
    {.name = "--instrument",
     .kind = SL__OPTION_FLAG,
     SL__AT(bench_args, instrument),
     .handle = check_instrument,
     .help = "under valgrind --tool=callgrind --instr-atstart=no: count only\n"
             "the adapters' runs, dumping the counts after every batch\n"
             "(ci/gate.sh reads them with ci/gate-counts.py)"},
};

const sl__command_spec sl__bench_spec = {
    .name = "bench",
    .synopsis = "sluice bench [options]",
    .about = "Runs each selected scenario variant on each selected adapter, writes one\n"
             "timing record per run to <output-dir>/<profile>/ and prints a summary.",
    .options = bench_options,
    .noptions = SL__COUNT(bench_options),
    .epilogue = "Every adapter's output over the measured batches is compared with the reference's\n"
                "before its speed is reported: a difference is outcome 'mismatch', never ranked.\n"
                "\n"
                "Buffers of 2 MiB or more (sources, batches, caches) are advised for transparent huge\n"
                "pages; SLUICE_HUGEPAGES=0 turns that off, to measure without them. Records say what\n"
                "the machine gave (environment.anon_huge_bytes).\n"
                "\n"
                "Distributed scenarios (DIST-1, DIST-2) run one rank per process when started by\n"
                "mpirun or srun: `mpirun -np 4 sluice bench --scenarios DIST-1`. Each rank loads its\n"
                "shard, rank 0 checks the gathered shards and writes one record per adapter with\n"
                "every rank's latency; the other scenarios are left out of such a job. Alone, the\n"
                "same command runs them as one rank (docs/distributed.md).\n"
                "\n"
                "exit status: 0 when every run was ok, excluded, skipped or unavailable; 1 when any\n"
                "failed or mismatched; 2 for a bad command line.",
};

static void parse_args(int argc, char **argv, bench_args *args, sl__selection *selection)
{
    *args = (bench_args){.profile = SL_PROFILE_CI, .warmup = -1, .output_dir = "records", .seed = 42};
    sl__cli cli = sl__options_parse(&sl__bench_spec, argc, argv, args);
    args->gbench = args->format && strcmp(args->format, "gbench") == 0;
    if (args->workers_given && args->nworker_counts > 0)
        sl__cli_usage_error(&cli, "options --workers and --workers-sweep both set the prefetch workers; give one "
                                  "(--workers-sweep runs every count it lists)");
    if (args->rounds > 0 && args->repetitions > 0)
        sl__cli_usage_error(&cli, "options --rounds and --repetitions both set how many repetitions a record "
                                  "holds; give one (--rounds runs them interleaved)");
    /* Names are checked after every option is read, so that --variants is
     * matched against the scenarios selected wherever --scenarios appears. */
    sl__cli_select(&cli, args->scenarios, args->variants, args->adapters, selection);
    /* The table is chosen once, here, and handed to every run. */
    args->kernels = sl__cli_kernels(&cli, args->kernels_name);
    /* auto, the default: the CPUs this process may use, read once. */
    if (args->threads == 0) {
        int usable = sl_available_cpus();
        args->threads = usable < SL_FUSED_MAX_THREADS ? usable : SL_FUSED_MAX_THREADS;
    }
}

/* --- progress ------------------------------------------------------------------ */

/* On a terminal, one line rewritten in place; otherwise one line per run, so
 * CI logs stay readable. Each line says how long the run has taken and,
 * once a run has finished, about how long is left. */
typedef struct progress {
    bool quiet;
    bool tty;
    bool line_open;
    int64_t started_ns;
    int done; /* steps started before the current one */
} progress;

static void progress_clear(progress *p)
{
    if (p->line_open) {
        fputs("\r\033[K", stderr);
        p->line_open = false;
    }
}

/* "12 s" or "3 min 05 s". */
static void format_duration(char *buf, size_t size, double seconds)
{
    if (seconds < 90.0)
        snprintf(buf, size, "%.0f s", seconds);
    else
        snprintf(buf, size, "%d min %02d s", (int)(seconds / 60.0), (int)fmod(seconds, 60.0));
}

static void progress_step(progress *p, const sl_session_step *step)
{
    if (p->quiet) {
        return;
    }
    const char *scenario = step->scenario->id, *variant = step->variant->name, *adapter = step->adapter->name;
    double elapsed = (double)(sl_now_ns() - p->started_ns) / 1e9;
    char timing[96], spent[32], left[32];
    format_duration(spent, sizeof spent, elapsed);
    /* The runs done so far are the only measure of what the rest will
     * take: a guess, labelled as one. */
    int done = step->index - 1;
    if (done > 0) {
        format_duration(left, sizeof left, elapsed / done * (step->total - done));
        snprintf(timing, sizeof timing, "%s, about %s left", spent, left);
    } else {
        snprintf(timing, sizeof timing, "%s", spent);
    }
    if (p->tty) {
        fprintf(stderr, "\r\033[K[%d/%d] %s/%s %s (%s)", step->index, step->total, scenario, variant, adapter, timing);
        p->line_open = true;
    } else {
        fprintf(stderr, "[%d/%d] %s/%s %s (%s)\n", step->index, step->total, scenario, variant, adapter, timing);
    }
    fflush(stderr);
}

/* Informational lines (skips, results) are progress and obey --quiet;
 * errors do not. */
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

/* --- what the session reports ------------------------------------------------------ */

/* The presentation of one session: its progress lines and the records its
 * summary and exports show. */
typedef struct bench_report {
    const bench_args *args;
    const char *profile;
    /* The job's ranks: 1 alone, the launcher's world under mpirun or srun. */
    int ranks;
    progress progress;
    /* The records this invocation wrote, as their files say: the folder may
     * also hold records of earlier runs, which the summary leaves out. */
    sl__summary summary;
    int write_errors;
    /* What Ctrl-C says (sl_cleanup_set_last_words): the runs finished so
     * far and where their records are. Two buffers, so that the one a
     * signal may be reading is never the one being rewritten. */
    const char *dir;
    int finished;
    char finished_names[1536]; /* read by no handler: one buffer */
    char last_words[2][2048];
    int current_words;
} bench_report;

/* Rewrites the message an interrupt prints: every record written so far
 * stays in the folder (a record is written whole, atomically), so it says
 * how many and which, and where. */
static void update_last_words(bench_report *report, const sl_record *record)
{
    int next = 1 - report->current_words;
    char *names = report->finished_names;
    if (record) {
        report->finished++;
        size_t used = strlen(names), room = sizeof report->finished_names - used;
        if (room > 80)
            snprintf(names + used, room, "%s%s/%s/%s", used ? ", " : "", record->scenario, record->variant,
                     record->adapter);
        else if (!strstr(names, ", ..."))
            snprintf(names + used, room, ", ...");
    }
    if (report->finished == 0)
        snprintf(report->last_words[next], sizeof report->last_words[next],
                 "\nsluice bench: interrupted before any run finished; nothing is kept in %s/\n", report->dir);
    else
        snprintf(report->last_words[next], sizeof report->last_words[next],
                 "\nsluice bench: interrupted; %d run%s finished (%s) and %s kept in %s/; the summary was not "
                 "written (`sluice summary %s` shows the kept records)\n",
                 report->finished, report->finished == 1 ? "" : "s", names,
                 report->finished == 1 ? "its record is" : "their records are", report->dir, report->dir);
    /* The other buffer's text is complete before it is published. */
    report->current_words = next;
    sl_cleanup_set_last_words(report->last_words[next]);
}

/* One line per distributed record: the figures a reader of a job wants
 * first, from the record's scenario metrics (docs/records.md). Other
 * records have none of them and print nothing. */
static void note_ranks(bench_report *report, const sl_record *record)
{
    const double *ranks = sl__find_metric(record, "ranks"), *processes = sl__find_metric(record, "processes");
    const double *slowest = sl__find_metric(record, "slowest_rank"), *wall = sl__find_metric(record, "slowest_rank_ns");
    if (record->outcome != SL_RECORD_OK || !ranks || !processes || !slowest || !wall)
        return;
    char line[512];
    int used = snprintf(
        line, sizeof line, "%s/%s %s: %.0f rank%s in %.0f process%s; p50 per rank (µs):", record->scenario,
        record->variant, record->adapter, *ranks, *ranks == 1 ? "" : "s", *processes, *processes == 1 ? "" : "es");
    for (int r = 0; r < SL_DIST_RANK_METRICS && used > 0 && (size_t)used < sizeof line; r++) {
        char name[48];
        snprintf(name, sizeof name, "rank_%d_p50_ns", r);
        const double *p50 = sl__find_metric(record, name);
        if (!p50)
            break;
        used += snprintf(line + used, sizeof line - (size_t)used, " %.1f", *p50 / 1e3);
    }
    const double *rss = sl__find_metric(record, "rank_peak_rss_max_bytes"),
                 *fixture = sl__find_metric(record, "rank_fixture_max_bytes");
    const double *startup = sl__find_metric(record, "rank_startup_max_ns");
    char cost[160] = "";
    if (rss && fixture && startup)
        snprintf(cost, sizeof cost, "; per rank at most %.1f MiB peak, %.1f MiB of fixture, %.0f ms to start",
                 *rss / 1048576.0, *fixture / 1048576.0, *startup / 1e6);
    progress_note(&report->progress, false, "%s; slowest rank %.0f, %.2f ms measured%s", line, *slowest, *wall / 1e6,
                  cost);
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

/* The summary keeps what the record's file says, read back, so that the
 * table and the exports show exactly what a later `sluice summary` or
 * `sluice report` of the folder shows; a record that could not be written
 * is kept as it was run. */
static void on_record(void *user, const sl_record *record, const sl_environment *env, const char *path,
                      const sl_err *write_err)
{
    bench_report *report = user;
    note_ranks(report, record);
    if (path && report->dir)
        update_last_words(report, record);
    sl_record written;
    sl_environment written_env;
    sl_err err = {0};
    if (!path) {
        progress_clear(&report->progress);
        sl__cli_error("bench", "%s", write_err->msg);
        report->write_errors++;
        sl__summary_add(&report->summary, record, env);
    } else if (sl_record_read(path, &written, &written_env, &err) == SL_OK) {
        sl__summary_add(&report->summary, &written, &written_env);
        sl_record_release(&written);
    } else {
        sl__cli_error("bench", "%s", err.msg);
        report->write_errors++;
        sl__summary_add(&report->summary, record, env);
    }
}

/* Each variant's result as it completes, fastest first: what a long run
 * has found so far, without waiting for the table. */
static void on_variant(void *user, const sl_scenario *scenario, const sl_variant *variant)
{
    bench_report *report = user;
    char line[2048];
    sl__summary_variant_line(&report->summary, scenario->id, variant->name, line, sizeof line);
    progress_note(&report->progress, false, "%s", line);
}

/* --- the session ------------------------------------------------------------------- */

/* A sweep's variants (--batch-sizes, --workers-sweep): each selected
 * variant copied once per point, with the point's batch size at every
 * profile and the name <variant>@bs<N>, <variant>@w<N> or, with both,
 * <variant>@bs<N>@w<M>, so that records, the reference's digest, the
 * summary and the report treat each point as the variant it is. */
typedef struct sweep {
    sl_variant *variants;
    char (*names)[sizeof((sl_record *)0)->variant];
} sweep;

static void sweep_free(sweep *sw)
{
    free(sw->variants);
    free(sw->names);
}

/* The variant to run at batch-size point `size_point` and workers point
 * `workers_point` of the sweep (-1: that option is not swept). */
static const sl_variant *sweep_point(sweep *sw, int index, const sl_variant *variant, const bench_args *args,
                                     int size_point, int workers_point)
{
    if (size_point < 0 && workers_point < 0)
        return variant;
    sl_variant *copy = &sw->variants[index];
    *copy = *variant;
    char size_tag[32] = "", workers_tag[32] = "";
    if (size_point >= 0) {
        copy->batch_size[0] = copy->batch_size[1] = args->batch_sizes[size_point];
        snprintf(size_tag, sizeof size_tag, "@bs%lld", (long long)args->batch_sizes[size_point]);
    }
    if (workers_point >= 0)
        snprintf(workers_tag, sizeof workers_tag, "@w%lld", (long long)args->worker_counts[workers_point]);
    if ((size_t)snprintf(sw->names[index], sizeof sw->names[index], "%s%s%s", variant->name, size_tag, workers_tag) >=
        sizeof sw->names[index]) {
        sl__cli_error("bench", "option %s: the variant name %s%s%s is longer than a record's %zu bytes",
                      size_point >= 0 ? "--batch-sizes" : "--workers-sweep", variant->name, size_tag, workers_tag,
                      sizeof sw->names[index] - 1);
        exit(SL__EXIT_USAGE);
    }
    copy->name = sw->names[index];
    return copy;
}

/* The selected variants in the registry's order with their sizes at the
 * profile (with a sweep, each at every point of it in turn: every worker
 * count at each batch size): the session, in the layer below the
 * registry, takes them resolved. */
static sl_session_variant *selected_variants(const sl__selection *selection, const bench_args *args, sweep *sw,
                                             int *count)
{
    sl_build_options build;
    sl_build_options_init(&build, args->profile, args->seed);
    size_t points = (size_t)(args->nbatch_sizes > 0 ? args->nbatch_sizes : 1) *
                    (size_t)(args->nworker_counts > 0 ? args->nworker_counts : 1);
    size_t most = 0;
    for (int s = 0; s < selection->nscenarios; s++)
        most += (size_t)sl_scenario_at(s)->nvariants * points;
    sl_session_variant *variants = sl__cli_alloc(most * sizeof *variants);
    sw->variants = sl__cli_alloc(most * sizeof *sw->variants);
    sw->names = sl__cli_alloc(most * sizeof *sw->names);
    *count = 0;
    for (int s = 0; s < selection->nscenarios; s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++) {
            if (!sl__selection_has_variant(selection, s, v))
                continue;
            for (int size_point = args->nbatch_sizes > 0 ? 0 : -1; size_point < args->nbatch_sizes; size_point++)
                for (int workers_point = args->nworker_counts > 0 ? 0 : -1; workers_point < args->nworker_counts;
                     workers_point++) {
                    const sl_variant *variant =
                        sweep_point(sw, *count, &scenario->variants[v], args, size_point, workers_point);
                    variants[*count] = (sl_session_variant){
                        .scenario = scenario,
                        .variant = variant,
                        .n = sl_variant_n(variant, &build),
                        .batch_size = sl_variant_batch_size(variant, &build),
                        .sets_workers = workers_point >= 0,
                        .workers = workers_point >= 0 ? (int)args->worker_counts[workers_point] : 0,
                    };
                    (*count)++;
                }
        }
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
    options->bench.instrument = args->instrument;
    options->rounds = args->rounds;
    options->output_dir = args->output_dir;
    options->world = world;
    options->instantiate = sl_scenario_instantiate;
    options->instance_free = sl_scenario_instance_free;
    options->callbacks = (sl_session_callbacks){
        .user = report, .on_step = on_step, .on_note = on_note, .on_record = on_record, .on_variant = on_variant};
}

/* --- the end of a session ------------------------------------------------------------ */

/* The closing line: how many runs, how many failed, where everything is. */
static void print_totals(const bench_report *report, FILE *out, const char *dir, const char *summary_path,
                         bool wrote_summary)
{
    /* A record that could not be written is a failure too: its run is not
     * on disk for anyone to check. */
    int count = report->summary.count;
    fprintf(out, "%d run%s, %d failed, %d mismatched", count, count == 1 ? "" : "s",
            report->summary.failed + report->write_errors, report->summary.mismatched);
    if (report->write_errors > 0) {
        fprintf(out, " (%d record%s could not be written)", report->write_errors, report->write_errors == 1 ? "" : "s");
    }
    fprintf(out, "; records in %s/", dir);
    if (wrote_summary) {
        fprintf(out, ", summary in %s", summary_path);
    }
    fputc('\n', out);
}

/* Rank 0's presentation once the session ran: the summary table and its
 * Markdown file, the exports, and the exit status. */
static int finish_report(bench_report *report, const sl_session *session, int argc, char **argv)
{
    progress_clear(&report->progress);
    const char *dir = sl_session_dir(session);
    char summary_path[4096 + 16], title[64];
    snprintf(summary_path, sizeof summary_path, "%s/summary.md", dir);
    snprintf(title, sizeof title, "sluice bench, %s profile", report->profile);
    bool wrote_summary = sl__summary_write_markdown(&report->summary, "bench", title, argc, argv, summary_path);
    /* With --format gbench, stdout carries only the JSON, so that it can be
     * redirected into a file compare.py reads; the table goes to stderr. */
    FILE *human = report->args->gbench ? stderr : stdout;
    sl__summary_print(&report->summary, human);
    print_totals(report, human, dir, summary_path, wrote_summary);
    const sl__summary *s = &report->summary;
    if (report->args->gbench)
        sl__export_gbench(s->records, s->count, s->count > 0 ? &s->environments[0] : sl_session_environment(session),
                          stdout);
    if (report->args->junit && !sl__export_junit_file(s->records, s->environments, s->count, report->args->junit))
        report->write_errors++;
    bool failed = s->failed > 0 || s->mismatched > 0 || report->write_errors > 0 || !wrote_summary;
    sl__summary_free(&report->summary);
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
        sl__cli_error("bench",
                      "environment variable SLUICE_DIST_TIMEOUT_S: '%s' is not a number of seconds from "
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
    report.progress =
        (progress){.quiet = args.quiet || !root, .tty = isatty(STDERR_FILENO) != 0, .started_ns = sl_now_ns()};
    if (root && launch_note[0])
        progress_note(&report.progress, false, "%s", launch_note);

    int nvariants = 0, nadapters = 0;
    sweep sw = {0};
    sl_session_variant *variants = selected_variants(&selection, &args, &sw, &nvariants);
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
        sweep_free(&sw);
        free(adapters);
        /* On rank 0 of a job, an early failure returns without leaving the
         * job: the launcher then ends every rank instead of leaving them
         * waiting for rank 0 at their first collective. */
        return SL__EXIT_FAILED;
    }
    if (root) {
        report.dir = sl_session_dir(session);
        update_last_words(&report, NULL);
    }
    sl_status ran = sl_session_run(session, &err);
    /* Past the runs, an interrupt has nothing more to say than the shell. */
    sl_cleanup_set_last_words(NULL);
    /* Every collective step is behind the job now: the ranks check in at
     * its end and leave MPI before rank 0 writes its report, so that no
     * rank waits on rank 0 under the watchdog while it does (a summary of
     * many batches once took longer than the watchdog's limit, and the
     * other ranks aborted a healthy job, blaming rank 0; D23). */
    if (launched)
        sl__launch_end(launched);
    if (ran != SL_OK) {
        sl__cli_error("bench", "%s", err.msg);
        status = SL__EXIT_FAILED;
    } else if (root) {
        status = finish_report(&report, session, argc, argv);
    }
    sl__summary_free(&report.summary);
    sl_session_free(session);
    free(variants);
    sweep_free(&sw);
    free(adapters);
    return status;
}
