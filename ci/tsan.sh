#!/usr/bin/env bash
# The engine's threads under ThreadSanitizer: prefetch workers, the fused
# thread pool and the temporaries registry, through tests/tsan/tsan_driver
# (Criterion itself crashes under TSan, so the Criterion suite cannot run
# here). Any race report fails the run, as does any digest difference
# between one thread and many.
#   BUILD_DIR  build directory (default build-tsan)
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
build_dir=${BUILD_DIR:-build-tsan}
if [ ! -f "$build_dir/build.ninja" ]; then
  CC=clang meson setup "$build_dir" -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dtests=false >/dev/null
fi
ninja -C "$build_dir" tests/tsan/tsan_driver >/dev/null
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$build_dir/tests/tsan/tsan_driver"
