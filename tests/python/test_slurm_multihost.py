"""A multi-node Slurm on the test bed's hosts (scripts/testbed-slurm.sh, docs/multihost.md):
slurmctld on this machine, one slurmd inside every host, so an allocation of 2 nodes puts its
ranks on two hosts that talk TCP. Campaigns are expanded with configs/sites/testbed-slurm.yaml
(pointed at the tests' bed) and submitted with `sweep submit --scheduler slurm`.

- Job arrays of 2-node tasks run under every MPI flavor this build has (Open MPI: srun
  --mpi=pmix; MPICH: srun --mpi=pmi2; Intel MPI: its hydra inside the allocation), each rank on
  its own host.
- A task that loses a node (everything on the second host killed, its slurmd included) is marked
  failed with Slurm's reason when the site does not requeue; with `requeue: true` Slurm requeues
  it, and once the node is back it resumes from its checkpoint and finishes.
Skips with the reason where the bed cannot be made (not root); fails when Slurm is missing."""
import json
import os
import shutil
import subprocess
import time

import h5py
import pytest
import yaml

from testbed import BED_ENV
from trainscale_cli import REPO, run, write_config

BASE = """\
model: mlp
dataset: {name: synthetic, format: synthetic, synthetic_samples: 2048}
batch_per_worker: 8
lr: 0.05
steps: STEPS
threads: 1
workers: 2
dist: {strategy: sync, allreduce: ring, overlap: true, timeout_s: 60}
eval: {every_epochs: 0}
log_every: 500
"""
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")
# How often a wait looks at the campaign: short, so a test goes on soon after what it waits for
# happens; each wait keeps its own deadline.
POLL_S = 0.2
# A lost node is DOWN (its jobs NODE_FAIL) at the first ping round that starts SlurmdTimeout s
# after its last answer; slurmctld pings every SlurmdTimeout / 3 s, but a ping to a dead slurmd
# retries its connection once a second for MessageTimeout s before the next round can start.
# The script's 10 and 5 down a lost node 15-20 s after the crash; 5 and 3, about 10 s.
# Safe for the tests: a live slurmd answers a ping or an RPC in milliseconds even on a loaded
# machine, so it would have to be silent for 5 s, through several pings, to be taken for lost,
# and 3 s is still many times the longest round trip of the tests' RPCs (a step launch).
SLURMD_TIMEOUT_S = 5
MESSAGE_TIMEOUT_S = 3
# The requeued task: a checkpoint every CHECKPOINT_STEPS steps, and STEPS_AFTER_CHECKPOINT steps
# more to go when the node is lost right after its first one (the test crashes the node within
# a second of seeing it; at the fastest rate seen on the bed, 1,400 steps/s, 10,000 steps are 7 s).
# The resumed attempt trains those steps again, so they are what the test's length is made of.
CHECKPOINT_STEPS = 1000
STEPS_AFTER_CHECKPOINT = 10000


@pytest.fixture(scope="module")
def slurm(testbed):
    missing = [t for t in SLURM_TOOLS if shutil.which(t) is None]
    if missing:
        pytest.fail(f"the multi-node Slurm test needs {', '.join(missing)}: scripts/setup.sh installs slurm-wlm and munge")
    script = [str(REPO / "scripts" / "testbed.sh"), "slurm"]
    up = subprocess.run(script + ["up", "--slurmd-timeout", str(SLURMD_TIMEOUT_S), "--message-timeout",
                                  str(MESSAGE_TIMEOUT_S)], capture_output=True, text=True, env=testbed.script_env,
                        timeout=120)
    assert up.returncode == 0, up.stdout + up.stderr
    conf = up.stdout.strip().split("SLURM_CONF=", 1)[1]
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    try:
        yield script
    finally:
        subprocess.run(script + ["down"], capture_output=True, text=True, env=testbed.script_env, timeout=120)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def bed_site(testbed, tmp_path, requeue=True):
    """configs/sites/testbed-slurm.yaml pointed at the tests' bed."""
    site = (REPO / "configs" / "sites" / "testbed-slurm.yaml").read_text()
    for default, ours in (("/run/trainscale-testbed", str(testbed.dir)),
                          ("10.213.0.", BED_ENV["TRAINSCALE_TESTBED_SUBNET"] + ".")):
        assert default in site
        site = site.replace(default, ours)
    for build in ("build-mpich", "build-impi"):
        site = site.replace(f"binary: {build}/bin/trainscale", f"binary: {REPO / build / 'bin/trainscale'}")
    site = site.replace("launcher_command: scripts/impi-mpirun", f"launcher_command: {REPO / 'scripts/impi-mpirun'}")
    if not requeue:
        site = site.replace("requeue: true", "requeue: false")
    return write_config(tmp_path / "site.yaml", site)


def campaign(tmp_path, site, name, sweep, steps, extra=""):
    write_config(tmp_path / "base.yaml", BASE.replace("STEPS", str(steps)) + extra)
    path = write_config(tmp_path / f"{name}.yaml", f"campaign: {name}\nbase: base.yaml\n{sweep}")
    out = tmp_path / name
    res = run(["sweep", "expand", path, "--site", site, "--out", out])
    assert res.returncode == 0, res.stderr
    res = run(["sweep", "submit", out, "--scheduler", "slurm"])
    assert res.returncode == 0, res.stdout + res.stderr
    return out, yaml.safe_load((out / "manifest.yaml").read_text())["runs"]


def status(camp):
    res = run(["sweep", "status", camp, "--format", "json"])
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def wait_for(what, check, timeout, camp):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = status(camp)
        if check(st):
            return st
        time.sleep(POLL_S)
    queue = subprocess.run(["squeue", "-t", "all", "-o", "%i %T %r %N"], capture_output=True, text=True).stdout
    pytest.fail(f"{what} not within {timeout} s: {status(camp)}\n{queue}")


def flavors():
    have = ["openmpi", "mpich"]
    if (REPO / "build-impi" / "bin" / "trainscale").exists():
        have.append("intel")
    return have


def test_two_node_job_arrays_run_every_flavor_across_hosts(slurm, testbed, tmp_path):
    site = bed_site(testbed, tmp_path)
    camp, runs = campaign(tmp_path, site, "flavors", f"matrix: {{mpi_flavor: {flavors()}, lr: [0.05, 0.1]}}\n", 20)
    assert len(list((camp / "jobs").glob("s*.slurm"))) == len(flavors()), "one array of 2 tasks per flavor"
    assert "#SBATCH --nodes=2" in (camp / "jobs" / "s0.slurm").read_text()
    st = wait_for("every task done", lambda s: s["done"] == len(runs) or s["failed"], 240, camp)
    assert st["done"] == len(runs), st
    seen = set()
    for r in runs:
        with h5py.File(camp / "runs" / f"{r['run_id']}.h5") as f:
            assert f.attrs["rank_hosts"] == ",".join(testbed.hosts), "one rank on each host"
            assert f.attrs["local_ranks"] == "0,0"
            seen.add(f.attrs["mpi_flavor"])
    assert seen == set(flavors())


def lose_second_host(slurm, testbed, camp, run_id, ready):
    """Kills everything on the second host (its slurmd too) once `ready()` says the task trains."""
    deadline = time.time() + 120
    while not ready():
        assert time.time() < deadline, f"task {run_id} did not get going within 120 s: {status(camp)}"
        time.sleep(POLL_S)
    crash = subprocess.run(slurm + ["crash", testbed.hosts[1]], capture_output=True, text=True,
                           env=testbed.script_env, timeout=60)
    assert crash.returncode == 0, crash.stderr


def test_a_task_that_loses_a_node_is_failed_with_slurms_reason(slurm, testbed, tmp_path):
    site = bed_site(testbed, tmp_path, requeue=False)
    camp, runs = campaign(tmp_path, site, "lost", "matrix: {seed: [1]}\n", 1000000)
    rid = runs[0]["run_id"]
    assert "#SBATCH --no-requeue" in (camp / "jobs" / "s0.slurm").read_text()
    log = camp / "logs" / f"{rid}.attempt1.log"
    try:
        lose_second_host(slurm, testbed, camp, rid, lambda: log.exists() and "step 500/" in log.read_text())
        st = wait_for("the task failed", lambda s: s["failed"], 120, camp)
    finally:
        subprocess.run(slurm + ["restart", testbed.hosts[1]], capture_output=True, env=testbed.script_env, timeout=60)
    (failed,) = st["failed"]
    # The job script records Slurm's words when it outlives the launcher long enough (KillWait):
    # srun's "Node failure on HOST" or slurmstepd's "CANCELLED ... DUE TO NODE FAILURE", whichever
    # reached the log first; else status finds the attempt's job gone from the queue: failed
    # either way, saying why.
    assert f"Node failure on {testbed.hosts[1]}" in failed["reason"] or \
        ("Slurm: " in failed["reason"] and "DUE TO NODE FAILURE" in failed["reason"]) or \
        "its job is no longer in the scheduler's queue" in failed["reason"], failed
    assert not (camp / "runs" / f"{rid}.RUNNING").exists(), "the lost attempt is not shown running"


def test_a_requeued_task_that_lost_a_node_resumes_from_its_checkpoint(slurm, testbed, tmp_path):
    site = bed_site(testbed, tmp_path, requeue=True)
    camp, runs = campaign(tmp_path, site, "requeued", "matrix: {seed: [2]}\n", CHECKPOINT_STEPS + STEPS_AFTER_CHECKPOINT,
                          extra=f"checkpoint: {{every_steps: {CHECKPOINT_STEPS}}}\n")
    rid = runs[0]["run_id"]
    try:
        lose_second_host(slurm, testbed, camp, rid,
                         lambda: bool(list((camp / "runs").glob(f"{rid}.checkpoint.*.hdf5"))))
        wait_for("the task requeued", lambda s: s["pending"] == 1, 120, camp)
    finally:
        restart = subprocess.run(slurm + ["restart", testbed.hosts[1]], capture_output=True, text=True,
                                 env=testbed.script_env, timeout=60)
        assert restart.returncode == 0, restart.stdout + restart.stderr
    st = wait_for("the task done", lambda s: s["done"] == 1 or s["failed"], 240, camp)
    assert st["done"] == 1, st
    with h5py.File(camp / "runs" / f"{rid}.h5") as f:
        assert f.attrs["resumed_from_step"] >= CHECKPOINT_STEPS and f.attrs["attempt"] == 2
        assert f.attrs["rank_hosts"] == ",".join(testbed.hosts)
    log = (camp / "logs" / f"{rid}.attempt2.log").read_text()
    assert "scheduler_restarts: 1" in log and "resuming after step" in log, log
