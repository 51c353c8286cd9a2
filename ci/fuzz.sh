#!/usr/bin/env bash
# Fuzzes every file reader with libFuzzer (clang), under ASan and UBSan, from
# the committed inputs in tests/fuzz/inputs. Any crash, sanitizer report,
# leak or failed property (a refusal that does not name the file) fails the
# run and leaves the input in build-fuzz/crashes/; add it to
# tests/fuzz/inputs/<target>/ with the fix, so the ordinary suite replays it.
#   FUZZ_SECONDS  time per target (default 30)
#   BUILD_DIR     build directory (default build-fuzz)
#   FUZZ_JOBS     targets fuzzed at once (default: the CPU count); each
#                 libFuzzer process runs on one thread, so on 2 CPUs two
#                 at a time halve the stage's wall time for the same inputs
#   FUZZ_SEED     libFuzzer's seed (default 0: a fresh one each run, which
#                 explores more over many runs; .ci/run fixes it so that a
#                 finding there can be replayed with the same seed)
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
build_dir=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-30}
if [ ! -f "$build_dir/build.ninja" ]; then
  # The library is instrumented for coverage (fuzzer-no-link) so that the
  # fuzzer learns from the readers' branches, not only the targets'. Built
  # without CUDA: the readers do not touch it, and with it meson links the
  # targets through nvcc, whose host compiler (gcc) has no -fsanitize=fuzzer.
  CC=clang meson setup "$build_dir" -Dfuzz=true -Dtests=false -Dcuda=disabled -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized -Dc_args=-fsanitize=fuzzer-no-link >/dev/null
fi
ninja -C "$build_dir" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
mkdir -p "$build_dir/crashes"
jobs=${FUZZ_JOBS:-$(nproc)}

# Fuzzes one target, writing its verdict to $build_dir/fuzz-<target>.verdict
# and exiting 1 on a finding.
fuzz_one() {
  local target=$1
  # New inputs go to a scratch corpus so the committed ones stay as they are.
  local work="$build_dir/corpus/$target"
  local log="$build_dir/fuzz-$target.log"
  mkdir -p "$work"
  if "$build_dir/tests/fuzz/fuzz_$target" "$work" "tests/fuzz/inputs/$target" \
      -max_total_time="$seconds" -seed="${FUZZ_SEED:-0}" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
      -artifact_prefix="$build_dir/crashes/$target-" -print_final_stats=1 >"$log" 2>&1; then
    local runs
    runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
    echo "fuzz $target: ${runs:-?} inputs in ${seconds}s, no finding" >"$build_dir/fuzz-$target.verdict"
    return 0
  fi
  {
    echo "fuzz $target: FAILED; the input is in $build_dir/crashes/, the report in $log"
    grep -E "ERROR|SUMMARY|does not name|an accepted" "$log" | head -5
  } >"$build_dir/fuzz-$target.verdict"
  return 1
}

targets=(npy golden record checkpoint audit)
status=0
pids=()
for target in "${targets[@]}"; do
  # At most $jobs targets at once: wait for the oldest before starting more.
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$target" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
for target in "${targets[@]}"; do
  cat "$build_dir/fuzz-$target.verdict"
done
exit "$status"
