#!/usr/bin/env python3
"""Peak memory of `trainscale run` on the ImageNet-sized zoo with default settings (issue 11's
memory bar, docs/benchmarks.md).

For each model (default resnet50 at batch 32, vgg16 and inception_v3 at batch 8) it runs

    trainscale run --config C --set model=M --set dataset.name=synthetic
                   --set batch_per_worker=B --set steps=2 --out DIR

under `/usr/bin/time -v`, C being a minimal config file written here (just `model: M`), so
every other setting is the binary's default. If the binary refuses that command as a
configuration error (exit 2) it is tried once more with `--set dataset.format=synthetic`
added, and the record says so and keeps the refusal message. Recorded per model: peak RSS
(time's "Maximum resident set size"), wall time, user and system time, exit status, and
whether the memory cap stopped it.

Memory cap: a watchdog reads the resident set of the run every 50 ms and kills it with SIGKILL
when it passes --cap-gb (default 8 GB), so a binary that would need tens of GB (trainscale
before issue 11, with the default eval.batch of 1000 at 224x224) is reported as "killed at cap"
instead of running the shared machine out of memory. The cap is on resident memory, not on
address space (`prlimit --as` would also count the virtual reservations of threads and
allocators and stop runs that fit); a run can overshoot the cap by what it touches in 50 ms.

Writes reports/memory/NAME.json (every run, the machine, `trainscale info`, the command line)
and reports/memory/NAME.md, and prints the table. GB = 10^9 bytes; the bar is 6 GB.
Exit status: 0 if every run of --binary finished under the bar, 1 otherwise (including a run
killed at the cap), 2 for a usage error or a missing tool. The baseline's results do not
change the exit status.

    python3 bench/peak_rss.py --binary build/bin/trainscale \\
        [--baseline-binary /path/to/old/build/bin/trainscale] [--name final]
    python3 bench/peak_rss.py --report reports/memory/final.json   # regenerate final.md

Needs /usr/bin/time (Debian package `time`, installed by scripts/setup.sh). Standard library
only.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cpu_peer import (git_facts, loadavg, machine_facts, snapshot_binary,  # noqa: E402
                      trainscale_info, utc_now, write_atomic)

BAR_BYTES = 6e9
DEFAULT_MODELS = "resnet50:32,vgg16:8,inception_v3:8"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "build", "bin", "trainscale"),
                   help="trainscale binary under test (default: %(default)s)")
    p.add_argument("--baseline-binary", help="a second trainscale binary measured the same way "
                   "(e.g. the build from before issue 11), under the same cap")
    p.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated MODEL:BATCH "
                   "(default: %(default)s)")
    p.add_argument("--steps", type=int, default=2, help="training steps (default: %(default)s)")
    p.add_argument("--cap-gb", type=float, default=8.0, help="kill a run whose resident set "
                   "passes this many GB (10^9 bytes; default: %(default)s)")
    p.add_argument("--time", default="/usr/bin/time", help="GNU time (default: %(default)s)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "reports", "memory"),
                   help="where NAME.json and NAME.md go (default: %(default)s)")
    p.add_argument("--name", help="file name stem (default: the UTC start time)")
    p.add_argument("--note", default="", help="free text stored with the figures and shown in "
                   "the report")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="extra override passed after the issue's (repeatable), for diagnosis, "
                   "e.g. --set eval.batch=32; shown in the table: such a run is not the "
                   "issue's command")
    p.add_argument("--report", metavar="NAME.json", help="measure nothing: regenerate NAME.md "
                   "from a figures file this script wrote")
    return p.parse_args(argv)


def fail(msg, code=2):
    print(f"peak_rss.py: {msg}", file=sys.stderr)
    sys.exit(code)


def tree_rss_bytes(pid):
    """Resident set of pid and its descendants (bytes), 0 if gone."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
            total += int(m.group(1)) * 1024 if m else 0
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total


class Watchdog(threading.Thread):
    """Polls the resident set of the processes under `pid` (time and its child); SIGKILLs the
    children (trainscale) when it passes cap_bytes, so time still reports what they reached."""

    def __init__(self, pid, cap_bytes, period=0.05):
        super().__init__(daemon=True)
        self.pid, self.cap, self.period = pid, cap_bytes, period
        self.max_seen, self.killed = 0, False
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.period):
            rss = tree_rss_bytes(self.pid)
            self.max_seen = max(self.max_seen, rss)
            if rss > self.cap and not self.killed:
                self.killed = True
                try:
                    with open(f"/proc/{self.pid}/task/{self.pid}/children") as f:
                        kids = [int(c) for c in f.read().split()]
                except OSError:
                    kids = []
                for k in kids or [self.pid]:
                    try:
                        os.kill(k, signal.SIGKILL)
                    except ProcessLookupError:
                        pass


def parse_time_v(text):
    """The fields of GNU time -v that we keep."""
    def field(name):
        m = re.search(r"^\s*" + re.escape(name) + r":\s*(.+)$", text, re.M)
        return m.group(1).strip() if m else None

    out = {}
    rss = field("Maximum resident set size (kbytes)")
    out["peak_rss_bytes"] = int(rss) * 1024 if rss else None
    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    if wall:
        secs = 0.0
        for part in wall.split(":"):
            secs = secs * 60 + float(part)
        out["wall_s"] = secs
    for key, name in (("user_s", "User time (seconds)"), ("system_s", "System time (seconds)")):
        v = field(name)
        out[key] = float(v) if v else None
    status = field("Exit status")
    out["time_exit_status"] = int(status) if status else None
    sig = re.search(r"Command terminated by signal (\d+)", text)
    out["signal"] = int(sig.group(1)) if sig else None
    return out


def run_once(args, binary, model, batch, extra_sets, tmp):
    cfg = os.path.join(tmp, f"{model}.yaml")
    with open(cfg, "w") as f:
        f.write(f"# written by bench/peak_rss.py: every other key at its default\nmodel: {model}\n")
    out_dir = os.path.join(tmp, "runs")
    cmd = [binary, "run", "--config", cfg, "--set", f"model={model}",
           "--set", "dataset.name=synthetic", "--set", f"batch_per_worker={batch}",
           "--set", f"steps={args.steps}"]
    for s in extra_sets:
        cmd += ["--set", s]
    cmd += ["--out", out_dir]
    time_log = os.path.join(tmp, "time.txt")
    rec = {"model": model, "batch": batch, "extra_sets": list(extra_sets),
           "command": cmd, "config_text": open(cfg).read(),
           "started_utc": utc_now().isoformat(timespec="seconds"), "loadavg_before": loadavg()}
    with open(os.path.join(tmp, "out.txt"), "w+") as log:
        proc = subprocess.Popen([args.time, "-v", "-o", time_log] + cmd, stdout=log,
                                stderr=subprocess.STDOUT)
        dog = Watchdog(proc.pid, args.cap_gb * 1e9)
        dog.start()
        rc = proc.wait()
        dog.done.set()
        dog.join()
        log.seek(0)
        output = log.read()
    with open(time_log) as f:
        rec.update(parse_time_v(f.read()))
    rec["exit_status"] = rc
    rec["watchdog_max_rss_bytes"] = dog.max_seen
    rec["killed_at_cap"] = dog.killed
    rec["output_tail"] = output[-3000:]
    if dog.killed:
        rec["result"] = f"killed at cap ({args.cap_gb:g} GB)"
    elif rc == 0:
        rec["result"] = "ok"
    elif rec.get("signal"):
        rec["result"] = f"killed by signal {rec['signal']}"
    else:
        rec["result"] = f"exit {rc}"
    return rec


def measure(args, label, binary, model, batch):
    with tempfile.TemporaryDirectory(prefix="peak_rss_") as tmp:
        rec = run_once(args, binary, model, batch, args.sets, tmp)
        if rec["exit_status"] == 2 and not rec["killed_at_cap"]:
            refusal = rec["output_tail"].strip()
            rec = run_once(args, binary, model, batch, ["dataset.format=synthetic"] + args.sets,
                           tmp)
            rec["first_try_refused"] = refusal[-1000:]
    rec["binary"] = label
    return rec


def gb(v):
    return "—" if v is None else f"{v / 1e9:.2f}"


def render(data, source_name=None):
    out = [f"# Peak memory of `trainscale run`, ImageNet-sized models: {data['name']}", ""]
    out.append(f"Generated by bench/peak_rss.py from `{source_name or 'the figures file'}`.")
    out.append("")
    cwd = data.get("cwd", "") + "/"
    out.append(f"Command (in `{data.get('cwd')}`): `" + " ".join(
        a[len(cwd):] if a.startswith(cwd) else a for a in data["command"]) + "`")
    out.append("")
    m = data["machine"]
    out.append(f"- Machine: {m.get('cpu_model')}, {m.get('cpus_online')} CPUs online, "
               f"{(m.get('memory_bytes') or 0) / 2**30:.0f} GiB, {m.get('os')}; "
               f"{data['started_utc']} to {data.get('finished_utc', '?')} UTC"
               + (f". Note: {data['note']}" if data.get("note") else "") + ".")
    for key, b in data["binaries"].items():
        out.append(f"- {key}: `{b['path']}` (sha256 {b.get('sha256', '?')[:12]}), git "
                   f"{b['info'].get('git_sha')}.")
    out.append(f"- Each run: `trainscale run --config C --set model=M --set dataset.name=synthetic "
               f"--set batch_per_worker=B --set steps={data['settings']['steps']} --out DIR`, C "
               f"= `model: M`, under `/usr/bin/time -v`; memory cap "
               f"{data['settings']['cap_gb']:g} GB resident (watchdog, SIGKILL). GB = 10^9 bytes; "
               "the bar is peak RSS < 6 GB.")
    out.append("")
    out.append("| binary | model | batch | result | peak RSS (GB) | < 6 GB | wall (s) | extra settings |")
    out.append("|---|---|---:|---|---:|---|---:|---|")
    for r in data["runs"]:
        ok = r["result"] == "ok" and r.get("peak_rss_bytes") is not None
        bar = "**yes**" if ok and r["peak_rss_bytes"] < BAR_BYTES else "no"
        rss = gb(r.get("peak_rss_bytes"))
        if r["killed_at_cap"]:
            rss = f">= {gb(r['watchdog_max_rss_bytes'])}"
        wall = "—" if r.get("wall_s") is None else f"{r['wall_s']:.1f}"
        extra = ", ".join(f"`{s}`" for s in r["extra_sets"]) or "none"
        out.append(f"| {r['binary']} | {r['model']} | {r['batch']} | {r['result']} | {rss} | "
                   f"{bar} | {wall} | {extra} |")
    out.append("")
    notes, refusals = [], {}
    for r in data["runs"]:
        if r.get("first_try_refused"):
            # The message names the temporary config file; C stands for it.
            last = r["first_try_refused"].strip().splitlines()[-1]
            last = re.sub(r"/\S*/peak_rss_[^/]+/[\w.]+\.yaml", "C", last)
            refusals.setdefault(last, []).append(f"{r['binary']} {r['model']}")
    for msg, who in refusals.items():
        notes.append(f"Refused the command without `--set dataset.format=synthetic` (exit 2), "
                     f"so it was run again with it ({', '.join(who)}): \"{msg}\"")
    for r in data["runs"]:
        if r["result"] != "ok":  # its last words say how far it got
            tail = r["output_tail"].strip().splitlines()[-1:] or ["(no output)"]
            notes.append(f"{r['binary']} {r['model']}: {r['result']}; last output line: "
                         f"\"{tail[0]}\"")
    if notes:
        out += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        try:
            with open(args.report) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            fail(f"cannot read {args.report}: {e}")
        if data.get("schema") != "trainscale-peak-rss/1":
            fail(f"{args.report} is not a bench/peak_rss.py figures file (schema "
                 f"{data.get('schema')!r})")
        md_path = os.path.splitext(args.report)[0] + ".md"
        write_atomic(md_path, render(data, os.path.basename(args.report)))
        print(md_path)
        return 0
    if not os.access(args.time, os.X_OK):
        fail(f"{args.time} not found: install Debian's `time` package (apt-get install time; "
             "scripts/setup.sh does) or pass --time")
    models = []
    for item in args.models.split(","):
        name, _, batch = item.partition(":")
        if not name or not batch.isdigit() or int(batch) < 1:
            fail(f"--models: {item!r} is not MODEL:BATCH (e.g. resnet50:32)")
        models.append((name, int(batch)))
    if args.cap_gb <= 0 or args.steps < 1:
        fail("--cap-gb must be > 0 and --steps >= 1")
    binaries = [("trainscale", args.binary)]
    if args.baseline_binary:
        binaries.append(("baseline", args.baseline_binary))
    for _, path in binaries:
        if not os.access(path, os.X_OK):
            fail(f"{path}: not an executable file. Build it (cmake --build build --target "
                 "trainscale) or give the right path.")
    started = utc_now()
    name = args.name or started.strftime("%Y%m%dT%H%MZ")
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = os.path.join(args.out_dir, name + ".json")
    md_path = os.path.join(args.out_dir, name + ".md")
    data = {"schema": "trainscale-peak-rss/1", "name": name,
            "command": [sys.executable] + sys.argv, "cwd": os.getcwd(),
            "started_utc": started.isoformat(timespec="seconds"), "note": args.note,
            "settings": {"models": [f"{m}:{b}" for m, b in models], "steps": args.steps,
                         "extra_sets": args.sets,
                         "cap_gb": args.cap_gb, "bar_gb": BAR_BYTES / 1e9},
            "machine": machine_facts(), "repo": git_facts(),
            "binaries": {}, "runs": []}
    # Measure copies of the binaries, so that a rebuild during the run changes nothing.
    snapshots = tempfile.TemporaryDirectory(prefix="peak_rss_bin_")
    for i, (label, path) in enumerate(binaries):
        copy, digest = snapshot_binary(path, snapshots.name)
        data["binaries"][label] = trainscale_info(copy)
        data["binaries"][label].update(path=os.path.abspath(path), sha256=digest)
        binaries[i] = (label, copy)
    for model, batch in models:
        for label, path in binaries:
            rec = measure(args, label, path, model, batch)
            data["runs"].append(rec)
            print(f"# {label} {model} batch {batch}: {rec['result']}, peak RSS "
                  f"{gb(rec.get('peak_rss_bytes'))} GB, {rec.get('wall_s') or 0:.1f} s",
                  file=sys.stderr, flush=True)
            data["finished_utc"] = utc_now().isoformat(timespec="seconds")
            write_atomic(json_path, json.dumps(data, indent=1) + "\n")
    snapshots.cleanup()
    report = render(data, os.path.basename(json_path))
    write_atomic(md_path, report)
    print(report)
    print(f"figures: {os.path.relpath(json_path)}\nreport:  {os.path.relpath(md_path)}",
          file=sys.stderr)
    ok = all(r["result"] == "ok" and r["peak_rss_bytes"] < BAR_BYTES
             for r in data["runs"] if r["binary"] == "trainscale")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
