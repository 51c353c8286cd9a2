#!/usr/bin/env bash
# Measures the gate as it decides (docs/gate.md): whole `ci/gate.sh HEAD`
# decisions, both signals, on a -Dgate_knob=true build of the committed
# HEAD, with the head side given real extra work in the normalize kernels
# (SLUICE_TEST_KERNEL_WORK_PCT: 3, 5, 10, 30 percent of their work), the
# same work reshaped (SLUICE_TEST_KERNEL_REFACTOR=1, a harmless refactor),
# or nothing (the same code on both sides: every failure is a false alarm).
# Each trial is a gate of its own with fresh runs, so trials share no
# samples. Every condition runs on the machine as it is ("idle": on a
# shared machine other work goes on, and each trial records the load
# average) and under stress-ng keeping every CPU busy, at normal priority.
#
# The counts are deterministic, so ci/gate.sh computes each side's once per
# condition and reuses them: every trial of a condition gets the same
# counts verdict, and its wall-time half is measured afresh.
#
# Environment: GATE_RATE_TRIALS (A/A trials per load, default 20),
# GATE_RATE_SLOW_TRIALS (trials per slowdown and per refactor, default 10),
# GATE_RATE_LOADS (default "idle stress"), GATE_RATE_OUT (the results, one
# line per trial, default build-gate-rates/trials.tsv); GATE_* as for
# ci/gate.sh. This takes hours; it is not part of .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${GATE_RATE_TRIALS:-20}
slow_trials=${GATE_RATE_SLOW_TRIALS:-10}
read -r -a loads <<<"${GATE_RATE_LOADS:-idle stress}"
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
  if [ "$load" = stress ]; then
    # Every CPU kept busy, at normal priority, for as long as the trials
    # take; the gate's processes share the CPUs with it.
    stress-ng --cpu "$(nproc)" --cpu-method matrixprod --timeout 24h --quiet &
    stress_pid=$!
    sleep 5
  fi
  for n in $(seq 1 "$trials"); do trial "$load" same "$n" ""; done
  for n in $(seq 1 "$slow_trials"); do trial "$load" refactor "$n" SLUICE_TEST_KERNEL_REFACTOR=1; done
  for pct in 3 5 10 30; do
    for n in $(seq 1 "$slow_trials"); do trial "$load" "work$pct" "$n" "SLUICE_TEST_KERNEL_WORK_PCT=$pct"; done
  done
  stop_stress
done

# The table: per load and condition, how the decisions fell.
echo
awk -F'\t' 'NR > 1 {
    key = $1 "\t" $2; n[key]++
    s[key, $4]++
    if ($5 == 1) c[key]++
    if ($6 == 1) w[key]++
    if ($6 == 3) i[key]++
  }
  END {
    printf "%-7s %-9s %6s %7s %7s %12s %14s %14s\n", "load", "condition", "trials", "fail 1", "incon 3", "pass 0",
      "counts slower", "wall slower"
    for (k in n) {
      split(k, p, "\t")
      printf "%-7s %-9s %6d %7d %7d %12d %14d %14d\n", p[1], p[2], n[k], s[k, 1], s[k, 3], s[k, 0], c[k], w[k]
    }
  }' "$out" | sort
