#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/<target>/seed-*): the project's own
configs, sweeps and sites, small data files cut from the real Fashion-MNIST test split
(/usr/share/datasets/fashion-mnist) or made here (CIFAR-10: no copy is installed), and blob
storage listings as the servers send them. Inputs a
fuzzer found bugs with are kept beside them as crash-*, timeout-*, oom-* or leak-* (never
rewritten by this script). Manifests come from `trainscale sweep expand` of two seed sweeps.
Usage: tests/fuzz/make_seeds.py [TRAINSCALE_BINARY]   (default build-dev/bin/trainscale)."""
import gzip
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
FUZZ = ROOT / "tests" / "fuzz"
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


def reset(target):
    d = FUZZ / target
    d.mkdir(exist_ok=True)
    for old in d.glob("seed-*"):
        old.unlink()
    return d


def yaml_seeds():
    d = reset("run_config")
    for f in sorted((ROOT / "configs" / "runs").glob("*.yaml")):
        shutil.copy(f, d / ("seed-" + f.name))
    (d / "seed-anchors.yaml").write_text(
        "model: lenet\ndataset: &ds {name: synthetic}\nlr: &lr 0.05\nlr_schedule: {kind: constant}\n"
        "epochs: 1\nseed: 7\n")
    (d / "seed-flow.yaml").write_text("{model: mlp, dataset: {name: neuron}, workers: 2, precision: bf16, "
                                      "dist: {strategy: sync, allreduce: ring, overlap: true}}\n")
    d = reset("sweep_file")
    for f in sorted((ROOT / "configs" / "sweeps").glob("*.yaml")):
        if not f.name.endswith("_base.yaml"):
            shutil.copy(f, d / ("seed-" + f.name))
    # The fuzz target anchors `base` in configs/sweeps/, so the quickstart's base moves up one.
    quick = (ROOT / "configs" / "quickstart.yaml").read_text().replace("base: runs/", "base: ../runs/")
    (d / "seed-quickstart.yaml").write_text(quick)
    (d / "seed-small.yaml").write_text(
        "campaign: small\nbase: example_base.yaml\nmatrix:\n  workers: [1, 2]\nzip:\n"
        "  bl: {batch_per_worker: [16, 32], lr: [0.01, 0.02]}\nexclude:\n  - {workers: 2, lr: 0.01}\n"
        "include:\n  - {workers: 1, lr: 0.5}\nrepetitions: 2\nresources: {walltime: \"00:05:00\", mem: 4G}\n")
    d = reset("site_file")
    for f in sorted((ROOT / "configs" / "sites").glob("*.yaml")):
        shutil.copy(f, d / ("seed-" + f.name))
    bound_seeds()


def bound_seeds():
    """Inputs at the bounds of config/strict_yaml.h and the readers (docs/reliability.md "Hostile
    input"): a NUL byte, nesting deeper than YamlLimits::max_depth, an integer above its range
    and beyond 64 bits, a directory as `base:`."""
    deep = "[" * 3000 + "]" * 3000
    run_config = FUZZ / "run_config"
    (run_config / "seed-bound-nul-byte.yaml").write_bytes(b"model: lenet\nsteps: 2\x00\nthreads: 1\n")
    (run_config / "seed-bound-deep-nesting.yaml").write_text("model: lenet\ndataset: " + deep + "\n")
    sweep = FUZZ / "sweep_file"
    (sweep / "seed-bound-repetitions.yaml").write_text(
        "base: example_base.yaml\nmatrix: {lr: [0.1]}\nrepetitions: 100000000000\n")
    (sweep / "seed-bound-base-directory.yaml").write_text("base: .\nmatrix: {lr: [0.1]}\n")
    (sweep / "seed-bound-deep-nesting.yaml").write_text("base: example_base.yaml\nmatrix: " + deep + "\n")
    (FUZZ / "site_file" / "seed-bound-huge-integer.yaml").write_bytes(
        b"scheduler: slurm\nnode: {cores: 99999999999999999999999}\n")


def manifest_seeds(binary):
    d = reset("manifest")
    for sweep in ("seed-small.yaml", "seed-quickstart.yaml"):
        with tempfile.TemporaryDirectory() as tmp:
            # expand resolves `base` beside the sweep file, as the sweep_file target does.
            src = ROOT / "configs" / "sweeps" / ("fuzzseed-" + sweep)
            shutil.copy(FUZZ / "sweep_file" / sweep, src)
            try:
                subprocess.run([binary, "sweep", "expand", str(src), "--out", tmp + "/c"], check=True,
                               stdout=subprocess.DEVNULL)
            finally:
                src.unlink()
            text = pathlib.Path(tmp + "/c/manifest.yaml").read_text().replace(str(ROOT) + "/", "")
            (d / sweep).write_text(text)


def idx_input(images, labels, gz_images=False, gz_labels=False):
    if gz_images:
        images = gzip.compress(images, mtime=0)
    if gz_labels:
        labels = gzip.compress(labels, mtime=0)
    flags = (1 if gz_images else 0) | (2 if gz_labels else 0)
    return bytes([flags]) + struct.pack("<I", len(images)) + images + labels


def idx_seeds():
    d = reset("idx")
    with gzip.open(FASHION / "t10k-images-idx3-ubyte.gz") as f:
        head, pixels = f.read(16), f.read(3 * 28 * 28)
    with gzip.open(FASHION / "t10k-labels-idx1-ubyte.gz") as f:
        lhead, labels = f.read(8), f.read(3)
    images = head[:4] + struct.pack(">I", 3) + head[8:16] + pixels  # the first 3 samples
    labels = lhead[:4] + struct.pack(">I", 3) + labels
    (d / "seed-raw").write_bytes(idx_input(images, labels))
    (d / "seed-gzip").write_bytes(idx_input(images, labels, True, True))
    (d / "seed-gzip-images").write_bytes(idx_input(images, labels, True, False))
    (d / "seed-truncated").write_bytes(idx_input(images[:-100], labels))
    (d / "seed-count-too-large").write_bytes(idx_input(images[:4] + struct.pack(">I", 0xFFFFFFF0) + images[8:], labels))
    tiny = struct.pack(">IIII", 0x803, 2, 4, 3) + bytes(range(24))
    (d / "seed-tiny").write_bytes(idx_input(tiny, struct.pack(">II", 0x801, 2) + bytes([3, 9])))


def cifar_seeds():
    d = reset("cifar")
    record = lambda label, base: bytes([label]) + bytes((base + i) % 256 for i in range(3072))
    (d / "seed-two-records").write_bytes(record(3, 0) + record(9, 7))
    (d / "seed-bad-label").write_bytes(record(3, 0) + record(10, 7))
    (d / "seed-truncated").write_bytes((record(1, 5) + record(2, 6))[:-1])


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload):
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", masked_crc(length)) + payload + struct.pack("<I", masked_crc(payload))


def records_input(frames, index=None):
    """The records target's layout: flags, shard length, shard, index (docs in fuzz_data_files.cpp)."""
    shard = b"".join(frames)
    tail = b""
    if index is not None:
        tail = b"TSRIDX1\0" + struct.pack("<Q", len(index)) + b"".join(struct.pack("<Q", o) for o in index)
    return bytes([1 if index is not None else 0]) + struct.pack("<I", len(shard)) + shard + tail


def records_seeds():
    d = reset("records")
    payload = lambda label, c, h, w, enc=0: (b"TSR1" + bytes([enc, 0, 0, 0]) + struct.pack("<iHHHH", label, c, h, w, 0)
                                             + bytes((label * 31 + i) % 256 for i in range(c * h * w)))
    frames = [frame(payload(label, 1, 4, 3)) for label in (3, 9, 0)]
    offsets = [0, len(frames[0]), len(frames[0]) + len(frames[1])]
    (d / "seed-indexed").write_bytes(records_input(frames, offsets))
    (d / "seed-unindexed").write_bytes(records_input(frames))
    (d / "seed-truncated").write_bytes(records_input(frames)[:-3])
    (d / "seed-bad-index").write_bytes(records_input(frames, [0, 7, offsets[2]]))
    bad_crc = bytearray(frames[1])
    bad_crc[20] ^= 1
    (d / "seed-bad-crc").write_bytes(records_input([frames[0], bytes(bad_crc)]))
    (d / "seed-jpeg-garbage").write_bytes(records_input([frame(b"TSR1" + bytes([1, 0, 0, 0]) + struct.pack("<iHHHH", 1, 1, 2, 2, 0)
                                                             + b"\xff\xd8\xff\xe0garbage")]))


def hdf5_input(shape, options, dims, image_type, labels, label_type, label_count):
    """The hdf5 target's description of a file (layout in fuzz_hdf5_file.cpp)."""
    n = 1
    for d in dims:
        n *= d
    head = bytes([shape, options] + [d - 1 for d in dims] + [image_type])
    return head + bytes((i * 7) % 256 for i in range(n)) + bytes([labels, label_type]) + bytes(i % 10 for i in range(label_count))


def hdf5_seeds():
    d = reset("hdf5")
    nchw = 8  # rank 4 (8 % 5 = 3: rank - 1), layout NCHW ((8 >> 3) % 5 = 1); 3 | (1 << 3) was rank 2
    (d / "seed-chunked").write_bytes(hdf5_input(nchw, 0x02, [6, 1, 4, 3], 0, 0x01, 4, 6))
    (d / "seed-nhwc-gzip").write_bytes(hdf5_input(18, 0x13, [6, 4, 3, 1], 0, 0x01, 0, 6))
    (d / "seed-contiguous-no-layout").write_bytes(hdf5_input(3, 0x00, [5, 3, 2, 2], 0, 0x01, 4, 5))
    (d / "seed-float-images").write_bytes(hdf5_input(nchw, 0x02, [4, 1, 2, 2], 3, 0x01, 4, 4))
    (d / "seed-rank3").write_bytes(hdf5_input(2, 0x01, [4, 2, 2], 0, 0x01, 4, 4))
    (d / "seed-labels-short").write_bytes(hdf5_input(nchw, 0x02, [6, 1, 2, 2], 0, 0x00, 4, 5))
    # Fletcher-32 on both datasets (as data convert writes them), then with /images' first chunk damaged.
    (d / "seed-fletcher32").write_bytes(hdf5_input(nchw, 0x22, [6, 1, 4, 3], 0, 0x41 | 0x08, 4, 6))
    (d / "seed-fletcher32-flipped").write_bytes(hdf5_input(nchw, 0x62, [6, 1, 4, 3], 0, 0x41 | 0x08, 4, 6))


def blob_listing_seeds():
    """Listings as moto's S3 and nginx's JSON autoindex send them (byte 0: 0 S3, 1 autoindex)."""
    d = reset("blob_listing")
    (d / "seed-s3-page").write_bytes(b"\0" + (
        '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Name>fuzz</Name><Prefix>d/</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>"
        "<IsTruncated>true</IsTruncated><Contents><Key>d/</Key><Size>0</Size></Contents>"
        "<Contents><Key>d/a&amp;b.bin</Key><LastModified>2026-11-23T02:00:00.000Z</LastModified>"
        "<ETag>&quot;0cc175b9c0f1b6a831c399e269772661&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass>"
        "</Contents><CommonPrefixes><Prefix>d/sub/</Prefix></CommonPrefixes>"
        "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
        "</ListBucketResult>").encode())
    (d / "seed-autoindex").write_bytes(b"\1" + (
        '[\n{ "name":"train-images-idx3-ubyte", "type":"file", "mtime":"Mon, 23 Nov 2026 02:00:00 GMT", '
        '"size":47040016 },\n{ "name":"class \\"0\\"", "type":"directory", "mtime":"Mon, 23 Nov 2026 02:00:00 GMT" },'
        '\n{ "name":"link", "type":"other", "mtime":"Mon, 23 Nov 2026 02:00:00 GMT" }\n]\n').encode())


if __name__ == "__main__":
    yaml_seeds()
    manifest_seeds(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build-dev" / "bin" / "trainscale"))
    idx_seeds()
    cifar_seeds()
    records_seeds()
    hdf5_seeds()
    blob_listing_seeds()
