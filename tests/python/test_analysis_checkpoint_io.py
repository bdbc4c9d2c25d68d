"""`python -m trainscale_analysis checkpoint-io`: bench checkpoint files as a table and a chart."""
import subprocess
import sys

import h5py
import pytest

from analysis_cli import cli
from trainscale_analysis import checkpoint_io
from trainscale_cli import REPO, env, require_binary


def bench(root, out, model):
    res = subprocess.run([str(require_binary()), "bench", "checkpoint", "--model", model, "--storage", "local",
                          "--root", str(root), "--repeats", "2", "--out", str(out)],
                         capture_output=True, text=True, env=env(), timeout=300)
    assert res.returncode == 0, res.stderr


def test_table_and_chart_from_real_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    bench(tmp_path / "ckpt", data / "resnet20.h5", "resnet20")
    bench(tmp_path / "ckpt", data / "lenet.h5", "lenet")
    res = subprocess.run([sys.executable, "-m", "trainscale_analysis", "checkpoint-io", str(data), "-o",
                          str(tmp_path / "out" / "ckpt.md")], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "out" / "ckpt.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split("|")[1].strip() for r in rows] == ["resnet20", "lenet"], "ordered by size (resnet20 is the smaller)"
    with h5py.File(data / "lenet.h5") as f:
        assert f"{f.attrs['write_gbps']:.3f}" in rows[1] and f"{f.attrs['bytes'] / 1e6:.1f}" in rows[1]
    assert (tmp_path / "out" / "ckpt.png").stat().st_size > 1000 and "![" in text


def test_a_file_of_another_schema_is_refused(tmp_path):
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.attrs["schema"] = "trainscale-io/1"
    with pytest.raises(ValueError, match="expected trainscale-checkpoint-io/1"):
        checkpoint_io.load_checkpoint_io([str(tmp_path / "x.h5")])
    res = cli("checkpoint-io", tmp_path / "x.h5", "-o", tmp_path / "o.md")
    assert res.returncode == 2 and "schema" in res.stderr
