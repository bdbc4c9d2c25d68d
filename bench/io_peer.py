#!/usr/bin/env python3
"""Input pipeline alone: trainscale's jpeg_dir loader against PyTorch's DataLoader (docs/benchmarks.md).

Both read the same ImageFolder of JPEGs (by default the synthetic ImageNet-shaped set of
`trainscale data make-synthetic-jpeg`, made here when --data does not exist), with the same
augmentation to the same size and the same number of workers, and no training:

  trainscale  bench/bench_loader (build target bench_loader): a Loader over
              dataset {name: imagefolder, format: jpeg_dir}, `--workers` loader threads;
              libjpeg-turbo decode, RandomResizedCrop + horizontal flip, normalise, batch
              (docs/data.md "Image transforms")
  torch       torchvision.datasets.ImageFolder + DataLoader(num_workers=--workers, shuffle,
              drop_last) with RandomResizedCrop(size) + RandomHorizontalFlip() + ToTensor() +
              Normalize(ImageNet mean, std): PIL decode and resize

samples/s = batch x batches / seconds from the loader's creation (trainscale: its threads
start; torch: iter() forks the workers) to the last batch in hand, so start-up counts on both
sides. The files are read once first (page cache warm). Rounds alternate the two and swap
their order every round; every round is kept. Prints the medians and the ratio and writes
one JSON file (default reports/io/io_peer-<UTC time>.json: every round, the machine, versions,
command line). Exit status: 0 ok, 1 a measurement failed, 2 usage or missing prerequisite.

    bench/peer_env.sh --vision torchvision==0.29.2    # once: torch + torchvision venv
    /work/notes/devbuild.sh trainscale bench_loader    # or any build with both targets
    bench/.venv-torch/bin/python bench/io_peer.py --build build-dev --workers 2 --repeats 5
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ensure_data(args):
    if os.path.isdir(os.path.join(args.data, "train")):
        return None
    cmd = [os.path.join(args.build, "bin", "trainscale"), "data", "make-synthetic-jpeg", "--out", args.data,
           "--classes", str(args.classes), "--per-class", str(args.per_class), "--val-per-class", "1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out.strip())
    return out


def warm_page_cache(root):
    files = bytes_read = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(dirpath, n), "rb") as f:
                bytes_read += len(f.read())
            files += 1
    return files, bytes_read


def run_trainscale(args):
    cmd = [os.path.join(args.build, "bin", "bench_loader"), "--dataset", "imagefolder", "--format", "jpeg_dir",
           "--root", args.data, "--shape", f"3,{args.size},{args.size}", "--threads", str(args.workers),
           "--batch", str(args.batch), "--batches", str(args.batches), "--repeats", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"bench_loader exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def make_torch_loader(args, seed):
    import torch
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    ds = datasets.ImageFolder(os.path.join(args.data, "train"), transform=tf)
    g = torch.Generator()
    g.manual_seed(seed)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                       drop_last=True, generator=g)


def run_torch(args, seed):
    loader = make_torch_loader(args, seed)
    start = time.perf_counter()
    it = iter(loader)
    for _ in range(args.batches):
        images, _labels = next(it)
    seconds = time.perf_counter() - start
    assert tuple(images.shape) == (args.batch, 3, args.size, args.size)
    del it
    samples = args.batch * args.batches
    return {"samples": samples, "seconds": seconds, "samples_per_s": samples / seconds}


def versions():
    v = {"python": platform.python_version()}
    for mod in ("torch", "torchvision", "PIL"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception as e:  # recorded, not fatal: the peer run will fail and say why
            v[mod] = f"unavailable: {e}"
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="build folder with bin/trainscale, bin/bench_loader")
    ap.add_argument("--data", default="/tmp/trainscale_io_peer_jpegs", help="ImageFolder root (made if absent)")
    ap.add_argument("--classes", type=int, default=10, help="classes when making the set")
    ap.add_argument("--per-class", type=int, default=40, help="training images per class when making the set")
    ap.add_argument("--workers", type=int, default=2, help="loader threads / DataLoader workers")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--batches", type=int, default=12, help="batches timed per repeat (<= one epoch)")
    ap.add_argument("--size", type=int, default=224, help="crop size")
    ap.add_argument("--repeats", type=int, default=3, help="rounds (each runs both once)")
    ap.add_argument("--out", default="", help="JSON file (default reports/io/io_peer-<UTC time>.json)")
    args = ap.parse_args()
    for tool in ("trainscale", "bench_loader"):
        if not os.access(os.path.join(args.build, "bin", tool), os.X_OK):
            print(f"io_peer.py: {args.build}/bin/{tool} not found; build the targets trainscale and bench_loader",
                  file=sys.stderr)
            return 2
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("io_peer.py: torchvision is missing; run bench/peer_env.sh --vision torchvision==0.29.2 and use "
              "bench/.venv-torch/bin/python", file=sys.stderr)
        return 2
    made = ensure_data(args)
    files, nbytes = warm_page_cache(args.data)
    rounds, failed = [], False
    for r in range(args.repeats):
        order = ["trainscale", "torch"] if r % 2 == 0 else ["torch", "trainscale"]
        row = {"round": r, "order": order}
        for peer in order:
            try:
                row[peer] = run_trainscale(args) if peer == "trainscale" else run_torch(args, seed=r + 1)
            except Exception as e:
                row[peer] = {"error": str(e)}
                failed = True
        rounds.append(row)
        print(f"round {r}: " + ", ".join(f"{p} {row[p].get('samples_per_s', float('nan')):.1f} samples/s" for p in order))
    med = {p: statistics.median(x[p]["samples_per_s"] for x in rounds if "samples_per_s" in x[p])
           for p in ("trainscale", "torch") if any("samples_per_s" in x[p] for x in rounds)}
    ratio = med["trainscale"] / med["torch"] if len(med) == 2 else None
    result = {
        "benchmark": "io_peer", "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cpus_online": os.cpu_count(), "host": platform.node(),
                    "loadavg_at_end": os.getloadavg()},
        "versions": versions(), "command": sys.argv, "data": {"root": args.data, "files": files, "bytes": nbytes,
                                                              "made": made},
        "settings": {k: getattr(args, k) for k in ("workers", "batch", "batches", "size", "repeats")},
        "rounds": rounds, "median_samples_per_s": med, "ratio_trainscale_over_torch": ratio,
    }
    out = args.out or os.path.join(REPO, "reports", "io",
                                   "io_peer-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + ".json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(out + ".tmp", out)
    print(f"median samples/s: trainscale {med.get('trainscale', float('nan')):.1f}, torch {med.get('torch', float('nan')):.1f}"
          + (f", ratio {ratio:.2f}" if ratio else "") + f" ({args.workers} workers, {cpu_model()}, {os.cpu_count()} CPUs)")
    print(f"wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
