#!/usr/bin/env bash
# The README's main job: installs what is missing, configures, builds, and runs
# `sluice bench` (default: the ci profile, every scenario and adapter, on the
# CPU with synthetic fixtures). Records and summary.md go to records/<profile>/.
# Arguments are passed to `sluice bench`, e.g. ci/bench.sh --scenarios gate.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build} ci/build.sh
exec "${BUILD_DIR:-build}/tools/sluice" bench "$@"
