#!/usr/bin/env bash
# Plants each bug under ci/planted/ in a scratch copy of this tree, builds it
# and runs the tests that should catch it, so that we know (rather than
# hope) that the tests can tell a small arithmetic error from a pass. It
# prints, per bug, the tests that failed, and exits 1 when a planted bug is
# caught by no test, or when the unpatched copy already fails a test (then a
# failure would say nothing about the bug). A person runs it; it is not part
# of .ci/run, since it builds the tree a second time.
#
#   ci/planted-bugs.sh [SCRATCH]
#
# SCRATCH is the folder for the copy and its build (default: a temporary one,
# removed at the end). Giving one keeps the build, so a second run rebuilds
# only what the patches touch. The caller's tree and build are never
# touched: the copy is made from the working tree's files (tracked and
# untracked, not ignored) with tar, not with git worktree or stash.
#
# The copy is configured -Dcuda=disabled -Dbuildtype=debugoptimized, and
# only the test executables below are built. ccache, when installed (meson
# uses it by itself), is told the scratch folder is the base directory, so
# objects are shared between runs in different scratch folders.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
patches_dir=$root/ci/planted

# The tests that exercise the three kernels: the kernel unit tests on every
# table, the kernel checker, trig_rounds' own tests, and the scenarios that
# run log_mel (MM-2), trig_rounds (IO-4) and resize (MM-1, CV-4); and the
# tests of the four bugs an independent review planted that survived every
# test then (issue 33): the gate's minimum effect at its edge
# (gate_threshold), a checkpoint bound to its shard (checkpoint_shard),
# subnormals flushed as crtfastmath.o would (subnormals), and the tuner's
# check against the reference ignored (kernel_tune).
tests=(kernels kernels@cpu-generic kernels@cpu-avx2 kernels@cpu-avx512-256 kernels@cpu-avx512
  kernel_check trig_rounds MM-2 IO-4 MM-1 CV-4 gate_threshold checkpoint_shard subnormals kernel_tune)

if [ $# -gt 1 ]; then
  echo "usage: ci/planted-bugs.sh [SCRATCH]" >&2
  exit 2
fi
if [ $# -eq 1 ]; then
  scratch=$(realpath -m "$1")
else
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/sluice-planted.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
fi
case "$scratch/" in
  "$root"/*)
    echo "planted-bugs: the scratch folder $scratch is inside the tree $root; give one outside it" >&2
    exit 2
    ;;
esac
mkdir -p "$scratch"
src=$scratch/src
build=$scratch/build

echo "planted-bugs: machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
echo "planted-bugs: load before: $(cat /proc/loadavg)"

# A fresh copy every run, so a patch left applied by an interrupted run never
# carries over. Its files get the time of the copy (tar -m), not their own:
# restored, older times would let ninja keep objects built from a patched
# file. The build folder stays, and ccache makes the recompiling cheap.
rm -rf "$src"
mkdir -p "$src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
  tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null) | tar -xmf - -C "$src"

export CCACHE_BASEDIR=$scratch CCACHE_NOHASHDIR=true
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$src" -Dcuda=disabled -Dbuildtype=debugoptimized >"$scratch/setup.log" 2>&1 || {
    echo "planted-bugs: configuring the copy failed; see $scratch/setup.log" >&2
    tail -20 "$scratch/setup.log" >&2
    exit 1
  }
fi

# The executables of the chosen tests, as ninja targets (paths relative to
# the build folder), so nothing else is built.
mapfile -t targets < <(meson introspect --tests "$build" | python3 -c '
import json, os, sys
wanted = set(sys.argv[2:])
found = {t["name"]: t["cmd"][0] for t in json.load(sys.stdin) if t["name"] in wanted}
missing = wanted - set(found)
if missing:
    sys.exit("planted-bugs: no such test in this build: " + ", ".join(sorted(missing)))
for path in sorted(set(found.values())):
    print(os.path.relpath(path, sys.argv[1]))
' "$build" "${tests[@]}")

# Builds the copy as it now is and runs the tests; prints the names of the
# tests that did not pass, one a line. A build failure is an error of the
# patch, not a catch, so it stops the script.
failing_tests() {
  local label=$1
  if ! ninja -C "$build" "${targets[@]}" >"$scratch/build-$label.log" 2>&1; then
    echo "planted-bugs: building the copy ($label) failed; see $scratch/build-$label.log" >&2
    grep -m5 -E 'error|Error' "$scratch/build-$label.log" >&2 || true
    exit 1
  fi
  meson test -C "$build" --no-rebuild --num-processes 1 "${tests[@]}" >"$scratch/test-$label.log" 2>&1 || true
  cp "$build/meson-logs/testlog.txt" "$scratch/testlog-$label.txt"
  # Each failing test with the Criterion tests in it that failed (TAP's
  # "not ok" lines), e.g. "MM-2 (mm2::equivalence, mm2::golden)".
  python3 -c '
import json, re, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
        continue
    subtests = [re.sub(r"^not ok (\d+ )?- ", "", s).split(" ")[0]
                for s in (t.get("stdout") or "").splitlines() if s.startswith("not ok")]
    name = t["name"].split(" / ")[-1]
    print(name + (" (" + ", ".join(subtests) + ")" if subtests else " (" + t["result"] + ")"))
' "$build/meson-logs/testlog.json"
}

echo "planted-bugs: tests: ${tests[*]}"
clean=$(failing_tests clean)
if [ -n "$clean" ]; then
  echo "planted-bugs: the unpatched copy already fails: $(echo "$clean" | paste -sd ';'); fix that first (log: $scratch/test-clean.log)" >&2
  exit 1
fi

uncaught=0
results=()
for patch in "$patches_dir"/*.patch; do
  bug=$(basename "$patch" .patch)
  if ! patch -d "$src" -p1 --forward --quiet <"$patch"; then
    echo "planted-bugs: $patch no longer applies to this tree; update it" >&2
    exit 1
  fi
  caught=$(failing_tests "$bug")
  patch -d "$src" -p1 --reverse --quiet <"$patch"
  if [ -z "$caught" ]; then
    uncaught=1
    results+=("$bug: CAUGHT BY NO TEST")
  else
    results+=("$bug: $(echo "$caught" | paste -sd ';' | sed 's/;/; /g')")
  fi
done

echo "planted-bugs: load after: $(cat /proc/loadavg)"
echo "planted-bugs: bug: tests that failed"
printf '  %s\n' "${results[@]}"
if [ "$uncaught" -ne 0 ]; then
  echo "planted-bugs: FAILED: at least one planted bug passes every test above; the tests cannot see it" >&2
  exit 1
fi
