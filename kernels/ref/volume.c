/* Reference volume movement, one byte of one voxel at a time. */
#include "ref/ref.h"

void sl__ref_crop3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox)
{
    (void)d;
    const unsigned char *in = src;
    unsigned char *out = dst;
    for (int z = 0; z < pd; z++)
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++)
                for (size_t b = 0; b < voxel_bytes; b++) {
                    size_t o = (((size_t)z * (size_t)ph + (size_t)y) * (size_t)pw + (size_t)x) * voxel_bytes + b;
                    size_t i = (size_t)sl__body_crop3d_src(z, y, x, h, w, oz, oy, ox) * voxel_bytes + b;
                    out[o] = in[i];
                }
}

/* The flip maps each voxel to its mirror image and back, so swapping every
 * pair once (from its lower index) flips the whole volume. */
void sl__ref_flip3d(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes)
{
    unsigned char *v = volume;
    for (int z = 0; z < d; z++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                size_t a = ((size_t)z * (size_t)h + (size_t)y) * (size_t)w + (size_t)x;
                size_t m = (size_t)sl__body_flip3d_src(z, y, x, d, h, w, axes);
                if (a >= m)
                    continue;
                for (size_t b = 0; b < voxel_bytes; b++) {
                    unsigned char t = v[a * voxel_bytes + b];
                    v[a * voxel_bytes + b] = v[m * voxel_bytes + b];
                    v[m * voxel_bytes + b] = t;
                }
            }
}
