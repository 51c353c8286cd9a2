#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "adapters.h"
#include "peer.h"

/* Reference first: reports compare every adapter with it. The peers
 * (other loaders, run as child processes, peer.c) come after sluice's own,
 * in sl__peers' order. */
static const sl_adapter *const own[] = {
    &sl__adapter_reference,   &sl__adapter_iter, &sl__adapter_fused,
    &sl__adapter_per_element, &sl__adapter_cuda, &sl__adapter_cuda_graph,
};
#define OWN_COUNT ((int)(sizeof own / sizeof own[0]))

const sl_kernel_table *sl_adapter_kernels(const sl_adapter *adapter, const sl_kernel_table *run)
{
    if (adapter->kernels == SL_KERNELS_REFERENCE)
        return sl_kernels_reference();
    return run ? run : sl_kernels_default();
}

int sl_adapter_count(void)
{
    return OWN_COUNT + sl__peer_count + sl__user_peer_count();
}

const sl_adapter *sl_adapter_at(int index)
{
    if (index < 0 || index >= sl_adapter_count())
        return NULL;
    if (index < OWN_COUNT)
        return own[index];
    if (index < OWN_COUNT + sl__peer_count)
        return &sl__peers[index - OWN_COUNT]->adapter;
    return sl__user_peer_at(index - OWN_COUNT - sl__peer_count);
}

const sl_adapter *sl_adapter_find(const char *name)
{
    for (int i = 0; i < sl_adapter_count(); i++)
        if (strcasecmp(sl_adapter_at(i)->name, name) == 0)
            return sl_adapter_at(i);
    /* A loader of the user's: peer:<path to a .py file>. */
    sl_err err = {0};
    const sl_adapter *user = sl__user_peer(name, &err);
    if (!user && strncmp(name, "peer:", 5) == 0 && (strchr(name, '/') || strstr(name, ".py")))
        fprintf(stderr, "sluice: %s\n", err.msg);
    return user;
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
