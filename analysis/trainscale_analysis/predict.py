"""Prediction files (schema trainscale-predict/1, `trainscale predict --out`) next to run files.

- `load_prediction(path)`: one DataFrame row per worker count (step, compute, comm,
  exposed_comm, data, throughput, scaling_efficiency) with the run's model, batch, all-reduce,
  overlap and the cluster's name, topology and mpi.allreduce as columns; with compression, its
  codec seconds (compress, decompress: parts of comm), wire_bytes and the model in words; with
  uneven workers, each rank's shares ("96,32"; the row's times are the slowest rank's).
- `comparison_report(predict_files, run_dirs, out)`: the section "predicted vs simulated vs
  measured": each run (a measured run file, or a `trainscale-sim` one: root attribute
  `simulated` = 1) beside the prediction of the same model, batch, all-reduce and worker count.
- `run_study(study, binary, out_dir)` + `study_report(...)`: a study file
  (configs/studies/*.yaml) predicted variant by variant, then tabulated and plotted: where each
  model is compute-bound and at how many nodes the network starts to dominate.
"""
from __future__ import annotations

import itertools
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

import h5py
import numpy as np
import pandas as pd
import yaml

from . import load
from .plots import plt, save
from .staged_files import StagedFiles

SCHEMA = "trainscale-predict/1"
PER_COUNT = ("workers", "nodes", "batch_per_worker", "step_time", "compute", "comm", "exposed_comm",
             "data", "forward", "backward", "update", "throughput", "scaling_efficiency")
COMPRESSION = ("compress", "decompress", "wire_bytes")
BOUNDS = ("compute", "memory", "network")


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def load_prediction(path: str | Path) -> pd.DataFrame:
    with h5py.File(path, "r") as f:
        schema = _text(f.attrs.get("schema", ""))
        if schema != SCHEMA:
            raise load.SchemaError(f"{path}: schema '{schema}' is not {SCHEMA} (a trainscale predict --out file)")
        config = yaml.safe_load(_text(f.attrs["config"]))
        cluster = yaml.safe_load(_text(f.attrs["cluster"]))
        p = f["predict"]
        df = pd.DataFrame({k: p[k][:] for k in PER_COUNT})
        # Compressed exchanges (files written before the model priced them lack these: 0).
        for k in COMPRESSION:
            df[k] = p[k][:] if k in p else 0.0
        # The communication thread's cores taken from backward (files before the model had it: 0).
        df["contention"] = p["contention"][:] if "contention" in p else 0.0
        # Waiting for the slowest of noisy workers (files before the model priced it: 0).
        df["straggle"] = p["straggle"][:] if "straggle" in p else 0.0
        df["compression"] = _text(p.attrs.get("compression", ""))
        # Uneven workers: "<workers>: 96,32" per line (the row's times are the slowest rank's).
        shares = dict(line.split(": ", 1) for line in _text(p.attrs.get("shares", "")).splitlines() if ": " in line)
        df["shares"] = [shares.get(str(w), "") for w in df["workers"]]
        bound = p["layer_bound"][:]
        layer_total = p["layer_fp"][:] + p["layer_bp_gc"][:] + p["layer_bp_wu"][:]
    net = cluster.get("interconnect", {})
    network = net["levels"][-1] if "levels" in net else net
    dist = config.get("dist", {})
    df["model"] = config["model"]
    df["allreduce"] = dist.get("allreduce", "ring")
    df["overlap"] = bool(dist.get("overlap", True))
    df["cluster"] = cluster["name"]
    df["topology"] = network.get("topology", "star")
    df["mpi_allreduce"] = cluster.get("mpi", {}).get("allreduce", "")
    df["path"] = str(path)
    # Share of the layers' time in compute-bound layers (the roofline bound of each layer).
    df["compute_bound_share"] = [(layer_total[i] * (bound[i] == 0)).sum() / max(layer_total[i].sum(), 1e-300)
                                 for i in range(len(df))]
    df["network_bound_layers"] = (bound == 2).sum(axis=1)
    return df


# ---- predicted vs simulated vs measured --------------------------------------------------------

def _runs(run_dirs: Iterable[str | Path]) -> pd.DataFrame:
    rows = []
    for d in run_dirs:
        d = Path(d)
        files = [d] if d.is_file() else sorted(d.rglob("*.h5"))
        for path in files:
            with h5py.File(path, "r") as f:
                if _text(f.attrs.get("schema", "")) != load.SCHEMA:
                    continue
                config = yaml.safe_load(_text(f.attrs["config"]))
                steps = f["timing/step"][:] if "timing/step" in f else None
                simulated = int(f.attrs.get("simulated", 0))
            if steps is None or len(steps) == 0:
                continue
            warm = min(5, len(steps) - 1)
            rows.append({"kind": "simulated" if simulated else "measured", "model": config["model"],
                         "workers": int(config.get("workers", 1)),
                         "batch_per_worker": int(config.get("batch_per_worker") or 0),
                         "allreduce": config.get("dist", {}).get("allreduce", "ring"),
                         "step_time": float(np.median(steps.max(axis=1)[warm:])), "path": str(path)})
    return pd.DataFrame(rows)


def comparison_table(predict_files: Sequence[str | Path], run_dirs: Sequence[str | Path]) -> pd.DataFrame:
    keys = ["model", "batch_per_worker", "allreduce", "workers"]
    pred = pd.concat([load_prediction(p) for p in predict_files], ignore_index=True) if predict_files else pd.DataFrame()
    runs = _runs(run_dirs)
    table = pred[keys + ["step_time"]].rename(columns={"step_time": "predicted"}) if len(pred) else pd.DataFrame(columns=keys)
    for kind in ("simulated", "measured"):
        part = runs[runs["kind"] == kind] if len(runs) else runs
        if len(part):
            med = part.groupby(keys, as_index=False)["step_time"].median().rename(columns={"step_time": kind})
            table = table.merge(med, on=keys, how="outer")
        else:
            table[kind] = np.nan
    for kind in ("simulated", "measured"):
        table[f"predicted/{kind}"] = table["predicted"] / table[kind]
    return table.sort_values(keys).reset_index(drop=True)


def comparison_report(predict_files, run_dirs, out: str | Path, title: str | None = None) -> Path:
    out = Path(out)
    table = comparison_table(predict_files, run_dirs)
    lines = [f"# {title or 'Predicted vs simulated vs measured'}", "",
             "Step time in ms: the model (`trainscale predict`), the simulator (`trainscale-sim`, run files "
             "with `simulated` = 1) and runs on hardware, matched by model, batch per worker, all-reduce and "
             "worker count (median step after 5 warm-up steps, slowest rank per step).", "",
             "| model | batch | all-reduce | workers | predicted | simulated | measured | pred/sim | pred/meas |",
             "|---|---|---|---|---|---|---|---|---|"]

    def ms(v):
        return "" if pd.isna(v) else f"{v * 1e3:.2f}"

    def ratio(v):
        return "" if pd.isna(v) else f"{v:.2f}"
    for _, r in table.iterrows():
        lines.append(f"| {r['model']} | {r['batch_per_worker']} | {r['allreduce']} | {r['workers']} | "
                     f"{ms(r['predicted'])} | {ms(r['simulated'])} | {ms(r['measured'])} | "
                     f"{ratio(r['predicted/simulated'])} | {ratio(r['predicted/measured'])} |")
    with StagedFiles(out.parent, out.name, files=[out.name]) as staged:  # all or nothing
        staged.path(out.name).write_text("\n".join(lines) + "\n")
        staged.commit()
    return out


# ---- studies -----------------------------------------------------------------------------------

def _variants(study: dict):
    topologies = study.get("topologies", {"default": []})
    for model, batch, (topo, sets), algo, overlap in itertools.product(
            study["models"], study["batch_per_worker"], topologies.items(), study.get("allreduce", [None]),
            study.get("overlap", [True])):
        yield {"model": model, "batch": batch, "topology": topo, "cluster_sets": list(sets),
               "mpi_allreduce": algo, "overlap": overlap}


def write_study(study_path: str | Path, binary: str | Path, out_dir: str | Path) -> Path:
    """run_study + study_report into `out_dir`, all or nothing (staged_files): the prediction
    files (files/), the figures, study.csv and README.md. Returns README.md's path."""
    out_dir = Path(out_dir)
    with StagedFiles(out_dir, "README.md", files=["study.csv", "README.md"]) as staged:
        study_report(run_study(study_path, binary, staged.stage), staged.stage, study_path)
        staged.commit()
    return out_dir / "README.md"


def run_study(study_path: str | Path, binary: str | Path, out_dir: str | Path, repo: str | Path = ".") -> list[dict]:
    """Runs `trainscale predict` for every variant of the study; returns the variants with `file`."""
    study = yaml.safe_load(Path(study_path).read_text())
    out_dir = Path(out_dir)
    (out_dir / "files").mkdir(parents=True, exist_ok=True)
    base = out_dir / "files" / "base.yaml"
    base.write_text(yaml.safe_dump(dict(study.get("base", {}), model=study["models"][0])))
    done = []
    for v in _variants(study):
        name = f"{v['model']}-b{v['batch']}-{v['topology']}-{v['mpi_allreduce']}-{'overlap' if v['overlap'] else 'serial'}"
        path = out_dir / "files" / f"{name}.h5"
        cmd = [str(binary), "predict", "--config", str(base), "--cluster", str(study["cluster"]),
               "--workers", str(study["workers"]), "--out", str(path), "--set", f"model={v['model']}",
               "--set", f"batch_per_worker={v['batch']}", "--set", f"dist.overlap={str(v['overlap']).lower()}"]
        if study.get("gemm_only"):
            cmd.append("--gemm-only")
        for s in v["cluster_sets"] + ([f"mpi.allreduce={v['mpi_allreduce']}"] if v["mpi_allreduce"] else []):
            cmd += ["--cluster-set", s]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=repo)
        if proc.returncode != 0:  # exit 2: the study asks for what predict refuses; else a failure (a full disk)
            error = ValueError if proc.returncode == 2 else RuntimeError
            raise error(f"trainscale predict failed for {name} ({proc.returncode}): {proc.stderr.strip()}")
        done.append(dict(v, file=str(path), name=name))
    return done


def study_frame(variants: list[dict]) -> pd.DataFrame:
    parts = []
    for v in variants:
        df = load_prediction(v["file"])
        df["variant_topology"] = v["topology"]
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def network_dominates_at(df: pd.DataFrame) -> float:
    """The smallest worker count whose exposed communication exceeds its compute (nan: none)."""
    hit = df[df["exposed_comm"] > df["compute"]]
    return float(hit["workers"].min()) if len(hit) else float("nan")


def _plot_efficiency(df: pd.DataFrame, out: Path, batch: int) -> Path:
    models = sorted(df["model"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.4), sharey=True, squeeze=False)
    for ax, model in zip(axes[0], models):
        part = df[(df["model"] == model) & (df["batch_per_worker"] == batch)]
        for (topo, algo, overlap), g in part.groupby(["topology", "mpi_allreduce", "overlap"]):
            g = g.sort_values("workers")
            ax.plot(g["workers"], g["scaling_efficiency"], marker=".", linestyle="-" if overlap else "--",
                    label=f"{algo} {topo}{'' if overlap else ' serial'}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{model}, batch {batch}")
        ax.set_xlabel("nodes")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("scaling efficiency")
    axes[0][-1].legend(fontsize=7)
    return save(fig, out)


def study_report(variants: list[dict], out_dir: str | Path, study_path: str | Path) -> Path:
    out_dir = Path(out_dir)
    df = study_frame(variants)
    study = yaml.safe_load(Path(study_path).read_text())
    figures = [_plot_efficiency(df, out_dir / f"efficiency_b{b}", b) for b in sorted(df["batch_per_worker"].unique())]
    lines = [f"# {study['name']}: the material's study, predicted", "",
             f"`python -m trainscale_analysis predict-study {study_path}` on `{study['cluster']}` "
             f"(workers {study['workers']}, {'conv and fc layers only' if study.get('gemm_only') else 'all layers'}); "
             "prediction files in `files/`.", "",
             "## Where the network starts to dominate", "",
             "Nodes at which the exposed all-reduce first exceeds the compute of a step (`-`: not up to "
             f"{int(df['workers'].max())}), and the scaling efficiency at {int(df['workers'].max())} nodes.", "",
             "| model | batch | compute-bound share of layer time (1 node) | step at 1 node (ms) | "
             "mst star | bkt star | mst mesh | bkt mesh | eff. bkt mesh overlap | eff. bkt star serial |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    top = df["workers"].max()
    for (model, batch), g in df.groupby(["model", "batch_per_worker"]):
        one = g[(g["workers"] == 1)].iloc[0]
        cells = []
        for algo, topo in (("mst", "star"), ("bkt", "star"), ("mst", "mesh"), ("bkt", "mesh")):
            part = g[(g["mpi_allreduce"] == algo) & (g["topology"] == topo)]
            ov = network_dominates_at(part[part["overlap"]])
            se = network_dominates_at(part[~part["overlap"]])
            cells.append(f"{'-' if np.isnan(ov) else int(ov)} / {'-' if np.isnan(se) else int(se)}")
        eff = lambda algo, topo, ov: g[(g["mpi_allreduce"] == algo) & (g["topology"] == topo) & (g["overlap"] == ov)
                                       & (g["workers"] == top)]["scaling_efficiency"].iloc[0]
        lines.append(f"| {model} | {batch} | {one['compute_bound_share'] * 100:.0f}% | {one['step_time'] * 1e3:.1f} | "
                     + " | ".join(cells) + f" | {eff('bkt', 'mesh', True):.2f} | {eff('bkt', 'star', False):.2f} |")
    lines += ["", "Cells: with overlap / without (serial).", ""]
    lines += [f"![{Path(f).stem}]({Path(f).name})" for f in figures]
    out = out_dir / "README.md"
    out.write_text("\n".join(lines) + "\n")
    df.drop(columns=["path"]).to_csv(out_dir / "study.csv", index=False)
    return out
