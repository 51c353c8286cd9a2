/* CUDA kernels of the per-value transcendental ops, the per-row keyed and
 * reduced ops, whole-row movement and mixing, and the steps around
 * log-mel's two matrix products: each a grid-stride loop around the
 * kernels/at.h function the host emulation runs too. Beside
 * kernels/ref/trig_rounds.c, dropout.c, moments.c, mix.c and log_mel.c. */
#include "cuda/launch.cuh"

static __global__ void trig_rounds(const float *src, float *dst, int64_t n, int rounds)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_trig_rounds(src, dst, i, rounds);
}

static __global__ void dropout_rows(const float *src, float *dst, int64_t n, int64_t values, const int64_t *ids,
                                    const sl_device_batch *batch, sl_philox_key key, uint32_t threshold, float scale)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_dropout_rows(src, dst, i, values, ids, batch, key, threshold, scale);
}

/* Every row's decisions by every rule (kernels/decide.h), the rules by
 * value. */
static __global__ void decide_rows(const int64_t *ids, const sl_device_batch *batch, sl_device_rules rules,
                                   int32_t *table, int stride, int64_t n)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_decide_rows(ids, batch, &rules, table, stride, i);
}

/* Every row's chain steps by their rules (kernels/decide.h). */
static __global__ void step_rows(const int64_t *ids, const sl_device_batch *batch, const sl_step_rule *rules,
                                 sl_ew_step *table, int row_steps, int64_t n)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_step_rows(ids, batch, rules, table, row_steps, i);
}

/* zscore: each (row, lane) partial sum in the moments' order, then each
 * row's fixed tree; twice (the mean, then the squared deviations). */
static __global__ void moment_lanes(const float *src, int64_t rows, int64_t values, bool squares, const double *mean,
                                    double *lanes)
{
    SL__CUDA_FOR_EACH(k, rows * SL_MOMENT_LANES)
    {
        int64_t r = k / SL_MOMENT_LANES;
        lanes[k] =
            sl__at_moment_lane(src + r * values, values, (int)(k % SL_MOMENT_LANES), squares, squares ? mean[r] : 0.0);
    }
}

static __global__ void moment_rows(int64_t rows, int64_t values, const double *lanes, double *out)
{
    SL__CUDA_FOR_EACH(r, rows)
    out[r] = sl__moment_lanes_sum(lanes + r * SL_MOMENT_LANES) / (double)values;
}

static __global__ void zscore_apply(const float *src, float *dst, int64_t n, int64_t values, const double *mean,
                                    const double *var)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_zscore_apply(src, dst, i, values, mean, var);
}

static __global__ void gather_rows(uint8_t *dst, const uint8_t *src, int64_t n, size_t row_bytes, const int64_t *index)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_gather_rows(dst, src, i, row_bytes, index);
}

static __global__ void scatter_rows(uint8_t *dst, const uint8_t *src, int64_t n, size_t row_bytes, const int64_t *index)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_scatter_rows(dst, src, i, row_bytes, index);
}

static __global__ void select_rows(uint8_t *dst, const uint8_t *a, const uint8_t *b, int64_t n, size_t row_bytes,
                                   sl_device_rows_i32 take_a)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_select_rows(dst, a, b, i, row_bytes, take_a);
}

static __global__ void mix_rows(float *dst, const float *src, int64_t n, int64_t values, const int64_t *partner,
                                const float *w)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_mix_rows(dst, src, i, values, partner, w);
}

static __global__ void paste_rows(uint8_t *dst, const uint8_t *src, int64_t n, int h, int w, size_t pixel_bytes,
                                  const int64_t *partner, const float *box)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_paste_rows(dst, src, i, h, w, pixel_bytes, partner, box);
}

static __global__ void frame(const float *wave, float *framed, int64_t n, int64_t samples, int frames, int frame_len,
                             int hop)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_frame(wave, framed, i, samples, frames, frame_len, hop);
}

static __global__ void power(const float *spectrum, float *out, int64_t n, int bins)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_power(spectrum, out, i, bins);
}

static __global__ void log10_floor(float *x, int64_t n)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_log10_floor(x, i);
}

static __global__ void loudest_rows(const float *x, float *loudest, int64_t rows, int64_t values)
{
    SL__CUDA_FOR_EACH(r, rows)
    sl__at_loudest_row(x, loudest, r, values);
}

static __global__ void log_mel_scale(float *x, int64_t n, int64_t values, const float *loudest)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_log_mel_scale(x, i, values, loudest);
}

int sl__cuda_trig_rounds(const float *src, float *dst, int64_t n, int rounds, void *stream)
{
    SL__CUDA_LAUNCH(trig_rounds, n, stream, src, dst, n, rounds);
}

int sl__cuda_dropout_rows(const float *src, float *dst, int64_t rows, int64_t values, const int64_t *ids,
                          const sl_device_batch *batch, sl_philox_key key, uint32_t threshold, float scale,
                          void *stream)
{
    SL__CUDA_LAUNCH(dropout_rows, rows * values, stream, src, dst, rows * values, values, ids, batch, key, threshold,
                    scale);
}

int sl__cuda_decide_rows(const int64_t *ids, const sl_device_batch *batch, const sl_device_rules *rules, int32_t *table,
                         int stride, int64_t rows, void *stream)
{
    SL__CUDA_LAUNCH(decide_rows, rows * rules->nrules, stream, ids, batch, *rules, table, stride, rows * rules->nrules);
}

int sl__cuda_step_rows(const int64_t *ids, const sl_device_batch *batch, const sl_step_rule *rules, sl_ew_step *table,
                       int row_steps, int64_t rows, void *stream)
{
    SL__CUDA_LAUNCH(step_rows, rows * row_steps, stream, ids, batch, rules, table, row_steps, rows * row_steps);
}

static int launch_moment_lanes(const float *src, int64_t rows, int64_t values, bool squares, const double *mean,
                               double *lanes, void *stream)
{
    SL__CUDA_LAUNCH(moment_lanes, rows * SL_MOMENT_LANES, stream, src, rows, values, squares, mean, lanes);
}

static int launch_moment_rows(int64_t rows, int64_t values, const double *lanes, double *out, void *stream)
{
    SL__CUDA_LAUNCH(moment_rows, rows, stream, rows, values, lanes, out);
}

static int launch_zscore_apply(const float *src, float *dst, int64_t rows, int64_t values, const double *mean,
                               const double *var, void *stream)
{
    SL__CUDA_LAUNCH(zscore_apply, rows * values, stream, src, dst, rows * values, values, mean, var);
}

int sl__cuda_zscore_rows(const float *src, float *dst, int64_t rows, int64_t values, double *scratch, void *stream)
{
    double *mean = scratch, *var = scratch + rows, *lanes = scratch + 2 * rows;
    int e = launch_moment_lanes(src, rows, values, false, mean, lanes, stream);
    if (!e)
        e = launch_moment_rows(rows, values, lanes, mean, stream);
    if (!e)
        e = launch_moment_lanes(src, rows, values, true, mean, lanes, stream);
    if (!e)
        e = launch_moment_rows(rows, values, lanes, var, stream);
    if (!e)
        e = launch_zscore_apply(src, dst, rows, values, mean, var, stream);
    return e;
}

int sl__cuda_gather_rows(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index, void *stream)
{
    int64_t n = rows * (int64_t)row_bytes;
    SL__CUDA_LAUNCH(gather_rows, n, stream, (uint8_t *)dst, (const uint8_t *)src, n, row_bytes, index);
}

int sl__cuda_scatter_rows(void *dst, const void *src, int64_t rows, size_t row_bytes, const int64_t *index,
                          void *stream)
{
    int64_t n = rows * (int64_t)row_bytes;
    SL__CUDA_LAUNCH(scatter_rows, n, stream, (uint8_t *)dst, (const uint8_t *)src, n, row_bytes, index);
}

int sl__cuda_select_rows(void *dst, const void *a, const void *b, int64_t rows, size_t row_bytes,
                         sl_device_rows_i32 take_a, void *stream)
{
    int64_t n = rows * (int64_t)row_bytes;
    SL__CUDA_LAUNCH(select_rows, n, stream, (uint8_t *)dst, (const uint8_t *)a, (const uint8_t *)b, n, row_bytes,
                    take_a);
}

int sl__cuda_mix_rows(float *dst, const float *src, int64_t rows, int64_t values, const int64_t *partner,
                      const float *w, void *stream)
{
    SL__CUDA_LAUNCH(mix_rows, rows * values, stream, dst, src, rows * values, values, partner, w);
}

int sl__cuda_paste_rows(void *dst, const void *src, int64_t rows, int h, int w, size_t pixel_bytes,
                        const int64_t *partner, const float *box, void *stream)
{
    int64_t n = rows * h * w * (int64_t)pixel_bytes;
    SL__CUDA_LAUNCH(paste_rows, n, stream, (uint8_t *)dst, (const uint8_t *)src, n, h, w, pixel_bytes, partner, box);
}

int sl__cuda_frame(const float *wave, float *framed, int64_t rows, int64_t samples, int frames, int frame_len, int hop,
                   void *stream)
{
    int64_t n = rows * frames * frame_len;
    SL__CUDA_LAUNCH(frame, n, stream, wave, framed, n, samples, frames, frame_len, hop);
}

int sl__cuda_power(const float *spectrum, float *out, int64_t frames, int bins, void *stream)
{
    SL__CUDA_LAUNCH(power, frames * bins, stream, spectrum, out, frames * bins, bins);
}

int sl__cuda_log_mel_finish(float *x, float *loudest, int64_t rows, int64_t values, void *stream)
{
    int64_t n = rows * values;
    if (n <= 0)
        return 0;
    log10_floor<<<sl__cuda_blocks(n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(x, n);
    loudest_rows<<<sl__cuda_blocks(rows), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(x, loudest, rows, values);
    log_mel_scale<<<sl__cuda_blocks(n), SL__CUDA_THREADS, 0, (cudaStream_t)stream>>>(x, n, values, loudest);
    return (int)cudaGetLastError();
}
