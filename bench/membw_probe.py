"""Memory bandwidth one core gets while every core copies at once: the state of the machine's
shared caches and memory bandwidth, which N memory-bound workers on one node need together
(bench/weak_scaling.sh prints it per round). Prints the lowest per-core GB/s.

    .venv/bin/python bench/membw_probe.py [--cores N] [--mib M]

Each core (pinned with os.sched_setaffinity) copies M MiB (default 64, beyond the L3 of small
machines) 8 times with numpy; GB/s counts bytes read plus bytes written."""
import argparse
import multiprocessing as mp
import os
import time

import numpy as np


def copy_bandwidth(core, mib, start, out):
    os.sched_setaffinity(0, {core})
    a = np.ones(mib << 18, dtype=np.float32)  # mib MiB
    b = np.empty_like(a)
    np.copyto(b, a)  # first touch outside the timing
    start.wait()
    t0 = time.perf_counter()
    for _ in range(8):
        np.copyto(b, a)
    out.put(8 * 2 * a.nbytes / (time.perf_counter() - t0) / 1e9)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))[: args.cores]
    start, out = mp.Barrier(len(cores)), mp.Queue()
    procs = [mp.Process(target=copy_bandwidth, args=(c, args.mib, start, out)) for c in cores]
    for p in procs:
        p.start()
    rates = [out.get() for _ in procs]
    for p in procs:
        p.join()
    print(f"{min(rates):.1f}")


if __name__ == "__main__":
    main()
