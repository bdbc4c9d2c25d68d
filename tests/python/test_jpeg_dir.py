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


# Records of an ImageFolder (docs/data.md "Records of an ImageFolder"): the JPEG files kept byte
# for byte in the jpeg_dir reader's sample order, transformed by the reader as the tree is.

def train_losses(tmp_path, name, fmt, root, extra=""):
    import numpy as np
    cfg = write_config(tmp_path / f"{name}.yaml",
                       CONFIG.format(root=root).replace("format: jpeg_dir", f"format: {fmt}") + extra)
    p = run(["run", "--config", cfg, "--out", tmp_path / name])
    assert p.returncode == 0, p.stderr + p.stdout
    (run_file,) = (tmp_path / name).glob("*.h5")
    with h5py.File(run_file, "r") as f:
        return np.asarray(f["train/loss"][:]), np.asarray(f["eval/accuracy"][:]), p.stdout


def convert_folder(src, out, *extra):
    return run(["data", "convert", "--dataset", "imagefolder", "--from", src, "--format", "records", "--out", out,
                *map(str, extra)])


def test_imagefolder_records_keep_the_files_and_train_bit_identical_to_the_folder(jpeg_root, tmp_path):
    import numpy as np
    p = convert_folder(jpeg_root, tmp_path / "rec", "--shards", "3")
    assert p.returncode == 0, p.stderr
    assert "split train: 24 samples" in p.stdout and "split test: 6 samples" in p.stdout, p.stdout
    assert (tmp_path / "rec" / "classes.txt").read_text().split() == ["c000", "c001", "c002"]
    # Every JPEG file's bytes are in the shards, unchanged.
    shards = b"".join(s.read_bytes() for s in sorted((tmp_path / "rec").glob("train-*.rec")))
    files = sorted((jpeg_root / "train").rglob("*.jpg"))
    assert all(f.read_bytes() in shards for f in files)
    inspect = run(["data", "inspect", tmp_path / "rec"])
    assert inspect.returncode == 0, inspect.stderr
    assert "24 sizes" in inspect.stdout and "jpeg" in inspect.stdout and "classes: 3 (c000, c001, c002)" in inspect.stdout
    loss_dir, acc_dir, _ = train_losses(tmp_path, "dir", "jpeg_dir", jpeg_root, "log_every: 1\n")
    loss_rec, acc_rec, out = train_losses(tmp_path, "rec_run", "records", tmp_path / "rec", "log_every: 1\n")
    assert "data: records" in out, out
    assert len(loss_dir) == 3 and np.all(np.isfinite(loss_dir))
    np.testing.assert_array_equal(loss_dir, loss_rec)  # same files, same augmentation draws
    np.testing.assert_array_equal(acc_dir, acc_rec)


def test_flat_imagefolder_records_hold_out_the_same_files(jpeg_root, tmp_path):
    import numpy as np
    import shutil
    flat = tmp_path / "flat"
    shutil.copytree(jpeg_root / "train", flat)  # ROOT/<class>/*.jpg: test files chosen by a hash
    p = convert_folder(flat, tmp_path / "rec", "--test-fraction", "0.25")
    assert p.returncode == 0, p.stderr
    extra = "dataset.test_fraction: 0.25\nlog_every: 1\n"
    loss_dir, acc_dir, out_dir = train_losses(tmp_path, "dir", "jpeg_dir", flat, extra)
    loss_rec, acc_rec, out_rec = train_losses(tmp_path, "rec_run", "records", tmp_path / "rec", extra)
    counts = out_dir.split("imagefolder ")[1].split(" samples")[0]
    assert counts in out_rec and counts != "24/0", (out_dir, out_rec)
    np.testing.assert_array_equal(loss_dir, loss_rec)
    np.testing.assert_array_equal(acc_dir, acc_rec)


def test_imagefolder_convert_usage_errors(jpeg_root, tmp_path):
    hdf5 = run(["data", "convert", "--dataset", "imagefolder", "--from", jpeg_root, "--format", "hdf5",
                "--out", tmp_path / "h"])
    assert hdf5.returncode == 2 and "--format records only" in hdf5.stderr, hdf5.stderr
    quality = convert_folder(jpeg_root, tmp_path / "q", "--jpeg-quality", "80")
    assert quality.returncode == 2 and "--jpeg-quality" in quality.stderr, quality.stderr
    fraction = convert_folder(jpeg_root, tmp_path / "f", "--test-fraction", "1")
    assert fraction.returncode == 2 and "--test-fraction" in fraction.stderr, fraction.stderr


def test_imagefolder_records_without_classes_or_with_a_bad_jpeg_fail_naming_the_file(jpeg_root, tmp_path):
    import shutil
    root = tmp_path / "damaged"
    shutil.copytree(jpeg_root, root)
    victim = sorted((root / "train").rglob("*.jpg"))[5]
    whole = victim.read_bytes()
    victim.write_bytes(whole[:200])  # no JPEG header: convert refuses the file
    p = convert_folder(root, tmp_path / "rec")
    assert p.returncode == 1 and victim.name in p.stderr and "JPEG" in p.stderr, p.stderr
    victim.write_bytes(whole[:len(whole) // 2])  # the header reads, the image does not decode
    p = convert_folder(root, tmp_path / "rec")
    assert p.returncode == 0, p.stderr
    cfg = write_config(tmp_path / "bad.yaml", CONFIG.format(root=tmp_path / "rec").replace("jpeg_dir", "records"))
    bad = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert bad.returncode == 1, (bad.returncode, bad.stderr)
    assert "train-00000-of-00001.rec, record 5" in bad.stderr and "JPEG" in bad.stderr, bad.stderr
    (tmp_path / "rec" / "classes.txt").unlink()
    missing = run(["run", "--config", cfg, "--out", tmp_path / "out2"])
    assert missing.returncode == 1 and "classes.txt" in missing.stderr, missing.stderr
