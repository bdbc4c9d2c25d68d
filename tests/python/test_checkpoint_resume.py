"""Checkpoint and resume, and preemption, on one rank with real faults (docs/reliability.md
"Checkpoint and resume", "Preemption"): a run killed with SIGKILL after a checkpoint, or
stopped by SIGTERM / SIGUSR1 (exit 4, PREEMPTED marker, a checkpoint), and then `--resume`d
ends with the same summary/params_sha256 as the uninterrupted run; a truncated newest
checkpoint is skipped with a note; a checkpoint of another config is refused; a manifest task
resumes by itself. The 2-rank versions (both MPI flavors) are in test_checkpoint_mpi.py.

The runs are LeNet on synthetic data with dropout and evaluations (so RNG streams, the
loader position and evaluation passes are all crossed by the resume), a few seconds each."""
import signal
import subprocess
import time

import h5py
import pytest
import yaml

from trainscale_cli import REPO, env, require_binary, run, write_config

LENET = """model: lenet
dataset: {name: synthetic, synthetic_samples: 2048, loader_threads: 2, prefetch: 3}
batch_per_worker: 16
dropout: 0.3
lr: 0.01
steps: 30
threads: 1
eval: {every_epochs: 0.15}
log_every: 10
checkpoint: {every_steps: 10}
"""

MLP = """model: mlp
dataset: {name: synthetic, synthetic_samples: 1024}
batch_per_worker: 16
steps: 12
threads: 1
eval: {every_epochs: 0}
checkpoint: {every_steps: 4, keep: true}
"""


def start(args):
    """Starts trainscale without waiting (its own process group: signals reach it alone)."""
    return subprocess.Popen([str(require_binary())] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)


def checkpoints(out):
    return sorted(out.glob("*.checkpoint.*.hdf5"), key=lambda p: int(p.name.split(".")[-2]))


def wait_for_checkpoint(proc, out, timeout=300):
    """Returns once the first checkpoint file exists under its final name (written atomically)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if checkpoints(out):
            return
        if proc.poll() is not None:
            stdout, stderr = proc.communicate()
            raise AssertionError(f"the run ended (rc {proc.returncode}) before its first checkpoint:\n{stdout}{stderr}")
        time.sleep(0.005)
    proc.kill()
    raise AssertionError("no checkpoint appeared")


def run_file(out):
    files = list(out.glob("*.h5"))
    assert len(files) == 1, files
    return files[0]


def result(out):
    """(params_sha256, attempt, resumed_from_step, steps recorded) of the run file in `out`."""
    with h5py.File(run_file(out)) as f:
        return (f["summary"].attrs["params_sha256"], int(f.attrs["attempt"]), int(f.attrs["resumed_from_step"]),
                f["train/step"].shape[0])


@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    """The config and the uninterrupted run's params_sha256."""
    base = tmp_path_factory.mktemp("reference")
    cfg = write_config(base / "lenet.yaml", LENET)
    out = base / "out"
    proc = run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("checkpoint: step") == 2  # steps 10 and 20 (none at the last step)
    assert not checkpoints(out), "a completed run removes its checkpoints"
    sha, attempt, resumed_from, steps = result(out)
    assert len(sha) == 64 and attempt == 1 and resumed_from == 0 and steps == 30
    with h5py.File(run_file(out)) as f:
        assert f["summary"].attrs["checkpoints"] == 2
    return cfg, sha


def test_sigkill_after_a_checkpoint_then_resume_is_bit_exact(tmp_path, lenet):
    cfg, reference = lenet
    out = tmp_path / "out"
    proc = start(["run", "--config", cfg, "--out", out])
    wait_for_checkpoint(proc, out)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not list(out.glob("*.h5")), "a killed run leaves no run file"
    assert checkpoints(out)
    resumed = run(["run", "--config", cfg, "--out", out, "--resume"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming after step" in resumed.stdout
    sha, attempt, resumed_from, steps = result(out)
    assert sha == reference, "the resumed run must end with the uninterrupted run's parameters"
    assert attempt == 2 and resumed_from in (10, 20) and steps == 30
    assert not checkpoints(out) and not list(out.glob("*.tmp-*"))
    with h5py.File(run_file(out)) as f:  # /io reads: the earlier attempt's steps are not measured (-1)
        read_bytes = f["io/read_bytes"][:]
        assert read_bytes.shape == (30, 1) and (read_bytes[:resumed_from] == -1).all() and (read_bytes[resumed_from:] >= 0).all()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1], ids=["SIGTERM", "SIGUSR1"])
def test_a_preemption_signal_checkpoints_exits_4_and_resumes_bit_exact(tmp_path, lenet, signum):
    cfg, reference = lenet
    out = tmp_path / "out"
    proc = start(["run", "--config", cfg, "--out", out])
    wait_for_checkpoint(proc, out)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    name = signal.Signals(signum).name
    assert f"preempted: {name} after step" in stderr
    (marker,) = out.glob("*.PREEMPTED")
    fields = dict(line.split(": ", 1) for line in marker.read_text().splitlines())
    assert fields["signal"] == name and fields["attempt"] == "1"
    step = int(fields["step"])
    assert 10 <= step < 30
    assert fields["checkpoint"].endswith(f".checkpoint.{step}.hdf5") and (out / fields["checkpoint"]).exists()
    assert not list(out.glob("*.h5")) and not list(out.glob("*.FAILED"))

    resumed = run(["run", "--config", cfg, "--out", out, "--resume"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    sha, attempt, resumed_from, steps = result(out)
    assert sha == reference
    assert attempt == 2 and resumed_from == step and steps == 30
    assert not list(out.glob("*.PREEMPTED")), "the finished attempt takes over the marker"


def test_a_second_signal_ends_the_run_at_once(tmp_path, lenet):
    """The first signal asks for a checkpoint at the next step boundary; a second one (the
    sender gave up waiting: a hang, a long evaluation) ends the process by SIGTERM at once."""
    cfg, _ = lenet
    out = tmp_path / "out"
    proc = start(["run", "--config", cfg, "--out", out])
    wait_for_checkpoint(proc, out)
    proc.send_signal(signal.SIGUSR1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGTERM, stdout + stderr
    assert not list(out.glob("*.h5")) and checkpoints(out), "the checkpoint written before stays"


def test_a_truncated_newest_checkpoint_is_skipped_for_the_older_one(tmp_path, lenet):
    cfg, _ = lenet
    kept = write_config(tmp_path / "kept.yaml", cfg.read_text().replace("checkpoint: {every_steps: 10}",
                                                                        "checkpoint: {every_steps: 10, keep: true}"))
    out = tmp_path / "out"
    first = run(["run", "--config", kept, "--out", out])
    assert first.returncode == 0, first.stderr
    sha, _, _, _ = result(out)
    older, newest = checkpoints(out)
    assert older.name.endswith(".checkpoint.10.hdf5") and newest.name.endswith(".checkpoint.20.hdf5")
    run_file(out).unlink()
    newest.write_bytes(newest.read_bytes()[:4096])  # as a crash of the disk, not of the writer, leaves it
    resumed = run(["run", "--config", kept, "--out", out, "--resume"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"note: skipping checkpoint {newest}" in resumed.stdout and "truncated" in resumed.stdout
    assert "resuming after step 10" in resumed.stdout
    assert result(out)[0] == sha and result(out)[2] == 10
    assert len(checkpoints(out)) == 2, "checkpoint.keep: true keeps the last two"


def test_resume_without_a_checkpoint_starts_from_step_0_with_a_note(tmp_path):
    cfg = write_config(tmp_path / "mlp.yaml", MLP)
    out = tmp_path / "out"
    proc = run(["run", "--config", cfg, "--out", out, "--resume"])
    assert proc.returncode == 0, proc.stderr
    assert "note: --resume: no valid checkpoint of run mlp-" in proc.stdout and "starting from step 0" in proc.stdout
    _, attempt, resumed_from, steps = result(out)
    assert attempt == 1 and resumed_from == 0 and steps == 12
    # Without --resume, existing checkpoints are named, and the run starts over.
    run_file(out).unlink()
    again = run(["run", "--config", cfg, "--out", out])
    assert again.returncode == 0 and "checkpoint(s) of this run exist (newest: step 8)" in again.stdout


def test_a_checkpoint_of_another_config_is_refused(tmp_path):
    cfg_a = write_config(tmp_path / "a.yaml", MLP)
    cfg_b = write_config(tmp_path / "b.yaml", MLP.replace("steps: 12", "steps: 16"))
    out = tmp_path / "out"
    assert run(["run", "--config", cfg_a, "--out", out]).returncode == 0
    assert run(["run", "--config", cfg_b, "--out", tmp_path / "b"]).returncode == 0
    with h5py.File(run_file(tmp_path / "b")) as f:
        b_id = f.attrs["run_id"]
    newest = checkpoints(out)[-1]
    newest.rename(out / f"{b_id}.checkpoint.8.hdf5")
    proc = run(["run", "--config", cfg_b, "--out", out, "--resume"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"belongs to run {run_file(out).stem}" in proc.stderr and "never resumed from" in proc.stderr


def test_checkpoint_keys_and_resume_flag_are_checked(tmp_path):
    cfg = write_config(tmp_path / "mlp.yaml", MLP)
    for setting, expected in [("checkpoint.every_steps=-1", "must be >= 0"),
                              ("checkpoint.every_minutes=1e9", "must be at most 525600")]:
        proc = run(["run", "--config", cfg, "--set", setting, "--out", tmp_path / "out"])
        assert proc.returncode == 2 and expected in proc.stderr, proc.stderr
    proc = run(["run", "--manifest", tmp_path, "--index", "0", "--resume"])
    assert proc.returncode == 2 and "continue from their checkpoint by themselves" in proc.stderr
    help_text = run(["run", "--help"]).stdout
    assert "--resume" in help_text and "4 preempted" in help_text


def test_a_manifest_task_resumes_by_itself_after_a_preemption(tmp_path, lenet):
    cfg, _ = lenet
    write_config(tmp_path / "base.yaml", cfg.read_text())
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: preempt_test\nbase: base.yaml\n")
    camp = tmp_path / "campaign"
    assert run(["sweep", "expand", sweep, "--out", camp]).returncode == 0
    (task,) = yaml.safe_load((camp / "manifest.yaml").read_text())["runs"]
    run_id = task["run_id"]
    runs = camp / "runs"
    proc = start(["run", "--manifest", camp, "--index", 0])
    wait_for_checkpoint(proc, runs)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    assert (runs / f"{run_id}.PREEMPTED").exists()
    for absent in ("RUNNING", "FAILED", "DONE"):
        assert not (runs / f"{run_id}.{absent}").exists(), absent
    assert "result: preempted" in (camp / "logs" / f"{run_id}.attempt1.log").read_text()

    again = run(["run", "--manifest", camp, "--index", 0])
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming after step" in again.stdout
    assert "status: ok" in (runs / f"{run_id}.DONE").read_text()
    assert not (runs / f"{run_id}.PREEMPTED").exists()
    with h5py.File(runs / f"{run_id}.h5") as f:
        assert int(f.attrs["attempt"]) == 2 and int(f.attrs["resumed_from_step"]) >= 10
    assert not checkpoints(runs)
