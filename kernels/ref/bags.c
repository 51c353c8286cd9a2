/* Reference embedding-bag offsets: a running count of present ids per
 * column, down the rows. */
#include "ref.h"

void sl__ref_bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns)
{
    for (int j = 0; j < columns; j++) {
        int64_t end = 0;
        for (int64_t r = 0; r < rows; r++) {
            end += ids[r * columns + j] >= 0;
            ends[r * columns + j] = end;
        }
    }
}
