"""`trainscale predict` and `trainscale calibrate` (docs/model.md): the printed table, every
dataset and attribute of the prediction file (schema trainscale-predict/1) and how they add up,
overlap against no overlap, the material's Skylake cluster as a star and as a mesh up to 1,000
workers, the placement (workers per node, threads per worker) printed and warned about when
workers are packed or nodes oversubscribed, worker counts beyond the cluster and ranges that would
stop short refused, the per-layer table on request with whole names, errors that name the file,
line and key (exit 2), and a calibration with a tiny budget on 1 and 2 ranks whose cluster file
`predict` then reads."""
import shutil
import subprocess

import h5py
import numpy as np
import pytest
import yaml

from trainscale_cli import REPO, env, require_binary, run, write_config

MPIRUN = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
SKYLAKE = REPO / "configs" / "clusters" / "skylake-8180m.yaml"
LOCAL = REPO / "configs" / "clusters" / "local.yaml"
LENET = "model: lenet\ndataset: {name: synthetic}\nbatch_per_worker: 32\nsteps: 10\nthreads: 1\n"
PER_COUNT = ["workers", "nodes", "ranks_per_node", "batch_per_worker", "step_time", "compute", "comm",
             "exposed_comm", "contention", "straggle", "data", "forward", "backward", "update", "throughput", "scaling_efficiency",
             "compress", "decompress", "wire_bytes"]


def predict(tmp_path, config_text, cluster, *extra):
    cfg = write_config(tmp_path / "run.yaml", config_text)
    out = tmp_path / "predict.h5"
    proc = run(["predict", "--config", cfg, "--cluster", cluster, "--out", out] + list(extra))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, h5py.File(out, "r")


def test_file_and_table(tmp_path):
    proc, f = predict(tmp_path, LENET, LOCAL, "--workers", "1,2")
    with f:
        assert f.attrs["schema"] == "trainscale-predict/1"
        assert yaml.safe_load(f.attrs["config"])["model"] == "lenet"
        assert yaml.safe_load(f.attrs["cluster"])["name"] == "local"
        assert f.attrs["model"] == "lenet" and f.attrs["precision"] == "fp32"
        p = f["predict"]
        for name in PER_COUNT:
            assert p[name].shape == (2,), name
            assert "units" in p[name].attrs, name
        assert list(p["workers"][:]) == [1, 2]
        step, compute, comm, exposed, data = (p[k][:] for k in ("step_time", "compute", "comm", "exposed_comm", "data"))
        contention, straggle = p["contention"][:], p["straggle"][:]
        np.testing.assert_allclose(step, compute + straggle + contention + exposed + data, rtol=1e-12)
        # 1 worker exchanges nothing; 2 workers of 1 thread and their communication threads
        # share this cluster's 2 cores (docs/model.md "Step model", contention).
        assert contention[0] == 0 and contention[1] > 0
        np.testing.assert_allclose(compute, p["forward"][:] + p["backward"][:] + p["update"][:], rtol=1e-12)
        assert comm[0] == 0 and comm[1] > 0 and 0 <= exposed[1] <= comm[1] * (1 + 1e-12)
        assert p["scaling_efficiency"][0] == pytest.approx(1.0)
        np.testing.assert_allclose(p["throughput"][:], p["workers"][:] * 32 / step, rtol=1e-12)
        layers = p["layers"][:]
        names = [n.decode() for n in layers["name"]]
        assert names[:3] == ["conv1", "relu1", "pool1"] and len(names) == 10
        conv1 = layers[0]
        assert conv1["fp_flops"] == pytest.approx(2 * 32 * 784 * 32 * 25) and conv1["bp_gc_flops"] == 0
        for name in ("layer_fp", "layer_bp_gc", "layer_bp_wu", "layer_comm", "layer_bound"):
            assert p[name].shape == (2, 10), name
        assert set(np.unique(p["layer_bound"][:])) <= {0, 1, 2}
        # The per-layer times add up to forward and backward.
        np.testing.assert_allclose(p["layer_fp"][:].sum(axis=1), p["forward"][:], rtol=1e-9)
        np.testing.assert_allclose((p["layer_bp_gc"][:] + p["layer_bp_wu"][:]).sum(axis=1), p["backward"][:], rtol=1e-9)
    rows = [line.split() for line in proc.stdout.splitlines() if line.split() and line.split()[0] in ("1", "2")]
    assert len(rows) == 2, proc.stdout
    header = next(line.split() for line in proc.stdout.splitlines() if line.startswith("workers"))
    assert header[:6] == ["workers", "nodes", "per_node", "threads", "batch", "step_ms"], header
    # 1 and 2 workers of 1 thread on local's one node of 2 cores: 1 and 2 per node, 1 thread each.
    assert [r[:4] for r in rows] == [["1", "1", "1", "1"], ["2", "1", "2", "1"]], rows
    assert float(rows[0][5]) == pytest.approx(step[0] * 1e3, rel=1e-3)
    assert "placement: 1 thread(s) per worker" in proc.stdout and "the cluster holds 2 workers (1 node(s))" in proc.stdout
    # The per-layer table only with --layers (the file has every layer anyway).
    assert "bound@" not in proc.stdout and "10 layers: the per-layer table with --layers" in proc.stdout
    assert proc.stderr == "", "nothing to warn about"


def test_overlap_hides_communication(tmp_path):
    """With cores to spare (8 on the node) overlap hides the buckets behind backward; on this
    machine's 2 cores the communication threads take their cores from backward instead, so
    overlap gains little there (the node count changes each worker's share of the node's peak:
    steps are compared within one node size only)."""
    text = LENET + "dist: {bucket_mb: 0.5}\n"
    keys = ("comm", "exposed_comm", "contention", "step_time")
    points = {}
    for cores in (8, 2):
        for overlap in ("false", "true"):
            _, f = predict(tmp_path, text, LOCAL, "--workers", "2", "--set", f"dist.overlap={overlap}",
                           "--cluster-set", f"node.cores={cores}")
            with f:
                points[cores, overlap] = {k: f["predict"][k][0] for k in keys}
    for cores in (8, 2):
        after, overlapped = points[cores, "false"], points[cores, "true"]
        assert after["exposed_comm"] == pytest.approx(after["comm"]) and after["contention"] == 0
        assert overlapped["comm"] == pytest.approx(after["comm"])
        assert overlapped["exposed_comm"] < after["exposed_comm"]
    spare, busy = points[8, "true"], points[2, "true"]
    assert spare["contention"] == 0 and spare["step_time"] < points[8, "false"]["step_time"]
    hidden = points[8, "false"]["step_time"] - spare["step_time"]
    assert busy["contention"] > 0
    assert 0 <= points[2, "false"]["step_time"] - busy["step_time"] < hidden


def test_skylake_star_and_mesh_to_1000(tmp_path):
    """The material's cluster: 1,000 nodes of one 56-thread worker each (1,024 workers do not fit:
    test_workers_beyond_the_cluster_are_refused)."""
    text = "model: resnet50\ndataset: {name: synthetic}\nbatch_per_worker: 60\nthreads: 56\ndist: {allreduce: mpi}\n"
    _, f = predict(tmp_path, text, SKYLAKE, "--workers", "1..512,1000", "--gemm-only")
    with f:
        star = f["predict"]
        workers = star["workers"][:]
        assert list(workers) == [2**k for k in range(10)] + [1000]
        assert list(star["nodes"][:]) == list(workers)  # one 56-thread worker per node
        assert list(star["ranks_per_node"][:]) == [1] * len(workers)
        star_comm = star["comm"][:]
        assert np.all(np.diff(star_comm[1:]) > 0), star_comm  # BKT's latency term grows with p
        compute = star["compute"][:]
        np.testing.assert_allclose(compute[:-1], compute[0], rtol=1e-12)  # weak scaling: same work per node
        assert f.attrs["gemm_only"] == 1
        kinds = {n.decode() for n, b in zip(star["layers"]["kind"], star["layer_fp"][0]) if b > 0}
        assert kinds <= {"conv", "fc"}
    _, f = predict(tmp_path, text, SKYLAKE, "--workers", "1..512,1000", "--gemm-only",
                   "--cluster-set", "interconnect.topology=mesh", "--cluster-set", "interconnect.dims=[32,32]")
    with f:
        mesh_comm = f["predict"]["comm"][:]
        assert "topology: mesh" in f.attrs["cluster"]
    # A mesh runs BKT dimension by dimension: fewer messages than the star's ring of 1,000.
    assert mesh_comm[-1] < star_comm[-1]


def predict_lines(tmp_path, text, cluster, *extra):
    """(exit code, stdout, stderr) of predict without --out."""
    cfg = write_config(tmp_path / "run.yaml", text)
    proc = run(["predict", "--config", cfg, "--cluster", cluster] + [str(a) for a in extra])
    return proc.returncode, proc.stdout, proc.stderr


def table_rows(stdout):
    """{workers: {column: text}} of the worker-count table."""
    lines = stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("workers"))
    header = lines[at].replace("layers c/m/n", "layers").split()
    rows = {}
    for line in lines[at + 1:]:
        cells = line.split()
        if not cells or not cells[0].isdigit():
            break
        rows[int(cells[0])] = dict(zip(header, cells))
    return rows


def test_packed_workers_are_shown_and_warned(tmp_path):
    """The new user's case: 1,024 workers of 2 threads on the 1,000-node Skylake cluster. The
    default placement fills each node's 56 cores: 28 workers on each of 37 nodes. The table shows
    it, and stderr warns that the cluster's other nodes stay idle and how to give the run's layout."""
    text = LENET.replace("threads: 1", "threads: 2")
    code, out, err = predict_lines(tmp_path, text, SKYLAKE, "--workers", "1,1024")
    assert code == 0, out + err
    rows = table_rows(out)
    assert (rows[1024]["nodes"], rows[1024]["per_node"], rows[1024]["threads"]) == ("37", "28", "2"), out
    assert (rows[1]["nodes"], rows[1]["per_node"]) == ("1", "1")
    assert "placement: 2 thread(s) per worker" in out and "up to 28 per node" in out
    assert ("warning: the default placement packs workers on few nodes (at 1024 workers: 28 workers of 2 thread(s) "
            "on each of 37 of the cluster's 1000 nodes)") in err, err
    assert "--workers-per-node K" in err and "--set threads=56" in err, err
    # The run's layout given: one worker per node, nothing packed, nothing to warn about.
    code, out, err = predict_lines(tmp_path, text, SKYLAKE, "--workers", "1,512", "--workers-per-node", "1")
    assert code == 0, out + err
    assert (table_rows(out)[512]["nodes"], table_rows(out)[512]["per_node"]) == ("512", "1")
    assert "1 worker(s) per node (--workers-per-node)" in out
    assert err == "", err


@pytest.mark.parametrize("threads, extra, expected", [
    # 2 workers of 56 threads on one node of 56 cores (the run's layout says 2 per node).
    (56, ["--workers", "2", "--workers-per-node", "2"], "at 2 workers, 2 worker(s) per node x 56 thread(s) = 112 threads on 56 cores"),
    # One worker of more threads than the node has cores.
    (112, ["--workers", "1"], "at 1 workers, 1 worker(s) per node x 112 thread(s) = 112 threads on 56 cores"),
])
def test_oversubscribed_nodes_are_warned(tmp_path, threads, extra, expected):
    code, out, err = predict_lines(tmp_path, LENET.replace("threads: 1", f"threads: {threads}"), SKYLAKE, *extra)
    assert code == 0, out + err
    assert f"warning: {expected}: the node is oversubscribed" in err, err
    assert "(oversubscribed)" in out


def test_workers_beyond_the_cluster_are_refused(tmp_path):
    """A count the cluster cannot hold at the layout is refused (exit 2), naming the count, what the
    cluster holds and why, the counts accepted and what to change; never squeezed onto the nodes."""
    text = LENET.replace("threads: 1", "threads: 56")
    code, out, err = predict_lines(tmp_path, text, SKYLAKE, "--workers", "1..1024")
    assert code == 2, out + err
    assert "--workers 1..1024: 1024 workers do not fit on cluster skylake-8180m" in err, err
    assert "1000 nodes x 1 worker(s) per node (56 cores / 56 threads per worker) = 1000 workers" in err, err
    assert "accepted: 1..1000 workers" in err and "--workers 1..512,1000" in err, err
    assert "--cluster-set nodes=N" in err and "--set threads=N" in err and "--workers-per-node K" in err, err
    # 8 workers per node on the 32 DGX nodes: at most 256; GPUs, so no threads advice.
    code, out, err = predict_lines(tmp_path, LENET, REPO / "configs/clusters/dgx-h100.yaml", "--workers", "256,512")
    assert code == 2 and "512 workers do not fit" in err and "8 worker(s) per node (one per GPU) = 256" in err, err
    assert "--set threads" not in err
    # The config's own workers, without --workers: the message points at the key.
    code, out, err = predict_lines(tmp_path, LENET + "workers: 4\n", LOCAL)
    assert code == 2, out + err
    assert "run.yaml:6: key 'workers': 4 workers do not fit on cluster local" in err, err
    # A larger cluster, or the run's layout of 4 per node (oversubscribed: warned), takes them.
    code, out, err = predict_lines(tmp_path, LENET + "workers: 4\n", LOCAL, "--cluster-set", "nodes=2")
    assert code == 0 and err == "", out + err
    code, out, err = predict_lines(tmp_path, LENET + "workers: 4\n", LOCAL, "--workers-per-node", "4")
    assert code == 0 and "oversubscribed" in err, out + err


@pytest.mark.parametrize("workers, expected", [
    ("1..100", "--workers 1..100: range 1..100 doubles from 1 and would stop at 64, short of 100; accepted: LO..HI "
               "with HI = LO x a power of two (e.g. 1..64 or 1..128), and lists; give 1..64,100 to end at 100"),
    ("3..20", "would stop at 12, short of 20"),
    ("8..4", "range 8..4 runs backwards"),
    ("1..x", "'x' is not a worker count >= 1"),
])
def test_ranges_that_would_be_cut_are_refused(tmp_path, workers, expected):
    code, out, err = predict_lines(tmp_path, LENET, SKYLAKE, "--workers", workers)
    assert code == 2, out + err
    assert expected in err, err


def test_ranges_that_end_on_their_last_count(tmp_path):
    code, out, err = predict_lines(tmp_path, LENET, SKYLAKE, "--workers", "3..24,1..2,100")
    assert code == 0, out + err
    assert list(table_rows(out)) == [3, 6, 12, 24, 1, 2, 100]


def test_layer_table_on_request_with_whole_names(tmp_path):
    """--layers prints every layer with work under its whole name (inception_v3's run to 30 and more
    characters; the table used to cut them to 16)."""
    text = LENET.replace("model: lenet", "model: inception_v3")
    code, out, err = predict_lines(tmp_path, text, SKYLAKE, "--workers", "1,2")
    assert code == 0, out + err
    assert "bound@" not in out and "layers: the per-layer table with --layers" in out
    code, out, err = predict_lines(tmp_path, text, SKYLAKE, "--workers", "1,2", "--layers")
    assert code == 0, out + err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("layer ") and "bound@1" in line)
    names = [line.split()[0] for line in lines[at + 1:] if line.strip()]
    assert len(names) > 100, names[:5]
    longest = max(names, key=len)
    assert len(longest) > 16, longest
    # Whole names: the file's layer names, in order, are the printed ones.
    cfg = write_config(tmp_path / "run.yaml", text)
    h5 = tmp_path / "p.h5"
    assert run(["predict", "--config", cfg, "--cluster", SKYLAKE, "--workers", "1,2", "--out", h5]).returncode == 0
    with h5py.File(h5) as f:
        file_names = [n.decode() for n in f["predict/layers"]["name"]]
    assert set(names) <= set(file_names) and longest in file_names
    # The columns line up under the longest name: each kind starts where the header's does.
    kind_at = lines[at].index(" kind ") + 1
    for line in lines[at + 1:]:
        if line.strip():
            assert line[:kind_at].rstrip() == line.split()[0] and line[kind_at - 1] == " ", line


@pytest.mark.parametrize("args, expected", [
    (["--workers", "0"], "--workers"),
    (["--set", "precision=bf16"], "node.peak_gflops.bf16"),
    (["--cluster-set", "interconnect.topology=ring"], "star | mesh | torus | fat_tree"),
    (["--set", "dist.allreduce=nccl", "--cluster-set", "nodez=3"], "did you mean 'nodes'"),
])
def test_errors_exit_2(tmp_path, args, expected):
    cfg = write_config(tmp_path / "run.yaml", LENET)
    proc = run(["predict", "--config", cfg, "--cluster", SKYLAKE] + args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expected in proc.stderr, proc.stderr


# What the model does not price is refused by name and place, never predicted as plain sync.
@pytest.mark.parametrize("line, expected", [
    ("dist: {strategy: async_ps, servers: 1}", "run.yaml:7: key 'dist.strategy': the performance model prices sync and weight_avg, not async_ps"),
    ("workers: 1\ndist: {strategy: hogwild, threads_per_worker: 2}", "not hogwild"),
    ("ranks: [{backend: cpu}, {backend: ref}]", "key 'ranks.backend': the performance model prices ranks of one kind"),
])
def test_what_the_model_does_not_price_is_refused(tmp_path, line, expected):
    text = LENET.replace("batch_per_worker: 32\n", "" if "global_batch" in line else "batch_per_worker: 32\n")
    cfg = write_config(tmp_path / "run.yaml", text + ("" if "workers" in line else "workers: 2\n") + line + "\n")
    proc = run(["predict", "--config", cfg, "--cluster", LOCAL])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expected in proc.stderr and "trainscale run" in proc.stderr, proc.stderr


def test_compression_is_priced_from_the_clusters_codec_rates(tmp_path):
    """Codec rates from calibration.compression; a cluster file without them is refused."""
    text = LENET + "workers: 2\ndist: {strategy: sync, compression: powersgd}\n"
    two_nodes = ["--cluster-set", "nodes=2"]  # room for 4 one-thread workers
    proc, f = predict(tmp_path, text, LOCAL, "--workers", "1,2,4", *two_nodes)
    with f:
        p = f["predict"]
        assert "powersgd" in p.attrs["compression"]
        assert p["compress"][0] == 0 and p["wire_bytes"][0] == 0
        assert np.all(p["compress"][1:] > 0) and np.all(p["decompress"][1:] > 0)
        assert np.all(p["comm"][1:] > p["compress"][1:] + p["decompress"][1:])
        # PowerSGD's rank-4 factors of lenet's matrices: far fewer bytes than the fp32 arena.
        assert 0 < p["wire_bytes"][1] < 4 * 1663370 / 20
    plain, g = predict(tmp_path, LENET + "workers: 2\n", LOCAL, "--workers", "1,2,4", *two_nodes)
    with g:
        assert g["predict"].attrs["compression"] == "" and np.all(g["predict"]["wire_bytes"][()] == 0)
    cfg = write_config(tmp_path / "run.yaml", text)
    proc = run(["predict", "--config", cfg, "--cluster", SKYLAKE])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "has no calibration.compression.powersgd" in proc.stderr and "trainscale calibrate" in proc.stderr, proc.stderr


def test_uneven_shares_and_a_slow_rank_are_priced_rank_by_rank(tmp_path):
    """The step is the slowest rank's; measured shares follow the predicted speeds."""
    base = LENET.replace("batch_per_worker: 32\n", "global_batch: 128\n") + "workers: 2\n"
    slow = "emulate_slowdown: {rank: 1, factor: 3}"
    rows = {}
    for name, dist in [("plain", "{}"), ("equal", "{" + slow + "}"),
                       ("static", "{partition: static, shares: [96, 32], " + slow + "}"),
                       ("measured", "{partition: measured, " + slow + "}")]:
        proc, f = predict(tmp_path, base + f"dist: {dist}\n", LOCAL, "--workers", "2")
        with f:
            p = f["predict"]
            rows[name] = {k: p[k][0] for k in ("step_time", "compute", "forward", "backward", "throughput",
                                                 "batch_per_worker")}
            rows[name]["shares"] = p.attrs["shares"]
    assert rows["plain"]["shares"] == "" and rows["equal"]["shares"] == "2: 64,64"
    # Equal shares run at the slow rank's pace: it sleeps twice its forward + backward.
    plain = rows["plain"]
    assert rows["equal"]["compute"] == pytest.approx(plain["compute"] + 2 * (plain["forward"] + plain["backward"]))
    assert rows["equal"]["step_time"] == pytest.approx(plain["step_time"] + 2 * (plain["forward"] + plain["backward"]))
    # The static split's slowest rank is the slowed one with its 32 samples.
    assert rows["static"]["shares"] == "2: 96,32" and rows["static"]["batch_per_worker"] == 32
    assert rows["static"]["throughput"] > 1.5 * rows["equal"]["throughput"]
    assert rows["static"]["throughput"] < rows["plain"]["throughput"]
    assert rows["measured"]["shares"].startswith("2: 9")  # about 3 : 1
    assert rows["static"]["throughput"] == pytest.approx(128 / rows["static"]["step_time"])


def test_bad_cluster_file_names_file_line_and_key(tmp_path):
    cfg = write_config(tmp_path / "run.yaml", LENET)
    bad = write_config(tmp_path / "bad.yaml", SKYLAKE.read_text().replace("alpha_us: 0.5", "alpha_us: fast"))
    proc = run(["predict", "--config", cfg, "--cluster", bad])
    assert proc.returncode == 2
    assert "bad.yaml:" in proc.stderr and "interconnect.alpha_us" in proc.stderr, proc.stderr
    proc = run(["predict", "--config", cfg])
    assert proc.returncode == 2 and "--cluster" in proc.stderr


def test_calibrate_one_rank_then_predict(tmp_path):
    out = tmp_path / "here.yaml"
    proc = run(["calibrate", "--out", out, "--budget-s", "1", "--models", "lenet", "--batch", "8"], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped on one rank" in proc.stdout
    spec = yaml.safe_load(out.read_text())
    assert spec["node"]["peak_gflops"]["fp32"] > 0 and spec["node"]["memory_bandwidth_gbs"] > 0
    assert set(spec["calibration"]["layers"]["lenet"]) >= {"conv1", "conv2", "fc1", "fc2"}
    assert "conv" in spec["calibration"]["kinds"]
    codecs = spec["calibration"]["compression"]
    assert set(codecs) == {"fp16", "bf16", "qsgd", "topk", "powersgd"}
    assert all(c["encode_ns"] > 0 and c["decode_ns"] > 0 for c in codecs.values())
    assert codecs["topk"]["ratio"] == 0.01 and codecs["powersgd"]["rank"] == 4
    _, f = predict(tmp_path, LENET, out, "--workers", "1")
    with f:
        assert f["predict"]["step_time"][0] > 0
    proc = run(["calibrate", "--out", out, "--models", "lenet,nosuchnet"])
    assert proc.returncode == 2 and "nosuchnet" in proc.stderr


def test_calibrate_two_ranks_fits_every_algorithm(tmp_path):
    assert MPIRUN, "mpirun not found: scripts/setup.sh installs openmpi-bin"
    out = tmp_path / "two.yaml"
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", str(require_binary()), "calibrate", "--out", str(out),
           "--budget-s", "1", "--models", "lenet", "--batch", "8", "--max-bytes", "65536"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fits = yaml.safe_load(out.read_text())["calibration"]["allreduce"]
    assert set(fits) == {"mpi", "ring", "tree", "ps", "shm", "butterfly"}
    for fit in fits.values():
        assert fit["ranks"] == 2 and fit["alpha_us"] >= 0 and fit["beta_ns_per_byte"] >= 0
    _, f = predict(tmp_path, LENET + "dist: {allreduce: ring}\n", out, "--workers", "2")
    with f:
        assert "calibrated" in f["predict"].attrs["allreduce"]
