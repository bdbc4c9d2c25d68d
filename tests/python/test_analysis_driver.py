"""trainscale_analysis on run files the C++ driver writes (build/bin/trainscale): a tiny
synthetic-data campaign of three runs, one of them diverging, loaded, ranked and reported."""
import math

import h5py
import numpy as np
import pytest

from trainscale_analysis import load_campaigns, loss_area_winners
from trainscale_analysis.report import build_report
from trainscale_cli import run, write_config

TINY = """\
model: mlp
dataset: {name: synthetic, format: synthetic, synthetic_samples: 512}
batch_per_worker: 32
lr: 0.05
momentum: 0.9
steps: 20
threads: 1
eval: {every_epochs: 0}
"""


@pytest.fixture(scope="module")
def driver_campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("driver")
    cfg = write_config(tmp / "tiny.yaml", TINY)
    out = tmp / "out"
    for lr, code in (("0.01", 0), ("0.05", 0), ("1.0e+12", 3)):
        proc = run(["run", "--config", cfg, "--out", out, "--set", f"lr={lr}"])
        assert proc.returncode == code, proc.stdout + proc.stderr
    return out


def trapezoid(x, y):
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


def test_driver_files_load(driver_campaign):
    df = load_campaigns([driver_campaign])
    assert len(df) == 3
    assert sorted(df["status"]) == ["diverged", "ok", "ok"]
    assert df["workers"].eq(1).all() and df["batch_per_worker"].eq(32).all()
    assert set(df["lr"]) == {0.01, 0.05, 1.0e12}
    assert df["dist.allreduce"].notna().all()
    ok = df[df.status == "ok"]
    assert (ok["images_per_s"] > 0).all()
    assert ok["env.mpi_flavor"].isin(["openmpi", "mpich"]).all()
    for _, r in ok.iterrows():
        with h5py.File(r["path"]) as f:
            t, s = f["train/time"][:], f["train/samples"][:].astype(float)
            loss = f["train/loss"][:].astype(float)
        assert r["loss_area_time"] == pytest.approx(trapezoid(t, loss), rel=1e-9)
        assert r["loss_area_samples"] == pytest.approx(trapezoid(s, loss), rel=1e-9)
    assert df[df.status == "diverged"]["loss_area_time"].iloc[0] == math.inf


def test_driver_winner_and_report(driver_campaign, tmp_path):
    df = load_campaigns([driver_campaign])
    win = loss_area_winners(df, threshold=None)
    ok = df[df.status == "ok"]
    assert len(win) == 1
    assert win["run_id"].iloc[0] == ok.loc[ok["loss_area_time"].idxmin(), "run_id"]
    html, md = build_report([driver_campaign], tmp_path / "driver.html")
    text = html.read_text()
    assert "diverged" in text and "data:image/png;base64," in text and md.exists()
