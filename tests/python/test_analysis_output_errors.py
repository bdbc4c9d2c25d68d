"""The analysis CLI when its output cannot be written (issue 35, docs/reliability.md "Hostile
input"), for every command that writes files: `-o` naming an existing directory where a file goes
(or a file where a folder goes) is exit 2 with a clear message; a read-only file system
and a full one (real tmpfs mounts; we are root in CI, and the test says why it skips where mount is
not permitted) are exit 1 with the system's reason and what to do, no traceback, and nothing left
behind: no `*.tmp` file, no staging folder, no half figures folder, and an earlier report in the
same place stays as it was.

The commands run in this process (analysis_cli.cli), not as ~40 subprocesses; one runs as a process
(cli_process) for the entry point's own exit status."""
import contextlib
import errno
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest
import yaml

from analysis_cli import cli, cli_process
from conftest import base_config
from test_analysis_network_study import make_campaigns
from trainscale_analysis import predict


@contextlib.contextmanager
def tmpfs(path, options):
    """A real tmpfs mounted at `path` with `options` (e.g. "ro", "size=64k")."""
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        reason = f"mount -t tmpfs -o {options} is not permitted here: {(r.stderr or r.stdout).strip()}"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def contents(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def expect_failure(r, code, *needles):
    assert r.returncode == code, f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert "Traceback" not in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, f"{n!r} not in {r.stderr}"


def test_an_existing_directory_as_o_is_a_usage_error(grid_dir, scaling_dir, tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    expect_failure(cli("report", grid_dir, "-o", out), 2, f"-o {out} is a directory", "report.html")
    expect_failure(cli("compare", scaling_dir, scaling_dir, "-o", out), 2, "is a directory")
    expect_failure(cli("compression", grid_dir, "-o", out), 2, "is a directory")
    # The Markdown summary's name taken by a directory: refused before anything is written.
    (tmp_path / "r.md").mkdir()
    expect_failure(cli("report", grid_dir, "-o", tmp_path / "r.html"), 2, "r.md is a directory")
    assert contents(out) == [] and contents(tmp_path) == ["r.md", "reports"]


def test_a_read_only_file_system_is_exit_1_and_leaves_nothing(grid_dir, tmp_path):
    with tmpfs(tmp_path / "ro", "ro") as ro:
        # The entry point's own exit status once (a process), then in this process.
        for run_cli, out in ((cli_process, ro / "r.html"), (cli, ro / "sub" / "r.html")):
            expect_failure(run_cli("report", grid_dir, "-o", out), 1, "Read-only file system",
                           "write elsewhere with -o", "nothing was written")
        assert contents(ro) == []


def test_a_full_disk_is_exit_1_and_keeps_the_earlier_report(grid_dir, scaling_dir, tmp_path):
    with tmpfs(tmp_path / "full", "size=64k") as full:
        # An earlier report, small enough to fit; the new one (figures of the grid) does not.
        (full / "r.html").write_text("earlier report")
        (full / "r.md").write_text("earlier summary")
        (full / "r_figures").mkdir()
        (full / "r_figures" / "scaling.png").write_bytes(b"earlier figure")
        before = contents(full)
        r = cli("report", grid_dir, "-o", full / "r.html")
        expect_failure(r, 1, "No space left on device", "free space there or write elsewhere with -o",
                       "nothing was written")
        assert contents(full) == before, "no *.tmp, staging folder or new figure left behind"
        assert (full / "r.html").read_text() == "earlier report"
        assert (full / "r_figures" / "scaling.png").read_bytes() == b"earlier figure"
        expect_failure(cli("compare", scaling_dir, scaling_dir, "-o", full / "c" / "c.html"), 1,
                       "No space left on device")
        assert contents(full) == before
    # The same report where there is room: written whole, the earlier figure replaced.
    r = cli("report", grid_dir, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").stat().st_size > 1000 and list((tmp_path / "r_figures").glob("*.png"))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp")]


# ---- every other command that writes files: compression, checkpoint-io, predict, sim-study,
# network-study, archive (all through staged_files.StagedFiles) and predict-study ----------------

def _checkpoint_io_file(path):
    with h5py.File(path, "w") as f:
        a = f.attrs
        for k, v in {"schema": "trainscale-checkpoint-io/1", "model": "lenet", "storage": "local",
                     "file_system": "tmpfs", "host": "h", "cpu_model": "c", "note": "", "git_sha": "abc"}.items():
            a[k] = v
        for k, v in {"bytes": 1000, "repeats": 2, "write_gbps": 1.0, "read_gbps": 2.0}.items():
            a[k] = v
        f["checkpoint/write_seconds"] = np.array([1.0, 1.1])
        f["checkpoint/read_seconds"] = np.array([0.5, 0.6])
    return path


def _prediction_file(path):
    with h5py.File(path, "w") as f:
        f.attrs["schema"] = "trainscale-predict/1"
        f.attrs["config"] = yaml.safe_dump(base_config())
        f.attrs["cluster"] = "name: local\n"
        g = f.create_group("predict")
        for k in predict.PER_COUNT:
            g[k] = np.array([1.0, 2.0])
        for k in ("layer_bound", "layer_fp", "layer_bp_gc", "layer_bp_wu"):
            g[k] = np.ones((2, 3))
    return path


def _simulated_runs(grid_dir, root):
    """The grid's run files as trainscale-sim's (simulated = 1, the cluster, the model's prediction)."""
    root.mkdir()
    for src in sorted((grid_dir / "runs").glob("*.h5")):
        shutil.copy(src, root / src.name)
        with h5py.File(root / src.name, "r+") as f:
            f.attrs["simulated"] = 1
            f.attrs["sim_cluster"] = "name: sim\n"
            for k in ("predicted_step_time", "predicted_comm", "predicted_exposed_comm"):
                f["summary"].attrs[k] = 0.01
            for k in ("comm", "comm_wait", "forward", "backward"):
                if k not in f["timing"]:
                    f["timing"][k] = np.full_like(f["timing/step"][...], 0.001)
    return root


@pytest.fixture(scope="module")
def commands(grid_dir, tmp_path_factory):
    """Each command's arguments but -o, and the output -o takes under a directory (a file or a folder)."""
    tmp = tmp_path_factory.mktemp("inputs")
    camps = make_campaigns(tmp)
    (tmp / "links.json").write_text(json.dumps({r: {"iperf3_gbps": 1.0, "alpha_us": 20.0, "bandwidth_gbps": 1.0}
                                                for r in ("1", "10", "off")}))
    (tmp / "predictions.json").write_text("[]")
    return {
        "compression": (["compression", grid_dir / "runs"], "z.md"),
        "checkpoint-io": (["checkpoint-io", _checkpoint_io_file(tmp / "ckpt.h5")], "c.md"),
        "predict": (["predict", _prediction_file(tmp / "pred.h5"), "--runs", grid_dir / "runs"], "p.md"),
        "sim-study": (["sim-study", _simulated_runs(grid_dir, tmp / "sim")], "sim"),
        "network-study": (["network-study", *camps, "--predictions", tmp / "predictions.json",
                           "--links", tmp / "links.json"], "net"),
        "archive": (["archive", grid_dir], "archive"),
    }


OTHER_COMMANDS = ("compression", "checkpoint-io", "predict", "sim-study", "network-study", "archive")


@pytest.mark.parametrize("command", OTHER_COMMANDS)
def test_every_command_writes_where_there_is_room(commands, command, tmp_path):
    args, name = commands[command]
    r = cli(*args, "-o", tmp_path / "out" / name)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / name).exists() and not [p for p in (tmp_path / "out").rglob(".*")]


@pytest.mark.parametrize("command", OTHER_COMMANDS)
def test_every_command_refuses_a_directory_where_a_file_goes_and_a_file_where_a_folder_goes(commands, command,
                                                                                            tmp_path):
    args, name = commands[command]
    taken = tmp_path / name
    taken.mkdir() if name.endswith(".md") else taken.write_text("a file")
    expect_failure(cli(*args, "-o", taken), 2, str(taken))
    assert contents(tmp_path) == [name]


@pytest.mark.parametrize("command", OTHER_COMMANDS)
def test_every_command_on_a_read_only_file_system_is_exit_1_and_leaves_nothing(commands, command, tmp_path):
    args, name = commands[command]
    with tmpfs(tmp_path / "ro", "ro") as ro:
        expect_failure(cli(*args, "-o", ro / "sub" / name), 1, "Read-only file system", "nothing was written")
        assert contents(ro) == []


def _fill(d):
    """Fill the file system of `d` to the last byte."""
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


@pytest.mark.parametrize("command", OTHER_COMMANDS)
def test_every_command_on_a_full_disk_is_exit_1_and_keeps_the_earlier_output(commands, command, tmp_path):
    args, name = commands[command]
    with tmpfs(tmp_path / "full", "size=256k") as full:
        earlier = full / name
        if name.endswith(".md"):
            earlier.write_text("earlier output")
        else:
            earlier.mkdir()
            (earlier / "notes.txt").write_text("earlier output")
        _fill(full)
        before = contents(full)
        expect_failure(cli(*args, "-o", earlier), 1, "nothing was written")
        expect_failure(cli(*args, "-o", full / "new" / name), 1, "nothing was written")
        assert contents(full) == before, "no staging folder, half figure or new parent left behind"
        assert (earlier if name.endswith(".md") else earlier / "notes.txt").read_text() == "earlier output"


def test_predict_study_whose_predict_fails_leaves_nothing(tmp_path):
    """A `trainscale predict` that writes half its file and fails (as on a full disk): exit 1 with
    its message, and neither the prediction files nor the output folder are left."""
    fake = tmp_path / "trainscale"
    fake.write_text("#!/bin/sh\nwhile [ \"$1\" != --out ]; do shift; done\necho half > \"$2\"\n"
                    "echo 'cannot write: No space left on device' >&2\nexit 1\n")
    fake.chmod(0o755)
    study = tmp_path / "study.yaml"
    study.write_text("name: tiny\ncluster: configs/clusters/local.yaml\nworkers: '1..2'\nmodels: [lenet]\n"
                     "batch_per_worker: [8]\n")
    out = tmp_path / "out" / "study"
    expect_failure(cli("predict-study", study, "--binary", fake, "--out", out), 1,
                   "trainscale predict failed", "No space left on device", "nothing was written")
    assert contents(tmp_path) == ["study.yaml", "trainscale"]
