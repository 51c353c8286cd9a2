/* The statistics every report, summary and gate decision uses, so that a
 * median or an interval means the same thing wherever it is printed. The
 * definitions are in docs/records.md ("Statistics"). */
#ifndef SLUICE_STATS_H
#define SLUICE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The confidence level of every interval sluice reports. */
#define SL_CI_LEVEL             0.95
/* A row is too noisy to rank when its median's interval is wider than this
 * fraction of the median (hi - lo > 0.10 x median, about +-5%). */
#define SL_NOISY_RELATIVE_WIDTH 0.10

/* A median and a distribution-free confidence interval for it: the order
 * statistics x(l) and x(u) of the sorted sample whose ranks come from the
 * Binomial(n, 1/2) distribution, so that P(x(l) <= true median <= x(u)) >=
 * level whatever the distribution of the samples (no normality assumed,
 * one slow batch moves it by at most one rank). For n < 6 no such interval
 * exists at 95%: lo and hi are then the minimum and maximum. */
typedef struct sl_median_ci {
    double median;
    double lo, hi;
    size_t n;
} sl_median_ci;

/* Returns false for n == 0 or when memory for the sorted copy is missing. */
bool sl_median_ci_i64(const int64_t *values, size_t n, double level, sl_median_ci *out);
/* Whether an interval is too wide to rank its row (SL_NOISY_RELATIVE_WIDTH). */
bool sl_median_ci_is_noisy(const sl_median_ci *ci);

/* A row is also too noisy to rank when the throughput at its mean batch time
 * and the throughput at its median batch time disagree by more than this
 * fraction: a few stalls (a descheduled batch, a page fault storm) move the
 * mean and not the median, and the headline figure should not hide them. */
#define SL_NOISY_MEAN_MEDIAN 0.10

/* The headline figure of a run (docs/records.md, "The headline figure"):
 * the median batch time over every measured batch of every repetition,
 * turned into elements per second at that median, with the median's
 * order-statistic interval turned into a throughput interval the same way.
 * The mean is kept beside it, labelled, because a gap between the two is
 * how a stall shows. */
typedef struct sl_throughput {
    size_t n;         /* batches pooled */
    double per_batch; /* elements (or bytes) of one batch */
    double median_ns, lo_ns, hi_ns, mean_ns;
    double rate;             /* per_batch / median, per second */
    double rate_lo, rate_hi; /* per_batch / hi and per_batch / lo */
    double mean_rate;        /* per_batch / mean, per second */
    bool wide;               /* the interval is wider than SL_NOISY_RELATIVE_WIDTH of the median */
    bool skewed;             /* mean and median rates differ by more than SL_NOISY_MEAN_MEDIAN */
    bool noisy;              /* wide or skewed: shown, never ranked */
} sl_throughput;

/* False for no samples, a per_batch that is not positive, or no memory. */
bool sl_throughput_of(const int64_t *samples, size_t n, double per_batch, sl_throughput *out);
/* Why a row is noisy, in words ("" when it is not), for notes and records. */
void sl_throughput_noise_reason(const sl_throughput *t, char *buf, size_t size);

/* A comparison of two runs' headline figures: a's throughput over b's,
 * which is b's median batch time over a's (both runs do the same work per
 * batch). The interval is a percentile bootstrap of that ratio of medians
 * (SL_RATIO_RESAMPLES resamples of each side, drawn with Philox under a
 * fixed key from the sorted samples, so it depends on neither the order of
 * the samples nor anything else), widened to cover every per-round ratio
 * when both runs have the same repetitions: the ratio of repetition r's
 * medians, which for an interleaved run (sluice bench --rounds) compares
 * two adapters measured moments apart. A lead is claimed only when the
 * whole interval is on one side of 1. */
#define SL_RATIO_RESAMPLES 2000

typedef enum sl_ratio_call { SL_RATIO_CANNOT_TELL = 0, SL_RATIO_WIN, SL_RATIO_LOSS } sl_ratio_call;

typedef struct sl_ratio {
    double ratio;  /* median_b / median_a: above 1 when a is faster */
    double lo, hi; /* the interval */
    double boot_lo, boot_hi;
    int rounds; /* per-round ratios taken into the interval (0: none) */
    double round_lo, round_hi;
    sl_ratio_call call; /* win (lo > 1), loss (hi < 1), or cannot tell */
} sl_ratio;

/* per_round: the batches of one repetition in both a and b (0 when the
 * repetitions are not comparable); a and b hold whole repetitions of it.
 * False when either side has no samples or a median is not positive. */
bool sl_ratio_of_medians(const int64_t *a, size_t na, const int64_t *b, size_t nb, size_t per_round, sl_ratio *out);
/* "win", "loss", "cannot tell". */
const char *sl_ratio_call_name(sl_ratio_call call);

/* Mann-Whitney U test of whether samples b tend to be larger than samples a
 * (one-sided): U counts pairs (a_i, b_j) with b_j > a_i, ties counting one
 * half; p is from the normal approximation with the tie correction, which
 * is accurate for the 20+ samples a gate compares. */
typedef struct sl_mann_whitney {
    double u;
    double z;
    double p_greater; /* P(U >= u) under "same distribution" */
    bool exact;       /* p from the exact distribution of U, not the normal approximation */
} sl_mann_whitney;

/* Samples without ties and both sides at most SL_MANN_WHITNEY_EXACT_MAX
 * long get the exact p (the permutation distribution of U, counted), which
 * the few repetition medians a gate compares need: the normal
 * approximation is poor below about ten a side. Others get the normal
 * approximation with the tie and continuity corrections. */
#define SL_MANN_WHITNEY_EXACT_MAX 40
bool sl_mann_whitney_greater(const int64_t *a, size_t na, const int64_t *b, size_t nb, sl_mann_whitney *out);

/* Student's t distribution with df degrees of freedom (df > 0): the upper
 * tail P(T > t), from the regularized incomplete beta function, and the
 * quantile q with P(T > q) = p (0 < p < 1), found by bisection on the
 * tail. The gate tests the log of one figure per process with them: the
 * processes, not the repetitions inside one, are what vary
 * independently (docs/gate.md). */
double sl_student_t_upper(double t, double df);
double sl_student_t_quantile_upper(double p, double df);

/* Holm's step-down procedure over m p values at family-wise level alpha:
 * sorted ascending, p(i) is rejected while p(i) <= alpha / (m - i + 1)
 * (i from 1), and nothing after the first that is not. reject[j] says
 * whether p[j] was; threshold[j] is the level p[j] was held to (the one at
 * its rank), for printing. The chance of any false rejection among the m
 * stays at most alpha whatever their dependence. */
void sl_holm(const double *p, int m, double alpha, bool *reject, double *threshold);

#ifdef __cplusplus
}
#endif

#endif
