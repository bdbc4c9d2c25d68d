#!/usr/bin/env python3
"""Runs study 8 (configs/studies/network.yaml; scripts/run_study.sh network): the same runs over
the test bed's links at each rate, with the model's and the simulator's answers for them.

  scripts/study_network.py [--rates 1,10,25,off] [--hosts 2] [--out reports/studies/network]

1. A test bed of --hosts hosts, one rank each (scripts/testbed.sh, its default state directory,
   which configs/sites/testbed.yaml names), taken down at the end.
2. For each rate: the links shaped (tbf; `off` leaves the veth unshaped); the link's own rate
   measured with iperf3 (every host sending to the next at once, the median flow);
   `trainscale calibrate` across the hosts into OUT/clusters/testbed-<rate>.yaml (the network's
   alpha and bandwidth, the all-reduce fits, the node and the study's models); the sweep expanded
   as campaign network_<rate> against configs/sites/testbed.yaml and run by the local executor
   (campaigns/studies/network_<rate>), archived into OUT/network_<rate>; and every point of more
   than one worker predicted (`trainscale predict --workers-per-node 1`) and simulated
   (`trainscale-sim run --workers-per-node 1`) on that cluster file.
3. OUT/links.json: per rate the iperf3 rate and the calibrated network; OUT/predictions.json: per
   rate, model and workers the predicted and simulated step. `python -m trainscale_analysis
   network-study` turns them and the campaigns into the report.
Needs root. Exit 0 when every step ran (runs that failed are in their campaign's status).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import h5py
import numpy as np
import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "bin" / "trainscale"
SIM = REPO / "build" / "bin" / "trainscale-sim"
TESTBED = REPO / "scripts" / "testbed.sh"
STATE = pathlib.Path("/run/trainscale-testbed")  # configs/sites/testbed.yaml's paths
SUBNET = "10.213.0"


def sh(cmd, env=None, check=True, timeout=7200):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def bed_env():
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1"}
    for line in (STATE / "env.sh").read_text().splitlines():
        if line.startswith("export "):
            k, _, v = line[len("export "):].partition("=")
            env[k] = v.strip('"')
    return env


def on_host(host, argv, env, timeout=7200):
    return sh([STATE / "agent", host, " ".join(f"'{a}'" for a in map(str, argv))], env=env, timeout=timeout)


def link_rate(hosts, env):
    """iperf3, every host sending to the next at once: the median flow in Gbit/s."""
    for h in hosts:
        on_host(h, ["iperf3", "-s", "-D", "-1", "-p", "5298"], env)
    time.sleep(0.5)
    clients = [subprocess.Popen([str(STATE / "agent"), h, f"'iperf3' '-c' '{SUBNET}.{11 + (i + 1) % len(hosts)}' "
                                 f"'-p' '5298' '-t' '3' '-J'"], stdout=subprocess.PIPE, text=True, env=env)
               for i, h in enumerate(hosts)]
    return statistics.median(json.loads(c.communicate(timeout=60)[0])["end"]["sum_received"]["bits_per_second"] / 1e9
                             for c in clients)


def sim_step(run_dir):
    with h5py.File(next(pathlib.Path(run_dir).glob("*.h5")), "r") as f:
        return float(np.median(f["timing/step"][:].max(axis=1)[1:]))


def predictions(study, base, cluster, rate, work):
    """The model's and the simulator's step for every point of more than one worker."""
    out = []
    for model in study["matrix"]["model"]:
        for workers in study["matrix"]["workers"]:
            if workers < 2:
                continue
            cfg = work / f"{model}-{workers}.yaml"
            cfg.write_text(yaml.safe_dump({**base, "model": model, "workers": workers}, sort_keys=False))
            pred = work / f"{model}-{workers}-{rate}.h5"
            sh([BIN, "predict", "--config", cfg, "--cluster", cluster, "--workers", workers, "--workers-per-node", 1,
                "--out", pred])
            with h5py.File(pred, "r") as f:
                predicted = float(f["predict/step_time"][0])
            sim_dir = work / f"sim-{model}-{workers}-{rate}"
            sim_dir.mkdir(parents=True, exist_ok=True)
            sh([SIM, "run", "--config", cfg, "--cluster", cluster, "--workers", workers, "--workers-per-node", 1,
                "--steps", 5, "--out", sim_dir])
            out.append({"rate": rate, "model": model, "workers": workers, "predicted_step_s": predicted,
                        "simulated_step_s": sim_step(sim_dir)})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1,10,25,off")
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--out", default="reports/studies/network")
    args = ap.parse_args()
    out = REPO / args.out
    (out / "clusters").mkdir(parents=True, exist_ok=True)
    work = REPO / "campaigns" / "studies" / "network-work"
    work.mkdir(parents=True, exist_ok=True)
    study = yaml.safe_load((REPO / "configs/studies/network.yaml").read_text())
    base = yaml.safe_load((REPO / "configs/studies/network_base.yaml").read_text())
    py = REPO / ".venv" / "bin" / "python"
    sh([TESTBED, "up", args.hosts, "--ranks-per-host", 1])
    links, preds = {}, []
    try:
        env = bed_env()
        hosts = (STATE / "hosts").read_text().split()
        for rate in args.rates.split(","):
            sh([TESTBED, "shape", rate])
            measured = link_rate(hosts, env)
            cluster = out / "clusters" / f"testbed-{rate}.yaml"
            launcher = ["mpirun", "--host", ",".join(hosts), "-np", len(hosts), "--bind-to", "none"]
            on_host(hosts[0], launcher + [BIN, "calibrate", "--out", cluster, "--name", f"testbed-{rate}", "--threads", 1,
                                          "--models", ",".join(study["matrix"]["model"]), "--budget-s", 40], env)
            net = yaml.safe_load(cluster.read_text())["interconnect"]["levels"][-1]
            links[rate] = {"iperf3_gbps": measured, "alpha_us": net["alpha_us"], "bandwidth_gbps": net["bandwidth_gbps"]}
            print(f"link {rate}: iperf3 {measured:.2f} Gbit/s, calibrated alpha {net['alpha_us']:.1f} us, "
                  f"{net['bandwidth_gbps']:.2f} Gbit/s", flush=True)
            sweep = work / f"network_{rate}.yaml"
            sweep.write_text((REPO / "configs/studies/network.yaml").read_text()
                             .replace("campaign: network\n", f"campaign: network_{rate}\n")
                             .replace("base: network_base.yaml", f"base: {REPO / 'configs/studies/network_base.yaml'}"))
            camp = REPO / "campaigns" / "studies" / f"network_{rate}"
            sh([BIN, "sweep", "expand", sweep, "--site", REPO / "configs/sites/testbed.yaml", "--out", camp])
            submit = sh([BIN, "sweep", "submit", camp], check=False)
            print(submit.stdout.splitlines()[-1] if submit.stdout else submit.stderr, flush=True)
            sh([py, "-m", "trainscale_analysis", "archive", camp, "-o", out / f"network_{rate}"])
            preds += predictions(study, base, cluster, rate, work)
    finally:
        sh([TESTBED, "down"], check=False)
    (out / "links.json").write_text(json.dumps(links, indent=1) + "\n")
    (out / "predictions.json").write_text(json.dumps(preds, indent=1) + "\n")
    print(f"wrote {out / 'links.json'} and {out / 'predictions.json'}")


if __name__ == "__main__":
    sys.exit(main())
