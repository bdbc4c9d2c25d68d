"""`trainscale run` of a zoo model (mobilenet_v2, torchvision's architecture) on synthetic data for
one step: the run file's /model group has the model's parameter count and its layer table."""
import math
import pathlib

import h5py
import numpy as np

from trainscale_cli import run, write_config

MOBILENET_ONE_STEP = """\
model: mobilenet_v2
dataset: {name: synthetic, format: synthetic, synthetic_samples: 4}
batch_per_worker: 2
lr: 0.01
momentum: 0.9
dropout: 0.2
steps: 1
threads: 2
eval: {every_epochs: 0}
log_every: 1
seed: 3
"""

MOBILENET_V2_PARAMETERS = 3504872  # torchvision.models.mobilenet_v2()


def text(values):
    return [v.decode() if isinstance(v, bytes) else v for v in values]


def test_mobilenet_v2_one_step_writes_the_layer_table(tmp_path):
    cfg = write_config(tmp_path / "mobilenet_v2.yaml", MOBILENET_ONE_STEP)
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out"], timeout=120)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    files = sorted(pathlib.Path(tmp_path / "out").glob("*.h5"))
    assert len(files) == 1, files
    with h5py.File(files[0], "r") as f:
        assert f.attrs["status"] == "ok"
        loss = f["train/loss"][:]
        assert loss.shape == (1,) and math.isfinite(float(loss[0]))
        model = f["model"]
        assert model.attrs["name"] == "mobilenet_v2"
        assert model.attrs["parameters"] == MOBILENET_V2_PARAMETERS
        layers = model["layers"][:]
        assert {"name", "kind", "descriptor", "parameters", "flops"} <= set(layers.dtype.names)
        assert int(layers["parameters"].sum()) == MOBILENET_V2_PARAMETERS
        assert int(layers["flops"].sum()) == int(model.attrs["flops_per_sample"])
        # ~0.30 G multiply-adds per image (2 FLOPs each) plus BN, ReLU6, adds, pooling.
        assert 0.58e9 < model.attrs["flops_per_sample"] < 0.66e9
        names = text(layers["name"])
        kinds = text(layers["kind"])
        descriptors = dict(zip(names, text(layers["descriptor"])))
        # 52 convolutions (stem, 17 blocks with expansion except the first, last 1x1) and their BN.
        assert kinds.count("conv") == 52 and kinds.count("bn") == 52
        assert kinds.count("relu6") == 35 and kinds.count("add") == 10
        assert kinds.count("dropout") == 1 and kinds.count("fc") == 1
        assert names[0] == "features.0.conv" and names[-1] == "loss"
        # features.14: the stride-2 depthwise 3x3 over 96 * 6 = 576 channels at 14x14.
        assert descriptors["features.14.dw"] == "conv:mb1_ic576oc576_ih14iw14_kh3kw3_sh2sw2_ph1pw1_g576_nobias"
        params = dict(zip(names, np.asarray(layers["parameters"]).tolist()))
        assert params["classifier.fc"] == 1280 * 1000 + 1000
        assert params["features.18.conv"] == 320 * 1280
