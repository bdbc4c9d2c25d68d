"""One self-contained HTML report per campaign (or set of campaigns), plus a Markdown summary.

The HTML embeds every figure as a base64 PNG data: URI and uses inline CSS only, so it loads
nothing from the network and can be mailed or attached as one file. The figures are also
written as PNG and SVG to `<name>_figures/` beside it, and `<name>.md` summarises the tables
for papers and issues. A section whose dimension did not vary becomes one sentence saying so.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from . import exchange, hetero, io_bench, load, metrics, plots, strategies

# Dimensions the scaling and loss-area sections handle themselves; every other varying config
# key (storage, data format, precision, MPI flavor, algorithm, ...) gets relative bars, except
# `gpu`: the GPU-generation section compares what the runs computed on (the run files' device).
OWN_SECTIONS = ("workers", "batch_per_worker", "lr", "global_batch", "seed")
OWN_RELATIVE_SECTIONS = OWN_SECTIONS + ("gpu",)
ENV_COLUMNS = ("env.hosts", "env.world_size", "env.mpi_flavor", "env.mpi_version", "env.mpi_tuning",
               "env.backend", "env.device", "env.device_name", "env.device_generation", "env.cpu_model", "env.isa", "env.threads",
               "env.precision", "env.version", "env.git_sha")
RUN_METRICS = ("images_per_s", "step_time_median", "min_train_loss", "loss_area_time",
               "final_accuracy", "time_to_target")

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;
color:#222;padding:0 1em}
h1{border-bottom:2px solid #4c72b0}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left}th{background:#f0f3f8}
tr:nth-child(even) td{background:#fafafa}
.status-ok{color:#2e7d32}.status-diverged{color:#e65100;font-weight:bold}
.status-failed,.status-missing,.status-unreadable{color:#c62828;font-weight:bold}.status-preempted{color:#e65100}
.note{color:#555;font-style:italic}img{max-width:100%;border:1px solid #eee;margin:.5em 0}
figure{margin:1em 0}figcaption{font-size:13px;color:#444}
"""


def fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, (float, np.floating)):
        if math.isinf(v):
            return "inf"
        return f"{v:.4g}"
    return str(v)


def table_html(df: pd.DataFrame, status_col: str | None = "status") -> str:
    if df.empty:
        return '<p class="note">(no rows)</p>'
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            v = fmt(r[c])
            cls = f' class="status-{html.escape(v)}"' if c == status_col else ""
            cells.append(f"<td{cls}>{html.escape(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def table_md(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(no rows)_\n"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(fmt(r[c]).replace("|", "\\|") for c in df.columns) + " |")
    return "\n".join(lines) + "\n"


class Report:
    """Accumulates HTML and Markdown sections side by side."""

    def __init__(self, title: str, fig_dir: Path, md_fig_prefix: str):
        self.title = title
        self.fig_dir = fig_dir
        self.md_fig_prefix = md_fig_prefix
        self.html: list[str] = []
        self.md: list[str] = [f"# {title}\n"]

    def section(self, title: str):
        self.html.append(f"<h2>{html.escape(title)}</h2>")
        self.md.append(f"\n## {title}\n")

    def para(self, text: str, note: bool = False):
        cls = ' class="note"' if note else ""
        self.html.append(f"<p{cls}>{html.escape(text)}</p>")
        self.md.append(f"{'_' + text + '_' if note else text}\n")

    def table(self, df: pd.DataFrame, status_col: str | None = "status"):
        self.html.append(table_html(df, status_col))
        self.md.append(table_md(df))

    def figure(self, png: Path, caption: str):
        data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
        self.html.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)} "
            f"(<code>{html.escape(Path(png).with_suffix('.svg').name)}</code> beside the "
            f"report)</figcaption></figure>")
        self.md.append(f"![{caption}]({self.md_fig_prefix}/{Path(png).name})\n")

    def write(self, out_html: Path) -> tuple[Path, Path]:
        doc = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
               f"<title>{html.escape(self.title)}</title><style>{CSS}</style></head><body>"
               f"<h1>{html.escape(self.title)}</h1>" + "\n".join(self.html) + "</body></html>")
        out_html.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_html.with_name(out_html.name + ".tmp")
        tmp.write_text(doc, encoding="utf-8")
        tmp.replace(out_html)
        md = out_html.with_suffix(".md")
        md.write_text("\n".join(self.md), encoding="utf-8")
        return out_html, md


def values_of(df: pd.DataFrame, col: str) -> list:
    vals = df[col].dropna().unique().tolist()
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=str)


def matrix_table(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(varying keys with their values, constant keys with their value)."""
    keys = metrics.group_keys(df)
    vary = load.varying(df, keys)
    varying = pd.DataFrame({"key": vary, "values": [", ".join(fmt(v) for v in values_of(df, k))
                                                     for k in vary]})
    const = [k for k in keys if k not in vary and df[k].notna().any()]
    constant = pd.DataFrame({"key": const, "value": [fmt(values_of(df, k)[0]) for k in const]})
    return varying, constant


def choose_baseline(df: pd.DataFrame, dim: str, baselines: dict[str, Any], by: str | None = None):
    """The --baseline value of `dim`, else its first value; with `by` (the device column),
    the first value that every device where `dim` varies has run, so that no device's bars
    go missing for want of the baseline."""
    ok = metrics.finished(df)
    vals = values_of(ok, dim)
    if dim in baselines:
        want = baselines[dim]
        for v in vals:
            if fmt(v) == fmt(want) or str(v) == str(want):
                return v
        raise ValueError(f"--baseline {dim}={want}: no finished run has that value; "
                         f"values are {', '.join(fmt(v) for v in vals)}")
    if by is not None:
        per_device = [set(g[dim].dropna()) for _, g in ok.groupby(by) if g[dim].nunique() > 1]
        shared = [v for v in vals if all(v in s for s in per_device)]
        if shared:
            return shared[0]
    return vals[0] if vals else None


def build_report(paths: Sequence[str | Path], out_html: str | Path,
                 threshold: float | None = None, baseline_workers: int | None = None,
                 baselines: dict[str, Any] | None = None, title: str | None = None,
                 df: pd.DataFrame | None = None,
                 io_paths: Sequence[str | Path] = ()) -> tuple[Path, Path]:
    """Load `paths`, write the HTML report to `out_html` and the Markdown summary beside it.
    `io_paths`: `trainscale bench io` files (or directories holding them) for the data format
    and storage views. Returns (html path, markdown path)."""
    out_html = Path(out_html)
    df = load.load_campaigns(paths) if df is None else df
    baselines = dict(baselines or {})
    names = sorted(df["campaign"].dropna().unique().tolist()) if not df.empty else []
    title = title or f"trainscale report: {', '.join(names) or 'empty campaign'}"
    fig_dir = out_html.with_name(out_html.stem + "_figures")
    fig_dir.mkdir(parents=True, exist_ok=True)
    for old in [*fig_dir.glob("*.png"), *fig_dir.glob("*.svg")]:
        old.unlink()  # figures of an earlier report whose sections this one may not have
    rep = Report(title, fig_dir, fig_dir.name)
    ok = metrics.finished(df)
    counts = df["status"].value_counts().to_dict() if not df.empty else {}
    rep.para(f"Campaigns: {', '.join(str(p) for p in paths)}. {len(df)} runs: " +
             ", ".join(f"{counts.get(s, 0)} {s}" for s in load.STATUSES) +
             f". Generated {_dt.datetime.now().isoformat(timespec='seconds')} by "
             f"trainscale_analysis.")
    if df.empty:
        rep.para("The campaign has no runs yet: nothing to report.", note=True)
        return rep.write(out_html)

    vary = load.varying(df, metrics.group_keys(df))
    with_files = ok[ok["path"].notna()] if "path" in ok.columns else ok  # runs with a run file
    matrix_and_runs_section(rep, df, vary)
    scaling_section(rep, df, ok, vary, baseline_workers, fig_dir)
    loss_sections(rep, df, with_files, vary, threshold, fig_dir)
    rep.section("Time breakdown")
    tb = metrics.time_breakdown(df) if not with_files.empty else pd.DataFrame()
    if tb.empty:
        rep.para("No finished run recorded /timing, so there is no time breakdown.", note=True)
    else:
        rep.figure(plots.plot_time_breakdown(df, fig_dir / "time_breakdown"),
                   "Mean time per step by phase (after warm-up, mean over ranks, median over "
                   "repetitions); 'other' is step time outside the recorded phases.")

    relative_section(rep, df, ok, vary, baselines, fig_dir)
    strategies.strategy_section(rep, df, fig_dir)
    exchange.exchange_section(rep, df, fig_dir)
    io_sections(rep, df, io_paths, fig_dir)
    generations_section(rep, df, fig_dir, baselines.get("generation"))
    strategy_budget_section(rep, df)
    rank_variability_section(rep, with_files, fig_dir)
    heterogeneous_section(rep, with_files)
    environment_section(rep, df)
    return rep.write(out_html)


def matrix_and_runs_section(rep: Report, df: pd.DataFrame, vary: list[str]) -> None:
    """The campaign matrix (varying and constant keys) and the table of every run."""
    rep.section("Campaign matrix")
    varying_t, constant_t = matrix_table(df)
    if varying_t.empty:
        rep.para("No configuration key varied: every run has the same configuration.",
                 note=True)
    else:
        rep.table(varying_t, None)
    rep.html.append("<details><summary>Constant keys</summary>")
    rep.table(constant_t, None)
    rep.html.append("</details>")

    rep.section("Runs")
    cols = ["run_id", "campaign", "status"] + [k for k in vary if k != "global_batch"] + \
        [m for m in RUN_METRICS if m in df.columns] + ["message"]
    if df["campaign"].nunique() == 1:
        cols.remove("campaign")
    rep.table(df[cols].sort_values([c for c in ("workers", "run_id") if c in cols]))
    bad = df[df["status"] != "ok"]
    if len(bad):
        rep.para(f"{len(bad)} run(s) did not finish normally (status diverged, failed, preempted, "
                 f"missing or unreadable); they are listed above with their message and left out of "
                 f"medians, scaling and winners.", note=True)


def scaling_section(rep: Report, df: pd.DataFrame, ok: pd.DataFrame, vary: list[str],
                    baseline_workers: int | None, fig_dir: Path) -> None:
    """Weak scaling over the worker counts, split by the first other varying key."""
    rep.section("Scaling")
    nworkers = ok["workers"].nunique() if "workers" in ok.columns else 0
    if nworkers < 2:
        w = fmt(values_of(df, "workers")[0]) if "workers" in df.columns and \
            df["workers"].notna().any() else "?"
        rep.para(f"The worker count did not vary (every finished run used {w} workers), so "
                 f"there is no scaling plot.", note=True)
    else:
        split = [k for k in vary if k not in OWN_SECTIONS]
        by = split[0] if split else None
        png = plots.plot_scaling(df, fig_dir / "scaling", "images_per_s", "weak", by,
                                 baseline_workers)
        sc = metrics.scaling(df, "images_per_s", "weak", baseline_workers, by)
        rep.figure(png, "Weak scaling: images/s, speedup and parallel efficiency against "
                        "workers (median of repetitions, bars min-max, ideal dashed).")
        skeys = [k for k in sc.attrs.get("series_keys", []) if k in sc.columns
                 and sc[k].astype(str).nunique() > 1]
        rep.table(sc[skeys + ["workers", "images_per_s", "images_per_s_min",
                              "images_per_s_max", "n", "baseline_workers", "speedup",
                              "efficiency"]], None)


def loss_sections(rep: Report, df: pd.DataFrame, with_files: pd.DataFrame, vary: list[str],
                  threshold: float | None, fig_dir: Path) -> None:
    """Loss curves, the batch x LR loss-area views and the winners by the SHM-Learn-Dist rule."""
    rep.section("Training loss")
    if with_files.empty or "workers" not in df.columns:
        rep.para("No finished run has a training-loss series.", note=True)
    else:
        thr = "no threshold" if threshold is None else f"minimum loss <= {threshold:g}"
        rep.figure(plots.plot_loss_curves(df, fig_dir / "loss_vs_time", "time", threshold),
                   f"Training loss against wall-clock time; per worker count the run with "
                   f"the smallest loss area ({thr}).")
        rep.figure(plots.plot_loss_curves(df, fig_dir / "loss_vs_samples", "samples",
                                          threshold),
                   f"Training loss against samples seen (all workers); per worker count the "
                   f"run with the smallest loss area over samples ({thr}).")

    rep.section("Loss area: batch size x learning rate")
    hp = [k for k in ("batch_per_worker", "lr") if k in vary]
    if not hp or with_files.empty:
        rep.para("Neither batch_per_worker nor lr varied, so there is no batch x LR heatmap; "
                 "the winners table below compares whatever runs there are.", note=True)
    else:
        rep.figure(plots.plot_loss_area_heatmaps(df, fig_dir / "loss_area_heatmaps",
                                                 threshold),
                   "Area under the training-loss curve over wall-clock time, per worker "
                   "count; hatched cells diverged or failed, the winner is outlined.")
        rep.figure(plots.plot_loss_area_histograms(df, fig_dir / "loss_area_histograms",
                                                   threshold),
                   "Distribution of the loss areas per worker count (grey: minimum loss above "
                   "the threshold; black line: the winner; the title counts runs that "
                   "diverged or failed, which have no area, and runs off the axis, whose loss "
                   "blew up without becoming NaN).")
    rep.section("Winners (smallest loss area per worker count)")
    if "workers" in df.columns and not with_files.empty:
        win = metrics.loss_area_winners(df, threshold, by="workers")
        win = win.merge(df[["run_id", "final_accuracy"]].drop_duplicates("run_id"), on="run_id", how="left") \
            if "final_accuracy" in df.columns else win
        show = [c for c in ["workers", "run_id", "batch_per_worker", "lr"] +
                [k for k in vary if k not in OWN_SECTIONS] +
                ["loss_area", "min_train_loss", "final_accuracy", "candidates",
                 "discarded_threshold", "discarded_status"] if c in win.columns]
        rep.para("Rule (SHM-Learn-Dist): per worker count, drop runs that diverged or failed "
                 "and curves whose minimum training loss is above the threshold "
                 f"({'none given; use --loss-threshold' if threshold is None else f'{threshold:g}'}"
                 "), then the smallest area under the loss-vs-time curve wins.")
        rep.table(win[show], None)
    else:
        rep.para("No finished run: no winners.", note=True)


def relative_section(rep: Report, df: pd.DataFrame, ok: pd.DataFrame, vary: list[str],
                     baselines: dict[str, Any], fig_dir: Path) -> None:
    """Bars per dimension against its baseline, matched on every other key (per device when the
    runs computed on several)."""
    rep.section("Relative performance by dimension")
    dims = [k for k in vary if k not in OWN_RELATIVE_SECTIONS and ok[k].nunique() > 1]
    if not dims:
        rep.para("No other dimension (storage, data format, precision, MPI flavor, algorithm, "
                 "...) varied, so there are no relative-performance bars.", note=True)
    # Campaigns that ran on several devices (a CPU study and its GPU part) compare within each.
    by = "device" if metrics.device_generation(ok).nunique() > 1 else None
    by_df = df.assign(device=metrics.device_generation(df)) if by else df
    not_compared = []
    for dim in dims:
        base = choose_baseline(by_df, dim, baselines, by)
        rel = metrics.relative_performance(by_df, dim, base, by=by)
        if not (rel.loc[rel[dim] != base, "matched"] > 0).any():
            not_compared.append(dim)
            continue
        rep.figure(plots.plot_relative(by_df, fig_dir / f"relative_{safe(dim)}", dim, base, by=by),
                   f"images/s for each value of {dim} relative to {fmt(base)}, matched on "
                   f"all other configuration keys{' within each device' if by else ''} "
                   f"(bars span min-max over the matches).")
        rep.table(rel[([by] if by else []) + [dim, "relative", "relative_min", "relative_max",
                                             "matched"]], None)
        compared = rel[(rel[dim] != base) & (rel["matched"] > 0) & (rel["varies_with"] != "")]
        for _, m in compared[([by] if by else []) + ["varies_with"]].drop_duplicates().iterrows():
            where = f"On {m[by]}, " if by else ""
            rep.para(f"{where}{m['varies_with']} changed with {dim} (one value per value of it), so "
                     f"they are not matched on and the ratios are theirs as much as {dim}'s.", note=True)
    if not_compared:
        rep.para("Not compared: " + ", ".join(not_compared) + " (no two finished runs"
                 f"{' on one device' if by else ''} differ in that key alone).", note=True)


def rank_variability_section(rep: Report, with_files: pd.DataFrame, fig_dir: Path) -> None:
    """Per-step times per rank of the slowest run at the largest worker count."""
    rep.section("Per-rank variability")
    multi = with_files[with_files["workers"] > 1] if "workers" in with_files.columns else \
        with_files.iloc[0:0]
    if multi.empty:
        rep.para("Every finished run used one worker, so there is no per-rank comparison.",
                 note=True)
    else:
        run = multi.sort_values(["workers", "images_per_s"], ascending=[False, True]).iloc[0]
        if load.load_timing(run):
            rep.figure(plots.plot_rank_variability(run, fig_dir / "rank_variability"),
                       f"Per-step times per rank of run {run['run_id']} (the slowest run at "
                       f"the largest worker count); a rank with a higher box is a straggler.")
            warm = run.get("warmup_steps")
            timing = load.load_timing(run)
            if "step" in timing:
                st = metrics.rank_statistics(
                    timing, "step", int(warm) if pd.notna(warm) else 0)
                rep.table(st, None)
        else:
            rep.para("The multi-worker runs recorded no /timing.", note=True)


def environment_section(rep: Report, df: pd.DataFrame) -> None:
    """What each campaign's run files recorded of their environment."""
    rep.section("Environment")
    env_cols = [c for c in ENV_COLUMNS if c in df.columns]
    if not env_cols:
        rep.para("No run file recorded its environment (failed or missing runs only).",
                 note=True)
    else:
        rows = []
        for camp, g in df.groupby("campaign"):
            for c in env_cols:
                vals = values_of(g, c)
                if c == "env.hosts":
                    vals = sorted({h for v in vals for h in str(v).split(",") if h})
                    if len(vals) > 8:  # a simulated or large cluster: the count says enough
                        vals = vals[:3] + [f"... ({len(vals)} hosts)"]
                rows.append({"campaign": camp, "attribute": c.removeprefix("env."),
                             "values": ", ".join(fmt(v) for v in vals)})
        rep.table(pd.DataFrame(rows), None)


def io_sections(rep: Report, df: pd.DataFrame, io_paths: Sequence[str | Path], fig_dir: Path) -> None:
    """The "data format" and "storage" views: input-pipeline throughput (bench io files) per
    format and per storage relative to the fastest, cold and warm page cache; the storage read
    rates of the runs (/io) below them."""
    io = io_bench.load_io_bench(io_paths) if io_paths else io_bench.load_io_bench([])
    reads = io_bench.run_read_rates(df) if "path" in df.columns else pd.DataFrame()
    for dim, title in (("format", "Data format"), ("storage", "Storage")):
        rep.section(f"{title}: input pipeline throughput")
        if io.empty or io[dim].nunique() < 2:
            seen = ", ".join(sorted(io[dim].astype(str).unique())) if not io.empty else ""
            rep.para(f"No bench io files compare two values of {dim}"
                     f"{' (only ' + seen + ')' if seen else ''}; make them with `trainscale bench io "
                     f"--config FILE --set dataset.{dim}=... --out FILE.h5` and pass them with --io.", note=True)
        else:
            rel = io_bench.relative_throughput(io, dim)
            rep.figure(plots.plot_io_relative(rel, fig_dir / f"io_{dim}", dim),
                       f"Input pipeline samples/s (no training; `trainscale bench io`) per {dim}, relative to "
                       f"the fastest {dim} (1.0), page cache dropped (cold) or warm; median of the passes.")
            rep.table(rel, None)
        if not reads.empty and reads[dim].nunique() > 1:
            rep.para(f"Storage read rate of the training runs per {dim} (/io/read_bytes over /io/read_seconds: "
                     f"the seconds the loader threads spent in reads).")
            rep.table(reads.groupby([dim, "cache"], dropna=False)["read_mb_per_s"].median().reset_index(), None)


# The keys that tell asynchronous runs apart (docs/distributed.md "Asynchronous SGD and Hogwild").
STRATEGY_KEYS = ("dist.strategy", "dist.staleness", "dist.servers", "dist.threads_per_worker")


def strategy_budget_table(df: pd.DataFrame) -> pd.DataFrame:
    """Final and best test accuracy per exchange strategy (and its staleness bound or thread
    count) of the finished runs, with the samples and wall time they took: synchronous vs
    asynchronous SGD and Hogwild at the same sample budget. Empty when one strategy ran."""
    if "dist.strategy" not in df.columns or "final_accuracy" not in df.columns:
        return pd.DataFrame()
    done = metrics.finished(df)
    if done.empty or done["dist.strategy"].nunique() < 2:
        return pd.DataFrame()
    keys = [k for k in STRATEGY_KEYS if k in done.columns]
    done = done.assign(**{k: done[k].astype(object).fillna("-") for k in keys[1:]})
    cols = {"final_accuracy": "mean", "best_accuracy": "max", "run_id": "count"}
    extra = [c for c in ("train_samples", "epochs", "global_batch") if c in done.columns]
    table = done.groupby(keys, dropna=False).agg({**cols, **{c: "first" for c in extra}}).reset_index()
    return table.rename(columns={"run_id": "runs"}).sort_values("final_accuracy", ascending=False)


def strategy_budget_section(rep: Report, df: pd.DataFrame) -> None:
    table = strategy_budget_table(df)
    if table.empty:
        return
    rep.section("Strategies at a fixed sample budget")
    rep.para("Test accuracy of each exchange strategy (sync, async_ps at each staleness bound, "
             "hogwild at each thread count) over the same runs' budget: what asynchrony costs "
             "or saves in accuracy (mean of the final accuracies, best over the runs).")
    rep.table(table, None)


def generations_section(rep: Report, df: pd.DataFrame, fig_dir: Path, baseline) -> None:
    """Salvaris-style relative throughput across GPU generations (or device names), per model
    and precision; a note instead when the finished runs computed on one kind of device."""
    rep.section("Relative throughput across GPU generations")
    labels = metrics.generation_order(metrics.device_generation(metrics.finished(df)).unique())
    if len(labels) < 2:
        on = f" ({labels[0]})" if labels else ""
        rep.para(f"Every finished run computed on one GPU generation or device{on}, so there is "
                 f"no comparison across generations.", note=True)
        return
    base = None if baseline is None else str(baseline)
    rel = metrics.generation_throughput(df, base)
    base = rel["baseline"].iloc[0]
    rep.figure(plots.plot_generations(df, fig_dir / "generations", base),
               f"images/s on each GPU generation (or device) relative to {base}, per model and "
               f"precision, matched on the other configuration keys (median of repetitions; "
               f"bars span min-max over the matches).")
    cols = [c for c in ("model", "precision") if c in rel.columns] + \
        ["generation", "images_per_s", "relative", "relative_min", "relative_max", "matched", "runs"]
    rep.table(rel[cols], None)
    if (rel["matched"] == 0).any():
        rep.para("Rows with no relative value have no run on the baseline generation with the "
                 "same model, precision and other settings; choose another with "
                 "--baseline generation=NAME.", note=True)


def heterogeneous_section(rep: Report, runs: pd.DataFrame, batches: int = 12) -> None:
    """Heterogeneous workers (runs with /partition): per run, the per-batch table (worker x
    batch: samples, compute and idle seconds) of its first batches, the share changes and the
    mean idle fraction before the all-reduce; one sentence when no run has /partition."""
    rep.section("Heterogeneous workers")
    shown = 0
    for _, run in runs.iterrows():
        summary = hetero.idle_summary(run)
        if not summary:
            continue
        shown += 1
        ranks = hetero.ranks_text(hetero.load_partition(run))
        rep.para(f"Run {run['run_id']}" + (f" ({ranks})" if ranks else "") + ": mean idle fraction before the "
                 f"all-reduce {fmt(summary['idle_fraction'])} (after the first step); share changes below, then "
                 f"the first {batches} batches, per worker: samples, compute and idle seconds.")
        rep.table(hetero.changes_table(run), None)
        rep.table(hetero.batch_table(run, 1, batches), None)
    if not shown:
        rep.para("No finished run had unequal shares or an emulated slowdown (/partition), so there "
                 "is no per-batch worker table.", note=True)


def safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def parse_baselines(items: Iterable[str]) -> dict[str, Any]:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--baseline {item!r}: expected DIM=VALUE, e.g. precision=fp32")
        k, v = item.split("=", 1)
        out[k.strip()] = load.parse_config_value(v.strip())
    return out
