/* Bilinear resize plans: the source indices and weights of every output row
 * and column, computed once (per op at pipeline build, or per element for a
 * random resized crop) and read by every back end. */
#include <stdint.h>

#include "kernels/bodies.h"
#include "sluice/core/tensor.h"
#include "sluice/kernels/kernels.h"

/* Each array starts on its own SL_ALIGN boundary, so vector loads of the
 * per-value arrays never straddle a cache line at their start. */
static size_t aligned(size_t bytes)
{
    return (bytes + SL_ALIGN - 1) / SL_ALIGN * SL_ALIGN;
}

size_t sl_resize_plan_bytes(int out_h, int out_w, int channels)
{
    size_t values = (size_t)out_w * (size_t)channels;
    return 3 * aligned((size_t)out_h * 4) + 3 * aligned((size_t)out_w * 4) + 3 * aligned(values * 4);
}

static void *carve(char **cursor, size_t bytes)
{
    void *at = *cursor;
    *cursor += aligned(bytes);
    return at;
}

/* The axis of one dimension, by the body every back end computes it with
 * (kernels/bodies.h). */
static void plan_axis(int in, int out, int32_t *i0, int32_t *i1, float *w)
{
    for (int d = 0; d < out; d++)
        sl__body_resize_axis(d, in, out, &i0[d], &i1[d], &w[d]);
}

void sl_resize_plan_init(sl_resize_plan *plan, void *storage, int in_h, int in_w, int out_h, int out_w, int channels)
{
    char *cursor = storage;
    size_t values = (size_t)out_w * (size_t)channels;
    plan->in_h = in_h;
    plan->in_w = in_w;
    plan->out_h = out_h;
    plan->out_w = out_w;
    plan->channels = channels;
    plan->y0 = carve(&cursor, (size_t)out_h * 4);
    plan->y1 = carve(&cursor, (size_t)out_h * 4);
    plan->wy = carve(&cursor, (size_t)out_h * 4);
    plan->x0 = carve(&cursor, (size_t)out_w * 4);
    plan->x1 = carve(&cursor, (size_t)out_w * 4);
    plan->wx = carve(&cursor, (size_t)out_w * 4);
    plan->v0 = carve(&cursor, values * 4);
    plan->v1 = carve(&cursor, values * 4);
    plan->wv = carve(&cursor, values * 4);
    plan_axis(in_h, out_h, plan->y0, plan->y1, plan->wy);
    plan_axis(in_w, out_w, plan->x0, plan->x1, plan->wx);
    for (int x = 0; x < out_w; x++)
        for (int c = 0; c < channels; c++) {
            size_t j = (size_t)x * (size_t)channels + (size_t)c;
            plan->v0[j] = plan->x0[x] * channels + c;
            plan->v1[j] = plan->x1[x] * channels + c;
            plan->wv[j] = plan->wx[x];
        }
}

size_t sl_resize_scratch_values(const sl_resize_plan *plan)
{
    /* Two source rows resampled along the width: the optimized kernels' row
     * cache. The reference needs none, but every back end gets the same. */
    return 2 * (size_t)plan->out_w * (size_t)plan->channels;
}
