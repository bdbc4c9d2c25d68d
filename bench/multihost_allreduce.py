#!/usr/bin/env python3
"""All-reduce across real host boundaries (docs/multihost.md "All-reduce across hosts"):
`trainscale bench allreduce` on test beds of --layouts (HOSTSxRANKS per host; scripts/testbed.sh)
over links shaped to each of --rates (tbf, Gbit/s; `off` = the unshaped veth), under each MPI
flavor of --flavors (Open MPI, MPICH, Intel MPI: their own MPI_Allreduce as `mpi` beside the
project's ring, tree, butterfly and hierarchical shm), with the link's own rate measured beside
them in the same bed: iperf3 with every host sending to the next at once (the ring's pattern),
the median per-flow rate. busbw at the largest size is compared with that rate and with the
nominal one.

Writes OUT_DIR/allreduce.json (every table row of every run, the link rates, machine, commit,
command), OUT_DIR/allreduce.md (busbw at --max-bytes against the link, and the average busbw over
the sizes from 1 MiB, per layout, rate, flavor and algorithm) and each run's bench file under
OUT_DIR/allreduce/. Not a pass/fail test. Needs root (the test bed).

  bench/multihost_allreduce.py [--layouts 2x1,4x1,2x2] [--rates 1,10,25,off]
      [--flavors openmpi,mpich,intel] [--algorithms mpi,ring,tree,butterfly,shm]
      [--min-bytes 1K] [--max-bytes 64M] [--factor 4] [--iters 5] [--out-dir reports/multihost]
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

import h5py

REPO = pathlib.Path(__file__).resolve().parents[1]
TESTBED = REPO / "scripts" / "testbed.sh"
BED = {"TRAINSCALE_TESTBED_DIR": "/run/trainscale-testbed-bench", "TRAINSCALE_TESTBED_PREFIX": "tsbench",
       "TRAINSCALE_TESTBED_SUBNET": "10.217.0"}
BINARIES = {"openmpi": REPO / "build/bin/trainscale", "mpich": REPO / "build-mpich/bin/trainscale",
            "intel": REPO / "build-impi/bin/trainscale"}


def sh(cmd, env=None, check=True, timeout=3600):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


class Bed:
    def __init__(self, hosts, per_host):
        self.env = {**os.environ, **BED}
        sh([TESTBED, "up", hosts, "--ranks-per-host", per_host], env=self.env)
        state = pathlib.Path(BED["TRAINSCALE_TESTBED_DIR"])
        self.hosts = (state / "hosts").read_text().split()
        self.per_host = per_host
        self.agent = state / "agent"
        self.subnet = BED["TRAINSCALE_TESTBED_SUBNET"]
        exports = {}
        for line in (state / "env.sh").read_text().splitlines():
            if line.startswith("export "):
                k, _, v = line[len("export "):].partition("=")
                exports[k] = v.strip('"')
        self.launch_env = {**self.env, **exports, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                           "OMP_NUM_THREADS": "1"}

    def on(self, host, argv, timeout=3600, check=True):
        words = " ".join(f"'{a}'" for a in map(str, argv))
        return sh([self.agent, host, words], env=self.launch_env, timeout=timeout, check=check)

    def launcher(self, flavor):
        n = str(len(self.hosts) * self.per_host)
        if flavor == "mpich":
            return ["mpiexec.mpich", "-hosts", ",".join(f"{h}:{self.per_host}" for h in self.hosts), "-n", n]
        if flavor == "intel":
            return [REPO / "scripts/impi-mpirun", "-hosts", ",".join(self.hosts), "-ppn", self.per_host, "-n", n]
        return ["mpirun", "--host", ",".join(f"{h}:{self.per_host}" for h in self.hosts), "-np", n, "--bind-to", "none"]

    def link_rate_gbps(self, seconds=3):
        """iperf3 with every host sending to the next at once: the median per-flow Gbit/s."""
        n = len(self.hosts)
        for h in self.hosts:
            self.on(h, ["iperf3", "-s", "-D", "-1", "-p", "5299"])
        time.sleep(0.5)
        clients = []
        for i, h in enumerate(self.hosts):
            peer = f"{self.subnet}.{11 + (i + 1) % n}"
            words = f"'iperf3' '-c' '{peer}' '-p' '5299' '-t' '{seconds}' '-J'"
            clients.append(subprocess.Popen([str(self.agent), h, words], stdout=subprocess.PIPE, text=True,
                                            env=self.launch_env))
        rates = []
        for c in clients:
            out, _ = c.communicate(timeout=60)
            rates.append(json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e9)
        return statistics.median(rates), rates

    def down(self):
        sh([TESTBED, "down"], env=self.env, check=False)


# `bench allreduce` prints one block per algorithm ("# algorithm NAME: ..."), each row: size, count,
# type, redop, time, algbw, busbw, #wrong, then the slowest rank's call min, max, stdev and vs_mpi.
BLOCK = re.compile(r"^# algorithm (\w+): ")
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+float\s+sum\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)"
                 r"\s+([\d.]+)\s+(\S+)\s*$")


def parse_table(text):
    rows, algorithm = [], None
    for line in text.splitlines():
        b = BLOCK.match(line)
        if b:
            algorithm = b[1]
        m = ROW.match(line)
        if m and algorithm:
            rows.append({"bytes": int(m[1]), "algorithm": algorithm, "time_avg_us": float(m[3]),
                         "algbw_gbs": float(m[4]), "busbw_gbs": float(m[5]), "wrong": int(m[6]),
                         "call_min_us": float(m[7]), "call_max_us": float(m[8]), "call_stdev_us": float(m[9])})
    return rows


def markdown(doc):
    lines = [f"# All-reduce across hosts on the test bed ({doc['date']})", "",
             f"Machine: {doc['machine']}; commit {doc['commit']}. Command: `{doc['command']}`.",
             "busbw = algbw x 2(n-1)/n (GB/s, 1e9 bytes/s); link = iperf3's median per-flow rate with every host "
             "sending to the next at once, measured in the same bed right before; nominal = the tbf rate.", ""]
    largest = max(r["bytes"] for run in doc["runs"] for r in run["rows"])
    lines += [f"## busbw at {largest / 2**20:.0f} MiB, % of the measured link (% of nominal)", "",
              "| layout | link | flavor | link measured Gbit/s | " + " | ".join(doc["algorithms"]) + " |",
              "|---|---|---|---|" + "---|" * len(doc["algorithms"])]
    for run in doc["runs"]:
        link_gbs = run["link_gbps"] / 8
        cells = []
        for a in doc["algorithms"]:
            r = [x for x in run["rows"] if x["algorithm"] == a and x["bytes"] == largest]
            if not r:
                cells.append("")
                continue
            bw = r[0]["busbw_gbs"]
            nominal = "" if run["rate"] == "off" else f" ({bw / (float(run['rate']) / 8) * 100:.0f}%)"
            cells.append(f"{bw:.3f}: {bw / link_gbs * 100:.0f}%{nominal}")
        lines.append(f"| {run['layout']} | {run['rate']} | {run['flavor']} | {run['link_gbps']:.2f} | " + " | ".join(cells) + " |")
    lines += ["", "## Average busbw (GB/s) over the sizes from 1 MiB", "",
              "| layout | link | flavor | " + " | ".join(doc["algorithms"]) + " |", "|---|---|---|" + "---|" * len(doc["algorithms"])]
    for run in doc["runs"]:
        cells = []
        for a in doc["algorithms"]:
            v = [x["busbw_gbs"] for x in run["rows"] if x["algorithm"] == a and x["bytes"] >= 2**20]
            cells.append(f"{statistics.mean(v):.3f}" if v else "")
        lines.append(f"| {run['layout']} | {run['rate']} | {run['flavor']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layouts", default="2x1,4x1,2x2")
    ap.add_argument("--rates", default="1,10,25,off")
    ap.add_argument("--flavors", default="openmpi,mpich,intel")
    ap.add_argument("--algorithms", default="mpi,ring,tree,butterfly,shm")
    ap.add_argument("--min-bytes", default="1K")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--factor", default="4")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--out-dir", default="reports/multihost")
    args = ap.parse_args()
    out = (REPO / args.out_dir).resolve()
    (out / "allreduce").mkdir(parents=True, exist_ok=True)
    flavors = [f for f in args.flavors.split(",") if BINARIES[f].exists()]
    runs = []
    for layout in args.layouts.split(","):
        hosts, per_host = (int(x) for x in layout.split("x"))
        bed = Bed(hosts, per_host)
        try:
            for rate in args.rates.split(","):
                sh([TESTBED, "shape", rate], env=bed.env)
                link, flows = bed.link_rate_gbps()
                for flavor in flavors:
                    h5 = out / "allreduce" / f"{layout}-{rate}-{flavor}.h5"
                    proc = bed.on(bed.hosts[0], bed.launcher(flavor) + [
                        BINARIES[flavor], "bench", "allreduce", "--algorithms", args.algorithms, "--min-bytes",
                        args.min_bytes, "--max-bytes", args.max_bytes, "--factor", args.factor, "--iters", args.iters,
                        "--warmup", 1, "--out", h5])
                    rows = parse_table(proc.stdout)
                    with h5py.File(h5, "r") as f:
                        version = f.attrs["mpi_version"]
                    runs.append({"layout": layout, "hosts": hosts, "ranks_per_host": per_host, "rate": rate,
                                 "flavor": flavor, "mpi_version": str(version), "link_gbps": link, "link_flows_gbps": flows,
                                 "rows": rows, "file": os.path.relpath(h5, REPO)})
                    best = max((r for r in rows if r["bytes"] == max(x["bytes"] for x in rows)), key=lambda r: r["busbw_gbs"])
                    print(f"{layout} {rate:>3} {flavor:8s} link {link:6.2f} Gbit/s; best at the largest size: "
                          f"{best['algorithm']} {best['busbw_gbs']:.3f} GB/s ({best['busbw_gbs'] * 8 / link * 100:.0f}% of the link)",
                          flush=True)
        finally:
            bed.down()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    doc = {"runs": runs, "algorithms": args.algorithms.split(","), "machine": f"{cpu}, {os.cpu_count()} CPUs",
           "commit": sh(["git", "rev-parse", "--short", "HEAD"]).stdout.strip(), "date": datetime.date.today().isoformat(),
           "command": " ".join(sys.argv)}
    (out / "allreduce.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "allreduce.md").write_text(markdown(doc))
    print(f"wrote {out / 'allreduce.json'} and allreduce.md")


if __name__ == "__main__":
    main()
