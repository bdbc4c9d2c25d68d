"""loss_reads (docs/config.md, docs/gpu.md "What the host waits for"): `log` leaves each step's
loss unread until the trainer's next boundary (a progress line, an evaluation, a checkpoint, the
end). On a CPU rank, which reads the loss for free, it must record exactly what `step` records:
the same /train/loss, the same final parameters, and a divergence found at the same step. The
device runs where it saves the host's waits are in docs/gpu.md; here the bookkeeping is checked."""
import re
import signal
import subprocess
import time

import h5py
import numpy as np

from trainscale_cli import REPO, env, require_binary, run, write_config

MLP = """model: mlp
dataset: {name: synthetic, format: synthetic, synthetic_samples: 1024}
batch_per_worker: 16
lr: 0.05
momentum: 0.9
steps: 45
threads: 1
eval: {every_epochs: 0.5}
log_every: 7
checkpoint: {every_steps: 10}
"""


def run_mlp(tmp_path, name, text, expect=0):
    cfg = write_config(tmp_path / f"{name}.yaml", text)
    out = tmp_path / name
    proc = run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == expect, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    return proc, h5py.File(path)


def progress_losses(stdout):
    return re.findall(r"^step (\d+)/\d+ epoch \S+ loss (\S+)", stdout, flags=re.M)


def test_log_reads_record_what_step_reads_record(tmp_path):
    step_proc, step_file = run_mlp(tmp_path, "step", MLP + "loss_reads: step\n")
    log_proc, log_file = run_mlp(tmp_path, "log", MLP + "loss_reads: log\n")
    with step_file, log_file:
        assert step_file.attrs["loss_reads"] == "step" and log_file.attrs["loss_reads"] == "log"
        loss = log_file["train/loss"][:]
        assert loss.shape == (45,) and np.isfinite(loss).all(), "every held loss was read"
        np.testing.assert_array_equal(loss, step_file["train/loss"][:])
        assert loss[0] != loss[-1]
        assert log_file["summary"].attrs["params_sha256"] == step_file["summary"].attrs["params_sha256"]
        np.testing.assert_array_equal(log_file["eval/accuracy"][:], step_file["eval/accuracy"][:])
        assert log_file["summary"].attrs["checkpoints"] == 4
    lines = progress_losses(log_proc.stdout)
    assert [s for s, _ in lines] == ["7", "14", "21", "28", "35", "42", "45"]
    assert lines == progress_losses(step_proc.stdout)


def test_log_reads_find_a_divergence_at_its_step_and_stop_at_the_next_read(tmp_path):
    boom = MLP.replace("lr: 0.05", "lr: 1.0e+12").replace("checkpoint: {every_steps: 10}\n", "")
    _, step_file = run_mlp(tmp_path, "step", boom, expect=3)
    proc, log_file = run_mlp(tmp_path, "log", boom + "loss_reads: log\n", expect=3)
    with step_file, log_file:
        assert log_file.attrs["status"] == "diverged"
        first = int(re.search(r"at step (\d+)", step_file.attrs["message"]).group(1))
        message = log_file.attrs["message"]
        found = re.search(r"loss became (NaN|Inf) at step (\d+) \(read at step (\d+): loss_reads log", message)
        assert found, message
        at, read = int(found.group(2)), int(found.group(3))
        assert at == first, "the first non-finite loss is named, not the step where it was read"
        assert read >= at and (read % 7 == 0 or read == 45), "read at a progress line (or an evaluation)"
        loss = log_file["train/loss"][:]
        assert len(loss) == read, "the steps up to the read ran and are recorded"
        np.testing.assert_array_equal(loss[:at], step_file["train/loss"][:at])
        assert not np.isfinite(loss[at - 1])
    assert f"diverged: {message}; stopping" in proc.stdout


def test_log_reads_need_a_step_that_does_not_combine_the_losses_on_the_host(tmp_path):
    cfg = write_config(tmp_path / "two.yaml", MLP + "loss_reads: log\nworkers: 2\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "two.yaml:11: key 'loss_reads'" in proc.stderr, proc.stderr
    assert "combines the losses on the host every step" in proc.stderr, proc.stderr
    # nccl combines them on the device: the configuration passes (this single-rank launch is then
    # refused for its worker count, or a build without CUDA for its backend, after every
    # configuration check).
    cfg = write_config(tmp_path / "nccl.yaml", MLP + "loss_reads: log\nworkers: 2\nbackend: cuda\n"
                                                    "dist: {allreduce: nccl}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "key 'loss_reads'" not in proc.stderr, proc.stderr
    assert "this MPI world has 1 rank(s)" in proc.stderr or "is not built into this binary" in proc.stderr, proc.stderr
    cfg = write_config(tmp_path / "sync.yaml", MLP + "loss_reads: log\ncuda: {sync_phases: true}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2 and "cuda.sync_phases: true reads it right after each forward" in proc.stderr
    cfg = write_config(tmp_path / "bad.yaml", MLP + "loss_reads: sometimes\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2 and "step" in proc.stderr and "log" in proc.stderr


def test_log_reads_settle_before_a_checkpoint_and_resume_bit_exact(tmp_path):
    """A preemption after a checkpoint, then --resume: the held losses and the loss scale kept on
    the device (dynamic scaling) are read before each checkpoint, so the resumed run ends with the
    uninterrupted run's parameters and losses."""
    text = """model: lenet
dataset: {name: synthetic, synthetic_samples: 2048}
batch_per_worker: 16
lr: 0.01
steps: 120
threads: 1
eval: {every_epochs: 0}
log_every: 7
checkpoint: {every_steps: 10}
loss_reads: log
loss_scale: {mode: dynamic, init: 1.7014118346046923e+38, growth_interval: 5}
"""
    _, whole = run_mlp(tmp_path, "whole", text)
    cfg = write_config(tmp_path / "cut.yaml", text)
    out = tmp_path / "cut"
    proc = subprocess.Popen([str(require_binary()), "run", "--config", str(cfg), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)
    deadline = time.monotonic() + 120
    while not list(out.glob("*.checkpoint.*.hdf5")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 4, stdout + stderr
    resumed = run(["run", "--config", cfg, "--out", out, "--resume"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    (path,) = out.glob("*.h5")
    with whole, h5py.File(path) as cut:
        assert int(cut.attrs["attempt"]) == 2
        for key in ("params_sha256", "skipped_steps", "loss_scale_final"):
            assert cut["summary"].attrs[key] == whole["summary"].attrs[key], key
        assert whole["summary"].attrs["skipped_steps"] >= 1
        np.testing.assert_array_equal(cut["train/loss"][:], whole["train/loss"][:])
