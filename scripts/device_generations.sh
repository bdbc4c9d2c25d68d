#!/usr/bin/env bash
# On a GPU machine with the packed build (docs/gpu.md): study 4's GPU-generation part
# (configs/studies/salvaris_gpu.yaml: resnet50 in fp32, tf32, fp16 and bf16, two runs each),
# expanded with configs/sites/device-local.yaml and run by the local executor, one run at a time.
# A machine has one GPU generation; each session that runs this adds its generation to the
# study (reports/studies/salvaris/README.md "GPU generations").
#
# Usage: scripts/device_generations.sh [OUT_DIR]      (default $OUT)
# Writes OUT_DIR/campaign/ (manifest, run files, logs: `python -m trainscale_analysis archive`
# takes it here) and OUT_DIR/generations.txt (a line per run: precision, its exit, its summary).
# Exit 0 when every run finished, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-results}}
mkdir -p "$out"
[[ ${TRAINSCALE_BINARY:-} == "$PWD/.device/bin/trainscale" ]] || source scripts/device_env.sh || exit 1
camp=$out/campaign
rm -rf "$camp"
trainscale sweep expand configs/studies/salvaris_gpu.yaml --site configs/sites/device-local.yaml --out "$camp" || exit 1
trainscale sweep submit "$camp"
status=$?
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
for log in "$camp"/logs/*.attempt1.log; do
  [[ -e $log ]] || continue
  precision=$(grep -o 'backend cuda [a-z0-9]*' "$log" | head -1 | cut -d' ' -f3)
  summary=$(grep -E '^summary:' "$log" | head -1)
  echo "$(basename "$log" .attempt1.log) ${precision:-?} on ${gpu:-unknown GPU}: ${summary:-$(tail -n 1 "$log")}"
done | sort -k2 | tee "$out/generations.txt"
exit $((status == 0 ? 0 : 1))
