/* Reference dynamic padding and attention masks, one token at a time. */
#include "ref/ref.h"

/* Rows move towards the start (width <= stride), so going up the rows never
 * overwrites a row not yet moved; within a row, each token is read before
 * any token at a lower address of a later row is written. */
void sl__ref_pad_rows(int32_t *tokens, const int32_t *lengths, int64_t rows, int64_t stride, int64_t width, int32_t pad)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t keep = sl__body_clamped_length(lengths[r], width);
        for (int64_t i = 0; i < width; i++)
            tokens[r * width + i] = i < keep ? tokens[r * stride + i] : pad;
    }
}

void sl__ref_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t keep = sl__body_clamped_length(lengths[r], width);
        for (int64_t i = 0; i < width; i++)
            mask[r * width + i] = i < keep;
    }
}
