#!/usr/bin/env python3
"""CPU training speed of trainscale against PyTorch, in one invocation (docs/benchmarks.md).

Trains the same networks (lenet and resnet20, exactly as src/nn/models.cpp builds them; the
parameter counts are checked) on the same kind of synthetic input (mean-0, variance-1 images: trainscale's
uniform on [-sqrt(3), sqrt(3)) generated per sample by its loader, PyTorch's torch.randn in memory; uniform random labels),
same batch and thread count, forward + backward + SGD (momentum 0.9, weight decay 5e-4) per
step, with these "peers", each in its own process, in alternating rounds:

  trainscale      the binary under test (--binary); images/s = the run file's
                  /summary images_per_s (median step after its warm-up, data loader included)
  baseline        optionally a second trainscale binary (--baseline-binary), e.g. the build
                  from before a change, for the before/after ratio
  torch_eager     PyTorch from PyPI (MKL + oneDNN 3.x) in bench/.venv-torch, made by
                  bench/peer_env.sh; eager mode
  torch_compile   the same PyTorch, the model wrapped in torch.compile (inductor, C++ codegen);
                  compilation happens in the warm-up steps and is recorded, not timed
  debian_eager    Debian's python3-torch (/usr/bin/python3) eager: recorded as a second,
                  flattering peer (its fp32 torch.mm/Linear runs on a reference BLAS)

PyTorch images/s = batch / median step time over --steps timed steps after --warmup steps,
tensors in memory. bf16 is torch.autocast("cpu", dtype=torch.bfloat16) on the PyTorch side and
`precision: bf16` on trainscale's. Each round runs every peer once per model x precision, the
peers' order rotating from round to round; every round's figures are kept, so noise is visible.
Before the rounds, the GEMM peak of this machine (2048^3, fp32 and bf16, torch.mm and a 1x1
convolution, best of both, PyPI torch, same threads) is measured for the GFLOP/s columns.

Writes one JSON file per invocation (default reports/cpu_peer/<UTC time>.json: every round,
the machine, the binaries' `trainscale info`, the torch builds, the command line) and its
Markdown report next to it (bench/cpu_peer_report.py, which can regenerate it), and prints the
report. Exit status: 0 if every measurement succeeded, 1 if any failed (the file records
which and why), 2 for a usage error or a missing prerequisite.

    bench/peer_env.sh            # once: the PyPI torch venv (bench/.venv-torch)
    .venv/bin/python bench/cpu_peer.py --binary build/bin/trainscale \\
        --baseline-binary /path/to/old/build/bin/trainscale --repeats 5 --name final

The trainscale run files are read with h5py from --venv-python (the repo's analysis venv).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = ("trainscale", "baseline", "torch_eager", "torch_compile", "debian_eager")
# Environment variables that can change what a peer measures: recorded in the output file.
ENV_PREFIXES = ("OMP_", "KMP_", "MKL_", "DNNL_", "ONEDNN_", "OPENBLAS_", "GOMP_", "TORCH",
                "TRAINSCALE_", "LD_PRELOAD")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "build", "bin", "trainscale"),
                   help="trainscale binary under test (default: %(default)s)")
    p.add_argument("--baseline-binary", help="a second trainscale binary (e.g. the build from "
                   "before a change) measured in the same rounds; adds trainscale/baseline ratios")
    p.add_argument("--models", default="lenet,resnet20", help="comma-separated (default: %(default)s)")
    p.add_argument("--precisions", default="fp32,bf16", help="comma-separated (default: %(default)s)")
    p.add_argument("--peers", default="torch_eager,torch_compile,debian_eager",
                   help="PyTorch peers to run, comma-separated, any of torch_eager, "
                   "torch_compile, debian_eager, or 'none' (default: %(default)s); trainscale "
                   "always runs, baseline when --baseline-binary is given")
    p.add_argument("--batch", type=int, default=128, help="minibatch (default: %(default)s)")
    p.add_argument("--threads", type=int, default=2, help="compute threads of every peer "
                   "(trainscale `threads`, torch.set_num_threads; default: %(default)s)")
    p.add_argument("--steps", type=int, default=40, help="timed steps per measurement "
                   "(default: %(default)s)")
    p.add_argument("--warmup", type=int, default=10, help="PyTorch warm-up steps before the timed "
                   "ones (torch.compile compiles in the first); trainscale runs --steps + --warmup "
                   "steps and excludes its own warm-up (10%% of its steps, 1..20) from "
                   "images_per_s (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="rounds; every peer runs once per "
                   "round and case, the order rotating (default: %(default)s)")
    p.add_argument("--channels-last", action="store_true", help="PyTorch peers use "
                   "torch.channels_last for the model and input (default: contiguous NCHW, as a "
                   "plain user gets); recorded")
    p.add_argument("--compile-mode", default="default", help="torch.compile mode (default: "
                   "%(default)s; e.g. max-autotune-no-cudagraphs); recorded")
    p.add_argument("--skip-peak", action="store_true", help="do not measure the GEMM peak")
    p.add_argument("--torch-python", default=os.path.join(HERE, ".venv-torch", "bin", "python"),
                   help="Python with PyTorch from PyPI (default: %(default)s; made by "
                   "bench/peer_env.sh)")
    p.add_argument("--debian-python", default="/usr/bin/python3",
                   help="Python with Debian's python3-torch (default: %(default)s)")
    p.add_argument("--venv-python", default=os.path.join(REPO, ".venv", "bin", "python"),
                   help="Python with h5py, reads the run files (default: %(default)s)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "reports", "cpu_peer"),
                   help="where NAME.json and NAME.md go (default: %(default)s)")
    p.add_argument("--name", help="file name stem (default: the UTC start time, e.g. "
                   "20261122T1713Z)")
    p.add_argument("--note", default="", help="free text stored with the figures and shown in "
                   "the report (e.g. 'machine busy: other builds running')")
    # Internal: one PyTorch measurement in this interpreter, one JSON line on stdout.
    p.add_argument("--worker", choices=("train", "peak", "info"), help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--precision", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=("eager", "compile"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def fail(msg, code=2):
    print(f"cpu_peer.py: {msg}", file=sys.stderr)
    sys.exit(code)


# ============================================================ worker side (runs under torch)
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
    raise ValueError(f"no PyTorch mirror of model {name!r}; known: lenet, resnet20")


def torch_facts():
    """Version and library facts of the torch in this interpreter."""
    import torch

    show = torch.__config__.show()
    onednn = re.search(r"MKL-DNN v([\w.]+)", show)
    mkl = re.search(r"Math Kernel Library Version ([\w.]+)", show)
    blas = re.search(r"BLAS_INFO=(\w+)", show)
    facts = {"python": sys.executable, "python_version": platform.python_version(),
             "torch_version": torch.__version__,
             "onednn_version": onednn.group(1) if onednn else None,
             "mkl_version": mkl.group(1) if mkl else None,
             "blas_info": blas.group(1) if blas else None,
             "mkldnn_available": bool(torch.backends.mkldnn.is_available()),
             "compile_available": hasattr(torch, "compile"),
             "config_show": show}
    get_cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    facts["cpu_capability"] = get_cap() if get_cap else None
    return facts


def worker_train(args):
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model, sample = torch_model(args.model)
    params = sum(p.numel() for p in model.parameters())
    x = torch.randn(args.batch, *sample)
    y = torch.randint(0, 10, (args.batch,))
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    net = torch.compile(model, mode=args.compile_mode) if args.mode == "compile" else model

    def step():
        opt.zero_grad(set_to_none=True)
        if args.precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(net(x), y)
        else:
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    t0 = time.perf_counter()
    first_loss = float(step())  # torch.compile compiles forward and backward here
    first_step_s = time.perf_counter() - t0
    for _ in range(args.warmup - 1):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    return {"images_per_s": args.batch / median, "step_time_median": median,
            "step_time_p90": sorted(times)[int(0.9 * (len(times) - 1))],
            "first_step_s": first_step_s, "first_loss": first_loss, "parameters": params,
            "warmup_steps": args.warmup, "timed_steps": args.steps}


def worker_peak(args, n=2048, reps=5):
    """Best GFLOP/s of an n x n x n product on `threads` threads, as torch.mm and as a 1x1
    convolution (oneDNN), fp32 and bf16: what a good library GEMM reaches on this machine."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    out = {}
    for prec, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        # 1x1 conv: input (1, n, n, 1) [k = n channels, m = n pixels], weight (n, n, 1, 1)
        x, w = torch.randn(1, n, n, 1).to(dtype), torch.randn(n, n, 1, 1).to(dtype)
        for kind, fn in (("mm", lambda: torch.mm(a, b)), ("conv1x1", lambda: F.conv2d(x, w))):
            fn()  # warm-up
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            out[f"{prec}_{kind}"] = 2.0 * n ** 3 / best / 1e9
        out[prec] = max(out[f"{prec}_mm"], out[f"{prec}_conv1x1"])
    return out


def worker_main(args):
    try:
        if args.worker == "info":
            result = torch_facts()
        elif args.worker == "peak":
            result = worker_peak(args)
        else:
            result = worker_train(args)
    except Exception as e:  # reported to the driver as data, not a traceback to scrape
        import traceback

        traceback.print_exc(file=sys.stderr)
        result = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(result))
    return 1 if "error" in result else 0


# ============================================================ driver side
CONFIG = """# written by bench/cpu_peer.py (keys that both old and new trainscale binaries accept)
model: {model}
dataset: {{name: synthetic, format: synthetic, synthetic_samples: {samples}}}
batch_per_worker: {batch}
steps: {steps}
threads: {threads}
precision: {precision}
backend: cpu
lr: 0.01
momentum: 0.9
weight_decay: 5.0e-4
eval: {{every_epochs: 0}}
log_every: 100000
seed: 1
"""

READ_RUN = r"""
import h5py, json, sys
import numpy as np
with h5py.File(sys.argv[1], "r") as f:
    s = f["summary"].attrs
    out = {"images_per_s": float(s["images_per_s"]), "step_time_median": float(s["step_time_median"]),
           "step_time_p90": float(s["step_time_p90"]), "warmup_steps": int(s["warmup_steps"]),
           "flops_per_sample": int(f["model"].attrs["flops_per_sample"]),
           "parameters": int(f["model"].attrs["parameters"]),
           "git_sha": str(f.attrs.get("git_sha", "")), "isa": str(f.attrs.get("isa", ""))}
    w = out["warmup_steps"]
    if "timing" in f and "data_wait" in f["timing"]:
        out["data_wait_median"] = float(np.median(f["timing"]["data_wait"][w:, 0]))
    out["timed_steps"] = int(f["train"]["step"].shape[0]) - w
print(json.dumps(out))
"""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(v) for v in f.read().split()[:3]]
    except OSError:
        return None


def machine_facts():
    facts = {"hostname": platform.node(), "kernel": platform.release(),
             "cpus_online": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        m = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
        facts["cpu_model"] = m.group(1).strip() if m else None
        flags = re.search(r"^flags\s*:\s*(.+)$", info, re.M)
        wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
        facts["cpu_flags"] = [f for f in wanted if flags and f in flags.group(1).split()]
    except OSError:
        facts["cpu_model"] = None
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s+(\d+) kB", f.read())
        facts["memory_bytes"] = int(m.group(1)) * 1024 if m else None
    except OSError:
        pass
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'^PRETTY_NAME="?([^"\n]+)', f.read(), re.M)
        facts["os"] = m.group(1) if m else None
    except OSError:
        pass
    return facts


def snapshot_binary(binary, into):
    """Copy of `binary` in directory `into`, and its SHA-256: a rebuild of the original while
    the benchmark runs (other people build in the same tree) must not mix two builds in one
    series. trainscale links only system libraries (absolute RUNPATH), so the copy runs as is."""
    import hashlib

    dst = os.path.join(into, f"{len(os.listdir(into))}-{os.path.basename(binary)}")
    shutil.copy2(binary, dst)
    with open(dst, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return dst, digest


def trainscale_info(binary):
    """`trainscale info` as a dict of its key: value lines."""
    proc = subprocess.run([binary, "info"], capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"`{binary} info` failed ({proc.returncode}): {proc.stderr.strip()}\n"
             "Build the driver (cmake --build build --target trainscale) or pass --binary.")
    info = {}
    for line in proc.stdout.splitlines():
        if ": " in line:
            k, v = line.split(": ", 1)
            info[k.strip()] = v.strip()
    return {"path": os.path.abspath(binary), "info": info}


def git_facts():
    def git(*a):
        p = subprocess.run(["git", "-C", REPO, *a], capture_output=True, text=True)
        return p.stdout.strip() if p.returncode == 0 else None
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain",
                                                                   "--untracked-files=no"))}


def run_torch_worker(python, args, worker, model=None, precision=None, mode=None):
    cmd = [python, os.path.abspath(__file__), "--worker", worker, "--threads", str(args.threads),
           "--batch", str(args.batch), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--compile-mode", args.compile_mode]
    if model:
        cmd += ["--model", model, "--precision", precision, "--mode", mode]
    if args.channels_last:
        cmd.append("--channels-last")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = proc.stderr.strip()[-2000:]
        result = {"error": f"{os.path.basename(python)} worker exited {proc.returncode} "
                           f"without a result: {tail}"}
    if "error" in result and proc.stderr:
        result["stderr_tail"] = proc.stderr.strip()[-2000:]
    return result


def run_trainscale(binary, args, model, precision):
    with tempfile.TemporaryDirectory(prefix="cpu_peer_") as tmp:
        cfg = os.path.join(tmp, "cpu_peer.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(model=model, samples=max(4 * args.batch, 512), batch=args.batch,
                                  steps=args.steps + args.warmup, precision=precision,
                                  threads=args.threads))
        proc = subprocess.run([binary, "run", "--config", cfg, "--out", tmp],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return {"error": f"trainscale run exited {proc.returncode}",
                    "stderr_tail": (proc.stderr or proc.stdout).strip()[-2000:]}
        files = [os.path.join(tmp, n) for n in os.listdir(tmp) if n.endswith(".h5")]
        if len(files) != 1:
            return {"error": f"expected one run file in {tmp}, found {len(files)}"}
        out = subprocess.run([args.venv_python, "-c", READ_RUN, files[0]], capture_output=True,
                             text=True)
        if out.returncode != 0:
            return {"error": f"reading the run file with {args.venv_python} failed: "
                             f"{out.stderr.strip()[-1000:]}"}
        return json.loads(out.stdout)


def children_cpu_s():
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure(peer, args, model, precision):
    t0 = time.perf_counter()
    cpu0 = children_cpu_s()
    rec = {"peer": peer, "model": model, "precision": precision,
           "started_utc": utc_now().isoformat(timespec="seconds"), "loadavg_before": loadavg()}
    if peer == "trainscale":
        rec.update(run_trainscale(args.binary, args, model, precision))
    elif peer == "baseline":
        rec.update(run_trainscale(args.baseline_binary, args, model, precision))
    elif peer == "torch_eager":
        rec.update(run_torch_worker(args.torch_python, args, "train", model, precision, "eager"))
    elif peer == "torch_compile":
        rec.update(run_torch_worker(args.torch_python, args, "train", model, precision, "compile"))
    elif peer == "debian_eager":
        rec.update(run_torch_worker(args.debian_python, args, "train", model, precision, "eager"))
    # Process wall time and CPU time (start-up and warm-up included): CPU time well below
    # threads x wall time says the peer did not get its cores.
    rec["wall_s"] = time.perf_counter() - t0
    rec["cpu_s"] = children_cpu_s() - cpu0
    return rec


def check_prerequisites(args, peers):
    for name, path in (("--binary", args.binary), ("--baseline-binary", args.baseline_binary)):
        if path and not os.access(path, os.X_OK):
            fail(f"{name} {path}: not an executable file. Build it (cmake --build build --target "
                 "trainscale) or give the right path.")
    if not os.access(args.venv_python, os.X_OK):
        fail(f"--venv-python {args.venv_python}: not found; it reads the run files (h5py). "
             "Run scripts/setup.sh to make the repo's .venv, or pass a Python that has h5py.")
    torch_info = {}
    wanted = []
    if {"torch_eager", "torch_compile"} & set(peers) or not args.skip_peak:
        wanted.append(("pypi", args.torch_python, "bench/peer_env.sh makes it"))
    if "debian_eager" in peers:
        wanted.append(("debian", args.debian_python, "apt-get install python3-torch "
                       "(scripts/setup.sh), or leave debian_eager out of --peers"))
    for key, python, remedy in wanted:
        if not os.access(python, os.X_OK):
            fail(f"{python}: not found ({remedy}).")
        facts = run_torch_worker(python, args, "info")
        if "error" in facts:
            fail(f"{python} cannot import torch: {facts['error']}\n({remedy}).")
        torch_info[key] = facts
    if "torch_compile" in peers and not torch_info["pypi"]["compile_available"]:
        fail(f"{args.torch_python}: torch {torch_info['pypi']['torch_version']} has no "
             "torch.compile; run bench/peer_env.sh for a current PyPI torch.")
    if "pypi" in torch_info and torch_info["pypi"]["blas_info"] != "mkl":
        print(f"cpu_peer.py: warning: {args.torch_python} torch uses BLAS "
              f"{torch_info['pypi']['blas_info']}, not MKL: is it Debian's build? "
              "bench/peer_env.sh installs the PyPI wheel.", file=sys.stderr)
    return torch_info


def write_atomic(path, text):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)
    if args.steps < 1 or args.warmup < 1 or args.repeats < 1 or args.batch < 1 or args.threads < 1:
        fail("--steps, --warmup, --repeats, --batch and --threads must be >= 1")
    peers = [] if args.peers == "none" else [p for p in args.peers.split(",") if p]
    bad = [p for p in peers if p not in ("torch_eager", "torch_compile", "debian_eager")]
    if bad:
        fail(f"--peers: unknown {', '.join(bad)}; accepted: torch_eager, torch_compile, "
             "debian_eager, or none")
    models = [m for m in args.models.split(",") if m]
    precisions = [p for p in args.precisions.split(",") if p]
    for m in models:
        if m not in ("lenet", "resnet20"):
            fail(f"--models: no PyTorch mirror of {m!r}; accepted: lenet, resnet20")
    for p in precisions:
        if p not in ("fp32", "bf16"):
            fail(f"--precisions: {p!r}; accepted: fp32, bf16")
    peers = ["trainscale"] + (["baseline"] if args.baseline_binary else []) + peers

    started = utc_now()
    name = args.name or started.strftime("%Y%m%dT%H%MZ")
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = os.path.join(args.out_dir, name + ".json")
    md_path = os.path.join(args.out_dir, name + ".md")

    torch_info = check_prerequisites(args, peers)
    # Measure copies of the binaries, so that a rebuild during the run changes nothing.
    snapshots = tempfile.TemporaryDirectory(prefix="cpu_peer_bin_")
    binaries = {}
    for key, attr in (("trainscale", "binary"), ("baseline", "baseline_binary")):
        original = getattr(args, attr)
        if original:
            copy, digest = snapshot_binary(original, snapshots.name)
            binaries[key] = trainscale_info(copy)
            binaries[key].update(path=os.path.abspath(original), sha256=digest)
            setattr(args, attr, copy)
    data = {"schema": "trainscale-cpu-peer/1", "name": name,
            "command": [sys.executable] + sys.argv, "cwd": os.getcwd(),
            "started_utc": started.isoformat(timespec="seconds"), "note": args.note,
            "settings": {"models": models, "precisions": precisions, "peers": peers,
                         "batch": args.batch, "threads": args.threads, "steps": args.steps,
                         "warmup": args.warmup, "repeats": args.repeats,
                         "channels_last": args.channels_last, "compile_mode": args.compile_mode,
                         "input": "synthetic mean-0 variance-1 images (trainscale: uniform, generated per sample in its loader; PyTorch: torch.randn in memory), uniform random labels",
                         "optimizer": "SGD lr 0.01 momentum 0.9 weight_decay 5e-4",
                         "trainscale_config": CONFIG},
            "machine": machine_facts(), "repo": git_facts(),
            "environment": {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)},
            "binaries": binaries, "torch": torch_info, "gemm_peak_gflop_s": None,
            "measurements": []}

    if not args.skip_peak:
        peak = run_torch_worker(args.torch_python, args, "peak")
        data["gemm_peak_gflop_s"] = peak
        if "error" not in peak:
            print(f"# GEMM peak: fp32 {peak['fp32']:.0f}, bf16 {peak['bf16']:.0f} GFLOP/s",
                  file=sys.stderr, flush=True)

    failures = 0
    parameters = {}
    for rnd in range(args.repeats):
        order = peers[rnd % len(peers):] + peers[:rnd % len(peers)]  # rotate the order
        for model in models:
            for precision in precisions:
                for peer in order:
                    rec = measure(peer, args, model, precision)
                    rec["round"] = rnd
                    # The mirrors must be the same networks: same trainable parameter count.
                    expected = parameters.setdefault(model, rec.get("parameters"))
                    if "error" not in rec and expected != rec.get("parameters"):
                        rec["error"] = (f"{rec.get('parameters')} parameters where the first "
                                        f"measurement of {model} had {expected}: the networks "
                                        "differ (fix torch_model in bench/cpu_peer.py)")
                    data["measurements"].append(rec)
                    if "error" in rec:
                        failures += 1
                        print(f"# round {rnd + 1} {model} {precision} {peer}: FAILED: "
                              f"{rec['error']}", file=sys.stderr, flush=True)
                    else:
                        print(f"# round {rnd + 1}/{args.repeats} {model} {precision} {peer}: "
                              f"{rec['images_per_s']:.0f} img/s", file=sys.stderr, flush=True)
                    # Keep what we have so far: an interrupted run leaves its measurements.
                    data["finished_utc"] = utc_now().isoformat(timespec="seconds")
                    write_atomic(json_path, json.dumps(data, indent=1) + "\n")

    snapshots.cleanup()
    sys.path.insert(0, HERE)
    import cpu_peer_report

    report = cpu_peer_report.render(data, os.path.basename(json_path))
    write_atomic(md_path, report)
    print(report)
    print(f"figures: {os.path.relpath(json_path)}\nreport:  {os.path.relpath(md_path)}",
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
