#!/usr/bin/env python3
"""When does gradient compression pay off? The performance model's answer at scale
(docs/model.md "Compressed exchanges"; study 6, reports/studies/sync_async/README.md).

Predicts resnet50 and vgg16 (batch 60 per node, one 56-thread process per node) on the
material's 1,000-node Skylake cluster (configs/clusters/skylake-8180m.yaml) with its 200 Gbit/s
network and with a 10 Gbit/s one, uncompressed and under each compressor at its defaults, at
1, 16, 128 and 1,000 nodes. The Skylake file holds no codec rates: the compressors' rates of
--codecs (a cluster file from `trainscale calibrate`, default configs/clusters/local.yaml: this
machine's cores on lenet's gradients) stand in for a Skylake core's, passed as --cluster-set.
Writes a Markdown table to --out (default stdout). A prediction, not a measurement: the model
is deterministic, so the same code and files give the same table.

  bench/compression_at_scale.py [--codecs configs/clusters/local.yaml] [--out FILE.md]
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import h5py
import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
BINARY = pathlib.Path(os.environ.get("TRAINSCALE_BINARY", REPO / "build" / "bin" / "trainscale")).resolve()
CLUSTER = REPO / "configs" / "clusters" / "skylake-8180m.yaml"
WORKERS = [1, 16, 128, 1000]
KINDS = ["none", "fp16", "qsgd", "topk", "powersgd"]


def codec_sets(codecs_file):
    rates = yaml.safe_load(pathlib.Path(codecs_file).read_text())["calibration"]["compression"]
    sets = []
    for kind, values in rates.items():
        for key, value in values.items():
            sets += ["--cluster-set", f"calibration.compression.{kind}.{key}={value}"]
    return sets


def predict(model, kind, bandwidth, sets, workdir):
    """{workers: (step ms, scaling efficiency)} from the prediction file."""
    out = pathlib.Path(workdir) / f"{model}-{kind}-{bandwidth}.h5"
    cmd = [str(BINARY), "predict", "--config", str(REPO / "configs" / "runs" / f"{model}_synthetic.yaml"),
           "--cluster", str(CLUSTER), "--cluster-set", f"interconnect.bandwidth_gbps={bandwidth}", *sets,
           "--set", "threads=56", "--set", "batch_per_worker=60", "--set", "dist.allreduce=mpi",
           "--set", f"dist.compression={kind}", "--workers", ",".join(map(str, WORKERS)), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"predict failed: {proc.stderr}")
    with h5py.File(out, "r") as f:
        p = f["predict"]
        return {int(w): (1e3 * step, eff)
                for w, step, eff in zip(p["workers"][:], p["step_time"][:], p["scaling_efficiency"][:])}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--codecs", default=str(REPO / "configs" / "clusters" / "local.yaml"))
    p.add_argument("--out")
    args = p.parse_args()
    sets = codec_sets(args.codecs)
    lines = ["| model | network | exchange | " + " | ".join(f"efficiency at {w}" for w in WORKERS[1:]) +
             " | step at 1,000 (ms) |", "|---|---|---|" + "---|" * len(WORKERS)]
    with tempfile.TemporaryDirectory(prefix="compression_at_scale.") as workdir:
        for model in ["resnet50", "vgg16"]:
            for bandwidth in [200, 10]:
                for kind in KINDS:
                    pts = predict(model, kind, bandwidth, sets, workdir)
                    cells = [f"{pts[w][1]:.2f}" for w in WORKERS[1:]]
                    lines.append(f"| {model} | {bandwidth} Gbit/s | {kind} | " + " | ".join(cells) +
                                 f" | {pts[1000][0]:,.0f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        pathlib.Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
