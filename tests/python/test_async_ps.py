"""dist.strategy async_ps under the MPI launcher of the binary's flavor (docs/async.md):
workers + dist.servers ranks; with dist.staleness 0 the loss
trajectory is sync's with the same global batch (the tolerance of test_dist_equivalence.py);
with a bound, the run trains and the run file records every worker's staleness histogram and
its waits; what async_ps cannot do is refused with exit 2 naming the numbers."""
import h5py
import numpy as np
import pytest

from test_cli_mpi import mpirun
from test_dist_equivalence import config, losses, train
from trainscale_cli import FMNIST, write_config


def async_config(tmp_path, name, workers, servers, staleness, momentum=0.0):
    cfg = config(tmp_path, name, 8, workers, allreduce="mpi", overlap="false", momentum=momentum)
    text = cfg.read_text().replace("strategy: sync", f"strategy: async_ps, servers: {servers}, staleness: {staleness}")
    return write_config(cfg, text)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_staleness_zero_follows_sync_on_two_workers_and_two_servers(tmp_path, momentum):
    # With momentum too: the servers decay it once per step, at the step's first push
    # (train/push_sgd.h), so a round of pushes is one synchronous step with momentum.
    ref = losses(train(tmp_path, "sync", 2, config(tmp_path, "sync", 8, 2, allreduce="mpi", momentum=momentum)))
    path = train(tmp_path, "async", 4, async_config(tmp_path, "async", 2, 2, 0, momentum=momentum))
    np.testing.assert_allclose(losses(path), ref, rtol=2e-4, atol=1e-5)
    with h5py.File(path) as f:
        assert f.attrs["world_size"] == 2, "the run file's world is the workers"
        a = f["async_ps"]
        assert (a.attrs["servers"], a.attrs["staleness"]) == (2, 0)
        np.testing.assert_array_equal(a["staleness_histogram"][:], [[10], [10]])
        assert a["bound_wait"].shape == a["pull_wait"].shape == (2,)
        assert np.all(a["bound_wait"][:] >= 0) and np.all(a["pull_wait"][:] > 0)
        assert np.all(f["timing/comm"][:] > 0), "a worker's push + pull is its comm time"


def test_a_staleness_bound_trains_fashion_mnist_and_records_its_histogram(tmp_path):
    text = f"""\
model: mlp
dataset: {{name: fashion_mnist, format: idx, root: {FMNIST}}}
batch_per_worker: 32
lr: 0.05
momentum: 0.5
steps: 60
threads: 1
workers: 2
dist: {{strategy: async_ps, servers: 1, staleness: 3}}
eval: {{every_epochs: 100}}
log_every: 20
seed: 3
"""
    path = train(tmp_path, "ssp", 3, write_config(tmp_path / "ssp.yaml", text))
    with h5py.File(path) as f:
        hist = f["async_ps/staleness_histogram"][:]
        assert hist.shape == (2, 4)
        np.testing.assert_array_equal(hist.sum(axis=1), [60, 60]), "every step's gradient counted once"
        assert np.all(hist >= 0)
        assert f["eval/accuracy"][-1] > 0.5, "60 steps of an MLP beat chance (0.1) by far"
        loss = f["train/loss"][:]
        assert np.all(np.isfinite(loss)) and loss[-10:].mean() < loss[:10].mean()


@pytest.mark.parametrize("staleness", [0, 2])
def test_workers_a_slowdown_drives_apart_meet_the_staleness_bound_and_never_pass_it(tmp_path, staleness):
    """Worker 1 is 12x slower (dist.emulate_slowdown), so the workers drift apart until the bound
    holds the one ahead: with a bound of 2 some worker's gradients are computed 2 steps ahead of
    the weights' round (/async_ps max_staleness, not clamped as the histogram's last column is);
    no worker's ever more; with 0, none. Which worker runs ahead is the OS's choice on a loaded
    machine: CI saw worker 0 held back so long that worker 1, sleeping 11x its compute, ran
    ahead in 15 of 24 steps; so only the bound's invariants are asserted, never who was fresher
    (tests/cpp/test_ssp_clock.cpp checks the bookkeeping for given push orders)."""
    text = f"""\
model: mlp
dataset: {{name: fashion_mnist, format: idx, root: {FMNIST}}}
batch_per_worker: 32
lr: 0.05
momentum: 0.0
steps: 24
threads: 1
workers: 2
dist: {{strategy: async_ps, servers: 1, staleness: {staleness}, emulate_slowdown: {{rank: 1, factor: 12}}}}
eval: {{every_epochs: 100}}
log_every: 8
seed: 3
"""
    name = f"slow{staleness}"
    path = train(tmp_path, name, 3, write_config(tmp_path / f"{name}.yaml", text))
    with h5py.File(path) as f:
        hist = f["async_ps/staleness_histogram"][:]
        most = f["async_ps/max_staleness"][:]
        assert hist.shape == (2, staleness + 1)
        np.testing.assert_array_equal(hist.sum(axis=1), [24, 24])
        assert most.max() == staleness and np.all((0 <= most) & (most <= staleness)), (most, hist)
        np.testing.assert_array_equal(hist[:, 1:].sum(axis=1) > 0, most > 0)
        assert f["partition"].attrs["emulate_slowdown_rank"] == 1


def test_the_world_must_hold_workers_plus_servers(tmp_path):
    cfg = async_config(tmp_path, "short", 2, 1, 0)
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "2 worker(s) plus 1 server(s)" in proc.stderr and "mpirun -np 3" in proc.stderr, proc.stderr


# The bar: 2 epochs of Fashion-MNIST reach >= 85% test accuracy (an MLP, 2 workers x 32,
# cosine decay from 0.02: the settings of bench/async_accuracy.sh, which reach about 87%; about
# 10 s here). Pushes arrive in any order, so the accuracy varies from run to run by a few tenths
# of a point.
TWO_EPOCHS = f"""\
model: mlp
dataset: {{name: fashion_mnist, format: idx, root: {FMNIST}}}
batch_per_worker: 32
lr: 0.02
lr_schedule: {{kind: cosine}}
momentum: 0.9
epochs: 2
threads: 1
workers: 2
dist: {{strategy: async_ps, servers: 1, staleness: 2}}
eval: {{every_epochs: 1}}
log_every: 1000
seed: 1
"""


def test_two_epochs_with_a_staleness_bound_reach_85_percent(tmp_path):
    path = train(tmp_path, "two_epochs", 3, write_config(tmp_path / "two_epochs.yaml", TWO_EPOCHS))
    with h5py.File(path) as f:
        assert f["eval/accuracy"][-1] >= 0.85, f["eval/accuracy"][:]
        assert f["async_ps/staleness_histogram"][:].sum() == 2 * f["train/step"][-1]
