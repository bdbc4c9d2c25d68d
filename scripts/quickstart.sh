#!/usr/bin/env bash
# The main job on a fresh machine: set-up, build, then the quickstart campaign
# (configs/quickstart.yaml: LeNet on Fashion-MNIST, workers 1 and 2, fp32 and bf16, two
# all-reduce algorithms, a batch/LR pair; about 10 minutes on 2 cores) expanded against
# configs/sites/local.yaml and run by the local executor, its status, and an HTML report of it
# (reports/quickstart.html). Runs this build cannot do fail with their reason (sweep status)
# and the report covers the rest. Running it again skips the runs that are done.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
source scripts/env.sh
campaign=runs/quickstart-campaign
build/bin/trainscale sweep expand configs/quickstart.yaml --site configs/sites/local.yaml --out "$campaign"
if ! build/bin/trainscale sweep submit "$campaign" --scheduler local; then
  echo "quickstart: some runs failed; their reasons:"
fi
build/bin/trainscale sweep status "$campaign"
.venv/bin/python -m trainscale_analysis report "$campaign" -o reports/quickstart.html >/dev/null
echo "campaign: $campaign (manifest.yaml, runs/*.h5, logs/)"
echo "report:   reports/quickstart.html"
