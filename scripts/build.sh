#!/usr/bin/env bash
# Configures and builds trainscale (Release): build/ against Open MPI (everything), then
# build-mpich/ against MPICH (the driver and the MPI tests only, -DTRAINSCALE_TESTS_MPI_ONLY=ON),
# so the MPI tests run under both flavors, and build-impi/ against Intel MPI from PyPI (.venv-impi,
# the same subset) when scripts/setup.sh installed it. Logs: build.log, build-*/build.log.
# build/ also builds the CUDA backend (-DTRAINSCALE_CUDA=ON) when the CUDA toolkit is at
# /usr/local/cuda: its tests that need no device run everywhere, the others skip (label gpu).
# build-mpich/ stays CPU-only. build/ also builds build/bin/trainscale-sim (the simulator, SimGrid
# SMPI) when libsimgrid-dev is installed; without it CMake says so and builds the rest.
# Usage: scripts/build.sh [--main] [extra cmake -D options, given to every build; the last -D wins]
#   --main: only what the main job needs (scripts/quickstart.sh): build/bin/trainscale against
#           Open MPI, without the tests, the CUDA backend, the simulator and the other flavors.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

main_only=0
if [[ ${1:-} == --main ]]; then
  main_only=1
  shift
fi
target=()
((main_only)) && target=(--target trainscale)

# build_one DIR LOG FLAVOR [cmake options...]
build_one() {
  local dir=$1 log=$2 flavor=$3
  shift 3
  mkdir -p "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" -DTRAINSCALE_MPI_FLAVOR="$flavor" "$@" >"$log" 2>&1 \
    || { cat "$log" >&2; echo "build.sh: cmake configure of $dir ($flavor) failed (log: $log)" >&2; exit 1; }
  cmake --build "$dir" -j "$jobs" "${target[@]}" >>"$log" 2>&1 \
    || { tail -n 60 "$log" >&2; echo "build.sh: build of $dir ($flavor) failed (full log: $log)" >&2; exit 1; }
  echo "built $dir/bin/trainscale ($flavor)"
}

if ((main_only)); then
  build_one build build.log openmpi -DTRAINSCALE_TESTS=OFF -DTRAINSCALE_CUDA=OFF -DTRAINSCALE_SIM=OFF "$@"
  exit 0
fi
cuda=(-DTRAINSCALE_CUDA=OFF)
[[ -x /usr/local/cuda/bin/nvcc ]] && cuda=(-DTRAINSCALE_CUDA=ON)
# (the options a --main build turned off, turned on again)
build_one build build.log openmpi -DTRAINSCALE_TESTS=ON -DTRAINSCALE_SIM=auto "${cuda[@]}" "$@"
build_one build-mpich build-mpich/build.log mpich -DTRAINSCALE_TESTS_MPI_ONLY=ON -DTRAINSCALE_CUDA=OFF "$@"
# Intel MPI (from PyPI, scripts/setup.sh): the third flavor, built like MPICH's when installed.
if [[ -x .venv-impi/bin/mpicxx ]]; then
  build_one build-impi build-impi/build.log intel -DTRAINSCALE_TESTS_MPI_ONLY=ON -DTRAINSCALE_CUDA=OFF "$@"
fi
