"""Two campaigns side by side: matched configurations and the ratio B / A of each metric.

Runs are matched on the configuration keys that vary inside either campaign (workers, batch,
LR, algorithm, ...); keys that are constant inside each campaign but differ between them (the
cluster, MPI flavor, precision, ... being compared) are listed separately as what changed.
Repetitions are aggregated to their median first. Ratios are B / A, so for images/s a ratio
above 1 means B is faster and for times a ratio below 1 means B is faster.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import load, metrics, plots, report  # noqa: E402

COMPARE_METRICS = ("images_per_s", "step_time_median", "time_to_target", "final_accuracy",
                   "loss_area_time", "min_train_loss")


def differing_keys(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Config keys constant inside each campaign whose value differs between them."""
    rows = []
    keys = [k for k in metrics.group_keys(a) if k in b.columns]
    for k in keys:
        va, vb = a[k].dropna().astype(str).unique(), b[k].dropna().astype(str).unique()
        if len(va) == 1 and len(vb) == 1 and va[0] != vb[0]:
            rows.append({"key": k, "A": va[0], "B": vb[0]})
    for k in sorted(set(metrics.group_keys(a)) ^ set(metrics.group_keys(b))):
        rows.append({"key": k, "A": ", ".join(a[k].dropna().astype(str).unique())
                     if k in a.columns else "(absent)",
                     "B": ", ".join(b[k].dropna().astype(str).unique())
                     if k in b.columns else "(absent)"})
    return pd.DataFrame(rows, columns=["key", "A", "B"])


def compare_frames(a: pd.DataFrame, b: pd.DataFrame,
                   metric_names: Sequence[str] = COMPARE_METRICS) -> pd.DataFrame:
    """One row per configuration present in both: `<m>_A`, `<m>_B`, `<m>_ratio` (B / A)."""
    common = [k for k in metrics.group_keys(a) if k in b.columns]
    match = sorted(set(load.varying(a, common)) | set(load.varying(b, common)),
                   key=common.index)
    match = [k for k in match if k != "global_batch" or "batch_per_worker" not in match]
    mets = [m for m in metric_names if m in a.columns and m in b.columns]
    agg_a = metrics.aggregate_repetitions(a, mets, match)
    agg_b = metrics.aggregate_repetitions(b, mets, match)
    if match:
        m = agg_a[match + mets].merge(agg_b[match + mets], on=match, suffixes=("_A", "_B"))
    else:
        m = pd.concat([agg_a[mets].add_suffix("_A"), agg_b[mets].add_suffix("_B")], axis=1)
    for met in mets:
        m[f"{met}_ratio"] = m[f"{met}_B"] / m[f"{met}_A"]
    m.attrs["match_keys"] = match
    return m


def compare_campaigns(a: str | Path, b: str | Path) -> pd.DataFrame:
    """Load two campaign directories and compare them (see compare_frames)."""
    return compare_frames(load.load_campaigns([a]), load.load_campaigns([b]))


def build_compare_report(a: str | Path, b: str | Path, out_html: str | Path,
                         title: str | None = None) -> tuple[Path, Path]:
    out_html = Path(out_html)
    da, db = load.load_campaigns([a]), load.load_campaigns([b])
    na = ", ".join(sorted(da["campaign"].dropna().unique().tolist())) or str(a)
    nb = ", ".join(sorted(db["campaign"].dropna().unique().tolist())) or str(b)
    title = title or f"trainscale comparison: {na} (A) vs {nb} (B)"
    with report.StagedOutput(out_html) as out:  # all or nothing, as the report
        return _write_compare(out, a, b, da, db, title)


def _write_compare(out: "report.StagedOutput", a: str | Path, b: str | Path, da: pd.DataFrame, db: pd.DataFrame,
                   title: str) -> tuple[Path, Path]:
    out_html = out.html
    fig_dir = out.stage_figures
    rep = report.Report(title, fig_dir, out.figures.name, output=out)
    rep.settings = set(load.config_columns(da)) | set(load.config_columns(db))
    rep.para(f"A = {a} ({len(da)} runs), B = {b} ({len(db)} runs). Ratios are B / A: above "
             f"1 for images/s means B is faster; below 1 for times means B is faster.")
    rep.section("What differs")
    diff = differing_keys(da, db)
    if diff.empty:
        rep.para("No configuration key differs between the two campaigns; only the "
                 "environment may.", note=True)
    else:
        rep.table(diff, None)
    rep.section("Matched configurations")
    cmp = compare_frames(da, db)
    match = cmp.attrs.get("match_keys", [])
    if cmp.empty:
        rep.para("No configuration has finished runs in both campaigns.", note=True)
    else:
        cols = match + [c for m in COMPARE_METRICS for c in (f"{m}_A", f"{m}_B", f"{m}_ratio")
                        if c in cmp.columns]
        rep.table(cmp[cols], None)
        ratios = cmp["images_per_s_ratio"].dropna() if "images_per_s_ratio" in cmp else []
        if len(ratios):
            rep.para(f"images/s ratio B/A: median {np.median(ratios):.3g}, min "
                     f"{np.min(ratios):.3g}, max {np.max(ratios):.3g} over {len(ratios)} "
                     f"matched configurations.")
            rep.figure(plot_ratios(cmp, match, fig_dir / "compare_images_per_s"),
                       "images/s of B relative to A per matched configuration.")
    rep.section("Environment")
    rows = []
    for name, d in (("A", da), ("B", db)):
        for c in report.ENV_COLUMNS:
            if c in d.columns:
                rows.append({"campaign": name, "attribute": c.removeprefix("env."),
                             "values": ", ".join(report.fmt(v) for v in report.values_of(d, c))})
    rep.table(pd.DataFrame(rows), None)
    return rep.write(out_html)


def plot_ratios(cmp: pd.DataFrame, match: Sequence[str], out) -> Path:
    labels = [plots.label_of(r, list(match)) for _, r in cmp.iterrows()]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(cmp) + 1.5))
    vals = cmp["images_per_s_ratio"].to_numpy()
    ax.barh(range(len(cmp)), vals, color=["#55a868" if v >= 1 else "#c44e52" for v in vals])
    ax.axvline(1.0, color="k", ls="--", lw=1)
    ax.set_yticks(range(len(cmp)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("images/s ratio B / A")
    fig.tight_layout()
    return plots.save(fig, out)
