"""Study 7's "predicted vs simulated vs measured" (docs/model.md; reports/studies/model_skylake/).

A simulated campaign (`scheduler: simulate`, run files with `simulated` = 1) carries both sides
of the comparison in each run file: the simulated step in `/timing` and the model's prediction
of the same run in `/summary` (`predicted_step_time`, `predicted_comm`, `predicted_exposed_comm`).

- `sim_frame(paths)`: one row per simulated run: model, batch, all-reduce, overlap, topology,
  workers; simulated and predicted step, communication and exposed communication (seconds, the
  slowest rank), compute (forward + backward), images/s and the scaling efficiency against the
  one-worker run of the same model, batch and topology.
- `network_dominates_at(df, column)`: the smallest worker count whose exposed communication
  exceeds the step's compute.
- `sim_study_report(paths, out_dir, validation=...)`: `sim_study.md`, its figures and
  `sim_study.csv`: the simulator against the model at every point, where the network starts to
  dominate in each, the efficiency curves, and the model against runs measured on this machine
  (`bench/model_validation.py`'s JSON).
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Iterable, Sequence

import h5py
import numpy as np
import pandas as pd
import yaml

from . import load
from .plots import plt, save
from .staged_files import StagedFiles

KEYS = ["model", "batch_per_worker", "allreduce", "overlap", "topology"]


def _run_row(path: Path) -> dict | None:
    with h5py.File(path, "r") as f:
        if load.text(f.attrs.get("schema", "")) != load.SCHEMA or int(f.attrs.get("simulated", 0)) != 1:
            return None
        config = yaml.safe_load(load.text(f.attrs["config"]))
        cluster = yaml.safe_load(load.text(f.attrs["sim_cluster"]))
        timing = {k: f["timing"][k][:] for k in ("step", "comm", "comm_wait", "forward", "backward")}  # [S, R]
        summary = {k: float(v) for k, v in f["summary"].attrs.items()}
    net = cluster.get("interconnect", {})
    network = net["levels"][-1] if "levels" in net else net
    dist = config.get("dist", {})
    slowest = {k: float(np.median(v.max(axis=1))) for k, v in timing.items()}
    workers = int(config.get("workers", 1))
    batch = int(config["batch_per_worker"])
    return {"model": config["model"], "batch_per_worker": batch, "allreduce": dist.get("allreduce", "ring"),
            "overlap": bool(dist.get("overlap", True)), "topology": network.get("topology", "star"),
            "workers": workers, "simulated": slowest["step"], "predicted": summary["predicted_step_time"],
            "sim_comm": slowest["comm"], "pred_comm": summary["predicted_comm"],
            "sim_exposed": slowest["comm_wait"], "pred_exposed": summary["predicted_exposed_comm"],
            "compute": slowest["forward"] + slowest["backward"],
            "images_per_s": workers * batch / slowest["step"], "path": str(path)}


def sim_frame(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The simulated runs under `paths`; files that cannot be read are listed in
    `df.attrs["unreadable"]` (path, reason) and left out."""
    rows, unreadable = [], []
    paths = [Path(p) for p in paths]
    for p in paths:
        for f in ([p] if p.is_file() else sorted(p.rglob("*.h5"))):
            try:
                row = _run_row(f)
            except (OSError, KeyError, ValueError) as e:
                unreadable.append((str(f), str(e)))
                continue
            if row:
                rows.append(row)
    if not rows:
        raise load.CampaignError(f"no readable simulated run files (simulated = 1) under {', '.join(map(str, paths))}")
    df = pd.DataFrame(rows)
    df["sim/pred"] = df["simulated"] / df["predicted"]
    # One worker exchanges nothing: its run stands for every all-reduce and overlap setting.
    group = ["model", "batch_per_worker", "topology"]
    one = (df[df["workers"] == 1].groupby(group, as_index=False)[["simulated", "predicted"]].min()
           .rename(columns={"simulated": "simulated_1", "predicted": "predicted_1"}))
    df = df.merge(one, on=group, how="left")
    df["sim_efficiency"] = df["simulated_1"] / df["simulated"]   # weak scaling: same batch per worker
    df["pred_efficiency"] = df["predicted_1"] / df["predicted"]
    df = df.drop(columns=["simulated_1", "predicted_1"]).sort_values(KEYS + ["workers"]).reset_index(drop=True)
    df.attrs["unreadable"] = unreadable
    return df


def network_dominates_at(df: pd.DataFrame, exposed: str) -> float:
    """The smallest worker count whose exposed communication exceeds the compute (nan: none)."""
    hit = df[df[exposed] > df["compute"]]
    return float(hit["workers"].min()) if len(hit) else float("nan")


def _variant_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Every row but the one-worker runs, which belong to no all-reduce."""
    return df[df["workers"] > 1]


def _plot_efficiency(df: pd.DataFrame, out: Path, batch: int) -> Path:
    """Efficiency vs nodes per model: the simulator's points over the model's lines."""
    models = sorted(df["model"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.6), sharey=True, squeeze=False)
    colours = {("tree", "star"): "#c44e52", ("ring", "star"): "#4c72b0",
               ("tree", "mesh"): "#dd8452", ("ring", "mesh"): "#55a868"}
    for ax, model in zip(axes[0], models):
        part = df[(df["model"] == model) & (df["batch_per_worker"] == batch)]
        ones = part[part["workers"] == 1]
        for (algo, topo, overlap), g in _variant_rows(part).groupby(["allreduce", "topology", "overlap"]):
            g = pd.concat([ones[ones["topology"] == topo], g]).sort_values("workers")
            colour = colours.get((algo, topo), "#8c8c8c")
            style = "-" if overlap else "--"
            ax.plot(g["workers"], g["pred_efficiency"], linestyle=style, color=colour, alpha=0.6,
                    label=f"{algo} {topo}{'' if overlap else ' serial'}")
            ax.plot(g["workers"], g["sim_efficiency"], linestyle="none", marker="o" if overlap else "x",
                    color=colour, markersize=4)
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{model}, batch {batch}")
        ax.set_xlabel("nodes")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("scaling efficiency")
    # Below the panels, so no curve hides behind it.
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    return save(fig, out)


def _ms(v: float) -> str:
    return f"{v * 1e3:.2f}"


def _dominance_table(df: pd.DataFrame) -> list[str]:
    top = int(df["workers"].max())
    lines = ["| model | batch | compute at 1 node (ms) | " + " | ".join(
        f"{a} {t}" for a in ("tree", "ring") for t in ("star", "mesh")) +
        f" | efficiency at {top}, ring star (sim / model) | ring mesh (sim / model) |",
        "|---|---|---|---|---|---|---|---|---|"]
    for (model, batch), g in df.groupby(["model", "batch_per_worker"]):
        one = g[g["workers"] == 1]
        cells = []
        for algo in ("tree", "ring"):
            for topo in ("star", "mesh"):
                part = _variant_rows(g)
                part = part[(part["allreduce"] == algo) & (part["topology"] == topo)]
                got = []
                for ov in (True, False):
                    p = part[part["overlap"] == ov]
                    s, m = network_dominates_at(p, "sim_exposed"), network_dominates_at(p, "pred_exposed")
                    fmt = lambda v: "-" if np.isnan(v) else str(int(v))  # noqa: E731
                    got.append(fmt(s) if fmt(s) == fmt(m) else f"{fmt(s)} ({fmt(m)})")
                cells.append(" / ".join(got))
        effs = []
        for topo in ("star", "mesh"):  # with overlap, as the trainer runs by default
            at_top = g[(g["workers"] == top) & (g["allreduce"] == "ring") & (g["topology"] == topo) & g["overlap"]]
            effs.append(f"{at_top['sim_efficiency'].iloc[0]:.2f} / {at_top['pred_efficiency'].iloc[0]:.2f}"
                        if len(at_top) else "")
        lines.append(f"| {model} | {batch} | {_ms(one['compute'].min()) if len(one) else ''} | "
                     + " | ".join(cells) + f" | {effs[0]} | {effs[1]} |")
    return lines


def _validation_lines(validation: str | Path) -> list[str]:
    data = json.loads(Path(validation).read_text())
    rows, summary = data["rows"], data["summary"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["model"], r["workers"], r["algorithm"] if r["workers"] > 1 else "-"), []).append(r)
    errors = [abs(r["error"]) for r in rows]
    lines = [f"Series `{summary['sha']}` of `bench/model_validation.py` on {summary['cpu_model']} "
             f"({len(rows)} runs, {len({r['round'] for r in rows})} rounds; medians per case):", "",
             "| model | workers | all-reduce | measured ms | predicted ms | error |", "|---|---|---|---|---|---|"]
    for (model, workers, algo), rs in groups.items():
        m = statistics.median(r["measured_s"] for r in rs)
        p = statistics.median(r["predicted_s"] for r in rs)
        lines.append(f"| {model} | {workers} | {algo} | {_ms(m)} | {_ms(p)} | {(p - m) / m * 100:+.1f}% |")
    lines += ["", f"{sum(e <= 0.25 for e in errors)} of {len(errors)} predictions within 25% of the measured step "
                  f"(median |error| {statistics.median(errors) * 100:.1f}%, max {max(errors) * 100:.1f}%)."]
    return lines


def sim_study_report(paths: Sequence[str | Path], out_dir: str | Path, validation: str | Path | None = None,
                     title: str | None = None) -> Path:
    """Writes sim_study.md, its figures and sim_study.csv into `out_dir`, all or nothing (staged_files)."""
    out_dir = Path(out_dir)
    df = sim_frame(paths)
    with StagedFiles(out_dir, "sim_study.md", files=["sim_study.csv", "sim_study.md"]) as staged:
        figures = [_plot_efficiency(df, staged.path(f"sim_efficiency_b{b}"), b)
                   for b in sorted(df["batch_per_worker"].unique())]
        staged.path("sim_study.md").write_text("\n".join(_report_lines(df, paths, figures, validation, title)) + "\n")
        df.drop(columns=["path"]).to_csv(staged.path("sim_study.csv"), index=False)
        staged.commit()
    return out_dir / "sim_study.md"


def _report_lines(df: pd.DataFrame, paths: Sequence[str | Path], figures: list[Path],
                  validation: str | Path | None, title: str | None) -> list[str]:
    ratio = df["sim/pred"]
    worst = df.loc[(ratio - 1).abs().idxmax()]
    lines = [f"# {title or 'Predicted vs simulated vs measured'}", "",
             f"{len(df)} simulated runs (`trainscale-sim`, one step each) from "
             + ", ".join(f"`{p}`" for p in paths) + "; each run file holds the model's prediction of the same run.", "",
             "## Simulator vs model", "",
             f"Simulated step / predicted step over all runs: median {ratio.median():.4f}, range "
             f"{ratio.min():.4f} .. {ratio.max():.4f}; {int(((ratio - 1).abs() <= 0.05).sum())} of {len(df)} within 5%, "
             f"{int(((ratio - 1).abs() <= 0.10).sum())} within 10%. Largest difference: {worst['model']} batch "
             f"{worst['batch_per_worker']}, {worst['allreduce']} on the {worst['topology']}"
             f"{'' if worst['overlap'] else ' without overlap'}, {worst['workers']} nodes: simulated "
             f"{_ms(worst['simulated'])} ms, predicted {_ms(worst['predicted'])} ms.", "",
             "| all-reduce | topology | overlap | runs | sim/pred median | min | max | sim comm / pred comm (median) |",
             "|---|---|---|---|---|---|---|---|"]
    for (algo, topo, overlap), g in _variant_rows(df).groupby(["allreduce", "topology", "overlap"]):
        comm = (g["sim_comm"] / g["pred_comm"]).median()
        lines.append(f"| {algo} | {topo} | {'yes' if overlap else 'no'} | {len(g)} | {g['sim/pred'].median():.4f} | "
                     f"{g['sim/pred'].min():.4f} | {g['sim/pred'].max():.4f} | {comm:.3f} |")
    lines += ["", "## Where the network starts to dominate", "",
              "Nodes at which the exposed all-reduce first exceeds the compute of a step in the simulation "
              "(the model's count in parentheses where it differs; `-`: not up to "
              f"{int(df['workers'].max())}). Cells: with overlap / without.", ""]
    lines += _dominance_table(df)
    lines += ["", "## Scaling efficiency", "",
              "Weak scaling (the batch per process fixed): the one-node step over the N-node step. Lines: the model; "
              "marks: the simulator (o with overlap, x without). The model's ring and tree do not depend on the "
              "topology, so each mesh line lies under its star line; the mesh's marks show where the simulation "
              "departs from it.", ""]
    lines += [f"![{Path(f).stem}]({Path(f).name})" for f in figures]
    if df.attrs.get("unreadable"):
        lines += ["", "## Unreadable files", ""] + [f"- `{f}`: {why}" for f, why in df.attrs["unreadable"]]
    if validation:
        lines += ["", "## Model vs measured (this machine)", ""] + _validation_lines(validation)
    return lines
