/* Choosing the kernel table by measurement.
 *
 * Every registered kernel table computes the reference's bits (the tests
 * hold each to it), so which one runs is purely a question of speed, and
 * the CPU's feature flags do not answer it: wide vectors cost a frequency
 * licence on some cores, run on split units on others, and a compiler's
 * 512-bit code is sometimes simply worse. The tuner asks the machine. It
 * times each candidate table's kernel of every entry on the cases that
 * carry the scenarios' element sizes (sluice/bench/kernel_check.h; the cases of
 * awkward sizes are for checking, not choosing), in interleaved rounds so
 * that a drift of the machine falls on every table alike, and picks per
 * entry the table with the least time. Every candidate is first checked
 * against the reference on the case's inputs, and one that differs is not
 * chosen. sl_kernels_assemble then makes the tuned table ("auto") from the
 * choice: bitwise the reference's like every table, and as fast as the
 * fastest table per entry.
 *
 * The selection is a pure function of the measured samples
 * (sl_kernel_tune_select), so the tests drive it with simulated timings.
 * The choice is cached per CPU and sluice build (sl_kernels_auto), so a
 * run pays for the measurement once. */
#ifndef SLUICE_KERNEL_TUNE_H
#define SLUICE_KERNEL_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/bench/kernel_check.h"
#include "sluice/core/status.h"
#include "sluice/kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tuned table's name, which --kernels and SLUICE_KERNELS accept. */
#define SL_KERNELS_AUTO "auto"

/* A candidate displaces the flag-chosen default only when it is faster by
 * more than SL_KERNEL_TUNE_MARGIN and faster in more of the paired rounds
 * than chance allows (a one-sided sign test at SL_KERNEL_TUNE_ALPHA): below
 * either, two tables cannot be told apart on a shared machine, and keeping
 * the default keeps the choice stable from one tuning to the next. */
#define SL_KERNEL_TUNE_MARGIN 0.03
#define SL_KERNEL_TUNE_ALPHA  0.05

#define SL_KERNEL_TUNE_MAX_ROUNDS 15
#define SL_KERNEL_TUNE_MAX_CASES  96

typedef struct sl_kernel_tune_options {
    int rounds;        /* samples per case and table, interleaved (default 9, at most 15) */
    int64_t sample_ns; /* what one sample lasts at least (default 100 us) */
    /* The entries to measure (SL_KERNEL_ENTRY_COUNT flags); NULL: every
     * one. An entry left out keeps the default table. */
    const bool *entries;
    /* Test-only: per registry id, a table to check and time in that
     * table's place (NULL, or a NULL entry: the registered table), so that
     * a test can plant a wrong kernel without editing a real one. */
    const sl_kernel_table *const *tables;
} sl_kernel_tune_options;

void sl_kernel_tune_options_init(sl_kernel_tune_options *options);

/* One case on one candidate table. */
typedef struct sl_kernel_tune_cell {
    /* SL_OK when timed; SL_EMISMATCH when the table's output differed
     * from the reference's on the case (never chosen then); another code
     * when it could not be checked or timed. */
    sl_status status;
    /* -1, or the table whose entry is this very function: that table's
     * samples stand for both, so a kernel that several tables share is
     * timed once and ties with itself. */
    int same_as;
    int nsamples;
    double samples_ns[SL_KERNEL_TUNE_MAX_ROUNDS]; /* ns per call, one per round */
} sl_kernel_tune_cell;

/* What the measurement gives the selection. */
typedef struct sl_kernel_tune_measurements {
    sl_kernel_table_id default_table; /* the flag-chosen table, sl_kernels_default() */
    bool candidate[SL_TABLE_COUNT];   /* the tables the choice is among */
    /* The table measured for each id: the registered one, or the one
     * options->tables put in its place. */
    const sl_kernel_table *table[SL_TABLE_COUNT];
    int ncases;
    const sl_kernel_case *cases[SL_KERNEL_TUNE_MAX_CASES];
    sl_kernel_tune_cell cells[SL_KERNEL_TUNE_MAX_CASES][SL_TABLE_COUNT];
    char failure[SL_ERR_MAX]; /* the first failed check, said in full; empty when none */
} sl_kernel_tune_measurements;

/* The choice, with the figures it was made from. */
typedef struct sl_kernel_tuning {
    sl_kernel_assembly choice;
    sl_kernel_table_id default_table;
    /* Per entry and table: the geometric mean, over the entry's cases, of
     * the median ns per call; 0 where the table was not a candidate or has
     * no time for the entry. */
    double score_ns[SL_KERNEL_ENTRY_COUNT][SL_TABLE_COUNT];
    /* Whether the entry's candidates differ: false when every candidate
     * runs the same function (a data-movement kernel that every table
     * shares) or the entry was left out, and then it keeps the default. */
    bool measured[SL_KERNEL_ENTRY_COUNT];
    double seconds; /* the tuner's own run time; 0 for a pure selection */
} sl_kernel_tuning;

/* The candidates: every registered table this CPU runs but the reference,
 * which stays the independent oracle (and whose log_mel sums in another
 * order than the BLAS the optimized tables share, so choosing it would
 * change MM-2's bits). */
void sl_kernel_tune_candidates(bool candidate[SL_TABLE_COUNT]);
/* The same as a list of ids in registry order; returns how many. */
int sl_kernel_tune_candidate_ids(sl_kernel_table_id ids[SL_TABLE_COUNT]);

/* The pure selection. Per entry, a candidate has a time only when every
 * one of the entry's cases has an SL_OK cell with samples for it; its
 * score is the geometric mean over those cases of the median of its
 * samples (so each shape counts alike, whatever its size). The least score
 * wins; a tie goes to the default table, then to the later table in
 * registry order. The default keeps the entry unless the winner is faster
 * by more than SL_KERNEL_TUNE_MARGIN and, round by round (the geometric
 * mean of the cases' samples of one round), faster in more rounds than a
 * one-sided sign test at SL_KERNEL_TUNE_ALPHA puts down to chance: 5 of 5
 * rounds, 8 of 9, 12 of 15. An entry with no case, or whose
 * candidates all share one function, keeps the default; an entry where no
 * candidate has a time (each failed its check) falls back to the reference,
 * which is correct by definition. */
void sl_kernel_tune_select(const sl_kernel_tune_measurements *measurements, sl_kernel_tuning *out);

/* Checks, then times, every candidate on every case of a scenario's
 * element size of the entries asked for. A failed check is recorded in
 * the cell (and said in measurements->failure), not returned; an error is
 * returned only when inputs cannot be made. */
sl_status sl_kernel_tune_measure(const sl_kernel_tune_options *options, sl_kernel_tune_measurements *measurements,
                                 sl_err *err);

/* Measures and selects; out->seconds is the time it took. measurements may
 * be NULL; otherwise it receives what was measured. A candidate that failed
 * its check against the reference fails the tuning (SL_EMISMATCH, naming
 * the kernel, the table and the first differing value): a wrong kernel is
 * never hidden behind the reference's, which the choice would otherwise
 * run in its place (`sluice bench` then printed `ok bitwise`, exit 0). out
 * and measurements are filled either way. */
sl_status sl_kernel_tune(const sl_kernel_tune_options *options, sl_kernel_tuning *out,
                         sl_kernel_tune_measurements *measurements, sl_err *err);

/* --- the cache -------------------------------------------------------------------- */

/* What a cached choice is valid for: the CPU (vendor, family, model,
 * stepping and model name), its microcode revision, and the sluice build
 * (the GNU build id of the library's code, or a digest of its commit,
 * compiler and flags where the linker wrote none). */
typedef struct sl_kernel_tune_key {
    char cpu[192];
    char microcode[32];
    char build[96];
} sl_kernel_tune_key;

void sl_kernel_tune_key_collect(sl_kernel_tune_key *key);

/* The cache folder: $XDG_CACHE_HOME/sluice, or $HOME/.cache/sluice when
 * XDG_CACHE_HOME is unset or not an absolute path (the XDG base directory
 * specification). SL_ENOTFOUND, saying so, when neither is set. */
sl_status sl_kernel_tune_cache_dir(char *buf, size_t size, sl_err *err);
/* The file for key in dir: kernels-<16 hex digits of the key's digest>.json,
 * one per CPU and build, so that builds sharing a home folder do not
 * overwrite each other's choice. */
void sl_kernel_tune_cache_file(const char *dir, const sl_kernel_tune_key *key, char *buf, size_t size);

/* Reads a cached choice. SL_ENOTFOUND when there is no file; otherwise an
 * error whose message (one line, naming the file) says why it is refused:
 * not a cache of this format, corrupt, written for another CPU, microcode
 * or sluice build, or naming a table or entry this build or CPU lacks. */
sl_status sl_kernel_tune_cache_read(const char *path, const sl_kernel_tune_key *key, sl_kernel_tuning *out,
                                    sl_err *err);
/* Writes a choice atomically (a temporary file beside it, synced, then
 * renamed), creating the folder; a failure leaves any previous file whole. */
sl_status sl_kernel_tune_cache_write(const char *path, const sl_kernel_tune_key *key, const sl_kernel_tuning *tuning,
                                     sl_err *err);

/* --- the tuned table ------------------------------------------------------------------- */

/* How sl_kernels_auto came by its choice, for the one line a program says. */
typedef struct sl_kernels_auto_report {
    bool from_cache; /* read from the cache; otherwise measured now */
    char path[1024]; /* the cache file; empty without a cache folder */
    /* Why a cache file there was not used (its one-line refusal); empty
     * when there was none or it was used. */
    char refused[SL_ERR_MAX];
    /* Why the choice measured now could not be saved, or why there is no
     * cache folder; empty when saved or read. */
    char not_saved[SL_ERR_MAX + 32];
} sl_kernels_auto_report;

/* The tuned table: the cached choice for this CPU and build when there is
 * a valid one, else a fresh measurement (with the default options), saved
 * to the cache for the next run. *table is filled as sl_kernels_assemble
 * does, under the name "auto"; *tuning (may be NULL) receives the choice
 * and its figures. A cache that cannot be read or written costs only the
 * measurement: the report says why. */
sl_status sl_kernels_auto(sl_kernel_table *table, sl_kernel_tuning *tuning, sl_kernels_auto_report *report,
                          sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
