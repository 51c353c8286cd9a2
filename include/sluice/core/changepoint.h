/* Steps in a series of measurements taken one per commit: where the series
 * changes (E-divisive means with a permutation test) and how big the change
 * is (the Hodges-Lehmann shift with its distribution-free interval).
 * docs/history.md says why these two and how they are used. */
#ifndef SLUICE_CHANGEPOINT_H
#define SLUICE_CHANGEPOINT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* E-divisive means (Matteson and James, "A Nonparametric Approach for
 * Multiple Change Point Analysis of Multivariate Data", JASA 2014; the form
 * MongoDB's performance team runs on its commit history, Daly et al.,
 * "Change Point Detection in Software Performance Testing", ICPE 2020),
 * with exponent 1: a segment x[s, e) is split at the tau that maximizes
 *
 *   q(tau) = m k / (m + k) * (2/(m k) sum |X_i - Y_j|
 *                             - 1/C(m,2) sum_{i<i'} |X_i - X_i'|
 *                             - 1/C(k,2) sum_{j<j'} |Y_j - Y_j'|)
 *
 * (X the m points before tau, Y the k from tau on): the energy distance
 * between the two sides, which is zero in expectation when they come from
 * one distribution and grows with any difference in location or spread.
 * Splits are found one at a time, the best over every current segment
 * first. Each is kept only if a permutation test says it is not what the
 * noise gives: the points of every current segment are shuffled within
 * their segment `permutations` times, the best q is taken again, and
 * p = (1 + #{shuffled q >= q}) / (1 + permutations) must be at most alpha.
 * Under the hypothesis of no further change the points of a segment are
 * exchangeable, so the chance of a false split at each step is at most
 * alpha whatever their distribution. The search stops at the first split
 * that fails. The shuffles are drawn from Philox under `seed`: the same
 * series always gives the same answer.
 *
 * The search runs on x winsorized within each current segment at its
 * median +- clip_mads MADs (default 3), recomputed after every split: a run
 * that another job slowed by half then counts as a point at the edge of
 * its segment's bulk, not as a jump many steps wide, while a new level,
 * once split off, is clipped against itself and not against the old one
 * (issue 30: clipping against the whole series pulled a short new level
 * back into the old). A segment's median and MAD do not depend on the
 * order of its points, so the permutation test, which shuffles within
 * segments, is unchanged by the clipping. docs/history.md gives the
 * rates. */
typedef struct sl_changepoint_options {
    double alpha;     /* the largest p a split may have */
    int permutations; /* shuffles per test */
    int min_segment;  /* the fewest points a split may leave on either side */
    uint64_t seed;    /* the key of the shuffles */
    double clip_mads; /* winsorize at the median +- this many MADs first; 0: not */
} sl_changepoint_options;

/* alpha 0.01 with 199 shuffles: a split must beat 198 of them. */
#define SL_CHANGEPOINT_ALPHA        0.01
#define SL_CHANGEPOINT_PERMUTATIONS 199
#define SL_CHANGEPOINT_SEED         0x686973746f7279ull /* "history" */
#define SL_CHANGEPOINT_CLIP_MADS    3.0

void sl_changepoint_defaults(sl_changepoint_options *options);

typedef struct sl_changepoint {
    int index; /* the first point after the change: the change lies between index - 1 and index */
    double q;  /* the statistic of the split */
    double p;  /* its permutation p value */
    int order; /* 0 for the split found first, then 1, ... */
} sl_changepoint;

/* Finds up to max change points of x[0, n) and writes them to out in order
 * of index; returns how many, or -1 when memory ran out. Points that are
 * not finite must not be passed. */
int sl_edivisive(const double *x, int n, const sl_changepoint_options *options, sl_changepoint *out, int max);

/* The same over points in groups: group[i] (nondecreasing) is the group of
 * point i, e.g. the commit whose processes the points are. A change may
 * fall only between groups, and min_segment counts groups; the shuffles
 * move points across groups within a segment, which under no change (every
 * process of every commit of a segment from one distribution) leaves the
 * test exact. Several processes per commit are what let a short series
 * reach alpha: 4 commits then 2, one process each, are 6 points, and no
 * arrangement of 6 is rarer than 1 in 20; three processes each make 18.
 * group NULL: every point its own group (sl_edivisive). */
int sl_edivisive_grouped(const double *x, const int *group, int n, const sl_changepoint_options *options,
                         sl_changepoint *out, int max);

/* Whether n points in ngroups groups can show a change at all: at least
 * two groups (2 min_segment), and some split whose arrangement is rarer
 * than alpha (C(n, n/2) >= 1 / alpha; at alpha 0.01 that is 9 points) with
 * enough shuffles to say so. A series that cannot is "too short to test",
 * which is not the same as "no step". */
bool sl_changepoint_testable(int n, int ngroups, const sl_changepoint_options *options);
/* The fewest points that can be testable under options. */
int sl_changepoint_points_needed(const sl_changepoint_options *options);

/* The shift of b over a (Hodges and Lehmann, 1963): the median of the
 * na * nb differences b_j - a_i, with the distribution-free interval of
 * Moses: [D(c), D(na nb + 1 - c)] of the sorted differences, c the largest
 * rank with 2 P(U <= c - 1) <= 1 - level for the Mann-Whitney U of the two
 * sizes under no shift. P is the exact distribution of U when both sides
 * have at most SL_SHIFT_EXACT_MAX points, the normal approximation beyond.
 * When the sizes are too small for any interval at that level (c would be
 * 0), the interval is the smallest and largest difference and `level` says
 * the confidence it has (1 - 2 / C(na + nb, na)). */
#define SL_SHIFT_EXACT_MAX 50

typedef struct sl_shift {
    double estimate;
    double lo, hi;
    double level; /* the interval's confidence: the level asked for, or less when the sizes allow no more */
} sl_shift;

/* False when either side is empty or memory ran out. */
bool sl_shift_estimate(const double *a, int na, const double *b, int nb, double level, sl_shift *out);

#ifdef __cplusplus
}
#endif

#endif
