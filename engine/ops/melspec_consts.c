/* Log-mel constants: the windowed real DFT matrix and the mel filter bank,
 * computed once per op with sluice's libm-free functions, so the matrices
 * (and hence the reference output) are the same bits on every machine. */
#include <stdlib.h>

#include "core/internal.h"
#include "sluice/core/detmath.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/op_consts.h"

#define LN10 2.302585092994045684017991454684

static double hz_to_mel(double hz)
{
    return 2595.0 * sl_det_log(1.0 + hz / 700.0) / LN10;
}

static double mel_to_hz(double mel)
{
    return 700.0 * (sl_det_exp(mel * LN10 / 2595.0) - 1.0);
}

sl_status sl_melspec_consts_init(sl_melspec_consts *k, int samples, int sample_rate, int frame, int hop, int n_fft,
                                 int mels, sl_err *err)
{
    k->dft = k->filters = NULL;
    if (sample_rate < 1 || sample_rate > 1000000)
        return sl_fail(err, SL_EINVAL, "log_mel sample_rate must be in [1, 1000000], got %d", sample_rate);
    if (frame < 2 || frame > 65536 || frame > samples)
        return sl_fail(err, SL_EINVAL, "log_mel frame must be in [2, 65536] and at most the %d samples, got %d",
                       samples, frame);
    if (hop < 1 || hop > frame)
        return sl_fail(err, SL_EINVAL, "log_mel hop must be in [1, frame %d], got %d", frame, hop);
    if (n_fft < frame || n_fft > 65536)
        return sl_fail(err, SL_EINVAL, "log_mel n_fft must be in [frame %d, 65536], got %d", frame, n_fft);
    if (mels < 1 || mels > n_fft / 2)
        return sl_fail(err, SL_EINVAL, "log_mel mels must be in [1, n_fft / 2 = %d], got %d", n_fft / 2, mels);
    k->samples = samples;
    k->sample_rate = sample_rate;
    k->frame = frame;
    k->hop = hop;
    k->n_fft = n_fft;
    k->mels = mels;
    k->frames = 1 + (samples - frame) / hop;
    k->bins = n_fft / 2 + 1;
    size_t columns = 2 * (size_t)k->bins;
    k->dft = sl__aligned_alloc(SL_ALIGN, (size_t)frame * columns * sizeof(float));
    k->filters = sl__aligned_alloc(SL_ALIGN, (size_t)k->bins * (size_t)mels * sizeof(float));
    if (!k->dft || !k->filters) {
        sl_melspec_consts_release(k);
        return sl_fail(err, SL_ENOMEM, "cannot allocate log_mel matrices for frame %d, n_fft %d", frame, n_fft);
    }
    /* Row n, column j < bins: w[n] cos(2 pi j n / n_fft); column bins + j:
     * -w[n] sin(2 pi j n / n_fft), with the periodic Hann window
     * w[n] = 1/2 - cos(2 pi n / frame) / 2 (torch.hann_window's default).
     * The angle is reduced exactly, as the integer (j n) mod n_fft. */
    for (int n = 0; n < frame; n++) {
        double w = 0.5 - 0.5 * sl_det_cos_turns((double)n / frame);
        for (int j = 0; j < k->bins; j++) {
            double turns = (double)(((int64_t)j * n) % n_fft) / n_fft;
            k->dft[(size_t)n * columns + (size_t)j] = (float)(w * sl_det_cos_turns(turns));
            k->dft[(size_t)n * columns + (size_t)k->bins + (size_t)j] = (float)(-w * sl_det_sin_turns(turns));
        }
    }
    /* Filter m rises from edge m to its peak of 1 at edge m + 1 and falls to
     * edge m + 2, the mels + 2 edges evenly spaced in mel from 0 Hz to the
     * Nyquist frequency. */
    double *edges = malloc((size_t)(mels + 2) * sizeof *edges);
    if (!edges) {
        sl_melspec_consts_release(k);
        return sl_fail(err, SL_ENOMEM, "cannot allocate %d mel edges", mels + 2);
    }
    double top = hz_to_mel(sample_rate / 2.0);
    for (int i = 0; i < mels + 2; i++)
        edges[i] = mel_to_hz(top * i / (mels + 1));
    for (int j = 0; j < k->bins; j++) {
        double f = (double)j * sample_rate / n_fft;
        for (int m = 0; m < mels; m++) {
            double rise = (f - edges[m]) / (edges[m + 1] - edges[m]);
            double fall = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]);
            double w = rise < fall ? rise : fall;
            k->filters[(size_t)j * (size_t)mels + (size_t)m] = (float)(w > 0.0 ? w : 0.0);
        }
    }
    free(edges);
    return SL_OK;
}

void sl_melspec_consts_release(sl_melspec_consts *k)
{
    free(k->dft);
    free(k->filters);
    k->dft = k->filters = NULL;
}

size_t sl_melspec_scratch_values(const sl_melspec_consts *k)
{
    size_t frames = (size_t)k->frames;
    return frames * (size_t)k->frame + frames * 2 * (size_t)k->bins + frames * (size_t)k->bins;
}

double sl_melspec_gemm_flops(const sl_melspec_consts *k)
{
    return 2.0 * k->frames * k->frame * 2.0 * k->bins + 2.0 * k->frames * k->bins * k->mels;
}
