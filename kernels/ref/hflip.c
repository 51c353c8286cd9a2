/* Reference horizontal flip: swap mirrored pixels byte by byte. */
#include "ref/ref.h"

void sl__ref_hflip(void *image, int h, int w, size_t pixel_bytes)
{
    unsigned char *px = image;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w / 2; x++)
            for (size_t b = 0; b < pixel_bytes; b++) {
                size_t a = ((size_t)y * (size_t)w + (size_t)x) * pixel_bytes + b;
                size_t m = ((size_t)y * (size_t)w + (size_t)sl__body_mirror(x, w)) * pixel_bytes + b;
                unsigned char t = px[a];
                px[a] = px[m];
                px[m] = t;
            }
}
