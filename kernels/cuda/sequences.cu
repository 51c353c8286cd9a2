/* CUDA kernels of the integer and sequence ops: exact, one thread per
 * output (or per row or column where the reference runs down one).
 * Beside kernels/ref/hash_ids.c, one_hot.c, bags.c and sequences.c. */
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

static __global__ void bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns)
{
    SL__CUDA_FOR_EACH(j, columns)
    sl__at_bag_offsets_column(ids, ends, rows, columns, (int)j);
}

static __global__ void pack_rows(int32_t *dst, const int32_t *tokens, int64_t n, int64_t seq_len, int64_t stream_tokens,
                                 const int64_t *ids, int32_t pad)
{
    SL__CUDA_FOR_EACH(i, n)
    sl__at_pack_rows(dst, tokens, i, seq_len, stream_tokens, ids, pad);
}

static __global__ void pad_tokens(const int32_t *src, int32_t *dst, int64_t rows, int64_t capacity, int64_t length,
                                  int32_t end_id, int32_t pad_id)
{
    SL__CUDA_FOR_EACH(r, rows)
    sl__at_pad_tokens_row(src, dst, r, capacity, length, end_id, pad_id);
}

/* The width is in device memory (it changes from batch to batch): the
 * launch covers the widest rows and each thread checks against it. */
static __global__ void pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                                const int64_t *width, int32_t pad)
{
    int64_t n = rows * *width;
    SL__CUDA_FOR_EACH(i, n)
    sl__at_pad_rows_dyn(dst, src, lengths, i, stride, width, pad);
}

static __global__ void length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, const int64_t *width)
{
    int64_t n = rows * *width;
    SL__CUDA_FOR_EACH(i, n)
    sl__at_length_mask_dyn(mask, lengths, i, width);
}

int sl__cuda_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k, void *stream)
{
    SL__CUDA_LAUNCH(hash_ids, rows * k->columns, stream, src, dst, rows * k->columns, *k);
}

int sl__cuda_one_hot(const int32_t *labels, float *out, int64_t count, int32_t classes, void *stream)
{
    SL__CUDA_LAUNCH(one_hot, count * classes, stream, labels, out, count * classes, classes);
}

int sl__cuda_bag_offsets(const int64_t *ids, int64_t *ends, int64_t rows, int columns, void *stream)
{
    SL__CUDA_LAUNCH(bag_offsets, columns, stream, ids, ends, rows, columns);
}

int sl__cuda_pack_rows(int32_t *dst, const int32_t *tokens, int64_t rows, int64_t seq_len, int64_t stream_tokens,
                       const int64_t *ids, int32_t pad, void *stream)
{
    SL__CUDA_LAUNCH(pack_rows, rows * seq_len, stream, dst, tokens, rows * seq_len, seq_len, stream_tokens, ids, pad);
}

int sl__cuda_pad_tokens(const int32_t *src, int32_t *dst, int64_t rows, int64_t capacity, int64_t length,
                        int32_t end_id, int32_t pad_id, void *stream)
{
    SL__CUDA_LAUNCH(pad_tokens, rows, stream, src, dst, rows, capacity, length, end_id, pad_id);
}

int sl__cuda_pad_rows(int32_t *dst, const int32_t *src, const int32_t *lengths, int64_t rows, int64_t stride,
                      const int64_t *width, int32_t pad, void *stream)
{
    SL__CUDA_LAUNCH(pad_rows, rows * stride, stream, dst, src, lengths, rows, stride, width, pad);
}

int sl__cuda_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t stride, const int64_t *width,
                         void *stream)
{
    SL__CUDA_LAUNCH(length_mask, rows * stride, stream, mask, lengths, rows, width);
}
