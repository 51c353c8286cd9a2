/* What an op is to the engine: one descriptor per sl_op_kind.
 *
 * Executors never switch over op kinds. They ask the descriptor to validate
 * the op against the schema it sees (compile), to describe it for the
 * pipeline's fingerprint, and to run it: element-phase ops through `rows`
 * (and, where an op is one arithmetic step per value, `ew_step`, so the fused
 * executor can chain it inside a tile), batch-phase ops through `batch` once
 * the element phase of a batch is done. An op that can be differentiated
 * also gives its vector-Jacobian product (`vjp`, `batch_vjp`), which the
 * autodiff API (autodiff.c) chains backwards; one with learnable parameters
 * says how many and where they live in its sl_op. Adding an op is a value in
 * sl_op_kind, a builder, a descriptor file in engine/ops/ and a line in
 * the table of ops.c; no executor changes. */
#ifndef SLUICE_OP_DESC_H
#define SLUICE_OP_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

#include "kernels/device.h"
#include "pipeline/internal.h"
#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"
#include "sluice/pipeline/ops.h"

typedef enum sl__op_phase {
    SL__PHASE_SOURCE = 0, /* consumed while gathering an element (pack_tokens) */
    SL__PHASE_ELEMENT,    /* each element independently: rows, maybe ew_step */
    SL__PHASE_BATCH,      /* the whole batch, after the element phase */
} sl__op_phase;

/* An op's parameters, declared once in its descriptor and walked by
 * everything that needs them all: the pipeline's fingerprint (checkpoints
 * refuse another pipeline's state) and `sluice export`'s plan (what a peer
 * loader is told). A parameter lives in the op's union at `offset`. */
typedef enum sl__param_type {
    SL__PARAM_I32,   /* int32_t; fingerprinted as an int64 */
    SL__PARAM_I64,   /* int64_t (a table column only) */
    SL__PARAM_F32,   /* float */
    SL__PARAM_NAME,  /* char[SL_NAME_MAX]: a field's name */
    SL__PARAM_TABLE, /* per-row columns; the int32_t at offset is the row count */
} sl__param_type;

typedef struct sl__param_column {
    const char *name;
    sl__param_type type; /* SL__PARAM_F32 or SL__PARAM_I64 */
    size_t offset;       /* of the column's first value in sl_op */
    /* When not NULL, a column the export derives from the op (normalize's
     * inv_std: what the kernels multiply by); it is not fingerprinted, since
     * the parameters it is computed from are. */
    float (*derive)(const sl_op *op, int row);
} sl__param_column;

typedef struct sl__op_param {
    const char *name;
    sl__param_type type;
    size_t offset;
    const sl__param_column *columns; /* SL__PARAM_TABLE */
    int ncolumns;
} sl__op_param;

#define SL__PARAM_AT(type_, name_, member)                                                                             \
    {                                                                                                                  \
        .name = name_, .type = type_, .offset = offsetof(sl_op, u.member)                                              \
    }
#define SL__PARAM_I32(name_, member)  SL__PARAM_AT(SL__PARAM_I32, name_, member)
#define SL__PARAM_F32(name_, member)  SL__PARAM_AT(SL__PARAM_F32, name_, member)
#define SL__PARAM_NAME(name_, member) SL__PARAM_AT(SL__PARAM_NAME, name_, member)
/* A table whose row count is the i32 `count` and whose columns are the
 * array `columns` (of sl__param_column). */
#define SL__PARAM_TABLE(name_, count, columns_)                                                                        \
    {                                                                                                                  \
        .name = name_, .type = SL__PARAM_TABLE, .offset = offsetof(sl_op, u.count), .columns = columns_,               \
        .ncolumns = (int)(sizeof columns_ / sizeof columns_[0])                                                        \
    }
#define SL__COLUMN_F32(name_, member)                                                                                  \
    {                                                                                                                  \
        .name = name_, .type = SL__PARAM_F32, .offset = offsetof(sl_op, u.member)                                      \
    }
#define SL__COLUMN_I64(name_, member)                                                                                  \
    {                                                                                                                  \
        .name = name_, .type = SL__PARAM_I64, .offset = offsetof(sl_op, u.member)                                      \
    }
/* In a descriptor: its parameters, an array of sl__op_param. */
#define SL__PARAMS(list) .params = list, .nparams = (int)(sizeof list / sizeof list[0])

/* Feeds every parameter of op into a fingerprint, in its descriptor's
 * order; a table row by row. */
void sl__op_fingerprint(const sl_op *op, XXH3_state_t *state);

/* What a running op may consult besides its own compiled form. */
typedef struct sl__op_ctx {
    const sl_pipeline *pipeline;
    const sl_kernel_table *kernels;
    int64_t epoch;
} sl__op_ctx;

/* What an op's device path (device_rows, device_batch) may use: the
 * device, the batch's rows and, in device memory, what the host prepared
 * for this batch. engine/exec/device.c fills it for each op of each batch. */
typedef struct sl__device_ctx {
    const sl_pipeline *pipeline;
    const sl_device *device;
    void *stream;
    int64_t rows;                 /* rows of this batch */
    int64_t capacity;             /* rows every buffer holds */
    const int64_t *ids;           /* device: the rows' element ids */
    const sl_device_batch *batch; /* device: the batch's epoch and index */
    sl_device_rows_i32 decisions; /* device: this op's per-row decisions (its decision_columns) */
    const void *params;           /* device: this op's per-batch block (its batch decisions, or device_params) */
    void *scratch;                /* device: device_scratch bytes */
    void *state;                  /* what device_setup prepared */
    /* Runs spec ops [first, first + count) (an owner's sub-chain) on rows
     * of x in place; returns a device error or 0. */
    int (*run_nested)(const struct sl__device_ctx *ctx, int first, int count, void *x);
    void *executor;
} sl__device_ctx;

/* The fields of a batch on the device, for batch-phase ops: each field's
 * rows and a spare buffer of the same capacity, which an op writing out of
 * place fills and swaps in. */
typedef struct sl__device_fields {
    void *data[SL_MAX_FIELDS];
    void *spare[SL_MAX_FIELDS];
} sl__device_fields;

typedef struct sl__op_desc {
    sl__op_phase phase;
    /* rows() accepts in == out (the op can work in place). Executors pass
     * distinct buffers to an op that cannot, and never pass a read-only
     * source view as out. */
    bool in_place;
    /* Draws random numbers per element (or per batch) and epoch: a cache
     * may not follow it, since the cache would replay epoch 0's draws every
     * epoch, and `sluice export` says whether its draws are handed over. */
    bool random;
    /* Validates the op against `field` (its spec before the op, in the
     * output schema being built), updates that spec to what the op produces,
     * and fills the compiled op's geometry, constants and out layout
     * (c->out_dtype and c->out_bytes default to the input's). Errors name the
     * op index and the field. */
    sl_status (*compile)(sl_pipeline *pipeline, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err);
    /* Its parameters (none when nparams is 0). */
    const struct sl__op_param *params;
    int nparams;
    /* Frees what compile prepared (NULL when nothing). */
    void (*release)(sl__compiled_op *c);
    /* Element phase: transforms `count` consecutive elements of in (in the
     * op's input layout, c->in_bytes each) into out (c->out_bytes each).
     * ids[i] is element i's data set index, which keys its random draws;
     * scratch holds at least c->scratch_bytes. */
    void (*rows)(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *in,
                 void *out, void *scratch);
    /* Optional: the op, for one element, as one f32 step of the element-wise
     * chain. Returns false when it cannot be one (then rows() runs). The
     * step must compute exactly what rows() computes for that element. */
    bool (*ew_step)(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, sl_ew_step *step);
    /* Batch phase: transforms the batch in place; randomness keyed by
     * (seed, op id, batch->epoch, batch->index). May narrow a field's
     * per-batch shape within its capacity. */
    sl_status (*batch)(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_batch *batch, sl_err *err);

    /* Optional, element phase: the vector-Jacobian product of rows() on
     * `count` elements of an f32 output. x is the op's input as rows() saw
     * it (the tape keeps it only when vjp_needs_input; NULL otherwise), dy
     * the cotangent of its output (c->out_bytes / 4 floats per element).
     * Writes the cotangent of the input into dx (c->values floats per
     * element; NULL when nobody needs it; dx may equal dy) and adds the
     * gradient of each learnable parameter into dparams (param_count
     * doubles, in the op's parameter order), in a fixed order. Random
     * decisions are recomputed from ids and ctx->epoch as rows() drew them,
     * so a mask is never stored. */
    void (*vjp)(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count, const void *x,
                const float *dy, float *dx, double *dparams);
    bool vjp_needs_input;
    /* Optional, batch phase: the vector-Jacobian product of batch() on the
     * cotangent of one field of the batch (f32, the batch's per-batch
     * shape), in place. */
    sl_status (*batch_vjp)(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch, sl_tensor *cotangent,
                           sl_err *err);
    /* Optional: learnable parameters. How many the op has, and where the
     * k-th lives in the sl_op: parameters are values of the spec, so the
     * fingerprint sees them and an SGD step writes a new spec. */
    int64_t (*param_count)(const sl_op *op);
    float *(*param_at)(sl_op *op, int64_t k);
    /* Optional: how many of the spec's ops after this one it owns (its
     * sub-chains). Its compile compiles them (sl__compile_nested); the
     * pipeline does not compile them again, and executors never run an op
     * with an owner (c->owner >= 0): the owner's rows runs them. */
    int (*nested)(const sl_op *op);
    /* Optional, for a random element-phase op: the names of its per-element
     * decisions, comma-separated ("off_y,off_x"), and the function that
     * writes them for one element as i32 values in that order: exactly what
     * rows() takes, so `sluice export` can hand them to a peer loader. A
     * random op without it has decisions that cannot be exported. */
    const char *decision_columns;
    void (*decisions)(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int32_t *out);
    /* Optional, for a random element-phase op whose decisions are its one
     * Philox block per element by a rule (kernels/decide.h): the rule, its
     * columns from 0. Its rows and decisions then draw through
     * sl__op_decide, and the device executor draws every row's decisions
     * on the device by the same rule. */
    void (*decide)(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule);
    /* Optional, for a random op with an ew_step: the rule its step follows
     * per element (kernels/decide.h). Its ew_step is then
     * sl__ew_step_by_rule, and the device executor draws the steps of every
     * row on the device by the same rule. */
    void (*step_rule)(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_step_rule *rule);
    /* Optional, for a random batch-phase op: the names of its per-batch
     * decisions, comma-separated ("lambda,w_own,w_partner"), and the
     * function that writes them for one batch (its epoch, index and count
     * are what the draws read) as f32 values in that order, and, when
     * batch_partners, each row's partner row into partner[batch->count]:
     * computed by the same functions batch() calls. */
    const char *batch_decision_columns;
    bool batch_partners;
    void (*batch_decisions)(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch, float *values,
                            int64_t *partner);
    /* For a random op with neither hook: why its draws are not exported,
     * for the plan (a peer is then compared statistically). */
    const char *no_decisions_reason;
    /* For a random op whose draws are too many to export but keyed by
     * nothing a peer lacks (the plan's seed, the op id, the element id,
     * the epoch): how to recompute them, for the plan. Such an op counts
     * as exported, so a peer is held to the reference bitwise. */
    const char *keyed_draws;

    /* The op on a device (kernels/device.h), through the device table the
     * executor hands it, as rows and batch run it through a kernel table:
     * the same bits, checked on every machine by the host emulation. An op
     * whose ew_step resolves to a step the device chain runs needs neither
     * hook: the executor fuses such steps into chains. Source-phase ops run
     * in the host's gather. A transform with none of these has no device
     * path (sl_op_device_transforms). */
    /* Element phase: ctx->rows rows of in (c->in_bytes each) into a distinct
     * out (c->out_bytes each). in is the executor's working buffer, which
     * nothing reads after the op, so the op may use it as its own (branch
     * b of random_choice runs there). Returns a device error or 0. */
    int (*device_rows)(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out);
    /* Batch phase: on the batch's device fields. */
    int (*device_batch)(const sl__device_ctx *ctx, const sl__compiled_op *c, sl__device_fields *fields);
    /* Optional, on the host before a batch is queued: the op's per-batch
     * block (device_params_bytes of it, copied to the device as ctx->params)
     * from the gathered batch (its source fields and ids), and the
     * narrowing of `out`'s per-batch shapes that batch() would make. An op
     * with batch_decisions needs none: its block is those decisions (f32
     * values, then each row's partner as an int64 at 8-byte alignment). */
    void (*device_params)(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *gathered, sl_batch *out,
                          void *params);
    size_t device_params_bytes;
    /* Optional: device scratch for a batch of `capacity` rows. */
    size_t (*device_scratch)(const sl_device *device, const sl__compiled_op *c, int64_t capacity);
    /* Optional: why this device cannot run the op (log_mel without a BLAS),
     * or NULL when it can. */
    const char *(*device_missing)(const sl_device *device);
    /* Optional: device constants made once per run (log_mel's matrices). */
    int (*device_setup)(const sl_device *device, const sl__compiled_op *c, void **state);
    void (*device_release)(const sl_device *device, void *state);
} sl__op_desc;

/* The descriptor of a kind, or NULL for a kind out of range. */
const sl__op_desc *sl__op_desc_of(sl_op_kind kind);

/* Helpers the descriptors share. */

/* An op of the given kind on field, with its random stream's id and every
 * parameter zero: what each op's builder (sl_op_<name>, sluice/pipeline/ops.h, in
 * the op's own file) starts from. */
sl_op sl__op_on(sl_op_kind kind, const char *field, uint32_t op_id);

/* Compiles spec ops [first, first + count) as sub-chain ops of op `owner`:
 * each must act on the owner's field, run per element, keep the field's
 * layout and work in place, and own no ops itself. Errors name the op's
 * index and the owner's. */
sl_status sl__compile_nested(sl_pipeline *pipeline, int owner, int first, int count, sl_err *err);

/* Image geometry of a field, [h, w] or [h, w, c], into c->h, c->w and
 * c->pixel_bytes; `what` names the op in the error. */
sl_status sl__image_geometry(const sl_field_spec *field, const char *what, int index, sl__compiled_op *c, sl_err *err);
/* Volume geometry of a field, [d, h, w] or [d, h, w, c], into c->d, c->h,
 * c->w and c->pixel_bytes (bytes per voxel). */
sl_status sl__volume_geometry(const sl_field_spec *field, const char *what, int index, sl__compiled_op *c, sl_err *err);
/* An op's per-channel constants as a device launch takes them. */
sl_device_channels sl__device_channels(int channels, const float *a, const float *b);
/* How many names a comma-separated list of decision columns holds. */
int sl__column_count(const char *columns);
/* In a batch op's per-batch block of decisions on a device: the byte
 * offset of its partners (int64, after its f32 values at 8-byte
 * alignment). */
size_t sl__device_partners_offset(const sl__op_desc *desc);

/* A batch op that wrote a field's rows into its spare buffer makes them
 * the field's. */
void sl__device_swap(sl__device_fields *fields, int field);
/* Copies the batch's rows of in to out on the device (c->in_bytes each). */
int sl__device_copy_rows(const sl__device_ctx *ctx, const sl__compiled_op *c, const void *in, void *out);

/* Philox block for one element of one op: counter (element, epoch, draw),
 * key (pipeline seed, op id). */
sl_philox_ctr sl__op_draw(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, uint32_t draw);
/* The same for a batch-phase op: counter (batch index, epoch, draw). */
sl_philox_ctr sl__op_batch_draw(const sl__op_ctx *ctx, const sl__compiled_op *c, const sl_batch *batch, uint32_t draw);
/* The rows function of an element-phase op that is one f32 chain step per
 * element (its ew_step, resolved for each element's id): the step is the
 * one definition of the op, so `iter`, `reference` and the fused tile chain
 * cannot disagree. One chain call per element, since a per-value random
 * step numbers its draws from the element's first value. */
void sl__rows_by_ew_step(const sl__op_ctx *ctx, const sl__compiled_op *c, const int64_t *ids, int64_t count,
                         const void *in, void *out, void *scratch);
/* Refuses a field that is not f32, naming the op and the field. */
sl_status sl__require_f32(const sl_field_spec *field, const char *what, int index, sl_err *err);

/* For a batch op that adds a field: appends `name` with dtype and element
 * shape to the output schema and returns its index in *out; errors name the
 * op index when the name is taken or the schema is full. */
sl_status sl__add_batch_field(sl_pipeline *pipeline, int index, const char *what, const char *name, sl_dtype dtype,
                              const sl_shape *shape, int *out, sl_err *err);
/* The index of the i32 scalar field `name` of the source (a sequence length
 * field), or an error naming the op. */
sl_status sl__length_field(const sl_pipeline *pipeline, int index, const char *what, const char *name, int *out,
                           sl_err *err);

/* A rule of the given kind and columns (or words) under the op's key
 * (seed, op id), bounds and probability left to the op's decide. */
sl_decide_rule sl__op_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_kind kind, int columns);
/* An op's decisions for one element by its rule (desc->decide): what its
 * rows read and, as its `decisions` hook, what it exports. */
void sl__op_decide(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int32_t *out);
/* An op's chain step for one element by its rule (desc->step_rule), as its
 * ew_step hook. */
bool sl__ew_step_by_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, sl_ew_step *step);

/* Keyed per-element decisions of the movement ops, shared by their rows and
 * by anything that hands the decisions to another loader. */
void sl__crop_offsets(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int *off_y, int *off_x);
bool sl__flip_decision(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element);
/* random_crop3d's patch offset (depth, height, width) and random_flip3d's
 * axes (SL_AXIS_* bits) for one element. */
void sl__crop3d_offsets(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element, int offset[3]);
unsigned sl__flip3d_axes(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element);
/* rot90's quarter turns (0..3) for one element. */
int sl__rot90_turns(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element);

/* Shared by the resampling ops (resize, random_resized_crop): image geometry
 * of a u8 or f32 field with sides and an output size the resize plan covers
 * (channels set), and the field's spec after resampling to out_h x out_w f32. */
sl_status sl__resample_geometry(const sl_field_spec *field, const char *what, int index, int32_t out_h, int32_t out_w,
                                sl__compiled_op *c, int *channels, sl_err *err);
void sl__resample_output(sl_field_spec *field, int32_t out_h, int32_t out_w, int channels, sl__compiled_op *c);

/* The descriptors, one per op of sluice/pipeline/op_list.h, each in engine/ops/. */
#define SL__OP_DESC_EXTERN(NAME, name, summary) extern const sl__op_desc sl__op_##name##_desc;
SL_OP_LIST(SL__OP_DESC_EXTERN)
#undef SL__OP_DESC_EXTERN

/* A compiled op's name, for messages. */
static inline const char *sl__op_name(const sl__compiled_op *c)
{
    return sl_op_kind_name(c->op->kind);
}

#endif
