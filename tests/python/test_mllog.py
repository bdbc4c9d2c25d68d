"""The MLPerf logging stream of a run (`logging.mllog`, `trainscale show --mllog`) read by MLPerf's
own parser and compliance checker (the mlperf-logging package, installed by scripts/setup.sh into
.venv): docs/interoperability.md lists the rules that pass and those that cannot, and why."""
import json
import os
import shutil

import h5py
import pytest
import yaml

from trainscale_cli import FMNIST, run, write_config

mlp_compliance = pytest.importorskip("mlperf_logging.compliance_checker.mlp_compliance",
                                     reason="mlperf-logging is not installed (scripts/setup.sh installs it into .venv)")
from mlperf_logging.compliance_checker.mlp_parser import parse_file  # noqa: E402

RULESET = "4.0.0"  # the newest training rules that still know resnet

LENET = f"""\
model: lenet
dataset: {{name: fashion_mnist, format: idx, root: {FMNIST}}}
batch_per_worker: 64
lr: 0.05
lr_schedule: {{kind: cosine, warmup_epochs: 0.02}}
momentum: 0.9
weight_decay: 5.0e-4
steps: 100
threads: 2
eval: {{every_epochs: 0.1, target_accuracy: 0.7}}
log_every: 50
"""

# Two epochs of one step each: the log has every event of a longer run (two blocks, two
# evaluations) at a quarter of the CPU of 2 x 4 steps (ResNet-50 on 224x224 images, ~15 CPU-s).
RESNET = """\
model: resnet50
dataset: {name: synthetic, format: synthetic, synthetic_samples: 4}
batch_per_worker: 4
lr: 0.1
steps: 2
threads: 2
eval: {every_epochs: 1, target_accuracy: 0.5}
log_every: 1
"""


def checker_verdict(log, rules_path=None):
    """Runs the compliance checker's rules of training RULESET on `log`: True when every rule passed."""
    checker = mlp_compliance.make_checker("training", RULESET, False, False)
    return checker.check_file(str(log), rules_path or f"training_{RULESET}/common.yaml")


def common_rules_only(tmp_path):
    """training/common.yaml with the one line that goes on to the division's and the benchmark's
    rules (enqueue_config) removed: for a model MLPerf has no rules for (lenet)."""
    base = os.path.dirname(mlp_compliance.__file__)
    rules = yaml.safe_load(open(os.path.join(base, f"training_{RULESET}", "common.yaml")))
    division = next(r["KEY"] for r in rules if r.get("KEY", {}).get("NAME") == "submission_division")
    assert "enqueue_config" in division["POST"]
    division["POST"] = " s['compile_time_mins'] = 240 if v['value'] == 'open' else 30 "
    path = tmp_path / "common_only.yaml"
    path.write_text(yaml.safe_dump(rules))
    return path


def events(log):
    lines, errors = parse_file(str(log), ruleset=RULESET) if "ruleset" in parse_file.__code__.co_varnames \
        else parse_file(str(log))
    assert not errors, errors
    return lines


def run_with_mllog(tmp_path, name, text):
    cfg = write_config(tmp_path / f"{name}.yaml", text)
    log = tmp_path / f"{name}.mllog"
    res = run(["run", "--config", cfg, "--out", tmp_path / "out", "--set", f"logging.mllog={log}"])
    assert res.returncode == 0, res.stderr
    assert f"mllog: {log}" in res.stdout
    (h5,) = (tmp_path / "out").glob(f"{name}-*.h5")
    return log, h5


@pytest.mark.skipif(not FMNIST.exists(), reason="Fashion-MNIST is not installed (scripts/setup.sh installs it)")
def test_a_lenet_time_to_accuracy_log_passes_the_common_rules(tmp_path):
    log, h5 = run_with_mllog(tmp_path, "lenet", LENET)
    lines = events(log)
    keys = [ll.key for ll in lines]
    for key in ("init_start", "init_stop", "run_start", "block_start", "eval_accuracy", "run_stop"):
        assert key in keys, key
    times = [ll.timestamp for ll in lines]
    assert times == sorted(times), "events in time order"
    with h5py.File(h5) as f:
        accuracy = list(f["eval/accuracy"][:])
        assert [ll.value["value"] for ll in lines if ll.key == "eval_accuracy"] == pytest.approx(accuracy)
        reached = bool(f["summary"].attrs["time_to_target"] == f["summary"].attrs["time_to_target"])
        assert lines[keys.index("init_start")].timestamp == pytest.approx(f.attrs["setup_start_unix"] * 1000, abs=1)
    stop = lines[keys.index("run_stop")].value["metadata"]["status"]
    assert stop == ("success" if reached else "aborted") and reached, "LeNet reaches 0.7 within 100 steps"
    assert checker_verdict(log, common_rules_only(tmp_path))
    # With the whole ruleset the checker looks for rules of benchmark 'lenet', which MLPerf has not.
    assert lines[keys.index("submission_benchmark")].value["value"] == "lenet"


def test_a_resnet50_log_passes_the_whole_open_division_ruleset(tmp_path):
    log, h5 = run_with_mllog(tmp_path, "resnet", RESNET)
    assert checker_verdict(log)  # common, open_common and open_resnet
    broken = tmp_path / "broken.mllog"
    broken.write_text("".join(l for l in log.read_text().splitlines(True) if '"run_stop"' not in l))
    assert not checker_verdict(broken), "the checker does check: without run_stop the log fails"
    # show --mllog makes the same stream from the run file, byte for byte.
    again = tmp_path / "again.mllog"
    res = run(["show", h5, "--mllog", again])
    assert res.returncode == 0, res.stderr
    assert again.read_text() == log.read_text()


def test_a_run_file_without_wall_times_has_no_mllog_stream(tmp_path):
    mlp = RESNET.replace("model: resnet50", "model: mlp").replace("synthetic_samples: 4", "synthetic_samples: 64")
    log, h5 = run_with_mllog(tmp_path, "mlp", mlp)
    old = tmp_path / "old.h5"
    shutil.copy(h5, old)
    with h5py.File(old, "r+") as f:
        del f["train/wall_time"]
    res = run(["show", old, "--mllog", tmp_path / "none.mllog"])
    assert res.returncode == 1 and "/train/wall_time is missing" in res.stderr
    assert not (tmp_path / "none.mllog").exists()
    # A /config without a hyperparameter's key: its event's value is JSON null, the line still parses.
    lacking = tmp_path / "lacking.h5"
    shutil.copy(h5, lacking)
    with h5py.File(lacking, "r+") as f:
        del f["config"].attrs["momentum"]
    res = run(["show", lacking, "--mllog", tmp_path / "lacking.mllog"])
    assert res.returncode == 0, res.stderr
    momentum = [ll for ll in events(tmp_path / "lacking.mllog") if ll.key == "sgd_opt_momentum"]
    assert len(momentum) == 1 and momentum[0].value["value"] is None
