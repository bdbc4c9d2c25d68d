"""Checkpoint and resume, and preemption, on 2 ranks under the binary's own MPI launcher (Open
MPI's mpirun or MPICH's mpiexec; scripts/test.sh runs this file against both builds), with
real faults (docs/reliability.md): every rank killed with SIGKILL after a checkpoint, or
SIGTERM sent to every rank, or SIGUSR1 to one rank only (the ranks agree and all stop at the
same step), then `--resume`d under the launcher: the run ends with the uninterrupted run's
summary/params_sha256. The weight_avg case keeps every rank's own parameters and momentum.
The processes signalled are this test's launcher's descendants only. async_ps runs its servers
as extra ranks: one worker with two servers resumes bit-exact (the servers' shards and momentum
are in the checkpoint); two workers with a staleness bound, one of them slow, stop at the step
server 0 names when one worker alone gets SIGUSR1, and resume to the end."""
import os
import pathlib
import signal
import subprocess
import time

import h5py
import pytest

from test_cli_mpi import mpi_flavor, mpirun
from trainscale_cli import REPO, env, launcher_argv, require_binary, write_config

SYNC = """model: lenet
dataset: {name: synthetic, synthetic_samples: 2048}
batch_per_worker: 8
dropout: 0.3
lr: 0.01
steps: 24
threads: 1
workers: 2
dist: {strategy: sync, allreduce: ring, overlap: true}
eval: {every_epochs: 0.1}
log_every: 10
checkpoint: {every_steps: 8}
"""
WEIGHT_AVG = SYNC.replace("dist: {strategy: sync, allreduce: ring, overlap: true}",
                          "dist: {strategy: weight_avg, period: 3, allreduce: mpi}")


def launch(args, np=2):
    """Starts `np` ranks under the flavor's launcher without waiting."""
    cmd = launcher_argv(np, mpi_flavor())
    cmd += [str(require_binary())] + [str(a) for a in args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)


def ranks_of(launcher_pid):
    """The trainscale processes below `launcher_pid` (walks /proc: ppid links)."""
    children = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append((int(entry.name), comm))
    found, todo = [], [launcher_pid]
    while todo:
        for pid, comm in children.get(todo.pop(), []):
            todo.append(pid)
            if comm == "trainscale":
                found.append(pid)
    return found


def world_rank(pid):
    """The MPI world rank of a launched process (its launcher's environment variable)."""
    environ = dict(item.split("=", 1) for item in pathlib.Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    return int(environ.get("OMPI_COMM_WORLD_RANK", environ.get("PMI_RANK", "-1")))


def wait_for_ranks_and_checkpoint(proc, out, timeout=300, np=2):
    """The launcher's ranks once the first checkpoint is written. They are found while the run
    starts, so the caller's signal follows the checkpoint within a poll: walking /proc after it
    gives a short run on a loaded machine time to finish first (as test_multihost saw)."""
    deadline = time.monotonic() + timeout
    ranks = []
    while time.monotonic() < deadline:
        if len(ranks) < np:
            ranks = ranks_of(proc.pid)
        if [p for p in out.glob("*.checkpoint.*.hdf5") if ".rank-" not in p.name]:  # not a rank part
            ranks = ranks if len(ranks) == np else ranks_of(proc.pid)
            assert len(ranks) == np, f"expected {np} ranks below the launcher, found {ranks}"
            return ranks
        if proc.poll() is not None:
            stdout, stderr = proc.communicate()
            raise AssertionError(f"the run ended (rc {proc.returncode}) before its first checkpoint:\n{stdout}{stderr}")
        time.sleep(0.005)
    proc.kill()
    raise AssertionError("no checkpoint appeared")


def final(out):
    (path,) = out.glob("*.h5")
    with h5py.File(path) as f:
        return (f["summary"].attrs["params_sha256"], int(f.attrs["attempt"]), int(f.attrs["resumed_from_step"]),
                f["timing/step"].shape)


def reference(tmp_path_factory, name, text, np=2, workers=2):
    base = tmp_path_factory.mktemp(name)
    cfg = write_config(base / f"{name}.yaml", text)
    proc = mpirun(np, ["run", "--config", cfg, "--out", base / "out"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sha, attempt, resumed_from, shape = final(base / "out")
    assert attempt == 1 and resumed_from == 0 and shape == (24, workers)
    assert not list((base / "out").glob("*.checkpoint.*")), "a completed run removes its checkpoints"
    return cfg, sha


@pytest.fixture(scope="module")
def sync_run(tmp_path_factory):
    return reference(tmp_path_factory, "sync", SYNC)


@pytest.fixture(scope="module")
def weight_avg_run(tmp_path_factory):
    return reference(tmp_path_factory, "wavg", WEIGHT_AVG)


def resume_and_check(cfg, out, expected_sha, resumed_from=None, np=2, workers=2):
    """`expected_sha` None: the run is not deterministic (async_ps with several workers)."""
    proc = mpirun(np, ["run", "--config", cfg, "--out", out, "--resume"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("resuming after step") == 1, "rank 0 alone reports"
    sha, attempt, step, shape = final(out)
    if expected_sha is not None:
        assert sha == expected_sha, "the resumed run must end with the uninterrupted run's parameters"
    assert attempt == 2 and shape == (24, workers)
    if resumed_from is not None:
        assert step == resumed_from
    assert not list(out.glob("*.checkpoint.*")) and not list(out.glob("*.PREEMPTED"))


def test_sigkill_of_every_rank_then_resume_is_bit_exact(tmp_path, sync_run):
    cfg, expected = sync_run
    out = tmp_path / "out"
    proc = launch(["run", "--config", cfg, "--out", out])
    for pid in wait_for_ranks_and_checkpoint(proc, out):
        os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert not list(out.glob("*.h5"))
    resume_and_check(cfg, out, expected)


def preempted_marker(out, signal_name):
    (marker,) = out.glob("*.PREEMPTED")
    fields = dict(line.split(": ", 1) for line in marker.read_text().splitlines())
    assert fields["signal"] == signal_name
    step = int(fields["step"])
    assert (out / fields["checkpoint"]).exists() and fields["checkpoint"].endswith(f".checkpoint.{step}.hdf5")
    return step


def test_sigterm_to_every_rank_stops_with_exit_4_and_resumes_bit_exact(tmp_path, sync_run):
    cfg, expected = sync_run
    out = tmp_path / "out"
    proc = launch(["run", "--config", cfg, "--out", out])
    for pid in wait_for_ranks_and_checkpoint(proc, out):
        os.kill(pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    assert stdout.count("preempted: SIGTERM") == 1, "rank 0 alone reports"
    step = preempted_marker(out, "SIGTERM")
    assert not list(out.glob("*.h5")) and not list(out.glob("*.FAILED"))
    resume_and_check(cfg, out, expected, resumed_from=step)


def test_sigusr1_to_one_rank_stops_both_and_weight_avg_resumes_bit_exact(tmp_path, weight_avg_run):
    cfg, expected = weight_avg_run
    out = tmp_path / "out"
    proc = launch(["run", "--config", cfg, "--out", out])
    ranks = wait_for_ranks_and_checkpoint(proc, out)
    os.kill(max(ranks), signal.SIGUSR1)  # one rank only: the other learns it at the next average
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    step = preempted_marker(out, "SIGUSR1")
    checkpoint = out / next(out.glob("*.PREEMPTED")).read_text().split("checkpoint: ")[1].strip()
    with h5py.File(checkpoint) as f:
        assert f.attrs["params_per_rank"] == 1, "weight_avg keeps every rank's own parameters"
        assert "model" not in f, "each rank's model is in its own part, not in the checkpoint file"
        assert f["ranks/params_sha256"].shape == (2, 4)
    # Each rank's rank part beside it; rank 0 wrote them one at a time (docs/reliability.md).
    parts = sorted(out.glob(checkpoint.name.replace(".hdf5", ".rank-*.hdf5")))
    assert [p.name.rsplit("-", 1)[1] for p in parts] == ["0.hdf5", "1.hdf5"], parts
    models = []
    for part in parts:
        with h5py.File(part) as f:
            assert f.attrs["schema"] == "trainscale-checkpoint-rank/1" and f.attrs["step"] == step
            models.append(f["params"][...])
    assert models[0].shape == models[1].shape
    # Parts of a pruned checkpoint (the newest two are kept) went with it.
    steps_of = lambda paths: {int(p.name.split(".checkpoint.")[1].split(".")[0]) for p in paths}
    mains = steps_of(p for p in out.glob("*.checkpoint.*.hdf5") if ".rank-" not in p.name)
    assert steps_of(out.glob("*.checkpoint.*.rank-*.hdf5")) == mains, "a rank part without its checkpoint"
    resume_and_check(cfg, out, expected, resumed_from=step)  # which also finds no part left


# Compressed exchanges (issue 14): the error-feedback memory (every rank's own: topk and
# powersgd, the biased ones), PowerSGD's warm-start Q and the step count travel in the
# checkpoint, so a preempted compressed run resumes bit-exact, with every rank's
# /compression/wire_bytes. qsgd's rounding is seeded by step and rank; powersgd with 10 warm-up
# steps is checkpointed at step 8, before its Q exists.
COMPRESSED = {
    "qsgd": "dist: {strategy: sync, allreduce: ring, overlap: true, compression: qsgd}",
    "topk": "dist: {strategy: sync, allreduce: tree, overlap: true, compression: topk, topk_ratio: 0.05}",
    "powersgd": "dist: {strategy: sync, allreduce: mpi, overlap: true, compression: powersgd, powersgd_rank: 2, "
                "compression_warmup_steps: 3}",
    "powersgd_in_warmup": "dist: {strategy: sync, allreduce: ring, overlap: true, compression: powersgd, "
                          "compression_warmup_steps: 10}",
}


@pytest.mark.parametrize("name", sorted(COMPRESSED))
def test_a_compressed_run_preempted_by_sigterm_resumes_bit_exact(tmp_path_factory, name):
    text = SYNC.replace("dist: {strategy: sync, allreduce: ring, overlap: true}", COMPRESSED[name])
    cfg, expected = reference(tmp_path_factory, f"compressed-{name}", text)
    (reference_file,) = (cfg.parent / "out").glob("*.h5")
    out = cfg.parent / "preempted"
    proc = launch(["run", "--config", cfg, "--out", out])
    for pid in wait_for_ranks_and_checkpoint(proc, out):
        os.kill(pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    step = preempted_marker(out, "SIGTERM")
    checkpoint = out / next(out.glob("*.PREEMPTED")).read_text().split("checkpoint: ")[1].strip()
    with h5py.File(checkpoint) as f:
        parts = int(f.attrs["rank_parts"])  # a strategy state of the model's size: in the rank parts
        memory = int(f["ranks/strategy_size"][0]) if parts else f["ranks/strategy"].shape[1]
    if parts:
        with h5py.File(checkpoint.with_name(checkpoint.name.replace(".hdf5", ".rank-1.hdf5"))) as f:
            assert f["strategy"].shape == (memory,) and f["params"].shape == (0,), "rank 1's memory, no model"
    resume_and_check(cfg, out, expected, resumed_from=step)
    with h5py.File(reference_file) as a, h5py.File(next(out.glob("*.h5"))) as b:
        assert (a["compression/wire_bytes"][...] == b["compression/wire_bytes"][...]).all()
        params = int(a["model"].attrs["parameters"])
    if name == "qsgd":
        assert memory == 0 and not parts, "unbiased compressors run without error feedback: nothing to keep"
    else:
        assert memory >= params and parts, "every rank's error-feedback memory (and PowerSGD's Q), in its rank part"


# Heterogeneous workers: static shares of the global batch (12 and 4 of 16), one rank slowed
# down 1.5x, and ranks of different kinds (ref and cpu; the mlp, which the naive ref backend
# trains quickly). Their shares never change, so the
# checkpoint needs only /partition's per-step records (shares, compute seconds) beside the rest;
# a preempted run resumes bit-exact and its /partition holds every step's shares.
HETERO = SYNC.replace("model: lenet", "model: mlp").replace("batch_per_worker: 8\n", "global_batch: 16\n").replace(
    "dist: {strategy: sync, allreduce: ring, overlap: true}",
    "dist: {strategy: sync, allreduce: ring, overlap: true, partition: static, shares: [12, 4], "
    "emulate_slowdown: {rank: 1, factor: 1.5}}\nranks: [{backend: ref}, {backend: cpu}]")


def test_a_heterogeneous_run_preempted_by_sigterm_resumes_bit_exact(tmp_path_factory):
    cfg, expected = reference(tmp_path_factory, "hetero", HETERO)
    out = cfg.parent / "preempted"
    proc = launch(["run", "--config", cfg, "--out", out])
    for pid in wait_for_ranks_and_checkpoint(proc, out):
        os.kill(pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    step = preempted_marker(out, "SIGTERM")
    resume_and_check(cfg, out, expected, resumed_from=step)
    with h5py.File(next(out.glob("*.h5"))) as f:
        shares = f["partition/shares"][...]
        assert shares.shape == (24, 2) and (shares == [12, 4]).all(), "every step's shares, the resumed ones too"
        assert (f["partition/compute"][...] > 0).all()
        backends = f["partition"].attrs["rank_backends"]
        assert (backends.decode() if isinstance(backends, bytes) else backends) == "ref,cpu"


# Measured shares: equal for 7 steps, then each rank's share follows its measured speed (rank 1
# emulates a 3x slower worker). The decision after step 7 applies from step 11 (the loader's 2
# batches of read-ahead), so the checkpoint at step 8 holds a decided change not yet in force.
# The decision comes from wall-clock speeds, so two runs need not decide alike: the run keeps
# its checkpoints (checkpoint.keep), and resuming it from the one at step 8 (the later one and
# the run file removed, as after a kill) must end with the same run's parameters and shares.
MEASURED = HETERO.replace("\nranks: [{backend: ref}, {backend: cpu}]", "").replace(
    "partition: static, shares: [12, 4], emulate_slowdown: {rank: 1, factor: 1.5}",
    "partition: measured, calibration_steps: 7, emulate_slowdown: {rank: 1, factor: 3.0}").replace(
    "checkpoint: {every_steps: 8}", "checkpoint: {every_steps: 8, keep: true}")


def test_measured_shares_decided_before_a_checkpoint_apply_after_the_resume(tmp_path):
    cfg = write_config(tmp_path / "measured.yaml", MEASURED)
    out = tmp_path / "out"
    proc = mpirun(2, ["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_file,) = out.glob("*.h5")
    with h5py.File(run_file) as f:
        shares = f["partition/shares"][...]
        sha = f["summary"].attrs["params_sha256"]
    decided = shares[-1].tolist()
    assert (shares[:10] == [8, 8]).all() and (shares[10:] == decided).all() and decided[0] > decided[1], shares
    (at8,) = out.glob("*.checkpoint.8.hdf5")
    with h5py.File(at8) as f:
        assert f["ranks/share_changes"][0].tolist() == [1, 8, 8, 11] + decided, "the change due at step 11"
    for path in [run_file, *out.glob("*.checkpoint.16.hdf5")]:
        path.unlink()
    proc = mpirun(2, ["run", "--config", cfg, "--out", out, "--resume"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "resuming after step 8" in proc.stdout, proc.stdout
    with h5py.File(next(out.glob("*.h5"))) as f:
        assert (f["partition/shares"][...] == shares).all(), "the decided shares apply from step 11 again"
        assert f["summary"].attrs["params_sha256"] == sha, "the resumed run ends with the run's own parameters"


# async_ps (issue 14): the weights and momentum live on the server ranks, sharded; a checkpoint
# takes every shard, a resume puts them back before the first push. One worker and two servers
# are deterministic (one order of pushes), so the resumed run ends bit-exact; momentum 0.9 and
# the learning rate schedule read the restored step.
ASYNC_ONE_WORKER = SYNC.replace("workers: 2", "workers: 1").replace(
    "dist: {strategy: sync, allreduce: ring, overlap: true}",
    "momentum: 0.9\nlr_schedule: {kind: cosine}\ndist: {strategy: async_ps, servers: 2, staleness: 0}")


def test_async_ps_preempted_by_sigterm_resumes_bit_exact_with_the_servers_shards(tmp_path_factory):
    cfg, expected = reference(tmp_path_factory, "async1", ASYNC_ONE_WORKER, np=3, workers=1)
    out = cfg.parent / "preempted"
    proc = launch(["run", "--config", cfg, "--out", out], np=3)
    for pid in wait_for_ranks_and_checkpoint(proc, out, np=3):
        os.kill(pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr  # the servers end with the workers' exit code
    step = preempted_marker(out, "SIGTERM")
    with h5py.File(out / next(out.glob("*.PREEMPTED")).read_text().split("checkpoint: ")[1].strip()) as f:
        assert f.attrs["params_per_rank"] == 0, "one copy: the servers' shards"
        assert (f["model/velocity"][...] != 0).any(), "the servers' momentum"
    resume_and_check(cfg, out, expected, resumed_from=step, np=3, workers=1)


# Two workers, one 3x slower, may be 2 steps apart when worker 1 alone gets SIGUSR1: its request
# rides on its next push, server 0 names a step no worker has passed, and both stop there with
# one checkpoint. The resumed run ends after 24 steps with every step in each worker's histogram.
ASYNC_SLOW = SYNC.replace("dist: {strategy: sync, allreduce: ring, overlap: true}",
                          "dist: {strategy: async_ps, servers: 1, staleness: 2, "
                          "emulate_slowdown: {rank: 1, factor: 3.0}}")


def test_async_ps_workers_agree_through_the_server_on_the_step_to_stop_and_resume(tmp_path):
    cfg = write_config(tmp_path / "async_slow.yaml", ASYNC_SLOW)
    out = tmp_path / "out"
    proc = launch(["run", "--config", cfg, "--out", out], np=3)
    ranks = wait_for_ranks_and_checkpoint(proc, out, np=3)
    (slow,) = [pid for pid in ranks if world_rank(pid) == 1]
    os.kill(slow, signal.SIGUSR1)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 4, stdout + stderr
    step = preempted_marker(out, "SIGUSR1")
    assert 8 < step < 24, step
    with h5py.File(out / next(out.glob("*.PREEMPTED")).read_text().split("checkpoint: ")[1].strip()) as f:
        assert f.attrs["step"] == step and f["train/loss"].shape == (step, 2), "both workers stopped at one step"
    resume_and_check(cfg, out, None, resumed_from=step, np=3, workers=2)
    with h5py.File(next(out.glob("*.h5"))) as f:
        assert (f["async_ps/staleness_histogram"][...].sum(axis=1) == 24).all(), "every step once, the resumed ones too"
        assert f["async_ps/max_staleness"][0] == 2, "worker 0 runs ahead to the bound (no lockstep between steps)"


# Time-based checkpoints of async_ps: each worker's clock says when its minutes are due, the
# request rides on its next push, and server 0 names the step; every checkpoint then holds both
# workers at one step (a checkpoint of workers at different steps cannot be written).
def test_async_ps_time_based_checkpoints_fall_on_agreed_steps(tmp_path):
    text = ASYNC_SLOW.replace("checkpoint: {every_steps: 8}", "checkpoint: {every_minutes: 0.0005, keep: true}")
    cfg = write_config(tmp_path / "async_minutes.yaml", text)
    out = tmp_path / "out"
    proc = mpirun(3, ["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = [int(line.split()[2]) for line in proc.stdout.splitlines() if line.startswith("checkpoint: step ")]
    assert len(steps) >= 2 and steps == sorted(set(steps)), proc.stdout
    kept = sorted(out.glob("*.checkpoint.*.hdf5"))
    assert kept, "checkpoint.keep leaves the newest two"
    for path in kept:
        with h5py.File(path) as f:
            step = int(f.attrs["step"])
            assert step in steps and f["train/loss"].shape == (step, 2), (path, steps)
