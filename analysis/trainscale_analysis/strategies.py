"""Exchange strategies side by side (SHM-Learn-Dist's single neuron under gradient and weight
averaging): training loss per strategy and worker count.

- strategy_label(run): "sync", "weight_avg (period 100)", "async_ps (staleness 2)", ...;
- strategy_table(df): per worker count and strategy, the final training loss (mean of the last
  1% of steps), the best test accuracy, the training time, and the largest per-step difference
  of the loss curve from `sync`'s at the same worker count and batch (0 where they agree);
- plot_strategy_losses(df, out): one panel per worker count, one line per strategy, loss
  against the step (a moving average over 1% of the steps: per-step losses of small batches
  are noisy);
- strategy_section(rep, df, fig_dir): the report's "Exchange strategies" section, when
  `dist.strategy` or `dist.period` varies.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import load, metrics, plots

KEYS = ("dist.strategy", "dist.period", "dist.staleness")


def strategy_label(run: pd.Series) -> str:
    strategy = str(run.get("dist.strategy", "sync"))
    if strategy == "weight_avg":
        return f"weight_avg (period {plots.fmt(run.get('dist.period', 1))})"
    if strategy == "async_ps" and pd.notna(run.get("dist.staleness")):
        return f"async_ps (staleness {plots.fmt(run.get('dist.staleness'))})"
    return strategy


def _tail_mean(loss: np.ndarray) -> float:
    n = max(1, len(loss) // 100)
    return float(np.mean(loss[-n:]))


def _smooth(loss: np.ndarray) -> np.ndarray:
    n = max(1, len(loss) // 100)
    return np.convolve(loss, np.ones(n) / n, mode="valid") if n > 1 else loss


def _runs(df: pd.DataFrame) -> pd.DataFrame:
    ok = metrics.finished(df)
    ok = ok[ok["path"].notna()].copy()
    ok["strategy_label"] = [strategy_label(r) for _, r in ok.iterrows()]
    return ok.sort_values(["workers", "strategy_label"])


def strategy_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (workers, strategy) run: see the module docstring."""
    runs = _runs(df)
    series = {r["run_id"]: load.load_series(r) for _, r in runs.iterrows()}  # each file read once
    losses = {run_id: s["loss"].to_numpy() for run_id, s in series.items()}
    rows = []
    for _, r in runs.iterrows():
        loss = losses[r["run_id"]]
        peers = runs[(runs["workers"] == r["workers"]) & (runs["strategy_label"] == "sync")]
        if "batch_per_worker" in runs.columns:
            peers = peers[peers["batch_per_worker"] == r["batch_per_worker"]]
        diff = np.nan
        if len(peers):
            ref = losses[peers.iloc[0]["run_id"]]
            n = min(len(ref), len(loss))
            diff = float(np.max(np.abs(loss[:n].astype(np.float64) - ref[:n]))) if n else np.nan
        time = series[r["run_id"]]["time"]
        rows.append({"workers": r["workers"], "strategy": r["strategy_label"], "run_id": r["run_id"],
                     "steps": len(loss), "final_train_loss": _tail_mean(loss),
                     "best_accuracy": r.get("best_accuracy"),
                     "train_seconds": float(time.iloc[-1]) if len(time) else np.nan,
                     "max_loss_diff_vs_sync": diff})
    return pd.DataFrame(rows)


def plot_strategy_losses(df: pd.DataFrame, out) -> Path:
    runs = _runs(df)
    workers = sorted(runs["workers"].unique())
    fig, axes = plots.plt.subplots(1, len(workers), figsize=(3.6 * len(workers) + 1, 3.6),
                                   squeeze=False, sharey=True)
    for ax, w in zip(axes[0], workers):
        for _, r in runs[runs["workers"] == w].iterrows():
            loss = load.load_series(r)["loss"].to_numpy()
            sm = _smooth(loss)
            ax.plot(np.arange(len(sm)) + (len(loss) - len(sm)), sm, label=r["strategy_label"],
                    lw=1.2, ls="--" if r["strategy_label"] == "sync" else "-")
        ax.set_title(f"workers = {plots.fmt(w)}")
        ax.set_xlabel("step (per worker)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("training loss (moving average, 1% of steps)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return plots.save(fig, out)


def strategy_section(rep, df: pd.DataFrame, fig_dir: Path) -> None:
    vary = [k for k in KEYS if k in df.columns and df[k].astype(str).nunique() > 1]
    if not vary:
        return  # the strategy did not vary: the campaign matrix already says which one ran
    rep.section("Exchange strategies")
    if _runs(df).empty:
        rep.skip("No finished run has a training-loss series.")
        return
    rep.figure(plot_strategy_losses(df, fig_dir / "strategy_losses"),
               "Training loss against the step per worker count, one line per strategy "
               "(sync dashed: gradient averaging).")
    rep.table(strategy_table(df), None)
    rep.para("final_train_loss: mean of the last 1% of steps; max_loss_diff_vs_sync: the "
             "largest per-step difference from sync's loss curve at the same worker count "
             "(gradient and weight averaging every step are the same update in exact "
             "arithmetic; float32 rounding is what separates them).")
