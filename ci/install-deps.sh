#!/usr/bin/env bash
# Installs the Debian packages sluice builds and tests with, only those that
# are missing, so that a second run needs no network. Run as root (or with
# sudo available) on Debian 12 or later.
set -euo pipefail

packages=(
  gcc clang clang-format meson ninja-build pkg-config git python3 binutils
  libcriterion-dev libcjson-dev libxxhash-dev libopenblas-dev
  gcovr
  # DIST-1 and DIST-2 run one rank per process under mpirun (docs/distributed.md).
  openmpi-bin libopenmpi-dev
  # The report's charts (docs/report.md): without gnuplot the README's main
  # job writes a report with no charts at all.
  gnuplot-nox
  # The gate's counts (ci/gate.sh): callgrind, and its client requests'
  # header for sluice bench --instrument.
  valgrind
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
echo "sluice: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
