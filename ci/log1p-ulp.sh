#!/usr/bin/env bash
# Measures sluice's log1p (sl__log1p_f32, kernels/include/kernels/bodies.h)
# against glibc's double log1p over every float in (-1, inf) and over
# TAB-2's values: the figures docs/determinism.md states. Takes a few
# minutes on one core.
#   ci/log1p-ulp.sh [SOURCE_ROOT] [STRIDE]   another tree's bodies.h (to
#                                            compare a change), every
#                                            STRIDE-th float (default 1: all)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$here}
stride=${2:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The project's floating-point flags: no contraction, no fast-math.
cc -std=c11 -O2 -D_GNU_SOURCE -ffp-contract=off -fno-fast-math -I"$root/kernels/include" -I"$root/include" -I"$here/tests/common" \
  "$here/ci/measure/log1p_ulp.c" -lm -o "$out/log1p_ulp"
echo "log1p of $root ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')), every ${stride}th float:"
"$out/log1p_ulp" "$stride"
