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
