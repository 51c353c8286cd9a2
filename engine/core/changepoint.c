/* E-divisive means with a permutation test, and the Hodges-Lehmann shift
 * with Moses' interval (sluice/core/changepoint.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/core/changepoint.h"
#include "sluice/core/philox.h"

void sl_changepoint_defaults(sl_changepoint_options *options)
{
    options->alpha = SL_CHANGEPOINT_ALPHA;
    options->permutations = SL_CHANGEPOINT_PERMUTATIONS;
    options->min_segment = 1;
    options->seed = SL_CHANGEPOINT_SEED;
    options->clip_mads = SL_CHANGEPOINT_CLIP_MADS;
}

typedef struct split {
    int tau;
    double q;
} split;

/* Where a split may fall and how many groups (commits) a stretch holds:
 * group[i] is point i's group number, nondecreasing, and a split may fall
 * only between two groups, never inside one. */
typedef struct grouping {
    const int *group;
} grouping;

static bool may_cut(const grouping *g, int at, int n)
{
    return at == 0 || at == n || g->group[at] != g->group[at - 1];
}

/* The groups x[a, b) touches; a < b. */
static int groups_in(const grouping *g, int a, int b)
{
    return g->group[b - 1] - g->group[a] + 1;
}

/* The best split of x[s, e) that leaves at least min groups on each side:
 * the largest q over tau and the end kappa of the right side, x[s, tau)
 * against x[tau, kappa) (Matteson and James's search; letting the right
 * side end before the segment does is what finds a change that is undone
 * later, A B A, where comparing A with the mixture B A would not). tau and
 * kappa fall between groups only. The pairwise distances are summed once
 * into a table of prefix sums, so every (tau, kappa) costs O(1) and a
 * segment of L points O(L^2). Ties go to the smallest tau, then kappa.
 * False when the segment has too few groups. */
static bool best_split(const double *x, int n, const grouping *g, int s, int e, int min, double *prefix, split *best)
{
    int L = e - s;
    if (L < 2 || groups_in(g, s, e) < 2 * min)
        return false;
    size_t w = (size_t)L + 1;
    /* prefix[a * w + b] = sum over a' < a, b' < b of |x[s + a'] - x[s + b']|. */
    for (size_t b = 0; b < w; b++)
        prefix[b] = 0.0;
    for (int a = 0; a < L; a++) {
        double row = 0.0;
        prefix[(size_t)(a + 1) * w] = 0.0;
        for (int b = 0; b < L; b++) {
            row += fabs(x[s + a] - x[s + b]);
            prefix[(size_t)(a + 1) * w + (size_t)b + 1] = prefix[(size_t)a * w + (size_t)b + 1] + row;
        }
    }
#define RECT(a0, a1, b0, b1)                                                                                           \
    (prefix[(size_t)(a1)*w + (size_t)(b1)] - prefix[(size_t)(a0)*w + (size_t)(b1)] -                                   \
     prefix[(size_t)(a1)*w + (size_t)(b0)] + prefix[(size_t)(a0)*w + (size_t)(b0)])
    bool found = false;
    for (int tau = 1; tau < L; tau++) {
        if (!may_cut(g, s + tau, n) || groups_in(g, s, s + tau) < min || groups_in(g, s + tau, e) < min)
            continue;
        double m = tau;
        double within_left = RECT(0, tau, 0, tau) / 2.0;
        for (int kappa = tau + 1; kappa <= L; kappa++) {
            if (!may_cut(g, s + kappa, n) || groups_in(g, s + tau, s + kappa) < min)
                continue;
            double k = kappa - tau;
            double between = RECT(0, tau, tau, kappa);
            double within_right = RECT(tau, kappa, tau, kappa) / 2.0;
            double divergence = 2.0 * between / (m * k) - (m > 1 ? 2.0 * within_left / (m * (m - 1)) : 0.0) -
                                (k > 1 ? 2.0 * within_right / (k * (k - 1)) : 0.0);
            double q = m * k / (m + k) * divergence;
            if (!found || q > best->q) {
                best->tau = s + tau;
                best->q = q;
                found = true;
            }
        }
    }
#undef RECT
    return found;
}

/* The best split over every segment of the partition cuts[0..ncuts) (cut
 * points, 0 and n included). */
static bool best_over_segments(const double *x, int n, const grouping *g, const int *cuts, int ncuts, int min,
                               double *prefix, split *best)
{
    bool found = false;
    for (int c = 0; c + 1 < ncuts; c++) {
        split here;
        if (best_split(x, n, g, cuts[c], cuts[c + 1], min, prefix, &here) && (!found || here.q > best->q)) {
            *best = here;
            found = true;
        }
    }
    return found;
}

/* Shuffles y within every segment (Fisher-Yates). Draw j of shuffle r of
 * test `order` is word j % 4 of Philox's block (r, order, j / 4), so the
 * shuffles depend on nothing but the seed and their place. */
static void shuffle_segments(double *y, const int *cuts, int ncuts, sl_philox_key key, int order, int r)
{
    sl_philox_ctr block = {{0, 0, 0, 0}};
    uint32_t draw = 0;
    for (int c = 0; c + 1 < ncuts; c++) {
        for (int i = cuts[c + 1] - 1; i > cuts[c]; i--) {
            if (draw % 4 == 0)
                block = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)r, (uint32_t)order, draw / 4), key);
            uint32_t word = block.v[draw % 4];
            draw++;
            int j = cuts[c] + (int)sl_u32_below(word, (uint32_t)(i - cuts[c] + 1));
            double t = y[i];
            y[i] = y[j];
            y[j] = t;
        }
    }
}

static int compare_changepoints(const void *a, const void *b)
{
    const sl_changepoint *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

static void insert_cut(int *cuts, int *ncuts, int tau)
{
    int at = *ncuts;
    while (at > 0 && cuts[at - 1] > tau) {
        cuts[at] = cuts[at - 1];
        at--;
    }
    cuts[at] = tau;
    (*ncuts)++;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *scratch, const double *x, int n)
{
    memcpy(scratch, x, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, compare_doubles);
    return n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2.0;
}

/* Winsorizes x in place at its median +- c MADs (the median absolute
 * deviation from the median); nothing changes when the MAD is 0. */
static void clip_to_mads(double *x, int n, double c, double *scratch)
{
    double mid = median_of(scratch, x, n);
    for (int i = 0; i < n; i++)
        scratch[i] = fabs(x[i] - mid);
    double mad = median_of(scratch + n, scratch, n);
    if (!(mad > 0.0))
        return;
    for (int i = 0; i < n; i++)
        x[i] = fmin(fmax(x[i], mid - c * mad), mid + c * mad);
}

/* x winsorized within each segment of the partition cuts, into out: a
 * point is clipped against its own segment's median and MAD, never the
 * whole series', so a new level found by an earlier split is not pulled
 * back towards the old one. A segment's median and MAD do not depend on
 * the order of its points, so clipping commutes with the shuffles within
 * segments and the permutation test is unchanged by it. */
static void clip_within_segments(const double *x, int n, const int *cuts, int ncuts, double c, double *out,
                                 double *scratch)
{
    memcpy(out, x, (size_t)n * sizeof *out);
    if (!(c > 0.0))
        return;
    for (int k = 0; k + 1 < ncuts; k++)
        if (cuts[k + 1] - cuts[k] > 2)
            clip_to_mads(out + cuts[k], cuts[k + 1] - cuts[k], c, scratch);
}

int sl_edivisive(const double *x, int n, const sl_changepoint_options *options, sl_changepoint *out, int max)
{
    return sl_edivisive_grouped(x, NULL, n, options, out, max);
}

int sl_edivisive_grouped(const double *x, const int *group, int n, const sl_changepoint_options *options,
                         sl_changepoint *out, int max)
{
    sl_changepoint_options defaults;
    sl_changepoint_defaults(&defaults);
    if (!options)
        options = &defaults;
    int min = options->min_segment > 0 ? options->min_segment : 1;
    if (n < 2 || max <= 0)
        return 0;
    int *cuts = malloc((size_t)(n + 2) * sizeof *cuts);
    int *own_groups = group ? NULL : malloc((size_t)n * sizeof *own_groups);
    double *y = malloc((size_t)n * sizeof *y);
    double *prefix = malloc((size_t)(n + 1) * (size_t)(n + 1) * sizeof *prefix);
    double *values = malloc((size_t)n * 3 * sizeof *values);
    if (!cuts || (!group && !own_groups) || !y || !prefix || !values) {
        free(cuts);
        free(own_groups);
        free(y);
        free(prefix);
        free(values);
        return -1;
    }
    if (!group) {
        /* Ungrouped: every point is a group of its own. */
        for (int i = 0; i < n; i++)
            own_groups[i] = i;
        group = own_groups;
    }
    grouping g = {group};
    cuts[0] = 0;
    cuts[1] = n;
    int ncuts = 2, found = 0;
    sl_philox_key key = sl_philox_key_for(options->seed, 0);
    for (int order = 0; found < max; order++) {
        /* Clipped afresh within the segments found so far. */
        clip_within_segments(x, n, cuts, ncuts, options->clip_mads, values, values + n);
        split best;
        if (!best_over_segments(values, n, &g, cuts, ncuts, min, prefix, &best))
            break;
        int beaten_by = 0;
        for (int r = 0; r < options->permutations; r++) {
            memcpy(y, values, (size_t)n * sizeof *y);
            shuffle_segments(y, cuts, ncuts, key, order, r);
            split shuffled;
            if (best_over_segments(y, n, &g, cuts, ncuts, min, prefix, &shuffled) && shuffled.q >= best.q)
                beaten_by++;
        }
        double p = (1.0 + beaten_by) / (1.0 + options->permutations);
        if (p > options->alpha)
            break;
        out[found++] = (sl_changepoint){.index = best.tau, .q = best.q, .p = p, .order = order};
        insert_cut(cuts, &ncuts, best.tau);
    }
    free(cuts);
    free(own_groups);
    free(y);
    free(prefix);
    free(values);
    qsort(out, (size_t)found, sizeof *out, compare_changepoints);
    return found;
}

/* C(n, k) as a double (exact while it fits in 53 bits, which is all the
 * comparison with 1 / alpha needs). */
static double binomial(int n, int k)
{
    double c = 1.0;
    for (int i = 1; i <= k; i++)
        c = c * (n - k + i) / i;
    return c;
}

bool sl_changepoint_testable(int n, int ngroups, const sl_changepoint_options *options)
{
    sl_changepoint_options defaults;
    sl_changepoint_defaults(&defaults);
    if (!options)
        options = &defaults;
    int min = options->min_segment > 0 ? options->min_segment : 1;
    return ngroups >= 2 * min && n >= 2 && binomial(n, n / 2) * options->alpha >= 1.0 &&
           (1.0 + options->permutations) * options->alpha >= 1.0;
}

int sl_changepoint_points_needed(const sl_changepoint_options *options)
{
    sl_changepoint_options defaults;
    sl_changepoint_defaults(&defaults);
    if (!options)
        options = &defaults;
    int n = 2;
    while (n < 1000 && binomial(n, n / 2) * options->alpha < 1.0)
        n++;
    return n;
}

/* P(U <= u) for u = 0 .. m n under no shift, exactly: the number of ways
 * N(i, j, u) to interleave i points of one side and j of the other with U =
 * u satisfies N(i, j, u) = N(i - 1, j, u - j) + N(i, j - 1, u) (the largest
 * point belongs to the first side, and is above all j of the other, or to
 * the second). Counts are kept as doubles: C(100, 50) < 2^97 loses only
 * rounding in the last bits. */
static double *mann_whitney_cdf(int m, int n)
{
    int umax = m * n;
    size_t width = (size_t)umax + 1;
    double *prev = calloc((size_t)(n + 1) * width, sizeof *prev);
    double *cur = calloc((size_t)(n + 1) * width, sizeof *cur);
    double *cdf = malloc(width * sizeof *cdf);
    if (!prev || !cur || !cdf) {
        free(prev);
        free(cur);
        free(cdf);
        return NULL;
    }
    /* i = 0: one way, U = 0, for every j. */
    for (int j = 0; j <= n; j++)
        prev[(size_t)j * width] = 1.0;
    for (int i = 1; i <= m; i++) {
        memset(cur, 0, (size_t)(n + 1) * width * sizeof *cur);
        cur[0] = 1.0; /* j = 0 */
        for (int j = 1; j <= n; j++)
            for (int u = 0; u <= i * j; u++)
                cur[(size_t)j * width + (size_t)u] = (u >= j ? prev[(size_t)j * width + (size_t)(u - j)] : 0.0) +
                                                     cur[(size_t)(j - 1) * width + (size_t)u];
        double *t = prev;
        prev = cur;
        cur = t;
    }
    double total = 0.0;
    for (int u = 0; u <= umax; u++)
        total += prev[(size_t)n * width + (size_t)u];
    double running = 0.0;
    for (int u = 0; u <= umax; u++) {
        running += prev[(size_t)n * width + (size_t)u];
        cdf[u] = running / total;
    }
    free(prev);
    free(cur);
    return cdf;
}

/* P(U <= u) by the normal approximation with continuity correction. */
static double normal_cdf_of_u(int m, int n, int u)
{
    double mean = (double)m * n / 2.0, sd = sqrt((double)m * n * (m + n + 1) / 12.0);
    return 0.5 * erfc(-((u + 0.5) - mean) / sd / sqrt(2.0));
}

bool sl_shift_estimate(const double *a, int na, const double *b, int nb, double level, sl_shift *out)
{
    memset(out, 0, sizeof *out);
    if (na <= 0 || nb <= 0)
        return false;
    size_t count = (size_t)na * (size_t)nb;
    double *d = malloc(count * sizeof *d);
    if (!d)
        return false;
    size_t k = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            d[k++] = b[j] - a[i];
    qsort(d, count, sizeof *d, compare_doubles);
    out->estimate = count % 2 ? d[count / 2] : (d[count / 2 - 1] + d[count / 2]) / 2.0;

    bool exact = na <= SL_SHIFT_EXACT_MAX && nb <= SL_SHIFT_EXACT_MAX;
    double *cdf = exact ? mann_whitney_cdf(na, nb) : NULL;
    if (exact && !cdf) {
        free(d);
        return false;
    }
    /* The largest c (1-based rank) with 2 P(U <= c - 1) <= 1 - level. */
    double tail = (1.0 - level) / 2.0;
    int c = 0;
    while ((size_t)c < count / 2 && (exact ? cdf[c] : normal_cdf_of_u(na, nb, c)) <= tail)
        c++;
    if (c == 0) {
        /* No interval reaches the level: the widest one, with its own. */
        c = 1;
    }
    double below = exact ? cdf[c - 1] : normal_cdf_of_u(na, nb, c - 1);
    out->level = 1.0 - 2.0 * below;
    out->lo = d[c - 1];
    out->hi = d[count - (size_t)c];
    free(cdf);
    free(d);
    return true;
}
