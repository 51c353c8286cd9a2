#!/usr/bin/env bash
# The README's test command: installs what is missing, configures, builds and
# runs every test (unit tests and the corpus). Exits non-zero when any fails.
#   BUILD_DIR   build directory (default: build)
#   extra arguments are passed to `meson setup` on first configuration
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh "$@"
meson test -C "${BUILD_DIR:-build}" --print-errorlogs --num-processes 2
