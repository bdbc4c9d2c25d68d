"""nccl from the command line where it cannot run: a CUDA build refuses `dist.allreduce: nccl`
with a CPU backend or with weight_avg (exit 2, naming the key and what to use instead), and
`bench allreduce --algorithms nccl` without a device (exit 2, before MPI starts). A build
without CUDA is covered by test_cli_mpi.py and test_bench_allreduce.py; skipped (with the
reason) there and on a machine with a device."""
import pytest

from trainscale_cli import run, write_config

CONFIG = ("model: mlp\ndataset: {name: synthetic, format: synthetic}\nsteps: 1\nbackend: cpu\n"
          "dist: {allreduce: nccl}\n")


@pytest.fixture(scope="module")
def cuda_build():
    proc = run(["info"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    keys = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    if keys.get("cuda", "OFF").upper() not in ("ON", "1", "TRUE", "YES"):
        pytest.skip(f"trainscale is built without CUDA (info says cuda: {keys.get('cuda')})")
    return keys


def test_nccl_with_a_cpu_backend_exits_2(cuda_build, tmp_path):
    proc = run(["run", "--config", write_config(tmp_path / "c.yaml", CONFIG), "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "key 'dist.allreduce'" in proc.stderr and "nccl needs the cuda backend" in proc.stderr, proc.stderr
    assert "set backend: cuda, or use mpi, ring, tree, ps or shm" in proc.stderr, proc.stderr


def test_nccl_with_weight_averaging_exits_2(cuda_build, tmp_path):
    text = CONFIG.replace("backend: cpu", "backend: cuda").replace("{allreduce: nccl}",
                                                                  "{allreduce: nccl, strategy: weight_avg}")
    proc = run(["run", "--config", write_config(tmp_path / "c.yaml", text), "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "key 'dist.allreduce'" in proc.stderr and "nccl runs dist.strategy sync" in proc.stderr, proc.stderr


def test_bench_nccl_without_a_device_exits_2(cuda_build):
    if cuda_build.get("backend.cuda.device", "none") != "none":
        pytest.skip(f"a CUDA device is present ({cuda_build['backend.cuda.device']})")
    proc = run(["bench", "allreduce", "--algorithms", "mpi,nccl", "--max-bytes", 64])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--algorithms nccl: nccl needs a CUDA device, and no CUDA device was found" in proc.stderr, proc.stderr
