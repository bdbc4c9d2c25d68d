#!/usr/bin/env bash
# On a GPU machine with the packed build (docs/gpu.md): every model of the zoo trains a few steps
# on backend cuda in each precision (synthetic data shaped for the model), then LeNet trains on
# Fashion-MNIST (a subset carried in .device/fashion-mnist, scripts/fmnist_subset.py) with
# backend cuda and backend cpu, and the test accuracies are compared.
#
# Usage: scripts/device_zoo.sh [OUT_DIR] [PRECISIONS]   (default $OUT; "fp32 tf32 fp16 bf16")
# Writes OUT_DIR/zoo.txt (one line per model x precision: exit code, final loss, img/s, skipped
# steps), OUT_DIR/graphs.txt (cuda.graphs false vs true) and OUT_DIR/fmnist.txt. Exit 0 when every run finished, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-results}}
precisions=${2:-fp32 tf32 fp16 bf16}
mkdir -p "$out"
[[ ${TRAINSCALE_BINARY:-} == "$PWD/.device/bin/trainscale" ]] || source scripts/device_env.sh || exit 1
status=0
work=$(mktemp -d)
models=$(grep -o '\.name = "[a-z0-9_]*"' src/nn/models.cpp | cut -d'"' -f2)
for model in $models; do
  data="{name: synthetic, synthetic_samples: 1024, loader_threads: 4}"
  [[ $model == neuron ]] && data="{name: neuron}"
  case $model in inception_v3|vgg16|resnet50|alexnet) batch=32 ;; *) batch=64 ;; esac
  for p in $precisions; do
    cat >"$work/cfg.yaml" <<CFG
model: $model
dataset: $data
batch_per_worker: $batch
lr: 0.01
steps: 12
backend: cuda
precision: $p
eval: {every_epochs: 0}
log_every: 4
CFG
    trainscale run --config "$work/cfg.yaml" --out "$work/run-$model-$p" >"$work/log" 2>&1
    rc=$?
    summary=$(grep -E '^summary:' "$work/log" | head -1)
    [[ $rc == 0 ]] || { status=1; [[ -n $summary ]] || summary=$(tail -n 2 "$work/log" | tr "\n" " " | cut -c1-300); }
    echo "$model $p batch=$batch rc=$rc $summary" | tee -a "$out/zoo.txt"
  done
done

# cuda.graphs: the recorded-and-replayed forward must train as the plain one does (the same
# kernels; cuDNN's algorithm search may choose differently per process, so close, not equal).
for model in lenet resnet20; do
  for graphs in false true; do
    cat >"$work/graphs.yaml" <<CFG
model: $model
dataset: {name: synthetic, synthetic_samples: 2048, loader_threads: 4}
batch_per_worker: 64
lr: 0.01
steps: 40
backend: cuda
cuda: {graphs: $graphs}
eval: {every_epochs: 0}
log_every: 10
CFG
    trainscale run --config "$work/graphs.yaml" --out "$work/graphs-$model-$graphs" >"$work/log" 2>&1
    rc=$?
    ((rc == 0)) || status=1
    echo "graphs $model cuda.graphs=$graphs rc=$rc $(grep -E '^step 40/' "$work/log") $(grep -E '^summary' "$work/log")" \
      | tee -a "$out/graphs.txt"
  done
done

cat >"$work/fmnist.yaml" <<'CFG'
model: lenet
dataset: {name: fashion_mnist, format: idx, root: .device/fashion-mnist}
batch_per_worker: 32
lr: 0.03
momentum: 0.9
epochs: 4
threads: 8
eval: {every_epochs: 1}
log_every: 500
seed: 3
CFG
for backend in cuda cpu; do
  trainscale run --config "$work/fmnist.yaml" --set backend=$backend --out "$work/fm-$backend" >"$work/fm.log" 2>&1
  rc=$?
  ((rc == 0)) || status=1
  echo "fmnist lenet backend=$backend rc=$rc $(grep -E '^eval' "$work/fm.log" | tail -1) $(grep -E '^summary' "$work/fm.log")" \
    | tee -a "$out/fmnist.txt"
done
rm -rf "$work"
exit $status
