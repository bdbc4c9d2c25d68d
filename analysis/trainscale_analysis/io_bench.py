"""Input-pipeline measurements: `trainscale bench io` files (schema trainscale-io/1) and the
read metrics of run files (/io), and the "data format" and "storage" views built from them:
throughput of each format (or storage) relative to the fastest one, as in the published
"data format performance" and "relative performance across storage" charts
(docs/analysis.md "Data format and storage").

- load_io_bench(paths): one row per timed pass of every bench io file found;
- run_read_rates(df): per finished run with /io, its storage read rate (bytes / read seconds);
- relative_throughput(io, dim): median samples/s per value of `dim` ("format" or "storage")
  relative to the fastest value, within each cache mode and each combination of the other
  settings (data set, loader threads, the other dimension).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import h5py
import pandas as pd

from . import load, run_digest

SCHEMA = "trainscale-io/1"
# What else must match for two passes to be compared on `dim` (besides the cache mode).
MATCH_KEYS = ("dataset", "format", "storage", "loader_threads", "batch")


def _files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        out.extend(sorted(p.rglob("*.h5")) if p.is_dir() else [p])
    return out


def load_io_bench(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """Every pass of every bench io file among `paths` (files, or directories searched
    recursively; other HDF5 files there are skipped). Columns: path, dataset, format, storage,
    file_system, loader_threads, batch, cache, samples_per_s, mb_per_s."""
    rows = []
    for path in _files(paths):
        try:
            f = h5py.File(path, "r")
        except OSError:
            continue
        with f:
            if load.text(f.attrs.get("schema", "")) != SCHEMA:
                continue
            a = {k: load.scalar(v) for k, v in f.attrs.items() if k != "config"}
            io = f["io"]
            cache = [load.text(c) for c in io["cache"][:]]
            for i, mode in enumerate(cache):
                rows.append({"path": str(path), "dataset": a.get("dataset"), "format": a.get("format"),
                             "storage": a.get("storage"), "file_system": a.get("file_system", ""),
                             "loader_threads": a.get("loader_threads"), "batch": a.get("batch"),
                             "cache": mode, "samples_per_s": float(io["samples_per_s"][i]),
                             "mb_per_s": float(io["mb_per_s"][i])})
    return pd.DataFrame(rows, columns=["path", "dataset", "format", "storage", "file_system", "loader_threads",
                                       "batch", "cache", "samples_per_s", "mb_per_s"])


def run_read_rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per finished run file with /io read metrics: format, storage, cache, the bytes its loaders
    read per rank and step (median) and its read rate in MB/s (all bytes / all read seconds)."""
    rows = []
    for run in df[df["status"] == "ok"].to_dict("records") if "status" in df.columns else []:
        path = run.get("path")
        if not isinstance(path, str) or not path:
            continue
        d = load.digest(run)  # what read_run kept of the file; else read it
        if d is None:
            with h5py.File(path, "r") as f:
                io = run_digest.io_figures(f, load.scalar)
        else:
            io = d.io
        if io is None:
            continue
        attrs = io["attrs"]
        rows.append({"run_id": run.get("run_id"), "format": run.get("dataset.format"),
                     "storage": attrs.get("storage"), "file_system": attrs.get("file_system", ""),
                     "cache": attrs.get("cache"), "bytes_per_step": io["bytes_per_step"],
                     "read_mb_per_s": io["read_mb_per_s"]})
    return pd.DataFrame(rows, columns=["run_id", "format", "storage", "file_system", "cache", "bytes_per_step",
                                       "read_mb_per_s"])


def relative_throughput(io: pd.DataFrame, dim: str, metric: str = "samples_per_s") -> pd.DataFrame:
    """Median `metric` per value of `dim` and its ratio to the fastest value (1.0), per cache
    mode and per combination of the other matching settings; `min`/`max` span the passes."""
    if io.empty:
        return pd.DataFrame(columns=["cache", dim, metric, "min", "max", "passes", "relative"])
    others = [k for k in MATCH_KEYS if k != dim and k in io.columns and io[k].nunique(dropna=False) > 1]
    keys = ["cache"] + others
    g = io.groupby(keys + [dim], dropna=False)[metric]
    table = g.median().rename(metric).to_frame()
    table["min"], table["max"], table["passes"] = g.min(), g.max(), g.size()
    table = table.reset_index()
    fastest = table.groupby(keys, dropna=False)[metric].transform("max")
    table["relative"] = table[metric] / fastest
    return table.sort_values(keys + ["relative"], ascending=[True] * len(keys) + [False]).reset_index(drop=True)
