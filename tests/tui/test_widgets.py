"""Widget helpers and the matrix's cost model, without a running sweep."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from arenatui.kernel.events import CallFinished, CallStarted
from arenatui.session.live import (
    ERRORED,
    FAILED,
    IN_FLIGHT,
    PASSED,
    QUEUED,
    UNREACHABLE,
    UNSCORED,
    LiveMetrics,
)
from arenatui.tui.themes import STATE_VARIABLES
from arenatui.tui.widgets import EMPTY, MOSTLY, STARTED, CallMatrix, bar, cell_state, short_labels, spark, tall_spark

from .support import _result


def test_cell_range_sums_states_over_cases() -> None:
    live = LiveMetrics(["a", "b"], [f"c{i}" for i in range(10)], 2, clock=lambda: 0.0)
    live.on_event(CallStarted("a", "c3", 0, 1, 0.0))
    live.on_event(CallStarted("a", "c4", 1, 1, 0.0))
    live.on_event(CallFinished(_result("a", "c4", 1, "passed", 0.1), 0.1))
    assert live.cell_range(0, 0, 10) == (18, 1, 0, 1, 0, 0, 0, 0, 0)
    assert live.cell_range(0, 4, 5) == live.cell(0, 4) == (1, 0, 0, 1, 0, 0, 0, 0, 0)
    assert live.cell_range(1, 8, 99) == (4, 0, 0, 0, 0, 0, 0, 0, 0)


def test_cell_state_shows_work_first_then_the_pass_rate() -> None:
    # (queued, in flight, backing off, passed, failed, errored, unscored)
    assert cell_state((0, 1, 0, 0, 0, 5, 0, 0)) == IN_FLIGHT
    assert cell_state((3, 0, 0, 0, 0, 0, 0, 0)) == QUEUED
    assert cell_state((1, 0, 0, 2, 0, 0, 0, 0)) == STARTED  # a cell still running is no verdict yet
    assert cell_state((0, 0, 0, 3, 0, 0, 0, 0)) == PASSED
    assert cell_state((0, 0, 0, 28, 2, 0, 0, 0)) == MOSTLY  # 28/30 is not a failure (issue 12)
    assert cell_state((0, 0, 0, 1, 2, 0, 0, 0)) == FAILED
    assert cell_state((0, 0, 0, 3, 0, 1, 0, 0)) == PASSED  # one error of four: coverage, not quality
    assert cell_state((0, 0, 0, 1, 0, 2, 0, 0)) == ERRORED


def test_cell_state_of_unscored_answers_and_empty_judge_cells() -> None:
    assert cell_state((0, 0, 0, 0, 0, 0, 3, 0)) == UNSCORED  # answered, no verdict yet (or ever)
    assert cell_state((1, 0, 0, 0, 0, 0, 2, 0)) == STARTED
    assert cell_state((0, 1, 0, 0, 0, 0, 2, 0)) == IN_FLIGHT
    assert cell_state((0, 0, 0, 2, 0, 0, 1, 0)) == PASSED  # an unscored trial is in no verdict
    assert cell_state((0, 0, 0, 0, 0, 0, 0, 0)) == EMPTY  # a judge lane's case it does not judge: not "queued"
    # chained cases: not run because a parent did not pass is no answer, shown apart from errors
    assert cell_state((0, 0, 0, 0, 0, 0, 0, 3)) == UNREACHABLE
    assert cell_state((0, 0, 0, 2, 0, 0, 0, 1)) == PASSED  # one broken episode of three: coverage, not quality
    assert cell_state((0, 0, 0, 0, 0, 2, 0, 1)) == ERRORED
    assert cell_state((2, 0, 0, 0, 0, 0, 0, 1)) == STARTED


def test_short_labels_keep_start_and_end_and_neighbours_apart() -> None:
    """Issue 22 item 11: a name cut at its end reads as another word ("elemen", "elep"): cut in the middle, and keep
    the end that tells neighbours apart."""
    ids = ["capital-fr", "capital-au", "add", "element", "elephant"]
    assert short_labels(ids, 4) == ["c…fr", "c…au", "add", "e…nt", "el…t"]
    assert short_labels(ids, 7) == ["cap…-fr", "cap…-au", "add", "element", "e…phant"]
    assert short_labels(ids, 12) == ids
    assert short_labels(["capital-france-north", "capital-france-south"], 9) == ["cap…north", "cap…south"]
    assert short_labels([f"case-{i:04d}" for i in (1, 2, 10)], 6) == ["cas…01", "cas…02", "cas…10"]
    for w in range(4, 12):  # a matrix cell's label is at least 4 wide ("✓8/8 ")
        labels = short_labels(ids, w)
        assert all(len(x) <= w for x in labels) and len(set(labels)) == len(labels), labels


def test_spark_and_bar() -> None:
    assert spark([], 4) == "    "
    assert spark([0, 1, 2, 4], 4) == " ▂▄█"
    assert len(spark(list(range(1000)), 30)) == 30
    lines = tall_spark([1, 2], 3, 2)
    assert lines == ["  █", " ██"]
    assert bar(0.5, 4) == "██··"


def _matrix_app(models: list[str], cases: list[str], live: LiveMetrics) -> Any:
    """An app holding one CallMatrix over `live`."""
    from textual.app import App, ComposeResult

    class One(App[None]):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(STATE_VARIABLES)

        def compose(self) -> ComposeResult:
            yield CallMatrix(models, cases, 1, live.cell_range, id="m")

    return One()


@asynccontextmanager
async def _shown_matrix(models: list[str], cases: list[str],
                        size: tuple[int, int]) -> AsyncIterator[tuple[Any, CallMatrix, LiveMetrics]]:
    """A CallMatrix over fresh live metrics, laid out at `size`: (the pilot, the matrix, the metrics)."""
    live = LiveMetrics(models, cases, 1, clock=lambda: 0.0)
    app = _matrix_app(models, cases, live)
    async with app.run_test(size=size) as pilot:
        m = app.query_one(CallMatrix)
        await pilot.pause()
        yield pilot, m, live


@pytest.mark.anyio
async def test_matrix_condenses_and_a_frame_costs_little(tmp_path: object) -> None:
    models = [f"model-{i}" for i in range(10)]
    cases = [f"case-{j:05d}" for j in range(5000)]
    async with _shown_matrix(models, cases, (160, 20)) as (pilot, m, live):
        lay = m._layout
        assert lay is not None and lay.per_col > 1 and lay.n_cols * lay.cell_w <= 160
        for mk in models:  # a busy frame: 2,000 cells changed
            for j in range(0, 5000, 25):
                live.on_event(CallStarted(mk, cases[j], 0, 1, 0.0))
        # what a frame costs is counted, not timed (a busy machine would fail any time limit): one column
        # recomputed per (model, column) touched, however many of its cells changed
        dirty = live.take_dirty()
        columns = 0
        recompute = m._column

        def counted(model: int, col: int) -> object:
            nonlocal columns
            columns += 1
            return recompute(model, col)

        m._column = counted  # type: ignore[method-assign]
        m.cells_changed(dirty)
        await pilot.pause()
        assert len(dirty) >= 2000 and 0 < columns <= len(models) * lay.n_cols < len(dirty)
        assert "5000 cases" in pilot.app.export_screenshot().replace("&#160;", " ")


@pytest.mark.anyio
@pytest.mark.parametrize(("n", "width"), [(60, 100), (60, 80), (5000, 160), (5000, 60)])
async def test_the_matrix_ruler_note_says_less_rather_than_stop_mid_word(n: int, width: int) -> None:
    """Issue 22 item 11: the note beside the ruler ("60 cases (a tick at every 5th), the first case-00") was cut at
    the pane's edge; it gives up whole phrases instead."""
    models = ["m"]
    cases = [f"case-{j:02d}" for j in range(n)]
    app = _matrix_app(models, cases, LiveMetrics(models, cases, 1, clock=lambda: 0.0))
    async with app.run_test(size=(width, 10)) as pilot:
        await pilot.pause()
        m = app.query_one(CallMatrix)
        ruler = m.render_line(0).text.rstrip()
    assert len(ruler) <= width
    note = ruler.lstrip(" |")
    assert note == "" or note.endswith(("cases", "every 5th", "a column", "shown)", cases[0])), ruler


@pytest.mark.anyio
@pytest.mark.parametrize(("n_cases", "width"), [(2, 80), (60, 80)])
async def test_a_cell_with_errors_never_shows_a_bare_tick(n_cases: int, width: int) -> None:
    """Issue 37 item 1: `✓4/8` showed where 4 of 8 trials errored with 429. n/k is passed of answered and the
    errors stand apart (`✓4/4!4`); a cell too narrow for `!4` shows `!`, never ✓."""
    from textual.app import App, ComposeResult

    def reader(m: int, start: int, stop: int) -> tuple[int, ...]:
        per = (0, 0, 0, 4, 0, 4, 0, 0) if m == 0 else (0, 0, 0, 8, 0, 0, 0, 0)
        return tuple(x * (stop - start) for x in per)

    class One(App[None]):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(STATE_VARIABLES)

        def compose(self) -> ComposeResult:
            yield CallMatrix(["errs", "clean"], [f"case-{j:02d}" for j in range(n_cases)], 8, reader, id="m")

    app = One()
    async with app.run_test(size=(width, 10)) as pilot:
        await pilot.pause()
        m = app.query_one(CallMatrix)
        errs, clean = m.render_line(1).text, m.render_line(2).text
        legend = m.render_line(3).text
    if n_cases == 2:
        assert "✓4/4!4" in errs and "!" not in clean and "✓8/8" in clean
    else:
        assert "✓" not in errs and "!" in errs and "✓" in clean
    assert "errors" in legend


@pytest.mark.anyio
async def test_the_rates_charts_model_labels_are_whole_while_there_is_room() -> None:
    """Issue 37 item 9: per-model sparkline labels read 'sim-lar' with the pane's width to spare."""
    from textual.app import App, ComposeResult

    from arenatui.tui.widgets import RatesChart

    class One(App[None]):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(STATE_VARIABLES)

        def compose(self) -> ComposeResult:
            yield RatesChart(id="r")

    app = One()
    async with app.run_test(size=(80, 30)) as pilot:
        chart = app.query_one(RatesChart)
        chart.update_series((1.0, 2.0), (0.0, 1.0), 1.0, (),
                            (("sim-large-instruct", (1.0, 2.0)), ("sim-limited", (2.0, 1.0))))
        await pilot.pause()
        text = chart.render().plain
    assert "sim-large-instruct" in text and "sim-limited" in text
    assert all(len(line) <= 80 for line in text.splitlines())


@pytest.mark.anyio
async def test_a_cell_of_empty_answers_shows_its_own_mark_and_the_legend_says_it() -> None:
    """Issue 37 item 15b: empty answers had the ✗ of wrong ones. A cell whose misses are mostly answers with no text
    shows ∅, and the legend names ∅ once a cell shows it (never before: the line is short at 80 columns)."""
    from textual.app import App, ComposeResult

    from arenatui.tui.widgets import NO_ANSWER

    def reader(m: int, start: int, stop: int) -> tuple[int, ...]:
        per = (0, 0, 0, 0, 8, 0, 0, 0, 7) if m == 0 else (0, 0, 0, 0, 8, 0, 0, 0, 0)
        return tuple(x * (stop - start) for x in per)

    assert cell_state(reader(0, 0, 1)) == NO_ANSWER and cell_state(reader(1, 0, 1)) == FAILED

    class One(App[None]):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(STATE_VARIABLES)

        def compose(self) -> ComposeResult:
            yield CallMatrix(["empty", "wrong"], ["case-00", "case-01"], 8, reader, id="m")

    app = One()
    async with app.run_test(size=(200, 10)) as pilot:
        await pilot.pause()
        m = app.query_one(CallMatrix)
        empty, wrong, legend = m.render_line(1).text, m.render_line(2).text, m.render_line(3).text
    assert "∅" in empty and "✗" not in empty and "✗" in wrong and "∅" not in wrong
    assert "∅ empty answers" in legend


def test_columns_take_the_width_their_names_need_as_far_as_the_row_has_room() -> None:
    """Issue 37 item 9: short names leave their room to long ones (each up to its whole length and a gap), never
    below the cells' least; where the row is short, the needs met first are the smallest."""
    from arenatui.tui.widgets.matrix import column_widths

    names = ["add", "mult", "a-twenty-char-case-x", "boil"]
    assert column_widths(names, 7, 120) == (7, 7, 21, 7)  # room for all: the long one whole
    assert column_widths(names, 7, 30) == (7, 7, 9, 7)  # 2 to spare: all to the one that needs it
    squeezed = column_widths(["capital-fr", "element", "capital-au", "sealed-1"], 5, 30)
    assert sum(squeezed) <= 30 and min(squeezed) >= 5
    assert squeezed == (8, 8, 5, 9)  # the smaller needs met whole first, the rest get what is left
    assert column_widths(["a", "b"], 5, 10) == (5, 5)


@pytest.mark.anyio
async def test_a_long_case_name_shows_whole_where_the_row_has_room_and_clicks_hit_their_cell() -> None:
    models = ["m0", "m1"]
    cases = ["add", "mult", "a-twenty-char-case-x", "boil"]
    async with _shown_matrix(models, cases, (120, 8)) as (pilot, m, _live):
        lay = m._layout
        assert lay is not None and lay.widths and lay.width(2) == 21
        header = m.render_line(0).text
        assert "a-twenty-char-case-x" in header  # whole, where equal columns cut it
        start = lay.label_w + lay.width(0) + lay.width(1)
        assert m._cell_at(start, 1) == (0, 2) and m._cell_at(start + 20, 2) == (1, 2)
        assert m._cell_at(start + 21, 1) == (0, 3) and m._cell_at(start - 1, 1) == (0, 1)
        await pilot.click("#m", offset=(start + 10, 2))
        await pilot.pause()
        assert m.cursor == (1, 2)
