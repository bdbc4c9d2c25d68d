"""Training across real host boundaries (docs/multihost.md): the test bed's hosts are network
namespaces with their own hostname, IP and node-local scratch (tests/python/testbed.py), the
binary's own MPI flavor launches from the first host, ranks on different hosts talk TCP over the
bed's bridge and ranks of one host share memory. scripts/test.sh runs this file against the Open
MPI, MPICH and Intel MPI builds (MPICH: hosts of one rank only, testbed.layout_unsupported says why).

- 2 hosts x 1 rank and 2 hosts x 2 ranks follow 1 rank x the global batch for sync with every
  host all-reduce (`shm` is hierarchical for real: a node's ranks sum in shared memory, the nodes'
  first ranks exchange), `ps`, `weight_avg`, `async_ps` with its servers on the other host,
  compression and unequal shares; where the exchange's order of summation does not depend on
  where the ranks run, the parameters are bit-identical to the same ranks on one host.
- The run file names every rank's host and local rank; `dataset.stage: node_local` copies once
  per host into that host's own scratch and every rank reads its own host's copy.
- A rank killed on the other host ends the job on every host within 30 s; a checkpointed
  2-host run killed after its first checkpoint resumes bit-exactly.
Without root or network namespaces every test skips with the reason."""
import contextlib
import os
import pathlib
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from small_idx import write_small_idx
from test_cli_mpi import mpirun
from testbed import BED_ENV, flavor_of, layout_unsupported
from trainscale_cli import BINARY, FMNIST, REPO, run, write_config

BASE = """\
model: mlp
dataset: {{name: synthetic, format: synthetic, synthetic_samples: 2048}}
batch_per_worker: {batch}
lr: 0.05
momentum: {momentum}
weight_decay: 0.0005
steps: 10
threads: 1
workers: {workers}
dist: {{strategy: {strategy}, allreduce: {allreduce}, overlap: {overlap}, bucket_mb: 0.05{extra}}}
eval: {{every_epochs: 0}}
log_every: 5
seed: 5
"""
RTOL, ATOL = 2e-4, 1e-5  # test_dist_equivalence.py's: only the order of float sums differs
LAYOUTS = {"2x1": [1, 1], "2x2": [2, 2]}


def config(tmp_path, name, batch, workers, strategy="sync", allreduce="ring", overlap="true", momentum=0.9, extra=""):
    return write_config(tmp_path / f"{name}.yaml", BASE.format(batch=batch, workers=workers, strategy=strategy,
                                                               allreduce=allreduce, overlap=overlap,
                                                               momentum=momentum, extra=extra))


def on_bed(bed, tmp_path, name, layout, cfg, extra=()):
    out = tmp_path / name
    proc = bed.mpirun(layout, ["run", "--config", cfg, "--out", out, *extra])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    return path, proc.stdout


def on_one_host(tmp_path, name, ranks, cfg):
    out = tmp_path / name
    proc = mpirun(ranks, ["run", "--config", cfg, "--out", out]) if ranks > 1 else \
        run(["run", "--config", cfg, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("*.h5")
    return path


def read(path):
    with h5py.File(path) as f:
        return {"loss": f["train/loss"][:], "sha": f["summary"].attrs["params_sha256"],
                "hosts": f.attrs["hosts"], "rank_hosts": f.attrs["rank_hosts"].split(","),
                "local_ranks": [int(r) for r in f.attrs["local_ranks"].split(",")],
                "comm": f["timing/comm"][:], "io": dict(f["io"].attrs) if "io" in f else {}}


def expected_placement(bed, layout):
    hosts = [h for h, n in zip(bed.hosts, layout) for _ in range(n)]
    local = [i for n in layout for i in range(n)]
    return hosts, local


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """1 rank x the global batch of 2 and of 4 ranks (batch 8 each): the trajectories to follow."""
    tmp = tmp_path_factory.mktemp("refs")
    refs = {}
    for ranks in (2, 4):
        for momentum in (0.9, 0.0):
            cfg = config(tmp, f"ref{ranks}-{momentum}", 8 * ranks, 1, momentum=momentum)
            refs[ranks, momentum] = read(on_one_host(tmp, f"ref{ranks}-{momentum}", 1, cfg))["loss"]
    return refs


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("allreduce", ["mpi", "ring", "tree", "butterfly", "shm", "ps"])
def test_sync_across_hosts_follows_one_rank_and_one_host(testbed, references, tmp_path, layout, allreduce):
    ranks = sum(LAYOUTS[layout])
    overlap = "false" if allreduce == "ps" else "true"
    cfg = config(tmp_path, "dp", 8, ranks, allreduce=allreduce, overlap=overlap)
    got = read(on_bed(testbed, tmp_path, "bed", LAYOUTS[layout], cfg)[0])
    hosts, local = expected_placement(testbed, LAYOUTS[layout])
    assert (got["rank_hosts"], got["local_ranks"]) == (hosts, local)
    assert got["hosts"] == ",".join(testbed.hosts)
    assert got["comm"].shape == (10, ranks) and np.all(got["comm"] > 0)
    np.testing.assert_allclose(got["loss"], references[ranks, 0.9], rtol=RTOL, atol=ATOL)
    assert np.ptp(got["loss"]) > 0
    if allreduce in ("ring", "tree", "butterfly", "ps"):
        # These sum in an order fixed by the ranks alone: the same bytes wherever the ranks run.
        one_host = read(on_one_host(tmp_path, "one", ranks, cfg))
        assert got["sha"] == one_host["sha"], f"{allreduce} on {layout} hosts differs from {ranks} ranks on one host"
        np.testing.assert_array_equal(got["loss"], one_host["loss"])


def test_weight_averaging_across_hosts_matches_sync(testbed, references, tmp_path):
    cfg = config(tmp_path, "wa", 8, 4, strategy="weight_avg", allreduce="shm", momentum=0.0, extra=", period: 1")
    got = read(on_bed(testbed, tmp_path, "wa", [2, 2], cfg)[0])
    np.testing.assert_allclose(got["loss"], references[4, 0.0], rtol=RTOL, atol=ATOL)


def test_async_ps_with_its_servers_on_the_other_host_follows_sync(testbed, tmp_path):
    """2 workers on the first host, 2 servers on the second: staleness 0 is sync's trajectory."""
    ref = read(on_one_host(tmp_path, "sync", 2, config(tmp_path, "sync", 8, 2, allreduce="mpi", overlap="false")))
    cfg = config(tmp_path, "async", 8, 2, strategy="async_ps", allreduce="mpi", overlap="false",
                 extra=", servers: 2, staleness: 0")
    path, _ = on_bed(testbed, tmp_path, "async", [2, 2], cfg)
    got = read(path)
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=RTOL, atol=ATOL)
    assert got["rank_hosts"] == [testbed.hosts[0]] * 2, "the run file's world is the workers, on the first host"
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["async_ps/staleness_histogram"][:], [[10], [10]])
        assert np.all(f["async_ps/pull_wait"][:] > 0), "every pull crossed to the other host"


def test_qsgd_across_hosts_sends_the_same_bytes(testbed, tmp_path):
    """qsgd gathers every rank's code and sums them in rank order: the same bytes on any hosts."""
    cfg = config(tmp_path, "c", 8, 4, allreduce="ring", extra=", compression: qsgd")
    got = read(on_bed(testbed, tmp_path, "bed", [2, 2], cfg)[0])
    one_host = read(on_one_host(tmp_path, "one", 4, cfg))
    assert got["sha"] == one_host["sha"]
    np.testing.assert_array_equal(got["loss"], one_host["loss"])


def test_fp16_across_hosts_follows_one_host(testbed, tmp_path):
    """fp16 sums through MPI_Allreduce with a user op (docs/compression.md), in the order the MPI
    library picks for the hosts: Intel MPI's tuning on Intel CPUs picks another one for 2 hosts x 2
    ranks than for 4 ranks on one host, so each addition's fp16 rounding may differ, and only the
    trajectory is the same."""
    cfg = config(tmp_path, "c", 8, 4, allreduce="ring", extra=", compression: fp16")
    got = read(on_bed(testbed, tmp_path, "bed", [2, 2], cfg)[0])
    one_host = read(on_one_host(tmp_path, "one", 4, cfg))
    np.testing.assert_allclose(got["loss"], one_host["loss"], rtol=RTOL, atol=ATOL)


def test_unequal_shares_across_hosts_follow_one_rank_with_the_whole_batch(testbed, tmp_path):
    text = BASE.format(batch=8, workers=2, strategy="sync", allreduce="ring", overlap="true", momentum=0.9,
                       extra=", partition: static, shares: [96, 32]").replace("batch_per_worker: 8", "global_batch: 128")
    ref_text = BASE.format(batch=128, workers=1, strategy="sync", allreduce="ring", overlap="true", momentum=0.9, extra="")
    ref = read(on_one_host(tmp_path, "ref", 1, write_config(tmp_path / "ref.yaml", ref_text)))
    path, log = on_bed(testbed, tmp_path, "shares", [1, 1], write_config(tmp_path / "shares.yaml", text))
    got = read(path)
    assert "static shares 96,32" in log
    assert got["rank_hosts"] == testbed.hosts
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=RTOL, atol=ATOL)


@pytest.fixture(scope="module")
def fmnist_subset(tmp_path_factory):
    """The first samples of Fashion-MNIST as raw IDX files, read sample by sample (small_idx.py)."""
    if not os.path.isdir(FMNIST):
        pytest.skip(f"Fashion-MNIST is not at {FMNIST} (scripts/setup.sh installs dataset-fashion-mnist)")
    return write_small_idx(tmp_path_factory.mktemp("fmnist"))


def test_node_local_staging_copies_once_per_host_into_its_own_scratch(testbed, tmp_path, fmnist_subset):
    cfg = write_config(tmp_path / "stage.yaml", f"""\
model: lenet
dataset: {{name: fashion_mnist, format: idx, root: {fmnist_subset}, stage: node_local, stage_dir: {testbed.scratch}}}
batch_per_worker: 16
lr: 0.02
steps: 6
threads: 1
workers: 4
dist: {{strategy: sync, allreduce: shm, overlap: true}}
eval: {{every_epochs: 0}}
log_every: 3
""")
    path, log = on_bed(testbed, tmp_path, "staged", [2, 2], cfg)
    got = read(path)
    assert got["local_ranks"] == [0, 1, 0, 1]
    per_host = dict(item.split(": ", 1) for item in got["io"]["stage_hosts"].split("; "))
    assert list(per_host) == testbed.hosts, got["io"]["stage_hosts"]
    for host, result in per_host.items():
        assert result.startswith("copied 4 files"), (host, result)
    staged = pathlib.Path(got["io"]["staged_root"])
    assert staged.is_relative_to(testbed.scratch)
    for host in testbed.hosts:  # each host holds its own copy in its own scratch
        listing = testbed.exec(host, ["ls", staged])
        assert listing.returncode == 0, listing.stderr
        assert sorted(listing.stdout.split()) == sorted(p.name for p in fmnist_subset.iterdir()), (host, listing.stdout)
    assert not staged.exists(), "the hosts' scratch is private: nothing is staged outside them"
    with h5py.File(path) as f:
        # every rank read its batches (image and label bytes) from its own host's copy
        assert f["io/read_bytes"].shape == (6, 4) and np.all(f["io/read_bytes"][:] == 16 * (28 * 28 + 1))


def trainscale_pids(testbed):
    """The trainscale processes on the bed's hosts (in their network namespaces): not another
    job's on this machine."""
    on_bed = set()
    for host in testbed.hosts:
        listed = subprocess.run(["ip", "netns", "pids", host], capture_output=True, text=True).stdout.split()
        on_bed.update(int(pid) for pid in listed)
    pids = []
    for pid in on_bed:
        try:
            text = pathlib.Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if text[text.index("(") + 1:text.rindex(")")] == "trainscale":
            pids.append(pid)
    return pids


def rank_pid(pid):
    environ = pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for var in environ:
        if var.startswith((b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK=")):
            return int(var.split(b"=", 1)[1])
    return None


def test_a_rank_killed_on_the_other_host_ends_the_job_everywhere_within_30_s(testbed, tmp_path):
    cfg = config(tmp_path, "long", 8, 2, allreduce="ring").read_text().replace("steps: 10", "steps: 1000000") \
        .replace("log_every: 5", "log_every: 20").replace("bucket_mb: 0.05", "bucket_mb: 0.05, timeout_s: 20")
    before = set(trainscale_pids(testbed))
    job = testbed.popen([1, 1], ["run", "--config", write_config(tmp_path / "long.yaml", cfg), "--out", tmp_path / "o"])
    lines = []
    try:
        for line in job.stdout:
            lines.append(line)
            if line.startswith("step 40/"):
                break
        ranks = {rank_pid(p): p for p in set(trainscale_pids(testbed)) - before}
        assert set(ranks) == {0, 1}, ("".join(lines), ranks)
        start = time.monotonic()
        os.kill(ranks[1], signal.SIGKILL)  # rank 1 runs on the second host
        rest, _ = job.communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    output = "".join(lines) + (rest or "")
    assert job.returncode != 0, output
    assert took <= 30, f"the job took {took:.1f} s to end after rank 1 died on the other host:\n{output}"
    deadline = time.monotonic() + 10
    while set(trainscale_pids(testbed)) - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not set(trainscale_pids(testbed)) - before, "a rank outlived the job"
    assert not list((tmp_path / "o").glob("*.h5")), "no run file for a failed run"


def kill(pids):
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signal.SIGKILL)


def test_a_checkpointed_two_host_run_killed_everywhere_resumes_bit_exactly(testbed, tmp_path):
    """Every rank is SIGKILLed right after the first checkpoint (step 4 of 64). The ranks are
    found while the run starts, so the kill follows the checkpoint within a poll: CI saw a
    24-step run finish in the time it took to list the hosts' processes after its checkpoint."""
    text = config(tmp_path, "ck", 8, 4, allreduce="shm").read_text().replace("steps: 10", "steps: 64") + \
        "checkpoint: {every_steps: 4}\n"
    cfg = write_config(tmp_path / "ck.yaml", text)
    reference = read(on_bed(testbed, tmp_path, "whole", [2, 2], cfg)[0])["sha"]
    out = tmp_path / "killed"
    before = set(trainscale_pids(testbed))
    job = testbed.popen([2, 2], ["run", "--config", cfg, "--out", out])
    try:
        deadline = time.monotonic() + 120
        ranks = set()
        while not [p for p in out.glob("*.checkpoint.*.hdf5") if ".rank-" not in p.name]:
            assert job.poll() is None, f"the run ended before its first checkpoint:\n{job.stdout.read()}"
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            if len(ranks) < 4:
                ranks = set(trainscale_pids(testbed)) - before
            time.sleep(0.01)
        kill(ranks)  # first, then any rank the listing missed: every rank, on both hosts
        kill(set(trainscale_pids(testbed)) - before - ranks)
        job.wait(timeout=60)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert job.returncode != 0 and not list(out.glob("*.h5")), "the run ended before the kill"
    path, log = on_bed(testbed, tmp_path, "killed", [2, 2], cfg, extra=["--resume"])
    assert "resuming after step" in log
    with h5py.File(path) as f:
        assert f.attrs["attempt"] == 2 and f.attrs["resumed_from_step"] >= 4
        assert f["summary"].attrs["params_sha256"] == reference


def test_a_campaign_on_the_testbed_site_places_its_ranks_on_the_hosts(testbed, tmp_path):
    """configs/sites/testbed.yaml (pointed at the tests' bed): the local executor starts each
    launcher on the first host through the bed's agent (`launcher_prefix`), and a 4-worker run
    fills both hosts."""
    site = (REPO / "configs" / "sites" / "testbed.yaml").read_text()
    for default, ours in (("/run/trainscale-testbed", str(testbed.dir)), ("tsnode1", testbed.hosts[0]),
                          ("10.213.0.", BED_ENV["TRAINSCALE_TESTBED_SUBNET"] + ".")):
        assert default in site
        site = site.replace(default, ours)
    for build in ("build-mpich", "build-impi"):
        site = site.replace(f"binary: {build}/bin/trainscale", f"binary: {REPO / build / 'bin/trainscale'}")
    write_config(tmp_path / "site.yaml", site)
    # The binary's own flavor picks the site's mpi entry (scripts/test.sh runs this file for both).
    write_config(tmp_path / "base.yaml", BASE.format(batch=8, workers=2, strategy="sync", allreduce="shm",
                                                     overlap="true", momentum=0.9, extra="") +
                 f"mpi_flavor: {flavor_of(BINARY)}\n")
    # 4 workers fill both hosts with 2 ranks each: not under MPICH here (testbed.layout_unsupported).
    workers = [2] if layout_unsupported([2, 2], flavor_of(BINARY)) else [2, 4]
    write_config(tmp_path / "sweep.yaml", f"campaign: bed\nbase: base.yaml\nmatrix: {{workers: {workers}}}\n")
    camp = tmp_path / "camp"
    res = run(["sweep", "expand", tmp_path / "sweep.yaml", "--site", tmp_path / "site.yaml", "--out", camp])
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(BINARY), "sweep", "submit", str(camp), "--scheduler", "local"], capture_output=True,
                         text=True, env=testbed.launch_env, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    placements = {}
    for path in (camp / "runs").glob("*.h5"):
        got = read(path)
        placements[len(got["rank_hosts"])] = (got["rank_hosts"], got["local_ranks"])
    h1, h2 = testbed.hosts
    expected = {2: ([h1, h1], [0, 1]), 4: ([h1, h1, h2, h2], [0, 1, 0, 1])}
    assert placements == {w: expected[w] for w in workers}
