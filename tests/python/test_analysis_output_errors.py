"""The analysis CLI when its output cannot be written (issue 35, docs/reliability.md "Hostile
input"): `-o` naming an existing directory is exit 2 with a clear message; a read-only file system
and a full one (real tmpfs mounts; we are root in CI, and the test says why it skips where mount is
not permitted) are exit 1 with the system's reason and what to do, no traceback, and nothing left
behind: no `*.tmp` file, no staging folder, no half figures folder, and an earlier report in the
same place stays as it was."""
import contextlib
import subprocess
import sys

import pytest


def cli(*args):
    return subprocess.run([sys.executable, "-m", "trainscale_analysis", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@contextlib.contextmanager
def tmpfs(path, options):
    """A real tmpfs mounted at `path` with `options` (e.g. "ro", "size=64k")."""
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        reason = f"mount -t tmpfs -o {options} is not permitted here: {(r.stderr or r.stdout).strip()}"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def contents(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def expect_failure(r, code, *needles):
    assert r.returncode == code, f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert "Traceback" not in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, f"{n!r} not in {r.stderr}"


def test_an_existing_directory_as_o_is_a_usage_error(grid_dir, scaling_dir, tmp_path):
    out = tmp_path / "reports"
    out.mkdir()
    expect_failure(cli("report", grid_dir, "-o", out), 2, f"-o {out} is a directory", "report.html")
    expect_failure(cli("compare", scaling_dir, scaling_dir, "-o", out), 2, "is a directory")
    expect_failure(cli("compression", grid_dir, "-o", out), 2, "is a directory")
    # The Markdown summary's name taken by a directory: refused before anything is written.
    (tmp_path / "r.md").mkdir()
    expect_failure(cli("report", grid_dir, "-o", tmp_path / "r.html"), 2, "r.md is a directory")
    assert contents(out) == [] and contents(tmp_path) == ["r.md", "reports"]


def test_a_read_only_file_system_is_exit_1_and_leaves_nothing(grid_dir, tmp_path):
    with tmpfs(tmp_path / "ro", "ro") as ro:
        for out in (ro / "r.html", ro / "sub" / "r.html"):
            expect_failure(cli("report", grid_dir, "-o", out), 1, "Read-only file system", "write elsewhere with -o",
                           "nothing was written")
        assert contents(ro) == []


def test_a_full_disk_is_exit_1_and_keeps_the_earlier_report(grid_dir, scaling_dir, tmp_path):
    with tmpfs(tmp_path / "full", "size=64k") as full:
        # An earlier report, small enough to fit; the new one (figures of the grid) does not.
        (full / "r.html").write_text("earlier report")
        (full / "r.md").write_text("earlier summary")
        (full / "r_figures").mkdir()
        (full / "r_figures" / "scaling.png").write_bytes(b"earlier figure")
        before = contents(full)
        r = cli("report", grid_dir, "-o", full / "r.html")
        expect_failure(r, 1, "No space left on device", "free space there or write elsewhere with -o",
                       "nothing was written")
        assert contents(full) == before, "no *.tmp, staging folder or new figure left behind"
        assert (full / "r.html").read_text() == "earlier report"
        assert (full / "r_figures" / "scaling.png").read_bytes() == b"earlier figure"
        expect_failure(cli("compare", scaling_dir, scaling_dir, "-o", full / "c" / "c.html"), 1,
                       "No space left on device")
        assert contents(full) == before
    # The same report where there is room: written whole, the earlier figure replaced.
    r = cli("report", grid_dir, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").stat().st_size > 1000 and list((tmp_path / "r_figures").glob("*.png"))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp")]
