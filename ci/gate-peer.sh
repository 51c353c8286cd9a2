#!/usr/bin/env bash
# The gate for a loader of one's own: ci/gate-peer.sh OLD.py NEW.py
# [sluice bench arguments...]
#
# Two versions of a loader (`peer:./my_loader.py`, docs/peers.md) run
# alternately, old then new, each run a process of its own, on the same
# scenarios (default: the gate set, `--scenarios gate`; a scenario with an
# op the loader lacks is excluded and left out), and `sluice check` judges
# them with the rules of ci/gate.sh's wall-time half (docs/gate.md): one
# figure per process, Student's t over their logs, Holm over the rows,
# "cannot tell" with the processes a row would need. The rows found slower
# are measured again with fresh processes, and a row fails only when both
# passes find it slower. Both versions run under the new one's file name
# (a copy of each in a folder of its own), so that their rows are one
# adapter, `peer:<NEW's file name>`; each keeps its own original folder
# first on Python's path, so a loader's own modules beside it are its own.
# A row that failed or mismatched on a side (`not ok`), or no row run at
# all, fails the gate: a loader that breaks is not a pass.
#
# Exit status: 0 no row slower; 1 NEW is slower (or a run failed); 3 no row
# slower but wall time cannot tell for some (a busy machine, too few
# processes: each row says how many it needs); 2 bad command line.
# There are no counts here: callgrind cannot see into a Python loader.
#
# Environment: SLUICE (the sluice program, default build/tools/sluice),
# GATE_ROUNDS (processes a side, default 8; below 2 refused, below 5
# warned), GATE_REPETITIONS (per process, default 2), GATE_DIR (scratch,
# default build-gate-peer), GATE_CHECK_ARGS (more `sluice check` arguments,
# e.g. --min-effect 0.5 to ask only whether it is half again as slow).
set -euo pipefail
usage="usage: ci/gate-peer.sh OLD.py NEW.py [sluice bench arguments, e.g. --scenarios CV-1,TAB-1]"
if [ $# -lt 2 ]; then
  echo "$usage" >&2
  exit 2
fi
old=$1 new=$2
shift 2
for loader in "$old" "$new"; do
  if [ ! -f "$loader" ]; then
    echo "ci/gate-peer.sh: '$loader' is not a file (a loader's .py)" >&2
    exit 2
  fi
done
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${SLUICE:-$root/build/tools/sluice}")
if [ ! -x "$sluice" ]; then
  echo "ci/gate-peer.sh: no sluice program at $sluice (build it, or set SLUICE)" >&2
  exit 2
fi
rounds=${GATE_ROUNDS:-8}
repetitions=${GATE_REPETITIONS:-2}
dir=$(realpath -m "${GATE_DIR:-build-gate-peer}")
read -r -a check_args <<<"${GATE_CHECK_ARGS:-}"
# shellcheck source=ci/gate-exit.sh
source "$root/ci/gate-exit.sh"
gate_rounds ci/gate-peer.sh "$rounds"
select=("$@")
[ ${#select[@]} -eq 0 ] && select=(--scenarios gate)
name=$(basename "$new")
rm -rf "$dir"
mkdir -p "$dir/A" "$dir/B"
cp "$old" "$dir/A/$name"
cp "$new" "$dir/B/$name"
source_A=$(dirname "$(realpath "$old")")
source_B=$(dirname "$(realpath "$new")")
start=$(date +%s)

# bench SIDE OUT ARGS...: one run (one process) of a side's loader.
bench() {
  local side=$1 out=$2 loader_dir
  shift 2
  loader_dir=source_$side
  PYTHONPATH="${!loader_dir}${PYTHONPATH:+:$PYTHONPATH}" "$sluice" bench --adapters "peer:$dir/$side/$name" \
    --repetitions "$repetitions" --no-probes --quiet --output-dir "$out" "$@" >/dev/null
}

# pass NAME SLOWER ARGS...: rounds of old then new, then the check; its
# status is check's, the rows it found slower in SLOWER.
pass() {
  local label=$1 slower=$2 from=() records=() r
  shift 2
  for r in $(seq 1 "$rounds"); do
    bench A "$dir/$label/A$r" "$@"
    bench B "$dir/$label/B$r" "$@"
    from+=(--from "$dir/$label/A$r/ci")
    records+=(--records "$dir/$label/B$r/ci")
  done
  "$sluice" baseline save "$label" --baseline-dir "$dir/baselines" "${from[@]}" >/dev/null
  local status=0 summary
  "$sluice" check --baseline "$label" --baseline-dir "$dir/baselines" "${records[@]}" --unsettled "$slower" \
    "${check_args[@]}" | tee "$dir/$label.txt" || status=${PIPESTATUS[0]}
  # check's summary: "N rows: ... M not ok".
  summary=$(grep -E '^[0-9]+ rows: ' "$dir/$label.txt" | tail -1)
  if [ -z "$summary" ] || [ "${summary%% rows:*}" = 0 ] || ! grep -q ' 0 not ok' <<<"$summary"; then
    echo "ci/gate-peer.sh: no row compared, or a row failed or mismatched on a side (above): not a pass" >&2
    [ "$status" -eq 0 ] || [ "$status" -eq 3 ] && status=4
  fi
  return "$status"
}

echo "== $old against $new as peer:$name: $rounds processes a side, $repetitions repetitions each"
wall=0
pass first "$dir/slower" "${select[@]}" || wall=$?
if [ "$wall" -eq 1 ] && [ -s "$dir/slower" ]; then
  echo "== again, to confirm the $(wc -l <"$dir/slower") rows found slower: fresh processes"
  : >"$dir/slower-again"
  again=0
  while read -r scenario variant _adapter; do
    status=0
    pass "confirm-$scenario-$variant" "$dir/slower-row" --scenarios "$scenario" --variants "$variant" || status=$?
    cat "$dir/slower-row" >>"$dir/slower-again"
    [ "$status" -gt "$again" ] && again=$status
  done <"$dir/slower"
  gate_confirm "$dir/slower" "$again" "$dir/slower-again"
  wall=$gate_wall
fi
GATE_STRICT=1 gate_exit skipped "$wall"
echo "gate-peer: $(($(date +%s) - start)) s; $gate_verdict"
exit "$gate_status"
