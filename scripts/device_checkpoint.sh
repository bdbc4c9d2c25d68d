#!/usr/bin/env bash
# On a GPU machine with the packed build (docs/gpu.md): checkpoints of `backend: cuda` runs with
# `cuda.algorithms: deterministic` (docs/reliability.md "Checkpoint and resume").
#   1. Two uninterrupted runs of one config in two processes end with the same params_sha256
#      (the algorithms cuDNN ranks best among its deterministic ones, the same in every process).
#   2. A run killed with SIGKILL once its first checkpoint is on disk, then resumed with
#      --resume, ends with that same params_sha256 (bit-exact resume).
#   3. For comparison, two uninterrupted runs with the default cuda.algorithms (find) of the
#      first case: equal or not (not part of the verdict: find may choose differently).
# OUT_DIR/checkpoint.txt lists each case; the logs are beside it. Exit 1 when a case fails.
#
# Usage: scripts/device_checkpoint.sh [OUT_DIR]   (default $OUT, else device-results)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-results}}
mkdir -p "$out"
[[ ${TRAINSCALE_BINARY:-} == "$PWD/.device/bin/trainscale" ]] || source scripts/device_env.sh || exit 1
status=0
work=$(mktemp -d)
report=$out/checkpoint.txt
: >"$report"

# write_config NAME MODEL PRECISION ALGORITHMS: 400 steps of batch 128, a checkpoint every 100
# (long enough that the kill below lands before the end, even for lenet on a fast GPU); no
# checkpoints with other ALGORITHMS than deterministic, which refuse them (exit 2).
write_config() {
  cat >"$work/$1.yaml" <<CFG
model: $2
dataset: {name: synthetic, synthetic_samples: 4096, loader_threads: 2}
batch_per_worker: 128
precision: $3
backend: cuda
cuda: {algorithms: $4}
lr: 0.01
momentum: 0.9
steps: 400
eval: {every_epochs: 0}
$([[ $4 == deterministic ]] && echo "checkpoint: {every_steps: 100}")
log_every: 100
seed: 5
CFG
}

# run_once CONFIG OUT_DIR LOG [--resume]: prints the run's params_sha256 ("" when it failed).
run_once() {
  trainscale run --config "$1" --out "$2" "${@:4}" >"$3" 2>&1 || return 0
  grep -o '^params_sha256: [0-9a-f]*' "$3" | cut -d' ' -f2
}

# killed_and_resumed CONFIG OUT_DIR NAME: SIGKILL at the first checkpoint, then --resume.
killed_and_resumed() {
  trainscale run --config "$1" --out "$2" >"$out/$3-killed.log" 2>&1 &
  local pid=$!
  until compgen -G "$2/*.checkpoint.*.hdf5" >/dev/null; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if compgen -G "$2/*.h5" >/dev/null; then  # the run ended before the kill: nothing was tested
    echo "finished-before-kill"
    return
  fi
  run_once "$1" "$2" "$out/$3-resumed.log" --resume
}

# check NAME MODEL PRECISION
check() {
  write_config "$1" "$2" "$3" deterministic
  local a b r
  a=$(run_once "$work/$1.yaml" "$work/$1-a" "$out/$1-a.log")
  b=$(run_once "$work/$1.yaml" "$work/$1-b" "$out/$1-b.log")
  r=$(killed_and_resumed "$work/$1.yaml" "$work/$1-k" "$1")
  local resumed_from
  resumed_from=$(grep -o 'resuming after step [0-9]*' "$out/$1-resumed.log" 2>/dev/null | head -1)
  local verdict=ok
  [[ -n $a && $a == "$b" ]] || verdict=FAIL
  [[ -n $a && $r == "$a" ]] || verdict=FAIL
  [[ $verdict == ok ]] || status=1
  echo "$1 ($2, $3, deterministic): two runs ${a:0:12} / ${b:0:12}, killed and resumed (${resumed_from:-?}) ${r:0:20}: $verdict" |
    tee -a "$report"
}

check lenet-fp32 lenet fp32
check resnet20-fp32 resnet20 fp32
check resnet20-bf16 resnet20 bf16
check alexnet_cifar-fp16 alexnet_cifar fp16   # overlapping max pooling; loss scaling's state

write_config find lenet fp32 find
f1=$(run_once "$work/find.yaml" "$work/find-a" "$out/find-a.log")
f2=$(run_once "$work/find.yaml" "$work/find-b" "$out/find-b.log")
echo "lenet fp32 with cuda.algorithms find (for comparison): two runs ${f1:0:12} / ${f2:0:12}:" \
  "$([[ -n $f1 && $f1 == "$f2" ]] && echo equal || echo different)" | tee -a "$report"
rm -rf "$work"
exit $status
