#!/usr/bin/env bash
# On a GPU machine with the packed build (docs/gpu.md): the device memory check of `backend: cuda`
# (docs/reliability.md "Memory", train/device_memory_estimate.h).
#   1. Runs that fit: the estimate each run logs ("device memory: estimate X ...") against the
#      most device memory it used above the check ("device memory: used up to Y ..."), within 30%.
#   2. A batch that cannot fit: exit 2 before the model is built, the message naming the estimate
#      and the device's free memory.
# OUT_DIR/memory.txt lists each case; the logs are beside it. Exit 1 when a case fails.
#
# Usage: scripts/device_memory.sh [OUT_DIR]   (default $OUT, else device-results)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-results}}
mkdir -p "$out"
[[ ${TRAINSCALE_BINARY:-} == "$PWD/.device/bin/trainscale" ]] || source scripts/device_env.sh || exit 1
status=0
work=$(mktemp -d)
report=$out/memory.txt
: >"$report"

# write_config NAME MODEL BATCH PRECISION
write_config() {
  cat >"$work/$1.yaml" <<CFG
model: $2
dataset: {name: synthetic, synthetic_samples: $(($3 * 2)), loader_threads: 2}
batch_per_worker: $3
precision: $4
backend: cuda
lr: 0.01
momentum: 0.9
steps: 12
eval: {every_epochs: 0}
log_every: 4
seed: 3
CFG
}

# Bytes of a "1.5 GiB" / "300.0 MiB" / "12 KiB" / "100 B" text.
to_bytes() {
  python3 -c "import sys; v, u = sys.argv[1], sys.argv[2]; print(int(float(v) * {'B': 1, 'KiB': 2**10, 'MiB': 2**20, 'GiB': 2**30, 'TiB': 2**40}[u]))" "$1" "$2"
}

# fits NAME MODEL BATCH PRECISION: the estimate within 30% of the measured use.
fits() {
  write_config "$1" "$2" "$3" "$4"
  local log=$out/memory-$1.log
  trainscale run --config "$work/$1.yaml" --out "$work/$1" >"$log" 2>&1
  local rc=$?
  local est used
  est=$(grep -o 'device memory: estimate [0-9.]* [KMGT]*i*B' "$log" | head -1 | awk '{print $4, $5}')
  used=$(grep -o 'device memory: used up to [0-9.]* [KMGT]*i*B' "$log" | head -1 | awk '{print $6, $7}')
  if ((rc != 0)) || [[ -z $est || -z $used ]]; then
    echo "$1 ($2, batch $3, $4): FAIL, exit $rc, estimate '$est', used '$used'" | tee -a "$report"
    status=1
    return
  fi
  local verdict
  verdict=$(python3 -c "
e, u = $(to_bytes $est), $(to_bytes $used)
r = e / u
print(f'estimate {e / 2**20:.0f} MiB, used {u / 2**20:.0f} MiB, ratio {r:.2f}:', 'ok' if 0.7 <= r <= 1.3 else 'FAIL')")
  echo "$1 ($2, batch $3, $4): $verdict" | tee -a "$report"
  [[ $verdict == *ok ]] || status=1
}

# refused NAME MODEL BATCH PRECISION: exit 2 with the device memory message.
refused() {
  write_config "$1" "$2" "$3" "$4"
  local log=$out/memory-$1.log
  trainscale run --config "$work/$1.yaml" --out "$work/$1" >"$log" 2>&1
  local rc=$?
  if ((rc == 2)) && grep -q 'device memory: this run needs about' "$log" && grep -q 'free of' "$log"; then
    echo "$1 ($2, batch $3, $4): refused with exit 2: ok" | tee -a "$report"
  else
    echo "$1 ($2, batch $3, $4): FAIL, exit $rc (expected 2 and the device memory message)" | tee -a "$report"
    status=1
  fi
}

fits resnet50-fp16 resnet50 256 fp16
fits resnet50-fp32 resnet50 128 fp32
fits resnet20-fp32 resnet20 1024 fp32
fits vgg16-bf16 vgg16 64 bf16
refused resnet50-huge resnet50 20000 fp16
rm -rf "$work"
exit $status
