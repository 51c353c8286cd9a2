/* The device memory ledger (kernels/device.h): every block a device table's
 * alloc hands out, by its address, so that its release knows its size, and
 * the most bytes held at once since the ledger's mark. The CUDA device and
 * the host emulation each keep one, so a run's peak is the same figure on a
 * GPU and on the host: the bytes the executor and the ops asked for. */
#include <pthread.h>
#include <stdlib.h>

#include "kernels/device.h"

int sl__device_ledger_add(sl_device_ledger *ledger, void *ptr, size_t bytes)
{
    pthread_mutex_lock(&ledger->lock);
    if (ledger->count == ledger->slots) {
        size_t slots = ledger->slots ? 2 * ledger->slots : 64;
        sl_device_ledger_entry *grown = realloc(ledger->entries, slots * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&ledger->lock);
            return SL_DEVICE_ENOMEM;
        }
        ledger->entries = grown;
        ledger->slots = slots;
    }
    ledger->entries[ledger->count++] = (sl_device_ledger_entry){ptr, bytes};
    ledger->live += (int64_t)bytes;
    if (ledger->live > ledger->peak)
        ledger->peak = ledger->live;
    pthread_mutex_unlock(&ledger->lock);
    return 0;
}

void sl__device_ledger_remove(sl_device_ledger *ledger, void *ptr)
{
    pthread_mutex_lock(&ledger->lock);
    /* The latest blocks are the likeliest to go first: search from the end. */
    for (size_t i = ledger->count; i-- > 0;) {
        if (ledger->entries[i].ptr != ptr)
            continue;
        ledger->live -= (int64_t)ledger->entries[i].bytes;
        ledger->entries[i] = ledger->entries[--ledger->count];
        break;
    }
    pthread_mutex_unlock(&ledger->lock);
}

void sl_device_memory_mark(const sl_device *device)
{
    sl_device_ledger *ledger = device->ledger;
    pthread_mutex_lock(&ledger->lock);
    ledger->peak = ledger->live;
    pthread_mutex_unlock(&ledger->lock);
}

void sl_device_memory_held(const sl_device *device, int64_t *live, int64_t *peak)
{
    sl_device_ledger *ledger = device->ledger;
    pthread_mutex_lock(&ledger->lock);
    if (live)
        *live = ledger->live;
    if (peak)
        *peak = ledger->peak;
    pthread_mutex_unlock(&ledger->lock);
}
