"""Capability-aware campaigns (docs/sweeps.md "Status"): a point this build, machine or GPU
generation cannot run is `unsupported` with its reason, neither failed nor dropped. The CPU
without AVX-512 is made real with oneDNN's own ISA cap (ONEDNN_MAX_CPU_ISA=AVX2: bf16 is then
refused exactly as on an AVX2-only EPYC): `sweep expand` on a local site marks the bf16 points,
a task that finds it at start marks itself, `submit` skips them and exits 0, `status` and the
analysis list them; a GPU generation without the precision is marked on any site."""
import json
import subprocess

import yaml

from trainscale_cli import BINARY, CAMPAIGN_BASE, REPO, env, run, write_config
from trainscale_analysis import load

SWEEP = "campaign: caps\nbase: base.yaml\nmatrix: {precision: [fp32, bf16]}\n"


def trainscale(args, avx2=False, timeout=300):
    e = env()
    if avx2:
        e["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    return subprocess.run([str(BINARY)] + [str(a) for a in args], capture_output=True, text=True, env=e,
                          timeout=timeout, cwd=REPO)


def expand(tmp_path, avx2):
    write_config(tmp_path / "base.yaml", CAMPAIGN_BASE)
    sweep = write_config(tmp_path / "caps.yaml", SWEEP)
    camp = tmp_path / "camp"
    res = trainscale(["sweep", "expand", sweep, "--site", REPO / "configs/sites/local.yaml", "--out", camp], avx2=avx2)
    assert res.returncode == 0, res.stderr
    runs = yaml.safe_load((camp / "manifest.yaml").read_text())["runs"]
    bf16 = next(r for r in runs if r["config"]["precision"] == "bf16")
    return camp, res.stdout, bf16


def status(camp):
    res = run(["sweep", "status", camp, "--format", "json"])
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def check_finished(camp, bf16):
    st = status(camp)
    assert (st["done"], st["failed"], st["missing"]) == (1, [], 0), st
    (entry,) = st["unsupported"]
    assert entry["index"] == bf16["index"] and "bf16" in entry["reason"] and "avx2" in entry["reason"], entry
    df = load.load_campaigns(camp)
    assert sorted(df["status"]) == ["ok", "unsupported"]
    assert "bf16" in df[df["status"] == "unsupported"]["message"].iloc[0]
    text = run(["sweep", "status", camp]).stdout
    assert "unsupported 1 (" in text and f"indices {bf16['index']}" in text, text


def test_expand_marks_what_this_machine_cannot_run_and_submit_skips_it(tmp_path):
    camp, out, bf16 = expand(tmp_path, avx2=True)
    assert "1 of 2 runs cannot run here; marked unsupported" in out, out
    assert (camp / "runs" / f"{bf16['run_id']}.UNSUPPORTED").exists()
    dry = trainscale(["sweep", "expand", tmp_path / "caps.yaml", "--site", REPO / "configs/sites/local.yaml", "--dry-run"],
                     avx2=True)
    assert "unsupported 1 (" in dry.stdout, dry.stdout
    res = trainscale(["sweep", "submit", camp, "--scheduler", "local"], avx2=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 runs unsupported" in res.stdout and "0 failed" in res.stdout, res.stdout
    check_finished(camp, bf16)


def test_a_task_that_finds_it_at_start_marks_itself_unsupported(tmp_path):
    camp, out, bf16 = expand(tmp_path, avx2=False)  # this machine runs bf16: nothing marked
    assert "unsupported" not in out and not list((camp / "runs").glob("*.UNSUPPORTED"))
    res = trainscale(["sweep", "submit", camp, "--scheduler", "local"], avx2=True)  # the task's machine does not
    assert res.returncode == 0, res.stdout + res.stderr
    assert "unsupported here: " in res.stdout, res.stdout
    check_finished(camp, bf16)
    log = (camp / "logs" / f"{bf16['run_id']}.attempt1.log").read_text()
    assert "result: unsupported" in log, log


def test_a_gpu_generation_without_the_precision_is_marked_on_any_site(tmp_path):
    base = CAMPAIGN_BASE.replace("threads: 1", "threads: 1\nbackend: cuda\ncuda: {algorithms: deterministic}")
    write_config(tmp_path / "base.yaml", base)
    sweep = write_config(tmp_path / "gens.yaml", "campaign: gens\nbase: base.yaml\n"
                                                  "matrix: {gpu: [v100, a100], precision: [fp16, bf16, tf32]}\n")
    res = run(["sweep", "expand", sweep, "--site", REPO / "configs/sites/gpu_cluster_example.yaml", "--dry-run"])
    assert res.returncode == 0, res.stderr
    lines = [l for l in res.stdout.splitlines() if l.startswith("  unsupported")]
    # v100 has fp16 only of the three; a100 has all of them.
    assert len(lines) == 2 and all("GPU generation v100 has no" in l for l in lines), res.stdout
    assert {"bf16" in l for l in lines} == {True, False}
