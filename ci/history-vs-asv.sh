#!/usr/bin/env bash
# sluice's step detection beside asv's on the same synthetic histories
# (docs/history.md, "Against asv"): a person runs it; it is not part of the
# test suite. It makes .venv-asv (asv from PyPI, pinned), builds sluice if
# needed, files one tiny real bench run as a template, writes synthetic
# histories from it (ci/history/synthetic.py: keyed, deterministic),
# publishes each with `sluice history publish`, exports it with `sluice
# history export --format asv` and runs asv's own step detection
# (asv.step_detect) on every exported series, then prints both verdicts
# side by side.
#
# usage: ci/history-vs-asv.sh [WORK]   (default build-history-vs-asv)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build-history-vs-asv}
build_dir=${BUILD_DIR:-build}
sluice=$build_dir/tools/sluice
asv_version=0.6.6

if [ ! -x .venv-asv/bin/asv ]; then
  python3 -m venv .venv-asv
  .venv-asv/bin/pip install --quiet "asv==$asv_version"
fi
[ -x "$sluice" ] || BUILD_DIR=$build_dir ci/build.sh
rm -rf "$work"
mkdir -p "$work"

# The template: a real run of two rows, whose machine and environment the
# synthetic runs keep (a run's machine id is a digest of its environment).
"$sluice" bench --scenarios CV-1 --adapters reference,iter --repetitions 1 --warmup 0 --batches 4 --no-probes \
  --quiet --output-dir "$work/bench" >/dev/null
"$sluice" history add "$work/bench/ci" --into "$work/template" --position 0 >/dev/null
template=$(find "$work/template" -name '*.json' -path '*/runs/*' | head -1)

.venv-asv/bin/python ci/history/synthetic.py "$template" "$work/cases" >"$work/cases.tsv"
printf '%-34s %-28s %-44s %s\n' "case" "planted" "sluice history publish" "asv.step_detect"
while IFS=$'\t' read -r case planted; do
  "$sluice" history publish "$work/cases/$case" --output "$work/site/$case" >"$work/$case.publish" 2>&1 || true
  "$sluice" history export "$work/cases/$case" --format asv --output "$work/asv/$case" >/dev/null
  .venv-asv/bin/python ci/history/verdicts.py "$work/$case.publish" "$work/asv/$case" "$case" "$planted"
done <"$work/cases.tsv"
