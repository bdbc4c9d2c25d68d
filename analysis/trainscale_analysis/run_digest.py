"""What the report needs of a run file besides its row, read in the one open of load.read_run.

A campaign of 10^4 runs is read linearly and each run file opened once (docs/benchmarks.md
"Reliability"): load.read_run hands its open file to `remember`, which keeps a small digest per
file: the loss curve (/train time, samples, loss), the mean seconds per step of each /timing phase
after warm-up (all ranks, and rank 0), the /io read figures and the top-level group names. The
time breakdown, the exchange view, the read rates, the heterogeneous-worker check and the loss
curves take it from here instead of opening every file again. A digest is used only while the
file is unchanged (same size, mtime and inode); otherwise, or for a file read_run never saw, the
file is read again.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

CURVE = ("time", "samples", "loss")


@dataclass
class RunDigest:
    groups: frozenset[str]
    warmup_steps: int
    curve: dict[str, np.ndarray] = field(default_factory=dict)      # CURVE -> /train column
    timing_means: dict[str, float] = field(default_factory=dict)    # phase -> mean s/step after warm-up
    rank0_means: dict[str, float] = field(default_factory=dict)     # the same, rank 0 only
    io: dict[str, Any] | None = None                                # /io: bytes_per_step, read_mb_per_s, attrs


_DIGESTS: dict[str, tuple[tuple[int, int, int], RunDigest]] = {}


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def warmup_of(value: Any) -> int:
    """A warm-up step count as metrics.time_breakdown reads it (missing or NaN: 0)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 0
    return int(value) if math.isfinite(value) else 0


def _mean_after(a: np.ndarray, warm: int) -> float:
    return float(np.mean(a[warm:] if a.shape[0] > warm else a))


def io_figures(f: h5py.File, scalar) -> dict[str, Any] | None:
    """/io's read figures (io_bench.run_read_rates): bytes per rank and step (median), MB/s."""
    if "io" not in f or "read_bytes" not in f["io"]:
        return None
    b = f["io/read_bytes"][:].astype(float)
    s = f["io/read_seconds"][:].astype(float)
    keep = b >= 0
    seconds = s[keep].sum()
    return {"attrs": {k: scalar(v) for k, v in f["io"].attrs.items()},
            "bytes_per_step": float(np.median(b[keep])) if keep.any() else np.nan,
            "read_mb_per_s": b[keep].sum() / 1e6 / seconds if seconds > 0 else np.nan}


def read_digest(f: h5py.File, timing: dict[str, np.ndarray], warmup_steps: Any, scalar) -> RunDigest:
    """The digest of an open run file; `timing` is load.timing_of(f) (archived copies expanded),
    `warmup_steps` its /summary attribute."""
    warm = warmup_of(warmup_steps)
    d = RunDigest(groups=frozenset(f.keys()), warmup_steps=warm)
    train = f.get("train")
    if isinstance(train, h5py.Group):
        d.curve = {k: np.asarray(train[k][...], np.float64) for k in CURVE
                   if isinstance(train.get(k), h5py.Dataset) and train[k].ndim == 1}
    for phase, a in timing.items():
        d.timing_means[phase] = _mean_after(a, warm)
        d.rank0_means[phase] = _mean_after(a[:, :1], warm) if a.shape[1] else math.nan
    d.io = io_figures(f, scalar)
    return d


def remember(path: str | os.PathLike, digest: RunDigest) -> None:
    stamp = _stamp(str(path))
    if stamp is not None:
        _DIGESTS[str(path)] = (stamp, digest)


def cached(path: str | os.PathLike) -> RunDigest | None:
    """The digest of `path` if read_run took it from the file as it is now, else None."""
    hit = _DIGESTS.get(str(path))
    if hit is None or hit[0] != _stamp(str(path)):
        return None
    return hit[1]
