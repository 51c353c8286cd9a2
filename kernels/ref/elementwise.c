/* Reference element-wise chain: each step over the whole buffer in turn,
 * exactly as an unfused pipeline would run it. */
#include "ref.h"

void sl__ref_ew_chain(float *x, int64_t n, const sl_ew_step *steps, int nsteps)
{
    for (int s = 0; s < nsteps; s++)
        for (int64_t i = 0; i < n; i++)
            x[i] = sl__ew_apply(&steps[s], x[i]);
}
