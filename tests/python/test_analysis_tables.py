"""The report's tables (trainscale_analysis.number_format, tables, report_document): one format
per column, one line per row with the whole reason in a tooltip, tables in a box that scrolls
sideways, and sections with nothing to show left out (listed at the end with their reason)."""
import math
import re
from html import unescape
from html.parser import HTMLParser

import pandas as pd
import pytest

import conftest as fx
from trainscale_analysis import load_campaigns
from trainscale_analysis.number_format import column_format, fmt, format_setting
from trainscale_analysis.report import build_report
from trainscale_analysis.tables import REASON_CHARS, table_html, table_md


def column(values, setting=None):
    f = column_format(values, setting)
    return [f(v) for v in values]


def test_a_measured_column_has_one_number_of_decimals():
    # accuracies of k / 10000 test images: 0.1 must not print as "0.1" beside "0.8106"
    assert column([0.8106, 0.1, 0.0999, math.nan], setting=False) == ["0.8106", "0.1000", "0.0999", "–"]
    assert column([1135.2, 990.3, 3119.0]) == ["1135", "990", "3119"]
    assert column([0.0233, 0.6674, 0.0135]) == ["0.0233", "0.6674", "0.0135"]


def test_a_column_spanning_decades_is_scientific_in_every_row():
    got = column([19.74, 6.419e34, math.inf, 104.1], setting=False)
    assert got == ["1.974e+01", "6.419e+34", "inf", "1.041e+02"]


def test_settings_print_as_set():
    assert column([0.1, 0.0005, 0.05], setting=True) == ["0.1", "0.0005", "0.05"]
    assert column([64, 128.0]) == ["64", "128"]
    assert column([True, False]) == ["true", "false"]
    assert format_setting(5e-4) == format_setting(float("5e-04")) == "0.0005"
    assert column(["ring", 3, None]) == ["ring", "3", "–"]
    assert fmt(2 / 3) == "0.6667" and fmt(0.25) == "0.25" and fmt(7.0) == "7"


def test_markdown_and_html_use_the_same_formats():
    df = pd.DataFrame({"lr": [0.1, 0.0005], "final_accuracy": [0.1, 0.8549]})
    md = table_md(df, settings={"lr"})
    assert "| 0.1 | 0.1000 |" in md and "| 0.0005 | 0.8549 |" in md
    html = table_html(df, None, settings={"lr"})
    assert "<td>0.1000</td>" in html and "<td>0.0005</td>" in html


def test_a_long_reason_is_one_line_with_the_whole_text_in_its_tooltip():
    reason = ("'bf16' is not supported by backend 'cpu' on this machine (AMD EPYC 7B13, avx2: "
              "no avx512_bf16); run it on a CPU with AVX-512 BF16 or AMX, or drop the point\n"
              "second line")
    df = pd.DataFrame({"run_id": ["a-r0", "b-r0"], "status": ["unsupported", "ok"],
                       "message": [reason, ""]})
    html = table_html(df, "status", name="runs")
    assert html.startswith('<div class="table-wrap"><table class="runs">')
    cell = re.search(r'<td class="reason" title="([^"]*)">([^<]*)</td>', html)
    assert cell, html
    title, shown = unescape(cell.group(1)), unescape(cell.group(2))
    assert title == " ".join(reason.split())
    assert len(shown) <= REASON_CHARS and shown.endswith("…") and title.startswith(shown[:-1])
    assert '<tr class="row-unsupported">' in html
    assert '<td class="reason"></td>' in html  # an ok run's empty reason


class Outline(HTMLParser):
    """The sequence of h2 headings and of the content elements between them."""

    def __init__(self):
        super().__init__()
        self.items = []

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "p", "figure", "table", "details", "ul"):
            self.items.append((tag, dict(attrs)))


def outline(html_text: str):
    p = Outline()
    p.feed(html_text)
    return [t for t, _ in p.items]


def empty_sections(html_text: str) -> list[str]:
    """Headings followed directly by another heading or by the end of the document."""
    heads = re.findall(r"<h2>(.*?)</h2>", html_text)
    tags = outline(html_text)
    empty = []
    k = 0
    for i, t in enumerate(tags):
        if t == "h2":
            if i + 1 == len(tags) or tags[i + 1] == "h2":
                empty.append(heads[k])
            k += 1
    return empty


def test_sections_with_nothing_to_show_are_left_out_and_listed(campaigns, tmp_path):
    df = load_campaigns(campaigns["scaling"])
    one = df[(df.workers == 1) & (df["dist.allreduce"] == "ring")]
    html, md = build_report([campaigns["scaling"]], tmp_path / "one.html", df=one)
    text = html.read_text()
    heads = re.findall(r"<h2>(.*?)</h2>", text)
    assert empty_sections(text) == []
    for gone in ("Scaling", "Loss area: batch size x learning rate", "Per-rank variability",
                 "Heterogeneous workers", "Data format: input pipeline throughput",
                 "Storage: input pipeline throughput", "Relative throughput across GPU generations",
                 "Relative performance by dimension"):
        assert gone not in heads, gone
    assert {"Campaign matrix", "Runs", "Training loss", "Environment"} <= set(heads)
    left = re.search(r'<details class="left-out"><summary>(\d+) section\(s\) left out.*?</details>',
                     text, re.S)
    assert left and int(left.group(1)) >= 8
    assert "<b>Scaling</b>: The worker count did not vary" in left.group(0)
    mdtext = md.read_text()
    assert "## Scaling" not in mdtext and "- Scaling: The worker count did not vary" in mdtext
    assert not re.search(r"<p[^>]*>\s*No ", text), "no 'No ...' placeholder paragraphs"


def test_the_full_report_has_no_empty_section_and_every_table_scrolls_in_its_box(shared_report):
    html, _ = shared_report("grid", "scaling", threshold=fx.THRESHOLD)
    text = html.read_text()
    assert empty_sections(text) == []
    tables = re.findall(r"(.{30})<table", text)
    assert tables and all(t.endswith('<div class="table-wrap">') or "table-wrap" in t for t in tables)
    assert ".table-wrap{max-width:100%;overflow-x:auto" in text
    # the failed run (out of memory) is one line; its reason in the tooltip and the reasons table
    assert re.search(r'<tr class="row-failed">.*?<td class="reason" title="rank 0 on node0: out of '
                     r'memory allocating 2.1 GB for conv1 workspace">', text)
    assert "By status and reason" in text


def test_reasons_are_one_line_per_status_and_reason(shared_report):
    html, md = shared_report("grid", threshold=fx.THRESHOLD)
    mdtext = md.read_text()
    assert "| status | runs | message |" in mdtext
    assert "| diverged | 1 | loss became NaN at step 6 |" in mdtext
    assert "| failed | 1 | rank 0 on node0: out of memory allocating 2.1 GB for conv1 workspace |" in mdtext


@pytest.mark.parametrize("status", ["ok", "diverged"])
def test_counts_name_only_the_statuses_present(campaigns, tmp_path, status):
    df = load_campaigns(campaigns["grid"])
    html, _ = build_report([campaigns["grid"]], tmp_path / "c.html", df=df[df.status == status])
    first = re.search(r"<p>Campaigns: .*?</p>", html.read_text()).group(0)
    n = int((df.status == status).sum())
    assert f"{n} runs: {n} {status}." in first and not re.search(r"\b0 ", first)
