"""Data files read whole are bounded before they are read (issue 35; docs/reliability.md
"Fuzzing and sanitizers", damaged data files): a 3 GB sparse file named .jpg in a jpeg_dir data
set used to be read into memory whole before the decoder looked at it, and a records index is
read whole at open. Each is now refused by its size against a documented bound (a JPEG: 4 bytes
per pixel of decode_jpeg's pixel limit; an index: 8 bytes per record a shard of its size can
hold) or by its first bytes, with a message naming the file, its size and the bound. The large
files are real sparse files (`truncate -s 3G`) in the test's temporary directory."""
import shutil
import subprocess

import pytest

from trainscale_cli import FMNIST, run, write_config

CONFIG = """\
model: mlp
dataset: {{name: imagefolder, format: jpeg_dir, root: {root}, loader_threads: 2}}
batch_per_worker: 8
epochs: 1
lr: 0.05
threads: 1
seed: 5
eval: {{every_epochs: 0}}
"""
THREE_GB = 3 * 1024 ** 3
JPEG_BOUND = 4 * 89478485  # kMaxJpegFileBytes (data/jpeg_codec.h)


@pytest.fixture(scope="module")
def jpeg_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("jpegs") / "set"
    p = run(["data", "make-synthetic-jpeg", "--out", root, "--classes", "2", "--per-class", "4",
             "--val-per-class", "1", "--seed", "4"])
    assert p.returncode == 0, p.stderr
    return root


def sparse_victim(jpeg_root, tmp_path, keep_header, size):
    root = tmp_path / "set"
    shutil.copytree(jpeg_root, root)
    victim = sorted((root / "train").rglob("*.jpg"))[1]  # every training file is read in the one epoch
    if not keep_header:
        victim.write_bytes(b"")
    subprocess.run(["truncate", "-s", str(size), str(victim)], check=True)
    assert victim.stat().st_size == size and victim.stat().st_blocks * 512 < 1 << 20  # sparse
    return root, victim


def train(tmp_path, root):
    cfg = write_config(tmp_path / "run.yaml", CONFIG.format(root=root))
    return run(["run", "--config", cfg, "--out", tmp_path / "out"], timeout=300)


def test_a_3g_file_with_a_jpeg_header_is_refused_by_its_size(jpeg_root, tmp_path):
    root, victim = sparse_victim(jpeg_root, tmp_path, keep_header=True, size=THREE_GB)
    p = train(tmp_path, root)
    assert p.returncode == 1, p.stdout + p.stderr
    assert str(victim) in p.stderr and f"{THREE_GB} bytes" in p.stderr and f"bound is {JPEG_BOUND} bytes" in p.stderr, p.stderr


def test_a_file_of_zeros_within_the_bound_named_jpg_is_refused_by_its_first_bytes(jpeg_root, tmp_path):
    size = JPEG_BOUND - 1  # the size passes; 341 MB of zeros were read before the decoder refused them
    root, victim = sparse_victim(jpeg_root, tmp_path, keep_header=False, size=size)
    p = train(tmp_path, root)
    assert p.returncode == 1, p.stdout + p.stderr
    assert str(victim) in p.stderr and f"{size} bytes" in p.stderr and "not a JPEG" in p.stderr, p.stderr


@pytest.mark.skipif(not (FMNIST / "train-images-idx3-ubyte.gz").exists(),
                    reason="Fashion-MNIST is not installed (scripts/setup.sh: dataset-fashion-mnist)")
def test_a_3g_records_index_is_refused_by_its_size(tmp_path):
    rec = tmp_path / "records"
    p = run(["data", "convert", "--dataset", "fashion_mnist", "--from", FMNIST, "--format", "records",
             "--shards", "1", "--out", rec])
    assert p.returncode == 0, p.stderr
    index = next(rec.glob("train-*.rec.idx"))
    subprocess.run(["truncate", "-s", "3G", str(index)], check=True)
    cfg = write_config(tmp_path / "rec.yaml", CONFIG.replace("name: imagefolder, format: jpeg_dir", "name: fashion_mnist, format: records")
                       .replace("model: mlp", "model: lenet").replace("epochs: 1", "steps: 2").format(root=rec))
    p = run(["run", "--config", cfg, "--out", tmp_path / "out"], timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert str(index) in p.stderr and f"({THREE_GB} bytes)" in p.stderr and "the bound is" in p.stderr, p.stderr
