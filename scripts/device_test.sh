#!/usr/bin/env bash
# On a GPU machine, with the packed build (.device/, scripts/pack_device.sh): runs every packed
# CUDA test, then a short LeNet training on synthetic data with backend cuda and with backend cpu
# (same seed, same data: the losses should agree), then the LeNet on cuda with dist.allreduce
# nccl (one rank) with loss_reads step and log (the same weights), and prints a summary.
#
# Usage: scripts/device_test.sh [OUT_DIR]     (default: $OUT, else device-results/)
# Writes OUT_DIR/<test>.xml (GoogleTest XML) and .log, OUT_DIR/lenet-<backend>/ (run file) and
# .log, OUT_DIR/lenet-nccl-<reads>/ and .log, OUT_DIR/summary.txt. Exit status 0 when every test
# passed (skips allowed), every run finished and the two nccl runs ended on the same weights, 1
# otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-results}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ ${TRAINSCALE_BINARY:-} != "$PWD/.device/bin/trainscale" ]]; then
  source scripts/device_env.sh || exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L | tee "$out/gpus.txt"
trainscale info >"$out/info.txt" 2>&1
grep '^backend.cuda' "$out/info.txt"

status=0
for test in .device/bin/test_cuda_*; do
  name=$(basename "$test")
  echo "== $name"
  "$test" --gtest_output="xml:$out/$name.xml" >"$out/$name.log" 2>&1
  rc=$?
  tail -n 3 "$out/$name.log"
  ((rc == 0)) || status=1
done

cat >"$out/lenet.yaml" <<'EOF'
# LeNet on synthetic data (the device has no data sets): cuda against cpu, same seed and samples.
model: lenet
dataset: {name: synthetic, format: synthetic, synthetic_samples: 4096}
batch_per_worker: 64
lr: 0.05
momentum: 0.9
steps: 200
threads: 4
eval: {every_epochs: 1}
log_every: 50
seed: 1
EOF
for backend in cuda cpu; do
  echo "== lenet backend $backend"
  trainscale run --config "$out/lenet.yaml" --set backend=$backend --out "$out/lenet-$backend" \
    >"$out/lenet-$backend.log" 2>&1
  rc=$?
  tail -n 3 "$out/lenet-$backend.log"
  ((rc == 0)) || { echo "lenet with backend $backend exited $rc"; status=1; }
done

# dist.allreduce nccl on one rank (a communicator of one): loss_reads step reads each step's
# verdict, log leaves it on the device until the progress lines (the deferred verdicts of
# dist/cuda/nccl_sync_strategy.h). Deterministic algorithms: the same weights, bit for bit.
for reads in step log; do
  echo "== lenet nccl loss_reads $reads"
  trainscale run --config "$out/lenet.yaml" --set backend=cuda --set dist.allreduce=nccl --set loss_reads=$reads \
    --set cuda.algorithms=deterministic --out "$out/lenet-nccl-$reads" >"$out/lenet-nccl-$reads.log" 2>&1
  rc=$?
  tail -n 3 "$out/lenet-nccl-$reads.log"
  ((rc == 0)) || { echo "lenet nccl with loss_reads $reads exited $rc"; status=1; }
done
sha_of() { grep -o '^params_sha256: [0-9a-f]*' "$1" | cut -d' ' -f2; }
nccl_step=$(sha_of "$out/lenet-nccl-step.log") nccl_log=$(sha_of "$out/lenet-nccl-log.log")
[[ -n $nccl_step && $nccl_step == "$nccl_log" ]] || { echo "nccl step vs log: params differ"; status=1; }

python3 - "$out" <<'EOF' | tee "$out/summary.txt"
import glob, os, re, sys
import xml.etree.ElementTree as ET
out = sys.argv[1]
print("summary")
for path in sorted(glob.glob(os.path.join(out, "test_cuda_*.xml"))):
    root = ET.parse(path).getroot()
    cases = root.iter("testcase")
    n = fail = skip = 0
    for c in cases:
        n += 1
        fail += c.find("failure") is not None
        skip += c.get("result") == "skipped" or c.find("skipped") is not None
    print(f"  {os.path.basename(path)[:-4]}: {n} cases, {n - fail - skip} passed, {fail} failed, {skip} skipped")
losses = {}
for backend in ("cuda", "cpu"):
    try:
        text = open(os.path.join(out, f"lenet-{backend}.log")).read()
    except OSError:
        continue
    steps = [(int(s), float(l)) for s, l in re.findall(r"^step (\d+)/\d+ .*? loss ([0-9.eE+-]+|nan|inf)", text, re.M)]
    speed = re.search(r"summary: (\w+), .*?([0-9.]+) img/s", text)
    losses[backend] = dict(steps)
    print(f"  lenet {backend}: losses {' '.join(f'{s}:{l:.4f}' for s, l in steps)}"
          + (f"; {speed.group(1)}, {speed.group(2)} img/s" if speed else "; no summary line"))
common = sorted(set(losses.get("cuda", {})) & set(losses.get("cpu", {})))
if common:
    worst = max(abs(losses["cuda"][s] - losses["cpu"][s]) for s in common)
    print(f"  lenet cuda vs cpu: largest loss difference {worst:.2e} over steps {common}")
for reads in ("step", "log"):
    try:
        text = open(os.path.join(out, f"lenet-nccl-{reads}.log")).read()
    except OSError:
        continue
    sha = re.search(r"^params_sha256: ([0-9a-f]+)", text, re.M)
    speed = re.search(r"summary: (\w+), .*?([0-9.]+) img/s", text)
    print(f"  lenet nccl loss_reads {reads}: params_sha256 {sha.group(1)[:16] if sha else 'none'}"
          + (f"; {speed.group(1)}, {speed.group(2)} img/s" if speed else "; no summary line"))
EOF
echo "results in $out (exit $status)"
exit $status
