/* Reference quarter turns: each output byte fetched from the source pixel
 * the definition names, one byte at a time. */
#include "ref/ref.h"

void sl__ref_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    int n = side;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            size_t from = (size_t)sl__body_rot90_src(y, x, n, k);
            for (size_t b = 0; b < pixel_bytes; b++)
                out[((size_t)y * (size_t)n + (size_t)x) * pixel_bytes + b] = in[from * pixel_bytes + b];
        }
}
