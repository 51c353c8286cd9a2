/* Reference crop with zero padding, one byte of one pixel at a time. */
#include "ref.h"

void sl__ref_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w,
                      int off_y, int off_x)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    int top = (h - crop_h) / 2;
    int left = (w - crop_w) / 2;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int cy = y - top, cx = x - left;
            int inside = cy >= 0 && cy < crop_h && cx >= 0 && cx < crop_w;
            for (size_t b = 0; b < pixel_bytes; b++) {
                size_t o = ((size_t)y * (size_t)w + (size_t)x) * pixel_bytes + b;
                size_t i = ((size_t)(cy + off_y) * (size_t)w + (size_t)(cx + off_x)) * pixel_bytes + b;
                out[o] = inside ? in[i] : 0;
            }
        }
}
