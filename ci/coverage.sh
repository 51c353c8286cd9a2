#!/usr/bin/env bash
# Line and branch coverage of the test suite, with gcovr (settings in
# gcovr.cfg). The HTML report lands in build-coverage/coverage/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-coverage}
# Atomic counters: prefetch workers and the fused pool run the same code on
# several threads, and plain counters then lose updates, which gcov reports
# as negative branch counts that gcovr cannot parse.
# Without CUDA: meson cannot collect coverage through nvcc's linker (nvlink),
# and the device bodies' arithmetic is covered on the CPU either way
# (test_cuda_bodies builds without CUDA).
# At -Og, not -O0: the suite runs every scenario at ci size on every kernel
# table, and at -O0 (where the optimized kernels lose their -O3 as well) the
# coverage run took longer than the rest of CI together; -Og keeps lines and
# branches where the source puts them.
ci/test.sh -Db_coverage=true -Dbuildtype=debug -Doptimization=g -Dc_args=-fprofile-update=atomic -Dcuda=disabled
mkdir -p "$BUILD_DIR/coverage"
gcovr --config gcovr.cfg --object-directory "$BUILD_DIR" \
  --html-details "$BUILD_DIR/coverage/index.html" --txt "$BUILD_DIR/coverage/summary.txt"
