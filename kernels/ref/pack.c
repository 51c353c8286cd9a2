/* Reference token packing: copy what the stream has, pad the rest. */
#include "ref/ref.h"

void sl__ref_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad)
{
    for (int64_t i = 0; i < seq_len; i++)
        dst[i] = sl__body_pack_token(src, available, i, pad);
}
