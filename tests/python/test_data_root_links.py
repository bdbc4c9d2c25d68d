"""Symlinks and special files (issue 35): the tree walks of the page-cache pass and of node-local
staging read each directory once. A symlink loop (`ln -s . ROOT/a`), a second link to a walked
directory, or a directory link out of the root is refused naming the link (exit 1), where the
walk used to recurse without end or read unrelated files. A FIFO named like a data file, a
checkpoint or a run file is refused or skipped, never waited on (docs/reliability.md)."""
import os

import pytest

from small_idx import write_small_idx
from trainscale_cli import run, write_config

CONFIG = """\
model: lenet
dataset: {{name: fashion_mnist, root: "{root}", cache: {cache}{extra}}}
batch_per_worker: 32
steps: 2
lr: 0.05
threads: 1
eval: {{every_epochs: 0}}
"""


def train(tmp_path, root, cache="warm", extra=""):
    cfg = write_config(tmp_path / "run.yaml", CONFIG.format(root=root, cache=cache, extra=extra))
    return run(["run", "--config", cfg, "--out", tmp_path / "out", "--overwrite"], timeout=120)


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_a_symlink_loop_in_the_data_root_is_refused_naming_the_link(tmp_path, cache):
    root = write_small_idx(tmp_path / "data")
    os.symlink(".", root / "a")
    os.symlink(".", root / "b")
    res = train(tmp_path, root, cache)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "already read (a symlink loop" in res.stderr and f"{root}/a" in res.stderr, res.stderr


def test_a_directory_link_out_of_the_root_is_refused(tmp_path):
    root = write_small_idx(tmp_path / "data")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text("unrelated")
    os.symlink(tmp_path / "elsewhere", root / "docs")
    res = train(tmp_path, root)
    assert res.returncode == 1 and "outside the data root" in res.stderr and f"{root}/docs" in res.stderr, res.stderr


def test_staging_refuses_a_loop_too_and_a_plain_tree_still_trains(tmp_path):
    root = write_small_idx(tmp_path / "data")
    stage = f", stage: node_local, stage_dir: \"{tmp_path / 'scratch'}\""
    assert train(tmp_path, root, extra=stage).returncode == 0
    os.symlink("..", root / "up")  # a link to the root's parent, which holds the root: a loop
    res = train(tmp_path, root, extra=stage)
    assert res.returncode == 1 and f"{root}/up" in res.stderr, res.stderr


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_a_fifo_named_like_a_data_file_is_refused_not_waited_on(tmp_path, cache):
    root = write_small_idx(tmp_path / "data")
    images = next(p for p in root.iterdir() if p.name.startswith("train-images"))
    images.unlink()
    os.mkfifo(images)
    res = train(tmp_path, root, cache)  # the old open(2) waited for a writer for ever (timeout 120 s)
    assert res.returncode == 1, res.stdout + res.stderr
    assert images.name in res.stderr and "FIFO" in res.stderr, res.stderr


def test_a_fifo_named_like_a_checkpoint_or_a_run_file_is_skipped_not_waited_on(tmp_path):
    root = write_small_idx(tmp_path / "data")
    cfg = write_config(tmp_path / "ck.yaml", CONFIG.format(root=root, cache="warm", extra="").replace(
        "steps: 2", "steps: 4") + "checkpoint: {every_steps: 1, keep: true}\n")
    first = run(["run", "--config", cfg, "--out", tmp_path / "out"], timeout=120)
    assert first.returncode == 0, first.stderr
    newest = max((tmp_path / "out").glob("*.checkpoint.*"), key=lambda p: int(p.name.split(".")[-2]))
    newest.unlink()
    os.mkfifo(newest)
    res = run(["run", "--config", cfg, "--out", tmp_path / "out", "--resume"], timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"skipping checkpoint {newest}" in res.stdout + res.stderr and "not a regular file" in res.stdout + res.stderr
    fifo_run = tmp_path / "fifo.h5"
    os.mkfifo(fifo_run)
    shown = run(["show", fifo_run], timeout=60)
    assert shown.returncode == 1 and "not a regular file" in shown.stderr
