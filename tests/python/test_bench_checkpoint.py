"""`trainscale bench checkpoint`: a model-sized checkpoint written to and read back from each
storage (local, nfs as a real sshfs network mount, blob as moto's S3 server), every byte checked,
and the HDF5 file it records (docs/data.md "Checkpoint I/O", docs/hdf5-schema.md)."""
import pathlib

import h5py
import pytest

import sshfs_mount
from test_blob_storage import BUCKET, moto, moto_env, subset  # noqa: F401 (fixtures)
from trainscale_cli import REPO, env, require_binary

import subprocess

RESNET50_PARAMETERS = 25_557_032  # torchvision's resnet50


def bench(args, run_env=None, timeout=300):
    return subprocess.run([str(require_binary()), "bench", "checkpoint"] + [str(a) for a in args],
                          capture_output=True, text=True, env=run_env or env(), timeout=timeout, cwd=REPO)


def check_file(path, storage, repeats):
    with h5py.File(path) as f:
        a = f.attrs
        assert a["schema"] == "trainscale-checkpoint-io/1" and a["storage"] == storage
        assert a["bytes"] == 4 * (2 * a["parameters"] + a["state"])
        assert f["checkpoint/write_seconds"].shape == (repeats,) == f["checkpoint/read_seconds"].shape
        assert (f["checkpoint/write_seconds"][:] > 0).all() and (f["checkpoint/read_seconds"][:] > 0).all()
        assert a["write_gbps"] > 0 and a["read_gbps"] > 0
        return dict(a)


def test_local_writes_reads_checks_and_leaves_nothing(tmp_path):
    root = tmp_path / "ckpt"
    res = bench(["--model", "resnet50", "--storage", "local", "--root", root, "--repeats", 2, "--out",
                 tmp_path / "local.h5"])
    assert res.returncode == 0, res.stderr
    attrs = check_file(tmp_path / "local.h5", "local", 2)
    assert attrs["parameters"] == RESNET50_PARAMETERS and attrs["state"] > 0  # BN running statistics
    assert attrs["model"] == "resnet50" and attrs["file_system"] and attrs["note"] == ""
    assert "0 wrong bytes" in res.stdout and f"{attrs['bytes']} bytes" in res.stdout
    assert list(root.iterdir()) == [], "each repeat removes its checkpoint"


def test_nfs_over_sshfs_is_a_network_mount_and_a_local_path_is_noted(tmp_path):
    plain = bench(["--model", "lenet", "--storage", "nfs", "--root", tmp_path / "plain", "--repeats", 1, "--out",
                   tmp_path / "plain.h5"])
    assert plain.returncode == 0, plain.stderr
    assert "not a network file system" in check_file(tmp_path / "plain.h5", "nfs", 1)["note"]
    reason = sshfs_mount.skip_reason()
    if reason:
        pytest.skip(reason)
    (tmp_path / "export").mkdir()
    mount = sshfs_mount.SshfsMount.start(tmp_path / "nfs", tmp_path / "export")
    try:
        res = bench(["--model", "lenet", "--storage", "nfs", "--root", mount.mountpoint, "--repeats", 2, "--out",
                     tmp_path / "nfs.h5"])
        assert res.returncode == 0, res.stderr
        attrs = check_file(tmp_path / "nfs.h5", "nfs", 2)
        assert attrs["file_system"] == "fuse.sshfs" and attrs["note"] == ""
        assert list((tmp_path / "export").iterdir()) == []
    finally:
        mount.stop()


def test_blob_puts_gets_and_deletes_on_s3(moto, tmp_path):  # noqa: F811 (the fixture)
    e = moto_env(moto)
    e["AWS_ENDPOINT_URL"] = moto["endpoint"]
    res = bench(["--model", "resnet20", "--storage", "blob", "--root", f"s3://{BUCKET}/checkpoints", "--repeats", 2,
                 "--out", tmp_path / "blob.h5"], run_env=e)
    assert res.returncode == 0, res.stderr
    assert check_file(tmp_path / "blob.h5", "blob", 2)["file_system"] == "s3"
    import boto3
    s3 = boto3.client("s3", endpoint_url=moto["endpoint"], region_name="us-east-1",
                      aws_access_key_id=moto["key"], aws_secret_access_key=moto["secret"])
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="checkpoints/").get("KeyCount", 0) == 0, "removed after each read"
    denied = bench(["--model", "lenet", "--storage", "blob", "--root", f"s3://{BUCKET}/checkpoints", "--repeats", 1],
                   run_env=moto_env(moto, secret="wrong") | {"AWS_ENDPOINT_URL": moto["endpoint"]})
    assert denied.returncode == 1 and "access denied" in denied.stderr and "PUT" in denied.stderr


def test_bad_options_are_usage_errors(tmp_path):
    for args, words in (([], "--root is required"),
                        (["--root", "s3://b/p"], "writes to a directory"),
                        (["--storage", "blob", "--root", tmp_path], "s3://BUCKET/PREFIX"),
                        (["--storage", "tape", "--root", tmp_path], "accepted: local, nfs, blob"),
                        (["--model", "gpt9", "--root", tmp_path], "unknown model"),
                        (["--repeats", "0", "--root", tmp_path], "1..1000")):
        res = bench(args)
        assert res.returncode == 2 and words in res.stderr, (args, res.stderr)
    assert not pathlib.Path(tmp_path / "p").exists()
