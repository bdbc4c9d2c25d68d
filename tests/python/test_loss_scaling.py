"""Loss scaling (train/loss_scaler.h) end to end on the CPU: a power-of-two static scale leaves
an fp32 trajectory bit for bit unchanged (scaling by 2^k commutes with every rounding of
backward), dynamic scaling skips the steps whose gradients overflow and halves its scale until
they fit, and both are recorded in the run file. With loss_reads: log the device takes those
decisions itself (the host defaults run them here) and reaches the same run. fp16 on a GPU uses
the same code (docs/gpu.md)."""
import h5py
import numpy as np
import yaml

from trainscale_cli import run, write_config
from test_cli_run import SHORT_LENET, run_file_of


def run_with(tmp_path, name, *sets):
    cfg = write_config(tmp_path / "lenet.yaml", SHORT_LENET)
    args = ["run", "--config", cfg, "--out", tmp_path / name, "--set", "eval.every_epochs=0"]
    for s in sets:
        args += ["--set", s]
    proc = run(args)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return run_file_of(tmp_path / name)


def test_static_power_of_two_scale_is_bit_exact_and_recorded(tmp_path):
    plain = run_with(tmp_path, "plain")
    scaled = run_with(tmp_path, "scaled", "loss_scale.mode=static", "loss_scale.init=1024")
    with h5py.File(plain) as a, h5py.File(scaled) as b:
        np.testing.assert_array_equal(a["train/loss"][:], b["train/loss"][:])
        assert a["summary"].attrs["skipped_steps"] == 0 and a["summary"].attrs["loss_scale_final"] == 1.0
        assert b["summary"].attrs["skipped_steps"] == 0 and b["summary"].attrs["loss_scale_final"] == 1024.0
        assert yaml.safe_load(b.attrs["config"])["loss_scale"] == {"mode": "static", "init": 1024, "growth_interval": 2000}


def test_dynamic_scale_skips_overflowing_steps_and_shrinks(tmp_path):
    # 2^127 times the loss gradient overflows f32 in backward: the first steps are skipped and
    # the scale halves each time until the gradients fit; then training proceeds. (Powers of two
    # keep the unscaled gradients exact.)
    init = 2.0 ** 127
    f = run_with(tmp_path, "dyn", "loss_scale.mode=dynamic", f"loss_scale.init={init!r}",
                 "loss_scale.growth_interval=1000")
    with h5py.File(f) as h:
        skipped = int(h["summary"].attrs["skipped_steps"])
        final = h["summary"].attrs["loss_scale_final"]
        loss = h["train/loss"][:]
    assert 1 <= skipped < 10
    assert final == init / 2 ** skipped
    assert loss[-5:].mean() < loss[:5].mean(), "training after the skipped steps must make progress"


def test_the_decisions_taken_on_the_device_are_the_hosts(tmp_path):
    """loss_reads: log keeps the scale, the overflow flag and the counts in the backend's memory
    (LossScaler::keep_on_device); the skipped steps, the scale and every weight must be those of
    the host's per-step decisions."""
    init = 2.0 ** 127
    sets = ("loss_scale.mode=dynamic", f"loss_scale.init={init!r}", "loss_scale.growth_interval=7")
    step = run_with(tmp_path, "step", *sets, "loss_reads=step")
    log = run_with(tmp_path, "log", *sets, "loss_reads=log")
    with h5py.File(step) as a, h5py.File(log) as b:
        assert b.attrs["loss_reads"] == "log"
        for key in ("skipped_steps", "loss_scale_final", "params_sha256"):
            assert a["summary"].attrs[key] == b["summary"].attrs[key], key
        assert a["summary"].attrs["skipped_steps"] >= 1
        assert a["summary"].attrs["loss_scale_final"] != init, "it shrank, and grew again every 7 good steps"
        np.testing.assert_array_equal(a["train/loss"][:], b["train/loss"][:])


def test_static_scale_that_always_overflows_skips_every_step(tmp_path):
    f = run_with(tmp_path, "stat", "loss_scale.mode=static", f"loss_scale.init={2.0 ** 127!r}")
    with h5py.File(f) as h:
        assert h["summary"].attrs["skipped_steps"] == 30
        assert h["summary"].attrs["loss_scale_final"] == 2.0 ** 127


def test_dynamic_scale_with_parameter_server_is_refused(tmp_path):
    cfg = write_config(tmp_path / "ps.yaml", SHORT_LENET + "workers: 2\ndist: {allreduce: ps}\n"
                       "loss_scale: {mode: dynamic}\n")
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2
    assert "loss_scale.mode" in proc.stderr and "ps" in proc.stderr
