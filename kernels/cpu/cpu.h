/* Helpers for the optimized CPU back end.
 *
 * Each optimized kernel is written once as an always-inline body and
 * instantiated twice: for the baseline ISA and with the AVX2 target, so that
 * the compiler vectorizes it for the wider registers. The registry picks the
 * AVX2 instance only after __builtin_cpu_supports says the CPU has it. No
 * instance contracts multiplies and adds (the build passes -ffp-contract=off),
 * so every instance computes exactly the reference's expression. */
#ifndef SLUICE_KERNELS_CPU_H
#define SLUICE_KERNELS_CPU_H

#include "ref/ref.h"

#if defined(__GNUC__)
#define SL_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define SL_ALWAYS_INLINE static inline
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define SL_HAVE_AVX2_CLONES 1
#define SL_TARGET_AVX2      __attribute__((target("avx2")))
/* AVX-512 with the byte/word and vector-length extensions, which the u8
 * widening loads of normalize use; every AVX-512 server CPU has all three. */
#define SL_TARGET_AVX512    __attribute__((target("avx512f,avx512bw,avx512vl")))
#else
#define SL_HAVE_AVX2_CLONES 0
#endif

/* The cpu-avx512-256 table: kernels/meson.build compiles the arithmetic
 * files a second time with -mprefer-vector-width=256 and
 * SL_CPU_AVX512_256=1. That object contributes only its AVX-512 instances,
 * which the compiler then vectorizes on 256-bit registers (AVX-512VL on
 * ymm: the masks and extra registers of AVX-512 without the 512-bit
 * frequency licence or split 512-bit units that make the wide form slower
 * on some cores). Their fills take the _avx512_256 names, and
 * SL_CPU_FIRST_BUILD leaves out everything else the first object already
 * defines. The arithmetic is the same expression either way, so the table
 * computes the reference's bits like every other. */
#ifndef SL_CPU_AVX512_256
#define SL_CPU_AVX512_256 0
#endif
#define SL_CPU_FIRST_BUILD (!SL_CPU_AVX512_256)

typedef struct sl_cpu_variant {
    sl_normalize_u8_fn normalize_u8;
    sl_normalize_f32_fn normalize_f32;
    sl_ew_chain_fn ew_chain;
    sl_moments_fn moments;
    sl_channel_moments_fn channel_moments;
    sl_blend_fn blend;
    sl_resize_u8_fn resize_u8;
    sl_resize_f32_fn resize_f32;
    sl_trig_rounds_fn trig_rounds;
    sl_log1p_fn log1p;
    sl_affine_f32_fn affine_f32;
    sl_dropout_fn dropout;
} sl_cpu_variant;

/* Fills a variant's entries for one instruction set; each arithmetic file
 * provides one per ISA. */
typedef void (*sl_cpu_variant_fill)(sl_cpu_variant *out);

/* The arithmetic kernels for the baseline ISA and for AVX2, each filling its
 * own entries of the variant. */
void sl__cpu_normalize_generic(sl_cpu_variant *out);
void sl__cpu_normalize_avx2(sl_cpu_variant *out);
void sl__cpu_normalize_avx512(sl_cpu_variant *out);
void sl__cpu_elementwise_generic(sl_cpu_variant *out);
void sl__cpu_elementwise_avx2(sl_cpu_variant *out);
void sl__cpu_elementwise_avx512(sl_cpu_variant *out);
void sl__cpu_moments_generic(sl_cpu_variant *out);
void sl__cpu_moments_avx2(sl_cpu_variant *out);
void sl__cpu_moments_avx512(sl_cpu_variant *out);
void sl__cpu_blend_generic(sl_cpu_variant *out);
void sl__cpu_blend_avx2(sl_cpu_variant *out);
void sl__cpu_blend_avx512(sl_cpu_variant *out);
void sl__cpu_resize_generic(sl_cpu_variant *out);
void sl__cpu_resize_avx2(sl_cpu_variant *out);
void sl__cpu_resize_avx512(sl_cpu_variant *out);
void sl__cpu_trig_rounds_generic(sl_cpu_variant *out);
void sl__cpu_trig_rounds_avx2(sl_cpu_variant *out);
void sl__cpu_trig_rounds_avx512(sl_cpu_variant *out);
void sl__cpu_log1p_generic(sl_cpu_variant *out);
void sl__cpu_log1p_avx2(sl_cpu_variant *out);
void sl__cpu_log1p_avx512(sl_cpu_variant *out);
void sl__cpu_affine_generic(sl_cpu_variant *out);
void sl__cpu_affine_avx2(sl_cpu_variant *out);
void sl__cpu_affine_avx512(sl_cpu_variant *out);
void sl__cpu_dropout_generic(sl_cpu_variant *out);
void sl__cpu_dropout_avx2(sl_cpu_variant *out);
void sl__cpu_dropout_avx512(sl_cpu_variant *out);

/* The 256-bit instances (dropout's AVX-512 kernel is written with 512-bit
 * intrinsics, which a preferred width does not change: that table uses the
 * cpu-avx512 one). */
void sl__cpu_normalize_avx512_256(sl_cpu_variant *out);
void sl__cpu_elementwise_avx512_256(sl_cpu_variant *out);
void sl__cpu_moments_avx512_256(sl_cpu_variant *out);
void sl__cpu_blend_avx512_256(sl_cpu_variant *out);
void sl__cpu_resize_avx512_256(sl_cpu_variant *out);
void sl__cpu_trig_rounds_avx512_256(sl_cpu_variant *out);
void sl__cpu_log1p_avx512_256(sl_cpu_variant *out);
void sl__cpu_affine_avx512_256(sl_cpu_variant *out);
#if SL_CPU_AVX512_256
#define sl__cpu_normalize_avx512   sl__cpu_normalize_avx512_256
#define sl__cpu_elementwise_avx512 sl__cpu_elementwise_avx512_256
#define sl__cpu_moments_avx512     sl__cpu_moments_avx512_256
#define sl__cpu_blend_avx512       sl__cpu_blend_avx512_256
#define sl__cpu_resize_avx512      sl__cpu_resize_avx512_256
#define sl__cpu_trig_rounds_avx512 sl__cpu_trig_rounds_avx512_256
#define sl__cpu_log1p_avx512       sl__cpu_log1p_avx512_256
#define sl__cpu_affine_avx512      sl__cpu_affine_avx512_256
#endif

/* Data movement gains nothing from wider vectors; one version serves all. */
void sl__cpu_crop_pad(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w, int off_y,
                      int off_x);
void sl__cpu_hflip(void *image, int h, int w, size_t pixel_bytes);
/* Log-mel through a BLAS: the same for every ISA table, since the BLAS
 * picks its own kernels for the CPU. */
void sl__cpu_log_mel(sl_log_mel_fn *out);
void sl__cpu_pack(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);
void sl__cpu_crop3d(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph, int pw, int oz,
                    int oy, int ox);
void sl__cpu_flip3d(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes);
void sl__cpu_rot90(const void *src, void *dst, int side, size_t pixel_bytes, int k);
/* The shuffle's batch of ids with AVX2 and with AVX-512 DQ (the scalar
 * network where those paths do not apply, or on CPUs built without them). */
void sl__cpu_permute_strided_avx2(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                  int64_t *out);
void sl__cpu_permute_strided_avx512(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                    int64_t *out);
void sl__cpu_paste_box(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0, int x1);
void sl__cpu_pad_rows(int32_t *tokens, const int32_t *lengths, int64_t rows, int64_t stride, int64_t width,
                      int32_t pad);
void sl__cpu_length_mask(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width);
/* Integer hashing has no wide-vector form worth having without AVX-512DQ's
 * 64-bit multiplies; one scalar version serves all tables. */
void sl__cpu_hash_ids(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k);

#endif
