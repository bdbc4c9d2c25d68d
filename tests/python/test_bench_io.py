"""`trainscale bench io` (the input pipeline alone, cold and warm page cache) and the report's
"data format" and "storage" views built from the files it writes (docs/data.md "Measuring the
input pipeline", docs/analysis.md "Data format and storage"). Real data: raw IDX copies of
Fashion-MNIST, read locally and over a real sshfs mount (tests/python/sshfs_mount.py); the
synthetic format for a second format. No timing is asserted, only what was measured and how.
"""
from __future__ import annotations

import sys

import h5py
import numpy as np
import pytest

import sshfs_mount
from small_idx import write_small_idx
from trainscale_cli import REPO, run, write_config

sys.path.insert(0, str(REPO / "analysis"))
from trainscale_analysis import io_bench, report  # noqa: E402

STEPS = 6
BATCH = 16
CONFIG = """\
model: lenet
dataset: {{name: {name}, root: {root}, storage: {storage}, loader_threads: 2}}
batch_per_worker: 16
steps: 4
threads: 1
eval: {{every_epochs: 0}}
"""


def bench(tmp_path, tag, name="fashion_mnist", root="/nonexistent", storage="local", extra=()):
    cfg = write_config(tmp_path / f"{tag}.yaml", CONFIG.format(name=name, root=root, storage=storage))
    out = tmp_path / "bench" / f"{tag}.h5"
    out.parent.mkdir(exist_ok=True)
    proc = run(["bench", "io", "--config", cfg, "--out", out, "--repeats", 1, "--steps", STEPS, *extra])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, proc.stdout


@pytest.fixture
def data(tmp_path):
    return write_small_idx(tmp_path / "src")


def test_bench_io_writes_cold_and_warm_passes_with_the_config(tmp_path, data):
    path, log = bench(tmp_path, "idx", root=data)
    assert "cold" in log and "warm" in log
    with h5py.File(path, "r") as f:
        assert f.attrs["schema"] == "trainscale-io/1"
        assert f.attrs["format"] == "idx" and f.attrs["storage"] == "local" and f.attrs["loader_threads"] == 2
        assert "dataset:" in f.attrs["config"] and f["config"].attrs["dataset.root"] == str(data)
        assert list(f["io/cache"].asstr()[:]) == ["cold", "warm"]
        for key in ("samples_per_s", "mb_per_s", "seconds", "read_bytes", "read_seconds", "open_seconds"):
            assert f[f"io/{key}"].shape == (2,), key
        assert (f["io/read_bytes"][:] == STEPS * BATCH * (28 * 28 + 1)).all()
        assert (f["io/samples_per_s"][:] > 0).all() and (f["io/mb_per_s"][:] > 0).all()


def test_bench_io_of_unreadable_data_fails_naming_the_file(tmp_path):
    cfg = write_config(tmp_path / "bad.yaml", CONFIG.format(name="fashion_mnist", root=tmp_path / "none",
                                                           storage="local"))
    proc = run(["bench", "io", "--config", cfg, "--out", tmp_path / "x.h5"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert str(tmp_path / "none") in proc.stderr and not (tmp_path / "x.h5").exists()
    proc = run(["bench", "io", "--config", cfg])
    assert proc.returncode == 2 and "--out FILE.h5 is required" in proc.stderr


def test_report_has_data_format_and_storage_views_from_bench_io_files(tmp_path, data):
    bench(tmp_path, "idx-local", root=data)
    bench(tmp_path, "synthetic", name="synthetic")
    reason = sshfs_mount.skip_reason()
    mount = None if reason else sshfs_mount.SshfsMount.start(tmp_path / "nfs", data)
    try:
        if mount:
            bench(tmp_path, "idx-nfs", root=mount.mountpoint, storage="nfs")
        # Two training runs in one directory: the runs of the report, with their /io read metrics.
        runs = tmp_path / "runs"
        for tag, storage, root in (("train-local", "local", data),
                                   ("train-nfs", "nfs", mount.mountpoint if mount else data)):
            cfg = write_config(tmp_path / f"{tag}.yaml", CONFIG.format(name="fashion_mnist", root=root, storage=storage))
            proc = run(["run", "--config", cfg, "--out", runs])
            assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        if mount:
            mount.stop()

    io = io_bench.load_io_bench([tmp_path / "bench"])
    assert set(io["format"]) == {"idx", "synthetic"} and set(io["cache"]) == {"cold", "warm"}
    fmt = io_bench.relative_throughput(io, "format")
    for _, g in fmt.groupby(["cache"] + [c for c in ("storage",) if c in fmt.columns and fmt[c].nunique() > 1]):
        assert np.isclose(g["relative"].max(), 1.0) and (g["relative"] <= 1.0).all()
    if mount:
        storage = io_bench.relative_throughput(io[io["format"] == "idx"], "storage")
        assert set(storage["storage"]) == {"local", "nfs"}
        assert set(io[io["storage"] == "nfs"]["file_system"]) == {"fuse.sshfs"}

    html, md = report.build_report([runs], tmp_path / "report.html", io_paths=[tmp_path / "bench"])
    text = html.read_text()
    assert "Data format: input pipeline throughput" in text and "Storage: input pipeline throughput" in text
    figures = tmp_path / "report_figures"
    assert (figures / "io_format.png").exists()
    assert (figures / "io_storage.png").exists() == bool(mount)
    if mount:
        assert "Storage read rate of the training runs per storage" in text
