"""The dimensions of a campaign: the configuration keys that were swept, their values and the
order of the runs along them.

A campaign directory holds `sweep.yaml`, the copy of its sweep file (docs/sweeps.md): the keys
of its `matrix`, of each `zip` group and of its `include` points are what the person varied.
Those of them that take more than one value among the runs are the campaign's dimensions.
Every other key that varies follows from them and is *derived*: `eval.batch` resolved to the
training batch, `global_batch` = `batch_per_worker` x `workers`, a data set's root that a zip
group steps with its format. Effects are credited to dimensions only, and derived keys are
listed apart (they are not swept, so they are no axis of any comparison).

A campaign without `sweep.yaml` (the `--out` directory of single `trainscale run`s, or a
hand-made one) falls back to the keys that vary, less `global_batch` (computed here from
`batch_per_worker` x `workers`) and `eval.batch` where it equals the training batch run by run.
Keys that are constant inside each of several campaigns loaded together but differ between them
are dimensions too: they are what tells the campaigns apart.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
import yaml

from . import load

# Keys the analysis or the config resolution computes from others (docs/config.md "Defaults
# that depend on other keys"); never dimensions unless a sweep file names them.
COMPUTED_KEYS = ("global_batch",)
RESOLVED_COPIES = {"eval.batch": "batch_per_worker"}


def sweep_keys(campaign_dir: str | Path) -> list[str] | None:
    """The keys `<campaign_dir>/sweep.yaml` varies, in file order (matrix, zip groups, include
    points), or None when the campaign has no readable sweep file."""
    path = Path(campaign_dir) / "sweep.yaml"
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(doc, Mapping):
        return None
    keys: list[str] = []
    matrix = doc.get("matrix")
    if isinstance(matrix, Mapping):
        keys += [str(k) for k in matrix]
    zips = doc.get("zip")
    if isinstance(zips, Mapping):
        for group in zips.values():
            if isinstance(group, Mapping):
                keys += [str(k) for k in group]
    for point in doc.get("include") or []:
        if isinstance(point, Mapping):
            keys += [str(k) for k in point]
    return list(dict.fromkeys(keys))


def zip_groups(campaign_dir: str | Path) -> list[list[str]]:
    """The key lists of the sweep file's `zip` groups (keys stepped in lock-step: together they
    are one dimension), in file order; [] without a sweep file or zips."""
    try:
        doc = yaml.safe_load((Path(campaign_dir) / "sweep.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return []
    zips = doc.get("zip") if isinstance(doc, Mapping) else None
    if not isinstance(zips, Mapping):
        return []
    return [[str(k) for k in g] for g in zips.values() if isinstance(g, Mapping) and g]


def lockstep_followers(df: pd.DataFrame, dims: Sequence[str]) -> dict[str, str]:
    """{key: the first key of its zip group} for every dimension stepped in lock-step with an
    earlier one (dataset.root with dataset.format): an effect is the group's, credited once,
    to its first key."""
    out: dict[str, str] = {}
    if "campaign_dir" not in df.columns:
        return out
    for cdir in df["campaign_dir"].dropna().unique():
        for group in zip_groups(cdir):
            members = [k for k in group if k in dims]
            for k in members[1:]:
                out.setdefault(k, members[0])
    return out


def normalised(value: Any) -> Any:
    """A configuration value as the one thing it means: numbers as numbers (`5e-04` and
    `0.0005`, `64` and `64.0` are one value), NaN (a key some runs leave unset) as None."""
    value = load.parse_config_value(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
    return value


def distinct(values: Iterable[Any]) -> list[Any]:
    """The distinct normalised values of `values`, unset (None) included, in sort order."""
    return sort_values(list(dict.fromkeys(normalised(v) for v in values)))


def sort_key(value: Any) -> tuple:
    """Numbers before text, numbers by size, text alphabetically, unset last."""
    value = normalised(value)
    if value is None:
        return (3, 0, "")
    if isinstance(value, bool):
        return (1, 0, str(value).lower())
    if isinstance(value, (int, float)):
        return (0, value, "")
    return (2, 0, str(value))


def sort_values(values: Iterable[Any]) -> list[Any]:
    return sorted(values, key=sort_key)


def varies(df: pd.DataFrame, key: str) -> bool:
    return key in df.columns and len(distinct(df[key])) > 1


def _copies(df: pd.DataFrame, key: str, source: str) -> bool:
    """Whether `key` holds `source`'s value in every run (or is unset where it does not)."""
    if source not in df.columns:
        return False
    a, b = df[key].map(normalised), df[source].map(normalised)
    return bool(((a == b) | a.isna()).all())


def fallback_dimensions(df: pd.DataFrame) -> list[str]:
    """Dimensions of runs without a sweep file: the varying keys that are not derived."""
    keys = [k for k in load.config_columns(df) if k != "seed" and varies(df, k)]
    keys = [k for k in keys if k not in COMPUTED_KEYS]
    return [k for k in keys if not (k in RESOLVED_COPIES and _copies(df, k, RESOLVED_COPIES[k]))]


def swept_dimensions(df: pd.DataFrame) -> list[str]:
    """The keys that were swept and take more than one value in `df`: per campaign, its sweep
    file's keys (or the fallback without one), then the keys that tell campaigns apart."""
    if df.empty:
        return []
    dims: list[str] = []
    groups = df.groupby("campaign_dir", dropna=False, sort=False) if "campaign_dir" in df.columns \
        and df["campaign_dir"].notna().any() else [(None, df)]
    for cdir, runs in groups:
        keys = sweep_keys(cdir) if isinstance(cdir, str) else None
        own = [k for k in keys if varies(runs, k)] if keys is not None else fallback_dimensions(runs)
        dims += own
    if "campaign" in df.columns and df["campaign"].nunique() > 1:
        per = df.groupby("campaign", sort=False)
        for key in load.config_columns(df):
            if key in COMPUTED_KEYS or key == "seed" or not varies(df, key):
                continue
            if all(len(distinct(g[key])) == 1 for _, g in per):
                dims.append(key)
    return [k for k in dict.fromkeys(dims) if k != "seed" and varies(df, k)]


def derived_keys(df: pd.DataFrame, dims: Sequence[str] | None = None) -> list[str]:
    """The keys that vary in `df` without being dimensions: they follow the swept keys."""
    dims = swept_dimensions(df) if dims is None else list(dims)
    return [k for k in load.config_columns(df) if k != "seed" and k not in dims and varies(df, k)]


def sort_runs(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """`df` ordered along `keys` (the first slowest; numbers by size, unset last), then by
    repetition and run id."""
    order = [k for k in keys if k in df.columns]
    tail = [c for c in ("repetition", "run_id") if c in df.columns]
    if df.empty or not order + tail:
        return df
    ranks = pd.DataFrame(index=df.index)
    for i, key in enumerate(order + tail):
        keyed = df[key].map(sort_key)
        rank = {k: r for r, k in enumerate(sorted(set(keyed)))}
        ranks[f"_{i}"] = keyed.map(rank)
    return df.loc[ranks.sort_values(list(ranks.columns), kind="stable").index]
