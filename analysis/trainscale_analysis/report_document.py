"""The report as a document: sections of paragraphs, tables and figures, written as one
self-contained HTML file (inline CSS, figures as base64 PNG data: URIs) and a Markdown summary.

A section's heading is written only when something is put under it. A section with nothing to
show is left out; `skip` records why, and the document ends with one compact list of the
sections left out and the reason of each (e.g. "Scaling: the worker count did not vary").
"""
from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from .staged_files import OutputError, StagedFiles
from .tables import table_html, table_md

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;
color:#222;padding:0 1em}
h1{border-bottom:2px solid #4c72b0}h2{margin-top:2em;border-bottom:1px solid #ccc}
.table-wrap{max-width:100%;overflow-x:auto;margin:.5em 0}
table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;white-space:nowrap}
th{background:#f0f3f8}td{font-variant-numeric:tabular-nums}
td.long{white-space:normal;min-width:24em}
td.reason{max-width:28em;overflow:hidden;text-overflow:ellipsis;cursor:help}
tr:nth-child(even) td{background:#fafafa}
.status-ok{color:#2e7d32}.status-diverged{color:#e65100;font-weight:bold}
.status-failed,.status-missing,.status-unreadable{color:#c62828;font-weight:bold}
.status-preempted{color:#e65100}.status-unsupported{color:#6d4c41;font-weight:bold}
.note{color:#555;font-style:italic}img{max-width:100%;height:auto;border:1px solid #eee;margin:.5em 0}
figure{margin:1em 0;max-width:100%}figcaption{font-size:13px;color:#444}
details.left-out{margin-top:2em;color:#555;font-size:13px}
"""


class StagedOutput(StagedFiles):
    """A report's HTML, its Markdown summary and its figures folder, written all or nothing
    (staged_files.StagedFiles): the figures are made in `stage_figures` and replace an earlier
    report's figures only when `commit` writes the whole report; files of an earlier figures
    folder that are not figures are kept."""

    def __init__(self, out_html: str | Path):
        self.html = Path(out_html)
        self.md = self.html.with_suffix(".md")
        self.figures = self.html.with_name(self.html.stem + "_figures")
        for path, what in ((self.html, "the report"), (self.md, "its Markdown summary")):
            if path.is_dir():
                raise OutputError(f"-o {self.html}: {path} is a directory, not a file for {what}; give the "
                                  f"report a file name, e.g. -o {self.html / 'report.html'}")
        if self.figures.exists() and not self.figures.is_dir():
            raise OutputError(f"-o {self.html}: {self.figures} (the report's figures folder) exists and is not a "
                              f"directory; move it away or choose another -o")
        super().__init__(self.html.parent, self.html.name, files=[self.html.name, self.md.name])
        self.stage_figures = self.path(self.figures.name)
        try:
            self.stage_figures.mkdir()
        except BaseException:
            self.abort()
            raise

    def commit(self, html_text: str, md_text: str) -> tuple[Path, Path]:
        """Write the two texts into the stage, then move the figures, the HTML and the Markdown
        into place. Returns (html path, markdown path)."""
        self.path(self.html.name).write_text(html_text, encoding="utf-8")
        self.path(self.md.name).write_text(md_text, encoding="utf-8")
        super().commit()
        return self.html, self.md


class Report:
    """Accumulates HTML and Markdown sections side by side."""

    def __init__(self, title: str, fig_dir: Path, md_fig_prefix: str, output: StagedOutput | None = None):
        self.title = title
        self.fig_dir = fig_dir
        self.md_fig_prefix = md_fig_prefix
        self.output = output  # the staged output `write` commits (else written in place)
        self.html: list[str] = []
        self.md: list[str] = [f"# {title}\n"]
        self.pending: str | None = None
        # The configuration keys of the campaign: printed as set; other numbers are measured.
        self.settings: set[str] | None = None
        self.left_out: list[tuple[str, str]] = []

    def section(self, title: str):
        """Start a section; its heading appears with the first thing put under it."""
        self.pending = title

    def _open(self):
        if self.pending is not None:
            self.html.append(f"<h2>{html.escape(self.pending)}</h2>")
            self.md.append(f"\n## {self.pending}\n")
            self.pending = None

    def skip(self, reason: str):
        """The current section has nothing to show: leave it out and say why at the end."""
        self.left_out.append((self.pending or "", reason))
        self.pending = None

    def para(self, text: str, note: bool = False):
        self._open()
        cls = ' class="note"' if note else ""
        self.html.append(f"<p{cls}>{html.escape(text)}</p>")
        self.md.append(f"{'_' + text + '_' if note else text}\n")

    def table(self, df: pd.DataFrame, status_col: str | None = "status", name: str | None = None):
        self._open()
        self.html.append(table_html(df, status_col, name, self.settings))
        self.md.append(table_md(df, self.settings))

    def details(self, summary: str, df: pd.DataFrame):
        """A table folded under a one-line summary (HTML); a plain table in Markdown."""
        self._open()
        self.html.append(f"<details><summary>{html.escape(summary)}</summary>"
                         f"{table_html(df, None, settings=self.settings)}</details>")
        self.md.append(f"{summary}:\n\n{table_md(df, self.settings)}")

    def figure(self, png: Path, caption: str):
        self._open()
        data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
        self.html.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)} "
            f"(<code>{html.escape(Path(png).with_suffix('.svg').name)}</code> beside the "
            f"report)</figcaption></figure>")
        self.md.append(f"![{caption}]({self.md_fig_prefix}/{Path(png).name})\n")

    def _left_out_list(self):
        if not self.left_out:
            return
        items = "".join(f"<li><b>{html.escape(t)}</b>: {html.escape(r)}</li>" if t else
                        f"<li>{html.escape(r)}</li>" for t, r in self.left_out)
        self.html.append(f'<details class="left-out"><summary>{len(self.left_out)} section(s) '
                         f"left out: nothing to show</summary><ul>{items}</ul></details>")
        self.md.append("\n_Left out, nothing to show:_\n\n" + "".join(
            f"- {t + ': ' if t else ''}{r}\n" for t, r in self.left_out))

    def write(self, out_html: Path) -> tuple[Path, Path]:
        self._left_out_list()
        doc = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               f"<title>{html.escape(self.title)}</title><style>{CSS}</style></head><body>"
               f"<h1>{html.escape(self.title)}</h1>" + "\n".join(self.html) + "</body></html>")
        if self.output is not None:
            return self.output.commit(doc, "\n".join(self.md))
        out_html.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_html.with_name(out_html.name + ".tmp")
        try:
            tmp.write_text(doc, encoding="utf-8")
            tmp.replace(out_html)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        md = out_html.with_suffix(".md")
        md.write_text("\n".join(self.md), encoding="utf-8")
        return out_html, md
