#!/usr/bin/env bash
# Determinism audit across builds: the same scenarios, seeds and epochs under
# gcc and clang, the generic and the best kernel tables, and 0 vs 2 prefetch
# workers (with 2 fused threads) must give identical digests for every
# batch, field and row. Any difference fails, naming where it is. Run after
# ci/warnings.sh, whose gcc and clang builds it reuses.
#   AUDIT_ARGS  extra arguments for every `sluice audit` (default: the whole
#               corpus, seeds 42 and 7, 2 epochs of 4 batches)
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
CC=gcc BUILD_DIR=build-werror-gcc ci/build.sh -Dwerror=true
CC=clang BUILD_DIR=build-werror-clang ci/build.sh -Dwerror=true
out=${AUDIT_DIR:-build/audit}
mkdir -p "$out"
args=(${AUDIT_ARGS:---seeds 42,7 --epochs 2 --batches 4})

gcc_sluice=build-werror-gcc/tools/sluice
clang_sluice=build-werror-clang/tools/sluice
# Each manifest is a folder (audit.json and its MANIFEST.json; docs/audit.md).
"$gcc_sluice" audit "${args[@]}" --output "$out/gcc"
"$clang_sluice" audit "${args[@]}" --output "$out/clang"
"$gcc_sluice" audit "${args[@]}" --kernels cpu-generic --output "$out/gcc-generic"
"$gcc_sluice" audit "${args[@]}" --workers 2 --threads 2 --output "$out/gcc-workers2"

status=0
for other in clang gcc-generic gcc-workers2; do
  echo "== gcc vs $other"
  "$gcc_sluice" audit --compare "$out/gcc" "$out/$other" || status=1
done
exit "$status"
