"""Helpers for tests that run the built `trainscale` binary (build/bin/trainscale)."""
import os
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
# TRAINSCALE_BINARY overrides the binary under test (e.g. build-mpich/bin/trainscale).
BINARY = pathlib.Path(os.environ.get("TRAINSCALE_BINARY", REPO / "build" / "bin" / "trainscale")).resolve()
FMNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")


def env():
    e = dict(os.environ)
    # mpirun/singleton start-up as root in containers and CI (see scripts/env.sh).
    # yield_when_idle: tests run more ranks than the machine has cores (and two tests at once);
    # Open MPI's ranks otherwise spin in their progress loop and a 4-rank job on 2 cores runs
    # 10-30x slower. Never for measurements (bench/ does not use this helper).
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_mpi_yield_when_idle="1")
    return e


def launcher_argv(np_, flavor):
    """The MPI flavor's own launcher for `np_` ranks on this machine (oversubscribed), without the
    program: Open MPI's mpirun, MPICH's mpiexec, Intel MPI's mpiexec.hydra (scripts/impi-mpirun)."""
    import shutil
    if flavor == "mpich":
        launcher = shutil.which("mpiexec.mpich")
        assert launcher, "mpiexec.mpich not found: scripts/setup.sh installs mpich"
        return [launcher, "-n", str(np_)]
    if flavor == "intel":
        return [str(REPO / "scripts" / "impi-mpirun"), "-n", str(np_)]
    launcher = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
    assert launcher, "mpirun not found: scripts/setup.sh installs openmpi-bin"
    return [launcher, "-np", str(np_), "--oversubscribe"]


def site_mpi_entry(flavor):
    """The site file's `mpi:` entry that launches the binary under test with its own flavor."""
    if flavor == "mpich":
        return {"launcher": "mpiexec", "launcher_command": "mpiexec.mpich"}
    if flavor == "intel":
        return {"launcher": "mpiexec", "launcher_command": str(REPO / "scripts" / "impi-mpirun")}
    return {"launcher": "mpirun", "launcher_args": ["--oversubscribe", "--bind-to", "none"]}


def require_binary():
    assert BINARY.exists(), f"{BINARY} is missing: run scripts/build.sh (scripts/test.sh does it)"
    return BINARY


def run(args, timeout=600):
    """Runs trainscale with `args`; returns CompletedProcess with text stdout/stderr."""
    return subprocess.run([str(require_binary())] + [str(a) for a in args], capture_output=True, text=True,
                          env=env(), timeout=timeout, cwd=REPO)


def write_config(path, text):
    path = pathlib.Path(path)
    path.write_text(text)
    return path


# The base config of the campaign tests: LeNet on Fashion-MNIST, one worker, a few steps, no
# evaluation, so a campaign of several runs takes seconds.
CAMPAIGN_BASE = """model: lenet
dataset: {name: fashion_mnist, format: idx, root: /usr/share/datasets/fashion-mnist}
batch_per_worker: 32
lr: 0.05
steps: 4
threads: 1
workers: 1
dist: {strategy: sync, allreduce: mpi, overlap: false}
eval: {every_epochs: 0}
log_every: 2
"""
