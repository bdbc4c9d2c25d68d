"""The CUDA backend from the command line on a machine without a GPU: `trainscale info` says the
backend is built and no device is present, and `backend: cuda` exits 2 saying no CUDA device was
found. Skipped (with the reason) for a binary built without CUDA or on a machine with a device."""
import pytest

from trainscale_cli import run, write_config


def info():
    proc = run(["info"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)


@pytest.fixture(scope="module")
def cuda_info():
    keys = info()
    if keys.get("cuda", "OFF").upper() not in ("ON", "1", "TRUE", "YES"):
        pytest.skip(f"trainscale is built without CUDA (info says cuda: {keys.get('cuda')})")
    if keys.get("backend.cuda.device", "none") != "none":
        pytest.skip(f"a CUDA device is present ({keys['backend.cuda.device']}); these cases check the no-device path")
    return keys


def test_info_lists_cuda_as_built_without_a_device(cuda_info):
    assert "cuda" in cuda_info["backends"].split(", ")
    assert cuda_info["backend.cuda.device"] == "none"
    status = cuda_info["backend.cuda.status"]
    assert status.startswith("built; no CUDA device found (") and status.endswith(")"), status
    # the other backends still describe their devices
    assert cuda_info["backend.cpu.status"] == "ok" and cuda_info["backend.cpu.device"] == "cpu"


def test_run_with_backend_cuda_exits_2_without_a_device(cuda_info, tmp_path):
    cfg = write_config(tmp_path / "c.yaml", "model: lenet\ndataset: {name: synthetic, format: synthetic}\n"
                                            "backend: cuda\nsteps: 1\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "key 'backend'" in proc.stderr and "no CUDA device was found" in proc.stderr, proc.stderr
    assert "backend: cpu" in proc.stderr, proc.stderr  # what to do instead
    assert not list((tmp_path / "out").glob("*.h5")), "a run that never started left a run file"


def test_deterministic_algorithms_lift_the_checkpoint_refusal(cuda_info, tmp_path):
    """With cuda.algorithms: deterministic a checkpointed CUDA run is accepted: what stops it here is
    the missing device, not the checkpoint refusal (test_cuda_keys.py has the refusal)."""
    cfg = write_config(tmp_path / "c.yaml", "model: lenet\ndataset: {name: synthetic, format: synthetic}\n"
                                            "backend: cuda\nsteps: 1\ncheckpoint: {every_steps: 1}\n"
                                            "cuda: {algorithms: deterministic}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "not checkpointed" not in proc.stderr, proc.stderr
    assert "no CUDA device was found" in proc.stderr, proc.stderr


def test_precision_error_names_cuda_without_a_device(cuda_info, tmp_path):
    cfg = write_config(tmp_path / "c.yaml", "model: mlp\ndataset: {name: synthetic, format: synthetic}\n"
                                            "precision: fp16\nsteps: 1\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cuda (no device here to ask" in proc.stderr, proc.stderr


def test_a_cuda_rank_without_a_device_refuses_every_rank(cuda_info, tmp_path):
    """ranks.backend [cpu, cuda]: rank 1 finds no device; both ranks exit 2, and rank 0 names rank
    1's entry of ranks.backend."""
    from test_cli_mpi import mpirun
    cfg = write_config(tmp_path / "mixed.yaml", "model: mlp\ndataset: {name: synthetic, format: synthetic}\n"
                                                "workers: 2\nsteps: 1\ndist: {timeout_s: 60}\n"
                                                "ranks: [{backend: cpu, threads: 1}, {backend: cuda}]\n")
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"], timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "rank 1: " in proc.stderr and "(rank 1's entry): key 'backend'" in proc.stderr, proc.stderr
    assert "no CUDA device was found" in proc.stderr, proc.stderr
    assert not list((tmp_path / "out").glob("*.h5"))
