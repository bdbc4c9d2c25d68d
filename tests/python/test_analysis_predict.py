"""The analysis views of prediction files (trainscale_analysis/predict.py): `predict` puts a
prediction beside a measured run and a simulated one (a run file with `simulated` = 1) of the
same model, batch, all-reduce and worker count; `predict-study` runs a small study file through
the binary and writes its report; a file of another schema is an input error (exit 2)."""
import shutil

import h5py
import pandas as pd
import pytest

from trainscale_analysis import __main__ as cli
from trainscale_analysis import predict
from trainscale_cli import BINARY, REPO, require_binary, run, write_config

LENET = ("model: lenet\ndataset: {name: synthetic, synthetic_samples: 256}\nbatch_per_worker: 16\nsteps: 8\n"
         "threads: 1\neval: {every_epochs: 0}\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("predict")
    cfg = write_config(tmp / "lenet.yaml", LENET)
    pred = tmp / "lenet.h5"
    proc = run(["predict", "--config", cfg, "--cluster", REPO / "configs/clusters/local.yaml", "--workers", "1,2",
                "--out", pred])
    assert proc.returncode == 0, proc.stderr
    measured = tmp / "measured"
    proc = run(["run", "--config", cfg, "--out", measured], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    simulated = tmp / "simulated"
    simulated.mkdir()
    for f in measured.glob("*.h5"):
        shutil.copy(f, simulated / f.name)
        with h5py.File(simulated / f.name, "r+") as h:
            h.attrs["simulated"] = 1
            h["timing/step"][...] = h["timing/step"][...] * 2  # a simulator that is twice as slow
    return tmp, pred, measured, simulated


def test_load_prediction(files):
    _, pred, _, _ = files
    df = predict.load_prediction(pred)
    assert list(df["workers"]) == [1, 2]
    assert set(df["model"]) == {"lenet"} and set(df["cluster"]) == {"local"}
    assert (df["step_time"] > 0).all() and df["scaling_efficiency"].iloc[0] == pytest.approx(1.0)
    assert ((df["compute_bound_share"] >= 0) & (df["compute_bound_share"] <= 1)).all()
    assert (df["wire_bytes"] == 0).all() and set(df["compression"]) == {""}  # an uncompressed run
    assert set(df["shares"]) == {""}  # equal workers


def test_load_prediction_of_uneven_workers(tmp_path):
    text = LENET + "workers: 2\ndist: {partition: static, shares: [24, 8], emulate_slowdown: {rank: 1, factor: 5}}\n"
    cfg = write_config(tmp_path / "uneven.yaml", text)
    pred = tmp_path / "uneven.h5"
    proc = run(["predict", "--config", cfg, "--cluster", REPO / "configs/clusters/local.yaml", "--workers", "2",
                "--out", pred])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    df = predict.load_prediction(pred)
    assert list(df["shares"]) == ["24,8"]
    assert list(df["batch_per_worker"]) == [8]  # the slowed rank's share: the slowest step


def test_predicted_vs_simulated_vs_measured(files):
    tmp, pred, measured, simulated = files
    out = tmp / "compare.md"
    assert cli.main(["predict", str(pred), "--runs", str(measured), "--runs", str(simulated), "-o", str(out)]) == 0
    table = predict.comparison_table([pred], [measured, simulated])
    one = table[table["workers"] == 1].iloc[0]
    assert one["measured"] > 0 and one["simulated"] == pytest.approx(2 * one["measured"], rel=1e-6)
    assert one["predicted/measured"] == pytest.approx(one["predicted"] / one["measured"])
    assert pd.isna(table[table["workers"] == 2].iloc[0]["measured"])  # predicted only
    text = out.read_text()
    assert "| lenet | 16 | ring | 1 |" in text and "pred/meas" in text


def test_study(tmp_path):
    require_binary()
    study = write_config(tmp_path / "study.yaml", f"""name: tiny
cluster: {REPO / 'configs/clusters/skylake-8180m.yaml'}
workers: "1..4"
gemm_only: true
base: {{dataset: {{name: synthetic}}, threads: 56, steps: 1, dist: {{allreduce: mpi}}}}
models: [lenet]
batch_per_worker: [8]
topologies: {{star: [], mesh: ["interconnect.topology=mesh", "interconnect.dims=[32,32]"]}}
allreduce: [mst, bkt]
overlap: [true, false]
""")
    out = tmp_path / "report"
    assert cli.main(["predict-study", str(study), "--binary", str(BINARY), "--out", str(out)]) == 0
    df = pd.read_csv(out / "study.csv")
    assert len(df) == 2 * 2 * 2 * 3  # topologies x algorithms x overlap x worker counts
    assert set(df["mpi_allreduce"]) == {"mst", "bkt"} and set(df["topology"]) == {"star", "mesh"}
    text = (out / "README.md").read_text()
    assert "| lenet | 8 |" in text and (out / "efficiency_b8.png").exists()


def test_wrong_schema_is_an_input_error(files, tmp_path):
    _, _, measured, _ = files
    run_file = next(measured.glob("*.h5"))
    assert cli.main(["predict", str(run_file), "-o", str(tmp_path / "x.md")]) == 2
