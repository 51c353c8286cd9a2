/* What every .cu file of the CUDA back end shares: the launch shape and the
 * grid-stride loop each kernel wraps around its sl__at_* function. */
#ifndef SLUICE_KERNELS_CUDA_LAUNCH_CUH
#define SLUICE_KERNELS_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>

#include "cuda/launchers.h"
#include "kernels/at.h"

/* 256 threads a block, and at most 2^16 blocks: past that a grid-stride
 * loop gives each thread several values, which costs nothing in bandwidth
 * and keeps the launch cheap for the largest batches. */
#define SL__CUDA_THREADS    256
#define SL__CUDA_MAX_BLOCKS 65536

static inline unsigned sl__cuda_blocks(int64_t n)
{
    int64_t blocks = (n + SL__CUDA_THREADS - 1) / SL__CUDA_THREADS;
    return (unsigned)(blocks < SL__CUDA_MAX_BLOCKS ? blocks : SL__CUDA_MAX_BLOCKS);
}

/* Every index this thread owns, in a grid of any size. */
#define SL__CUDA_FOR_EACH(i, n)                                                                                        \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* Queues kernel over n indices on stream and returns the launch's error:
 * nothing is queued for n == 0, which a grid of no blocks would refuse. */
#define SL__CUDA_LAUNCH(kernel, n, stream, ...)                                                                        \
    do {                                                                                                               \
        if ((n) <= 0)                                                                                                  \
            return 0;                                                                                                  \
        kernel<<<sl__cuda_blocks(n), SL__CUDA_THREADS, 0, (cudaStream_t)(stream)>>>(__VA_ARGS__);                      \
        return (int)cudaGetLastError();                                                                                \
    } while (0)

#endif
