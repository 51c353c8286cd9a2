/* CUDA bilinear resize: one thread per output value, from the plan's
 * indices and weights (computed once on the host, copied to the device, so
 * both sides read the same bits) and the reference's expression order
 * (sl__body_bilinear). Beside kernels/ref/resize.c. */
#include "cuda/launch.cuh"

static __global__ void resize_u8(const uint8_t *src, int64_t stride, float *dst, int64_t n, sl_resize_plan p)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_resize_u8(src, stride, dst, i, p.out_w, p.channels, p.y0, p.y1, p.wy, p.x0, p.x1, p.wx);
}

static __global__ void resize_f32(const float *src, int64_t stride, float *dst, int64_t n, sl_resize_plan p)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_resize_f32(src, stride, dst, i, p.out_w, p.channels, p.y0, p.y1, p.wy, p.x0, p.x1, p.wx);
}

static int64_t plan_values(const sl_resize_plan *p)
{
    return (int64_t)p->out_h * p->out_w * p->channels;
}

int sl__cuda_resize_u8(const uint8_t *src, int64_t src_stride, float *dst, const sl_resize_plan *plan_dev,
                       void *stream)
{
    SL__CUDA_LAUNCH(resize_u8, plan_values(plan_dev), stream, src, src_stride, dst, plan_values(plan_dev), *plan_dev);
}

int sl__cuda_resize_f32(const float *src, int64_t src_stride, float *dst, const sl_resize_plan *plan_dev,
                        void *stream)
{
    SL__CUDA_LAUNCH(resize_f32, plan_values(plan_dev), stream, src, src_stride, dst, plan_values(plan_dev), *plan_dev);
}

/* One device allocation holds the six arrays, each at the offset it has in
 * a host plan built by sl_resize_plan_init, rebased. The v0/v1/wv arrays
 * (for row-wise CPU kernels) are not needed on the device. */
int sl_cuda_resize_plan_upload(const sl_resize_plan *plan, sl_resize_plan *dev)
{
    const size_t rows = (size_t)plan->out_h, cols = (size_t)plan->out_w;
    const size_t bytes = rows * (2 * sizeof(int32_t) + sizeof(float)) + cols * (2 * sizeof(int32_t) + sizeof(float));
    *dev = *plan;
    char *base = NULL;
    cudaError_t e = cudaMalloc((void **)&base, bytes);
    if (e != cudaSuccess)
        return (int)e;
    char *at = base;
    const void *host[6] = {plan->y0, plan->y1, plan->wy, plan->x0, plan->x1, plan->wx};
    const size_t sizes[6] = {rows * 4, rows * 4, rows * 4, cols * 4, cols * 4, cols * 4};
    void *placed[6];
    for (int a = 0; a < 6 && e == cudaSuccess; a++) {
        placed[a] = at;
        e = cudaMemcpy(at, host[a], sizes[a], cudaMemcpyHostToDevice);
        at += sizes[a];
    }
    if (e != cudaSuccess) {
        cudaFree(base);
        return (int)e;
    }
    dev->y0 = (int32_t *)placed[0];
    dev->y1 = (int32_t *)placed[1];
    dev->wy = (float *)placed[2];
    dev->x0 = (int32_t *)placed[3];
    dev->x1 = (int32_t *)placed[4];
    dev->wx = (float *)placed[5];
    dev->v0 = dev->v1 = NULL;
    dev->wv = NULL;
    return 0;
}

void sl_cuda_resize_plan_free(sl_resize_plan *dev)
{
    if (dev->y0)
        cudaFree(dev->y0);
    dev->y0 = dev->y1 = dev->x0 = dev->x1 = NULL;
    dev->wy = dev->wx = NULL;
}
