#!/usr/bin/env bash
# The history measurement of docs/history.md: ci/history-measure.sh [WORK]
#
# Builds a performance history over real commits of this repository, with
# one planted slowdown and one planted no-op, and shows whether `sluice
# history publish` finds the slowdown at its commit and nothing at the no-op.
# It is a measurement a person runs (about an hour on a shared 2-vCPU
# machine), never part of .ci/run.
#
#  1. In a scratch clone under WORK (default /tmp/sluice-history-measure), a
#     branch `history-measure` replays the first-parent commits FIRST..LAST
#     (MEASURE_FIRST, MEASURE_LAST; default the 20 commits 2d223d8..a040e0d,
#     which share one source layout) by cherry-picking them, with two
#     planted commits: after the MEASURE_SLOW_AFTER-th (default 10th) real
#     commit, a real slowdown in the u8 normalize kernel (a serial sum over
#     every MEASURE_STRIDE-th output value, default 18: about +10% on CV-1's
#     iter, fused and per-element batches, calibrated on this machine), and
#     after the MEASURE_NOOP_AFTER-th (default 15th), a no-op (a comment in
#     the same kernel).
#  2. For each commit of the branch, oldest first: build only tools/sluice
#     (-Dcuda=disabled -Dtests=false, ccache), run the gate set on one thread
#     (--repetitions MEASURE_REPETITIONS, default 5), count the gate rows'
#     instructions (ci/count-instructions.sh) and note /proc/loadavg before
#     and after. A commit already collected is skipped, so a stopped run
#     resumes.
#  3. With this tree's sluice (BUILD_DIR, default build): `sluice history
#     add` for every run, timed, then `sluice history publish`, timed, and
#     the steps it found.
#
# On a machine too busy for the wall times to mean anything, the same
# builds can run elsewhere (docs/history.md ran them on the lent device
# machine, twice, in commit order and in reverse):
#   ci/history-measure.sh bundle [WORK]      after step 1: every commit's sluice
#                                            and libsluice, and the libraries they
#                                            load, in WORK/bundle.tar.xz
#   ci/history-measure.sh run BUNDLE OUT [reverse]   there: unpack, run the gate
#                                            set per commit, records in OUT/runs
#   ci/history-measure.sh file RUNS HISTORY [WORK]   here: history add each run
#                                            (positions from WORK's clone)
set -euo pipefail
case ${1:-} in
  bundle)
    work=${2:-/tmp/sluice-history-measure}
    [ -d "$work/src2" ] || git -C "$work/src" worktree add --detach "$work/src2" history-measure >/dev/null
    mapfile -t commits < <(git -C "$work/src" rev-list --reverse --first-parent "${MEASURE_FIRST:-2d223d8}^..history-measure")
    for ((i = 0; i < ${#commits[@]}; i++)); do
      out=$work/bundle/bins/$(printf '%02d' "$i")-${commits[i]:0:12}
      [ -f "$out/sluice" ] && continue
      git -C "$work/src2" checkout --quiet --detach "${commits[i]}"
      [ -d "$work/build2" ] || CC="ccache gcc" meson setup "$work/build2" "$work/src2" -Dcuda=disabled -Dtests=false \
        -Dmpi=disabled >/dev/null
      ninja -C "$work/build2" tools/sluice >/dev/null
      mkdir -p "$out" && cp "$work/build2/tools/sluice" "$out/" && cp -L "$work/build2/libsluice.so.0" "$out/"
    done
    mkdir -p "$work/bundle/lib"
    for l in $(for d in "$work"/bundle/bins/*/; do LD_LIBRARY_PATH=$d ldd "$d/sluice" "$d/libsluice.so.0"; done |
      awk '/=> \// {print $3}' | sort -u | grep -v "$work/bundle" |
      grep -Ev '(^|/)(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so'); do
      cp -L "$l" "$work/bundle/lib/"
    done
    tar cJf "$work/bundle.tar.xz" -C "$work/bundle" .
    echo "$work/bundle.tar.xz"
    exit 0 ;;
  run)
    bundle=$2 out=$3 order=${4:-}
    mkdir -p "$out/unpacked" "$out/runs" && tar xJf "$bundle" -C "$out/unpacked"
    cd "$out/unpacked"
    for d in $(ls -d bins/*/ | if [ "$order" = reverse ]; then sort -r; else sort; fi); do
      n=$(basename "$d")
      echo "$n $(cat /proc/loadavg)" >>"$out/load.txt"
      LD_LIBRARY_PATH=$PWD/$d:$PWD/lib "$d/sluice" bench --scenarios gate --threads 1 \
        --repetitions "${MEASURE_REPETITIONS:-5}" --quiet --output-dir "$out/runs/$n" >/dev/null 2>&1 || echo "$n failed" >&2
    done
    exit 0 ;;
  file)
    runs=$2 history=$3 work=${4:-/tmp/sluice-history-measure}
    sluice=$(cd "$(dirname "$0")/.." && pwd)/${BUILD_DIR:-build}/tools/sluice
    [[ ${BUILD_DIR:-build} = /* ]] && sluice=$BUILD_DIR/tools/sluice
    for d in "$runs"/*/; do
      counts=$work/runs/$(basename "$d")/instructions.tsv
      extra=()
      [ -f "$counts" ] && extra=(--instructions "$counts")
      "$sluice" history add "$d/ci" --into "$history" --repo "$work/src" "${extra[@]}" >/dev/null
    done
    "$sluice" history publish "$history" --output "$history/site"
    exit 0 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/sluice-history-measure}
first=${MEASURE_FIRST:-2d223d8}
last=${MEASURE_LAST:-a040e0d}
slow_after=${MEASURE_SLOW_AFTER:-10}
noop_after=${MEASURE_NOOP_AFTER:-15}
stride=${MEASURE_STRIDE:-18}
repetitions=${MEASURE_REPETITIONS:-5}
build_dir=${BUILD_DIR:-build}
[[ $build_dir = /* ]] || build_dir=$repo/$build_dir
sluice=$build_dir/tools/sluice
src=$work/src
runs=$work/runs
mkdir -p "$work" "$runs"
log=$work/measure.log
say() { echo "$*" | tee -a "$log" >&2; }

command -v ccache >/dev/null || apt-get install -y ccache >/dev/null
command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null

# 1. The branch. Its commits are new (cherry-picked), so every record names a
# commit that exists in the scratch clone and nowhere else.
if [ ! -d "$src/.git" ]; then
  git clone --quiet --no-local "$repo" "$src"
fi
git_src() { git -C "$src" -c user.name=history-measure -c user.email=history-measure@localhost "$@"; }
if ! git_src rev-parse --verify --quiet history-measure >/dev/null; then
  mapfile -t real < <(git_src rev-list --reverse --first-parent "$first^..$last")
  say "replaying ${#real[@]} commits $first..$last, slowdown after #$slow_after, no-op after #$noop_after"
  git_src checkout --quiet -B history-measure "${real[0]}"
  for ((i = 1; i < ${#real[@]}; i++)); do
    if [ "$i" -eq "$slow_after" ]; then
      python3 - "$src/kernels/cpu/normalize.c" "$stride" <<'EOF'
import re, sys
path, stride = sys.argv[1], sys.argv[2]
text = open(path).read()
end = "        dst[i + j] = ((float)src[i + j] - m[j]) * s[j];\n}\n"
assert text.count(end) >= 1, "the u8 body's end is not where the plant expects it"
plant = ("        dst[i + j] = ((float)src[i + j] - m[j]) * s[j];\n"
         "    /* Planted by ci/history-measure.sh: a serial sum over every\n"
         "     * " + stride + "th output value, work the compiler may neither drop nor\n"
         "     * vectorize (no fast-math), kept alive by a volatile store. */\n"
         "    float planted = 0.0f;\n"
         "    for (int64_t p = 0; p < n; p += " + stride + ")\n"
         "        planted += dst[p];\n"
         "    planted_sink = planted;\n}\n")
text = text.replace(end, plant, 1)
text = re.sub(r'(#include "[^"]*cpu\.h"\n)', r'\1\nstatic volatile float planted_sink;\n', text, count=1)
open(path, "w").write(text)
EOF
      git_src commit --quiet -am "planted: a serial sum over every ${stride}th value in the u8 normalize kernel"
    fi
    if [ "$i" -eq "$noop_after" ]; then
      sed -i '1s|^/\* Optimized normalization\.|/* Optimized normalization (a comment changed, nothing else).|' \
        "$src/kernels/cpu/normalize.c"
      git_src commit --quiet -am "planted: a no-op (a comment in the u8 normalize kernel)"
    fi
    git_src cherry-pick --allow-empty --keep-redundant-commits "${real[i]}" >/dev/null
  done
fi
mapfile -t commits < <(git_src rev-list --reverse --first-parent "$first^..history-measure")
say "branch history-measure: ${#commits[@]} commits"

# 2. Build, bench and count each commit.
build=$work/build
for ((i = 0; i < ${#commits[@]}; i++)); do
  c=${commits[i]}
  out=$runs/$(printf '%02d' "$i")-${c:0:12}
  [ -f "$out/done" ] && continue
  git_src checkout --quiet --detach "$c"
  if [ ! -d "$build" ]; then
    CC="ccache gcc" meson setup "$build" "$src" -Dcuda=disabled -Dtests=false >/dev/null
  fi
  t0=$(date +%s)
  ninja -C "$build" tools/sluice >"$work/ninja.log" 2>&1 || { say "build of $c failed"; tail "$work/ninja.log" >&2; exit 1; }
  t1=$(date +%s)
  rm -rf "$out"
  mkdir -p "$out"
  cat /proc/loadavg >"$out/load-before"
  "$build/tools/sluice" bench --scenarios gate --threads 1 --repetitions "$repetitions" --quiet \
    --output-dir "$out" >"$out/bench.log" 2>&1 || true
  cat /proc/loadavg >"$out/load-after"
  "$repo/ci/count-instructions.sh" "$build/tools/sluice" "$out/instructions.tsv"
  t2=$(date +%s)
  git_src log -1 --format='%h %s' "$c" >"$out/commit"
  touch "$out/done"
  say "$(printf '%02d' "$i") ${c:0:12} build $((t1 - t0)) s, bench and count $((t2 - t1)) s, load $(cut -d' ' -f1 "$out/load-before") -> $(cut -d' ' -f1 "$out/load-after"): $(cut -c14- "$out/commit")"
done

# 3. The history, with this tree's sluice.
[ -x "$sluice" ] || { say "no $sluice: build this tree first (ci/build.sh)"; exit 1; }
history=$work/history
site=$work/site
rm -rf "$history" "$site"
say "load before add: $(cat /proc/loadavg)"
t0=$(date +%s%N)
for out in "$runs"/*/; do
  "$sluice" history add "$out/ci" --into "$history" --repo "$src" --instructions "$out/instructions.tsv" >/dev/null
done
t1=$(date +%s%N)
say "history add: ${#commits[@]} runs in $(( (t1 - t0) / 1000000 )) ms; load $(cat /proc/loadavg)"
t0=$(date +%s%N)
"$sluice" history publish "$history" --output "$site" | tee -a "$log"
t1=$(date +%s%N)
say "history publish: $(( (t1 - t0) / 1000000 )) ms; load $(cat /proc/loadavg)"
say "site: $site/index.html"
