"""A SIGTERM during a run's start-up (issue 35; docs/reliability.md "Preemption"): before the
first step there is no step boundary to stop at, and a scheduler's SIGTERM used to leave the
process listing or copying a large data root for minutes. The start-up here is slow for real: a
data root of many small files staged node-locally (`dataset.stage: node_local`) file by file. The
signal is sent once the run has taken over SIGTERM (blocked in its main thread, /proc/PID/status
SigBlk), and the run must stop inside the walk: the message counts the files listed or copied,
fewer than the tree holds. Exit 1 when nothing can be resumed, exit 4 with a PREEMPTED marker naming an
earlier attempt's checkpoint; also under mpirun with 2 ranks, every rank signalled as Slurm's
scancel does."""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

from small_idx import write_small_idx
from test_cli_mpi import mpi_flavor
from test_failures_ranks import rank_pids
from trainscale_cli import REPO, env, launcher_argv, require_binary, write_config

FILES = 20000  # small files besides the data set: staging copies them one by one
HANG_GUARD_S = 300  # only against a hang; nothing here is judged by time

CONFIG = """\
model: lenet
dataset: {{name: fashion_mnist, root: "{root}", stage: node_local, stage_dir: "{scratch}", cache: warm}}
batch_per_worker: 32
steps: {steps}
lr: 0.05
threads: 1
workers: {workers}
eval: {{every_epochs: 0}}
"""


def data_root(tmp_path):
    root = write_small_idx(tmp_path / "data")
    extra = root / "extra"
    extra.mkdir()
    for i in range(FILES):
        (extra / f"f{i:05d}.bin").write_bytes(b"x" * 64)
    return root


def config(tmp_path, root, steps=4, workers=1, extra=""):
    text = CONFIG.format(root=root, scratch=tmp_path / "scratch", steps=steps, workers=workers) + extra
    return write_config(tmp_path / "run.yaml", text)


def takes_sigterm(pid):
    """Whether the process catches SIGTERM and blocks it in its main thread: trainscale run does
    so once its preemption handling is installed (core/preemption_signal.h), before the start-up's
    loops."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    bit = 1 << (signal.SIGTERM - 1)
    # Both: the MPI library's start-up may block every signal for a moment before the handler is in.
    return all(int(re.search(rf"^{field}:\s*([0-9a-f]+)", status, re.M).group(1), 16) & bit
               for field in ("SigBlk", "SigCgt"))


def wait_until_it_takes_sigterm(proc, pids):
    while not all(takes_sigterm(pid) for pid in pids):
        assert proc.poll() is None, "the run ended before it took over SIGTERM: " + proc.stderr.read()
        time.sleep(0.005)


def stop_during_startup(argv, tmp_path, np_=1):
    """Starts argv, SIGTERMs its rank(s) once they take the signal, returns (exit code, stderr)."""
    shutil.rmtree(tmp_path / "scratch", ignore_errors=True)  # no staged copy to reuse
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)
    try:
        pids = [proc.pid] if np_ == 1 else list(rank_pids(proc.pid, np_).values())
        wait_until_it_takes_sigterm(proc, pids)
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out + err


def stopped_inside_the_walk(text, root):
    """It stopped listing the tree or copying it, with fewer entries done than the tree holds."""
    listing = re.search(rf"listing data directory {re.escape(str(root))}\S*, (\d+) entries so far", text)
    copying = re.search(r"dataset\.stage node_local: copied (\d+) of (\d+) files", text)
    assert listing or copying, text
    if listing:
        assert int(listing.group(1)) < FILES, text
    else:
        assert int(copying.group(2)) >= FILES and int(copying.group(1)) < int(copying.group(2)), text


def trainscale(cfg, out, *more):
    return [str(require_binary()), "run", "--config", str(cfg), "--out", str(out), *more]


def test_sigterm_during_staging_ends_the_run_with_exit_1_saying_where(tmp_path):
    root = data_root(tmp_path)
    cfg = config(tmp_path, root)
    code, text = stop_during_startup(trainscale(cfg, tmp_path / "out"), tmp_path)
    assert code == 1, text
    assert "stopped by SIGTERM during start-up, before the first step" in text and "no checkpoint" in text, text
    stopped_inside_the_walk(text, root)
    assert not list((tmp_path / "scratch").rglob("*.tmp-*")), "the partial copy was left behind"
    failed = list((tmp_path / "out").glob("*.FAILED"))
    assert failed and "during start-up" in failed[0].read_text()
    assert not list((tmp_path / "out").glob("*.h5"))


def test_sigterm_during_staging_with_a_checkpoint_to_resume_exits_4(tmp_path):
    root = data_root(tmp_path)
    cfg = config(tmp_path, root, extra="checkpoint: {every_steps: 1, keep: true}\n")
    first = subprocess.run(trainscale(cfg, tmp_path / "out"), capture_output=True, text=True, env=env(),
                           timeout=HANG_GUARD_S, cwd=REPO)
    assert list((tmp_path / "out").glob("*.checkpoint.3.hdf5")), first.stdout + first.stderr
    for left in list((tmp_path / "out").glob("*.h5")) + list((tmp_path / "out").glob("*.FAILED")):
        left.unlink()  # as if the attempt had been killed: only its checkpoints are left
    code, text = stop_during_startup(trainscale(cfg, tmp_path / "out", "--resume"), tmp_path)
    assert code == 4, text
    assert "preempted" in text and "during start-up" in text and ".checkpoint.3.hdf5" in text, text
    stopped_inside_the_walk(text, root)
    marker = next((tmp_path / "out").glob("*.PREEMPTED")).read_text()
    assert "signal: SIGTERM" in marker and "checkpoint.3.hdf5" in marker, marker


def test_sigterm_to_both_ranks_during_staging_ends_the_job(tmp_path):
    root = data_root(tmp_path)
    cfg = config(tmp_path, root, workers=2)
    argv = launcher_argv(2, mpi_flavor()) + trainscale(cfg, tmp_path / "out")
    code, text = stop_during_startup(argv, tmp_path, np_=2)
    assert code == 1, text
    assert "stopped by SIGTERM during start-up" in text, text
    stopped_inside_the_walk(text, root)
    assert list((tmp_path / "out").glob("*.FAILED"))


def test_sigterm_during_a_campaign_stage_in_fails_the_task_saying_where(tmp_path):
    """A site storage staged from another (`stage_from`) is copied by the task before the run."""
    (tmp_path / "shared").mkdir()
    data_root(tmp_path / "shared")  # shared/data: the data set and its many small files
    site = write_config(tmp_path / "site.yaml", f"""scheduler: local
mpi: {{openmpi: {{launcher: mpirun, launcher_args: [--oversubscribe]}}}}
storage:
  local: {{}}
  shared: {{path: {tmp_path / "shared"}}}
  node: {{path: {tmp_path / "node"}, stage_from: shared}}
""")
    base = CONFIG.format(root="/data/data", scratch=tmp_path / "scratch", steps=4, workers=1)
    base = base.replace(", stage: node_local", ", storage: node, stage: none")
    write_config(tmp_path / "base.yaml", base)
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: staged\nbase: base.yaml\nmatrix: {seed: [1]}\n")
    camp = tmp_path / "campaign"
    expand = subprocess.run([str(require_binary()), "sweep", "expand", str(sweep), "--site", str(site), "--out", str(camp)],
                            capture_output=True, text=True, env=env(), cwd=REPO, timeout=120)
    assert expand.returncode == 0, expand.stderr
    code, text = stop_during_startup([str(require_binary()), "run", "--manifest", str(camp), "--index", "0"], tmp_path)
    assert code == 1, text
    found = re.search(r"stopped by SIGTERM during start-up, before the first step \(stage-in: copied (\d+) entries", text)
    assert found and int(found.group(1)) < FILES, text
    assert not list((tmp_path / "node").glob("*.tmp-*")), "the partial copy was left behind"
    (failed,) = (camp / "runs").glob("*.FAILED")
    assert "during start-up" in failed.read_text()


def test_sigterm_to_both_ranks_during_staging_with_a_checkpoint_exits_4(tmp_path):
    root = data_root(tmp_path)
    cfg = config(tmp_path, root, workers=2, extra="checkpoint: {every_steps: 1, keep: true}\n")
    launcher = launcher_argv(2, mpi_flavor())
    first = subprocess.run(launcher + trainscale(cfg, tmp_path / "out"), capture_output=True, text=True, env=env(),
                           timeout=HANG_GUARD_S, cwd=REPO)
    assert list((tmp_path / "out").glob("*.checkpoint.3.hdf5")), first.stdout + first.stderr
    for left in list((tmp_path / "out").glob("*.h5")) + list((tmp_path / "out").glob("*.FAILED")):
        left.unlink()
    code, text = stop_during_startup(launcher + trainscale(cfg, tmp_path / "out", "--resume"), tmp_path, np_=2)
    assert code == 4, text
    assert "preempted" in text and "during start-up" in text, text
    stopped_inside_the_walk(text, root)
    assert "checkpoint.3.hdf5" in next((tmp_path / "out").glob("*.PREEMPTED")).read_text()
