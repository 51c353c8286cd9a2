#!/usr/bin/env bash
# Faults injected into a real `sluice bench` and `sluice baseline save`: an
# output folder that fills up (ENOSPC on a small tmpfs) or is read-only. Each must give a clear error,
# exit 1, and lose nothing already written: records from an earlier run stay
# as they were (or are replaced by complete new ones), and no temporary is
# left. Mounting needs root; elsewhere the tests are skipped with the reason.
# The file sources' faults (a file truncated, deleted or made unreadable
# while a run reads it) are unit tests: test_sources and test_pipeline.
# TAP output.
set -u
sluice=$1
work=$(mktemp -d)
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for line in "$@"; do echo "# $line"; done; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# mount_tmpfs DIR OPTIONS: a tmpfs at DIR, or false when this process may
# not mount (not root, or no CAP_SYS_ADMIN in a container).
mount_tmpfs() {
  mkdir -p "$1"
  if mount -t tmpfs -o "$2" tmpfs "$1" 2>/dev/null; then
    mounts+=("$1")
    return 0
  fi
  return 1
}

# The tuned kernel choice lives in a cache of this script's own, measured
# here once, so that no run below says it measured (its stderr is checked).
export XDG_CACHE_HOME="$work/cache"
"$sluice" tune >/dev/null 2>&1

bench_nlp1() {
  "$sluice" bench --scenarios NLP-1 --warmup 0 --batches 2 --repetitions 1 --quiet --output-dir "$1"
}

# Records of a complete earlier run, to be put where the faulty runs write.
bench_nlp1 "$work/earlier" >/dev/null 2>&1
earlier_count=$(ls "$work/earlier/ci"/*.json 2>/dev/null | wc -l)
if [ "$earlier_count" -lt 3 ]; then
  not_ok "an earlier run writes its records" "only $earlier_count records in $work/earlier/ci"
fi

# A record is intact when the report reads every record of its folder.
records_readable() {
  "$sluice" report "$1" --output "$work/report-check" >/dev/null 2>&1
}

full="$work/full"
if mount_tmpfs "$full" size=64k; then
  mkdir -p "$full/ci"
  cp "$work/earlier/ci"/*.json "$full/ci/"
  # Fill it: a replaced record needs room for its new copy before the old
  # one goes, so any free page would let the run succeed.
  head -c 1M /dev/zero >"$full/ballast" 2>/dev/null
  out=$(bench_nlp1 "$full" 2>&1)
  rc=$?
  if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -q "No space left on device"; then
    ok "a full output folder fails the run with exit 1, saying so"
  else
    not_ok "a full output folder fails the run with exit 1, saying so" "exit $rc" "$(printf '%s' "$out" | tail -3)"
  fi
  if printf '%s' "$out" | grep -q "$full/ci/NLP-1__128__"; then
    ok "the message names the record that could not be written"
  else
    not_ok "the message names the record that could not be written" "$(printf '%s' "$out" | grep -i space | head -2)"
  fi
  rm -f "$full/ballast"
  left=$(find "$full" -name '*.tmp.*')
  if [ -z "$left" ]; then
    ok "no temporary is left in a full folder"
  else
    not_ok "no temporary is left in a full folder" "$left"
  fi
  if [ "$(ls "$full/ci"/*.json | wc -l)" -eq "$earlier_count" ] && records_readable "$full/ci"; then
    ok "every record in the full folder is whole: the earlier run's, or a complete new one"
  else
    not_ok "every record in the full folder is whole: the earlier run's, or a complete new one" \
      "$(ls -la "$full/ci")"
  fi
else
  for what in "a full output folder fails the run" "the message names the record" "no temporary is left" \
      "every record in the full folder is whole"; do
    skip "$what" "cannot mount a tmpfs here (needs root)"
  done
fi

# A baseline save that runs out of space partway (issue 21, item 1): the
# staged folder is abandoned, the message names the record that could not be
# written, and the baseline it was replacing is as it was, whole and read
# by `check`. Room is left for a record or two of the new save, so that a
# save writing into the baseline itself would change some of it.
later="$work/later"
bench_nlp1 "$later" >/dev/null 2>&1
bl="$work/baselines"
if mount_tmpfs "$bl" size=64k; then
  "$sluice" baseline save B --from "$work/earlier/ci" --baseline-dir "$bl" >/dev/null 2>&1
  before=$(cd "$bl/B" && md5sum * | sort)
  avail=$(df --output=avail -B1 "$bl" | tail -1)
  head -c $((avail - 2 * 4096)) /dev/zero >"$bl/ballast" 2>/dev/null
  out=$("$sluice" baseline save B --from "$later/ci" --baseline-dir "$bl" 2>&1)
  rc=$?
  rm -f "$bl/ballast"
  if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -q "No space left on device" &&
      printf '%s' "$out" | grep -q "$bl/B.tmp.[0-9]*.[A-Za-z0-9]*/NLP-1__128__[a-z-]*.json"; then
    ok "a baseline save into a full folder fails with exit 1, naming the record it could not write"
  else
    not_ok "a baseline save into a full folder fails with exit 1, naming the record it could not write" "exit $rc" \
      "$(printf '%s' "$out" | tail -3)"
  fi
  # One run a side cannot tell (exit 3): the check read the baseline whole
  # when it gets that far; a baseline it could not read is exit 1.
  check_status=0
  "$sluice" check --baseline B --baseline-dir "$bl" --records "$work/earlier/ci" >/dev/null 2>&1 || check_status=$?
  if [ "$(cd "$bl/B" && md5sum * | sort)" = "$before" ] && [ -z "$(find "$bl" -name '*.tmp.*')" ] &&
      [ "$check_status" -eq 3 ]; then
    ok "the baseline it was replacing is as it was and read whole, and no staged folder is left"
  else
    not_ok "the baseline it was replacing is as it was and read whole, and no staged folder is left" \
      "$(ls -la "$bl" "$bl/B")"
  fi
else
  skip "a baseline save into a full folder fails, naming the record" "cannot mount a tmpfs here (needs root)"
  skip "the baseline it was replacing is as it was" "cannot mount a tmpfs here (needs root)"
fi

readonly_dir="$work/readonly"
if mount_tmpfs "$readonly_dir" size=1m; then
  mkdir -p "$readonly_dir/ci"
  cp "$work/earlier/ci"/*.json "$readonly_dir/ci/"
  before=$(cat "$readonly_dir/ci"/*.json | md5sum)
  mount -o remount,ro "$readonly_dir"
  out=$(bench_nlp1 "$readonly_dir" 2>&1)
  rc=$?
  if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -q "Read-only file system" &&
      printf '%s' "$out" | grep -qF "$readonly_dir"; then
    ok "a read-only output folder fails the run with exit 1, naming it"
  else
    not_ok "a read-only output folder fails the run with exit 1, naming it" "exit $rc" \
      "$(printf '%s' "$out" | tail -3)"
  fi
  if [ "$(cat "$readonly_dir/ci"/*.json | md5sum)" = "$before" ]; then
    ok "the records already in a read-only folder are unchanged"
  else
    not_ok "the records already in a read-only folder are unchanged"
  fi
else
  skip "a read-only output folder fails the run" "cannot mount a tmpfs here (needs root)"
  skip "the records already in a read-only folder are unchanged" "cannot mount a tmpfs here (needs root)"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
