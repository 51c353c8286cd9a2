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
expect 0 "1 rows: " "a whole baseline is used" -- check --baseline B --baseline-dir "$work/bl" \
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
mkdir -p "$work/audit" && echo half >"$work/audit/a.json.tmp.$dead.AbCdEf"
expect 0 "manifest in" "audit --output after a killed one" -- audit --scenarios NLP-1 --seeds 42 --epochs 1 \
  --batches 1 --output "$work/audit/a.json"
check "audit --output swept the dead audit's temporary" '[ ! -e "$work/audit/a.json.tmp.$dead.AbCdEf" ]'
mkdir -p "$work/golden.tmp.$dead.AbCdEf"
expect 0 "new" "bless after a killed one" -- bless --scenarios NLP-1 --golden-dir "$work/golden"
check "bless swept the dead bless's folder, and the golden set is whole" \
  '[ ! -e "$work/golden.tmp.$dead.AbCdEf" ] && whole "$work/golden"'
mkdir -p "$work/rep" && echo half >"$work/rep/report.md.tmp.$dead.AbCdEf"
expect 0 "" "report after a killed one" -- report "$work/one/ci" --output "$work/rep"
check "report swept the dead report's temporary" '[ ! -e "$work/rep/report.md.tmp.$dead.AbCdEf" ]'

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
