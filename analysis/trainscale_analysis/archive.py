"""Keep a campaign small enough to commit beside its report (reports/studies/*/campaign/).

`archive_campaign(src, dst)` copies the campaign's manifest, its hash, sweep and site files and the
markers of `runs/` (FAILED, PREEMPTED, DONE) unchanged, and re-writes every run file with the
same groups, datasets, dtypes and attributes, each dataset of more than a few values
gzip-compressed (level 9, byte shuffle), and /timing (steps x ranks per phase, most of a long
run's bytes) cut to at most MAX_TIMING_ROWS steps: every k-th step, with /timing attributes
`archive_stride` = k and `archive_steps` (load.load_timing stands each kept row for its k
steps). /train, /eval and the rest keep every step, so loss curves and areas are exact. The
copy otherwise has the run file's schema, so `python -m trainscale_analysis report`
regenerates a report from it. The copy is staged and put in place whole (staged_files), so an
interrupted or failed archive leaves neither a half-written run file nor half a campaign.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import numpy as np

from .staged_files import StagedFiles

# Markers and manifest files that travel unchanged (docs/sweeps.md "Campaign directory").
MARKER_SUFFIXES = (".FAILED", ".PREEMPTED", ".DONE")
CAMPAIGN_FILES = ("manifest.yaml", "manifest.hash", "sweep.yaml", "site.yaml")
# Below this many elements a dataset stays contiguous: a chunk index costs more than it saves.
MIN_COMPRESSED_ELEMENTS = 64
# /timing keeps at most this many steps (every k-th); /train, /eval and the rest keep every one.
MAX_TIMING_ROWS = 500


def _copy_attrs(src: h5py.HLObject, dst: h5py.HLObject) -> None:
    for key, value in src.attrs.items():
        dst.attrs.create(key, value, dtype=src.attrs.get_id(key).dtype)


def _copy_dataset(name: str, src: h5py.Dataset, dst_group: h5py.Group, stride: int = 1) -> None:
    data = src[...] if src.size else None
    if stride > 1:
        data = data[::stride]
    shape = src.shape if data is None else data.shape
    compress = shape != () and int(np.prod(shape)) >= MIN_COMPRESSED_ELEMENTS and \
        src.dtype.kind in "iufb"
    options = {"compression": "gzip", "compression_opts": 9, "shuffle": True} if compress else {}
    out = dst_group.create_dataset(name, shape=shape, dtype=src.dtype, **options)
    if data is not None:
        out[...] = data
    _copy_attrs(src, out)


def _copy_timing(src: h5py.Group, dst: h5py.Group, max_rows: int) -> None:
    """/timing, every k-th step when it has more than `max_rows` (load.load_timing expands it)."""
    _copy_attrs(src, dst)
    steps = max((d.shape[0] for d in src.values() if isinstance(d, h5py.Dataset) and d.shape), default=0)
    stride = -(-steps // max_rows) if steps > max_rows else 1
    if stride > 1:
        dst.attrs["archive_stride"] = np.int64(stride)
        dst.attrs["archive_steps"] = np.int64(steps)
    for name, item in src.items():
        _copy_dataset(name, item, dst, stride)


def _copy_group(src: h5py.Group, dst: h5py.Group, max_timing_rows: int) -> None:
    _copy_attrs(src, dst)
    for name, item in src.items():
        if isinstance(item, h5py.Group):
            if item.name == "/timing":
                _copy_timing(item, dst.create_group(name), max_timing_rows)
            else:
                _copy_group(item, dst.create_group(name), max_timing_rows)
        elif isinstance(item, h5py.Dataset):
            _copy_dataset(name, item, dst)


def compact_run_file(src: Path, dst: Path, max_timing_rows: int = MAX_TIMING_ROWS) -> None:
    """Write `src` (a run file) to `dst` with compressed datasets and at most `max_timing_rows`
    steps of /timing, atomically."""
    tmp = dst.with_name(dst.name + ".tmp")
    try:
        # The HDF5 1.10 file format: compact object headers (a run file's 30-odd small datasets
        # cost a third of the default format's bytes) that HDF5 1.10 (Debian 12's) still reads.
        with h5py.File(src, "r") as fin, h5py.File(tmp, "w", libver=("v110", "v110")) as fout:
            _copy_group(fin, fout, max_timing_rows)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def archive_campaign(src: str | os.PathLike, dst: str | os.PathLike) -> dict[str, int]:
    """Copy campaign `src` to `dst` (created) all or nothing (staged_files): an earlier archive
    there is replaced whole only when the new copy is complete, so no marker or run file of an
    earlier copy outlives it (a task that failed then and succeeded since must not read as
    failed), and a full disk leaves the earlier one as it was. Returns {"runs": run files,
    "markers": markers, "bytes_in": ..., "bytes_out": ...}."""
    src, dst = Path(src), Path(dst)
    if not (src / "manifest.yaml").is_file() and not (src / "runs").is_dir():
        raise ValueError(f"{src}: neither manifest.yaml nor runs/; archive takes a campaign "
                         f"directory (trainscale sweep expand --out DIR)")
    with StagedFiles(dst, "archive", files=CAMPAIGN_FILES, keep=lambda earlier: False) as staged:
        counts = _copy_campaign(src, staged.stage)
        staged.commit()
    for name in CAMPAIGN_FILES:  # an earlier archive's files the campaign no longer has
        if not (src / name).is_file():
            (dst / name).unlink(missing_ok=True)
    return counts


def _copy_campaign(src: Path, dst: Path) -> dict[str, int]:
    (dst / "runs").mkdir()
    for name in CAMPAIGN_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    counts = {"runs": 0, "markers": 0, "bytes_in": 0, "bytes_out": 0}
    for path in sorted((src / "runs").iterdir()) if (src / "runs").is_dir() else []:
        target = dst / "runs" / path.name
        if path.suffix == ".h5":
            compact_run_file(path, target)
            counts["runs"] += 1
            counts["bytes_in"] += path.stat().st_size
            counts["bytes_out"] += target.stat().st_size
        elif path.suffix in MARKER_SUFFIXES:
            shutil.copy2(path, target)
            counts["markers"] += 1
    return counts
