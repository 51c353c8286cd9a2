/* cache: a marker, not a transform. sl_pipeline_create splits the chain at
 * it (the ops before it feed a cache source, see cache_source.c), so no
 * executor ever runs it; its descriptor gives it a name and a fingerprint. */
#include "pipeline/op_desc.h"

static sl_status compile(sl_pipeline *p, int index, sl__compiled_op *c, sl_field_spec *field, sl_err *err)
{
    (void)p;
    (void)c;
    (void)field;
    return sl_fail(err, SL_EINVAL, "op %d (cache) is handled by the pipeline, never compiled", index);
}

const sl__op_desc sl__op_cache_desc = {
    .phase = SL__PHASE_SOURCE,
    .compile = compile,
};

sl_op sl_op_cache(const char *field)
{
    return sl__op_on(SL_OP_CACHE, field, 0);
}
