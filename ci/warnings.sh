#!/usr/bin/env bash
# Builds with -Werror under gcc and clang: warnings are fixed, not silenced.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
CC=gcc BUILD_DIR=build-werror-gcc ci/build.sh -Dwerror=true
CC=clang BUILD_DIR=build-werror-clang ci/build.sh -Dwerror=true
