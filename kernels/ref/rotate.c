/* Reference quarter turns: each output byte fetched from the source pixel
 * the definition names, one byte at a time. */
#include "ref.h"

void sl__ref_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    int n = side;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            int sy, sx;
            switch (k & 3) {
            case 0: sy = y, sx = x; break;
            case 1: sy = x, sx = n - 1 - y; break;
            case 2: sy = n - 1 - y, sx = n - 1 - x; break;
            default: sy = n - 1 - x, sx = y; break;
            }
            for (size_t b = 0; b < pixel_bytes; b++)
                out[((size_t)y * (size_t)n + (size_t)x) * pixel_bytes + b] =
                    in[((size_t)sy * (size_t)n + (size_t)sx) * pixel_bytes + b];
        }
}
