"""Storage, staging and the page cache of the training data, through the real binary
(docs/data.md "Storage: local and nfs", "Staging and the page cache", "Measuring the input
pipeline"). `nfs` is a real network mount: sshfs through an sshd on 127.0.0.1
(tests/python/sshfs_mount.py); the data are the first 512 / 128 samples of the real
Fashion-MNIST as raw IDX files (read sample by sample during training, tests/python/small_idx.py).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import time

import h5py
import numpy as np
import pytest

import sshfs_mount
from small_idx import write_small_idx
from test_cli_mpi import mpirun
from trainscale_cli import REPO, env, require_binary, run, write_config

BATCH = 32
SAMPLE_BYTES = 28 * 28 + 1  # an image and its label byte, read per sample

CONFIG = """\
model: lenet
dataset: {{name: fashion_mnist, root: {root}, storage: {storage}}}
batch_per_worker: 32
steps: {steps}
lr: 0.05
threads: 1
eval: {{every_epochs: 0}}
seed: 3
"""


@pytest.fixture
def data(tmp_path):
    return write_small_idx(tmp_path / "src")


@pytest.fixture
def nfs(tmp_path, data):
    """The data directory mounted over sshfs; unmounted at teardown, also after a failure."""
    reason = sshfs_mount.skip_reason()
    if reason:
        pytest.skip(reason)
    mount = sshfs_mount.SshfsMount.start(tmp_path / "nfs", data)
    try:
        yield mount
    finally:
        mount.stop()


def train(tmp_path, name, root, storage="local", steps=12, extra=()):
    cfg = write_config(tmp_path / f"{name}.yaml", CONFIG.format(root=root, storage=storage, steps=steps))
    out = tmp_path / f"out-{name}"
    proc = run(["run", "--config", cfg, "--out", out, *extra])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = sorted(out.glob("*.h5"))
    assert len(files) == 1, files
    return files[0], proc.stdout


def io_of(path):
    with h5py.File(path, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["io"].attrs.items()}
        return (f["train/loss"][:], f["summary"].attrs["params_sha256"], attrs, f["io/read_bytes"][:],
                f["io/read_seconds"][:], dict(f["summary"].attrs))


def test_nfs_over_sshfs_trains_bit_identically_to_local(tmp_path, data, nfs):
    local, _ = train(tmp_path, "local", data)
    remote, log = train(tmp_path, "nfs", nfs.mountpoint, storage="nfs")
    loss_l, sha_l, io_l, bytes_l, _, _ = io_of(local)
    loss_n, sha_n, io_n, bytes_n, seconds_n, _ = io_of(remote)
    assert np.array_equal(loss_l, loss_n) and sha_l == sha_n
    assert io_l["storage"] == "local" and io_l["file_system_network"] == 0
    assert io_n["storage"] == "nfs" and io_n["file_system"] == "fuse.sshfs" and io_n["file_system_network"] == 1
    assert "on storage nfs (fuse.sshfs)" in log and "warning" not in log
    # Every step's batch was read from storage: 32 samples x (image + label), on its one rank.
    assert bytes_n.shape == (12, 1) and (bytes_n == BATCH * SAMPLE_BYTES).all()
    assert (bytes_l == bytes_n).all() and (seconds_n > 0).all()


def test_nfs_naming_a_local_directory_warns_and_records_it(tmp_path, data):
    path, log = train(tmp_path, "fake-nfs", data, storage="nfs")
    assert "warning: dataset.storage nfs" in log and "not a network mount" in log
    _, _, io, _, _, _ = io_of(path)
    assert io["file_system_network"] == 0 and not io["file_system"].startswith("fuse")


def test_mount_that_disappears_mid_run_fails_naming_the_file(tmp_path, data, nfs):
    cfg = write_config(tmp_path / "long.yaml", CONFIG.format(root=nfs.mountpoint, storage="nfs", steps=100000))
    out = tmp_path / "out-long"
    proc = subprocess.Popen([str(require_binary()), "run", "--config", str(cfg), "--out", str(out),
                             "--set", "dataset.cache=cold"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(), cwd=REPO)
    try:
        for line in proc.stdout:  # the loop is running once the first progress line is out
            if line.startswith("step "):
                break
        nfs.kill_sshfs()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr
    assert str(nfs.mountpoint) in stderr and "ubyte" in stderr, stderr
    assert "Transport endpoint is not connected" in stderr or "Software caused connection abort" in stderr, stderr
    assert not list(out.glob("*.h5")), "a failed run left a run file"
    assert list(out.glob("*.FAILED")), "no FAILED marker"


def test_node_local_staging_copies_once_and_reads_the_copy(tmp_path, data):
    scratch = tmp_path / "scratch"
    stage = ["--set", "dataset.stage=node_local", "--set", f"dataset.stage_dir={scratch}"]
    plain, _ = train(tmp_path, "plain", data)
    first, log1 = train(tmp_path, "staged1", data, extra=stage)
    second, log2 = train(tmp_path, "staged2", data, extra=stage)
    assert "stage node_local (copied 4 files" in log1 and "stage node_local (reused 4 files" in log2
    loss_p, sha_p, _, _, _, _ = io_of(plain)
    for path in (first, second):
        loss, sha, io, read_bytes, _, summary = io_of(path)
        assert np.array_equal(loss, loss_p) and sha == sha_p
        assert pathlib.Path(io["staged_root"]).parent == scratch / "trainscale-stage"
        assert summary["stage_seconds"] > 0 and summary["total_seconds"] > summary["stage_seconds"]
        assert (read_bytes == BATCH * SAMPLE_BYTES).all()
    staged = pathlib.Path(io["staged_root"])
    assert sorted(p.name for p in staged.iterdir()) == sorted([p.name for p in data.iterdir()] +
                                                              [".trainscale-stage-complete"])
    # A changed source (new mtime) is copied again, not reused.
    label_file = data / "t10k-labels-idx1-ubyte"
    os.utime(label_file, (time.time() + 10, time.time() + 10))
    _, log3 = train(tmp_path, "staged3", data, extra=stage)
    assert "stage node_local (copied 4 files" in log3


def test_staging_from_nfs_matches_local(tmp_path, data, nfs):
    plain, _ = train(tmp_path, "plain", data)
    staged, log = train(tmp_path, "staged-nfs", nfs.mountpoint, storage="nfs",
                        extra=["--set", "dataset.stage=node_local", "--set", f"dataset.stage_dir={tmp_path / 'scratch'}"])
    assert "(fuse.sshfs), stage node_local (copied" in log
    assert np.array_equal(io_of(plain)[0], io_of(staged)[0])
    assert io_of(staged)[2]["file_system"] == "fuse.sshfs"


def test_staging_into_an_unwritable_directory_fails_naming_it(tmp_path, data):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the scratch directory should be")
    cfg = write_config(tmp_path / "c.yaml", CONFIG.format(root=data, storage="local", steps=2))
    proc = run(["run", "--config", cfg, "--out", tmp_path / "o", "--set", "dataset.stage=node_local",
                "--set", f"dataset.stage_dir={blocker}"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dataset.stage" in proc.stderr and str(blocker) in proc.stderr, proc.stderr


def test_cache_cold_and_warm_are_recorded(tmp_path, data):
    cold, log = train(tmp_path, "cold", data, extra=["--set", "dataset.cache=cold"])
    warm, _ = train(tmp_path, "warm", data)
    io_cold, io_warm = io_of(cold)[2], io_of(warm)[2]
    assert io_cold["cache"] == "cold" and io_cold["cache_ok"] == 1 and io_cold["cache_result"].startswith("dropped 4 files")
    assert io_warm["cache"] == "warm" and io_warm["cache_result"].startswith("read 4 files")
    assert "cache cold (dropped 4 files" in log


def test_two_ranks_of_one_node_stage_once(tmp_path, data):
    scratch = tmp_path / "scratch"
    cfg = write_config(tmp_path / "mpi.yaml", CONFIG.format(root=data, storage="local", steps=4) +
                       f"workers: 2\n")
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "o", "--set", "dataset.stage=node_local",
                      "--set", f"dataset.stage_dir={scratch}"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("(copied 4 files") == 1, proc.stdout
    copies = list((scratch / "trainscale-stage").iterdir())
    assert len(copies) == 1 and not copies[0].name.count(".tmp-"), copies
    with h5py.File(next((tmp_path / "o").glob("*.h5")), "r") as f:
        assert f["io/read_bytes"].shape == (4, 2) and (f["io/read_bytes"][:] == BATCH * SAMPLE_BYTES).all()
