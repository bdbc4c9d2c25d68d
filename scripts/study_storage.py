#!/usr/bin/env python3
"""The storages of study 4 (configs/studies/salvaris.yaml; scripts/run_study.sh salvaris) around
one command: a network file system and an HTTP object store on this machine, holding copies of
the study's data sets, up while the command runs and gone after it.

  scripts/study_storage.py run [--base /tmp/trainscale-study-storage] [--port 18480] -- COMMAND ...

- BASE/data: real copies (not links: a link on the mount would resolve to the local file) of
  Fashion-MNIST's IDX files (`fashion-mnist/`, from /usr/share/datasets/fashion-mnist) and of
  every directory named on --data (default campaigns/data/fmnist-records, fmnist-hdf5 and
  fmnist-jpeg_dir);
- `nfs`: BASE/data mounted at BASE/sshfs/mnt through sshfs over an sshd on 127.0.0.1
  (tests/python/sshfs_mount.py, the tests' real network mount): every open, stat and read
  crosses the SSH/SFTP protocol as it would to a file server;
- `blob`: nginx serving BASE/data on http://127.0.0.1:PORT (range reads, JSON listings), the
  project's HTTP object-storage path (docs/data.md).

configs/sites/local-storage-study.yaml maps the run configs' `dataset.storage` nfs and blob to
these places. Both servers share this machine's page cache with the local copies, so what the
storage dimension measures here is each protocol's cost per read (SFTP round trips, HTTP
requests), not a remote disk or a real network. Exit status: the command's; 2 when a server
cannot start (the reason is printed: no /dev/fuse, sshd, sshfs or nginx).
"""
import argparse
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
import sshfs_mount  # noqa: E402  (the tests' real network mount, shared on purpose)

FMNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
error_log {prefix}/error.log;
pid {prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location / {{ autoindex on; autoindex_format json; }}
  }}
}}
"""


def copy_data(data: pathlib.Path, extra: list[pathlib.Path]) -> None:
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    shutil.copytree(FMNIST, data / "fashion-mnist", symlinks=False)
    for d in extra:
        if not d.is_dir():
            raise SystemExit(f"study_storage.py: {d} is not a directory (scripts/run_study.sh salvaris converts it first)")
        shutil.copytree(d, data / d.name, symlinks=False)


def start_nginx(base: pathlib.Path, root: pathlib.Path, port: int) -> subprocess.Popen:
    if not os.path.exists(NGINX):
        raise RuntimeError("nginx is not installed (Debian package nginx; scripts/setup.sh)")
    prefix = base / "nginx"
    prefix.mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(NGINX_CONF.format(prefix=prefix, port=port, root=root))
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(prefix)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited ({proc.returncode}): {(prefix / 'error.log').read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"nginx did not listen on 127.0.0.1:{port} within 10 s (is the port taken?)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run", help="bring the storages up, run COMMAND, take them down")
    r.add_argument("--base", default="/tmp/trainscale-study-storage")
    r.add_argument("--port", type=int, default=18480)
    r.add_argument("--data", action="append", default=None,
                   help="a data-set directory to copy in (repeatable; default campaigns/data/fmnist-records, "
                        "fmnist-hdf5 and fmnist-jpeg_dir)")
    r.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("run: give the command after --")
    reason = sshfs_mount.skip_reason()
    if reason:
        print(f"study_storage.py: cannot mount the network file system: {reason}", file=sys.stderr)
        return 2
    base = pathlib.Path(args.base)
    # What an earlier run left (keys, a mount whose sshfs was killed) goes first.
    if os.path.ismount(base / "sshfs" / "mnt"):
        subprocess.run(["fusermount3", "-uz", str(base / "sshfs" / "mnt")], capture_output=True)
    shutil.rmtree(base / "sshfs", ignore_errors=True)
    extra = [pathlib.Path(d) for d in (args.data or [REPO / "campaigns/data" / f"fmnist-{f}"
                                                     for f in ("records", "hdf5", "jpeg_dir")])]
    copy_data(base / "data", extra)
    mount = nginx = None
    try:
        mount = sshfs_mount.SshfsMount.start(base / "sshfs", base / "data")  # mounted at BASE/sshfs/mnt
        nginx = start_nginx(base, base / "data", args.port)
        print(f"study_storage.py: nfs at {mount.mountpoint} (sshfs), blob at http://127.0.0.1:{args.port} (nginx)",
              flush=True)
        return subprocess.run(command).returncode
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"study_storage.py: {e}", file=sys.stderr)
        return 2
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=10)
        if mount is not None:
            mount.stop()


if __name__ == "__main__":
    sys.exit(main())
