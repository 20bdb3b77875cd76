"""The run screen over real simulated sweeps, driven by Pilot: keys reach the engine, the store keeps the truth."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest
from textual.widgets import Static

from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.store.queries import call_details
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail, RunScreen, concurrency_step
from arenatui.tui.widgets import CallMatrix, StatusBar

from .support import sim_project

pytestmark = pytest.mark.anyio

SIZE = (160, 48)


async def _until(pred: object) -> None:
    with anyio.fail_after(60.0):  # a hang guard, not a speed requirement
        for _ in range(100_000):  # polling: the state lives in the engine, not behind an event
            if pred():  # type: ignore[operator]
                return
            await anyio.sleep(0.02)


def test_concurrency_ladder() -> None:
    assert [concurrency_step(n, 1) for n in (1, 2, 3, 8, 63, 64)] == [2, 4, 4, 16, 64, 128]
    assert [concurrency_step(n, -1) for n in (1, 2, 3, 8, 9, 64)] == [1, 1, 2, 4, 8, 32]


async def test_keys_change_the_engine_limit_and_are_stored(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=400, latency=0.05), db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.live.snapshot().done > 0)
        assert sweep.runner.target == 8
        await pilot.press("plus")
        assert sweep.runner.target == 16
        await pilot.press("minus", "minus")
        assert sweep.runner.target == 4
        await pilot.press("greater_than_sign")
        assert sweep.runner.target == 5
        await pilot.press("less_than_sign", "less_than_sign")
        assert sweep.runner.target == 3
        await pilot.press("c")
        await pilot.pause(0.05)
        await pilot.press("1", "2", "enter")
        assert sweep.runner.target == 12
        await pilot.press("c")  # as a user clears the field first: the value typed is the value applied
        await pilot.pause(0.05)
        await pilot.press("ctrl+u", "backspace", "1", "2", "enter")
        assert sweep.runner.target == 12
        await pilot.pause(0.3)
        status = app.run_screen.query_one(StatusBar).text
        assert "target 12" in str(status)
        # a model cap from the model table: the first row is highlighted
        await pilot.press("m")
        await pilot.pause(0.05)
        await pilot.press("2", "enter")
        assert sweep.runner.model_cap("sim-0") == 2
        await pilot.press("right_square_bracket")
        assert sweep.runner.model_cap("sim-0") == 3
        await pilot.press("q", "y")
        await _until(lambda: sweep.status is not None)
    with Store(db_path) as store:
        changes = [(old, new, mk, src) for _at, old, new, mk, src in store.concurrency_changes(sweep.run_id)]
    assert (8, 16, None, "user") in changes and (5, 4, None, "user") in changes and (3, 12, None, "user") in changes
    assert (0, 2, "sim-0", "user") in changes and (2, 3, "sim-0", "user") in changes


async def test_pause_stops_new_calls(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=300, latency=0.03), db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.live.snapshot().done > 10)
        await pilot.press("p")
        assert sweep.runner.paused
        await _until(lambda: sweep.runner.in_flight == 0)
        started = sum(m.attempts for m in sweep.live.models)
        await pilot.pause(0.4)
        assert sum(m.attempts for m in sweep.live.models) == started
        assert "paused" in str(app.run_screen.query_one(StatusBar).text)
        await pilot.press("p")
        await _until(lambda: sum(m.attempts for m in sweep.live.models) > started)
        await pilot.press("q", "y")
        await _until(lambda: sweep.status is not None)


async def test_cancel_keeps_finished_results(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=500, latency=0.05), db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.live.snapshot().done >= 20)
        await pilot.press("q")
        assert sweep.status is None and not sweep.runner.cancelled  # it asks first
        await pilot.press("y")
        await _until(lambda: sweep.status is not None)
        await pilot.pause(0.1)
    assert app.return_value == "cancelled"
    with Store(db_path) as store:
        rec = store.get_run(sweep.run_id)
        done = store.done_keys(sweep.run_id)
    assert rec.status == "cancelled"
    stored = sum(len(v) for v in done.values())
    assert 20 <= stored < 1000
    assert "--resume" in sweep.resume_command


async def test_a_stop_confirmed_after_the_sweep_ended_quits(tmp_path: Path, db_path: Path) -> None:
    """Issue 37 (not reproduced): q asked "Stop the sweep?", the last call finished while the question was open, and
    y then left the console open: it waited for a stop that would never come. Now it quits at once."""
    from arenatui.tui.screens.dialogs import Confirm

    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=30, latency=0.02), db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.live.snapshot().done >= 1)
        await pilot.press("q")
        await _until(lambda: isinstance(app.screen, Confirm))
        await _until(lambda: app.run_screen.sweep_ended)  # the run ends while the question is open
        await pilot.press("y")
        await _until(lambda: not app.is_running)
    assert app.return_value == "finished"


async def test_cell_detail_shows_that_call(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=6, trials=2, latency=0.0), db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.status == "finished")
        await pilot.pause(0.3)
        matrix = app.run_screen.query_one(CallMatrix)
        matrix.focus()
        await pilot.press("down", "right", "right", "enter")
        await _until(lambda: isinstance(app.screen, CallDetail))
        detail = app.screen
        assert isinstance(detail, CallDetail)
        assert (detail.model_key, detail.case.id) == ("sim-1", "case-002")
        text = detail.query_one("#detail-text", Static)
        await _until(lambda: "trial 1" in str(text.render()))
        shown = str(text.render())
        with Store(db_path) as store:
            (row,) = call_details(store, sweep.run_id, "case-002", lane="sim-1", preview=100, final=False)[1:]
        assert "question 2" in shown and f"attempts {row.attempts}" in shown
        assert str(row.output) in shown and row.status in shown
        assert row.connect_ms is None and "on the wire" not in shown  # simulated: nothing to connect to
        # an HTTP call that had to connect first says how long, apart from its latency
        http_row = dataclasses.replace(row, connect_ms=42.0, latency_ms=101.0)
        assert "request on the wire after 42\u00a0ms" in str(detail.render_rows([http_row, http_row]))
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)
        await pilot.press("r")
        await pilot.pause(0.5)
        assert "sim-0" in app.export_screenshot()
