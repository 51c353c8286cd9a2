#!/usr/bin/env bash
# Outputs whole or absent (docs/robustness.md): baselines and exports are
# replaced whole, never mixed with what was there; a folder without its
# manifest is refused; every command that writes sweeps what dead
# processes left where it writes; two benches never share a records
# folder; and the command-line leftovers of the review exit 2. Each case
# is one of the review's reproducers (D10, D11, D12, N4, D18). TAP output.
set -u
sluice=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/tap.sh"
check() { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

# A pid no process has: a child that already exited.
sh -c 'exit 0' &
dead=$!
wait "$dead"

# whole DIR: the folder's MANIFEST.json lists exactly its files (what peers
# also hold an export to), each with its size. Python's json, not sluice,
# reads it: an independent reader.
whole() {
  python3 - "$1" <<'EOF'
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "MANIFEST.json")))
files = {f["name"]: f["bytes"] for f in m["files"]}
assert m["count"] == len(m["files"]), "count"
present = set(os.listdir(d)) - {"MANIFEST.json"}
assert present == set(files), "listed %s, present %s" % (sorted(files), sorted(present))
for name, size in files.items():
    assert os.stat(os.path.join(d, name)).st_size == size, name
EOF
}

bench() { "$sluice" bench --warmup 1 --batches 2 --repetitions 1 --no-probes --quiet "$@" >/dev/null 2>&1; }

# --- D10: a baseline is replaced whole, and one without its manifest is refused.
bench --scenarios NLP-1 --adapters reference,fused --output-dir "$work/two"
bench --scenarios NLP-1 --adapters reference --output-dir "$work/one"
expect 0 "saved 2 records" "a baseline of two records" -- baseline save B --from "$work/two/ci" --baseline-dir "$work/bl"
expect 0 "saved 1 records" "the same name saved again from one record" -- baseline save B --from "$work/one/ci" \
  --baseline-dir "$work/bl"
check "saving a name again replaces it: one record and the manifest, nothing of the first save" \
  '[ "$(ls "$work/bl/B" | wc -l)" -eq 2 ] && [ -f "$work/bl/B/MANIFEST.json" ] && whole "$work/bl/B"' \
  "$(ls "$work/bl/B")"
# One run a side cannot tell (exit 3, docs/gate.md): the check read the
# baseline whole when it gets that far; one it could not read is exit 1.
expect 3 "1 rows: " "a whole baseline is used" -- check --baseline B --baseline-dir "$work/bl" \
  --records "$work/one/ci"
# What an interrupted save used to leave: records without a manifest.
mkdir -p "$work/bl/C"
cp "$work/two/ci/"NLP-1__128__*.json "$work/bl/C/"
expect 1 "MANIFEST.json" "a baseline without a manifest is refused, naming it" -- check --baseline C \
  --baseline-dir "$work/bl" --records "$work/one/ci"
cp "$work/two/ci/NLP-1__128__fused.json" "$work/bl/B/"
expect 1 "NLP-1__128__fused.json" "a record dropped into a baseline by hand is refused, naming it" -- \
  check --baseline B --baseline-dir "$work/bl" --records "$work/one/ci"
rm "$work/bl/B/NLP-1__128__fused.json"
mkdir -p "$work/bl/mine" && echo notes >"$work/bl/mine/notes.txt"
expect 1 "notes.txt" "a folder of someone's files is never replaced by a save" -- baseline save mine \
  --from "$work/one/ci" --baseline-dir "$work/bl"
check "and it is left as it was" '[ -f "$work/bl/mine/notes.txt" ]'

# --- D11: each command that writes sweeps the temporaries of dead processes
# where it writes, and leaves a live process's alone.
mkdir -p "$work/bl/B.tmp.$dead.AbCdEf" "$work/bl/B.tmp.$$.AbCdEf"
echo half >"$work/bl/B.tmp.$dead.AbCdEf/NLP-1__128__fused.json"
echo half >"$work/bl/x.json.tmp.$dead.QwErTy"
expect 0 "saved" "baseline save after a killed one" -- baseline save B --from "$work/one/ci" --baseline-dir "$work/bl"
check "baseline save swept the dead save's folder and file, not the live one's" \
  '[ ! -e "$work/bl/B.tmp.$dead.AbCdEf" ] && [ ! -e "$work/bl/x.json.tmp.$dead.QwErTy" ] && [ -d "$work/bl/B.tmp.$$.AbCdEf" ]'
mkdir -p "$work/ex.tmp.$dead.AbCdEf"
head -c 4096 /dev/zero >"$work/ex.tmp.$dead.AbCdEf/image.npy.tmp.$dead.ZxCvBn"
expect 0 "exported" "export after a killed one" -- export --scenario CV-1 --variant 32x32 --seed 1 --output "$work/ex"
check "export swept the dead export's folder and partial .npy" '[ ! -e "$work/ex.tmp.$dead.AbCdEf" ]'
mkdir -p "$work/audit/a.tmp.$dead.AbCdEf" && echo half >"$work/audit/a.tmp.$dead.AbCdEf/audit.json"
expect 0 "manifest in" "audit --output after a killed one" -- audit --scenarios NLP-1 --seeds 42 --epochs 1 \
  --batches 1 --output "$work/audit/a"
check "audit --output swept the dead audit's staged folder" '[ ! -e "$work/audit/a.tmp.$dead.AbCdEf" ]'
mkdir -p "$work/golden.tmp.$dead.AbCdEf"
expect 0 "new" "bless after a killed one" -- bless --scenarios NLP-1 --golden-dir "$work/golden"
check "bless swept the dead bless's folder, and the golden set is whole" \
  '[ ! -e "$work/golden.tmp.$dead.AbCdEf" ] && whole "$work/golden"'
mkdir -p "$work/rep" && echo half >"$work/rep/report.md.tmp.$dead.AbCdEf"
expect 0 "" "report after a killed one" -- report "$work/one/ci" --output "$work/rep"
check "report swept the dead report's temporary" '[ ! -e "$work/rep/report.md.tmp.$dead.AbCdEf" ]'

# --- Item 1 for audits: an audit's output is a folder written whole like
# the others, and every such folder says where it came from, the command
# included; --compare refuses a folder that is not whole, naming it.
# origin DIR WORDS: DIR's manifest names a commit and a machine, and its
# command is the sluice command line that was run (WORDS, as typed).
origin() {
  python3 - "$@" <<'EOF'
import json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "MANIFEST.json")))["origin"]
assert m["commit"] and m["machine"] and m["machine"] != "unknown", m
assert m["command"].startswith("sluice " + sys.argv[2]), m["command"]
EOF
}
check "a baseline's manifest says the command that saved it" 'origin "$work/bl/B" "baseline save B --from"'
check "an export's manifest says the command that wrote it" 'origin "$work/ex" "export --scenario CV-1"'
check "the golden set's manifest says the command that blessed it" 'origin "$work/golden" "bless --scenarios NLP-1"'
check "an audit is a whole folder: audit.json and its manifest" \
  'whole "$work/audit/a" && [ "$(ls "$work/audit/a" | tr "\n" " ")" = "MANIFEST.json audit.json " ]' \
  "$(ls "$work/audit/a")"
check "an audit's manifest says the command that wrote it" 'origin "$work/audit/a" "audit --scenarios NLP-1"'
expect 0 "identical" "a whole audit folder compares equal to itself" -- audit --compare "$work/audit/a" \
  "$work/audit/a"
cp -r "$work/audit/a" "$work/audit/bare" && rm "$work/audit/bare/MANIFEST.json"
expect 1 "$work/audit/bare" "an audit folder without its manifest is refused, naming it" -- \
  audit --compare "$work/audit/a" "$work/audit/bare"
# One row digest changed in place (the same size): only the manifest's
# XXH3-64 can tell, and the comparison must not read the file as valid.
cp -r "$work/audit/a" "$work/audit/edited"
python3 - "$work/audit/edited/audit.json" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
row = re.search(r'"rows":\s*"([0-9a-f])', text)
digit = "1" if row.group(1) == "0" else "0"
open(sys.argv[1], "w").write(text[:row.start(1)] + digit + text[row.end(1):])
EOF
expect 1 "audit.json" "an audit folder whose audit.json changed after it was written is refused, naming it" -- \
  audit --compare "$work/audit/edited" "$work/audit/a"
cp "$work/audit/a/audit.json" "$work/audit/old.json"
expect 1 "regenerate it with" "an audit written before its output was a folder is refused, saying how to regenerate" \
  -- audit --compare "$work/audit/old.json" "$work/audit/a"
expect 1 "not a folder" "an audit never replaces a plain file at its output" -- audit --scenarios NLP-1 --seeds 42 \
  --epochs 1 --batches 1 --output "$work/audit/old.json"
check "and the file is left as it was" 'cmp -s "$work/audit/old.json" "$work/audit/a/audit.json"'

# --- Item 1, killed for real: baseline save, bless and audit --output
# killed with SIGKILL while their staged folder is being written leave the
# previous folder whole and as it was, its readers take it, and the next
# command that writes there sweeps the killed one's staged folder.
# kill_mid_write TARGET DELAY -- ARGS: runs sluice ARGS, polls (without
# sleeping: a baseline save takes milliseconds) until its staged folder
# TARGET.tmp.<pid>.* exists, waits DELAY seconds and SIGKILLs it; succeeds
# when the kill landed before the folder was put in place.
kill_mid_write() {
  local target=$1 delay=$2
  shift 3
  python3 - "$target" "$delay" "$sluice" "$@" <<'EOF'
import glob, signal, subprocess, sys, time
target, delay, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
staged = "%s.tmp.%d.*" % (glob.escape(target), child.pid)
while child.poll() is None and not glob.glob(staged):
    pass
time.sleep(delay)
child.send_signal(signal.SIGKILL)
child.wait()
sys.exit(0 if glob.glob(staged) else 1)
EOF
}
# digests DIR: every file of DIR with its MD5, to show a folder unchanged.
digests() { (cd "$1" && md5sum * | sort); }
# old_or_new DIR BEFORE NEW: DIR is whole, and is either as it was (its
# digests are BEFORE) or the complete new folder (the command NEW holds):
# a kill that lands after the swap, while the old contents are being
# removed, leaves the new one in place, which is also whole.
old_or_new() { whole "$1" && { [ "$(digests "$1")" = "$2" ] || eval "$3"; }; }

landed=0
for delay in 0 0 0.001 0.003; do
  before=$(digests "$work/bl/B")
  kill_mid_write "$work/bl/B" "$delay" -- baseline save B --from "$work/two/ci" --baseline-dir "$work/bl" &&
    landed=$((landed + 1))
  check "a baseline save killed ${delay}s into its staged write leaves the old baseline or the new, whole" \
    'old_or_new "$work/bl/B" "$before" "[ -f \"$work/bl/B/NLP-1__128__fused.json\" ]"' "$(ls "$work/bl/B")"
done
check "at least one kill landed while the baseline was being written" '[ "$landed" -ge 1 ]'
expect 3 "1 rows: " "the old baseline is read as valid after the kills" -- check --baseline B \
  --baseline-dir "$work/bl" --records "$work/one/ci"
expect 0 "saved 2 records" "the next save" -- baseline save B --from "$work/two/ci" --baseline-dir "$work/bl"
# B.tmp.$$.AbCdEf stands for a live writer's (D11, above) and must stay.
check "which swept the killed saves' staged folders and put the new baseline whole" \
  '[ -z "$(ls -d "$work/bl/B.tmp."* | grep -v "B.tmp.$$.AbCdEf")" ] && whole "$work/bl/B"' "$(ls "$work/bl")"

landed=0
for delay in 0 0.05 0.2; do
  before=$(digests "$work/golden")
  kill_mid_write "$work/golden" "$delay" -- bless --scenarios NLP-1,CV-1 --golden-dir "$work/golden" &&
    landed=$((landed + 1))
  check "a bless killed ${delay}s into its staged write leaves the old golden set or the new, whole" \
    'old_or_new "$work/golden" "$before" "compgen -G \"$work/golden/CV-1__*\" >/dev/null"' "$(ls "$work/golden")"
done
check "at least one kill landed while the golden set was being written" '[ "$landed" -ge 1 ]'
expect 0 "0 changed, 1 unchanged" "the old goldens are read as valid after the kills" -- bless --scenarios NLP-1 \
  --golden-dir "$work/golden"
check "and that bless swept the killed ones' staged folders" '! compgen -G "$work/golden.tmp.*" >/dev/null'

landed=0
for delay in 0 0.05; do
  before=$(digests "$work/audit/a")
  kill_mid_write "$work/audit/a" "$delay" -- audit --scenarios NLP-1,CV-1 --seeds 42,7 --epochs 1 --batches 2 \
    --output "$work/audit/a" && landed=$((landed + 1))
  check "an audit killed ${delay}s after it staged its folder leaves the old one or the new, whole" \
    'old_or_new "$work/audit/a" "$before" "grep -q CV-1 \"$work/audit/a/audit.json\""' "$(ls "$work/audit/a")"
done
check "at least one kill landed while the audit was running" '[ "$landed" -ge 1 ]'
expect 0 "identical" "the old audit is read as valid after the kills" -- audit --compare "$work/audit/a" \
  "$work/audit/a"
expect 0 "manifest in" "the next audit" -- audit --scenarios NLP-1 --seeds 42 --epochs 1 --batches 1 \
  --output "$work/audit/a"
check "which swept the killed audits' staged folders" '! compgen -G "$work/audit/a.tmp.*" >/dev/null'

# --- D12: a re-export killed at any moment leaves one whole export, the old
# or the new, never new data beside the old plan.
# Each kill waits until the export's staged folder exists (so it lands while
# the export writes, whatever the machine's speed), then a little longer each
# time; at least one must land before the export ends, or this proves nothing.
interrupted=0
for delay in 0 0.02 0.05 0.1; do
  "$sluice" export --scenario CV-1 --variant 32x32 --seed 2 --output "$work/ex" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    compgen -G "$work/ex.tmp.$pid.*" >/dev/null || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.01
  done
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  compgen -G "$work/ex.tmp.$pid.*" >/dev/null && interrupted=$((interrupted + 1))
  check "an export killed ${delay}s after it began writing is whole (the old one or the new)" 'whole "$work/ex"' \
    "$(ls "$work/ex")"
done
check "at least one kill landed while the export was being written" '[ "$interrupted" -ge 1 ]'

expect 0 "exported" "the next export" -- export --scenario CV-1 --variant 32x32 --seed 3 --output "$work/ex"
check "after it, only the export it wrote is left" \
  '[ "$(ls -d "$work"/ex* | wc -l)" -eq 1 ] && grep -q "\"seed\":[[:space:]]*\"3\"" "$work/ex/plan.json" && whole "$work/ex"'

# --- N4: two benches never write one records folder at once.
"$sluice" bench --scenarios CV-1 --adapters reference --warmup 1 --batches 200 --repetitions 32 --no-probes --quiet \
  --output-dir "$work/shared" >/dev/null 2>&1 &
first=$!
waited=0
until grep -q "pid $first" "$work/shared/ci/.sluice.lock" 2>/dev/null || [ $waited -ge 600 ]; do
  sleep 0.05
  waited=$((waited + 1))
done
expect 1 "pid $first" "a second bench into the same folder is refused, naming the first" -- bench \
  --scenarios NLP-1 --adapters reference --warmup 1 --batches 2 --repetitions 1 --output-dir "$work/shared" --quiet
kill -TERM "$first" 2>/dev/null
wait "$first" 2>/dev/null
expect 0 "" "once the first is gone, the folder takes a bench again" -- bench --scenarios NLP-1 \
  --adapters reference --warmup 1 --batches 2 --repetitions 1 --no-probes --output-dir "$work/shared" --quiet

# --- D18: leftovers on the command line exit 2, and a baseline name means
# the same folder to save and to check.
expect 2 "extra" "--version with an argument after it" -- --version extra
expect 2 "extra" "help of a command with an argument after it" -- help bench extra
expect 2 "--workers" "--workers -0 is not decimal digits" -- bench --workers -0
expect 2 "--warmup" "--warmup -0 is not decimal digits" -- bench --warmup -0
expect 2 "must be letters" "check refuses the baseline names save refuses" -- check --baseline ../../../etc \
  --baseline-dir "$work/bl"

# --- N2 on the Python side: a peer reads its plan as sluice's readers read
# any JSON, refusing a key given twice (Python's json would keep the last).
printf '{"format": "sluice-peer-plan", "version": 2, "version": 1}' >"$work/twice.json"
check "the peers' JSON reader refuses a key given twice" \
  'python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import sluice_peer; sluice_peer.load_json(sys.argv[2])" \
    "$(dirname "$0")/../../peers" "$work/twice.json" 2>&1 | grep -q "appears twice"'

echo "1..$n"
[ "$failed" -eq 0 ]
