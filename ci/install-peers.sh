#!/bin/sh
# Installs the peer loaders sluice compares itself with (docs/peers.md).
# From Debian: numpy, xxhash and PyTorch (Debian's torch is CPU-only, where
# PyPI's wheel would drag in CUDA libraries this machine does not use). The
# peers run with /usr/bin/python3 unless SLUICE_PYTHON says otherwise.
# Run as root (or through sudo) on Debian 12 or a derivative.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 python3-numpy python3-xxhash python3-torch
/usr/bin/python3 -c 'import numpy, xxhash, torch; print("numpy", numpy.__version__, "xxhash", xxhash.VERSION, "torch", torch.__version__)'
