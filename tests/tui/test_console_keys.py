"""Issue 12's key fixes, driven by Pilot on a scripted sweep (the engine never runs): one test per fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import Input, RichLog

from arenatui.session.sweep import Sweep
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail, RunScreen
from arenatui.tui.screens.dialogs import Confirm, Help
from arenatui.tui.widgets import CallMatrix, ModelTable, StatusBar

from .support import scripted_sweep, stored_call

pytestmark = pytest.mark.anyio


class _Active:
    """A scripted sweep that counts as running: keys act on its runner as on a real one."""

    @staticmethod
    def arm(app: ArenaApp) -> RunScreen:
        rs = app.run_screen
        rs._sweep_worker = object()  # type: ignore[assignment]  # what `start` sets; the keys only test it exists
        return rs


def _messages(app: ArenaApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_every_quit_path_asks_first(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        _Active.arm(app)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)  # ctrl+q asks, as q does
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen) and app.is_running
        quit_cmd = next(c for c in app.get_system_commands(app.screen) if c.title == "Quit")
        await quit_cmd.callback()  # type: ignore[misc]  # the palette's Quit
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("n")
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("y")
        await pilot.pause()
        assert sweep.runner.cancelled


async def test_escape_leaves_the_filter_and_keys_work_again(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        _Active.arm(app)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press("r", "e", "t")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.focused, CallMatrix)
        assert app.run_screen.query_one("#log-filter", Input).value == "ret"  # the filter stays applied
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, Help)  # `?` is a key again, not a character typed into the filter
        await pilot.press("escape")
        await pilot.press("slash", "enter")
        await pilot.pause()
        assert isinstance(app.focused, CallMatrix)


async def test_minus_at_one_says_so(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        _Active.arm(app)
        sweep.runner.set_concurrency(1)
        await pilot.press("minus")
        await pilot.pause()
        assert sweep.runner.target == 1
        assert any("already at the minimum" in m for m in _messages(app))
        await pilot.press("plus")
        assert sweep.runner.target == 2


async def test_cap_down_from_no_cap_steps_from_what_the_model_runs(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        _Active.arm(app)
        live = sweep.live
        key = sweep.plan.models[0].key
        live.models[0].in_flight = 3  # the model runs 3 at once now
        assert sweep.runner.model_cap(key) is None
        app.run_screen.query_one(ModelTable).focus()
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert sweep.runner.model_cap(key) == 2  # from 3 in flight down one, not to 1
        await pilot.press("left_square_bracket")
        await pilot.press("left_square_bracket")
        assert sweep.runner.model_cap(key) == 1
        await pilot.pause()
        assert any("already capped at the minimum" in m for m in _messages(app))


async def test_wrap_shows_the_end_of_a_long_event(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        log = app.run_screen.query_one("#log", RichLog)
        await pilot.pause()
        text = "".join(seg.text for line in log.lines for seg in line)
        assert "upstream overloaded" not in text  # cut at the pane's width
        await pilot.press("w")
        await pilot.pause()
        text = "".join(seg.text for line in log.lines for seg in line)
        assert "upstream overloaded" in text


async def test_finished_run_labels_totals_and_the_window_while_running(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.run_screen.query_one(ModelTable)
        assert "rates over the last" in str(table.border_title)
        status = str(app.run_screen.query_one(StatusBar).text)
        assert "concurrency" in status and "target 4" in status
    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.run_screen.query_one(ModelTable)
        assert "run's totals" in str(table.border_title)
        # errors happened: at 80 columns the errors column outranks the sparkline and stays
        assert {"cap", "in flight", "errors", "retries"} <= set(table.shown_titles)


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (200, 55)])
async def test_the_essentials_fit_at_every_size(tmp_path: Path, size: tuple[int, int]) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for _ in range(500):  # the footer's key hints arrive after the first frame: wait for them (a ceiling only)
            screen = app.export_screenshot().replace("&#160;", " ")
            if "Quit" in screen and "Help" in screen:
                break
            await pilot.pause(0.02)
        status = str(app.run_screen.query_one(StatusBar).text).splitlines()
        assert len(status) == 3 and status[2].startswith(" concurrency target")
        assert all(len(line) <= size[0] for line in status)
        table = app.run_screen.query_one(ModelTable)
        # issue 37: the columns + - [ ] and m act on stay at every size; percentiles and the sparkline go first
        for must in ("cap", "in flight", "errors", "retries", "429 %", "done"):
            assert must in table.shown_titles, (must, table.shown_titles)
        assert "[ ] cap" in str(table.border_title)
        assert "Quit" in screen and "Help" in screen
        assert app.run_screen.virtual_size.height <= size[1]  # nothing scrolls the dashboard


async def test_help_fits_and_says_how_to_close(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        dialog = app.screen.query_one("#help")
        assert dialog.region.right <= 80 and dialog.region.bottom <= 24
        assert "Escape, ? or q closes" in app.export_screenshot().replace("&#160;", " ")


async def test_call_detail_says_why_a_trial_failed(tmp_path: Path) -> None:
    sweep: Sweep
    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        detail = CallDetail(sweep, 0, 0)
        await app.push_screen(detail)
        row = stored_call(status="failed", score=0.0, passed=False, latency_ms=120.0, total_ms=150.0, ttft_ms=40.0,
                          input_tokens=8, output_tokens=52, output="Lyon")
        text = detail.render_rows([row]).plain
        assert "why scored 0 by" in text and f"expected {sweep.plan.cases[0].expected}" in text
        line = next(ln for ln in text.splitlines() if "tokens" in ln)
        assert "tokens\u00a08→52" in line and len(line) < 100  # one short line: nothing orphaned at 120 columns
        await pilot.pause()


def test_headless_leaderboard_explains_its_figures() -> None:
    """Issue 12 item 18: "score" and the cost columns explained once, in the same words as the results view."""
    from rich.console import Console

    from arenatui.commands.evaluate import leaderboard_table

    console = Console(width=160, record=True)
    console.print(leaderboard_table([]))  # the note is the table's caption, whatever its rows
    headless = " ".join(console.export_text().split())  # the note wraps at the table's width
    assert "$/correct: all spend" in headless and "quality: mean per-case score" in headless


def test_a_resumed_run_shows_its_stored_figures_not_zeros(tmp_path: Path) -> None:
    """Issue 10/12: `arena run --resume ID` showed spend $0.0000, retries 0 and empty latency columns."""
    from arenatui.session.sweep import SweepOptions
    from arenatui.store import Store

    from .support import _result, sim_project

    db = tmp_path / "resume.db"
    first = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=4), db=db))
    with Store(db) as store:
        store.write_results(first.run_id, [
            _result("sim-0", "case-000", 0, "passed", 0.0, attempts=3),
            _result("sim-0", "case-001", 0, "errored", 0.0, attempts=2, error="HTTP 503"),
        ])
        store.mark_run(first.run_id, "cancelled")
    again = Sweep(SweepOptions(resume=first.run_id, db=db))
    s = again.live.snapshot()
    m = s.models[0]
    assert (s.done, s.retries, s.errored) == (2, 3, 1)
    assert s.cost == pytest.approx(0.0002) and m.errors == {"transient": 1}
    assert m.p50_ms == pytest.approx(120.0)


async def test_matrix_and_model_table_follow_the_cursor_when_models_outnumber_rows(tmp_path: Path) -> None:
    from arenatui.session.sweep import SweepOptions

    from .support import sim_project

    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=14, cases=10), db=tmp_path / "many.db"))
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        matrix = app.run_screen.query_one(CallMatrix)
        matrix.focus()
        assert matrix._rows < 14  # not every model fits at 80x24
        for _ in range(13):
            await pilot.press("down")
        await pilot.pause()
        assert matrix.cursor[0] == 13 and matrix._top == 14 - matrix._rows
        lines = ["".join(seg.text for seg in matrix.render_line(y)) for y in range(matrix.size.height)]
        assert lines[0].startswith("↕") and lines[matrix._rows].startswith("sim-13"), lines
        table = app.run_screen.query_one(ModelTable)
        table.focus()
        for _ in range(13):
            await pilot.press("down")
        await pilot.pause()
        assert table.cursor_row == 13 and table._top > 0
        assert app.run_screen.virtual_size.height <= 24


async def test_palette_screenshot_says_where_it_went(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    (tmp_path / "shots").mkdir()
    monkeypatch.chdir(tmp_path / "shots")
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.action_save_screenshot()
        await pilot.pause()
        (svg,) = list(os.scandir(tmp_path / "shots"))
        assert any(svg.path in m for m in _messages(app)), _messages(app)
        def refused(**_kw: object) -> str:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(app, "save_screenshot", refused)
        app.action_save_screenshot()
        await pilot.pause()
        assert any(m.startswith("Could not save a screenshot in") and "Permission denied" in m
                   for m in _messages(app))


async def test_the_model_tables_columns_do_not_change_mid_run() -> None:
    """Issue 37 item 7: which columns show depends on the width alone; errors arriving (a wider value) take spare
    width or are cut with …, never swap a column out mid-run."""
    from textual.app import App, ComposeResult

    from arenatui.tui.screens.run import MODEL_COLUMNS
    from arenatui.tui.themes import STATE_VARIABLES

    class One(App[None]):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(STATE_VARIABLES)

        def compose(self) -> ComposeResult:
            yield ModelTable(MODEL_COLUMNS, ["sim-large", "sim-small"], id="t")

    quiet = ("4", "2", "0", "3/96", "2.8", "22", "0", "0%", "–", "–", "160", "190", "40", "-", "")
    busy = ("4", "2", "0", "50/96", "2.8", "22", "7", "12%", "rate_limited×12, transient×3", "wrong×4", "160",
            "1900", "40", "-", "")
    app = One()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(ModelTable)
        table.set_rows([(0, quiet, ()), (1, quiet, ())])
        await pilot.pause()
        before = table.shown_titles
        table.set_rows([(0, busy, ()), (1, quiet, ())])
        await pilot.pause()
        assert table.shown_titles == before and {"cap", "in flight", "errors"} <= set(before)
        row = table.render_line(1).text
        assert len(row.rstrip()) <= 80 and "rate_limited" in row
