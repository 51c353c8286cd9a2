/* The kernel tuner (sluice/bench/kernel_tune.h): the measurement, on the kernel
 * checker's cases and timer, and the selection, a pure function of what
 * was measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/bench/kernel_tune.h"
#include "sluice/core/timing.h"

#define DEFAULT_ROUNDS    9
#define DEFAULT_SAMPLE_NS 100000

void sl_kernel_tune_options_init(sl_kernel_tune_options *options)
{
    *options = (sl_kernel_tune_options){.rounds = DEFAULT_ROUNDS, .sample_ns = DEFAULT_SAMPLE_NS, .entries = NULL};
}

void sl_kernel_tune_candidates(bool candidate[SL_TABLE_COUNT])
{
    for (int t = 0; t < SL_TABLE_COUNT; t++)
        candidate[t] = t != SL_TABLE_REFERENCE && sl_kernel_table_supported(sl_kernel_table_at(t), NULL, 0);
}

int sl_kernel_tune_candidate_ids(sl_kernel_table_id ids[SL_TABLE_COUNT])
{
    bool candidate[SL_TABLE_COUNT];
    sl_kernel_tune_candidates(candidate);
    int n = 0;
    for (int t = 0; t < SL_TABLE_COUNT; t++)
        if (candidate[t])
            ids[n++] = (sl_kernel_table_id)t;
    return n;
}

/* --- the selection ---------------------------------------------------------------- */

/* The cell that holds a table's samples: its own, or the one of the table
 * whose function it shares. */
static const sl_kernel_tune_cell *resolved(const sl_kernel_tune_measurements *m, int c, int t)
{
    const sl_kernel_tune_cell *cell = &m->cells[c][t];
    if (cell->same_as >= 0 && cell->same_as < SL_TABLE_COUNT && cell->same_as != t)
        cell = &m->cells[c][cell->same_as];
    return cell;
}

/* The geometric mean over the entry's cases of the table's median (round
 * -1) or of its sample of one round, or 0 when a case has none. Each case
 * counts alike, whatever its size. */
static double entry_time(const sl_kernel_tune_measurements *m, int entry, int t, int round)
{
    double log_sum = 0.0;
    int n = 0;
    for (int c = 0; c < m->ncases; c++) {
        if ((int)m->cases[c]->entry_id != entry)
            continue;
        const sl_kernel_tune_cell *cell = resolved(m, c, t);
        if (cell->status != SL_OK || cell->nsamples < 1 || round >= cell->nsamples)
            return 0.0;
        double ns = round < 0 ? sl_median_f64(cell->samples_ns, (size_t)cell->nsamples) : cell->samples_ns[round];
        if (!(ns > 0.0))
            return 0.0;
        log_sum += log(ns);
        n++;
    }
    return n ? exp(log_sum / n) : 0.0;
}

/* Whether every candidate's cells of the entry are one function's. */
static bool one_function(const sl_kernel_tune_measurements *m, int entry)
{
    for (int c = 0; c < m->ncases; c++) {
        if ((int)m->cases[c]->entry_id != entry)
            continue;
        const sl_kernel_tune_cell *first = NULL;
        for (int t = 0; t < SL_TABLE_COUNT; t++) {
            if (!m->candidate[t])
                continue;
            const sl_kernel_tune_cell *cell = resolved(m, c, t);
            if (first && cell != first)
                return false;
            first = cell;
        }
    }
    return true;
}

/* Whether a was faster than b in more rounds than chance allows: a
 * one-sided sign test over the paired rounds (a table's samples of one
 * round were taken next to each other, so a drift of the machine falls on
 * both), the chance that a table no faster wins as many rounds under
 * SL_KERNEL_TUNE_ALPHA. Fewer than 5 rounds can never pass it. */
static bool wins_most_rounds(const sl_kernel_tune_measurements *m, int entry, int a, int b)
{
    int wins = 0, n = 0;
    for (int r = 0; r < SL_KERNEL_TUNE_MAX_ROUNDS; r++) {
        double sa = entry_time(m, entry, a, r), sb = entry_time(m, entry, b, r);
        if (sa > 0.0 && sb > 0.0) {
            wins += sa < sb;
            n++;
        }
    }
    /* P(X >= wins) for X ~ Binomial(n, 1/2). */
    double tail = 0.0, binomial = 1.0;
    for (int k = 0; k <= n; k++) {
        if (k >= wins)
            tail += binomial;
        binomial = binomial * (n - k) / (k + 1);
    }
    return n > 0 && tail / ldexp(1.0, n) < SL_KERNEL_TUNE_ALPHA;
}

/* Whether a beats b: less time, or the same time and a is the default, or
 * the same time, neither the default, and a comes later in the registry. */
static bool beats(double score_a, int a, double score_b, int b, int default_table)
{
    if (score_a != score_b)
        return score_a < score_b;
    if (a == default_table || b == default_table)
        return a == default_table;
    return a > b;
}

static sl_kernel_table_id choose(const sl_kernel_tune_measurements *m, int entry, sl_kernel_tuning *out)
{
    int best = -1;
    for (int t = 0; t < SL_TABLE_COUNT; t++) {
        if (!m->candidate[t])
            continue;
        out->score_ns[entry][t] = entry_time(m, entry, t, -1);
        double score = out->score_ns[entry][t];
        if (score > 0.0 && (best < 0 || beats(score, t, out->score_ns[entry][best], best, (int)m->default_table)))
            best = t;
    }
    bool any_case = false;
    for (int c = 0; c < m->ncases && !any_case; c++)
        any_case = (int)m->cases[c]->entry_id == entry;
    out->measured[entry] = any_case && !one_function(m, entry);
    if (!out->measured[entry])
        return m->default_table;
    if (best < 0)
        return SL_TABLE_REFERENCE;
    int def = (int)m->default_table;
    double default_score = m->candidate[def] ? out->score_ns[entry][def] : 0.0;
    if (default_score > 0.0 && (out->score_ns[entry][best] > default_score * (1.0 - SL_KERNEL_TUNE_MARGIN) ||
                                !wins_most_rounds(m, entry, best, def)))
        return m->default_table;
    return (sl_kernel_table_id)best;
}

void sl_kernel_tune_select(const sl_kernel_tune_measurements *m, sl_kernel_tuning *out)
{
    memset(out, 0, sizeof *out);
    out->default_table = m->default_table;
    for (int e = 0; e < SL_KERNEL_ENTRY_COUNT; e++)
        out->choice.table[e] = choose(m, e, out);
}

/* --- the measurement -------------------------------------------------------------- */

/* The function a table runs for an entry, to find the tables that share it. */
static const void *entry_function(const sl_kernel_table *table, int entry)
{
    switch (entry) {
#define SL__ENTRY_FUNCTION(entry)                                                                                      \
    case SL_ENTRY_##entry: return (const void *)table->entry;
        SL_KERNEL_ENTRIES(SL__ENTRY_FUNCTION)
#undef SL__ENTRY_FUNCTION
    }
    return NULL;
}

static bool wanted(const sl_kernel_tune_options *options, const sl_kernel_case *c)
{
    /* The scenarios' element sizes choose; the awkward ones are for the
     * checker (their origin is "odd"). */
    if (strcmp(c->origin, "odd") == 0)
        return false;
    return !options->entries || options->entries[c->entry_id];
}

/* Marks which candidates share a function with an earlier candidate. */
static void mark_shared(sl_kernel_tune_measurements *m, int c)
{
    int entry = (int)m->cases[c]->entry_id;
    for (int t = 0; t < SL_TABLE_COUNT; t++) {
        m->cells[c][t] = (sl_kernel_tune_cell){.status = SL_ENOTFOUND, .same_as = -1};
        if (!m->candidate[t])
            continue;
        m->cells[c][t].status = SL_OK;
        const void *fn = entry_function(m->table[t], entry);
        for (int u = 0; u < t && m->cells[c][t].same_as < 0; u++)
            if (m->candidate[u] && m->cells[c][u].same_as < 0 && entry_function(m->table[u], entry) == fn)
                m->cells[c][t].same_as = u;
    }
}

/* Checks every distinct candidate of a case against the reference; a
 * failure stays in its cell. Returns how many distinct candidates passed. */
static int check_case(sl_kernel_tune_measurements *m, int c)
{
    int passed = 0;
    for (int t = 0; t < SL_TABLE_COUNT; t++) {
        sl_kernel_tune_cell *cell = &m->cells[c][t];
        if (!m->candidate[t] || cell->same_as >= 0)
            continue;
        char diff[256] = "";
        sl_err err = {0};
        cell->status = sl_kernel_case_check(m->cases[c], m->table[t], diff, sizeof diff, &err);
        if (cell->status == SL_OK)
            passed++;
        else if (!m->failure[0])
            snprintf(m->failure, sizeof m->failure, "%s", err.msg);
    }
    return passed;
}

/* Times the case's distinct candidates that passed, one sample of each per
 * round, the order rotated from round to round so that no table always
 * runs first after another's caches. */
static sl_status time_case(sl_kernel_tune_measurements *m, int c, const sl_kernel_tune_options *options, sl_err *err)
{
    int tables[SL_TABLE_COUNT], n = 0;
    int64_t calls[SL_TABLE_COUNT] = {0};
    sl_kernel_timer *timer = NULL;
    /* The thread's CPU time: on a machine shared with other processes, a
     * sample the scheduler interrupted would otherwise count their time as
     * this kernel's, and the choice would follow the neighbours' load. */
    sl_status st = sl_kernel_timer_open(m->cases[c], SL_KERNEL_CLOCK_THREAD_CPU, &timer, err);
    for (int t = 0; st == SL_OK && t < SL_TABLE_COUNT; t++) {
        sl_kernel_tune_cell *cell = &m->cells[c][t];
        if (!m->candidate[t] || cell->same_as >= 0 || cell->status != SL_OK)
            continue;
        sl_err cal_err = {0};
        cell->status = sl_kernel_timer_calibrate(timer, m->table[t], options->sample_ns, &calls[t], &cal_err);
        if (cell->status == SL_OK)
            tables[n++] = t;
    }
    for (int r = 0; st == SL_OK && r < options->rounds; r++)
        for (int k = 0; k < n; k++) {
            int t = tables[(r + k) % n];
            sl_kernel_tune_cell *cell = &m->cells[c][t];
            cell->samples_ns[cell->nsamples++] = sl_kernel_timer_sample(timer, m->table[t], calls[t]);
        }
    sl_kernel_timer_close(timer);
    return st;
}

sl_status sl_kernel_tune_measure(const sl_kernel_tune_options *options, sl_kernel_tune_measurements *m, sl_err *err)
{
    if (options->rounds < 1 || options->rounds > SL_KERNEL_TUNE_MAX_ROUNDS || options->sample_ns < 1)
        return sl_fail(err, SL_EINVAL,
                       "kernel tuning: %d rounds of %lld ns; 1 to %d rounds of at least 1 ns are needed",
                       options->rounds, (long long)options->sample_ns, SL_KERNEL_TUNE_MAX_ROUNDS);
    memset(m, 0, sizeof *m);
    m->default_table = sl_kernels_default()->id;
    sl_kernel_tune_candidates(m->candidate);
    for (int t = 0; t < SL_TABLE_COUNT; t++)
        m->table[t] = options->tables && options->tables[t] ? options->tables[t] : sl_kernel_table_at(t);
    sl_status st = SL_OK;
    for (int i = 0; st == SL_OK && i < sl_kernel_case_count(); i++) {
        const sl_kernel_case *kc = sl_kernel_case_at(i);
        if (!wanted(options, kc))
            continue;
        if (m->ncases == SL_KERNEL_TUNE_MAX_CASES)
            return sl_fail(err, SL_EINVAL, "kernel tuning: more than %d cases", SL_KERNEL_TUNE_MAX_CASES);
        int c = m->ncases++;
        m->cases[c] = kc;
        mark_shared(m, c);
        /* A case whose candidates all run one function has nothing to
         * choose between, and costs nothing. */
        if (one_function(m, (int)kc->entry_id))
            continue;
        if (check_case(m, c) > 0)
            st = time_case(m, c, options, err);
    }
    return st;
}

sl_status sl_kernel_tune(const sl_kernel_tune_options *options, sl_kernel_tuning *out,
                         sl_kernel_tune_measurements *measurements, sl_err *err)
{
    int64_t start = sl_now_ns();
    sl_kernel_tune_measurements *m = measurements ? measurements : malloc(sizeof *m);
    if (!m)
        return sl_fail(err, SL_ENOMEM, "cannot allocate the kernel tuner's measurements");
    sl_status st = sl_kernel_tune_measure(options, m, err);
    if (st == SL_OK) {
        sl_kernel_tune_select(m, out);
        out->seconds = (double)(sl_now_ns() - start) * 1e-9;
        if (m->failure[0])
            st = sl_fail(err, SL_EMISMATCH,
                         "a kernel table failed its check against the reference while the kernels were tuned: %s; "
                         "sluice runs no kernel that differs from the reference (`sluice kernels --check-only` lists "
                         "every failing case)",
                         m->failure);
    }
    if (m != measurements)
        free(m);
    return st;
}
