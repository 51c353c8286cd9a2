#!/usr/bin/env bash
# Measures the gate as it decides (docs/gate.md, "Measured rates"): whole
# `ci/gate.sh HEAD` decisions, each signal's verdict kept apart (counts,
# wall time), on a -Dgate_knob=true build of the committed HEAD, with the
# head side given real extra work in the normalize kernels
# (SLUICE_TEST_KERNEL_WORK_PCT: 5, 10, 30 percent of their work: the
# kernels repeat that share of each call's pixels), the same work reshaped
# (SLUICE_TEST_KERNEL_REFACTOR=1, a harmless refactor), or nothing (the
# same code on both sides: every failure is a false alarm). Each trial is a
# gate of its own with fresh processes, so trials share no samples.
#
# Regimes (GATE_RATE_LOADS): "quiet" (the machine as it is: run it on a
# quiet one; each trial records the load average), "busy" (stress-ng
# keeping one CPU busy, as a shared runner's neighbour does) and "stress"
# (stress-ng keeping every CPU busy), both at normal priority.
#
# The counts are deterministic, so ci/gate.sh computes each side's once per
# condition and reuses them: every trial of a condition gets the same
# counts verdict, and its wall-time half is measured afresh.
#
# Environment: GATE_RATE_TRIALS (trials per condition and regime, default
# 20), GATE_RATE_LOADS (default "quiet busy stress"), GATE_RATE_CONDITIONS
# (default "same refactor work5 work10 work30"), GATE_RATE_OUT (the
# results, one line per trial, default build-gate-rates/trials.tsv); GATE_*
# as for ci/gate.sh. The defaults take many hours; a sample is e.g.
# GATE_RATE_TRIALS=1 GATE_RATE_LOADS=quiet GATE_RATE_CONDITIONS="same work30".
# It is not part of .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${GATE_RATE_TRIALS:-20}
read -r -a loads <<<"${GATE_RATE_LOADS:-quiet busy stress}"
read -r -a conditions <<<"${GATE_RATE_CONDITIONS:-same refactor work5 work10 work30}"
out=${GATE_RATE_OUT:-build-gate-rates/trials.tsv}
if [ -n "$(git status --porcelain --untracked-files=normal)" ]; then
  echo "ci/gate-rates.sh measures the committed HEAD; commit or stash your changes first" >&2
  exit 2
fi
ci/install-deps.sh
if ! command -v stress-ng >/dev/null; then
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >&2
fi
mkdir -p "$(dirname "$out")"
[ -s "$out" ] || printf 'load\tcondition\ttrial\tstatus\tcounts\twall\tseconds\tload_start\tload_end\n' >"$out"

stress_pid=
stop_stress() {
  if [ -n "$stress_pid" ]; then
    kill "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
    stress_pid=
  fi
}
trap stop_stress EXIT

# trial LOAD CONDITION N HEAD_ENV: one gate decision, appended to $out.
trial() {
  local load=$1 condition=$2 n=$3 env=$4 log status line before
  log=$(dirname "$out")/$load-$condition-$n.log
  before=$(cut -d' ' -f1 /proc/loadavg)
  status=0
  GATE_MESON_ARGS=-Dgate_knob=true GATE_HEAD_ENV="$env" GATE_DIR=build-gate-rates/gate ci/gate.sh HEAD \
    >"$log" 2>&1 || status=$?
  line=$(grep '^gate-result:' "$log" | tail -1)
  local counts wall seconds after
  counts=$(sed -n 's/.* counts=\([^ ]*\).*/\1/p' <<<"$line")
  wall=$(sed -n 's/.* wall=\([^ ]*\).*/\1/p' <<<"$line")
  seconds=$(sed -n 's/.* seconds=\([^ ]*\).*/\1/p' <<<"$line")
  after=$(sed -n 's/.* load=\([^ ]*\).*/\1/p' <<<"$line")
  printf '%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n' "$load" "$condition" "$n" "$status" "${counts:--}" "${wall:--}" \
    "${seconds:--}" "$before" "${after:--}" >>"$out"
  echo "$load $condition $n: exit $status (counts ${counts:--}, wall ${wall:--}), ${seconds:--} s, load $before to ${after:--}" >&2
}

for load in "${loads[@]}"; do
  if [ "$load" = stress ] || [ "$load" = busy ]; then
    # Every CPU (stress) or one (busy) kept busy, at normal priority, for
    # as long as the trials take; the gate's processes share the CPUs.
    cpus=$(nproc)
    [ "$load" = busy ] && cpus=1
    stress-ng --cpu "$cpus" --cpu-method matrixprod --timeout 24h --quiet &
    stress_pid=$!
    sleep 5
  fi
  for condition in "${conditions[@]}"; do
    case $condition in
      same) env= ;;
      refactor) env=SLUICE_TEST_KERNEL_REFACTOR=1 ;;
      work*) env=SLUICE_TEST_KERNEL_WORK_PCT=${condition#work} ;;
      *)
        echo "ci/gate-rates.sh: unknown condition '$condition' (same, refactor, workP)" >&2
        exit 2
        ;;
    esac
    for n in $(seq 1 "$trials"); do trial "$load" "$condition" "$n" "$env"; done
  done
  stop_stress
done

# The table: per regime and condition, each signal's verdicts and the
# gate's exits (counts: 1 slower; wall time: 1 slower in both passes, 3
# cannot tell).
awk -F'\t' 'NR > 1 {
    key = $1 "\t" $2; n[key]++
    s[key, $4]++
    if ($5 == 1) c[key]++
    if ($6 == 1) w[key]++
    if ($6 == 3) i[key]++
  }
  END {
    printf "%-7s %-9s %6s %8s %8s %8s %14s %12s %16s\n", "regime", "condition", "trials", "exit 1", "exit 3",
      "exit 0", "counts slower", "wall slower", "wall cannot tell"
    for (k in n) {
      split(k, p, "\t")
      printf "%-7s %-9s %6d %8d %8d %8d %14d %12d %16d\n", p[1], p[2], n[k], s[k, 1], s[k, 3], s[k, 0], c[k], w[k],
        i[k]
    }
  }' "$out" | sort
