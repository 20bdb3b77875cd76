"""Snapshots of each results tab on the stored simulated run (fixed seeds, wall-clock values replaced).

Regenerate with `pytest tests/tui/test_results_snapshots.py --snapshot-update` after a deliberate change,
and look at the SVGs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from arenatui.tui.browse import BrowseApp

from .results_support import RUN_ID, copy_db, f1_db

SIZE = (120, 40)


@pytest.fixture
def db(tmp_path_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TZ", "UTC")  # the runs tab shows start times in local time
    time.tzset()
    return copy_db(tmp_path_factory, tmp_path)


@pytest.fixture
def f1db(tmp_path_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    return f1_db(tmp_path_factory, tmp_path)


def opened(*keys: str) -> Any:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        for _ in range(200):
            await pilot.pause(0.02)
            await app.workers.wait_for_complete()
            view = getattr(app.screen, "view", None)
            # every tab filled, not only the leaderboard: the pairs, strata and cases come from a second worker
            if view is not None and view.complete and app.screen.runs:
                break
        for k in keys:
            await pilot.press(k)
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        for _ in range(100):  # the case table fills a chunk per frame
            await pilot.pause(0.02)
            if getattr(app.screen, "cases_filled", True):
                break
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("tab", ["1", "2", "3", "4", "5", "6", "7"],
                         ids=["runs", "leaderboard", "compare", "pairs", "strata", "cases", "frontier"])
def test_results_tab(snap_compare: Any, db: Path, tab: str) -> None:
    assert snap_compare(BrowseApp(db, RUN_ID, theme="dark"), terminal_size=SIZE, run_before=opened(tab))


def test_results_leaderboard_small_terminal(snap_compare: Any, db: Path) -> None:
    assert snap_compare(BrowseApp(db, RUN_ID, theme="dark"), terminal_size=(80, 24), run_before=opened("2"))


def test_results_compare_small_terminal(snap_compare: Any, db: Path) -> None:
    assert snap_compare(BrowseApp(db, RUN_ID, theme="light"), terminal_size=(80, 24), run_before=opened("3"))


def test_model_detail(snap_compare: Any, db: Path) -> None:
    assert snap_compare(BrowseApp(db, RUN_ID, theme="dark"), terminal_size=SIZE, run_before=opened("2", "enter"))


def test_case_detail(snap_compare: Any, db: Path) -> None:
    async def open_case(pilot: Pilot[Any]) -> None:
        await opened("6")(pilot)
        pilot.app.screen.query_one("#cases-table", DataTable).move_cursor(row=2)
        await opened("enter")(pilot)

    assert snap_compare(BrowseApp(db, RUN_ID, theme="dark"), terminal_size=SIZE, run_before=open_case)


def test_leaderboard_with_macro_f1_small_terminal(snap_compare: Any, f1db: Path) -> None:
    """A run with f1-scored cases: the macro-F1 column beside n, still inside 80 columns."""
    assert snap_compare(BrowseApp(f1db, RUN_ID, theme="dark"), terminal_size=(80, 24), run_before=opened("2"))


def test_model_detail_with_per_label_f1(snap_compare: Any, f1db: Path) -> None:
    async def open_model(pilot: Pilot[Any]) -> None:
        await opened("2", "enter")(pilot)
        pilot.app.screen.query_one("#model-f1").scroll_visible(animate=False)
        await pilot.pause()

    assert snap_compare(BrowseApp(f1db, RUN_ID, theme="dark"), terminal_size=SIZE, run_before=open_model)
