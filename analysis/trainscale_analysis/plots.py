"""Figures for a campaign (matplotlib, Agg). Every function writes `<out>.png` and `<out>.svg`
and returns the PNG path; docs/analysis.md shows and explains each one.

- plot_scaling: images/s, speedup, efficiency vs workers, one line per value of a dimension;
- plot_loss_curves: training loss vs wall-clock time or samples, one line per worker count;
- plot_loss_area_heatmaps: loss area over batch x LR, one panel per worker count;
- plot_loss_area_histograms: the distribution of loss areas, one panel per worker count;
- plot_time_breakdown: stacked mean time per step per phase, one bar per configuration;
- plot_relative: a dimension's values relative to a baseline value;
- plot_generations: images/s across GPU generations relative to a baseline generation, one
  group of bars per model and precision (Salvaris et al.);
- plot_rank_variability: per-rank box plots of per-step times (stragglers).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import LogNorm, Normalize  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from . import load, metrics  # noqa: E402

PHASE_COLORS = {
    "data_wait": "#8c8c8c", "forward": "#4c72b0", "backward": "#55a868", "comm": "#c44e52",
    "comm_wait": "#e17c7e", "optimizer": "#8172b2", "gather": "#ccb974",
    "average": "#64b5cd", "broadcast": "#dd8452", "other": "#d9d9d9",
}
DPI = 100


def save(fig, out: str | Path) -> Path:
    """Write `out`.png and `out`.svg, close the figure, return the PNG path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out.with_suffix(".png"), dpi=DPI, bbox_inches="tight")
    fig.savefig(out.with_suffix(".svg"), bbox_inches="tight")
    plt.close(fig)
    return out.with_suffix(".png")


def wide_range(lo: float, hi: float) -> bool:
    """True when positive values span more than two decades: plot them on a log scale."""
    return bool(np.isfinite(lo) and np.isfinite(hi) and lo > 0 and hi / lo > 100)


def label_of(row: pd.Series, keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={fmt(row[k])}" for k in keys) if keys else "all runs"


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def plot_scaling(df: pd.DataFrame, out, metric: str = "images_per_s", mode: str = "weak",
                 by: str | None = None, baseline_workers: int | None = None) -> Path:
    """Three panels against workers: the metric (median, min-max bars), speedup and parallel
    efficiency, one line per series (value of `by` and of whatever else varies); the ideal
    speedup and efficiency dashed."""
    sc = metrics.scaling(df, metric, mode=mode, by=by, baseline_workers=baseline_workers)
    keys = [k for k in sc.attrs.get("series_keys", []) if k in sc.columns
            and sc[k].astype(str).nunique() > 1]
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
    if series > 8:  # a batch x lr grid: the legend goes below the panels, in columns, after the
        fig.tight_layout()  # panels are laid out (the saved image's tight box takes it in)
        axes[2].legend(fontsize=7, loc="upper center", bbox_to_anchor=(-0.7, -0.18),
                       ncol=min(6, -(-series // 6)))
    else:
        axes[2].legend(fontsize=8, loc="lower left")
        fig.tight_layout()
    return save(fig, out)


def best_runs_per_worker_count(df: pd.DataFrame, threshold: float | None = None,
                               area: str = "loss_area_time") -> pd.DataFrame:
    """The run that wins the loss-area rule per worker count (one line per worker count)."""
    win = metrics.loss_area_winners(df, threshold, by="workers", area=area)
    win = win[win["run_id"].notna()]
    return df[df["run_id"].isin(win["run_id"])].sort_values("workers")


def plot_loss_curves(df: pd.DataFrame, out, x: str = "time", threshold: float | None = None,
                     runs: pd.DataFrame | None = None) -> Path:
    """Training loss against wall-clock time (x='time') or samples (x='samples'), one line per
    worker count: the run that wins the loss-area rule for that worker count (or `runs`)."""
    area = "loss_area_time" if x == "time" else "loss_area_samples"
    runs = best_runs_per_worker_count(df, threshold, area) if runs is None else runs
    fig, ax = plt.subplots(figsize=(7, 4))
    for _, run in runs.iterrows():
        tr = load.load_series(run)
        keys = [k for k in ("batch_per_worker", "lr") if k in run.index]
        ax.plot(tr[x], tr["loss"],
                label=f"{run['workers']} workers ({label_of(run, keys)})")
    if threshold is not None and math.isfinite(threshold):
        ax.axhline(threshold, color="k", ls=":", lw=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("wall-clock time [s]" if x == "time" else "samples (all workers)")
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"training loss vs {'time' if x == 'time' else 'samples'} "
                 f"(smallest-area run per worker count)")
    fig.tight_layout()
    return save(fig, out)


def plot_loss_area_heatmaps(df: pd.DataFrame, out, threshold: float | None = None,
                            area: str = "loss_area_time", rows: str = "batch_per_worker",
                            cols: str = "lr") -> Path:
    """One panel per worker count: median loss area over `rows` x `cols`. Diverged (or
    failed) cells are hatched and marked 'diverged'/'failed'; cells whose minimum loss is
    above the threshold are marked 'above thr.'; the winner is outlined in black."""
    win = metrics.loss_area_winners(df, threshold, by="workers", area=area).set_index("workers")
    workers = sorted(df["workers"].dropna().unique())
    rvals = sorted(df[rows].dropna().unique())
    cvals = sorted(df[cols].dropna().unique())
    fig, axes = plt.subplots(1, len(workers), figsize=(0.75 * len(cvals) * len(workers) + 2,
                                                      0.55 * len(rvals) + 1.6), squeeze=False)
    finite = df[area].replace([np.inf, -np.inf], np.nan)
    vmin, vmax = finite.min(), finite.max()
    # A run whose loss blew up without turning NaN has an area orders of magnitude above the
    # rest: a log colour scale keeps the others apart.
    norm = LogNorm(vmin, vmax) if wide_range(vmin, vmax) else Normalize(vmin, vmax)
    im = None
    for ax, w in zip(axes[0], workers):
        sub = df[df["workers"] == w]
        grid = np.full((len(rvals), len(cvals)), np.nan)
        for i, r in enumerate(rvals):
            for j, c in enumerate(cvals):
                cell = sub[(sub[rows] == r) & (sub[cols] == c)]
                ok = cell[cell["status"] == "ok"]
                if len(ok):
                    grid[i, j] = ok[area].median()
                    if threshold is not None and ok["min_train_loss"].min() > threshold:
                        ax.text(j, i + 0.38, "above thr.", ha="center", fontsize=6)
                elif len(cell):
                    status = "diverged" if (cell["status"] == "diverged").any() else \
                        cell["status"].iloc[0]
                    ax.add_patch(Rectangle((j - .5, i - .5), 1, 1, fill=False, hatch="xx",
                                           color="#c44e52", lw=0))
                    ax.text(j, i, status, ha="center", va="center", fontsize=7,
                            color="#c44e52")
        im = ax.imshow(grid, cmap="viridis_r", norm=norm, aspect="auto")
        for i in range(len(rvals)):
            for j in range(len(cvals)):
                if np.isfinite(grid[i, j]):
                    v = grid[i, j]
                    ax.text(j, i - 0.08, f"{v:.3g}" if v < 1e4 else f"{v:.0e}", ha="center",
                            va="center", fontsize=7, color="white")
        if w in win.index and pd.notna(win.loc[w, "run_id"]):
            wr, wc = win.loc[w, rows], win.loc[w, cols]
            ax.add_patch(Rectangle((cvals.index(wc) - .5, rvals.index(wr) - .5), 1, 1,
                                   fill=False, lw=3, edgecolor="black"))
        ax.set_xticks(range(len(cvals)), [fmt(c) for c in cvals])
        ax.set_yticks(range(len(rvals)), [fmt(r) for r in rvals])
        ax.set_xlabel(cols)
        if ax is axes[0][0]:
            ax.set_ylabel(rows)
        ax.set_title(f"workers = {fmt(w)}")
    if im is not None:
        fig.colorbar(im, ax=list(axes[0]), shrink=0.8,
                     label="loss area [loss x s]" if area == "loss_area_time"
                     else "loss area [loss x samples]")
    thr = "no threshold" if threshold is None else f"threshold {threshold:g}"
    fig.suptitle(f"loss area over {rows} x {cols} (winner outlined; {thr})", y=1.03)
    return save(fig, out)


def plot_loss_area_histograms(df: pd.DataFrame, out, threshold: float | None = None,
                              area: str = "loss_area_time") -> Path:
    """One panel per worker count: histogram of the loss areas of its finished runs, split
    into curves that pass the threshold and curves above it; the winner's area is a black
    line. The axis spans the passing curves' areas (up to 4x their largest): runs beyond that
    (a loss that blew up) and runs that diverged or failed are counted in the panel's title."""
    win = metrics.loss_area_winners(df, threshold, by="workers", area=area).set_index("workers")
    workers = sorted(df["workers"].dropna().unique())
    fig, axes = plt.subplots(1, len(workers), figsize=(3.4 * len(workers) + 1, 3.2),
                             squeeze=False, sharex=True)
    ok_all = df[(df["status"] == "ok") & np.isfinite(df[area].astype(float))]
    passing = ok_all if threshold is None else ok_all[ok_all["min_train_loss"] <= threshold]
    top = 4 * (passing[area].max() if len(passing) else ok_all[area].max())
    bins = np.linspace(0, top, 25) if np.isfinite(top) and top > 0 else 10
    for ax, w in zip(axes[0], workers):
        sub = df[df["workers"] == w]
        ok = ok_all[ok_all["workers"] == w]
        above = ok["min_train_loss"] > threshold if threshold is not None else \
            pd.Series(False, index=ok.index)
        shown = ok[area] <= top
        ax.hist([ok.loc[~above & shown, area], ok.loc[above & shown, area]], bins=bins,
                stacked=True, color=["#4c72b0", "#cccccc"], label=["candidates", "above threshold"])
        if w in win.index and pd.notna(win.loc[w, "run_id"]):
            ax.axvline(win.loc[w, "loss_area"], color="k", lw=2, label="winner")
        notes = [f"{len(sub) - len(ok)} diverged/failed"] if len(sub) > len(ok) else []
        if (~shown).sum():
            notes.append(f"{int((~shown).sum())} off scale")
        ax.set_title(f"workers = {fmt(w)}" + (f" ({', '.join(notes)})" if notes else ""), fontsize=9)
        ax.set_xlabel("loss area [loss x s]" if area == "loss_area_time"
                      else "loss area [loss x samples]")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("runs")
    axes[0][-1].legend(fontsize=8)
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
    ax.invert_yaxis()
    ax.set_xlabel("time per step [ms]")
    ax.legend(fontsize=8, ncol=min(len(phases), 5), loc="upper center",
              bbox_to_anchor=(0.5, -0.12 - 0.2 / max(len(per), 1)))
    ax.set_title("time per step by phase (mean after warm-up, over ranks)")
    fig.tight_layout()
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
        ax.text(i, v / 2 if np.isfinite(v) else 0, f"{v:.2f}x", ha="center", color="white",
                fontsize=9)
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
