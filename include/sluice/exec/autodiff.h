/* Reverse-mode differentiation of a pipeline batch: vector-Jacobian products
 * (VJPs) of its ops, chained backwards over what a forward pass kept.
 *
 * A tape is one batch computed forward (exactly as sl_pipeline_produce
 * computes it) that keeps the input of every op whose VJP needs it. Given a
 * cotangent of one output field (dL/dy for some scalar loss L), the backward
 * pass walks that field's ops in reverse, batch ops first, and yields the
 * cotangent of the field's source values (dL/dx) and adds the gradient of
 * every learnable parameter (dL/dtheta) into an sl_grads. Random decisions
 * (a dropout mask) are recomputed from their keys, never stored, so a tape
 * costs one copy of each saved input and nothing for randomness.
 *
 * Parameters are values of the pipeline spec (an affine op's scale and
 * bias), so a training step is a new spec (sl_sgd_step) and a new pipeline
 * built from it: a pipeline never changes under a running iterator, and its
 * fingerprint always names the parameters its output was made with. */
#ifndef SLUICE_AUTODIFF_H
#define SLUICE_AUTODIFF_H

#include <stdint.h>

#include "sluice/core/status.h"
#include "sluice/core/tensor.h"
#include "sluice/pipeline/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Learnable parameters of one op (0 for an op without any), and where the
 * k-th lives in it (NULL when k is out of range). */
int64_t sl_op_param_count(const sl_op *op);
float *sl_op_param_at(sl_op *op, int64_t k);

/* Parameter gradients of a pipeline, in double: op i's parameters, in its
 * parameter order, are values[offset[i]] to values[offset[i + 1] - 1]. */
typedef struct sl_grads {
    int nops;
    int64_t count; /* parameters in all */
    int64_t offset[SL_MAX_OPS + 1];
    double *values;
} sl_grads;

/* Zeroed gradients shaped for the pipeline's parameters. */
sl_status sl_grads_create(const sl_pipeline *pipeline, sl_grads **out, sl_err *err);
void sl_grads_zero(sl_grads *grads);
void sl_grads_free(sl_grads *grads);

typedef struct sl_tape sl_tape;

/* Computes the batch at position into dst (as sl_pipeline_produce does, bit
 * for bit, with the chosen kernels) and keeps what the backward pass needs. */
sl_status sl_tape_forward(const sl_pipeline *pipeline, const sl_kernel_table *kernels, sl_position position,
                          sl_batch *dst, sl_tape **out, sl_err *err);

/* The backward pass for output field `field`: cotangent holds dL/dy for the
 * tape's batch (count rows of the field's output, f32). Writes dL/dx for
 * the field's source values into input_cotangent (count rows of the source
 * element's values, as floats; NULL when not wanted, which skips the first
 * op's input VJP) and adds each parameter's gradient into grads (NULL when
 * the pipeline has no parameters to train). Refuses, before computing
 * anything, a field whose ops include one without a VJP, naming it. */
sl_status sl_tape_backward(const sl_tape *tape, const char *field, const float *cotangent, float *input_cotangent,
                           sl_grads *grads, sl_err *err);
void sl_tape_free(sl_tape *tape);

/* One step of stochastic gradient descent on the spec's parameters:
 * theta = (float)(theta - lr * grad), in double, rounded once. grads must be
 * shaped for a pipeline built from this spec. */
sl_status sl_sgd_step(sl_pipeline_spec *spec, const sl_grads *grads, double lr, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
