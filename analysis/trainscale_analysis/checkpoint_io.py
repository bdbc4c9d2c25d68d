"""Checkpoint I/O per storage and model: `trainscale bench checkpoint --out` files
(trainscale-checkpoint-io/1, docs/hdf5-schema.md) as a Markdown table and a bar chart
(docs/analysis.md "Checkpoint I/O")."""
from __future__ import annotations

import pathlib

import h5py
import numpy as np

from .staged_files import StagedFiles

SCHEMA = "trainscale-checkpoint-io/1"
STORAGE_ORDER = {"local": 0, "nfs": 1, "blob": 2}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def load_checkpoint_io(paths: list[str]) -> list[dict]:
    """One row per file (directories are searched for *.h5); ValueError naming a file of another schema."""
    files: list[pathlib.Path] = []
    for p in map(pathlib.Path, paths):
        files += sorted(p.glob("*.h5")) if p.is_dir() else [p]
    if not files:
        raise ValueError(f"no checkpoint I/O files in {', '.join(paths)}")
    rows = []
    for f in files:
        with h5py.File(f, "r") as h:
            a = h.attrs
            if _text(a.get("schema", "")) != SCHEMA:
                raise ValueError(f"{f}: schema {_text(a.get('schema', '(none)'))!r}, expected {SCHEMA}")
            write = np.asarray(h["checkpoint/write_seconds"][:], dtype=float)
            read = np.asarray(h["checkpoint/read_seconds"][:], dtype=float)
            rows.append({"file": str(f), "model": _text(a["model"]), "storage": _text(a["storage"]),
                         "file_system": _text(a["file_system"]), "bytes": int(a["bytes"]),
                         "repeats": int(a["repeats"]), "write_gbps": float(a["write_gbps"]),
                         "read_gbps": float(a["read_gbps"]), "write_s": float(np.median(write)),
                         "read_s": float(np.median(read)), "write_spread": float(write.max() - write.min()),
                         "read_spread": float(read.max() - read.min()), "host": _text(a["host"]),
                         "cpu_model": _text(a["cpu_model"]), "note": _text(a["note"]),
                         "git_sha": _text(a["git_sha"])})
    rows.sort(key=lambda r: (r["bytes"], r["model"], STORAGE_ORDER.get(r["storage"], 9), r["storage"]))
    return rows


def markdown_table(rows: list[dict], title: str) -> str:
    machines = sorted({f"{r['host']} ({r['cpu_model']})" for r in rows})
    lines = [f"# {title}", "",
             f"`trainscale bench checkpoint` on {', '.join(machines)}, trainscale {', '.join(sorted({r['git_sha'] for r in rows}))}. "
             "Each repeat writes the checkpoint (fsync, or one S3 PUT), reads it back from the storage "
             "(page cache dropped) and checks every byte; GB/s = 1e9 bytes / the median seconds of the repeats "
             "(docs/data.md \"Checkpoint I/O\").", "",
             "| model | size (MB) | storage | file system | write GB/s | read GB/s | write s (median, spread) "
             "| read s (median, spread) | repeats |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['bytes'] / 1e6:.1f} | {r['storage']} | {r['file_system']} | "
                     f"{r['write_gbps']:.3f} | {r['read_gbps']:.3f} | {r['write_s']:.3f} ({r['write_spread']:.3f}) | "
                     f"{r['read_s']:.3f} ({r['read_spread']:.3f}) | {r['repeats']} |")
    notes = [f"- {r['model']} on {r['storage']}: {r['note']}" for r in rows if r["note"]]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def bar_chart(rows: list[dict], path: pathlib.Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['model']}\n{r['storage']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(rows) + 1.5), 3.6))
    ax.bar(x - 0.2, [r["write_gbps"] for r in rows], 0.4, label="write")
    ax.bar(x + 0.2, [r["read_gbps"] for r in rows], 0.4, label="read (page cache dropped)")
    ax.set_xticks(x, labels)
    ax.set_ylabel("GB/s (1e9 bytes/s)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_checkpoint_io_report(paths: list[str], out: str, title: str | None = None) -> pathlib.Path:
    """Writes OUT (Markdown) and OUT's stem + .png beside it, all or nothing (staged_files);
    returns the Markdown's path."""
    rows = load_checkpoint_io(paths)
    md = pathlib.Path(out)
    title = title or "Checkpoint I/O per storage"
    png = md.with_suffix(".png")
    with StagedFiles(md.parent, md.name, files=[png.name, md.name]) as staged:
        bar_chart(rows, staged.path(png.name), title)
        staged.path(md.name).write_text(markdown_table(rows, title) +
                                        f"\n![write and read GB/s per model and storage]({png.name})\n")
        staged.commit()
    return md
