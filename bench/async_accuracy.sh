#!/usr/bin/env bash
# The asynchronous-SGD figures of
# docs/benchmarks.md: one model on Fashion-MNIST for a fixed sample budget (2 epochs, the
# same global batch) with dist.strategy sync on 2 workers, async_ps on 2 workers + 1 server at
# each staleness bound, and hogwild with 2 threads of one process; prints each run's final test
# accuracy, its wall time and (async_ps) the staleness histogram. Builds nothing. Exit 0 when
# every run completed.
#
#   bench/async_accuracy.sh [--model mlp] [--epochs 2] [--batch 32] [--lr 0.02] [--staleness 0,4]
#                           [--threads-per-worker 2] [--out-dir DIR]
#
# --batch: per worker (hogwild: per thread); the global batch is twice it in every run.
#
# Environment: TRAINSCALE_BINARY (default build/bin/trainscale).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=../scripts/env.sh
source scripts/env.sh

model=mlp
epochs=2
staleness=0,4
batch=32
lr=0.02
threads_per_worker=2
out_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --staleness) staleness=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --threads-per-worker) threads_per_worker=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/async_accuracy.sh: unknown option '$1'; accepted: --model NAME, --epochs N, --batch N, --lr X, --staleness LIST, --threads-per-worker N, --out-dir DIR" >&2; exit 2 ;;
  esac
done
binary=${TRAINSCALE_BINARY:-build/bin/trainscale}
[ -x "$binary" ] || { echo "bench/async_accuracy.sh: $binary not found; build it first (scripts/build.sh)" >&2; exit 1; }
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out_dir" ] || out_dir=$tmp
mkdir -p "$out_dir"

# config NAME WORKERS STRATEGY_LINE: a run config of the budget under $tmp.
config() {
  cat > "$tmp/$1.yaml" <<YAML
model: $model
dataset: {name: fashion_mnist, format: idx, root: /usr/share/datasets/fashion-mnist}
batch_per_worker: $batch
lr: $lr
lr_schedule: {kind: cosine}
momentum: 0.9
epochs: $epochs
threads: 1
workers: $2
dist: $3
eval: {every_epochs: 1}
log_every: 500
seed: 1
YAML
  echo "$tmp/$1.yaml"
}

# train NAME RANKS WORKERS STRATEGY_LINE
train() {
  local cfg start end
  cfg=$(config "$1" "$3" "$4")
  start=$(date +%s.%N)
  mpirun -np "$2" "$binary" run --config "$cfg" --out "$out_dir/$1" > "$tmp/$1.log" 2>&1 ||
    { echo "bench/async_accuracy.sh: run $1 failed:" >&2; tail -5 "$tmp/$1.log" >&2; exit 1; }
  end=$(date +%s.%N)
  "$python" - "$out_dir/$1" "$1" "$start" "$end" <<'PY'
import glob, sys
import h5py
path = glob.glob(sys.argv[1] + "/*.h5")[0]
with h5py.File(path) as f:
    acc = f["eval/accuracy"][-1]
    hist = f["async_ps/staleness_histogram"][:].tolist() if "async_ps" in f else "-"
    wait = f["async_ps/bound_wait"][:].round(2).tolist() if "async_ps" in f else "-"
print(f"{sys.argv[2]:>14}  accuracy {acc:.4f}  wall {float(sys.argv[4]) - float(sys.argv[3]):7.1f} s  "
      f"staleness histogram {hist}  bound wait (s) {wait}")
PY
}

echo "## $model, $epochs epochs of Fashion-MNIST, batch $batch per worker, lr $lr with cosine decay, momentum 0.9 ($(date -u +%F) UTC, load $(cut -d' ' -f1 /proc/loadavg))"
train sync 2 2 "{strategy: sync, allreduce: mpi, overlap: false}"
for s in ${staleness//,/ }; do
  train "async_ps_s$s" 3 2 "{strategy: async_ps, servers: 1, staleness: $s}"
done
train "hogwild_t$threads_per_worker" 1 1 "{strategy: hogwild, threads_per_worker: $threads_per_worker}"
