"""One vocabulary for figures (arenatui/kernel/units.py, arenatui/present/columns.py): money never in exponent
notation, shares that never round to a false 0% or 100%, columns fitted by priority, one block per row when even
the headline columns do not fit, and the report's rows read back from its JSON exactly."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from stats_support import make_results

from arenatui.commands.report import model_dict, row_from_dict
from arenatui.kernel.units import NOTHING, interval, money, ms, number, pct
from arenatui.present.columns import HEADLINE, LEADERBOARD, Column, fit, table_for_width
from arenatui.stats import leaderboard


def test_money_examples() -> None:
    assert money(8.23e-4) == "$0.000823"  # the results view printed $8.23e-04
    assert money(0.0381) == "$0.0381" and money(0.002919) == "$0.00292"  # three significant digits below $1
    assert money(12.345) == "$12.35" and money(1234.5) == "$1,234.50"
    assert money(0) == "$0" and money(None) == NOTHING and money(math.nan) == NOTHING
    assert money(1e-12) == "<$0.00000001"


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_money_and_numbers_never_use_exponent_notation(v: float) -> None:
    for text in (money(v), number(v), ms(v)):
        assert not re.search(r"\d[eE][+-]?\d", text), text


def test_a_share_between_0_and_1_never_reads_0_or_100() -> None:
    assert pct(0.997) == ">99%" and pct(0.003) == "<1%" and pct(0.5) == "50%"
    assert pct(1.0) == "100%" and pct(0.0) == "0%" and pct(None) == NOTHING
    assert pct(0.9996, decimals=1) == ">99.9%"


def test_interval_and_ms() -> None:
    assert interval(0.8123, 0.9012, 11) == "0.812–0.901" and interval(0.5, 0.6, 1) == NOTHING
    assert ms(390, " ms") == "390\u00a0ms"  # the unit never wraps away from its figure
    assert ms(1234.4) == "1,234" and ms(4.94) == "4.9" and ms(None) == NOTHING


def test_fit_drops_the_lowest_priority_first_and_never_a_headline() -> None:
    widths, prio = [10, 8, 8, 8], [HEADLINE, 3, 7, HEADLINE]
    assert fit(widths, prio, 100) == [0, 1, 2, 3]
    assert fit(widths, prio, 38, per_column=2) == [0, 2, 3]  # 10+8+8 + 2 each
    assert fit(widths, prio, 10) == [0, 3]  # headline columns stay even when they do not fit


def _text(renderable: object, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_a_table_too_narrow_for_its_headline_columns_becomes_one_block_per_row() -> None:
    cols: tuple[Column[tuple[str, float]], ...] = (
        Column("model", lambda r: r[0], priority=HEADLINE, right=False),
        Column("quality", lambda r: r[1], lambda v: f"{v:.3f}", True, HEADLINE),
        Column("extra", lambda r: "x" * 30, priority=1),
    )
    rows = [("a-model-with-a-very-long-name-indeed", 0.9), ("short", 0.5)]
    wide = _text(table_for_width(cols, rows, 120), 120)
    assert "extra" in wide and "Left out" not in wide
    mid = _text(table_for_width(cols, rows, 60), 60)
    assert "Left out at 60 columns: extra" in mid and "a-model-with-a-very-long-name-indeed" in mid
    narrow = _text(table_for_width(cols, rows, 40), 40)  # the table would need 50 columns
    assert "┃" not in narrow and "a-model-with-a-very-long-name-indeed\n  quality 0.900" in narrow
    assert all(len(line) <= 40 for line in narrow.splitlines())
    assert "…" not in wide + mid + narrow


def test_the_reports_rows_read_back_from_json_render_the_same_cells() -> None:
    """Markdown and HTML render the JSON's rows through the same columns: nothing is lost on the way."""
    results = make_results({"a": [[1.0, 0.0], [1.0, 1.0], [None, 1.0]], "b": [[0.0, 0.0], [1.0, None], [0.5, 0.5]]},
                           cost_per_call={"a": 0.0021, "b": 0.00004}, latency={"a": [120.0, 340.0], "b": [9.5]})
    for row in leaderboard(results):
        back = row_from_dict(model_dict(row))
        assert [c.cell(back) for c in LEADERBOARD] == [c.cell(row) for c in LEADERBOARD]
