/* Optimized volume movement: whole rows with memcpy, and a flip that moves
 * each row once to its mirrored place. Pure copies, so equal to the
 * reference by construction. */
#include <string.h>

#include "cpu/cpu.h"

void sl__cpu_crop3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox)
{
    (void)d;
    const unsigned char *in = src;
    unsigned char *out = dst;
    size_t in_row = (size_t)w * voxel_bytes, out_row = (size_t)pw * voxel_bytes;
    for (int z = 0; z < pd; z++)
        for (int y = 0; y < ph; y++)
            memcpy(out + ((size_t)z * (size_t)ph + (size_t)y) * out_row,
                   in + ((size_t)(z + oz) * (size_t)h + (size_t)(y + oy)) * in_row + (size_t)ox * voxel_bytes, out_row);
}

/* Writes row `in` into `out`, mirrored when reverse. VOXEL is a constant in
 * the common instances, so each memcpy is one move. */
#define DEFINE_PLACE_ROW(VOXEL)                                                                                        \
    static void place_row_##VOXEL(unsigned char *restrict out, const unsigned char *restrict in, int w, bool reverse)  \
    {                                                                                                                  \
        if (!reverse) {                                                                                                \
            memcpy(out, in, (size_t)w *VOXEL);                                                                         \
            return;                                                                                                    \
        }                                                                                                              \
        for (int x = 0; x < w; x++)                                                                                    \
            memcpy(out + (size_t)x * VOXEL, in + (size_t)(w - 1 - x) * VOXEL, VOXEL);                                  \
    }
DEFINE_PLACE_ROW(1)
DEFINE_PLACE_ROW(2)
DEFINE_PLACE_ROW(4)
DEFINE_PLACE_ROW(8)

/* Rows up to this size go through two stack copies; wider ones (or other
 * voxel sizes) take the reference path. */
#define MAX_ROW_BYTES 16384

/* Row (z, y) and its mirror (z', y') trade places, each reversed when the
 * width axis flips: the volume is read and written once. */
void sl__cpu_flip3d(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes)
{
    void (*place)(unsigned char *, const unsigned char *, int, bool) = NULL;
    switch (voxel_bytes) {
    case 1: place = place_row_1; break;
    case 2: place = place_row_2; break;
    case 4: place = place_row_4; break;
    case 8: place = place_row_8; break;
    default: break;
    }
    size_t row = (size_t)w * voxel_bytes;
    if (!place || row > MAX_ROW_BYTES) {
        sl__ref_flip3d(volume, d, h, w, voxel_bytes, axes);
        return;
    }
    if (!axes)
        return;
    unsigned char *v = volume;
    unsigned char first[MAX_ROW_BYTES], second[MAX_ROW_BYTES];
    bool reverse = axes & SL_AXIS_W;
    for (int z = 0; z < d; z++)
        for (int y = 0; y < h; y++) {
            int mz = axes & SL_AXIS_D ? d - 1 - z : z;
            int my = axes & SL_AXIS_H ? h - 1 - y : y;
            size_t a = (size_t)z * (size_t)h + (size_t)y, m = (size_t)mz * (size_t)h + (size_t)my;
            if (a > m)
                continue;
            unsigned char *ra = v + a * row, *rm = v + m * row;
            if (a == m) {
                if (reverse) {
                    memcpy(first, ra, row);
                    place(ra, first, w, true);
                }
                continue;
            }
            memcpy(first, ra, row);
            memcpy(second, rm, row);
            place(ra, second, w, reverse);
            place(rm, first, w, reverse);
        }
}
