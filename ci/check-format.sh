#!/usr/bin/env bash
# Checks that every C file in the tree follows .clang-format: the whole tree
# was formatted once, so any difference is a change that skipped the
# formatter. Exits 1 and prints the diff that would fix it.
#   ci/check-format.sh            every tracked C, header and CUDA file
#   ci/check-format.sh --fix      rewrite them in place instead
set -euo pipefail
cd "$(dirname "$0")/.."
tool=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$tool" ]; then
  echo "check-format: clang-format is not installed (Debian: clang-format)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --fix ]; then
  "$tool" -i "${files[@]}"
  exit 0
fi
# One call over every file; the diff is made only for the files it flags.
if ! "$tool" --dry-run -Werror "${files[@]}" 2>/dev/null; then
  for f in $("$tool" --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: .*-Wclang-format-violations.*/\1/p' | sort -u); do
    "$tool" "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - || true
  done
  echo "check-format: the files above do not follow .clang-format; apply with: ci/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} C files follow .clang-format"
