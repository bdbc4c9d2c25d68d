"""trainscale_analysis: plots, the self-contained HTML report, Markdown, compare and the CLI,
and the report rendered in headless Chromium (installed by scripts/setup.sh)."""
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

import conftest as fx
from analysis_cli import cli, cli_process
from trainscale_analysis import load_campaigns, plots
from trainscale_analysis.compare import compare_campaigns
from trainscale_analysis.report import build_report


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags_of(path: Path):
    p = Tags()
    p.feed(path.read_text(encoding="utf-8"))
    return p.tags


def check_png_svg(png: Path):
    assert png.suffix == ".png" and png.stat().st_size > 1000, png
    img = mpimg.imread(png)
    assert img.ndim == 3 and img.shape[0] > 50 and img.std() > 0.01, f"{png} looks blank"
    ET.parse(png.with_suffix(".svg"))  # parses as XML


def test_every_plot_written(campaigns, tmp_path):
    dg, ds = load_campaigns(campaigns["grid"]), load_campaigns(campaigns["scaling"])
    pngs = [
        plots.plot_scaling(ds, tmp_path / "scaling", by="dist.allreduce"),
        plots.plot_loss_curves(dg, tmp_path / "loss_time", "time", fx.THRESHOLD),
        plots.plot_loss_curves(dg, tmp_path / "loss_samples", "samples", fx.THRESHOLD),
        plots.plot_loss_area_heatmaps(dg, tmp_path / "heat", fx.THRESHOLD),
        plots.plot_time_breakdown(ds, tmp_path / "breakdown"),
        plots.plot_relative(ds, tmp_path / "relative", "dist.allreduce", "ring"),
        plots.plot_rank_variability(ds[ds.workers == 8].iloc[0], tmp_path / "ranks"),
    ]
    for png in pngs:
        check_png_svg(png)


@pytest.fixture(scope="module")
def grid_report(shared_report):
    return shared_report("grid", "scaling", threshold=fx.THRESHOLD)


def test_report_self_contained(grid_report):
    html, md = grid_report
    text = html.read_text(encoding="utf-8")
    tags = tags_of(html)
    imgs = [a for t, a in tags if t == "img"]
    assert len(imgs) >= 7, "scaling, 2 loss curves, heatmap, breakdown, relative, ranks"
    for a in imgs:
        assert a.get("src", "").startswith("data:image/png;base64,"), a.get("src", "")[:60]
    for t, a in tags:
        for attr in ("src", "href"):
            assert not re.match(r"^\s*(https?:)?//", a.get(attr) or ""), (t, a)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), "no remote CSS resources"
    assert "<link" not in text and "@import" not in text
    # the tables: matrix, runs with statuses, winners, environment
    for needle in ("Campaign matrix", "Runs", "Winners", "Environment", "diverged", "failed",
                   "out of memory", "openmpi", "4.1.4", "avx2", "abc1234", "node0"):
        assert needle in text, needle
    assert md.exists() and md.read_text().startswith("# trainscale report")


def test_report_winners_table(grid_report, campaigns):
    html, md = grid_report
    df = load_campaigns(campaigns["grid"])
    text, mdtext = html.read_text(), md.read_text()
    for w, (bs, lr, area) in fx.WINNERS.items():
        run = df[(df.workers == w) & (df.batch_per_worker == bs) & (df.lr == lr)].iloc[0]
        assert run["run_id"] in text and run["run_id"] in mdtext
    assert "| workers | run_id |" in mdtext
    figs = html.with_name("grid_figures")
    assert (figs / "loss_area_heatmaps.png").exists() and (figs / "scaling.svg").exists()


def test_report_says_when_a_dimension_did_not_vary(campaigns, tmp_path):
    # one worker count, one batch and LR: the sections are left out, and the list of sections
    # left out at the end of the report says why
    df = load_campaigns(campaigns["scaling"])
    one = df[(df.workers == 1) & (df["dist.allreduce"] == "ring")]
    html, _ = build_report([campaigns["scaling"]], tmp_path / "one.html", df=one)
    text = html.read_text()
    assert "worker count did not vary" in text
    assert "Neither batch_per_worker nor lr varied" in text
    assert "No other swept key" in text
    assert "Every finished run used one worker" in text


def test_compare_ratios(campaigns, tmp_path):
    cmp = compare_campaigns(campaigns["scaling"], campaigns["scaling_fast"])
    assert len(cmp) == 8
    assert np.allclose(cmp["images_per_s_ratio"], 2.0)
    assert np.allclose(cmp["step_time_median_ratio"], 0.5)
    assert set(cmp.attrs["match_keys"]) >= {"workers", "dist.allreduce"}


def test_cli_report_compare_and_refusal(campaigns, tmp_path):
    # The entry point as a process once; compare and the refusal in this process (analysis_cli).
    r = cli_process("report", campaigns["grid"], "-o", tmp_path / "r.html", "--loss-threshold", 0.5)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").exists() and (tmp_path / "r.md").exists()
    r = cli("compare", campaigns["scaling"], campaigns["scaling_fast"], "-o", tmp_path / "c.html")
    assert r.returncode == 0, r.stderr
    assert "images/s ratio B/A: median 2" in (tmp_path / "c.html").read_text()
    r = cli("report", campaigns["future"], "-o", tmp_path / "f.html")
    assert r.returncode == 2 and "trainscale-run/99" in r.stderr and "not supported" in r.stderr
    assert not (tmp_path / "f.html").exists()


# ---- headless Chromium ------------------------------------------------------------------

MARK_SCRIPT = ("<script>window.addEventListener('load',function(){var im=document.images,"
               "ok=0;for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)"
               "ok++;}document.body.setAttribute('data-images-loaded',ok+'/'+im.length);});"
               "</script>")


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        reason = ("chromium not found: run scripts/setup.sh (it installs the Debian package "
                  "chromium, which the report rendering test needs)")
        print(reason)
        pytest.skip(reason)
    return exe


def chromium_run(*args, timeout=90):
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_report_renders_in_chromium(grid_report, tmp_path):
    html, _ = grid_report
    shot = tmp_path / "shot.png"
    r = chromium_run(f"--screenshot={shot}", "--window-size=1280,4000", html.as_uri())
    assert shot.exists(), f"chromium wrote no screenshot: {r.stderr[-2000:]}"
    img = mpimg.imread(shot)
    assert img.shape[0] == 4000 and img.shape[1] == 1280
    assert img[..., :3].std() > 0.05, "screenshot is blank"
    # every <img> decoded: a copy with a script that counts images with naturalWidth > 0
    marked = tmp_path / "marked.html"
    marked.write_text(html.read_text().replace("</body>", MARK_SCRIPT + "</body>"))
    n = sum(1 for t, _ in tags_of(html) if t == "img")
    r = chromium_run("--dump-dom", marked.as_uri())
    m = re.search(r'data-images-loaded="(\d+)/(\d+)"', r.stdout)
    assert m, f"no marker in the DOM chromium dumped: {r.stdout[:500]} {r.stderr[-1000:]}"
    assert (int(m.group(1)), int(m.group(2))) == (n, n), f"images loaded {m.group(0)}"


def test_chromium_check_catches_a_broken_image(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><img src=\"data:image/png;base64,AAAA\">" + MARK_SCRIPT +
                    "</body></html>")
    r = chromium_run("--dump-dom", page.as_uri())
    assert 'data-images-loaded="0/1"' in r.stdout, r.stdout[:500]


def test_report_replaces_figures_of_an_earlier_report(campaigns, tmp_path):
    out = tmp_path / "again.html"
    fig_dir = tmp_path / "again_figures"
    fig_dir.mkdir()
    (fig_dir / "relative_stale_dimension.png").write_bytes(b"old")
    (fig_dir / "notes.txt").write_text("not a figure")
    build_report([campaigns["scaling"]], out)
    assert not (fig_dir / "relative_stale_dimension.png").exists()
    assert (fig_dir / "notes.txt").exists(), "only figure files are replaced"
    assert (fig_dir / "scaling.png").exists()


def test_runs_table_shows_accelerator_utilisation_where_runs_record_it(campaigns, grid_report, tmp_path):
    """au_min, data_wait_share and au_pass (/summary, docs/interoperability.md) are columns of the
    runs table once a run file has them; files without them (the grid and scaling campaigns of
    grid_report) show no such column."""
    import h5py
    src = campaigns["grid"]
    _, plain_md = grid_report
    assert "au_min" not in Path(plain_md).read_text()
    copy = tmp_path / "grid_au"
    shutil.copytree(src, copy)
    files = sorted((copy / "runs").glob("*.h5"))
    with h5py.File(files[0], "r+") as f:
        f["summary"].attrs["au_min"] = 0.8125
        f["summary"].attrs["data_wait_share"] = 0.0625
        f["summary"].attrs["au_pass"] = 1.0
    html, md = build_report([copy], tmp_path / "au.html")
    text = Path(md).read_text()
    assert "au_min" in text and "data_wait_share" in text and "0.8125" in text
