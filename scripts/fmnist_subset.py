#!/usr/bin/env python3
"""Writes the first N training and M test samples of an IDX data set (Fashion-MNIST layout:
{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz) to another directory, in the same format, so
a small real data set can travel to a machine that lacks it (the GPU machine: docs/gpu.md).

    scripts/fmnist_subset.py --train 12000 --test 2000 --out .device/fashion-mnist
"""
import argparse
import gzip
import os
import struct
import sys

SRC = "/usr/share/datasets/fashion-mnist"


def subset(src, dst, name, count):
    with gzip.open(os.path.join(src, name)) as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    if count > n:
        sys.exit(f"fmnist_subset: {name} holds {n} samples, fewer than the {count} asked for")
    per = 1
    for d in shape[1:]:
        per *= d
    header = struct.pack(">I", magic) + struct.pack(">I", count) + data[8:4 + 4 * dims]
    with gzip.open(os.path.join(dst, name), "wb", compresslevel=9) as f:
        f.write(header + data[4 + 4 * dims:4 + 4 * dims + count * per])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=SRC)
    ap.add_argument("--train", type=int, default=12000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for split, count in (("train", a.train), ("t10k", a.test)):
        subset(a.src, a.out, f"{split}-images-idx3-ubyte.gz", count)
        subset(a.src, a.out, f"{split}-labels-idx1-ubyte.gz", count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
