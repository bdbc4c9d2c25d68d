"""Numbers as the report prints them, one way per column.

- A setting (a configuration value: lr 0.1, weight_decay 5e-04, batch 64) is printed as the
  shortest text that reads back as it (`0.0005`, `64`, `true`), so one value has one spelling.
- A measured column (images/s, step times, losses, ratios) is printed with the same number of
  decimals in every row: four significant digits for its largest value (`990` and `3119`;
  `0.0133` and `0.6674`), or in scientific notation with four significant digits for every row
  when its values span three decades or more, or reach a million (a loss area that blew up).
- A column of whole numbers is printed as whole numbers; a missing value is `–`, an infinite
  one `inf`.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

MISSING = "–"
SCIENTIFIC_SPAN = 1e3  # largest / smallest non-zero magnitude from which a column is scientific
SCIENTIFIC_FROM = 1e6  # a column whose largest magnitude reaches this is scientific


def is_missing(v: Any) -> bool:
    """None, NaN, NaT or pandas' NA (not a list or other container)."""
    if v is None:
        return True
    try:
        return bool(np.ndim(v) == 0 and pd.isna(v))
    except (TypeError, ValueError):
        return False


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def format_setting(v: Any) -> str:
    """A configuration value: numbers in their shortest exact spelling, booleans as YAML
    writes them, text as it is."""
    if is_missing(v):
        return MISSING
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if is_number(v):
        f = float(v)
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        if f.is_integer() and abs(f) < 2**53:
            return str(int(f))
        return repr(f)
    return str(v)


def fmt(v: Any) -> str:
    """One number in a sentence: four significant digits (a setting-like value exactly)."""
    if is_number(v) and not is_missing(v):
        f = float(v)
        if math.isfinite(f) and not f.is_integer() and float(f"{f:.4g}") != f:
            return f"{f:.4g}"
    return format_setting(v)


def _finite(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if is_number(v) and math.isfinite(float(v))]


def _is_setting_like(nums: list[float]) -> bool:
    """Every value has at most four significant digits: values someone chose, not measured."""
    return all(float(f"{x:.4g}") == x for x in nums)


def measured_format(nums: list[float]) -> Callable[[float], str]:
    """The format shared by a column of measured values `nums` (finite, not all whole)."""
    mags = [abs(x) for x in nums if x != 0]
    if not mags:
        return lambda x: f"{x:.0f}"
    hi, lo = max(mags), min(mags)
    if hi >= SCIENTIFIC_FROM or hi / lo >= SCIENTIFIC_SPAN:
        return lambda x: f"{x:.3e}"
    decimals = max(0, min(6, 3 - math.floor(math.log10(hi))))
    return lambda x: f"{x:.{decimals}f}"


def column_format(values: Iterable[Any], setting: bool | None = None) -> Callable[[Any], str]:
    """The function that prints every value of one column the same way (module docstring).
    `setting`: whether the column is a configuration key; None: guess it from the values (every
    one of four significant digits or fewer)."""
    values = list(values)
    nums = _finite(values)
    texts = [v for v in values if not is_missing(v) and not is_number(v)]
    if setting is None:
        setting = _is_setting_like(nums)
    if texts or not nums or all(x.is_integer() for x in nums) or setting:
        return format_setting
    number = measured_format(nums)

    def one(v: Any) -> str:
        if is_missing(v) or not is_number(v) or not math.isfinite(float(v)):
            return format_setting(v)
        return number(float(v))
    return one
