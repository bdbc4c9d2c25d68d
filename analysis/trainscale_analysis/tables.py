"""Tables of the report as HTML and as Markdown.

Every column is printed one way (number_format.column_format). In HTML a table sits in a box
that scrolls sideways when the table is wider than the page (the page itself never does), and
every row is one line high: a reason column (`message`: why a run failed, diverged or was
unsupported) shows its first words and holds the whole reason in the cell's tooltip (`title`);
only long free text in other tables (an environment's list of hosts) wraps.
"""
from __future__ import annotations

import html
from typing import Collection

import pandas as pd

from .number_format import column_format

REASON_COLUMNS = ("message",)
REASON_CHARS = 60   # a reason longer than this is cut in the cell; the tooltip has all of it
WRAP_CHARS = 60     # other text longer than this may wrap


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def short_reason(text: str, limit: int = REASON_CHARS) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _cell(column: str, text: str, status_col: str | None) -> str:
    esc = html.escape(text)
    if column == status_col:
        return f'<td class="status-{esc}">{esc}</td>'
    if column in REASON_COLUMNS:
        if not text or text == "–":
            return '<td class="reason"></td>'
        full = html.escape(one_line(text), quote=True)
        return f'<td class="reason" title="{full}">{html.escape(short_reason(text))}</td>'
    if len(text) > WRAP_CHARS:
        return f'<td class="long">{esc}</td>'
    return f"<td>{esc}</td>"


def formatted(df: pd.DataFrame, settings: Collection[str] | None = None) -> pd.DataFrame:
    """`df` as text, each column in its one format; `settings` names the configuration keys
    (printed as set), every other number column is measured (None: guessed per column)."""
    def column_text(c) -> list[str]:
        one = column_format(df[c], None if settings is None else c in settings)  # once a column, not a cell
        return [one(v) for v in df[c]]
    return pd.DataFrame({c: column_text(c) for c in df.columns}, index=df.index, columns=df.columns)


def table_html(df: pd.DataFrame, status_col: str | None = "status", name: str | None = None,
               settings: Collection[str] | None = None) -> str:
    """One table in its scrolling box; `name` becomes its class (tests and styles find it)."""
    if df.empty:
        return '<p class="note">(no rows)</p>'
    text = formatted(df, settings)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for i in text.index:
        status = text.at[i, status_col] if status_col in text.columns else ""
        cls = f' class="row-{html.escape(status)}"' if status else ""
        cells = "".join(_cell(c, text.at[i, c], status_col) for c in df.columns)
        body.append(f"<tr{cls}>{cells}</tr>")
    cls = f' class="{html.escape(name)}"' if name else ""
    return (f'<div class="table-wrap"><table{cls}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def table_md(df: pd.DataFrame, settings: Collection[str] | None = None) -> str:
    if df.empty:
        return "_(no rows)_\n"
    text = formatted(df, settings)
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i in text.index:
        lines.append("| " + " | ".join(one_line(text.at[i, c]).replace("|", "\\|")
                                       for c in df.columns) + " |")
    return "\n".join(lines) + "\n"
