#!/usr/bin/env bash
# The main job on a fresh machine: set-up, build, train lenet on Fashion-MNIST on the CPU,
# print where the HDF5 run file is, and write an HTML report of it (reports/quickstart.html).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
source scripts/env.sh
out=runs/quickstart
mkdir -p "$out"
build/bin/trainscale run --config configs/runs/lenet_fmnist.yaml --out "$out"
.venv/bin/python -m trainscale_analysis report "$out" -o reports/quickstart.html >/dev/null
echo "run file: $(ls -t "$out"/*.h5 | head -n 1)"
echo "report:   reports/quickstart.html"
