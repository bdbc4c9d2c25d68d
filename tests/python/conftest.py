"""Fixtures for the analysis tests: campaigns written with h5py in schema trainscale-run/1,
with answers known by construction (see the tables below), independent of the package code.

grid campaign (manifest.yaml + runs/): workers {1,2,4} x batch_per_worker {32,64} x
lr {0.01,0.1}. Training loss falls linearly from 2.0 to `end` over T seconds (11 points), so
the trapezoid area over time is exactly T * (2.0 + end) / 2 and over samples
samples_end * (2.0 + end) / 2 with samples_end = 10 steps * batch * workers.
With threshold 0.5 the winners are (workers 1: bs32 lr0.1, area 34.5), (workers 2: bs32
lr0.1, area 23.5; the smallest area 15.6 has min loss 0.6 and is discarded; bs64 lr0.1
diverged), (workers 4: bs64 lr0.01, area 12.25; bs64 lr0.1 failed with only a FAILED
marker).

scaling campaign (runs/ only, no manifest): workers {1,2,4,8} x dist.allreduce {ring, ps},
batch_per_worker 64, 3 repetitions with images/s x {0.98, 1.0, 1.02} of the nominal value:
ring 1000/1800/3200/5600 (efficiency 1/.9/.8/.7), ps 1000/1600/2400/3200 (1/.8/.6/.4).
ps runs record gather/average/broadcast timings; in 8-worker runs rank 7 is a straggler.
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

SCHEMA = "trainscale-run/1"
STEPS = 10
LOSS_START = 2.0
THRESHOLD = 0.5

# (workers, batch_per_worker, lr) -> (T seconds, final loss, status)
GRID = {
    (1, 32, 0.01): (40.0, 0.40, "ok"),
    (1, 32, 0.1): (30.0, 0.30, "ok"),
    (1, 64, 0.01): (25.0, 0.90, "ok"),
    (1, 64, 0.1): (15.0, 1.50, "ok"),       # smallest area for 1 worker, above threshold
    (2, 32, 0.01): (30.0, 0.45, "ok"),
    (2, 32, 0.1): (20.0, 0.35, "ok"),
    (2, 64, 0.01): (12.0, 0.60, "ok"),      # smallest area for 2 workers, above threshold
    (2, 64, 0.1): (10.0, math.nan, "diverged"),
    (4, 32, 0.01): (20.0, 0.40, "ok"),
    (4, 32, 0.1): (15.0, 0.50, "ok"),       # exactly at the threshold: kept
    (4, 64, 0.01): (10.0, 0.45, "ok"),
    (4, 64, 0.1): (None, None, "failed"),
}
WINNERS = {1: (32, 0.1, 34.5), 2: (32, 0.1, 23.5), 4: (64, 0.01, 12.25)}

SCALING_IPS = {"ring": {1: 1000.0, 2: 1800.0, 4: 3200.0, 8: 5600.0},
               "ps": {1: 1000.0, 2: 1600.0, 4: 2400.0, 8: 3200.0}}
REP_FACTORS = (0.98, 1.0, 1.02)
PHASE_SECONDS = {"data_wait": 0.002, "forward": 0.010, "backward": 0.020, "comm": 0.006,
                 "comm_wait": 0.001, "optimizer": 0.001}
PS_PHASE_SECONDS = {"gather": 0.003, "average": 0.001, "broadcast": 0.002}


def base_config(**over) -> dict:
    cfg = {
        "model": "lenet",
        "dataset": {"name": "fashion_mnist", "format": "idx", "storage": "local"},
        "batch_per_worker": 64, "lr": 0.05, "momentum": 0.9, "epochs": 1,
        "precision": "fp32", "backend": "cpu", "threads": 2, "workers": 1,
        "dist": {"strategy": "sync", "allreduce": "ring", "overlap": True},
        "eval": {"target_accuracy": 0.8}, "seed": 1,
    }
    for key, value in over.items():
        node = cfg
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return cfg


def flatten(cfg: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in cfg.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_id(cfg: dict) -> str:
    flat = {k: v for k, v in flatten(cfg).items() if k != "seed"}
    return hashlib.sha256(repr(sorted(flat.items())).encode()).hexdigest()[:8]


def as_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def write_run(path: Path, *, cfg: dict, run_id: str, campaign: str, time: np.ndarray,
              loss: np.ndarray, samples: np.ndarray, summary: dict, status: str = "ok",
              timing: dict | None = None, schema: str = SCHEMA, bytes_attrs: bool = False,
              device_name: str = "Test CPU @ 2.0GHz", device_generation: str = "none"):
    """One run file in schema trainscale-run/1 (strings as str, or as bytes like some C++
    writers produce when bytes_attrs is true). `device_name` / `device_generation` are what
    the backend's describe() said (a GPU run: e.g. "NVIDIA A100-SXM4-80GB" / "a100")."""
    s = (lambda v: as_text(v).encode()) if bytes_attrs else as_text
    S = len(time)
    workers = cfg["workers"]
    with h5py.File(path, "w") as f:
        a = f.attrs
        a["schema"] = s(schema)
        a["run_id"] = s(run_id)
        a["config_id"] = s(config_id(cfg))
        a["campaign"] = s(campaign)
        a["status"] = s(status)
        a["message"] = s("loss became NaN at step 6" if status == "diverged" else "")
        a["config"] = s(yaml.safe_dump(cfg))
        a["version"] = s("0.1.0")
        a["git_sha"] = s("abc1234")
        a["start_time"] = s("2024-05-01T10:00:00Z")
        a["end_time"] = s("2024-05-01T10:01:00Z")
        a["hosts"] = s(",".join(f"node{i // 2}" for i in range(workers)))
        a["world_size"] = np.int64(workers)
        a["mpi_flavor"] = s("openmpi")
        a["mpi_version"] = s("4.1.4")
        a["backend"] = s(cfg["backend"])
        a["device"] = s("cpu" if device_generation == "none" else "cuda:0")
        a["device_name"] = s(device_name)
        a["device_generation"] = s(device_generation)
        a["cpu_model"] = s("Test CPU @ 2.0GHz")
        a["isa"] = s("avx2")
        a["threads"] = np.int64(cfg["threads"])
        a["precision"] = s(cfg["precision"])
        a["seed"] = np.int64(cfg["seed"])
        c = f.create_group("config")
        for k, v in flatten(cfg).items():
            c.attrs[k] = s(v)
        t = f.create_group("train")
        t["step"] = np.arange(S, dtype=np.int64)
        t["epoch"] = np.linspace(0.0, 1.0, S)
        t["samples"] = np.asarray(samples, dtype=np.int64)
        t["time"] = np.asarray(time, dtype=np.float64)
        t["loss"] = np.asarray(loss, dtype=np.float32)
        t["lr"] = np.full(S, cfg["lr"], dtype=np.float32)
        e = f.create_group("eval")
        e["step"] = np.array([S // 2, S - 1], dtype=np.int64)
        e["epoch"] = np.array([0.5, 1.0])
        e["time"] = np.array([time[S // 2], time[-1]], dtype=np.float64)
        e["loss"] = np.array([1.0, 0.5])
        e["accuracy"] = np.array([0.7, 0.85])
        g = f.create_group("timing")
        for phase, arr in (timing or {}).items():
            g.create_dataset(phase, data=np.asarray(arr, dtype=np.float32), chunks=True,
                             compression="gzip")
        sm = f.create_group("summary")
        for k, v in summary.items():
            sm.attrs[k] = np.int64(v) if k == "diverged" else np.float64(v)
        m = f.create_group("model")
        m.attrs["name"] = s(cfg["model"])
        m.attrs["parameters"] = np.int64(44426)
        m.attrs["flops_per_sample"] = np.int64(572000)
        dt = np.dtype([("name", h5py.string_dtype()), ("kind", h5py.string_dtype()),
                       ("descriptor", h5py.string_dtype()), ("parameters", np.int64),
                       ("flops", np.int64)])
        layers = np.array([("conv1", "conv", "conv:mb1_ic1oc6_ih28iw28_kh5kw5_sh1sw1_ph2pw2",
                            156, 122304),
                           ("fc1", "fc", "fc:mb1_ic400oc120", 48120, 96000)], dtype=dt)
        m.create_dataset("layers", data=layers)


def summary_for(ips: float, workers: int, end_loss: float, diverged: bool) -> dict:
    return {
        "images_per_s": ips, "images_per_s_per_worker": ips / workers,
        "step_time_median": 64 * workers / ips, "step_time_p90": 1.1 * 64 * workers / ips,
        "warmup_steps": 2.0, "final_train_loss": end_loss, "min_train_loss": end_loss,
        "final_accuracy": 0.85, "best_accuracy": 0.85, "time_to_target": 5.0,
        "diverged": 1 if diverged else 0,
    }


def uniform_timing(workers: int, steps: int, ps: bool, straggler: bool) -> dict:
    phases = dict(PHASE_SECONDS, **(PS_PHASE_SECONDS if ps else {}))
    out = {p: np.full((steps, workers), v) for p, v in phases.items()}
    step = np.full((steps, workers), sum(phases.values()) + 0.002)  # 2 ms not in any phase
    if straggler:
        step[:, -1] *= 1.5
    out["step"] = step
    return out


def make_grid_campaign(root: Path) -> Path:
    cdir = root / "grid"
    (cdir / "runs").mkdir(parents=True)
    entries = []
    for i, ((w, bs, lr), (T, end, status)) in enumerate(GRID.items()):
        cfg = base_config(workers=w, batch_per_worker=bs, lr=lr)
        cid = config_id(cfg)
        run_id = f"{cid}-r0"
        entries.append({"index": i, "run_id": run_id, "config_id": cid, "config": cfg})
        if status == "failed":
            (cdir / "runs" / f"{run_id}.FAILED").write_text(
                "rank 0 on node0: out of memory allocating 2.1 GB for conv1 workspace\n")
            continue
        time = np.linspace(0.0, T, STEPS + 1)
        samples = np.arange(STEPS + 1) * bs * w
        if status == "diverged":
            loss = np.linspace(LOSS_START, 0.5, STEPS + 1)
            loss[6:] = np.nan
        else:
            loss = np.linspace(LOSS_START, end, STEPS + 1)
        summary = summary_for(1000.0 * w, w, float(np.nanmin(loss)), status == "diverged")
        write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign="grid",
                  time=time, loss=loss, samples=samples, summary=summary, status=status,
                  timing=uniform_timing(w, STEPS + 1, False, False), bytes_attrs=(i % 2 == 1))
        (cdir / "runs" / f"{run_id}.DONE").write_text("")
    (cdir / "manifest.yaml").write_text(yaml.safe_dump(
        {"campaign": "grid", "hash": "0" * 16, "runs": entries}, sort_keys=False))
    return cdir


def make_scaling_campaign(root: Path, name: str = "scaling", factor: float = 1.0) -> Path:
    """`factor` scales every throughput (for compare tests: a campaign `factor` x faster)."""
    cdir = root / name
    (cdir / "runs").mkdir(parents=True)
    for algo, table in SCALING_IPS.items():
        for w, ips in table.items():
            cfg = base_config(workers=w, **{"dist.allreduce": algo})
            cid = config_id(cfg)
            for k, rep in enumerate(REP_FACTORS):
                cfg["seed"] = 100 + k
                run_id = f"{cid}-r{k}"
                x = ips * rep * factor
                T = 60.0 * 1000.0 / x
                time = np.linspace(0.0, T, STEPS + 1)
                loss = np.linspace(LOSS_START, 0.4, STEPS + 1)
                write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id,
                          campaign=name, time=time, loss=loss,
                          samples=np.arange(STEPS + 1) * 64 * w,
                          summary=summary_for(x, w, 0.4, False),
                          timing=uniform_timing(w, 20, algo == "ps", w == 8))
                (cdir / "runs" / f"{run_id}.DONE").write_text("")
    return cdir


def make_unknown_schema_campaign(root: Path) -> Path:
    cdir = root / "future"
    (cdir / "runs").mkdir(parents=True)
    cfg = base_config()
    write_run(cdir / "runs" / "deadbeef-r0.h5", cfg=cfg, run_id="deadbeef-r0",
              campaign="future", time=np.linspace(0, 1, 3), loss=np.ones(3),
              samples=np.arange(3) * 64, summary=summary_for(1.0, 1, 1.0, False),
              schema="trainscale-run/99")
    return cdir


@pytest.fixture(scope="session")
def campaigns(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("campaigns")
    return {"grid": make_grid_campaign(root), "scaling": make_scaling_campaign(root),
            "scaling_fast": make_scaling_campaign(root, "scaling_fast", 2.0),
            "future": make_unknown_schema_campaign(root), "root": root}


@pytest.fixture(scope="session")
def grid_dir(campaigns) -> Path:
    return campaigns["grid"]


@pytest.fixture(scope="session")
def scaling_dir(campaigns) -> Path:
    return campaigns["scaling"]


@pytest.fixture(scope="session")
def shared_report(campaigns, tmp_path_factory):
    """shared_report(*names, threshold=None) -> (html, md): build_report of the named fixture
    campaigns ("grid", "scaling", ...), built once per pytest process on first use and then handed
    to every test that asks for the same report (issue 37: test files built the same reports,
    figures and all, several times over). The tests only read it: one that changes the output or
    its folder builds its own. Written to <folder of its own>/<first name>.html, its figures beside
    it in <first name>_figures/."""
    built = {}

    def report(*names, threshold=None):
        key = (names, threshold)
        if key not in built:
            from trainscale_analysis.report import build_report
            out = tmp_path_factory.mktemp("shared_report") / f"{names[0]}.html"
            built[key] = build_report([campaigns[n] for n in names], out, threshold=threshold)
        return built[key]

    return report


@pytest.fixture(scope="session")
def testbed():
    """Two hosts of the multi-host test bed (tests/python/testbed.py), two slots each; skips with
    the reason where namespaces cannot be made."""
    from testbed import Testbed, unavailable
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    bed = Testbed(2, ranks_per_host=2)
    try:
        yield bed
    finally:
        bed.down()


# ---- running the suite in parallel (scripts/test.sh, issue 37) ------------------------------
# scripts/test.sh runs this suite twice over: `-m "not serial" -n 2 --dist loadfile` (two
# pytest-xdist workers; a file's tests run in one worker, in order, so its module fixtures are made
# once), then `-m serial` in one process. The files below share something with the whole
# machine, or measure time, and so run in the serial pass. (Not --dist loadgroup: from pytest 9.2
# on it no longer groups, pytest-dev/pytest-xdist#1386.)
# Not here, though they once were: test_slurm_integration.py (its Slurm is private to the test:
# its own ports, munge socket and state in a temporary directory; a busy neighbour only slows its
# jobs, far inside its deadlines, and most of its minute is waiting for Slurm, which the other
# worker fills) and test_bench_allreduce.py (it checks only what holds whatever the machine does:
# exact sums, positive and ordered times that agree with each other).
SERIAL_FILES = {
    "test_slurm_multihost.py": "the test bed (network namespaces, /etc/hosts, /run/trainscale-testbed) and a Slurm in it",
    "test_multihost.py": "the test bed (network namespaces, /etc/hosts, /run/trainscale-testbed), shaped links",
    "test_failures_ranks.py": "dist.timeout_s 2: a rank starved for 2 s by a neighbouring test reads as a lost rank",
    "test_dist_hetero.py": "measured and adaptive shares follow the ranks' step times",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: runs in scripts/test.sh's serial pass (conftest.SERIAL_FILES says why)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker(pytest.mark.serial)
