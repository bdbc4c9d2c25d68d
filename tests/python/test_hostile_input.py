"""Hostile and careless input through the CLI (docs/reliability.md "Hostile input"): values that
try to inject shell commands into generated Slurm/PBS scripts stay data (the scripts are run
here with a fake launcher, and nothing they try to run runs); names and header values that
could break out are refused with exit 2 naming the file, line and key; a manifest whose run_id
was edited together with its hash is refused where it is read; and what yaml-cpp would accept
silently (duplicate keys, a second document, an empty or directory --config, an exclude that
matches nothing, alias bombs, gigantic matrices, values out of range) exits 2."""
import json
import os
import subprocess

import pytest
import yaml

from trainscale_cli import env, run, write_config

BASE = "model: lenet\nbatch_per_worker: 32\nsteps: 2\nthreads: 1\nworkers: 1\n"
# Values an attacker (or a paste gone wrong) puts into a config, sweep or site file.
HOSTILE = ["debug\nrm -rf ~", "$(touch pwned_subst)", "`touch pwned_tick`", "a; touch pwned_semi",
           "a'b", 'a"b', "../escape", "a/b"]


def q(value):
    """`value` as a YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def expect_refused(res, *needles):
    assert res.returncode == 2, f"exit {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    for n in needles:
        assert n in res.stderr, f"{n!r} not in: {res.stderr}"
    assert "Traceback" not in res.stderr and "terminate called" not in res.stderr


def pwned(root):
    return sorted(str(p) for p in root.rglob("pwned*"))


# ---- values that stay data in generated scripts ------------------------------------------

def injection_site(tmp_path, scheduler):
    """A site whose every free-text value tries to run a command; the launcher is a fake that
    records what it receives."""
    log = tmp_path / "log"
    log.mkdir()
    launcher = tmp_path / "fake launcher"  # a space in the path
    launcher.write_text("#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$TS_TEST_LOG/argv\"\n"
                        "for v in H_SUBST H_TICK H_QUOTE H_DQUOTE; do printf '%s\\0' \"${!v}\"; done "
                        "> \"$TS_TEST_LOG/env\"\n")
    launcher.chmod(0o755)
    site = f"""scheduler: {scheduler}
partition: debug
account: proj-1
setup:
  - 'module() {{ printf "%s\\n" "$@" >> "$TS_TEST_LOG/modules"; }}'
env:
  H_SUBST: '$(touch pwned_env_subst)'
  H_TICK: '`touch pwned_env_tick`'
  H_QUOTE: "x'; touch pwned_env_quote; echo '"
  H_DQUOTE: 'a"b;c && touch pwned_env_dquote'
mpi:
  openmpi:
    launcher: mpirun
    launcher_command: {q(str(launcher))}
    modules: ['mod$(touch pwned_module)']
    launcher_args: ['--x;touch pwned_arg', '$HOME', '`touch pwned_arg_tick`']
    binary: {q(str(tmp_path / "bin $(touch pwned_bin)" / "trainscale"))}
storage: {{local: {{}}}}
"""
    return write_config(tmp_path / "site.yaml", site), log


@pytest.mark.parametrize("scheduler,task_env", [("slurm", {"SLURM_ARRAY_TASK_ID": "0"}),
                                                ("pbs", {"PBS_ARRAY_INDEX": "0"})])
def test_injected_values_stay_data_in_job_scripts(tmp_path, scheduler, task_env):
    site, log = injection_site(tmp_path, scheduler)
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: inj\nbase: base.yaml\n"
                         "resources: {walltime: \"1-00:30:00\", mem: 4G, partition: debug}\n")
    camp = tmp_path / "camp"
    res = run(["sweep", "expand", sweep, "--site", site, "--out", camp])
    assert res.returncode == 0, res.stderr
    res = run(["sweep", "submit", camp, "--scheduler", scheduler, "--dry-run"])
    assert res.returncode == 0, res.stdout + res.stderr
    script = camp / "jobs" / ("s0.slurm" if scheduler == "slurm" else "s0.pbs")
    text = script.read_text()
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, text
    header = text[: text.index("set -uo pipefail")].splitlines()
    assert all(line.startswith("#") for line in header), header  # nothing pushed out of the header
    assert ("#SBATCH --time=1-00:30:00" in header and "#SBATCH --mem=4G" in header) if scheduler == "slurm" \
        else ("#PBS -l walltime=24:30:00" in header and any(":mem=4gb" in h for h in header))

    work = tmp_path / "work"  # the script's working directory: where `touch` would land
    work.mkdir()
    e = {k: v for k, v in env().items() if not k.startswith(("SLURM_", "PBS_"))}
    e.update(task_env, TS_TEST_LOG=str(log))
    done = subprocess.run(["bash", str(script)], cwd=work, env=e, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    argv = (log / "argv").read_text().split("\0")[:-1]
    assert argv == ["-np", "1", "--x;touch pwned_arg", "$HOME", "`touch pwned_arg_tick`",
                    str(tmp_path / "bin $(touch pwned_bin)" / "trainscale"),
                    "run", "--manifest", str(camp), "--index", "0", "--restart-count", "0"], argv
    assert (log / "env").read_text().split("\0")[:-1] == [
        "$(touch pwned_env_subst)", "`touch pwned_env_tick`", "x'; touch pwned_env_quote; echo '",
        'a"b;c && touch pwned_env_dquote']
    assert (log / "modules").read_text() == "load\nmod$(touch pwned_module)\n"
    assert pwned(tmp_path) == [], "a value ran as a command"


# ---- names and header values that are refused --------------------------------------------

SITE_LINES = {  # key -> (site text with {v} for the value, line of the value)
    "partition": ("scheduler: slurm\npartition: {v}\nmpi: {{openmpi: {{}}}}\nstorage: {{local: {{}}}}\n", 2),
    "account": ("scheduler: slurm\naccount: {v}\nmpi: {{openmpi: {{}}}}\nstorage: {{local: {{}}}}\n", 2),
    "defaults.walltime": ("scheduler: slurm\ndefaults:\n  walltime: {v}\nmpi: {{openmpi: {{}}}}\nstorage: {{local: {{}}}}\n", 3),
    "gpu.any.gres": ("scheduler: slurm\ngpu:\n  any: {{gres: {v}}}\nmpi: {{openmpi: {{}}}}\nstorage: {{local: {{}}}}\n", 3),
    "gpu.any.constraint": ("scheduler: slurm\ngpu:\n  any: {{constraint: {v}}}\nmpi: {{openmpi: {{}}}}\nstorage: {{local: {{}}}}\n", 3),
    "env": ("scheduler: slurm\nenv:\n  {v}: 1\nmpi: {{openmpi: {{}}}}\nstorage: {{local: {{}}}}\n", 3),
    "mpi": ("scheduler: slurm\nmpi:\n  {v}: {{}}\nstorage: {{local: {{}}}}\n", 3),
}


@pytest.mark.parametrize("key", sorted(SITE_LINES))
def test_hostile_site_values_are_refused(tmp_path, key):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\n")
    template, line = SITE_LINES[key]
    # A GRES may hold '/' and '.' (gres/gpu:4): harmless in a header, so only the others apply.
    for value in HOSTILE if key != "gpu.any.gres" else [v for v in HOSTILE if "/" not in v]:
        site = write_config(tmp_path / "site.yaml", template.format(v=q(value)))
        res = run(["sweep", "expand", sweep, "--site", site, "--out", tmp_path / "camp"])
        expect_refused(res, f"site.yaml:{line}", "key '" + key.split(".")[0])
        assert not (tmp_path / "camp").exists()
    assert pwned(tmp_path) == []


@pytest.mark.parametrize("value", ["99:99:99", "soon", "00:00:00", "1-24:00:00", "00:30:00\n#SBATCH --wrap=x"])
def test_bad_walltimes_are_refused(tmp_path, value):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", f"base: base.yaml\nresources:\n  walltime: {q(value)}\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "sweep.yaml:3", "resources key 'walltime'",
                   "HH:MM:SS or D-HH:MM:SS")


def test_bad_memory_and_campaign_names_are_refused(tmp_path):
    write_config(tmp_path / "base.yaml", BASE)
    for value in ["lots", "4000", "4 G"]:
        sweep = write_config(tmp_path / "sweep.yaml", f"base: base.yaml\nresources: {{mem: {q(value)}}}\n")
        expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "sweep.yaml:2", "resources key 'mem'",
                       "not a memory size")
    for value in HOSTILE + ["..", "-rf", ""]:
        sweep = write_config(tmp_path / "sweep.yaml", f"campaign: {q(value)}\nbase: base.yaml\n")
        expect_refused(run(["sweep", "expand", sweep, "--out", tmp_path / "camp"]), "sweep.yaml:1: key 'campaign'",
                       "not a valid campaign name")
    # The default campaign name is the sweep file's stem, and is checked too.
    sweep = write_config(tmp_path / "my sweep;x.yaml", "base: base.yaml\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "key 'campaign'", "set `campaign:`")
    cfg = write_config(tmp_path / "run $(x).yaml", BASE)
    expect_refused(run(["run", "--config", cfg, "--out", tmp_path / "out"]), "not a valid run id prefix", "rename the file")
    assert not (tmp_path / "camp").exists() and not (tmp_path / "out").exists()


# ---- ids checked where they are read ----------------------------------------------------

def fnv1a64(data: bytes) -> str:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{h:016x}"


@pytest.mark.parametrize("bad_id", ["../../escape-r0", "/tmp/escape-r0", "a\u0007b-r0", "..-r0"])
def test_manifest_run_id_edited_with_its_hash_is_refused(tmp_path, bad_id):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n")
    camp = tmp_path / "deep" / "camp"
    assert run(["sweep", "expand", sweep, "--out", camp]).returncode == 0
    manifest = camp / "manifest.yaml"
    runs = yaml.safe_load(manifest.read_text())["runs"]
    text = manifest.read_text().replace(f'"{runs[0]["run_id"]}"', q(bad_id), 1)
    manifest.write_text(text)
    (camp / "manifest.hash").write_text(fnv1a64(text.encode()) + "\n")  # the hash agrees
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "run_id:" in l)
    for args in (["run", "--manifest", camp, "--index", 0], ["sweep", "status", camp],
                 ["sweep", "submit", camp, "--scheduler", "local"], ["sweep", "resubmit", camp, "--missing"]):
        expect_refused(run(args), f"manifest.yaml:{line}: key 'run_id'", "not a valid run id")
    assert not list((camp / "runs").iterdir()), "no task started"
    leaked = [p for p in tmp_path.rglob("*escape*")]
    assert leaked == [], leaked


def test_manifest_ids_are_recomputed_from_the_configs(tmp_path):
    """Issue 35: a manifest edited with its hash in step (another lr under the old ids; two
    points given one run_id) is refused by every reader, naming the entry's line; nothing runs."""
    write_config(tmp_path / "base.yaml", BASE + "seed: 42\n")
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n")
    camp = tmp_path / "camp"
    assert run(["sweep", "expand", sweep, "--out", camp]).returncode == 0
    manifest = camp / "manifest.yaml"
    frozen = manifest.read_text()
    runs = yaml.safe_load(frozen)["runs"]
    line = next(i for i, l in enumerate(frozen.splitlines(), 1) if l.strip() == "- index: 1")
    readers = (["run", "--manifest", camp, "--index", 1], ["sweep", "status", camp],
               ["sweep", "submit", camp, "--scheduler", "local"], ["sweep", "resubmit", camp, "--missing"])
    assert run(["sweep", "status", camp]).returncode == 0
    a, b = runs[0]["config_id"], runs[1]["config_id"]
    for text in (frozen.replace("lr: 0.02", "lr: 0.05"),   # the hash recomputed below
                 frozen.replace(b, a)):                     # run 1 is now a second a-r0
        manifest.write_text(text)
        (camp / "manifest.hash").write_text(fnv1a64(text.encode()) + "\n")
        for args in readers:
            expect_refused(run(args), f"manifest.yaml:{line}: run 1: config_id '{b if 'lr: 0.05' in text else a}' "
                           "is not the hash of its config", "edited after sweep expand froze the campaign")
    assert not list((camp / "runs").iterdir()), "no task started"


# ---- what yaml-cpp would accept silently ------------------------------------------------

def test_duplicate_keys_and_second_documents_are_refused(tmp_path):
    cfg = write_config(tmp_path / "dup.yaml", BASE + "dist:\n  allreduce: ring\n  allreduce: tree\n")
    expect_refused(run(["run", "--config", cfg]), "dup.yaml:8: key 'dist.allreduce' is given twice", "first at line 7")
    cfg = write_config(tmp_path / "two.yaml", BASE + "---\nlr: 0.2\n")
    expect_refused(run(["run", "--config", cfg]), "two.yaml:6: a second YAML document")
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.1, 0.2]}\nmatrix: {steps: [2, 3]}\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "sweep.yaml:3: key 'matrix' is given twice")
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.1, 0.2], lr: [0.3]}\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "sweep.yaml:2: key 'matrix.lr' is given twice")
    site = write_config(tmp_path / "site.yaml", "scheduler: local\nmpi:\n  openmpi: {launcher: mpirun, launcher: srun}\n")
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\n")
    expect_refused(run(["sweep", "expand", sweep, "--site", site, "--dry-run"]),
                   "site.yaml:3: key 'mpi.openmpi.launcher' is given twice")


def test_empty_or_directory_config_is_refused(tmp_path):
    expect_refused(run(["run", "--config", tmp_path]), "is a directory, not a run config file")
    empty = write_config(tmp_path / "empty.yaml", "# nothing but a comment\n")
    expect_refused(run(["run", "--config", empty, "--out", tmp_path / "out"]), "empty.yaml: the run config is empty")
    assert not (tmp_path / "out").exists()


def test_exclude_matching_nothing_is_refused(tmp_path):
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {dist.allreduce: [ring, tree]}\n"
                                                   "exclude:\n  - {dist.allreduce: rnig}\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "sweep.yaml:4: exclude[0] {dist.allreduce: rnig} "
                   "matches none of the 2 points")


def test_alias_bombs_are_refused(tmp_path):
    bomb = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
    cfg = write_config(tmp_path / "bomb.yaml", bomb)
    expect_refused(run(["run", "--config", cfg], timeout=60), "bomb.yaml:", "expand to more than 10000 nodes")
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\n" + bomb)
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"], timeout=60), "sweep.yaml:", "billion laughs")
    site = write_config(tmp_path / "site.yaml", "scheduler: local\n" + bomb.replace("a0:", "env: {}\nx0:", 1))
    expect_refused(run(["sweep", "expand", tmp_path / "sweep.yaml", "--site", site, "--dry-run"], timeout=60))


def test_gigantic_matrices_are_refused_before_expanding(tmp_path):
    write_config(tmp_path / "base.yaml", BASE)
    values = "[" + ", ".join(str(v) for v in range(1, 101)) + "]"
    keys = ["seed", "log_every", "steps", "dist.period", "eval.batch", "dataset.prefetch", "threads",
            "batch_per_worker", "loss_scale.growth_interval", "dist.shm_buffers"]
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix:\n" +
                         "".join(f"  {k}: {values}\n" for k in keys))  # 100^10 = 1e20 points
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"], timeout=60), "expands to more than 9e18 runs",
                   "more than --max-runs 10000")
    sweep = write_config(tmp_path / "small.yaml", "base: base.yaml\nmatrix: {lr: [0.1, 0.2, 0.3]}\nrepetitions: 2\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run", "--max-runs", 5]), "up to 6 runs", "--max-runs 5")
    assert run(["sweep", "expand", sweep, "--dry-run", "--max-runs", 6]).returncode == 0
    expect_refused(run(["sweep", "expand", sweep, "--dry-run", "--max-runs", 0]), "--max-runs")


@pytest.mark.parametrize("text,needle", [
    ("threads: 100000\n", "key 'threads': must be at most 1024, got 100000 (accepted: 1..1024"),
    ("dataset: {prefetch: 1000000}\n", "key 'dataset.prefetch': must be at most 1024"),
    ("batch_per_worker: 100000000\n", "key 'batch_per_worker': must be at most 1048576"),
    ("epochs: 1e12\n", "key 'epochs': must be at most 100000"),
    ("lr: .nan\n", "key 'lr': '.nan' is not a finite number"),
    ("workers: -1\n", "key 'workers': must be > 0"),
])
def test_numbers_out_of_range_are_refused(tmp_path, text, needle):
    cfg = write_config(tmp_path / "cfg.yaml", "model: lenet\n" + text)
    expect_refused(run(["run", "--config", cfg, "--out", tmp_path / "out"]), "cfg.yaml:2: " + needle)
    assert not (tmp_path / "out").exists()


def test_derived_step_count_is_bounded(tmp_path):
    # 10^5 epochs of 2^24 synthetic samples at batch 1: 1.7e12 steps, refused before any step is recorded.
    cfg = write_config(tmp_path / "long.yaml", "model: lenet\ndataset: {name: synthetic, synthetic_samples: 16777216}\n"
                                               "batch_per_worker: 1\nepochs: 100000\nthreads: 1\n")
    expect_refused(run(["run", "--config", cfg, "--out", tmp_path / "out"], timeout=120),
                   "long.yaml:4: key 'epochs': the run would take 1677721600000 steps", "more than the 1000000000")


def test_special_and_oversized_input_files_are_refused_before_reading(tmp_path):
    """A FIFO would block forever, /dev/zero never ends, a huge sparse file reads for minutes:
    each is refused at once, for every kind of file a person gives (core/file_io.h)."""
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    expect_refused(run(["run", "--config", fifo], timeout=30), "pipe.yaml: is not a regular file", "run config")
    expect_refused(run(["run", "--config", "/dev/zero"], timeout=30), "/dev/zero: is not a regular file")
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as f:  # sparse: 3 GB of size, nothing on disk
        f.truncate(3 << 30)
    expect_refused(run(["run", "--config", huge], timeout=30), "huge.yaml: 3221225472 bytes is too large for a run config")
    expect_refused(run(["run", "--config", tmp_path / "missing.yaml"]), "missing.yaml: cannot open the run config",
                   "No such file or directory")
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: {lr: [0.1, 0.2]}\n")
    expect_refused(run(["sweep", "expand", fifo, "--dry-run"], timeout=30), "pipe.yaml: is not a regular file",
                   "sweep file")
    expect_refused(run(["sweep", "expand", sweep, "--site", "/dev/zero", "--dry-run"], timeout=30),
                   "/dev/zero: is not a regular file", "site file")
    expect_refused(run(["predict", "--config", tmp_path / "base.yaml", "--cluster", fifo, "--workers", "2"], timeout=30),
                   "pipe.yaml: is not a regular file", "cluster file")


def test_an_unknown_yaml_tag_is_refused_and_yamls_own_are_read(tmp_path):
    cfg = write_config(tmp_path / "tagged.yaml", BASE + "lr: !custom 0.1\n")
    expect_refused(run(["run", "--config", cfg]), "tagged.yaml:", "the YAML tag '!custom' is not understood here")
    write_config(tmp_path / "base.yaml", BASE)
    sweep = write_config(tmp_path / "sweep.yaml", "base: base.yaml\nmatrix: !setlike {lr: [0.1, 0.2]}\n")
    expect_refused(run(["sweep", "expand", sweep, "--dry-run"]), "sweep.yaml:2: the YAML tag '!setlike'")
    write_config(tmp_path / "own.yaml", BASE.replace("steps: 2", "steps: !!int 2"))
    res = run(["sweep", "expand", write_config(tmp_path / "s2.yaml", "base: own.yaml\nmatrix: {lr: [!!float 0.1]}\n"),
               "--dry-run"])
    assert res.returncode == 0, res.stderr  # YAML's own tags (!!int, !!float) are read as ever
