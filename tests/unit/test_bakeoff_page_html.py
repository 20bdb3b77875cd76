"""The bake-off page's terms table in HTML (issue 37 item 16): FAILS in the eliminated colour, sources as links
where they are http(s) addresses, and nothing else made a link."""

from __future__ import annotations

from arenatui.commands.bakeoff_page import TERMS_HEAD, _term_cells
from arenatui.present.document import html_table


def _html_terms(rows: list[list[str]]) -> str:
    return html_table(TERMS_HEAD, _term_cells(rows), "text")


def test_a_failed_term_is_coloured_and_a_source_address_is_a_link() -> None:
    rows = [["m", "retention", "FAILS", "30 days", "≤ 0 days", "https://example.com/terms?a=1&b=2", "2026-11-01"],
            ["m", "region", "met", "eu", "eu", "javascript:alert(1)", "-"],
            ["m", "dpa", "-", "yes", "-", "<b>the sales call</b>", "-"]]
    out = _html_terms(rows)
    assert '<td class="eliminated">FAILS</td>' in out and '<td class="contender">met</td>' in out
    assert '<a href="https://example.com/terms?a=1&amp;b=2" rel="noopener noreferrer">' in out
    assert "javascript:" in out and 'href="javascript' not in out  # another scheme stays text
    assert "<b>" not in out and "&lt;b&gt;the sales call&lt;/b&gt;" in out


def test_the_cost_frontier_is_on_a_log_axis_and_an_eliminated_candidate_is_never_a_front_point() -> None:
    """Issue 37 item 16: the cost-per-correct frontier used a linear axis over values spanning 10x (the console uses
    log), and the bake-off frontier drew an eliminated candidate as a green Pareto point."""
    import re

    from arenatui.kernel.units import money
    from arenatui.present.svg_charts import scatter as _scatter

    pts = [("cheap", 0.001, 0.7, True), ("mid", 0.01, 0.8, True), ("dear", 0.1, 0.9, True)]
    svg = _scatter(pts, "$ per correct answer", money, log_x=True)
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    assert "log scale" in svg and abs((xs[1] - xs[0]) - (xs[2] - xs[1])) < 0.5  # a decade is a decade
    assert "log scale" not in _scatter(pts[:2], "x", money)  # asked for a linear one
    out = _scatter(pts, "p95", money, out=["dear"])
    assert out.count('class="front"') == 2 and out.count('class="out"') == 1
