"""A campaign as real Slurm job arrays on this machine. The test writes a slurm.conf for a
one-node cluster (this host, partition `debug`, no accounting, proctrack/linuxproc, task/none,
select/cons_tres, state and spool in a temp dir, SlurmUser=root, credentials that expire after 5 s so
that a requeued job restarts after 6 s instead of 121), makes a munge key and starts
munged on a private socket, slurmctld and slurmd; waits until the node is idle; expands a small
campaign with configs/sites/localhost-slurm.yaml (1- and 2-rank runs; 2-rank runs started by
`srun --mpi=pmix`, one more 2-rank run by mpirun inside the allocation through a site variant;
one diverging and one failing run), submits it with `sweep submit --scheduler slurm`, polls
`sweep status --format json`, checks every run file, resubmits the failed run; submits a campaign
held and reads Slurm's pending reason (JobHeldUser) from `sweep status`; signals a task's batch
shell as --signal=B:USR1 does and follows it through preempted, requeued and done; runs a packed
campaign (--pack 3: 6 runs in 2 array tasks, a failing run in the middle of one), a packed task
preempted during its second run, requeued and finished, and a packed task whose two runs go side
by side (pack_side_by_side) and overlap; and stops the daemons. It needs root and Debian's slurm-wlm and munge (scripts/setup.sh installs them); without
them it FAILS saying what is missing."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import h5py
import pytest
import yaml

from trainscale_cli import CAMPAIGN_BASE, BINARY, REPO, run, write_config

BASE = CAMPAIGN_BASE.replace("steps: 4", "steps: 6").replace("log_every: 2", "log_every: 3")

# 1 and 2 workers x 2 learning rates (2-worker runs: srun --mpi=pmix), a run that diverges and
# one that cannot find its data: 6 runs in two arrays.
SWEEP = """campaign: slurm_it
base: base.yaml
matrix:
  workers: [1, 2]
  lr: [0.05, 0.1]
include:
  - {lr: 3.0e+38}
  - {dataset.root: /nonexistent/fmnist}
"""

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")
# How often the tests look at Slurm and the campaign while they wait: short, so a test goes on
# soon after what it waits for happens (slurmctld starts jobs on a 1 s tick); each wait keeps its
# own deadline.
POLL_S = 0.2


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def slurm_conf(d, host, cpus):
    return f"""ClusterName=tstest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.sock,cred_expire=5
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
MaxArraySize=1001
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def logs(d):
    out = []
    for name in ("log/slurmctld.log", "log/slurmd.log", "log/slurmctld.out", "log/slurmd.out", "munge/munged.log"):
        p = d / name
        if p.exists():
            out.append(f"--- {name} (tail)\n" + "\n".join(p.read_text(errors="replace").splitlines()[-15:]))
    return "\n".join(out)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    missing = [p for p in DAEMONS if shutil.which(p) is None]
    if missing:
        pytest.fail(f"the real-Slurm test needs {', '.join(missing)} on PATH: install Debian's slurm-wlm and munge "
                    "(scripts/setup.sh does, as root)")
    if os.geteuid() != 0:
        pytest.fail("the real-Slurm test must run as root: it starts slurmctld/slurmd with SlurmUser=root")
    cpus = os.cpu_count() or 1
    if cpus < 2:
        pytest.fail(f"the real-Slurm test needs 2 CPUs for its 2-rank runs; this machine has {cpus}")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "log", "munge"):
        (d / sub).mkdir()
    os.chmod(d / "munge", 0o700)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    conf = write_config(d / "slurm.conf", slurm_conf(d, host, cpus))
    old_conf = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    procs = []
    try:
        subprocess.run(["munged", f"--socket={d}/munge/munge.sock", f"--key-file={key}", f"--pid-file={d}/munge/munged.pid",
                        f"--log-file={d}/munge/munged.log", f"--seed-file={d}/munge/seed", "--force"],
                       check=True, capture_output=True, text=True, timeout=30)
        for daemon in ("slurmctld", "slurmd"):
            out = open(d / "log" / f"{daemon}.out", "w")
            procs.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], stdout=out, stderr=subprocess.STDOUT))
        deadline = time.time() + 40
        state = ""
        while time.time() < deadline:
            res = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
            state = res.stdout.strip() or res.stderr.strip()
            if state == "idle":
                break
            if any(p.poll() is not None for p in procs):
                pytest.fail("a Slurm daemon exited during start-up\n" + logs(d))
            time.sleep(0.1)
        else:
            pytest.fail(f"the Slurm node did not become idle within 40 s (sinfo: {state!r})\n" + logs(d))
        yield d
    finally:
        subprocess.run(["scancel", "--user=root"], capture_output=True)
        time.sleep(0.5)
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        pid_file = d / "munge" / "munged.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass
        if old_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old_conf


def expand(tmp_path, name, sweep, site):
    write_config(tmp_path / "base.yaml", BASE)
    sweep_path = write_config(tmp_path / f"{name}.yaml", sweep)
    out = tmp_path / name
    res = run(["sweep", "expand", sweep_path, "--site", site, "--out", out])
    assert res.returncode == 0, res.stderr
    return out, yaml.safe_load((out / "manifest.yaml").read_text())["runs"]


def wait_finished(camps, slurm_dir, timeout=150):
    deadline = time.time() + timeout
    while True:
        statuses = {}
        for camp in camps:
            res = run(["sweep", "status", camp, "--format", "json"])
            assert res.returncode == 0, res.stderr
            statuses[camp] = json.loads(res.stdout)
        if all(s["running"] == 0 and s["pending"] == 0 and s["missing"] == 0 for s in statuses.values()):
            return statuses
        if time.time() > deadline:
            queue = subprocess.run(["squeue"], capture_output=True, text=True).stdout
            pytest.fail(f"campaigns not finished after {timeout} s: {statuses}\n{queue}\n" + logs(slurm_dir))
        time.sleep(POLL_S)


def test_campaign_as_slurm_job_arrays(slurm, tmp_path):
    camp, runs = expand(tmp_path, "campaign", SWEEP, REPO / "configs" / "sites" / "localhost-slurm.yaml")
    # A site variant whose 2-rank runs are started by mpirun inside the allocation.
    site = (REPO / "configs" / "sites" / "localhost-slurm.yaml").read_text()
    site = site.replace("launcher: srun\n    srun_mpi: pmix", "launcher: mpirun\n    launcher_args: [--oversubscribe]")
    assert "launcher: mpirun" in site
    mpirun_site = write_config(tmp_path / "mpirun-site.yaml", site)
    camp2, runs2 = expand(tmp_path, "campaign_mpirun", "campaign: slurm_it_mpirun\nbase: base.yaml\n"
                                                       "matrix: {workers: [2], lr: [0.02]}\n", mpirun_site)

    res = run(["sweep", "submit", camp, "--scheduler", "slurm"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("submitted ") == 2  # one array per shape (1 and 2 workers)
    res = run(["sweep", "submit", camp2, "--scheduler", "slurm"])
    assert res.returncode == 0, res.stdout + res.stderr
    subs = yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())
    assert [s["scheduler"] for s in subs] == ["slurm", "slurm"] and all(s["job_id"].isdigit() for s in subs)
    assert [s["count"] for s in subs] == [4, 2]

    st = wait_finished([camp, camp2], slurm)
    s1 = st[camp]
    assert (s1["total"], s1["done"], s1["diverged"], s1["running"], s1["pending"], s1["missing"]) == (6, 4, 1, 0, 0, 0), s1
    assert [f["index"] for f in s1["failed"]] == [5] and "/nonexistent/fmnist" in s1["failed"][0]["reason"]
    assert (st[camp2]["total"], st[camp2]["done"]) == (1, 1), st[camp2]

    for c, rs in ((camp, runs[:5]), (camp2, runs2)):
        for r in rs:
            with h5py.File(c / "runs" / f"{r['run_id']}.h5") as f:
                assert f.attrs["run_id"] == r["run_id"]
                assert f.attrs["status"] == ("diverged" if float(r["config"]["lr"]) > 1e30 else "ok")
                assert int(f.attrs["world_size"]) == r["config"]["workers"]
                assert len(f["train/loss"]) > 0
            assert (c / "runs" / f"{r['run_id']}.DONE").exists()
    # Every array task left its Slurm log (%x_%A_%a.out) naming the manifest index it ran.
    slurm_logs = sorted((camp / "logs").glob("ts-slurm_it-s*_*_*.out"))
    assert len(slurm_logs) == 6, slurm_logs
    ran = sorted(int(l.read_text().split("-> manifest index ")[1].split()[0]) for l in slurm_logs)
    assert ran == [0, 1, 2, 3, 4, 5]
    two_rank = [l for l in slurm_logs if "2 worker(s)" in l.read_text()]
    assert len(two_rank) == 2

    # Resubmitting the failed run: one new array of one task, a second attempt.
    res = run(["sweep", "resubmit", camp, "--failed"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resubmitting 1 runs (indices 5)" in res.stdout and "resubmit1-s0.slurm" in res.stdout
    st = wait_finished([camp], slurm)
    assert [f["index"] for f in st[camp]["failed"]] == [5]
    assert (camp / "logs" / f"{runs[5]['run_id']}.attempt2.log").exists()
    assert len(yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())) == 3


def test_pending_tasks_show_slurms_reason(slurm, tmp_path):
    """Tasks submitted held (an sbatch on PATH that adds --hold and runs the real one) are pending
    in `sweep status` with Slurm's reason, JobHeldUser; a second submit does not queue them again."""
    camp, runs = expand(tmp_path, "held", "campaign: held\nbase: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n",
                        REPO / "configs" / "sites" / "localhost-slurm.yaml")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = write_config(bindir / "sbatch", f"#!/bin/bash\nexec {shutil.which('sbatch')} --hold \"$@\"\n")
    wrapper.chmod(0o755)
    e = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    res = subprocess.run([str(BINARY), "sweep", "submit", str(camp), "--scheduler", "slurm"], capture_output=True, text=True,
                         env=e, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    job = yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())[0]["job_id"]
    try:
        res = run(["sweep", "status", camp, "--format", "json"])
        assert res.returncode == 0, res.stderr
        st = json.loads(res.stdout)
        assert (st["pending"], st["running"], st["missing"]) == (2, 0, 0), st
        assert [(p["index"], p["reason"]) for p in st["pending_reasons"]] == [(0, "JobHeldUser"), (1, "JobHeldUser")], st
        text = run(["sweep", "status", camp]).stdout
        assert "  pending 2 (JobHeldUser): indices 0,1\n" in text, text
        res = run(["sweep", "submit", camp, "--scheduler", "slurm"])
        assert res.returncode == 0 and "2 runs running or queued" in res.stdout and "nothing to submit" in res.stdout, \
            res.stdout + res.stderr
        assert len(yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())) == 1
    finally:
        subprocess.run(["scancel", job], capture_output=True)


# Stands in for the trainer on the first start of its task: on SIGUSR1 it ends preempted as the
# trainer does (a PREEMPTED marker after its checkpoint, exit 4). Restarted by Slurm
# (--restart-count >= 1), it hands over to the real trainscale, which finishes the task.
FAKE_TRAINER = """#!/bin/bash
# argv: run --manifest DIR --index I --restart-count N
if [ "${{7:-0}}" -ge 1 ]; then exec {binary} "$@"; fi
trap 'printf "reason: SIGUSR1 at step 7; checkpoint at step 5\\\\n" > "$3/runs/$FAKE_RUN_ID.PREEMPTED"; exit 4' USR1
touch "$3/runs/$FAKE_RUN_ID.started"
while true; do sleep 0.1; done
"""


def test_signalled_task_ends_preempted_and_requeues_itself(slurm, tmp_path):
    """requeue: true and signal_seconds on a real Slurm: the batch shell gets SIGUSR1 (sent here
    with `scancel --batch --signal=USR1`, what --signal=B:USR1@N does before the walltime), the
    job script forwards it to the launcher, the task ends preempted (exit 4), the script requeues
    it, and its restart (SLURM_RESTART_COUNT 1) finishes the run."""
    camp, runs = expand(tmp_path, "requeue", "campaign: requeue\nbase: base.yaml\nmatrix: {lr: [0.01]}\n",
                        REPO / "configs" / "sites" / "localhost-slurm.yaml")
    rid = runs[0]["run_id"]
    fake = write_config(tmp_path / "fake-trainscale", FAKE_TRAINER.format(binary=BINARY))
    fake.chmod(0o755)
    site = (camp / "site.yaml").read_text()
    site = site.replace("launcher: srun\n    srun_mpi: pmix", f"launcher: mpirun\n    launcher_args: [--oversubscribe]\n"
                                                             f"    binary: {fake}")
    site = site.replace("env:\n", f"requeue: true\nsignal_seconds: 60\nenv:\n  FAKE_RUN_ID: {rid}\n")
    (camp / "site.yaml").write_text(site)
    res = run(["sweep", "submit", camp, "--scheduler", "slurm"])
    assert res.returncode == 0, res.stdout + res.stderr
    script = (camp / "jobs" / "s0.slurm").read_text()
    assert "#SBATCH --requeue\n" in script and "#SBATCH --signal=B:USR1@60\n" in script
    job = yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())[0]["job_id"]
    deadline = time.time() + 60
    while not (camp / "runs" / f"{rid}.started").exists():
        assert time.time() < deadline, "the task did not start\n" + logs(slurm)
        time.sleep(POLL_S)
    res = subprocess.run(["scancel", "--batch", "--signal=USR1", f"{job}_0"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    deadline = time.time() + 120
    while True:
        st = json.loads(run(["sweep", "status", camp, "--format", "json"]).stdout)
        if st["done"] == 1:
            break
        assert time.time() < deadline, f"not done after the requeue: {st}\n" + \
            subprocess.run(["squeue"], capture_output=True, text=True).stdout + logs(slurm)
        time.sleep(POLL_S)  # a requeued job waits cred_expire + 1 s (5 + 1 here, 120 + 1 by default) to restart
    # The first start's PREEMPTED marker was taken over by the restart that finished the task.
    assert not (camp / "runs" / f"{rid}.PREEMPTED").exists()
    log = (camp / "logs" / f"{rid}.attempt1.log").read_text()
    assert "scheduler_restarts: 1" in log and "result: done" in log, log


# 4 learning rates, a run that cannot find its data, one more learning rate: 6 runs of one shape;
# with --pack 3 the array tasks are [0 1 2] and [3 4 5], the failing run 4 between two others.
PACKED_SWEEP = """campaign: slurm_packed
base: base.yaml
matrix:
  lr: [0.01, 0.02, 0.04, 0.05]
include:
  - {dataset.root: /nonexistent/fmnist}
  - {lr: 0.03}
"""


def test_packed_campaign_runs_k_runs_per_array_task(slurm, tmp_path):
    """--pack 3 on the real Slurm: 6 runs are an array of 2 tasks (2 Slurm jobs, not 6), each
    task's log shows its 3 runs one after another, every run has its own markers and run file,
    and the run that fails leaves the run after it in its task done."""
    camp, runs = expand(tmp_path, "packed", PACKED_SWEEP, REPO / "configs" / "sites" / "localhost-slurm.yaml")
    assert runs[4]["config"]["dataset"]["root"] == "/nonexistent/fmnist"
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--pack", "3"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("submitted ") == 1 and "(6 runs in 2 array task(s) of up to 3 (packed)" in res.stdout, res.stdout
    assert f"  task 1: index 4 {runs[4]['run_id']} (lr=0.05 dataset.root=/nonexistent/fmnist)" in res.stdout, res.stdout
    assert (camp / "jobs" / "s0.idx").read_text() == "0 1 2\n3 4 5\n"
    subs = yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())
    assert [s["count"] for s in subs] == [2]  # array tasks

    st = wait_finished([camp], slurm)[camp]
    assert (st["total"], st["done"], st["running"], st["pending"], st["missing"], st["preempted"]) == (6, 5, 0, 0, 0, []), st
    assert [f["index"] for f in st["failed"]] == [4] and "/nonexistent/fmnist" in st["failed"][0]["reason"], st
    for i, r in enumerate(runs):
        if i == 4:
            continue
        with h5py.File(camp / "runs" / f"{r['run_id']}.h5") as f:
            assert f.attrs["run_id"] == r["run_id"] and f.attrs["status"] == "ok"
        assert (camp / "runs" / f"{r['run_id']}.DONE").exists()
        assert (camp / "logs" / f"{r['run_id']}.attempt1.log").exists()
    # One Slurm log per array task, naming its runs in the order it ran them.
    slurm_logs = sorted((camp / "logs").glob("ts-slurm_packed-s0_*_*.out"))
    assert len(slurm_logs) == 2, slurm_logs
    ran = sorted([int(part.split()[0]) for part in l.read_text().split("-> manifest index ")[1:]] for l in slurm_logs)
    assert ran == [[0, 1, 2], [3, 4, 5]], ran


def test_packed_task_runs_its_runs_side_by_side_where_the_node_holds_them(slurm, tmp_path):
    """pack_side_by_side on the real Slurm: the node (2 CPUs) holds two 1-rank, 1-thread runs, so a
    task of --pack 2 asks for 2 tasks and runs both at once, each an `srun --exclusive` step of its
    own: their recorded intervals (set-up start to last step's end, from the run files) overlap,
    both are DONE, and the one Slurm log names both."""
    camp, runs = expand(tmp_path, "sidebyside", "campaign: sidebyside\nbase: base.yaml\n"
                        "matrix: {lr: [0.01, 0.02], steps: [40]}\n", REPO / "configs" / "sites" / "localhost-slurm.yaml")
    site = (camp / "site.yaml").read_text()
    (camp / "site.yaml").write_text(site.replace("node: {cores: 2}", "node: {cores: 2}\npack_side_by_side: true"))
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--pack", "2"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(2 runs in 1 array task(s) of up to 2 (packed, 2 side by side)" in res.stdout, res.stdout
    assert (camp / "jobs" / "s0.idx").read_text() == "0 | 1\n"
    script = (camp / "jobs" / "s0.slurm").read_text()
    assert "#SBATCH --ntasks=2\n" in script and "#SBATCH --time=00:10:00\n" in script, script  # one round
    assert "srun --exclusive --nodes=1 --cpus-per-task=1 --mpi=pmix -n 1 " in script, script

    st = wait_finished([camp], slurm)[camp]
    assert (st["total"], st["done"], st["failed"], st["preempted"]) == (2, 2, [], []), st
    intervals = []
    for r in runs:
        assert (camp / "runs" / f"{r['run_id']}.DONE").exists()
        with h5py.File(camp / "runs" / f"{r['run_id']}.h5") as f:
            assert f.attrs["run_id"] == r["run_id"] and f.attrs["status"] == "ok" and len(f["train/step"]) == 40
            intervals.append((float(f.attrs["setup_start_unix"]), float(f["train/wall_time"][-1])))
    (a0, a1), (b0, b1) = intervals
    assert max(a0, b0) < min(a1, b1), f"the two runs did not overlap: {intervals}"
    (slurm_log,) = (camp / "logs").glob("ts-sidebyside-s0_*_0.out")
    text = slurm_log.read_text()
    assert "-> manifest index 0" in text and "-> manifest index 1" in text, text


# Stands in for the trainer of run FAKE_INDEX on the first start of its packed task: on SIGUSR1 it
# ends preempted as the trainer does. The other runs, and every run after a restart
# (--restart-count >= 1), are the real trainscale.
FAKE_PACKED_TRAINER = """#!/bin/bash
# argv: run --manifest DIR --index I --restart-count N
if [ "$1" != run ] || [ "$5" != "$FAKE_INDEX" ] || [ "${{7:-0}}" -ge 1 ]; then exec {binary} "$@"; fi
trap 'printf "reason: SIGUSR1 at step 7; checkpoint at step 5\\\\n" > "$3/runs/$FAKE_RUN_ID.PREEMPTED"; exit 4' USR1
touch "$3/runs/$FAKE_RUN_ID.started"
while true; do sleep 0.1; done
"""


def test_preempted_packed_task_requeues_and_finishes_its_unfinished_runs(slurm, tmp_path):
    """A packed task of 3 runs signalled (--signal=B:USR1) during its second run: while it runs,
    status shows the first done, the second running and the third waiting; the second ends
    preempted, the third is recorded not started, the task requeues itself, and its restart skips
    the done run and finishes the other two."""
    camp, runs = expand(tmp_path, "packreq", "campaign: packreq\nbase: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03]}\n",
                        REPO / "configs" / "sites" / "localhost-slurm.yaml")
    rid = runs[1]["run_id"]
    fake = write_config(tmp_path / "fake-trainscale", FAKE_PACKED_TRAINER.format(binary=BINARY))
    fake.chmod(0o755)
    site = (camp / "site.yaml").read_text()
    site = site.replace("launcher: srun\n    srun_mpi: pmix", f"launcher: mpirun\n    launcher_args: [--oversubscribe]\n"
                                                             f"    binary: {fake}")
    site = site.replace("env:\n", f"requeue: true\nsignal_seconds: 60\nenv:\n  FAKE_RUN_ID: {rid}\n  FAKE_INDEX: '1'\n")
    (camp / "site.yaml").write_text(site)
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--pack", "3"])
    assert res.returncode == 0, res.stdout + res.stderr
    job = yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())[0]["job_id"]
    deadline = time.time() + 90
    while not (camp / "runs" / f"{rid}.started").exists():
        assert time.time() < deadline, "the second run did not start\n" + logs(slurm)
        time.sleep(POLL_S)
    st = json.loads(run(["sweep", "status", camp, "--format", "json"]).stdout)
    assert (st["done"], st["running"], st["pending"]) == (1, 1, 1), st
    assert st["pending_reasons"] == [{"index": 2, "run_id": runs[2]["run_id"],
                                      "reason": "waiting: run 3 of 3 of its packed array task, which runs them one after another"}]
    text = run(["sweep", "status", camp]).stdout
    assert f"  running 1  {rid} (scheduler: running, run 2 of 3 of its packed array task)" in text, text
    res = subprocess.run(["scancel", "--batch", "--signal=USR1", f"{job}_0"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    deadline = time.time() + 150
    while True:
        st = json.loads(run(["sweep", "status", camp, "--format", "json"]).stdout)
        if st["done"] == 3:
            break
        assert time.time() < deadline, f"not done after the requeue: {st}\n" + \
            subprocess.run(["squeue"], capture_output=True, text=True).stdout + logs(slurm)
        time.sleep(POLL_S)
    assert not any((camp / "runs" / f"{r['run_id']}.PREEMPTED").exists() for r in runs)
    assert not (camp / "logs" / f"{runs[0]['run_id']}.attempt2.log").exists()  # done before: skipped on the restart
    for r in runs[1:]:  # the preempted run and the one not started ran after the requeue
        log = (camp / "logs" / f"{r['run_id']}.attempt1.log").read_text()
        assert "scheduler_restarts: 1" in log and "result: done" in log, log
    slurm_log = next((camp / "logs").glob("ts-packreq-s0_*_0.out")).read_text()
    assert f"run {runs[0]['run_id']} (index 0): already done" in slurm_log, slurm_log
