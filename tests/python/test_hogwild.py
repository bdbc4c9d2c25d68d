"""dist.strategy hogwild (docs/async.md): replicas as
threads of one process, sharing one weight arena without locks. With one thread it is plain
single-rank training, bit for bit; with several, the run trains (the racy updates are what the
algorithm tolerates, so nothing else is compared exactly; keep this file out of TSan runs) and
threads_per_worker sets the global batch; multi-rank hogwild is refused."""
import h5py
import numpy as np

from test_cli_mpi import mpirun
from trainscale_cli import FMNIST, run, write_config

BASE = f"""\
model: mlp
dataset: {{name: fashion_mnist, format: idx, root: {FMNIST}}}
batch_per_worker: 32
lr: 0.05
momentum: 0.5
steps: 60
threads: 1
workers: 1
eval: {{every_epochs: 100}}
log_every: 20
seed: 3
"""


def train(tmp_path, name, dist):
    cfg = write_config(tmp_path / f"{name}.yaml", BASE + f"dist: {dist}\n")
    out = tmp_path / name
    proc = run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    return path


def test_one_thread_is_single_rank_training_bit_for_bit(tmp_path):
    sync = train(tmp_path, "sync", "{strategy: sync, allreduce: mpi}")
    hog = train(tmp_path, "hog1", "{strategy: hogwild, threads_per_worker: 1}")
    with h5py.File(sync) as a, h5py.File(hog) as b:
        np.testing.assert_array_equal(a["train/loss"][:], b["train/loss"][:])
        assert a["summary"].attrs["params_sha256"] == b["summary"].attrs["params_sha256"]


def test_three_threads_train_and_split_the_global_batch(tmp_path):
    path = train(tmp_path, "hog3", "{strategy: hogwild, threads_per_worker: 3}")
    with h5py.File(path) as f:
        assert f["config"].attrs["dist.threads_per_worker"] == "3"
        np.testing.assert_array_equal(f["train/samples"][:], 96 * np.arange(1, 61)), "3 replicas x 32 per step"
        loss = f["train/loss"][:]
        assert np.all(np.isfinite(loss)) and loss[-10:].mean() < loss[:10].mean()
        assert f["eval/accuracy"][-1] > 0.5, "60 steps x 3 replicas of an MLP beat chance (0.1) by far"


def test_hogwild_on_several_ranks_is_refused(tmp_path):
    cfg = write_config(tmp_path / "two.yaml", BASE.replace("workers: 1", "workers: 2") +
                       "dist: {strategy: hogwild, threads_per_worker: 2}\n")
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "multi-rank hogwild is not implemented" in proc.stderr, proc.stderr


def test_two_threads_reach_85_percent_in_two_epochs(tmp_path):
    """The issue's bar (cosine decay from 0.02: the settings of bench/async_accuracy.sh, which
    reach about 87%; about 5 s here). The racing updates make the accuracy vary from run to run
    by a few tenths of a point."""
    text = BASE.replace("momentum: 0.5", "momentum: 0.9").replace("lr: 0.05", "lr: 0.02\nlr_schedule: {kind: cosine}")
    text = text.replace("steps: 60", "epochs: 2").replace("every_epochs: 100", "every_epochs: 1").replace("seed: 3", "seed: 1")
    cfg = write_config(tmp_path / "two_epochs.yaml", text + "dist: {strategy: hogwild, threads_per_worker: 2}\n")
    out = tmp_path / "two_epochs"
    proc = run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    with h5py.File(path) as f:
        assert f["eval/accuracy"][-1] >= 0.85, f["eval/accuracy"][:]
