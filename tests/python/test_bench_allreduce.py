"""`trainscale bench allreduce` under mpirun on 2 ranks: one block per algorithm in nccl-tests'
layout (size, count, type, redop, then the in-place time, algbw, busbw, #wrong; the call-to-call
spread of the slowest rank; busbw relative to mpi's at the same size) closed by its average
busbw, zero wrong elements, and every dataset and attribute of the HDF5 benchmark file (schema
trainscale-allreduce/1: iters, warm-up, version, times of the run), with the messages in shared
(default) or private memory; its own --help; a bad flag exits 2. Timings are only checked for
what holds whatever the machine does (positive, ordered, consistent with each other)."""
import re
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from trainscale_cli import REPO, env, require_binary, run

MPIRUN = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
ALGORITHMS = ["mpi", "ring", "tree", "ps", "shm", "butterfly"]
COLUMNS = ["size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "min", "max", "stdev", "vs_mpi"]


def mpirun(np_, args, timeout=300):
    assert MPIRUN, "mpirun not found: scripts/setup.sh installs openmpi-bin"
    cmd = [MPIRUN, "-np", str(np_), "--oversubscribe", str(require_binary())] + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=timeout, cwd=REPO)


def blocks(stdout):
    """{algorithm: {"rows": [dict per size], "avg_busbw": float, "wrong_line": str}} in printed order."""
    out, current = {}, None
    for line in stdout.splitlines():
        m = re.match(r"^# algorithm (\w+): ", line)
        if m:
            current = out.setdefault(m[1], {"rows": [], "avg_busbw": None, "wrong_line": None, "header": []})
            continue
        if current is None:
            continue
        if line.startswith("#") and "size" in line and "busbw" in line:
            current["header"] = line[1:].split()
        m = re.match(r"^# Avg bus bandwidth    : ([\d.]+) GB/s \((\w+), mean over (\d+) sizes\)$", line)
        if m:
            assert m[2] in out, line
            current["avg_busbw"] = float(m[1])
        if line.startswith("# Wrong elements       : "):
            current["wrong_line"] = line.split(": ", 1)[1]
        cells = line.split()
        if cells and cells[0].isdigit():
            assert len(cells) == len(COLUMNS), line
            current["rows"].append(dict(zip(COLUMNS, cells)))
    return out


def test_two_ranks_blocks_and_file(tmp_path):
    out = tmp_path / "bench.h5"
    proc = mpirun(2, ["bench", "allreduce", "--min-bytes", 4, "--max-bytes", 65536, "--iters", 3, "--warmup", 2,
                      "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sizes = [4 * 2**k for k in range(15)]  # 4 .. 65536 by factor 2
    assert proc.stdout.count("trainscale bench allreduce:") == 1, "only rank 0 prints"
    assert "in-place only" in proc.stdout and "out-of-place" in proc.stdout, "the header says what is measured"
    found = blocks(proc.stdout)
    assert list(found) == ALGORITHMS, "one block per algorithm, in --algorithms order"
    busbw = {}
    for algorithm, block in found.items():
        assert block["header"] == COLUMNS, block["header"]
        rows = block["rows"]
        assert [int(r["size"]) for r in rows] == sizes, algorithm  # every size, ascending, in its own block
        for r in rows:
            assert int(r["count"]) == int(r["size"]) // 4 and r["type"] == "float" and r["redop"] == "sum"
            assert r["#wrong"] == "0", (algorithm, r)
            assert float(r["min"]) <= float(r["max"]) and float(r["stdev"]) >= 0, (algorithm, r)
            busbw[int(r["size"]), algorithm] = (float(r["busbw"]), float(r["vs_mpi"]))
        assert block["wrong_line"] == "0 OK", block
        # nccl-tests' summary: the mean busbw over the sizes (of the unrounded values; the rows
        # print 3 decimals).
        mean = np.mean([float(r["busbw"]) for r in rows])
        assert block["avg_busbw"] == pytest.approx(mean, abs=0.001), (algorithm, block["avg_busbw"], mean)
    for (size, algorithm), (bw, vs_mpi) in busbw.items():
        # The ratio is of the unrounded busbws: check it where the printed ones carry enough digits
        # (a call slowed to milliseconds by a busy machine prints 0.000 GB/s at 4 bytes).
        mpi_bw = busbw[(size, "mpi")][0]
        if mpi_bw >= 0.01:
            assert abs(vs_mpi - bw / mpi_bw) <= 0.005 + 0.0005 / mpi_bw * (1 + bw / mpi_bw), (size, algorithm)
    assert all(busbw[(size, "mpi")][1] == 1.0 for size in sizes)
    assert "wrong elements in total: 0" in proc.stdout
    with h5py.File(out) as f:
        assert f.attrs["schema"] == "trainscale-allreduce/1"
        version = run(["--version"]).stdout.split()[1]
        assert f.attrs["version"] == version and f.attrs["git_sha"]
        for key in ("start_time", "end_time"):
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", f.attrs[key]), key
        assert f.attrs["start_time"] <= f.attrs["end_time"]
        assert f.attrs["start_time"] in proc.stdout, "the header prints when the run started"
        assert (f.attrs["iters"], f.attrs["warmup"], f.attrs["check"], f.attrs["in_place"]) == (3, 2, 1, 1)
        for algorithm in ALGORITHMS:  # unrounded: every call took a positive, finite time
            assert (f["allreduce"][algorithm]["busbw"][()] > 0).all(), algorithm
        assert f.attrs["world_size"] == 2
        assert f.attrs["mpi_flavor"] in ("openmpi", "mpich")
        assert f.attrs["mpi_version"]
        # The launcher's environment sets Open MPI's single-copy mechanism (tests/python/trainscale_cli.py):
        # a setting that changes the measurement, so the file records it.
        if f.attrs["mpi_flavor"] == "openmpi":
            assert "OMPI_MCA_btl_vader_single_copy_mechanism=none" in f.attrs["mpi_tuning"].split("; ")
        assert len(f.attrs["hosts"].split(",")) == 2
        assert f.attrs["buffers"] == "shared", "the default: messages in node shared memory"
        assert (f.attrs["shm_chunk_bytes"], f.attrs["shm_buffers"]) == (32768, 64), "the default shm window"
        assert sorted(f["allreduce"].keys()) == sorted(ALGORITHMS)
        n = 2
        for algorithm in ALGORITHMS:
            g = f["allreduce"][algorithm]
            assert sorted(g.keys()) == sorted(["bytes", "time_avg", "time_min", "time_max", "call_min", "call_max",
                                               "call_stdev", "algbw", "busbw", "wrong"])
            for name in g:
                assert g[name].shape == (len(sizes),), (algorithm, name)
                assert g[name].attrs["units"], (algorithm, name)
            np.testing.assert_array_equal(g["bytes"][:], sizes)
            assert np.all(g["time_min"][:] > 0)
            assert np.all(g["time_min"][:] <= g["time_avg"][:]) and np.all(g["time_avg"][:] <= g["time_max"][:])
            # Each call's slowest rank: the mean over the calls of the slowest time is at least the
            # slowest rank's mean, so the slowest call is too; the fastest is positive.
            assert np.all(g["call_min"][:] > 0) and np.all(g["call_min"][:] <= g["call_max"][:])
            assert np.all(g["call_max"][:] >= g["time_max"][:] * (1 - 1e-9)), algorithm
            assert np.all(g["call_stdev"][:] >= 0)
            assert np.all(g["call_stdev"][:] <= (g["call_max"][:] - g["call_min"][:]) * (1 + 1e-9))
            np.testing.assert_allclose(g["algbw"][:], g["bytes"][:] / g["time_avg"][:] / 1e9, rtol=1e-12)
            np.testing.assert_allclose(g["busbw"][:], g["algbw"][:] * 2 * (n - 1) / n, rtol=1e-12)
            np.testing.assert_array_equal(g["wrong"][:], 0)
        # The printed spread is the file's, in microseconds.
        rows = found["ring"]["rows"]
        np.testing.assert_allclose([float(r["max"]) for r in rows], f["allreduce/ring/call_max"][:] * 1e6,
                                   atol=0.006)
    assert not list(tmp_path.glob("*.tmp-*")), "no temporary file left behind"


def test_help_is_bench_allreduces_own():
    proc = run(["bench", "allreduce", "--help"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: trainscale bench allreduce"), proc.stdout[:200]
    assert "bench io" not in proc.stdout
    for words in ("nccl-tests", "in-place", "#wrong", "--iters", "--warmup", "average busbw"):
        assert words in proc.stdout, words
    proc = run(["bench", "io", "--help"])
    assert proc.returncode == 0 and proc.stdout.startswith("usage: trainscale bench io"), proc.stdout[:200]
    proc = run(["bench", "--help"])  # the family's help names both
    assert proc.returncode == 0 and "bench allreduce" in proc.stdout and "bench io" in proc.stdout


def test_no_check_prints_na(tmp_path):
    out = tmp_path / "nocheck.h5"
    proc = mpirun(2, ["bench", "allreduce", "--algorithms", "ring", "--max-bytes", 64, "--iters", 1, "--no-check",
                      "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = blocks(proc.stdout)["ring"]["rows"]
    assert rows and all(r["#wrong"] == "n/a" for r in rows), proc.stdout
    assert "n/a (--no-check)" in proc.stdout
    with h5py.File(out) as f:
        assert f.attrs["check"] == 0 and f.attrs["iters"] == 1
        np.testing.assert_array_equal(f["allreduce/ring/wrong"][:], -1)
        np.testing.assert_array_equal(f["allreduce/ring/call_stdev"][:], 0)  # one call: no spread


def test_bad_flag_exits_2(tmp_path):
    proc = mpirun(2, ["bench", "allreduce", "--algorithms", "mpi,hypercube", "--max-bytes", 64])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "hypercube" in proc.stderr and "mpi, ring, tree, ps, shm, butterfly" in proc.stderr
    proc = mpirun(2, ["bench", "allreduce", "--factor", "1"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--factor" in proc.stderr
    proc = mpirun(2, ["bench", "allreduce", "--buffers", "pinned"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--buffers pinned" in proc.stderr and "shared, private" in proc.stderr
    proc = mpirun(2, ["bench", "allreduce", "--shm-buffers", "0"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--shm-buffers 0" in proc.stderr and "1..1024" in proc.stderr


def test_nccl_is_refused_where_it_cannot_run():
    """nccl needs the CUDA build and a device: refused before MPI starts, exit 2, with the reason."""
    proc = mpirun(2, ["bench", "allreduce", "--algorithms", "mpi,nccl", "--max-bytes", 64])
    if proc.returncode == 0:  # a CUDA build on a machine with a GPU per rank runs it: exact rows
        nccl = blocks(proc.stdout)["nccl"]["rows"]
        assert nccl and all(r["#wrong"] == "0" for r in nccl), proc.stdout
        return
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--algorithms nccl" in proc.stderr, proc.stderr
    assert "nccl needs the cuda backend" in proc.stderr or "no CUDA device was found" in proc.stderr, proc.stderr


def test_private_buffers(tmp_path):
    """--buffers private: the messages on each rank's heap (shm's copy pipeline, here through a
    small window of 2 x 4 KiB buffers, recorded in the file), still exact."""
    out = tmp_path / "private.h5"
    proc = mpirun(2, ["bench", "allreduce", "--algorithms", "mpi,shm", "--buffers", "private", "--min-bytes", 4,
                      "--max-bytes", 1 << 20, "--factor", 16, "--iters", 2, "--shm-chunk-kb", 4,
                      "--shm-buffers", 2, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "private buffers" in proc.stdout
    with h5py.File(out) as f:
        assert f.attrs["buffers"] == "private"
        assert (f.attrs["shm_chunk_bytes"], f.attrs["shm_buffers"]) == (4096, 2)
        np.testing.assert_array_equal(f["allreduce/shm/wrong"][:], 0)
        np.testing.assert_array_equal(f["allreduce/shm/bytes"][:], [4, 64, 1024, 16384, 262144])


def test_ratio_is_na_without_mpi():
    proc = mpirun(2, ["bench", "allreduce", "--algorithms", "shm,ring", "--min-bytes", 1024, "--max-bytes", 4096,
                      "--factor", 4, "--iters", 2])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = blocks(proc.stdout)
    assert list(found) == ["shm", "ring"]
    for block in found.values():
        assert [int(r["size"]) for r in block["rows"]] == [1024, 4096]
        assert all(r["vs_mpi"] == "n/a" and r["#wrong"] == "0" for r in block["rows"]), proc.stdout
