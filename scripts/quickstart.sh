#!/usr/bin/env bash
# The main job on a fresh machine, in minutes: set-up of only what it needs (scripts/setup.sh
# --main), the driver alone (scripts/build.sh --main: no tests, no CUDA backend, no second MPI),
# then the quickstart campaign (configs/quickstart.yaml: LeNet on Fashion-MNIST, 300 steps per
# run, workers 1 and 2, fp32 and bf16, two all-reduce algorithms, a batch/LR pair: 12 runs)
# expanded against configs/sites/local.yaml and run by the local executor, its status, and an HTML
# report of it (reports/quickstart.html). A line per stage says how long it took.
# Points this machine cannot run (bf16 on a CPU without AVX-512) are marked unsupported with the
# reason when the campaign is expanded, and the report lists them; every other run finishes.
# Running it again skips the runs that are done. scripts/test.sh builds and tests everything.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
stage() {  # stage NAME COMMAND...: runs it, then prints how long it took and the total so far
  local name=$1 t0=$SECONDS
  shift
  echo "quickstart: $name ..."
  "$@"
  echo "quickstart: $name took $((SECONDS - t0)) s (total $((SECONDS - start)) s)"
}
stage set-up scripts/setup.sh --main
stage build scripts/build.sh --main
source scripts/env.sh
campaign=runs/quickstart-campaign
runs() {
  build/bin/trainscale sweep expand configs/quickstart.yaml --site configs/sites/local.yaml --out "$campaign"
  build/bin/trainscale sweep submit "$campaign" --scheduler local || echo "quickstart: some runs failed; sweep status says why"
  build/bin/trainscale sweep status "$campaign"
}
stage runs runs
stage report .venv/bin/python -m trainscale_analysis report "$campaign" -o reports/quickstart.html >/dev/null
echo "campaign: $campaign (manifest.yaml, runs/*.h5, logs/)"
echo "report:   reports/quickstart.html"
