#!/usr/bin/env bash
# Screenshots of `sluice report` at 1400 and 800 px in a real browser
# (Debian's chromium, headless), kept in docs/report-screenshots/ for
# docs/report.md, and a check in the same browser that no table is wider
# than the page at either width. A person runs it; it is not part of the
# test suite. Chromium: `apt-get install chromium` (the script needs
# nothing else from outside).
#
# usage: ci/report-screenshots.sh [RECORDS_DIR]
#   RECORDS_DIR: records to report on; by default a fresh bench of
#   CV-1, NLP-1 and TAB-1 (reference, iter, fused, per-element, 3 rounds).
# Exit 1 when a table is wider than the page at some width.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
sluice=$build_dir/tools/sluice
out=docs/report-screenshots
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "ci/report-screenshots.sh: chromium is not installed (apt-get install chromium)" >&2
  exit 2
fi
[ -x "$sluice" ] || BUILD_DIR=$build_dir ci/build.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

records=${1:-}
if [ -z "$records" ]; then
  "$sluice" bench --scenarios CV-1,NLP-1,TAB-1 --adapters reference,iter,fused,per-element --rounds 3 --quiet \
    --output-dir "$work/bench" >/dev/null || true
  records=$work/bench/ci
fi
"$sluice" report "$records" --output "$work/report" >/dev/null

# The same page with a script that measures every table against its
# frame's width and writes what it found into the page, which --dump-dom
# prints: the report itself carries no script.
measure() {
  {
    sed 's#</body>##; s#</html>##' "$work/report/report.html"
    cat <<'SCRIPT'
<script>
var wide = [];
document.querySelectorAll("table").forEach(function (t, i) {
  // The table's frame (div.scroll) scrolls when the table is wider.
  var frame = t.parentElement;
  if (frame.scrollWidth > frame.clientWidth + 1) wide.push(i + ": " + frame.scrollWidth + " px in " + frame.clientWidth);
});
document.body.setAttribute("data-wide", wide.length + (wide.length ? " (" + wide.join("; ") + ")" : ""));
</script></body></html>
SCRIPT
  } >"$work/measure.html"
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$1,2400" \
    --dump-dom "file://$work/measure.html" 2>/dev/null | grep -o 'data-wide="[^"]*"' | head -1
}

status=0
mkdir -p "$out"
for width in 1400 800; do
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$width,2400" \
    --screenshot="$out/report-$width.png" "file://$work/report/report.html" >/dev/null 2>&1
  found=$(measure "$width")
  echo "$width px: $out/report-$width.png; tables wider than their frame: ${found#data-wide=}"
  case $found in 'data-wide="0"') ;; *) status=1 ;; esac
done
exit "$status"
