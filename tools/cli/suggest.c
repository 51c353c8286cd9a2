/* "Did you mean ...?": the known name nearest to a mistyped one, as git and
 * hyperfine suggest. Distance is the optimal string alignment distance
 * (insertions, deletions, substitutions and swaps of neighbours, each one
 * edit), ignoring case, since a scenario id typed in lower case or two
 * swapped letters are the usual slips. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t sl__edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    size_t *d = sl__cli_alloc((na + 1) * (nb + 1) * sizeof *d);
#define D(i, j) d[(i) * (nb + 1) + (j)]
    for (size_t i = 0; i <= na; i++)
        D(i, 0) = i;
    for (size_t j = 0; j <= nb; j++)
        D(0, j) = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            D(i, j) = min3(D(i - 1, j) + 1, D(i, j - 1) + 1, D(i - 1, j - 1) + (ca != cb));
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                D(i - 2, j - 2) + 1 < D(i, j))
                D(i, j) = D(i - 2, j - 2) + 1;
        }
    size_t result = D(na, nb);
#undef D
    free(d);
    return result;
}

const char *sl__suggest(const char *typed, const char *const *names, int count)
{
    const char *best = NULL;
    size_t best_distance = 0;
    size_t length = strlen(typed);
    /* Close enough to be the same word mistyped: a third of its letters at
     * most, and at least one. */
    size_t limit = length / 3 > 0 ? length / 3 : 1;
    for (int i = 0; i < count; i++) {
        size_t distance = sl__edit_distance(typed, names[i]);
        if (distance <= limit && distance < length && (!best || distance < best_distance)) {
            best = names[i];
            best_distance = distance;
        }
    }
    return best;
}

void sl__did_you_mean(char *buf, size_t size, const char *typed, const char *const *names, int count)
{
    const char *near = sl__suggest(typed, names, count);
    if (near)
        snprintf(buf, size, " (did you mean '%s'?)", near);
    else if (size > 0)
        buf[0] = '\0';
}
