#!/usr/bin/env bash
# On a GPU machine with the packed build (docs/gpu.md): a CPU rank and a CUDA rank train one
# model together (ranks.backend, docs/heterogeneous.md "Ranks of different kinds"). For lenet and
# resnet20 on synthetic data, four runs of the same global batch and steps:
#   cuda   1 rank on the GPU;            cpu    1 rank on CPU_THREADS cores;
#   equal  cpu + cuda, equal shares;     static cpu + cuda, shares in proportion to the
#                                               speeds of the two single-rank runs;
#   measured  cpu + cuda, shares from the speeds each rank measures over its first 5 steps;
#   adaptive  the same, re-measured and re-balanced every 10 steps;
#   static-device  the static shares with dist.hetero_allreduce device (the CPU rank's buckets
#              summed on the GPU, dist.allreduce nccl) instead of host (the GPU's through ring).
# Each run file is copied to OUT_DIR/<model>-<run>.h5 (python -m trainscale_analysis report reads
# them: "Heterogeneous workers" has the per-batch worker table) and OUT_DIR/hetero.txt lists
# img/s and the shares. Exit 0 when every run finished.
#
# Usage: scripts/device_hetero.sh [OUT_DIR] [CPU_THREADS]   (default $OUT, 12)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-results}}
cpu_threads=${2:-12}
mkdir -p "$out"
[[ ${TRAINSCALE_BINARY:-} == "$PWD/.device/bin/trainscale" ]] || source scripts/device_env.sh || exit 1
status=0
work=$(mktemp -d)

# img/s of a finished run, from its summary line ("... 65.5 img/s (median ...").
img_per_s() { grep -o '[0-9.]* img/s (median' "$1" | cut -d' ' -f1; }

# run NAME MODEL BATCH STEPS WORKERS EXTRA_YAML [EXTRA_DIST_KEYS]   (dist.allreduce: $algo, ring)
run() {
  local name=$1 model=$2 batch=$3 steps=$4 workers=$5 extra=$6 dist=${7:-}
  cat >"$work/$name.yaml" <<CFG
model: $model
dataset: {name: synthetic, synthetic_samples: 8192, loader_threads: 2}
global_batch: $batch
lr: 0.02
momentum: 0.9
steps: $steps
workers: $workers
dist: {allreduce: ${algo:-ring}, bucket_mb: 4$dist}
eval: {every_epochs: 0}
log_every: 10
seed: 3
$extra
CFG
  local log=$out/$name.log
  if ((workers == 1)); then
    trainscale run --config "$work/$name.yaml" --out "$work/$name" >"$log" 2>&1
  else
    mpiexec -n "$workers" trainscale run --config "$work/$name.yaml" --out "$work/$name" >"$log" 2>&1
  fi
  local rc=$?
  cp "$work/$name"/*.h5 "$out/$name.h5" 2>/dev/null
  echo "$name: exit $rc, $(img_per_s "$log") img/s $(grep -o 'shares:\? [0-9,]*\( from step [0-9]*\)\?' "$log" | tr '\n' ' ')" | tee -a "$out/hetero.txt"
  ((rc == 0)) || status=1
}

: >"$out/hetero.txt"
for spec in "lenet 512 60" "resnet20 256 30"; do
  read -r model batch steps <<<"$spec"
  run "$model-cuda" "$model" "$batch" "$steps" 1 "backend: cuda"
  run "$model-cpu" "$model" "$batch" "$steps" 1 "threads: $cpu_threads"
  ranks="ranks: [{backend: cpu, threads: $cpu_threads}, {backend: cuda}]"
  run "$model-equal" "$model" "$batch" "$steps" 2 "$ranks"
  # Shares in proportion to the single-rank speeds, in multiples of 8, each at least 8.
  cpu_share=$(python3 -c "
g, c = float('$(img_per_s "$out/$model-cuda.log")' or 0), float('$(img_per_s "$out/$model-cpu.log")' or 0)
b = $batch
s = 8 * round(b * c / (c + g) / 8) if c + g > 0 else b // 2
print(min(max(s, 8), b - 8))")
  run "$model-static" "$model" "$batch" "$steps" 2 "$ranks" \
    ", partition: static, shares: [$cpu_share, $((batch - cpu_share))]"
  algo=nccl run "$model-static-device" "$model" "$batch" "$steps" 2 "$ranks" \
    ", partition: static, shares: [$cpu_share, $((batch - cpu_share))], hetero_allreduce: device"
  run "$model-measured" "$model" "$batch" "$steps" 2 "$ranks" \
    ", partition: measured, share_quantum: 8, calibration_steps: 5"
  run "$model-adaptive" "$model" "$batch" "$steps" 2 "$ranks" \
    ", partition: adaptive, share_quantum: 8, calibration_steps: 5, rebalance_steps: 10"
done
rm -rf "$work"
exit $status
