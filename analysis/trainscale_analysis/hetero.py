"""Heterogeneous workers: the per-batch table (worker x batch times) and the idle fraction
before each all-reduce, from a run file's /partition group (docs/hdf5-schema.md,
docs/heterogeneous.md).

Per step s and rank r the run file holds the samples the rank took (`shares`), its compute
seconds (forward + backward, with an emulated slowdown) and its idle seconds (the slowest
rank's compute less its own: what it waits before the all-reduce can complete). The idle
fraction of a step is the ranks' idle time over all the ranks' time up to the all-reduce,
sum_r idle[s, r] / (R x max_r compute[s, r]): 0 when the shares balance the ranks perfectly.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import load

PARTITION_ARRAYS = ("shares", "compute", "idle")


def load_partition(run) -> dict[str, Any]:
    """/partition of one run: the [S, R] arrays `shares`, `compute`, `idle`, the changes
    (`change_step` [C], `change_shares` [C, R]) and the attributes; {} when the run has none
    (equal shares and no emulated slowdown)."""
    d = load.digest(run)
    if d is not None and "partition" not in d.groups:  # known without opening the file again
        return {}
    with load._open(run) as f:
        if "partition" not in f:
            return {}
        g = f["partition"]
        out: dict[str, Any] = {k: load.scalar(v) for k, v in g.attrs.items()}
        for name in PARTITION_ARRAYS + ("change_step", "change_shares"):
            out[name] = np.asarray(g[name][...])
        return out


def idle_fraction(partition: dict[str, Any]) -> np.ndarray:
    """Per step: the ranks' idle seconds over the ranks' seconds up to the all-reduce."""
    compute, idle = partition["compute"].astype(np.float64), partition["idle"].astype(np.float64)
    if compute.size == 0:
        return np.zeros(0)
    span = compute.max(axis=1) * compute.shape[1]
    return np.divide(idle.sum(axis=1), span, out=np.zeros_like(span), where=span > 0)


def batch_table(run, first_step: int = 1, steps: int | None = None) -> pd.DataFrame:
    """One row per step (batch) from `first_step` (1-based) on, `steps` of them (all when None):
    `step`, per rank r `rank r samples`, `rank r compute s`, `rank r idle s`, then `slowest`
    (the rank the others waited for) and `idle_fraction`. Empty without /partition."""
    p = load_partition(run)
    if not p:
        return pd.DataFrame()
    shares, compute, idle = p["shares"], p["compute"], p["idle"]
    frac = idle_fraction(p)
    end = len(shares) if steps is None else min(len(shares), first_step - 1 + steps)
    rows = []
    for s in range(max(first_step - 1, 0), end):
        row: dict[str, Any] = {"step": s + 1}
        for r in range(shares.shape[1]):
            row[f"rank {r} samples"] = int(shares[s, r])
            row[f"rank {r} compute s"] = float(compute[s, r])
            row[f"rank {r} idle s"] = float(idle[s, r])
        row["slowest"] = int(np.argmax(compute[s]))
        row["idle_fraction"] = float(frac[s])
        rows.append(row)
    return pd.DataFrame(rows)


def changes_table(run) -> pd.DataFrame:
    """The share changes of a run: `step` (from which they apply) and the shares as text."""
    p = load_partition(run)
    if not p:
        return pd.DataFrame(columns=["step", "shares"])
    return pd.DataFrame({"step": p["change_step"].astype(int),
                         "shares": [",".join(str(int(v)) for v in row) for row in p["change_shares"]]})


def ranks_text(partition: dict[str, Any]) -> str:
    """"rank 0: cpu, 12 threads (Intel Xeon); rank 1: cuda, 2 threads (NVIDIA H200)" from the
    /partition attributes rank_backends, rank_threads, rank_devices; "" for files without them."""
    if not partition.get("rank_backends"):
        return ""
    backends = str(partition["rank_backends"]).split(",")
    threads = str(partition.get("rank_threads", "")).split(",")
    devices = str(partition.get("rank_devices", "")).split("; ")
    parts = []
    for r, backend in enumerate(backends):
        t = f", {threads[r]} threads" if r < len(threads) and threads[r] else ""
        d = f" ({devices[r]})" if r < len(devices) and devices[r] else ""
        parts.append(f"rank {r}: {backend}{t}{d}")
    return "; ".join(parts)


def idle_summary(run, warmup_steps: int = 1) -> dict[str, float]:
    """Mean idle fraction before the all-reduce after `warmup_steps`, and the mean compute
    seconds of each rank (keys `idle_fraction`, `rank r compute s`)."""
    p = load_partition(run)
    if not p:
        return {}
    frac = idle_fraction(p)[warmup_steps:]
    out = {"idle_fraction": float(frac.mean()) if frac.size else float("nan")}
    for r, v in enumerate(p["compute"][warmup_steps:].mean(axis=0)):
        out[f"rank {r} compute s"] = float(v)
    return out
