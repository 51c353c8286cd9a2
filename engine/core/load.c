/* How busy the machine is, from /proc: the load average, the CPU time the
 * hypervisor took away (steal) and the time this process's threads waited
 * for a CPU while others ran (schedstat). A benchmark on a shared machine cannot
 * stop other work, but it can say how much there was, so that a reader
 * knows when its numbers rank nothing. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"

/* Sums the run and wait times of every thread of this process: each
 * /proc/self/task/N/schedstat holds "run_ns wait_ns timeslices". */
static void sample_own_threads(sl__machine_load *out)
{
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks)
        return;
    unsigned long long run = 0, wait = 0;
    bool any = false;
    for (struct dirent *entry; (entry = readdir(tasks)) != NULL;) {
        if (entry->d_name[0] == '.')
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", entry->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long thread_run, thread_wait;
        if (!f)
            continue;
        if (fscanf(f, "%llu %llu", &thread_run, &thread_wait) == 2) {
            run += thread_run;
            wait += thread_wait;
            any = true;
        }
        fclose(f);
    }
    closedir(tasks);
    out->has_schedstat = any;
    out->task_run_ns = run;
    out->task_wait_ns = wait;
}

void sl__machine_sample(sl__machine_load *out)
{
    *out = (sl__machine_load){.load1 = -1.0};
    sample_own_threads(out);
    struct timespec cpu, wall;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0 && clock_gettime(CLOCK_MONOTONIC, &wall) == 0) {
        out->has_clocks = true;
        out->thread_cpu_ns = (long long)cpu.tv_sec * 1000000000LL + cpu.tv_nsec;
        out->monotonic_ns = (long long)wall.tv_sec * 1000000000LL + wall.tv_nsec;
    }
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

/* The sampling thread's time off its CPU over the wall time between two
 * samples; -1 without clocks or without time passing. */
static double off_cpu_fraction(const sl__machine_load *start, const sl__machine_load *end)
{
    if (!start->has_clocks || !end->has_clocks || end->monotonic_ns <= start->monotonic_ns)
        return -1.0;
    double share =
        1.0 - (double)(end->thread_cpu_ns - start->thread_cpu_ns) / (double)(end->monotonic_ns - start->monotonic_ns);
    return share < 0.0 ? 0.0 : (share > 1.0 ? 1.0 : share);
}

double sl__process_wait_fraction(const sl__machine_load *start, const sl__machine_load *end)
{
    if (!start->has_schedstat || !end->has_schedstat || end->task_run_ns < start->task_run_ns ||
        end->task_wait_ns < start->task_wait_ns)
        return off_cpu_fraction(start, end);
    unsigned long long run = end->task_run_ns - start->task_run_ns;
    unsigned long long wait = end->task_wait_ns - start->task_wait_ns;
    return run + wait > 0 ? (double)wait / (double)(run + wait) : off_cpu_fraction(start, end);
}
