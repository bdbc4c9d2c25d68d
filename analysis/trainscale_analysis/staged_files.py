"""Outputs written all or nothing: every analysis command that writes files (report, compare,
predict, compression, checkpoint-io, predict-study, sim-study, network-study, archive) writes them
through `StagedFiles` (docs/reliability.md "Hostile input").

Everything is written into a hidden staging directory inside the output's directory
(`.<name>.<random>.tmp/`: the same file system, so putting it in place is renames, which need no
free space); `commit` then moves each staged entry into place, folders before files and the
named files last in their order (so a document never names a figure that is not there yet). A
failure before that (a full disk, a read-only file system, an error while plotting) removes the
staging directory and any parent directory this created: nothing is left behind and an earlier
output stays as it was.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Sequence

FIGURE_SUFFIXES = (".png", ".svg")


class OutputError(ValueError):
    """An output path that cannot be written to (a directory where a file goes): a usage error
    (the CLI exits 2)."""


def is_not_figure(earlier: Path) -> bool:
    """Default for what an earlier folder keeps: everything but figures (*.png, *.svg)."""
    return earlier.suffix not in FIGURE_SUFFIXES


class StagedFiles:
    """Entries of directory `root` written all or nothing (see the module's text).

    `files`: names in `root` that must be files (OutputError if one is a directory); they are
    committed last, in this order. A staged folder replaces an earlier folder of its name whole,
    except the earlier entries `keep` accepts that the new folder lacks (default: everything but
    figures, so a figures folder sheds old figures and keeps notes someone put there)."""

    def __init__(self, root: str | Path, label: str, files: Sequence[str] = (),
                 keep: Callable[[Path], bool] = is_not_figure):
        self.root, self.files, self.keep = Path(root), list(files), keep
        if self.root.exists() and not self.root.is_dir():
            raise OutputError(f"{self.root} exists and is not a directory; the output goes into it: "
                              f"move it away or choose another -o")
        for name in self.files:
            if (self.root / name).is_dir():
                raise OutputError(f"{self.root / name} is a directory, not a file; move it away or "
                                  f"choose another -o")
        self.committed = False
        # Parent directories this makes, innermost first: removed again on failure.
        self.created = [p for p in [self.root, *self.root.parents] if not p.exists()]
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.stage = Path(tempfile.mkdtemp(prefix=f".{label}.", suffix=".tmp", dir=self.root))
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> "StagedFiles":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if not self.committed:
            self.abort()
        return False

    def path(self, name: str) -> Path:
        """Where to write the output `root/name` until commit."""
        return self.stage / name

    def abort(self) -> None:
        """Remove everything this wrote (the staging directory, parents it created)."""
        stage = getattr(self, "stage", None)
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        for d in self.created:  # innermost first
            try:
                d.rmdir()
            except OSError:
                break  # not made by this, or not empty

    def commit(self) -> None:
        """Move every staged entry into `root`: folders, other files, then `files` in order."""
        entries = sorted(self.stage.iterdir())
        folders = [p for p in entries if p.is_dir()]
        others = [p for p in entries if not p.is_dir() and p.name not in self.files]
        named = [self.stage / n for n in self.files if (self.stage / n).exists()]
        earlier = Path(tempfile.mkdtemp(prefix="earlier.", dir=self.stage))
        for folder in folders:
            self._replace_folder(folder, earlier / folder.name)
        for p in others + named:
            os.replace(p, self.root / p.name)
        self.committed = True
        shutil.rmtree(self.stage, ignore_errors=True)

    def _replace_folder(self, staged: Path, old: Path) -> None:
        target = self.root / staged.name
        if target.is_dir():
            os.replace(target, old)
        try:
            os.replace(staged, target)
        except BaseException:
            if old.is_dir():
                os.replace(old, target)
            raise
        if old.is_dir():
            for p in old.iterdir():
                if self.keep(p) and not (target / p.name).exists():
                    os.replace(p, target / p.name)
