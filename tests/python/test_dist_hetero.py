"""Heterogeneous workers (docs/heterogeneous.md) end to end under the MPI
launcher of the binary's flavor: unequal shares of the global batch (dist.partition static,
measured, adaptive) follow the loss trajectory of 1 rank with the whole global batch (the
gradients are weighted by share; the mlp has no batch norm), measured shares order as the
ranks' speeds under dist.emulate_slowdown, every share change is recorded in /partition, the
report's per-batch worker table is built from those run files, and the config refuses shares
that do not fit (exit 2 naming the key)."""
import h5py
import numpy as np
import pytest

from test_cli_mpi import mpirun
from trainscale_cli import run, write_config
from trainscale_analysis import hetero
from trainscale_analysis.report import build_report

BASE = """\
model: mlp
dataset: {{name: synthetic, format: synthetic, synthetic_samples: 2048}}
global_batch: 128
lr: 0.05
momentum: 0.9
weight_decay: 0.0005
steps: {steps}
threads: 1
workers: {workers}
dist: {{strategy: sync, allreduce: ring, overlap: true, bucket_mb: 0.05{dist}}}
eval: {{every_epochs: 0}}
log_every: 5
seed: 5
"""
# The same tolerance as the equal-share test (test_dist_equivalence.py): only the float
# summation order differs.
RTOL, ATOL = 2e-4, 1e-5


def train(tmp_path, name, ranks, steps, dist=""):
    cfg = write_config(tmp_path / f"{name}.yaml", BASE.format(steps=steps, workers=ranks, dist=dist))
    out = tmp_path / name
    proc = mpirun(ranks, ["run", "--config", cfg, "--out", out]) if ranks > 1 else \
        run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    return path, proc.stdout


def losses(path):
    with h5py.File(path) as f:
        return f["train/loss"][:]


def check_partition_consistent(path, steps, ranks=2, global_batch=128):
    """Per-step shares partition the global batch; a change is recorded exactly where they change."""
    p = hetero.load_partition(path)
    shares = p["shares"]
    assert shares.shape == p["compute"].shape == p["idle"].shape == (steps, ranks)
    assert np.all(shares.sum(axis=1) == global_batch) and np.all(shares > 0)
    assert np.all(p["idle"] >= 0) and np.all(p["idle"].min(axis=1) == 0), "the slowest rank waits for nobody"
    changed = [1] + [s + 1 for s in range(1, steps) if np.any(shares[s] != shares[s - 1])]
    assert list(p["change_step"]) == changed
    for step, row in zip(p["change_step"], p["change_shares"]):
        np.testing.assert_array_equal(shares[step - 1], row)
    return p


def test_static_shares_96_32_follow_one_rank_with_128(tmp_path):
    ref, _ = train(tmp_path, "ref", 1, 10)
    path, log = train(tmp_path, "static", 2, 10, ", partition: static, shares: [96, 32]")
    got = losses(path)
    assert got.shape == (10,) and np.ptp(got) > 0
    np.testing.assert_allclose(got, losses(ref), rtol=RTOL, atol=ATOL)
    assert "static shares 96,32" in log
    p = check_partition_consistent(path, 10)
    assert p["kind"] == "static" and np.all(p["shares"] == [96, 32])
    assert p["emulate_slowdown_rank"] == -1


@pytest.fixture(scope="module")
def measured_run(tmp_path_factory):
    """2 ranks, rank 0 emulated 8x slower, shares measured over the first 4 steps."""
    tmp = tmp_path_factory.mktemp("measured")
    ref, _ = train(tmp, "ref", 1, 10)
    path, log = train(tmp, "measured", 2, 10, ", partition: measured, calibration_steps: 4, share_quantum: 8, "
                                              "emulate_slowdown: {rank: 0, factor: 8}")
    return path, log, ref


def test_measured_shares_follow_the_speeds_and_the_trajectory(measured_run):
    path, log, ref = measured_run
    p = check_partition_consistent(path, 10)
    # Decided after step 4; the loaders have read ahead up to batch 4 + prefetch (2): step 8 on.
    assert list(p["change_step"]) == [1, 8], log
    fast, slow = p["change_shares"][-1][1], p["change_shares"][-1][0]
    assert slow < fast and slow % 8 == 0 and fast % 8 == 0, f"the slowed-down rank 0 must get less: {p['change_shares']}"
    assert f"shares: {slow},{fast} from step 8" in log
    np.testing.assert_allclose(losses(path), losses(ref), rtol=RTOL, atol=ATOL)
    with h5py.File(path) as f:
        assert f["config"].attrs["dist.emulate_slowdown.rank"] == "0"
        assert f["config"].attrs["dist.emulate_slowdown.factor"] == "8"
        assert f["partition"].attrs["emulate_slowdown_rank"] == 0
        assert f["partition"].attrs["emulate_slowdown_factor"] == 8.0


def test_adaptive_shares_record_every_change_and_keep_the_trajectory(tmp_path):
    ref, _ = train(tmp_path, "ref", 1, 14)
    path, log = train(tmp_path, "adaptive", 2, 14, ", partition: adaptive, calibration_steps: 3, rebalance_steps: 3, "
                                                   "emulate_slowdown: {rank: 1, factor: 8}")
    p = check_partition_consistent(path, 14)
    assert len(p["change_step"]) >= 2, log
    assert p["change_shares"][1][1] < p["change_shares"][1][0], "the slowed-down rank 1 gets less"
    np.testing.assert_allclose(losses(path), losses(ref), rtol=RTOL, atol=ATOL)


def test_report_shows_the_per_batch_worker_table(measured_run, tmp_path):
    path, _, _ = measured_run
    table = hetero.batch_table(path)
    assert len(table) == 10 and list(table["step"]) == list(range(1, 11))
    for r in (0, 1):
        assert {f"rank {r} samples", f"rank {r} compute s", f"rank {r} idle s"} <= set(table.columns)
    assert np.all((table["idle_fraction"] >= 0) & (table["idle_fraction"] < 1))
    assert list(table["rank 0 samples"] + table["rank 1 samples"]) == [128] * 10
    html, md = build_report([path.parent], tmp_path / "report.html")
    text = html.read_text()
    assert "Heterogeneous workers" in text and "rank 1 compute s" in text and "idle fraction" in text
    assert "Heterogeneous workers" in md.read_text()


@pytest.mark.parametrize("dist, key, says", [
    (", partition: static, shares: [96, 16]", "dist.shares", "sum to 112, not to the global batch 128"),
    (", partition: static, shares: [64, 32, 32]", "dist.shares", "3 shares for 2 workers"),
    (", partition: static", "dist.partition", "static needs dist.shares"),
    (", shares: [64, 64]", "dist.shares", "applies to dist.partition static only"),
    (", partition: static, shares: [64, x]", "dist.shares", "not a list of integers in 1..1073741824"),
    (", partition: static, shares: [9223372036854775807, 9223372036854775807]", "dist.shares", "not a list of integers"),
    (", partition: measured, share_quantum: 48", "dist.share_quantum", "multiples of 48"),
    (", emulate_slowdown: {rank: 2}", "dist.emulate_slowdown.rank", "does not exist among 2 workers"),
    (", emulate_slowdown: {factor: 2}", "dist.emulate_slowdown.factor", "add dist.emulate_slowdown.rank"),
    (", strategy: weight_avg, partition: static, shares: [96, 32]", "dist.partition", "weight_avg"),
])
def test_shares_that_do_not_fit_are_config_errors(tmp_path, dist, key, says):
    text = BASE.format(steps=2, workers=2, dist=dist)
    if "strategy: weight_avg" in dist:
        text = text.replace("strategy: sync, ", "")
    cfg = write_config(tmp_path / "bad.yaml", text)
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"key '{key}'" in proc.stderr and says in proc.stderr, proc.stderr


def test_hetero_allreduce_device_is_refused_without_a_gpu_path(tmp_path):
    """dist.hetero_allreduce device sums on the GPUs with NCCL (dist/device_sum_strategy.h): it
    names nccl as its dist.allreduce, and every node needs a CUDA rank to sum its host ranks'
    gradients. Its sums are checked by tests/cpp/test_mpi_device_sum.cpp (host stand-in for the
    GPU) and scripts/device_hetero.sh (a GPU machine)."""
    cfg = write_config(tmp_path / "ring.yaml", BASE.format(steps=2, workers=1, dist=", hetero_allreduce: device"))
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "key 'dist.hetero_allreduce'" in proc.stderr and "set dist.allreduce: nccl" in proc.stderr, proc.stderr
    text = BASE.format(steps=2, workers=2, dist=", hetero_allreduce: device").replace("allreduce: ring", "allreduce: nccl")
    cfg = write_config(tmp_path / "cpu.yaml", text + RANKS)
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    # A CUDA build finds no CUDA rank on this node (the same refusal on every rank); a build
    # without CUDA has no nccl at all.
    assert ("the node of rank(s) 0, 1 runs no CUDA rank" in proc.stderr
            or "key 'dist.allreduce'" in proc.stderr and "nccl" in proc.stderr), proc.stderr
    assert list((tmp_path / "out").glob("*.h5")) == []


# Ranks of different kinds (docs/heterogeneous.md "Ranks of different kinds"): here ref and cpu,
# the two host backends; cpu + cuda is checked on a GPU machine (scripts/device_hetero.sh).
RANKS = "ranks: [{backend: ref}, {backend: cpu, threads: 1}]\n"


def test_ranks_of_different_backends_follow_one_rank_with_the_whole_batch(tmp_path):
    ref, _ = train(tmp_path, "one", 1, 8)
    cfg = write_config(tmp_path / "mixed.yaml",
                       BASE.format(steps=8, workers=2, dist=", partition: static, shares: [32, 96]") + RANKS)
    out = tmp_path / "mixed"
    proc = mpirun(2, ["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    got = losses(path)
    assert got.shape == (8,) and np.ptp(got) > 0
    # The two backends compute the same fp32 layers in other orders: rounding, not more.
    np.testing.assert_allclose(got, losses(ref), rtol=1e-3, atol=1e-5)
    with h5py.File(path) as f:
        assert f.attrs["backend"] == "ref+cpu"
        attrs = f["partition"].attrs
        assert attrs["rank_backends"] == "ref,cpu" and attrs["rank_threads"] == "1,1"
        assert len(attrs["rank_devices"].split("; ")) == 2
        assert 'backend: "ref,cpu"' in f.attrs["config"] and 'threads: "1,1"' in f.attrs["config"]
    p = check_partition_consistent(path, 8)
    assert np.all(p["shares"] == [32, 96])
    assert hetero.ranks_text(p).startswith("rank 0: ref, 1 threads (")
    assert "; rank 1: cpu, 1 threads (" in hetero.ranks_text(p)


def test_ranks_list_and_per_rank_lists_are_one_config(tmp_path):
    """`ranks: [{...}, {...}]` and `ranks: {backend: [...], threads: [...]}` resolve alike (one
    config_id), and a job's task gets the CPUs of its widest rank."""
    listings = []
    for name, ranks in [("maps", "ranks: [{backend: ref}, {backend: cpu, threads: 2}]\n"),
                        ("lists", "ranks: {backend: [ref, cpu], threads: [1, 2]}\n")]:
        write_config(tmp_path / f"{name}.yaml", BASE.format(steps=2, workers=2, dist="") + ranks)
        sweep = write_config(tmp_path / f"{name}-sweep.yaml", f"campaign: c\nbase: {name}.yaml\nmatrix: {{seed: [5]}}\n")
        proc = run(["sweep", "expand", sweep, "--out", tmp_path / name, "--dry-run"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        listings.append(proc.stdout)
        assert "cpus=2" in proc.stdout
    assert listings[0].splitlines()[1] == listings[1].splitlines()[1]  # index, run_id (config_id), seed


@pytest.mark.parametrize("extra, dist, key, says", [
    ("ranks: [{backend: ref}, {backend: cpu}, {backend: cpu}]\n", "", "ranks.backend", "3 entries for 2 workers"),
    ("ranks: [{backend: ref}, {backend: gpu}]\n", "", "ranks.backend", "rank 1's backend 'gpu' is not accepted"),
    ("ranks: [{backend: ref}, {cores: 4}]\n", "", "ranks", "'cores' is not a per-rank setting"),
    ("ranks: {backend: [ref, cpu], threads: [1]}\n", "", "ranks.threads", "1 entries, but ranks.backend has 2"),
    ("ranks: {threads: [1, 0]}\n", "", "ranks.threads", "rank 1's threads '0' is not an integer in 1..1024"),
    (RANKS, ", allreduce: shm", "dist.allreduce", "shm maps host ranks' arenas"),
    (RANKS, ", allreduce: nccl", "dist.allreduce", "nccl reduces GPU memory on every rank"),
    (RANKS.replace("ref", "cpu"), ", strategy: weight_avg, period: 2", None, None),
])
def test_per_rank_settings_that_do_not_fit_are_config_errors(tmp_path, extra, dist, key, says):
    text = BASE.format(steps=2, workers=2, dist=dist)
    for replaced in ("strategy: sync, ", "allreduce: ring, "):
        if replaced.split()[0] in dist:
            text = text.replace(replaced, "", 1)
    cfg = write_config(tmp_path / "bad.yaml", text + extra)
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    if key is None:  # accepted; this single-process run stops at the world size
        assert proc.returncode == 2 and "key 'workers'" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"key '{key}'" in proc.stderr and says in proc.stderr, proc.stderr


def test_one_ranks_refusal_stops_every_rank_with_exit_2(tmp_path):
    """ref computes in fp32 only: rank 1 refuses bf16, rank 0 (cpu) could run it. Both exit 2 at
    once (collective refusal), not 1 after the other rank's wait times out."""
    text = BASE.format(steps=2, workers=2, dist=", timeout_s: 60") + "precision: bf16\n" + \
        "ranks: [{backend: cpu, threads: 1}, {backend: ref}]\n"
    cfg = write_config(tmp_path / "bf16.yaml", text)
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"], timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "rank 1: " in proc.stderr and "key 'precision'" in proc.stderr, proc.stderr
    assert "is not supported by backend 'ref'" in proc.stderr, proc.stderr
    assert not list((tmp_path / "out").glob("*.h5"))
