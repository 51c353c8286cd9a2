#!/usr/bin/env bash
# `sluice history` as a user meets it (docs/history.md): filing and refusing
# runs, the published site's self-containment and its escaping of hostile
# record strings, bisect's refusals and the exports. TAP output.
set -u
sluice=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/tap.sh"

# One real run, small; every "commit" below is a copy of it with another
# commit id, so the test needs no git checkout and no second build.
"$sluice" bench --scenarios CV-1 --adapters reference,iter,cuda --repetitions 1 --warmup 0 --batches 4 \
  --no-probes --quiet --output-dir "$work/bench" >/dev/null 2>&1
if ! ls "$work/bench/ci/"CV-1__32x32__iter.json >/dev/null 2>&1; then
  not_ok "sluice bench wrote the records the test files" "$(ls -R "$work/bench" 2>&1 | head -5)"
  echo "1..$n"
  exit 1
fi

# run_as ID FOLDER: the run's records with environment.git_commit set to ID.
run_as() {
  mkdir -p "$2"
  for f in "$work/bench/ci/"*.json; do
    sed -E "s/(\"git_commit\":[[:space:]]*\")[^\"]*\"/\1$1\"/" "$f" >"$2/$(basename "$f")"
  done
}

for i in 1 2 3 4 5 6; do
  run_as "$(printf 'c0ffee%06d' "$i")" "$work/runs/$i"
done
expect 0 "filed 3 rows of commit c0ffee000001 (position 1, 1 process)" "a run is filed under its commit" -- \
  history add "$work/runs/1" --into "$work/h" --position 1
for i in 2 3 4 5 6; do "$sluice" history add "$work/runs/$i" --into "$work/h" --position "$i" >/dev/null; done
expect 1 "filed already" "a commit filed twice is refused" -- history add "$work/runs/3" --into "$work/h" --position 3
before=$(find "$work/h" -type f ! -name .sluice.lock | sort | xargs md5sum)
expect 0 "skipped: commit c0ffee000003 is filed already" "--skip-filed says a filed commit is skipped, exit 0" -- \
  history add "$work/runs/3" --into "$work/h" --position 3 --skip-filed
if [ "$(find "$work/h" -type f ! -name .sluice.lock | sort | xargs md5sum)" = "$before" ]; then
  ok "a skipped add changes nothing in the history"
else
  not_ok "a skipped add changes nothing in the history"
fi
# Several folders of one commit are its processes, each a row of its own.
run_as c0ffee000031 "$work/proc/a"
run_as c0ffee000031 "$work/proc/b"
run_as c0ffee000032 "$work/proc/other"
expect 0 "filed 6 rows of commit c0ffee000031 (position 31, 2 processes)" "several folders are the commit's processes" -- \
  history add "$work/proc/a" "$work/proc/b" --into "$work/hp" --position 31
if grep -q '"process":[[:space:]]*1' "$work/hp/machines/"*/runs/*-c0ffee000031.json; then
  ok "the second process's rows say so in the run file"
else
  not_ok "the second process's rows say so in the run file"
fi
expect 1 "a run holds the processes of one commit" "processes of two commits are refused" -- \
  history add "$work/proc/a" "$work/proc/other" --into "$work/hp" --position 40
"$sluice" history add "$work/runs/1" --into "$work/h2" --position 9 >/dev/null
expect 1 "position 9 on machine" "a position another commit holds is refused" -- \
  history add "$work/runs/3" --into "$work/h2" --position 9
# An add while another holds the history is refused, naming the holder:
# two adds at once would each find a position free.
flock "$work/h2/.sluice.lock" sleep 3 &
holder=$!
sleep 0.5
expect 1 "being written by another sluice history add" "an add while another holds the history is refused" -- \
  history add "$work/runs/4" --into "$work/h2" --position 10
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
run_as c0ffee000099 "$work/mixed"
sed -E 's/("git_commit":[[:space:]]*")[^"]*"/\1c0ffee000098"/' "$work/runs/1/CV-1__32x32__iter.json" \
  >"$work/mixed/CV-1__32x32__iter.json"
expect 1 "one commit" "records of two commits are refused" -- history add "$work/mixed" --into "$work/h" --position 50
run_as unknown "$work/nocommit"
expect 1 "not a commit id" "records of a build outside git are refused" -- \
  history add "$work/nocommit" --into "$work/h" --position 51
mkdir -p "$work/mine"
echo mine >"$work/mine/notes.txt"
expect 1 "not a sluice history" "a folder that is not a history is not taken over" -- \
  history add "$work/runs/1" --into "$work/mine" --position 1
# ls -A: the lock file is a dot file, and a refused add used to leave it (D24).
if [ "$(cat "$work/mine/notes.txt")" = mine ] && [ "$(ls -A "$work/mine")" = notes.txt ]; then
  ok "the folder refused is left as it was, without a lock file"
else
  not_ok "the folder refused is left as it was, without a lock file" "$(ls -A "$work/mine")"
fi
expect 1 "--position" "without git or --position, add says what to give" -- \
  history add "$work/runs/1" --into "$work/h3" --repo "$work/mine"
expect 2 "add, publish, bisect or export" "no action is a usage error" -- history
expect 2 "frobnicate" "an unknown action is named" -- history frobnicate

# The site: every page the index links to exists, and nothing points
# outside it or runs a script.
expect 0 "published 3 series of 6 runs on 1 machine" "publish writes the site" -- \
  history publish "$work/h" --output "$work/site"
missing=
for link in $(grep -o 'href="rows/[^"]*"' "$work/site/index.html" | sed 's/href="//; s/"$//'); do
  [ -f "$work/site/$link" ] || missing="$missing $link"
done
if [ -z "$missing" ] && [ "$(ls "$work/site/rows" | wc -l)" -eq 3 ]; then
  ok "the index links every row's page, and each exists"
else
  not_ok "the index links every row's page, and each exists" "missing:$missing" "$(ls "$work/site/rows")"
fi
outside=$(grep -l -i -E 'https?:|//[a-z]|<script|<link|<iframe|<img|src=|url\(|@import' -r "$work/site")
if [ -z "$outside" ]; then
  ok "the site is self-contained: no external address, script, stylesheet link or image source"
else
  not_ok "the site is self-contained" "$outside" "$(grep -o -i -E 'https?:[^"]*|<script|src=[^ ]*' -r "$work/site" | head -3)"
fi
if grep -q "<svg" "$work/site/index.html" && grep -q "<svg class=\"chart\"" "$work/site/rows/"*.html; then
  ok "the index has sparklines and every row page a chart, as inline SVG"
else
  not_ok "the index has sparklines and every row page a chart, as inline SVG"
fi

# Hostile strings in records: a reason that closes the cell and opens a
# script, a CPU model that is an image tag. They reach the pages escaped.
run_as c0ffee000007 "$work/hostile"
sed -i -E 's#("reason":[[:space:]]*")[^"]*"#\1</td><script>alert(1)</script>"#' "$work/hostile/CV-1__32x32__cuda.json"
for f in "$work/hostile/"*.json; do
  sed -i -E 's#("cpu_model":[[:space:]]*")[^"]*"#\1<img src=x onerror=alert(2)>\&amp;"#' "$f"
done
expect 0 "filed 3 rows" "a run with hostile strings is filed (a machine of its own)" -- \
  history add "$work/hostile" --into "$work/h" --position 7
expect 0 "on 2 machines" "publish keeps the two machines apart" -- history publish "$work/h" --output "$work/site2"
if grep -rqF '<script>' "$work/site2" || grep -rqF '<img' "$work/site2" || grep -rqF '</td><script' "$work/site2"; then
  not_ok "hostile record strings never reach a page raw" "$(grep -rF -m1 -e '<script>' -e '<img' "$work/site2" | head -2)"
elif grep -rqF '&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;' "$work/site2" &&
  grep -rqF '&lt;img src=x onerror=alert(2)&gt;&amp;amp;' "$work/site2"; then
  ok "hostile record strings reach the pages escaped, ampersands included"
else
  not_ok "hostile record strings reach the pages escaped" "$(grep -rho 'alert([12])' "$work/site2" | head -2)"
fi

# bisect
expect 2 "SCENARIO/VARIANT/ADAPTER" "bisect refuses a row that is not SCENARIO/VARIANT/ADAPTER" -- \
  history bisect CV-1 --history "$work/h"
expect 1 "no slowdown found" "bisect says when a row has no slowdown" -- history bisect CV-1/32x32/iter --history "$work/h"
expect 1 "no such row" "bisect names a row the history lacks" -- history bisect NOPE/x/y --history "$work/h"

# Six commits of one process each cannot reach p 0.01: the pages say so
# rather than "none".
if grep -q "Too short to test: 6 measured processes over 6 commits" "$work/site/rows/"*.html &&
  grep -q "too short to test" "$work/site/index.html"; then
  ok "a series too short to test says so on its page and in the index"
else
  not_ok "a series too short to test says so" "$(grep -o 'Too short[^<]*' "$work/site/rows/"*.html | head -1)"
fi

# Exports: one file per run, in each tracker's layout.
expect 0 "exported 7 runs as bencher" "export --format bencher" -- \
  history export "$work/h" --format bencher --output "$work/bmf"
files=$(find "$work/bmf" -name '*.json' | wc -l)
first=$(find "$work/bmf" -name '0000000001-c0ffee000001.json')
if [ "$files" -eq 7 ] && [ -n "$first" ] && grep -q '"ci/CV-1/32x32/iter"' "$first" && grep -q '"latency"' "$first" &&
  grep -q '"throughput"' "$first" && grep -q '"lower_value"' "$first" && ! grep -q 'cuda' "$first"; then
  ok "the Bencher export has a file per run with latency and throughput and their intervals, measured rows only"
else
  not_ok "the Bencher export has a file per run" "$files files" "$(head -c 300 "$first" 2>&1)"
fi
# Every Bencher file holds to the Bencher Metric Format's published JSON
# Schema (tests/cli/schemas/bmf.schema.json), and the checker refuses a
# file that does not.
here=$(cd "$(dirname "$0")" && pwd)
if python3 "$here/check_schema.py" "$here/schemas/bmf.schema.json" $(find "$work/bmf" -name '*.json'); then
  ok "every Bencher export file holds to the BMF JSON Schema"
else
  not_ok "every Bencher export file holds to the BMF JSON Schema"
fi
sed 's/"value"/"val"/' "$first" >"$work/bmf-broken.json"
if python3 "$here/check_schema.py" "$here/schemas/bmf.schema.json" "$work/bmf-broken.json" 2>/dev/null; then
  not_ok "the schema check refuses a measure without its value"
else
  ok "the schema check refuses a measure without its value"
fi
expect 0 "exported 7 runs as asv" "export --format asv" -- history export "$work/h" --format asv --output "$work/asv"
result=$(find "$work/asv" -name 'c0ffee000001-sluice.json' | head -1)
if [ -f "$work/asv/benchmarks.json" ] && [ "$(find "$work/asv" -name machine.json | wc -l)" -eq 2 ] &&
  [ "$(find "$work/asv" -name '*-sluice.json' | wc -l)" -eq 7 ] && [ -n "$result" ] &&
  grep -q '"result_columns"' "$result" && grep -q '"ci.CV-1.32x32.iter"' "$result"; then
  ok "the asv export has benchmarks.json, a machine.json per machine and a result file per run"
else
  not_ok "the asv export has its layout" "$(find "$work/asv" | head -5)"
fi
# asv publish draws every series of an export whose commits are full
# 40-hex ids of a real repository (it orders runs by the repository's
# history and places none whose commit it cannot find). asv comes from
# ASV, PATH or the venv ci/history-vs-asv.sh makes (.venv-asv).
asv=${ASV:-}
[ -z "$asv" ] && asv=$(command -v asv 2>/dev/null)
[ -z "$asv" ] && [ -x "$here/../../.venv-asv/bin/asv" ] && asv=$here/../../.venv-asv/bin/asv
if [ -z "$asv" ]; then
  n=$((n + 1))
  echo "ok $n - asv publish draws every series of the export # SKIP asv is not installed (set ASV, put asv on PATH, or run ci/history-vs-asv.sh to make .venv-asv)"
else
  git init -q -b main "$work/repo"
  for i in 1 2 3; do
    echo "$i" >"$work/repo/f"
    git -C "$work/repo" add f
    git -C "$work/repo" -c user.name=t -c user.email=t@example.invalid commit -qm "c$i"
  done
  i=0
  for commit in $(git -C "$work/repo" rev-list --reverse HEAD); do
    i=$((i + 1))
    run_as "$commit" "$work/full/$i"
    "$sluice" history add "$work/full/$i" --into "$work/hf" --repo "$work/repo" >/dev/null
  done
  "$sluice" history export "$work/hf" --format asv --output "$work/asv-full" >/dev/null
  cat >"$work/asv.conf.json" <<CONF
{"version": 1, "project": "sluice", "project_url": "https://example.invalid/", "repo": "$work/repo",
 "branches": ["main"], "results_dir": "$work/asv-full", "html_dir": "$work/asv-html", "environment_type": "existing"}
CONF
  if ! "$asv" publish --config "$work/asv.conf.json" >"$work/asv.log" 2>&1; then
    not_ok "asv publish reads the export" "$(tail -3 "$work/asv.log")"
  else
    # Each of the two measured rows is a graph with a value at each of
    # the three commits.
    drawn=0
    while IFS= read -r graph; do
      points=$(python3 -c 'import json,sys; print(sum(1 for p in json.load(open(sys.argv[1])) if p[1] is not None))' "$graph")
      [ "$points" -eq 3 ] && drawn=$((drawn + 1))
    done < <(find "$work/asv-html/graphs" -path '*machine-*' -name 'ci.CV-1.*.json')
    if [ "$drawn" -eq 2 ]; then
      ok "asv publish draws every series of the export, a point per commit"
    else
      not_ok "asv publish draws every series of the export" "$drawn of 2 graphs have 3 points" \
        "$(find "$work/asv-html/graphs" -name 'ci.CV-1.*.json' | head -3)"
    fi
  fi
fi
expect 2 "--format" "an unknown export format is refused" -- history export "$work/h" --format csv --output "$work/x"

echo "1..$n"
[ "$failed" -eq 0 ]
