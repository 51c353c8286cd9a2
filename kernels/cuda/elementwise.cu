/* CUDA element-wise kernels: one thread per value, each value's body from
 * bodies.h (the reference's own arithmetic), compiled with -fmad=false so
 * that no product and sum are fused into one rounding. Beside
 * kernels/ref/normalize.c, elementwise.c, affine.c, mix.c and log1p.c. */
#include "cuda/launch.cuh"

static __global__ void normalize_u8(const uint8_t *src, float *dst, int64_t n, sl_device_channels k)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_normalize_u8(src, dst, i, k.channels, k.a, k.b);
}

static __global__ void normalize_f32(const float *src, float *dst, int64_t n, sl_device_channels k)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_normalize_f32(src, dst, i, k.channels, k.a, k.b);
}

static __global__ void affine_f32(const float *src, float *dst, int64_t n, sl_device_channels k)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_affine(src, dst, i, k.channels, k.a, k.b);
}

/* The whole chain per value: one load and one store per value however many
 * steps, the device's form of `fused`'s per-tile fusion. */
static __global__ void ew_chain(float *x, int64_t n, sl_device_chain chain)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_ew_chain(x, i, chain.steps, chain.nsteps);
}

static __global__ void normalize_u8_chain(const uint8_t *src, float *dst, int64_t n, sl_device_channels k,
                                          sl_device_chain chain)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_normalize_u8_chain(src, dst, i, k.channels, k.a, k.b, chain.steps, chain.nsteps);
}

static __global__ void ew_chain_rows(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps,
                                     int first, int nsteps)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_ew_chain_rows(x, i, values, table, row_steps, first, nsteps);
}

static __global__ void normalize_u8_chain_rows(const uint8_t *src, float *dst, int64_t n, sl_device_channels k,
                                               int64_t values, const sl_ew_step *table, int row_steps, int first,
                                               int nsteps)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_normalize_u8_chain_rows(src, dst, i, k.channels, k.a, k.b, values, table, row_steps, first, nsteps);
}

static __global__ void blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_blend(dst, a, b, i, wa, wb);
}

static __global__ void log1p_f32(const float *src, float *dst, int64_t n)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_log1p(src, dst, i);
}

int sl__cuda_normalize_u8(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k, void *stream)
{
    SL__CUDA_LAUNCH(normalize_u8, n, stream, src, dst, n, *k);
}

int sl__cuda_normalize_f32(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream)
{
    SL__CUDA_LAUNCH(normalize_f32, n, stream, src, dst, n, *k);
}

int sl__cuda_affine_f32(const float *src, float *dst, int64_t n, const sl_device_channels *k, void *stream)
{
    SL__CUDA_LAUNCH(affine_f32, n, stream, src, dst, n, *k);
}

/* A chain the device cannot run is refused whole rather than run in part:
 * too many steps, or a kind it has no body for. */
static bool chain_supported(const sl_device_chain *chain)
{
    if (chain->nsteps < 0 || chain->nsteps > SL_DEVICE_MAX_STEPS)
        return false;
    for (int s = 0; s < chain->nsteps; s++)
        if ((unsigned)chain->steps[s].kind >= SL_EW_OPCODE_COUNT)
            return false;
    return true;
}

int sl__cuda_ew_chain(float *x, int64_t n, const sl_device_chain *chain, void *stream)
{
    if (!chain_supported(chain))
        return SL_DEVICE_EUNSUPPORTED;
    SL__CUDA_LAUNCH(ew_chain, n, stream, x, n, *chain);
}

int sl__cuda_normalize_u8_chain(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                const sl_device_chain *chain, void *stream)
{
    if (!chain_supported(chain))
        return SL_DEVICE_EUNSUPPORTED;
    SL__CUDA_LAUNCH(normalize_u8_chain, n, stream, src, dst, n, *k, *chain);
}

int sl__cuda_blend(float *dst, const float *a, const float *b, int64_t n, float wa, float wb, void *stream)
{
    SL__CUDA_LAUNCH(blend, n, stream, dst, a, b, n, wa, wb);
}

int sl__cuda_log1p(const float *src, float *dst, int64_t n, void *stream)
{
    SL__CUDA_LAUNCH(log1p_f32, n, stream, src, dst, n);
}

int sl__cuda_ew_chain_rows(float *x, int64_t n, int64_t values, const sl_ew_step *table, int row_steps, int first,
                           int nsteps, void *stream)
{
    if (values <= 0 || nsteps < 0 || first < 0 || first + nsteps > row_steps)
        return SL_DEVICE_EUNSUPPORTED;
    SL__CUDA_LAUNCH(ew_chain_rows, n, stream, x, n, values, table, row_steps, first, nsteps);
}

int sl__cuda_normalize_u8_chain_rows(const uint8_t *src, float *dst, int64_t n, const sl_device_channels *k,
                                     int64_t values, const sl_ew_step *table, int row_steps, int first, int nsteps,
                                     void *stream)
{
    if (values <= 0 || nsteps < 0 || first < 0 || first + nsteps > row_steps)
        return SL_DEVICE_EUNSUPPORTED;
    SL__CUDA_LAUNCH(normalize_u8_chain_rows, n, stream, src, dst, n, *k, values, table, row_steps, first, nsteps);
}
