#!/usr/bin/env bash
# The README's test command: installs what is missing (the build's Debian
# packages, and numpy in the system's Python, which runs the numpy peers in
# peers_scenarios and peer_storage_ops: `ci/install-peers.sh numpy`),
# configures, builds and runs every test (unit tests, the scenario corpus,
# the CLI), then ruff over the Python (ci/ruff.sh: lint and format check).
# Exits non-zero when any fails.
#   BUILD_DIR   build directory (default: build)
#   extra arguments are passed to `meson setup` on first configuration
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/install-peers.sh numpy >&2
ci/build.sh "$@"
build_dir=${BUILD_DIR:-build}
log="$build_dir/meson-logs/test-output.txt"
status=0
meson test -C "$build_dir" --print-errorlogs --num-processes 2 2>&1 | tee "$log" || status=$?
# One closing line with the totals, whatever meson's own summary looks like.
passed=$(awk '/^Ok:/ {print $2}' "$log")
skipped=$(awk '/^Skipped:/ {print $2}' "$log")
failed=$(awk '/^(Fail|Timeout):/ {s += $2} END {print s + 0}' "$log")
if [ "$status" -ne 0 ]; then
  # Meson reads Criterion's TAP from stdout and shows only the failing test's
  # name; the assertion that failed is in the log, so repeat it here.
  echo "== failed assertions (from $build_dir/meson-logs/testlog.txt)"
  sed -n '/^not ok/,/^  \.\.\.$/p' "$build_dir/meson-logs/testlog.txt"
fi
echo "tests: ${passed:-0} passed, ${failed} failed, ${skipped:-0} skipped"
# The Python's lint and format check (peers/, ci/*.py; ruff.toml).
ruff_status=0
ci/ruff.sh || ruff_status=$?
if [ "$ruff_status" -ne 0 ]; then
  echo "ruff: failed (ci/ruff.sh)"
  [ "$status" -ne 0 ] || status=$ruff_status
fi
exit "$status"
