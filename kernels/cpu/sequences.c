/* Optimized dynamic padding and attention masks: whole runs with memmove and
 * memset instead of one token at a time. Pure data movement, equal to the
 * reference by construction. */
#include <string.h>

#include "cpu/cpu.h"

static int64_t clamped_length(int32_t length, int64_t width)
{
    return length < 0 ? 0 : (length > width ? width : length);
}

void sl__cpu_pad_rows(int32_t *tokens, const int32_t *lengths, int64_t rows, int64_t stride, int64_t width, int32_t pad)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t keep = clamped_length(lengths[r], width);
        int32_t *out = tokens + r * width;
        /* The row's new place may overlap its old one (row 1 onwards). */
        if (r > 0 && keep > 0)
            memmove(out, tokens + r * stride, (size_t)keep * sizeof *out);
        for (int64_t i = keep; i < width; i++)
            out[i] = pad;
    }
}

void sl__cpu_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t keep = clamped_length(lengths[r], width);
        memset(mask + r * width, 1, (size_t)keep);
        memset(mask + r * width + keep, 0, (size_t)(width - keep));
    }
}
