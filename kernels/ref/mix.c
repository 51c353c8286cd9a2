/* Reference kernels of the mixing ops: a weighted blend of two rows and a
 * box pasted from one image into another. */
#include "ref/ref.h"

void sl__ref_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = sl__body_blend(a[i], b[i], wa, wb);
}

void sl__ref_paste_box(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0, int x1)
{
    (void)h;
    unsigned char *out = dst;
    const unsigned char *in = src;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            for (size_t b = 0; b < pixel_bytes; b++) {
                size_t i = ((size_t)y * (size_t)w + (size_t)x) * pixel_bytes + b;
                out[i] = in[i];
            }
}
