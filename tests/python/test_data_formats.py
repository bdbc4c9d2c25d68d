"""The records and hdf5 formats end to end (docs/data.md "Formats: records", "Formats: hdf5",
"Converting and inspecting"): Fashion-MNIST converted by `trainscale data convert` trains to the
bit-identical loss trajectory of the idx files with the same seed, and damaged shards, indexes
and HDF5 files are errors that name the file (and record)."""
import pathlib
import shutil

import h5py
import numpy as np
import pytest

from trainscale_cli import FMNIST, run, write_config

RUN = """\
model: mlp
dataset: {{name: fashion_mnist, format: {fmt}, root: {root}, loader_threads: 2}}
batch_per_worker: 32
lr: 0.05
steps: 40
threads: 1
eval: {{every_epochs: 1, batch: 1000}}
log_every: 10
seed: 11
"""

pytestmark = pytest.mark.skipif(not (FMNIST / "train-images-idx3-ubyte.gz").exists(),
                                reason="Fashion-MNIST is not installed (scripts/setup.sh: dataset-fashion-mnist)")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Fashion-MNIST, both splits, as records (4 shards with indexes) and hdf5 (gzip)."""
    tmp = tmp_path_factory.mktemp("converted")
    for fmt, extra in [("records", ["--shards", "4"]), ("hdf5", ["--compression", "gzip"])]:
        proc = run(["data", "convert", "--dataset", "fashion_mnist", "--from", FMNIST, "--format", fmt,
                    "--out", tmp / fmt] + extra)
        assert proc.returncode == 0, proc.stderr
    return tmp


def train(tmp_path, name, fmt, root):
    cfg = write_config(tmp_path / f"{name}.yaml", RUN.format(fmt=fmt, root=root))
    proc = run(["run", "--config", cfg, "--out", tmp_path / name])
    assert proc.returncode == 0, proc.stderr + proc.stdout
    files = sorted((tmp_path / name).glob("*.h5"))
    assert len(files) == 1, files
    with h5py.File(files[0]) as f:
        return f["train/loss"][:], f["eval/accuracy"][:], f.attrs["config"]


def test_records_and_hdf5_train_bit_identical_to_idx(tmp_path, converted):
    loss_idx, acc_idx, _ = train(tmp_path, "idx", "idx", FMNIST)
    loss_rec, acc_rec, config = train(tmp_path, "records", "records", converted / "records")
    loss_h5, acc_h5, _ = train(tmp_path, "hdf5", "hdf5", converted / "hdf5")
    assert 'format: "records"' in config
    assert len(loss_idx) == 40 and np.all(np.isfinite(loss_idx))
    np.testing.assert_array_equal(loss_idx, loss_rec)
    np.testing.assert_array_equal(loss_idx, loss_h5)
    np.testing.assert_array_equal(acc_idx, acc_rec)
    np.testing.assert_array_equal(acc_idx, acc_h5)


def test_records_without_index_read_the_same(tmp_path, converted):
    """Without .idx files the reader walks the frame headers: same samples, same trajectory."""
    bare = tmp_path / "bare"
    shutil.copytree(converted / "records", bare, ignore=shutil.ignore_patterns("*.idx"))
    loss_rec, _, _ = train(tmp_path, "records", "records", converted / "records")
    loss_bare, _, _ = train(tmp_path, "bare", "records", bare)
    np.testing.assert_array_equal(loss_rec, loss_bare)


def test_shuffle_buffer_order_trains_and_is_recorded(tmp_path, converted):
    """dataset.shuffle_buffer gives records its own epoch order: a run trains, the key is in the run
    file's config, the trajectory differs from the full shuffle; other formats refuse the key."""
    cfg = write_config(tmp_path / "sb.yaml", RUN.format(fmt="records", root=converted / "records"))
    proc = run(["run", "--config", cfg, "--out", tmp_path / "sb", "--set", "dataset.shuffle_buffer=2048"])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(sorted((tmp_path / "sb").glob("*.h5"))[0]) as f:
        loss_buffered = f["train/loss"][:]
        assert "shuffle_buffer: 2048" in f.attrs["config"]
    loss_full, _, _ = train(tmp_path, "full", "records", converted / "records")
    assert np.all(np.isfinite(loss_buffered)) and not np.array_equal(loss_buffered, loss_full)
    proc = run(["run", "--config", cfg, "--out", tmp_path / "x", "--set", "dataset.format=idx",
                "--set", f"dataset.root={FMNIST}", "--set", "dataset.shuffle_buffer=64"])
    assert proc.returncode == 2 and "dataset.shuffle_buffer" in proc.stderr and "records" in proc.stderr, proc.stderr


def test_inspect_reports_format_samples_and_checksums(converted):
    proc = run(["data", "inspect", converted / "records"])
    assert proc.returncode == 0, proc.stderr
    assert "format: records" in proc.stdout
    assert "split train: 60000 samples in 4 shards, shape (1,28,28) raw, labels 0..9 (10 distinct)" in proc.stdout
    assert proc.stdout.count("sha256 ") == 16  # 8 shards + 8 indexes
    proc = run(["data", "inspect", converted / "records" / "test-00003-of-00004.rec"])
    assert proc.returncode == 0, proc.stderr
    assert "split test: 2500 samples in 1 shards" in proc.stdout and proc.stdout.count("sha256 ") == 2
    proc = run(["data", "inspect", converted / "hdf5" / "test.h5"])
    assert proc.returncode == 0, proc.stderr
    assert "format: hdf5" in proc.stdout and "10000 samples of (1,28,28)" in proc.stdout and "gzip" in proc.stdout


def copy_records(converted, tmp_path):
    dst = tmp_path / "rec"
    shutil.copytree(converted / "records", dst)
    return dst


def test_corrupt_crc_is_named_by_inspect_and_run(tmp_path, converted):
    rec = copy_records(converted, tmp_path)
    shard = rec / "train-00002-of-00004.rec"
    data = bytearray(shard.read_bytes())
    record_bytes = 16 + 20 + 784
    data[5 * record_bytes + 16 + 20 + 100] ^= 0x40  # a pixel of record 5
    shard.write_bytes(bytes(data))
    proc = run(["data", "inspect", rec])
    assert proc.returncode == 1
    assert f"records shard {shard}, record 5: wrong CRC of the payload" in proc.stderr
    cfg = write_config(tmp_path / "bad.yaml", RUN.format(fmt="records", root=rec).replace("steps: 40", "steps: 2000"))
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 1, proc.stderr
    assert f"records shard {shard}, record 5: wrong CRC of the payload" in proc.stderr


def test_truncated_shard_and_disagreeing_index(tmp_path, converted):
    rec = copy_records(converted, tmp_path)
    shard = rec / "test-00001-of-00004.rec"
    shard.write_bytes(shard.read_bytes()[:-10])
    proc = run(["data", "inspect", rec])
    assert proc.returncode == 1 and str(shard) in proc.stderr and "truncated" in proc.stderr, proc.stderr
    # With its index the reader finds the disagreement at open (the last record's frame).
    cfg = write_config(tmp_path / "t.yaml", RUN.format(fmt="records", root=rec))
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 1 and str(shard) in proc.stderr and "record 2499" in proc.stderr, proc.stderr
    # Without it, the header walk finds the truncated last record.
    (rec / "test-00001-of-00004.rec.idx").unlink()
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out2"])
    assert proc.returncode == 1 and f"records shard {shard}, record 2499: truncated" in proc.stderr, proc.stderr
    # An index of another shard (2500 records for a shard of 15000) disagrees with this one.
    rec2 = tmp_path / "rec2"
    shutil.copytree(converted / "records", rec2)
    shutil.copy(rec2 / "test-00000-of-00004.rec.idx", rec2 / "train-00001-of-00004.rec.idx")
    proc = run(["data", "inspect", rec2])
    assert proc.returncode == 1 and "train-00001-of-00004.rec.idx disagrees with its shard" in proc.stderr, proc.stderr
    cfg = write_config(tmp_path / "t2.yaml", RUN.format(fmt="records", root=rec2))
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out3"])
    assert proc.returncode == 1 and "train-00001-of-00004.rec, record 2499" in proc.stderr, proc.stderr
    assert "the index disagrees with its shard" in proc.stderr


def test_hdf5_wrong_dtype_and_shape_name_file_and_dataset(tmp_path):
    for name, images in [("dtype", np.zeros((4, 1, 28, 28), np.float32)), ("shape", np.zeros((4, 28, 28), np.uint8))]:
        root = tmp_path / name
        root.mkdir()
        for split in ("train", "test"):
            with h5py.File(root / f"{split}.h5", "w") as f:
                f["images"] = images
                f["labels"] = np.zeros(4, np.int32)
        cfg = write_config(tmp_path / f"{name}.yaml", RUN.format(fmt="hdf5", root=root))
        proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
        assert proc.returncode == 1, proc.stderr
        assert f"HDF5 file {root}/train.h5, dataset /images: wrong {name}" in proc.stderr, proc.stderr


def test_hdf5_nhwc_layout_reads_as_nchw(tmp_path):
    """An (N,H,W,C) file with layout=NHWC gives the same samples as its (N,C,H,W) twin."""
    rng = np.random.default_rng(3)
    nchw = rng.integers(0, 256, size=(64, 3, 8, 6), dtype=np.uint8)
    labels = rng.integers(0, 10, size=64).astype(np.uint8)
    for layout, images in [("NCHW", nchw), ("NHWC", nchw.transpose(0, 2, 3, 1))]:
        root = tmp_path / layout
        root.mkdir()
        for split in ("train", "test"):
            with h5py.File(root / f"{split}.h5", "w") as f:
                f.create_dataset("images", data=images, chunks=(16,) + images.shape[1:])
                f["images"].attrs["layout"] = np.bytes_(layout)  # fixed-length (docs/data.md)
                f["labels"] = labels
        proc = run(["data", "inspect", root / "test.h5"])
        assert proc.returncode == 0, proc.stderr
        assert f"({layout}, chunks of 16 samples), 64 samples of (3,8,6)" in proc.stdout
    out_nchw = tmp_path / "from_nchw"
    out_nhwc = tmp_path / "from_nhwc"
    for src, dst in [(tmp_path / "NCHW", out_nchw), (tmp_path / "NHWC", out_nhwc)]:
        proc = run(["data", "convert", "--dataset", "cifar10", "--from", src, "--from-format", "hdf5",
                    "--format", "records", "--out", dst])
        assert proc.returncode == 0, proc.stderr
    assert (out_nchw / "test-00000-of-00001.rec").read_bytes() == (out_nhwc / "test-00000-of-00001.rec").read_bytes()
    # A variable-length string attribute (h5py's default for str) is refused with what to write.
    with h5py.File(tmp_path / "NHWC" / "test.h5", "a") as f:
        f["images"].attrs["layout"] = "NHWC"
    proc = run(["data", "inspect", tmp_path / "NHWC" / "test.h5"])
    assert proc.returncode == 1 and "attribute layout is a variable-length string" in proc.stderr, proc.stderr


def test_data_help_and_usage_errors(tmp_path):
    proc = run(["data", "--help"])
    assert proc.returncode == 0 and "trainscale data convert" in proc.stdout and "inspect" in proc.stdout
    proc = run(["data", "convert", "--from", FMNIST, "--format", "parquet", "--out", tmp_path / "x"])
    assert proc.returncode == 2 and "accepted: records, hdf5, jpeg_dir" in proc.stderr
    proc = run(["data", "convert", "--from", FMNIST, "--format", "hdf5", "--compression", "zstd", "--out", tmp_path / "x"])
    assert proc.returncode == 2 and "--compression 'zstd'" in proc.stderr
    proc = run(["data", "inspect", tmp_path])
    assert proc.returncode == 2 and "is not a records directory" in proc.stderr
