"""hdf5 data sets carry a Fletcher-32 checksum on every chunk (docs/data.md "Formats: hdf5",
docs/reliability.md): 100 flipped bytes inside the pixel data of a converted file make `data
inspect` fail naming the dataset, samples and chunk, and a run reading it end with exit 1 saying
the same (it trained on the changed pixels without a word before); a file without checksums (an
older conversion, or h5py's) is inspected as "no checksums", never "ok"."""
import h5py
import numpy as np
import pytest

from trainscale_cli import FMNIST, run, write_config

RUN = """model: lenet
dataset: {{name: fashion_mnist, format: hdf5, root: {root}, loader_threads: 1}}
batch_per_worker: 64
steps: 40
threads: 1
workers: 1
"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    if not (FMNIST / "train-images-idx3-ubyte.gz").exists() and not (FMNIST / "train-images-idx3-ubyte").exists():
        pytest.skip(f"Fashion-MNIST is not installed at {FMNIST}")
    out = tmp_path_factory.mktemp("h5") / "fmnist"
    res = run(["data", "convert", "--dataset", "fashion_mnist", "--from", FMNIST, "--format", "hdf5", "--out", out,
               "--limit", "2000"])
    assert res.returncode == 0, res.stderr
    return out


def flip_bytes_in_chunk(path, chunk, count=100):
    """XORs `count` bytes inside the stored bytes of /images chunk `chunk` (found through HDF5's
    own chunk index, H5Dget_chunk_info); returns the chunk's first sample."""
    with h5py.File(path, "r") as f:
        assert f["images"].fletcher32 and f["labels"].fletcher32
        info = f["images"].id.get_chunk_info(chunk)
    data = bytearray(path.read_bytes())
    for i in range(count):
        data[info.byte_offset + 100 + 7 * i] ^= 0x5A
    path.write_bytes(bytes(data))
    return info.chunk_offset[0]


def test_flipped_pixel_bytes_fail_inspect_and_the_run(tmp_path, converted):
    res = run(["data", "inspect", converted])
    assert res.returncode == 0 and "status: ok" in res.stdout, res.stdout + res.stderr
    assert "Fletcher-32 on every chunk of /images and /labels, all verified" in res.stdout
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for split in ("train", "test"):
        (damaged / f"{split}.h5").write_bytes((converted / f"{split}.h5").read_bytes())
    first = flip_bytes_in_chunk(damaged / "train.h5", 3)
    res = run(["data", "inspect", damaged])
    assert res.returncode == 1, res.stdout + res.stderr
    assert (f"train.h5, dataset /images samples {first}..{first + 82} (chunk 3): the stored bytes do not match their "
            "Fletcher-32 checksum: the file is damaged") in res.stderr, res.stderr
    cfg = write_config(tmp_path / "run.yaml", RUN.format(root=damaged))
    res = run(["run", "--config", cfg, "--out", tmp_path / "out"], timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "dataset /images samples" in res.stderr and "Fletcher-32 checksum" in res.stderr, res.stderr
    assert not list((tmp_path / "out").glob("*.h5"))


def test_flipped_label_bytes_fail_at_open(tmp_path, converted):
    (tmp_path / "train.h5").write_bytes((converted / "train.h5").read_bytes())
    with h5py.File(tmp_path / "train.h5", "r") as f:
        info = f["labels"].id.get_chunk_info(0)
    data = bytearray((tmp_path / "train.h5").read_bytes())
    data[info.byte_offset + 40] ^= 0x01  # label 10 becomes another class
    (tmp_path / "train.h5").write_bytes(bytes(data))
    res = run(["data", "inspect", tmp_path / "train.h5"])
    assert res.returncode == 1 and "dataset /labels: the stored bytes do not match their Fletcher-32" in res.stderr, \
        res.stderr


def test_a_file_without_checksums_is_inspected_as_such(tmp_path, converted):
    with h5py.File(converted / "test.h5", "r") as src, h5py.File(tmp_path / "test.h5", "w") as dst:
        dst.create_dataset("images", data=np.asarray(src["images"]), chunks=(100, 1, 28, 28))
        dst.create_dataset("labels", data=np.asarray(src["labels"]))
    res = run(["data", "inspect", tmp_path / "test.h5"])
    assert res.returncode == 0, res.stderr
    assert "checksums " + str(tmp_path / "test.h5") + ": none" in res.stdout
    assert "status: no checksums: every record read, but" in res.stdout and "status: ok" not in res.stdout, res.stdout
