"""`trainscale run --manifest CAMPAIGN_DIR --index I`: one run of a frozen campaign. It refuses an
edited manifest and an index out of range (exit 2), skips a run with a DONE marker, writes one log
per attempt, and ends done (DONE marker, exit 0), diverged (DONE marker with status diverged,
exit 3) or failed (FAILED marker with the reason; stale reasons removed by the next attempt)."""
import json
import subprocess

import h5py
import yaml

from trainscale_cli import CAMPAIGN_BASE, BINARY, REPO, env, run, write_config

BASE = CAMPAIGN_BASE


def make_campaign(tmp_path, sweep_body):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: manifest_test\nbase: base.yaml\n" + sweep_body)
    out = tmp_path / "campaign"
    res = run(["sweep", "expand", sweep, "--out", out])
    assert res.returncode == 0, res.stderr
    return out, yaml.safe_load((out / "manifest.yaml").read_text())["runs"]


def test_done_diverged_failed_and_idempotent(tmp_path):
    # lr 3e38: the first update overflows weights to inf, so the loss is NaN at step 2 whatever
    # the seed (derived from the config id); a merely large lr diverges only for some seeds.
    camp, runs = make_campaign(tmp_path, "include:\n  - {lr: 0.05}\n  - {lr: 3.0e+38}\n"
                                         "  - {dataset.root: /nonexistent/fmnist}\n")
    ok, diverged, bad = runs[0]["run_id"], runs[1]["run_id"], runs[2]["run_id"]

    res = run(["run", "--manifest", camp, "--index", 0])
    assert res.returncode == 0, res.stderr
    done = (camp / "runs" / f"{ok}.DONE").read_text()
    assert "status: ok" in done and "attempt: 1" in done
    with h5py.File(camp / "runs" / f"{ok}.h5") as f:
        assert f.attrs["run_id"] == ok
        assert f.attrs["config_id"] == runs[0]["config_id"]
        assert f.attrs["campaign"] == "manifest_test"
        assert f.attrs["status"] == "ok"
        assert int(f.attrs["seed"]) == runs[0]["config"]["seed"]
    log = (camp / "logs" / f"{ok}.attempt1.log").read_text()
    assert f"run_id: {ok}" in log and "result: done" in log and "step 4/4" in log
    assert not (camp / "runs" / f"{ok}.RUNNING").exists()

    # A run with a DONE marker is skipped: no second attempt log, the file untouched.
    mtime = (camp / "runs" / f"{ok}.h5").stat().st_mtime_ns
    res = run(["run", "--manifest", camp, "--index", 0])
    assert res.returncode == 0 and "already done" in res.stdout, res.stdout + res.stderr
    assert not (camp / "logs" / f"{ok}.attempt2.log").exists()
    assert (camp / "runs" / f"{ok}.h5").stat().st_mtime_ns == mtime

    res = run(["run", "--manifest", camp, "--index", 1])
    assert res.returncode == 3, res.stdout + res.stderr
    assert "status: diverged" in (camp / "runs" / f"{diverged}.DONE").read_text()
    assert "result: diverged" in (camp / "logs" / f"{diverged}.attempt1.log").read_text()

    for attempt in (1, 2):
        res = run(["run", "--manifest", camp, "--index", 2])
        assert res.returncode == 1, res.stdout + res.stderr
        # The one marker format (core/run_marker.h): "key: value" lines.
        marker = dict(line.split(": ", 1) for line in (camp / "runs" / f"{bad}.FAILED").read_text().splitlines())
        assert "/nonexistent/fmnist" in marker["reason"], marker
        assert marker["attempt"] == str(attempt) and marker["log"] == f"logs/{bad}.attempt{attempt}.log", marker
        assert "result: failed" in (camp / "logs" / f"{bad}.attempt{attempt}.log").read_text()
    assert not (camp / "runs" / f"{bad}.h5").exists()

    res = run(["sweep", "status", camp, "--format", "json"])
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    assert list(st) == ["total", "done", "diverged", "failed", "preempted", "running", "pending", "pending_reasons",
                        "missing", "unsupported"]
    assert (st["total"], st["done"], st["diverged"], st["running"], st["pending"], st["missing"]) == (3, 1, 1, 0, 0, 0)
    assert [(f["index"], f["run_id"]) for f in st["failed"]] == [(2, bad)]
    assert "/nonexistent/fmnist" in st["failed"][0]["reason"]


def test_edited_manifest_and_bad_index_are_refused(tmp_path):
    camp, runs = make_campaign(tmp_path, "matrix: {lr: [0.01, 0.02]}\n")
    res = run(["run", "--manifest", camp, "--index", 2])
    assert res.returncode == 2 and "--index 2" in res.stderr and "runs 0..1" in res.stderr, res.stderr
    res = run(["run", "--manifest", camp])
    assert res.returncode == 2 and "go together" in res.stderr, res.stderr

    manifest = camp / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("lr: 0.02", "lr: 0.03"))
    res = run(["run", "--manifest", camp, "--index", 0])
    assert res.returncode == 2, res.stdout + res.stderr
    assert "changed after it was frozen" in res.stderr
    assert not list((camp / "runs").iterdir())  # nothing ran, no marker
    res = run(["sweep", "status", camp])
    assert res.returncode == 2 and "manifest.hash" in res.stderr


def test_two_rank_run_under_mpirun(tmp_path):
    camp, runs = make_campaign(tmp_path, "matrix: {workers: [2]}\n")
    res = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", str(BINARY), "run", "--manifest", str(camp),
                          "--index", "0"], capture_output=True, text=True, env=env(), timeout=300, cwd=REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    run_id = runs[0]["run_id"]
    assert "status: ok" in (camp / "runs" / f"{run_id}.DONE").read_text()
    with h5py.File(camp / "runs" / f"{run_id}.h5") as f:
        assert int(f.attrs["world_size"]) == 2
    assert "world_size: 2" in (camp / "logs" / f"{run_id}.attempt1.log").read_text()


def test_storage_mapping_and_stage_in(tmp_path):
    # Site storage `shared` holds the data set (a link to the installed one); `node` is staged
    # from it before the run, once.
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "fashion-mnist").symlink_to("/usr/share/datasets/fashion-mnist")
    site = write_config(tmp_path / "site.yaml", f"""scheduler: local
mpi: {{openmpi: {{launcher: mpirun, launcher_args: [--oversubscribe]}}}}
storage:
  local: {{}}
  shared: {{path: {tmp_path / "shared"}}}
  node: {{path: {tmp_path / "node"}, stage_from: shared}}
""")
    write_config(tmp_path / "base.yaml", BASE.replace("/usr/share/datasets/fashion-mnist", "/data/fashion-mnist"))
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {dataset.storage: [shared, node]}\n")
    camp = tmp_path / "campaign"
    res = run(["sweep", "expand", sweep, "--site", site, "--out", camp])
    assert res.returncode == 0, res.stderr
    runs = yaml.safe_load((camp / "manifest.yaml").read_text())["runs"]

    res = run(["run", "--manifest", camp, "--index", 0])
    assert res.returncode == 0, res.stdout + res.stderr
    log = (camp / "logs" / f"{runs[0]['run_id']}.attempt1.log").read_text()
    assert f"reading {tmp_path / 'shared' / 'fashion-mnist'}" in log
    assert not (tmp_path / "node").exists()

    res = run(["run", "--manifest", camp, "--index", 1])
    assert res.returncode == 0, res.stdout + res.stderr
    staged = tmp_path / "node" / "fashion-mnist"
    assert (staged / "train-images-idx3-ubyte.gz").stat().st_size == \
        (tmp_path / "shared" / "fashion-mnist" / "train-images-idx3-ubyte.gz").stat().st_size
    assert (staged / ".trainscale-staged").exists()
    done = yaml.safe_load((camp / "runs" / f"{runs[1]['run_id']}.DONE").read_text())
    assert done["status"] == "ok" and done["stage_in_s"] > 0
    log = (camp / "logs" / f"{runs[1]['run_id']}.attempt1.log").read_text()
    assert f"-> {staged} in " in log
    # The run file keeps the manifest's config: the logical root and storage name.
    with h5py.File(camp / "runs" / f"{runs[1]['run_id']}.h5") as f:
        assert f["config"].attrs["dataset.storage"] == "node"
        assert f["config"].attrs["dataset.root"] == "/data/fashion-mnist"
