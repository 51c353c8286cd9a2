#!/usr/bin/env bash
# The test suite built with AddressSanitizer and UndefinedBehaviorSanitizer;
# any finding, a leak included, fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
BUILD_DIR=${BUILD_DIR:-build-sanitize} ci/test.sh \
  -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
