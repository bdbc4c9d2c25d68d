"""Campaign discovery and run-file loading (HDF5 schema trainscale-run/1).

A campaign is a directory with an optional `manifest.yaml` (written by `trainscale sweep
expand`: a top-level `runs:` list of {index, run_id, config_id, config}) and `runs/`, holding
one `<run_id>.h5` per finished run plus `<run_id>.DONE` / `<run_id>.FAILED` /
`<run_id>.PREEMPTED` / `<run_id>.UNSUPPORTED` markers. A
directory with neither but with `*.h5` files at its top (the `--out DIR` of single
`trainscale run`s) is read as a campaign too. Every
run the campaign knows about becomes one row of the DataFrame `load_campaigns` returns:
finished runs (status ok or diverged, read from the file), failed runs (a FAILED marker and
no file; the marker's text is the message), preempted runs (a PREEMPTED marker and no file: a
signal stopped them after a checkpoint; `sweep resubmit --preempted` resumes them), unsupported
runs (an UNSUPPORTED marker: what the build, machine or GPU generation cannot run, found by
`sweep expand` or by the task; the marker's reason is the message), runs the
manifest lists that have none of these (status missing) and run files that cannot be read
(status unreadable: garbage or truncated bytes, no /summary group, /summary figures that are text
or NaN/inf where always measured, no /train group, or the file of another run under this one's
name; the message names the file and the reason, and the other runs are loaded as usual). Nothing
is dropped silently.

Attributes are read tolerantly (bytes or str, numpy scalars or Python ones) because the C++
writer and h5py may store strings either way.
"""
from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import h5py
import numpy as np
import pandas as pd
import yaml

from . import run_digest

SCHEMA = "trainscale-run/1"
SUPPORTED_SCHEMAS = (SCHEMA,)

# Root attributes that describe where and with what a run ran; stored as `env.<name>` columns
# (several share a name with config keys, e.g. mpi_flavor: the config says what was expected,
# the root attribute what was found).
ENV_ATTRS = (
    "version", "git_sha", "start_time", "end_time", "hosts", "rank_hosts", "local_ranks", "world_size", "mpi_flavor",
    "mpi_version", "mpi_tuning", "dist_transport", "loss_reads", "backend", "device", "device_name", "device_generation",
    "device_libraries", "cpu_model", "isa", "threads", "precision", "seed",
    # trainscale-sim's runs: simulated = 1 (absent, i.e. measured, in older files), the cluster
    # file and platform they ran on (docs/hdf5-schema.md).
    "simulated", "sim_cluster", "sim_platform",
)
SUMMARY_KEYS = (
    "images_per_s", "images_per_s_per_worker", "step_time_median", "step_time_p90",
    "warmup_steps", "final_train_loss", "min_train_loss", "final_accuracy", "best_accuracy",
    "time_to_target", "diverged",
    # Accelerator utilisation (/utilisation, docs/interoperability.md): the least utilised rank's,
    # the mean data-wait share, and the verdict against metrics.au_threshold (NaN without one).
    "au_min", "data_wait_share", "au_pass",
)
# /summary figures a finished run always measures (docs/hdf5-schema.md "/summary": NaN only
# where not applicable, and these always apply): finite numbers, or the file is unreadable.
MEASURED_SUMMARY_KEYS = ("images_per_s", "images_per_s_per_worker", "step_time_median", "step_time_p90",
                         "warmup_steps")
# /summary attributes that are text by design; every other one is a number.
TEXT_SUMMARY_KEYS = ("params_sha256",)
# Timing phases in the order they happen in a step; `step` is the whole step.
PHASES = ("data_wait", "forward", "backward", "comm", "comm_wait", "optimizer",
          "gather", "average", "broadcast")
STATUSES = ("ok", "diverged", "failed", "missing", "unreadable", "unsupported")

# Columns that identify a run rather than configure it.
ID_COLUMNS = ("campaign", "campaign_dir", "run_id", "config_id", "repetition", "index",
              "status", "message", "path")


class SchemaError(ValueError):
    """A run file whose schema this package does not know (or a file without a schema)."""


class CampaignError(ValueError):
    """A path that is not a campaign directory, or a manifest that cannot be read."""


def text(value: Any) -> str:
    """An HDF5 attribute as str, whether h5py returns bytes, numpy bytes or str."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return text(value[()])
    return str(value)


def scalar(value: Any) -> Any:
    """An HDF5 attribute as a plain Python value (str, int, float)."""
    if isinstance(value, np.ndarray):
        if value.shape == ():
            value = value[()]
        elif value.size == 1:
            value = value.reshape(())[()]
        else:
            return [scalar(v) for v in value.tolist()]
    if isinstance(value, (bytes, np.bytes_, str)):
        return text(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


_INT_RE = re.compile(r"^[+-]?\d+$")


def parse_config_value(value: Any) -> Any:
    """A /config attribute (stored as text) as int, float or bool where it parses, else str."""
    value = scalar(value)
    if not isinstance(value, str):
        return value
    s = value.strip()
    if _INT_RE.match(s):
        return int(s)
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    try:
        f = float(s)
    except ValueError:
        return value
    # "nan"/"inf" as a config value is almost certainly a name, not a number.
    return f if math.isfinite(f) else value


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'dist': {'allreduce': 'ring'}} -> {'dist.allreduce': 'ring'} (lists become text)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (list, tuple)):
            out[name] = ",".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def config_values(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flattened config values with numbers as numbers, whichever text wrote them: YAML reads
    `5e-04` (no dot) as a string where the run file's /config says `0.0005`, and the two must
    group as one value."""
    return {key: parse_config_value(value) for key, value in flat.items()}


def check_schema(path: Path, schema: str | None) -> None:
    if schema is None or schema == "":
        raise SchemaError(
            f"{path}: no 'schema' attribute on the root group; this is not a trainscale run "
            f"file (expected schema {SCHEMA})")
    if schema not in SUPPORTED_SCHEMAS:
        raise SchemaError(
            f"{path}: schema '{schema}' is not supported by this trainscale_analysis, which "
            f"reads {', '.join(SUPPORTED_SCHEMAS)}; update the analysis package "
            f"(analysis/ in the trainscale checkout that wrote the file) or re-run with a "
            f"driver that writes {SCHEMA}")


class UnreadableRunError(ValueError):
    """A run file whose bytes cannot be read as a run (corrupt, truncated, no /summary)."""


def read_run(path: str | os.PathLike) -> dict[str, Any]:
    """One run file as a flat dict: ids, status, config (dotted keys), summary, env, model.

    Raises SchemaError for an unknown schema version and UnreadableRunError for a file that
    is not readable HDF5 (garbage, truncated) or has no /summary (never counted as ok)."""
    path = Path(path)
    try:
        return _read_run_file(path)
    except SchemaError:
        raise
    except UnreadableRunError:
        raise
    # h5py reports corrupt and truncated files as OSError, and damaged objects inside an
    # opened file as KeyError, RuntimeError, ValueError or TypeError.
    except (OSError, KeyError, RuntimeError, ValueError, TypeError) as e:
        raise UnreadableRunError(f"{path}: {type(e).__name__}: {e}") from e


def unreadable_row(path: Path, reason: str) -> dict[str, Any]:
    """The row of a run file that could not be read: status unreadable, the reason as message."""
    return {"run_id": path.stem, "path": str(path), "status": "unreadable", "message": reason}


def _read_run_file(path: Path) -> dict[str, Any]:
    with h5py.File(path, "r") as f:
        root = {k: scalar(v) for k, v in f.attrs.items()}
        check_schema(path, root.get("schema"))
        if "summary" not in f:
            raise UnreadableRunError(
                f"{path}: no /summary group, so the run's result is incomplete (a file written "
                f"by a run that did not finish, or edited); it is not counted as ok")
        summary = dict(f["summary"].attrs.items())  # read once: h5py reads an attribute per access
        problem = summary_problem(summary) or (
            "" if isinstance(f.get("train"), h5py.Group) else "no /train group (the run's loss series)")
        if problem:
            raise UnreadableRunError(f"{path}: {problem}, which a finished run always records; the file was "
                                     f"damaged or edited, and it is not counted as ok")
        row: dict[str, Any] = {
            "run_id": root.get("run_id", path.stem),
            "config_id": root.get("config_id"),
            "campaign": root.get("campaign"),
            "status": root.get("status", "ok") or "ok",
            "message": root.get("message", ""),
            "path": str(path),
            "schema": root["schema"],
        }
        config: dict[str, Any] = {}
        if "config" in f:
            config = {k: parse_config_value(v) for k, v in f["config"].attrs.items()}
        elif isinstance(root.get("config"), str):
            try:
                config = config_values(flatten(yaml.safe_load(root["config"]) or {}))
            except yaml.YAMLError:
                config = {}
        for key, value in config.items():
            row[key] = value
        for key in ENV_ATTRS:
            if key in root:
                row[f"env.{key}"] = root[key]
        for key, value in summary.items():
            # The metrics the analysis uses by name keep it; every other summary attribute
            # (total_seconds, params_sha256, ...) is `summary.<key>`, so that it is never
            # mistaken for a configuration key that varied.
            name = key if key in SUMMARY_KEYS and key not in row else f"summary.{key}"
            row[name] = scalar(value)
        if "model" in f:
            for key, value in f["model"].attrs.items():
                row[f"model.{key}"] = scalar(value)
        # Summary `diverged` and status must agree; a NaN loss is a diverged run either way.
        if row.get("diverged") in (1, 1.0, True) and row["status"] == "ok":
            row["status"] = "diverged"
        if "train" in f and "loss" in f["train"]:
            row.update(_loss_areas(f["train"]))
        _remember_digest(path, f, summary.get("warmup_steps"))
    return row


def _remember_digest(path: Path, f: h5py.File, warmup_steps: Any) -> None:
    """Keep what the report needs of the open file (run_digest), so it is not opened again. A
    part that cannot be read is left to the reader that needs it, which says why."""
    try:
        run_digest.remember(path, run_digest.read_digest(f, timing_of(f), scalar(warmup_steps), scalar))
    except (OSError, KeyError, RuntimeError, ValueError, TypeError):
        pass


def digest(run: str | os.PathLike | Mapping[str, Any] | pd.Series) -> "run_digest.RunDigest | None":
    """What read_run kept of this run's file (run_digest), or None (read the file)."""
    path = run.get("path") if isinstance(run, (Mapping, pd.Series)) else run
    return run_digest.cached(path) if isinstance(path, (str, os.PathLike)) and str(path) else None


def summary_problem(attrs: Mapping[str, Any]) -> str:
    """What is wrong with a run file's /summary attributes ("" when nothing): a figure that is
    text, a measured figure (MEASURED_SUMMARY_KEYS) that is NaN or infinite, or any figure that is
    infinite (a diverged run's last loss may be)."""
    for key, raw in attrs.items():
        if key in TEXT_SUMMARY_KEYS:
            continue
        value = scalar(raw)
        if isinstance(value, str):
            return f"/summary {key} is a string ({value!r}), not a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"/summary {key} is not a number ({type(value).__name__})"
        if isinstance(value, float) and not math.isfinite(value) and (
                key in MEASURED_SUMMARY_KEYS or (math.isinf(value) and key != "final_train_loss")):
            return f"/summary {key} is {value}"
    return ""


def _loss_areas(train: h5py.Group) -> dict[str, float]:
    from .metrics import loss_area  # metrics imports nothing from here at import time

    loss = np.asarray(train["loss"][...], dtype=np.float64)
    out = {"loss_area_time": math.nan, "loss_area_samples": math.nan}
    if "time" in train:
        out["loss_area_time"] = loss_area(np.asarray(train["time"][...], np.float64), loss)
    if "samples" in train:
        out["loss_area_samples"] = loss_area(
            np.asarray(train["samples"][...], np.float64), loss)
    finite = loss[np.isfinite(loss)]
    out["series_min_loss"] = float(finite.min()) if finite.size else math.nan
    return out


@dataclass
class ManifestEntry:
    index: int | None
    run_id: str
    config_id: str | None
    config: dict[str, Any]


def read_manifest(campaign_dir: Path) -> tuple[str | None, list[ManifestEntry]]:
    """The campaign name and run entries of `<campaign>/manifest.yaml` (empty if absent)."""
    path = campaign_dir / "manifest.yaml"
    if not path.exists():
        return None, []
    try:
        # libyaml's safe loader where present: a 10^4-run manifest in 1 s, not 10.
        doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    except yaml.YAMLError as e:
        raise CampaignError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(doc, Mapping):
        raise CampaignError(f"{path}: expected a mapping with a 'runs:' list")
    name = doc.get("campaign")
    runs = doc.get("runs") or []
    if not isinstance(runs, list):
        raise CampaignError(f"{path}: 'runs:' must be a list of {{index, run_id, config_id, config}}")
    entries = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(runs):
        if not isinstance(entry, Mapping) or "run_id" not in entry:
            raise CampaignError(f"{path}: runs[{i}] has no run_id")
        if str(entry["run_id"]) in seen:
            raise CampaignError(f"{path}: runs[{i}] has run_id {entry['run_id']}, as runs[{seen[str(entry['run_id'])]}] "
                                f"does: two entries cannot share one run file (the manifest was edited after "
                                f"trainscale sweep expand wrote it)")
        seen[str(entry["run_id"])] = i
        config = entry.get("config") or {}
        if isinstance(config, str):  # resolved YAML text
            config = yaml.safe_load(config) or {}
        entries.append(ManifestEntry(
            index=entry.get("index", i), run_id=str(entry["run_id"]),
            config_id=None if entry.get("config_id") is None else str(entry["config_id"]),
            config=config_values(flatten(config)) if isinstance(config, Mapping) else {}))
    return (None if name is None else str(name)), entries


def identity_problem(path: Path, row: Mapping[str, Any], entry: "ManifestEntry | None") -> str:
    """Why a run file read under the name `path` is not that run's result ("" when it is): its
    root run_id is not the file's name, or its config_id is not the manifest entry's (a file
    copied or moved over another run's name, `cp runs/A-r0.h5 runs/B-r0.h5`)."""
    name = path.stem
    held_run = text(row.get("run_id")) or name
    held_config = None if row.get("config_id") is None else text(row.get("config_id"))
    wrong_run = held_run != name
    wrong_config = entry is not None and entry.config_id is not None and held_config != entry.config_id
    if not (wrong_run or wrong_config):
        return ""
    expected = f"run_id {name}" + (f", config_id {entry.config_id}" if entry is not None and entry.config_id else "")
    return (f"{path}: holds run_id {held_run}, config_id {held_config}, not {expected}: a run file copied or "
            f"moved over another run's name is not that run's result; it is not counted")


def failed_reason(marker: Path) -> str:
    """The reason a FAILED marker gives: its `reason:` line (the "key: value" marker format of
    src/core/run_marker.h), or the whole text of a marker written before that format."""
    text_ = marker.read_text(errors="replace")
    for line in text_.splitlines():
        if line.startswith("reason:"):
            return line[len("reason:"):].strip()
    return text_.strip()


def discover(campaign_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Every run of one campaign as a row dict (see the module docstring for statuses)."""
    cdir = Path(campaign_dir)
    if not cdir.is_dir():
        raise CampaignError(f"{cdir}: not a directory (expected a campaign directory with "
                            f"runs/ and optionally manifest.yaml)")
    runs_dir = cdir / "runs"
    manifest_name, entries = read_manifest(cdir)
    if not runs_dir.is_dir() and not entries and any(cdir.glob("*.h5")):
        runs_dir = cdir  # the --out directory of single `trainscale run`s: files at the top
    if not runs_dir.is_dir() and not entries:
        raise CampaignError(f"{cdir}: neither runs/ nor manifest.yaml found; is this a "
                            f"campaign directory (trainscale sweep expand --out DIR)?")
    files = {p.stem: p for p in sorted(runs_dir.glob("*.h5"))} if runs_dir.is_dir() else {}
    failed = {p.stem: p for p in sorted(runs_dir.glob("*.FAILED"))} if runs_dir.is_dir() else {}
    preempted = {p.stem: p for p in sorted(runs_dir.glob("*.PREEMPTED"))} if runs_dir.is_dir() else {}
    unsupported = {p.stem: p for p in sorted(runs_dir.glob("*.UNSUPPORTED"))} if runs_dir.is_dir() else {}
    done = {p.stem for p in runs_dir.glob("*.DONE")} if runs_dir.is_dir() else set()
    by_id = {e.run_id: e for e in entries}
    campaign = manifest_name or cdir.resolve().name

    rows = []
    ordered = [e.run_id for e in entries] + sorted(
        (set(files) | set(failed)) - set(by_id))
    for run_id in ordered:
        entry = by_id.get(run_id)
        if run_id in files:
            try:
                row = read_run(files[run_id])
                problem = identity_problem(files[run_id], row, entry)
                if problem:
                    raise UnreadableRunError(problem)
            except UnreadableRunError as e:
                row = unreadable_row(files[run_id], str(e))
                print(f"trainscale_analysis: unreadable run file {e}; reported with status "
                      f"unreadable and left out of the metrics", file=sys.stderr)
        else:
            row = {"run_id": run_id, "path": None}
            if run_id in unsupported:  # what this build, machine or GPU generation cannot run
                row["status"] = "unsupported"
                row["message"] = failed_reason(unsupported[run_id])
            elif run_id in preempted and not (run_id in failed and
                                            failed[run_id].stat().st_mtime > preempted[run_id].stat().st_mtime):
                row["status"] = "preempted"
                row["message"] = failed_reason(preempted[run_id]) or "stopped by a signal after a checkpoint"
            elif run_id in done:  # what `trainscale sweep status` says too: missing, not failed
                row["status"] = "missing"
                row["message"] = f"run file missing behind DONE (runs/{run_id}.h5)"
            elif run_id in failed:
                row["status"] = "failed"
                row["message"] = failed_reason(failed[run_id])
            else:
                row["status"] = "missing"
                row["message"] = "listed in manifest.yaml; no run file and no marker"
        if entry is not None:
            # The manifest's config fills in what a failed run's file cannot tell.
            for key, value in entry.config.items():
                row.setdefault(key, value)
            row.setdefault("config_id", entry.config_id)
            if row.get("config_id") is None:
                row["config_id"] = entry.config_id
            row["index"] = entry.index
        if run_id in failed and row.get("status") in ("ok", None):
            # A finished file and a FAILED marker: trust the marker, keep the message.
            row["status"] = "failed"
            row["message"] = failed_reason(failed[run_id])
        row.setdefault("message", "")
        row["campaign"] = row.get("campaign") or campaign
        row["campaign_dir"] = str(cdir)
        m = re.search(r"-r(\d+)$", run_id)
        row["repetition"] = int(m.group(1)) if m else 0
        rows.append(row)
    return rows


def load_campaigns(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> pd.DataFrame:
    """One row per run of every campaign in `paths`.

    Columns: run ids (`campaign`, `campaign_dir`, `run_id`, `config_id`, `repetition`,
    `index`, `status`, `message`, `path`), every config key (dotted names: `workers`,
    `batch_per_worker`, `lr`, `dist.allreduce`, ...), the /summary metrics
    (`images_per_s`, `time_to_target`, ...), `global_batch`, loss areas over wall-clock time
    and over samples (`loss_area_time`, `loss_area_samples`), the environment (`env.hosts`,
    `env.mpi_flavor`, ...) and the model (`model.parameters`, ...).
    Raises SchemaError for a file of an unknown schema version.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for p in paths:
        rows.extend(discover(p))
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=list(ID_COLUMNS))
    for col in ID_COLUMNS:
        if col not in df.columns:
            df[col] = None
    if "global_batch" not in df.columns and {"batch_per_worker", "workers"} <= set(df.columns):
        df["global_batch"] = pd.to_numeric(df["batch_per_worker"], errors="coerce") * \
            pd.to_numeric(df["workers"], errors="coerce")
    for col in SUMMARY_KEYS + ("loss_area_time", "loss_area_samples"):
        if col not in df.columns:
            df[col] = np.nan
        df[col] = pd.to_numeric(df[col], errors="coerce")
    # min_train_loss from the summary, else from the series (a file written by hand may lack it).
    if "series_min_loss" in df.columns:
        df["min_train_loss"] = df["min_train_loss"].fillna(df["series_min_loss"])
        df = df.drop(columns=["series_min_loss"])
    first = [c for c in ID_COLUMNS if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]].reset_index(drop=True)


def config_columns(df: pd.DataFrame) -> list[str]:
    """The columns of `df` that are run-configuration keys (not ids, summary, env or model)."""
    skip = set(ID_COLUMNS) | set(SUMMARY_KEYS) | {"schema", "loss_area_time",
                                                   "loss_area_samples"}
    return [c for c in df.columns if c not in skip and not c.startswith(
        ("env.", "model.", "summary."))]


def varying(df: pd.DataFrame, columns: Iterable[str] | None = None,
            ignore: Iterable[str] = ("seed",)) -> list[str]:
    """The config columns that take more than one value in `df` (seeds ignored)."""
    cols = config_columns(df) if columns is None else list(columns)
    ignore = set(ignore)
    return [c for c in cols if c not in ignore and c in df.columns
            and df[c].astype(str).nunique(dropna=False) > 1]


# ---- per-step series, read on demand ------------------------------------------------------

def _open(run: str | os.PathLike | Mapping[str, Any] | pd.Series) -> h5py.File:
    path = run.get("path") if isinstance(run, (Mapping, pd.Series)) else run
    if path is None or (isinstance(path, float) and math.isnan(path)):
        raise FileNotFoundError("this run has no run file (failed or missing)")
    return h5py.File(path, "r")


def load_series(run, group: str = "train") -> pd.DataFrame:
    """/train (or /eval) of one run as a DataFrame with one column per dataset."""
    with _open(run) as f:
        check_schema(Path(f.filename), scalar(f.attrs.get("schema")))
        if group not in f:
            return pd.DataFrame()
        return pd.DataFrame({k: np.asarray(v[...]) for k, v in f[group].items()
                             if isinstance(v, h5py.Dataset) and v.ndim == 1})


def load_timing(run) -> dict[str, np.ndarray]:
    """/timing of one run: phase -> float64 array [S, R] of seconds per step per rank (timing_of)."""
    with _open(run) as f:
        check_schema(Path(f.filename), scalar(f.attrs.get("schema")))
        return timing_of(f)


def timing_of(f: h5py.File) -> dict[str, np.ndarray]:
    """/timing of an open run file. An archived copy (archive.py) may keep every k-th step only
    (/timing attribute `archive_stride` = k, `archive_steps` = S): each kept row then stands for
    the k steps it was drawn from, so means, medians and warm-up slices read as they do on the
    full array."""
    if "timing" not in f:
        return {}
    stride = int(scalar(f["timing"].attrs.get("archive_stride", 1)))
    steps = scalar(f["timing"].attrs.get("archive_steps"))
    out = {}
    for name, ds in f["timing"].items():
        a = np.asarray(ds[...], dtype=np.float64)
        a = a.reshape(-1, 1) if a.ndim == 1 else a
        out[name] = np.repeat(a, stride, axis=0)[:int(steps)] if stride > 1 else a
    return out


def load_layers(run) -> pd.DataFrame:
    """/model/layers (compound: name, kind, descriptor, parameters, flops) as a DataFrame."""
    with _open(run) as f:
        if "model" not in f or "layers" not in f["model"]:
            return pd.DataFrame(columns=["name", "kind", "descriptor", "parameters", "flops"])
        data = f["model"]["layers"][...]
        return pd.DataFrame({name: [scalar(v) for v in data[name]]
                             for name in data.dtype.names})
