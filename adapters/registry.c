#include <stdio.h>
#include <strings.h>

#include "adapters.h"
#include "peer.h"

/* Reference first: reports compare every adapter with it. */
static const sl_adapter *const adapters[] = {
    &sl__adapter_reference,
    &sl__adapter_iter,
    &sl__adapter_fused,
    &sl__adapter_per_element,
    &sl__adapter_cuda,
    &sl__adapter_cuda_graph,
    /* Peers last: other loaders, run as child processes (peer.c). */
    &sl__peer_numpy.adapter,
    &sl__peer_torch.adapter,
    &sl__peer_torch_w2.adapter,
    &sl__peer_grain.adapter,
    &sl__peer_grain_t2.adapter,
    &sl__peer_tfdata.adapter,
    &sl__peer_jax.adapter,
    &sl__peer_datarax.adapter,
    &sl__peer_datarax_scan.adapter,
    &sl__peer_hf_datasets.adapter,
    &sl__peer_webdataset.adapter,
    &sl__peer_listed[0].adapter,
    &sl__peer_listed[1].adapter,
    &sl__peer_listed[2].adapter,
    &sl__peer_listed[3].adapter,
    &sl__peer_listed[4].adapter,
    &sl__peer_listed[5].adapter,
    &sl__peer_listed[6].adapter,
    &sl__peer_listed[7].adapter,
};

const sl_kernel_table *sl_adapter_kernels(const sl_adapter *adapter, const sl_kernel_table *run)
{
    if (adapter->kernels == SL_KERNELS_REFERENCE)
        return sl_kernels_reference();
    return run ? run : sl_kernels_default();
}

int sl_adapter_count(void)
{
    return (int)(sizeof adapters / sizeof adapters[0]);
}

const sl_adapter *sl_adapter_at(int index)
{
    return index >= 0 && index < sl_adapter_count() ? adapters[index] : NULL;
}

const sl_adapter *sl_adapter_find(const char *name)
{
    for (int i = 0; i < sl_adapter_count(); i++)
        if (strcasecmp(adapters[i]->name, name) == 0)
            return adapters[i];
    return NULL;
}

sl_transform_set sl_adapter_transforms(const sl_adapter *adapter)
{
    return adapter->implements ? adapter->implements() : adapter->transforms;
}

bool sl_adapter_supports(const sl_adapter *adapter, sl_transform_set needed, char *reason, size_t size)
{
    sl_transform_set missing = needed & ~sl_adapter_transforms(adapter);
    if (!missing)
        return true;
    char names[256];
    sl_transform_set_format(missing, names, sizeof names);
    if (reason && size)
        snprintf(reason, size, "adapter '%s' lacks transform %s", adapter->name, names);
    return false;
}

bool sl_adapter_is_available(const sl_adapter *adapter, char *reason, size_t size)
{
    if (!adapter->available)
        return true;
    return adapter->available(reason, size);
}
