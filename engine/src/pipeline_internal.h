/* The compiled form of a pipeline, shared by its executors. */
#ifndef SLUICE_PIPELINE_INTERNAL_H
#define SLUICE_PIPELINE_INTERNAL_H

#include "sluice/pipeline.h"

/* An op resolved against the schema it sees: which field it touches and the
 * geometry and constants its kernels need, computed once at build time. */
typedef struct sl__compiled_op {
    const sl_op *op;
    int field;                 /* index in both the source and output schema */
    sl_dtype in_dtype;         /* the field's dtype before this op */
    int64_t values;            /* values per element of the field */
    int h, w;                  /* image geometry for crop and flip */
    size_t pixel_bytes;        /* bytes per pixel (channels x dtype size) */
    sl_normalize_consts norm;  /* normalize; released with the pipeline */
} sl__compiled_op;

struct sl_pipeline {
    sl_pipeline_spec spec;
    const sl_source *source;
    sl_schema source_schema;
    sl_schema output_schema;
    int64_t dataset_size;
    int64_t epoch_size;
    int64_t batches_per_epoch;
    int pack_field;            /* field cut into sequences, or -1 */
    int64_t seq_len;
    int32_t pad_id;
    int64_t stream_tokens;
    /* Fields whose dtype an op changes (u8 normalized to f32) are gathered
     * into a staging buffer of the source dtype first. */
    bool needs_staging[SL_MAX_FIELDS];
    int ncompiled;
    sl__compiled_op compiled[SL_MAX_OPS];
    sl_transform_set transforms;
    uint64_t fingerprint;
    size_t batch_bytes;
};

/* Element-wise step of an f32 op (normalize only with one channel). */
sl_ew_step sl__ew_step_of(const sl__compiled_op *op);
bool sl__op_fits_ew_chain(const sl__compiled_op *op);

/* Keyed per-element decisions, the same for every executor. */
void sl__crop_offsets(const sl_pipeline *pipeline, const sl__compiled_op *op, int64_t epoch, int64_t element,
                      int *off_y, int *off_x);
bool sl__flip_decision(const sl_pipeline *pipeline, const sl__compiled_op *op, int64_t epoch, int64_t element);

/* Reads element's bytes of a source field into dst (packing token streams). */
sl_status sl__gather_element(const sl_pipeline *pipeline, const sl_kernel_table *kernels, int field,
                             int64_t element, void *dst, sl_err *err);

/* Fills ids, epoch, index and count of a batch at position. */
void sl__batch_begin(const sl_pipeline *pipeline, sl_position position, sl_batch *batch);

#endif
