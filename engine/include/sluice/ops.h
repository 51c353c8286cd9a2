/* The transforms a pipeline can chain, and how a scenario describes one. */
#ifndef SLUICE_OPS_H
#define SLUICE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One entry per transform. The name is what adapters declare, records list
 * and `sluice list` prints; adding a transform means adding it here, to the
 * kernel table, and to each adapter that implements it. */
typedef enum sl_op_kind {
    SL_OP_PACK_TOKENS = 0, /* cut a token stream into sequences (first op only) */
    SL_OP_NORMALIZE,       /* per-channel (x - mean) * (1 / std); u8 or f32 in, f32 out */
    SL_OP_SCALE,           /* x * value */
    SL_OP_CLIP,            /* x < lo ? lo : (x > hi ? hi : x) */
    SL_OP_ADD,             /* x + value */
    SL_OP_MULTIPLY,        /* x * value */
    SL_OP_RANDOM_CROP,     /* crop an h' x w' window at a random offset, zero-pad back, centred */
    SL_OP_RANDOM_HFLIP,    /* mirror the width axis with probability p */
    SL_OP_LOG1P,           /* log(1 + x) on f32, libm-free (docs/determinism.md states its bound) */
    SL_OP_HASH_IDS,        /* each i64 id of column j to mix64(id) >> 32 mod size[j]; missing ids stay -1 */
    SL_OP_BAG_OFFSETS,     /* batch: CSR end offsets of each column's embedding bag, a new i64 field */
    SL_OP_BUCKET_BY_LENGTH, /* order: batches of similar lengths within windows of the shuffled epoch */
    SL_OP_PAD_TO_MULTIPLE, /* batch: narrow a sequence field to its longest length rounded up to a multiple */
    SL_OP_ATTENTION_MASK,  /* batch: a u8 field, 1 at a sequence's tokens and 0 at its pads */
    SL_OP_KIND_COUNT
} sl_op_kind;

/* A set of transforms, one bit per sl_op_kind. */
typedef uint64_t sl_transform_set;
#define SL_TRANSFORM(kind) ((sl_transform_set)1 << (kind))

const char *sl_op_kind_name(sl_op_kind kind);
bool sl_op_kind_parse(const char *name, sl_op_kind *out);
/* Writes "normalize,scale" (in sl_op_kind order) into buf. */
void sl_transform_set_format(sl_transform_set set, char *buf, size_t size);

/* Per-channel statistics cover up to this many channels; tabular z-score
 * treats each feature as a channel. */
#define SL_MAX_CHANNELS 128

typedef struct sl_op {
    sl_op_kind kind;
    char field[SL_NAME_MAX];  /* the field it acts on */
    /* Key of the op's random stream (with the seed). Scenarios give stable
     * ids so that inserting an op does not reshuffle every op after it. */
    uint32_t op_id;
    union {
        struct { int32_t seq_len; int32_t pad_id; } pack;
        struct { int32_t channels; float mean[SL_MAX_CHANNELS]; float std[SL_MAX_CHANNELS]; } normalize;
        struct { float value; } scalar;   /* scale, add, multiply */
        struct { float lo, hi; } clip;
        struct { int32_t crop_h, crop_w; } crop;
        struct { float p; } flip;
        /* hash_ids: one table size per column of the field. */
        struct { int32_t columns; int64_t sizes[SL_MAX_CHANNELS]; } hash;
        /* bag_offsets: the name of the offsets field it adds. */
        struct { char out[SL_NAME_MAX]; } bag;
        /* bucket_by_length: batches per window sorted by length. */
        struct { int32_t window_batches; } bucket;
        /* pad_to_multiple: the i32 length field, the multiple and the pad id. */
        struct { char lengths[SL_NAME_MAX]; int32_t multiple; int32_t pad_id; } pad;
        /* attention_mask: the i32 length field and the name of the mask field it adds. */
        struct { char lengths[SL_NAME_MAX]; char out[SL_NAME_MAX]; } mask;
    } u;
} sl_op;

/* Builders that keep scenario definitions to one readable line per op. */
sl_op sl_op_pack_tokens(const char *field, int32_t seq_len, int32_t pad_id);
sl_op sl_op_normalize(const char *field, int32_t channels, const float *mean, const float *std);
sl_op sl_op_scale(const char *field, float value);
sl_op sl_op_clip(const char *field, float lo, float hi);
sl_op sl_op_add(const char *field, float value);
sl_op sl_op_multiply(const char *field, float value);
sl_op sl_op_random_crop(const char *field, uint32_t op_id, int32_t crop_h, int32_t crop_w);
sl_op sl_op_random_hflip(const char *field, uint32_t op_id, float p);
sl_op sl_op_log1p(const char *field);
/* sizes[j] is the table size of column j, in [1, 2^31]. */
sl_op sl_op_hash_ids(const char *field, int32_t columns, const int64_t *sizes);
sl_op sl_op_bag_offsets(const char *field, const char *out);
/* `field` is the i32 length field that orders the batches; op_id keys the
 * order of the batches within a window. */
sl_op sl_op_bucket_by_length(const char *field, uint32_t op_id, int32_t window_batches);
sl_op sl_op_pad_to_multiple(const char *field, const char *lengths, int32_t multiple, int32_t pad_id);
sl_op sl_op_attention_mask(const char *field, const char *lengths, const char *out);

/* Whether an op maps each value to a new value independently of the others
 * (the ops a fused executor can chain inside one tile). */
bool sl_op_is_elementwise(sl_op_kind kind);

#ifdef __cplusplus
}
#endif

#endif
