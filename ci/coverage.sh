#!/usr/bin/env bash
# Line and branch coverage of the test suite, with gcovr (settings in
# gcovr.cfg). The HTML report lands in build-coverage/coverage/index.html.
#   COVERAGE_SCOPE  all (default): every test; quick: the unit, layers and
#                   cli suites and the gate scenarios (below)
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
#
# COVERAGE_SCOPE=quick (what .ci/run does) measures the unit, layering and
# command-line tests and the six gate scenarios instead of the whole
# suite: the other 22 scenarios' tests are most of the suite's time, the
# plain and sanitized stages of CI already run them, and this stage is
# only a report (nothing fails on a percentage). all (the default) runs
# the README's test command, every test.
args=(-Db_coverage=true -Dbuildtype=debug -Doptimization=g -Dc_args=-fprofile-update=atomic -Dcuda=disabled)
case ${COVERAGE_SCOPE:-all} in
  all) ci/test.sh "${args[@]}" ;;
  quick)
    ci/install-deps.sh
    ci/install-peers.sh numpy >&2
    ci/build.sh "${args[@]}"
    meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2 --suite unit --suite layers --suite cli
    meson test -C "$BUILD_DIR" --print-errorlogs --num-processes 2 CV-1 NLP-1 TAB-1 PC-1 IO-1 PR-2
    ;;
  *)
    echo "ci/coverage.sh: COVERAGE_SCOPE is all or quick, not '$COVERAGE_SCOPE'" >&2
    exit 2
    ;;
esac
mkdir -p "$BUILD_DIR/coverage"
gcovr --config gcovr.cfg --object-directory "$BUILD_DIR" \
  --html-details "$BUILD_DIR/coverage/index.html" --txt "$BUILD_DIR/coverage/summary.txt"
