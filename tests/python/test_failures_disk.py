"""Out of disk (docs/reliability.md "Failures"): a run whose output or campaign directory fills
up ends with exit 1 and a clear error (the file, "No space left on device", what to do), leaves
no run file and no temporary file behind, marks no task done, and exits cleanly (no SIGSEGV or
"infinite loop closing library" from HDF5 at exit). The fault is real: a small tmpfs mounted
for the test (we run as root here and in CI; skipped with the reason where mount is refused)."""
import os
import pathlib
import subprocess
import threading
import time

import pytest
import yaml

from trainscale_cli import REPO, env, require_binary, run, write_config

# 60 steps of an MLP: a run file of about 60 KB, far more than the room the tests leave.
CONFIG = """\
model: mlp
dataset: {name: synthetic, format: synthetic, synthetic_samples: 512}
batch_per_worker: 8
lr: 0.01
steps: 60
threads: 1
workers: 1
dist: {strategy: sync, allreduce: mpi, overlap: false}
eval: {every_epochs: 0}
log_every: 30
"""


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs; fill(free_bytes) leaves only that much room on it."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")

    def fill(free_bytes):
        st = os.statvfs(mount_point)
        room = st.f_bavail * st.f_frsize - free_bytes
        if room > 0:
            (mount_point / "filler").write_bytes(b"\0" * room)
        return mount_point

    try:
        yield fill
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def assert_clean_failure(proc):
    assert proc.returncode == 1, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for crash in ("Segmentation fault", "Signal: Segmentation", "infinite loop closing library", "internal error"):
        assert crash not in proc.stderr, proc.stderr
    assert "No space left on device" in proc.stderr, proc.stderr
    assert "free space there" in proc.stderr, "the message says what to do"


def leftovers(directory):
    """Run files and temporary files in `directory` (recursively)."""
    return [p for p in pathlib.Path(directory).rglob("*") if p.suffix == ".h5" or ".tmp-" in p.name]


def test_run_out_of_disk_leaves_no_run_file(small_disk, tmp_path):
    out = small_disk(free_bytes=16 * 1024)
    cfg = write_config(tmp_path / "full.yaml", CONFIG)
    proc = run(["run", "--config", cfg, "--out", out], timeout=300)
    assert_clean_failure(proc)
    assert "full-" in proc.stderr and ".h5" in proc.stderr, "the error names the run file"
    assert leftovers(out) == [], leftovers(out)


def test_campaign_task_out_of_disk_is_failed_not_done(small_disk, tmp_path):
    disk = small_disk(free_bytes=0)
    (disk / "filler").unlink()  # the campaign is written first, then the disk is filled
    write_config(tmp_path / "base.yaml", CONFIG)
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: full_disk\nbase: " + str(tmp_path / "base.yaml") +
                         "\nmatrix: {seed: [1]}\n")
    camp = disk / "campaign"
    proc = run(["sweep", "expand", sweep, "--out", camp])
    assert proc.returncode == 0, proc.stderr
    run_id = yaml.safe_load((camp / "manifest.yaml").read_text())["runs"][0]["run_id"]
    small_disk(free_bytes=24 * 1024)

    proc = run(["run", "--manifest", camp, "--index", 0], timeout=300)
    assert_clean_failure(proc)
    runs = camp / "runs"
    assert not (runs / f"{run_id}.DONE").exists(), "a task whose run file was not written is not done"
    assert not (runs / f"{run_id}.RUNNING").exists()
    assert leftovers(camp) == [], leftovers(camp)
    # The failed write freed its room again, so the reason was recorded.
    marker = (runs / f"{run_id}.FAILED").read_text()
    assert "No space left on device" in marker, marker

    status = run(["sweep", "status", camp])
    assert status.returncode in (0, 1), status.stderr
    assert "failed" in status.stdout, status.stdout


def hold_the_disk_full(disk, stop):
    """Takes every page of the disk as it comes free, as another job writing there would: a run
    that fails for want of room then gets none back for its FAILED marker."""
    fd = os.open(disk / "hog", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    page = b"\0" * 4096
    try:
        while not stop.is_set():
            try:
                os.write(fd, page)
            except OSError:
                time.sleep(0.0005)
    finally:
        os.close(fd)


def test_the_failed_marker_is_written_on_a_disk_held_full(small_disk, tmp_path):
    """The FAILED marker goes through the room reserved for it when the run starts
    (core/marker_reserve.h): 8 runs in a row, each failing on a disk that another writer keeps
    full from the moment the reserve exists, each leave the marker with the reason."""
    disk = small_disk(free_bytes=10 ** 9)  # nothing filled: the writer below takes it all
    cfg = write_config(tmp_path / "full.yaml", CONFIG.replace("steps: 60", "steps: 400"))
    for attempt in range(8):
        out = disk / f"out{attempt}"
        proc = subprocess.Popen([str(require_binary()), "run", "--config", str(cfg), "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)
        stop = threading.Event()
        hog = threading.Thread(target=hold_the_disk_full, args=(disk, stop), daemon=True)
        try:
            while not list(out.glob(".*.FAILED.reserve")):  # the run has taken its room
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.001)
            hog.start()
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            stop.set()
            if hog.is_alive():
                hog.join()
            if proc.poll() is None:
                proc.kill()
        (disk / "hog").unlink()
        assert proc.returncode == 1, (attempt, stdout, stderr)
        assert "No space left on device" in stderr, (attempt, stderr)
        (failed,) = out.glob("*.FAILED")
        assert "No space left on device" in failed.read_text(), (attempt, failed.read_text())
        assert not list(out.glob(".*.reserve")) and leftovers(out) == [], list(out.iterdir())


def test_a_reserve_left_by_a_killed_run_is_taken_over_and_removed(tmp_path):
    cfg = write_config(tmp_path / "ok.yaml", CONFIG)
    out = tmp_path / "out"
    assert run(["run", "--config", cfg, "--out", out], timeout=300).returncode == 0
    (run_file,) = out.glob("*.h5")
    stale = out / f".{run_file.stem}.FAILED.reserve"  # what a kill -9 during the run leaves
    stale.write_text("left by a killed run")
    proc = run(["run", "--config", cfg, "--out", out, "--overwrite"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists() and not list(out.glob(".*.reserve"))
