"""A real network file system for tests: an sshd on 127.0.0.1 (its own host key, config and
authorized key, all in a temp directory; the system's ssh configuration is not touched) and an
sshfs mount of a local directory through it, a FUSE network mount like the NFS mounts of
clusters (statfs reports FUSE_SUPER_MAGIC, /proc/self/mounts fuse.sshfs).

`SshfsMount.start(tmp, source_dir)` mounts `source_dir` at tmp/mnt and returns the mount;
`stop()` unmounts (fusermount3 -uz) and ends sshfs and sshd, also after a failed test.
`skip_reason()` says why this machine cannot mount (no /dev/fuse, sshd, sshfs, fusermount3).
"""
from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import time

SSHD = "/usr/sbin/sshd"


def skip_reason() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: FUSE mounts are impossible here"
    if not os.path.exists(SSHD):
        return f"{SSHD} is absent (Debian openssh-server)"
    for tool in ("sshfs", "fusermount3", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is absent (Debian sshfs, fuse3, openssh-client)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out after {seconds} s waiting for {what}")


class SshfsMount:
    def __init__(self, work: pathlib.Path, source: pathlib.Path):
        self.work, self.source = work, source
        self.mountpoint = work / "mnt"
        self.sshd = None
        self.sshfs = None

    @classmethod
    def start(cls, work: pathlib.Path, source: pathlib.Path) -> "SshfsMount":
        m = cls(pathlib.Path(work), pathlib.Path(source))
        try:
            m._start_sshd()
            m._mount()
        except BaseException:
            m.stop()
            raise
        return m

    def _start_sshd(self):
        keys = self.work / "ssh"
        keys.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
        (keys / "authorized_keys").write_text((keys / "client_key.pub").read_text())
        self.port = free_port()
        config = keys / "sshd_config"
        config.write_text("\n".join([
            f"ListenAddress 127.0.0.1:{self.port}", f"HostKey {keys / 'host_key'}",
            f"AuthorizedKeysFile {keys / 'authorized_keys'}", f"PidFile {keys / 'sshd.pid'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no",
            "Subsystem sftp internal-sftp", ""]))
        # sshd refuses to start without its privilege separation directory (a fresh container
        # has none; the package creates it at boot).
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.client_key = keys / "client_key"
        self.sshd_log = open(self.work / "sshd.log", "w")
        self.sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=self.sshd_log,
                                     stderr=subprocess.STDOUT)

        def listening():
            if self.sshd.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.work / 'sshd.log').read_text()}")
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0
        wait_for(listening, 10, "sshd to listen")

    def _mount(self):
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        options = ",".join([f"IdentityFile={self.client_key}", "StrictHostKeyChecking=no",
                            "UserKnownHostsFile=/dev/null", "BatchMode=yes", "LogLevel=ERROR"])
        self.sshfs_log = open(self.work / "sshfs.log", "w")
        # -f: in the foreground, so the test holds its process (and can kill it).
        self.sshfs = subprocess.Popen(["sshfs", "-f", "-p", str(self.port), "-o", options,
                                       f"127.0.0.1:{self.source}", str(self.mountpoint)],
                                      stdout=self.sshfs_log, stderr=subprocess.STDOUT)

        def mounted():
            if self.sshfs.poll() is not None:
                raise RuntimeError(f"sshfs exited: {(self.work / 'sshfs.log').read_text()}")
            return os.path.ismount(self.mountpoint)
        wait_for(mounted, 15, "the sshfs mount")

    def kill_sshfs(self):
        """The network file system goes away mid-run: the FUSE server dies (reads then fail with
        ENOTCONN, 'Transport endpoint is not connected')."""
        if self.sshfs and self.sshfs.poll() is None:
            self.sshfs.kill()
            self.sshfs.wait()

    def stop(self):
        if os.path.ismount(self.mountpoint) or self.sshfs is not None:
            subprocess.run(["fusermount3", "-uz", str(self.mountpoint)], capture_output=True)
        for proc in (self.sshfs, self.sshd):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
