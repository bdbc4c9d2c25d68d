#!/usr/bin/env python3
"""Records of JPEGs vs the JPEG folder, on local disk and on a network mount (docs/benchmarks.md).

The same ImageFolder (the synthetic ImageNet-shaped set of datasets/make_synthetic_imagenet.sh,
made here when --data does not exist) is read two ways, with the same decode and augmentation
(random-resized crop + flip to 3x224x224) by the same loader:

  jpeg_dir   dataset {name: imagefolder, format: jpeg_dir}: one open + whole-file read per sample
  records    the folder converted by `trainscale data convert --dataset imagefolder --format
             records` (the JPEG files byte for byte in 8 shards per split): one read at an offset

and from two storages: `local` (the directory itself) and `nfs` (the same directory through a
real sshfs mount over a loopback sshd, tests/python/sshfs_mount.py: every open, stat and read is
an SFTP round trip). Each point is `trainscale bench io --repeats 1` (a cold pass, page cache
dropped with POSIX_FADV_DONTNEED, then a warm pass); rounds rotate the order of the four points.
Prints the median samples/s per point and records/jpeg_dir per storage and cache, and writes one
JSON file (every pass, the machine, the command line) and the bench io files (for the report's
data-format and storage views: `report CAMPAIGN --io DIR`).

    /work/notes/devbuild.sh trainscale          # or any build
    python3 bench/io_formats.py --build build-dev --repeats 5

Exit status: 0 ok, 1 a measurement failed, 2 usage or a missing prerequisite (no sshfs: it
measures local only and says so).
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))
import sshfs_mount  # noqa: E402  (the tests' real network mount, shared on purpose)

CONFIG = """\
model: resnet50
dataset: {{name: imagefolder, format: jpeg_dir, root: /nonexistent, loader_threads: {threads}}}
batch_per_worker: {batch}
"""


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def ensure_data(args):
    tree, records = pathlib.Path(args.data), pathlib.Path(str(args.data).rstrip("/") + ".records")
    if not (tree / "train").is_dir() or not (records / "classes.txt").exists():
        subprocess.run([str(REPO / "datasets" / "make_synthetic_imagenet.sh"), str(tree), args.binary], check=True)
    return tree, records


def bench_point(args, cfg, fmt, root, storage, out):
    cmd = [args.binary, "bench", "io", "--config", str(cfg), "--set", f"dataset.format={fmt}",
           "--set", f"dataset.root={root}", "--set", f"dataset.storage={storage}", "--out", str(out),
           "--repeats", "1", "--steps", str(args.steps)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"bench io exit {p.returncode}: {p.stderr.strip()}")
    passes = {}
    for line in p.stdout.splitlines():
        words = line.split()
        if words and words[0] in ("cold", "warm"):
            passes[words[0]] = {"samples_per_s": float(words[1]), "mb_per_s": float(words[3])}
    if set(passes) != {"cold", "warm"}:
        raise RuntimeError(f"bench io printed no cold and warm pass: {p.stdout}")
    return passes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory with bin/trainscale")
    ap.add_argument("--data", default="/tmp/trainscale-io-formats/synthetic_imagenet",
                    help="the ImageFolder (made when absent); its records are DATA.records")
    ap.add_argument("--repeats", type=int, default=5, help="rounds (each: every point once)")
    ap.add_argument("--steps", type=int, default=20, help="batches per timed pass")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="loader threads")
    ap.add_argument("--out", default=str(REPO / "reports" / "io" / "io_formats.json"))
    args = ap.parse_args()
    args.binary = str(pathlib.Path(args.build) / "bin" / "trainscale")
    if not os.access(args.binary, os.X_OK):
        print(f"io_formats.py: {args.binary} not found: build it (scripts/build.sh) or pass --build", file=sys.stderr)
        return 2
    tree, records = ensure_data(args)
    out = pathlib.Path(args.out)
    h5_dir = out.with_suffix("")  # reports/io/io_formats/: the bench io files
    h5_dir.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="io_formats-"))
    cfg = work / "io.yaml"
    cfg.write_text(CONFIG.format(threads=args.threads, batch=args.batch))
    reason = sshfs_mount.skip_reason()
    mount = None if reason else sshfs_mount.SshfsMount.start(work / "sshfs", tree.parent)
    if reason:
        print(f"io_formats.py: no network mount ({reason}): local only")
    points = [(fmt, storage) for storage in (["local"] + ([] if reason else ["nfs"])) for fmt in ("jpeg_dir", "records")]
    rounds = []
    try:
        for r in range(args.repeats):
            for k in range(len(points)):
                fmt, storage = points[(k + r) % len(points)]
                base = tree if fmt == "jpeg_dir" else records
                root = base if storage == "local" else mount.mountpoint / base.name
                passes = bench_point(args, cfg, fmt, root, storage, h5_dir / f"{fmt}-{storage}-r{r}.h5")
                rounds.append({"round": r, "format": fmt, "storage": storage, **{
                    f"{cache}_{key}": v for cache, d in passes.items() for key, v in d.items()}})
                print(f"round {r} {fmt:8s} {storage:5s} cold {passes['cold']['samples_per_s']:7.1f} "
                      f"warm {passes['warm']['samples_per_s']:7.1f} samples/s", flush=True)
    finally:
        if mount:
            mount.stop()
    summary = {}
    for fmt, storage in points:
        for cache in ("cold", "warm"):
            v = [x[f"{cache}_samples_per_s"] for x in rounds if x["format"] == fmt and x["storage"] == storage]
            summary[f"{fmt}/{storage}/{cache}"] = statistics.median(v)
    print("\nmedian samples/s            cold      warm")
    for fmt, storage in points:
        print(f"{fmt:8s} on {storage:5s}      {summary[f'{fmt}/{storage}/cold']:8.1f}  {summary[f'{fmt}/{storage}/warm']:8.1f}")
    ratios = {}
    for storage in sorted({s for _, s in points}):
        for cache in ("cold", "warm"):
            per_round = []
            for r in range(args.repeats):
                get = lambda f: next(x[f"{cache}_samples_per_s"] for x in rounds  # noqa: E731
                                     if x["round"] == r and x["format"] == f and x["storage"] == storage)
                per_round.append(get("records") / get("jpeg_dir"))
            ratios[f"{storage}/{cache}"] = {"median": statistics.median(per_round), "min": min(per_round),
                                            "max": max(per_round)}
            q = ratios[f"{storage}/{cache}"]
            print(f"records / jpeg_dir on {storage:5s} {cache}: {q['median']:.2f}x ({q['min']:.2f}-{q['max']:.2f})")
    result = {"command": " ".join(sys.argv), "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "cpu_model": cpu_model(), "cpus": os.cpu_count(), "load_average": os.getloadavg(),
              "git_sha": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip(),
              "network_mount": reason or "sshfs over a loopback sshd (tests/python/sshfs_mount.py)",
              "data": str(tree), "steps": args.steps, "batch": args.batch, "threads": args.threads,
              "rounds": rounds, "median_samples_per_s": summary, "records_over_jpeg_dir": ratios}
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} and {h5_dir}/")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"io_formats.py: {e}", file=sys.stderr)
        sys.exit(1)
