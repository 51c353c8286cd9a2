#!/usr/bin/env bash
# Finds the commit that slowed one row: ci/bisect.sh GOOD BAD ROW
#
# Runs `git bisect` from GOOD (a commit where ROW was fast) to BAD (where it
# was slow) with the pull-request gate as the test: at each step ci/gate.sh
# builds GOOD and the candidate, measures ROW (SCENARIO/VARIANT/ADAPTER,
# e.g. CV-1/32x32/fused) on both, ABAB, and counts its instructions
# (docs/gate.md). A candidate the gate finds slower is bad; one it passes is
# good; one that does not build, or that the gate cannot judge, is skipped
# (exit 125). `sluice history bisect ROW` prints GOOD and BAD from a
# history (docs/history.md).
#
# The bisection runs in its own worktree (BISECT_DIR, default build-bisect,
# under this checkout), so this checkout is never touched; every step uses
# this checkout's ci/gate.sh, whatever the candidate's own ci/ holds. Exit
# status: 0 when a first bad commit was found (it is printed), 1 when not,
# 2 for a bad command line. GATE_ROUNDS and GATE_COUNTS are passed to the
# gate.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
  echo "usage: ci/bisect.sh GOOD BAD SCENARIO/VARIANT/ADAPTER" >&2
  exit 2
fi
good=$1
bad=$2
row=$3
case $row in
  */*/*) ;;
  *) echo "ci/bisect.sh: row '$row' is not SCENARIO/VARIANT/ADAPTER" >&2; exit 2 ;;
esac
repo=$PWD
dir=${BISECT_DIR:-$repo/build-bisect}
[[ $dir = /* ]] || dir=$repo/$dir
good_id=$(git rev-parse --verify --quiet "$good^{commit}") || { echo "ci/bisect.sh: GOOD '$good' is not a commit" >&2; exit 2; }
bad_id=$(git rev-parse --verify --quiet "$bad^{commit}") || { echo "ci/bisect.sh: BAD '$bad' is not a commit" >&2; exit 2; }

rm -rf "$dir"
mkdir -p "$dir"
git worktree prune
git worktree add --detach "$dir/src" "$bad_id" >&2
trap 'git -C "$dir/src" bisect reset >/dev/null 2>&1 || true; git worktree remove --force "$dir/src" >/dev/null 2>&1 || true' EXIT

# One step: the gate on the candidate checked out in $dir/src against GOOD.
# Its exit status and its verdict line say pass or slower. GATE_STRICT=1:
# a row the bisection follows may be slower by wall time alone, so a step
# whose wall time cannot tell is skipped, not passed by the counts.
cat >"$dir/step.sh" <<STEP
#!/usr/bin/env bash
commit=\$(git -C "$dir/src" rev-parse --short=12 HEAD)
echo "== bisect step: \$commit against $good_id" >>"$dir/bisect-steps.log"
GATE_STRICT=1 GATE_HEAD_SRC="$dir/src" GATE_ROW="$row" GATE_DIR="$dir/gate" "$repo/ci/gate.sh" "$good_id" >"$dir/step.log" 2>&1
status=\$?
cat "$dir/step.log" >>"$dir/bisect-steps.log"
verdict=\$(grep '^gate: ' "$dir/step.log" | tail -n 1)
# The gate's exit status: 0 pass, 1 with its verdict line slower; 3
# (cannot tell) or anything else (a failed build, a crash) means the
# candidate cannot be judged.
case \$status:\$verdict in
  0:*"; pass") echo "\$commit: good (\$verdict)" >&2; exit 0 ;;
  1:*"FAIL: head is slower"*) echo "\$commit: bad (\$verdict)" >&2; exit 1 ;;
  *) echo "\$commit: skipped, the gate could not judge it (exit \$status; see $dir/bisect-steps.log)" >&2; exit 125 ;;
esac
STEP
chmod +x "$dir/step.sh"

git -C "$dir/src" bisect start "$bad_id" "$good_id" >&2
git -C "$dir/src" bisect run "$dir/step.sh" | tee "$dir/bisect.out"
echo
git -C "$dir/src" bisect log >"$dir/bisect.log"
if grep -q "is the first bad commit" "$dir/bisect.out"; then
  echo "bisect: $(grep -m1 "is the first bad commit" "$dir/bisect.out") for $row; the steps' gate output is in $dir/bisect-steps.log"
  exit 0
fi
echo "bisect: no first bad commit found for $row; see $dir/bisect-steps.log" >&2
exit 1
