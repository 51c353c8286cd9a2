#!/usr/bin/env bash
# The one prepared device check (docs/gpu-check.md).
#
#   ci/gpu-check.sh prepare   here, on a machine with nvcc and no driver:
#                             builds build-gpu/ with CUDA and packs the
#                             bundle build-gpu/gpu-bundle.tar.xz (the sluice
#                             binary, the test binaries the check runs, and
#                             every shared library they need beyond glibc)
#   ci/gpu-check.sh run       on the device machine (or here, where the
#                             device stages say "no device"): unpacks the
#                             bundle and runs every stage, writing each
#                             stage's output under $OUT (default
#                             build-gpu/out); exits 1 on any failure
#
# On the device machine of this workplace:
#   run(command: "ci/gpu-check.sh run", carry: ["build-gpu/gpu-bundle.tar.xz"],
#       timeout_s: 480)
# The whole run stays under 8 minutes: every stage has its own limit.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build_dir=${BUILD_DIR:-build-gpu}
bundle_tar="$build_dir/gpu-bundle.tar.xz"
mode=${1:-}

# The test binaries the check runs, relative to the build folder: the device
# suite first, then every scenario file (each compares every available
# adapter, cuda and cuda-graph included, with the reference).
device_tests=(tests/unit/test_cuda tests/unit/test_cuda_bodies tests/unit/test_cuda_plan)
# glibc's own libraries and the driver: on every machine that can run the
# bundle, and the driver must be the machine's own.
system_libs='(^|/)(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64|libcuda)\.so'
scenario_tests() { (cd "$1" && find corpus/tests -maxdepth 1 -type f -executable -name 'test_*' ! -name 'test_dist*' | sort); }

prepare() {
    export PATH=/usr/local/cuda/bin:$PATH
    ci/install-deps.sh || return 1
    if [ ! -f "$build_dir/build.ninja" ]; then
        meson setup "$build_dir" -Dcuda=enabled -Dmpi=disabled -Dbuildtype=release >&2 || return 1
    fi
    ninja -C "$build_dir" >&2 || return 1
    local stage="$build_dir/bundle"
    rm -rf "$stage" && mkdir -p "$stage/bin/tests/unit" "$stage/bin/corpus/tests" "$stage/bin/tools" "$stage/lib"
    cp "$build_dir/tools/sluice" "$build_dir/tools/sluice-device-bandwidth" "$stage/bin/tools/"
    cp ci/gpu/figures.py "$stage/bin/"
    for t in "${device_tests[@]}" $(scenario_tests "$build_dir"); do
        cp "$build_dir/$t" "$stage/bin/$t"
    done
    nvcc -O2 -gencode=arch=compute_90,code=sm_90 -o "$stage/bin/device_limits" ci/gpu/device_limits.cu || return 1
    # libsluice from the build folder, whatever the run path says.
    cp -L "$build_dir"/libsluice.so.0 "$stage/lib/"
    # Every shared library the binaries and libsluice load, except glibc's
    # own and the driver (which only the device machine has): those a bare
    # machine has.
    local libs
    libs=$(for f in $(find "$stage/bin" "$stage/lib" -type f); do LD_LIBRARY_PATH="$stage/lib" ldd "$f" 2>/dev/null; done |
        awk '/=> \// {print $3}' | sort -u | grep -v "^$stage/lib/" | grep -Ev "$system_libs")
    for l in $libs; do cp -L "$l" "$stage/lib/"; done
    # The path the binaries were built under (goldens are read from it).
    echo "$root" >"$stage/source_root"
    git rev-parse --short=12 HEAD >"$stage/commit" 2>/dev/null || echo unknown >"$stage/commit"
    # Check that nothing else is needed: with the bundle's libraries first,
    # every dependency resolves either inside the bundle or to glibc.
    local outside
    outside=$(for f in $(find "$stage/bin" "$stage/lib" -type f); do LD_LIBRARY_PATH="$stage/lib" ldd "$f" 2>/dev/null; done |
        awk '/=> / {print $1, $3}' | grep -v " $stage/lib/" | grep -Ev "$system_libs" | sort -u)
    if [ -n "$outside" ]; then
        echo "gpu-check: the bundle would load from outside itself: $outside" >&2
        return 1
    fi
    tar -C "$build_dir" -cJf "$bundle_tar" bundle || return 1
    echo "gpu-check: bundle $bundle_tar, $(du -h "$bundle_tar" | cut -f1) ($(du -sh "$stage" | cut -f1) unpacked)"
}

# Runs one stage with a time limit, its output in $OUT/logs/<name>.log, and
# appends its outcome to the summary.
failures=0
stage() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS rc
    timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
    rc=$?
    local took=$((SECONDS - start))
    local verdict=ok
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        verdict="timed out after ${limit}s"
        failures=$((failures + 1))
    elif [ $rc -ne 0 ]; then
        verdict="failed (exit $rc)"
        failures=$((failures + 1))
    fi
    printf '| %s | %s | %ss |\n' "$name" "$verdict" "$took" >>"$summary"
    printf 'gpu-check: %-28s %s (%ss)\n' "$name" "$verdict" "$took"
    return $rc
}

run() {
    local out=${OUT:-$build_dir/out}
    mkdir -p "$out"
    logs="$out/logs"
    mkdir -p "$logs"
    summary="$out/summary.md"
    local work=/tmp/sluice-gpu-check
    rm -rf "$work" && mkdir -p "$work"
    tar -C "$work" -xJf "$bundle_tar" || { echo "gpu-check: no bundle at $bundle_tar; run 'ci/gpu-check.sh prepare' first" >&2; exit 2; }
    bin="$work/bundle/bin"
    export LD_LIBRARY_PATH="$work/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # The binaries read goldens under the path they were built in: make
    # that path this checkout when they differ.
    local built_root
    built_root=$(cat "$work/bundle/source_root")
    if [ "$built_root" != "$root" ] && [ ! -e "$built_root" ]; then
        mkdir -p "$(dirname "$built_root")" && ln -s "$root" "$built_root"
    fi
    export SLUICE_SOURCE_ROOT="$built_root"
    # cuBLAS (log_mel's products on the device) is hundreds of megabytes,
    # too large to carry: the device machine's own Python wheels
    # (nvidia-cublas, which PyTorch brings) provide it when they are there.
    local cublas=none py
    for py in python3 /usr/bin/python3; do
        cublas=$("$py" -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' \
            2>/dev/null) && [ -d "$cublas" ] && break
        cublas=none
    done
    [ "$cublas" = none ] || export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cublas"

    local has_device=no
    if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then has_device=yes; fi
    {
        echo "# gpu-check"
        echo
        echo "- commit: $(cat "$work/bundle/commit"), started $(date -u +%FT%TZ)"
        echo "- host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
        if [ $has_device = yes ]; then
            echo "- device: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader)"
        else
            echo "- device: none (the device stages report 'no device')"
        fi
        echo "- cuBLAS from Python wheels: $cublas (else the system's library path; device-bandwidth says which loaded)"
        echo
        echo "| stage | outcome | time |"
        echo "| --- | --- | --- |"
    } >"$summary"

    if [ $has_device = yes ]; then
        stage device-limits 60 "$bin/device_limits"
        stage device-bandwidth 60 "$bin/tools/sluice-device-bandwidth"
    else
        echo "| device-limits | no device | 0s |" >>"$summary"
        stage device-bandwidth 60 "$bin/tools/sluice-device-bandwidth" --emulate
    fi
    # The device suite: without a device its device tests skip with the
    # probe's reason, and the rest (bodies on the CPU, the plan) still run.
    for t in "${device_tests[@]}"; do
        stage "$(basename "$t")" 120 "$bin/$t" --tap=- --jobs=1
    done
    # Every scenario file, eight at a time: equivalence of every available
    # adapter (cuda and cuda-graph where a device is) with the reference.
    export SLUICE_RECORDS_DIR="$work/test-records"
    local scenario_log="$logs/scenarios.log"
    (cd "$bin" && ls corpus/tests/) | xargs -P 8 -I{} sh -c \
        'timeout 300 "$0/corpus/tests/{}" --tap=- --jobs=1 >"$1/{}.tap" 2>&1 || echo "{}: exit $?"' \
        "$bin" "$logs" >"$scenario_log"
    if [ -s "$scenario_log" ]; then
        echo "| scenarios | failed: $(tr '\n' ' ' <"$scenario_log") | |" >>"$summary"
        failures=$((failures + 1))
    else
        echo "| scenarios | ok ($(ls "$bin/corpus/tests" | wc -l) files) | |" >>"$summary"
    fi
    # Speed: the gate set at full size on the CPU adapters and both device
    # adapters, then fused alone at 1 to 16 threads.
    local records="$work/records"
    stage bench-gpu 240 "$bin/tools/sluice" bench --profile gpu --scenarios gate --repetitions 3 \
        --adapters reference,fused,cuda,cuda-graph --threads 1 --output-dir "$records/devices" --quiet
    cat "$logs/bench-gpu.log" >>"$summary"
    for threads in 1 2 4 8 16; do
        [ "$threads" -le "$(nproc)" ] || continue
        stage "fused-threads-$threads" 120 "$bin/tools/sluice" bench --profile full --scenarios gate \
            --repetitions 3 --adapters fused --threads "$threads" --output-dir "$records/threads-$threads" --quiet
    done
    {
        echo
        echo "## Figures"
        echo
        for f in device-limits device-bandwidth; do
            [ -f "$logs/$f.log" ] && { cat "$logs/$f.log"; echo; }
        done
        echo
        python3 "$bin/figures.py" "$records" 2>&1
    } >>"$summary"
    for threads in 1 2 4 8 16; do
        [ -f "$logs/fused-threads-$threads.log" ] || continue
        echo
        echo "fused, --threads $threads:"
        grep -E '^(scenario|[A-Z]+-[0-9])' "$logs/fused-threads-$threads.log"
    done >>"$summary"
    tar -C "$work" -czf "$out/records.tar.gz" records test-records 2>/dev/null
    tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"
    echo >>"$summary"
    echo "failures: $failures" >>"$summary"
    cat "$summary"
    [ $failures -eq 0 ]
}

case "$mode" in
prepare) prepare ;;
run) run ;;
*)
    echo "usage: ci/gpu-check.sh prepare|run" >&2
    exit 2
    ;;
esac
