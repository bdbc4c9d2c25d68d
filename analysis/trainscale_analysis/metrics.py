"""Metrics over a campaign DataFrame (from load.load_campaigns); definitions in docs/analysis.md.

- loss area: trapezoid area under the training-loss curve over wall-clock time or samples;
- loss_area_winners: the SHM-Learn-Dist rule (discard curves whose minimum loss is above a
  threshold, then the smallest area wins, per worker count);
- scaling: throughput, speedup and parallel efficiency against workers, strong or weak, with
  an explicit baseline worker count; repetitions aggregated as median with min-max spread;
- relative performance of the values of any dimension against a baseline value;
- relative throughput across GPU generations (Salvaris et al.): images/s per generation
  relative to a baseline generation, per model and precision;
- time breakdown per phase and per-rank statistics from /timing.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import load, run_digest


def loss_area(x: np.ndarray, loss: np.ndarray) -> float:
    """Trapezoid area under `loss` over `x` (time in s, or samples).

    A curve with any non-finite loss (a diverged run) has an infinite area, so it can never
    win a smallest-area comparison. Fewer than two points: area 0 over an empty interval.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(loss, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"loss_area: x has shape {x.shape}, loss {y.shape}")
    if y.size and not np.all(np.isfinite(y)):
        return math.inf
    if y.size < 2:
        return 0.0
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) * 0.5))


def time_to_target(time: np.ndarray, accuracy: np.ndarray, target: float) -> float:
    """First evaluation time at which accuracy >= target; NaN if never reached."""
    time = np.asarray(time, dtype=np.float64)
    acc = np.asarray(accuracy, dtype=np.float64)
    hit = np.nonzero(acc >= target)[0]
    return float(time[hit[0]]) if hit.size else math.nan


def finished(df: pd.DataFrame) -> pd.DataFrame:
    """Runs with a result: status ok (diverged, failed and missing runs excluded)."""
    return df[df["status"] == "ok"]


def group_keys(df: pd.DataFrame, exclude: Iterable[str] = ()) -> list[str]:
    """Config columns that identify a configuration across its repetitions."""
    exclude = set(exclude) | {"seed"}
    return [c for c in load.config_columns(df) if c not in exclude]


def aggregate_repetitions(df: pd.DataFrame, metrics: Sequence[str],
                          keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Median, min and max of each metric over repetitions of the same configuration.

    Returns one row per configuration (values of `keys`, by default every config column but
    the seed) with columns `<m>` (median), `<m>_min`, `<m>_max` and `n` (runs aggregated).
    Only runs with status ok are aggregated.
    """
    ok = finished(df)
    keys = list(group_keys(df) if keys is None else keys)
    if ok.empty:
        return pd.DataFrame(columns=keys + [c for m in metrics for c in (m, f"{m}_min", f"{m}_max")] + ["n"])
    # groupby drops NaN keys by default; a column that is NaN for every run is no key at all.
    keys = [k for k in keys if ok[k].notna().any()]
    agg = {}
    for m in metrics:
        agg[m] = (m, "median")
        agg[f"{m}_min"] = (m, "min")
        agg[f"{m}_max"] = (m, "max")
    agg["n"] = ("run_id", "count")
    if not keys:
        out = ok.assign(_all=0).groupby("_all").agg(**agg).reset_index(drop=True)
        return out
    return ok.groupby(keys, dropna=False, sort=True).agg(**agg).reset_index()


def _stepped_with_workers(agg: pd.DataFrame, keys: Sequence[str]) -> set[str]:
    """The config columns `keys` that vary but take exactly one value per worker count."""
    if "workers" not in agg.columns or agg["workers"].nunique() < 2:
        return set()
    out = set()
    for c in keys:
        if c == "workers" or c not in agg.columns or agg[c].nunique(dropna=False) < 2:
            continue
        if (agg.groupby("workers")[c].nunique(dropna=False) == 1).all():
            out.add(c)
    return out


def _one_worker_baseline(agg: pd.DataFrame, row: pd.Series, keys: Sequence[str]) -> pd.DataFrame:
    """The 1-worker rows of `agg` that agree with `row` on `keys`."""
    cand = agg[agg["workers"] == 1]
    for k in keys:
        cand = cand[(cand[k] == row[k]) | (cand[k].isna() & pd.isna(row[k]))]
    return cand


def scaling(df: pd.DataFrame, metric: str = "images_per_s", mode: str = "weak",
            baseline_workers: int | None = None, by: Sequence[str] | str | None = None,
            lower_is_better: bool | None = None) -> pd.DataFrame:
    """Speedup and parallel efficiency against workers.

    mode='weak': configurations with the same batch_per_worker form one series (the problem
    grows with the workers); mode='strong': the same global batch (global_batch =
    batch_per_worker x workers) forms one series. Within a series, with N0 = baseline_workers
    (default: the smallest worker count of the series) and X the median metric over
    repetitions:
        speedup    S(N) = X(N) / X(N0)        for a rate (images/s; higher is better)
                   S(N) = X(N0) / X(N)        for a time (step time, time to target)
        efficiency E(N) = S(N) * N0 / N       (1.0 is ideal; S_ideal(N) = N / N0)
    Min/max of the metric over repetitions give `speedup_min`/`speedup_max`.
    `by` lists further columns that split series (e.g. 'dist.allreduce'); the other config
    columns must agree within a series, or they split it too — except columns stepped together
    with workers (each worker count has exactly one value, e.g. a sweep's zip of workers with
    threads: 1 x 2 threads vs 2 x 1 thread), which belong to the worker axis. A series without a
    run at a baseline of 1 worker takes the 1-worker run that matches it on every key but the
    dist.* ones (one worker exchanges nothing, so the all-reduce and strategy do not apply).
    """
    if mode not in ("weak", "strong"):
        raise ValueError(f"scaling: mode must be 'weak' or 'strong', not {mode!r}")
    if lower_is_better is None:
        lower_is_better = metric.startswith(("step_time", "time_to_target")) or \
            metric.endswith("_time")
    by = [by] if isinstance(by, str) else list(by or [])
    agg = aggregate_repetitions(df, [metric])
    if agg.empty or "workers" not in agg.columns:
        return agg.assign(speedup=[], efficiency=[], ideal_speedup=[], baseline_workers=[]) \
            if agg.empty else agg
    keys = group_keys(df)
    drop = {"workers", "global_batch", "batch_per_worker"} | _stepped_with_workers(agg, keys)
    series_keys = [c for c in keys if c in agg.columns and c not in drop]
    series_keys += ["batch_per_worker"] if mode == "weak" else ["global_batch"]
    for b in by:
        if b not in series_keys and b in agg.columns:
            series_keys.append(b)
    series_keys = [k for k in dict.fromkeys(series_keys) if k in agg.columns]
    parts = []
    for _, g in agg.groupby(series_keys, dropna=False, sort=True) if series_keys else [(0, agg)]:
        g = g.sort_values("workers").copy()
        n0 = baseline_workers if baseline_workers is not None else g["workers"].min()
        if baseline_workers is None and n0 > 1 and (agg["workers"] == 1).any():
            n0 = 1  # borrow the matching 1-worker run below, if there is one
        base = g[g["workers"] == n0]
        if base.empty and n0 == 1:
            base = _one_worker_baseline(agg, g.iloc[0], [k for k in series_keys if not k.startswith("dist.")])
            if not base.empty:
                borrowed = base.iloc[:1].copy()
                for k in series_keys:  # label it as the series' own dist.* settings
                    borrowed[k] = g.iloc[0][k]
                g = pd.concat([borrowed, g], ignore_index=True)
            elif baseline_workers is None:
                n0 = g["workers"].min()
                base = g[g["workers"] == n0]
        if base.empty:
            continue  # this series has no run at the baseline worker count
        x0 = float(base[metric].iloc[0])
        ratio = (lambda x: x0 / x) if lower_is_better else (lambda x: x / x0)
        g["baseline_workers"] = n0
        g["speedup"] = ratio(g[metric])
        lo, hi = ratio(g[f"{metric}_min"]), ratio(g[f"{metric}_max"])
        g["speedup_min"], g["speedup_max"] = np.minimum(lo, hi), np.maximum(lo, hi)
        g["ideal_speedup"] = g["workers"] / n0
        g["efficiency"] = g["speedup"] / g["ideal_speedup"]
        g["efficiency_min"] = g["speedup_min"] / g["ideal_speedup"]
        g["efficiency_max"] = g["speedup_max"] / g["ideal_speedup"]
        parts.append(g)
    out = pd.concat(parts, ignore_index=True) if parts else agg.iloc[0:0]
    out.attrs["series_keys"] = series_keys
    return out


def loss_area_winners(df: pd.DataFrame, threshold: float | None, by: str = "workers",
                      area: str = "loss_area_time") -> pd.DataFrame:
    """SHM-Learn-Dist selection (Table 5.1): per value of `by`, among runs with status ok,
    discard curves whose minimum training loss is above `threshold` (None: keep all), then
    the run with the smallest loss area wins.

    Returns one row per value of `by`: the winner's run_id, config_id and config columns,
    its `area` (column `loss_area`, plus the original column) and min_train_loss, and
    `candidates` (runs considered), `discarded_threshold` (runs dropped by the threshold),
    `discarded_status` (diverged/failed/missing runs). A value of `by` where every curve was
    discarded keeps its row with run_id None.
    """
    if by not in df.columns:
        raise KeyError(f"loss_area_winners: no column {by!r} in the campaign")
    if area not in df.columns:
        raise KeyError(f"loss_area_winners: no column {area!r}; use loss_area_time or "
                       f"loss_area_samples")
    keys = group_keys(df, exclude=[by])
    rows = []
    for value, g in df.groupby(by, dropna=False, sort=True):
        ok = g[(g["status"] == "ok") & np.isfinite(g[area].astype(float))]
        passed = ok if threshold is None else ok[ok["min_train_loss"] <= threshold]
        row = {by: value, "candidates": len(g), "discarded_status": len(g) - len(ok),
               "discarded_threshold": len(ok) - len(passed)}
        if passed.empty:
            row.update(run_id=None, config_id=None, loss_area=math.nan, min_train_loss=math.nan)
        else:
            win = passed.loc[passed[area].astype(float).idxmin()]
            row.update(run_id=win["run_id"], config_id=win.get("config_id"),
                       loss_area=float(win[area]), min_train_loss=float(win["min_train_loss"]))
            for k in keys:
                row[k] = win[k]
            row[area] = float(win[area])
            if "campaign" in win.index:
                row["campaign"] = win["campaign"]
        rows.append(row)
    out = pd.DataFrame(rows)
    lead = [by, "run_id", "config_id", "loss_area", "min_train_loss", "candidates",
            "discarded_threshold", "discarded_status"]
    return out[lead + [c for c in out.columns if c not in lead]]


def relative_performance(df: pd.DataFrame, dim: str, baseline, metric: str = "images_per_s",
                         lower_is_better: bool = False, by: str | None = None) -> pd.DataFrame:
    """Each value of `dim` against `baseline`, matched on every other configuration key.

    For every combination of the other varying config columns, the median metric of each
    value of `dim` is divided by the baseline's (a time is inverted so that > 1 is always
    better). Returns one row per value of `dim`: `relative` (median ratio over the matched
    combinations), `relative_min`, `relative_max`, `matched` (combinations compared) and
    `varies_with`: the varying keys not matched on because each takes one value per value of
    `dim` (they change with it, so the ratio is theirs as much as its).

    `by` (a column of `df` that is no configuration key, such as the device label of
    device_generation()): the ratios are taken and summarised within each of its values, one
    row per (by, value of `dim`), since a median over CPU and GPU matches describes neither.
    Groups where `dim` does not vary or the baseline has no finished run are left out.
    """
    if by is not None:
        return _relative_by(df, dim, baseline, metric, lower_is_better, by)
    agg = aggregate_repetitions(df, [metric])
    if dim not in agg.columns:
        raise KeyError(f"relative_performance: no column {dim!r}")
    varying = [c for c in load.varying(agg, group_keys(df)) if c != dim]
    others = [c for c in varying if not _describes(agg, c, dim)]
    varies_with = ", ".join(c for c in varying if c not in others)
    if not (agg[dim] == baseline).any():
        raise ValueError(f"relative_performance: baseline {dim}={baseline!r} has no finished "
                         f"run; values are {sorted(agg[dim].astype(str).unique())}")
    index = others if others else None
    # A key some runs leave unset (NaN: dist.partition keys of the equal-shares runs) is a value
    # of its own; pivot_table would drop every row holding a NaN in its index.
    agg = agg.assign(**{c: agg[c].astype(object).where(agg[c].notna(), "unset") for c in others})
    wide = agg.pivot_table(index=index, columns=dim, values=metric, aggfunc="median") \
        if index else agg.groupby(dim)[metric].median().to_frame().T
    base = wide[baseline]
    ratio = (base.values[:, None] / wide) if lower_is_better else wide.div(base, axis=0)
    rows = []
    for value in wide.columns:
        r = pd.to_numeric(ratio[value], errors="coerce").dropna()
        rows.append({dim: value, "relative": float(r.median()) if len(r) else math.nan,
                     "relative_min": float(r.min()) if len(r) else math.nan,
                     "relative_max": float(r.max()) if len(r) else math.nan,
                     "matched": int(len(r)), "baseline": baseline, "metric": metric,
                     "varies_with": varies_with})
    return pd.DataFrame(rows)


def _describes(agg: pd.DataFrame, key: str, dim: str) -> bool:
    """Whether `key` describes the values of `dim` rather than being a dimension of its own, so
    that matching on it would leave `dim` nothing to compare: it takes one value per value of
    `dim` (the runs that leave `dim` unset are a value too), or it is a parameter that only some
    values of `dim` set (dist.shares of static, dist.rebalance_steps of adaptive)."""
    per = agg.groupby(dim, dropna=False)[key]
    if (per.nunique(dropna=False) <= 1).all():
        return True
    unset = per.apply(lambda values: values.isna().all())
    return bool(unset.any() and not unset.all())


def _relative_by(df: pd.DataFrame, dim: str, baseline, metric: str, lower_is_better: bool,
                 by: str) -> pd.DataFrame:
    parts = []
    for value, group in df.groupby(by, sort=True):
        ok = finished(group)
        if ok[dim].nunique() < 2 or not (ok[dim] == baseline).any():
            continue
        rel = relative_performance(group.drop(columns=[by]), dim, baseline, metric,
                                   lower_is_better)
        parts.append(rel.assign(**{by: value}))
    columns = [by, dim, "relative", "relative_min", "relative_max", "matched", "baseline", "metric",
               "varies_with"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


# GPU generations oldest first (backend/gpu_generation.h); a run file's device_generation is one
# of them, "none" (a CPU backend) or "other" (a GPU of none of them).
GPU_GENERATIONS = ("k80", "p40", "p100", "v100", "a100", "h100", "h200")


def device_generation(df: pd.DataFrame) -> pd.Series:
    """What each run computed on, as the generations view groups it: the GPU generation the run
    file records (env.device_generation) when it is a known one, else the device's name
    (env.device_name: a GPU of another generation, or the CPU model of a CPU run), else the CPU
    model; None for runs without a file."""
    def label(row) -> str | None:
        gen = row.get("env.device_generation")
        if isinstance(gen, str) and gen in GPU_GENERATIONS:
            return gen
        for col in ("env.device_name", "env.cpu_model"):
            name = row.get(col)
            if isinstance(name, str) and name:
                return name
        return gen if isinstance(gen, str) and gen else None
    if df.empty:
        return pd.Series([], dtype=object, index=df.index)
    return df.apply(label, axis=1)


def generation_order(labels) -> list:
    """Known generations oldest first, then other device names alphabetically."""
    labels = {x for x in labels if isinstance(x, str)}
    return [g for g in GPU_GENERATIONS if g in labels] + sorted(labels - set(GPU_GENERATIONS))


def generation_throughput(df: pd.DataFrame, baseline: str | None = None,
                          metric: str = "images_per_s") -> pd.DataFrame:
    """Relative throughput across GPU generations (Salvaris et al.'s bars), per model and precision.

    Finished runs are labelled by device_generation(). Within each (model, precision), runs are
    matched on every other varying config key except the ones a generation changes by design
    (gpu, backend, threads); for each matched combination, the median `metric` over repetitions
    of each generation is divided by the baseline generation's. Returns one row per (model,
    precision, generation): `<metric>` (median over the generation's runs), `relative` (median
    ratio over the matched combinations), `relative_min`, `relative_max`, `matched`
    (combinations with a baseline run), `runs`, and `baseline`. The baseline defaults to the
    oldest generation present; a (model, precision) without a baseline run gets NaN ratios.
    """
    ok = finished(df).copy()
    ok["generation"] = device_generation(ok)
    ok = ok[ok["generation"].notna() & ok[metric].notna()]
    labels = generation_order(ok["generation"].unique())
    if not labels:
        return pd.DataFrame(columns=["model", "precision", "generation", metric, "relative",
                                     "relative_min", "relative_max", "matched", "runs", "baseline"])
    if baseline is None:
        baseline = labels[0]
    elif baseline not in labels:
        raise ValueError(f"--baseline generation={baseline}: no finished run computed on it; "
                         f"generations and devices are {', '.join(labels)}")
    by = [c for c in ("model", "precision") if c in ok.columns]
    ignore = set(by) | {"gpu", "backend", "threads", "seed", "generation"}
    match = [c for c in load.varying(ok, group_keys(ok)) if c not in ignore]
    keys = by + match + ["generation"]
    med = ok.groupby(keys, dropna=False, sort=False)[metric].agg(["median", "count"]).reset_index()
    rows = []
    for _, g in (med.groupby(by, dropna=False, sort=True) if by else [(None, med)]):
        ratios: dict[str, list[float]] = {label: [] for label in labels}
        for _, m in (g.groupby(match, dropna=False, sort=False) if match else [(None, g)]):
            base = m[m["generation"] == baseline]
            if base.empty:
                continue
            b = float(base["median"].iloc[0])
            for _, r in m.iterrows():
                ratios[r["generation"]].append(float(r["median"]) / b)
        for label in labels:
            sub = g[g["generation"] == label]
            if sub.empty:
                continue
            r = ratios[label]
            row = {k: sub.iloc[0][k] for k in by}
            row.update({"generation": label, metric: float(sub["median"].median()),
                        "relative": float(np.median(r)) if r else math.nan,
                        "relative_min": float(np.min(r)) if r else math.nan,
                        "relative_max": float(np.max(r)) if r else math.nan,
                        "matched": len(r), "runs": int(sub["count"].sum()), "baseline": baseline})
            rows.append(row)
    return pd.DataFrame(rows)


def time_breakdown(df: pd.DataFrame, phases: Sequence[str] = load.PHASES) -> pd.DataFrame:
    """Mean seconds per step per phase for every finished run (mean over ranks and over the
    steps after `warmup_steps`), plus `other` = step - sum(phases) where positive, and
    `step`. One row per run; phases a run does not record are 0."""
    rows = []
    for run in finished(df).to_dict("records"):
        if not run.get("path"):
            continue
        means = phase_means(run)
        if not means:
            continue
        row = {"run_id": run["run_id"], "config_id": run.get("config_id")}
        for p in phases:
            row[p] = means.get(p, 0.0)
        total = sum(row[p] for p in phases)
        row["step"] = means.get("step", total)
        row["other"] = max(row["step"] - total, 0.0)
        rows.append(row)
    return pd.DataFrame(rows)


def phase_means(run: Mapping[str, Any], rank: int | None = None) -> dict[str, float]:
    """Mean seconds per step of each /timing phase of a run after its `warmup_steps` (over all
    ranks, or of `rank` 0): from what read_run kept of the file (load.digest), else read."""
    warm = run_digest.warmup_of(run.get("warmup_steps"))
    d = load.digest(run)
    if d is not None and d.warmup_steps == warm:
        return dict(d.rank0_means if rank == 0 else d.timing_means)
    timing = load.load_timing(run)
    return {p: float(np.mean((a[warm:] if a.shape[0] > warm else a)[:, slice(None) if rank is None else rank]))
            for p, a in timing.items()}


def rank_statistics(timing: dict[str, np.ndarray], phase: str = "step",
                    warmup_steps: int = 0) -> pd.DataFrame:
    """Per-rank median, p90 and max of one phase over the steps after warm-up; `slowdown`
    is each rank's median over the median of all ranks' medians (stragglers > 1)."""
    a = timing[phase][warmup_steps:]
    med = np.median(a, axis=0)
    return pd.DataFrame({"rank": np.arange(a.shape[1]), "median": med,
                         "p90": np.percentile(a, 90, axis=0), "max": a.max(axis=0),
                         "slowdown": med / np.median(med)})
