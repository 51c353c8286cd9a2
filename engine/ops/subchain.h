/* What the ops over sub-chains share (branch_mean, random_apply,
 * random_choice): compiling the spec ops they own, running one of their
 * branches on one element in place, and the keyed per-element decision. */
#ifndef SLUICE_OPS_SUBCHAIN_H
#define SLUICE_OPS_SUBCHAIN_H

#include "pipeline/op_desc.h"

/* Where an op's branches lie in the pipeline's compiled ops. */
typedef struct sl__subchain {
    int first[2];
    int count[2];
    /* Offset in the op's scratch of the scratch its sub-ops share: after a
     * second copy of the element for branch_mean, at 0 otherwise. */
    size_t sub_scratch_offset;
} sl__subchain;

/* Validates the op over an f32 field, compiles the ops it owns (ops_a, then
 * ops_b; `branches` is 1 for an op whose ops_b must be 0), and sets its
 * state and scratch (copies: a second copy of the element to keep, or 0).
 * Two random ops of one sub-chain op (itself included) may not share an op
 * id, or their draws would be the same numbers. */
sl_status sl__subchain_compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, int branches,
                               bool copy, sl_err *err);
void sl__subchain_release(sl__compiled_op *c);
/* The parameters every op over sub-chains has: how many ops each branch
 * owns, and the probability of branch a. */
extern const sl__op_param sl__subchain_params[3];
/* An op over sub-chains: the builders' shared part. */
sl_op sl__subchain_op(sl_op_kind kind, const char *field, uint32_t op_id, float p, int32_t ops_a, int32_t ops_b);
int sl__subchain_nested(const sl_op *op);

/* Runs branch (0 = a, 1 = b) of op c on one element x in place: each run of
 * ops with an ew_step becomes one ew_chain call over the element, as in the
 * fused executor, and any other op runs its rows on the element. */
void sl__subchain_run(const sl__op_ctx *ctx, const sl__compiled_op *c, int branch, int64_t element, float *x,
                      void *scratch);

/* random_apply's and random_choice's decision for an element: branch a
 * when u < p, u the top 24 bits of word 0 of draw 0 over 2^24. */
bool sl__subchain_decision(const sl__op_ctx *ctx, const sl__compiled_op *c, int64_t element);
/* The rule of that draw (kernels/decide.h): one column, 1 when word 0 of
 * the element's block as a unit float is below p (branch a, or apply). */
void sl__subchain_rule(const sl__op_ctx *ctx, const sl__compiled_op *c, sl_decide_rule *rule);
/* On a device, the two branches of a two-branch op: branch a on a copy of
 * the rows in out, branch b on in itself (the executor's working rows, free
 * to overwrite); the op then combines out and in. Returns a device error. */
int sl__subchain_device_both(const sl__device_ctx *ctx, const sl__compiled_op *c, void *in, void *out);

#endif
