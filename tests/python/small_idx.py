"""Small raw (uncompressed) IDX copies of the real Fashion-MNIST for storage tests: the first
`train` / `test` samples of each split, written under a test's temp directory. Raw files, not
.gz: a .gz split is inflated into memory when the run starts, so only raw files are read from
storage during the timed loop."""
from __future__ import annotations

import gzip
import pathlib
import struct

FMNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")


def _subset(src: pathlib.Path, count: int) -> bytes:
    with gzip.open(src, "rb") as f:
        magic = f.read(4)
        dims = struct.unpack(">I", f.read(4))[0]
        rest_dims = [struct.unpack(">I", f.read(4))[0] for _ in range(magic[3] - 1)]
        per_item = 1
        for d in rest_dims:
            per_item *= d
        data = f.read(count * per_item)
    assert dims >= count and len(data) == count * per_item
    return magic + struct.pack(">I", count) + b"".join(struct.pack(">I", d) for d in rest_dims) + data


def write_small_idx(root: pathlib.Path, train: int = 512, test: int = 128) -> pathlib.Path:
    root = pathlib.Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", train), ("t10k", test)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{split}-{kind}-ubyte"
            (root / name).write_bytes(_subset(FMNIST / f"{name}.gz", count))
    return root
