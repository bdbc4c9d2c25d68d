"""A synthetic campaign of N small run files (h5py, schema trainscale-run/1, ids consistent with
the manifest) for the analysis' scaling test and its benchmark (docs/benchmarks.md "Reliability"):

    .venv/bin/python tests/python/large_campaign.py /tmp/c10k 10000

400 configurations (workers 1..16 x batch 32..256 x 10 learning rates x ring/tree), repeated
until there are N runs; every 50th run failed (a FAILED marker and no file).
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import yaml

from conftest import base_config, config_id, summary_for, uniform_timing, write_run

STEPS = 20
GRID = list(itertools.product((1, 2, 4, 8, 16), (32, 64, 128, 256), [0.01 * (k + 1) for k in range(10)],
                              ("ring", "tree")))


def make_large_campaign(root: Path, runs: int, name: str = "large") -> Path:
    cdir = root / name
    (cdir / "runs").mkdir(parents=True)
    entries = []
    for i in range(runs):
        workers, batch, lr, allreduce = GRID[i % len(GRID)]
        repetition = i // len(GRID)
        cfg = base_config(workers=workers, batch_per_worker=batch, lr=lr, seed=1 + repetition,
                          **{"dist.allreduce": allreduce})
        cid = config_id(cfg)
        run_id = f"{cid}-r{repetition}"
        entries.append({"index": i, "run_id": run_id, "config_id": cid, "config": cfg})
        if i % 50 == 49:
            (cdir / "runs" / f"{run_id}.FAILED").write_text("reason: out of memory\n")
            continue
        ips = 1000.0 * workers * (0.9 + 0.01 * (i % 20))
        write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign=name,
                  time=np.linspace(0.0, 64 * STEPS * workers / ips, STEPS + 1),
                  loss=np.linspace(2.0, 0.5 + lr, STEPS + 1), samples=np.arange(STEPS + 1) * batch * workers,
                  summary=summary_for(ips, workers, 0.5 + lr, False),
                  timing=uniform_timing(workers, STEPS + 1, False, False))
        (cdir / "runs" / f"{run_id}.DONE").write_text("")
    (cdir / "manifest.yaml").write_text(yaml.safe_dump({"campaign": name, "hash": "0" * 16, "runs": entries},
                                                       sort_keys=False))
    return cdir


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: large_campaign.py DIR RUNS (writes DIR/large)")
    print(make_large_campaign(Path(sys.argv[1]), int(sys.argv[2])))
