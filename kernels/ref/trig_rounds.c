/* IO-4's expensive op (see sl_trig_rounds_fn): eight rounds of sin + cos
 * per value cost about 100 ns, what a decode or a heavy augmentation costs
 * per element, so that a cache after it has something to save. */
#include "ref/ref.h"
#include "sluice/core/detmath.h"

void sl__ref_trig_rounds(const float *in, float *out, int64_t n, int rounds)
{
    for (int64_t i = 0; i < n; i++) {
        double y = in[i];
        for (int r = 0; r < rounds; r++) {
            double s, c;
            sl_det_sincos_turns(y * (1.0 / SL_DET_TWO_PI), &s, &c);
            y = s + c;
        }
        out[i] = (float)y;
    }
}
