#!/bin/sh
# Installs Weights & Biases for the optional history export
# (ci/history-wandb.py, docs/history.md) into <repo>/.venv-wandb, pinned.
# Never needed by the default tests or by any other command: the export
# writes W&B offline runs to disk, and syncing them (`wandb sync`) is the
# user's step. VENV=<dir> puts the environment elsewhere.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$here/.venv-wandb}
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check wandb==0.31.0
"$venv/bin/python" -c 'import wandb; print("wandb", wandb.__version__, "in", "'"$venv"'")'
