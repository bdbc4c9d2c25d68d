"""The cuda.* run-config keys on a machine without a GPU: cuda.graphs is refused (exit 2, naming
the key) by a backend that cannot record work, cuda.workspace_mb is range-checked, and
cuda.reduced_precision_reduction needs cuda.conv_api: graph. Their
effect on a GPU is checked by scripts/device_zoo.sh (docs/gpu.md)."""
import h5py
import pytest

from trainscale_cli import run, write_config
from test_cli_cuda import info
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
    """Refused before any device is looked for (exit 2 naming what to set), with or without a GPU;
    that deterministic algorithms lift the refusal is test_cli_cuda.py's (it needs no device).
    A binary built without CUDA refuses `backend: cuda` as not built, before this check."""
    built = info().get("cuda", "OFF")
    if built.upper() not in ("ON", "1", "TRUE", "YES"):
        pytest.skip(f"trainscale is built without CUDA (info says cuda: {built})")
    for algorithms in ("", "cuda: {algorithms: heuristic}\n"):
        text = SHORT_LENET + "backend: cuda\ncheckpoint: {every_steps: 5}\n" + algorithms
        cfg = write_config(tmp_path / "c.yaml", text)
        proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
        assert proc.returncode == 2
        assert f"cuda.algorithms {'heuristic' if algorithms else 'find'} is not checkpointed" in proc.stderr
        assert "set cuda.algorithms: deterministic" in proc.stderr
        assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.h5"))


def test_sync_phases_is_a_boolean_that_stays_out_of_the_config_id_when_unset(tmp_path):
    bad = write_config(tmp_path / "s.yaml", SHORT_LENET + "cuda: {sync_phases: sometimes}\n")
    proc = run(["run", "--config", bad, "--out", tmp_path / "bad"])
    assert proc.returncode == 2
    assert "cuda.sync_phases" in proc.stderr
    # On the cpu backend the key changes nothing but the configuration: set, it is another run
    # (its own config_id); unset, the run is the configuration it was before the key existed.
    names = run_unset_and_set(tmp_path, "cuda.sync_phases", "cuda: {sync_phases: true}\n")
    assert names["unset"] != names["set"]


def test_conv_api_is_legacy_or_graph_and_stays_out_of_the_config_id_when_unset(tmp_path):
    bad = write_config(tmp_path / "c.yaml", SHORT_LENET + "cuda: {conv_api: frontend}\n")
    proc = run(["run", "--config", bad, "--out", tmp_path / "bad"])
    assert proc.returncode == 2 and "cuda.conv_api" in proc.stderr
    assert "legacy" in proc.stderr and "graph" in proc.stderr
    names = run_unset_and_set(tmp_path, "cuda.conv_api", "cuda: {conv_api: graph}\n")
    assert names["unset"] != names["set"], "set, it is another configuration (ignored by the cpu backend)"


def test_reduced_precision_reduction_needs_the_graph_api_and_stays_out_of_the_config_id_when_unset(tmp_path):
    """The key picks among the graph API's engines: with the legacy calls it would change nothing,
    so it is refused there (exit 2, naming both keys)."""
    bad = write_config(tmp_path / "r.yaml", SHORT_LENET + "cuda: {reduced_precision_reduction: true}\n")
    proc = run(["run", "--config", bad, "--out", tmp_path / "bad"])
    assert proc.returncode == 2, proc.stderr
    assert "key 'cuda.reduced_precision_reduction'" in proc.stderr and "set cuda.conv_api: graph" in proc.stderr
    names = run_unset_and_set(tmp_path, "cuda.reduced_precision_reduction",
                              "cuda: {conv_api: graph, reduced_precision_reduction: true}\n")
    assert names["unset"] != names["set"]


def run_unset_and_set(tmp_path, key, extra):
    """Two 2-step lenet runs on the cpu backend, without and with `extra` (which sets `key`); their
    run file names by "unset" and "set", after checking that only the set one records the key
    (in /config and the config text)."""
    names = {}
    for name, text in (("unset", ""), ("set", extra)):
        cfg = write_config(tmp_path / "lenet.yaml", SHORT_LENET + text)
        out = tmp_path / name
        proc = run(["run", "--config", cfg, "--out", out, "--set", "steps=2", "--set", "eval.every_epochs=0"])
        assert proc.returncode == 0, proc.stderr
        (run_file,) = out.glob("*.h5")
        names[name] = run_file.name
        with h5py.File(run_file) as f:
            recorded = key in f["config"].attrs
            config_text = f.attrs["config"]
            config_text = config_text.decode() if isinstance(config_text, bytes) else config_text
        assert recorded == (name == "set"), key
        assert (key.split(".")[-1] in config_text) == (name == "set"), key
    return names
