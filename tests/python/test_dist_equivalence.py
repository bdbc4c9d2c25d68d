"""Data-parallel training end to end under the MPI launcher of the binary's flavor:
`trainscale run` on N ranks x batch b follows the loss trajectory of 1 rank x batch N*b (sync
with ring and with shm (the gradient arena in shared memory, summed in place), for 2 and 4
ranks, oversubscribed; weight_avg with period 1 and plain SGD; the parameter server), the ps
phases are recorded, the shm window settings are recorded, and global_batch with linear LR
scaling and warm-up (Goyal et al.) set the per-worker batch and the LR series."""
import h5py
import numpy as np
import pytest

from test_cli_mpi import mpirun
from trainscale_cli import run, write_config

BASE = """\
model: mlp
dataset: {{name: synthetic, format: synthetic, synthetic_samples: 2048}}
batch_per_worker: {batch}
lr: 0.05
momentum: {momentum}
weight_decay: 0.0005
steps: 10
threads: 1
workers: {workers}
dist: {{strategy: {strategy}, allreduce: {allreduce}, overlap: {overlap}, bucket_mb: 0.05{period}{shm}}}
eval: {{every_epochs: 0}}
log_every: 5
seed: 5
"""


def config(tmp_path, name, batch, workers, strategy="sync", allreduce="ring", overlap="true", momentum=0.9,
           period=None, shm=""):
    text = BASE.format(batch=batch, workers=workers, strategy=strategy, allreduce=allreduce, overlap=overlap,
                       momentum=momentum, period="" if period is None else f", period: {period}", shm=shm)
    return write_config(tmp_path / f"{name}.yaml", text)


def train(tmp_path, name, ranks, cfg):
    out = tmp_path / name
    proc = mpirun(ranks, ["run", "--config", cfg, "--out", out]) if ranks > 1 else \
        run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    return path


def losses(path):
    with h5py.File(path) as f:
        return f["train/loss"][:]


def reference(tmp_path, ranks, momentum=0.9):
    """1 rank x batch ranks*8: the trajectory the data-parallel runs must follow."""
    return losses(train(tmp_path, f"ref{ranks}", 1, config(tmp_path, f"ref{ranks}", 8 * ranks, 1, momentum=momentum)))


@pytest.mark.parametrize("ranks", [2, 4])
# shm: the gradient arena in shared memory, summed in place
@pytest.mark.parametrize("allreduce", ["ring", "shm"])
def test_sync_follows_one_rank_with_the_global_batch(tmp_path, ranks, allreduce):
    ref = reference(tmp_path, ranks)
    cfg = config(tmp_path, "dp", 8, ranks, allreduce=allreduce)  # overlap, ~18 buckets
    path = train(tmp_path, "dp", ranks, cfg)
    got = losses(path)
    assert got.shape == ref.shape == (10,)
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=1e-5)
    # Synthetic labels are random, so 10 steps need not lower the loss; the run must train.
    assert np.all(np.isfinite(got)) and np.ptp(got) > 0, "the loss is finite and changes"
    with h5py.File(path) as f:
        assert f["timing/comm"].shape == (10, ranks)
        assert np.all(f["timing/comm"][:] > 0)
        assert np.all(f["timing/comm_wait"][:] >= 0)
        assert "gather" not in f["timing"], "parameter-server phases only for ps"


def test_shm_window_settings_are_recorded_and_do_not_change_the_result(tmp_path):
    """dist.shm_chunk_kb / dist.shm_buffers shape shm's copy pipeline (weight_avg copies the
    weights through it): recorded in /config, and the sums stay the rank-order float sums."""
    runs = {}
    for name, shm in (("default", ""), ("small", ", shm_chunk_kb: 4, shm_buffers: 2")):
        path = train(tmp_path, name, 2, config(tmp_path, name, 8, 2, strategy="weight_avg", allreduce="shm",
                                               momentum=0.0, period=1, shm=shm))
        with h5py.File(path) as f:
            runs[name] = (f["train/loss"][:], dict(f["config"].attrs))
    assert (runs["default"][1]["dist.shm_chunk_kb"], runs["default"][1]["dist.shm_buffers"]) == ("32", "64")
    assert (runs["small"][1]["dist.shm_chunk_kb"], runs["small"][1]["dist.shm_buffers"]) == ("4", "2")
    np.testing.assert_array_equal(runs["small"][0], runs["default"][0])


def test_weight_averaging_every_step_with_plain_sgd_matches_sync(tmp_path):
    ref = reference(tmp_path, 2, momentum=0.0)
    cfg = config(tmp_path, "wa", 8, 2, strategy="weight_avg", allreduce="tree", momentum=0.0, period=1)
    np.testing.assert_allclose(losses(train(tmp_path, "wa", 2, cfg)), ref, rtol=2e-4, atol=1e-5)


def test_local_sgd_period_runs_and_logs_rank_0_loss_between_averages(tmp_path):
    cfg = config(tmp_path, "local", 8, 2, strategy="weight_avg", allreduce="mpi", period=4)
    path = train(tmp_path, "local", 2, cfg)
    with h5py.File(path) as f:
        comm = f["timing/comm"][:]
    # Weights are averaged after steps 4, 8 and the last (10) only.
    averaged = np.array([s in (4, 8, 10) for s in range(1, 11)])
    assert np.all(comm[averaged] > 0) and np.all(comm[~averaged] == 0)


def test_parameter_server_follows_one_rank_and_records_its_phases(tmp_path):
    ref = reference(tmp_path, 2)
    path = train(tmp_path, "ps", 2, config(tmp_path, "ps", 8, 2, allreduce="ps", overlap="false"))
    np.testing.assert_allclose(losses(path), ref, rtol=2e-4, atol=1e-5)
    with h5py.File(path) as f:
        for phase in ["gather", "average", "broadcast"]:
            assert f[f"timing/{phase}"].shape == (10, 2), phase
        assert np.all(f["timing/average"][:, 1] == 0), "only rank 0 averages"
        assert np.all(f["timing/optimizer"][:, 1] == 0), "only rank 0 runs the optimizer"
        assert np.all(f["timing/optimizer"][:, 0] > 0)
        assert np.all(f["timing/gather"][:] > 0) and np.all(f["timing/broadcast"][:] > 0)


def test_global_batch_with_linear_scaling_and_warmup(tmp_path):
    text = BASE.format(batch=8, workers=2, strategy="sync", allreduce="mpi", overlap="true", momentum=0.9, period="",
                       shm="")
    text = text.replace("batch_per_worker: 8", "global_batch: 32")
    text = text.replace("lr: 0.05", "lr: 0.05\nlr_schedule: {kind: constant, scale: linear, base_batch: 8, "
                                    "warmup_epochs: 0.0625}")  # 64 steps/epoch: 4 warm-up steps
    path = train(tmp_path, "goyal", 2, write_config(tmp_path / "goyal.yaml", text))
    with h5py.File(path) as f:
        lr = f["train/lr"][:]
        samples = f["train/samples"][:]
    np.testing.assert_allclose(samples, 32 * np.arange(1, 11))
    # From lr (the base batch's) to 4 x lr in 4 steps, then constant: Goyal et al.'s warm-up.
    np.testing.assert_allclose(lr, [0.05, 0.0875, 0.125, 0.1625] + [0.2] * 6, rtol=1e-6)
