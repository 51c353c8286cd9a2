#!/usr/bin/env bash
# Configures (once) and builds sluice.
#   BUILD_DIR   build directory (default: build)
#   extra arguments are passed to `meson setup` on first configuration
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$@" >&2
fi
ninja -C "$build_dir" >&2
