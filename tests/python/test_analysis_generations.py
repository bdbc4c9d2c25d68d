"""The GPU-generation view of the report (Salvaris-style relative throughput): synthetic run files
of known images/s on three generations and one GPU of another generation, per model and
precision, written with the conftest's write_run; the ratios are known by construction."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import conftest as fx
from trainscale_analysis import load_campaigns, metrics, plots
from trainscale_analysis.report import build_report, choose_baseline

# (model, precision) -> device -> nominal images/s (median of the repetitions below).
DEVICES = {"v100": "Tesla V100-SXM2-32GB", "a100": "NVIDIA A100-SXM4-80GB",
           "h100": "NVIDIA H100 80GB HBM3", "other": "NVIDIA L40S"}
IPS = {
    ("resnet50", "fp32"): {"v100": 400.0, "a100": 800.0, "h100": 1400.0, "other": 600.0},
    ("resnet50", "fp16"): {"v100": 1000.0, "a100": 2500.0, "h100": 5000.0},
    ("vgg16", "fp32"): {"v100": 250.0, "a100": 500.0, "h100": 1000.0},
    ("vgg16", "fp16"): {"a100": 1200.0, "h100": 2400.0},   # no V100 run: no ratio vs v100
}
REPS = (0.98, 1.02)  # two repetitions around the nominal value: their median is the nominal


def make_generation_campaign(root: Path) -> Path:
    cdir = root / "generations"
    (cdir / "runs").mkdir(parents=True)
    for (model, precision), table in IPS.items():
        for gen, ips in table.items():
            cfg = fx.base_config(model=model, precision=precision, backend="cuda",
                                 gpu="any" if gen == "other" else gen,
                                 **{"dist.allreduce": "nccl"})
            cid = fx.config_id(cfg)
            for k, f in enumerate(REPS):
                cfg["seed"] = 10 + k
                run_id = f"{cid}-r{k}"
                fx.write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id,
                             campaign="generations", time=np.linspace(0, 10, 11),
                             loss=np.linspace(2.0, 1.0, 11), samples=np.arange(11) * 64,
                             summary=fx.summary_for(ips * f, 1, 1.0, False),
                             device_name=DEVICES[gen], device_generation=gen)
    # A run that failed on an H200 node: no file, so not a generation of the view.
    (cdir / "runs" / "deadbeef0000-r0.FAILED").write_text("reason: no CUDA device was found\n")
    return cdir


@pytest.fixture(scope="module")
def generations(tmp_path_factory) -> Path:
    return make_generation_campaign(tmp_path_factory.mktemp("gens"))


def row(rel: pd.DataFrame, model: str, precision: str, generation: str) -> pd.Series:
    r = rel[(rel.model == model) & (rel.precision == precision) & (rel.generation == generation)]
    assert len(r) == 1, rel
    return r.iloc[0]


def test_devices_are_labelled_by_generation_or_name(generations):
    df = load_campaigns(generations)
    labels = metrics.device_generation(metrics.finished(df))
    assert metrics.generation_order(labels.unique()) == ["v100", "a100", "h100", "NVIDIA L40S"]
    assert metrics.generation_order(["h200", "Xeon", "k80", None]) == ["k80", "h200", "Xeon"]


def test_relative_throughput_per_model_and_precision(generations):
    rel = metrics.generation_throughput(load_campaigns(generations))
    assert set(rel["baseline"]) == {"v100"}  # the oldest generation present
    expected = {("resnet50", "fp32"): {"v100": 1.0, "a100": 2.0, "h100": 3.5, "NVIDIA L40S": 1.5},
                ("resnet50", "fp16"): {"v100": 1.0, "a100": 2.5, "h100": 5.0},
                ("vgg16", "fp32"): {"v100": 1.0, "a100": 2.0, "h100": 4.0}}
    for (model, precision), table in expected.items():
        for gen, ratio in table.items():
            r = row(rel, model, precision, gen)
            assert r["relative"] == pytest.approx(ratio), (model, precision, gen)
            assert (r["matched"], r["runs"]) == (1, 2)
    r = row(rel, "resnet50", "fp32", "h100")
    assert r["images_per_s"] == pytest.approx(1400.0)
    # vgg16 fp16 has no V100 run: its rows are kept, without a ratio.
    for gen in ("a100", "h100"):
        r = row(rel, "vgg16", "fp16", gen)
        assert np.isnan(r["relative"]) and r["matched"] == 0
    assert len(rel) == 4 + 3 + 3 + 2


def test_baseline_generation_can_be_chosen(generations):
    df = load_campaigns(generations)
    rel = metrics.generation_throughput(df, baseline="a100")
    assert row(rel, "resnet50", "fp32", "v100")["relative"] == pytest.approx(0.5)
    assert row(rel, "vgg16", "fp16", "h100")["relative"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="generation=p100.*v100, a100, h100, NVIDIA L40S"):
        metrics.generation_throughput(df, baseline="p100")


def test_plot_written(generations, tmp_path):
    png = plots.plot_generations(load_campaigns(generations), tmp_path / "gens")
    assert png.stat().st_size > 1000 and png.with_suffix(".svg").exists()


def test_report_has_the_generations_view(generations, tmp_path):
    html, md = build_report([generations], tmp_path / "g.html")
    text, mdtext = html.read_text(), md.read_text()
    assert "Relative throughput across GPU generations" in text
    assert (tmp_path / "g_figures" / "generations.png").exists()
    assert "images/s on each GPU generation (or device) relative to v100" in text
    assert "| model | precision | generation | images_per_s | relative |" in mdtext
    assert "| resnet50 | fp32 | h100 | 1400 | 3.500 |" in mdtext  # the column's decimals
    assert "--baseline generation=NAME" in text  # vgg16 fp16 has no v100 run
    # `gpu` varied in the configs, but the generation section replaces its generic bars.
    assert "relative_gpu.png" not in text and not (tmp_path / "g_figures" / "relative_gpu.png").exists()
    html, md = build_report([generations], tmp_path / "a.html", baselines={"generation": "a100"})
    assert "| resnet50 | fp32 | v100 | 400 | 0.500 |" in md.read_text()


def test_report_omits_the_view_for_one_device(shared_report):
    html, _ = shared_report("scaling")
    text = html.read_text()
    assert "Relative throughput across GPU generations" in text
    assert "Every finished run computed on one GPU generation or device (Test CPU @ 2.0GHz)" in text
    assert html.with_name("scaling_figures").is_dir()
    assert not html.with_name("scaling_figures").joinpath("generations.png").exists()


def make_cpu_and_gpu_study(root: Path) -> Path:
    """Study 4's shape: a CPU part (lenet, fp32 and bf16, two storages) and a GPU part (resnet50,
    fp32, bf16 and fp16) in one report; images/s known by construction."""
    cdir = root / "study"
    (cdir / "runs").mkdir(parents=True)
    points = [("cpu", "lenet", "fp32", "local", 1000.0), ("cpu", "lenet", "bf16", "local", 1500.0),
              ("cpu", "lenet", "fp32", "nfs", 900.0), ("cpu", "lenet", "bf16", "nfs", 1350.0),
              ("cuda", "resnet50", "fp32", "local", 1000.0), ("cuda", "resnet50", "bf16", "local", 3000.0),
              ("cuda", "resnet50", "fp16", "local", 2500.0)]
    for backend, model, precision, storage, ips in points:
        cfg = fx.base_config(model=model, precision=precision, backend=backend,
                             **{"dataset.storage": storage})
        run_id = f"{fx.config_id(cfg)}-r0"
        gpu = backend == "cuda"
        fx.write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign="study",
                     time=np.linspace(0, 10, 11), loss=np.linspace(2.0, 1.0, 11),
                     samples=np.arange(11) * 64, summary=fx.summary_for(ips, 1, 1.0, False),
                     device_name=DEVICES["h100"] if gpu else "Test CPU @ 2.0GHz",
                     device_generation="h100" if gpu else "none")
    return cdir


def test_relative_bars_compare_within_each_device(tmp_path):
    """A median over CPU and GPU matches describes neither: with several devices, the ratios of
    each dimension are taken and summarised per device; a key that only tells the devices'
    parts apart (model, backend) is listed as not compared instead of drawn as empty bars."""
    df = load_campaigns(make_cpu_and_gpu_study(tmp_path)).assign(
        device=lambda d: metrics.device_generation(d))
    rel = metrics.relative_performance(df, "precision", "fp32", by="device")
    got = {(r.device, r.precision): (r.relative, r.relative_max, r.matched) for r in rel.itertuples()}
    assert got == {("Test CPU @ 2.0GHz", "bf16"): (pytest.approx(1.5), pytest.approx(1.5), 2),
                   ("Test CPU @ 2.0GHz", "fp32"): (1.0, 1.0, 2),
                   ("h100", "bf16"): (pytest.approx(3.0), pytest.approx(3.0), 1),
                   ("h100", "fp16"): (pytest.approx(2.5), pytest.approx(2.5), 1),
                   ("h100", "fp32"): (1.0, 1.0, 1)}
    # Pooled, the CPU's and the GPU's bf16 ratios would share one range.
    pooled = metrics.relative_performance(df.drop(columns=["device"]), "precision", "fp32")
    assert pooled.set_index("precision").loc["bf16", "relative_max"] == pytest.approx(3.0)
    storage = metrics.relative_performance(df, "dataset.storage", "local", by="device")
    assert list(storage["device"].unique()) == ["Test CPU @ 2.0GHz"]  # the GPU part has no nfs run
    assert storage.set_index("dataset.storage").loc["nfs", "relative"] == pytest.approx(0.9)
    html, md = build_report([tmp_path / "study"], tmp_path / "r.html")
    text = md.read_text()
    assert "| device | precision | relative | relative_min | relative_max | matched |" in text
    assert "| h100 | fp16 | 0.833 | 0.833 | 0.833 | 1 |" in text  # baseline bf16: 2500 / 3000 (3 decimals: the column's 1.000)
    # The default baseline is the first value every device ran: without the GPU's bf16 run,
    # fp32 (bf16 sorts first but would leave the GPU without bars).
    without = df[~((df["device"] == "h100") & (df["precision"] == "bf16"))]
    assert choose_baseline(without, "precision", {}, by="device") == "fp32"
    assert choose_baseline(without, "precision", {}) == "bf16"
    assert "matched on all other configuration keys within each device" in text
    assert "Not compared: backend, model (no two finished runs on one device differ in that key alone)" in text
    assert not (tmp_path / "r_figures" / "relative_model.png").exists()
