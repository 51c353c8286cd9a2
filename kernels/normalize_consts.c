/* Preparing normalize constants, shared by every back end. */
#include <stdlib.h>

#include "engine/src/internal.h"
#include "sluice/kernels.h"

static int greatest_common_divisor(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

sl_status sl_normalize_consts_init(sl_normalize_consts *k, int channels, const float *mean, const float *std,
                                   sl_err *err)
{
    k->mean_tiled = k->inv_std_tiled = NULL;
    if (channels < 1 || channels > SL_MAX_CHANNELS)
        return sl_fail(err, SL_EINVAL, "normalize needs 1 to %d channels, got %d", SL_MAX_CHANNELS, channels);
    for (int c = 0; c < channels; c++)
        if (!(std[c] > 0.0f))
            return sl_fail(err, SL_EINVAL, "normalize std[%d] must be positive, got %g", c, (double)std[c]);
    k->channels = channels;
    /* The tiled period is a multiple of the channel count. lcm(channels, 16)
     * keeps it a whole number of vectors too; when that grows past 256 values
     * (100 channels give 400) it would exceed the short rows a fused executor
     * normalizes one at a time, leaving them to the scalar tail, so the
     * period falls back to the smallest multiple of channels of 64 or more. */
    int lcm = channels / greatest_common_divisor(channels, 16) * 16;
    k->period = lcm <= 256 ? lcm : channels * ((64 + channels - 1) / channels);
    k->mean_tiled = sl__aligned_alloc(SL_ALIGN, (size_t)k->period * sizeof(float));
    k->inv_std_tiled = sl__aligned_alloc(SL_ALIGN, (size_t)k->period * sizeof(float));
    if (!k->mean_tiled || !k->inv_std_tiled) {
        sl_normalize_consts_release(k);
        return sl_fail(err, SL_ENOMEM, "cannot allocate normalize constants for %d channels", channels);
    }
    for (int c = 0; c < channels; c++) {
        k->mean[c] = mean[c];
        k->inv_std[c] = 1.0f / std[c];
    }
    for (int j = 0; j < k->period; j++) {
        k->mean_tiled[j] = k->mean[j % channels];
        k->inv_std_tiled[j] = k->inv_std[j % channels];
    }
    return SL_OK;
}

void sl_normalize_consts_release(sl_normalize_consts *k)
{
    free(k->mean_tiled);
    free(k->inv_std_tiled);
    k->mean_tiled = k->inv_std_tiled = NULL;
}
