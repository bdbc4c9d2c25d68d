"""Figures for a campaign (matplotlib, Agg). Every function writes `<out>.png` and `<out>.svg`
and returns the PNG path; docs/analysis.md shows and explains each one. Shared style (saving,
labels, readable text colours, legends outside the axes, fitted limits): figure_style.py.

- plot_scaling: images/s, speedup, efficiency vs workers, one line per value of a dimension;
- plot_loss_curves, plot_loss_area_heatmaps, plot_loss_area_histograms: the training loss
  and its area per worker count (loss_plots.py, re-exported here);
- plot_time_breakdown: stacked mean time per step per phase, one bar per configuration;
- plot_relative: a dimension's values relative to a baseline value;
- plot_generations: images/s across GPU generations relative to a baseline generation, one
  group of bars per model and precision (Salvaris et al.);
- plot_rank_variability: per-rank box plots of per-step times (stragglers).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from . import load, metrics
from .figure_style import (DPI, fmt, label_of, legend_outside, plt, save,  # noqa: F401
                           text_colour_on, wide_range)
from .loss_plots import (best_runs_per_worker_count, plot_loss_area_heatmaps,  # noqa: F401
                         plot_loss_area_histograms, plot_loss_curves)

PHASE_COLORS = {
    "data_wait": "#8c8c8c", "forward": "#4c72b0", "backward": "#55a868", "comm": "#c44e52",
    "comm_wait": "#e17c7e", "optimizer": "#8172b2", "gather": "#ccb974",
    "average": "#64b5cd", "broadcast": "#dd8452", "other": "#d9d9d9",
}


def plot_scaling(df: pd.DataFrame, out, metric: str = "images_per_s", mode: str = "weak",
                 by: str | None = None, baseline_workers: int | None = None,
                 label_keys: Sequence[str] | None = None) -> Path:
    """Three panels against workers: the metric (median, min-max bars), speedup and parallel
    efficiency, one line per series (value of `by` and of whatever else varies), labelled by
    the series keys among `label_keys` (the swept keys; default: every series key); the ideal
    speedup and efficiency dashed."""
    sc = metrics.scaling(df, metric, mode=mode, by=by, baseline_workers=baseline_workers)
    keys = [k for k in sc.attrs.get("series_keys", []) if k in sc.columns
            and sc[k].astype(str).nunique() > 1]
    if label_keys is not None and [k for k in keys if k in label_keys]:
        keys = [k for k in keys if k in label_keys]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for _, g in (sc.groupby(keys, dropna=False, sort=True) if keys else [(0, sc)]):
        g = g.sort_values("workers")
        lab = label_of(g.iloc[0], keys)
        w = g["workers"].to_numpy()
        err = [g[metric] - g[f"{metric}_min"], g[f"{metric}_max"] - g[metric]]
        axes[0].errorbar(w, g[metric], yerr=err, marker="o", capsize=3, label=lab)
        err = [g["speedup"] - g["speedup_min"], g["speedup_max"] - g["speedup"]]
        axes[1].errorbar(w, g["speedup"], yerr=err, marker="o", capsize=3, label=lab)
        axes[2].plot(w, g["efficiency"], marker="o", label=lab)
    if not sc.empty:
        ws = np.sort(sc["workers"].unique())
        n0 = sc["baseline_workers"].min()
        axes[1].plot(ws, ws / n0, "k--", lw=1, label="ideal")
        axes[2].axhline(1.0, color="k", ls="--", lw=1, label="ideal")
    axes[0].set_ylabel(metric.replace("_", " "))
    axes[1].set_ylabel(f"speedup vs {int(sc['baseline_workers'].min()) if not sc.empty else '?'} workers")
    axes[2].set_ylabel("parallel efficiency")
    axes[2].set_ylim(0, max(1.1, float(sc["efficiency"].max()) * 1.05) if not sc.empty else 1.1)
    for ax in axes:
        ax.set_xlabel("workers")
        ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
    series = len(axes[2].get_lines())
    fig.suptitle(f"{mode} scaling ({metric}; median of repetitions, bars min-max)")
    if series > 8:  # a batch x lr grid: the legend goes below the figure (under the panels'
        fig.tight_layout()  # axis labels), in columns; the saved image's tight box takes it in
        handles, labels = axes[2].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=min(6, -(-series // 6)))
    else:
        axes[2].legend(fontsize=8, loc="lower left")
        fig.tight_layout()
    return save(fig, out)


def plot_time_breakdown(df: pd.DataFrame, out, label_keys: Sequence[str] | None = None) -> Path:
    """Stacked bars: mean seconds per step and phase (after warm-up, mean over ranks), one bar
    per configuration (median over repetitions); 'other' is step time not in any phase."""
    tb = metrics.time_breakdown(df)
    merged = tb.merge(df[["run_id"] + metrics.group_keys(df)], on="run_id")
    keys = list(load.varying(df, metrics.group_keys(df))) if label_keys is None else list(label_keys)
    if "workers" in keys:
        keys = [k for k in keys if k != "global_batch"]  # workers x batch_per_worker
    phases = [p for p in load.PHASES if p in tb.columns and tb[p].sum() > 0] + ["other"]
    per = merged.groupby(keys, dropna=False, sort=True)[phases].median().reset_index() \
        if keys else merged[phases].median().to_frame().T
    labels = [label_of(r, keys) for _, r in per.iterrows()]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(per) + 1.5))
    left = np.zeros(len(per))
    for p in phases:
        vals = per[p].to_numpy() * 1e3
        ax.barh(range(len(per)), vals, left=left, color=PHASE_COLORS.get(p), label=p)
        left += vals
    ax.set_yticks(range(len(per)), labels, fontsize=8)
    ax.set_ylim(len(per) - 0.5, -0.5)  # first configuration on top, no empty band
    ax.set_xlabel("time per step [ms]")
    ax.set_title("time per step by phase (mean after warm-up, over ranks)")
    fig.tight_layout()
    legend_outside(ax, fontsize=8)
    return save(fig, out)


def short_device(label) -> str:
    """A device label short enough for a tick: 'Intel(R) Xeon(R) Processor' -> 'Xeon'."""
    text = str(label).replace("(R)", "").replace("(TM)", "").replace("CPU", "")
    words = [w for w in text.split() if w not in ("Intel", "AMD", "NVIDIA", "Processor", "@")]
    return " ".join(words[:2]) if words else str(label)


def plot_relative(df: pd.DataFrame, out, dim: str, baseline, metric: str = "images_per_s",
                  lower_is_better: bool = False, by: str | None = None) -> Path:
    """Bars: each value of `dim` relative to `baseline` (1.0), matched on all other config
    keys; error bars span the min-max over the matched configurations. With `by` (a device
    column, metrics.relative_performance), one bar per (by, value), labelled with both."""
    rel = metrics.relative_performance(df, dim, baseline, metric, lower_is_better, by)
    fig, ax = plt.subplots(figsize=(min(16.0, 1.0 * len(rel) + 3), 3.2 if by is None else 3.8))
    x = np.arange(len(rel))
    err = [rel["relative"] - rel["relative_min"], rel["relative_max"] - rel["relative"]]
    colors = ["#8c8c8c" if v == baseline else "#4c72b0" for v in rel[dim]]
    ax.bar(x, rel["relative"], yerr=err, capsize=4, color=colors)
    for i, v in enumerate(rel["relative"]):
        ax.text(i, v / 2 if np.isfinite(v) else 0, f"{v:.2f}x", ha="center",
                color=text_colour_on(colors[i]), fontsize=9)
    ax.axhline(1.0, color="k", ls="--", lw=1)
    labels = [fmt(v) for v in rel[dim]] if by is None else \
        [f"{fmt(v)}\n{short_device(d)}" for v, d in zip(rel[dim], rel[by])]
    ax.set_xticks(x, labels, fontsize=9 if by is None else 7)
    ax.set_xlabel(dim if by is None else f"{dim} (per {by})")
    ax.set_ylabel(f"{metric} relative to {fmt(baseline)}")
    ax.set_title(f"{dim}: relative {metric.replace('_', ' ')} (baseline {fmt(baseline)})")
    fig.tight_layout()
    return save(fig, out)


def plot_generations(df: pd.DataFrame, out, baseline: str | None = None,
                     metric: str = "images_per_s") -> Path:
    """Grouped bars: per model and precision, one bar per GPU generation (or device name)
    with its throughput relative to the baseline generation (1.0, dashed); error bars span the
    min-max over the matched configurations, the label on each bar is the ratio."""
    rel = metrics.generation_throughput(df, baseline, metric)
    labels = metrics.generation_order(rel["generation"].unique())
    by = [c for c in ("model", "precision") if c in rel.columns]
    groups = rel.groupby(by, sort=True) if by else [("all runs", rel)]
    groups = [(" / ".join(fmt(v) for v in (k if isinstance(k, tuple) else (k,))), g)
              for k, g in groups]
    width = 0.8 / max(len(labels), 1)
    cmap = plt.get_cmap("viridis")
    colors = {lab: cmap(0.15 + 0.7 * i / max(len(labels) - 1, 1)) for i, lab in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.45 * len(groups) * len(labels) + 2.5)), 4))
    top = 1.0
    in_legend = set()
    for j, lab in enumerate(labels):
        for i, (_, g) in enumerate(groups):
            r = g[g["generation"] == lab]
            if r.empty or not np.isfinite(r["relative"].iloc[0]):
                continue
            v = float(r["relative"].iloc[0])
            x = i - 0.4 + width * (j + 0.5)
            err = [[v - float(r["relative_min"].iloc[0])], [float(r["relative_max"].iloc[0]) - v]]
            ax.bar(x, v, width, yerr=err, capsize=3, color=colors[lab],
                   label=None if lab in in_legend else lab)
            in_legend.add(lab)
            ax.text(x, v, f"{v:.2f}x", ha="center", va="bottom", fontsize=8)
            top = max(top, float(r["relative_max"].iloc[0]))
    base = rel["baseline"].iloc[0] if len(rel) else "?"
    for i, (_, g) in enumerate(groups):
        if not np.isfinite(g["relative"]).any():
            ax.text(i, 0.05, f"no run on {base}", ha="center", va="bottom", fontsize=8, color="#c44e52")
    ax.axhline(1.0, color="k", ls="--", lw=1)
    ax.set_xticks(range(len(groups)), [name for name, _ in groups])
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel(f"{metric.replace('_', ' ')} relative to {base}")
    ax.set_title(f"throughput across GPU generations (baseline {base}; median of repetitions, "
                 f"bars min-max over matched configurations)", fontsize=10)
    ax.legend(fontsize=8, title="generation / device", title_fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return save(fig, out)


def plot_rank_variability(run: pd.Series, out, phases: Sequence[str] = ("step", "comm_wait"),
                          ) -> Path:
    """Box plots of per-step times for each rank of one run (after warm-up), one panel per
    phase; a rank whose box sits higher than the others is a straggler."""
    timing = load.load_timing(run)
    phases = [p for p in phases if p in timing] or list(timing)[:1]
    warm = run.get("warmup_steps")
    warm = int(warm) if warm is not None and np.isfinite(warm) else 0
    fig, axes = plt.subplots(1, len(phases), figsize=(5 * len(phases), 3.4), squeeze=False)
    for ax, p in zip(axes[0], phases):
        a = timing[p][warm:] * 1e3
        ax.boxplot([a[:, r] for r in range(a.shape[1])], showfliers=True)
        ax.set_xticks(range(1, a.shape[1] + 1), [str(r) for r in range(a.shape[1])])
        ax.set_xlabel("rank")
        ax.set_ylabel(f"{p} time per step [ms]")
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"per-rank variability, run {run['run_id']} ({int(run['workers'])} workers)")
    fig.tight_layout()
    return save(fig, out)


def plot_io_relative(rel: pd.DataFrame, out, dim: str, metric: str = "samples_per_s") -> Path:
    """Horizontal bars: each value of `dim` (data format or storage) relative to the fastest
    (1.0), one bar per cache mode (and per combination of other varying settings), the ratio
    written on each bar; the published "relative performance across storage" / "data format
    performance" charts."""
    group_keys = [c for c in rel.columns if c not in (dim, metric, "min", "max", "passes", "relative")]
    labels = list(dict.fromkeys(rel[dim].astype(str)))
    groups = list(rel.groupby(group_keys, sort=True)) if group_keys else [("", rel)]
    height = 0.8 / max(len(groups), 1)
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(labels) * max(len(groups), 1) + 1.5))
    for j, (key, g) in enumerate(groups):
        name = ", ".join(fmt(v) for v in (key if isinstance(key, tuple) else (key,)))
        y = [labels.index(str(v)) + j * height for v in g[dim]]
        ax.barh(y, g["relative"], height=height, color=cmap(j % 10), label=name or None)
        for yi, v in zip(y, g["relative"]):
            ax.text(v, yi, f" {v:.2f}", va="center", fontsize=8)
    ax.set_yticks([i + height * (len(groups) - 1) / 2 for i in range(len(labels))], labels)
    ax.invert_yaxis()
    ax.axvline(1.0, color="k", ls="--", lw=1)
    ax.set_xlim(0, 1.15)
    ax.set_xlabel(f"{metric.replace('_', ' ')} relative to the fastest {dim}")
    ax.set_title(f"{dim}: relative input throughput")
    if len(groups) > 1 or groups[0][0] != "":
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return save(fig, out)
