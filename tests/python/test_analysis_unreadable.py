"""trainscale_analysis with damaged run files (docs/reliability.md "Hostile input"): one file of
garbage bytes, one cut in half and one without /summary among good ones are each reported with
status `unreadable` (the file's name and the reason), never `ok`, and the loading, the metrics,
the report and the CLI go on with the rest."""
import shutil

import h5py

import conftest as fx
from analysis_cli import cli
from trainscale_analysis import load_campaigns
from trainscale_analysis.report import build_report


def damaged_copy(grid_dir, tmp_path):
    """A copy of the grid campaign with three of its ok runs damaged for real: returns the
    campaign directory and {run_id: how it was damaged}."""
    camp = tmp_path / "grid"
    shutil.copytree(grid_dir, camp)
    ok = [p for p in sorted((camp / "runs").glob("*.h5"))
          if h5py.File(p, "r").attrs["status"] in (b"ok", "ok")]
    garbage, truncated, no_summary = ok[0], ok[1], ok[2]
    garbage.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 40)  # a signature, then noise
    data = truncated.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with h5py.File(no_summary, "a") as f:
        del f["summary"]
    return camp, {garbage.stem: "garbage", truncated.stem: "truncated", no_summary.stem: "no_summary"}


def test_damaged_files_are_unreadable_and_the_rest_loads(grid_dir, tmp_path, capsys):
    camp, damaged = damaged_copy(grid_dir, tmp_path)
    df = load_campaigns([camp])
    assert len(df) == len(fx.GRID), "every manifest entry is still a row"
    bad = df[df.status == "unreadable"].set_index("run_id")
    assert set(bad.index) == set(damaged)
    for run_id, how in damaged.items():
        message = bad.loc[run_id, "message"]
        assert f"{run_id}.h5" in message, message  # names the file
        if how == "no_summary":
            assert "no /summary" in message
        else:
            assert "OSError" in message, message  # h5py's reason, e.g. "file signature not found"
        assert bad.loc[run_id, "workers"] in (1, 2, 4), "the config still comes from the manifest"
    assert "no /summary" in capsys.readouterr().err
    expected_ok = sum(1 for v in fx.GRID.values() if v[2] == "ok") - len(damaged)
    assert (df.status == "ok").sum() == expected_ok
    assert df[df.status == "ok"]["images_per_s"].notna().all()


def test_report_and_cli_go_on(grid_dir, tmp_path):
    camp, damaged = damaged_copy(grid_dir, tmp_path)
    html, md = build_report([camp], tmp_path / "r.html", threshold=fx.THRESHOLD)
    text = html.read_text()
    assert "3 unreadable" in text
    for run_id in damaged:
        assert run_id in text
    r = cli("report", camp, "-o", tmp_path / "cli.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cli.html").exists()
    for run_id in damaged:
        assert f"{run_id}.h5" in r.stderr, r.stderr  # each damaged file is named on stderr


def test_summary_figures_that_are_not_numbers_and_a_missing_train_group_are_unreadable(grid_dir, tmp_path):
    """Issue 35: a /summary figure stored as a string, a measured figure that is NaN or inf, and a
    run file without /train were listed as ok with blank metrics: each is `unreadable` with the
    reason (attribute or group and value), and the report counts them so."""
    import numpy as np

    camp = tmp_path / "grid"
    shutil.copytree(grid_dir, camp)
    ok = [p for p in sorted((camp / "runs").glob("*.h5"))
          if h5py.File(p, "r").attrs["status"] in (b"ok", "ok")]
    damage = {
        ok[0].stem: ("images_per_s", "fast", "/summary images_per_s is a string ('fast'), not a number"),
        ok[1].stem: ("images_per_s", np.nan, "/summary images_per_s is nan"),
        ok[2].stem: ("step_time_median", np.inf, "/summary step_time_median is inf"),
        ok[3].stem: ("best_accuracy", -np.inf, "/summary best_accuracy is -inf"),
        ok[4].stem: (None, None, "no /train group"),
    }
    for path in ok[:5]:
        key, value, _ = damage[path.stem]
        with h5py.File(path, "a") as f:
            if key is None:
                del f["train"]
            else:
                del f["summary"].attrs[key]
                f["summary"].attrs[key] = value
    df = load_campaigns([camp])
    bad = df[df.status == "unreadable"].set_index("run_id")
    assert set(bad.index) == set(damage)
    for run_id, (_, _, why) in damage.items():
        assert f"{run_id}.h5" in bad.loc[run_id, "message"] and why in bad.loc[run_id, "message"], \
            bad.loc[run_id, "message"]
    assert (df.status == "ok").sum() == sum(1 for v in fx.GRID.values() if v[2] == "ok") - len(damage)
    ok_rows = df[df.status == "ok"]
    assert ok_rows["images_per_s"].notna().all() and np.isfinite(ok_rows["step_time_median"]).all()
    # A diverged run keeps its NaN final loss (not applicable is not damage).
    assert (df.status == "diverged").sum() == 1
    html, _ = build_report([camp], tmp_path / "r.html", threshold=fx.THRESHOLD)
    assert f"{len(damage)} unreadable" in html.read_text()
