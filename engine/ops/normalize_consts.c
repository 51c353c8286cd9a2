/* Preparing the per-channel constants of normalize and affine, shared by
 * every back end. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/internal.h"
#include "sluice/kernels/kernels.h"

static int greatest_common_divisor(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The tiled period of per-channel constants: a multiple of the channel
 * count. lcm(channels, 16) keeps it a whole number of vectors too; when that
 * grows past 256 values (100 channels give 400) it would exceed the short
 * rows a fused executor transforms one at a time, leaving them to the scalar
 * tail, so the period falls back to the smallest multiple of channels of 64
 * or more. */
static int tiled_period(int channels)
{
    int lcm = channels / greatest_common_divisor(channels, 16) * 16;
    return lcm <= 256 ? lcm : channels * ((64 + channels - 1) / channels);
}

/* Two per-channel arrays tiled to the period; both NULL on failure. */
static bool tile(int channels, int period, const float *a, const float *b, float **a_tiled, float **b_tiled)
{
    *a_tiled = sl__aligned_alloc(SL_ALIGN, (size_t)period * sizeof(float));
    *b_tiled = sl__aligned_alloc(SL_ALIGN, (size_t)period * sizeof(float));
    if (!*a_tiled || !*b_tiled) {
        free(*a_tiled);
        free(*b_tiled);
        *a_tiled = *b_tiled = NULL;
        return false;
    }
    for (int j = 0; j < period; j++) {
        (*a_tiled)[j] = a[j % channels];
        (*b_tiled)[j] = b[j % channels];
    }
    return true;
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
    k->period = tiled_period(channels);
    for (int c = 0; c < channels; c++) {
        k->mean[c] = mean[c];
        k->inv_std[c] = 1.0f / std[c];
    }
    if (!tile(channels, k->period, k->mean, k->inv_std, &k->mean_tiled, &k->inv_std_tiled))
        return sl_fail(err, SL_ENOMEM, "cannot allocate normalize constants for %d channels", channels);
    return SL_OK;
}

void sl_normalize_consts_release(sl_normalize_consts *k)
{
    free(k->mean_tiled);
    free(k->inv_std_tiled);
    k->mean_tiled = k->inv_std_tiled = NULL;
}

sl_status sl_affine_consts_init(sl_affine_consts *k, int channels, const float *scale, const float *bias, sl_err *err)
{
    k->scale_tiled = k->bias_tiled = NULL;
    if (channels < 1 || channels > SL_MAX_CHANNELS)
        return sl_fail(err, SL_EINVAL, "affine needs 1 to %d channels, got %d", SL_MAX_CHANNELS, channels);
    for (int c = 0; c < channels; c++)
        if (!isfinite(scale[c]) || !isfinite(bias[c]))
            return sl_fail(err, SL_EINVAL, "affine scale[%d] %g and bias[%d] %g must be finite", c, (double)scale[c], c,
                           (double)bias[c]);
    k->channels = channels;
    k->period = tiled_period(channels);
    for (int c = 0; c < channels; c++) {
        k->scale[c] = scale[c];
        k->bias[c] = bias[c];
    }
    if (!tile(channels, k->period, k->scale, k->bias, &k->scale_tiled, &k->bias_tiled))
        return sl_fail(err, SL_ENOMEM, "cannot allocate affine constants for %d channels", channels);
    return SL_OK;
}

void sl_affine_consts_release(sl_affine_consts *k)
{
    free(k->scale_tiled);
    free(k->bias_tiled);
    k->scale_tiled = k->bias_tiled = NULL;
}
