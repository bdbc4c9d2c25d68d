"""A campaign's analysis does work proportional to its runs (issue 35: a 10^4-run campaign took
96 s; docs/benchmarks.md "Reliability" has the timings, which never decide a test). Counted, not
timed: every run file is opened once by loading (h5py.File wrapped to count opens), the report
opens only a fixed few more whatever the run count (read_run keeps what the sections need:
run_digest.py), and a table formats each column once, not once a cell."""
import collections

import h5py
import numpy as np
import pandas as pd
import pytest

from large_campaign import make_large_campaign
from trainscale_analysis import load, metrics, number_format, report, tables


@pytest.fixture(scope="module")
def two_sizes(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    return make_large_campaign(root, 30, "small"), make_large_campaign(root, 60, "large")


@pytest.fixture
def opens(monkeypatch):
    """Run file name -> times opened while the test runs."""
    counts = collections.Counter()

    class CountingFile(h5py.File):
        def __init__(self, name, *args, **kwargs):
            counts[str(name)] += 1
            super().__init__(name, *args, **kwargs)
    monkeypatch.setattr(h5py, "File", CountingFile)
    return counts


def run_files(campaign):
    return {str(p) for p in (campaign / "runs").glob("*.h5")}


def test_loading_opens_each_run_file_once(two_sizes, opens):
    for campaign in two_sizes:
        opens.clear()
        df = load.load_campaigns(campaign)
        assert set(opens) == run_files(campaign) and set(opens.values()) == {1}
        assert (df["status"] == "ok").sum() == len(run_files(campaign))


def test_the_report_opens_a_fixed_few_files_beyond_one_open_each(two_sizes, opens, tmp_path):
    extra = []
    for campaign in two_sizes:
        opens.clear()
        report.build_report([campaign], tmp_path / f"{campaign.name}.html")
        files = run_files(campaign)
        assert files <= set(opens), "every run file read"
        extra.append(sum(opens[f] for f in files) - len(files))
    small, large = extra
    assert large == small, f"opens beyond one per run file grow with the runs: {small} for 30, {large} for 60"
    assert small <= 3, f"{small} opens beyond one per run file: only the rank-variability run is read again"


def test_a_run_file_changed_after_loading_is_read_again(two_sizes, tmp_path):
    df = load.load_campaigns(two_sizes[0])
    path = df["path"].iloc[0]
    with h5py.File(path, "r+") as f:  # a new mtime: what read_run kept no longer holds
        f["timing/forward"][...] = np.full(f["timing/forward"].shape, 1.0)
    row = metrics.time_breakdown(df).set_index("run_id").loc[df["run_id"].iloc[0]]
    assert row["forward"] == pytest.approx(1.0)


def test_a_table_formats_each_column_once(monkeypatch):
    calls = []
    real = number_format.column_format
    monkeypatch.setattr(tables, "column_format", lambda *a, **k: calls.append(1) or real(*a, **k))
    df = pd.DataFrame({"a": np.arange(500) * 0.37, "b": ["x"] * 500})
    tables.table_md(df)
    assert len(calls) == 2
