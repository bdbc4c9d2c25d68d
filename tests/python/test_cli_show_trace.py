"""`trainscale show` (a run file for people and scripts: text, --json, --csv), `trainscale trace`
(the per-rank phases and each bucket's exchange as Chrome trace events) and the accelerator
utilisation of /utilisation (docs/hdf5-schema.md "Reading a run file", "/bucket_timing",
"/utilisation"; docs/interoperability.md "Timelines")."""
import csv
import io
import json

import h5py
import numpy as np
import pytest

from test_cli_mpi import mpirun
from trainscale_cli import run, write_config

CONFIG = """\
model: lenet
dataset: {name: synthetic, format: synthetic, synthetic_samples: 1024}
batch_per_worker: 16
lr: 0.01
steps: 12
threads: 1
workers: 2
dist: {strategy: sync, allreduce: ring, overlap: true, bucket_mb: 0.05}
eval: {every_epochs: 1, batch: 64}
checkpoint: {every_steps: 5}
log_every: 4
"""


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory):
    """One 2-rank run with an evaluation and an AU threshold no CPU run misses (0.01)."""
    tmp = tmp_path_factory.mktemp("show")
    cfg = write_config(tmp / "two.yaml", CONFIG)
    res = mpirun(2, ["run", "--config", cfg, "--out", tmp / "out", "--set", "metrics.au_threshold=0.01"])
    assert res.returncode == 0, res.stdout + res.stderr
    (path,) = (tmp / "out").glob("*.h5")
    return path


def phases_of(f):
    return sorted(f["timing"].keys())


def test_the_run_file_holds_each_ranks_utilisation_and_the_verdict(two_rank_run):
    with h5py.File(two_rank_run) as f:
        warm = int(f["summary"].attrs["warmup_steps"])
        t = {p: f["timing"][p][warm:] for p in ("forward", "backward", "optimizer", "data_wait", "step")}
        au = (t["forward"] + t["backward"] + t["optimizer"]).sum(axis=0, dtype=np.float64) / t["step"].sum(axis=0, dtype=np.float64)
        wait = t["data_wait"].sum(axis=0, dtype=np.float64) / t["step"].sum(axis=0, dtype=np.float64)
        np.testing.assert_allclose(f["utilisation/au"][:], au, rtol=1e-5)
        np.testing.assert_allclose(f["utilisation/data_wait_share"][:], wait, rtol=1e-5, atol=1e-9)
        assert f["utilisation"].attrs["threshold"] == pytest.approx(0.01)
        s = f["summary"].attrs
        assert s["au_min"] == pytest.approx(au.min(), rel=1e-5) and s["au_mean"] == pytest.approx(au.mean(), rel=1e-5)
        assert 0 < s["au_min"] <= 1 and s["au_pass"] == 1.0


def test_without_a_threshold_there_is_no_verdict_and_an_unreachable_one_fails(tmp_path):
    cfg = write_config(tmp_path / "one.yaml", CONFIG.replace("workers: 2", "workers: 1"))
    for threshold, verdict in ((None, None), ("1", 0.0)):
        args = ["run", "--config", cfg, "--out", tmp_path / f"o{threshold}"]
        res = run(args + (["--set", f"metrics.au_threshold={threshold}"] if threshold else []))
        assert res.returncode == 0, res.stderr
        (path,) = (tmp_path / f"o{threshold}").glob("*.h5")
        with h5py.File(path) as f:
            got = f["summary"].attrs["au_pass"]
            assert np.isnan(got) if verdict is None else got == verdict
    bad = run(["run", "--config", cfg, "--out", tmp_path / "bad", "--set", "metrics.au_threshold=1.5"])
    assert bad.returncode == 2 and "metrics.au_threshold" in bad.stderr


def test_show_prints_the_run_its_summary_phases_ranks_and_config(two_rank_run):
    res = run(["show", two_rank_run])
    assert res.returncode == 0, res.stderr
    text = res.stdout
    with h5py.File(two_rank_run) as f:
        run_id = f.attrs["run_id"]
        images = f["summary"].attrs["images_per_s"]
        phases = phases_of(f)
    assert text.startswith(f"run       {run_id}  status ok")
    assert f"images_per_s              {images:.4g}" in text
    for phase in phases:
        assert f"\n  {phase} " in text, phase
    rank_rows = [line.split() for line in text.splitlines() if line.startswith("  0 ") or line.startswith("  1 ")]
    assert len(rank_rows) == 2 and rank_rows[1][2] == "1", rank_rows  # rank, host, local rank
    assert "\nconfig\n" in text and "  dist.allreduce: ring\n" in text and "  metrics.au_threshold: 0.01\n" in text


def test_show_json_and_csv_hold_the_files_values(two_rank_run):
    res = run(["show", two_rank_run, "--json"])
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    with h5py.File(two_rank_run) as f:
        assert doc["run"]["run_id"] == f.attrs["run_id"] and doc["run"]["world_size"] == 2
        assert doc["summary"]["images_per_s"] == f["summary"].attrs["images_per_s"]  # full precision
        assert doc["summary"]["time_to_target"] is None or np.isfinite(f["summary"].attrs["time_to_target"])
        assert [p["phase"] for p in doc["phases"]][:3] == ["data_wait", "forward", "backward"]
        assert sorted(p["phase"] for p in doc["phases"]) == phases_of(f)
        warm = int(f["summary"].attrs["warmup_steps"])
        step = f["timing/step"][warm:].astype(np.float64)
        assert doc["per_rank"][1]["phase_means"]["step"] == pytest.approx(step[:, 1].mean(), rel=1e-9)
        assert doc["per_rank"][0]["au"] == f["utilisation/au"][0]
        assert doc["config"]["workers"] == "2"
    rows = list(csv.DictReader(io.StringIO(run(["show", two_rank_run, "--csv"]).stdout)))
    by = {(r["section"], r["name"], r["rank"]): r["value"] for r in rows}
    assert float(by[("summary", "images_per_s", "")]) == doc["summary"]["images_per_s"]
    assert float(by[("rank", "au", "1")]) == doc["per_rank"][1]["au"]
    assert by[("run", "config", "")].startswith("model: ")  # a multi-line value, quoted
    assert by[("config", "dist.allreduce", "")] == "ring"


def test_show_refuses_what_is_not_a_run_file(tmp_path):
    bad = tmp_path / "not.h5"
    bad.write_text("not hdf5")
    res = run(["show", bad])
    assert res.returncode == 1 and "cannot be opened as HDF5" in res.stderr
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f.attrs["schema"] = "something-else/1"
    res = run(["show", tmp_path / "foreign.h5"])
    assert res.returncode == 1 and "not a trainscale run file" in res.stderr
    assert run(["show"]).returncode == 2
    assert run(["show", bad, "--json", "--csv"]).returncode == 2


def test_trace_is_chrome_trace_json_with_every_phase_at_its_recorded_duration(two_rank_run, tmp_path):
    out = tmp_path / "trace.json"
    res = run(["trace", two_rank_run, "-o", out])
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ms"
    for e in events:  # the Trace Event Format's fields for the phases used here
        assert e["ph"] in ("X", "M", "i") and isinstance(e["name"], str) and isinstance(e["pid"], int)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and isinstance(e["tid"], int)
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert {pid for pid, _ in names} == {0, 1}
    spans = {}
    for e in events:
        if e["ph"] == "X" and e["cat"] not in ("step", "evaluation", "checkpoint") and e["name"] != "step_other":
            spans[(e["name"], e["args"]["step"], e["pid"])] = e
    with h5py.File(two_rank_run) as f:
        # On the wall clock: rank 0's evaluations and checkpoints as spans of their recorded seconds.
        evals = [e for e in events if e["name"] == "evaluation"]
        assert [e["dur"] for e in evals] == pytest.approx(list(f["eval/seconds"][:] * 1e6), abs=1e-3)
        ckpts = [e for e in events if e["name"] == "checkpoint"]
        assert len(ckpts) == len(f["checkpoints/step"]) == 2  # after steps 5 and 10 of 12
        assert [e["dur"] for e in ckpts] == pytest.approx(list(f["checkpoints/seconds"][:] * 1e6), abs=1e-3)
        assert (f["checkpoints/bytes"][:] > 0).all() and f["summary"].attrs["checkpoint_gbps"] > 0
        assert "wall clock" in doc["otherData"]["clock"]
        for phase in phases_of(f):
            if phase == "step":
                continue
            seconds = f["timing"][phase][:]
            for s in range(seconds.shape[0]):
                for r in range(2):
                    e = spans[(phase, s, r)]
                    assert e["dur"] == pytest.approx(float(seconds[s, r]) * 1e6, rel=1e-6, abs=1e-3), (phase, s, r)
        steps = [e for e in events if e.get("cat") == "step" and e["pid"] == 0]
        assert len(steps) == len(f["train/step"])
        starts = [e["ts"] for e in steps]
        assert starts == sorted(starts), "steps follow each other on the timeline"
    for (name, s, r), e in spans.items():  # each step's phases lie inside it
        step = next(x for x in events if x.get("cat") == "step" and x["pid"] == r and x["args"]["step"] == s)
        assert e["ts"] >= step["ts"] - 0.01 and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 0.01, (name, s, r)  # µs, rounding


def test_trace_has_each_bucket_of_each_recorded_step_on_each_rank_inside_its_step(two_rank_run, tmp_path):
    """LeNet's ~61k gradients in 0.05 MiB buckets: several buckets, each exchanged every step by
    sync; every one is an event on its rank's "buckets" thread at the run file's start and duration."""
    out = tmp_path / "trace.json"
    res = run(["trace", two_rank_run, "-o", out])
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    steps = {(e["pid"], e["args"]["step"]): e for e in events if e.get("cat") == "step"}
    buckets = {(e["pid"], e["args"]["step"], e["args"]["bucket"]): e for e in events if e.get("cat") == "bucket"}
    with h5py.File(two_rank_run) as f:
        g = f["bucket_timing"]
        recorded, start, end = g["step"][:], g["start"][:], g["end"][:]
        step_numbers = list(f["train/step"][:])
        assert g.attrs["stride"] == 1 and list(recorded) == step_numbers  # every step of a short run
    n_steps, ranks, n_buckets = start.shape
    assert ranks == 2 and n_buckets >= 3, start.shape  # several buckets
    assert np.isfinite(start).all() and np.isfinite(end).all() and (end >= start).all()  # sync: every bucket, every step
    assert len(buckets) == start.size
    for n, number in enumerate(recorded):
        s = step_numbers.index(number)
        for r in range(ranks):
            assert threads[(r, buckets[(r, s, 0)]["tid"])] == "buckets"
            step = steps[(r, s)]
            for b in range(n_buckets):
                e = buckets[(r, s, b)]
                assert e["ph"] == "X" and e["name"] == f"bucket {b}" and isinstance(e["ts"], (int, float))
                assert e["dur"] == pytest.approx(float(end[n, r, b] - start[n, r, b]) * 1e6, rel=1e-5, abs=2e-3)
                assert e["ts"] - step["ts"] == pytest.approx(float(start[n, r, b]) * 1e6, rel=1e-5, abs=2e-3)
                assert e["ts"] >= step["ts"] - 0.01 and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 0.01, (s, r, b)
    assert "bucket(s)" in doc["otherData"]["buckets"] and "buckets: " in res.stdout


def test_trace_of_a_file_without_bucket_timing_says_they_were_not_recorded(two_rank_run, tmp_path):
    old = tmp_path / "old.h5"
    old.write_bytes(two_rank_run.read_bytes())
    with h5py.File(old, "a") as f:  # a run file of a version before /bucket_timing
        del f["bucket_timing"]
    res = run(["trace", old, "-o", tmp_path / "old.json"])
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "old.json").read_text())
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "bucket"]
    assert doc["otherData"]["buckets"].startswith("not recorded") and "buckets: not recorded" in res.stdout
    assert [e for e in doc["traceEvents"] if e["name"] == "forward"]  # the phases are still there


def test_trace_refuses_a_bucket_timing_of_the_wrong_shape(two_rank_run, tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(two_rank_run.read_bytes())
    with h5py.File(bad, "a") as f:  # one rank's buckets only: not steps x ranks x buckets
        start = f["bucket_timing/start"][:, :1, :]
        del f["bucket_timing/start"]
        f["bucket_timing/start"] = start
    res = run(["trace", bad, "-o", tmp_path / "bad.json"])
    assert res.returncode == 1, res.stdout + res.stderr
    assert "/bucket_timing/start and end are not recorded steps x ranks x buckets" in res.stderr and str(bad) in res.stderr
    assert not (tmp_path / "bad.json").exists()


def test_show_prints_the_runs_warnings(tmp_path):
    cfg = write_config(tmp_path / "warm.yaml", "model: mlp\ndataset: {name: synthetic, format: synthetic, "
                       "synthetic_samples: 256}\nbatch_per_worker: 16\nsteps: 4\nthreads: 1\n"
                       "lr_schedule: {kind: cosine, warmup_epochs: 1}\neval: {every_epochs: 0}\n")
    res = run(["run", "--config", cfg, "--out", tmp_path / "o"])
    assert res.returncode == 0, res.stderr
    (path,) = (tmp_path / "o").glob("*.h5")
    with h5py.File(path) as f:
        warnings = [w for w in f.attrs["warnings"].split("\n") if w]
    assert warnings and any("warm-up" in w for w in warnings)
    shown = [line for line in run(["show", path]).stdout.splitlines() if line.startswith("warning   ")]
    assert shown == [f"warning   {w}" for w in warnings]
