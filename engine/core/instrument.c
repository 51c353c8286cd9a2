/* Counting a run's instructions and cache misses under callgrind, per batch
 * (sluice bench --instrument, for ci/gate.sh): valgrind's client requests,
 * which are a few no-op instructions when the program runs without valgrind.
 * callgrind runs the program with instrumentation off (--instr-atstart=no)
 * until a repetition starts, so that building fixtures and pipelines, which
 * the gate does not compare, costs no simulation; each batch handed to the
 * sink dumps the counts since the previous one, labelled, and the gate's
 * script reads the dumps (ci/gate-counts.py). */
#include "core/internal.h"
#include "sluice_config.h"

#if SLUICE_HAVE_CALLGRIND
#include <valgrind/callgrind.h>

bool sl__instrument_available(void)
{
    return true;
}

void sl__instrument_start(void)
{
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
}

void sl__instrument_mark(const char *label)
{
    CALLGRIND_DUMP_STATS_AT(label);
}

void sl__instrument_stop(void)
{
    CALLGRIND_STOP_INSTRUMENTATION;
}
#else
bool sl__instrument_available(void)
{
    return false;
}

void sl__instrument_start(void) {}

void sl__instrument_mark(const char *label)
{
    (void)label;
}

void sl__instrument_stop(void) {}
#endif
