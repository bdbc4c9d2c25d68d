"""Study 8, the effect of the network (configs/studies/network.yaml; scripts/study_network.py):
the same runs on 1 and on 2 hosts of the test bed, one campaign per link rate (`network_<rate>`),
with the model's and the simulator's steps for the multi-host points.

- `network_frame(campaigns, links)`: one row per model, link and worker count: the median
  images/s and step over the repetitions (and their spread), the link's measured rate.
- `network_study_report(campaigns, predictions, links, out_dir)`: `network_study.md` (throughput
  relative to the unshaped link, scaling efficiency = images/s of N hosts / (N x 1 host's) at the
  same link, measured beside predicted and simulated steps), `network_study.csv` and the figure
  `network_efficiency.png` (efficiency against the link rate per model, measured, model, simulator).
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from . import load
from .plots import plt, save
from .staged_files import StagedFiles

RATE_ORDER = ("1", "2.5", "10", "25", "40", "100", "off")


def _rate_of(campaign: str) -> str:
    if not campaign.startswith("network_"):
        raise ValueError(f"campaign {campaign!r} is not one of study 8's (network_<rate>)")
    return campaign[len("network_"):]


def _rate_key(rate: str) -> tuple[int, float]:
    return (1, 0.0) if rate == "off" else (0, float(rate))


def network_frame(campaigns: Sequence[str | Path], links: dict) -> pd.DataFrame:
    df = load.load_campaigns(campaigns)
    df = df[df["status"] == "ok"].copy()
    if df.empty:
        raise ValueError("no finished runs in " + ", ".join(map(str, campaigns)))
    df["link"] = df["campaign"].map(_rate_of)
    df["workers"] = pd.to_numeric(df["workers"])
    rows = []
    for (model, link, workers), g in df.groupby(["model", "link", "workers"]):
        ips = g["images_per_s"].astype(float)
        rows.append({"model": model, "link": link, "workers": int(workers), "runs": len(g),
                     "images_per_s": float(ips.median()), "images_per_s_spread": float((ips.max() - ips.min()) / ips.median()),
                     "step_s": float(g["step_time_median"].astype(float).median()),
                     "link_measured_gbps": links.get(link, {}).get("iperf3_gbps", np.nan)})
    out = pd.DataFrame(rows)
    one = out[out["workers"] == 1].set_index(["model", "link"])["images_per_s"]
    out["efficiency"] = [r.images_per_s / (r.workers * one.get((r.model, r.link), np.nan)) for r in out.itertuples()]
    unshaped = out[out["link"] == "off"].set_index(["model", "workers"])["images_per_s"]
    out["relative_to_unshaped"] = [r.images_per_s / unshaped.get((r.model, r.workers), np.nan) for r in out.itertuples()]
    out["rate_key"] = out["link"].map(_rate_key)
    return out.sort_values(["model", "workers", "rate_key"]).drop(columns="rate_key").reset_index(drop=True)


def _with_predictions(frame: pd.DataFrame, predictions: list[dict]) -> pd.DataFrame:
    pred = pd.DataFrame(predictions).rename(columns={"rate": "link"})
    if pred.empty:
        return frame.assign(predicted_step_s=np.nan, simulated_step_s=np.nan, predicted_efficiency=np.nan,
                            simulated_efficiency=np.nan)
    pred["link"] = pred["link"].astype(str)
    merged = frame.merge(pred, on=["model", "link", "workers"], how="left")
    one_step = frame[frame["workers"] == 1].set_index(["model", "link"])["step_s"]
    for kind in ("predicted", "simulated"):
        # Efficiency of the prediction at equal batch per worker: the measured one-host step over the predicted step.
        merged[f"{kind}_efficiency"] = [one_step.get((r.model, r.link), np.nan) / getattr(r, f"{kind}_step_s")
                                        for r in merged.itertuples()]
    return merged


def _figure(df: pd.DataFrame, out: Path) -> Path:
    multi = df[df["workers"] > 1]
    links = sorted(multi["link"].unique(), key=_rate_key)
    x = np.arange(len(links))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, (model, g) in enumerate(multi.groupby("model")):
        g = g.set_index("link").reindex(links)
        color = f"C{i}"
        ax.plot(x, g["efficiency"], "o-", color=color, label=f"{model} measured")
        ax.plot(x, g["predicted_efficiency"], "s--", color=color, alpha=0.7, label=f"{model} model")
        ax.plot(x, g["simulated_efficiency"], "^:", color=color, alpha=0.7, label=f"{model} simulator")
    ax.set_xticks(x, [f"{l} Gbit/s" if l != "off" else "unshaped" for l in links])
    ax.set_ylabel("scaling efficiency, 2 hosts")
    top = np.nanmax(multi[["efficiency", "predicted_efficiency", "simulated_efficiency"]].to_numpy(dtype=float))
    ax.set_ylim(0, max(1.1, top + 0.05))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    return save(fig, out / "network_efficiency")


def network_study_report(campaigns: Sequence[str | Path], predictions_path: str | Path, links_path: str | Path,
                         out_dir: str | Path, title: str | None = None) -> str:
    out = Path(out_dir)
    links = json.loads(Path(links_path).read_text())
    predictions = json.loads(Path(predictions_path).read_text())
    df = _with_predictions(network_frame(campaigns, links), predictions)
    with StagedFiles(out, "network_study.md", files=["network_study.csv", "network_study.md"]) as staged:
        df.to_csv(staged.path("network_study.csv"), index=False)
        figure = _figure(df, staged.stage)
        staged.path("network_study.md").write_text("\n".join(_report_lines(df, links, figure, title)))
        staged.commit()
    return str(out / "network_study.md")


def _report_lines(df: pd.DataFrame, links: dict, figure: Path, title: str | None) -> list[str]:
    lines = [f"# {title or 'The effect of the network: 1 and 2 hosts of the test bed over shaped links'}", "",
             "Measured: median of the repetitions (spread = (max - min) / median). Efficiency = images/s on N hosts / "
             "(N x images/s on 1 host) at the same link. Model and simulator: `trainscale predict` and `trainscale-sim` "
             "on the bed's cluster file calibrated at that link rate.", "",
             "| link | iperf3 Gbit/s | calibrated alpha us | calibrated Gbit/s |", "|---|---|---|---|"]
    for link in sorted(links, key=_rate_key):
        v = links[link]
        lines.append(f"| {link} | {v['iperf3_gbps']:.2f} | {v['alpha_us']:.1f} | {v['bandwidth_gbps']:.2f} |")
    lines += ["", "| model | link | hosts | images/s (spread) | vs unshaped | efficiency | measured step ms | "
                  "model ms (efficiency) | simulator ms (efficiency) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        pred = "" if np.isnan(r.predicted_step_s) else f"{r.predicted_step_s * 1e3:.1f} ({r.predicted_efficiency:.2f})"
        sim = "" if np.isnan(r.simulated_step_s) else f"{r.simulated_step_s * 1e3:.1f} ({r.simulated_efficiency:.2f})"
        lines.append(f"| {r.model} | {r.link} | {r.workers} | {r.images_per_s:.0f} ({r.images_per_s_spread * 100:.0f}%) | "
                     f"{r.relative_to_unshaped:.2f} | {r.efficiency:.2f} | {r.step_s * 1e3:.1f} | {pred} | {sim} |")
    multi = df[(df["workers"] > 1) & df["predicted_step_s"].notna()]
    if not multi.empty:
        err = lambda col: statistics.median(abs(multi[col] - multi["step_s"]) / multi["step_s"]) * 100  # noqa: E731
        lines += ["", f"Median |error| of the multi-host steps: model {err('predicted_step_s'):.1f}%, "
                      f"simulator {err('simulated_step_s'):.1f}% ({len(multi)} points)."]
    lines += ["", f"![scaling efficiency against the link]({figure.name})", ""]
    return lines
