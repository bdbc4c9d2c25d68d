"""Study 8's report (trainscale_analysis network-study, scripts/study_network.py) from campaigns
written with h5py whose answers are known by construction: lenet on 1 host runs 1000 images/s at
every link and on 2 hosts 1800 / 1000 (1 Gbit/s) / 1900 (unshaped): efficiency 0.9 / 0.5 / 0.95;
resnet20 on 2 hosts is 0.99 of 2 x 500 at every link. Three repetitions at +-2% give the
medians exactly; the predictions and the links come from the JSON files the runner writes."""
import json

import numpy as np
import pandas as pd

from conftest import base_config, config_id, summary_for, write_run
from trainscale_analysis import network_study

IPS = {("lenet", "1", 1): 1000, ("lenet", "1", 2): 1000, ("lenet", "10", 1): 1000, ("lenet", "10", 2): 1800,
       ("lenet", "off", 1): 1000, ("lenet", "off", 2): 1900,
       ("resnet20", "1", 1): 500, ("resnet20", "1", 2): 990, ("resnet20", "10", 1): 500, ("resnet20", "10", 2): 990,
       ("resnet20", "off", 1): 500, ("resnet20", "off", 2): 990}


def make_campaigns(root):
    dirs = []
    for link in ("1", "10", "off"):
        camp = root / f"network_{link}"
        (camp / "runs").mkdir(parents=True)
        for (model, l, workers), ips in IPS.items():
            if l != link:
                continue
            cfg = base_config(model=model, workers=workers, batch_per_worker=32, threads=1)
            for rep, factor in enumerate((0.98, 1.0, 1.02)):
                run_id = f"{config_id(cfg)}-r{rep}"
                write_run(camp / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign=camp.name,
                          time=np.linspace(0, 10, 11), loss=np.linspace(2, 1, 11), samples=np.arange(11) * 32,
                          summary=summary_for(ips * factor, workers, 1.0, False))
        dirs.append(camp)
    return dirs


def test_efficiency_relative_throughput_and_predictions(tmp_path):
    camps = make_campaigns(tmp_path)
    links = {r: {"iperf3_gbps": g, "alpha_us": 20.0, "bandwidth_gbps": g} for r, g in (("1", 0.95), ("10", 9.0), ("off", 9.5))}
    (tmp_path / "links.json").write_text(json.dumps(links))
    # The model and the simulator on lenet at 2 hosts and 1 Gbit/s (the measured 1-host step is 64 ms).
    preds = [{"rate": "1", "model": "lenet", "workers": 2, "predicted_step_s": 0.064, "simulated_step_s": 0.08}]
    (tmp_path / "predictions.json").write_text(json.dumps(preds))
    md = network_study.network_study_report(camps, tmp_path / "predictions.json", tmp_path / "links.json", tmp_path / "out")
    df = pd.read_csv(tmp_path / "out" / "network_study.csv", dtype={"link": str})
    row = lambda m, l, w: df[(df.model == m) & (df.link == l) & (df.workers == w)].iloc[0]  # noqa: E731
    assert row("lenet", "1", 2).efficiency == 0.5 and row("lenet", "10", 2).efficiency == 0.9
    assert abs(row("lenet", "off", 2).efficiency - 0.95) < 1e-12
    assert abs(row("lenet", "1", 2).relative_to_unshaped - 1000 / 1900) < 1e-12
    assert all(abs(row("resnet20", l, 2).efficiency - 0.99) < 1e-12 for l in ("1", "10", "off"))
    assert row("lenet", "1", 2).runs == 3 and abs(row("lenet", "1", 2).images_per_s_spread - 0.04) < 1e-9
    # the measured 1-host step over the predicted 2-host step: 0.064 / 0.064
    assert abs(row("lenet", "1", 2).predicted_efficiency - 1.0) < 1e-12
    text = open(md).read()
    assert list(df.link.unique()) == ["1", "10", "off"], "links in rate order, unshaped last"
    assert "| lenet | 1 | 2 | 1000 (4%) | 0.53 | 0.50 |" in text and "network_efficiency.png" in text
    assert (tmp_path / "out" / "network_efficiency.png").stat().st_size > 1000
