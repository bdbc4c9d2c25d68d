#!/usr/bin/env bash
# Configures and builds trainscale (Release) into build/ against Open MPI.
# Usage: scripts/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" -DTRAINSCALE_MPI_FLAVOR=openmpi "$@" >build.log 2>&1 \
  || { cat build.log >&2; echo "build.sh: cmake configure failed (log: build.log)" >&2; exit 1; }
cmake --build build -j "$jobs" >>build.log 2>&1 \
  || { tail -n 60 build.log >&2; echo "build.sh: build failed (full log: build.log)" >&2; exit 1; }
echo "built build/bin/trainscale"
