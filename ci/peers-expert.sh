#!/usr/bin/env bash
# Each tuned peer against its framework's expert form (docs/peers.md, "Each
# tuned peer against its framework's expert form"): ROUNDS interleaved
# rounds (default 3; the forms' order reversed every other round), each
# running, per form, ci/peers-expert.py (the expert's few lines, then the
# peer's own make_batches in the same process, both outside the protocol)
# and then `sluice bench` on the peer at the full profile (the peer through
# the protocol, as it is ranked). Prints, per round, the three median batch
# times, the peer's over the expert's, the load and the bench run's CPU
# wait. The forms: peer:torch on CV-1, peer:numpy on PC-1 depth1 and on
# NLP-1. A person runs it (minutes); the tests never do.
#
#   ci/peers-expert.sh BUILD_DIR OUT_DIR [ROUNDS]
set -euo pipefail
build=${1:?usage: ci/peers-expert.sh BUILD_DIR OUT_DIR [ROUNDS]}
out=${2:?usage: ci/peers-expert.sh BUILD_DIR OUT_DIR [ROUNDS]}
rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
sluice="$build/tools/sluice"
# The Pythons sluice runs the peers with (adapters/peers.c).
numpy_python=${SLUICE_PYTHON:-/usr/bin/python3}
torch_python=${SLUICE_TORCH_PYTHON:-}
if [ -z "$torch_python" ]; then
  torch_python=$numpy_python
  [ -x "$here/.venv-torch/bin/python" ] && torch_python=$here/.venv-torch/bin/python
fi
# form:scenario:variant:peer:python
forms=("torch-cv1:CV-1:32x32:peer:torch:$torch_python" "numpy-pc1:PC-1:depth1:peer:numpy:$numpy_python"
  "numpy-nlp1:NLP-1:128:peer:numpy:$numpy_python")
mkdir -p "$out"
for f in "${forms[@]}"; do
  IFS=: read -r form id variant _ _ _ <<<"$f"
  [ -d "$out/export-$id" ] || "$sluice" export --profile full --scenario "$id" --variant "$variant" \
    --output "$out/export-$id" >/dev/null
done
: >"$out/rounds.jsonl"
for r in $(seq 1 "$rounds"); do
  order=("${forms[@]}")
  if [ $((r % 2)) = 0 ]; then
    order=()
    for ((i = ${#forms[@]} - 1; i >= 0; i--)); do order+=("${forms[i]}"); done
  fi
  for f in "${order[@]}"; do
    IFS=: read -r form id variant p1 p2 python <<<"$f"
    peer="$p1:$p2"
    expert=$("$python" "$here/ci/peers-expert.py" "$form" "$out/export-$id" --peer)
    rec="$out/round$r-$form"
    "$sluice" bench --profile full --scenarios "$id" --variants "$variant" --adapters "$peer" --repetitions 1 \
      --quiet --output-dir "$rec" >"$rec.log" 2>&1 || true
    python3 - "$expert" "$rec/full/${id}__${variant}__${peer}.json" "$r" "$peer" >>"$out/rounds.jsonl" <<'EOF'
import json, sys
row = json.loads(sys.argv[1])
record = json.load(open(sys.argv[2]))
env = record["environment"]
row.update(round=int(sys.argv[3]), peer=sys.argv[4], outcome=record["outcome"], equivalence=record["equivalence"],
           peer_p50_us=record["p50_ns"] / 1000, cpu_wait_fraction=env["cpu_wait_fraction"],
           bench_load=[env["load_start"], env["load_end"]])
print(json.dumps(row))
EOF
  done
done
python3 - "$out/rounds.jsonl" <<'EOF' | tee "$out/results.md"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| round | form | framework | expert (µs) | peer's code (µs) | peer in sluice (µs) | sluice ÷ expert | code ÷ expert | load (1 min) | bench CPU wait | verified |")
print("|---|---|---|---:|---:|---:|---:|---:|---|---:|---|")
for r in sorted(rows, key=lambda r: (r["form"], r["round"])):
    print("| %d | %s (%s) | %s | %.1f | %.1f | %.1f | %.2fx | %.2fx | %s | %.2f | %s %s |" % (
        r["round"], r["form"], r["peer"], r["framework"], r["expert_p50_us"], r["peer_code_p50_us"], r["peer_p50_us"],
        r["peer_p50_us"] / r["expert_p50_us"], r["peer_code_p50_us"] / r["expert_p50_us"], r["load"][0],
        r["cpu_wait_fraction"], r["outcome"], r["equivalence"]))
for form in sorted({r["form"] for r in rows}):
    ratios = sorted(r["peer_p50_us"] / r["expert_p50_us"] for r in rows if r["form"] == form)
    print("\n%s: peer in sluice ÷ expert, median %.2fx over %d rounds (%.2fx to %.2fx)" % (
        form, ratios[len(ratios) // 2], len(ratios), ratios[0], ratios[-1]), end="")
print()
EOF
