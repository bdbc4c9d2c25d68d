#!/usr/bin/env bash
# The weak-scaling figures of docs/benchmarks.md: images/s of N workers against 1 worker of the
# same config, each with --threads threads, measured round after round in turns (a busy spell
# of a shared machine then shows as outlying rounds instead of skewing one side of every
# ratio). Prints every run's img/s (the run's median step after warm-up), each round's ratio
# N-worker / 1-worker, and per variant the median ratio.
# Builds nothing. Exit 0 when every run finished, 1 otherwise.
#
#   bench/weak_scaling.sh [--config FILE] [--workers N] [--threads T] [--epochs E] [--rounds R]
#                         [--baseline mpirun|direct] [--out-dir DIR]
#                         [--variant 'NAME: --set key=value ...'] ...
#
# Defaults: configs/runs/lenet_fmnist.yaml, 2 workers, 1 thread, 0.3 epochs, 5 rounds, one
# variant "as-configured". A variant's words override config keys of its N-worker run (every
# setting that changes the measurement is a config key, so the run file says what ran).
# --out-dir DIR keeps every run file as DIR/runs/r<round>-1w.h5 and r<round>-<variant>-<N>w.h5
# (a campaign directory: `bench/weak_scaling_report.py DIR` tabulates it and
# `python -m trainscale_analysis report DIR` plots it).
# N-worker runs: mpirun -np N --bind-to core (one core per worker, as on a cluster node). The
# 1-worker run, by default, the same way (mpirun -np 1 --bind-to core: the same launcher and
# placement, so both sides run on core 0 and share its disturbances); --baseline direct starts
# it without mpirun, unbound (its loader thread may then use another core).
# Before each round bench/membw_probe.py measures the memory bandwidth each core gets while all
# copy at once (printed as membw, GB/s per core): on a machine shared with other guests it
# swings several-fold, and N memory-bound workers need it together. (It is context, not a
# filter: on the machine of docs/benchmarks.md it changed within a round too often to
# predict the round's ratio.)
# Environment: TRAINSCALE_BINARY (default build/bin/trainscale).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=../scripts/env.sh
source scripts/env.sh

config=configs/runs/lenet_fmnist.yaml
workers=2
threads=1
epochs=0.3
rounds=5
baseline=mpirun
variants=()
out_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --variant) variants+=("$2"); shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/weak_scaling.sh: unknown option '$1'; accepted: --config FILE, --workers N, --threads T, --epochs E, --rounds R, --baseline mpirun|direct, --out-dir DIR, --variant 'NAME: --set key=value ...'" >&2; exit 2 ;;
  esac
done
[ ${#variants[@]} -gt 0 ] || variants=("as-configured:")
case "$baseline" in
  mpirun) launch1=(mpirun -np 1 --bind-to core) ;;
  direct) launch1=() ;;
  *) echo "bench/weak_scaling.sh: --baseline $baseline: accepted: mpirun, direct" >&2; exit 2 ;;
esac
binary=${TRAINSCALE_BINARY:-build/bin/trainscale}
[ -x "$binary" ] || { echo "bench/weak_scaling.sh: $binary not found; build it first (scripts/build.sh)" >&2; exit 1; }
[ -f "$config" ] || { echo "bench/weak_scaling.sh: config '$config' not found" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(run --config "$config" --set "threads=$threads" --set "epochs=$epochs" --set eval.every_epochs=0)

# membw: the probe's GB/s per core (all cores copying), "?" when it cannot run.
membw() { .venv/bin/python bench/membw_probe.py 2>/dev/null || echo "?"; }

# keep DIR NAME: moves the run file of output directory DIR to --out-dir's runs/NAME.h5.
keep() {
  [ -n "$out_dir" ] || return 0
  mkdir -p "$out_dir/runs"
  local f
  for f in "$1"/*.h5; do [ -f "$f" ] && mv "$f" "$out_dir/runs/$2.h5"; done
  rm -rf "$1"
}

# imgs LOG: the summary line's median img/s, or nothing when the run did not finish.
imgs() { sed -n 's/^summary: ok, .*, \([0-9.]*\) img\/s (median.*/\1/p' "$1"; }

status=0
echo "# weak scaling: $config, $workers workers x $threads thread(s) vs 1 x $threads ($baseline), $epochs epochs, $rounds rounds"
echo "# $(uname -n), $(nproc) CPUs, $("$binary" info 2>/dev/null | sed -n "s/^mpi_library: //p" | cut -d, -f1)"
printf '%-6s %-24s %12s %12s %8s %8s\n' round variant "1w img/s" "Nw img/s" ratio membw
for round in $(seq 1 "$rounds"); do
  bw=$(membw)
  "${launch1[@]}" "$binary" "${common[@]}" --set workers=1 --out "$tmp/w1" > "$tmp/w1.log" 2>&1 || true
  base=$(imgs "$tmp/w1.log")
  keep "$tmp/w1" "r$round-1w"
  [ -n "$base" ] || { echo "round $round: the 1-worker run failed:" >&2; tail -5 "$tmp/w1.log" >&2; status=1; continue; }
  for v in "${variants[@]}"; do
    name=${v%%:*}
    read -r -a sets <<< "${v#*:}"
    mpirun -np "$workers" --bind-to core "$binary" "${common[@]}" --set "workers=$workers" \
      "${sets[@]}" --out "$tmp/wn" > "$tmp/wn.log" 2>&1 || true
    got=$(imgs "$tmp/wn.log")
    keep "$tmp/wn" "r$round-$name-${workers}w"
    if [ -z "$got" ]; then
      echo "round $round, $name: the $workers-worker run failed:" >&2; tail -5 "$tmp/wn.log" >&2; status=1; continue
    fi
    ratio=$(awk -v a="$got" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
    printf '%-6s %-24s %12s %12s %8s %8s\n' "$round" "$name" "$base" "$got" "$ratio" "$bw"
    echo "$name $ratio" >> "$tmp/ratios"
  done
done
echo "# median ratio per variant (bar for 2 workers: 1.8)"
[ -f "$tmp/ratios" ] && sort -k1,1 -k2,2n "$tmp/ratios" | awk '
  { v[$1] = v[$1] " " $2; n[$1]++ }
  END { for (k in v) { split(substr(v[k], 2), a, " "); m = n[k] % 2 ? a[(n[k] + 1) / 2] : (a[n[k] / 2] + a[n[k] / 2 + 1]) / 2;
        printf "%-24s median %.3f  min %.3f  max %.3f  (%d rounds)\n", k, m, a[1], a[n[k]], n[k] } }'
exit $status
