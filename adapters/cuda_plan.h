/* How the cuda adapters turn a pipeline into device launches, apart from
 * CUDA itself: which kernel runs each field's ops, fused how far. Plain C,
 * built with or without CUDA, so that test_cuda_plan can run a plan on the
 * CPU (each launch through the same sl__at_* functions the device kernels
 * wrap) and hold it to the pipeline's own output on every machine. */
#ifndef SLUICE_ADAPTERS_CUDA_PLAN_H
#define SLUICE_ADAPTERS_CUDA_PLAN_H

#include "kernels/cuda.h"
#include "sluice/pipeline.h"

typedef enum sl__cuda_launch_kind {
    SL__LAUNCH_NORMALIZE_U8,
    SL__LAUNCH_NORMALIZE_U8_CHAIN,  /* a u8 normalize and the chain after it, one kernel */
    SL__LAUNCH_NORMALIZE_F32,
    SL__LAUNCH_CHAIN
} sl__cuda_launch_kind;

typedef struct sl__cuda_launch {
    sl__cuda_launch_kind kind;
    sl_cuda_channels channels;  /* the normalizes */
    sl_cuda_chain chain;        /* the chains */
    /* A chain with a step drawn per element (gaussian_noise,
     * random_brightness, random_scale) runs from the batch's row table:
     * its steps are [row_first, row_first + chain.nsteps) of each row's
     * plan->row_steps steps, resolved on the host per row
     * (sl__cuda_plan_row_steps); op[s] is the compiled op whose ew_step
     * gives step s for a row, or -1 for a step the same in every row
     * (chain.steps[s]). */
    bool per_row;
    int row_first;
    int op[SL_CUDA_MAX_STEPS];
} sl__cuda_launch;

typedef struct sl__cuda_field_plan {
    int source_field;           /* index in the source schema */
    size_t in_bytes, out_bytes; /* per element */
    int64_t out_values;         /* f32 values per element */
    int nlaunches;
    sl__cuda_launch launches[SL_MAX_OPS];
} sl__cuda_field_plan;

typedef struct sl__cuda_plan {
    int nfields;                /* the output schema's */
    int row_steps;              /* steps per row of the row table; 0 without random steps */
    sl__cuda_field_plan fields[SL_MAX_FIELDS];
} sl__cuda_plan;

/* Each output field's launches, in op order: a u8 normalize fused with the
 * run of scale/clip/add/multiply after it, a one-channel f32 normalize as a
 * chain step (as in `fused`), a many-channel one as its own launch, each
 * other run of steps one chain of at most SL_CUDA_MAX_STEPS. The steps come
 * from the ops' own ew_step. Refuses, naming `who` and the op, a pipeline
 * with any other op. */
sl_status sl__cuda_plan_build(const char *who, const sl_pipeline *pipeline, sl__cuda_plan *plan, sl_err *err);

/* Whether field f's first launch reads the field's input (true) or works in
 * place on its output, which then starts as a copy of the input (a chain
 * first, or no launch at all). */
bool sl__cuda_plan_reads_input(const sl__cuda_field_plan *field);

/* The row table of a batch of `rows` elements (ids, of `epoch`): rows x
 * plan->row_steps steps, each random op's step resolved by its own ew_step
 * for the row's element, exactly as `fused` resolves it. */
void sl__cuda_plan_row_steps(const sl__cuda_plan *plan, const sl_pipeline *pipeline, int64_t epoch,
                             const int64_t *ids, int64_t rows, sl_ew_step *table);

/* Field f of `rows` rows through its launches on the CPU, exactly as the
 * device would order them: in holds the source rows, out receives the
 * output rows, table the batch's row table (NULL when row_steps is 0). */
void sl__cuda_plan_run_host(const sl__cuda_plan *plan, int f, const void *in, void *out, int64_t rows,
                            const sl_ew_step *table);

#endif
