"""The results view's case detail caps a huge answer like the console's call detail: the first PREVIEW_CHARS shown
with the whole size stated, and `s` saving every model's whole outputs (a 50 MB answer froze it for 49 s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Label, Static

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
        column = f"#case-model-{models.index('sim-strong')}"

        def shown() -> str:
            return str(app.screen.query_one(column, Static).render()) if isinstance(app.screen, CaseDetail) else ""

        await settle(pilot, lambda: "trial 0" in shown())
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
