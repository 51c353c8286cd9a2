/* The gate's test knob. Built only with -Dgate_knob=true: then
 * SLUICE_TEST_SLOWDOWN_PCT=P stretches the computing of every batch, in
 * every adapter, by P percent of its own time, inside the timed region. A
 * known, proportional slowdown is what measuring the gate's detection rate
 * needs (docs/gate.md); in a normal build this is an empty function the
 * compiler removes. */
#include <stdlib.h>

#include "adapters.h"
#include "sluice/core/timing.h"
#include "sluice_config.h"

#if SLUICE_GATE_KNOB
static double slowdown_fraction(void)
{
    const char *text = getenv("SLUICE_TEST_SLOWDOWN_PCT");
    double pct = text ? strtod(text, NULL) : 0.0;
    return pct > 0.0 && pct < 1000.0 ? pct / 100.0 : 0.0;
}

void sl__test_slowdown(int64_t started_ns)
{
    static double fraction = -1.0;
    if (fraction < 0.0)
        fraction = slowdown_fraction();
    if (fraction == 0.0)
        return;
    int64_t now = sl_now_ns();
    int64_t until = now + (int64_t)((double)(now - started_ns) * fraction);
    while (sl_now_ns() < until) {
    }
}
#else
void sl__test_slowdown(int64_t started_ns)
{
    (void)started_ns;
}
#endif
