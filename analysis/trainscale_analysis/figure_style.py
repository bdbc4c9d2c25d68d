"""What every figure of the report shares: how it is saved, how values are labelled, which text
colour reads on a coloured cell, where a legend goes so that it covers no axis label, and axis
limits fitted to the data shown.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from .number_format import format_setting  # noqa: E402

DPI = 100


def save(fig, out: str | Path) -> Path:
    """Write `out`.png and `out`.svg, close the figure, return the PNG path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out.with_suffix(".png"), dpi=DPI, bbox_inches="tight")
    fig.savefig(out.with_suffix(".svg"), bbox_inches="tight")
    plt.close(fig)
    return out.with_suffix(".png")


def fmt(v: Any) -> str:
    """A value in a label or tick: as its configuration spelling (0.0005, 64, true)."""
    return format_setting(v)


def label_of(row: pd.Series, keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={fmt(row[k])}" for k in keys) if keys else "all runs"


def wide_range(lo: float, hi: float) -> bool:
    """True when positive values span more than two decades: plot them on a log scale."""
    return bool(np.isfinite(lo) and np.isfinite(hi) and lo > 0 and hi / lo > 100)


def luminance(colour) -> float:
    """Relative luminance (WCAG 2) of a matplotlib colour."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    """WCAG contrast ratio of two colours (1 to 21; 4.5 reads as body text)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_colour_on(background) -> str:
    """Black or white, whichever contrasts more with `background` (white on a yellow cell does
    not read; black does)."""
    return "black" if contrast("black", background) >= contrast("white", background) else "white"


def legend_outside(ax, **kw):
    """A legend to the right of the axes, outside them: it covers no data, tick or axis label
    (the saved image's tight box takes it in)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kw)


def fitted_limits(values: np.ndarray, log: bool, margin: float = 0.05) -> tuple[float, float]:
    """Limits that hold `values` (finite ones) with a small margin: on a log axis a margin in
    decades, on a linear one in units."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & ((v > 0) if log else True)]
    if v.size == 0:
        return (0.1, 10.0) if log else (0.0, 1.0)
    lo, hi = float(v.min()), float(v.max())
    if log:
        span = max(np.log10(hi / lo), 0.1)
        return lo / 10 ** (margin * span), hi * 10 ** (margin * span)
    pad = (hi - lo) * margin if hi > lo else max(abs(hi) * margin, 0.5)
    return lo - pad, hi + pad
