/* Reference element-wise chain: each step over the whole buffer in turn,
 * exactly as an unfused pipeline would run it. */
#include "ref/ref.h"

/* Group by group of SL_NOISE_GROUP values, each from its sixteen blocks
 * (ref.h). */
static void noise(float *x, int64_t n, const sl_ew_step *step)
{
    for (int64_t first = 0; first < n; first += SL_NOISE_GROUP) {
        sl_philox_ctr blocks[SL_NOISE_BLOCKS];
        for (int j = 0; j < SL_NOISE_BLOCKS; j++)
            blocks[j] = sl__noise_block(step, (uint32_t)(first / SL_NOISE_GROUP * SL_NOISE_BLOCKS + j));
        for (int r = 0; r < SL_NOISE_GROUP && first + r < n; r++)
            x[first + r] = sl__noise_apply(x[first + r], step->a, blocks[r % SL_NOISE_BLOCKS].v[r / SL_NOISE_BLOCKS]);
    }
}

void sl__ref_ew_chain(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    for (int s = 0; s < nsteps; s++) {
        if (steps[s].kind == SL_EW_GAUSSIAN_NOISE) {
            noise(x, n, &steps[s]);
            continue;
        }
        for (int64_t i = 0; i < n; i++)
            x[i] = sl__ew_apply(&steps[s], x[i]);
    }
}
