"""`trainscale-sim` (docs/model.md "Simulation"): the real gradient exchange on SimGrid SMPI
platforms generated from cluster files. Checked here, on 2..16 simulated ranks (seconds each):
the ring all-reduce of the simulator within 10% of the alpha-beta-gamma formula on a star; run
files of the measured schema with simulated = 1 that the analysis package reads; overlap hiding
communication that no overlap exposes, phase by phase; MPI flavors through SMPI's selectors;
star, mesh, torus, fat tree and a two-level GPU cluster; refusals (exit 2) that name what is
wrong; a campaign run by `scheduler: simulate`. Simulated seconds are deterministic, so the
comparisons below are exact model checks, not wall-clock timings.

The binary: TRAINSCALE_SIM_BINARY, else trainscale-sim beside the trainscale under test. Without
it (SimGrid's libsimgrid-dev missing) every test skips and says so."""
import csv
import os
import pathlib
import subprocess
import sys

import h5py
import numpy as np
import pandas as pd
import pytest
import yaml

from trainscale_cli import BINARY, REPO, env, run, write_config

SIM = pathlib.Path(os.environ.get("TRAINSCALE_SIM_BINARY", BINARY.parent / "trainscale-sim")).resolve()
SKYLAKE = REPO / "configs" / "clusters" / "skylake-8180m.yaml"
DGX = REPO / "configs" / "clusters" / "dgx-h100.yaml"
# resnet20 on CIFAR-shaped synthetic data, one rank per Skylake node (threads = its 56 cores).
RESNET20 = ("model: resnet20\ndataset: {name: synthetic, format: synthetic, synthetic_samples: 4096}\n"
            "batch_per_worker: 32\nsteps: 10\nthreads: 56\neval: {every_epochs: 0}\n")
COMMON = ("data_wait", "forward", "backward", "comm", "comm_wait", "optimizer", "step")

pytestmark = pytest.mark.skipif(not SIM.exists(), reason=f"{SIM} is not built (SimGrid's SMPI, Debian libsimgrid-dev, "
                                                         "is missing; scripts/setup.sh installs it)")


def sim(args, timeout=300):
    return subprocess.run([str(SIM)] + [str(a) for a in args], capture_output=True, text=True, env=env(),
                          timeout=timeout, cwd=REPO)


def simulate(tmp_path, config_text, workers, *extra, cluster=SKYLAKE, name="run"):
    """Simulates a run; returns the open run file."""
    cfg = write_config(tmp_path / f"{name}.yaml", config_text)
    out = tmp_path / f"out-{name}"
    proc = sim(["run", "--config", cfg, "--cluster", cluster, "--workers", workers, "--steps", 2, "--out", out]
               + list(extra))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = list(out.glob("*.h5"))
    assert len(files) == 1, files
    return h5py.File(files[0], "r")


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_ring_allreduce_within_10_percent_of_the_formula_on_a_star(tmp_path, workers):
    out = tmp_path / "ring.csv"
    proc = sim(["bench", "allreduce", "--cluster", SKYLAKE, "--workers", workers, "--algorithms", "ring",
                "--min-bytes", "4K", "--max-bytes", "16M", "--factor", "4", "--csv", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 7 and {int(r["workers"]) for r in rows} == {workers}
    for r in rows:
        simulated, formula = float(r["simulated_s"]), float(r["formula_s"])
        assert simulated > 0 and abs(simulated / formula - 1) < 0.10, r


@pytest.mark.parametrize("formula", ["bkt", "mst"])
def test_mpi_allreduce_matches_its_formula_reduction_included(tmp_path, formula):
    """SMPI sums MPI_SUM on the host, where time is not simulated; the simulator's gradient sum is
    a user operation that charges the node the sum's memory time (dist/smpi/modelled_mpi_sum.cpp).
    SMPI's `lr` (chosen for mpi.allreduce: bkt) must then match the BKT formula with its
    (p-1)/p m gamma term (0.77 at 16 MiB when the sum was free), and `redbcast` with a binomial
    MPI_Reduce (mst) the MST formula (SMPI's default MPI_Reduce is linear: 14x at 256 ranks)."""
    out = tmp_path / "mpi.csv"
    proc = sim(["bench", "allreduce", "--cluster", SKYLAKE, "--cluster-set", f"mpi.allreduce={formula}", "--workers", 16,
                "--algorithms", "mpi", "--min-bytes", "1M", "--max-bytes", "16M", "--factor", "4", "--csv", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3
    for r in rows:
        assert abs(float(r["simulated_s"]) / float(r["formula_s"]) - 1) < 0.02, r


def test_run_file_has_the_measured_schema_and_the_analysis_reads_it(tmp_path):
    with simulate(tmp_path, RESNET20, 4) as f:
        assert f.attrs["schema"] == "trainscale-run/1" and f.attrs["status"] == "ok"
        assert f.attrs["simulated"] == 1 and f.attrs["world_size"] == 4
        assert yaml.safe_load(f.attrs["sim_cluster"])["name"] == "skylake-8180m"
        assert "star" in f.attrs["sim_platform"] and "network/model:CM02" in f.attrs["sim_platform"]
        assert f.attrs["device"] == "simulated" and f.attrs["dist_transport"] == "host"
        assert yaml.safe_load(f.attrs["config"])["workers"] == 4
        for phase in COMMON:
            assert f["timing"][phase].shape == (2, 4), phase
        step = f["timing/step"][...]
        assert np.all(step > 0)
        assert f["train/step"][...].tolist() == [1, 2]
        assert f["model"].attrs["name"] == "resnet20" and f["model"].attrs["parameters"] > 250_000
        s = f["summary"].attrs
        assert s["step_time_median"] == pytest.approx(float(step.max(axis=1)[-1]))
        assert s["images_per_s"] == pytest.approx(4 * 32 / s["step_time_median"])
        # The model's prediction of the same step is beside the simulated one; the two agree to
        # 0.1% since the model prices the 1/N scaling of each bucket (AllreduceModel::average_seconds).
        assert s["predicted_step_time"] == pytest.approx(s["step_time_median"], rel=0.001)
    sys.path.insert(0, str(REPO / "analysis"))
    from trainscale_analysis.load import load_campaigns
    df = load_campaigns([tmp_path / "out-run"])
    assert len(df) == 1 and df["env.simulated"].iloc[0] == 1 and df["status"].iloc[0] == "ok"
    assert df["workers"].iloc[0] == 4 and df["images_per_s"].iloc[0] > 0


def test_overlap_hides_communication_that_no_overlap_exposes(tmp_path):
    slow = ["--cluster-set", "interconnect.bandwidth_gbps=5"]  # the all-reduces take longer than backward's tail
    with simulate(tmp_path, RESNET20, 8, "--set", "dist.overlap=true", *slow, name="on") as on, \
         simulate(tmp_path, RESNET20, 8, "--set", "dist.overlap=false", *slow, name="off") as off:
        t_on = {p: float(on["timing"][p][-1].max()) for p in COMMON}  # last step, slowest rank
        t_off = {p: float(off["timing"][p][-1].max()) for p in COMMON}
        # Compute is the model's either way; the same buckets cross the same network.
        for p in ("data_wait", "forward", "backward", "optimizer"):
            assert t_on[p] == pytest.approx(t_off[p], rel=1e-6), p
        assert t_on["comm"] == pytest.approx(t_off["comm"], rel=0.05)
        # No overlap: every bucket is reduced after backward, so all of it is waited for.
        assert t_off["comm_wait"] == pytest.approx(t_off["comm"], rel=0.01)
        # Overlap: buckets reduced while backward goes on; only the rest is waited for.
        assert t_on["comm_wait"] < 0.7 * t_off["comm_wait"]
        for t in (t_on, t_off):  # the step is its phases, to rounding
            parts = t["data_wait"] + t["forward"] + t["backward"] + t["comm_wait"] + t["optimizer"]
            assert t["step"] == pytest.approx(parts, rel=1e-4)
        assert t_off["step"] - t_on["step"] == pytest.approx(t_off["comm_wait"] - t_on["comm_wait"], rel=1e-3)


@pytest.mark.parametrize("flavor,selector", [("openmpi", "ompi"), ("mpich", "mpich"), ("intel", "impi"),
                                             ("mvapich2", "mvapich2")])
def test_mpi_flavors_run_through_smpi_selectors(tmp_path, flavor, selector):
    text = RESNET20 + f"mpi_flavor: {flavor}\ndist: {{allreduce: mpi}}\n"
    with simulate(tmp_path, text, 4) as f:
        assert f.attrs["mpi_flavor"] == flavor
        assert f"coll-selector {selector}" in f.attrs["mpi_version"]
        assert f"smpi/coll-selector:{selector}" in f.attrs["mpi_tuning"]
        assert np.all(f["timing/comm"][...] > 0)


@pytest.mark.parametrize("sets,expect", [
    (["interconnect.topology=mesh", "interconnect.dims=[32,32]"], "mesh [3, 3]"),
    (["interconnect.topology=torus", "interconnect.dims=[32,32]"], "torus [3, 3]"),
    (["interconnect.topology=fat_tree"], "fat tree of 9 leaves"),
])
def test_topologies_from_the_cluster_file(tmp_path, sets, expect):
    extra = [a for s in sets for a in ("--cluster-set", s)]
    with simulate(tmp_path, RESNET20 + "dist: {allreduce: tree}\n", 9, *extra) as f:
        assert expect in f.attrs["sim_platform"], f.attrs["sim_platform"]
        assert np.all(f["timing/comm"][...] > 0)


def test_two_level_gpu_cluster_puts_eight_ranks_on_a_node(tmp_path):
    text = RESNET20.replace("threads: 56", "threads: 1") + "backend: cuda\nprecision: bf16\n"
    with simulate(tmp_path, text, 16, cluster=DGX) as f:
        assert f.attrs["sim_platform"].startswith("2 nodes x 8 ranks, fat tree")
        assert "intra-node alpha 3 us, 3600 Gbit/s" in f.attrs["sim_platform"]
        assert f.attrs["hosts"] == "node0,node1"


@pytest.mark.parametrize("extra,needle", [
    (["--set", "dist.allreduce=shm"], "shm is not simulated"),
    (["--set", "dist.allreduce=nccl"], "nccl is not simulated"),
    (["--coll-selector", "openmpi"], "not an SMPI collective selector"),
    (["--steps", "0"], "at least 1 step"),
    (["--set", "dist.emulate_slowdown.rank=1"], "trainscale-sim simulates equal workers; predict uneven shares"),
    (["--set", "dist.compression=topk"], "trainscale-sim does not simulate topk"),
    (["--cluster-set", "nodes=2"], "4 workers do not fit on cluster skylake-8180m"),
])
def test_refusals_name_what_is_wrong(tmp_path, extra, needle):
    cfg = write_config(tmp_path / "run.yaml", RESNET20)
    proc = sim(["run", "--config", cfg, "--cluster", SKYLAKE, "--workers", 4, "--out", tmp_path] + extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert needle in proc.stderr
    assert not list(tmp_path.glob("*.h5"))


def test_bench_refuses_ranks_beyond_the_cluster_with_its_own_options(tmp_path):
    proc = sim(["bench", "allreduce", "--cluster", SKYLAKE, "--cluster-set", "nodes=2", "--workers", 3,
                "--csv", tmp_path / "points.csv"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--workers 3: 3 workers do not fit on cluster skylake-8180m" in proc.stderr
    assert "accepted: 1..2 workers" in proc.stderr
    assert "(--threads N)" in proc.stderr  # this command's option, not run's --set threads=N
    assert "--workers-per-node" not in proc.stderr and "--set threads" not in proc.stderr
    assert not (tmp_path / "points.csv").exists()


def test_a_damaged_cluster_file_is_refused_with_its_name(tmp_path):
    cfg = write_config(tmp_path / "run.yaml", RESNET20)
    damaged = tmp_path / "damaged.yaml"
    text = SKYLAKE.read_bytes()
    damaged.write_bytes(text[: len(text) // 2] + b"\x00\xff: [\n" + bytes(range(1, 40)))
    proc = sim(["run", "--config", cfg, "--cluster", damaged, "--workers", 4, "--out", tmp_path])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "damaged.yaml" in proc.stderr


def test_campaign_with_scheduler_simulate(tmp_path):
    base = write_config(tmp_path / "base.yaml", RESNET20)
    sweep = write_config(tmp_path / "sweep.yaml", f"campaign: simtest\nbase: {base}\n"
                         "matrix:\n  workers: [2, 4]\n  mpi_flavor: [any, mpich]\nrepetitions: 1\n")
    site = write_config(tmp_path / "site.yaml", "scheduler: simulate\n"
                        f"simulate: {{cluster: {SKYLAKE}, steps: 1, binary: {SIM}}}\n")
    camp = tmp_path / "camp"
    proc = run(["sweep", "expand", sweep, "--site", site, "--out", camp])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(["sweep", "submit", camp])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 runs finished" in proc.stdout
    files = sorted((camp / "runs").glob("*.h5"))
    assert len(files) == 4 and len(list((camp / "runs").glob("*.DONE"))) == 4
    flavors = set()
    for path in files:
        with h5py.File(path, "r") as f:
            assert f.attrs["simulated"] == 1 and f.attrs["campaign"] == "simtest"
            assert f["timing/step"].shape == (1, f.attrs["world_size"])
            flavors.add(f.attrs["mpi_flavor"])
    assert flavors == {"smpi", "mpich"}
    status = run(["sweep", "status", camp])
    assert "done 4" in status.stdout
    # A run started by hand takes its cluster and steps from the campaign's site; a done run is skipped.
    first = camp / "runs" / (yaml.safe_load((camp / "manifest.yaml").read_text())["runs"][0]["run_id"] + ".h5")
    for path in (first, first.with_suffix(".DONE")):
        path.unlink()
    proc = sim(["run", "--manifest", camp, "--index", 0])
    assert proc.returncode == 0 and "simulated" in proc.stdout, proc.stdout + proc.stderr
    assert first.exists() and first.with_suffix(".DONE").exists()
    assert "already done; skipped" in sim(["run", "--manifest", camp, "--index", 0]).stdout


def test_sim_study_report_puts_simulator_model_and_measurements_side_by_side(tmp_path):
    """Study 7's report (`python -m trainscale_analysis sim-study`): every simulated run against the
    model's prediction in its own run file, where the network starts to dominate, efficiency
    curves, and the model against the measured series of bench/model_validation.py."""
    sys.path.insert(0, str(REPO / "analysis"))
    from trainscale_analysis import __main__ as analysis_cli
    from trainscale_analysis import sim_study
    runs = tmp_path / "runs"
    cfg = write_config(tmp_path / "base.yaml", RESNET20.replace("steps: 10", "steps: 1"))
    for workers, algorithm, overlap in [(1, "ring", "true"), (4, "ring", "true"), (16, "ring", "true"),
                                        (4, "tree", "false"), (16, "tree", "false")]:
        proc = sim(["run", "--config", cfg, "--cluster", SKYLAKE, "--workers", workers, "--steps", 1, "--out", runs,
                    "--set", f"dist.allreduce={algorithm}", "--set", f"dist.overlap={overlap}"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    df = sim_study.sim_frame([runs])
    assert len(df) == 5 and set(df["topology"]) == {"star"}
    assert df["sim/pred"].to_numpy() == pytest.approx(1.0, abs=0.002)  # the model prices what the simulator runs
    one = df[df["workers"] == 1].iloc[0]
    assert one["sim_efficiency"] == 1.0 and one["sim_comm"] == 0.0
    tree = df[df["allreduce"] == "tree"]
    assert (tree["sim_exposed"] == tree["sim_comm"]).all()  # no overlap: all communication is exposed
    assert (df[df["workers"] > 1]["sim_efficiency"] < 1).all()
    # Where exposed communication first exceeds compute: a constructed case.
    frame = pd.DataFrame({"workers": [2, 4, 8], "compute": [1.0, 1.0, 1.0], "x": [0.5, 1.5, 2.0]})
    assert sim_study.network_dominates_at(frame, "x") == 4
    assert np.isnan(sim_study.network_dominates_at(frame.iloc[:1], "x"))
    validation = sorted((REPO / "reports" / "model" / "validation").glob("*.json"))[-1]
    out = tmp_path / "report"
    assert analysis_cli.main(["sim-study", str(runs), "-o", str(out), "--validation", str(validation)]) == 0
    text = (out / "sim_study.md").read_text()
    for heading in ("## Simulator vs model", "## Where the network starts to dominate", "## Scaling efficiency",
                    "## Model vs measured (this machine)"):
        assert heading in text
    assert "| ring | star | yes | 2 |" in text and "| resnet20 | 32 |" in text
    assert (out / "sim_efficiency_b32.png").stat().st_size > 0 and (out / "sim_study.csv").exists()
    # A directory without simulated runs is an input error (exit 2).
    assert analysis_cli.main(["sim-study", str(tmp_path / "base.yaml"), "-o", str(tmp_path / "x")]) == 2
