"""The multi-host test bed (scripts/testbed.sh, docs/multihost.md) for pytest: hosts in network
namespaces with their own hostname, IP and node-local scratch, and the MPI launchers of both
flavors started on the first host and reaching the others through the bed's agent, so ranks on
different hosts talk TCP and ranks of one host share memory.

The tests' bed has its own state directory, host prefix and subnet, so a bed a person has up
(scripts/testbed.sh up) is left alone. Without root, or where network namespaces cannot be made,
`unavailable()` says why and the tests skip with that reason."""
from __future__ import annotations

import functools
import os
import pathlib
import shlex
import shutil
import signal
import subprocess

import pytest

from trainscale_cli import REPO, env, require_binary

SCRIPT = REPO / "scripts" / "testbed.sh"
BED_ENV = {
    "TRAINSCALE_TESTBED_DIR": "/run/trainscale-testbed-pytest",
    "TRAINSCALE_TESTBED_PREFIX": "tstest",
    "TRAINSCALE_TESTBED_SUBNET": "10.216.0",
}


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why this machine cannot hold the test bed, or None."""
    if os.geteuid() != 0:
        return "the multi-host tests need root (ip netns, unshare, tc): run them as root"
    for tool in ("ip", "tc", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"'{tool}' is missing (scripts/setup.sh installs iproute2 and util-linux)"
    probe = subprocess.run(["ip", "netns", "add", "tstestprobe"], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", "tstestprobe"], capture_output=True)
    if probe.returncode != 0:
        return f"network namespaces cannot be made here (ip netns add: {probe.stderr.strip()})"
    return None


# Debian 12's MPICH 4.0.2 (ch4:ucx, UCX 1.13) with two ranks on each of two hosts here: MPI_Finalize
# deadlocks in about four runs of five (one rank waits in UCX's endpoint close for a peer that went
# on into hydra's PMI barrier), and the 4 ranks' busy polling on 2 cores slows TCP to 25-75 img/s
# for a run that does 6,000 on 2 x 1. trainscale bounds the finalize (dist/bounded_finalize.h), but
# hydra then sometimes ends the job with 255. docs/multihost.md "MPICH across hosts".
MPICH_RANKS_PER_HOST_REASON = ("MPICH 4.0.2 over UCX 1.13 (Debian 12) deadlocks in MPI_Finalize with 2 ranks per host "
                               "across the test bed's hosts (docs/multihost.md \"MPICH across hosts\"); this layout "
                               "runs under Open MPI and Intel MPI")


def layout_unsupported(layout: list[int], flavor: str) -> str | None:
    """Why `flavor` cannot run `layout` (ranks per host) reliably on the bed, or None."""
    if flavor == "mpich" and max(layout) > 1 and sum(1 for n in layout if n > 0) > 1:
        return MPICH_RANKS_PER_HOST_REASON
    return None


@functools.lru_cache(maxsize=4)
def flavor_of(binary: pathlib.Path) -> str:
    proc = subprocess.run([str(binary), "info"], capture_output=True, text=True, env=env(), timeout=60)
    for line in proc.stdout.splitlines():
        if line.startswith("mpi_flavor_built:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("trainscale info does not name mpi_flavor_built:\n" + proc.stdout + proc.stderr)


class Testbed:
    """`hosts` hosts up (scripts/testbed.sh up) until down()."""

    def __init__(self, hosts: int, ranks_per_host: int = 2, rate: str = "off"):
        self.script_env = {**os.environ, **BED_ENV}
        self.dir = pathlib.Path(BED_ENV["TRAINSCALE_TESTBED_DIR"])
        proc = subprocess.run([str(SCRIPT), "up", str(hosts), "--ranks-per-host", str(ranks_per_host), "--rate", rate],
                              capture_output=True, text=True, env=self.script_env, timeout=120)
        assert proc.returncode == 0, f"scripts/testbed.sh up failed:\n{proc.stdout}{proc.stderr}"
        self.hosts = (self.dir / "hosts").read_text().split()
        self.agent = self.dir / "agent"
        self.scratch = self.dir / "scratch"
        self.launch_env = {**env(), **self._exports()}

    def _exports(self) -> dict:
        out = {}
        for line in (self.dir / "env.sh").read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line[len("export "):].partition("=")
                out[key] = value.strip('"')
        return out

    def down(self):
        subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, env=self.script_env, timeout=120)

    def shape(self, rate: str):
        proc = subprocess.run([str(SCRIPT), "shape", str(rate)], capture_output=True, text=True, env=self.script_env,
                              timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def on_host(self, host: str, argv) -> list[str]:
        """The command line that runs `argv` on `host` (in the current directory)."""
        return [str(self.agent), host, " ".join(shlex.quote(str(a)) for a in argv)]

    def exec(self, host: str, argv, timeout=60) -> subprocess.CompletedProcess:
        return subprocess.run(self.on_host(host, argv), capture_output=True, text=True, env=self.launch_env,
                              timeout=timeout, cwd=REPO)

    def launcher(self, layout: list[int], flavor: str) -> list[str]:
        """The flavor's launcher for `layout[i]` ranks on host i, without the program."""
        hosts = ",".join(f"{h}:{n}" for h, n in zip(self.hosts, layout) if n > 0)
        np_ = str(sum(layout))
        if flavor == "mpich":
            return [shutil.which("mpiexec.mpich") or "mpiexec.mpich", "-hosts", hosts, "-n", np_]
        if flavor == "intel":  # Intel's hydra reads HYDRA_LAUNCHER(_EXEC) as MPICH's does, not host:count
            assert len(set(layout)) == 1, f"Intel MPI's -ppn places equal counts per host, not {layout}"
            names = ",".join(self.hosts[:len(layout)])
            return [str(REPO / "scripts" / "impi-mpirun"), "-hosts", names, "-ppn", str(layout[0]), "-n", np_]
        # --bind-to none: every host has this machine's cores; bound ranks of two hosts would share one.
        return [shutil.which("mpirun.openmpi") or "mpirun", "--host", hosts, "-np", np_, "--bind-to", "none"]

    def job(self, layout: list[int], args, binary: pathlib.Path | None = None) -> list[str]:
        """The command line that starts `binary args` on `layout` from the first host; skips the
        test where the binary's flavor cannot run the layout here (layout_unsupported)."""
        binary = binary or require_binary()
        reason = layout_unsupported(layout, flavor_of(binary))
        if reason:
            pytest.skip(reason)
        return self.on_host(self.hosts[0], self.launcher(layout, flavor_of(binary)) + [binary] + list(args))

    def mpirun(self, layout: list[int], args, timeout=120, binary=None) -> subprocess.CompletedProcess:
        """Runs the job to its end; past `timeout` every process of it, on every host, is killed
        (a hung rank would otherwise spin on through the tests after it) and TimeoutExpired raised."""
        argv = self.job(layout, [str(a) for a in args], binary)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.launch_env,
                                cwd=REPO, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_jobs(proc)
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def kill_jobs(self, proc: subprocess.Popen | None = None):
        """Kills `proc`'s process group and everything running on the hosts but their holders."""
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        holders = {(self.dir / "ns" / f"{h}.pid").read_text().strip() for h in self.hosts}
        for host in self.hosts:
            pids = subprocess.run(["ip", "netns", "pids", host], capture_output=True, text=True).stdout.split()
            for pid in set(pids) - holders:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def popen(self, layout: list[int], args, binary=None) -> subprocess.Popen:
        return subprocess.Popen(self.job(layout, [str(a) for a in args], binary), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=self.launch_env, cwd=REPO,
                                start_new_session=True)
