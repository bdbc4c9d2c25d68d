#!/usr/bin/env python3
"""GPU training speed of trainscale against PyTorch on the same GPU, in one invocation
(docs/benchmarks.md "GPU peer"; run on a GPU machine, see docs/gpu.md).

The same network (resnet50 by default: trainscale's src/nn/models.cpp and torchvision's
resnet50, whose parameter counts are both recorded), batch (256), synthetic 224x224 input and
optimizer (SGD, momentum 0.9, weight decay 5e-5), per precision:

  trainscale      `trainscale run` with backend cuda and the precision; images/s = the run
                  file's /summary images_per_s (median step after its warm-up; the loader
                  generates the images inside the timed loop, its data_wait is recorded too)
  torch_eager     PyTorch eager, channels_last, torch.autocast (fp16 with a GradScaler, bf16),
                  or TF32 matmul/cuDNN for tf32; tensors already on the GPU
  torch_compile   the same model wrapped in torch.compile (compiled in the warm-up, not timed)

PyTorch images/s = batch / median step time (CUDA events around each step, after --warmup
steps). The dense tensor peak of the GPU is measured in the same run (8192^3 torch.mm in the
precision's dtype, best of 5), and each peer's fraction of it is reported with the model's
training FLOPs (3 x trainscale's forward FLOPs per sample x images/s).

Writes reports/gpu_peer/<name>.json (every measurement, the GPU, versions, the command) and a
Markdown table next to it, and prints the table. Exit 0 if every measurement succeeded, 1 if
one failed (recorded in the file), 2 for a usage error.

    source scripts/device_env.sh      # on the GPU machine: the packed build's libraries
    python3 bench/gpu_peer.py --binary .device/bin/trainscale --out-dir $OUT --name h100
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "tf32": "float32"}


SEARCHED = re.compile(r"\b(fwd|bwd_data|bwd_filter)=\w+\([^,()]+,find,([0-9.]+)ms\)")


def searched_conv_ms(plans):
    """The convolutions' share of a step by cuDNN's search: the sum over the plan notes of the
    time the search measured for each chosen algorithm ({direction: ms}); directions chosen
    otherwise (heuristics) are not in it. An estimate: a lone timed run of each algorithm, and the
    first layer's backward-data, which training skips, included."""
    total = {"fwd": 0.0, "bwd_data": 0.0, "bwd_filter": 0.0}
    for line in plans:
        for direction, ms in SEARCHED.findall(line):
            total[direction] += float(ms)
    return total


def trainscale_run(binary, model, batch, precision, steps, loader_threads, workdir, variant="trainscale", keys=()):
    """One `trainscale run`; `keys`: (key, value) pairs of the variant (--variant), given with --set."""
    import h5py
    cfg = os.path.join(workdir, f"{model}_{precision}_{variant}.yaml")
    with open(cfg, "w") as f:
        f.write(f"""model: {model}
dataset: {{name: synthetic, synthetic_samples: {batch * 8}, loader_threads: {loader_threads}, prefetch: 4}}
batch_per_worker: {batch}
lr: 0.1
momentum: 0.9
weight_decay: 5e-5
steps: {steps}
backend: cuda
precision: {precision}
gpu: any
eval: {{every_epochs: 0}}
log_every: 10
""")
    out = os.path.join(workdir, f"out_{model}_{precision}_{variant}")
    sets = [arg for key, value in keys for arg in ("--set", f"{key}={value}")]
    proc = subprocess.run([binary, "run", "--config", cfg, "--out", out] + sets, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"ok": False, "error": (proc.stderr + proc.stdout)[-2000:]}
    path = [os.path.join(out, p) for p in os.listdir(out) if p.endswith(".h5")][0]
    with h5py.File(path) as h:
        s = h["summary"].attrs
        wait = h["timing/data_wait"][:]
        return {"ok": True, "images_per_s": float(s["images_per_s"]),
                "step_time_median": float(s["step_time_median"]),
                "data_wait_median": float(statistics.median(wait.ravel().tolist())),
                "skipped_steps": float(s.get("skipped_steps", 0)),
                "parameters": int(h["model"].attrs["parameters"]),
                "flops_per_sample": int(h["model"].attrs["flops_per_sample"]),
                "device_name": str(h.attrs["device_name"]), "device_libraries": str(h.attrs["device_libraries"]),
                "loss_reads": str(h.attrs.get("loss_reads", "")), "variant": dict(keys),
                "device_workspace_bytes": int(h.attrs["device_workspace_bytes"]),
                "device_plans": str(h.attrs["device_plans"]).splitlines()[:400],
                "searched_conv_ms": searched_conv_ms(str(h.attrs["device_plans"]).splitlines())}


def torch_run(model_name, batch, precision, steps, warmup, compiled):
    import torch
    import torchvision
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, model_name)(num_classes=1000).cuda().to(memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    run_model = torch.compile(model) if compiled else model

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = loss_fn(run_model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    t0 = time.time()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1000.0)
    med = statistics.median(times)
    return {"ok": True, "images_per_s": batch / med, "step_time_median": med, "warmup_s": warm_s,
            "parameters": params}


def dense_peak(precision):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dtype = getattr(torch, DTYPES[precision])
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    best = 0.0
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            a @ b
        e.record()
        e.synchronize()
        best = max(best, 10 * 2 * n ** 3 / (s.elapsed_time(e) / 1000.0))
    return best


def variants(specs):
    """[(peer name, ((key, value), ...))] from --variant NAME:KEY=VALUE[,KEY=VALUE] specs."""
    if not specs:
        return [("trainscale", ())]
    out = []
    for spec in specs:
        name, _, sets = spec.partition(":")
        keys = tuple(tuple(kv.split("=", 1)) for kv in sets.split(",") if kv)
        if not name or any(len(kv) != 2 for kv in keys):
            raise SystemExit(f"gpu_peer: --variant {spec!r}: expected NAME:KEY=VALUE[,KEY=VALUE]")
        out.append((f"trainscale_{name}", keys))
    return out


def ratio(ips, peer_ips):
    """'0.84x', or '-' where the peer did not run (--no-compile) or failed."""
    return f"{ips / peer_ips:.2f}x" if peer_ips else "-"


def report(result):
    lines = [f"GPU peer — {result['gpu']} ({result['torch']}), {result['model']} batch {result['batch']}, "
             f"synthetic 224x224", "",
             "| precision | peer | images/s | vs torch eager | vs torch.compile | of dense peak | note |",
             "|---|---|---:|---:|---:|---:|---|"]
    for prec, peers in result["runs"].items():
        eager = peers.get("torch_eager", {}).get("images_per_s")
        comp = peers.get("torch_compile", {}).get("images_per_s")
        flops = next((r.get("flops_per_sample") for n, r in peers.items() if n.startswith("trainscale") and r.get("ok")),
                     None)
        for name, r in peers.items():
            if not r.get("ok"):
                lines.append(f"| {prec} | {name} | failed | | | | {r.get('error', '')[:80]!r} |")
                continue
            ips = r["images_per_s"]
            frac = f"{3 * flops * ips / result['peak'][prec]:.1%}" if flops else ""
            note = f"data_wait median {r['data_wait_median'] * 1e3:.1f} ms" if "data_wait_median" in r else ""
            if r.get("loss_reads"):
                note += f", loss_reads {r['loss_reads']}"
            conv = sum(r.get("searched_conv_ms", {}).values())
            if conv > 0:
                note += f", convs {conv:.1f} of {r['step_time_median'] * 1e3:.1f} ms by cuDNN's search"
            lines.append(f"| {prec} | {name} | {ips:.0f} | {ratio(ips, eager)} | {ratio(ips, comp)} | {frac} | {note} |")
    lines.append("")
    lines.append("Dense peak measured (8192^3 torch.mm): " +
                 ", ".join(f"{p} {v / 1e12:.0f} TFLOP/s" for p, v in result["peak"].items()))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--precisions", default="fp16,bf16,tf32")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--loader-threads", type=int, default=8)
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE[,KEY=VALUE]",
                    help="a trainscale peer named trainscale_NAME run with these config keys, e.g. "
                         "log:loss_reads=log or graph:cuda.conv_api=graph (repeatable; none: one peer "
                         "'trainscale' with the defaults)")
    ap.add_argument("--out-dir", default=os.path.join(REPO, "reports", "gpu_peer"))
    ap.add_argument("--name", default=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("gpu_peer: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    precisions = a.precisions.split(",")
    result = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "model": a.model,
              "batch": a.batch, "steps": a.steps, "warmup": a.warmup, "command": sys.argv, "runs": {}, "peak": {}}
    ok = True
    with tempfile.TemporaryDirectory() as work:
        for prec in precisions:
            runs = result["runs"][prec] = {}
            result["peak"][prec] = dense_peak(prec)
            for name, keys in variants(a.variant):
                runs[name] = trainscale_run(a.binary, a.model, a.batch, prec, a.steps + a.warmup, a.loader_threads,
                                            work, name, keys)
            for name, compiled in (("torch_eager", False), ("torch_compile", True)):
                if compiled and a.no_compile:
                    continue
                try:
                    runs[name] = torch_run(a.model, a.batch, prec, a.steps, a.warmup, compiled)
                except Exception as e:  # recorded, not hidden
                    runs[name] = {"ok": False, "error": repr(e)[-2000:]}
            ok &= all(r.get("ok") for r in runs.values())
            torch.cuda.empty_cache()
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, f"{a.name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    text = report(result)
    with open(os.path.join(a.out_dir, f"{a.name}.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
