#!/usr/bin/env python3
"""Model vs measured (docs/model.md "Validation", docs/benchmarks.md "Model vs measured").

For each model (lenet, resnet20), worker count (1, 2) and all-reduce algorithm (every host
algorithm at 2 workers; none matters at 1), each --compression compressor (2 workers, ring;
docs/model.md "Compressed exchanges"), and with --hetero worker 1 made 3x slower under each
dist.partition (2 workers, ring, --hetero-steps steps; docs/model.md "Heterogeneous workers"):
trains the run here (`trainscale run` under mpirun,
synthetic data, --steps steps, batch 64 per worker, 2 threads on 1 worker and 1 thread each on
2) and predicts it (`trainscale predict` on the calibrated cluster file), then compares the
predicted step time with the measured median step (`/timing/step`, slowest rank per step, the
first --warmup steps left out; compressed runs also their codec seconds, /timing/compress +
decompress, against the predicted ones). The error, (predicted - measured) / measured, is a tracked
figure: it is printed, and written with the machine (CPU model, load average before and after)
and the command line to OUT_DIR/<git sha>[-TAG].json and .md, with the run and prediction files
under OUT_DIR/<git sha>[-TAG]/. Not a pass/fail test.

On a machine shared with other jobs the speed drifts within minutes, so by default each model's
cases start with a fresh one-rank calibration of the node and that model's layers
(`trainscale calibrate --models MODEL --budget-s --recalibrate-s`), merged with the all-reduce
fits of --cluster into OUT_DIR/<git sha>/clusters/<model>.yaml; --no-recalibrate predicts from
--cluster as it is.

  bench/model_validation.py [--cluster configs/clusters/local.yaml] [--steps 30] [--warmup 5]
                            [--recalibrate-s 20 | --no-recalibrate]
                            [--models lenet,resnet20] [--algorithms mpi,ring,tree,ps,shm]
                            [--compression fp16,bf16,qsgd,topk,powersgd] [--hetero [--hetero-steps 150]]
                            [--rounds 1] [--out-dir reports/model/validation] [--tag NAME]

Run `mpirun -np 2 trainscale calibrate --out configs/clusters/local.yaml` first (the runs must
see the machine the calibration saw). Environment: TRAINSCALE_BINARY (default
build/bin/trainscale). Exit 0 when every run and prediction finished, 1 otherwise.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys

import h5py
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
BINARY = pathlib.Path(os.environ.get("TRAINSCALE_BINARY", REPO / "build" / "bin" / "trainscale")).resolve()
MPIRUN = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_NUM_THREADS="2")
BATCH = 64


# --hetero: worker 1 computes 3x slower (dist.emulate_slowdown) under each split of the batch.
SLOW = "emulate_slowdown: {rank: 1, factor: 3}"
HETERO = {"equal-slow3": f"partition: equal, {SLOW}", "static-96-32-slow3": f"partition: static, shares: [96, 32], {SLOW}",
          "measured-slow3": f"partition: measured, {SLOW}", "adaptive-slow3": f"partition: adaptive, {SLOW}"}


def config_text(model, workers, algorithm, steps, compression="none", hetero=None):
    threads = 2 if workers == 1 else 1  # two cores: one per worker
    extra = f", {HETERO[hetero]}" if hetero else ""
    return (f"model: {model}\ndataset: {{name: synthetic, synthetic_samples: 4096}}\n"
            f"batch_per_worker: {BATCH}\nsteps: {steps}\nthreads: {threads}\nworkers: {workers}\n"
            f"dist: {{allreduce: {algorithm}, compression: {compression}{extra}}}\neval: {{every_epochs: 0}}\n"
            f"log_every: 1000\n")


def measured_step(run_file, warmup):
    """The median step (slowest rank per step) and the median codec seconds (mean over ranks)."""
    with h5py.File(run_file, "r") as f:
        step = f["timing/step"][:]  # [S, R]
        codec = (f["timing/compress"][:] + f["timing/decompress"][:]) if "timing/compress" in f else np.zeros_like(step)
    return float(np.median(step.max(axis=1)[warmup:])), float(np.median(codec.mean(axis=1)[warmup:]))


def predicted(predict_file):
    with h5py.File(predict_file, "r") as f:
        p = f["predict"]
        keys = ("step_time", "compute", "comm", "exposed_comm", "data", "compress", "decompress")
        return {k: float(p[k][0]) for k in keys}


def recalibrated(args, work, model):
    """A fresh node and layer calibration for `model`, with --cluster's all-reduce fits."""
    import yaml
    out = work / "clusters" / f"{model}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(BINARY), "calibrate", "--out", str(out), "--models", model,
                           "--budget-s", str(args.recalibrate_s), "--batch", str(BATCH)],
                          capture_output=True, text=True, env=ENV, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"calibrate failed ({proc.returncode}): {proc.stderr}")
    fresh = yaml.safe_load(out.read_text())
    base = yaml.safe_load(pathlib.Path(args.cluster).read_text())
    fresh["calibration"]["allreduce"] = base.get("calibration", {}).get("allreduce", {})
    fresh["source"] += "; all-reduce fits from " + os.path.relpath(args.cluster, REPO)
    out.write_text(yaml.safe_dump(fresh, sort_keys=False))
    return out


def one_case(args, work, model, workers, algorithm, round_, cluster, compression="none", hetero=None):
    name = (f"{model}-{workers}w-{algorithm}" + ("" if compression == "none" else f"-{compression}") +
            (f"-{hetero}" if hetero else "") + f"-r{round_}")
    cfg = work / "configs" / f"{name}.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(config_text(model, workers, algorithm, args.hetero_steps if hetero else args.steps, compression, hetero))
    runs = work / "runs" / name
    runs.mkdir(parents=True, exist_ok=True)
    cmd = [MPIRUN, "-np", str(workers), "--oversubscribe", "--bind-to", "none", str(BINARY), "run",
           "--config", str(cfg), "--out", str(runs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO)
    if proc.returncode != 0:
        print(f"{name}: run failed ({proc.returncode}): {proc.stderr[-2000:]}", file=sys.stderr)
        return None
    run_file = next(runs.glob("*.h5"))
    pred_file = work / "predict" / f"{name}.h5"
    pred_file.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(BINARY), "predict", "--config", str(cfg), "--cluster", str(cluster),
                           "--workers", str(workers), "--out", str(pred_file)],
                          capture_output=True, text=True, env=ENV, cwd=REPO)
    if proc.returncode != 0:
        print(f"{name}: predict failed ({proc.returncode}): {proc.stderr}", file=sys.stderr)
        return None
    meas, meas_codec = measured_step(run_file, args.warmup)
    pred = predicted(pred_file)
    row = {"model": model, "workers": workers, "algorithm": algorithm, "compression": compression, "round": round_,
           "hetero": hetero or "",
           "measured_codec_s": meas_codec, "predicted_codec_s": pred["compress"] + pred["decompress"],
           "measured_s": meas, "predicted_s": pred["step_time"], "error": (pred["step_time"] - meas) / meas,
           "predicted_compute_s": pred["compute"], "predicted_comm_s": pred["comm"],
           "predicted_exposed_comm_s": pred["exposed_comm"],
           "run_file": str(run_file.relative_to(REPO)), "predict_file": str(pred_file.relative_to(REPO))}
    print(f"{name:28s} measured {meas * 1e3:9.2f} ms  predicted {pred['step_time'] * 1e3:9.2f} ms  "
          f"error {row['error'] * 100:+7.1f}%", flush=True)
    return row


def git_sha():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=REPO).stdout.strip() or "unknown"


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def markdown(summary, rows):
    lines = [f"# Model vs measured ({summary['sha']})", "",
             f"Command: `{summary['command']}`  ",
             f"Machine: {summary['cpu_model']}, {os.cpu_count()} hardware threads; load average "
             f"{summary['load_before']} before, {summary['load_after']} after; cluster file "
             f"`{summary['cluster']}` ({summary['cluster_source']}); "
             f"{'predicted from it as it is' if summary['no_recalibrate'] else 'node and layers recalibrated before each model (OUT_DIR/<sha>/clusters/)'}", "",
             "| model | workers | all-reduce | measured ms | predicted ms | error | predicted comm ms (exposed) "
             "| codec ms measured / predicted |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        compression = r.get("compression", "none")
        exchange = r["algorithm"] + ("" if compression == "none" else f" + {compression}")
        exchange += f", {r['hetero']}" if r.get("hetero") else ""
        codec = "" if compression == "none" else f"{r['measured_codec_s'] * 1e3:.2f} / {r['predicted_codec_s'] * 1e3:.2f}"
        lines.append(f"| {r['model']} | {r['workers']} | {exchange} | {r['measured_s'] * 1e3:.2f} | "
                     f"{r['predicted_s'] * 1e3:.2f} | {r['error'] * 100:+.1f}% | "
                     f"{r['predicted_comm_s'] * 1e3:.2f} ({r['predicted_exposed_comm_s'] * 1e3:.2f}) | {codec} |")
    errors = [abs(r["error"]) for r in rows]
    lines += ["", f"Median |error| {statistics.median(errors) * 100:.1f}%, max {max(errors) * 100:.1f}%, "
              f"{sum(e <= 0.25 for e in errors)} of {len(errors)} within 25%."]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cluster", default=str(REPO / "configs" / "clusters" / "local.yaml"))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--models", default="lenet,resnet20")
    p.add_argument("--algorithms", default="mpi,ring,tree,ps,shm")
    p.add_argument("--compression", default="", help="compressors to run at 2 workers with ring (comma-separated)")
    p.add_argument("--hetero", action="store_true", help="worker 1 3x slower under each dist.partition (2 workers)")
    p.add_argument("--hetero-steps", type=int, default=150)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--recalibrate-s", type=float, default=20.0)
    p.add_argument("--no-recalibrate", action="store_true")
    p.add_argument("--out-dir", default=str(REPO / "reports" / "model" / "validation"))
    p.add_argument("--tag", default="", help="names the series OUT_DIR/<git sha>-TAG (several series of one commit)")
    args = p.parse_args()
    assert MPIRUN, "mpirun not found"
    out_dir = pathlib.Path(args.out_dir)
    sha = git_sha() + (f"-{args.tag}" if args.tag else "")
    work = out_dir / sha
    work.mkdir(parents=True, exist_ok=True)
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    rows, ok = [], True
    for round_ in range(args.rounds):
        for model in args.models.split(","):
            cluster = args.cluster if args.no_recalibrate else recalibrated(args, work, model)
            cases = [(1, "ring", "none", None)] + [(2, a, "none", None) for a in args.algorithms.split(",") if a]
            cases += [(2, "ring", c, None) for c in args.compression.split(",") if c]
            cases += [(2, "ring", "none", h) for h in (HETERO if args.hetero else [])]
            for workers, algorithm, compression, hetero in cases:
                row = one_case(args, work, model, workers, algorithm, round_, cluster, compression, hetero)
                ok &= row is not None
                if row:
                    rows.append(row)
    if not rows:
        return 1
    with open(args.cluster) as f:
        source = next((line.split(":", 1)[1].strip().strip('"') for line in f if line.startswith("source:")), "")
    summary = {"sha": sha, "cpu_model": cpu_model(), "load_before": load_before,
               "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg()),
               "command": "bench/model_validation.py " + " ".join(sys.argv[1:]),
               "cluster": os.path.relpath(args.cluster, REPO), "cluster_source": source,
               "no_recalibrate": args.no_recalibrate}
    (out_dir / f"{sha}.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    (out_dir / f"{sha}.md").write_text(markdown(summary, rows))
    print(markdown(summary, rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
