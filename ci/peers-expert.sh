#!/usr/bin/env bash
# Each tuned peer against its framework's expert form (docs/peers.md, "Each
# tuned peer against its framework's expert form"), per form: the expert's
# few lines and the peer's own make_batches timed outside the protocol in
# one process (ci/peers-expert.py --peer), then both through the protocol
# as sluice ranks them, in ROUNDS interleaved rounds (default 5) of `sluice
# bench --rounds` at the full profile (ci/peers-expert.py is then a loader
# of one's own, peer:ci/peers-expert.py). Prints the median batch times,
# the peer's over the expert's per round, the load and each record's CPU
# wait. The forms: peer:torch on CV-1, peer:numpy on PC-1 depth1 and on
# NLP-1, peer:jax and peer:tfdata on CV-1, peer:grain on NLP-1 (those three
# with .venv-peers, or SLUICE_PEER_PYTHON; a form whose framework is not
# installed is skipped with the command that installs it). FORMS=jax-cv1,...
# runs only those. A person runs it (minutes); the tests never do.
#
#   ci/peers-expert.sh BUILD_DIR OUT_DIR [ROUNDS]
set -euo pipefail
build=${1:?usage: ci/peers-expert.sh BUILD_DIR OUT_DIR [ROUNDS]}
out=${2:?usage: ci/peers-expert.sh BUILD_DIR OUT_DIR [ROUNDS]}
rounds=${3:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
sluice="$build/tools/sluice"
# The Pythons sluice runs the peers with (adapters/peers.c).
numpy_python=${SLUICE_PYTHON:-/usr/bin/python3}
torch_python=${SLUICE_TORCH_PYTHON:-}
if [ -z "$torch_python" ]; then
  torch_python=$numpy_python
  [ -x "$here/.venv-torch/bin/python" ] && torch_python=$here/.venv-torch/bin/python
fi
venv_python=${SLUICE_PEER_PYTHON:-$here/.venv-peers/bin/python}
# form:scenario:variant:peer:python
all_forms=("torch-cv1:CV-1:32x32:peer:torch:$torch_python" "numpy-pc1:PC-1:depth1:peer:numpy:$numpy_python"
  "numpy-nlp1:NLP-1:128:peer:numpy:$numpy_python" "jax-cv1:CV-1:32x32:peer:jax:$venv_python"
  "tfdata-cv1:CV-1:32x32:peer:tfdata:$venv_python" "grain-nlp1:NLP-1:128:peer:grain:$venv_python")
forms=()
for f in "${all_forms[@]}"; do
  IFS=: read -r form _ _ _ name python <<<"$f"
  case ",${FORMS:-$form}," in *",$form,"*) ;; *) continue ;; esac
  module=$name
  [ "$name" = tfdata ] && module=tensorflow
  if ! "$python" -c "import $module" 2>/dev/null; then
    echo "peers-expert: $form skipped: $python has no $module (ci/install-peers.sh $name)" >&2
    continue
  fi
  forms+=("$f")
done
[ ${#forms[@]} -gt 0 ] || { echo "peers-expert: no form to run" >&2; exit 1; }
mkdir -p "$out"
for f in "${forms[@]}"; do
  IFS=: read -r form id variant _ _ _ <<<"$f"
  [ -d "$out/export-$id" ] || "$sluice" export --profile full --scenario "$id" --variant "$variant" \
    --output "$out/export-$id" >/dev/null
done
: >"$out/outside.jsonl"
for f in "${forms[@]}"; do
  IFS=: read -r form id variant p1 p2 python <<<"$f"
  "$python" "$here/ci/peers-expert.py" "$form" "$out/export-$id" --peer >>"$out/outside.jsonl"
  EXPERT_FORM=$form SLUICE_PYTHON=$python "$sluice" bench --profile full --scenarios "$id" --variants "$variant" \
    --adapters "$p1:$p2,peer:$here/ci/peers-expert.py" --rounds "$rounds" --quiet --output-dir "$out/$form" \
    >"$out/$form.log" 2>&1 || true
done
"$numpy_python" "$here/ci/peers-expert.py" --summary "$out" "${forms[@]}" | tee "$out/results.md"
