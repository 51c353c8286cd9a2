#!/usr/bin/env bash
# The sluice command as a user meets it: exit statuses, messages that name
# the bad argument, and the files bench and bless leave behind. TAP output.
set -u
sluice=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

. "$(dirname "$0")/tap.sh"

expect 0 "bench" "--help lists the commands" -- --help
expect 0 "--profile" "bench --help lists its options" -- bench --help
expect 0 "sluice" "--version" -- --version
expect 2 "frobnicate" "an unknown command is named, exit 2" -- frobnicate
expect 2 "NOPE" "an unknown scenario is named, exit 2" -- bench --scenarios NOPE
expect 2 "CV-1" "an unknown scenario lists the valid ones" -- bench --scenarios NOPE
expect 2 "warp" "an unknown adapter is named, exit 2" -- bench --adapters warp
expect 2 "--bogus" "an unknown option is named, exit 2" -- bench --bogus
expect 2 "--threads" "a thread count of 0 is refused, the option named" -- bench --threads 0
expect 2 "--threads" "a thread count that is not a number or auto is refused" -- bench --threads many
expect 2 "--repetitions" "a bad number names its option, exit 2" -- bench --repetitions abc
expect 2 "--output-dir" "a missing value names its option, exit 2" -- bench --output-dir
expect 2 "turbo" "an unknown profile is named, exit 2" -- bench --profile turbo
expect 2 "cpu-generic" "an unknown kernel table lists the tables, exit 2" -- bench --kernels cpu-sse
if out=$(SLUICE_KERNELS=cpu-sse "$sluice" list 2>&1); then
  not_ok "a SLUICE_KERNELS naming no table is refused" "exit 0"
elif printf '%s' "$out" | grep -qF "SLUICE_KERNELS"; then
  ok "a SLUICE_KERNELS naming no table is refused"
else
  not_ok "a SLUICE_KERNELS naming no table is refused" "$out"
fi
expect 2 "auto" "an unknown kernel table offers auto too" -- bench --kernels cpu-sse

# The tuned kernels (--kernels auto, the default): measured once per CPU
# and build into $XDG_CACHE_HOME/sluice, then read; a named table bypasses
# them. This script keeps a cache of its own.
export XDG_CACHE_HOME="$work/cache"
said=$("$sluice" list 2>&1 >/dev/null)
cache=$(ls "$work/cache/sluice/"kernels-*.json 2>/dev/null | head -1)
if [ -n "$cache" ] && [ "$(printf '%s\n' "$said" | wc -l)" -eq 1 ] && printf '%s' "$said" | grep -qF "chose the kernels by timing" \
  && printf '%s' "$said" | grep -qF "$cache"; then
  ok "the first run without a cache measures once, says so in one line and saves the choice"
else
  not_ok "the first run without a cache measures once, says so in one line and saves the choice" "cache: '$cache'" "$said"
fi
said=$("$sluice" list 2>&1 >/dev/null)
if [ -z "$said" ]; then
  ok "the next run reads the cache and says nothing"
else
  not_ok "the next run reads the cache and says nothing" "$said"
fi
if "$sluice" list 2>/dev/null | grep -q "^KERNELS (auto: the choice measured" \
  && [ "$("$sluice" list 2>/dev/null | sed -n '/^KERNELS/,$p' | grep -o 'normalize_u8' | wc -l)" -eq 1 ]; then
  ok "list names the table each kernel comes from, each kernel once"
else
  not_ok "list names the table each kernel comes from, each kernel once" \
    "$("$sluice" list 2>&1 | sed -n '/^KERNELS/,$p')"
fi
expect 0 "saved in $work/cache/sluice/kernels-" "tune measures, prints and saves the choice" -- tune --rounds 2
out=$("$sluice" tune --rounds 1 --no-save 2>&1)
rows=0
for entry in permute_strided normalize_u8 ew_chain hflip log_mel rot90; do
  printf '%s\n' "$out" | grep -q "^$entry " && rows=$((rows + 1))
done
if [ "$rows" -eq 6 ] && printf '%s' "$out" | grep -qF "not saved (--no-save)"; then
  ok "tune prints a row per kernel, and --no-save leaves the cache alone"
else
  not_ok "tune prints a row per kernel, and --no-save leaves the cache alone" "$(printf '%s' "$out" | head -8)"
fi
expect 0 "cached in $cache" "tune --show prints the cached choice" -- tune --show
# D27: an option of a measurement beside --show was ignored without a word.
expect 2 "--rounds is for a measurement" "tune --show refuses --rounds, which it would ignore" -- \
  tune --show --rounds 3
printf '{"format": "sluice kernel tuning"' >"$cache"
said=$("$sluice" list 2>&1 >/dev/null)
if printf '%s' "$said" | grep -qF "kernel cache refused: $cache" && printf '%s' "$said" | grep -qF "chose the kernels" \
  && "$sluice" tune --show >/dev/null 2>&1; then
  ok "a corrupt cache is refused naming the file, measured over and replaced"
else
  not_ok "a corrupt cache is refused naming the file, measured over and replaced" "$said"
fi
sed -i 's/"build":[^,]*,/"build": "build-id 00",/' "$cache"
said=$("$sluice" list 2>&1 >/dev/null)
if printf '%s' "$said" | grep -qF "another sluice build"; then
  ok "a cache from another sluice build is refused"
else
  not_ok "a cache from another sluice build is refused" "$said"
fi
rm -rf "$work/cache"
expect 1 "no valid kernel choice" "tune --show without a cache fails, exit 1" -- tune --show
"$sluice" tune --rounds 1 >/dev/null 2>&1
list=$(XDG_CACHE_HOME="$work/cache2" SLUICE_KERNELS=cpu-generic "$sluice" list 2>&1)
if [ ! -e "$work/cache2" ] && printf '%s\n' "$list" | grep -q "^KERNELS (cpu-generic)" \
  && printf '%s\n' "$list" | sed -n '/^KERNELS/,$p' | grep -q "^cpu-generic .*normalize_u8"; then
  ok "SLUICE_KERNELS naming a table bypasses the tuner: no measurement, no cache"
else
  not_ok "SLUICE_KERNELS naming a table bypasses the tuner: no measurement, no cache" "$(ls "$work" | head)"
fi
if SLUICE_KERNELS=AUTO "$sluice" list >/dev/null 2>&1; then
  ok "SLUICE_KERNELS=auto is accepted, in any case"
else
  not_ok "SLUICE_KERNELS=auto is accepted, in any case"
fi
expect 2 "auto" "an audit refuses auto: another machine could not repeat it" -- audit --kernels auto \
  --scenarios NLP-1 --seeds 42 --epochs 1 --batches 1 --output "$work/auto.json"
if XDG_CACHE_HOME="$work/cache3" "$sluice" bench --scenarios NLP-1 --adapters fused --kernels cpu-generic --warmup 0 \
  --batches 2 --repetitions 1 --quiet --output-dir "$work/pinned" >/dev/null 2>&1 && [ ! -e "$work/cache3" ] \
  && grep -q '"kernels":[[:space:]]*"cpu-generic"' "$work/pinned/ci/NLP-1__128__fused.json" \
  && [ "$(grep -c '"[a-z0-9_]*":[[:space:]]*"cpu-generic"' "$work/pinned/ci/NLP-1__128__fused.json")" -ge 29 ]; then
  ok "bench --kernels NAME runs that table for every kernel and measures nothing"
else
  not_ok "bench --kernels NAME runs that table for every kernel and measures nothing"
fi
if "$sluice" bench --scenarios NLP-1 --adapters fused --warmup 0 --batches 2 --repetitions 1 --quiet \
  --output-dir "$work/tuned" >/dev/null 2>&1 && grep -q '"kernels":[[:space:]]*"auto"' "$work/tuned/ci/NLP-1__128__fused.json" \
  && grep -q '"kernel_choice"' "$work/tuned/ci/NLP-1__128__fused.json" \
  && grep -q '"fraction_of_hardware_bound"' "$work/tuned/ci/NLP-1__128__fused.json"; then
  ok "a default run records auto, the table of each kernel and the hardware bound"
else
  not_ok "a default run records auto, the table of each kernel and the hardware bound"
fi

# A batch-size sweep: one record per point, named and sized as its point,
# each held to the reference run at that batch size (so the points' digests
# differ, and each point's fused digest is its reference's).
expect 2 "--batch-sizes" "a batch size given twice is refused" -- bench --batch-sizes 8,8
expect 2 "--batch-sizes" "a batch size of 0 is refused" -- bench --batch-sizes 8,0
expect 2 "--batch-sizes" "an empty item is refused" -- bench --batch-sizes 8,
# report_chart RECORDS OUT HEADING SERIES DESCRIPTION: `sluice report` of
# RECORDS draws a chart under HEADING with a line named SERIES (skipped,
# and said so, without gnuplot).
report_chart() {
  if ! command -v gnuplot >/dev/null 2>&1; then
    ok "$5 (skipped: no gnuplot)"
  elif "$sluice" report "$1" --output "$2" >/dev/null 2>&1 && grep -q "$3" "$2/report.html" \
    && grep -q "$4" "$2/report.html"; then
    ok "$5"
  else
    not_ok "$5"
  fi
}
field() { sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\"\{0,1\}\([^\",]*\).*/\1/p" "$1" | head -1; }
sweep="$work/sweep/ci"
if "$sluice" bench --scenarios NLP-1 --adapters reference,fused --batch-sizes 8,16 --warmup 0 --batches 2 \
  --repetitions 1 --no-probes --quiet --output-dir "$work/sweep" >/dev/null 2>&1; then
  ok "bench --batch-sizes runs every point"
  fine=1
  for bs in 8 16; do
    for a in reference fused; do
      r="$sweep/NLP-1__128@bs${bs}__$a.json"
      [ -f "$r" ] && [ "$(field "$r" batch_size)" = "$bs" ] && [ "$(field "$r" variant)" = "128@bs$bs" ] \
        && [ "$(field "$r" elements)" = "$((2 * bs))" ] && [ "$(field "$r" equivalence)" = bitwise ] || fine=0
    done
    [ "$(field "$sweep/NLP-1__128@bs${bs}__fused.json" output_digest)" = \
      "$(field "$sweep/NLP-1__128@bs${bs}__reference.json" output_digest)" ] || fine=0
  done
  [ "$(field "$sweep/NLP-1__128@bs8__fused.json" output_digest)" != \
    "$(field "$sweep/NLP-1__128@bs16__fused.json" output_digest)" ] || fine=0
  if [ "$fine" = 1 ]; then
    ok "each point's records carry its batch size and match the reference at that size"
  else
    not_ok "each point's records carry its batch size and match the reference at that size" "$(ls "$sweep")"
  fi
  report_chart "$sweep" "$work/sweep-report" "Batch-size scaling" "NLP-1/128 fused" \
    "the report charts time per element against batch size, one line per variant and adapter"
else
  not_ok "bench --batch-sizes runs every point"
  not_ok "each point's records carry its batch size and match the reference at that size"
  not_ok "the report charts time per element against batch size, one line per variant and adapter"
fi

# A workers sweep: one record per worker count, named @w<N> and carrying
# that count, each held to the reference. Prefetch workers must not change
# a batch (determinism), so every point's digest is the reference's; with
# --batch-sizes the points are the cross product, @bs<N>@w<M>.
expect 2 "--workers-sweep" "a worker count given twice is refused" -- bench --workers-sweep 1,1
expect 2 "--workers-sweep" "a negative worker count is refused" -- bench --workers-sweep 0,-1
expect 2 "--workers-sweep" "--workers beside a workers sweep is refused" -- bench --workers 2 --workers-sweep 0,1
sweep="$work/wsweep/ci"
if "$sluice" bench --scenarios NLP-1 --adapters reference,iter --workers-sweep 0,2 --warmup 0 --batches 3 \
  --repetitions 1 --no-probes --quiet --output-dir "$work/wsweep" >/dev/null 2>&1; then
  ok "bench --workers-sweep runs every point"
  fine=1
  for w in 0 2; do
    for a in reference iter; do
      r="$sweep/NLP-1__128@w${w}__$a.json"
      [ -f "$r" ] && [ "$(field "$r" workers)" = "$w" ] && [ "$(field "$r" variant)" = "128@w$w" ] \
        && [ "$(field "$r" equivalence)" = bitwise ] || fine=0
    done
    [ "$(field "$sweep/NLP-1__128@w${w}__iter.json" output_digest)" = \
      "$(field "$sweep/NLP-1__128@w0__reference.json" output_digest)" ] || fine=0
  done
  if [ "$fine" = 1 ]; then
    ok "each point's records carry its worker count and match the reference"
  else
    not_ok "each point's records carry its worker count and match the reference" "$(ls "$sweep")"
  fi
  report_chart "$sweep" "$work/wsweep-report" "Workers scaling" "NLP-1/128 iter" \
    "the report charts time per element against workers, one line per variant and adapter"
else
  not_ok "bench --workers-sweep runs every point"
  not_ok "each point's records carry its worker count and match the reference"
  not_ok "the report charts time per element against workers, one line per variant and adapter"
fi
if "$sluice" bench --scenarios NLP-1 --adapters iter --batch-sizes 8,16 --workers-sweep 0,1 --warmup 0 --batches 2 \
  --repetitions 1 --no-probes --quiet --output-dir "$work/cross" >/dev/null 2>&1 \
  && [ "$(ls "$work/cross/ci/"NLP-1__128@bs*@w*__iter.json | wc -l)" -eq 4 ] \
  && [ "$(field "$work/cross/ci/NLP-1__128@bs16@w1__iter.json" batch_size)" = 16 ] \
  && [ "$(field "$work/cross/ci/NLP-1__128@bs16@w1__iter.json" workers)" = 1 ]; then
  ok "--batch-sizes with --workers-sweep runs every pair, named @bs<N>@w<M>"
else
  not_ok "--batch-sizes with --workers-sweep runs every pair, named @bs<N>@w<M>" "$(ls "$work/cross/ci" 2>&1)"
fi

expect 2 "--workers" "a number with a leading space is refused like --seed refuses it" -- bench --workers " 5"
expect 2 "--batches" "a number with a plus sign is refused" -- bench --batches +5
expect 2 "--seed" "--seed refuses the same" -- bench --seed +5
long_dir=$(printf 'd%.0s' $(seq 1 4000))
expect 2 "--output-dir" "an output folder too long for a record's path is refused up front" -- bench --output-dir "$long_dir"
out=$("$sluice" bench --scenarios "$(printf 'CV\033[31mX')" 2>&1)
if printf '%s' "$out" | grep -qF '\x1b' && ! printf '%s' "$out" | grep -q "$(printf '\033')"; then
  ok "control characters in arguments are escaped, never echoed raw"
else
  not_ok "control characters in arguments are escaped, never echoed raw" "$out"
fi
# A typo gets the nearest name, as hyperfine and git suggest.
expect 2 "did you mean 'CV-1'?" "a mistyped scenario gets the nearest id" -- bench --scenarios cv1
expect 2 "did you mean 'fused'?" "a mistyped adapter gets the nearest name" -- bench --adapters fsued
expect 2 "did you mean '--repetitions'?" "a mistyped option gets the nearest option" -- bench --repetitons 3
expect 2 "did you mean '32x32'?" "a mistyped variant gets the nearest variant" -- bench --scenarios CV-1 --variants 32x23
expect 2 "did you mean 'bench'?" "a mistyped command gets the nearest command" -- bnech
if out=$("$sluice" bench --scenarios zzzzzz 2>&1) || printf '%s' "$out" | grep -q "did you mean"; then
  not_ok "a name near nothing gets no suggestion" "$out"
else
  ok "a name near nothing gets no suggestion"
fi
expect 2 "--rounds" "--rounds and --repetitions together are refused" -- bench --rounds 2 --repetitions 2

expect 0 "PR-2" "list shows every scenario" -- list
expect 0 "1x7" "kernels checks one entry's cases on every table" -- kernels --check-only --entries normalize_u8
expect 2 "normalize_u9" "an unknown kernel entry is named, exit 2" -- kernels --entries normalize_u9
expect 2 "cpu-sse" "an unknown kernel table is named, exit 2" -- kernels --tables cpu-sse
expect 0 "fused" "list shows the adapters" -- list

# A small bench: a record per adapter and a summary, in the profile's folder.
expect 0 "NLP-1" "bench runs and prints a summary" -- bench --scenarios NLP-1 --warmup 1 --batches 2 \
  --repetitions 1 --output-dir "$work/records" --quiet
# sluice's own adapters as `list` shows them: the rows between its ADAPTERS
# heading (after the column names) and EXCLUSIONS, peers left out (bench's
# default runs only sluice's own; peers are chosen by name or 'peers').
adapters=$("$sluice" list | awk '/^ADAPTERS/ { on = 1; next } /^EXCLUSIONS/ { on = 0 } on && NF && $1 != "adapter" && $1 !~ /^peer:/ { n++ } END { print n }')
records=$(ls "$work/records/ci/"NLP-1__128__*.json 2>/dev/null | wc -l)
if [ "$records" -eq "$adapters" ] && [ "$adapters" -ge 4 ]; then ok "bench wrote one record per adapter"; else not_ok "bench wrote one record per adapter" "found $records for $adapters adapters"; fi
if [ -s "$work/records/ci/summary.md" ]; then ok "bench wrote summary.md"; else not_ok "bench wrote summary.md"; fi
# No peer ran, so every row's ratio to the best equivalent peer is '-'.
if grep -q "| verified | threads |.*| vs best peer |" "$work/records/ci/summary.md" &&
   grep -qE '^\| NLP-1 \| 128 \| fused \| ok \| bitwise \|([^|]*\|){7} - \|' "$work/records/ci/summary.md"; then
  ok "summary.md has the verified and vs best peer columns, '-' without peers"
else
  not_ok "summary.md has the verified and vs best peer columns, '-' without peers" "$(grep -m2 '^| ' "$work/records/ci/summary.md")"
fi
if grep -q '"measured_batches":[[:space:]]*2' "$work/records/ci/NLP-1__128__fused.json"; then
  ok "the record holds the measured batch count asked for"
else
  not_ok "the record holds the measured batch count asked for"
fi

# With two threads the threads cell also says how many measured batches ran
# split; NLP-1's 16 KiB batches are under the 64 KiB below which fused never
# splits, so none did.
expect 0 "" "bench runs fused with two threads" -- bench --scenarios NLP-1 --adapters fused --threads 2 \
  --warmup 1 --batches 2 --repetitions 1 --output-dir "$work/threads" --quiet
if grep -qE '^\| NLP-1 \| 128 \| fused \| ok \| bitwise \| 2 \(0%\) \|' "$work/threads/ci/summary.md" &&
   grep -q '"name":[[:space:]]*"split_fraction"' "$work/threads/ci/NLP-1__128__fused.json"; then
  ok "a two-thread record says its split fraction, 0 for batches under 64 KiB"
else
  not_ok "a two-thread record says its split fraction, 0 for batches under 64 KiB" \
    "$(grep -m2 'NLP-1' "$work/threads/ci/summary.md")"
fi

# Rounds: each record holds one repetition per round and says so; progress
# says how long is left, and each variant's result is printed as it
# completes; adapters that cannot run here are one line, not a row each.
if "$sluice" bench --scenarios NLP-1,TAB-1 --rounds 2 --warmup 1 --batches 3 --output-dir "$work/rounds" \
  >"$work/rounds.out" 2>"$work/rounds.err"; then
  ok "bench --rounds runs"
else
  not_ok "bench --rounds runs" "$(tail -3 "$work/rounds.err")"
fi
if grep -q '"rounds":[[:space:]]*2' "$work/rounds/ci/NLP-1__128__fused.json" &&
  grep -q '"repetitions":[[:space:]]*2' "$work/rounds/ci/NLP-1__128__fused.json"; then
  ok "a record of --rounds 2 holds two repetitions and says it ran in rounds"
else
  not_ok "a record of --rounds 2 holds two repetitions and says it ran in rounds"
fi
if grep -q 'left)' "$work/rounds.err" && grep -qE '^NLP-1/128: [a-z-]+ [0-9.]+[kMG]?/s' "$work/rounds.err" &&
  [ "$(grep -n '^NLP-1/128:' "$work/rounds.err" | cut -d: -f1)" -lt "$(grep -n 'TAB-1/10k' "$work/rounds.err" | head -1 | cut -d: -f1)" ]; then
  ok "progress estimates the time left and prints each variant's result before the next variant runs"
else
  not_ok "progress estimates the time left and prints each variant's result before the next variant runs" \
    "$(head -8 "$work/rounds.err")"
fi
unavailable=$(grep -l '"outcome":[[:space:]]*"unavailable"' "$work/rounds/ci/"*.json 2>/dev/null | wc -l)
if [ "$unavailable" -eq 0 ]; then
  n=$((n + 1)); echo "ok $n - unavailable adapters are one line # SKIP every adapter runs here"
elif grep -q 'unavailable on every variant' "$work/rounds.out" && ! grep -qE '^[A-Z0-9-]+ +[^ ]+ +[^ ]+ +unavailable' "$work/rounds.out"; then
  ok "unavailable adapters are one line under the table, not a row per scenario"
else
  not_ok "unavailable adapters are one line under the table, not a row per scenario" "$(grep unavailable "$work/rounds.out" | head -3)"
fi

# --kernels puts the named table behind iter and fused, and the records say so.
expect 0 "" "bench runs the generic kernels when asked" -- bench --scenarios NLP-1 --adapters fused \
  --kernels cpu-generic --warmup 1 --batches 2 --repetitions 1 --output-dir "$work/generic" --quiet
if grep -q '"kernels":[[:space:]]*"cpu-generic"' "$work/generic/ci/NLP-1__128__fused.json"; then
  ok "the record names the kernel table that ran"
else
  not_ok "the record names the kernel table that ran"
fi

# The report: Markdown and one self-contained HTML page, from the records;
# a damaged record is named and left out, and the rest is still reported.
expect 0 "report.html" "report writes the HTML report" -- report "$work/records/ci" --step-ms 5
html="$work/records/ci/report.html"
if [ -s "$work/records/ci/report.md" ] && grep -q "<table>" "$html" && grep -q "</html>" "$html"; then
  ok "report writes Markdown and a complete HTML page"
else
  not_ok "report writes Markdown and a complete HTML page"
fi
if grep -qiE '(src|href)=["'"'"']?(https?:|//|file:)' "$html"; then
  not_ok "the HTML page loads nothing from elsewhere" "$(grep -oiE '(src|href)=[^ >]*' "$html" | head -3)"
else
  ok "the HTML page loads nothing from elsewhere"
fi
if grep -q "keeps up" "$work/records/ci/report.md"; then ok "--step-ms adds the step verdict"; else not_ok "--step-ms adds the step verdict"; fi
# No peer ran here: the vs best peer column, empty in every row, is dropped
# (issue 30: tables that fit 800 px); a report with peers keeps it.
if grep -q "| adapter | standing |" "$work/records/ci/report.md" &&
  ! grep -q "| vs best peer |" "$work/records/ci/report.md"; then
  ok "the report has the standing column, and no empty vs best peer column"
else
  not_ok "the report has the standing column, and no empty vs best peer column"
fi
cp -r "$work/records/ci" "$work/damaged"
printf '{"schema_version": 2, "scenario": ' > "$work/damaged/NLP-1__128__broken.json"
expect 1 "NLP-1__128__broken.json" "a truncated record is named, exit 1" -- report "$work/damaged"
if [ -s "$work/damaged/report.html" ]; then ok "the report is still written from the other records"; else not_ok "the report is still written from the other records"; fi
cp -r "$work/records/ci" "$work/mixed"
sed -i 's/"cpu_model":[^,]*/"cpu_model":\t"Another CPU"/' "$work/mixed/NLP-1__128__iter.json"
expect 0 "different machines" "records from two machines are reported as such" -- report "$work/mixed"
if grep -q "different machines" "$work/mixed/report.md"; then ok "the report itself says so"; else not_ok "the report itself says so"; fi
expect 2 "--step-ms" "a bad --step-ms is named, exit 2" -- report "$work/records/ci" --step-ms fast

# The gate: a run is saved as a baseline (test_check.sh checks the rules
# on runs whose answers are known); a missing baseline is named.
expect 0 "" "a run for the gate" -- bench --scenarios NLP-1 --adapters fused --warmup 1 --batches 12 \
  --repetitions 2 --output-dir "$work/gate" --quiet
expect 0 "saved" "baseline save keeps a run" -- baseline save small --from "$work/gate/ci" \
  --baseline-dir "$work/baselines"
expect 1 "nope" "a missing baseline is named, exit 1" -- check --baseline nope --baseline-dir "$work/baselines" \
  --records "$work/records/ci"
expect 2 "must be letters" "a baseline name that is not a folder name is refused" -- baseline save ../x \
  --from "$work/records/ci" --baseline-dir "$work/baselines"

# audit --compare: a manifest agrees with itself; another seed does not.
expect 0 "manifest in" "audit writes a manifest" -- audit --scenarios NLP-1 --seeds 42 --epochs 1 --batches 2 \
  --output "$work/a"
expect 0 "identical" "a manifest compares equal to itself" -- audit --compare "$work/a" "$work/a"
expect 0 "" "audit with another seed" -- audit --scenarios NLP-1 --seeds 43 --epochs 1 --batches 2 \
  --output "$work/b"
expect 1 "first difference" "manifests of different runs are named as different, exit 1" -- \
  audit --compare "$work/a" "$work/b"

# Exports: JUnit XML with one testcase per run, Google Benchmark JSON on stdout.
if "$sluice" bench --scenarios NLP-1 --warmup 1 --batches 3 --repetitions 2 --quiet --output-dir "$work/exports" \
  --junit "$work/junit.xml" --format gbench >"$work/gbench.json" 2>/dev/null; then
  ok "bench writes the exports"
else
  not_ok "bench writes the exports"
fi
if [ "$(grep -c '<testcase ' "$work/junit.xml")" -eq "$adapters" ] && grep -q "tests=\"$adapters\" failures=\"0\"" "$work/junit.xml"; then
  ok "JUnit XML has one testcase per adapter"
else
  not_ok "JUnit XML has one testcase per adapter" "$(head -4 "$work/junit.xml")"
fi
# Only runs that measured something have iterations: an adapter unavailable
# here (cuda without a GPU) or lacking a transform has a record but none.
ran=$(grep -l '"outcome":[[:space:]]*"ok"' "$work/exports/ci/"NLP-1__128__*.json 2>/dev/null | wc -l)
if [ "$ran" -ge 4 ] && [ "$(grep -c '"run_type":[[:space:]]*"iteration"' "$work/gbench.json")" -eq $((2 * ran)) ] && grep -q '"benchmarks"' "$work/gbench.json" \
  && ! grep -q "scenario  variant" "$work/gbench.json"; then
  ok "gbench JSON holds one iteration per repetition and nothing else on stdout"
else
  not_ok "gbench JSON holds one iteration per repetition and nothing else on stdout" "$(head -3 "$work/gbench.json")"
fi
expect 2 "--format" "an unknown format is named, exit 2" -- bench --format csv

# Asking for the GPU profile on CPU adapters records both back ends.
expect 0 "" "bench under the gpu profile runs" -- bench --profile gpu --scenarios NLP-1 --adapters fused \
  --warmup 1 --batches 2 --repetitions 1 --output-dir "$work/records" --quiet
record="$work/records/gpu/NLP-1__128__fused.json"
if grep -q '"requested":[[:space:]]*"cuda"' "$record" && grep -q '"active":[[:space:]]*"cpu"' "$record"; then
  ok "requested and active back ends are both recorded"
else
  not_ok "requested and active back ends are both recorded" "$(grep -A3 backend "$record" | head -4)"
fi

# An output directory that cannot be created fails the run, exit 1.
expect 1 "" "an unwritable output directory fails with exit 1" -- bench --scenarios NLP-1 --adapters fused \
  --warmup 0 --batches 1 --repetitions 1 --output-dir /dev/null/records --quiet

# A record that cannot be written (a folder stands at its path) fails the
# run, and the summary counts it.
mkdir -p "$work/blocked/ci/NLP-1__128__fused.json"
expect 1 "1 failed" "a record that cannot be written is counted as failed" -- bench --scenarios NLP-1 \
  --adapters fused --warmup 0 --batches 1 --repetitions 1 --output-dir "$work/blocked" --quiet

# A golden set that cannot be saved is a failure, exit 1, naming why.
# (The set is staged beside its folder and swapped in whole, so it is the
# folder that must be writable, not each file: docs/golden.md.)
expect 1 "cannot stage the golden set" "a golden set that cannot be saved fails, saying why" -- bless \
  --scenarios NLP-1 --golden-dir /dev/null/golden

# bless writes a golden, and a second bless finds it unchanged.
expect 0 "new" "bless writes a new golden" -- bless --scenarios NLP-1 --golden-dir "$work/golden"
expect 0 "unchanged" "blessing again finds it unchanged" -- bless --scenarios NLP-1 --golden-dir "$work/golden"

# A variant that would not fit under `ulimit -v` is skipped, naming the
# limit, rather than failing halfway (CV-1 128x128 at full size needs about
# 0.5 GiB). AddressSanitizer reserves terabytes of address space, so a
# sanitized build cannot start under the limit and skips this.
if ldd "$sluice" 2>/dev/null | grep -q 'lib[at]san'; then
  n=$((n + 1)); echo "ok $n - a variant too big for ulimit -v is skipped # SKIP sanitized build"
else
out=$( (ulimit -v 400000; "$sluice" bench --profile full --scenarios CV-1 --variants 128x128 --adapters fused \
  --output-dir "$work/ulimit" 2>&1) )
rc=$?
if [ "$rc" -eq 0 ] && printf '%s' "$out" | grep -q "skipped" && printf '%s' "$out" | grep -qF "RLIMIT_AS"; then
  ok "a variant too big for ulimit -v is skipped, naming RLIMIT_AS"
else
  not_ok "a variant too big for ulimit -v is skipped, naming RLIMIT_AS" "exit $rc" "$(printf '%s' "$out" | tail -3)"
fi
fi

# A scenario's own figures (its metrics hook) reach the summary, on the
# terminal and in summary.md.
expect 0 "checkpoint_bytes" "the summary shows a scenario's own metrics" -- bench --scenarios PR-1 --adapters fused \
  --warmup 1 --batches 2 --repetitions 1 --output-dir "$work/pr1" --quiet
if grep -q "^| PR-1 | 32x32 | fused | checkpoint_bytes" "$work/pr1/ci/summary.md"; then
  ok "summary.md has the scenario metrics table"
else
  not_ok "summary.md has the scenario metrics table" "$(tail -4 "$work/pr1/ci/summary.md")"
fi

# Stopped runs leave nothing: SIGINT and SIGTERM remove IO-1's export folder
# before the process dies of the signal; a SIGKILLed run's folder is swept
# by the next command, since its process is gone.
interrupted_run() {
  local signo=$1 tmp="$work/tmp-$1"
  mkdir -p "$tmp"
  # A background job starts with SIGINT ignored, which sluice respects;
  # env gives it back its default, as an interactive shell's job would have.
  TMPDIR="$tmp" env --default-signal=INT "$sluice" bench --scenarios IO-1 --variants mmap --repetitions 32 --batches 200 \
    --output-dir "$work/interrupted" --quiet >/dev/null 2>&1 &
  local pid=$! waited=0
  until compgen -G "$tmp/sluice-io1-$pid-*/image.npy" >/dev/null || [ $waited -ge 600 ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
  kill -s "$signo" "$pid"
  wait "$pid"
  local rc=$?
  left=$(find "$tmp" -mindepth 1 | head -3)
  echo "$rc"
}
for signo in INT TERM; do
  rc=$(interrupted_run "$signo")
  expected=$((128 + $(kill -l "$signo")))
  if [ "$rc" -eq "$expected" ] && [ -z "$(find "$work/tmp-$signo" -mindepth 1)" ]; then
    ok "SIG$signo removes IO-1's export folder and the run dies of the signal"
  else
    not_ok "SIG$signo removes IO-1's export folder and the run dies of the signal" "exit $rc, expected $expected" \
      "left: $(find "$work/tmp-$signo" -mindepth 1 | head -3)"
  fi
done
rc=$(interrupted_run KILL)
if [ -n "$(find "$work/tmp-KILL" -mindepth 1 -name 'sluice-io1-*')" ]; then
  TMPDIR="$work/tmp-KILL" "$sluice" list >/dev/null 2>&1
  if [ -z "$(find "$work/tmp-KILL" -mindepth 1)" ]; then
    ok "the next run sweeps what a SIGKILLed run left"
  else
    not_ok "the next run sweeps what a SIGKILLed run left" "left: $(find "$work/tmp-KILL" -mindepth 1 | head -3)"
  fi
else
  not_ok "the next run sweeps what a SIGKILLed run left" "the killed run left no folder to sweep (exit $rc)"
fi

# Ctrl-C during a bench says what finished and where its records are;
# the records written before it stay, whole and readable.
rm -rf "$work/ctrlc"
env --default-signal=INT "$sluice" bench --scenarios CV-1,IO-1 --variants 32x32,mmap --adapters reference \
  --repetitions 32 --batches 200 --output-dir "$work/ctrlc" --quiet >/dev/null 2>"$work/ctrlc.err" &
pid=$!
waited=0
until [ -f "$work/ctrlc/ci/CV-1__32x32__reference.json" ] || [ $waited -ge 1200 ]; do
  sleep 0.05
  waited=$((waited + 1))
done
# The record is on disk a moment before bench counts it as finished.
sleep 0.5
kill -s INT "$pid"
wait "$pid"
rc=$?
kept=$(find "$work/ctrlc/ci" -name '*.json' | wc -l)
named=0
for f in "$work/ctrlc/ci/"*.json; do
  name=$(basename "$f" .json | sed 's#__#/#g')
  grep -qF "$name" "$work/ctrlc.err" && named=$((named + 1))
done
if [ "$rc" -eq 130 ] && grep -qE "interrupted; [0-9]+ runs? finished \(CV-1/32x32/reference" "$work/ctrlc.err" &&
  grep -qF "kept in $work/ctrlc/ci/" "$work/ctrlc.err" && [ "$kept" -ge 1 ] && [ "$named" -eq "$kept" ] &&
  "$sluice" summary "$work/ctrlc/ci" >/dev/null 2>&1; then
  ok "Ctrl-C in a bench names the $kept finished run(s) and where they are kept; exit 130; the records read"
else
  not_ok "Ctrl-C in a bench names the finished runs and where they are kept" "exit $rc, $kept kept, $named named" \
    "$(tail -3 "$work/ctrlc.err")"
fi

# The export holds no answer; --digests writes them outside it, never inside.
peers_dir=$(cd "$(dirname "$0")/../../peers" && pwd)
if "$sluice" export --scenario PC-1 --variant depth1 --batches 2 --output "$work/export" \
    --digests "$work/export/answers.npy" >/dev/null 2>"$work/export.err"; then
  not_ok "export refuses --digests inside --output"
elif [ $? -eq 2 ] && grep -q "inside --output" "$work/export.err"; then
  ok "export refuses --digests inside --output"
else
  not_ok "export refuses --digests inside --output" "$(cat "$work/export.err")"
fi
if "$sluice" export --scenario PC-1 --variant depth1 --batches 2 --output "$work/export" \
    --digests "$work/answers.npy" >/dev/null 2>&1 && [ -s "$work/answers.npy" ] &&
    ! ls "$work/export" | grep -q digest && ! grep -q digest "$work/export/plan.json"; then
  ok "export writes the digests apart, none in the export"
else
  not_ok "export writes the digests apart, none in the export" "$(ls "$work/export")"
fi
# sluice peer-check: a loader of the standard library alone, honest and wrong.
if [ -x /usr/bin/python3 ]; then
  out=$("$sluice" peer-check "$peers_dir/testing/plain.py" --scenario PC-1 --batches 2 2>&1)
  if [ $? -eq 0 ] && echo "$out" | grep -q ": bitwise"; then
    ok "peer-check says an honest loader is bitwise"
  else
    not_ok "peer-check says an honest loader is bitwise" "$out"
  fi
  out=$("$sluice" peer-check "$peers_dir/testing/wrong.py" --scenario PC-1 --batches 2 2>&1)
  if [ $? -eq 1 ] && echo "$out" | grep -q "first difference: batch 0: field 'x' row 0 value 0"; then
    ok "peer-check names a wrong loader's first difference and exits 1"
  else
    not_ok "peer-check names a wrong loader's first difference and exits 1" "$out"
  fi
else
  ok "peer-check skipped: it needs /usr/bin/python3"
  ok "peer-check skipped: it needs /usr/bin/python3"
fi
# A built-in peer by its adapter name, run as the bench runs it (its own
# Python and arguments); a name that is neither a peer nor a file is named.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  out=$("$sluice" peer-check peer:numpy --scenario PC-1 --batches 2 2>&1)
  if [ $? -eq 0 ] && echo "$out" | grep -q "^peer:numpy on PC-1/depth1 .*: bitwise; framework numpy"; then
    ok "peer-check runs a built-in peer by its name"
  else
    not_ok "peer-check runs a built-in peer by its name" "$out"
  fi
else
  ok "peer-check of a built-in skipped: it needs numpy (ci/install-peers.sh numpy)"
fi
out=$("$sluice" peer-check peer:nonesuch --scenario PC-1 --batches 2 2>&1)
if [ $? -ne 0 ] && echo "$out" | grep -q "peer:nonesuch is neither a built-in peer"; then
  ok "peer-check names an unknown peer"
else
  not_ok "peer-check names an unknown peer" "$out"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
