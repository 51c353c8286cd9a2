#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "pipeline/op_desc.h"
#include "sluice/pipeline/ops.h"

/* Indexed by sl_op_kind, from the list in sluice/pipeline/op_list.h: every kind has
 * exactly one descriptor and one name. */
#define DESCRIPTOR(NAME, name, summary) [SL_OP_##NAME] = &sl__op_##name##_desc,
static const sl__op_desc *const descriptors[SL_OP_KIND_COUNT] = {SL_OP_LIST(DESCRIPTOR)};
#undef DESCRIPTOR
#define NAME(NAME, name, summary) [SL_OP_##NAME] = #name,
static const char *const names[SL_OP_KIND_COUNT] = {SL_OP_LIST(NAME)};
#undef NAME

const sl__op_desc *sl__op_desc_of(sl_op_kind kind)
{
    return (unsigned)kind < SL_OP_KIND_COUNT ? descriptors[kind] : NULL;
}

const char *sl_op_kind_name(sl_op_kind kind)
{
    return (unsigned)kind < SL_OP_KIND_COUNT ? names[kind] : "?";
}

bool sl_op_kind_parse(const char *name, sl_op_kind *out)
{
    for (int k = 0; k < SL_OP_KIND_COUNT; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = (sl_op_kind)k;
            return true;
        }
    }
    return false;
}

void sl_transform_set_format(sl_transform_set set, char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int k = 0; k < SL_OP_KIND_COUNT && used < size; k++) {
        if (set & SL_TRANSFORM(k))
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", names[k]);
    }
}

/* An op runs on the CPU when its phase has a runner there: gathering or
 * ordering (source phase), its rows, or its batch function. */
static bool has_cpu_path(const sl__op_desc *desc)
{
    switch (desc->phase) {
    case SL__PHASE_SOURCE: return true;
    case SL__PHASE_ELEMENT: return desc->rows != NULL;
    case SL__PHASE_BATCH: return desc->batch != NULL;
    }
    return false;
}

sl_transform_set sl_op_cpu_transforms(void)
{
    sl_transform_set set = 0;
    for (int k = 0; k < SL_OP_KIND_COUNT; k++)
        if (has_cpu_path(descriptors[k]))
            set |= SL_TRANSFORM(k);
    return set;
}

/* An op runs on a device when it has a device hook for its phase, when its
 * ew_step makes it a step of the device's chain, or when it is gathered or
 * ordered on the host (source phase). */
static bool has_device_path(const sl__op_desc *desc)
{
    switch (desc->phase) {
    case SL__PHASE_SOURCE: return true;
    case SL__PHASE_ELEMENT: return desc->device_rows != NULL || desc->ew_step != NULL;
    case SL__PHASE_BATCH: return desc->device_batch != NULL;
    }
    return false;
}

sl_transform_set sl_op_device_transforms(void)
{
    sl_transform_set set = 0;
    for (int k = 0; k < SL_OP_KIND_COUNT; k++)
        if (has_device_path(descriptors[k]))
            set |= SL_TRANSFORM(k);
    return set;
}

bool sl_op_is_elementwise(sl_op_kind kind)
{
    const sl__op_desc *desc = sl__op_desc_of(kind);
    return desc && desc->ew_step != NULL;
}
