/* Reference crop with zero padding, one byte of one pixel at a time. */
#include "ref/ref.h"

void sl__ref_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                      int off_x)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int64_t from = sl__body_crop_pad_src(y, x, h, w, crop_h, crop_w, off_y, off_x);
            for (size_t b = 0; b < pixel_bytes; b++) {
                size_t o = ((size_t)y * (size_t)w + (size_t)x) * pixel_bytes + b;
                out[o] = from < 0 ? 0 : in[(size_t)from * pixel_bytes + b];
            }
        }
}
