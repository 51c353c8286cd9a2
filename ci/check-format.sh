#!/usr/bin/env bash
# Checks that the C a change adds or edits follows .clang-format: only the
# lines the change touches (git clang-format), so the rest of the tree is
# never reformatted behind anyone's back. Exits 1 and prints the diff that
# would fix them.
#   ci/check-format.sh [BASE]    the commit the change is measured from
#                                (default: origin/main if it exists, else HEAD~1)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-}
if [ -z "$base" ]; then
  if git rev-parse -q --verify origin/main >/dev/null; then base=origin/main; else base=HEAD~1; fi
fi
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "check-format: $base is not in this clone (a shallow clone?); nothing to compare with" >&2
  exit 0
fi
if ! command -v git-clang-format >/dev/null && ! command -v git-clang-format-14 >/dev/null; then
  echo "check-format: git-clang-format is not installed (Debian: clang-format); skipping" >&2
  exit 0
fi
tool=$(command -v git-clang-format || command -v git-clang-format-14)
out=$("$tool" --diff --extensions c,h,cu,cuh "$base" -- . 2>&1) || true
if [ -z "$out" ] || echo "$out" | grep -qE '^(no modified files to format|clang-format did not modify any files)'; then
  echo "check-format: the C changed since $base follows .clang-format"
  exit 0
fi
echo "$out"
echo "check-format: the lines above changed since $base do not follow .clang-format; apply with: $tool $base" >&2
exit 1
