#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang with ASan + UBSan, in build-fuzz/) and runs
# each for SECONDS (default 60): the run-config, sweep-file, site-file and manifest parsers,
# the IDX, CIFAR-10, records, HDF5 and jpeg_dir readers and blob storage's listing parsers.
# Each target starts from its seed corpus tests/fuzz/<target>/ (read-only here) and keeps what
# it discovers in build-fuzz/corpus/<target>/. A crash, leak, timeout or out-of-memory input is
# written to build-fuzz/artifacts/<target>/ and fails the script: fix the bug, then copy the
# input into tests/fuzz/<target>/ so every build replays it (tests/cpp/test_fuzz_corpus.cpp).
# docs/reliability.md "Fuzzing and sanitizers".
# FUZZ_RUNS=N instead runs each target for exactly N inputs from seed 1: the same inputs on
# every machine (from an empty build-fuzz/corpus/, as in CI: what a local corpus holds changes
# the exploration), so a CI run replays a fixed exploration and a new crash is found by a longer
# run by hand (or nightly), not by chance in somebody's CI.
# Usage: scripts/fuzz.sh [--build] [SECONDS] [TARGET...]    (FUZZ_JOBS: build jobs, default nproc)
#   --build: only configure and build the targets (scripts/test.sh builds them in the background).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [[ ${1:-} == --build ]]; then
  build_only=1
  shift
fi
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(run_config sweep_file site_file manifest idx cifar records hdf5 jpeg_dir blob_listing)
CC=${FUZZ_CC:-clang-14}
CXX=${FUZZ_CXX:-clang++-14}
command -v "$CXX" >/dev/null || { echo "fuzz.sh: $CXX not found (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
log=build-fuzz/build.log
mkdir -p build-fuzz
if [[ ! -f build-fuzz/CMakeCache.txt ]]; then
  cmake -S . -B build-fuzz -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRAINSCALE_FUZZ=ON -DTRAINSCALE_TESTS=OFF -DTRAINSCALE_CUDA=OFF >"$log" 2>&1 \
    || { cat "$log" >&2; echo "fuzz.sh: configure of build-fuzz/ failed" >&2; exit 1; }
fi
binaries=()
for t in "${targets[@]}"; do binaries+=(--target "fuzz_$t"); done
cmake --build build-fuzz -j "$jobs" "${binaries[@]}" >>"$log" 2>&1 \
  || { tail -n 40 "$log" >&2; echo "fuzz.sh: build failed (log: $log)" >&2; exit 1; }
((build_only)) && exit 0

# Leaks and UBSan findings are failures; libFuzzer's -timeout catches hangs.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t artifacts=build-fuzz/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [[ -f tests/fuzz/$t.dict ]] && dict=(-dict="tests/fuzz/$t.dict")
  budget=(-max_total_time="$seconds") amount="${seconds}s"
  if [[ -n ${FUZZ_RUNS:-} ]]; then budget=(-runs="$FUZZ_RUNS" -seed=1) amount="$FUZZ_RUNS inputs from seed 1"; fi
  echo "fuzz.sh: $t for $amount"
  if ! build-fuzz/bin/fuzz_"$t" "$corpus" "tests/fuzz/$t" "${dict[@]}" "${budget[@]}" -timeout=10 \
       -rss_limit_mb=2048 -artifact_prefix="$artifacts/" -print_final_stats=1 >"build-fuzz/$t.log" 2>&1; then
    status=1
    grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "build-fuzz/$t.log" | head -20 >&2
    echo "fuzz.sh: $t FAILED (log: build-fuzz/$t.log); reproduce with build-fuzz/bin/fuzz_$t <input>," \
         "fix, then keep the input in tests/fuzz/$t/" >&2
  else
    grep -E "stat::number_of_executed_units|cov:" "build-fuzz/$t.log" | tail -2 | sed "s/^/  /"
  fi
done
exit $status
