"""`trainscale sweep expand` end to end: the example sweep expands to a byte-identical manifest
twice with the documented run count, --dry-run writes nothing, and a malformed sweep exits 2."""
import yaml

from trainscale_cli import REPO, run, write_config

EXAMPLE = REPO / "configs" / "sweeps" / "example.yaml"


def test_example_expands_deterministically(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        res = run(["sweep", "expand", EXAMPLE, "--out", out])
        assert res.returncode == 0, res.stderr
    text = (first / "manifest.yaml").read_bytes()
    assert text == (second / "manifest.yaml").read_bytes()
    manifest = yaml.safe_load(text)
    # 2 x 2 matrix x zip of 2 = 8 points, 2 excluded, 1 included: 7 points x 2 repetitions.
    assert len(manifest["runs"]) == 14
    assert manifest["campaign"] == "example"
    assert manifest["resources"]["walltime"] == "00:10:00"
    for i, entry in enumerate(manifest["runs"]):
        assert entry["index"] == i
        assert entry["run_id"] == f"{entry['config_id']}-r{entry['repetition']}"
        assert entry["config"]["model"] == "lenet"
    assert len({e["config"]["seed"] for e in manifest["runs"]}) == 14
    assert (first / "manifest.hash").read_text().startswith("fnv1a64:")
    assert (first / "sweep.yaml").read_bytes() == EXAMPLE.read_bytes()
    assert (first / "runs").is_dir()
    # Expanding again into the same directory is a no-op.
    res = run(["sweep", "expand", EXAMPLE, "--out", first])
    assert res.returncode == 0, res.stderr
    assert (first / "manifest.yaml").read_bytes() == text


def test_dry_run_writes_nothing(tmp_path):
    out = tmp_path / "campaign"
    res = run(["sweep", "expand", EXAMPLE, "--out", out, "--dry-run"])
    assert res.returncode == 0, res.stderr
    assert "14 runs" in res.stdout
    assert not out.exists()


def test_malformed_sweep_exits_2(tmp_path):
    sweep = write_config(tmp_path / "bad.yaml",
                         f"base: {EXAMPLE.parent / 'example_base.yaml'}\n"
                         "zip:\n  bs_lr: {batch_per_worker: [32, 64, 128], lr: [0.02, 0.04]}\n")
    res = run(["sweep", "expand", sweep, "--out", tmp_path / "c"])
    assert res.returncode == 2, res.stdout + res.stderr
    assert "bs_lr" in res.stderr
    assert not (tmp_path / "c").exists()
    res = run(["sweep", "submit", tmp_path / "c"])  # nothing was frozen: no campaign to submit
    assert res.returncode == 2
    assert "no manifest.yaml" in res.stderr


# The studies (configs/studies/, scripts/run_study.sh): each sweep expands on the site it runs
# on, with the run count its header promises; a _sim sweep needs the simulate site.
STUDY_RUNS = {"batch_lr": 120, "batch_lr_low": 48, "batch_lr_cifar10": 120, "neuron_averaging": 12, "ps_timing": 29,
              "ps_timing_sim": 18, "hetero_partition": 5, "sync_async": 33,
              "salvaris": 132, "salvaris_flavors": 18, "salvaris_sim": 12, "salvaris_gpu": 8, "model_skylake_sim": 168,
              "model_skylake_sim_mesh": 168, "network": 18}
STUDY_REPETITIONS = {"sync_async": 3, "salvaris": 3, "salvaris_flavors": 3, "salvaris_gpu": 2, "network": 3}  # runs per point (each its own seed); 1 elsewhere


def test_every_study_sweep_expands_with_its_run_count(tmp_path):
    studies = REPO / "configs" / "studies"
    sweeps = {p.stem for p in studies.glob("*.yaml")
              if not p.stem.endswith("_base") and p.stem != "model_skylake"}
    assert sweeps == set(STUDY_RUNS)  # a new study gets a line here
    for name, count in STUDY_RUNS.items():
        site = {"salvaris": "local-storage-study", "salvaris_flavors": "local-storage-study",
                "model_skylake_sim_mesh": "simulate-skylake-mesh", "salvaris_gpu": "device-local",
                "network": "testbed"}.get(
            name, "simulate-skylake" if name.endswith("_sim") else "local-oversubscribe")
        out = tmp_path / name
        res = run(["sweep", "expand", studies / f"{name}.yaml", "--site",
                   REPO / "configs" / "sites" / f"{site}.yaml", "--out", out])
        assert res.returncode == 0, (name, res.stderr)
        runs = yaml.safe_load((out / "manifest.yaml").read_text())["runs"]
        assert len(runs) == count, name
        repetitions = STUDY_REPETITIONS.get(name, 1)
        assert len({r["config_id"] for r in runs}) == count // repetitions, name  # no point twice
        if repetitions > 1:  # every repeated run its own seed
            assert len({r["config"]["seed"] for r in runs}) == count, name


def test_a_long_expansion_prints_its_progress_on_stderr(tmp_path):
    """--progress-every 0 forces a line after every point (the default, 5 s, prints only on a long
    expansion); stdout and the manifest are as without it."""
    write_config(tmp_path / "base.yaml", "model: lenet\nbatch_per_worker: 32\nsteps: 2\nthreads: 1\nworkers: 1\n")
    sweep = write_config(tmp_path / "s.yaml", "campaign: p\nbase: base.yaml\nmatrix: {lr: [0.1, 0.2, 0.3]}\n")
    res = run(["sweep", "expand", sweep, "--out", tmp_path / "c", "--progress-every", "0"])
    assert res.returncode == 0, res.stderr
    assert "sweep expand: expanded 3 of 3 points (100%)" in res.stderr
    assert "sweep expand: wrote 3 of 3 runs into the manifest (100%)" in res.stderr
    assert "sweep expand" not in res.stdout and "3 runs ->" in res.stdout
    quiet = run(["sweep", "expand", sweep, "--out", tmp_path / "c2"])
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert (tmp_path / "c" / "manifest.yaml").read_bytes() == (tmp_path / "c2" / "manifest.yaml").read_bytes()
