#!/usr/bin/env python3
"""Checkpoint I/O over storage x model (issue 36): `trainscale bench checkpoint` of each model on
local (the directory given), nfs (an sshfs network mount of a local directory through an sshd on
127.0.0.1, tests/python/sshfs_mount.py) and blob (moto's S3 server on 127.0.0.1, installed in
.venv), then the table and chart of `python -m trainscale_analysis checkpoint-io`.

    .venv/bin/python bench/checkpoint_io.py --out reports/checkpoint_io [--models resnet50,vgg16] [--repeats 3]

Root needed for the sshfs mount (FUSE); without it, or without moto, that storage is left out
and the script says so. The data files go to OUT/data/, the report to OUT/checkpoint_io.md.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
import sshfs_mount  # noqa: E402

MOTO_SERVER = pathlib.Path(sys.executable).parent / "moto_server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(log: pathlib.Path):
    """moto's S3 server with bucket `checkpoints`; (process, endpoint) or (None, reason)."""
    if not MOTO_SERVER.exists():
        return None, f"{MOTO_SERVER} is absent (scripts/setup.sh installs moto[server] into .venv)"
    port = free_port()
    proc = subprocess.Popen([str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.1)
    endpoint = f"http://127.0.0.1:{port}"
    import boto3
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="bench",
                 aws_secret_access_key="bench").create_bucket(Bucket="checkpoints")
    return proc, endpoint


def bench(binary, model, storage, root, out, repeats, extra_env=None):
    cmd = [binary, "bench", "checkpoint", "--model", model, "--storage", storage, "--root", str(root),
           "--repeats", str(repeats), "--out", str(out)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, **(extra_env or {})})


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="resnet50,vgg16")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--local-root", default=None, help="directory for local (default: a temp directory under /var/tmp)")
    p.add_argument("--binary", default=str(REPO / "build" / "bin" / "trainscale"))
    a = p.parse_args()
    out = pathlib.Path(a.out)
    data = out / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="ckpt-io-", dir="/var/tmp"))
    local = pathlib.Path(a.local_root) if a.local_root else work / "local"
    mount, moto, skipped = None, None, []
    try:
        reason = sshfs_mount.skip_reason()
        if reason is None:
            (work / "export").mkdir()
            mount = sshfs_mount.SshfsMount.start(work / "nfs", work / "export")
        else:
            skipped.append(f"nfs: {reason}")
        moto, endpoint = start_moto(work / "moto.log")
        if moto is None:
            skipped.append(f"blob: {endpoint}")
        s3_env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                  "AWS_REGION": "us-east-1"} if moto else None
        for model in a.models.split(","):
            bench(a.binary, model, "local", local, data / f"{model}_local.h5", a.repeats)
            if mount:
                bench(a.binary, model, "nfs", mount.mountpoint, data / f"{model}_nfs.h5", a.repeats)
            if moto:
                bench(a.binary, model, "blob", "s3://checkpoints/bench", data / f"{model}_blob.h5", a.repeats, s3_env)
    finally:
        if mount:
            mount.stop()
        if moto:
            moto.kill()
            moto.wait()
        shutil.rmtree(work, ignore_errors=True)
    for s in skipped:
        print("left out:", s)
    subprocess.run([sys.executable, "-m", "trainscale_analysis", "checkpoint-io", str(data), "-o",
                    str(out / "checkpoint_io.md")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
