"""Config input from the command line (issue 34): list values in both spellings (`--set
dist.shares=96,32` and Hydra's `--set 'dist.shares=[96, 32]'`), messages that show the YAML form
too, and a configuration error printed once under an MPI launcher (rank 0), not once per rank."""
import pathlib
import subprocess

from test_cli_mpi import mpirun
from trainscale_cli import REPO, env, require_binary, run, write_config

TWO_RANKS = """\
model: mlp
dataset: {name: synthetic, synthetic_samples: 512}
global_batch: 128
steps: 2
threads: 1
workers: 2
dist: {strategy: sync, allreduce: mpi, overlap: false, partition: static}
eval: {every_epochs: 0}
log_every: 1
"""


def run_ids(out_dir):
    return sorted(p.stem for p in pathlib.Path(out_dir).glob("*.h5"))


def test_hydra_list_spelling_equals_the_comma_spelling(tmp_path):
    cfg = write_config(tmp_path / "shares.yaml", TWO_RANKS)
    hydra = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "hydra", "--set", "dist.shares=[96, 32]"])
    assert hydra.returncode == 0, hydra.stdout + hydra.stderr
    assert "static shares 96,32" in hydra.stdout, hydra.stdout
    commas = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "commas", "--set", "dist.shares=96,32"])
    assert commas.returncode == 0, commas.stdout + commas.stderr
    yaml_cfg = write_config(tmp_path / "shares.yaml", TWO_RANKS.replace("partition: static", "partition: static, shares: [96, 32]"))
    in_file = mpirun(2, ["run", "--config", yaml_cfg, "--out", tmp_path / "yaml"])
    assert in_file.returncode == 0, in_file.stdout + in_file.stderr
    # One config, one config_id: the same run file name from all three.
    assert run_ids(tmp_path / "hydra") == run_ids(tmp_path / "commas") == run_ids(tmp_path / "yaml") != []


def test_wrong_shares_name_the_yaml_form_and_both_set_forms(tmp_path):
    cfg = write_config(tmp_path / "shares.yaml", TWO_RANKS)
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out", "--set", "dist.shares=[96, 16]"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert "--set dist.shares=[96, 16]: key 'dist.shares': the shares 96,16 sum to 112, not to the global batch 128" in err, err
    assert ("write e.g. --set dist.shares=64,64 (or --set 'dist.shares=[64, 64]'), or dist: {shares: [64, 64]} in the "
            "YAML file") in err, err
    proc = run(["run", "--config", cfg, "--out", tmp_path / "out", "--set", "dist.shares=[96, 32"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "'[96, 32' is not a list; write --set 'dist.shares=[96, 32]' or --set dist.shares=96,32" in proc.stderr
    assert "(in the YAML file: dist: {shares: [96, 32]})" in proc.stderr


def test_a_config_error_under_mpirun_is_printed_once(tmp_path):
    cfg = write_config(tmp_path / "bad.yaml", TWO_RANKS.replace("steps: 2", "stepz: 2"))
    proc = mpirun(2, ["run", "--config", cfg, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert out.count("trainscale run: configuration error:") == 1, out
    assert "unknown key 'stepz'; did you mean 'steps'?" in out, out


def test_ranks_beyond_0_of_a_launcher_exit_2_without_a_word(tmp_path):
    """What each launcher tells its ranks before MPI starts decides who prints (app/command_errors.h)."""
    cfg = write_config(tmp_path / "bad.yaml", "model: lenet\nstepz: 2\n")
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        for rank, prints in (("0", True), ("1", False), ("3", False)):
            e = {k: v for k, v in env().items()
                 if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")}
            e[name] = rank
            proc = subprocess.run([str(require_binary()), "run", "--config", str(cfg)], capture_output=True, text=True,
                                  env=e, timeout=60, cwd=REPO)
            assert proc.returncode == 2, (name, rank, proc.stderr)
            assert ("configuration error: " in proc.stderr) == prints, (name, rank, proc.stderr)
    # A usage error likewise.
    e = dict(env(), OMPI_COMM_WORLD_RANK="1")
    proc = subprocess.run([str(require_binary()), "run", "--bogus", str(cfg)], capture_output=True, text=True, env=e,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr == "", proc.stderr
