"""reports/README.md's index of the report folders is generated (scripts/reports_index.py, issue
37): the committed index is what the folders give, and the generator itself is tested on a small
tree it must index, find stale and bring up to date."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "reports_index.py")


def run(root, *args):
    return subprocess.run([sys.executable, SCRIPT, "--root", str(root), *args], capture_output=True, text=True)


def test_the_committed_index_is_what_the_folders_give():
    proc = run(REPO, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\nrun scripts/reports_index.py and commit reports/README.md"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_new_report_folder_makes_the_index_stale_until_it_is_regenerated(tmp_path):
    reports = tmp_path / "reports"
    write(reports / "README.md", "# Reports\n\nHand-written text stays.\n")
    write(reports / "allreduce" / "README.md", "# All-reduce busbw\n")
    write(reports / "allreduce" / "abc.md", "# All-reduce busbw: abc\n")
    write(reports / "allreduce" / "abc" / "run.h5", "x")
    write(reports / "studies" / "batch_lr" / "README.md", "# Batch x learning rate\n")
    write(reports / "studies" / "batch_lr" / "report.md", "| a | b |\n")
    assert run(tmp_path, "--check").returncode == 1  # no index yet
    assert run(tmp_path).returncode == 0
    text = (reports / "README.md").read_text()
    assert text.startswith("# Reports\n\nHand-written text stays.\n")
    assert "### [`allreduce/`](allreduce/): All-reduce busbw\n" in text
    assert "- [`abc.md`](allreduce/abc.md): All-reduce busbw: abc\n" in text
    assert "- [`abc/`](allreduce/abc/): 1 file\n" in text
    assert "### [`studies/batch_lr/`](studies/batch_lr/): Batch x learning rate\n" in text
    assert "- [`report.md`](studies/batch_lr/report.md)\n" in text  # a table row is no title
    assert run(tmp_path, "--check").returncode == 0

    write(reports / "memory" / "README.md", "# Peak memory\n")
    proc = run(tmp_path, "--check")
    assert proc.returncode == 1
    assert "+### [`memory/`](memory/): Peak memory" in proc.stdout
    assert "index is stale" in proc.stdout
    assert run(tmp_path).returncode == 0
    assert run(tmp_path, "--check").returncode == 0
    assert (reports / "README.md").read_text().count("<!-- BEGIN reports index") == 1
