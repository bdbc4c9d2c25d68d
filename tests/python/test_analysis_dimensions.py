"""The campaign's dimensions are the keys its sweep file varied (trainscale_analysis.dimensions):
derived keys (eval.batch resolved to the training batch, global_batch) are no dimensions and get
no effect credited; runs are listed in the order of the swept keys; numbers that YAML and the
run file spell differently (5e-04, 0.0005) are one value."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import conftest as fx
from trainscale_analysis import dimensions, load_campaigns
from trainscale_analysis.report import build_report, matrix_table

SWEEP = """\
campaign: swept
base: base.yaml
matrix:
  workers: [1, 2]
  precision: [fp32, bf16]
zip:
  bs_lr: {batch_per_worker: [128, 16], lr: [0.06, 0.03]}
include:
  - {dist.allreduce: tree}
repetitions: 1
"""
# images/s: bf16 twice fp32; the batch (and eval.batch, which follows it) changes nothing.
IPS = {"fp32": 1000.0, "bf16": 2000.0}


def write_point(cdir: Path, cfg: dict, campaign: str, status: str = "ok") -> str:
    run_id = f"{fx.config_id(cfg)}-r0"
    w = cfg["workers"]
    if status == "ok":
        ips = IPS[cfg["precision"]] * w
        fx.write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign=campaign,
                     time=np.linspace(0, 10, 11), loss=np.linspace(2.0, 0.5, 11),
                     samples=np.arange(11) * cfg["batch_per_worker"] * w,
                     summary=fx.summary_for(ips, w, 0.5, False))
    return run_id


def make_swept_campaign(root: Path, with_sweep: bool = True) -> Path:
    """workers x precision x (batch, lr) zipped, eval.batch = the batch, plus one include."""
    cdir = root / ("swept" if with_sweep else "unswept")
    (cdir / "runs").mkdir(parents=True)
    entries = []
    points = [(w, p, bs, lr) for w in (1, 2) for p in ("fp32", "bf16")
              for bs, lr in ((128, 0.06), (16, 0.03))]
    for i, (w, p, bs, lr) in enumerate(points):
        cfg = fx.base_config(workers=w, precision=p, batch_per_worker=bs, lr=lr,
                             **{"eval.batch": bs})
        run_id = write_point(cdir, cfg, cdir.name)
        entries.append({"index": i, "run_id": run_id, "config_id": run_id[:-3], "config": cfg})
    if with_sweep:
        (cdir / "sweep.yaml").write_text(SWEEP)
    (cdir / "manifest.yaml").write_text(yaml.safe_dump(
        {"campaign": cdir.name, "runs": entries}, sort_keys=False))
    return cdir


def test_sweep_keys_are_matrix_zip_and_include_keys(tmp_path):
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    assert dimensions.sweep_keys(tmp_path) == ["workers", "precision", "batch_per_worker", "lr",
                                               "dist.allreduce"]
    assert dimensions.sweep_keys(tmp_path / "nowhere") is None


def test_derived_keys_are_not_dimensions(tmp_path):
    df = load_campaigns(make_swept_campaign(tmp_path))
    assert df["eval.batch"].nunique() == 2 and df["global_batch"].nunique() == 4
    dims = dimensions.swept_dimensions(df)
    # dist.allreduce is swept (include) but did not vary among these runs: no dimension
    assert dims == ["workers", "precision", "batch_per_worker", "lr"]
    assert dimensions.derived_keys(df, dims) == ["eval.batch", "global_batch"]
    swept, constant, follow = matrix_table(df, dims)
    assert list(swept["key"]) == dims and list(follow["key"]) == ["eval.batch", "global_batch"]
    assert "eval.batch" not in set(constant["key"])


def test_without_a_sweep_file_copies_and_products_are_derived(tmp_path):
    df = load_campaigns(make_swept_campaign(tmp_path, with_sweep=False))
    dims = dimensions.swept_dimensions(df)
    assert set(dims) == {"workers", "precision", "batch_per_worker", "lr"}
    assert "eval.batch" not in dims and "global_batch" not in dims


def test_no_effect_is_credited_to_a_derived_key(tmp_path):
    camp = make_swept_campaign(tmp_path)
    html, md = build_report([camp], tmp_path / "r.html")
    text = md.read_text()
    relative = text.split("## Relative performance by dimension")[1].split("\n## ")[0]
    assert "precision" in relative and "eval.batch" not in relative
    assert "| fp32 | 0.500 | 0.500 | 0.500 | 4 |" in relative  # credited to precision (baseline bf16)
    assert not list((tmp_path / "r_figures").glob("relative_eval*"))
    assert not list((tmp_path / "r_figures").glob("relative_global*"))
    assert "Keys that follow the swept ones (not dimensions): eval.batch, global_batch" in text
    runs = text.split("## Runs")[1].split("\n## ")[0]
    header = runs.strip().splitlines()[0]
    assert "eval.batch" not in header and "global_batch" not in header


def runs_table(md_text: str) -> pd.DataFrame:
    block = md_text.split("## Runs")[1].split("\n\n")[1]
    lines = [l.strip("|").split("|") for l in block.strip().splitlines()]
    cols = [c.strip() for c in lines[0]]
    return pd.DataFrame([[c.strip() for c in l] for l in lines[2:]], columns=cols)


def test_runs_are_listed_in_swept_key_order_not_by_hash(tmp_path):
    camp = make_swept_campaign(tmp_path)
    _, md = build_report([camp], tmp_path / "r.html")
    runs = runs_table(md.read_text())
    got = list(zip(runs["workers"], runs["precision"], runs["batch_per_worker"]))
    # workers, then precision (text order), then the batch as a number (16 before 128)
    assert got == [("1", "bf16", "16"), ("1", "bf16", "128"), ("1", "fp32", "16"),
                   ("1", "fp32", "128"), ("2", "bf16", "16"), ("2", "bf16", "128"),
                   ("2", "fp32", "16"), ("2", "fp32", "128")]
    assert list(runs["run_id"]) != sorted(runs["run_id"])  # the old order would be this


def test_sort_runs_numbers_by_size_and_unset_last():
    df = pd.DataFrame({"a": [10, 9, None, 100], "run_id": ["w", "x", "y", "z"]})
    assert list(dimensions.sort_runs(df, ["a"])["run_id"]) == ["x", "w", "z", "y"]


def test_numbers_spelled_differently_are_one_value(tmp_path):
    """A failed run's config comes from manifest.yaml, where YAML reads `5e-04` (no dot) as
    text; the finished run's file says 0.0005. The matrix must not list two values."""
    cdir = tmp_path / "wd"
    (cdir / "runs").mkdir(parents=True)
    done = fx.base_config(workers=1, weight_decay=0.0005)
    run_ok = write_point(cdir, done, "wd")
    failed = fx.base_config(workers=2, weight_decay=0.0005)
    run_failed = f"{fx.config_id(failed)}-r0"
    (cdir / "runs" / f"{run_failed}.FAILED").write_text("reason: killed\n")
    manifest = yaml.safe_dump({"campaign": "wd", "runs": [
        {"index": 0, "run_id": run_ok, "config": done},
        {"index": 1, "run_id": run_failed, "config": failed}]}, sort_keys=False)
    manifest = manifest.replace("weight_decay: 0.0005", "weight_decay: 5e-04")
    assert "5e-04" in manifest and isinstance(yaml.safe_load(manifest)["runs"][1]["config"]
                                              ["weight_decay"], str)
    (cdir / "manifest.yaml").write_text(manifest)
    df = load_campaigns(cdir)
    assert list(df["weight_decay"]) == [0.0005, 0.0005]
    swept, constant, _ = matrix_table(df)
    assert "weight_decay" not in set(swept["key"])
    assert constant.set_index("key").loc["weight_decay", "value"] == "0.0005"


@pytest.mark.parametrize("values, expected", [
    (["5e-04", 0.0005, "0.00050"], [0.0005]),
    ([64, 64.0, "64"], [64]),
    (["ring", "tree", "ring"], ["ring", "tree"]),
    ([2, float("nan"), 1], [1, 2, None]),
])
def test_distinct_normalises_numbers(values, expected):
    assert dimensions.distinct(values) == expected


def test_a_zip_group_is_one_effect_credited_to_its_first_key(tmp_path):
    """salvaris's zip steps dataset.format with dataset.root: one dimension, so one set of
    bars (for the first key) and a note naming the others, not two sets of the same ratios."""
    cdir = tmp_path / "zipped"
    (cdir / "runs").mkdir(parents=True)
    for w in (1, 2):
        for p, root in (("fp32", "/data/a"), ("bf16", "/data/b")):
            write_point(cdir, fx.base_config(workers=w, precision=p, **{"dataset.root": root}), "zipped")
    (cdir / "sweep.yaml").write_text("campaign: zipped\nbase: b.yaml\nmatrix: {workers: [1, 2]}\n"
                                     "zip:\n  data: {precision: [fp32, bf16], dataset.root: [/data/a, /data/b]}\n")
    df = load_campaigns(cdir)
    dims = dimensions.swept_dimensions(df)
    assert dims == ["workers", "precision", "dataset.root"]
    assert dimensions.lockstep_followers(df, dims) == {"dataset.root": "precision"}
    html, md = build_report([cdir], tmp_path / "z.html")
    figs = sorted(p.name for p in (tmp_path / "z_figures").glob("relative_*.png"))
    assert figs == ["relative_precision.png"]
    assert "dataset.root was swept in lock-step with precision (one zip group)" in md.read_text()
