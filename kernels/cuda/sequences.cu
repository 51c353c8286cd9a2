/* CUDA kernels of the integer and sequence ops: exact, one thread per
 * output. Beside kernels/ref/hash_ids.c, one_hot.c, pack.c and
 * sequences.c. */
#include "cuda/launch.cuh"

static __global__ void hash_ids(const int64_t *src, int64_t *dst, int64_t n, sl_hash_consts k)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_hash_id(src, dst, i, k.columns, k.size);
}

static __global__ void one_hot(const int32_t *labels, float *out, int64_t n, int32_t classes)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_one_hot(labels, out, i, classes);
}

static __global__ void pack(int32_t *dst, const int32_t *src, int64_t available, int64_t n, int32_t pad)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_pack(dst, src, available, i, pad);
}

static __global__ void pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t n, int64_t stride,
                                int64_t width, int32_t pad)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_pad_rows(dst, src, lengths, i, stride, width, pad);
}

static __global__ void length_mask(uint8_t *mask, const int32_t *lengths, int64_t n, int64_t width)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_length_mask(mask, lengths, i, width);
}

int sl__cuda_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream)
{
    SL__CUDA_LAUNCH(hash_ids, rows * k->columns, stream, src, dst, rows * k->columns, *k);
}

int sl__cuda_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream)
{
    SL__CUDA_LAUNCH(one_hot, count * classes, stream, labels, out, count * classes, classes);
}

int sl__cuda_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad, void *stream)
{
    SL__CUDA_LAUNCH(pack, seq_len, stream, dst, src, available, seq_len, pad);
}

int sl__cuda_pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                      int64_t width, int32_t pad, void *stream)
{
    SL__CUDA_LAUNCH(pad_rows, rows * width, stream, dst, src, lengths, rows * width, stride, width, pad);
}

int sl__cuda_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width, void *stream)
{
    SL__CUDA_LAUNCH(length_mask, rows * width, stream, mask, lengths, rows * width, width);
}
