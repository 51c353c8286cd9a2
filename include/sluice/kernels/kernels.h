/* Kernel signatures and the tables that dispatch them.
 *
 * Each signature is declared once here and implemented per back end:
 * kernels/ref (portable C, the oracle, always built), kernels/cpu (optimized)
 * and, later, kernels/cuda. The registry fills a table reference-first and
 * lets faster versions override entries after a runtime check, so an op
 * without an optimized version silently runs the reference. */
#ifndef SLUICE_KERNELS_H
#define SLUICE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/core/philox.h"
#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/kernels/permutation.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-channel constants of a normalize op, prepared once when a pipeline is
 * built. inv_std is 1.0f / std computed on the host, so every back end
 * multiplies by the same float. The reference reads the per-channel arrays;
 * optimized kernels read them tiled to `period` values (a multiple of the
 * channel count, and of 16 where that stays short), so their inner loops need
 * no modulo, and preparing nothing per call keeps short rows (a tabular row
 * of 100 features) cheap. */
typedef struct sl_normalize_consts {
    int channels;
    int period;
    float mean[SL_MAX_CHANNELS];
    float inv_std[SL_MAX_CHANNELS];
    float *mean_tiled; /* period values: mean[j % channels] */
    float *inv_std_tiled;
} sl_normalize_consts;

/* Normalize `pixels` pixels of consts->channels interleaved channels:
 * dst = ((float)src - mean[c]) * inv_std[c]. */
typedef void (*sl_normalize_u8_fn)(const uint8_t *src, float *dst, int64_t pixels, const sl_normalize_consts *k);
/* As above for f32 input; src may equal dst. */
typedef void (*sl_normalize_f32_fn)(const float *src, float *dst, int64_t pixels, const sl_normalize_consts *k);

/* Per-channel constants of an affine op, prepared once when a pipeline is
 * built and tiled to a period exactly as normalize's are. */
typedef struct sl_affine_consts {
    int channels;
    int period;
    float scale[SL_MAX_CHANNELS];
    float bias[SL_MAX_CHANNELS];
    float *scale_tiled; /* period values: scale[j % channels] */
    float *bias_tiled;
} sl_affine_consts;

/* dst = src * scale[c] + bias[c] over `pixels` pixels of consts->channels
 * interleaved channels: a product and a sum, each rounded (never fused).
 * src may equal dst. */
typedef void (*sl_affine_f32_fn)(const float *src, float *dst, int64_t pixels, const sl_affine_consts *k);

/* What keys one element's dropout mask. */
typedef struct sl_dropout_key {
    sl_philox_key key; /* (seed, op id) */
    uint64_t element;  /* the element's data set index */
    uint32_t epoch;
    uint32_t threshold; /* a value is dropped when its word is below this: ceil(p 2^32) */
    float scale;        /* what a kept value is multiplied by: 1.0f / (1.0f - p) */
} sl_dropout_key;

/* Dropout of one element's n values: value i is dropped when word i mod 4
 * of the Philox block with counter (element, epoch, i / 4) is below
 * threshold, and then dst[i] = 0; otherwise dst[i] = src[i] * scale. src may
 * equal dst. The op's VJP is the same kernel applied to the cotangent. */
typedef void (*sl_dropout_fn)(const float *src, float *dst, int64_t n, const sl_dropout_key *d);

/* dst[i] = src[i] * s[i mod channels] over `pixels` pixels: the VJP in x of
 * normalize (s = 1 / std) and of affine (s = scale). src may equal dst. */
typedef void (*sl_mul_channels_fn)(const float *src, float *dst, int64_t pixels, int channels, const float *s);
/* The parameter gradients of affine: adds, per channel c, the sum of
 * (double)dy * (double)x into dscale[c] and of (double)dy into dbias[c],
 * pixel after pixel in index order (each product is exact in double; each
 * sum rounds once). */
typedef void (*sl_affine_grads_fn)(const float *x, const float *dy, int64_t pixels, int channels, double *dscale,
                                   double *dbias);

/* What one step of an element-wise chain computes on a value v. The
 * chain's interpreters (every back end's ew_chain, the device bodies) know
 * these and nothing about ops: each op's ew_step resolves to one. The
 * arithmetic ones are listed once here, each with its body
 * sl__step_<name>(v, a, b) in kernels/include/kernels/bodies.h, and every
 * interpreter's loop is generated from the list: a new one is a line here
 * and a body there.
 *   normalize: (v - a) * b
 *   multiply:  v * a (scale, multiply, random_scale)
 *   add:       v + a (add, random_brightness)
 *   clip:      v < a ? a : (v > b ? b : v)
 * gaussian_noise (v + a z, z a normal variate per value) follows them: it
 * needs the value's index, so each interpreter runs it in a loop of its own. */
#define SL_EW_ARITHMETIC(X) X(NORMALIZE, normalize) X(MULTIPLY, multiply) X(ADD, add) X(CLIP, clip)

typedef enum sl_ew_opcode {
#define SL__EW_OPCODE(NAME, name) SL_EW_##NAME,
    SL_EW_ARITHMETIC(SL__EW_OPCODE)
#undef SL__EW_OPCODE
        SL_EW_GAUSSIAN_NOISE,
    SL_EW_OPCODE_COUNT
} sl_ew_opcode;

/* One step of an element-wise chain on f32 data. A per-element random op
 * (random_brightness, random_scale) resolves its draw for the element into
 * an ADD or MULTIPLY step; a per-value one (gaussian_noise) is a step of its
 * own that carries its key and the element's counter: value i = 64 g +
 * 16 k + j of the element takes word k of Philox block (ctr.v[0..2],
 * ctr.v[3] + 16 g + j) (kernels/ref/ref.h, docs/determinism.md). */
typedef struct sl_ew_step {
    sl_ew_opcode kind;
    float a, b;        /* normalize: mean, inv_std; scale/add/multiply: value, -; clip: lo, hi;
                             * gaussian_noise: sigma, - */
    sl_philox_key key; /* gaussian_noise: the op's stream */
    sl_philox_ctr ctr; /* gaussian_noise: (element, epoch, first draw) */
} sl_ew_step;

/* Applies steps in order to every value of x, in place. The reference runs
 * each step over all n values in turn; the optimized version runs all steps
 * over one cache-sized tile before moving on. Each value sees the same
 * operations in the same order either way, so the results are identical.
 * x[i] is value i of one element for a step that draws per value: a caller
 * with such a step passes one element (from its first value) per call. */
typedef void (*sl_ew_chain_fn)(float *x, int64_t n, const sl_ew_step *steps, int nsteps);

/* Copies the crop_h x crop_w window at (off_y, off_x) of an h x w image of
 * pixel_bytes-sized pixels into dst, centred, with zeros around it. */
typedef void (*sl_crop_pad_fn)(const void *src, void *dst, int h, int w, size_t pixel_bytes, int crop_h, int crop_w,
                               int off_y, int off_x);
/* Mirrors an h x w image of pixel_bytes-sized pixels along its width, in place. */
typedef void (*sl_hflip_fn)(void *image, int h, int w, size_t pixel_bytes);
/* Writes one sequence: the `available` tokens of src, then pad up to seq_len. */
typedef void (*sl_pack_fn)(int32_t *dst, const int32_t *src, int64_t available, int64_t seq_len, int32_t pad);

/* Mean and population variance of n floats, both in double, in one fixed
 * order that every back end follows so that they agree bit for bit: value i
 * goes into partial sum i mod 8 (each partial in index order), and the eight
 * partials are added as ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)).
 * mean is that sum over n; var is the same sum of ((double)x - mean)^2 over
 * n (two passes, so no cancellation). n >= 1. */
typedef void (*sl_moments_fn)(const float *x, int64_t n, double *mean, double *var);
/* Per-channel mean and sum of squared deviations (M2) of `pixels` pixels of
 * `channels` interleaved f32 channels, in double, in the order of
 * sl_moments_fn applied to each channel: pixel p's value of channel c goes
 * into partial sum p mod 8 of that channel (each partial in pixel order),
 * the partials combined by the same tree; mean[c] is that sum over pixels,
 * m2[c] the same sum of ((double)x - mean[c])^2 (two passes). pixels >= 1,
 * channels in [1, SL_MAX_CHANNELS]. */
typedef void (*sl_channel_moments_fn)(const float *x, int64_t pixels, int channels, double *mean, double *m2);
/* Copies the pd x ph x pw patch at (oz, oy, ox) of a d x h x w volume of
 * voxel_bytes-sized voxels into dst, which is the patch (no padding). */
typedef void (*sl_crop3d_fn)(const void *src, void *dst, int d, int h, int w, size_t voxel_bytes, int pd, int ph,
                             int pw, int oz, int oy, int ox);
/* Mirrors a d x h x w volume in place along the axes set in `axes`:
 * SL_AXIS_D, SL_AXIS_H, SL_AXIS_W. */
#define SL_AXIS_D 1u
#define SL_AXIS_H 2u
#define SL_AXIS_W 4u
typedef void (*sl_flip3d_fn)(void *volume, int d, int h, int w, size_t voxel_bytes, unsigned axes);
/* out[i * classes + k] = labels[i] == k ? 1 : 0; a label outside [0, classes)
 * gives a row of zeros. */
typedef void (*sl_one_hot_fn)(const int32_t *labels, float *out, int64_t count, int32_t classes);
/* dst[i] = a[i] * wa + b[i] * wb, two products and one sum, each rounded to
 * float; dst may equal a or b. */
typedef void (*sl_blend_fn)(float *dst, const float *a, const float *b, int64_t n, float wa, float wb);
/* Copies rows [y0, y1) x columns [x0, x1) of an h x w image of
 * pixel_bytes-sized pixels from src into the same place of dst. */
typedef void (*sl_paste_box_fn)(void *dst, const void *src, int h, int w, size_t pixel_bytes, int y0, int y1, int x0,
                                int x1);
/* Bilinear resampling of an image of `channels` interleaved channels from
 * in_h x in_w to out_h x out_w, with half-pixel centres (OpenCV's INTER_LINEAR
 * and PyTorch's align_corners=False): output pixel d samples the source at
 * s = (d + 1/2) in / out - 1/2, clamped to [0, in - 1]; i0 = floor(s),
 * i1 = min(i0 + 1, in - 1), and the weight of i1 is s - i0. The plan holds
 * those indices and weights, computed once in exact integer arithmetic (s is
 * the rational ((2d + 1) in - out) / (2 out)) and rounded once to float by a
 * single correctly rounded division, so every back end reads the same bits.
 * Every back end evaluates each output value as
 *     top = p00 + wx * (p01 - p00)
 *     bot = p10 + wx * (p11 - p10)
 *     out = top + wy * (bot - top)
 * in that order, with no contraction: a constant image stays exactly
 * constant, and the reference and optimized kernels agree bit for bit. */
#define SL_RESIZE_MAX_SIDE 65536

typedef struct sl_resize_plan {
    int in_h, in_w, out_h, out_w, channels;
    int32_t *y0, *y1; /* out_h source rows */
    float *wy;        /* out_h weights of y1 */
    int32_t *x0, *x1; /* out_w source columns */
    float *wx;        /* out_w weights of x1 */
    /* The columns as offsets of values within a source row, one entry per
     * output value of a row (out_w x channels), for kernels that run along
     * a row without tracking the channel. */
    int32_t *v0, *v1;
    float *wv;
} sl_resize_plan;

/* Resizes one image per the plan. src_stride is the number of values from
 * one source row to the next (in_w x channels for a whole image, more for a
 * window of a larger one); dst is out_h x out_w x channels, dense. scratch
 * holds sl_resize_scratch_values(plan) floats. */
typedef void (*sl_resize_u8_fn)(const uint8_t *src, int64_t src_stride, float *dst, const sl_resize_plan *plan,
                                float *scratch);
typedef void (*sl_resize_f32_fn)(const float *src, int64_t src_stride, float *dst, const sl_resize_plan *plan,
                                 float *scratch);

/* Log-mel spectrogram of a waveform (Whisper's recipe): frames of `frame`
 * samples every `hop`, a periodic Hann window, the DFT of n_fft points (the
 * frame zero-padded), the power |X_k|^2 of bins 0..n_fft/2, a bank of
 * triangular filters of peak 1 on the HTK mel scale (mel = 2595
 * log10(1 + f / 700)) from 0 Hz to sample_rate / 2, then
 * y = log10(max(mel, 1e-10)), y = max(y, max over the element of y - 8),
 * out = (y + 4) / 4. Output [frames, mels], frames = 1 + (samples - frame) /
 * hop (no centre padding).
 *
 * The DFT and the filters are two matrix products, which is what the
 * optimized back end hands to a BLAS sgemm: frames x frame times the real
 * DFT matrix (frame x 2 bins: window x cos, then -window x sin, computed
 * once with sluice's libm-free sine so they are the same bits everywhere),
 * and frames x bins times the filter bank (bins x mels). The reference
 * multiplies in a fixed order (each output summed over k ascending from 0),
 * so it is bit-reproducible on every machine; a BLAS sums in its own
 * blocked order, so the optimized output is within the bound of
 * docs/determinism.md of the reference, not bitwise equal. Framing, power
 * and the logarithm (sl_det_log10f, no libm) are shared code. */
typedef struct sl_melspec_consts {
    int samples, sample_rate, frame, hop, n_fft, mels;
    int frames;     /* 1 + (samples - frame) / hop */
    int bins;       /* n_fft / 2 + 1 */
    float *dft;     /* frame x (2 bins), row-major */
    float *filters; /* bins x mels, row-major */
} sl_melspec_consts;

/* One waveform (k->samples floats) to its log-mel spectrogram (frames x mels). */
typedef void (*sl_log_mel_fn)(const float *wave, float *out, const sl_melspec_consts *k, float *scratch);
/* How far an optimized table's log_mel, whose products a BLAS sums in its
 * own order, may be from the reference's, in output units: twice the
 * largest difference measured (1.247e-4, OpenBLAS 0.3.21's AVX-512 kernels,
 * over whole ci epochs of MM-2 under ten seeds: 20 million values). A gain
 * error of 0.1 % in both products shifts every output by 3.26e-4 and fails
 * it (docs/determinism.md). MM-2's stated tolerance and the kernel
 * checker's both are this one value. */
#define SL_LOG_MEL_TOLERANCE 2.5e-4

/* IO-4's expensive op: each value becomes, `rounds` times over,
 * y = sin y + cos y, in double with sluice's libm-free sine
 * (sluice/core/detmath.h; y in radians is y / (2 pi) turns), rounded to float
 * once at the end. It exists to cost something per element, so it has only
 * this one implementation, which every table shares. */
typedef void (*sl_trig_rounds_fn)(const float *in, float *out, int64_t n, int rounds);

/* The BLAS behind the optimized log-mel, for records: OpenBLAS's own
 * configuration string and its thread count ("OpenBLAS 0.3.21 DYNAMIC_ARCH
 * ... Haswell MAX_THREADS=64, 1 thread"), or a sentence saying there is
 * none. Setting the
 * thread count happens once, before the first product: 1 thread, because
 * sluice's own workers (prefetch, fused threads) already run one element
 * per core, and BLAS threads would compete with them for the same cores. */
void sl_blas_describe(char *buf, size_t size);
/* Median ns of the BLAS's own sgemm at (m x k) times (k x n), row-major,
 * over `repetitions` calls on operands in cache; 0 without a BLAS. */
double sl_blas_sgemm_probe_ns(int m, int n, int k, int repetitions);
/* log(1 + x) of n f32 values, without libm: one range reduction and a fixed
 * polynomial in correctly rounded float operations (sl__log1p_f32 in
 * kernels/ref/ref.h), so every back end returns the same bits; within 0.835
 * ulp of the exact value (docs/determinism.md). src may equal dst. */
typedef void (*sl_log1p_fn)(const float *src, float *dst, int64_t n);

/* Per-column table sizes of a hash_ids op, prepared once when a pipeline is
 * built, with the 64-bit reciprocal of each size that lets an optimized
 * kernel take the remainder with two multiplies instead of a division
 * (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019). */
typedef struct sl_hash_consts {
    int columns;
    uint32_t size[SL_MAX_CHANNELS];
    uint64_t reciprocal[SL_MAX_CHANNELS]; /* UINT64_MAX / size + 1 (wraps to 0 for size 1) */
} sl_hash_consts;

/* The hashed id of raw id `id` in a table of `size` rows: the high 32 bits
 * of sl_mix64(id) (SplitMix64's first output seeded with the id: the golden
 * gamma added, then the finalizer), modulo the size. A negative id is
 * missing and stays SL_ID_MISSING. One definition shared by every back end
 * and by the tests. */
#define SL_ID_MISSING ((int64_t)-1)
/* Hashes rows x consts->columns ids (row-major) into dst; src may equal dst. */
typedef void (*sl_hash_ids_fn)(const int64_t *src, int64_t *dst, int64_t rows, const sl_hash_consts *k);

/* The CSR offsets of one embedding bag per column: ends[r * columns + j] is
 * the number of present (non-negative) ids in column j over rows 0..r, so
 * column j's offsets are 0 followed by ends[.][j] (torch.nn.EmbeddingBag's
 * include_last_offset layout, without its leading 0). */
typedef void (*sl_bag_offsets_fn)(const int64_t *ids, int64_t *ends, int64_t rows, int columns);

/* Dynamic padding, in place: row r of `rows` rows of `stride` i32 tokens
 * moves to offset r * width (width <= stride), keeping its first
 * min(max(length[r], 0), width) tokens and filling the rest of its width
 * with pad. */
typedef void (*sl_pad_rows_fn)(int32_t *tokens, const int32_t *lengths, int64_t rows, int64_t stride, int64_t width,
                               int32_t pad);
/* An attention mask of rows x width u8: 1 below the row's length (clamped
 * to [0, width]), 0 after it. */
typedef void (*sl_length_mask_fn)(uint8_t *mask, const int32_t *lengths, int64_t rows, int64_t width);
/* Turns a side x side image of pixel_bytes-sized pixels by k quarter turns
 * (k in 0..3) into dst, as numpy.rot90(src, k): dst[y][x] is src[y][x] for
 * k = 0, src[x][side-1-y] for 1, src[side-1-y][side-1-x] for 2 and
 * src[side-1-x][y] for 3. src and dst do not overlap. */
typedef void (*sl_rot90_fn)(const void *src, void *dst, int side, size_t pixel_bytes, int k);

/* out[i] = the element at position first + i * stride of perm, for
 * i < count: sl_permutation_apply_strided's ids, computed by the table's
 * instruction set (a batch's element ids are a large part of a small row's
 * cost). */
typedef void (*sl_permute_strided_fn)(const sl_permutation *perm, uint64_t first, uint64_t stride, int64_t count,
                                      int64_t *out);

/* The registered tables, in the order the CPU's features alone would
 * rank them, the flag-chosen default last: cpu-avx512-256 runs the AVX-512
 * kernels on 256-bit vectors and sits below cpu-avx512, which a CPU with
 * AVX-512 runs by default. Which is faster on a given core is a question
 * for measurement (sluice/bench/kernel_tune.h). */
typedef enum sl_kernel_table_id {
    SL_TABLE_REFERENCE = 0,
    SL_TABLE_GENERIC,
    SL_TABLE_AVX2,
    SL_TABLE_AVX512_256,
    SL_TABLE_AVX512,
    SL_TABLE_COUNT,
    /* A table assembled entry by entry from registered ones
     * (sl_kernels_assemble). It is not registered, but it has an id of its
     * own, so that what an executor keeps per table (a cache op's cache)
     * stays apart from the registered tables'. Every assembled table shares
     * it: a program runs one (auto), and one that runs several on a
     * pipeline with a cache op resets the cache between them
     * (sl_pipeline_cache_reset). */
    SL_TABLE_ASSEMBLED = SL_TABLE_COUNT,
    SL_TABLE_SLOTS
} sl_kernel_table_id;

/* A kernel table is a value: chosen once (sl_kernels_choose) and handed to
 * whatever runs kernels (pipelines' executors, the order's shuffle,
 * modules), which never look one up themselves. Every entry of every table
 * computes the same bits as the reference's (the tests hold each table to
 * it), so which table runs changes only the speed. */
/* Every entry of a kernel table, by name: the member name and, with _fn
 * appended, its type. The struct and the test that every table fills every
 * entry (test_kernel_tables) are generated from it. mul_channels and
 * affine_grads are backward passes (the autodiff API, sluice/exec/autodiff.h). */
#define SL_KERNEL_ENTRIES(X)                                                                                           \
    X(permute_strided)                                                                                                 \
    X(normalize_u8)                                                                                                    \
    X(normalize_f32)                                                                                                   \
    X(ew_chain)                                                                                                        \
    X(crop_pad)                                                                                                        \
    X(hflip)                                                                                                           \
    X(pack)                                                                                                            \
    X(moments)                                                                                                         \
    X(channel_moments)                                                                                                 \
    X(crop3d)                                                                                                          \
    X(flip3d)                                                                                                          \
    X(one_hot)                                                                                                         \
    X(blend)                                                                                                           \
    X(paste_box)                                                                                                       \
    X(resize_u8)                                                                                                       \
    X(resize_f32)                                                                                                      \
    X(log_mel)                                                                                                         \
    X(trig_rounds)                                                                                                     \
    X(log1p)                                                                                                           \
    X(hash_ids)                                                                                                        \
    X(bag_offsets)                                                                                                     \
    X(pad_rows)                                                                                                        \
    X(length_mask)                                                                                                     \
    X(affine_f32)                                                                                                      \
    X(dropout)                                                                                                         \
    X(mul_channels)                                                                                                    \
    X(affine_grads)                                                                                                    \
    X(rot90)

/* The entries by index, in SL_KERNEL_ENTRIES order: SL_ENTRY_normalize_u8, ... */
typedef enum sl_kernel_entry {
#define SL__KERNEL_ENTRY_ID(entry) SL_ENTRY_##entry,
    SL_KERNEL_ENTRIES(SL__KERNEL_ENTRY_ID)
#undef SL__KERNEL_ENTRY_ID
        SL_KERNEL_ENTRY_COUNT
} sl_kernel_entry;

/* An entry's name ("normalize_u8"), or NULL outside [0, SL_KERNEL_ENTRY_COUNT). */
const char *sl_kernel_entry_name(int entry);
int sl_kernel_entry_count(void);
/* An entry's index by name, case-insensitive, or -1. */
int sl_kernel_entry_find(const char *name);

typedef struct sl_kernel_table {
    const char *name; /* "reference", "cpu-generic", ..., or an assembled table's ("auto") */
    sl_kernel_table_id id;
    unsigned cpu_features; /* SL_CPU_* bits the table's code needs */
#define SL__KERNEL_MEMBER(entry) sl_##entry##_fn entry;
    SL_KERNEL_ENTRIES(SL__KERNEL_MEMBER)
#undef SL__KERNEL_MEMBER
    /* The registered table each entry is taken from: the table's own id in
     * a registered table, the chosen one in an assembled table. Records
     * name them (which table ran each op). */
    sl_kernel_table_id origin[SL_KERNEL_ENTRY_COUNT];
} sl_kernel_table;

/* Which registered table each entry of an assembled table comes from. */
typedef struct sl_kernel_assembly {
    sl_kernel_table_id table[SL_KERNEL_ENTRY_COUNT];
} sl_kernel_assembly;

/* What the CPU offers, probed once (cpuid through the compiler's
 * builtins): the features the tables need. */
#define SL_CPU_AVX2   0x1u
/* AVX-512 F, BW, VL and DQ: every AVX-512 server CPU has all four. */
#define SL_CPU_AVX512 0x2u

/* The features this CPU has, less those a mask removed. */
unsigned sl_cpu_features(void);
/* Hides features from sl_cpu_features for the rest of the process (mask
 * ANDs them), so a test can see what a machine without AVX-512 or AVX2
 * would choose; ~0u restores them. */
void sl_cpu_features_mask(unsigned mask);

/* The reference kernels alone: the oracle. */
const sl_kernel_table *sl_kernels_reference(void);
/* The fastest table this CPU supports, by its features alone. */
const sl_kernel_table *sl_kernels_default(void);

/* Every registered table, supported here or not, slowest first
 * (sl_kernel_table_id order). */
int sl_kernel_table_count(void);
const sl_kernel_table *sl_kernel_table_at(int index);
/* By name, case-insensitive, or NULL. */
const sl_kernel_table *sl_kernels_find(const char *name);
/* Whether this CPU can run the table; otherwise says why in reason. */
bool sl_kernel_table_supported(const sl_kernel_table *table, char *reason, size_t size);
/* The table a run uses: the named one, or sl_kernels_default() for NULL or
 * "". Refuses an unknown name, listing the tables, and a table this CPU
 * cannot run, saying why. Programs call it once (from --kernels or the
 * environment variable SLUICE_KERNELS) and hand the table down. */
sl_status sl_kernels_choose(const char *name, const sl_kernel_table **out, sl_err *err);

/* Fills *out with each entry of the registered table the choice names for
 * it, under `name` (a string that outlives the table, such as "auto"),
 * with id SL_TABLE_ASSEMBLED, the union of the chosen tables' CPU features
 * and origin set to the choice. Every registered table computes the
 * reference's bits (the tests hold each to it), so any assembly does too:
 * the choice changes only the speed. Refuses a choice naming no registered
 * table or a table this CPU cannot run, saying which entry and why. */
sl_status sl_kernels_assemble(const sl_kernel_assembly *choice, const char *name, sl_kernel_table *out, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
