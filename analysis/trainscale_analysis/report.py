"""One self-contained HTML report per campaign (or set of campaigns), plus a Markdown summary.

The HTML embeds every figure as a base64 PNG data: URI and uses inline CSS only, so it loads
nothing from the network and can be mailed or attached as one file. The figures are also
written as PNG and SVG to `<name>_figures/` beside it, and `<name>.md` summarises the tables
for papers and issues. The campaign's dimensions are the keys its sweep file varied
(dimensions.py); runs are listed in their order, effects are credited to them, and the keys
that follow them (eval.batch, global_batch) are listed apart. A section with nothing to show is
left out, and the report ends with the list of those and why (report_document.py).
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from . import dimensions, exchange, hetero, io_bench, load, metrics, plots, strategies
from .number_format import fmt, format_setting
from .report_document import CSS, Report, StagedOutput  # noqa: F401  (compare.py and callers use them here)
from .tables import table_html, table_md  # noqa: F401

# Dimensions the scaling and loss-area sections handle themselves; every other dimension
# (storage, data format, precision, MPI flavor, algorithm, ...) gets relative bars, except
# `gpu`: the GPU-generation section compares what the runs computed on (the run files' device).
OWN_SECTIONS = ("workers", "batch_per_worker", "lr", "global_batch", "seed")
OWN_RELATIVE_SECTIONS = OWN_SECTIONS + ("gpu",)
ENV_COLUMNS = ("env.hosts", "env.world_size", "env.mpi_flavor", "env.mpi_version", "env.mpi_tuning",
               "env.backend", "env.device", "env.device_name", "env.device_generation", "env.cpu_model", "env.isa", "env.threads",
               "env.precision", "env.version", "env.git_sha")
RUN_METRICS = ("images_per_s", "step_time_median", "min_train_loss", "loss_area_time",
               "final_accuracy", "time_to_target", "au_min", "data_wait_share", "au_pass")


def values_of(df: pd.DataFrame, col: str) -> list:
    """The distinct values of `col` (numbers normalised: 5e-04 and 0.0005 are one), sorted."""
    return [v for v in dimensions.distinct(df[col]) if v is not None]


def listed(values: Iterable[Any]) -> str:
    return ", ".join(format_setting(v) for v in values)


def matrix_table(df: pd.DataFrame, dims: Sequence[str] | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the swept keys with their values, the constant keys with their value, the keys that
    vary without being swept with their values)."""
    dims = dimensions.swept_dimensions(df) if dims is None else list(dims)
    keys = metrics.group_keys(df)
    derived = dimensions.derived_keys(df, dims)
    swept = pd.DataFrame({"key": dims, "values": [listed(values_of(df, k)) for k in dims]},
                         columns=["key", "values"])
    const = [k for k in keys if k not in dims and k not in derived and df[k].notna().any()]
    constant = pd.DataFrame({"key": const, "value": [listed(values_of(df, k)[:1]) for k in const]},
                            columns=["key", "value"])
    follow = pd.DataFrame({"key": derived, "values": [listed(values_of(df, k)) for k in derived]},
                          columns=["key", "values"])
    return swept, constant, follow


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
    # All or nothing (report_document.StagedOutput): the figures are made in a staging folder
    # and replace an earlier report's figures only when the whole report is written.
    with StagedOutput(out_html) as out:
        return _write_report(out, paths, df, threshold, baseline_workers, baselines, title, io_paths)


def _write_report(out: StagedOutput, paths: Sequence[str | Path], df: pd.DataFrame, threshold: float | None,
                  baseline_workers: int | None, baselines: dict[str, Any] | None, title: str | None,
                  io_paths: Sequence[str | Path]) -> tuple[Path, Path]:
    out_html = out.html
    baselines = dict(baselines or {})
    names = sorted(df["campaign"].dropna().unique().tolist()) if not df.empty else []
    title = title or f"trainscale report: {', '.join(names) or 'empty campaign'}"
    fig_dir = out.stage_figures
    rep = Report(title, fig_dir, out.figures.name, output=out)
    rep.settings = set(load.config_columns(df)) | {"value", "values", "device", "generation"}
    ok = metrics.finished(df)
    counts = df["status"].value_counts().to_dict() if not df.empty else {}
    statuses = [s for s in dict.fromkeys(list(load.STATUSES) + list(counts)) if counts.get(s)]
    rep.para(f"Campaigns: {', '.join(str(p) for p in paths)}. {len(df)} runs" +
             (": " + ", ".join(f"{counts[s]} {s}" for s in statuses) if statuses else "") +
             f". Generated {_dt.datetime.now().isoformat(timespec='seconds')} by "
             f"trainscale_analysis.")
    if df.empty:
        rep.para("The campaign has no runs yet: nothing to report.", note=True)
        return rep.write(out_html)

    vary = dimensions.swept_dimensions(df)
    with_files = ok[ok["path"].notna()] if "path" in ok.columns else ok  # runs with a run file
    matrix_and_runs_section(rep, df, vary)
    scaling_section(rep, df, ok, vary, baseline_workers, fig_dir)
    loss_sections(rep, df, with_files, vary, threshold, fig_dir)
    time_breakdown_section(rep, df, with_files, vary, fig_dir)
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
    """The campaign matrix (swept, derived and constant keys) and the table of every run, in
    the order of the swept keys."""
    rep.section("Campaign matrix")
    swept, constant, follow = matrix_table(df, vary)
    if swept.empty:
        rep.para("Every run has the same configuration: nothing was swept.", note=True)
    else:
        rep.table(swept, None, name="matrix")
    if not follow.empty:
        rep.details(f"Keys that follow the swept ones (not dimensions): "
                    f"{', '.join(follow['key'])}", follow)
    if not constant.empty:
        rep.details(f"Constant keys ({len(constant)})", constant)

    rep.section("Runs")
    cols = ["run_id", "campaign", "status"] + list(vary) + \
        [m for m in RUN_METRICS if m in df.columns and df[m].notna().any()] + ["message"]
    if df["campaign"].nunique() == 1:
        cols.remove("campaign")
    if not df["message"].fillna("").astype(str).str.strip().any():
        cols.remove("message")  # every run finished without a word
    runs = dimensions.sort_runs(df, (["campaign"] if "campaign" in cols else []) + list(vary))
    rep.table(runs[cols], name="runs")
    bad = df[df["status"] != "ok"]
    if len(bad):
        rep.para(f"{len(bad)} run(s) did not finish normally; they are listed above (the whole "
                 f"reason in the tooltip of their message) and left out of medians, scaling and "
                 f"winners. By status and reason:", note=True)
        rep.table(reasons_table(bad), None, name="reasons")


def reasons_table(bad: pd.DataFrame) -> pd.DataFrame:
    """One line per status and reason of the runs that did not finish normally."""
    msg = bad["message"].fillna("").astype(str).map(lambda m: " ".join(m.split()))
    table = bad.assign(message=msg).groupby(["status", "message"], sort=True)["run_id"].count()
    return table.reset_index().rename(columns={"run_id": "runs"})[["status", "runs", "message"]]


def scaling_section(rep: Report, df: pd.DataFrame, ok: pd.DataFrame, vary: list[str],
                    baseline_workers: int | None, fig_dir: Path) -> None:
    """Weak scaling over the worker counts, split by the first other swept key."""
    rep.section("Scaling")
    nworkers = ok["workers"].nunique() if "workers" in ok.columns else 0
    if nworkers < 2:
        w = fmt(values_of(df, "workers")[0]) if "workers" in df.columns and \
            df["workers"].notna().any() else "?"
        rep.skip(f"The worker count did not vary (every finished run used {w} workers), so "
                 f"there is no scaling plot.")
        return
    split = [k for k in vary if k not in OWN_SECTIONS]
    by = split[0] if split else None
    png = plots.plot_scaling(df, fig_dir / "scaling", "images_per_s", "weak", by,
                             baseline_workers, label_keys=vary)
    sc = metrics.scaling(df, "images_per_s", "weak", baseline_workers, by)
    rep.figure(png, "Weak scaling: images/s, speedup and parallel efficiency against "
                    "workers (median of repetitions, bars min-max, ideal dashed).")
    series = sc.attrs.get("series_keys", [])
    skeys = [k for k in vary if k in series and k in sc.columns and sc[k].astype(str).nunique() > 1]
    table = dimensions.sort_runs(sc, skeys + ["workers"])
    rep.table(table[skeys + ["workers", "images_per_s", "images_per_s_min", "images_per_s_max",
                             "n", "baseline_workers", "speedup", "efficiency"]], None)


def loss_sections(rep: Report, df: pd.DataFrame, with_files: pd.DataFrame, vary: list[str],
                  threshold: float | None, fig_dir: Path) -> None:
    """Loss curves, the batch x LR loss-area views and the winners by the SHM-Learn-Dist rule."""
    rep.section("Training loss")
    if with_files.empty or "workers" not in df.columns:
        rep.skip("No finished run has a training-loss series.")
    else:
        thr = "no threshold" if threshold is None else f"minimum loss <= {threshold:g}"
        keys = [k for k in vary if k != "workers"]
        rep.figure(plots.plot_loss_curves(df, fig_dir / "loss_vs_time", "time", threshold,
                                          label_keys=keys),
                   f"Training loss against wall-clock time, one panel per worker count: every "
                   f"finished run of it (diverged runs dashed), the run with the smallest loss "
                   f"area ({thr}) drawn bold.")
        rep.figure(plots.plot_loss_curves(df, fig_dir / "loss_vs_samples", "samples", threshold,
                                          label_keys=keys),
                   f"Training loss against samples seen (all workers), one panel per worker "
                   f"count; bold: the run with the smallest loss area over samples ({thr}).")
    loss_area_section(rep, df, with_files, vary, threshold, fig_dir)
    winners_section(rep, df, with_files, vary, threshold)


def loss_area_section(rep: Report, df: pd.DataFrame, with_files: pd.DataFrame, vary: list[str],
                      threshold: float | None, fig_dir: Path) -> None:
    rep.section("Loss area: batch size x learning rate")
    hp = [k for k in ("batch_per_worker", "lr") if k in vary]
    if not hp or with_files.empty:
        rep.skip("Neither batch_per_worker nor lr varied, so there is no batch x LR heatmap.")
        return
    rep.figure(plots.plot_loss_area_heatmaps(df, fig_dir / "loss_area_heatmaps", threshold),
               "Area under the training-loss curve over wall-clock time, per worker "
               "count; hatched cells diverged or failed, the winner is outlined.")
    rep.figure(plots.plot_loss_area_histograms(df, fig_dir / "loss_area_histograms", threshold),
               "Distribution of the loss areas per worker count (grey: minimum loss above "
               "the threshold; black line: the winner; the title counts runs that "
               "diverged or failed, which have no area, and runs off the axis, whose loss "
               "blew up without becoming NaN).")


def winners_section(rep: Report, df: pd.DataFrame, with_files: pd.DataFrame, vary: list[str],
                    threshold: float | None) -> None:
    rep.section("Winners (smallest loss area per worker count)")
    if "workers" not in df.columns or with_files.empty:
        rep.skip("No finished run: no winners.")
        return
    win = metrics.loss_area_winners(df, threshold, by="workers")
    win = win.merge(df[["run_id", "final_accuracy"]].drop_duplicates("run_id"), on="run_id", how="left") \
        if "final_accuracy" in df.columns else win
    show = [c for c in dict.fromkeys(["workers", "run_id"] + [k for k in vary if k != "workers"] +
                                     ["loss_area", "min_train_loss", "final_accuracy", "candidates",
                                      "discarded_threshold", "discarded_status"]) if c in win.columns]
    rep.para("Rule (SHM-Learn-Dist): per worker count, drop runs that diverged or failed "
             "and curves whose minimum training loss is above the threshold "
             f"({'none given; use --loss-threshold' if threshold is None else f'{threshold:g}'}"
             "), then the smallest area under the loss-vs-time curve wins.")
    rep.table(win[show], None)


def time_breakdown_section(rep: Report, df: pd.DataFrame, with_files: pd.DataFrame,
                           vary: list[str], fig_dir: Path) -> None:
    rep.section("Time breakdown")
    tb = metrics.time_breakdown(df) if not with_files.empty else pd.DataFrame()
    if tb.empty:
        rep.skip("No finished run recorded /timing, so there is no time breakdown.")
        return
    rep.figure(plots.plot_time_breakdown(df, fig_dir / "time_breakdown", label_keys=vary),
               "Mean time per step by phase (after warm-up, mean over ranks, median over "
               "repetitions), one bar per point of the swept keys; 'other' is step time outside "
               "the recorded phases.")


def relative_section(rep: Report, df: pd.DataFrame, ok: pd.DataFrame, vary: list[str],
                     baselines: dict[str, Any], fig_dir: Path) -> None:
    """Bars per swept key against its baseline, matched on every other key (per device when the
    runs computed on several)."""
    rep.section("Relative performance by dimension")
    followers = dimensions.lockstep_followers(df, vary)
    dims = [k for k in vary if k not in OWN_RELATIVE_SECTIONS and k not in followers
            and ok[k].nunique() > 1]
    if not dims:
        rep.skip("No other swept key (storage, data format, precision, MPI flavor, algorithm, "
                 "...) varied, so there are no relative-performance bars.")
        return
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
            swept = [k for k in m["varies_with"].split(", ") if k in vary]
            if not swept:
                continue  # keys that follow dim (its resolved defaults) share nothing of its effect
            where = f"On {m[by]}, " if by else ""
            zipped = [k for k in swept if followers.get(k) == dim]
            if zipped:
                rep.para(f"{where}{', '.join(zipped)} was swept in lock-step with {dim} (one zip "
                         f"group): the ratios are the group's.", note=True)
            others = [k for k in swept if k not in zipped]
            if others:
                rep.para(f"{where}{', '.join(others)} changed with {dim} (one value per value of it), so "
                         f"they are not matched on and the ratios are theirs as much as {dim}'s.", note=True)
    if not_compared:
        text = ("Not compared: " + ", ".join(not_compared) + " (no two finished runs"
                f"{' on one device' if by else ''} differ in that key alone).")
        if len(not_compared) < len(dims):
            rep.para(text, note=True)
        else:
            rep.skip(text)


def rank_variability_section(rep: Report, with_files: pd.DataFrame, fig_dir: Path) -> None:
    """Per-step times per rank of the slowest run at the largest worker count."""
    rep.section("Per-rank variability")
    multi = with_files[with_files["workers"] > 1] if "workers" in with_files.columns else \
        with_files.iloc[0:0]
    if multi.empty:
        rep.skip("Every finished run used one worker, so there is no per-rank comparison.")
        return
    run = multi.sort_values(["workers", "images_per_s"], ascending=[False, True]).iloc[0]
    timing = load.load_timing(run)
    if not timing:
        rep.skip("The multi-worker runs recorded no /timing.")
        return
    rep.figure(plots.plot_rank_variability(run, fig_dir / "rank_variability"),
               f"Per-step times per rank of run {run['run_id']} (the slowest run at "
               f"the largest worker count); a rank with a higher box is a straggler.")
    warm = run.get("warmup_steps")
    if "step" in timing:
        rep.table(metrics.rank_statistics(timing, "step", int(warm) if pd.notna(warm) else 0), None)


def environment_section(rep: Report, df: pd.DataFrame) -> None:
    """What each campaign's run files recorded of their environment."""
    rep.section("Environment")
    env_cols = [c for c in ENV_COLUMNS if c in df.columns]
    if not env_cols:
        rep.skip("No run file recorded its environment (failed or missing runs only).")
        return
    rows = []
    for camp, g in df.groupby("campaign"):
        for c in env_cols:
            vals = values_of(g, c)
            if c == "env.hosts":
                vals = sorted({h for v in vals for h in str(v).split(",") if h})
                if len(vals) > 8:  # a simulated or large cluster: the count says enough
                    vals = vals[:3] + [f"... ({len(vals)} hosts)"]
            rows.append({"campaign": camp, "attribute": c.removeprefix("env."),
                         "values": listed(vals)})
    rep.table(pd.DataFrame(rows), None)


def io_sections(rep: Report, df: pd.DataFrame, io_paths: Sequence[str | Path], fig_dir: Path) -> None:
    """The "data format" and "storage" views: input-pipeline throughput (bench io files) per
    format and per storage relative to the fastest, cold and warm page cache; the storage read
    rates of the runs (/io) below them."""
    io = io_bench.load_io_bench(io_paths) if io_paths else io_bench.load_io_bench([])
    reads = io_bench.run_read_rates(df) if "path" in df.columns else pd.DataFrame()
    for dim, title in (("format", "Data format"), ("storage", "Storage")):
        rep.section(f"{title}: input pipeline throughput")
        has_reads = not reads.empty and reads[dim].nunique() > 1
        if io.empty or io[dim].nunique() < 2:
            seen = ", ".join(sorted(io[dim].astype(str).unique())) if not io.empty else ""
            hint = (f"Input pipeline throughput per {dim} needs bench io files that compare two values "
                    f"of it{' (only ' + seen + ' here)' if seen else ''}: make them with `trainscale bench "
                    f"io --config FILE --set dataset.{dim}=... --out FILE.h5` and pass them with --io.")
            if not has_reads:
                rep.skip(hint)
                continue
            rep.para(hint, note=True)
        else:
            rel = io_bench.relative_throughput(io, dim)
            rep.figure(plots.plot_io_relative(rel, fig_dir / f"io_{dim}", dim),
                       f"Input pipeline samples/s (no training; `trainscale bench io`) per {dim}, relative to "
                       f"the fastest {dim} (1.0), page cache dropped (cold) or warm; median of the passes.")
            rep.table(rel, None)
        if has_reads:
            rep.para(f"Storage read rate of the training runs per {dim} (/io/read_bytes over /io/read_seconds: "
                     f"the seconds the loader threads spent in reads).")
            rep.table(reads.groupby([dim, "cache"], dropna=False)["read_mb_per_s"].median().reset_index(), None)


# The keys that tell asynchronous runs apart (docs/async.md).
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
        rep.skip(f"Every finished run computed on one GPU generation or device{on}, so there is "
                 f"no comparison across generations.")
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
        rep.skip("No finished run had unequal shares or an emulated slowdown (/partition), so there "
                 "is no per-batch worker table.")


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
