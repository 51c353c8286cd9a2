#!/usr/bin/env bash
# The README's main job: installs what is missing, configures, builds, runs
# `sluice bench` (default: the ci profile, every scenario and adapter, on the
# CPU with synthetic fixtures), then `sluice report` on its records. Records,
# summary.md, report.md and report.html go to <output-dir>/<profile>/
# (records/ci/ by default). Arguments are passed to `sluice bench`, e.g.
# ci/bench.sh --scenarios gate. The exit status is bench's (1 when a run
# failed or mismatched), or report's when bench succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
build_dir=${BUILD_DIR:-build}
BUILD_DIR=$build_dir ci/build.sh
sluice=$build_dir/tools/sluice

# Where bench writes: --output-dir (default records) and --profile (default ci).
output_dir=records
profile=ci
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --output-dir) output_dir=${args[i + 1]:-records} ;;
    --output-dir=*) output_dir=${args[i]#--output-dir=} ;;
    --profile) profile=${args[i + 1]:-ci} ;;
    --profile=*) profile=${args[i]#--profile=} ;;
  esac
done

status=0
"$sluice" bench "$@" || status=$?
if [ -d "$output_dir/$profile" ]; then
  report_status=0
  "$sluice" report "$output_dir/$profile" >/dev/null || report_status=$?
  echo "report: $output_dir/$profile/report.html (and report.md)"
  [ "$status" -eq 0 ] && status=$report_status
fi
exit "$status"
