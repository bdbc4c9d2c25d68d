"""The analysis pieces the studies of configs/studies/ rest on (docs/analysis.md): archiving a
campaign beside its report, the exchange-time view (parameter-server phases next to the
all-reduces), the exchange-strategy view and the loss-area histograms."""
from __future__ import annotations

import h5py
import numpy as np
import pytest
import yaml

from conftest import (LOSS_START, PS_PHASE_SECONDS, PHASE_SECONDS, STEPS, base_config,
                      config_id, summary_for, write_run)
from trainscale_analysis import archive, exchange, load, report, strategies


def _walk(f: h5py.File) -> dict:
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj[()] if isinstance(obj, h5py.Dataset) else None))
    return out


def test_archive_keeps_every_value_and_compresses(grid_dir, tmp_path):
    counts = archive.archive_campaign(grid_dir, tmp_path / "kept")
    before, after = load.load_campaigns(grid_dir), load.load_campaigns(tmp_path / "kept")
    assert counts["runs"] == (before["path"].notna()).sum() > 0
    assert counts["markers"] == len(list((grid_dir / "runs").glob("*.FAILED"))) + \
        len(list((grid_dir / "runs").glob("*.DONE")))
    assert list(before["status"]) == list(after["status"])
    cols = ["run_id", "status", "message", "loss_area_time", "min_train_loss", "images_per_s"]
    assert before[cols].fillna(-1).equals(after[cols].fillna(-1))
    for src in sorted((grid_dir / "runs").glob("*.h5")):
        dst = tmp_path / "kept" / "runs" / src.name
        with h5py.File(src) as a, h5py.File(dst) as b:
            da, db = _walk(a), _walk(b)
            assert da.keys() == db.keys()
            for name, value in da.items():
                if value is None:
                    continue
                if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                    np.testing.assert_array_equal(value, db[name])
                else:
                    assert np.array_equal(value, db[name]) if isinstance(value, np.ndarray) \
                        else value == db[name], name
            assert dict(a.attrs).keys() == dict(b.attrs).keys()
            def compressed(name, obj):
                if isinstance(obj, h5py.Dataset):
                    big = obj.shape != () and obj.size >= archive.MIN_COMPRESSED_ELEMENTS and \
                        obj.dtype.kind in "iufb"
                    assert (obj.compression == "gzip") == big, name
            b.visititems(compressed)
            assert a["train/loss"].dtype == b["train/loss"].dtype
    assert not list((tmp_path / "kept" / "runs").glob("*.tmp"))
    html, _ = report.build_report([tmp_path / "kept"], tmp_path / "r.html", threshold=0.5)
    assert "Winners" in html.read_text()


def test_archive_again_replaces_the_earlier_copy(grid_dir, tmp_path):
    """A marker of an earlier archive (a task that failed then) must not outlive a new one."""
    kept = tmp_path / "kept"
    archive.archive_campaign(grid_dir, kept)
    stale = kept / "runs" / "000000000000-r0.FAILED"
    stale.write_text("reason: an earlier attempt\n")
    archive.archive_campaign(grid_dir, kept)
    assert not stale.exists()
    assert sorted(p.name for p in (kept / "runs").iterdir()) == sorted(
        p.name for p in (grid_dir / "runs").iterdir() if p.suffix in (".h5",) + archive.MARKER_SUFFIXES)


def test_archive_refuses_a_directory_that_is_not_a_campaign(tmp_path):
    with pytest.raises(ValueError, match="neither manifest.yaml nor runs/"):
        archive.archive_campaign(tmp_path, tmp_path / "out")


def test_exchange_summary_reads_the_servers_phases_and_the_allreduce_comm(scaling_dir):
    summary = exchange.exchange_summary(load.load_campaigns(scaling_dir))
    ps = summary[summary["algorithm"] == "ps"].set_index("workers")
    ring = summary[summary["algorithm"] == "ring"].set_index("workers")
    assert list(ps.index) == [1, 2, 4, 8] and list(ring.index) == [1, 2, 4, 8]
    for phase, seconds in PS_PHASE_SECONDS.items():
        np.testing.assert_allclose(ps[phase], seconds, rtol=1e-6)
    np.testing.assert_allclose(ps["exchange"], sum(PS_PHASE_SECONDS.values()), rtol=1e-6)
    np.testing.assert_allclose(ring["exchange"], PHASE_SECONDS["comm"], rtol=1e-6)
    assert ring["gather"].isna().all()
    assert set(summary["kind"]) == {"measured"} and (summary["runs"] == 3).all()


def test_report_has_the_exchange_section_and_says_overlap_was_on(shared_report):
    html, md = shared_report("scaling")  # of the scaling campaign (scaling_dir)
    text = html.read_text()
    assert "Exchange time by algorithm" in text
    assert "dist.overlap was" in text  # the fixture's runs overlap: the caveat is printed
    assert html.with_name("scaling_figures").joinpath("exchange_times.png").is_file()


def _strategy_campaign(root):
    """2 and 4 workers x sync, weight_avg period 1 (loss 1e-3 off sync's), period 10."""
    cdir = root / "strategies"
    (cdir / "runs").mkdir(parents=True)
    steps = 400
    base = np.linspace(LOSS_START, 0.2, steps)
    for w in (2, 4):
        for strategy, period, offset in (("sync", 1, 0.0), ("weight_avg", 1, 1e-3),
                                         ("weight_avg", 10, 0.05)):
            cfg = base_config(workers=w, **{"dist.strategy": strategy, "dist.period": period})
            run_id = f"{config_id(cfg)}-r0"
            write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id,
                      campaign="strategies", time=np.linspace(0, 10, steps), loss=base + offset,
                      samples=np.arange(steps) * 64 * w, summary=summary_for(1e3, w, 0.2, False))
    return cdir


def test_strategy_table_compares_each_strategy_with_sync(tmp_path):
    cdir = _strategy_campaign(tmp_path)
    table = strategies.strategy_table(load.load_campaigns(cdir)).set_index(["workers", "strategy"])
    assert set(table.index.get_level_values("strategy")) == \
        {"sync", "weight_avg (period 1)", "weight_avg (period 10)"}
    for w in (2, 4):
        assert table.loc[(w, "sync"), "max_loss_diff_vs_sync"] == 0.0
        assert table.loc[(w, "weight_avg (period 1)"), "max_loss_diff_vs_sync"] == \
            pytest.approx(1e-3, rel=1e-3)
        tail = np.linspace(LOSS_START, 0.2, 400)[-4:] + 0.05  # the last 1% of the steps
        assert table.loc[(w, "weight_avg (period 10)"), "final_train_loss"] == \
            pytest.approx(tail.mean(), rel=1e-5)
        assert table.loc[(w, "sync"), "steps"] == 400
    kept = archive.archive_campaign(cdir, tmp_path / "kept")
    assert kept["runs"] == 6
    with h5py.File(next((tmp_path / "kept" / "runs").glob("*.h5"))) as f:
        assert f["train/loss"].compression == "gzip" and f["train/loss"].shape == (400,)
    html, _ = report.build_report([cdir], tmp_path / "s.html")
    assert "Exchange strategies" in html.read_text()
    assert (tmp_path / "s_figures" / "strategy_losses.png").is_file()


def test_no_strategy_section_when_the_strategy_did_not_vary(shared_report):
    html, _ = shared_report("grid", threshold=0.5)  # of the grid campaign (grid_dir)
    text = html.read_text()
    assert "Exchange strategies" not in text
    assert html.with_name("grid_figures").joinpath("loss_area_histograms.png").is_file()
    assert "final_accuracy" in text.split("Winners")[1]


def test_archive_command_line(grid_dir, tmp_path, capsys):
    from trainscale_analysis.__main__ import main
    assert main(["archive", str(grid_dir), "-o", str(tmp_path / "kept")]) == 0
    assert "run files" in capsys.readouterr().out
    assert (tmp_path / "kept" / "manifest.yaml").read_bytes() == (grid_dir / "manifest.yaml").read_bytes()
    assert main(["archive", str(tmp_path / "nothing"), "-o", str(tmp_path / "x")]) == 2
    assert "neither manifest.yaml nor runs/" in capsys.readouterr().err


def test_archive_keeps_every_kth_step_of_long_timing_and_loads_it_back(tmp_path):
    """/timing of 1200 steps keeps every 3rd step (MAX_TIMING_ROWS 500); load_timing stands each
    kept row for its 3 steps, so the shape and the phase means read as on the original."""
    cdir = tmp_path / "long"
    (cdir / "runs").mkdir(parents=True)
    steps, workers = 1200, 2
    cfg = base_config(workers=workers)
    rng = np.random.default_rng(5)
    timing = {"step": rng.uniform(0.01, 0.03, (steps, workers)), "comm": rng.uniform(0, 0.01, (steps, workers))}
    write_run(cdir / "runs" / "long-r0.h5", cfg=cfg, run_id="long-r0", campaign="long",
              time=np.linspace(0, 30, steps), loss=np.linspace(LOSS_START, 0.3, steps),
              samples=np.arange(steps) * 64 * workers, summary=summary_for(1e3, workers, 0.3, False),
              timing=timing)
    archive.archive_campaign(cdir, tmp_path / "kept")
    kept = tmp_path / "kept" / "runs" / "long-r0.h5"
    with h5py.File(kept) as f:
        assert f["timing/step"].shape == (400, workers)
        assert (f["timing"].attrs["archive_stride"], f["timing"].attrs["archive_steps"]) == (3, steps)
        assert f["train/loss"].shape == (steps,)  # the loss series stays whole
    full, back = load.load_timing(cdir / "runs" / "long-r0.h5"), load.load_timing(kept)
    assert back["step"].shape == full["step"].shape == (steps, workers)
    np.testing.assert_array_equal(back["step"][::3], full["step"][::3].astype(np.float32))
    np.testing.assert_allclose(back["step"].mean(axis=0), full["step"].mean(axis=0), rtol=0.05)
    before = load.load_campaigns(cdir)["loss_area_time"].iloc[0]
    assert load.load_campaigns(tmp_path / "kept")["loss_area_time"].iloc[0] == before


def test_relative_performance_matches_across_keys_some_runs_leave_unset(tmp_path):
    """The heterogeneous study's shape: a reference run without dist.partition keys, and
    equal / static partitions with a slowed rank, static's shares a property of static alone.
    Every partition still gets its ratio (unset keys are a value; dependent keys not matched)."""
    from trainscale_analysis import metrics
    cdir = tmp_path / "hetero"
    (cdir / "runs").mkdir(parents=True)
    points = [({}, 2000.0), ({"dist.partition": "equal", "dist.emulate_slowdown.rank": 1}, 1000.0),
              ({"dist.partition": "static", "dist.shares": "96,32", "dist.emulate_slowdown.rank": 1}, 1600.0),
              ({"dist.partition": "measured", "dist.emulate_slowdown.rank": 1}, 1500.0)]
    for keys, ips in points:
        cfg = base_config(workers=2, **keys)
        run_id = f"{config_id(cfg)}-r0"
        write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign="hetero",
                  time=np.linspace(0, 10, 11), loss=np.linspace(LOSS_START, 0.3, 11),
                  samples=np.arange(11) * 128, summary=summary_for(ips, 2, 0.3, False))
    rel = metrics.relative_performance(load.load_campaigns(cdir), "dist.partition", "equal")
    rel = rel.set_index("dist.partition")["relative"]
    assert rel.to_dict() == pytest.approx({"equal": 1.0, "static": 1.6, "measured": 1.5})


def test_compression_view_reads_thinned_timing_of_an_archived_copy(tmp_path):
    """compress / decompress / comm seconds of an archived run (every 3rd step kept) are the
    totals of the original, as load_timing expands them."""
    from trainscale_analysis import compression
    cdir = tmp_path / "c"
    (cdir / "runs").mkdir(parents=True)
    steps = 1500
    cfg = base_config(workers=2, **{"dist.compression": "fp16"})
    timing = {"comm": np.full((steps, 2), 0.004), "compress": np.full((steps, 2), 0.001),
              "decompress": np.full((steps, 2), 0.0005), "step": np.full((steps, 2), 0.02)}
    write_run(cdir / "runs" / "c-r0.h5", cfg=cfg, run_id="c-r0", campaign="c",
              time=np.linspace(0, 30, steps), loss=np.linspace(LOSS_START, 0.3, steps),
              samples=np.arange(steps) * 128, summary=summary_for(1e3, 2, 0.3, False), timing=timing)
    archive.archive_campaign(cdir, tmp_path / "kept")
    a = compression.run_row(cdir / "runs" / "c-r0.h5")
    b = compression.run_row(tmp_path / "kept" / "runs" / "c-r0.h5")
    for key in ("comm_s", "compress_s", "decompress_s"):
        assert b[key] == pytest.approx(a[key], rel=1e-6)
    assert a["comm_s"] == pytest.approx(0.004 * steps)


def test_relative_performance_does_not_match_across_a_model_that_varies_among_unset_runs(tmp_path):
    """dist.shares is set on the static runs only, one value per model. The equal runs leave it
    unset and cover both models, so model is a dimension of its own and must be matched on: the
    two shares values (one per model) are not comparable. Comparing dist.partition, dist.shares
    changes with it (one value per partition and model): listed in varies_with."""
    from trainscale_analysis import metrics
    cdir = tmp_path / "shares"
    (cdir / "runs").mkdir(parents=True)
    points = [("lenet", {"dist.partition": "equal"}, 1000.0),
              ("lenet", {"dist.partition": "static", "dist.shares": "96,32"}, 1500.0),
              ("resnet20", {"dist.partition": "equal"}, 100.0),
              ("resnet20", {"dist.partition": "static", "dist.shares": "112,16"}, 180.0)]
    for model, keys, ips in points:
        cfg = base_config(workers=2, model=model, **keys)
        run_id = f"{config_id(cfg)}-r0"
        write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign="shares",
                  time=np.linspace(0, 10, 11), loss=np.linspace(LOSS_START, 0.3, 11),
                  samples=np.arange(11) * 128, summary=summary_for(ips, 2, 0.3, False))
    df = load.load_campaigns(cdir)
    shares = metrics.relative_performance(df, "dist.shares", "96,32").set_index("dist.shares")
    assert shares.loc["112,16", "matched"] == 0  # lenet's shares against resnet20's: no match
    part = metrics.relative_performance(df, "dist.partition", "equal").set_index("dist.partition")
    assert part.loc["static", "relative"] == pytest.approx(1.65)  # the median of 1.5 and 1.8
    assert part.loc["static", "matched"] == 2 and part.loc["static", "varies_with"] == "dist.shares"
