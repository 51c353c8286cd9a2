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
# GATE_INSTRUCTIONS=0 to skip the valgrind signal, GATE_ROW=SCENARIO/VARIANT/ADAPTER
# to judge one row only (ci/bisect.sh), GATE_HEAD_SRC=DIR to take the head
# side from another source tree than this one (ci/bisect.sh's checkout).
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
meson setup "$dir/head" "${GATE_HEAD_SRC:-.}" -Dtests=false -Dcuda=disabled "${meson_args[@]}" >&2
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

# One row (GATE_ROW) or the whole gate set.
select=(--scenarios gate)
if [ -n "${GATE_ROW:-}" ]; then
  IFS=/ read -r row_scenario row_variant row_adapter <<<"$GATE_ROW"
  if [ -z "$row_adapter" ]; then
    echo "ci/gate.sh: GATE_ROW '$GATE_ROW' is not SCENARIO/VARIANT/ADAPTER" >&2
    exit 2
  fi
  select=(--scenarios "$row_scenario" --variants "$row_variant" --adapters "$row_adapter")
fi

# Wall time, ABAB.
for r in $(seq 1 "$rounds"); do
  echo "== round $r: base, then head" >&2
  "$A" bench "${select[@]}" --kernels cpu-avx2 "${one_thread[@]}" --quiet --output-dir "$dir/runs/A$r" >/dev/null
  env "${head_env[@]}" "$B" bench "${select[@]}" --kernels cpu-avx2 "${one_thread[@]}" --quiet \
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

# Instructions (ci/count-instructions.sh): valgrind cannot run AVX-512, so
# both sides use the AVX2 table, which every machine that runs this gate has.
if [ "${GATE_INSTRUCTIONS:-1}" != 0 ]; then
  echo "== instructions (callgrind, inside sl_bench_run): head against base"
  [ -n "${GATE_ROW:-}" ] && export INSTRUCTION_ROWS=$GATE_ROW
  ci/count-instructions.sh "$A" "$dir/instructions-base.tsv"
  env "${head_env[@]}" ci/count-instructions.sh "$B" "$dir/instructions-head.tsv"
  printf '%-8s %-8s %-10s %14s %14s %8s\n' scenario variant adapter base head change
  while IFS=$'\t' read -r scenario variant adapter a b; do
    if [ "$a" = - ] || [ "$b" = - ]; then
      echo "$scenario/$variant $adapter: no instruction count (valgrind failed)"
      status=1
      continue
    fi
    verdict=$(awk -v a="$a" -v b="$b" 'BEGIN { c = (b - a) / a; v = (c > 0.01) ? "SLOWER" : "same"; printf "%+.3f%% %s", 100 * c, v }')
    printf '%-8s %-8s %-10s %14s %14s %s\n' "$scenario" "$variant" "$adapter" "$a" "$b" "$verdict"
    case $verdict in *SLOWER) status=1 ;; esac
  done < <(paste "$dir/instructions-base.tsv" <(cut -f4 "$dir/instructions-head.tsv"))
fi
echo "gate: $(( $(date +%s) - start )) s; $([ $status -eq 0 ] && echo pass || echo 'FAIL: head is slower than base')"
exit "$status"
