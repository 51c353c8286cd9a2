#!/usr/bin/env bash
# The README's main job: installs what is missing, configures, builds, runs
# `sluice bench` (default: the ci profile, every scenario, sluice's own
# adapters and the numpy and PyTorch peers, on the CPU with synthetic
# fixtures), then `sluice report` on its records, so that its summary's "vs
# best peer" and its report's winners rank sluice against numpy and PyTorch.
# It installs those two frameworks from Debian (`ci/install-peers.sh numpy
# torch`: numpy 1.24 and PyTorch 1.13, CPU only, 146 MB, into the system's
# Python, which the tests use too); --adapters narrows the run, and then
# only the frameworks its peers need are installed. Records,
# summary.md, report.md and report.html go to <output-dir>/<profile>/
# (records/ci/ by default). Arguments are passed to `sluice bench`, e.g.
# ci/bench.sh --scenarios gate. The exit status is bench's (1 when a run
# failed or mismatched), or report's when bench succeeded.
#
# --history DIR (taken here, not passed to bench) then files the run into
# the history DIR under its commit and machine (`sluice history add`) and
# republishes its site into DIR/site (`sluice history publish`), for a
# scheduled job on main (docs/history.md). With HISTORY_INSTRUCTIONS=1 the
# gate rows' instruction counts (ci/count-instructions.sh, valgrind) are
# filed with the run, so that steps can be confirmed by them. With
# HISTORY_PROCESSES=N (default 1) bench runs N times, each process's records
# in a folder of its own, and the N are filed as the commit's processes: the
# level moves between processes of one binary by far more than within one,
# and a short series needs several processes per commit to show a step
# (docs/history.md). A commit filed already on this machine (a nightly on an
# unchanged main) is skipped with a message, exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
build_dir=${BUILD_DIR:-build}
# Only the command: the main job runs no test, and the tests are most of
# the build.
BUILD_DIR=$build_dir BUILD_TARGETS=tools/sluice ci/build.sh
sluice=$build_dir/tools/sluice

# Where bench writes: --output-dir (default records) and --profile (default ci).
output_dir=records
profile=ci
history=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --history) history=${2:?"ci/bench.sh: --history needs a folder"}; shift 2 ;;
    --history=*) history=${1#--history=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --output-dir) output_dir=${args[i + 1]:-records} ;;
    --output-dir=*) output_dir=${args[i]#--output-dir=} ;;
    --profile) profile=${args[i + 1]:-ci} ;;
    --profile=*) profile=${args[i]#--profile=} ;;
  esac
done

# The default set: sluice's own adapters and the tuned numpy and PyTorch
# peers; with --adapters, the frameworks of the peers it names.
adapters=
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --adapters) adapters=${args[i + 1]:-} ;;
    --adapters=*) adapters=${args[i]#--adapters=} ;;
  esac
done
frameworks=()
if [ -z "$adapters" ]; then
  args=(--adapters 'all,peer:numpy,peer:torch' "${args[@]}")
  frameworks=(numpy torch)
else
  case ",$adapters," in *,peer:numpy*) frameworks+=(numpy) ;; esac
  case ",$adapters," in *,peer:torch*) frameworks+=(torch) ;; esac
fi
if [ ${#frameworks[@]} -gt 0 ]; then
  ci/install-peers.sh "${frameworks[@]}" >&2
fi

status=0
"$sluice" bench "${args[@]}" || status=$?
if [ -d "$output_dir/$profile" ]; then
  report_status=0
  "$sluice" report "$output_dir/$profile" >/dev/null || report_status=$?
  echo "report: $output_dir/$profile/report.html (and report.md)"
  [ "$status" -eq 0 ] && status=$report_status
fi
if [ -n "$history" ] && [ -d "$output_dir/$profile" ]; then
  add=(history add "$output_dir/$profile" --into "$history" --skip-filed)
  processes=${HISTORY_PROCESSES:-1}
  for ((p = 2; p <= processes; p++)); do
    # A later --output-dir wins over one in args.
    "$sluice" bench "${args[@]}" --output-dir "$output_dir/processes/$p" --quiet || status=1
    add+=("$output_dir/processes/$p/$profile")
  done
  if [ "${HISTORY_INSTRUCTIONS:-0}" = 1 ]; then
    ci/count-instructions.sh "$sluice" "$output_dir/$profile/instructions.tsv"
    add+=(--instructions "$output_dir/$profile/instructions.tsv")
  fi
  "$sluice" "${add[@]}" || status=1
  "$sluice" history publish "$history" --output "$history/site" || status=1
fi
exit "$status"
