/* Reference embedding-bag offsets: a running count of present ids per
 * column, down the rows. Row by row, each row's ends are the previous row's
 * plus its own present ids, so the ids and the ends are both read in order. */
#include "ref/ref.h"

void sl__ref_bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns)
{
    for (int64_t r = 0; r < rows; r++)
        for (int j = 0; j < columns; j++) {
            int64_t before = r > 0 ? ends[(r - 1) * columns + j] : 0;
            ends[r * columns + j] = before + (ids[r * columns + j] >= 0);
        }
}
