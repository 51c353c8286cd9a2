#!/usr/bin/env bash
# Lints and format-checks the Python (peers/ and ci/*.py) with ruff, as
# ruff.toml configures it. Exits 1 when either check fails, printing what to
# change. Part of the README's test command (ci/test.sh).
#   ci/ruff.sh          ruff check, then ruff format --check
#   ci/ruff.sh --fix    ruff check --fix and ruff format, in place
#
# ruff is the version ci/ruff.txt pins, installed from PyPI into a virtual
# environment of its own, made once per version with Debian's Python:
# ${XDG_CACHE_HOME:-~/.cache}/sluice/ruff-<version> (SLUICE_RUFF_VENV names
# another). python3-venv is installed from Debian when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
pin=$(grep -v '^#' ci/ruff.txt)
venv=${SLUICE_RUFF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/${pin/==/-}}
ruff="$venv/bin/ruff"
if [ ! -x "$ruff" ]; then
  if ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
      sudo_cmd=(sudo)
    fi
    echo "ruff: installing python3-venv" >&2
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >&2
  fi
  echo "ruff: installing $pin into $venv" >&2
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r ci/ruff.txt >&2
fi
if [ "${1:-}" = --fix ]; then
  "$ruff" check --fix .
  "$ruff" format .
  exit 0
fi
status=0
"$ruff" check . || status=1
"$ruff" format --check --diff . || status=1
if [ "$status" -ne 0 ]; then
  echo "ruff: the Python above does not pass ruff.toml's checks; ci/ruff.sh --fix applies what ruff can" >&2
fi
exit "$status"
