"""Campaign state with real faults (docs/reliability.md "Campaign state", "Preemption"):

- a DONE marker counts only when its run file is complete: garbage bytes, a file cut in half and
  a file without /summary behind DONE are failed runs with the reason, a deleted file a missing
  one (as the analysis says), and `sweep resubmit --failed` / `--missing` run them again;
- a task whose `runs/<run_id>.lock` another process holds is skipped (exit 0, no attempt, no
  FAILED marker), by the task runner and by the local executor; two concurrent local submits of
  one campaign run every task exactly once (counted by attempt logs);
- a real SIGINT to a real local submit leaves no mpirun or rank running, marks the task, and the
  next submit never starts a task that is still running;
- a task that ends PREEMPTED (SIGUSR1 forwarded by the executor or by the generated job
  script) is `preempted` in `sweep status`, and `sweep resubmit --preempted` finishes it (with a
  stand-in trainer until the trainer's checkpointing is there; the end-to-end test with the real
  trainer runs once `trainscale run --resume` exists);
- shapes that can never fit the node are refused before anything is submitted;
- pending tasks show the scheduler's reason (a squeue and a qstat on PATH that answer like the
  real ones; tests/python/test_slurm_integration.py asks a real Slurm).
"""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import h5py
import pytest
import yaml

from trainscale_cli import CAMPAIGN_BASE, BINARY, REPO, env, run, write_config

BASE = CAMPAIGN_BASE

LOCAL_SITE = """scheduler: local
node: {cores: 2}
env:
  OMPI_ALLOW_RUN_AS_ROOT: "1"
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: "1"
  OMPI_MCA_btl_vader_single_copy_mechanism: none
mpi:
  openmpi: {launcher: mpirun, launcher_args: [--oversubscribe, --bind-to, none]}
storage:
  local: {}
"""


def expand(tmp_path, sweep_body, base=BASE, site_text=LOCAL_SITE, name="campaign"):
    write_config(tmp_path / "base.yaml", base)
    sweep = write_config(tmp_path / f"{name}.yaml", f"campaign: {name}\nbase: base.yaml\n" + sweep_body)
    site = write_config(tmp_path / f"{name}-site.yaml", site_text)
    out = tmp_path / name
    res = run(["sweep", "expand", sweep, "--site", site, "--out", out])
    assert res.returncode == 0, res.stderr
    return out, yaml.safe_load((out / "manifest.yaml").read_text())["runs"]


def status(camp, extra_env=None):
    e = env()
    e.update(extra_env or {})
    res = subprocess.run([str(BINARY), "sweep", "status", str(camp), "--format", "json"], capture_output=True, text=True,
                         env=e, cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def attempts(camp, run_id):
    return sorted(p.name for p in (camp / "logs").glob(f"{run_id}.attempt*.log"))


def processes_mentioning(text):
    """Pids of live processes whose command line contains `text` (zombies excluded)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            pids.append(int(entry))
    return pids


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {timeout} s")


def test_done_marker_counts_only_with_a_complete_run_file(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02, 0.03, 0.04, 0.05]}\n")
    res = run(["sweep", "submit", camp])
    assert res.returncode == 0, res.stdout + res.stderr
    assert status(camp)["done"] == 5
    files = [camp / "runs" / f"{r['run_id']}.h5" for r in runs]
    files[0].write_bytes(os.urandom(4096))                  # garbage
    whole = files[1].read_bytes()
    files[1].write_bytes(whole[: len(whole) // 2])          # cut in half
    files[2].unlink()                                        # deleted
    with h5py.File(files[3], "a") as f:                      # opens, but no /summary
        del f["summary"]
    st = status(camp)
    assert (st["done"], len(st["failed"]), st["missing"]) == (1, 3, 1), st
    reasons = {f["index"]: f["reason"] for f in st["failed"]}
    assert reasons[0].startswith(f"run file unreadable behind DONE (runs/{runs[0]['run_id']}.h5: does not open as HDF5")
    assert reasons[1].startswith(f"run file unreadable behind DONE (runs/{runs[1]['run_id']}.h5")
    assert reasons[3] == f"run file incomplete behind DONE (runs/{runs[3]['run_id']}.h5: no /summary group)"
    text = run(["sweep", "status", camp]).stdout
    assert "done 1, diverged 0, failed 3" in text and "behind DONE" in text
    # A deleted run file behind DONE: missing, in sweep status and in the analysis alike (issue 35;
    # status said failed, the analysis missing).
    assert f"  missing 2  {runs[2]['run_id']}: run file missing behind DONE (runs/{runs[2]['run_id']}.h5)" in text, text
    from trainscale_analysis import load_campaigns
    df = load_campaigns([camp]).set_index("run_id")
    assert df.loc[runs[2]["run_id"], "status"] == "missing"
    assert df.loc[runs[2]["run_id"], "message"] == f"run file missing behind DONE (runs/{runs[2]['run_id']}.h5)"
    assert [df.loc[runs[k]["run_id"], "status"] for k in (0, 1, 3)] == ["unreadable"] * 3

    res = run(["sweep", "resubmit", camp, "--failed"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resubmitting 3 runs (indices 0,1,3)" in res.stdout
    assert status(camp)["missing"] == 1
    res = run(["sweep", "resubmit", camp, "--missing"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resubmitting 1 runs (indices 2)" in res.stdout
    st = status(camp)
    assert (st["done"], st["failed"], st["missing"]) == (5, [], 0), st
    for k in range(4):
        assert attempts(camp, runs[k]["run_id"]) == [f"{runs[k]['run_id']}.attempt1.log", f"{runs[k]['run_id']}.attempt2.log"]
        log = (camp / "logs" / f"{runs[k]['run_id']}.attempt2.log").read_text()
        assert "stale DONE removed: run file" in log and "result: done" in log
        with h5py.File(files[k]) as f:
            assert f.attrs["status"] == "ok" and "summary" in f
    # Broken files are kept aside for inspection, out of the analysis' way (*.h5).
    assert sorted(p.name for p in (camp / "runs").glob("*.invalid")) == \
        sorted(f"{runs[k]['run_id']}.h5.invalid" for k in (0, 1, 3))
    assert attempts(camp, runs[4]["run_id"]) == [f"{runs[4]['run_id']}.attempt1.log"]


def test_a_run_file_copied_over_another_runs_name_is_not_its_result(tmp_path):
    """Issue 35: `cp runs/A-r0.h5 runs/B-r0.h5` behind B's DONE marker does not make B done: the
    file's root run_id and config_id are A's. sweep status says whose file it is, the analysis
    reports it unreadable (A is listed once), and submit runs B again, keeping the copy aside."""
    from trainscale_analysis import load_campaigns

    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02]}\n")
    res = run(["sweep", "submit", camp])
    assert res.returncode == 0, res.stdout + res.stderr
    a, b = runs[0]["run_id"], runs[1]["run_id"]
    shutil.copyfile(camp / "runs" / f"{a}.h5", camp / "runs" / f"{b}.h5")
    st = status(camp)
    assert st["done"] == 1 and [f["index"] for f in st["failed"]] == [1], st
    assert st["failed"][0]["reason"].startswith(
        f"run file of another run behind DONE (runs/{b}.h5 holds run_id '{a}', config_id '{runs[0]['config_id']}'"), st
    df = load_campaigns([camp]).set_index("run_id")
    assert list(df.index) == [a, b]
    assert df.loc[b, "status"] == "unreadable" and f"holds run_id {a}" in df.loc[b, "message"], df.loc[b, "message"]
    assert df.loc[a, "status"] == "ok"
    res = run(["sweep", "submit", camp])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 runs already done" in res.stdout, res.stdout
    assert status(camp)["done"] == 2
    with h5py.File(camp / "runs" / f"{b}.h5") as f:
        assert attr_text(f.attrs["run_id"]) == b
    assert (camp / "runs" / f"{b}.h5.invalid").exists()
    assert (load_campaigns([camp]).status == "ok").sum() == 2


def attr_text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def test_a_task_whose_lock_is_held_is_skipped_not_failed(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02]}\n")
    rid = runs[0]["run_id"]
    (camp / "runs").mkdir(exist_ok=True)
    with open(camp / "runs" / f"{rid}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another task runner, as far as trainscale can tell
        res = run(["run", "--manifest", camp, "--index", 0])
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"skipped: another process holds {camp}/runs/{rid}.lock" in res.stdout, res.stdout
        assert attempts(camp, rid) == []
        assert not any((camp / "runs" / f"{rid}.{m}").exists() for m in ("FAILED", "RUNNING", "DONE"))
        # The local executor reports the skip and counts no failure; the other run is done.
        res = run(["sweep", "submit", camp])
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"index 0 {rid} (lr=0.01): skipped: another process holds its lock" in res.stdout, res.stdout
        assert "1 runs finished (done or diverged), 0 failed, 0 preempted, 1 skipped" in res.stdout
        assert not (camp / "runs" / f"{rid}.FAILED").exists()
        assert status(camp)["missing"] == 1
    res = run(["run", "--manifest", camp, "--index", 0])  # the lock is free again
    assert res.returncode == 0, res.stdout + res.stderr
    assert attempts(camp, rid) == [f"{rid}.attempt1.log"] and status(camp)["done"] == 2


def test_two_concurrent_local_submits_run_each_task_once(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02, 0.03, 0.04]}\n")
    cmd = [str(BINARY), "sweep", "submit", str(camp)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=REPO)
             for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for r in runs:
        assert len(attempts(camp, r["run_id"])) == 1, (r["run_id"], outs)
    st = status(camp)
    assert (st["done"], st["failed"], st["missing"]) == (4, [], 0), st


def test_a_running_marker_whose_pid_is_another_process_is_stale(tmp_path):
    """Issue 35: a RUNNING marker whose pid now belongs to an unrelated process (pid reuse) blocked
    its task for ever. The marker's pid_start (the process's start time) must match; without one,
    the process must be a trainscale. `pid: 1` (init) and a live `sleep` of another start time are
    stale markers: the task is failed, and the next submit runs it."""
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02]}\n")
    host = socket.gethostname()
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        with open(f"/proc/{sleeper.pid}/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22
        marker = {r["run_id"]: camp / "runs" / f"{r['run_id']}.RUNNING" for r in runs}
        marker[runs[0]["run_id"]].write_text(f"attempt: 1\nhost: {host}\npid: 1\n")
        marker[runs[1]["run_id"]].write_text(f"attempt: 1\nhost: {host}\npid: {sleeper.pid}\npid_start: {started}\n")
        st = status(camp)
        assert ([f["index"] for f in st["failed"]], st["running"]) == ([0], 1), st  # the sleep is the marker's process
        marker[runs[1]["run_id"]].write_text(f"attempt: 1\nhost: {host}\npid: {sleeper.pid}\npid_start: {started + 1}\n")
        st = status(camp)
        assert ([f["index"] for f in st["failed"]], st["running"]) == ([0, 1], 0), st
        for f in st["failed"]:
            assert "ended without a result (killed?; its pid is now another process's)" in f["reason"], f
        res = run(["sweep", "submit", camp])
        assert res.returncode == 0, res.stdout + res.stderr
        assert "running or queued" not in res.stdout, res.stdout
        st = status(camp)
        assert (st["done"], st["failed"]) == (2, []), st
        assert sleeper.poll() is None, "the unrelated process was left alone"
    finally:
        sleeper.kill()
        sleeper.wait()


def two_rank_long_campaign(tmp_path, extra_base=""):
    base = BASE.replace("steps: 4", "steps: 100000").replace("log_every: 2", "log_every: 5") + extra_base
    return expand(tmp_path, "matrix: {workers: [2]}\n", base=base)


def start_submit(camp, *args):
    return subprocess.Popen([str(BINARY), "sweep", "submit", str(camp), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env(), cwd=REPO)


def wait_training(camp, run_id, proc, timeout=120):
    log = camp / "logs" / f"{run_id}.attempt1.log"
    wait_for(lambda: proc.poll() is not None or (log.exists() and "step 10/" in log.read_text()), timeout,
             "training of the 2-rank run")
    assert proc.poll() is None, proc.stdout.read()


def test_sigint_to_the_local_executor_leaves_nothing_running(tmp_path):
    camp, runs = two_rank_long_campaign(tmp_path)
    rid = runs[0]["run_id"]
    proc = start_submit(camp)
    wait_training(camp, rid, proc)
    assert len(processes_mentioning(str(camp))) >= 3  # mpirun and its two ranks
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert "interrupted by SIGINT" in out, out
    # With the trainer's checkpointing the task ends preempted (exit 4), before it failed
    # "interrupted" (exit 1); either way nothing of it is left running.
    assert proc.returncode in (1, 4), out
    wait_for(lambda: not processes_mentioning(str(camp)), 10, "the end of every process of the task")
    assert not (camp / "runs" / f"{rid}.RUNNING").exists()
    st = status(camp)
    if proc.returncode == 1:
        assert [f["index"] for f in st["failed"]] == [0], st
        assert st["failed"][0]["reason"].startswith("interrupted by SIGINT: the local executor stopped the task"), st
    else:
        assert [p["index"] for p in st["preempted"]] == [0], st


def test_the_next_submit_does_not_start_a_task_that_is_still_running(tmp_path):
    camp, runs = two_rank_long_campaign(tmp_path)
    rid = runs[0]["run_id"]
    # A task runner left over from an earlier submission (started here directly, as a job
    # array or an orphaned launcher would run it).
    task = subprocess.Popen(["mpirun", "-np", "2", "--oversubscribe", str(BINARY), "run", "--manifest", str(camp),
                             "--index", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(),
                            start_new_session=True)
    try:
        wait_training(camp, rid, task)
        assert "\npid_start: " in (camp / "runs" / f"{rid}.RUNNING").read_text()  # the attempt's start time
        res = run(["sweep", "submit", camp])
        assert res.returncode == 0, res.stdout + res.stderr
        assert "1 runs running or queued" in res.stdout and "nothing to submit" in res.stdout, res.stdout
        assert attempts(camp, rid) == [f"{rid}.attempt1.log"]
        assert status(camp)["running"] == 1
    finally:
        os.killpg(task.pid, signal.SIGKILL)
        task.wait()
        for pid in processes_mentioning(str(camp)):
            os.kill(pid, signal.SIGKILL)
    # Its ranks died with it (a process may take a moment to finish dying): the dead RUNNING
    # marker then reads as failed.
    wait_for(lambda: not processes_mentioning(str(camp)) and status(camp)["failed"], 30, "the end of the killed task")
    st = status(camp)
    assert [f["index"] for f in st["failed"]] == [0] and "ended without a result" in st["failed"][0]["reason"], st


# Stands in for the trainer under mpirun: on SIGUSR1 it does what the trainer does when it is
# preempted (a PREEMPTED marker after its checkpoint, exit 4). `run --manifest DIR --index I`.
FAKE_TRAINER = """#!/bin/bash
dir="$3"
trap 'printf "reason: SIGUSR1 at step 7; checkpoint at step 5\\nattempt: 1\\n" > "$dir/runs/$FAKE_RUN_ID.PREEMPTED"; exit 4' USR1
touch "$dir/runs/$FAKE_RUN_ID.started"
while true; do sleep 0.1; done
"""


def fake_trainer_site(tmp_path, run_id, scheduler="local"):
    fake = write_config(tmp_path / "fake-trainscale", FAKE_TRAINER)
    fake.chmod(0o755)
    site = LOCAL_SITE.replace("scheduler: local", f"scheduler: {scheduler}").replace(
        "launcher_args: [--oversubscribe, --bind-to, none]}",
        f"launcher_args: [--oversubscribe, --bind-to, none], binary: {fake}}}")
    return site.replace("env:\n", f"env:\n  FAKE_RUN_ID: {run_id}\n")


def test_preempted_task_is_resubmitted_with_resubmit_preempted(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02]}\n")
    rid = runs[0]["run_id"]
    real_site = (camp / "site.yaml").read_text()
    (camp / "site.yaml").write_text(fake_trainer_site(tmp_path, rid))
    proc = start_submit(camp, "--throttle", "1")
    wait_for(lambda: (camp / "runs" / f"{rid}.started").exists(), 60, "the start of the stand-in trainer")
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 4, out  # interrupted, nothing failed: resumable
    assert f"index 0 {rid} (lr=0.01): preempted: SIGUSR1 at step 7; checkpoint at step 5" in out, out
    assert "1 not started (interrupted)" in out, out
    st = status(camp)
    assert [(p["index"], p["reason"]) for p in st["preempted"]] == [(0, "SIGUSR1 at step 7; checkpoint at step 5 [attempt 1]")]
    assert (st["failed"], st["missing"]) == ([], 1), st
    assert "preempted 1" in run(["sweep", "status", camp]).stdout

    # --failed and --missing keep their meaning; --preempted takes exactly the preempted run.
    (camp / "site.yaml").write_text(real_site)
    res = run(["sweep", "resubmit", camp, "--failed"])
    assert res.returncode == 0 and "resubmitting 0 runs" in res.stdout, res.stdout + res.stderr
    res = run(["sweep", "resubmit", camp, "--preempted"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resubmitting 1 runs (indices 0)" in res.stdout
    st = status(camp)
    assert (st["done"], st["preempted"], st["missing"]) == (1, [], 1), st
    res = run(["sweep", "resubmit", camp, "--missing"])
    assert res.returncode == 0 and status(camp)["done"] == 2, res.stdout + res.stderr


@pytest.mark.parametrize("scheduler,sig", [("slurm", signal.SIGUSR1), ("pbs", signal.SIGTERM)])
def test_job_script_forwards_preemption_signals(tmp_path, scheduler, sig):
    """Slurm's --signal=B:USR1@N and PBS's SIGTERM before the kill reach the batch shell; the
    generated script passes them on to the launcher, the ranks end preempted (exit 4)."""
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01]}\n")
    rid = runs[0]["run_id"]
    (camp / "site.yaml").write_text(fake_trainer_site(tmp_path, rid, scheduler))
    res = run(["sweep", "submit", camp, "--dry-run"])
    assert res.returncode == 0, res.stdout + res.stderr
    script = camp / "jobs" / f"s0.{scheduler}"
    e = {k: v for k, v in env().items() if not k.startswith(("SLURM_", "PBS_"))}
    e.update(SLURM_ARRAY_TASK_ID="0", SLURM_RESTART_COUNT="2") if scheduler == "slurm" else e.update(PBS_ARRAY_INDEX="0")
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e)
    wait_for(lambda: (camp / "runs" / f"{rid}.started").exists(), 60, "the start of the stand-in trainer")
    proc.send_signal(sig)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 4, out
    assert (camp / "runs" / f"{rid}.PREEMPTED").exists()
    assert not processes_mentioning(str(camp)), "a rank outlived its job script"
    assert [p["index"] for p in status(camp)["preempted"]] == [0]


ARGS_RECORDER = """#!/bin/bash
printf '%s\\n' "$@" > "$3/runs/$FAKE_RUN_ID.args"
"""


@pytest.mark.parametrize("run_count,restarts", [("3", "2"), ("1", "0"), (None, "0")])
def test_pbs_script_passes_the_jobs_run_count_as_scheduler_restarts(tmp_path, run_count, restarts):
    """PBS sets no restart count; the generated script asks `qstat -f $PBS_JOBID` for the job's
    run_count (every start, this one included) and passes run_count - 1 as --restart-count, 0
    when qstat does not answer (here: a stand-in qstat, or none at all)."""
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01]}\n")
    rid = runs[0]["run_id"]
    site = fake_trainer_site(tmp_path, rid, "pbs")
    recorder = write_config(tmp_path / "args-recorder", ARGS_RECORDER)
    recorder.chmod(0o755)
    site = site.replace(str(tmp_path / "fake-trainscale"), str(recorder))
    (camp / "site.yaml").write_text(site)
    assert run(["sweep", "submit", camp, "--dry-run"]).returncode == 0
    bindir = tmp_path / "bin"
    bindir.mkdir()
    if run_count is not None:
        qstat = write_config(bindir / "qstat", "#!/bin/bash\n[ \"$1\" = -f ] && [ \"$2\" = 42.pbs ] || exit 1\n"
                             f"printf 'Job Id: 42.pbs\\n    Job_Name = ts\\n    run_count = {run_count}\\n'\n")
        qstat.chmod(0o755)
    e = {k: v for k, v in env().items() if not k.startswith(("SLURM_", "PBS_"))}
    e.update(PBS_ARRAY_INDEX="0", PBS_JOBID="42.pbs", PATH=f"{bindir}:{e['PATH']}")
    proc = subprocess.run(["bash", str(camp / "jobs" / "s0.pbs")], capture_output=True, text=True, env=e, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    args = (camp / "runs" / f"{rid}.args").read_text().split()
    assert args[args.index("--restart-count") + 1] == restarts, args


def trainer_resumes():
    """The trainer's checkpoint/resume (issue 16, branch ckpt) is in this binary."""
    res = run(["run", "--help"])
    return "--resume" in res.stdout


@pytest.mark.skipif(not BINARY.exists() or not trainer_resumes(),
                    reason="needs the trainer's checkpoint/resume (`trainscale run --resume`, branch ckpt): "
                           "this binary has none")
def test_sigterm_preempts_a_real_campaign_task_and_resubmit_resumes_it(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {workers: [1]}\n",
                        base=BASE.replace("steps: 4", "steps: 400").replace("log_every: 2", "log_every: 5") +
                        "checkpoint: {every_steps: 5}\n")
    rid = runs[0]["run_id"]
    proc = start_submit(camp)
    wait_training(camp, rid, proc)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 4, out
    st = status(camp)
    assert [p["index"] for p in st["preempted"]] == [0], st
    assert (camp / "runs" / f"{rid}.PREEMPTED").exists()
    res = run(["sweep", "resubmit", camp, "--preempted"])
    assert res.returncode == 0, res.stdout + res.stderr
    st = status(camp)
    assert (st["done"], st["preempted"]) == (1, []), st
    with h5py.File(camp / "runs" / f"{rid}.h5") as f:
        assert f.attrs["status"] == "ok" and int(f["train/step"][-1]) == 400


def test_shapes_that_never_fit_are_refused_before_anything_is_submitted(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {workers: [1, 2], threads: [1, 2]}\n")  # node: {cores: 2}
    res = run(["sweep", "submit", camp])
    assert res.returncode == 2, res.stdout + res.stderr
    assert "1 resource shape(s) can never be scheduled; nothing was submitted" in res.stderr, res.stderr
    bad = [r for r in runs if r["config"]["workers"] * r["config"]["threads"] > 2]
    assert len(bad) == 1
    assert f"run {bad[0]['index']} ({bad[0]['run_id']})" in res.stderr
    assert "need 2 worker(s) x 2 core(s) = 4 cores on one node, but a node of site" in res.stderr
    assert "Lower `threads`" in res.stderr and "oversubscribe: true" in res.stderr
    assert not (camp / "jobs" / "submissions.yaml").exists() and not (camp / "logs").exists()
    # Slurm (dry run too): refused the same way, no script written.
    slurm = LOCAL_SITE.replace("scheduler: local", "scheduler: slurm")
    (camp / "site.yaml").write_text(slurm)
    res = run(["sweep", "submit", camp, "--dry-run"])
    assert res.returncode == 2 and "spread the workers with resources.workers_per_node" in res.stderr, res.stderr
    assert not (camp / "jobs").exists()
    # The built-in local site (no site file) checks against this machine.
    cores = len(os.sched_getaffinity(0))
    camp2, _ = expand(tmp_path, f"matrix: {{threads: [{cores + 1}]}}\n", name="builtin")
    (camp2 / "site.yaml").unlink()
    res = run(["sweep", "submit", camp2])
    assert res.returncode == 2 and "this machine (local executor)" in res.stderr, res.stderr
    assert f"to at most {cores}" in res.stderr
    # A site that accepts oversubscribed cores runs them.
    (camp / "site.yaml").write_text(LOCAL_SITE.replace("node: {cores: 2}", "node: {cores: 2, oversubscribe: true}"))
    res = run(["sweep", "submit", camp, "--dry-run"])
    assert res.returncode == 0, res.stdout + res.stderr


SUBMISSIONS = """- scheduler: {scheduler}
  job_id: "{job}"
  script: {camp}/jobs/s0.{scheduler}
  index_file: {camp}/jobs/s0.idx
  count: 3
"""


def fake_scheduler(tmp_path, camp, scheduler, program, output):
    """A campaign recorded as submitted to `scheduler` (array job 4242, tasks 0-2 -> indices
    2, 0, 1) and `program` on PATH printing `output` like the real client."""
    (camp / "jobs").mkdir()
    (camp / "jobs" / "s0.idx").write_text("2\n0\n1\n")
    (camp / "jobs" / "submissions.yaml").write_text(SUBMISSIONS.format(scheduler=scheduler, job="4242", camp=camp))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "args").write_text("")
    fake = write_config(bindir / program, f"#!/bin/bash\necho \"$*\" >> {bindir}/args\ncat <<'EOF'\n{output}EOF\n")
    fake.chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}"}, bindir / "args"


def test_pending_reasons_from_squeue(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02, 0.03]}\n")
    path, args = fake_scheduler(tmp_path, camp, "slurm", "squeue",
                                "4242 0 PD JobHeldUser\n4242 1 PD Priority\n4242 2 R None\n")
    st = status(camp, path)
    assert "-o %F %K %t %r -j 4242" in args.read_text()
    assert (st["running"], st["pending"]) == (1, 2), st
    assert st["pending_reasons"] == [{"index": 0, "run_id": runs[0]["run_id"], "reason": "Priority"},
                                     {"index": 2, "run_id": runs[2]["run_id"], "reason": "JobHeldUser"}]
    e = env()
    e.update(path)
    text = subprocess.run([str(BINARY), "sweep", "status", str(camp)], capture_output=True, text=True, env=e).stdout
    assert "  pending 1 (Priority): indices 0\n" in text and "  pending 1 (JobHeldUser): indices 2\n" in text, text


QSTAT_F = """Job Id: 4242[].pbs01
    Job_Name = ts-campaign-s0
    job_state = B
    array = True

Job Id: 4242[0].pbs01
    Job_Name = ts-campaign-s0
    job_state = Q
    comment = Not Running: Insufficient amount of resource: ncpus (R: 64 A: 
\t32 T: 32)

Job Id: 4242[1].pbs01
    job_state = R
    comment = Job run at Mon Jan 01 at 10:00 on (node1:ncpus=2)

Job Id: 4242[2].pbs01
    job_state = H
    comment = Job held by user
"""


def test_pending_reasons_from_qstat(tmp_path):
    camp, runs = expand(tmp_path, "matrix: {lr: [0.01, 0.02, 0.03]}\n")
    path, args = fake_scheduler(tmp_path, camp, "pbs", "qstat", QSTAT_F)
    st = status(camp, path)
    assert args.read_text().strip() == "-f -t 4242[]"
    assert (st["running"], st["pending"]) == (1, 2), st
    assert {p["index"]: p["reason"] for p in st["pending_reasons"]} == {
        2: "Not Running: Insufficient amount of resource: ncpus (R: 64 A: 32 T: 32)", 1: "Job held by user"}
