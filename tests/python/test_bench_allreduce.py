"""`trainscale bench allreduce` under mpirun on 2 ranks: the printed table (with each row's busbw
relative to mpi's at the same size), zero wrong elements, and every dataset of the HDF5 benchmark
file (schema trainscale-allreduce/1), with the messages in shared (default) or private memory; a
bad flag exits 2."""
import shutil
import subprocess

import h5py
import numpy as np

from trainscale_cli import REPO, env, require_binary

MPIRUN = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
ALGORITHMS = ["mpi", "ring", "tree", "ps", "shm", "butterfly"]


def mpirun(np_, args, timeout=300):
    assert MPIRUN, "mpirun not found: scripts/setup.sh installs openmpi-bin"
    cmd = [MPIRUN, "-np", str(np_), "--oversubscribe", str(require_binary())] + [str(a) for a in args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=timeout, cwd=REPO)


def test_two_ranks_table_and_file(tmp_path):
    out = tmp_path / "bench.h5"
    proc = mpirun(2, ["bench", "allreduce", "--min-bytes", 4, "--max-bytes", 65536, "--iters", 3, "--out", out])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sizes = [4 * 2**k for k in range(15)]  # 4 .. 65536 by factor 2
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip() and not line.startswith("#")
            and line.split()[0].isdigit()]
    assert len(rows) == len(sizes) * len(ALGORITHMS), proc.stdout
    assert proc.stdout.count("size(B)") == 1, "only rank 0 prints the table"
    busbw = {}
    for row in rows:
        size, count, algorithm, vs_mpi, wrong = int(row[0]), int(row[1]), row[2], float(row[-2]), row[-1]
        assert size in sizes and count == size // 4 and algorithm in ALGORITHMS
        assert wrong == "0", row
        busbw[(size, algorithm)] = (float(row[7]), vs_mpi)
    for (size, algorithm), (bw, vs_mpi) in busbw.items():
        # The table prints busbw with 3 decimals and the ratio with 2 (of the unrounded values):
        # the printed ratio can be checked against the printed busbws where those carry enough
        # digits (a call slowed to milliseconds by a busy machine prints 0.000 GB/s at 4 bytes).
        mpi_bw = busbw[(size, "mpi")][0]
        if mpi_bw >= 0.01:
            assert abs(vs_mpi - bw / mpi_bw) <= 0.005 + 0.0005 / mpi_bw * (1 + bw / mpi_bw), (size, algorithm)
    assert all(busbw[(size, "mpi")][1] == 1.0 for size in sizes)
    assert "wrong elements in total: 0" in proc.stdout
    with h5py.File(out) as f:
        assert f.attrs["schema"] == "trainscale-allreduce/1"
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
            assert sorted(g.keys()) == sorted(["bytes", "time_avg", "time_min", "time_max", "algbw", "busbw",
                                               "wrong"])
            for name in g:
                assert g[name].shape == (len(sizes),), (algorithm, name)
            np.testing.assert_array_equal(g["bytes"][:], sizes)
            assert np.all(g["time_min"][:] > 0)
            assert np.all(g["time_min"][:] <= g["time_avg"][:]) and np.all(g["time_avg"][:] <= g["time_max"][:])
            np.testing.assert_allclose(g["algbw"][:], g["bytes"][:] / g["time_avg"][:] / 1e9, rtol=1e-12)
            np.testing.assert_allclose(g["busbw"][:], g["algbw"][:] * 2 * (n - 1) / n, rtol=1e-12)
            np.testing.assert_array_equal(g["wrong"][:], 0)
    assert not list(tmp_path.glob("*.tmp-*")), "no temporary file left behind"


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
        rows = [line.split() for line in proc.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
        nccl = [r for r in rows if r[2] == "nccl"]
        assert nccl and all(r[-1] == "0" for r in nccl), proc.stdout
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
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [(int(r[0]), r[2]) for r in rows] == [(1024, "shm"), (1024, "ring"), (4096, "shm"), (4096, "ring")]
    assert all(r[-2] == "n/a" and r[-1] == "0" for r in rows), proc.stdout
