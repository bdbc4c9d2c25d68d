#!/usr/bin/env bash
# The main job on a fresh machine: set-up, build, train lenet on Fashion-MNIST on the CPU,
# and print where the HDF5 run file is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
source scripts/env.sh
out=runs/quickstart
mkdir -p "$out"
build/bin/trainscale run --config configs/runs/lenet_fmnist.yaml --out "$out"
echo "run file: $(ls -t "$out"/*.h5 | head -n 1)"
