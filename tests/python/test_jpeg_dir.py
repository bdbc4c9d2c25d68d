"""The jpeg_dir format end to end: `trainscale data make-synthetic-jpeg` writes an ImageFolder,
`trainscale run` trains on it as dataset imagefolder (decode + augmentation in the loader
threads) and records the data set in the run file; a JPEG that does not decode ends the run
with exit 1 naming the file; a bad dataset.test_fraction is a usage error."""
import h5py
import pytest

from trainscale_cli import run, write_config

CONFIG = """\
model: mlp
dataset: {{name: imagefolder, format: jpeg_dir, root: {root}, loader_threads: 2}}
batch_per_worker: 8
epochs: 1
lr: 0.05
threads: 1
seed: 5
"""


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic_jpegs") / "set"
    p = run(["data", "make-synthetic-jpeg", "--out", root, "--classes", "3", "--per-class", "8",
             "--val-per-class", "2", "--seed", "4"])
    assert p.returncode == 0, p.stderr
    assert "30 images" in p.stdout and "tree_sha256:" in p.stdout, p.stdout
    return root


def test_make_synthetic_jpeg_is_deterministic(jpeg_root, tmp_path):
    again = run(["data", "make-synthetic-jpeg", "--out", tmp_path / "again", "--classes", "3", "--per-class", "8",
                 "--val-per-class", "2", "--seed", "4"])
    first = sorted((jpeg_root / "train").rglob("*.jpg"))
    assert len(first) == 24 and len(list((jpeg_root / "val").rglob("*.jpg"))) == 6
    assert [f.read_bytes() for f in first] == [(tmp_path / "again" / f.relative_to(jpeg_root)).read_bytes() for f in first]
    assert again.stdout.split("tree_sha256:")[1].strip() in run(
        ["data", "make-synthetic-jpeg", "--out", tmp_path / "third", "--classes", "3", "--per-class", "8",
         "--val-per-class", "2", "--seed", "4"]).stdout


def test_make_synthetic_jpeg_usage_errors(tmp_path):
    assert run(["data", "make-synthetic-jpeg", "--classes", "3"]).returncode == 2
    bad = run(["data", "make-synthetic-jpeg", "--out", tmp_path / "q", "--quality", "0"])
    assert bad.returncode == 2 and "--quality 0" in bad.stderr, bad.stderr


def test_imagefolder_trains_and_is_recorded(jpeg_root, tmp_path):
    cfg = write_config(tmp_path / "imf.yaml", CONFIG.format(root=jpeg_root))
    p = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert p.returncode == 0, p.stderr
    assert "imagefolder 24/6 samples" in p.stdout, p.stdout
    (run_file,) = (tmp_path / "out").glob("*.h5")
    with h5py.File(run_file, "r") as f:
        config = f.attrs["config"]
        config = config.decode() if isinstance(config, bytes) else config
        assert "jpeg_dir" in config and "test_fraction" in config, config
        assert f.attrs["status"] in ("ok", b"ok")


def test_damaged_jpeg_fails_the_run_naming_the_file(jpeg_root, tmp_path):
    import shutil
    root = tmp_path / "damaged"
    shutil.copytree(jpeg_root, root)
    victim = sorted((root / "train").rglob("*.jpg"))[5]
    victim.write_bytes(victim.read_bytes()[:200])  # cut inside the entropy-coded data
    cfg = write_config(tmp_path / "bad.yaml", CONFIG.format(root=root))
    p = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert victim.name in p.stderr and "JPEG" in p.stderr, p.stderr


def test_test_fraction_outside_the_open_interval_is_a_usage_error(jpeg_root, tmp_path):
    cfg = write_config(tmp_path / "tf.yaml", CONFIG.format(root=jpeg_root) + "dataset.test_fraction: 1.0\n")
    p = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert p.returncode == 2 and "dataset.test_fraction" in p.stderr, p.stderr
