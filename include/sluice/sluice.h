/* libsluice: everything a program needs, in one include. */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include "sluice/adapter.h"
#include "sluice/autodiff.h"
#include "sluice/bench.h"
#include "sluice/cleanup.h"
#include "sluice/comm.h"
#include "sluice/compare.h"
#include "sluice/digest.h"
#include "sluice/dist.h"
#include "sluice/fixtures.h"
#include "sluice/folder.h"
#include "sluice/kernels.h"
#include "sluice/module.h"
#include "sluice/npy.h"
#include "sluice/ops.h"
#include "sluice/philox.h"
#include "sluice/pipeline.h"
#include "sluice/rebatch.h"
#include "sluice/record.h"
#include "sluice/scenario.h"
#include "sluice/session.h"
#include "sluice/shuffle.h"
#include "sluice/source.h"
#include "sluice/status.h"
#include "sluice/tensor.h"
#include "sluice/timing.h"

#endif
