"""trainscale_analysis: loading campaigns and the metrics, against known answers (conftest)."""
import math
import os

import numpy as np
import pandas as pd
import pytest

import conftest as fx
from trainscale_analysis import load_campaigns, loss_area_winners
from trainscale_analysis import load, metrics


def test_load_grid_columns_and_statuses(grid_dir):
    df = load_campaigns([grid_dir])
    assert len(df) == len(fx.GRID), "every manifest entry is a row, failed ones included"
    for col in ("run_id", "config_id", "campaign", "status", "workers", "batch_per_worker",
                "lr", "dist.allreduce", "dist.overlap", "dataset.name", "images_per_s",
                "time_to_target", "min_train_loss", "loss_area_time", "loss_area_samples",
                "global_batch", "env.hosts", "env.mpi_flavor", "env.isa", "env.git_sha",
                "model.parameters"):
        assert col in df.columns, col
    assert set(df["campaign"]) == {"grid"}
    assert df["workers"].dtype.kind == "i" and df["lr"].dtype.kind == "f"
    assert df["dist.allreduce"].eq("ring").all() and df["dist.overlap"].eq(True).all()
    status = {(r.workers, r.batch_per_worker, r.lr): r.status for r in df.itertuples()}
    assert status == {k: v[2] for k, v in fx.GRID.items()}
    failed = df[df.status == "failed"].iloc[0]
    assert "out of memory" in failed["message"]
    assert pd.isna(failed["path"]) and failed["workers"] == 4, "config comes from the manifest"
    diverged = df[df.status == "diverged"].iloc[0]
    assert diverged["loss_area_time"] == math.inf
    assert df["env.world_size"].max() == 4


def test_loss_areas_match_trapezoids(grid_dir):
    df = load_campaigns(grid_dir)
    for (w, bs, lr), (T, end, status) in fx.GRID.items():
        if status != "ok":
            continue
        row = df[(df.workers == w) & (df.batch_per_worker == bs) & (df.lr == lr)].iloc[0]
        assert row["loss_area_time"] == pytest.approx(T * (2.0 + end) / 2, rel=1e-6)
        samples_end = fx.STEPS * bs * w
        assert row["loss_area_samples"] == pytest.approx(samples_end * (2.0 + end) / 2,
                                                         rel=1e-6)
        assert row["min_train_loss"] == pytest.approx(end, rel=1e-6)


def test_loss_area_function():
    assert metrics.loss_area([0, 1, 3], [2, 2, 0]) == pytest.approx(2 + 2)
    assert metrics.loss_area([0, 1], [1, float("nan")]) == math.inf
    assert metrics.loss_area([5], [1.0]) == 0.0


def test_loss_area_winners_shm_learn_dist_rule(grid_dir):
    df = load_campaigns(grid_dir)
    win = loss_area_winners(df, threshold=fx.THRESHOLD, by="workers")
    assert list(win["workers"]) == [1, 2, 4]
    for _, row in win.iterrows():
        bs, lr, area = fx.WINNERS[row["workers"]]
        assert (row["batch_per_worker"], row["lr"]) == (bs, lr), row.to_dict()
        assert row["loss_area"] == pytest.approx(area, rel=1e-6)
    w2 = win.set_index("workers").loc[2]
    assert w2["discarded_threshold"] == 1 and w2["discarded_status"] == 1
    assert win.set_index("workers").loc[4, "discarded_status"] == 1   # the failed run
    # Without the threshold the discarded fast-but-bad curves win (the rule matters).
    nothr = loss_area_winners(df, threshold=None).set_index("workers")
    assert (nothr.loc[1, "batch_per_worker"], nothr.loc[1, "lr"]) == (64, 0.1)
    assert nothr.loc[2, "loss_area"] == pytest.approx(12 * 2.6 / 2)
    # A threshold nobody reaches keeps the rows, with no winner.
    none = loss_area_winners(df, threshold=0.01)
    assert len(none) == 3 and none["run_id"].isna().all()


def test_winners_over_samples_and_by_other_dimension(grid_dir):
    df = load_campaigns(grid_dir)
    win = loss_area_winners(df, threshold=fx.THRESHOLD, by="batch_per_worker",
                            area="loss_area_samples")
    assert set(win["batch_per_worker"]) == {32, 64}
    # samples area: 10*bs*w*(2+end)/2; for bs=32 smallest is w=1 lr=0.1: 320*2.3/2 = 368
    assert win.set_index("batch_per_worker").loc[32, "loss_area"] == pytest.approx(368.0)


def test_unknown_schema_refused(campaigns):
    with pytest.raises(load.SchemaError, match=r"trainscale-run/99.*not supported"):
        load_campaigns([campaigns["future"]])


def test_not_a_campaign(tmp_path):
    with pytest.raises(load.CampaignError, match="campaign directory"):
        load_campaigns([tmp_path])


def test_repetitions_median_min_max(scaling_dir):
    df = load_campaigns(scaling_dir)
    assert len(df) == 24 and (df.status == "ok").all()
    assert set(df["repetition"]) == {0, 1, 2}
    agg = metrics.aggregate_repetitions(df, ["images_per_s"])
    assert len(agg) == 8 and (agg["n"] == 3).all()
    ring8 = agg[(agg["dist.allreduce"] == "ring") & (agg.workers == 8)].iloc[0]
    assert ring8["images_per_s"] == pytest.approx(5600)
    assert ring8["images_per_s_min"] == pytest.approx(5600 * 0.98)
    assert ring8["images_per_s_max"] == pytest.approx(5600 * 1.02)


def test_weak_scaling_efficiency(scaling_dir):
    df = load_campaigns(scaling_dir)
    sc = metrics.scaling(df, "images_per_s", mode="weak", by="dist.allreduce")
    assert len(sc) == 8
    for algo, table in fx.SCALING_IPS.items():
        s = sc[sc["dist.allreduce"] == algo].set_index("workers")
        for w, ips in table.items():
            assert s.loc[w, "speedup"] == pytest.approx(ips / 1000.0)
            assert s.loc[w, "efficiency"] == pytest.approx(ips / 1000.0 / w)
            assert s.loc[w, "baseline_workers"] == 1
    ring = sc[sc["dist.allreduce"] == "ring"].set_index("workers")
    assert ring.loc[2, "efficiency"] == pytest.approx(0.9)
    assert ring.loc[2, "speedup_min"] == pytest.approx(1.8 * 0.98)


def test_explicit_baseline_and_time_metric(scaling_dir):
    df = load_campaigns(scaling_dir)
    sc = metrics.scaling(df, "images_per_s", baseline_workers=2, by="dist.allreduce")
    ring = sc[sc["dist.allreduce"] == "ring"].set_index("workers")
    assert ring.loc[8, "speedup"] == pytest.approx(5600 / 1800)
    assert ring.loc[8, "efficiency"] == pytest.approx(5600 / 1800 / 4)
    # a time: speedup is baseline / value
    st = metrics.scaling(df, "step_time_median", by="dist.allreduce")
    ring = st[st["dist.allreduce"] == "ring"].set_index("workers")
    assert ring.loc[4, "speedup"] == pytest.approx((64 * 1 / 1000) / (64 * 4 / 3200))


def test_strong_scaling_groups_by_global_batch(grid_dir):
    df = load_campaigns(grid_dir)
    sc = metrics.scaling(df, "images_per_s", mode="strong")
    # global batch 64: (w1, bs64) and (w2, bs32); 128: (w2, bs64 diverged -> absent), (w4, bs32)
    g64 = sc[(sc.global_batch == 64) & (sc.lr == 0.01)].set_index("workers")
    assert list(g64.index) == [1, 2]
    assert g64.loc[2, "speedup"] == pytest.approx(2.0)
    assert g64.loc[2, "efficiency"] == pytest.approx(1.0)


def test_relative_performance(scaling_dir):
    df = load_campaigns(scaling_dir)
    rel = metrics.relative_performance(df, "dist.allreduce", "ring").set_index("dist.allreduce")
    ratios = [fx.SCALING_IPS["ps"][w] / fx.SCALING_IPS["ring"][w] for w in (1, 2, 4, 8)]
    assert rel.loc["ring", "relative"] == pytest.approx(1.0)
    assert rel.loc["ps", "relative"] == pytest.approx(np.median(ratios))
    assert rel.loc["ps", "relative_min"] == pytest.approx(min(ratios))
    assert rel.loc["ps", "matched"] == 4
    with pytest.raises(ValueError, match="baseline"):
        metrics.relative_performance(df, "dist.allreduce", "tree")


def test_time_breakdown_and_stragglers(scaling_dir):
    df = load_campaigns(scaling_dir)
    tb = metrics.time_breakdown(df).set_index("run_id")
    ps = df[df["dist.allreduce"] == "ps"].iloc[0]["run_id"]
    ring = df[df["dist.allreduce"] == "ring"].iloc[0]["run_id"]
    assert tb.loc[ps, "gather"] == pytest.approx(0.003, rel=1e-5)
    assert tb.loc[ring, "gather"] == 0.0
    assert tb.loc[ring, "backward"] == pytest.approx(0.020, rel=1e-5)
    run8 = df[(df.workers == 8) & (df["dist.allreduce"] == "ring")].iloc[0]
    stats = metrics.rank_statistics(load.load_timing(run8), "step", 2)
    assert stats["slowdown"].iloc[-1] == pytest.approx(1.5, rel=1e-5)
    assert stats["slowdown"].iloc[0] == pytest.approx(1.0, rel=1e-5)


def test_series_on_demand(grid_dir):
    df = load_campaigns(grid_dir)
    run = df[df.status == "ok"].iloc[0]
    tr = load.load_series(run)
    assert {"step", "time", "loss", "samples", "lr", "epoch"} <= set(tr.columns)
    assert len(tr) == fx.STEPS + 1
    ev = load.load_series(run, "eval")
    assert metrics.time_to_target(ev["time"], ev["accuracy"], 0.8) == ev["time"].iloc[-1]
    assert math.isnan(metrics.time_to_target(ev["time"], ev["accuracy"], 0.99))
    layers = load.load_layers(run)
    assert list(layers["name"]) == ["conv1", "fc1"]
    assert layers["descriptor"].iloc[0].startswith("conv:mb1")
    with pytest.raises(FileNotFoundError):
        load.load_series(df[df.status == "failed"].iloc[0])


def test_multiple_campaigns(campaigns):
    df = load_campaigns([campaigns["grid"], campaigns["scaling"]])
    assert set(df["campaign"]) == {"grid", "scaling"}
    assert len(df) == len(fx.GRID) + 24


def test_plain_run_out_directory(grid_dir, tmp_path):
    # `trainscale run --out DIR` puts <run_id>.h5 at the top of DIR, no runs/, no manifest
    import shutil
    out = tmp_path / "out"
    out.mkdir()
    for p in sorted((grid_dir / "runs").glob("*.h5"))[:2]:
        shutil.copy(p, out / p.name)
    df = load_campaigns(out)
    assert len(df) == 2 and (df["campaign"] == "grid").all()
    assert df["loss_area_time"].notna().all()


def test_failed_marker_reason(grid_dir, tmp_path):
    """FAILED markers are "key: value" lines (src/core/run_marker.h); the message is the reason.
    Plain-text markers (the format before) give their whole text."""
    marker = tmp_path / "x-r0.FAILED"
    marker.write_text("reason: configs/x.yaml:3: key 'lr': must be > 0\nattempt: 2\nlog: logs/x-r0.attempt2.log\n")
    assert load.failed_reason(marker) == "configs/x.yaml:3: key 'lr': must be > 0"
    marker.write_text("rank 0 on node0: out of memory\n")
    assert load.failed_reason(marker) == "rank 0 on node0: out of memory"


def _write_quickstart_like_campaign(root):
    """1 worker x 2 threads (mpi only) vs 2 workers x 1 thread (mpi and ring), as the
    quickstart's zip of workers with threads and its exclusion of ring at 1 worker."""
    cdir = root / "zipped"
    (cdir / "runs").mkdir(parents=True)
    points = [(1, 2, "mpi", 1000.0), (2, 1, "mpi", 1800.0), (2, 1, "ring", 1900.0)]
    for w, threads, algo, ips in points:
        cfg = fx.base_config(workers=w, threads=threads, **{"dist.allreduce": algo})
        run_id = f"{fx.config_id(cfg)}-r0"
        fx.write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign="zipped",
                     time=np.linspace(0.0, 10.0, fx.STEPS + 1),
                     loss=np.linspace(fx.LOSS_START, 0.4, fx.STEPS + 1),
                     samples=np.arange(fx.STEPS + 1) * 64 * w, summary=fx.summary_for(ips, w, 0.4, False),
                     timing=fx.uniform_timing(w, 20, False, False))
    return cdir


def test_scaling_folds_dimensions_stepped_with_workers_and_borrows_the_one_worker_baseline(tmp_path):
    df = load_campaigns([_write_quickstart_like_campaign(tmp_path)])
    sc = metrics.scaling(df, "images_per_s", "weak")
    # threads is stepped with workers (2 -> 1), so it does not split the series.
    assert "threads" not in sc.attrs["series_keys"]
    two = sc[sc["workers"] == 2].set_index("dist.allreduce")
    assert two.loc["mpi", "speedup"] == pytest.approx(1.8)
    # ring has no 1-worker run: it is measured against the 1-worker run (one worker exchanges nothing).
    assert two.loc["ring", "speedup"] == pytest.approx(1.9)
    assert two.loc["ring", "efficiency"] == pytest.approx(0.95)
    base = sc[(sc["workers"] == 1) & (sc["dist.allreduce"] == "ring")]
    assert len(base) == 1 and base["images_per_s"].iloc[0] == pytest.approx(1000.0)


def test_preempted_runs_are_their_own_status(tmp_path):
    """A PREEMPTED marker without a run file is `preempted` (resumable), not missing; a FAILED
    marker written after it (the resumed attempt failed) wins."""
    (tmp_path / "manifest.yaml").write_text(
        "campaign: p\nruns:\n"
        "  - {index: 0, run_id: a-r0, config_id: a, config: {workers: 1}}\n"
        "  - {index: 1, run_id: b-r0, config_id: b, config: {workers: 2}}\n"
        "  - {index: 2, run_id: c-r0, config_id: c, config: {workers: 4}}\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a-r0.PREEMPTED").write_text("reason: SIGUSR1 at step 40; checkpoint at step 40\nattempt: 1\n")
    (runs / "b-r0.PREEMPTED").write_text("reason: SIGTERM at step 3\n")
    (runs / "b-r0.FAILED").write_text("reason: out of memory\n")
    os.utime(runs / "b-r0.PREEMPTED", (1, 1))
    df = load_campaigns([tmp_path]).set_index("run_id")
    assert df.loc["a-r0", "status"] == "preempted"
    assert df.loc["a-r0", "message"] == "SIGUSR1 at step 40; checkpoint at step 40"
    assert (df.loc["b-r0", "status"], df.loc["b-r0", "message"]) == ("failed", "out of memory")
    assert df.loc["c-r0", "status"] == "missing"
