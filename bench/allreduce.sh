#!/usr/bin/env bash
# The all-reduce figures of docs/benchmarks.md: `trainscale bench allreduce` on 2 ranks at
# 4, 16 and 64 MiB, `--repeats` times, under Open MPI once per vader single-copy mechanism
# (and under MPICH when an MPICH build exists); prints every run's table and, per size, the
# median busbw of each algorithm and the median of its ratio to mpi measured in the same run.
# Builds nothing. Exit 0 when every run completed with zero wrong elements, 1 otherwise.
#
#   bench/allreduce.sh [--repeats N] [--iters N] [--algorithms LIST] [--single-copy LIST]
#                      [--buffers shared|private] [--out-dir DIR]
#
# --buffers: where the messages live (default shared: node shared memory, where shm sums in
# place, as the trainer's gradient arena does; private: each rank's heap, shm's copy pipeline).
# --single-copy: Open MPI's btl_vader_single_copy_mechanism values to run, comma-separated
# (default none,cma: none is what scripts/env.sh and the tests set; cma is Open MPI's own
# choice where the kernel permits it, as it does here; docs/benchmarks.md has both).
# Environment: TRAINSCALE_BINARY (default build/bin/trainscale), TRAINSCALE_MPICH_BINARY
# (default build-mpich/bin/trainscale; skipped when missing). Ranks are bound to cores.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=../scripts/env.sh
source scripts/env.sh

repeats=5
iters=20
algorithms=mpi,shm
single_copy=none,cma
buffers=shared
out_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --algorithms) algorithms=$2; shift 2 ;;
    --single-copy) single_copy=$2; shift 2 ;;
    --buffers) buffers=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/allreduce.sh: unknown option '$1'; accepted: --repeats N, --iters N, --algorithms LIST, --single-copy LIST, --buffers shared|private, --out-dir DIR" >&2; exit 2 ;;
  esac
done
case ",$algorithms," in
  *,mpi,*) ;;
  *) echo "bench/allreduce.sh: --algorithms must include mpi (the ratios are to it)" >&2; exit 2 ;;
esac

openmpi_binary=${TRAINSCALE_BINARY:-build/bin/trainscale}
mpich_binary=${TRAINSCALE_MPICH_BINARY:-build-mpich/bin/trainscale}
[ -x "$openmpi_binary" ] || { echo "bench/allreduce.sh: $openmpi_binary not found; build it first (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# run FLAVOR LAUNCHER... : the repeats under one MPI, then the medians.
run() {
  local flavor=$1; shift
  local tables="$tmp/$flavor.txt"
  : > "$tables"
  for i in $(seq 1 "$repeats"); do
    local out_args=()
    [ -n "$out_dir" ] && mkdir -p "$out_dir" && out_args=(--out "$out_dir/allreduce-$flavor-np2-$i.h5")
    echo "## $flavor, run $i of $repeats ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg))"
    if ! "$@" bench allreduce --algorithms "$algorithms" --min-bytes 4M --max-bytes 64M --factor 4 \
         --iters "$iters" --warmup 5 --buffers "$buffers" "${out_args[@]}" | tee -a "$tables"; then
      echo "## $flavor run $i FAILED" >&2
      status=1
    fi
  done
  echo "## $flavor: medians over $repeats runs (busbw GB/s; shm/mpi = median of the per-run ratios)"
  awk -v algs="$algorithms" '
    /^# algorithm / { alg = $3; sub(":", "", alg) }  # one block per algorithm: size .. busbw ($7) .. vs_mpi ($12)
    $1 ~ /^[0-9]+$/ && NF >= 12 { bw[$1, alg] = bw[$1, alg] " " $7; if ($12 != "n/a") r[$1, alg] = r[$1, alg] " " $12; sizes[$1] = 1 }
    function median(list,   a, n, i, j, t) {
      n = split(list, a, " "); if (n == 0) return "n/a"
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : sprintf("%.3f", (a[n / 2] + a[n / 2 + 1]) / 2)
    }
    END {
      na = split(algs, al, ",")
      printf "%10s", "size(MiB)"; for (k = 1; k <= na; k++) printf " %10s", al[k]; for (k = 1; k <= na; k++) if (al[k] != "mpi") printf " %10s", al[k] "/mpi"; printf "\n"
      for (s = 4194304; s <= 67108864; s *= 4) {
        if (!(s in sizes)) continue
        printf "%10d", s / 1048576
        for (k = 1; k <= na; k++) printf " %10s", median(bw[s, al[k]])
        for (k = 1; k <= na; k++) if (al[k] != "mpi") printf " %10s", median(r[s, al[k]])
        printf "\n"
      }
    }' "$tables"
}

for mechanism in ${single_copy//,/ }; do
  OMPI_MCA_btl_vader_single_copy_mechanism=$mechanism run "openmpi-single-copy-$mechanism" \
    mpirun.openmpi -np 2 --bind-to core "$openmpi_binary"
done
if [ -x "$mpich_binary" ]; then
  run mpich mpiexec.mpich -n 2 -bind-to core "$mpich_binary"
else
  echo "## MPICH: $mpich_binary not found, skipped (cmake -DTRAINSCALE_MPI_FLAVOR=mpich -B build-mpich)"
fi
exit $status
