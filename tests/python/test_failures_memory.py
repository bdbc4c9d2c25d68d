"""Memory and machine bounds (docs/reliability.md "Failures"). Before it allocates the activations,
loaders and exchange buffers, a run estimates each rank's peak resident memory, records it in the
run file (/memory) and refuses (exit 2) a configuration that cannot fit in the memory it may use,
naming the estimate, the limit, where the limit comes from and what to change. The estimate is
checked against the peak resident memory the kernel measured (VmHWM, also in /memory), and the
refusal against real limits: RLIMIT_AS set with prlimit, and TRAINSCALE_MEMORY_LIMIT (the
documented stand-in for a node's limit). The values that crashed or hung a run in the probe of
issue 16 (threads far above the cores, an enormous prefetch, batch or epoch count) are refused
with exit 2."""
import os
import shutil
import subprocess

import h5py
import pytest

from trainscale_cli import BINARY, REPO, env, require_binary, run, write_config

CONFIG = """\
model: mlp
dataset: {name: synthetic, format: synthetic, synthetic_samples: 2048}
batch_per_worker: 16
lr: 0.01
steps: 3
threads: 1
workers: 1
dist: {strategy: sync, allreduce: mpi, overlap: false}
eval: {every_epochs: 0}
log_every: 10
"""


def run_with(tmp_path, sets, name="m", extra_env=None, prefix=()):
    cfg = write_config(tmp_path / f"{name}.yaml", CONFIG)
    args = list(prefix) + [str(require_binary()), "run", "--config", str(cfg), "--out", str(tmp_path / "out")]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    e = env()
    e.update(extra_env or {})
    return subprocess.run(args, capture_output=True, text=True, env=e, timeout=300, cwd=REPO)


@pytest.mark.parametrize("sets", [
    {"model": "mlp", "batch_per_worker": 1024},
    {"model": "lenet", "batch_per_worker": 16},
    {"model": "lenet", "batch_per_worker": 384},
    {"model": "lenet", "batch_per_worker": 128, "precision": "bf16"},
    {"model": "resnet20", "batch_per_worker": 64},
])
def test_estimate_is_within_30_percent_of_the_measured_peak(tmp_path, sets):
    proc = run_with(tmp_path, sets)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = (tmp_path / "out").glob("*.h5")
    with h5py.File(path) as f:
        memory = dict(f["memory"].attrs)
    estimate, peak = memory["estimate_bytes"], memory["peak_rss_bytes"]
    parts = ["process", "parameters", "optimizer", "loader", "exchange", "recording"]
    assert estimate == sum(memory[p + "_bytes"] for p in parts) + max(memory["activations_train_bytes"],
                                                                    memory["activations_eval_bytes"]), memory
    assert memory["activations_train_bytes"] > 0 and memory["limit_bytes"] > 0 and memory["limit_source"], memory
    assert 0.7 * peak <= estimate <= 1.3 * peak, f"estimate {estimate} vs peak {peak}: {memory}"


def test_refused_under_a_real_address_space_limit(tmp_path):
    prlimit = shutil.which("prlimit")
    if not prlimit:
        pytest.skip("prlimit (util-linux) is not installed")
    # About 3.8 GiB of activations (lenet at batch 8192) under a 3 GiB address-space limit.
    proc = run_with(tmp_path, {"model": "lenet", "batch_per_worker": 8192, "dataset.synthetic_samples": 8192},
                    prefix=[prlimit, f"--as={3 << 30}"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert "memory: this run needs about" in err and "activations" in err, err
    assert "RLIMIT_AS (ulimit -v) 3.0 GiB" in err, "names the limit and where it comes from"
    assert "Lower batch_per_worker" in err, "says what to change"
    assert not list((tmp_path / "out").glob("*.h5"))


def test_refused_under_a_node_limit_shared_by_its_ranks(tmp_path):
    proc = run_with(tmp_path, {"model": "lenet"}, extra_env={"TRAINSCALE_MEMORY_LIMIT": "40M"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "a rank may use at most 40.0 MiB here: TRAINSCALE_MEMORY_LIMIT 40.0 MiB" in proc.stderr, proc.stderr
    proc = run_with(tmp_path, {"model": "lenet"}, extra_env={"TRAINSCALE_MEMORY_LIMIT": "lots"})
    assert proc.returncode == 2 and "TRAINSCALE_MEMORY_LIMIT=lots: not a size" in proc.stderr, proc.stderr


# Within the static ranges of the schema (config/schema.cpp), beyond what this machine can hold.
@pytest.mark.parametrize("sets,expected", [
    ({"threads": 1000}, "key 'threads': 1000 compute threads per worker, but host"),
    ({"dataset.loader_threads": 200}, "key 'dataset.loader_threads': 200 loader threads per worker"),
    ({"dataset.prefetch": 1024, "batch_per_worker": 65536, "dataset.synthetic_samples": 65536}, "lower dataset.prefetch"),
    ({"model": "lenet", "batch_per_worker": 1000000, "dataset.synthetic_samples": 1000000}, "batch_per_worker (each sample"),
    ({"steps": 10 ** 13}, "key 'steps': must be at most 1000000000"),  # epochs/train_samples: test_hostile_input.py
])
def test_crashing_values_are_refused_with_exit_2(tmp_path, sets, expected):
    proc = run_with(tmp_path, sets)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert expected.lower() in proc.stderr.lower(), proc.stderr
