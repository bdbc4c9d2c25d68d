"""The exchange's time per step against workers, per all-reduce algorithm (SHM-Learn-Dist
figures 6.4-6.6): the parameter server's gather, average and broadcast next to the ring, tree,
shared-memory and MPI all-reduces, measured and simulated runs side by side.

- exchange_times(df): one row per finished run with /timing: `workers`, `algorithm`,
  `simulated`, and mean seconds per step after warm-up of `gather`, `average`, `broadcast`
  (rank 0, the server: only it averages, and its gather waits for every worker) and
  `exchange` (ps: gather + average + broadcast on rank 0; the others: `comm`, mean over ranks);
- exchange_summary(df): the median over repetitions per (kind, algorithm, workers);
- plot_exchange(summary, out): the parameter server's three phases, and every algorithm's
  exchange time, against workers;
- exchange_section(rep, df, fig_dir): the report's "Exchange time by algorithm" section.

With `dist.overlap: true` the all-reduces' `comm` runs beside backward, so only runs without
overlap compare the exchanges alone; the section says which it shows.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import metrics, plots

PS_PHASES = ("gather", "average", "broadcast")


def exchange_times(df: pd.DataFrame) -> pd.DataFrame:
    """Per finished multi-worker run: the exchange's mean seconds per step (module docstring)."""
    rows = []
    for run in metrics.finished(df).to_dict("records"):
        if not run.get("path") or "dist.allreduce" not in run:
            continue
        means = metrics.phase_means(run)
        if "comm" not in means:
            continue
        simulated = run.get("env.simulated")
        row = {"run_id": run["run_id"], "workers": int(run["workers"]),
               "algorithm": str(run["dist.allreduce"]),
               "kind": "simulated" if pd.notna(simulated) and int(simulated) else "measured",
               "overlap": str(run.get("dist.overlap", ""))}
        if all(p in means for p in PS_PHASES):
            rank0 = metrics.phase_means(run, rank=0)
            for p in PS_PHASES:
                row[p] = rank0[p]
            row["exchange"] = sum(row[p] for p in PS_PHASES)
        else:
            row["exchange"] = means["comm"]
        rows.append(row)
    return pd.DataFrame(rows)


def exchange_summary(df: pd.DataFrame) -> pd.DataFrame:
    """exchange_times, median over repetitions per (kind, algorithm, workers), sorted."""
    t = exchange_times(df)
    if t.empty:
        return t
    cols = [c for c in ("exchange", *PS_PHASES) if c in t.columns]
    out = t.groupby(["kind", "algorithm", "workers"], as_index=False).agg(
        **{c: (c, "median") for c in cols}, runs=("run_id", "count"))
    return out.sort_values(["kind", "algorithm", "workers"]).reset_index(drop=True)


def plot_exchange(summary: pd.DataFrame, out) -> Path:
    """Left: the parameter server's gather, average, broadcast (rank 0) against workers (only
    when a ps run recorded them: no empty panel); right: every algorithm's exchange time per
    step. Measured solid, simulated dashed; log-log."""
    ps = summary[summary["algorithm"] == "ps"]
    has_ps = bool(len(ps)) and any(p in ps.columns and ps[p].notna().any() for p in PS_PHASES)
    fig, axes = plots.plt.subplots(1, 2 if has_ps else 1, figsize=(12 if has_ps else 6.5, 4.2),
                                   squeeze=False)
    left, right = (axes[0][0], axes[0][1]) if has_ps else (None, axes[0][0])
    style = {"measured": "-", "simulated": "--"}
    ps = ps if has_ps else ps.iloc[0:0]
    for kind, g in ps.groupby("kind"):
        for phase in PS_PHASES:
            if phase in g.columns:
                left.plot(g["workers"], g[phase] * 1e3, style.get(kind, "-"), marker="o",
                          color=plots.PHASE_COLORS[phase], label=f"{phase} ({kind})")
    if left is not None:
        left.set_title("parameter server (rank 0): time per step by phase")
    colors = {a: f"C{i}" for i, a in enumerate(sorted(summary["algorithm"].unique()))}
    for (kind, algo), g in summary.groupby(["kind", "algorithm"]):
        right.plot(g["workers"], g["exchange"] * 1e3, style.get(kind, "-"), marker="o",
                   color=colors[algo], label=f"{algo} ({kind})")
    right.set_title("exchange time per step by algorithm")
    for ax in [a for a in (left, right) if a is not None]:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("workers")
        ax.set_ylabel("ms per step")
        ax.grid(alpha=0.3, which="both")
        if ax.lines:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return plots.save(fig, out)


def exchange_section(rep, df: pd.DataFrame, fig_dir: Path) -> None:
    rep.section("Exchange time by algorithm")
    summary = exchange_summary(df[df["workers"] > 1]) if "workers" in df.columns else pd.DataFrame()
    if summary.empty or summary["workers"].nunique() < 2:
        rep.skip("No finished multi-worker runs at two or more worker counts recorded the "
                 "exchange's time, so there is no exchange plot.")
        return
    t = exchange_times(df)
    overlap = sorted(set(t["overlap"].astype(str)))
    ps_panel = ("Left: the parameter server's phases on rank 0 (gather: the workers' gradients "
                "arrive; average: rank 0 sums and scales them; broadcast: the new weights go "
                "out). Right: ps = the three phases, the all-reduces = /timing/comm (mean over "
                "ranks). ") if (summary["algorithm"] == "ps").any() else \
        "The all-reduces' time is /timing/comm (mean over ranks). "
    rep.figure(plot_exchange(summary, fig_dir / "exchange_times"),
               "Mean time per step of the exchange (after warm-up; median over repetitions). " +
               ps_panel + "Solid measured, dashed simulated.")
    if overlap != ["False"] and overlap != ["false"]:
        rep.para(f"dist.overlap was {', '.join(overlap)}: with overlap the all-reduces' time "
                 "runs beside backward, so it is not the exchange alone.", note=True)
    show = summary.copy()
    for c in ("exchange", *PS_PHASES):
        if c in show.columns:
            show[c + "_ms"] = show.pop(c) * 1e3
    rep.table(show, None)
