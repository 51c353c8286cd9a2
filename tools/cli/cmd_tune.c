/* `sluice tune`: times every kernel table's kernels on this machine,
 * chooses the fastest table per kernel (sluice/bench/kernel_tune.h), prints the
 * times and the choice, and saves it to the cache that `--kernels auto`,
 * the default, reads. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct tune_args {
    sl_kernel_tune_options tune;
    bool cases, no_save, show;
    const char *measuring; /* the last option given that only a measurement reads */
} tune_args;

/* --rounds, --cases and --no-save are for a measurement, which --show
 * does not make. */
static void note_measuring(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    (void)cli;
    (void)value;
    ((tune_args *)args)->measuring = option->name;
}

static const sl__option tune_options[] = {
    {.name = "--rounds",
     .arg = "N",
     .kind = SL__OPTION_INT,
     SL__AT(tune_args, tune.rounds),
     .handle = note_measuring,
     .min = 1,
     .max = SL_KERNEL_TUNE_MAX_ROUNDS,
     .help = "samples per case and table, interleaved, the median kept\n(1 to 15, default 9)"},
    {.name = "--cases",
     .kind = SL__OPTION_FLAG,
     SL__AT(tune_args, cases),
     .handle = note_measuring,
     .help = "also print each case's median per table"},
    {.name = "--no-save",
     .kind = SL__OPTION_FLAG,
     SL__AT(tune_args, no_save),
     .handle = note_measuring,
     .help = "measure and print, but leave the cache as it is"},
    {.name = "--show",
     .kind = SL__OPTION_FLAG,
     SL__AT(tune_args, show),
     .help = "print the cached choice for this CPU and build; measure nothing"},
};

const sl__command_spec sl__tune_spec = {
    .name = "tune",
    .synopsis = "sluice tune [options]",
    .about = "Every kernel table computes the reference's bits, so which one runs is a\n"
             "question of speed alone. This times each kernel of every kernel table this\n"
             "CPU runs (the reference excepted) at the element sizes the scenarios use,\n"
             "in interleaved rounds, after checking each against the reference, and\n"
             "chooses per kernel the fastest (a table must beat the flag-chosen default\n"
             "by more than 3% to displace it). It prints the median time per call of\n"
             "each table (over a kernel's shapes, their geometric mean) and the choice,\n"
             "and saves the choice in the cache that --kernels auto, the default of\n"
             "every command, reads: $XDG_CACHE_HOME/sluice (else ~/.cache/sluice), one\n"
             "file per CPU, microcode revision and sluice build.",
    .options = tune_options,
    .noptions = SL__COUNT(tune_options),
    .epilogue = "exit status: 0 chosen (or shown), 1 a table failed its check against the\n"
                "reference (it is not chosen), the cache could not be written, or --show\n"
                "found no valid cache; 2 bad command line.",
};

/* A time per call with three significant digits in a readable unit. */
static void format_ns(char *buf, size_t size, double ns)
{
    if (!(ns > 0.0))
        snprintf(buf, size, "-");
    else if (ns < 1e3)
        snprintf(buf, size, "%.3g ns", ns);
    else if (ns < 1e6)
        snprintf(buf, size, "%.3g us", ns * 1e-3);
    else
        snprintf(buf, size, "%.3g ms", ns * 1e-6);
}

/* One row per kernel: each table's time, the choice, and how much faster
 * the choice is than the flag-chosen default. */
static void print_choice(const sl_kernel_tuning *t)
{
    sl_kernel_table_id ids[SL_TABLE_COUNT];
    int n = sl_kernel_tune_candidate_ids(ids);
    const char *headers[SL_TABLE_COUNT + 3] = {"kernel"};
    sl__align align[SL_TABLE_COUNT + 3] = {SL__LEFT};
    for (int k = 0; k < n; k++) {
        headers[1 + k] = sl_kernel_table_at(ids[k])->name;
        align[1 + k] = SL__RIGHT;
    }
    char default_header[64];
    snprintf(default_header, sizeof default_header, "%s / choice", sl_kernel_table_at(t->default_table)->name);
    headers[1 + n] = "choice";
    align[1 + n] = SL__LEFT;
    headers[2 + n] = default_header;
    align[2 + n] = SL__RIGHT;
    sl__table *table = sl__table_new(n + 3, headers, align);
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++) {
        char cells[SL_TABLE_COUNT + 3][32];
        const char *row[SL_TABLE_COUNT + 3] = {sl_kernel_entry_name(e)};
        for (int k = 0; k < n; k++) {
            format_ns(cells[k], sizeof cells[k], t->measured[e] ? t->score_ns[e][ids[k]] : 0.0);
            row[1 + k] = cells[k];
        }
        int chosen = t->choice.table[e];
        row[1 + n] = t->measured[e] ? sl_kernel_table_at(chosen)->name : "(one kernel in every table)";
        double def = t->score_ns[e][t->default_table], best = t->score_ns[e][chosen];
        if (t->measured[e] && def > 0.0 && best > 0.0)
            snprintf(cells[n], sizeof cells[n], "%.2fx", def / best);
        else
            snprintf(cells[n], sizeof cells[n], "-");
        row[2 + n] = cells[n];
        sl__table_add_row(table, row);
    }
    sl__table_print(table, stdout, 0);
    sl__table_free(table);
}

/* One row per case: each table's median, "=" where a table runs the very
 * function of one to its left. */
static void print_cases(const sl_kernel_tune_measurements *m)
{
    sl_kernel_table_id ids[SL_TABLE_COUNT];
    int n = sl_kernel_tune_candidate_ids(ids);
    const char *headers[SL_TABLE_COUNT + 3] = {"kernel", "shape", "from"};
    sl__align align[SL_TABLE_COUNT + 3] = {SL__LEFT, SL__LEFT, SL__LEFT};
    for (int k = 0; k < n; k++) {
        headers[3 + k] = sl_kernel_table_at(ids[k])->name;
        align[3 + k] = SL__RIGHT;
    }
    sl__table *table = sl__table_new(n + 3, headers, align);
    for (int c = 0; c < m->ncases; c++) {
        char cells[SL_TABLE_COUNT][48];
        const char *row[SL_TABLE_COUNT + 3] = {m->cases[c]->entry, m->cases[c]->shape, m->cases[c]->origin};
        for (int k = 0; k < n; k++) {
            const sl_kernel_tune_cell *cell = &m->cells[c][ids[k]];
            if (cell->same_as >= 0)
                snprintf(cells[k], sizeof cells[k], "= %s", sl_kernel_table_at(cell->same_as)->name);
            else if (cell->status != SL_OK)
                snprintf(cells[k], sizeof cells[k], "%s", cell->status == SL_EMISMATCH ? "FAIL" : "-");
            else if (cell->nsamples > 0)
                format_ns(cells[k], sizeof cells[k], sl_median_f64(cell->samples_ns, (size_t)cell->nsamples));
            else
                snprintf(cells[k], sizeof cells[k], "-");
            row[3 + k] = cells[k];
        }
        sl__table_add_row(table, row);
    }
    printf("\n");
    sl__table_print(table, stdout, 0);
    sl__table_free(table);
}

static int differing(const sl_kernel_tuning *t)
{
    int n = 0;
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++)
        n += t->choice.table[e] != t->default_table;
    return n;
}

/* The cache file for this CPU and build, or an empty path and why. */
static void cache_path(const sl_kernel_tune_key *key, char *path, size_t size, sl_err *err)
{
    char dir[900];
    path[0] = '\0';
    if (sl_kernel_tune_cache_dir(dir, sizeof dir, err) == SL_OK)
        sl_kernel_tune_cache_file(dir, key, path, size);
}

static int show(const sl_kernel_tune_key *key)
{
    char path[1024];
    sl_err err = {0};
    cache_path(key, path, sizeof path, &err);
    sl_kernel_tuning t;
    if (!path[0] || sl_kernel_tune_cache_read(path, key, &t, &err) != SL_OK) {
        sl__cli_error("tune", "no valid kernel choice cached for this CPU and build: %s", err.msg);
        return SL__EXIT_FAILED;
    }
    print_choice(&t);
    printf("cached in %s (measured in %.1f s): %d of %d kernels differ from %s\n", path, t.seconds, differing(&t),
           SL_KERNEL_ENTRY_COUNT, sl_kernel_table_at(t.default_table)->name);
    return SL__EXIT_OK;
}

int sl__cmd_tune(int argc, char **argv)
{
    tune_args args = {0};
    sl_kernel_tune_options_init(&args.tune);
    sl__cli cli = sl__options_parse(&sl__tune_spec, argc, argv, &args);
    /* --show reads the cache and measures nothing: an option of the
     * measurement beside it would be ignored without a word (D27). */
    if (args.show && args.measuring)
        sl__cli_usage_error(&cli,
                            "option %s: --show shows the cached choice and measures nothing; %s is for a "
                            "measurement",
                            args.measuring, args.measuring);
    sl_kernel_tune_options options = args.tune;
    bool cases = args.cases, save = !args.no_save, only_show = args.show;
    sl_kernel_tune_key key;
    sl_kernel_tune_key_collect(&key);
    printf("kernel tuning on %s (microcode %s), %s\n", key.cpu, key.microcode, key.build);
    if (only_show)
        return show(&key);
    printf("%d interleaved rounds of at least %.0f us of CPU time per case and table\n\n", options.rounds,
           (double)options.sample_ns * 1e-3);
    fflush(stdout);

    sl_kernel_tune_measurements *m = sl__cli_alloc(sizeof *m);
    sl_kernel_tuning t;
    sl_err err = {0};
    if (sl_kernel_tune(&options, &t, m, &err) != SL_OK) {
        sl__cli_error("tune", "%s", err.msg);
        free(m);
        return SL__EXIT_FAILED;
    }
    int status = SL__EXIT_OK;
    print_choice(&t);
    if (cases)
        print_cases(m);
    printf("measured in %.1f s: %d of %d kernels differ from %s", t.seconds, differing(&t), SL_KERNEL_ENTRY_COUNT,
           sl_kernel_table_at(t.default_table)->name);
    char path[1024];
    cache_path(&key, path, sizeof path, &err);
    if (!save) {
        printf("; not saved (--no-save)\n");
    } else if (!path[0]) {
        printf("\n");
        sl__cli_error("tune", "not saved: %s", err.msg);
        status = SL__EXIT_FAILED;
    } else if (sl_kernel_tune_cache_write(path, &key, &t, &err) != SL_OK) {
        printf("\n");
        sl__cli_error("tune", "not saved: %s", err.msg);
        status = SL__EXIT_FAILED;
    } else {
        printf("; saved in %s\n", path);
    }
    free(m);
    return status;
}
