#!/usr/bin/env python3
"""The performance model and the simulator against training runs across real host boundaries
(docs/multihost.md "Model and simulator on the test bed", docs/model.md "Validation").

On a test bed of --hosts hosts with one rank each (scripts/testbed.sh; one thread per rank, so the
ranks of the bed never share a core of this machine), for each link rate of --rates (tbf shaping
in Gbit/s, `off` = the unshaped veth) and each --cases run: `trainscale calibrate` runs across the
hosts right before the run (the network's alpha and bandwidth by ping-pong, every all-reduce's
alpha-beta fit, the node and the run's model's layers at the run's batch) into a cluster file of the bed at that
rate, so that a machine whose speed drifts within minutes (a cloud guest) is measured as the
run finds it; then the run trains across the hosts (`trainscale run`, synthetic data, --steps
steps), is predicted (`trainscale predict --workers-per-node 1`) and simulated (`trainscale-sim
run --workers-per-node 1`) on that cluster file. Measured = the median step (slowest rank per step) after --warmup steps; predicted = the
model's step; simulated = the median step of a 41-step simulated run (its ranks draw the calibrated
compute noise per step, so the median of the slowest rank's steps needs more than a few).

Writes OUT_DIR/validation.json ({"points": [{config, hosts, link_gbps, measured_step_s,
predicted_step_s, simulated_step_s, ...}], machine, command}), OUT_DIR/validation.md (the table
and the median |error| of model and simulator) and the cluster files, run files, prediction files
and simulated runs under OUT_DIR/work/. Not a pass/fail test. Needs root (the test bed).

  bench/multihost_validation.py [--hosts 2] [--rates 1,10,off] [--steps 30] [--warmup 5]
      [--cases lenet:32,lenet:128,mlp:32,mlp:256,resnet20:32] [--budget-s 15] [--out-dir reports/multihost]
"""
import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys

import h5py
import numpy as np
import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
BINARY = REPO / "build" / "bin" / "trainscale"
SIM = REPO / "build" / "bin" / "trainscale-sim"
TESTBED = REPO / "scripts" / "testbed.sh"
BED = {"TRAINSCALE_TESTBED_DIR": "/run/trainscale-testbed-bench", "TRAINSCALE_TESTBED_PREFIX": "tsbench",
       "TRAINSCALE_TESTBED_SUBNET": "10.217.0"}


def sh(cmd, env=None, check=True, timeout=1800):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


class Bed:
    def __init__(self, hosts):
        self.env = {**os.environ, **BED}
        sh([TESTBED, "up", hosts, "--ranks-per-host", 1], env=self.env)
        state = pathlib.Path(BED["TRAINSCALE_TESTBED_DIR"])
        self.hosts = (state / "hosts").read_text().split()
        self.agent = state / "agent"
        exports = {}
        for line in (state / "env.sh").read_text().splitlines():
            if line.startswith("export "):
                k, _, v = line[len("export "):].partition("=")
                exports[k] = v.strip('"')
        self.launch_env = {**self.env, **exports, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                           "OMP_NUM_THREADS": "1"}

    def shape(self, rate):
        sh([TESTBED, "shape", rate], env=self.env)

    def mpirun(self, args, timeout=1800):
        """`args` on one rank per host, launched from the first host."""
        launcher = ["mpirun", "--host", ",".join(self.hosts), "-np", str(len(self.hosts)), "--bind-to", "none"]
        words = " ".join(f"'{a}'" for a in launcher + [str(a) for a in args])
        return sh([self.agent, self.hosts[0], words], env=self.launch_env, timeout=timeout)

    def down(self):
        sh([TESTBED, "down"], env=self.env, check=False)


def config_text(model, batch, hosts, steps):
    return (f"model: {model}\ndataset: {{name: synthetic, synthetic_samples: 4096}}\nbatch_per_worker: {batch}\n"
            f"steps: {steps}\nthreads: 1\nworkers: {hosts}\ndist: {{strategy: sync, allreduce: ring, overlap: true}}\n"
            f"eval: {{every_epochs: 0}}\nlog_every: 1000\n")


def median_step(run_file, warmup):
    with h5py.File(run_file, "r") as f:
        step = f["timing/step"][:]  # [S, R]: the step waits for its slowest rank
    return float(np.median(step.max(axis=1)[warmup:]))


def calibrated(bed, args, work, rate, name, model, batch):
    """A cluster file of the bed at this rate, measured now: the network, the fits, `model`'s layers
    at the run's minibatch (a layer's efficiency depends on it)."""
    cluster = work / "clusters" / f"{name}.yaml"
    cluster.parent.mkdir(parents=True, exist_ok=True)
    bed.mpirun([BINARY, "calibrate", "--out", cluster, "--name", f"testbed-{rate}", "--threads", 1,
                "--models", model, "--batch", batch, "--budget-s", args.budget_s])
    return cluster


def one_point(bed, args, work, rate, model, batch):
    name = f"{model}-b{batch}-{len(bed.hosts)}h-{rate}"
    cluster = calibrated(bed, args, work, rate, name, model, batch)
    cfg = work / "configs" / f"{name}.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(config_text(model, batch, len(bed.hosts), args.steps))
    runs = work / "runs" / name
    runs.mkdir(parents=True, exist_ok=True)
    bed.mpirun([BINARY, "run", "--config", cfg, "--out", runs])
    measured = median_step(next(runs.glob("*.h5")), args.warmup)
    pred_file = work / "predict" / f"{name}.h5"
    pred_file.parent.mkdir(parents=True, exist_ok=True)
    sh([BINARY, "predict", "--config", cfg, "--cluster", cluster, "--workers", len(bed.hosts), "--workers-per-node", 1,
        "--out", pred_file])
    with h5py.File(pred_file, "r") as f:
        p = f["predict"]
        predicted = {k: float(p[k][0]) for k in ("step_time", "compute", "comm", "exposed_comm")}
    sim_dir = work / "sim" / name
    sim_dir.mkdir(parents=True, exist_ok=True)
    sh([SIM, "run", "--config", cfg, "--cluster", cluster, "--workers", len(bed.hosts), "--workers-per-node", 1,
        "--steps", 41, "--out", sim_dir])
    simulated = median_step(next(sim_dir.glob("*.h5")), 1)
    row = {"config": f"{model} batch {batch}, sync ring overlap, 1 thread per rank", "model": model, "batch": batch,
           "hosts": len(bed.hosts), "link_gbps": None if rate == "off" else float(rate), "link": rate,
           "measured_step_s": measured, "predicted_step_s": predicted["step_time"], "simulated_step_s": simulated,
           "predicted_comm_s": predicted["comm"], "predicted_exposed_comm_s": predicted["exposed_comm"],
           "predicted_compute_s": predicted["compute"],
           "model_error": (predicted["step_time"] - measured) / measured, "sim_error": (simulated - measured) / measured,
           "cluster_file": os.path.relpath(cluster, REPO),
           "network": yaml.safe_load(cluster.read_text())["interconnect"]["levels"][-1]}
    print(f"{name:28s} measured {measured * 1e3:8.2f} ms  model {predicted['step_time'] * 1e3:8.2f} ms "
          f"({row['model_error'] * 100:+6.1f}%)  sim {simulated * 1e3:8.2f} ms ({row['sim_error'] * 100:+6.1f}%)", flush=True)
    return row


def markdown(doc):
    pts = doc["points"]
    lines = [f"# Model and simulator against measured steps on the test bed ({doc['date']})", "",
             f"Machine: {doc['machine']}; commit {doc['commit']}. Command: `{doc['command']}`.",
             f"{pts[0]['hosts']} hosts of scripts/testbed.sh, one rank and one thread each, sync ring with overlap; "
             "each point's cluster file is `trainscale calibrate` across the hosts at that rate, right before its run.", "",
             "| config | hosts | link | measured ms | model ms | error | simulated ms | error | model comm (exposed) ms |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p in pts:
        lines.append(f"| {p['model']} b{p['batch']} | {p['hosts']} | {p['link']}{'' if p['link'] == 'off' else ' Gbit/s'} | "
                     f"{p['measured_step_s'] * 1e3:.2f} | {p['predicted_step_s'] * 1e3:.2f} | {p['model_error'] * 100:+.1f}% | "
                     f"{p['simulated_step_s'] * 1e3:.2f} | {p['sim_error'] * 100:+.1f}% | "
                     f"{p['predicted_comm_s'] * 1e3:.2f} ({p['predicted_exposed_comm_s'] * 1e3:.2f}) |")
    lines += ["", f"Median |error|: model {doc['median_abs_model_error'] * 100:.1f}%, simulator "
                  f"{doc['median_abs_sim_error'] * 100:.1f}% over {len(pts)} points (target: 10% each)."]
    for rate, net in doc["networks"].items():
        lines.append(f"- link {rate}: calibrated network alpha {net['alpha_us']:.1f} us, {net['bandwidth_gbps']:.3f} Gbit/s")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--rates", default="1,10,off")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cases", default="lenet:32,lenet:128,mlp:32,mlp:256,resnet20:32")
    ap.add_argument("--budget-s", type=float, default=15)
    ap.add_argument("--out-dir", default="reports/multihost")
    args = ap.parse_args()
    out = (REPO / args.out_dir).resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    bed = Bed(args.hosts)
    points, networks = [], {}
    try:
        for rate in args.rates.split(","):
            bed.shape(rate)
            for case in args.cases.split(","):
                model, batch = case.split(":")
                points.append(one_point(bed, args, work, rate, model, int(batch)))
            networks[rate] = points[-1]["network"]
    finally:
        bed.down()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = sh(["git", "rev-parse", "--short", "HEAD"]).stdout.strip()
    doc = {"points": points, "networks": networks, "machine": f"{cpu}, {os.cpu_count()} CPUs",
           "commit": commit, "date": datetime.date.today().isoformat(), "command": " ".join(sys.argv),
           "median_abs_model_error": statistics.median(abs(p["model_error"]) for p in points),
           "median_abs_sim_error": statistics.median(abs(p["sim_error"]) for p in points)}
    (out / "validation.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "validation.md").write_text(markdown(doc))
    print(f"median |error|: model {doc['median_abs_model_error'] * 100:.1f}%, simulator "
          f"{doc['median_abs_sim_error'] * 100:.1f}%; wrote {out / 'validation.json'} and validation.md")


if __name__ == "__main__":
    main()
