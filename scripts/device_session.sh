#!/usr/bin/env bash
# One call on a lent GPU machine that runs every GPU check this repository has, each under its
# own time limit, most recent work first, and leaves one archive to bring back (device time is
# scarce: a session gets minutes, the machine's start included; docs/gpu.md).
#
#   here:   scripts/pack_device.sh && tar -c .device | xz -T2 -6 > .device.tar.xz
#           mv reports /tmp/reports-aside     # the tracked files and the archive must fit 64 MiB
#   there:  scripts/device_session.sh [PARTS]        (then move reports/ back here)
#
# PARTS (comma-separated, in order; default tests,peer,checkpoint: the marks, loss_reads log beside
# step (and nccl step vs log in tests), and checkpoints settled under log, none of which has run
# on a GPU yet; then graph,reduced (the graph API's engines) in a second call;
# hetero,generations (with tests and checkpoint: 232 s on an H200 at 5c05d93) and zoo (with
# peer: 407 s there) when the session has more time; memory ran at 7ab771a):
#   memory  scripts/device_memory.sh       the device memory check          (limit 150 s)
#   hetero  scripts/device_hetero.sh 12    a CPU and a CUDA rank together    (limit 200 s)
#   tests   scripts/device_test.sh         every test_cuda_*, LeNet cuda/cpu (limit 130 s)
#   peer    bench/gpu_peer.py --no-compile  trainscale (loss_reads step and log) vs PyTorch eager
#           (limit 300 s)
#   graph   bench/gpu_peer.py, fp16 and tf32: cuda.conv_api legacy and graph vs PyTorch eager
#           (limit 300 s; the graph API's engines have not run on a GPU yet)
#   reduced bench/gpu_peer.py, fp16 and bf16: the graph API with and without
#           cuda.reduced_precision_reduction (the engines PyTorch's filter keeps and ours leaves
#           out unless asked) vs PyTorch eager (limit 240 s)
#   b128    bench/gpu_peer.py at batch 128, fp16 and bf16, loss_reads step and log (limit 200 s):
#           fp16 took 40-43 ms a step there against bf16's 28 ms at 5c05d93; if the per-step
#           overflow check was why, log (the device decides) closes the gap
#   checkpoint   scripts/device_checkpoint.sh  CUDA checkpoints, bit-exact resume (limit 200 s)
#   generations  scripts/device_generations.sh  study 4's GPU part: resnet50, 4 precisions x 2
#           (limit 200 s; bring campaign/ back to reports/studies/salvaris/gpu/, see its README)
#   zoo     scripts/device_zoo.sh           every model in every precision   (limit 340 s: at
#           7ab771a the models alone took 240 s on an H200, then come cuda.graphs and Fashion-MNIST)
# Writes $OUT/session.tgz (each part's directory and log) and $OUT/session.txt (each part's exit
# status and the summary lines); unpacks .device.tar.xz first when .device/ is not there.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-results}
mkdir -p "$out"
parts=${1:-tests,peer,checkpoint}
if [[ ! -d .device && -f .device.tar.xz ]]; then
  python3 -c "import tarfile; tarfile.open('.device.tar.xz').extractall()" && rm -f .device.tar.xz
fi
source scripts/device_env.sh >"$out/env.txt" 2>&1 || { cat "$out/env.txt"; exit 1; }
summary=$out/session.txt
{ date -u; nvidia-smi -L 2>/dev/null; echo "packed commit: $(cat .device/COMMIT 2>/dev/null)"; } >"$summary"

# part NAME LIMIT COMMAND...: runs COMMAND with its output in $out/NAME.log, records its status.
part() {
  local name=$1 limit=$2
  shift 2
  mkdir -p "$out/$name"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "$name: exit $?" >>"$summary"
}

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
IFS=, read -r -a wanted <<<"$parts"
for name in "${wanted[@]}"; do
  case $name in
    memory) part memory 150 scripts/device_memory.sh "$out/memory"
            cat "$out/memory/memory.txt" >>"$summary" 2>/dev/null ;;
    hetero) part hetero 200 scripts/device_hetero.sh "$out/hetero" 12
            cat "$out/hetero/hetero.txt" >>"$summary" 2>/dev/null ;;
    tests)  part tests 130 scripts/device_test.sh "$out/tests"
            tail -n 20 "$out/tests.log" >>"$summary" ;;
    peer)   part peer 300 python3 bench/gpu_peer.py --binary .device/bin/trainscale --no-compile --steps 30 \
              --warmup 8 --variant step:loss_reads=step --variant log:loss_reads=log --out-dir "$out/peer" \
              --name "$(cat .device/COMMIT 2>/dev/null)-$gpu_name-eager"
            tail -n 11 "$out/peer.log" >>"$summary" ;;
    graph)  part graph 300 python3 bench/gpu_peer.py --binary .device/bin/trainscale --no-compile --steps 30 \
              --warmup 8 --precisions fp16,tf32 --variant legacy:cuda.conv_api=legacy \
              --variant graph:cuda.conv_api=graph --out-dir "$out/graph" \
              --name "$(cat .device/COMMIT 2>/dev/null)-$gpu_name-graph"
            tail -n 8 "$out/graph.log" >>"$summary" ;;
    reduced) part reduced 240 python3 bench/gpu_peer.py --binary .device/bin/trainscale --no-compile --steps 30 \
              --warmup 8 --precisions fp16,bf16 --variant graph:cuda.conv_api=graph \
              --variant reduced:cuda.conv_api=graph,cuda.reduced_precision_reduction=true --out-dir "$out/reduced" \
              --name "$(cat .device/COMMIT 2>/dev/null)-$gpu_name-reduced"
            tail -n 8 "$out/reduced.log" >>"$summary" ;;
    b128)   part b128 200 python3 bench/gpu_peer.py --binary .device/bin/trainscale --no-compile --steps 30 \
              --warmup 8 --batch 128 --precisions fp16,bf16 --variant step:loss_reads=step \
              --variant log:loss_reads=log --out-dir "$out/b128" --name "$(cat .device/COMMIT 2>/dev/null)-$gpu_name-b128"
            tail -n 8 "$out/b128.log" >>"$summary" ;;
    checkpoint) part checkpoint 200 scripts/device_checkpoint.sh "$out/checkpoint"
            cat "$out/checkpoint/checkpoint.txt" >>"$summary" 2>/dev/null ;;
    generations) part generations 200 scripts/device_generations.sh "$out/generations"
            cat "$out/generations/generations.txt" >>"$summary" 2>/dev/null ;;
    zoo)    part zoo 340 scripts/device_zoo.sh "$out/zoo"
            cat "$out/zoo/zoo.txt" >>"$summary" 2>/dev/null ;;
    *) echo "device_session.sh: unknown part '$name' (memory, hetero, tests, peer, graph, reduced, b128, checkpoint, generations, zoo)" >&2; exit 2 ;;
  esac
done
(cd "$out" && tar czf session.tgz "${wanted[@]}" ./*.log 2>/dev/null && rm -rf "${wanted[@]}" ./*.log)
cat "$summary"
