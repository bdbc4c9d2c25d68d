"""`trainscale sweep submit / status / resubmit` without a batch system: the local executor runs a
campaign K at a time with a progress line per finished run; status reports done / diverged /
failed (with reasons) / missing; resubmit runs exactly the failed or missing indices again; the
generated PBS script is executed directly with PBS_ARRAY_INDEX (PBS Pro) and PBS_ARRAYID (Torque)
set, since no PBS server exists here (a packed one too: its runs one after another, a failure that
does not stop the next, a SIGTERM that ends it preempted and a rerun that finishes it); --dry-run
Slurm scripts map array tasks to indices and list each run by its swept values; a campaign never
submitted is "not submitted"; the example site for a real cluster makes the script it promises."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import h5py
import yaml

from trainscale_cli import CAMPAIGN_BASE, BINARY, REPO, env, run, write_config

BASE = CAMPAIGN_BASE

# 2 workers x 2 learning rates, plus a run that cannot find its data: 5 runs.
SWEEP = """campaign: submit_test
base: base.yaml
matrix:
  workers: [1, 2]
  lr: [0.05, 0.1]
include:
  - {dataset.root: /nonexistent/fmnist}
"""

SITE_PBS = f"""scheduler: pbs
partition: workq
limits: {{max_array_size: 100}}
env:
  OMPI_ALLOW_RUN_AS_ROOT: "1"
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: "1"
  OMPI_MCA_btl_vader_single_copy_mechanism: none
mpi:
  openmpi: {{launcher: mpirun, launcher_args: [--oversubscribe], binary: {BINARY}}}
storage:
  local: {{}}
"""


def expand(tmp_path, site=None, sweep=SWEEP):
    write_config(tmp_path / "base.yaml", BASE)
    sweep_path = write_config(tmp_path / "sweep.yaml", sweep)
    out = tmp_path / "campaign"
    args = ["sweep", "expand", sweep_path, "--out", out]
    if site:
        args += ["--site", site]
    res = run(args)
    assert res.returncode == 0, res.stderr
    return out, yaml.safe_load((out / "manifest.yaml").read_text())["runs"]


def status(camp):
    res = run(["sweep", "status", camp, "--format", "json"])
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_local_executor_status_and_resubmit(tmp_path):
    camp, runs = expand(tmp_path, REPO / "configs" / "sites" / "local.yaml")
    assert [r["config"]["workers"] for r in runs] == [1, 1, 2, 2, 1]

    res = run(["sweep", "submit", camp, "--scheduler", "local", "--throttle", "2"])
    assert res.returncode == 1, res.stdout + res.stderr  # one run failed
    lines = [l for l in res.stdout.splitlines() if l.startswith("[")]
    assert len(lines) == 5
    for k, line in enumerate(lines, 1):
        # Each run by its index, run id and swept values (matrix workers and lr, then dataset.root
        # that only the include names).
        assert re.match(rf"\[{k}/5\] index \d \w{{12}}-r0 \(workers=[12] lr=0\.\d+ dataset\.root=\S+\): "
                        rf"(done|failed: .*) \| failures [01] \| elapsed \S+ \| ETA \S+$", line), line
    assert "failures 1" in lines[-1] and "ETA 0s" in lines[-1]
    assert "running 5 runs locally, 2 at a time" in res.stdout

    st = status(camp)
    assert list(st) == ["total", "done", "diverged", "failed", "preempted", "running", "pending", "pending_reasons",
                        "missing", "unsupported"]
    assert (st["total"], st["done"], st["diverged"], st["running"], st["pending"], st["missing"]) == (5, 4, 0, 0, 0, 0)
    assert [f["index"] for f in st["failed"]] == [4]
    assert "/nonexistent/fmnist" in st["failed"][0]["reason"]
    for r in runs[:4]:
        with h5py.File(camp / "runs" / f"{r['run_id']}.h5") as f:
            assert f.attrs["status"] == "ok"
            assert int(f.attrs["world_size"]) == r["config"]["workers"]
    text = run(["sweep", "status", camp]).stdout
    assert "done 4, diverged 0, failed 1, preempted 0, running 0, pending 0, missing 0\n" in text
    assert f"failed  4  {runs[4]['run_id']}: " in text

    # Resubmitting the failed runs runs index 4 only (a second attempt), nothing else.
    res = run(["sweep", "resubmit", camp, "--failed"])
    assert res.returncode == 1, res.stdout + res.stderr
    assert "resubmitting 1 runs (indices 4)" in res.stdout
    assert (camp / "logs" / f"{runs[4]['run_id']}.attempt2.log").exists()
    assert not any((camp / "logs" / f"{r['run_id']}.attempt2.log").exists() for r in runs[:4])
    assert (camp / "jobs" / "resubmit1-local.idx").read_text() == "4\n"

    # A run whose file and marker are gone is missing; --missing reruns exactly it.
    (camp / "runs" / f"{runs[2]['run_id']}.h5").unlink()
    (camp / "runs" / f"{runs[2]['run_id']}.DONE").unlink()
    st = status(camp)
    assert (st["done"], st["missing"], len(st["failed"])) == (3, 1, 1)
    res = run(["sweep", "resubmit", camp, "--missing"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resubmitting 1 runs (indices 2)" in res.stdout
    assert (camp / "logs" / f"{runs[2]['run_id']}.attempt2.log").exists()
    st = status(camp)
    assert (st["done"], st["missing"], len(st["failed"])) == (4, 0, 1)

    # A second submit skips what is done and runs the rest (the failed run again).
    res = run(["sweep", "submit", camp])
    assert "4 runs already done, skipped" in res.stdout, res.stdout
    assert (camp / "logs" / f"{runs[4]['run_id']}.attempt3.log").exists()
    subs = yaml.safe_load((camp / "jobs" / "submissions.yaml").read_text())
    assert [s["scheduler"] for s in subs] == ["local"] * 4
    assert [s["count"] for s in subs] == [5, 1, 1, 1]


def test_pbs_script_runs_with_pbs_pro_and_torque_indices(tmp_path):
    site = write_config(tmp_path / "pbs.yaml", SITE_PBS)
    camp, runs = expand(tmp_path, site, sweep=SWEEP.replace("workers: [1, 2]", "workers: [1]"))
    res = run(["sweep", "submit", camp, "--scheduler", "pbs", "--dry-run", "--throttle", "2"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "nothing submitted" in res.stdout
    script = camp / "jobs" / "s0.pbs"
    text = script.read_text()
    assert "#PBS -J 0-2\n" in text and "#PBS -W max_run_subjobs=2\n" in text
    assert "#PBS -l select=1:ncpus=1:mpiprocs=1\n" in text and "#PBS -q workq\n" in text
    assert (camp / "jobs" / "s0.idx").read_text() == "0\n1\n2\n"
    assert not (camp / "jobs" / "submissions.yaml").exists()

    def execute(**task_env):
        e = {k: v for k, v in env().items() if k not in ("PBS_ARRAY_INDEX", "PBS_ARRAYID")}
        e.update(task_env)
        return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=e, timeout=300)

    res = execute(PBS_ARRAY_INDEX="1")  # PBS Pro subjob 1 -> line 2 -> manifest index 1
    assert res.returncode == 0, res.stdout + res.stderr
    assert "-> manifest index 1" in res.stdout
    assert (camp / "runs" / f"{runs[1]['run_id']}.DONE").exists()
    assert not (camp / "runs" / f"{runs[0]['run_id']}.DONE").exists()
    res = execute(PBS_ARRAYID="0")  # Torque
    assert res.returncode == 0, res.stdout + res.stderr
    assert (camp / "runs" / f"{runs[0]['run_id']}.DONE").exists()
    res = execute(PBS_ARRAY_INDEX="2")  # index 2 is the failing run: the subjob fails
    assert res.returncode == 1, res.stdout + res.stderr
    assert (camp / "runs" / f"{runs[2]['run_id']}.FAILED").exists()
    res = execute()
    assert res.returncode == 2 and "neither PBS_ARRAY_INDEX" in res.stderr
    res = execute(PBS_ARRAY_INDEX="7")
    assert res.returncode == 2 and "no line" in res.stderr
    st = status(camp)
    assert (st["done"], len(st["failed"]), st["missing"]) == (2, 1, 0)


def test_slurm_dry_run_scripts(tmp_path):
    camp, runs = expand(tmp_path, REPO / "configs" / "sites" / "localhost-slurm.yaml")
    res = run(["sweep", "expand", tmp_path / "sweep.yaml", "--site", REPO / "configs" / "sites" / "localhost-slurm.yaml",
               "--dry-run"])
    assert res.returncode == 0, res.stderr
    assert "campaign submit_test: 5 runs" in res.stdout
    assert "job arrays on site localhost-slurm (slurm):" in res.stdout
    assert "  workers=1 nodes=1 cpus=1 gpus=0 partition=debug walltime=00:10:00 mpi=openmpi: 3 runs" in res.stdout
    assert "  workers=2 nodes=1 cpus=1 gpus=0 partition=debug walltime=00:10:00 mpi=openmpi: 2 runs" in res.stdout
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--dry-run"])
    assert res.returncode == 0, res.stdout + res.stderr
    s0, s1 = (camp / "jobs" / "s0.slurm").read_text(), (camp / "jobs" / "s1.slurm").read_text()
    assert "#SBATCH --array=0-2%2\n" in s0 and "#SBATCH --ntasks=1\n" in s0
    assert "#SBATCH --array=0-1%2\n" in s1 and "#SBATCH --ntasks=2\n" in s1 and "#SBATCH --partition=debug\n" in s1
    assert f"srun --mpi=pmix -n 2 {BINARY} run --manifest" in s1
    assert (camp / "jobs" / "s0.idx").read_text() == "0\n1\n4\n"
    assert (camp / "jobs" / "s1.idx").read_text() == "2\n3\n"
    # Outside an array job the script refuses to guess an index.
    e = {k: v for k, v in env().items() if not k.startswith("SLURM_")}
    res = subprocess.run(["bash", str(camp / "jobs" / "s0.slurm")], capture_output=True, text=True, env=e, timeout=60)
    assert res.returncode == 2 and "SLURM_ARRAY_TASK_ID is not set" in res.stderr


def test_submit_errors_exit_2(tmp_path):
    camp, _ = expand(tmp_path)
    res = run(["sweep", "submit", camp, "--scheduler", "lsf"])
    assert res.returncode == 2 and "accepted: local, slurm, pbs" in res.stderr
    res = run(["sweep", "resubmit", camp])
    assert res.returncode == 2 and "--failed, --preempted, --missing" in res.stderr
    res = run(["sweep", "status", tmp_path / "nope"])
    assert res.returncode == 2 and "no manifest.yaml" in res.stderr
    res = run(["sweep", "status", camp, "--format", "xml"])
    assert res.returncode == 2 and "accepted: text, json" in res.stderr
    # Sites are checked at expansion: a storage the site lacks names the run and the key.
    site = write_config(tmp_path / "site.yaml", "scheduler: local\nmpi: {openmpi: {}}\nstorage: {scratch: {path: /scratch}}\n")
    res = run(["sweep", "expand", tmp_path / "sweep.yaml", "--site", site, "--out", tmp_path / "c2"])
    assert res.returncode == 2, res.stderr
    assert "run 0" in res.stderr and "key 'dataset.storage': 'local'" in res.stderr
    assert not (tmp_path / "c2").exists()


def test_status_while_the_local_executor_works(tmp_path):
    # Three runs one at a time: while the executor works, the started run is running and the
    # queued ones are pending (asked from the live executor), never missing.
    camp, runs = expand(tmp_path, sweep="campaign: live\nbase: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03]}\n")
    proc = subprocess.Popen([str(BINARY), "sweep", "submit", str(camp), "--throttle", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env(), cwd=REPO)
    seen = []
    while proc.poll() is None:
        recorded = (camp / "jobs" / "submissions.yaml").exists()
        st = status(camp)
        assert st["missing"] == 0 or not recorded, st
        seen.append((st["done"], st["running"], st["pending"]))
    out = proc.stdout.read()
    assert proc.returncode == 0, out
    assert any(running == 1 and pending >= 1 for _, running, pending in seen), seen
    st = status(camp)
    assert (st["done"], st["running"], st["pending"], st["missing"]) == (3, 0, 0, 0)


def sbatch_lines(path):
    return [l for l in path.read_text().splitlines() if l.startswith("#SBATCH")]


def test_gpu_generations_example_is_one_array_per_generation(tmp_path):
    """configs/sweeps/gpu_generations.yaml on the shipped multi-generation sites: 3 generations x
    2 worker counts = 6 arrays (precision shares an array), each with its generation's request."""
    sweep = REPO / "configs" / "sweeps" / "gpu_generations.yaml"
    site = REPO / "configs" / "sites" / "gpu_cluster_example.yaml"
    res = run(["sweep", "expand", sweep, "--site", site, "--dry-run"])
    assert res.returncode == 0, res.stderr
    assert "campaign gpu_generations: 12 runs" in res.stdout
    # (threads=2: the runs' threads, exported as OMP_NUM_THREADS, beside the 8 CPUs per worker)
    for gen, line in (("v100", "workers=4 nodes=1 cpus=8 threads=2 gpus=4 gpu=v100 partition=gpu"),
                      ("a100", "workers=1 nodes=1 cpus=8 threads=2 gpus=1 gpu=a100 partition=gpu"),
                      ("h100", "workers=4 nodes=1 cpus=8 threads=2 gpus=4 gpu=h100 partition=gpu-hopper")):
        assert f"  {line} walltime=00:30:00 mpi=openmpi: 2 runs" in res.stdout, (gen, res.stdout)

    camp = tmp_path / "slurm"
    assert run(["sweep", "expand", sweep, "--site", site, "--out", camp]).returncode == 0
    runs = yaml.safe_load((camp / "manifest.yaml").read_text())["runs"]
    assert [(r["config"]["gpu"], r["config"]["workers"]) for r in runs[:4]] == \
        [("v100", 1), ("v100", 4), ("v100", 1), ("v100", 4)]
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--dry-run"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "dry run: 6 scripts written" in res.stdout
    jobs = camp / "jobs"
    common = ["#SBATCH --ntasks-per-node={n}", "#SBATCH --cpus-per-task=8", "#SBATCH --time=00:30:00",
              f"#SBATCH --output={camp}/logs/%x_%A_%a.out"]

    def expected(k, n, gpu_lines):  # the example site does not requeue: --no-requeue last
        return [f"#SBATCH --job-name=ts-gpu_generations-s{k}", "#SBATCH --array=0-1%8", "#SBATCH --nodes=1",
                f"#SBATCH --ntasks={n}"] + [c.format(n=n) for c in common] + gpu_lines + ["#SBATCH --no-requeue"]
    assert sbatch_lines(jobs / "s0.slurm") == expected(0, 1, ["#SBATCH --partition=gpu", "#SBATCH --account=proj123",
                                                               "#SBATCH --gres=gpu:v100:1"])
    assert sbatch_lines(jobs / "s1.slurm") == expected(1, 4, ["#SBATCH --partition=gpu", "#SBATCH --account=proj123",
                                                               "#SBATCH --gres=gpu:v100:4"])
    assert sbatch_lines(jobs / "s3.slurm") == expected(3, 4, ["#SBATCH --partition=gpu", "#SBATCH --account=proj123",
                                                               "#SBATCH --gres=gpu:a100:4",
                                                               "#SBATCH --constraint=a100_80g"])
    assert sbatch_lines(jobs / "s5.slurm") == expected(5, 4, ["#SBATCH --partition=gpu-hopper",
                                                               "#SBATCH --account=proj123", "#SBATCH --gres=gpu:4",
                                                               "#SBATCH --constraint=h100"])
    # Array task t of s<k> runs line t+1 of s<k>.idx: the fp32 and fp16 runs of one generation.
    assert [(jobs / f"s{k}.idx").read_text() for k in range(6)] == \
        ["0\n2\n", "1\n3\n", "4\n6\n", "5\n7\n", "8\n10\n", "9\n11\n"]
    for k in range(6):
        gens = {runs[int(i)]["config"]["gpu"] for i in (jobs / f"s{k}.idx").read_text().split()}
        assert gens == {("v100", "a100", "h100")[k // 2]}
    s1, s3 = (jobs / "s1.slurm").read_text(), (jobs / "s3.slurm").read_text()
    assert "module load cuda/12.4\n" in s1 and "srun --mpi=pmix -n 4 /opt/trainscale/cuda12-sm60-70/bin/trainscale run" in s1
    assert "cuda/12.4" not in s3 and "srun --mpi=pmix -n 4 /opt/trainscale/cuda13/bin/trainscale run" in s3

    camp = tmp_path / "pbs"
    res = run(["sweep", "expand", sweep, "--site", REPO / "configs" / "sites" / "gpu_cluster_example_pbs.yaml",
               "--out", camp])
    assert res.returncode == 0, res.stderr
    res = run(["sweep", "submit", camp, "--dry-run"])  # the site's scheduler: pbs
    assert res.returncode == 0, res.stdout + res.stderr
    selects = [[l for l in (camp / "jobs" / f"s{k}.pbs").read_text().splitlines() if l.startswith("#PBS -l select")]
               for k in range(6)]
    assert selects == [["#PBS -l select=1:ncpus=8:mpiprocs=1:ngpus=1:gpu_model=v100"],
                       ["#PBS -l select=1:ncpus=32:mpiprocs=4:ngpus=4:gpu_model=v100"],
                       ["#PBS -l select=1:ncpus=8:mpiprocs=1:ngpus=1:gpu_model=a100"],
                       ["#PBS -l select=1:ncpus=32:mpiprocs=4:ngpus=4:gpu_model=a100"],
                       ["#PBS -l select=1:ncpus=8:mpiprocs=1:ngpus=1:gpu_model=h100"],
                       ["#PBS -l select=1:ncpus=32:mpiprocs=4:ngpus=4:gpu_model=h100"]]
    assert "#PBS -q gpuq\n" in (camp / "jobs" / "s0.pbs").read_text()


def test_gpu_generation_on_a_cpu_backend_is_refused_at_expansion(tmp_path):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix:\n  gpu: [v100, a100]\n")
    res = run(["sweep", "expand", sweep, "--site", REPO / "configs" / "sites" / "gpu_cluster_example.yaml",
               "--out", tmp_path / "c"])
    assert res.returncode == 2, res.stderr
    assert "run 0" in res.stderr or "{gpu: v100}" in res.stderr, res.stderr
    assert "expects GPU generation 'v100' but backend 'cpu'" in res.stderr
    assert not (tmp_path / "c").exists()


def test_a_campaign_never_submitted_is_not_submitted_not_missing(tmp_path):
    camp, runs = expand(tmp_path, REPO / "configs" / "sites" / "localhost-slurm.yaml")
    text = run(["sweep", "status", camp]).stdout
    assert "pending 0, missing 0, not submitted 5\n" in text, text
    assert f"  not submitted 5: no submission of this campaign holds them yet; run trainscale sweep submit {camp}" in text
    assert "missing 5" not in text
    assert status(camp)["missing"] == 5  # the JSON keeps its keys: not submitted runs are missing there
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--dry-run"])  # a dry run submits nothing
    assert res.returncode == 0, res.stdout + res.stderr
    assert "not submitted 5" in run(["sweep", "status", camp]).stdout


def test_dry_run_lists_each_run_by_its_swept_values_and_packs(tmp_path):
    camp, runs = expand(tmp_path, REPO / "configs" / "sites" / "localhost-slurm.yaml")
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--dry-run", "--pack", "2"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert (camp / "jobs" / "s0.idx").read_text() == "0 1\n4\n"  # the 1-worker runs, 2 to a task
    assert (camp / "jobs" / "s1.idx").read_text() == "2 3\n"
    assert "# 3 runs in 2 array task(s) of up to 2 (packed), workers=1 " in res.stdout, res.stdout
    for k, i in ((0, 0), (0, 1), (1, 4)):
        r = runs[i]
        values = f"workers={r['config']['workers']} lr={r['config']['lr']} dataset.root={r['config']['dataset']['root']}"
        assert f"  task {k}: index {i} {r['run_id']} ({values})\n" in res.stdout, res.stdout
    s0 = (camp / "jobs" / "s0.slurm").read_text()
    assert "#SBATCH --array=0-1%2\n" in s0 and "#SBATCH --time=00:20:00\n" in s0  # 2 x the site's 00:10:00
    assert subprocess.run(["bash", "-n", str(camp / "jobs" / "s0.slurm")]).returncode == 0


def test_pack_errors_exit_2(tmp_path):
    camp, _ = expand(tmp_path, REPO / "configs" / "sites" / "localhost-slurm.yaml")
    res = run(["sweep", "submit", camp, "--scheduler", "local", "--pack", "2"])
    assert res.returncode == 2 and "--pack 2: packing runs into one allocation needs --scheduler slurm or pbs" in res.stderr, \
        res.stdout + res.stderr
    res = run(["sweep", "submit", camp, "--scheduler", "slurm", "--dry-run", "--pack", "0"])
    assert res.returncode == 2 and "--pack: 0 is out of range; accepted: 1 ... 1000" in res.stderr, res.stderr
    res = run(["sweep", "resubmit", camp, "--missing", "--scheduler", "pbs", "--dry-run", "--pack", "1001"])
    assert res.returncode == 2 and "out of range" in res.stderr, res.stderr
    assert not (camp / "jobs").exists()
    site = write_config(tmp_path / "local-pack.yaml", "scheduler: local\npack: 4\nmpi: {openmpi: {}}\nstorage: {local: {}}\n")
    res = run(["sweep", "expand", tmp_path / "sweep.yaml", "--site", site, "--out", tmp_path / "c2"])
    assert res.returncode == 2 and "key 'pack': 4 runs per allocation needs scheduler slurm or pbs" in res.stderr, res.stderr


# Stands in for trainscale in a packed PBS task: for the run of FAKE_INDEX, on its first start, it
# waits for SIGUSR1 and ends preempted as the trainer does (a PREEMPTED marker, exit 4); every
# other call (other runs, later starts, sweep record-end) is the real trainscale.
FAKE_PBS_TRAINER = """#!/bin/bash
# argv: run --manifest DIR --index I --restart-count N
if [ "$1" != run ] || [ "$5" != "$FAKE_INDEX" ] || [ -e "$3/runs/fake.once" ]; then exec {binary} "$@"; fi
touch "$3/runs/fake.once"
trap 'printf "reason: SIGUSR1 at step 7; checkpoint at step 5\\\\n" > "$3/runs/$FAKE_RUN_ID.PREEMPTED"; exit 4' USR1
touch "$3/runs/$FAKE_RUN_ID.started"
while true; do sleep 0.1; done
"""

# 3 learning rates, then a run that cannot find its data and one more: with --pack 3 the array
# tasks are [0 1 2] and [3 4], the failing run 3 first in the second task.
PACK_SWEEP = """campaign: packed
base: base.yaml
matrix:
  lr: [0.01, 0.02, 0.04]
include:
  - {dataset.root: /nonexistent/fmnist}
  - {lr: 0.03}
"""


def test_packed_pbs_script_runs_each_run_goes_on_after_a_failure_and_resumes(tmp_path):
    """A packed PBS array (no PBS server here: the script is executed as PBS would, with
    PBS_ARRAY_INDEX): each subjob runs its runs one after another with their own markers; a failed
    run does not stop the next; a subjob stopped by SIGTERM during its second run ends preempted,
    its third run recorded not started, and run again (PBS reruns it) it skips the done run and
    finishes the other two."""
    fake = write_config(tmp_path / "fake-trainscale", FAKE_PBS_TRAINER.format(binary=BINARY))
    fake.chmod(0o755)
    site = write_config(tmp_path / "pbs.yaml", SITE_PBS.replace(f"binary: {BINARY}", f"binary: {fake}"))
    camp, runs = expand(tmp_path, site, sweep=PACK_SWEEP)
    assert [r["config"]["dataset"]["root"] for r in runs][3] == "/nonexistent/fmnist"
    text = (camp / "site.yaml").read_text().replace("env:\n", f"env:\n  FAKE_INDEX: '1'\n  FAKE_RUN_ID: {runs[1]['run_id']}\n")
    (camp / "site.yaml").write_text(text)
    res = run(["sweep", "submit", camp, "--scheduler", "pbs", "--dry-run", "--pack", "3"])
    assert res.returncode == 0, res.stdout + res.stderr
    script = camp / "jobs" / "s0.pbs"
    text = script.read_text()
    assert (camp / "jobs" / "s0.idx").read_text() == "0 1 2\n3 4\n"
    assert "#PBS -J 0-1\n" in text and "#PBS -l walltime=03:00:00\n" in text  # 3 x the default 01:00:00
    assert "2 array tasks of up to 3 runs each, one after another (walltime 3 x 01:00:00)" in text
    assert "export OMP_NUM_THREADS=1\n" in text

    def task_env(index):
        e = {k: v for k, v in env().items() if k not in ("PBS_ARRAY_INDEX", "PBS_ARRAYID")}
        e["PBS_ARRAY_INDEX"] = str(index)
        return e

    res = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=task_env(1), timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr  # run 3 failed; the subjob says so
    assert "-> manifest index 3" in res.stdout and "-> manifest index 4" in res.stdout
    assert (camp / "runs" / f"{runs[3]['run_id']}.FAILED").exists()
    assert (camp / "runs" / f"{runs[4]['run_id']}.DONE").exists()  # the run after the failure ran

    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=task_env(0))
    started = camp / "runs" / f"{runs[1]['run_id']}.started"
    deadline = time.time() + 120
    while not started.exists():
        assert proc.poll() is None and time.time() < deadline, "run 1 did not start: " + (proc.stdout.read() if proc.poll() is not None else "")
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # what PBS sends before the kill
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 4, out
    assert "-> manifest index 2" not in out, out  # no run starts after a preemption
    st = status(camp)
    assert st["done"] == 2 and [p["index"] for p in st["preempted"]] == [1, 2], st
    assert "not started: its packed array task was stopped" in st["preempted"][1]["reason"], st

    res = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=task_env(0), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"run {runs[0]['run_id']} (index 0): already done" in res.stdout, res.stdout
    st = status(camp)
    assert (st["done"], st["preempted"], [f["index"] for f in st["failed"]]) == (4, [], [3]), st
    for i in (1, 2):
        assert not (camp / "runs" / f"{runs[i]['run_id']}.PREEMPTED").exists()
    assert not (camp / "logs" / f"{runs[0]['run_id']}.attempt2.log").exists()  # done once, never again


def test_packed_pbs_script_runs_lanes_side_by_side_isolates_failures_and_resumes(tmp_path):
    """pack_side_by_side with a 2-core node: a PBS subjob of 4 runs asks for both cores and runs
    two lanes at once (runs 0 then 2 | runs 1 then 3). Stopped (SIGTERM) while lane 2's first run
    still runs and lane 1 is done, only lane 2's runs are preempted (its second not started); run
    again, it skips the done runs, and the run that cannot find its data fails alone."""
    fake = write_config(tmp_path / "fake-trainscale", FAKE_PBS_TRAINER.format(binary=BINARY))
    fake.chmod(0o755)
    site = write_config(tmp_path / "pbs.yaml", SITE_PBS.replace(f"binary: {BINARY}", f"binary: {fake}") +
                        "node: {cores: 2}\npack_side_by_side: true\n")
    camp, runs = expand(tmp_path, site, sweep=PACK_SWEEP)
    text = (camp / "site.yaml").read_text().replace("env:\n", f"env:\n  FAKE_INDEX: '1'\n  FAKE_RUN_ID: {runs[1]['run_id']}\n")
    (camp / "site.yaml").write_text(text)
    res = run(["sweep", "submit", camp, "--scheduler", "pbs", "--dry-run", "--pack", "4"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "# 5 runs in 2 array task(s) of up to 4 (packed, 2 side by side), workers=1 " in res.stdout, res.stdout
    assert (camp / "jobs" / "s0.idx").read_text() == "0 2 | 1 3\n4\n"
    script = camp / "jobs" / "s0.pbs"
    text = script.read_text()
    assert "#PBS -l select=1:ncpus=2:mpiprocs=2\n" in text and "#PBS -l walltime=02:00:00\n" in text, text
    assert "2 array tasks of up to 4 runs each, 2 side by side (walltime 2 x 01:00:00)" in text

    e = {k: v for k, v in env().items() if k not in ("PBS_ARRAY_INDEX", "PBS_ARRAYID")}
    e["PBS_ARRAY_INDEX"] = "0"
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e)
    done = [camp / "runs" / f"{runs[i]['run_id']}.DONE" for i in (0, 2)]
    deadline = time.time() + 240
    while not ((camp / "runs" / f"{runs[1]['run_id']}.started").exists() and all(d.exists() for d in done)):
        assert proc.poll() is None and time.time() < deadline, "lane 1 did not finish beside lane 2: " + \
            (proc.stdout.read() if proc.poll() is not None else "")
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # what PBS sends before the kill: the shell passes it to each lane
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 4, out
    assert "-> manifest index 3" not in out, out  # lane 2 starts nothing after its preempted run
    st = status(camp)
    assert st["done"] == 2 and [p["index"] for p in st["preempted"]] == [1, 3], st
    assert "not started: its packed array task was stopped" in st["preempted"][1]["reason"], st

    res = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=e, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr  # run 3 failed; the subjob says so
    for i in (0, 2):
        assert f"run {runs[i]['run_id']} (index {i}): already done" in res.stdout, res.stdout
    st = status(camp)
    assert (st["done"], st["preempted"], [f["index"] for f in st["failed"]]) == (3, [], [3]), st
    assert "/nonexistent/fmnist" in st["failed"][0]["reason"], st


def test_packed_pbs_lanes_across_nodes_each_take_their_node_from_the_node_file(tmp_path):
    """pack_nodes: 2 with 1-core nodes: 2 one-core runs go side by side on 2 nodes; executed as
    PBS would (PBS_NODEFILE naming two hosts of this machine), each lane's mpirun gets its node
    (--host NODE:1, logged by a stand-in that runs the real mpirun) and both runs end DONE."""
    log = tmp_path / "mpirun.log"
    launcher = write_config(tmp_path / "mpirun", f"#!/bin/bash\necho \"$*\" >> {log}\nexec {shutil.which('mpirun')} \"$@\"\n")
    launcher.chmod(0o755)
    site = write_config(tmp_path / "pbs.yaml", SITE_PBS.replace("launcher: mpirun,", f"launcher: mpirun, launcher_command: {launcher},")
                        + "node: {cores: 1}\npack_side_by_side: true\npack_nodes: 2\n")
    camp, runs = expand(tmp_path, site, sweep="campaign: nodes\nbase: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n")
    res = run(["sweep", "submit", camp, "--scheduler", "pbs", "--dry-run", "--pack", "2"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert (camp / "jobs" / "s0.idx").read_text() == "0 | 1\n"
    script = camp / "jobs" / "s0.pbs"
    assert "#PBS -l select=2:ncpus=1:mpiprocs=1\n" in script.read_text()
    host = socket.gethostname()
    nodefile = write_config(tmp_path / "nodefile", f"localhost\n{host}\n")
    e = {k: v for k, v in env().items() if k not in ("PBS_ARRAY_INDEX", "PBS_ARRAYID")}
    e.update(PBS_ARRAY_INDEX="0", PBS_NODEFILE=str(nodefile))
    res = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=e, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert status(camp)["done"] == 2
    hosts = sorted(line.split("--host ")[1].split()[0] for line in log.read_text().splitlines())
    assert hosts == sorted(["localhost:1", f"{host}:1"]), log.read_text()


def test_a_signal_after_the_runs_does_not_end_the_slurm_script_early(tmp_path):
    """A Slurm task with requeue: true whose run ends preempted requeues itself with scontrol; a
    SIGUSR1 that reaches the batch shell then (a stand-in scontrol sends it to its parent) goes to
    the trap, which must not read an unset launcher under set -u: the script goes on and exits 0."""
    fake = write_config(tmp_path / "fake-trainscale", f"""#!/bin/bash
if [ "$1" != run ]; then exec {BINARY} "$@"; fi
printf 'reason: SIGUSR1 at step 3; checkpoint at step 2\\n' > "$3/runs/$FAKE_RUN_ID.PREEMPTED"
exit 4
""")
    fake.chmod(0o755)
    site = write_config(tmp_path / "slurm.yaml", SITE_PBS.replace("scheduler: pbs", "scheduler: slurm")
                        .replace(f"binary: {BINARY}", f"binary: {fake}") + "requeue: true\n")
    camp, runs = expand(tmp_path, site, sweep="campaign: trap\nbase: base.yaml\nmatrix: {lr: [0.01]}\n")
    text = (camp / "site.yaml").read_text().replace("env:\n", f"env:\n  FAKE_RUN_ID: {runs[0]['run_id']}\n")
    (camp / "site.yaml").write_text(text)
    assert run(["sweep", "submit", camp, "--scheduler", "slurm", "--dry-run"]).returncode == 0
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_config(bindir / "scontrol", "#!/bin/bash\nkill -USR1 $PPID\nsleep 0.5\nexit 0\n").chmod(0o755)
    e = dict(env(), PATH=f"{bindir}:{env()['PATH']}", SLURM_ARRAY_TASK_ID="0", SLURM_JOB_ID="77")
    res = subprocess.run(["bash", str(camp / "jobs" / "s0.slurm")], capture_output=True, text=True, env=e, timeout=120)
    assert res.returncode == 0 and "unbound variable" not in res.stderr, res.stdout + res.stderr
    assert (camp / "runs" / f"{runs[0]['run_id']}.PREEMPTED").exists()


def test_example_cluster_site_makes_a_script_for_a_real_cluster(tmp_path):
    """configs/sites/example-slurm-cluster.yaml, the starting point for a real cluster: its script
    carries the account, memory, setup and module lines, signal and requeue, OMP_NUM_THREADS as the
    runs' threads, the launcher its `launcher` key names, and nothing root-only."""
    site = REPO / "configs" / "sites" / "example-slurm-cluster.yaml"
    write_config(tmp_path / "base.yaml", BASE.replace("threads: 1", "threads: 4").replace("workers: 1", "workers: 2"))
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: cluster\nbase: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03]}\n")
    camp = tmp_path / "campaign"
    res = run(["sweep", "expand", sweep, "--site", site, "--out", camp])
    assert res.returncode == 0, res.stderr
    res = run(["sweep", "submit", camp, "--dry-run"])  # the site's scheduler: slurm
    assert res.returncode == 0, res.stdout + res.stderr
    text = (camp / "jobs" / "s0.slurm").read_text()
    assert sbatch_lines(camp / "jobs" / "s0.slurm") == [
        "#SBATCH --job-name=ts-cluster-s0", "#SBATCH --array=0-2%16", "#SBATCH --nodes=1", "#SBATCH --ntasks=2",
        "#SBATCH --ntasks-per-node=2", "#SBATCH --cpus-per-task=4", "#SBATCH --time=01:00:00",
        f"#SBATCH --output={camp}/logs/%x_%A_%a.out", "#SBATCH --partition=compute", "#SBATCH --account=proj123",
        "#SBATCH --mem=16G", "#SBATCH --requeue", "#SBATCH --signal=B:USR1@120"]
    setup = text[text.index("source /etc/profile.d/modules.sh"):text.index("export OMP_NUM_THREADS")]
    assert setup.splitlines() == ["source /etc/profile.d/modules.sh", "module purge", "module load gcc/12",
                                  "module load openmpi/4.1.6", "module load hdf5/1.14", "export OMP_PLACES=cores",
                                  "export OMP_PROC_BIND=close", "# OpenMP threads: the runs' `threads`."], setup
    assert "\nexport OMP_NUM_THREADS=4\n" in text
    assert "srun --mpi=pmix -n 2 /opt/trainscale/openmpi/bin/trainscale run --manifest" in text
    assert "ALLOW_RUN_AS_ROOT" not in text and "scontrol requeue" in text
    assert subprocess.run(["bash", "-n", str(camp / "jobs" / "s0.slurm")]).returncode == 0
    # The launcher is the mpi entry's `launcher` key: mpirun inside the allocation instead of srun.
    (camp / "site.yaml").write_text(site.read_text().replace("launcher: srun\n    srun_mpi: pmix", "launcher: mpirun"))
    res = run(["sweep", "submit", camp, "--dry-run", "--pack", "3"])
    assert res.returncode == 0, res.stdout + res.stderr
    text = (camp / "jobs" / "s0.slurm").read_text()
    assert "mpirun -np 2 /opt/trainscale/openmpi/bin/trainscale run --manifest" in text and "srun --mpi" not in text
    assert "#SBATCH --array=0-0%16\n" in text and "#SBATCH --time=03:00:00\n" in text  # one task of 3 runs


def test_root_only_variables_only_in_the_sites_of_this_machine():
    """OMPI_ALLOW_RUN_AS_ROOT* lets mpirun run as root (containers, CI, this test machine): only
    the site files of this machine carry it, never an example for a real cluster; no site sets
    OMP_NUM_THREADS (job scripts and the local executor export each run's threads)."""
    sites = sorted((REPO / "configs" / "sites").glob("*.yaml"))
    assert len(sites) >= 10
    for path in sites:
        site = yaml.safe_load(path.read_text())
        here = site["scheduler"] in ("local", "simulate") or path.stem.startswith(("localhost", "testbed"))
        names = set(site.get("env") or {})
        if not here:
            assert not any("ALLOW_RUN_AS_ROOT" in n for n in names), path
        assert "OMP_NUM_THREADS" not in names, path


def test_record_end_reads_a_notice_at_a_signal_the_script_did_not_send_as_a_failure(tmp_path):
    """Rank 0 writes PREEMPTED with status signalled the moment a SIGTERM arrives; Open MPI's mpirun
    sends one to the survivors when a rank dies. A job script that passed no signal on records the
    run FAILED with what the launcher said; one that did (--signalled) keeps the marker."""
    camp, runs = expand(tmp_path)
    notice = "status: signalled\nreason: preempted by SIGTERM, stopping at the next step boundary\nsignal: SIGTERM\n"
    since = str(int(time.time()) - 5)
    for signalled, index in ((False, 0), (True, 1)):
        marker = camp / "runs" / f"{runs[index]['run_id']}.PREEMPTED"
        marker.write_text(notice)
        res = run(["sweep", "record-end", camp, "--index", str(index), "--exit-code", "1", "--since", since]
                  + (["--signalled"] if signalled else []))
        assert res.returncode == 0, res.stderr
        failed = camp / "runs" / f"{runs[index]['run_id']}.FAILED"
        if signalled:
            assert marker.exists() and not failed.exists() and res.stdout == "", res.stdout
        else:
            assert not marker.exists(), res.stdout
            assert "the launcher exited with code 1 without a result" in failed.read_text(), res.stdout
