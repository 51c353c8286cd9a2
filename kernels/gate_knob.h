/* The gate's test knob (gate_knob.c): real extra work in, or a harmless
 * reshaping of, the optimized normalize kernels, in -Dgate_knob=true builds
 * only. */
#ifndef SLUICE_KERNELS_GATE_KNOB_H
#define SLUICE_KERNELS_GATE_KNOB_H

#include "sluice/kernels/kernels.h"

/* Called once, after the tables are filled. */
void sl__gate_knob_apply(sl_kernel_table *tables, int count);

#endif
