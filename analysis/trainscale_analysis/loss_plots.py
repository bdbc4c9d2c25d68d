"""Figures of the training loss and its area (the SHM-Learn-Dist views), one panel per worker
count:

- plot_loss_curves: every curve of a worker count, the winner of the loss-area rule bold;
- plot_loss_area_heatmaps: the median loss area over batch x LR, labels readable on every cell;
- plot_loss_area_histograms: the distribution of the loss areas, its axis fitted to them.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.colors import LogNorm, Normalize
from matplotlib.patches import Rectangle

from . import load, metrics
from .figure_style import fitted_limits, fmt, label_of, plt, save, text_colour_on, wide_range

WINNER_COLOUR = "#1f4e9c"
OTHER_COLOUR = "#8fa8c8"
DIVERGED_COLOUR = "#e07b39"


def best_runs_per_worker_count(df: pd.DataFrame, threshold: float | None = None,
                               area: str = "loss_area_time") -> pd.DataFrame:
    """The run that wins the loss-area rule per worker count (one line per worker count)."""
    win = metrics.loss_area_winners(df, threshold, by="workers", area=area)
    win = win[win["run_id"].notna()]
    return df[df["run_id"].isin(win["run_id"])].sort_values("workers")


def _curves(runs: pd.DataFrame, x: str) -> list[tuple[pd.Series, np.ndarray, np.ndarray]]:
    out = []
    for _, run in runs.iterrows():
        d = load.digest(run)  # the curve read_run kept; else read the file
        tr = d.curve if d is not None else load.load_series(run)
        if x in tr and "loss" in tr:
            out.append((run, np.asarray(tr[x], np.float64), np.asarray(tr["loss"], np.float64)))
    return out


def blew_up(loss: np.ndarray, factor: float = 10.0) -> bool:
    """A loss that rose above `factor` x its first value (without turning NaN)."""
    finite = loss[np.isfinite(loss)]
    return bool(finite.size) and bool(finite.max() > factor * abs(finite[0]))


def _candidates(curves, winners: set, threshold: float | None) -> list[np.ndarray]:
    """The losses the y axis is fitted to: the curves the rule compared (finished, under the
    threshold, not blown up) and the winners; a curve that blew up stays off the axis."""
    keep = [loss for run, _, loss in curves if run["run_id"] in winners or (
        run["status"] == "ok" and not blew_up(loss) and
        (threshold is None or run["min_train_loss"] <= threshold))]
    return keep or [loss for run, _, loss in curves if run["status"] == "ok"] or \
        [loss for _, _, loss in curves]


def plot_loss_curves(df: pd.DataFrame, out, x: str = "time", threshold: float | None = None,
                     runs: pd.DataFrame | None = None,
                     label_keys: Sequence[str] | None = None) -> Path:
    """Training loss against wall-clock time (x='time') or samples (x='samples'), one panel
    per worker count: every finished or diverged run of it thin (diverged dashed), the winner
    of the loss-area rule (or the run of `runs`) bold and named in the panel's title by
    `label_keys` (default batch and LR). The y axis is fitted to the curves the rule compared
    (log when they span more than two decades); curves that leave it are counted in the title.
    One legend for the figure, below the panels."""
    area = "loss_area_time" if x == "time" else "loss_area_samples"
    best = best_runs_per_worker_count(df, threshold, area) if runs is None else runs
    winners = set(best["run_id"])
    keys = [k for k in (label_keys if label_keys is not None else ("batch_per_worker", "lr"))
            if k in df.columns and k != "workers"]
    drawn = df[df["status"].isin(("ok", "diverged")) & df["path"].notna()] \
        if "path" in df.columns else df.iloc[0:0]
    workers = sorted(drawn["workers"].dropna().unique()) or sorted(best["workers"].unique())
    cols = 2 if len(workers) == 4 else (min(len(workers), 3) or 1)
    rows = -(-len(workers) // cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols + 0.6, 3.6 * rows + 0.4),
                             squeeze=False)
    for ax, w in zip(axes.flat, workers):
        curves = _curves(drawn[drawn["workers"] == w], x)
        _draw_panel(ax, curves, winners, threshold, keys, w)
        ax.set_xlabel("wall-clock time [s]" if x == "time" else "samples (all workers)")
        ax.set_ylabel("training loss")
    for ax in list(axes.flat)[len(workers):]:
        ax.set_visible(False)
    fig.suptitle(f"training loss vs {'time' if x == 'time' else 'samples'}: every run, the "
                 f"smallest-area run bold")
    fig.tight_layout()
    fig.legend(handles=_legend_handles(threshold), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=4, fontsize=8, frameon=False)
    return save(fig, out)


def _legend_handles(threshold: float | None) -> list:
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], lw=2.2, color=WINNER_COLOUR, label="winner (smallest loss area)"),
               Line2D([], [], lw=0.8, color=OTHER_COLOUR, label="other finished runs"),
               Line2D([], [], lw=0.8, ls="--", color=DIVERGED_COLOUR, label="diverged")]
    if threshold is not None and math.isfinite(threshold):
        handles.append(Line2D([], [], lw=1, ls=":", color="k", label=f"threshold {threshold:g}"))
    return handles


def _panel_title(w, curves, winners: set, keys: Sequence[str], off: int) -> str:
    diverged = sum(run["status"] == "diverged" for run, _, _ in curves)
    notes = [f"{diverged} diverged"] if diverged else []
    notes += [f"{off} off the axis"] if off else []
    head = f"workers = {fmt(w)}: {len(curves)} runs" + (f" ({', '.join(notes)})" if notes else "")
    won = [run for run, _, _ in curves if run["run_id"] in winners]
    if not won:
        return head + "\nno winner"
    text = label_of(won[0], keys) if keys else str(won[0]["run_id"])
    return head + "\n" + "\n".join(textwrap.wrap("winner: " + text, 48))


def _finite_pieces(xs: np.ndarray, loss: np.ndarray) -> list[np.ndarray]:
    """A curve as the [n, 2] pieces between its non-finite points (where a plotted line breaks)."""
    ok = np.isfinite(xs) & np.isfinite(loss)
    points = np.column_stack([xs, loss])
    edges = np.flatnonzero(np.diff(np.concatenate([[False], ok, [False]]).astype(np.int8)))
    return [points[a:b] for a, b in zip(edges[::2], edges[1::2])]


def _draw_panel(ax, curves, winners: set, threshold: float | None, keys: Sequence[str], w) -> None:
    shown = _candidates(curves, winners, threshold)
    every = np.concatenate(shown) if shown else np.array([])
    finite = every[np.isfinite(every)]
    positive = finite[finite > 0]
    log = bool(positive.size) and wide_range(positive.min(), finite.max())
    lo, hi = fitted_limits(finite, log)
    if threshold is not None and math.isfinite(threshold) and (threshold > 0 or not log):
        lo, hi = min(lo, threshold * (0.9 if log else 1)), max(hi, threshold)
        ax.axhline(threshold, color="k", ls=":", lw=1)
    off = 0
    pieces: dict[bool, list[np.ndarray]] = {False: [], True: []}  # diverged? -> line pieces
    for run, xs, loss in curves:
        if run["run_id"] in winners:
            continue
        pieces[run["status"] == "diverged"] += _finite_pieces(xs, loss)
        off += bool((loss[np.isfinite(loss)] > hi).any())
    # One collection per style, not a line per run: a panel of 10^4 runs draws in a second.
    for is_div, segments in pieces.items():
        if segments:
            ax.add_collection(LineCollection(segments, linestyles="--" if is_div else "-", linewidths=0.8,
                                             alpha=0.7, colors=DIVERGED_COLOUR if is_div else OTHER_COLOUR))
    ax.autoscale_view()
    for run, xs, loss in curves:
        if run["run_id"] in winners:
            ax.plot(xs, loss, lw=2.2, color=WINNER_COLOUR, zorder=5)
    if log:
        ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.grid(alpha=0.3, which="both" if log else "major")
    ax.set_title(_panel_title(w, curves, winners, keys, off), fontsize=9)


def _cell_status(cell: pd.DataFrame) -> str:
    return "diverged" if (cell["status"] == "diverged").any() else str(cell["status"].iloc[0])


def plot_loss_area_heatmaps(df: pd.DataFrame, out, threshold: float | None = None,
                            area: str = "loss_area_time", rows: str = "batch_per_worker",
                            cols: str = "lr") -> Path:
    """One panel per worker count: median loss area over `rows` x `cols`. Diverged (or
    failed) cells are hatched and marked 'diverged'/'failed'; cells whose minimum loss is
    above the threshold are marked 'above thr.'; the winner is outlined in black. Each label
    is black or white, whichever reads on its cell's colour."""
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
        above = np.zeros_like(grid, dtype=bool)
        for i, r in enumerate(rvals):
            for j, c in enumerate(cvals):
                cell = sub[(sub[rows] == r) & (sub[cols] == c)]
                ok = cell[cell["status"] == "ok"]
                if len(ok):
                    grid[i, j] = ok[area].median()
                    above[i, j] = threshold is not None and ok["min_train_loss"].min() > threshold
                elif len(cell):
                    ax.add_patch(Rectangle((j - .5, i - .5), 1, 1, fill=False, hatch="xx",
                                           color="#c44e52", lw=0))
                    ax.text(j, i, _cell_status(cell), ha="center", va="center", fontsize=7,
                            color="#c44e52")
        im = ax.imshow(grid, cmap="viridis_r", norm=norm, aspect="auto")
        _label_cells(ax, im, grid, above)
        if w in win.index and pd.notna(win.loc[w, "run_id"]):
            wr, wc = win.loc[w, rows], win.loc[w, cols]
            ax.add_patch(Rectangle((cvals.index(wc) - .5, rvals.index(wr) - .5), 1, 1,
                                   fill=False, lw=3, edgecolor="black"))
        ax.set_xticks(range(len(cvals)), [fmt(c) for c in cvals])
        # The rows' tick labels once, left of the first panel: between panels they overlap.
        first = ax is axes[0][0]
        ax.set_yticks(range(len(rvals)), [fmt(r) for r in rvals] if first else [])
        ax.set_xlabel(cols)
        if first:
            ax.set_ylabel(rows)
        ax.set_title(f"workers = {fmt(w)}")
    if im is not None:
        fig.colorbar(im, ax=list(axes[0]), shrink=0.8,
                     label="loss area [loss x s]" if area == "loss_area_time"
                     else "loss area [loss x samples]")
    thr = "no threshold" if threshold is None else f"threshold {threshold:g}"
    fig.suptitle(f"loss area over {rows} x {cols} (winner outlined; {thr})", y=1.03)
    return save(fig, out)


def _label_cells(ax, im, grid: np.ndarray, above: np.ndarray) -> None:
    """The value of every finite cell (and 'above thr.'), in the colour that reads on it."""
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid[i, j]
            if not np.isfinite(v):
                continue
            colour = text_colour_on(im.to_rgba(v))
            ax.text(j, i - 0.08, f"{v:.3g}" if v < 1e4 else f"{v:.0e}", ha="center",
                    va="center", fontsize=7, color=colour)
            if above[i, j]:
                ax.text(j, i + 0.38, "above thr.", ha="center", fontsize=6, color=colour)


def plot_loss_area_histograms(df: pd.DataFrame, out, threshold: float | None = None,
                              area: str = "loss_area_time") -> Path:
    """One panel per worker count: histogram of the loss areas of its finished runs, split
    into curves that pass the threshold and curves above it; the winner's area is a black
    line. Runs whose area is more than 4x the largest passing one (a loss that blew up) are
    left off and counted in the panel's title, with the runs that diverged or failed; the axis
    spans the areas shown, with a small margin."""
    win = metrics.loss_area_winners(df, threshold, by="workers", area=area).set_index("workers")
    workers = sorted(df["workers"].dropna().unique())
    fig, axes = plt.subplots(1, len(workers), figsize=(3.4 * len(workers) + 1, 3.2),
                             squeeze=False, sharex=True)
    ok_all = df[(df["status"] == "ok") & np.isfinite(df[area].astype(float))]
    passing = ok_all if threshold is None else ok_all[ok_all["min_train_loss"] <= threshold]
    top = 4 * (passing[area].max() if len(passing) else ok_all[area].max())
    shown_all = ok_all[area][ok_all[area] <= top] if np.isfinite(top) else ok_all[area]
    lo, hi = fitted_limits(shown_all.to_numpy(), log=False)
    bins = np.linspace(lo, hi, 25)
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
    axes[0][0].set_xlim(lo, hi)
    axes[0][0].set_ylabel("runs")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out)
