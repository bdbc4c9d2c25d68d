"""The cuda.* run-config keys on a machine without a GPU: cuda.graphs is refused (exit 2, naming
the key) by a backend that cannot record work, and cuda.workspace_mb is range-checked. Their
effect on a GPU is checked by scripts/device_zoo.sh (docs/gpu.md)."""
from trainscale_cli import run, write_config
from test_cli_run import SHORT_LENET


def test_graphs_need_a_backend_that_records(tmp_path):
    cfg = write_config(tmp_path / "g.yaml", SHORT_LENET + "cuda: {graphs: true}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stderr
    assert "cuda.graphs" in proc.stderr and "backend: cuda" in proc.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.h5"))


def test_workspace_bound_is_range_checked(tmp_path):
    cfg = write_config(tmp_path / "w.yaml", SHORT_LENET + "cuda: {workspace_mb: -1}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2
    assert "cuda.workspace_mb" in proc.stderr and ">= 0" in proc.stderr


def test_algorithm_choice_is_one_of_three(tmp_path):
    cfg = write_config(tmp_path / "a.yaml", SHORT_LENET + "cuda: {algorithms: fastest}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2
    assert "cuda.algorithms" in proc.stderr
    for accepted in ("find", "heuristic", "deterministic"):
        assert accepted in proc.stderr


def test_cuda_checkpoints_need_deterministic_algorithms(tmp_path):
    """Refused before any device is looked for (exit 2 naming what to set); with deterministic
    algorithms the refusal is gone and what stops the run here is the missing GPU."""
    base = SHORT_LENET + "backend: cuda\ncheckpoint: {every_steps: 5}\n"
    cfg = write_config(tmp_path / "c.yaml", base)
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2
    assert "cuda.algorithms find is not checkpointed" in proc.stderr
    assert "set cuda.algorithms: deterministic" in proc.stderr
    cfg = write_config(tmp_path / "d.yaml", base + "cuda: {algorithms: deterministic}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2
    assert "not checkpointed" not in proc.stderr
    assert "no CUDA device was found" in proc.stderr
