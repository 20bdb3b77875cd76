"""Load runs picked in the runs tab (`l`) for a sweep's frontier: quality against p95 at the target load reads the
load run picked for a model instead of its newest, says which run each p95 is from, and `l` again unpicks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from arenatui.tui.browse import BrowseApp
from arenatui.tui.results.runs import RunsTab

from .results_support import LOAD_RUNS, RUN_ID, load_runs_db
from .test_results_snapshots import SIZE, opened

OLDER, NEWER, WEAK = LOAD_RUNS
"""Two load runs of sim-strong (the older one 200 ms slower) and one of sim-weak; the listing is newest first."""
ROW = {WEAK: 0, NEWER: 1, OLDER: 2, RUN_ID: 3}


@pytest.fixture
def db(tmp_path_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TZ", "UTC")  # the runs tab shows start times in local time
    time.tzset()
    return load_runs_db(tmp_path_factory, tmp_path)


async def _settled(pilot: Pilot[Any]) -> None:
    """Every worker done and the view complete (what the snapshots wait for, no key pressed)."""
    await opened()(pilot)


async def _press_on(pilot: Pilot[Any], run_id: str, key: str) -> None:
    """Move the runs table's cursor to `run_id`'s row and press `key` there."""
    table = pilot.app.screen.query_one("#runs-table", DataTable)
    table.move_cursor(row=ROW[run_id])
    await pilot.pause()
    await pilot.press(key)
    await _settled(pilot)


def _note(app: Any) -> str:
    return str(app.screen.query_one("#runs-compare", Static).render())


@pytest.mark.anyio
async def test_a_picked_load_run_replaces_the_newest_on_the_frontier(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=SIZE) as pilot:
        await _settled(pilot)
        screen: Any = app.screen
        # nothing picked: each model's newest load run
        assert screen.view.at_load_runs == {"sim-strong": (NEWER, False), "sim-weak": (WEAK, False)}
        newest_p95 = screen.view.at_load["sim-strong"][0]
        await pilot.press("1")
        tab = screen.query_one(RunsTab)
        await _press_on(pilot, OLDER, "l")
        assert tab.picked == {("results-test", "sim-strong"): OLDER}
        assert f"Picked ◆ load run {OLDER} for sim-strong (project results-test)" in " ".join(_note(app).split())
        table = screen.query_one("#runs-table", DataTable)
        assert table.get_cell(OLDER, "mark") == "◆" and table.get_cell(NEWER, "mark") == ""
        # the series a load run is in, what arena compare takes
        assert str(table.get_cell(OLDER, "series")) == str(table.get_cell(NEWER, "series")) == "nightly-strong"
        assert str(table.get_cell(WEAK, "series")) == str(table.get_cell(RUN_ID, "series")) == ""
        # the open sweep is read again with it: the older run's p95, 200 ms slower, and it says where it is from
        assert screen.view.at_load_runs["sim-strong"] == (OLDER, True)
        assert screen.view.at_load["sim-strong"][0] == pytest.approx(newest_p95 + 200, abs=1)
        loads = " ".join(str(screen.query_one("#frontier-loads", Static).render()).split())
        assert f"sim-strong {OLDER} (picked)" in loads and f"sim-weak {WEAK} (newest)" in loads
        assert "not load-tested: sim-twin." in loads
        # picking the other run of the model replaces the pick
        await _press_on(pilot, NEWER, "l")
        assert tab.picked == {("results-test", "sim-strong"): NEWER}
        assert f"in place of {OLDER}" in " ".join(_note(app).split())
        # a sweep is not a load run: said, nothing picked
        await _press_on(pilot, RUN_ID, "l")
        assert "is a sweep" in _note(app) and tab.picked == {("results-test", "sim-strong"): NEWER}
        # l again unpicks: the newest again
        await _press_on(pilot, NEWER, "l")
        assert tab.picked == {} and table.get_cell(NEWER, "mark") == ""
        assert screen.view.at_load_runs["sim-strong"] == (NEWER, False)
        assert "Unpicked load run" in _note(app)


def picked(*then: str) -> Any:
    """Open the run, pick sim-strong's older load run in the runs tab, then press `then`."""
    async def run_before(pilot: Pilot[Any]) -> None:
        await opened("1")(pilot)
        await _press_on(pilot, OLDER, "l")
        await opened(*then)(pilot)
    return run_before


@pytest.mark.parametrize("then", [(), ("7",)], ids=["runs", "frontier"])
def test_picked_load_run_snapshot(snap_compare: Any, db: Path, then: tuple[str, ...]) -> None:
    assert snap_compare(BrowseApp(db, RUN_ID, theme="dark"), terminal_size=SIZE, run_before=picked(*then))
