"""The results view's case detail caps a huge answer like the console's call detail: the first PREVIEW_CHARS shown
with the whole size stated, and `s` saving every model's whole outputs (a 50 MB answer froze it for 49 s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Label, Static

from arenatui.store import Store
from arenatui.tui.browse import BrowseApp
from arenatui.tui.call_text import PREVIEW_CHARS
from arenatui.tui.results.detail import CaseDetail
from arenatui.tui.screens.dialogs import FolderInput

from .results_support import RUN_ID, copy_db
from .test_results_screens import settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    return copy_db(tmp_path_factory, tmp_path)


async def test_a_huge_answer_shows_its_start_and_size_and_s_saves_it_whole(db: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    huge = ("é€ answer line\n" * 100_000)[:1_500_000]
    with Store(db) as store:
        store.conn.execute("UPDATE results SET output = ? WHERE case_id = 'easy-000' AND model_key = 'sim-strong' "
                           "AND trial = 0", (huge,))
        trials = store.conn.execute("SELECT COUNT(*) FROM results WHERE run_id = ? AND case_id = 'easy-000' AND "
                                    "output IS NOT NULL", (RUN_ID,)).fetchone()[0]
    out_dir = tmp_path / "saved"
    out_dir.mkdir()
    monkeypatch.chdir(out_dir)
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        view = app.screen.view
        case = view.case("easy-000")
        models = view.results.models
        app.push_screen(CaseDetail(db, RUN_ID, case, models))

        def shown() -> str:
            return str(app.screen.query_one("#case-call", Static).render()) if isinstance(app.screen, CaseDetail) \
                else ""

        await settle(pilot, lambda: "trial 0" in shown())
        grid = app.screen.query_one("#case-grid", DataTable)
        cell = str(grid.get_cell_at(Coordinate(0, 1 + models.index("sim-strong"))))
        assert cell[:1] in "✓✗" and "é€ answer line" in cell and "…" in cell, cell  # its mark, its start
        grid.move_cursor(row=0, column=1 + models.index("sim-strong"))  # the call under the cursor, whole, below
        await settle(pilot, lambda: shown().startswith("sim-strong\ntrial 0"))
        text = shown()
        assert f"the first {PREVIEW_CHARS:,} of 1,500,000 characters: s saves the whole output" in text
        assert huge[:2_000] in text and len(text) < PREVIEW_CHARS + 5_000  # the start, not the answer
        await pilot.press("s")  # asks for the folder (issue 22 item 9): the one typed here
        await settle(pilot, lambda: isinstance(app.screen, FolderInput))
        app.screen.query_one(Input).value = str(out_dir)
        await pilot.press("enter")
        await settle(pilot, lambda: any("Saved" in str(n.message) for n in app._notifications))
        (note,) = [str(n.message) for n in app._notifications if "Saved" in str(n.message)]
        await pilot.press("escape")
    files = sorted(out_dir.glob("arena-output-*-easy-000-t*.txt"))
    assert len(files) == trials  # every model's trials of the case
    (mine,) = [f for f in files if "sim-strong" in f.name and f.name.endswith("-t0.txt")]
    assert mine.read_text(encoding="utf-8") == huge
    assert f"Saved {trials} files" in note if trials > 3 else str(mine) in note


async def test_a_sealed_case_offers_no_save_key(db: Path) -> None:
    """Its outputs are never shown or saved: the hint under it does not offer `s` (pressing it says so)."""
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen.view
        sealed, open_case = view.case("sealed-1"), view.case("easy-000")
        assert sealed is not None and sealed.sealed and open_case is not None
        hints = []
        for case in (sealed, open_case):
            app.push_screen(CaseDetail(db, RUN_ID, case, view.results.models))
            await settle(pilot, lambda: isinstance(app.screen, CaseDetail))
            hints.append(str(app.screen.query_one(".hint", Label).render()))
            app.pop_screen()
            await settle(pilot, lambda: not isinstance(app.screen, CaseDetail))
        assert "s saves" not in hints[0] and "Escape closes" in hints[0]
        assert "s saves the whole outputs" in hints[1]


async def test_the_case_grid_shows_every_trial_of_every_model_on_one_screen(db: Path) -> None:
    """Issue 37 item 13: a trial takes one line of the grid, not nine: at 100×30 every trial of every model is on
    screen with its mark and its answer's start, the call under the cursor is shown whole beneath, and Enter opens
    it alone."""
    from arenatui.tui.results.detail import CallAlone

    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        view = app.screen.view
        models = view.results.models
        app.push_screen(CaseDetail(db, RUN_ID, view.case("easy-001"), models))
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail) and app.screen.grid_rows)
        screen = app.screen
        grid = screen.query_one("#case-grid", DataTable)
        assert grid.row_count == len(screen.grid_rows) >= 2 and len(grid.columns) == 1 + len(models)
        assert grid.region.height <= len(screen.grid_rows) + 2  # a line a trial, the header, a scroll bar
        with Store(db, read_only=True) as store:
            stored = store.conn.execute("SELECT model_key, trial, status FROM results WHERE run_id = ? AND "
                                        "case_id = 'easy-001'", (RUN_ID,)).fetchall()
        marks = {"passed": "✓", "failed": "✗", "errored": "!", "unscored": "○"}
        for model, trial, status in stored:
            cell = str(grid.get_cell_at(Coordinate(screen.grid_rows.index(("", trial)), 1 + models.index(model))))
            assert cell.startswith(marks[status]), (model, trial, cell)
        call = screen.query_one("#case-call", Static)
        assert call.region.height > 0 and str(call.render()).startswith(f"{models[0]}\ntrial 0")
        await pilot.press("down", "right")
        await settle(pilot, lambda: str(call.render()).startswith(f"{models[1]}\ntrial 1"))
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, CallAlone))
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail))
