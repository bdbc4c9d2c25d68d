"""Warnings of a run that measures something else than its author meant (docs/reliability.md
"Warnings", issue 34): printed once by rank 0 as `warning: ...` and kept in the run file's root
attribute `warnings` (one a line); diverge.loss_above_factor turns an explosion into `diverged`
(exit 3). And the defaults learn: a config of a model and steps trains LeNet to a falling loss."""
import math
import os
import pathlib

import h5py
import numpy as np

from test_cli_mpi import mpirun
from trainscale_cli import run, write_config

# LeNet on Fashion-MNIST (the default data set), short, no evaluation.
LENET = """\
model: lenet
batch_per_worker: 16
steps: 8
threads: 1
eval: {every_epochs: 0}
log_every: 2
"""


def run_file_of(out_dir):
    files = sorted(pathlib.Path(out_dir).glob("*.h5"))
    assert len(files) == 1, f"expected one run file in {out_dir}, found {files}"
    return files[0]


def warnings_of(path):
    with h5py.File(path) as f:
        text = f.attrs["warnings"]
    text = text.decode() if isinstance(text, bytes) else str(text)
    return [line for line in text.split("\n") if line]


def printed_warnings(stdout):
    return [line[len("warning: "):] for line in stdout.splitlines() if line.startswith("warning: ")]


def test_a_run_without_warnings_records_none(tmp_path):
    cfg = write_config(tmp_path / "calm.yaml", LENET.replace("steps: 8", "steps: 4") + "lr: 0.01\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning:" not in proc.stdout + proc.stderr
    assert warnings_of(run_file_of(tmp_path / "out")) == []


def test_a_warm_up_longer_than_the_run_is_warned_and_recorded(tmp_path):
    """The issue's case: warmup_epochs 0.1 in a 50-step run warmed up for 187 steps, silently."""
    cfg = write_config(tmp_path / "warm.yaml", LENET + "lr_schedule: {warmup_epochs: 0.1}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 60000 samples / 16 = 3750 steps per epoch: 0.1 epochs are 375 warm-up steps.
    expected = (f"{cfg}:7: key 'lr_schedule.warmup_epochs': 0.1 epochs are 375 warm-up steps (3750 steps per epoch), "
                "longer than this run's 8 steps")
    printed = printed_warnings(proc.stdout)
    assert len(printed) == 1 and printed[0].startswith(expected), proc.stdout
    assert "the run measures the warm-up only" in printed[0]
    assert warnings_of(run_file_of(tmp_path / "out")) == printed


def test_an_exploding_loss_is_warned_and_the_bound_ends_the_run_as_diverged(tmp_path):
    """lr 0.5 blows LeNet's loss up to thousands within two steps, without a NaN: a warning (exit 0);
    with diverge.loss_above_factor the run is `diverged` (exit 3) naming the step and the loss."""
    cfg = write_config(tmp_path / "hot.yaml", LENET + "lr: 0.5\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "warned"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = [w for w in printed_warnings(proc.stdout) if w.startswith("the loss exploded: ")]
    assert len(printed) == 1, proc.stdout
    assert "is above 10 x the loss at the start" in printed[0] and "(step 1)" in printed[0], printed[0]
    path = run_file_of(tmp_path / "warned")
    assert printed[0] in warnings_of(path)
    with h5py.File(path) as f:
        assert f.attrs["status"] == "ok"
        assert np.all(np.isfinite(f["train/loss"][:]))

    proc = run(["run", "--config", cfg, "--out", tmp_path / "bound", "--set", "diverge.loss_above_factor=100"])
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "diverged: loss " in proc.stdout and "at step 2 is above diverge.loss_above_factor 100 x the loss at the start" \
        in proc.stdout, proc.stdout
    with h5py.File(run_file_of(tmp_path / "bound")) as f:
        assert f.attrs["status"] == "diverged"
        assert "at step 2 is above diverge.loss_above_factor 100" in f.attrs["message"]
        assert len(f["train/step"]) == 2, "stopped at the progress line that passed the bound"
        assert f["summary"].attrs["diverged"] == 1


def test_a_stalled_loss_is_warned(tmp_path):
    """The old defaults (lr 0.05, momentum 0.9) blow LeNet up in its first steps; from then on it
    predicts every class alike and logs about ln(10), give or take each batch's labels."""
    cfg = write_config(tmp_path / "still.yaml", "model: lenet\nsteps: 60\nlr: 0.05\nmomentum: 0.9\n"
                                                "eval: {every_epochs: 0}\nlog_every: 5\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = printed_warnings(proc.stdout)
    assert len(printed) == 1 and printed[0].startswith("the loss stalled: "), proc.stdout
    assert "(within 1% of 2.3" in printed[0] and "over 6 progress lines, steps " in printed[0], printed[0]
    assert "about ln(10)" in printed[0] and "lower lr" in printed[0], printed[0]
    assert warnings_of(run_file_of(tmp_path / "out")) == printed


def test_an_oversubscribed_node_is_warned_once_by_rank_0(tmp_path):
    """Two ranks of as many threads as the machine has CPUs on one node: twice the CPUs."""
    cpus = os.cpu_count()
    cfg = write_config(tmp_path / "crowd.yaml", LENET.replace("steps: 8", "steps: 2").replace("threads: 1", f"threads: {cpus}")
                       .replace("model: lenet", "model: mlp\ndataset: {name: synthetic, synthetic_samples: 256}")
                       + "workers: 2\ndist: {allreduce: mpi, overlap: false}\n")
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = [w for w in printed_warnings(proc.stdout) if w.startswith("the node is oversubscribed: ")]
    assert len(printed) == 1, proc.stdout  # rank 0 alone, once for the node
    assert f"runs {2 * cpus} compute threads (2 rank(s) x {cpus} thread(s)) on the " in printed[0], printed[0]
    assert printed[0] in warnings_of(run_file_of(tmp_path / "out"))


def test_the_defaults_train_lenet_to_a_falling_loss(tmp_path):
    """Only a model and steps (Fashion-MNIST, batch 64, lr 0.01, momentum 0.9 by default): the loss
    falls well below ln(10) and nothing is warned. The old defaults (lr 0.05) stalled at ln(10)."""
    cfg = write_config(tmp_path / "defaults.yaml", "model: lenet\nsteps: 60\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning:" not in proc.stdout, proc.stdout
    with h5py.File(run_file_of(tmp_path / "out")) as f:
        name = f["config"].attrs["dataset.name"]
        assert (name.decode() if isinstance(name, bytes) else name) == "fashion_mnist"
        loss = f["train/loss"][:]
    assert len(loss) == 60 and np.all(np.isfinite(loss))
    first, last = float(np.mean(loss[:5])), float(np.mean(loss[-10:]))
    assert first > 1.5, loss[:5]  # a fresh 10-class model starts about ln(10)
    assert last < 0.6 * first and last < math.log(10) - 1, (first, last)
