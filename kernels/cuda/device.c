/* The CUDA device (kernels/device.h): the runtime's memory, streams,
 * events and graphs, the .cu files' launchers, and log-mel's two matrix
 * products in cuBLAS.
 *
 * cuBLAS is loaded when first needed (dlopen), not linked: it is hundreds
 * of megabytes that only MM-2 uses, and a machine with a driver but no
 * cuBLAS still runs every other scenario on the device; there log_mel has
 * no device path and the reason says which library is missing. The
 * products run in cuBLAS's pedantic math mode (plain FP32, no TF32), and
 * are held to MM-2's stated tolerance (docs/determinism.md). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/launchers.h"
#include "kernels/cuda.h"
#include "kernels/device.h"
#include "sluice_config.h"

#if HAVE_CUDA
#include <cuda_runtime_api.h>

static sl_device_ledger cuda_ledger = SL_DEVICE_LEDGER_INIT;

static int dev_alloc(void **ptr, size_t bytes)
{
    bytes = bytes ? bytes : 8;
    int e = (int)cudaMalloc(ptr, bytes);
    if (!e && (e = sl__device_ledger_add(&cuda_ledger, *ptr, bytes)) != 0) {
        cudaFree(*ptr);
        *ptr = NULL;
    }
    return e;
}

static void dev_release(void *ptr)
{
    sl__device_ledger_remove(&cuda_ledger, ptr);
    cudaFree(ptr);
}

static int dev_host_alloc(void **ptr, size_t bytes)
{
    return (int)cudaMallocHost(ptr, bytes ? bytes : 8);
}

static void dev_host_release(void *ptr)
{
    cudaFreeHost(ptr);
}

static int dev_copy(void *dst, const void *src, size_t bytes, sl_device_copy_kind kind, void *stream)
{
    static const enum cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                                cudaMemcpyDeviceToDevice};
    if (bytes == 0)
        return 0;
    return (int)cudaMemcpyAsync(dst, src, bytes, kinds[kind], (cudaStream_t)stream);
}

static int dev_memset0(void *ptr, size_t bytes, void *stream)
{
    return (int)cudaMemsetAsync(ptr, 0, bytes, (cudaStream_t)stream);
}

static int dev_memory(size_t *free_bytes, size_t *total_bytes)
{
    return (int)cudaMemGetInfo(free_bytes, total_bytes);
}

static int dev_stream_create(void **stream)
{
    return (int)cudaStreamCreateWithFlags((cudaStream_t *)stream, cudaStreamNonBlocking);
}

static void dev_stream_destroy(void *stream)
{
    cudaStreamDestroy((cudaStream_t)stream);
}

static int dev_stream_sync(void *stream)
{
    return (int)cudaStreamSynchronize((cudaStream_t)stream);
}

static int dev_event_create(void **event)
{
    return (int)cudaEventCreateWithFlags((cudaEvent_t *)event, cudaEventDisableTiming);
}

static void dev_event_destroy(void *event)
{
    cudaEventDestroy((cudaEvent_t)event);
}

static int dev_event_record(void *event, void *stream)
{
    return (int)cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
}

static int dev_stream_wait(void *stream, void *event)
{
    return (int)cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
}

static int dev_event_sync(void *event)
{
    return (int)cudaEventSynchronize((cudaEvent_t)event);
}

static int dev_graph_begin(void *stream)
{
    return (int)cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal);
}

static int dev_graph_end(void *stream, void **graph)
{
    cudaGraph_t captured;
    *graph = NULL;
    cudaError_t e = cudaStreamEndCapture((cudaStream_t)stream, &captured);
    if (e != cudaSuccess)
        return (int)e;
    cudaGraphExec_t exec;
    e = cudaGraphInstantiate(&exec, captured, 0);
    cudaGraphDestroy(captured);
    if (e == cudaSuccess)
        *graph = exec;
    return (int)e;
}

static int dev_graph_launch(void *graph, void *stream)
{
    return (int)cudaGraphLaunch((cudaGraphExec_t)graph, (cudaStream_t)stream);
}

static void dev_graph_destroy(void *graph)
{
    cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static const char *dev_error_string(int error)
{
    if (error == SL_DEVICE_EUNSUPPORTED)
        return "no such kernel on the device";
    return cudaGetErrorString((cudaError_t)error);
}

/* ---- cuBLAS, loaded on first use -------------------------------------- */

/* The four entry points log-mel needs, by their C ABI: handles are
 * pointers, statuses and enums ints (0 success; CUBLAS_OP_N 0; pedantic
 * math 2). */
typedef int (*cublas_create_fn)(void **handle);
typedef int (*cublas_set_stream_fn)(void *handle, void *stream);
typedef int (*cublas_set_math_fn)(void *handle, int mode);
typedef int (*cublas_sgemm_fn)(void *handle, int transa, int transb, int m, int n, int k, const float *alpha,
                               const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc);

static struct {
    pthread_once_t once;
    void *handle;
    cublas_set_stream_fn set_stream;
    cublas_sgemm_fn sgemm;
    pthread_mutex_t lock; /* one handle, its stream set per call */
    char missing[192];
} blas = {PTHREAD_ONCE_INIT, NULL, NULL, NULL, PTHREAD_MUTEX_INITIALIZER, ""};

static void load_cublas(void)
{
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(blas.missing, sizeof blas.missing, "no cuBLAS (libcublas.so.13 or .12) to load: %s", dlerror());
        return;
    }
    cublas_create_fn create = (cublas_create_fn)dlsym(lib, "cublasCreate_v2");
    cublas_set_math_fn set_math = (cublas_set_math_fn)dlsym(lib, "cublasSetMathMode");
    blas.set_stream = (cublas_set_stream_fn)dlsym(lib, "cublasSetStream_v2");
    blas.sgemm = (cublas_sgemm_fn)dlsym(lib, "cublasSgemm_v2");
    if (!create || !set_math || !blas.set_stream || !blas.sgemm) {
        snprintf(blas.missing, sizeof blas.missing,
                 "the cuBLAS found lacks cublasCreate_v2, cublasSetMathMode, "
                 "cublasSetStream_v2 or cublasSgemm_v2");
        return;
    }
    void *handle = NULL;
    if (create(&handle) != 0 || set_math(handle, 2 /* CUBLAS_PEDANTIC_MATH */) != 0) {
        snprintf(blas.missing, sizeof blas.missing, "cuBLAS could not make a handle");
        return;
    }
    blas.handle = handle;
}

/* c (m x n) = a (m x k) times b (k x n), all row-major: cuBLAS is
 * column-major, so it computes the transpose, c^T = b^T a^T. */
static int sgemm_rows(int64_t m, int n, int k, const float *a, const float *b, float *c)
{
    const float one = 1.0f, zero = 0.0f;
    return blas.sgemm(blas.handle, 0, 0, n, (int)m, k, &one, b, n, a, k, &zero, c, n);
}

static size_t dev_log_mel_scratch(const sl_melspec_consts *k, int64_t rows)
{
    int64_t frames = rows * k->frames;
    return (size_t)(frames * k->frame + frames * 2 * k->bins + frames * k->bins + rows) * sizeof(float);
}

static int dev_log_mel_rows(const float *wave, float *out, int64_t rows, const sl_melspec_consts *k, void *scratch,
                            void *stream)
{
    pthread_once(&blas.once, load_cublas);
    if (!blas.handle)
        return SL_DEVICE_EUNSUPPORTED;
    int64_t frames = rows * k->frames;
    float *framed = scratch, *spectrum = framed + frames * k->frame;
    float *power = spectrum + frames * 2 * k->bins, *loudest = power + frames * k->bins;
    int e = sl__cuda_frame(wave, framed, rows, k->samples, k->frames, k->frame, k->hop, stream);
    pthread_mutex_lock(&blas.lock);
    if (!e)
        e = blas.set_stream(blas.handle, stream) ? SL_DEVICE_EUNSUPPORTED : 0;
    if (!e)
        e = sgemm_rows(frames, 2 * k->bins, k->frame, framed, k->dft, spectrum) ? SL_DEVICE_EUNSUPPORTED : 0;
    if (!e)
        e = sl__cuda_power(spectrum, power, frames, k->bins, stream);
    if (!e)
        e = sgemm_rows(frames, k->mels, k->bins, power, k->filters, out) ? SL_DEVICE_EUNSUPPORTED : 0;
    pthread_mutex_unlock(&blas.lock);
    if (!e)
        e = sl__cuda_log_mel_finish(out, loudest, rows, (int64_t)k->frames * k->mels, stream);
    return e;
}

static sl_device cuda_device = {
    .name = "cuda",
    .emulated = false,
    .ledger = &cuda_ledger,
    .alloc = dev_alloc,
    .release = dev_release,
    .host_alloc = dev_host_alloc,
    .host_release = dev_host_release,
    .copy = dev_copy,
    .memset0 = dev_memset0,
    .memory = dev_memory,
    .stream_create = dev_stream_create,
    .stream_destroy = dev_stream_destroy,
    .stream_sync = dev_stream_sync,
    .event_create = dev_event_create,
    .event_destroy = dev_event_destroy,
    .event_record = dev_event_record,
    .stream_wait = dev_stream_wait,
    .event_sync = dev_event_sync,
    .graph_begin = dev_graph_begin,
    .graph_end = dev_graph_end,
    .graph_launch = dev_graph_launch,
    .graph_destroy = dev_graph_destroy,
    .error_string = dev_error_string,
    .normalize_u8 = sl__cuda_normalize_u8,
    .normalize_f32 = sl__cuda_normalize_f32,
    .affine_f32 = sl__cuda_affine_f32,
    .ew_chain = sl__cuda_ew_chain,
    .normalize_u8_chain = sl__cuda_normalize_u8_chain,
    .ew_chain_rows = sl__cuda_ew_chain_rows,
    .normalize_u8_chain_rows = sl__cuda_normalize_u8_chain_rows,
    .blend = sl__cuda_blend,
    .log1p = sl__cuda_log1p,
    .trig_rounds = sl__cuda_trig_rounds,
    .dropout_rows = sl__cuda_dropout_rows,
    .decide_rows = sl__cuda_decide_rows,
    .step_rows = sl__cuda_step_rows,
    .zscore_rows = sl__cuda_zscore_rows,
    .hash_ids = sl__cuda_hash_ids,
    .one_hot = sl__cuda_one_hot,
    .bag_offsets = sl__cuda_bag_offsets,
    .pad_tokens = sl__cuda_pad_tokens,
    .pack_rows = sl__cuda_pack_rows,
    .pad_rows = sl__cuda_pad_rows,
    .length_mask = sl__cuda_length_mask,
    .crop_pad_rows = sl__cuda_crop_pad_rows,
    .hflip_rows = sl__cuda_hflip_rows,
    .rot90_rows = sl__cuda_rot90_rows,
    .crop3d_rows = sl__cuda_crop3d_rows,
    .flip3d_rows = sl__cuda_flip3d_rows,
    .resize_rows = sl__cuda_resize_rows,
    .resized_crop_rows = sl__cuda_resized_crop_rows,
    .gather_rows = sl__cuda_gather_rows,
    .scatter_rows = sl__cuda_scatter_rows,
    .select_rows = sl__cuda_select_rows,
    .mix_rows = sl__cuda_mix_rows,
    .paste_rows = sl__cuda_paste_rows,
    .log_mel_rows = dev_log_mel_rows,
    .log_mel_scratch = dev_log_mel_scratch,
    .log_mel_missing = NULL,
};

/* Which device a process uses: with several ranks on one machine (mpirun
 * sets the local rank), rank r takes device r modulo their count, so ranks
 * spread over the machine's devices; alone, device 0. */
static int choose_device(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"};
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1)
        return 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *value = getenv(vars[i]);
        if (value && *value)
            return atoi(value) % count;
    }
    return 0;
}

static pthread_once_t device_once = PTHREAD_ONCE_INIT;

static void bind_device(void)
{
    cudaSetDevice(choose_device());
}
#endif

const sl_device *sl_device_cuda(char *reason, size_t size)
{
#if HAVE_CUDA
    sl_cuda_device_info info;
    if (!sl_cuda_probe(&info, SL_CUDA_MIN_FREE_BYTES)) {
        if (reason && size)
            snprintf(reason, size, "%s", info.reason);
        return NULL;
    }
    pthread_once(&device_once, bind_device);
    pthread_once(&blas.once, load_cublas);
    cuda_device.log_mel_rows = blas.handle ? dev_log_mel_rows : NULL;
    cuda_device.log_mel_missing = blas.handle ? NULL : blas.missing;
    return &cuda_device;
#else
    if (reason && size)
        snprintf(reason, size, "sluice was built without CUDA");
    return NULL;
#endif
}
