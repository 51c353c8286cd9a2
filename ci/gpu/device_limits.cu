/* The device's own limits, measured in the run that measures sluice on it:
 * device-to-device copy bandwidth (bytes read plus bytes written), pinned
 * host-to-device bandwidth, and the cost of launching an empty CUDA graph.
 * Every figure is the median of timed repetitions after a warm-up, timed
 * with CUDA events around the region. Prints one JSON object. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "device_limits: %s failed: %s\n", #call, cudaGetErrorString(e_));                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median(float *v, int n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

enum { REPS = 20 };

int main(void)
{
    int device = 0;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, device));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float ms[REPS];

    /* 1 GiB each way: far past the L2, so the copy measures HBM. */
    size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemsetAsync(a, 1, bytes, stream));
    CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    for (int r = 0; r < REPS; r++) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaMemcpyAsync(r % 2 ? a : b, r % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    double d2d_gbs = 2.0 * (double)bytes / (median(ms, REPS) * 1e-3) / 1e9;

    /* Pinned host to device, 256 MiB. */
    size_t h2d_bytes = (size_t)256 << 20;
    void *host;
    CHECK(cudaMallocHost(&host, h2d_bytes));
    for (size_t i = 0; i < h2d_bytes; i += 4096)
        ((char *)host)[i] = (char)i;
    CHECK(cudaMemcpyAsync(a, host, h2d_bytes, cudaMemcpyHostToDevice, stream));
    for (int r = 0; r < REPS; r++) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaMemcpyAsync(a, host, h2d_bytes, cudaMemcpyHostToDevice, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    double h2d_gbs = (double)h2d_bytes / (median(ms, REPS) * 1e-3) / 1e9;

    /* An empty graph: the floor of cuda-graph's per-batch launch. Timed as
     * 1000 launches per sample so the event resolution does not matter. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t node;
    CHECK(cudaGraphAddEmptyNode(&node, graph, NULL, 0));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (int r = 0; r < REPS; r++) {
        CHECK(cudaEventRecord(start, stream));
        for (int i = 0; i < 1000; i++)
            CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    double graph_us = median(ms, REPS) * 1e3 / 1000.0;

    printf("{\"device\": \"%s\", \"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, "
           "\"l2_bytes\": %d, \"d2d_copy_gb_per_s\": %.1f, \"pinned_h2d_gb_per_s\": %.1f, "
           "\"empty_graph_launch_us\": %.2f}\n",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize, d2d_gbs, h2d_gbs, graph_us);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFreeHost(host);
    cudaFree(a);
    cudaFree(b);
    return 0;
}
