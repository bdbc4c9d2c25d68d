"""The report's "Strategies at a fixed sample budget" table (trainscale_analysis.report):
accuracy per exchange strategy, its staleness bound or thread count."""
import numpy as np
import pandas as pd

from trainscale_analysis import report


def frame(rows):
    return pd.DataFrame(rows, columns=["run_id", "status", "dist.strategy", "dist.staleness",
                                       "dist.threads_per_worker", "final_accuracy", "best_accuracy"])


def test_one_row_per_strategy_and_bound_best_first():
    df = frame([
        ["s1", "ok", "sync", np.nan, np.nan, 0.86, 0.86],
        ["s2", "ok", "sync", np.nan, np.nan, 0.84, 0.85],
        ["a0", "ok", "async_ps", 0, np.nan, 0.845, 0.845],
        ["a4", "ok", "async_ps", 4, np.nan, 0.848, 0.85],
        ["h2", "ok", "hogwild", np.nan, 2, 0.83, 0.83],
        ["bad", "diverged", "hogwild", np.nan, 4, 0.1, 0.1],
    ])
    t = report.strategy_budget_table(df)
    assert list(t["dist.strategy"]) == ["sync", "async_ps", "async_ps", "hogwild"]
    sync = t[t["dist.strategy"] == "sync"].iloc[0]
    assert sync["runs"] == 2 and np.isclose(sync["final_accuracy"], 0.85) and sync["best_accuracy"] == 0.86
    assert list(t[t["dist.strategy"] == "async_ps"]["dist.staleness"]) == [4, 0]
    assert 4 not in list(t["dist.threads_per_worker"]), "a diverged run has no accuracy to compare"


def test_no_table_with_one_strategy_or_without_accuracy():
    assert report.strategy_budget_table(frame([["s", "ok", "sync", np.nan, np.nan, 0.8, 0.8]])).empty
    assert report.strategy_budget_table(pd.DataFrame({"status": ["ok"], "dist.strategy": ["sync"]})).empty
