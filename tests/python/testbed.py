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
import subprocess

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
        """The command line that starts `binary args` on `layout` from the first host."""
        binary = binary or require_binary()
        return self.on_host(self.hosts[0], self.launcher(layout, flavor_of(binary)) + [binary] + list(args))

    def mpirun(self, layout: list[int], args, timeout=300, binary=None) -> subprocess.CompletedProcess:
        return subprocess.run(self.job(layout, [str(a) for a in args], binary), capture_output=True, text=True,
                              env=self.launch_env, timeout=timeout, cwd=REPO)

    def popen(self, layout: list[int], args, binary=None) -> subprocess.Popen:
        return subprocess.Popen(self.job(layout, [str(a) for a in args], binary), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=self.launch_env, cwd=REPO,
                                start_new_session=True)
