/* The CUDA launcher table, filled in C from the .cu files' launchers, and
 * the conversions from the host's op constants to kernel parameters. Built
 * without CUDA, the table is NULL and the cuda adapters say so. */
#include <string.h>

#include "kernels/cuda.h"
#include "cuda/launchers.h"
#include "sluice_config.h"

#if HAVE_CUDA
static const sl_cuda_kernel_table table = {
    .name = "cuda",
    .normalize_u8 = sl__cuda_normalize_u8,
    .normalize_f32 = sl__cuda_normalize_f32,
    .affine_f32 = sl__cuda_affine_f32,
    .mul_channels = sl__cuda_mul_channels,
    .ew_chain = sl__cuda_ew_chain,
    .normalize_u8_chain = sl__cuda_normalize_u8_chain,
    .ew_chain_rows = sl__cuda_ew_chain_rows,
    .normalize_u8_chain_rows = sl__cuda_normalize_u8_chain_rows,
    .blend = sl__cuda_blend,
    .dropout = sl__cuda_dropout,
    .log1p = sl__cuda_log1p,
    .hash_ids = sl__cuda_hash_ids,
    .one_hot = sl__cuda_one_hot,
    .pack = sl__cuda_pack,
    .pad_rows = sl__cuda_pad_rows,
    .length_mask = sl__cuda_length_mask,
    .crop_pad = sl__cuda_crop_pad,
    .hflip = sl__cuda_hflip,
    .rot90 = sl__cuda_rot90,
    .crop3d = sl__cuda_crop3d,
    .flip3d = sl__cuda_flip3d,
    .resize_u8 = sl__cuda_resize_u8,
    .resize_f32 = sl__cuda_resize_f32,
};
#endif

const sl_cuda_kernel_table *sl_cuda_kernels(void)
{
#if HAVE_CUDA
    return &table;
#else
    return NULL;
#endif
}

/* The host computed inv_std (and the affine's scale and bias) once; the
 * device multiplies by the same floats. */
void sl_cuda_channels_from_normalize(const sl_normalize_consts *k, sl_cuda_channels *out)
{
    memset(out, 0, sizeof *out);
    out->channels = k->channels;
    memcpy(out->a, k->mean, sizeof out->a);
    memcpy(out->b, k->inv_std, sizeof out->b);
}

void sl_cuda_channels_from_affine(const sl_affine_consts *k, sl_cuda_channels *out)
{
    memset(out, 0, sizeof *out);
    out->channels = k->channels;
    memcpy(out->a, k->scale, sizeof out->a);
    memcpy(out->b, k->bias, sizeof out->b);
}
