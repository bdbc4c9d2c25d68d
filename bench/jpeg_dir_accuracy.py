#!/usr/bin/env python3
"""Fashion-MNIST as jpeg_dir trains to the accuracy of idx (issue 13's claim; docs/data.md).

Converts Fashion-MNIST (/usr/share/datasets/fashion-mnist) to the jpeg_dir layout
ROOT/{train,test}/<class>/<index>.jpg with `trainscale data convert --format jpeg_dir` when the
binary has it, else with Pillow (grey, quality --quality, what the converter writes), then
trains the same config (mlp, 1 epoch, loader_threads 2) on `format: idx` and on
`format: jpeg_dir` for each seed and compares the final test accuracy. JPEG is lossy, so the
claim is "within 1 point", not bit-identical. Writes reports/io/jpeg_dir_accuracy.json.

    /work/main/.venv/bin/python bench/jpeg_dir_accuracy.py --binary build/bin/trainscale --seeds 1,2,3
"""
import argparse
import gzip
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
FMNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"]
CONFIG = """\
model: mlp
dataset: {{name: fashion_mnist, format: {format}, root: {root}, loader_threads: 2}}
batch_per_worker: 64
epochs: 1
lr: 0.05
threads: 1
seed: {seed}
"""


def idx_arrays(prefix):
    with gzip.open(FMNIST / f"{prefix}-images-idx3-ubyte.gz") as f:
        images = f.read()[16:]
    with gzip.open(FMNIST / f"{prefix}-labels-idx1-ubyte.gz") as f:
        labels = f.read()[8:]
    return images, labels


def convert_with_pillow(out, quality):
    from PIL import Image
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images, labels = idx_arrays(prefix)
        for c in CLASSES:
            (out / split / c).mkdir(parents=True, exist_ok=True)
        for i, label in enumerate(labels):
            im = Image.frombytes("L", (28, 28), images[i * 784:(i + 1) * 784])
            im.save(out / split / CLASSES[label] / f"{i:05d}.jpg", quality=quality)


def convert(binary, out, quality):
    p = subprocess.run([binary, "data", "convert", "--dataset", "fashion_mnist", "--from", str(FMNIST),
                        "--format", "jpeg_dir", "--out", str(out), "--jpeg-quality", str(quality)],
                       capture_output=True, text=True)
    if p.returncode == 0:
        return "trainscale data convert"
    convert_with_pillow(out, quality)
    return f"Pillow (trainscale data convert unavailable: exit {p.returncode})"


def accuracy(binary, work, fmt, root, seed):
    cfg = work / f"{fmt}_{seed}.yaml"
    cfg.write_text(CONFIG.format(format=fmt, root=root, seed=seed))
    p = subprocess.run([binary, "run", "--config", str(cfg), "--out", str(work / "runs")], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{fmt} seed {seed}: exit {p.returncode}: {p.stderr.strip()}")
    evals = re.findall(r"accuracy ([0-9.]+)", p.stdout)
    return float(evals[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=str(REPO / "build" / "bin" / "trainscale"))
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--out", default=str(REPO / "reports" / "io" / "jpeg_dir_accuracy.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        how = convert(args.binary, work / "fmnist_jpeg", args.quality)
        rows = []
        for seed in (int(s) for s in args.seeds.split(",")):
            a_idx = accuracy(args.binary, work, "idx", FMNIST, seed)
            a_jpeg = accuracy(args.binary, work, "jpeg_dir", work / "fmnist_jpeg", seed)
            rows.append({"seed": seed, "idx": a_idx, "jpeg_dir": a_jpeg, "difference_points": 100 * (a_jpeg - a_idx)})
            print(f"seed {seed}: idx {a_idx:.4f}, jpeg_dir {a_jpeg:.4f}, difference {100 * (a_jpeg - a_idx):+.2f} points")
    worst = max(abs(r["difference_points"]) for r in rows)
    result = {"benchmark": "jpeg_dir_accuracy", "converted_by": how, "quality": args.quality,
              "config": CONFIG, "rows": rows, "max_abs_difference_points": worst, "within_1_point": worst <= 1.0}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"converted by {how}; largest difference {worst:.2f} points; wrote {args.out}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
