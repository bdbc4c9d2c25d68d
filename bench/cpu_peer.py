#!/usr/bin/python3
"""PyTorch peer benchmark for trainscale's CPU backend (docs/benchmarks.md).

Trains the same networks (lenet, resnet20 exactly as src/nn/models.cpp builds them) with
trainscale and with PyTorch on the CPU, same batch, same thread count, same kind of synthetic
input (N(0,1) images, uniform random labels), forward + backward + SGD (momentum 0.9, weight
decay) per step, warm-up steps excluded, median step time, and prints images/s side by side
(trainscale: the run file's /summary images_per_s, which includes its data loader; PyTorch:
the tensors stay in memory), plus the achieved
GFLOP/s (3 x forward FLOPs per sample x images/s; forward FLOPs from the run file's /model
flops_per_sample) as a fraction of this machine's measured GEMM peak.

GEMM peak: measured here with PyTorch on the same thread count, a 2048^3 product as torch.mm
and as a 1x1 convolution (oneDNN), fp32 and bf16, best of 5, the larger of the two: "what a good
library GEMM reaches on this machine" (Debian's torch.mm fp32 uses a generic BLAS, so the 1x1
convolution is the fp32 figure there).

Run it with Debian's python3-torch (it lives in /usr/bin/python3, not in the repo's .venv):
    /usr/bin/python3 bench/cpu_peer.py [--models lenet,resnet20] [--precisions fp32,bf16]
        [--batch 128] [--threads 2] [--steps 40] [--warmup 10] [--binary build/bin/trainscale]
The trainscale run file is read with the repo's .venv python (h5py), which /usr/bin/python3 lacks.
Output: a Markdown table on stdout; --json FILE writes the same rows machine-readable.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="lenet,resnet20")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=40, help="timed steps (after warm-up)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up steps (PyTorch); trainscale "
                   "excludes its own warm-up (10%% of steps, >= 1) from /summary images_per_s")
    p.add_argument("--binary", default=os.path.join(REPO, "build", "bin", "trainscale"))
    p.add_argument("--venv-python", default=os.path.join(REPO, ".venv", "bin", "python"))
    p.add_argument("--repeats", type=int, default=2, help="alternate trainscale and PyTorch this "
                   "many times per case and keep each one's best (a shared machine's load comes and goes)")
    p.add_argument("--skip-peak", action="store_true", help="do not measure the GEMM peak")
    p.add_argument("--json", help="also write the rows to this JSON file")
    return p.parse_args()


# ---------------------------------------------------------------- PyTorch mirrors of models.cpp
def torch_model(name):
    import torch.nn as nn

    if name == "lenet":
        # conv1 5x5/32 pad 2 -> relu -> maxpool 2 -> conv2 5x5/64 pad 2 -> relu -> maxpool 2
        # -> fc1 3136->512 -> relu -> fc2 512->10 (1,663,370 parameters)
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10)), (1, 28, 28)
    if name == "resnet20":
        class Block(nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.bn1 = nn.BatchNorm2d(cout)
                self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.bn2 = nn.BatchNorm2d(cout)
                self.relu = nn.ReLU()
                self.proj = None
                if stride != 1 or cin != cout:  # projection shortcut: 1x1 conv + BN
                    self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                              nn.BatchNorm2d(cout))

            def forward(self, x):
                y = self.relu(self.bn1(self.conv1(x)))
                y = self.bn2(self.conv2(y))
                return self.relu(y + (self.proj(x) if self.proj is not None else x))

        layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
        cin = 16
        for stage, width in enumerate((16, 32, 64)):
            for block in range(3):
                layers.append(Block(cin, width, 2 if stage > 0 and block == 0 else 1))
                cin = width
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
        return nn.Sequential(*layers), (3, 32, 32)
    raise SystemExit(f"cpu_peer.py: no PyTorch mirror of model {name!r}; known: lenet, resnet20")


def torch_images_per_s(name, precision, batch, threads, steps, warmup):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model, sample = torch_model(name)
    params = sum(p.numel() for p in model.parameters())
    x = torch.randn(batch, *sample)
    y = torch.randint(0, 10, (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    return batch / median, params


def gemm_peak_gflops(threads, dtype_name, n=2048, reps=5):
    """Best GFLOP/s of an n x n x n product on `threads` threads, as torch.mm and as a 1x1
    convolution (which PyTorch runs through oneDNN, jit AVX-512, even where its fp32 torch.mm goes
    to a slow BLAS, as Debian's generic-BLAS build does); the larger of the two."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    dtype = torch.float32 if dtype_name == "fp32" else torch.bfloat16
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    # 1x1 conv: input (1, n, n, 1) [k = n channels, m = n pixels], weight (n, n, 1, 1)
    x = torch.randn(1, n, n, 1).to(dtype)
    w = torch.randn(n, n, 1, 1).to(dtype)
    best = {}
    for name, fn in (("mm", lambda: torch.mm(a, b)), ("conv1x1", lambda: F.conv2d(x, w))):
        fn()  # warm-up
        t = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            t = min(t, time.perf_counter() - t0)
        best[name] = 2.0 * n * n * n / t / 1e9
    return max(best.values()), best


# ---------------------------------------------------------------- trainscale
CONFIG = """# written by bench/cpu_peer.py
model: {model}
dataset: {{name: synthetic, format: synthetic, synthetic_samples: {samples}}}
batch_per_worker: {batch}
lr: 0.01
momentum: 0.9
weight_decay: 5.0e-4
steps: {steps}
precision: {precision}
backend: cpu
threads: {threads}
eval: {{every_epochs: 0}}
log_every: 1000
"""

READ_RUN = """
import h5py, json, sys
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps({"images_per_s": float(f["summary"].attrs["images_per_s"]),
                      "flops_per_sample": int(f["model"].attrs["flops_per_sample"]),
                      "parameters": int(f["model"].attrs["parameters"])}))
"""


def trainscale_images_per_s(args, name, precision):
    with tempfile.TemporaryDirectory(prefix="cpu_peer_") as tmp:
        cfg = os.path.join(tmp, "run.yaml")
        # trainscale drops 10% of steps (>= 1, <= 20) as warm-up from images_per_s.
        total = args.steps + min(max(args.warmup, 1), 20)
        with open(cfg, "w") as f:
            f.write(CONFIG.format(model=name, samples=max(4 * args.batch, 512), batch=args.batch,
                                  steps=total, precision=precision, threads=args.threads))
        proc = subprocess.run([args.binary, "run", "--config", cfg, "--out", tmp],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"trainscale run failed ({proc.returncode}):\n{proc.stderr}")
        m = re.search(r"run file: (\S+)", proc.stdout + proc.stderr)
        if not m:
            raise SystemExit("cpu_peer.py: no 'run file:' line in trainscale's output")
        out = subprocess.run([args.venv_python, "-c", READ_RUN, m.group(1)], capture_output=True,
                             text=True, check=True)
        return json.loads(out.stdout)


def main():
    args = parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    peak = {}
    if not args.skip_peak:
        for p in ("fp32", "bf16"):
            peak[p], detail = gemm_peak_gflops(args.threads, p)
            print(f"# GEMM peak {p}: " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in detail.items()),
                  file=sys.stderr, flush=True)
    rows = []
    for name in args.models.split(","):
        for precision in args.precisions.split(","):
            ts, pt = None, 0.0
            for _ in range(max(args.repeats, 1)):  # alternate, keep each side's best
                t = trainscale_images_per_s(args, name, precision)
                if ts is None or t["images_per_s"] > ts["images_per_s"]:
                    ts = t
                p, pt_params = torch_images_per_s(name, precision, args.batch, args.threads,
                                                  args.steps, args.warmup)
                pt = max(pt, p)
            if pt_params != ts["parameters"]:
                raise SystemExit(f"{name}: PyTorch mirror has {pt_params} parameters, trainscale "
                                 f"{ts['parameters']}: the networks differ")
            flops = 3.0 * ts["flops_per_sample"]  # forward + backward-data + backward-weights
            row = {"model": name, "precision": precision, "batch": args.batch,
                   "threads": args.threads, "trainscale_img_s": ts["images_per_s"],
                   "pytorch_img_s": pt, "ratio": ts["images_per_s"] / pt,
                   "trainscale_gflop_s": flops * ts["images_per_s"] / 1e9,
                   "pytorch_gflop_s": flops * pt / 1e9,
                   "gemm_peak_gflop_s": peak.get(precision, float("nan"))}
            row["trainscale_peak_fraction"] = row["trainscale_gflop_s"] / row["gemm_peak_gflop_s"]
            row["pytorch_peak_fraction"] = row["pytorch_gflop_s"] / row["gemm_peak_gflop_s"]
            rows.append(row)
            print(f"# {name} {precision}: trainscale {ts['images_per_s']:.0f} img/s, "
                  f"PyTorch {pt:.0f} img/s", file=sys.stderr, flush=True)
    print(f"batch {args.batch}, {args.threads} threads, {args.steps} timed steps, best of "
          f"{args.repeats} alternating repeats; GEMM peak "
          f"(2048^3, best of torch.mm and a oneDNN 1x1 conv, {args.threads} threads): "
          + ", ".join(f"{p} {v:.0f} GFLOP/s" for p, v in peak.items()))
    print()
    print("| model | precision | trainscale img/s | PyTorch img/s | ratio | trainscale GFLOP/s "
          "(of peak) | PyTorch GFLOP/s (of peak) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['precision']} | {r['trainscale_img_s']:.0f} | "
              f"{r['pytorch_img_s']:.0f} | {r['ratio']:.2f} | {r['trainscale_gflop_s']:.0f} "
              f"({100 * r['trainscale_peak_fraction']:.0f}%) | {r['pytorch_gflop_s']:.0f} "
              f"({100 * r['pytorch_peak_fraction']:.0f}%) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "gemm_peak_gflop_s": peak}, f, indent=1)


if __name__ == "__main__":
    main()
