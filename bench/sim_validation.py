#!/usr/bin/env python3
"""Simulator vs formula, and the simulator's cost (docs/model.md "Simulation", docs/benchmarks.md
"Simulator vs formula" and "Simulated resnet50 at 1,000 ranks").

1. All-reduce: for each worker count, `trainscale-sim bench allreduce` runs the algorithms on the
   cluster file's platform (one rank per node) and prints each size's simulated time beside
   `trainscale predict`'s formula for the same placement; the ratio simulated / formula is the
   figure (the ring on a star is the BKT all-reduce: it should be within 10%).
2. Steps (--steps-workers, empty to skip): `trainscale-sim run` of resnet50 (the material's batch
   of 10 per process, one process per node) with each --step-algorithms all-reduce, one
   simulated step, and the host's wall time and peak memory for it.

Results: OUT_DIR/<git sha>/allreduce.csv, steps.csv, the run files, and OUT_DIR/<git sha>.md
(the tables, the commands, the machine: CPU model and the load average before and after, since
the machine is shared and the wall times depend on it). Not a pass/fail test.

  bench/sim_validation.py [--cluster configs/clusters/skylake-8180m.yaml] [--workers 4,16,64,256,1000]
                          [--sizes 64K,1M,16M] [--algorithms ring] [--steps-workers 1000]
                          [--step-algorithms tree,ring] [--out-dir reports/sim]

Environment: TRAINSCALE_SIM_BINARY (default build/bin/trainscale-sim). Exit 0 when every point
finished, 1 otherwise.
"""
import argparse
import csv
import os
import pathlib
import re
import subprocess
import sys
import time

import h5py

REPO = pathlib.Path(__file__).resolve().parents[1]
SIM = pathlib.Path(os.environ.get("TRAINSCALE_SIM_BINARY", REPO / "build" / "bin" / "trainscale-sim")).resolve()


def git_sha():
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return out.stdout.strip() or "unknown"


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def load_average():
    return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])


def timed(cmd, log):
    """Runs cmd under /usr/bin/time -v; returns (returncode, wall s, peak RSS MiB, stdout)."""
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-v"] + [str(c) for c in cmd], capture_output=True, text=True, cwd=REPO)
    wall = time.monotonic() - start
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    log.write("$ " + " ".join(str(c) for c in cmd) + "\n" + proc.stdout + proc.stderr + "\n")
    return proc.returncode, wall, (int(rss.group(1)) / 1024 if rss else float("nan")), proc.stdout


def allreduce_points(args, out, log):
    rows, ok = [], True
    sizes = args.sizes.split(",")
    for w in [int(x) for x in args.workers.split(",") if x]:
        csv_path = out / f"allreduce-{w}.csv"
        cmd = [SIM, "bench", "allreduce", "--cluster", args.cluster, "--workers", w, "--algorithms", args.algorithms,
               "--min-bytes", sizes[0], "--max-bytes", sizes[-1], "--factor", args.factor, "--csv", csv_path]
        rc, wall, rss, _ = timed(cmd, log)
        if rc != 0:
            print(f"workers {w}: trainscale-sim failed ({rc}); see {out / 'log.txt'}", file=sys.stderr)
            ok = False
            continue
        for r in csv.DictReader(csv_path.open()):
            r.update(host_wall_s=f"{wall:.1f}", host_peak_rss_mib=f"{rss:.0f}")
            rows.append(r)
            print(f"{w:5d} ranks {int(r['bytes']):>10d} B {r['algorithm']:>5s}: simulated {float(r['simulated_s']):.4g} s, "
                  f"formula {float(r['formula_s']):.4g} s, ratio {float(r['ratio']):.4f} (host {wall:.0f} s)", flush=True)
    return rows, ok


def step_points(args, out, log):
    rows, ok = [], True
    for w in [int(x) for x in args.steps_workers.split(",") if x]:
        for algorithm in args.step_algorithms.split(","):
            run_dir = out / f"runs-{w}-{algorithm}"
            cmd = [SIM, "run", "--config", REPO / "configs" / "runs" / "resnet50_synthetic.yaml", "--cluster", args.cluster,
                   "--workers", w, "--set", "batch_per_worker=10", "--set", "threads=56", "--set",
                   f"dist.allreduce={algorithm}", "--steps", 1, "--out", run_dir]
            rc, wall, rss, _ = timed(cmd, log)
            files = list(run_dir.glob("*.h5"))
            if rc != 0 or not files:
                print(f"resnet50 {w} ranks {algorithm}: trainscale-sim failed ({rc})", file=sys.stderr)
                ok = False
                continue
            with h5py.File(files[0], "r") as f:
                s = f["summary"].attrs
                row = {"workers": w, "algorithm": algorithm, "step_s": s["step_time_median"],
                       "predicted_step_s": s["predicted_step_time"], "comm_s": float(f["timing/comm"][...].max()),
                       "images_per_s": s["images_per_s"], "host_wall_s": f"{wall:.0f}", "host_peak_rss_mib": f"{rss:.0f}"}
            rows.append(row)
            print(f"resnet50 {w} ranks {algorithm}: step {row['step_s']:.4g} s (model {row['predicted_step_s']:.4g}), "
                  f"host {wall:.0f} s, {rss:.0f} MiB", flush=True)
    return rows, ok


def write_csv(path, rows):
    if not rows:
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def markdown(args, sha, machine, allreduce_rows, step_rows):
    lines = [f"# Simulator vs formula ({sha})", "", f"Machine: {machine}", "",
             "Command: `" + " ".join(sys.argv) + "`", "",
             "| ranks | bytes | algorithm | simulated (s) | formula (s) | simulated / formula | host wall (s) |",
             "|---:|---:|---|---:|---:|---:|---:|"]
    for r in allreduce_rows:
        lines.append(f"| {r['workers']} | {r['bytes']} | {r['algorithm']} | {float(r['simulated_s']):.4g} | "
                     f"{float(r['formula_s']):.4g} | {float(r['ratio']):.4f} | {r['host_wall_s']} |")
    if step_rows:
        lines += ["", "| resnet50, ranks | all-reduce | simulated step (s) | model step (s) | comm (s) | images/s | "
                  "host wall (s) | host peak RSS (MiB) |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for r in step_rows:
            lines.append(f"| {r['workers']} | {r['algorithm']} | {r['step_s']:.4g} | {r['predicted_step_s']:.4g} | "
                         f"{r['comm_s']:.4g} | {r['images_per_s']:.0f} | {r['host_wall_s']} | {r['host_peak_rss_mib']} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cluster", default=str(REPO / "configs" / "clusters" / "skylake-8180m.yaml"))
    p.add_argument("--workers", default="4,16,64,256,1000")
    p.add_argument("--sizes", default="64K,1M,16M", help="smallest,...,largest (the factor between them is --factor)")
    p.add_argument("--factor", default="16")
    p.add_argument("--algorithms", default="ring")
    p.add_argument("--steps-workers", default="1000")
    p.add_argument("--step-algorithms", default="tree,ring")
    p.add_argument("--out-dir", default=str(REPO / "reports" / "sim"))
    args = p.parse_args()
    if not SIM.exists():
        sys.exit(f"{SIM} is missing: build it (scripts/build.sh with libsimgrid-dev installed)")
    sha = git_sha()
    out = pathlib.Path(args.out_dir) / sha
    out.mkdir(parents=True, exist_ok=True)
    before = load_average()
    with (out / "log.txt").open("w") as log:
        allreduce_rows, ok1 = allreduce_points(args, out, log)
        step_rows, ok2 = step_points(args, out, log)
    machine = f"{cpu_model()}, {os.cpu_count()} CPUs, load average {before} before, {load_average()} after"
    write_csv(out / "allreduce.csv", allreduce_rows)
    write_csv(out / "steps.csv", step_rows)
    text = markdown(args, sha, machine, allreduce_rows, step_rows)
    (pathlib.Path(args.out_dir) / f"{sha}.md").write_text(text)
    print(text)
    return 0 if ok1 and ok2 else 1


if __name__ == "__main__":
    sys.exit(main())
