#!/usr/bin/env bash
# Runs the review's reproducers of issue 21 (docs/robustness.md, "Before and
# after, per defect") on two sluice binaries, typically one built before the
# hardening-3 merge and one built from main, and prints one Markdown table
# row per defect: id, the command, what the first binary did, what the
# second does. A person runs it to show what each fix changed; it is not a
# test (tests/cli/test_outputs.sh and the unit tests hold the fixes).
#
#   ci/defect-reproducers.sh BEFORE_SLUICE AFTER_SLUICE
#
# Each binary works in its own scratch folder (removed at the end) and makes
# its own records with a tiny NLP-1 bench, so neither reads what the other
# wrote. XDG_CACHE_HOME points into the scratch folder, so the kernel choice
# the benches save never touches the user's cache. F1 configures a
# throwaway build folder of the source tree each binary was built from
# (found through its build folder's meson-info), with clang; set
# SKIP_CONFIGURE=1 to leave that row out.
#
# Kills are made repeatable by waiting for a state, not a time: the killer
# polls (without sleeping) until the writer has put a file where the review
# found the damage, then sends SIGKILL at once, and the row says whether the
# kill landed while the writer was still running.
set -u

if [ $# -ne 2 ]; then
  echo "usage: ci/defect-reproducers.sh BEFORE_SLUICE AFTER_SLUICE" >&2
  exit 2
fi
before=$(realpath "$1")
after=$(realpath "$2")
for binary in "$before" "$after"; do
  [ -x "$binary" ] || {
    echo "defect-reproducers: $binary is not an executable" >&2
    exit 2
  }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_CACHE_HOME=$scratch/cache

# A pid no process has: a child that already exited, for temporaries that
# stand for a killed writer's.
sh -c 'exit 0' &
dead=$!
wait "$dead"

# one_line TEXT: TEXT on one line, without the characters that would break
# a Markdown table cell, cut to 240 characters.
one_line() { tr '\n|`' '  '"'" <<<"$1" | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-240; }

# say PATTERN SLUICE ARGS...: runs the command and prints "exit N: LINE",
# LINE being the first line of its output (stdout and stderr) that matches
# PATTERN (an extended regular expression), or that starts with "sluice"
# (every error message does), or else its first line.
say() {
  local pattern=$1 output status line
  shift
  output=$("$@" 2>&1)
  status=$?
  line=$(grep -E -m1 -- "${pattern:+$pattern|}^sluice[a-z -]*:" <<<"$output") || line=$(grep -m1 . <<<"$output")
  echo "exit $status: $(one_line "${line:-(no output)}")"
}

# bench SLUICE DIR ADAPTERS: a tiny NLP-1 run whose records go to DIR/ci.
bench() {
  "$1" bench --scenarios NLP-1 --adapters "$3" --warmup 1 --batches 3 --repetitions 1 --no-probes --quiet \
    --output-dir "$2" >/dev/null 2>&1
}

# kill_when MODE TARGET -- SLUICE ARGS: runs the command and SIGKILLs it as
# soon as MODE holds, then prints "killed mid-write" or "it finished first".
#   landed: a file with a name that is not a temporary appeared, or got a
#           new inode, in TARGET or in the writer's staged folder
#           TARGET.tmp.<pid>.* (one whole file written where it ends up);
#   tmp:    a temporary of the writer (a name holding .tmp.<pid>.) exists in
#           TARGET, in its parent or in a staged folder.
kill_when() {
  local mode=$1 target=$2
  shift 3
  python3 - "$mode" "$target" "$@" <<'EOF'
import glob, os, signal, subprocess, sys
mode, target, command = sys.argv[1], sys.argv[2], sys.argv[3:]

def files(top):
    found = {}
    for root, _, names in os.walk(top):
        for name in names:
            try:
                found[os.path.join(root, name)] = os.lstat(os.path.join(root, name)).st_ino
            except FileNotFoundError:
                pass
    return found

old = files(target)
child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
mark = ".tmp.%d." % child.pid
parent = os.path.dirname(target.rstrip("/")) or "."

def holds():
    if mode == "tmp":
        for top in (parent, target):
            try:
                if any(mark in name for name in os.listdir(top)):
                    return True
            except FileNotFoundError:
                pass
        return False
    now = files(target)
    for staged in glob.glob(glob.escape(target) + mark.rstrip(".") + ".*"):
        now.update(files(staged))
    return any(".tmp." not in os.path.basename(p) and old.get(p) != ino for p, ino in now.items())

while child.poll() is None and not holds():
    pass
running = child.poll() is None
child.send_signal(signal.SIGKILL)
child.wait()
print("killed mid-write" if running else "it finished first")
EOF
}

# records_in DIR: how many records DIR holds, and whether it has a manifest.
records_in() {
  local n
  n=$(find "$1" -maxdepth 1 -name '*.json' ! -name MANIFEST.json 2>/dev/null | wc -l)
  if [ ! -d "$1" ]; then
    echo "no folder"
  elif [ -f "$1/MANIFEST.json" ]; then
    echo "$n records + MANIFEST.json"
  else
    echo "$n records, no manifest"
  fi
}

# temporaries DIR...: the names of the temporaries (.tmp.<pid>.) under DIR,
# and how many bytes they hold.
temporaries() {
  local list bytes
  list=$(find "$@" -name '*.tmp.*' 2>/dev/null | sed 's|.*/||' | sed 's/\(\.tmp\.[0-9]*\.\).*/\1*/' | sort | uniq -c |
    awk '{print $2 (($1 > 1) ? " x" $1 : "")}' | paste -sd, -)
  bytes=$(find "$@" -path '*.tmp.*' -type f -printf '%s\n' 2>/dev/null | awk '{n += $1} END {print n + 0}')
  echo "${list:-none}${list:+ ($bytes bytes)}"
}

# Each case below takes SLUICE and a fresh folder of its own and prints what
# happened on one line.

case_d10_resave() {
  if ! bench "$1" "$2/two" reference,fused || ! bench "$1" "$2/one" reference; then
    echo "bench failed"
    return
  fi
  "$1" baseline save B --from "$2/two/ci" --baseline-dir "$2/bl" >/dev/null 2>&1
  local second
  second=$(say "saved|error" "$1" baseline save B --from "$2/one/ci" --baseline-dir "$2/bl")
  echo "second save $second; B holds $(records_in "$2/bl/B")"
}

case_d10_killed() {
  # Many records (every adapter of four scenarios, the unavailable ones
  # recorded as such), so that a kill after the first one lands mid-save.
  "$1" bench --scenarios NLP-1,TAB-1,PC-1,CV-1 --warmup 1 --batches 3 --repetitions 1 --no-probes --quiet \
    --output-dir "$2/many" >/dev/null 2>&1 || {
    echo "bench failed"
    return
  }
  local how check total
  total=$(records_in "$2/many/ci")
  how=$(kill_when landed "$2/bl/B" -- "$1" baseline save B --from "$2/many/ci" --baseline-dir "$2/bl")
  check=$(say "^[0-9]+ rows|MANIFEST|rror|sluice check" "$1" check --baseline B --baseline-dir "$2/bl" \
    --records "$2/many/ci")
  echo "$how; B: $(records_in "$2/bl/B") (the run: ${total%%,*}); then check $check"
}

case_d11_export() {
  local how first
  how=$(kill_when tmp "$2/ex" -- "$1" export --scenario CV-1 --variant 32x32 --seed 1 --output "$2/ex")
  first=$(temporaries "$2")
  "$1" export --scenario CV-1 --variant 32x32 --seed 1 --output "$2/ex" >/dev/null 2>&1
  echo "$how; left: $first; after a successful export into the same folder (exit $?): $(temporaries "$2")"
}

case_d11_baseline() {
  bench "$1" "$2/one" reference || {
    echo "bench failed"
    return
  }
  mkdir -p "$2/bl/B"
  echo half >"$2/bl/B/NLP-1__128__reference.json.tmp.$dead.QwErTy"
  echo half >"$2/bl/x.json.tmp.$dead.QwErTy"
  local saved
  saved=$(say "saved|error" "$1" baseline save B --from "$2/one/ci" --baseline-dir "$2/bl")
  echo "save $saved; dead writer's temporaries left: $(temporaries "$2/bl")"
}

case_d12() {
  "$1" export --scenario CV-1 --variant 32x32 --seed 1 --output "$2/ex" >/dev/null 2>&1 || {
    echo "export failed"
    return
  }
  cp -r "$2/ex" "$2/seed1"
  local how seed changed
  how=$(kill_when landed "$2/ex" -- "$1" export --scenario CV-1 --variant 32x32 --seed 2 --output "$2/ex")
  seed=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seed"])' "$2/ex/plan.json" 2>/dev/null)
  changed=$(cd "$2/ex" && for f in *; do cmp -s "$f" "../seed1/$f" || printf '%s ' "$f"; done)
  echo "$how; plan.json says seed ${seed:-?}; files not seed 1's: ${changed:-none}"
}

# The first bench (CV-1, a few seconds) runs to its end; the second (NLP-1,
# under a second) starts once the first has made the records folder.
case_n4() {
  "$1" bench --scenarios CV-1 --adapters reference --warmup 1 --batches 200 --repetitions 32 --no-probes --quiet \
    --output-dir "$2/shared" >/dev/null 2>&1 &
  local first=$! second waited=0 alive=no records described
  until [ -d "$2/shared/ci" ] || [ $waited -ge 400 ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
  second=$(say "^[0-9]+ runs?,|rror" "$1" bench --scenarios NLP-1 --adapters reference --warmup 1 --batches 2 \
    --repetitions 1 --no-probes --quiet --output-dir "$2/shared")
  kill -0 "$first" 2>/dev/null && alive=yes
  wait "$first"
  records=$(find "$2/shared/ci" -name '*.json' -printf '%f\n' 2>/dev/null | sort | paste -sd, -)
  described=$(grep -o -E "CV-1|NLP-1" "$2/shared/ci/summary.md" 2>/dev/null | sort -u | paste -sd, -)
  echo "first still running when the second ended: $alive; the folder then holds ${records:-no record}, and summary.md names ${described:-nothing}; second bench $second"
}

# edited_record SLUICE DIR PYTHON: a record of a tiny bench, changed by the
# Python expression PYTHON (on its text, t), alone in DIR/edited.
edited_record() {
  bench "$1" "$2/one" reference || return 1
  mkdir -p "$2/edited"
  python3 -c 'import re, sys
t = open(sys.argv[1]).read()
t = '"$3"'
open(sys.argv[2], "w").write(t)' "$2/one/ci/NLP-1__128__reference.json" "$2/edited/NLP-1__128__reference.json"
}

case_d19() {
  edited_record "$1" "$2" 're.sub(r"\"elements\":\s*\d+", "\"elements\":\t-100", t)' || {
    echo "no record"
    return
  }
  echo "summary $(say "^NLP-1|sluice summary" "$1" summary "$2/edited")"
}

case_n2() {
  edited_record "$1" "$2" 't.replace("{", "{\n\t\"scenario\":\t\"DUP\",\n\t\"outcome\":\t\"failed\",", 1)' || {
    echo "no record"
    return
  }
  local python
  python=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["scenario"], r["outcome"])' \
    "$2/edited/NLP-1__128__reference.json")
  echo "Python json reads '$python'; sluice summary $(say "^DUP|^NLP-1|sluice summary" "$1" summary "$2/edited")"
}

case_d18_version() { say '' "$1" --version extra; }
case_d18_help() { say '' "$1" help bench extra; }
case_d18_workers() {
  say '^[0-9]+ runs?,|rror' "$1" bench --scenarios NLP-1 --adapters reference --warmup 1 --batches 2 --repetitions 1 \
    --no-probes --quiet --output-dir "$2/w" --workers -0
}
case_d18_warmup() {
  say '^[0-9]+ runs?,|rror' "$1" bench --scenarios NLP-1 --adapters reference --warmup -0 --batches 2 --repetitions 1 \
    --no-probes --quiet --output-dir "$2/w"
}
case_d18_baseline() {
  bench "$1" "$2/one" reference
  mkdir -p "$2/bl"
  say 'etc|letters|rror|^[0-9]+ rows' "$1" check --baseline ../../../etc --baseline-dir "$2/bl" --records "$2/one/ci"
}

# The audit's output became a folder (DIR/audit.json + MANIFEST.json) after
# hardening-3; the binary's --help says which form it writes.
case_audit_rows() {
  local out=$2/a edited=$2/edited file
  if "$1" audit --help 2>&1 | grep -q -- "--output FILE"; then
    "$1" audit --scenarios NLP-1 --seeds 42 --epochs 1 --batches 1 --output "$out.json" >/dev/null 2>&1
    cp "$out.json" "$edited.json"
    out=$out.json edited=$edited.json file=$edited
  else
    "$1" audit --scenarios NLP-1 --seeds 42 --epochs 1 --batches 1 --output "$out" >/dev/null 2>&1
    cp -r "$out" "$edited"
    file=$edited/audit.json
  fi
  [ -e "$out" ] || {
    echo "audit failed"
    return
  }
  # One hex digit of the first row digest changed, its field digest kept.
  python3 - "$file" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
row = re.search(r'"rows":\s*"([0-9a-f])', text)
digit = "1" if row.group(1) == "0" else "0"
open(sys.argv[1], "w").write(text[:row.start(1)] + digit + text[row.end(1):])
EOF
  echo "compare $(say 'identical|differ|row|audit.json|error|same' "$1" audit --compare "$out" "$edited")"
}

# source_of SLUICE: the source tree the binary's build folder was set up from.
source_of() {
  python3 -c 'import json, os, sys
info = os.path.join(os.path.dirname(os.path.dirname(sys.argv[1])), "meson-info", "meson-info.json")
print(json.load(open(info))["directories"]["source"])' "$1" 2>/dev/null
}

# configure_with SLUICE DIR C_ARGS: configures a throwaway build folder of
# the binary's source tree with clang and C_ARGS, and says what meson said.
configure_with() {
  local tree said
  tree=$(source_of "$1")
  [ -n "$tree" ] || {
    echo "source tree not found"
    return
  }
  said=$(say 'ERROR|Build targets' env CC=clang meson setup "$2/build" "$tree" -Dtests=false -Dcuda=disabled \
    -Dmpi=disabled "-Dc_args=$3")
  echo "configure ${said/: *ERROR: /: ERROR: }"
}
case_f1_fast() { configure_with "$1" "$2" "-ffp-model=fast"; }
case_f1_no_nans() { configure_with "$1" "$2" "-Xclang -menable-no-nans"; }
case_f1_contract() {
  printf '#pragma STDC FP_CONTRACT ON\n' >"$2/contract_on.h"
  configure_with "$1" "$2" "-include $2/contract_on.h"
}

# row ID COMMAND CASE: runs CASE on each binary, each in a fresh folder, and
# prints the table's row, with the scratch folder's path left out.
rows=0
row() {
  local id=$1 command=$2 fn=$3 b a
  rows=$((rows + 1))
  mkdir -p "$scratch/before/$rows" "$scratch/after/$rows"
  b=$(cd "$scratch/before/$rows" && "$fn" "$before" "$scratch/before/$rows")
  a=$(cd "$scratch/after/$rows" && "$fn" "$after" "$scratch/after/$rows")
  b=${b//$scratch\/before\/$rows\//} a=${a//$scratch\/after\/$rows\//}
  # shellcheck disable=SC2016 # the backquotes are Markdown's, not the shell's.
  printf '| %s | `%s` | %s | %s |\n' "$id" "$command" "$(one_line "$b")" "$(one_line "$a")"
}

echo "| defect | reproducer | before | after |"
echo "|---|---|---|---|"
row D10 "baseline save B (2 records), then save B from 1 record" case_d10_resave
row D10 "baseline save B (a run of 4 scenarios) SIGKILLed once a record is written, then check --baseline B" case_d10_killed
row D11 "export SIGKILLed once its temporary exists, then the same export again" case_d11_export
row D11 "baseline save B beside a dead writer's temporaries" case_d11_baseline
row D12 "export seed 1, re-export seed 2 SIGKILLed once a file is in place" case_d12
row N4 "bench NLP-1 into the records folder a running bench of CV-1 writes" case_n4
row D19 "summary of a record with \"elements\": -100" case_d19
row N2 "summary of a record with scenario and outcome given twice" case_n2
row D18 "sluice --version extra" case_d18_version
row D18 "sluice help bench extra" case_d18_help
row D18 "bench ... --workers -0" case_d18_workers
row D18 "bench ... --warmup -0" case_d18_warmup
row D18 "check --baseline ../../../etc --baseline-dir bl" case_d18_baseline
row audit "audit --compare with one row digest changed, field digest kept" case_audit_rows
if [ "${SKIP_CONFIGURE:-0}" != 1 ]; then
  row F1 "CC=clang meson setup -Dc_args=-ffp-model=fast" case_f1_fast
  row F1 "CC=clang meson setup '-Dc_args=-Xclang -menable-no-nans'" case_f1_no_nans
  row F1 "CC=clang meson setup '-Dc_args=-include contract_on.h' (#pragma STDC FP_CONTRACT ON)" case_f1_contract
fi
