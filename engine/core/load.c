/* How busy the machine is, from /proc: the load average and the CPU time
 * the hypervisor took away (steal). A benchmark on a shared machine cannot
 * stop other work, but it can say how much there was, so that a reader
 * knows when its numbers rank nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void sl__machine_sample(sl__machine_load *out)
{
    *out = (sl__machine_load){.load1 = -1.0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &out->load1) != 1)
            out->load1 = -1.0;
        fclose(f);
    }
    /* The first line of /proc/stat sums every CPU: user nice system idle
     * iowait irq softirq steal ..., in clock ticks. */
    f = fopen("/proc/stat", "r");
    if (!f)
        return;
    unsigned long long v[8] = {0};
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8) {
        out->ticks_total = 0;
        for (int i = 0; i < 8; i++)
            out->ticks_total += v[i];
        out->ticks_steal = v[7];
        out->ticks_idle = v[3] + v[4];
        out->has_ticks = true;
    }
    fclose(f);
}

double sl__machine_steal_fraction(const sl__machine_load *start, const sl__machine_load *end)
{
    if (!start->has_ticks || !end->has_ticks || end->ticks_total <= start->ticks_total)
        return -1.0;
    return (double)(end->ticks_steal - start->ticks_steal) / (double)(end->ticks_total - start->ticks_total);
}
