#!/usr/bin/env bash
# The pull-request performance gate: ci/gate.sh BASE
#
# Compares the working tree ("head") with BASE (a git revision) on the gate
# set, every row (scenario, variant, adapter) that runs here, by two signals
# (docs/gate.md):
#   - counts, the blocking signal: callgrind's instructions and simulated
#     D1 and LL data misses per batch, each row in a process of its own,
#     the run's setup left out; deterministic, so a fixed threshold;
#   - wall time: the gate set run alternately, base then head, GATE_ROUNDS
#     times (A B A B ..., each run one process), compared by `sluice check`
#     over one figure per process with Holm's procedure over the rows; the
#     rows it finds slower are run again alone, with fresh processes, and a
#     row fails only if that pass finds it slower too (rows it could not
#     tell about are never rerun: they get no fresh chance to fail).
# Exit status: 0 pass; 1 head is slower (either signal); 3 INCONCLUSIVE (no
# row slower, and wall time could not tell for some row, the machine too
# busy or too unsteady, with no counts to decide it: GATE_COUNTS=0, or
# GATE_STRICT=1 to hold out for wall time); 2 bad command line. When the
# counts ran and found no row slower, a wall time that cannot tell is said
# and the gate passes: the counts judged every row, the wall-time half only
# declined to add its own verdict (docs/gate.md, "Two signals, one exit").
#
# Builds are cached by commit (and meson arguments) under GATE_CACHE
# (default ${XDG_CACHE_HOME:-~/.cache}/sluice-gate), with the base's
# counts; a clean working tree is its commit's build. A gate with both
# builds cached costs the measurements only.
#
# Environment: GATE_ROUNDS (processes a side, default 8; below 2 refused,
# below 5 warned), GATE_REPETITIONS (repetitions per process, default 2), GATE_DIR (scratch, default build-gate), GATE_CACHE,
# GATE_MESON_ARGS (meson arguments for both builds, e.g. -Dgate_knob=true),
# GATE_BASE_ENV and GATE_HEAD_ENV (environment for one side's runs, e.g.
# SLUICE_TEST_KERNEL_WORK_PCT=10 with the knob), GATE_COUNTS=0 to skip the
# counts, GATE_JOBS (parallel callgrind runs, default the CPUs),
# GATE_STRICT=1 (exit 3 whenever wall time cannot tell, counts or not),
# GATE_ASLR=1 (leave the wall-time runs' address-space layout randomized),
# GATE_ROW=SCENARIO/VARIANT/ADAPTER to judge one row only and GATE_HEAD_SRC=DIR
# to build the head side from another source tree than this one (both for
# ci/bisect.sh, whose candidate is checked out elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ]; then
  echo "usage: ci/gate.sh BASE   (a git revision to compare the working tree with)" >&2
  exit 2
fi
base_rev=$1
rounds=${GATE_ROUNDS:-8}
repetitions=${GATE_REPETITIONS:-2}
# shellcheck source=ci/gate-exit.sh
source ci/gate-exit.sh
gate_rounds ci/gate.sh "$rounds"
dir=${GATE_DIR:-build-gate}
cache=${GATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-gate}
jobs=${GATE_JOBS:-$(nproc)}
read -r -a meson_args <<<"${GATE_MESON_ARGS:-}"
read -r -a base_env <<<"${GATE_BASE_ENV:-}"
read -r -a head_env <<<"${GATE_HEAD_ENV:-}"
start=$(date +%s)
ci/install-deps.sh
if ! base_commit=$(git rev-parse --verify --quiet "$base_rev^{commit}"); then
  echo "ci/gate.sh: '$base_rev' is not a commit of this repository" >&2
  exit 2
fi
repo=$(pwd)
rm -rf "$dir/runs" "$dir/rerun" "$dir/baselines" "$dir/counts" "$dir/slower" "$dir/slower-again"
mkdir -p "$dir/runs" "$cache"
# The gate's builds need no tests, no CUDA and no MPI (whose libraries
# make every callgrind process start a second slower).
build_args=(-Dtests=false -Dcuda=disabled -Dmpi=disabled)
args_key=$(printf '%s\n' "${build_args[@]}" "${meson_args[@]}" | sha1sum | cut -c1-12)

# build_commit COMMIT: the cached build of a commit, made when missing; a
# clone sharing this repository's objects holds its source, so that the
# build names its commit. Prints the build folder.
build_commit() {
  local out=$cache/$1-$args_key
  if [ ! -x "$out/build/tools/sluice" ]; then
    echo "== building $1 into $out" >&2
    rm -rf "$out"
    git clone --quiet --shared --no-checkout "$repo" "$out/src" >&2
    git -C "$out/src" -c advice.detachedHead=false checkout --quiet --detach "$1" >&2
    meson setup "$out/build" "$out/src" "${build_args[@]}" "${meson_args[@]}" >&2
    ninja -C "$out/build" >&2
  fi
  echo "$out/build"
}

base_build=$(build_commit "$base_commit")
# A clean working tree is its commit; a changed one builds in $dir/head,
# kept between gates so that ninja rebuilds only what changed.
if [ -n "${GATE_HEAD_SRC:-}" ]; then
  # Another checkout (ci/bisect.sh's candidate), rebuilt incrementally at
  # each step in $dir/head.
  head_build=$dir/head
  [ -f "$head_build/build.ninja" ] || meson setup "$head_build" "$GATE_HEAD_SRC" "${build_args[@]}" "${meson_args[@]}" >&2
  ninja -C "$head_build" >&2
elif [ -z "$(git status --porcelain --untracked-files=normal)" ]; then
  head_build=$(build_commit "$(git rev-parse HEAD)")
else
  head_build=$dir/head
  [ -f "$head_build/build.ninja" ] || meson setup "$head_build" . "${build_args[@]}" "${meson_args[@]}" >&2
  ninja -C "$head_build" >&2
fi
A=$base_build/tools/sluice
B=$head_build/tools/sluice

# Every run is one fused thread: with several, the executor chooses per
# batch from the batches' own times whether to split (docs/adapters.md), so
# which batches split would differ between the sides by the machine's
# moment, and the counts would follow the clock. valgrind cannot run
# AVX-512 code, so both signals use the AVX2 table.
run_args=(--kernels cpu-avx2 --threads 1 --no-probes --quiet)

# Every wall-time run with the address-space layout fixed (setarch -R, no
# randomization) unless GATE_ASLR=1: a randomized layout is one of the
# things that moves one process's figure against another's
# (ci/gate-spread.sh measures what is left). Where the kernel refuses the
# personality (some containers), the runs go as they are.
layout=()
if [ "${GATE_ASLR:-0}" != 1 ] && setarch "$(uname -m)" -R true 2>/dev/null; then
  layout=(setarch "$(uname -m)" -R)
fi

# bench SIDE OUT ARGS...: one run (one process) of the gate set, or of the
# rows named.
bench() {
  local side=$1 out=$2
  shift 2
  if [ "$side" = A ]; then
    env "${base_env[@]}" "${layout[@]}" "$A" bench "${run_args[@]}" --repetitions "$repetitions" --output-dir "$out" "$@" >/dev/null
  else
    env "${head_env[@]}" "${layout[@]}" "$B" bench "${run_args[@]}" --repetitions "$repetitions" --output-dir "$out" "$@" >/dev/null
  fi
}

# check NAME RUNS_DIR UNSETTLED: the base's runs saved as baseline NAME,
# the head's checked against it; the exit status is check's.
check() {
  local name=$1 runs=$2 unsettled=$3 from=() records=() r
  for r in $(seq 1 "$rounds"); do
    from+=(--from "$runs/A$r/ci")
    records+=(--records "$runs/B$r/ci")
  done
  "$B" baseline save "$name" --baseline-dir "$dir/baselines" "${from[@]}" >/dev/null
  "$B" check --baseline "$name" --baseline-dir "$dir/baselines" "${records[@]}" --unsettled "$unsettled"
}

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

echo "== wall time: $rounds rounds of base then head, $repetitions repetitions each"
for r in $(seq 1 "$rounds"); do
  bench A "$dir/runs/A$r" "${select[@]}"
  bench B "$dir/runs/B$r" "${select[@]}"
done
wall=0
check base "$dir/runs" "$dir/slower" || wall=$?
if [ "$wall" -eq 1 ] && [ -s "$dir/slower" ]; then
  echo "== wall time again, to confirm the $(wc -l <"$dir/slower") rows above found slower: fresh processes, A B A B"
  cp "$dir/slower" "$dir/unsettled"
  for r in $(seq 1 "$rounds"); do
    for side in A B; do
      # One run per scenario variant, with the adapters to measure again.
      sort -k1,2 "$dir/unsettled" | awk '{key = $1 " " $2; list[key] = list[key] sep[key] $3; sep[key] = ","}
        END {for (k in list) print k, list[k]}' | while read -r scenario variant adapters; do
        bench "$side" "$dir/rerun/$side$r" --scenarios "$scenario" --variants "$variant" --adapters "$adapters"
      done
    done
  done
  again=0
  check rerun "$dir/rerun" "$dir/slower-again" || again=$?
  gate_confirm "$dir/slower" "$again" "$dir/slower-again"
  wall=$gate_wall
fi

counts=0
[ "${GATE_COUNTS:-1}" = 0 ] && counts=skipped
if [ "${GATE_COUNTS:-1}" != 0 ]; then
  # The rows that ran ok in the first base run: every gate row this
  # machine runs, per-element included.
  rows=$(grep -l '"outcome":[[:space:]]*"ok"' "$dir/runs/A1/ci/"*.json | xargs -n1 basename | sed 's/\.json$//; s/__/ /g')
  # count_side SLUICE OUT ENV...: callgrind's counts per batch of every
  # row, each in a process of its own with an empty TMPDIR and a fixed
  # environment: the heap a row starts from then depends on nothing else,
  # and its counts repeat to the instruction (docs/gate.md).
  count_side() {
    local sluice=$1 out=$2
    shift 2
    local dumps=$out.dumps
    rm -rf "$dumps"
    mkdir -p "$dumps"
    printf '%s\n' "$rows" | COUNT_ENV="$*" xargs -P "$jobs" -L 1 bash -c '
      dumps=$0 sluice=$1 scenario=$2 variant=$3 adapter=$4
      read -r -a extra <<<"$COUNT_ENV"
      row="$dumps/$scenario-$variant-${adapter//:/_}"
      mkdir -p "$row/tmp"
      env -i PATH=/usr/bin:/bin TMPDIR="$row/tmp" "${extra[@]}" valgrind --tool=callgrind --cache-sim=yes \
        --instr-atstart=no --callgrind-out-file="$row/callgrind.out" "$sluice" bench --scenarios "$scenario" \
        --variants "$variant" --adapters "$adapter" --kernels cpu-avx2 --threads 1 --repetitions 1 --warmup 0 \
        --batches 3 --no-probes --instrument --quiet --output-dir "$row/run" >/dev/null 2>&1 ||
        echo "valgrind failed on $scenario/$variant $adapter" >&2
      for dump in "$row"/callgrind.out.*; do
        [ -e "$dump" ] && mv "$dump" "$dumps/$(basename "$row").${dump##*.}"
      done
      rm -rf "$row"
    ' "$dumps" "$sluice"
    # Kept only whole: a row that valgrind could not count would otherwise
    # be cached as missing.
    local counted
    counted=$(python3 ci/gate-counts.py "$dumps" | tee "$out.part" | grep -vc '^#')
    rm -rf "$dumps"
    if [ "$counted" -ne "$(printf '%s\n' "$rows" | wc -l)" ]; then
      echo "ci/gate.sh: counted $counted of the $(printf '%s\n' "$rows" | wc -l) rows with $sluice" >&2
      rm -f "$out.part"
      return 1
    fi
    mv "$out.part" "$out"
  }
  # The help is read whole first: grep -q stops at its first match, and
  # under pipefail the help's later writes would fail with SIGPIPE and the
  # pipeline with them, as if the option were missing.
  base_help=$("$A" bench --help)
  if ! grep -q -- --instrument <<<"$base_help"; then
    # A base from before per-batch counts has nothing to compare with.
    echo "== counts: skipped, the base ($base_commit) predates sluice bench --instrument"
    GATE_COUNTS=0
    counts=skipped
  fi
fi
if [ "${GATE_COUNTS:-1}" != 0 ]; then
  echo "== counts per batch (callgrind, one process per row): head against base"
  mkdir -p "$dir/counts"
  # counts_file BUILD ENV...: where a side's counts go. A commit's build
  # (cached) keeps them beside it, keyed by the rows and the environment:
  # counts are deterministic, so they are computed once.
  counts_file() {
    local build=$1
    shift
    if [ "$build" = "$dir/head" ]; then
      echo "$dir/counts/head.tsv"
    else
      echo "$(dirname "$build")/counts-$(printf '%s\n' "$rows" "$@" | sha1sum | cut -c1-12).tsv"
    fi
  }
  base_counts=$(counts_file "$base_build" "${base_env[@]}")
  head_counts=$(counts_file "$head_build" "${head_env[@]}")
  if { [ -s "$base_counts" ] || count_side "$A" "$base_counts" "${base_env[@]}"; } &&
    { [ -s "$head_counts" ] || count_side "$B" "$head_counts" "${head_env[@]}"; }; then
    "$B" check --counts "$base_counts" "$head_counts" || counts=$?
  else
    counts=1
  fi
fi

gate_exit "$counts" "$wall"
status=$gate_status
echo "gate: $(($(date +%s) - start)) s; $gate_verdict"
# One line for scripts (ci/gate-rates.sh): each signal's status, and the
# load average when the gate ended.
echo "gate-result: status=$status counts=${counts} wall=$wall seconds=$(($(date +%s) - start)) load=$(cut -d' ' -f1 /proc/loadavg)"
exit "$status"
