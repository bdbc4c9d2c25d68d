#!/usr/bin/env bash
# Runs one of the classic studies of configs/studies/ (issue 17; index: reports/README.md) on
# this machine: expands its sweep(s), runs every run (the local executor, or trainscale-sim for
# a simulated part), keeps a compressed copy of each campaign under reports/studies/NAME/ and
# writes the report from those copies, so the committed report is what the committed files give:
#   python -m trainscale_analysis report reports/studies/NAME/campaign* -o ... (the args below)
# Usage: scripts/run_study.sh NAME [--report-only]
#   --report-only: no runs; the report from the copies already under reports/studies/NAME/
#   NAME: batch_lr | neuron_averaging | ps_timing | hetero_partition | sync_async | salvaris |
#         model_skylake (simulated: about 2 hours here) | network (the test bed's hosts: root)
# The campaigns live in campaigns/studies/ (git-ignored); a second call resumes a campaign
# (finished runs are kept) and re-writes the report.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
name=${1:-}
report_only=${2:-}
[[ -z $report_only || $report_only == --report-only ]] || { echo "run_study.sh: unknown option '$report_only' (--report-only)" >&2; exit 2; }
bin=build/bin/trainscale
py=.venv/bin/python
local_site=configs/sites/local-oversubscribe.yaml
sim_site=configs/sites/simulate-skylake.yaml
case $name in
  batch_lr)  # the loss threshold: see reports/studies/batch_lr/README.md
    parts=("batch_lr:$local_site" "batch_lr_low:$local_site")
    args=(--loss-threshold 1.0 --title "Batch x learning rate, loss area (SHM-Learn-Dist study 1)") ;;
  neuron_averaging)
    parts=("neuron_averaging:$local_site")
    args=(--title "Single sigmoid neuron: gradient vs weight averaging (SHM-Learn-Dist study 2)") ;;
  ps_timing)
    parts=("ps_timing:$local_site" "ps_timing_sim:$sim_site")
    args=(--title "Parameter server vs all-reduce timing (SHM-Learn-Dist figures 6.4-6.6)") ;;
  hetero_partition)
    parts=("hetero_partition:$local_site")
    args=(--baseline dist.partition=equal
          --title "Heterogeneous workers: equal, static, measured, adaptive partitions (Choi et al.)") ;;
  salvaris)  # the data formats it reads are converted first (campaigns/data/, kept between runs)
    parts=("salvaris:configs/sites/local-storage-study.yaml" "salvaris_flavors:configs/sites/local-storage-study.yaml"
           "salvaris_sim:$sim_site")
    args=(--baseline mpi_flavor=openmpi --baseline precision=fp32 --baseline dataset.format=idx --baseline dataset.storage=local
          --title "Relative throughput by MPI flavor, precision and data format (Salvaris et al.)") ;;
  sync_async)
    parts=("sync_async:$local_site")
    args=(--title "Synchronous, asynchronous and compressed exchanges (10-605)") ;;
  model_skylake)  # study 7's simulated part; its predicted part: reports/model/skylake
    parts=("model_skylake_sim:$sim_site" "model_skylake_sim_mesh:configs/sites/simulate-skylake-mesh.yaml")
    args=(--title "Scalability of four CNNs on the simulated 1,000-node Skylake cluster (Castello et al.)") ;;
  network)  # study 8: its own runner (one campaign per link rate of the test bed), then its report
    out=reports/studies/network
    [[ -n $report_only ]] || .venv/bin/python scripts/study_network.py --out "$out"
    .venv/bin/python -m trainscale_analysis network-study "$out"/network_*/ --predictions "$out/predictions.json" \
      --links "$out/links.json" -o "$out" --title "The effect of the network (Salvaris et al.'s Ethernet vs InfiniBand, on the test bed)"
    exit 0 ;;
  *) echo "usage: scripts/run_study.sh batch_lr|neuron_averaging|ps_timing|hetero_partition|sync_async|salvaris|model_skylake|network" >&2
     exit 2 ;;
esac
[[ -n $report_only || -x $bin ]] || { echo "run_study.sh: $bin not built (scripts/build.sh)" >&2; exit 1; }
out=reports/studies/$name
mkdir -p "$out"
if [[ $name == salvaris && -z $report_only ]]; then
  for format in records hdf5 jpeg_dir; do
    [[ -d campaigns/data/fmnist-$format ]] || "$bin" data convert --dataset fashion_mnist \
      --from /usr/share/datasets/fashion-mnist --format $format --out campaigns/data/fmnist-$format
  done
fi
kept=()
for part in "${parts[@]}"; do
  sweep=${part%%:*} site=${part#*:}
  if [[ -n $report_only ]]; then
    [[ -d $out/$sweep ]] || { echo "run_study.sh: $out/$sweep is missing; run the study first" >&2; exit 1; }
    kept+=("$out/$sweep")
    continue
  fi
  camp=campaigns/studies/$sweep
  # Study 4's storage dimension reads through an sshfs mount and an HTTP server that exist only
  # while its campaign runs (scripts/study_storage.py).
  around=()
  [[ $sweep == salvaris ]] && around=("$py" scripts/study_storage.py run --)
  "$bin" sweep expand "configs/studies/$sweep.yaml" --site "$site" --out "$camp"
  "${around[@]}" "$bin" sweep submit "$camp" || echo "run_study.sh: some runs of $sweep failed; the report shows them"
  "$py" -m trainscale_analysis archive "$camp" -o "$out/$sweep"
  kept+=("$out/$sweep")
done
# Study 4's GPU generations come from GPU machines, one generation per session
# (scripts/device_generations.sh), archived under gpu/<commit>-<gpu>/: every one measured so far.
if [[ $name == salvaris ]]; then
  for gpu_part in "$out"/gpu/*/; do [[ -d $gpu_part ]] && kept+=("${gpu_part%/}"); done
fi
"$py" -m trainscale_analysis report "${kept[@]}" -o "$out/report.html" "${args[@]}"
if [[ $name == model_skylake ]]; then  # each run against the model's prediction; the model against this machine
  validation=reports/model/validation/4e7d116.json  # the current series (docs/benchmarks.md "Model vs measured")
  "$py" -m trainscale_analysis sim-study "${kept[@]}" -o "$out" --validation "$validation" \
    --title "Predicted vs simulated vs measured: four CNNs on the Skylake cluster, star and mesh"
fi
if [[ $name == sync_async ]]; then  # accuracy vs bytes on the wire vs time, per compressor
  "$py" -m trainscale_analysis compression "$out/sync_async/runs" -o "$out/compression.md" \
    --title "Compressors against fp32, one epoch of LeNet on 2 workers"
fi
