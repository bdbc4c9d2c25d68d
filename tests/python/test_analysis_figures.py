"""The report's figures read right (trainscale_analysis.loss_plots, plots, figure_style): every
loss curve of a worker count drawn with the winner bold, labels that read on their heatmap cell,
axes fitted to the data, and no legend over an axis label or tick label."""
import re
from pathlib import Path
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection
from matplotlib.text import Text

import conftest as fx
from trainscale_analysis import load_campaigns, plots
from trainscale_analysis.figure_style import contrast, text_colour_on

NUMBER = re.compile(r"^[0-9.]+(e[+-]?[0-9]+)?$")


@pytest.fixture
def figures(monkeypatch):
    """Keeps the figures a plot function saves open; returns the new ones."""
    real_close = plt.close
    before = set(plt.get_fignums())
    monkeypatch.setattr(plt, "close", lambda *a, **k: None)
    yield lambda: [plt.figure(n) for n in plt.get_fignums() if n not in before]
    for n in set(plt.get_fignums()) - before:
        real_close(n)


@pytest.fixture(scope="module")
def grid(campaigns):
    return load_campaigns(campaigns["grid"])


def panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title().startswith("workers = ")]


class Curve(NamedTuple):
    x: np.ndarray
    y: np.ndarray
    width: float
    dashed: bool


def curves(ax):
    """A panel's loss curves: its lines (the winner) and the pieces of its line collections (the
    other runs, one collection per style); the threshold (dotted) is not one."""
    out = [Curve(np.asarray(l.get_xdata()), np.asarray(l.get_ydata()), l.get_linewidth(), l.get_linestyle() == "--")
           for l in ax.get_lines() if l.get_linestyle() != ":" and len(l.get_xdata()) > 2]
    for c in ax.collections:
        if isinstance(c, LineCollection):
            dashed = c.get_linestyle()[0][1] is not None
            out += [Curve(seg[:, 0], seg[:, 1], c.get_linewidth()[0], dashed) for seg in c.get_segments() if len(seg) > 2]
    return out


def test_every_curve_of_a_worker_count_is_drawn_and_the_winner_is_bold(grid, tmp_path, figures):
    plots.plot_loss_curves(grid, tmp_path / "loss", "time", fx.THRESHOLD)
    (fig,) = figures()
    by_workers = {int(re.match(r"workers = (\d+)", ax.get_title()).group(1)): ax for ax in panels(fig)}
    assert sorted(by_workers) == [1, 2, 4]
    # runs with a series: 4, 4 (one diverged), 3 (the fourth failed without a file)
    assert {w: len(curves(ax)) for w, ax in by_workers.items()} == {1: 4, 2: 4, 4: 3}
    for w, (bs, lr, _) in fx.WINNERS.items():
        ax = by_workers[w]
        bold = [c for c in curves(ax) if c.width > 2]
        assert len(bold) == 1, w
        T = fx.GRID[(w, bs, lr)][0]
        assert bold[0].x.max() == pytest.approx(T)  # the winner's own curve
        assert f"batch_per_worker={bs}, lr={lr:g}" in ax.get_title()
    assert any(c.dashed for c in curves(by_workers[2])), "diverged run dashed"


def test_loss_axis_is_fitted_to_the_curves(grid, tmp_path, figures):
    plots.plot_loss_curves(grid, tmp_path / "loss", "time", fx.THRESHOLD)
    (fig,) = figures()
    for ax in panels(fig):
        ys = np.concatenate([c.y for c in curves(ax)]).astype(float)
        ys = ys[np.isfinite(ys)]
        lo, hi = ax.get_ylim()
        assert lo <= ys.min() and hi >= ys.max(), ax.get_title()
        assert hi - lo <= 1.15 * (ys.max() - ys.min()), (ax.get_title(), lo, hi)


def test_histogram_axis_spans_the_areas_shown(grid, tmp_path, figures):
    plots.plot_loss_area_histograms(grid, tmp_path / "hist", fx.THRESHOLD)
    (fig,) = figures()
    areas = grid.loc[grid.status == "ok", "loss_area_time"]
    lo, hi = fig.axes[0].get_xlim()
    # the areas are 12.25..48; the axis used to run to 4 x 48 = 192
    assert areas.min() * 0.8 <= lo <= areas.min() and areas.max() <= hi <= areas.max() * 1.1


def cell_texts(ax):
    return [t for t in ax.texts if NUMBER.match(t.get_text()) or t.get_text() == "above thr."]


def test_heatmap_labels_read_on_their_cells(grid, tmp_path, figures):
    plots.plot_loss_area_heatmaps(grid, tmp_path / "heat", fx.THRESHOLD)
    (fig,) = figures()
    colours = set()
    checked = 0
    for ax in panels(fig):
        (im,) = ax.get_images()
        data = im.get_array()
        for t in cell_texts(ax):
            x, y = t.get_position()
            cell = im.to_rgba(data[int(round(y)), int(round(x))])
            assert contrast(t.get_color(), cell) >= 4.5, (t.get_text(), t.get_color(), cell)
            colours.add(t.get_color())
            checked += 1
    assert checked >= 10 and colours == {"black", "white"}, colours


@pytest.mark.parametrize("background, text", [("#fde725", "black"), ("#440154", "white"),
                                              ("#8c8c8c", "black"), ("#4c72b0", "white")])
def test_text_colour_is_the_one_that_contrasts(background, text):
    assert text_colour_on(background) == text


def overlaps(fig) -> list[str]:
    """Legends whose box covers an axis label, tick label or title of any visible axes."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    labels: list[Text] = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        labels += [ax.xaxis.label, ax.yaxis.label, ax.title]
        labels += [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_visible()]
    bad = []
    for leg in legends:
        box = leg.get_window_extent(r)
        for lab in labels:
            if lab.get_text().strip() and box.overlaps(lab.get_window_extent(r)):
                bad.append(f"legend over {lab.get_text()!r}")
    return bad


def many_series_campaign(root: Path) -> pd.DataFrame:
    """2 worker counts x 3 batches x 3 LRs: nine scaling series, 18 time-breakdown bars."""
    cdir = root / "many"
    (cdir / "runs").mkdir(parents=True)
    for w in (1, 2):
        for bs in (16, 32, 64):
            for lr in (0.01, 0.1, 0.3):
                cfg = fx.base_config(workers=w, batch_per_worker=bs, lr=lr)
                run_id = f"{fx.config_id(cfg)}-r0"
                fx.write_run(cdir / "runs" / f"{run_id}.h5", cfg=cfg, run_id=run_id, campaign="many",
                             time=np.linspace(0, 10, 11), loss=np.linspace(2, 0.5, 11),
                             samples=np.arange(11) * bs * w,
                             summary=fx.summary_for(1000.0 * w * (1 + lr), w, 0.5, False),
                             timing=fx.uniform_timing(w, 11, False, False))
    return load_campaigns(cdir)


def test_no_legend_covers_an_axis_label(campaigns, grid, tmp_path, figures):
    scaling = load_campaigns(campaigns["scaling"])
    many = many_series_campaign(tmp_path)
    few_bars = scaling[scaling.workers <= 2]
    made = {
        "scaling (2 series)": lambda: plots.plot_scaling(scaling, tmp_path / "s", by="dist.allreduce"),
        "scaling (9 series)": lambda: plots.plot_scaling(many, tmp_path / "m"),
        "time breakdown (4 bars)": lambda: plots.plot_time_breakdown(few_bars, tmp_path / "t4"),
        "time breakdown (18 bars)": lambda: plots.plot_time_breakdown(many, tmp_path / "t18"),
        "loss curves": lambda: plots.plot_loss_curves(grid, tmp_path / "l", "time", fx.THRESHOLD),
        "histograms": lambda: plots.plot_loss_area_histograms(grid, tmp_path / "h", fx.THRESHOLD),
        "relative": lambda: plots.plot_relative(scaling, tmp_path / "r", "dist.allreduce", "ring"),
    }
    for name, make in made.items():
        make()
        fig = figures()[-1]
        assert fig.legends or any(ax.get_legend() for ax in fig.axes) or name == "relative", name
        assert overlaps(fig) == [], name


def test_the_overlap_check_sees_a_legend_on_a_label(figures):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2], [1, 2], label="a long legend entry")
    ax.set_xlabel("workers")
    fig.tight_layout()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08))  # where the label is
    assert overlaps(fig)


def labels_over_other_panels(fig) -> list[str]:
    """Tick and axis labels of one panel drawn over another panel's plotting area."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    bad = []
    for ax in axes:
        own = [ax.xaxis.label, ax.yaxis.label] + ax.get_xticklabels() + ax.get_yticklabels()
        for lab in own:
            if not lab.get_text().strip():
                continue
            box = lab.get_window_extent(r)
            for other in axes:
                if other is not ax and box.overlaps(other.get_window_extent(r)):
                    bad.append(f"{lab.get_text()!r} over another panel")
    return bad


def test_heatmap_row_labels_stay_off_the_next_panel(grid, tmp_path, figures):
    plots.plot_loss_area_heatmaps(grid, tmp_path / "heat", fx.THRESHOLD)
    (fig,) = figures()
    assert labels_over_other_panels(fig) == []
    first, *rest = panels(fig)
    assert [t.get_text() for t in first.get_yticklabels()] == ["32", "64"]
    assert all(not [t for t in ax.get_yticklabels() if t.get_text()] for ax in rest)
