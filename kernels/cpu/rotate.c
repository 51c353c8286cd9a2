/* Optimized quarter turns. A half turn reverses whole rows; a quarter turn
 * reads the source down its columns, so the image is walked in square
 * tiles whose source rows stay in L1 while a tile of output rows is
 * written. Pure copies, so equal to the reference by construction. */
#include <string.h>

#include "cpu/cpu.h"

/* 16 x 16 pixels of 12 bytes (f32 RGB) is 3 KiB of source a tile. */
#define TILE 16

/* The body, instantiated with a constant pixel size for the common pixels
 * (each memcpy then becomes a plain move) and once with a variable one. */
SL_ALWAYS_INLINE void turn(const unsigned char *restrict in, unsigned char *restrict out, int n, int k, size_t pixel)
{
    size_t row = (size_t)n * pixel;
    if (k == 0) {
        memcpy(out, in, row * (size_t)n);
        return;
    }
    if (k == 2) {
        for (int y = 0; y < n; y++) {
            const unsigned char *s = in + (size_t)(n - 1 - y) * row;
            unsigned char *o = out + (size_t)y * row;
            for (int x = 0; x < n; x++)
                memcpy(o + (size_t)x * pixel, s + (size_t)(n - 1 - x) * pixel, pixel);
        }
        return;
    }
    for (int y0 = 0; y0 < n; y0 += TILE)
        for (int x0 = 0; x0 < n; x0 += TILE) {
            int y1 = y0 + TILE < n ? y0 + TILE : n, x1 = x0 + TILE < n ? x0 + TILE : n;
            for (int y = y0; y < y1; y++) {
                unsigned char *o = out + (size_t)y * row;
                if (k == 1) {
                    /* dst[y][x] = src[x][n-1-y]: down column n-1-y. */
                    const unsigned char *s = in + (size_t)(n - 1 - y) * pixel;
                    for (int x = x0; x < x1; x++)
                        memcpy(o + (size_t)x * pixel, s + (size_t)x * row, pixel);
                } else {
                    /* dst[y][x] = src[n-1-x][y]: up column y. */
                    const unsigned char *s = in + (size_t)y * pixel;
                    for (int x = x0; x < x1; x++)
                        memcpy(o + (size_t)x * pixel, s + (size_t)(n - 1 - x) * row, pixel);
                }
            }
        }
}

#define DEFINE_TURN(PIXEL)                                                                                             \
    static void turn_##PIXEL(const unsigned char *in, unsigned char *out, int n, int k)                                \
    {                                                                                                                  \
        turn(in, out, n, k, PIXEL);                                                                                    \
    }
DEFINE_TURN(1)
DEFINE_TURN(3)
DEFINE_TURN(4)
DEFINE_TURN(12)

void sl__cpu_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    k &= 3;
    switch (pixel_bytes) {
    case 1: turn_1(in, out, side, k); break;
    case 3: turn_3(in, out, side, k); break;
    case 4: turn_4(in, out, side, k); break;
    case 12: turn_12(in, out, side, k); break;
    default: turn(in, out, side, k, pixel_bytes); break;
    }
}
