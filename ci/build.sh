#!/usr/bin/env bash
# Configures (once) and builds sluice.
#   BUILD_DIR       build directory (default: build)
#   BUILD_TARGETS   ninja targets to build (default: everything), e.g.
#                   tools/sluice for the main job, which needs no test
#   extra arguments are passed to `meson setup` on first configuration
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$@" >&2
fi
# Word splitting is meant: the targets are a list.
# shellcheck disable=SC2086
ninja -C "$build_dir" ${BUILD_TARGETS:-} >&2
