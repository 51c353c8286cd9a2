/* Optimized data movement: whole rows with memcpy/memset instead of one byte
 * at a time. Pure copies, so equal to the reference by construction. */
#include <string.h>

#include "cpu/cpu.h"

void sl__cpu_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                      int off_x)
{
    const unsigned char *in = src;
    unsigned char *out = dst;
    size_t row = (size_t)w * pixel_bytes;
    int top = (h - crop_h) / 2;
    int left = (w - crop_w) / 2;
    size_t left_bytes = (size_t)left * pixel_bytes;
    size_t crop_bytes = (size_t)crop_w * pixel_bytes;
    for (int y = 0; y < h; y++) {
        unsigned char *o = out + (size_t)y * row;
        int cy = y - top;
        if (cy < 0 || cy >= crop_h) {
            memset(o, 0, row);
            continue;
        }
        memset(o, 0, left_bytes);
        memcpy(o + left_bytes, in + (size_t)(cy + off_y) * row + (size_t)off_x * pixel_bytes, crop_bytes);
        memset(o + left_bytes + crop_bytes, 0, row - left_bytes - crop_bytes);
    }
}

/* Reverses the pixels of one row into out. PIXEL is a compile-time
 * constant in every instance, so each memcpy becomes a plain move. */
#define DEFINE_REVERSE_ROW(PIXEL)                                                                                      \
    static void reverse_row_##PIXEL(const unsigned char *restrict in, unsigned char *restrict out, int w)              \
    {                                                                                                                  \
        for (int x = 0; x < w; x++)                                                                                    \
            memcpy(out + (size_t)x * PIXEL, in + (size_t)(w - 1 - x) * PIXEL, PIXEL);                                  \
    }
DEFINE_REVERSE_ROW(1)
DEFINE_REVERSE_ROW(3)
DEFINE_REVERSE_ROW(4)
DEFINE_REVERSE_ROW(12)

/* Rows up to this size are reversed through a stack copy; wider ones (or
 * unusual pixel sizes) take the reference path. */
#define MAX_ROW_BYTES 16384

void sl__cpu_hflip(void *image, int h, int w, size_t pixel_bytes)
{
    unsigned char *px = image;
    unsigned char row_copy[MAX_ROW_BYTES];
    size_t row = (size_t)w * pixel_bytes;
    void (*reverse)(const unsigned char *, unsigned char *, int) = NULL;
    switch (pixel_bytes) {
    case 1: reverse = reverse_row_1; break;
    case 3: reverse = reverse_row_3; break;
    case 4: reverse = reverse_row_4; break;
    case 12: reverse = reverse_row_12; break;
    default: break;
    }
    if (!reverse || row > sizeof row_copy) {
        sl__ref_hflip(image, h, w, pixel_bytes);
        return;
    }
    for (int y = 0; y < h; y++) {
        unsigned char *r = px + (size_t)y * row;
        memcpy(row_copy, r, row);
        reverse(row_copy, r, w);
    }
}

void sl__cpu_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad)
{
    int64_t copy = available < seq_len ? available : seq_len;
    if (copy > 0)
        memcpy(dst, src, (size_t)copy * sizeof *dst);
    for (int64_t i = copy < 0 ? 0 : copy; i < seq_len; i++)
        dst[i] = pad;
}
