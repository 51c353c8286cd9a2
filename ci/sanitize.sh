#!/usr/bin/env bash
# The test suite built with AddressSanitizer and UndefinedBehaviorSanitizer;
# any finding, a leak included, fails the run.
#
# abort_on_error matters: Criterion runs each test in a child process and
# ignores the child's exit status once the test body has reported, so a leak
# found at the child's exit would otherwise print a report and still pass.
# Aborting turns it into a crash that fails the test binary, and so meson.
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
BUILD_DIR=${BUILD_DIR:-build-sanitize} ci/test.sh \
  -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
