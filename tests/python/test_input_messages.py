"""What a careless or damaged input is told, through the CLI (docs/reliability.md "Hostile
input"): each message names the file, the line where it has one, and what is wrong, and exits 2
(issue 35's "messages to make clear"). The bytes are written for real: a NUL in a config, 3,000
levels of nesting, a file over the 1 MiB bound of every kind a person gives, a directory as
`base:`, a config only another user may read, devices, an empty cluster file, bytes that are
not UTF-8."""
import os
import shutil
import subprocess

import pytest

from trainscale_cli import BINARY, env, launcher_argv, run, write_config

BASE = "model: lenet\nbatch_per_worker: 32\nsteps: 2\nthreads: 1\nworkers: 1\n"
SIM = BINARY.parent / "trainscale-sim"


def expect_refused(res, *needles):
    assert res.returncode == 2, f"exit {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    for n in needles:
        assert n in res.stderr, f"{n!r} not in: {res.stderr}"


def test_a_nul_byte_is_named_at_its_own_line(tmp_path):
    cfg = tmp_path / "nul.yaml"
    cfg.write_bytes(b"model: lenet\nsteps: 2\x00\nthreads: 1\n")
    expect_refused(run(["run", "--config", cfg, "--out", tmp_path / "o"]), "nul.yaml:2: a NUL byte (\\x00) at column 9")


def test_deep_nesting_is_named_with_its_line_and_the_limit(tmp_path):
    cfg = write_config(tmp_path / "deep.yaml", BASE + "dataset: " + "[" * 3000 + "]" * 3000 + "\n")
    res = run(["run", "--config", cfg, "--out", tmp_path / "o"])
    expect_refused(res, "deep.yaml:6: mappings and lists are nested too deep here (more than 64 levels")
    assert "bad file" not in res.stderr


@pytest.mark.parametrize("kind", ["run config", "sweep file", "base run config", "site file", "cluster file"])
def test_every_input_file_above_1_mib_is_refused_by_its_size(tmp_path, kind):
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (1 << 20) + "\n")  # a comment: valid YAML, 1 MiB + 3 bytes
    size = big.stat().st_size
    base = write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.1, 0.2]}\n")
    args = {"run config": ["run", "--config", big],
            "sweep file": ["sweep", "expand", big, "--dry-run"],
            "base run config": ["sweep", "expand",
                                write_config(tmp_path / "s2.yaml", "base: big.yaml\nmatrix: {lr: [0.1]}\n"), "--dry-run"],
            "site file": ["sweep", "expand", sweep, "--site", big, "--dry-run"],
            "cluster file": ["predict", "--config", base, "--cluster", big, "--workers", "2"]}[kind]
    expect_refused(run(args, timeout=60), f"big.yaml: {size} bytes is too large for a {kind}",
                   "may be at most 1048576 bytes (1 MiB)")


def test_repetitions_above_the_maximum_say_so(tmp_path):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.1]}\nrepetitions: 100000000000\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]),
                   "sweep.yaml:3: key 'repetitions': 100000000000 is above the maximum 1000000")


def test_empty_sweep_and_a_directory_as_base_are_named(tmp_path):
    (tmp_path / "configs").mkdir()
    sweep = write_config(tmp_path / "sweep.yaml", "base: configs\nmatrix: {lr: [0.1]}\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]),
                   f"sweep.yaml:1: base: 'configs' is a directory ({tmp_path / 'configs'}), not a run config")
    empty = write_config(tmp_path / "empty.yaml", "")
    expect_refused(run(["sweep", "expand", empty, "--dry-run"]), "empty.yaml: the sweep file is empty (0 bytes)")


def test_an_unreadable_config_says_permission_denied(tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root to run trainscale as another user (setpriv), who then cannot read the file")
    cfg = write_config(tmp_path / "locked.yaml", BASE)
    cfg.chmod(0o600)  # root's own: user nobody may not read it
    tmp_path.chmod(0o755)
    res = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", str(BINARY), "run", "--config",
                          str(cfg), "--out", "/tmp"], capture_output=True, text=True, env=env(), timeout=60)
    expect_refused(res, "locked.yaml: cannot open the run config file (--config) (Permission denied)")


def test_devices_and_empty_cluster_files_are_named_for_what_they_are(tmp_path):
    cfg = write_config(tmp_path / "base.yaml", BASE)
    empty = write_config(tmp_path / "cluster.yaml", "")
    for binary, args in ((BINARY, ["predict", "--workers", "2"]), (SIM, ["run", "--workers", "2"])):
        if not binary.exists():
            continue  # a build without the simulator: trainscale predict reads cluster files the same way
        def sim(cluster):
            return subprocess.run([str(binary)] + args + ["--config", str(cfg), "--cluster", str(cluster)],
                                  capture_output=True, text=True, env=env(), timeout=60)
        expect_refused(sim("/dev/null"), "/dev/null: is not a regular file (a character device (it reads as an empty file))")
        expect_refused(sim(empty), "cluster.yaml: the cluster file is empty (0 bytes)")
    res = run(["data", "inspect", "/dev/zero"], timeout=30)
    expect_refused(res, "inspect: /dev/zero is neither a data file nor a directory")
    assert "filesystem error" not in res.stderr


def test_bytes_that_are_not_utf8_are_escaped_in_messages(tmp_path):
    cfg = tmp_path / "latin.yaml"
    cfg.write_bytes(BASE.encode() + b"caf\xe9: 1\n")
    res = subprocess.run([str(BINARY), "run", "--config", str(cfg)], capture_output=True, env=env(), timeout=60)
    assert res.returncode == 2
    assert b"unknown key 'caf\\xE9'" in res.stderr and b"\xe9" not in res.stderr, res.stderr
    res = subprocess.run([str(BINARY), "run", "--config", str(tmp_path).encode() + b"/\x1b[2Jx.yaml"],
                         capture_output=True, env=env(), timeout=60)
    assert res.returncode == 2 and b"\\x1B[2Jx.yaml: cannot open" in res.stderr and b"\x1b" not in res.stderr, res.stderr


def test_every_ranks_error_escapes_bytes_that_are_not_utf8(tmp_path):
    """Under mpirun each rank prints its own runtime error (app/cmd_run.cpp), escaped the same."""
    info = subprocess.run([str(BINARY), "info"], capture_output=True, text=True, env=env(), timeout=60).stdout
    flavor = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("mpi_flavor_built:"))
    cfg = tmp_path / "mpi.yaml"
    cfg.write_bytes(b"model: lenet\ndataset: {name: fashion_mnist, root: " + str(tmp_path).encode() +
                    b"/no\xffdir}\nworkers: 2\nsteps: 2\nthreads: 1\n")
    res = subprocess.run(launcher_argv(2, flavor) + [str(BINARY), "run", "--config", str(cfg), "--out",
                                                        str(tmp_path / "o")], capture_output=True, env=env(), timeout=120)
    assert res.returncode != 0
    errors = [line for line in res.stdout.splitlines() + res.stderr.splitlines() if line.startswith(b"trainscale run: rank")]
    assert errors and all(b"/no\\xFFdir" in line and b"\xff" not in line for line in errors), res.stderr
