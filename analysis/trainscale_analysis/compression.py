"""When does gradient compression pay off? Accuracy reached vs bytes on the wire vs time, per
compressor, from run files (docs/analysis.md "Compression view"; the recorded names are in
docs/hdf5-schema.md `/compression` and docs/compression.md).

A run without `/compression` (dist.compression none) sent 4 bytes per parameter per step per
rank on more than one rank; its ratio is 1.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import h5py
import numpy as np
import pandas as pd

from . import load
from .staged_files import StagedFiles

COLUMNS = ["run", "compressor", "settings", "workers", "steps", "final_accuracy", "best_accuracy",
           "train_time_s", "time_to_target_s", "wire_mb_per_rank", "compression_ratio",
           "compress_s", "decompress_s", "comm_s"]

# The config keys that distinguish two runs of one compressor.
SETTING_KEYS = ["dist.qsgd_bits", "dist.qsgd_bucket", "dist.topk_ratio", "dist.powersgd_rank",
                "dist.powersgd_warm_start", "dist.error_feedback", "dist.compression_warmup_steps"]


def run_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Run files named directly, or every *.h5 in the directories named (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*.h5")))
        elif p.is_file():
            out.append(p)
        else:
            raise ValueError(f"{p}: neither a run file nor a directory of them")
    return out


def _wire_bytes_per_rank(f: h5py.File, parameters: float, world: int, steps: int) -> float:
    if "compression" in f and "wire_bytes" in f["compression"]:
        return float(np.asarray(f["compression"]["wire_bytes"][...], dtype=np.float64).sum()) / world
    return 4.0 * parameters * steps if world > 1 else 0.0


def _phase_total(timing: dict[str, np.ndarray], phase: str, world: int) -> float:
    """Seconds of `phase` over the run per rank (load.load_timing: archived copies included)."""
    return float(timing[phase].sum()) / world if phase in timing else math.nan


def run_row(path: Path) -> dict:
    """One run: its compressor and settings, accuracy, time and bytes (per rank)."""
    row = load.read_run(path)
    compressor = row.get("dist.compression") or "none"
    settings = ", ".join(f"{k.split('.', 1)[1]}={row[k]}" for k in SETTING_KEYS if k in row)
    world = int(row.get("env.world_size", row.get("workers", 1)) or 1)
    with h5py.File(path, "r") as f:
        steps = len(f["train"]["step"]) if "train" in f else 0
        train_time = float(f["train"]["time"][-1]) if steps else math.nan
        wire = _wire_bytes_per_rank(f, float(row.get("model.parameters", math.nan)), world, steps)
    timing = load.load_timing(path)
    phases = {p: _phase_total(timing, p, world) for p in ("compress", "decompress", "comm")}
    ratio = row.get("summary.compression_ratio", 1.0 if compressor == "none" else math.nan)
    return {"run": row["run_id"], "compressor": compressor, "settings": settings, "workers": world,
            "steps": steps, "final_accuracy": row.get("final_accuracy", math.nan),
            "best_accuracy": row.get("best_accuracy", math.nan), "train_time_s": train_time,
            "time_to_target_s": row.get("time_to_target", math.nan), "wire_mb_per_rank": wire / 2**20,
            "compression_ratio": ratio, "compress_s": phases["compress"] if compressor != "none" else 0.0,
            "decompress_s": phases["decompress"] if compressor != "none" else 0.0, "comm_s": phases["comm"]}


def compression_table(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run file, sorted by compressor and settings (COLUMNS)."""
    rows = [run_row(p) for p in run_paths(paths)]
    if not rows:
        raise ValueError("no run files found")
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["compressor", "settings", "run"]).reset_index(drop=True)


def _markdown(df: pd.DataFrame) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.4g}"
        return str(v)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r[c]) for c in COLUMNS) + " |" for _, r in df.iterrows()]
    return "\n".join(lines)


def _plot(df: pd.DataFrame, png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for (compressor, settings), g in df.groupby(["compressor", "settings"]):
        label = compressor + (f" ({settings})" if settings else "")
        axes[0].scatter(g["wire_mb_per_rank"], g["final_accuracy"], label=label)
        axes[1].scatter(g["train_time_s"], g["final_accuracy"], label=label)
    axes[0].set_xscale("symlog")
    axes[0].set_xlabel("MiB sent per rank (whole run)")
    axes[1].set_xlabel("training time (s)")
    for ax in axes:
        ax.set_ylabel("final test accuracy")
        ax.grid(True, alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def compression_report(paths: Sequence[str | Path], out: str | Path, title: str | None = None) -> Path:
    """Writes OUT (Markdown: the table) and OUT with .png (accuracy vs bytes and vs time), all
    or nothing (staged_files)."""
    df = compression_table(paths)
    out = Path(out)
    png = out.with_suffix(".png")
    with StagedFiles(out.parent, out.name, files=[png.name, out.name]) as staged:
        _plot(df, staged.path(png.name))
        body = [f"# {title or 'Gradient compression: accuracy vs bytes vs time'}", "",
                "Per rank: MiB handed to the collectives over the whole run, training time, and the time in "
                "compress / decompress / comm (docs/compression.md).", "",
                _markdown(df), "", f"![accuracy vs bytes and time]({png.name})", ""]
        staged.path(out.name).write_text("\n".join(body))
        staged.commit()
    return out
