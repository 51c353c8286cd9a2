#!/usr/bin/env bash
# The pull-request performance gate: ci/gate.sh BASE
#
# Builds BASE (a git revision) and the working tree in separate build
# folders, runs the gate set alternately (A B A B ...) so that drift of the
# machine during the gate falls on both sides alike, pools each side's runs,
# and fails when the working tree is slower than BASE by either signal:
#   - wall time: `sluice check` (Mann-Whitney U on every batch of every
#     repetition, a minimum effect of 5%, and no overlap of the two sides'
#     repetition medians; docs/gate.md);
#   - instructions: callgrind's count inside sl_bench_run for each gate
#     scenario and adapter, deterministic on a noisy machine, threshold 1%.
# Environment: GATE_ROUNDS (default 2), GATE_DIR (default build-gate),
# GATE_MESON_ARGS (extra `meson setup` arguments for both sides, e.g.
# -Dgate_knob=true), GATE_HEAD_ENV (environment for the head side only, e.g.
# SLUICE_TEST_SLOWDOWN_PCT=10 with the knob, to check that the gate fails),
# GATE_INSTRUCTIONS=0 to skip the valgrind signal.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ]; then
  echo "usage: ci/gate.sh BASE   (a git revision to compare the working tree with)" >&2
  exit 2
fi
base_rev=$1
rounds=${GATE_ROUNDS:-2}
dir=${GATE_DIR:-build-gate}
meson_args=(${GATE_MESON_ARGS:-})
start=$(date +%s)
ci/install-deps.sh

rm -rf "$dir"
mkdir -p "$dir/runs"
git worktree prune
git worktree add --detach "$dir/base-src" "$base_rev" >&2
trap 'git worktree remove --force "$dir/base-src" >/dev/null 2>&1 || true' EXIT

meson setup "$dir/base" "$dir/base-src" -Dtests=false -Dcuda=disabled "${meson_args[@]}" >&2
meson setup "$dir/head" . -Dtests=false -Dcuda=disabled "${meson_args[@]}" >&2
ninja -C "$dir/base" >&2
ninja -C "$dir/head" >&2
A=$dir/base/tools/sluice
B=$dir/head/tools/sluice
head_env=(${GATE_HEAD_ENV:-})

# Both signals run fused on one thread: with several, the executor chooses
# per batch from the batches' own times whether to split (docs/adapters.md),
# so which batches split would differ between the sides by the machine's
# moment, not by the code, and callgrind's counts would follow the clock.
one_thread=(--threads 1)

# Wall time, ABAB.
for r in $(seq 1 "$rounds"); do
  echo "== round $r: base, then head" >&2
  "$A" bench --scenarios gate --kernels cpu-avx2 "${one_thread[@]}" --quiet --output-dir "$dir/runs/A$r" >/dev/null
  env "${head_env[@]}" "$B" bench --scenarios gate --kernels cpu-avx2 "${one_thread[@]}" --quiet \
    --output-dir "$dir/runs/B$r" >/dev/null
done
from=()
records=()
for r in $(seq 1 "$rounds"); do
  from+=(--from "$dir/runs/A$r/ci")
  records+=(--records "$dir/runs/B$r/ci")
done
"$B" baseline save base --baseline-dir "$dir/baselines" "${from[@]}"
status=0
echo "== wall time: head against base"
"$B" check --baseline base --baseline-dir "$dir/baselines" "${records[@]}" || status=1

# Instructions. valgrind cannot run AVX-512, so both sides use the AVX2
# table, which every machine that runs this gate has.
if [ "${GATE_INSTRUCTIONS:-1}" != 0 ]; then
  echo "== instructions (callgrind, inside sl_bench_run): head against base"
  count() {
    local sluice=$1 scenario=$2 adapter=$3 variant=$4 out
    shift 4
    out=$(mktemp)
    env "$@" valgrind --tool=callgrind --collect-atstart=no --toggle-collect=sl_bench_run --callgrind-out-file="$out" \
      "$sluice" bench --scenarios "$scenario" --variants "$variant" --adapters "$adapter" --kernels cpu-avx2 \
      "${one_thread[@]}" --repetitions 1 --warmup 1 --batches 3 --no-probes --quiet --output-dir "$dir/runs/valgrind" \
      >/dev/null 2>&1 || true
    awk '/^summary:/ {print $2}' "$out"
    rm -f "$out"
  }
  printf '%-8s %-8s %-10s %14s %14s %8s\n' scenario variant adapter base head change
  for sv in CV-1:32x32 NLP-1:128 TAB-1:10k PC-1:depth1 IO-1:memory PR-2:64x64; do
    scenario=${sv%%:*}
    variant=${sv#*:}
    for adapter in reference iter fused; do
      a=$(count "$A" "$scenario" "$adapter" "$variant")
      b=$(count "$B" "$scenario" "$adapter" "$variant" "${head_env[@]}")
      if [ -z "$a" ] || [ -z "$b" ]; then
        echo "$scenario/$variant $adapter: no instruction count (valgrind failed)"
        status=1
        continue
      fi
      verdict=$(awk -v a="$a" -v b="$b" 'BEGIN { c = (b - a) / a; v = (c > 0.01) ? "SLOWER" : "same"; printf "%+.3f%% %s", 100 * c, v }')
      printf '%-8s %-8s %-10s %14s %14s %s\n' "$scenario" "$variant" "$adapter" "$a" "$b" "$verdict"
      case $verdict in *SLOWER) status=1 ;; esac
    done
  done
fi
echo "gate: $(( $(date +%s) - start )) s; $([ $status -eq 0 ] && echo pass || echo 'FAIL: head is slower than base')"
exit "$status"
